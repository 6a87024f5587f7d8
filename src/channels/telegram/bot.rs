//! The Telegram channel on the executor: updates in, turns through the agent, replies
//! out through the sender thread.
//!
//! Why it exists: it ties the pure pieces together (`inbound` rules, `recover`, the
//! `outbox` to the sender thread) and owns the channel's state: the persisted offset,
//! the refusal limiter and the chats with a running turn. Messages live in SQLite from
//! the moment they are handled (`store::inbox`, docs/DECISIONS.md 88), so a crash loses
//! none and a burst is collected, never refused:
//! - An allowed message is stored in the same commit as the update offset: handled
//!   exactly once. A chat that can start a turn starts it in that same commit.
//! - A chat runs one turn at a time. Its next turn takes everything that waited for it
//!   up to the first command (a command runs alone, in its place) as one user message
//!   of at most `MAX_TURN_TEXT_BYTES` (the oldest cut; the chat is told in one line).
//! - At most `agent.max_sessions` chats run turns at once; the others wait in the inbox
//!   and start as turns end, the longest waiting first.
//! - [`Bot::recover`], at start: undelivered answers go out again, unanswered turns are
//!   answered, and what is too old is told in one line (`recover`).
//! - A turn's answer is owed until the sender reports it delivered.
//!
//! # Bounds
//! Waiting messages: `MAX_INBOX_ROWS` in all (beyond: the busy reply); running chats:
//! `agent.max_sessions`; a turn's text: `MAX_TURN_TEXT_BYTES`; refusals:
//! `RefusalLimiter`. "typing…" is refreshed every `TYPING_REFRESH_SECS` while a turn runs.
//!
//! # Threads
//! Executor thread: update handling, turns, SQLite; media work and HTTP are handed to the
//! worker threads and the sender thread.
//!
//! # Blocking
//! Nothing here blocks the executor: SQLite calls are short, HTTP runs on the sender
//! thread and the worker pool.

use super::api::{BotIdentity, Incoming, Posted, Update};
use super::inbound::{self, Action, AllowList, RefusalLimiter, Rules};
use super::media::{self, Media};
use super::outbox::{Job, Outbox};
use super::recover::{self, Told, chat_of};
use super::reply::SendError;
use super::stream::Streamer;
use crate::agent::approval::{AskFuture, Asker};
use crate::agent::router::BUSY_REPLY;
use crate::agent::streaming::NoSink;
use crate::agent::{Agent, AgentError, commands};
use crate::chat::ChannelKind;
use crate::config::{Config, GroupMode};
use crate::runtime::Workers;
use crate::store::inbox::{MAX_INBOX_ROWS, Next, Turn};
use crate::store::{Db, StoreError};
use crate::time::{build_epoch, now};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The `state` key holding the next `getUpdates` offset.
pub const OFFSET_KEY: &str = "telegram.offset";
/// How often "typing…" is sent while a turn runs (Telegram shows it for ~5 s).
pub const TYPING_REFRESH_SECS: u64 = 4;
/// Most text one turn takes from the messages that waited (the newest are kept).
pub const MAX_TURN_TEXT_BYTES: usize = 16 * 1024;
/// Told at a clean shutdown to chats whose message is being answered or waits.
pub const RESTART_NOTICE: &str =
    "I'm restarting; I will answer your last message as soon as I'm back.";

/// The session of a chat.
pub fn session_id(chat_id: i64) -> String {
    format!("telegram:{chat_id}")
}

/// The next offset persisted by an earlier run (0 when none or unreadable).
pub fn stored_offset(db: &Db) -> i64 {
    match db.get_state(OFFSET_KEY) {
        Ok(Some(v)) => v.trim().parse::<i64>().unwrap_or(0).max(0),
        Ok(None) => 0,
        Err(e) => {
            log::warn!("telegram: cannot read the stored offset ({e}); starting from Telegram's");
            0
        }
    }
}

/// The Telegram channel's executor-side state.
pub struct Bot {
    agent: Rc<Agent>,
    db: Rc<Db>,
    me: BotIdentity,
    /// `telegram.allow_from` and `telegram.group_mode` (a reload replaces them:
    /// [`Bot::set_rules`]).
    allow: RefCell<AllowList>,
    group_mode: Cell<GroupMode>,
    outbox: Outbox,
    refusals: RefCell<RefusalLimiter>,
    next_offset: Cell<i64>,
    /// Chats with a running turn (at most `capacity`).
    running: RefCell<Vec<i64>>,
    capacity: usize,
    /// Turns `recover` found unanswered, taken before the chat's waiting messages.
    resume: RefCell<Vec<(i64, Turn)>>,
    /// `agent.timezone`, for the times in told lines.
    timezone: String,
    /// Voice notes, photos and files (`media`), prepared on these workers.
    media: RefCell<Option<(Arc<Media>, Workers)>>,
}

impl Bot {
    /// The bot over `agent`, with its offset in `db`; sessions and group rules from `cfg`.
    pub fn new(
        agent: Rc<Agent>,
        db: Rc<Db>,
        cfg: &Config,
        me: BotIdentity,
        allow: AllowList,
        outbox: Outbox,
    ) -> Bot {
        let next_offset = stored_offset(&db);
        agent.approvals().set_asker(
            ChannelKind::Telegram,
            Rc::new(TelegramAsker {
                outbox: outbox.clone(),
            }),
        );
        Bot {
            agent,
            db,
            me,
            allow: RefCell::new(allow),
            group_mode: Cell::new(cfg.telegram.group_mode),
            outbox,
            refusals: RefCell::new(RefusalLimiter::new()),
            next_offset: Cell::new(next_offset),
            running: RefCell::new(Vec::new()),
            capacity: (cfg.agent.max_sessions as usize).max(1),
            resume: RefCell::new(Vec::new()),
            timezone: cfg.agent.timezone.clone(),
            media: RefCell::new(None),
        }
    }

    /// Who may talk to the bot and how groups are answered, from the next message on
    /// (a reload).
    pub fn set_rules(&self, allow: AllowList, group_mode: GroupMode) {
        *self.allow.borrow_mut() = allow;
        self.group_mode.set(group_mode);
    }

    /// Take voice notes, photos and files in with `media`, on `workers`.
    pub fn set_media(&self, media: Arc<Media>, workers: Workers) {
        *self.media.borrow_mut() = Some((media, workers));
    }

    /// The next offset to ask Telegram for.
    pub fn next_offset(&self) -> i64 {
        self.next_offset.get()
    }

    /// Chats with a running turn.
    pub fn running_turns(&self) -> usize {
        self.running.borrow().len()
    }

    /// Sessions with a running turn (the status record's live sessions).
    pub fn live_sessions(&self) -> usize {
        self.running_turns()
    }

    /// Handle updates until the poller's channel closes. Turns run as tasks on `ex`.
    pub async fn serve(
        self: &Rc<Self>,
        ex: &smol::LocalExecutor<'static>,
        updates: async_channel::Receiver<Update>,
    ) {
        while let Ok(u) = updates.recv().await {
            self.handle(ex, u).await;
        }
    }

    /// Handle updates Telegram posted to the webhook (`channels::http`) until their
    /// channel closes: each exactly as a polled one, then committed to the disk (a full
    /// sync: Telegram forgets an update once answered 200), then acknowledged.
    pub async fn serve_posted(
        self: &Rc<Self>,
        ex: &smol::LocalExecutor<'static>,
        posted: async_channel::Receiver<Posted>,
    ) {
        while let Ok(p) = posted.recv().await {
            self.handle(ex, p.update).await;
            let db = &self.db;
            if let Err(e) = db.set_state(OFFSET_KEY, &self.next_offset.get().to_string()) {
                log::warn!("telegram: cannot store the update offset: {e}");
            }
            let _ = p.done.try_send(());
        }
    }

    async fn handle(self: &Rc<Self>, ex: &smol::LocalExecutor<'static>, u: Update) {
        if u.update_id < self.next_offset.get() {
            log::debug!("telegram: ignored update {} (already handled)", u.update_id);
            return;
        }
        let next = u.update_id.saturating_add(1);
        let job = match &u.message {
            Some(m) if m.media.is_some() => self.decide_media(ex, m, next).await,
            Some(m) => self.decide(ex, m, next),
            None => None,
        };
        if self.next_offset.get() != next {
            self.persist_offset(next);
        }
        // The one await: a notice waits for room in the sender's queue.
        if let Some(job) = job {
            self.send(job).await;
        }
    }

    /// What to do with a message: nothing, a notice to send, or (an allowed message)
    /// store it with the offset `next` in one commit, starting its chat's turn in that
    /// commit when the chat can run one now.
    fn decide(
        self: &Rc<Self>,
        ex: &smol::LocalExecutor<'static>,
        m: &Incoming,
        next: i64,
    ) -> Option<Job> {
        match self.judge(m) {
            Ok(req) => self.admit(ex, req, next),
            Err(job) => job,
        }
    }

    /// A message with a voice note, photo or file: judged like any message, then its
    /// file fetched and made into text on a worker (updates wait meanwhile; "typing…"
    /// is shown), then admitted like a text. A failure is one sentence to the chat.
    async fn decide_media(
        self: &Rc<Self>,
        ex: &smol::LocalExecutor<'static>,
        m: &Incoming,
        next: i64,
    ) -> Option<Job> {
        let mut req = match self.judge(m) {
            Ok(req) => req,
            Err(job) => return job,
        };
        let (chat_id, reply_to) = (req.chat_id, req.reply_to);
        let ready = self.media.borrow().clone();
        let (Some((ctx, workers)), Some(mref)) = (ready, m.media.clone()) else {
            return Some(Job::notice(chat_id, inbound::TEXT_ONLY_REPLY, reply_to));
        };
        let caption = std::mem::take(&mut req.text);
        let action = media::action_for(mref.kind);
        let work = workers.run(move || {
            let _ = ctx.api.send_action(chat_id, action);
            media::prepare(&ctx, &mref, &caption)
        });
        let prepared = smol::future::or(async { work.await.ok() }, self.keep_typing(chat_id)).await;
        match prepared {
            Some(Ok(p)) => {
                if let Some(heard) = p.heard {
                    self.send(Job::notice(chat_id, heard, reply_to)).await;
                }
                req.text = p.text;
                self.admit(ex, req, next)
            }
            Some(Err(sentence)) => {
                self.persist_offset(next);
                Some(Job::notice(chat_id, sentence, reply_to))
            }
            None => None, // the workers stopped: shutting down
        }
    }

    /// Send "typing…" every few seconds while awaited (never completes).
    async fn keep_typing<T>(&self, chat_id: i64) -> T {
        loop {
            smol::Timer::after(Duration::from_secs(TYPING_REFRESH_SECS)).await;
            self.outbox.try_push(Job::Typing { chat_id });
        }
    }

    /// The request in a message, or the notice (if any) that answers it instead.
    fn judge(&self, m: &Incoming) -> Result<inbound::Request, Option<Job>> {
        log::debug!(
            "telegram: message from chat {} (user {:?})",
            m.chat_id,
            m.from_id
        );
        let allow = self.allow.borrow();
        let rules = Rules {
            bot: &self.me,
            allow: &allow,
            group_mode: self.group_mode.get(),
        };
        match inbound::classify(m, &rules) {
            Action::Ignore(why) => {
                log::debug!("telegram: ignored a message in chat {}: {why}", m.chat_id);
                Err(None)
            }
            Action::Refuse {
                chat_id,
                user_id,
                username,
                reply_to,
            } => {
                let now = Instant::now();
                if !self.refusals.borrow_mut().should_refuse(user_id, now) {
                    log::debug!("telegram: refused user {user_id} again (no reply)");
                    return Err(None);
                }
                let name = username.map(|u| format!(" (@{u})")).unwrap_or_default();
                log::warn!(
                    "telegram: refused user {user_id}{name} in chat {chat_id}: not in telegram.allow_from"
                );
                Err(Some(Job::notice(
                    chat_id,
                    inbound::refusal_text(user_id),
                    reply_to,
                )))
            }
            Action::TextOnly { chat_id, reply_to } => Err(Some(Job::notice(
                chat_id,
                inbound::TEXT_ONLY_REPLY,
                reply_to,
            ))),
            Action::Answer(req) => {
                crate::metrics::message_in(ChannelKind::Telegram);
                Ok(req)
            }
        }
    }

    /// Store an allowed message with the offset `next` in one commit, starting its
    /// chat's turn in that commit when the chat can run one now.
    fn admit(
        self: &Rc<Self>,
        ex: &smol::LocalExecutor<'static>,
        req: inbound::Request,
        next: i64,
    ) -> Option<Job> {
        let chat_id = req.chat_id;
        // Approval answers go straight to the waiting turn, never behind it.
        if let Some(reply) = commands::approval_reply(&self.agent, &session_id(chat_id), &req.text)
        {
            return Some(Job::notice(chat_id, reply, req.reply_to));
        }
        let start = {
            let r = self.running.borrow();
            !r.contains(&chat_id) && r.len() < self.capacity
        };
        let cmd = commands::parse(&req.text).is_some();
        let db = &self.db;
        let session = session_id(chat_id);
        let stored = db.deferred_sync(|| {
            db.write_batch(|| {
                let t = now();
                db.set_state(OFFSET_KEY, &next.to_string())?;
                let first = if start {
                    db.inbox_next(chat_id, &session, MAX_TURN_TEXT_BYTES, t)?
                } else {
                    None
                };
                if start && first.is_none() {
                    // Nothing waited: this message starts the turn and is never stored
                    // in the inbox (a page less to write).
                    let n = if cmd {
                        Next::Command {
                            text: req.text.clone(),
                            reply_to: req.reply_to,
                        }
                    } else {
                        Next::Turn(db.start_turn(&session, &req.text, req.reply_to, t, t)?)
                    };
                    return Ok::<_, StoreError>((Some(n), true));
                }
                let kept = db.inbox_push(chat_id, req.reply_to, cmd, &req.text, t)?;
                Ok((first, kept))
            })
        });
        match stored {
            Ok((first, kept)) => {
                self.next_offset.set(next);
                if first.is_some() {
                    self.start(ex, chat_id, first);
                }
                if kept {
                    return None;
                }
                log::warn!(
                    "telegram: {MAX_INBOX_ROWS} messages wait already; chat {chat_id} was told to send again later"
                );
            }
            Err(e) => log::warn!("telegram: cannot store a message of chat {chat_id}: {e}"),
        }
        Some(Job::notice(chat_id, BUSY_REPLY, req.reply_to))
    }

    fn persist_offset(&self, next: i64) {
        self.next_offset.set(next);
        // Not synced to disk here: the next turn's answer syncs it, and after a power cut
        // Telegram itself still holds the offset confirmed by the last getUpdates.
        let db = &self.db;
        if let Err(e) = db.deferred_sync(|| db.set_state(OFFSET_KEY, &next.to_string())) {
            log::warn!("telegram: cannot store the update offset: {e}");
        }
    }

    async fn send(&self, job: Job) {
        if !self.outbox.push(job).await {
            log::error!("telegram: the sender thread is gone; a message was not sent");
        }
    }

    /// Run the turns of `chat_id` (`first`, then whatever waits) until none is left, then
    /// those of the chat waiting longest without a running turn, until none waits.
    async fn work(self: Rc<Self>, mut chat_id: i64, mut first: Option<Next>) {
        loop {
            let next = match first.take() {
                Some(n) => Ok(Some(n)),
                None => self.next_of(chat_id),
            };
            if let Ok(Some(n)) = next {
                self.run(chat_id, n).await;
                continue;
            }
            // No await from here to the switch: nothing can slip in between.
            let mut running = self.running.borrow_mut();
            running.retain(|c| *c != chat_id);
            if next.is_err() {
                // The store failed: what waits is taken with the next message or restart.
                return;
            }
            match self.waiting_chat(&running) {
                Some(c) => {
                    running.push(c);
                    chat_id = c;
                }
                None => {
                    if running.is_empty() {
                        // The last turn ended: its cancelled timers must not wake the
                        // idle gateway later (DECISIONS 106).
                        crate::runtime::forget_dropped_timers();
                    }
                    return;
                }
            }
        }
    }

    /// The next turn of `chat_id`: a recovered one first, then what waits in the inbox.
    fn next_of(&self, chat_id: i64) -> Result<Option<Next>, StoreError> {
        let resumed = {
            let mut r = self.resume.borrow_mut();
            let i = r.iter().position(|(c, _)| *c == chat_id);
            i.map(|i| r.swap_remove(i).1)
        };
        if let Some(t) = resumed {
            return Ok(Some(Next::Turn(t)));
        }
        let db = &self.db;
        let session = session_id(chat_id);
        db.deferred_sync(|| db.inbox_next(chat_id, &session, MAX_TURN_TEXT_BYTES, now()))
            .inspect_err(|e| {
                log::warn!("telegram: cannot read the messages waiting in chat {chat_id}: {e}")
            })
    }

    /// A chat with work and no running turn: recovered turns first, then the inbox.
    fn waiting_chat(&self, running: &[i64]) -> Option<i64> {
        let free = |c: &i64| !running.contains(c);
        if let Some((c, _)) = self.resume.borrow().iter().find(|(c, _)| free(c)) {
            return Some(*c);
        }
        match self.db.inbox_chats(running, 1) {
            Ok(chats) => chats.first().copied(),
            Err(e) => {
                log::warn!("telegram: cannot read which chats wait: {e}");
                None
            }
        }
    }

    /// Start turns for waiting chats while slots are free.
    fn fill(self: &Rc<Self>, ex: &smol::LocalExecutor<'static>) {
        loop {
            let c = {
                let running = self.running.borrow();
                if running.len() >= self.capacity {
                    return;
                }
                self.waiting_chat(&running)
            };
            let Some(c) = c else { return };
            self.start(ex, c, None);
        }
    }

    /// Run the turns of `chat_id` (it had no running turn and a slot is free).
    fn start(
        self: &Rc<Self>,
        ex: &smol::LocalExecutor<'static>,
        chat_id: i64,
        first: Option<Next>,
    ) {
        self.running.borrow_mut().push(chat_id);
        ex.spawn(self.clone().work(chat_id, first)).detach();
    }

    /// Run a command or a turn and send its answer; a turn's is owed until delivered.
    async fn run(&self, chat_id: i64, next: Next) {
        let session = session_id(chat_id);
        let (job, turn) = match next {
            Next::Command { text, reply_to } => {
                let answer = commands::handle(&self.agent, &session, &text).unwrap_or_default();
                (Job::notice(chat_id, answer, reply_to), 0)
            }
            Next::Turn(t) => (self.answer(chat_id, &session, &t).await, t.id),
        };
        let delivered = match self.outbox.wait(job).await {
            Ok(_) => true,
            // Refused for good (403: the user blocked the bot): never deliverable.
            Err(u) => matches!(&u.error, SendError::Api(e) if !e.is_transient()),
        };
        // An answer (or a failed turn's notice) given up after the retry window, or cut by
        // shutdown, stays owed: it is sent again (answered again) after a restart.
        if delivered && turn != 0 {
            let db = &self.db;
            if let Err(e) = db.deferred_sync(|| db.replies_done(&[turn])) {
                log::warn!("telegram: cannot record a delivered answer in chat {chat_id}: {e}");
            }
        }
    }

    /// The job that answers `t`: its written answer again, or the agent's answer (the
    /// sorry notice when the turn fails).
    async fn answer(&self, chat_id: i64, session: &str, t: &Turn) -> Job {
        if t.cut > 0 {
            let text = format!(
                "I could not read your {} earliest messages (from {} on): too much at once. Please send again what still matters.",
                t.cut,
                self.local_time(t.cut_at)
            );
            self.send(Job::notice(chat_id, text, None)).await;
        }
        let result = if let Some(answer) = t.answer {
            // Written before a restart, not delivered: sent again as it was.
            let text = self.db.message_text(answer).ok().flatten();
            Ok(text.unwrap_or_default())
        } else {
            // "typing…" goes out before the turn starts: a turn can finish in its first
            // poll (its model call already answered), and the refresher would never run.
            self.outbox.try_push(Job::Typing { chat_id });
            if self.agent.streams() {
                return self
                    .streamed_turn(session, chat_id, t)
                    .await
                    .unwrap_or_else(|e| sorry(session, chat_id, t, &e));
            }
            let mut sink = NoSink;
            let turn = self
                .agent
                .answer_pending(session, ChannelKind::Telegram, &mut sink);
            smol::future::or(turn, self.typing(chat_id)).await
        };
        match result {
            Ok(text) => Job::Reply {
                chat_id,
                text,
                reply_to: t.reply_to,
                markdown: true,
                done: None,
            },
            Err(e) => sorry(session, chat_id, t, &e),
        }
    }

    /// A turn whose answer is shown while it is written (see `stream`); returns the job
    /// that makes the streamed reply final.
    async fn streamed_turn(
        &self,
        session: &str,
        chat_id: i64,
        t: &Turn,
    ) -> Result<Job, AgentError> {
        let streamer = Streamer::new(chat_id, t.reply_to);
        let mut sink = streamer.sink();
        let turn = self
            .agent
            .answer_pending(session, ChannelKind::Telegram, &mut sink);
        let background = async {
            smol::future::zip(streamer.pump(&self.outbox), self.typing(chat_id))
                .await
                .1
        };
        let result = smol::future::or(turn, background).await;
        streamer.settle().await;
        result.map(|text| Job::StreamEnd {
            live: streamer.live(),
            text,
            done: None,
        })
    }

    /// Keep "typing…" on while awaited (never completes); the first one is sent by
    /// `run` before the turn starts.
    async fn typing(&self, chat_id: i64) -> Result<String, AgentError> {
        loop {
            smol::Timer::after(Duration::from_secs(TYPING_REFRESH_SECS)).await;
            self.outbox.try_push(Job::Typing { chat_id });
        }
    }

    /// `YYYY-MM-DD HH:MM` in `agent.timezone`.
    fn local_time(&self, at: i64) -> String {
        let full = crate::time::clock::format_at(at, &self.timezone);
        full.get(..16).unwrap_or(&full).to_string()
    }

    /// At start, before polling: send undelivered answers again, queue unanswered turns
    /// before the waiting messages, tell chats what is too old (`recover`), and start the
    /// turns. Returns (answers sent again, turns resumed, chats told).
    pub async fn recover(
        self: &Rc<Self>,
        ex: &smol::LocalExecutor<'static>,
    ) -> (usize, usize, usize) {
        let (t, epoch) = (now(), build_epoch());
        let owed = self.db.owed_replies().unwrap_or_else(|e| {
            log::warn!("telegram: cannot read the answers owed: {e}");
            Vec::new()
        });
        let mut plan = recover::plan(&owed, t, epoch);
        // Marked handled first (one commit): nothing is answered or told twice, even by
        // a crash. Waiting messages too old to answer go too (none while the clock is
        // unset: their age is unknown).
        let db = &self.db;
        let before = t.saturating_sub(recover::RECOVER_MAX_AGE_SECS);
        let old = db.deferred_sync(|| {
            db.write_batch(|| {
                db.replies_done(&plan.done)?;
                db.inbox_drop_before(if t >= epoch { before } else { 0 }, epoch)
            })
        });
        match old {
            Ok(old) => {
                for (chat, at) in old {
                    recover::tell(&mut plan.tell, chat, at);
                }
            }
            Err(e) => log::warn!("telegram: cannot record the recovery: {e}"),
        }
        for told in &plan.tell {
            log::warn!(
                "telegram: {} message(s) of chat {} not answered after the restart (too old or too many)",
                told.count,
                told.chat_id
            );
            let Told { chat_id, since, .. } = *told;
            let text = recover::told_text(told, &self.local_time(since));
            self.send(Job::notice(chat_id, text, None)).await;
        }
        let resent = plan
            .resume
            .iter()
            .filter(|(_, t)| t.answer.is_some())
            .count();
        let counts = (resent, plan.resume.len() - resent, plan.tell.len());
        *self.resume.borrow_mut() = plan.resume;
        self.fill(ex);
        counts
    }

    /// At shutdown: tell every chat whose message is being answered or waits that it will
    /// be answered after the restart. Returns how many chats were told.
    pub fn tell_unanswered_chats(&self) -> usize {
        let mut chats: Vec<i64> = self.running.borrow().clone();
        chats.extend(self.resume.borrow().iter().map(|(c, _)| *c));
        chats.extend(
            self.db
                .inbox_chats(&[], MAX_TOLD_AT_SHUTDOWN)
                .unwrap_or_default(),
        );
        let mut told = 0;
        for (i, &chat_id) in chats.iter().enumerate() {
            if chats[..i].contains(&chat_id) {
                continue;
            }
            log::warn!("telegram: chat {chat_id} is answered after the restart");
            if self
                .outbox
                .try_push(Job::notice(chat_id, RESTART_NOTICE, None))
            {
                told += 1;
            }
        }
        told
    }
}

/// The notice for a turn that failed.
fn sorry(session: &str, chat_id: i64, t: &Turn, e: &AgentError) -> Job {
    log::warn!("telegram: the turn in {session} failed: {e}");
    Job::notice(
        chat_id,
        format!("Sorry, I could not answer that: {e}"),
        t.reply_to,
    )
}

/// Most chats with waiting messages told at shutdown (the sender's queue bounds it too).
const MAX_TOLD_AT_SHUTDOWN: usize = 64;

/// Puts approval questions to a Telegram chat (the session is `telegram:<chat_id>`).
struct TelegramAsker {
    outbox: Outbox,
}

impl Asker for TelegramAsker {
    fn ask(&self, session: &str, question: &str) -> AskFuture {
        let chat_id = chat_of(session);
        let outbox = self.outbox.clone();
        let text = question.to_string();
        Box::pin(async move {
            let Some(chat_id) = chat_id else {
                return false;
            };
            outbox.push(Job::notice(chat_id, text, None)).await
        })
    }
}
