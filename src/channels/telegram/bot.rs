//! The Telegram channel on the executor: updates in, turns through the router, replies
//! out through the sender thread.
//!
//! Why it exists: it ties the pure pieces together (`inbound` rules, the agent's
//! `router`, the `outbox` to the sender thread) and owns the channel's state: the
//! persisted offset, the refusal limiter and the running turns. Each update is handled (answered,
//! queued, refused or ignored) before its offset is persisted, so a restart answers
//! nothing twice; a message queued in RAM when the process dies is not re-read (its
//! chat is told to resend it at a clean shutdown).
//!
//! # Bounds
//! Sessions and queues: `Router` (capacity `agent.max_sessions`, `MAX_QUEUED_PER_SESSION`
//! each); refusals: `RefusalLimiter`; running chats listed: at most `agent.max_sessions`.
//! "typing…" is refreshed every `TYPING_REFRESH_SECS` while a turn runs.
//!
//! # Blocking
//! Nothing here blocks the executor: SQLite calls are short, HTTP runs on the sender
//! thread and the worker pool.

use super::api::{BotIdentity, Update};
use super::inbound::{self, Action, AllowList, RefusalLimiter, Request, Rules};
use super::outbox::{Job, Outbox};
use super::stream::Streamer;
use crate::agent::approval::{AskFuture, Asker};
use crate::agent::router::{BUSY_REPLY, Offer, Router};
use crate::agent::{Agent, AgentError, commands};
use crate::chat::ChannelKind;
use crate::config::{Config, GroupMode};
use crate::store::Db;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// The `state` key holding the next `getUpdates` offset.
pub const OFFSET_KEY: &str = "telegram.offset";
/// How often "typing…" is sent while a turn runs (Telegram shows it for ~5 s).
pub const TYPING_REFRESH_SECS: u64 = 4;
/// Told to chats whose message was not answered at shutdown.
pub const RESTART_NOTICE: &str = "I'm restarting and could not finish answering your last message. Please send it again in a minute.";

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
    allow: AllowList,
    group_mode: GroupMode,
    outbox: Outbox,
    router: RefCell<Router<Request>>,
    refusals: RefCell<RefusalLimiter>,
    next_offset: Cell<i64>,
    /// Chats with a running turn.
    running: RefCell<Vec<i64>>,
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
        let capacity = cfg.agent.max_sessions as usize;
        let group_mode = cfg.telegram.group_mode;
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
            allow,
            group_mode,
            outbox,
            router: RefCell::new(Router::new(capacity)),
            refusals: RefCell::new(RefusalLimiter::new()),
            next_offset: Cell::new(next_offset),
            running: RefCell::new(Vec::new()),
        }
    }

    /// The next offset to ask Telegram for.
    pub fn next_offset(&self) -> i64 {
        self.next_offset.get()
    }

    /// Chats with a running turn.
    pub fn running_turns(&self) -> usize {
        self.running.borrow().len()
    }

    /// Sessions held in RAM by the router (running, queued or idle).
    pub fn live_sessions(&self) -> usize {
        self.router.borrow().len()
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

    async fn handle(self: &Rc<Self>, ex: &smol::LocalExecutor<'static>, u: Update) {
        if u.update_id < self.next_offset.get() {
            log::debug!("telegram: ignored update {} (already handled)", u.update_id);
            return;
        }
        if let Some(m) = &u.message {
            log::debug!(
                "telegram: update {} from chat {} (user {:?})",
                u.update_id,
                m.chat_id,
                m.from_id
            );
            let rules = Rules {
                bot: &self.me,
                allow: &self.allow,
                group_mode: self.group_mode,
            };
            match inbound::classify(m, &rules) {
                Action::Ignore(why) => {
                    log::debug!("telegram: ignored a message in chat {}: {why}", m.chat_id)
                }
                Action::Refuse {
                    chat_id,
                    user_id,
                    username,
                    reply_to,
                } => {
                    if self
                        .refusals
                        .borrow_mut()
                        .should_refuse(user_id, Instant::now())
                    {
                        let name = username.map(|u| format!(" (@{u})")).unwrap_or_default();
                        log::warn!(
                            "telegram: refused user {user_id}{name} in chat {chat_id}: not in telegram.allow_from"
                        );
                        self.notice(chat_id, inbound::refusal_text(user_id), reply_to)
                            .await;
                    } else {
                        log::debug!("telegram: refused user {user_id} again (no reply)");
                    }
                }
                Action::TextOnly { chat_id, reply_to } => {
                    self.notice(chat_id, inbound::TEXT_ONLY_REPLY.to_string(), reply_to)
                        .await;
                }
                Action::Answer(req) => {
                    let session = session_id(req.chat_id);
                    // Approval answers go straight to the waiting turn, never behind it.
                    if let Some(reply) = commands::approval_reply(&self.agent, &session, &req.text)
                    {
                        self.notice(req.chat_id, reply, req.reply_to).await;
                        self.persist_offset(u.update_id.saturating_add(1));
                        return;
                    }
                    let offer = self.router.borrow_mut().offer(&session, req);
                    match offer {
                        Offer::Run(req) => {
                            ex.spawn(self.clone().run_session(session, req)).detach();
                        }
                        Offer::Queued => log::debug!("telegram: queued a message in {session}"),
                        Offer::Busy(req) => {
                            log::info!("telegram: {session} is busy; told the user");
                            self.notice(req.chat_id, BUSY_REPLY.to_string(), req.reply_to)
                                .await;
                        }
                    }
                }
            }
        }
        self.persist_offset(u.update_id.saturating_add(1));
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

    async fn notice(&self, chat_id: i64, text: String, reply_to: Option<i64>) {
        let job = Job::Notice {
            chat_id,
            text,
            reply_to,
        };
        if !self.outbox.push(job).await {
            log::error!("telegram: the sender thread is gone; a notice to chat {chat_id} was lost");
        }
    }

    /// Run `first`, then whatever the session queued meanwhile.
    async fn run_session(self: Rc<Self>, session: String, first: Request) {
        let chat_id = first.chat_id;
        let _guard = Running::enter(&self.running, chat_id);
        let mut req = first;
        loop {
            self.process(&session, req).await;
            let next = self.router.borrow_mut().next(&session);
            match next {
                Some(r) => req = r,
                None => break,
            }
        }
    }

    async fn process(&self, session: &str, req: Request) {
        if let Some(answer) = commands::handle(&self.agent, session, &req.text) {
            self.notice(req.chat_id, answer, req.reply_to).await;
            return;
        }
        // "typing…" goes out before the turn starts: a turn can finish in its first poll
        // (its model call already answered), and the refresher would never have run.
        self.outbox.try_push(Job::Typing {
            chat_id: req.chat_id,
        });
        let job = if self.agent.streams() {
            self.streamed_turn(session, &req).await
        } else {
            let turn = self
                .agent
                .run_turn(session, ChannelKind::Telegram, &req.text);
            let result = smol::future::or(turn, self.typing(req.chat_id)).await;
            result.map(|text| Job::Reply {
                chat_id: req.chat_id,
                text,
                reply_to: req.reply_to,
            })
        };
        let job = job.unwrap_or_else(|e| {
            log::warn!("telegram: the turn in {session} failed: {e}");
            Job::Notice {
                chat_id: req.chat_id,
                text: format!("Sorry, I could not answer that: {e}"),
                reply_to: req.reply_to,
            }
        });
        if !self.outbox.push(job).await {
            log::error!(
                "telegram: the sender thread is gone; a reply to chat {} was lost",
                req.chat_id
            );
        }
    }

    /// A turn whose answer is shown while it is written (see `stream`); returns the job
    /// that makes the streamed reply final.
    async fn streamed_turn(&self, session: &str, req: &Request) -> Result<Job, AgentError> {
        let streamer = Streamer::new(req.chat_id, req.reply_to);
        let mut sink = streamer.sink();
        let turn =
            self.agent
                .run_turn_streamed(session, ChannelKind::Telegram, &req.text, &mut sink);
        let background = async {
            smol::future::zip(streamer.pump(&self.outbox), self.typing(req.chat_id))
                .await
                .1
        };
        let result = smol::future::or(turn, background).await;
        streamer.settle().await;
        result.map(|text| Job::StreamEnd {
            live: streamer.live(),
            text,
        })
    }

    /// Keep "typing…" on while awaited (never completes); the first one is sent by
    /// `process` before the turn starts.
    async fn typing(&self, chat_id: i64) -> Result<String, AgentError> {
        loop {
            smol::Timer::after(Duration::from_secs(TYPING_REFRESH_SECS)).await;
            self.outbox.try_push(Job::Typing { chat_id });
        }
    }

    /// At shutdown: tell every chat whose message is running or queued to resend it.
    /// Returns how many chats were told.
    pub fn tell_unanswered_chats(&self) -> usize {
        let mut chats: Vec<i64> = self.running.borrow().clone();
        for (session, req) in self.router.borrow_mut().drain_queued() {
            log::warn!("telegram: dropped a queued message in {session} at shutdown");
            if !chats.contains(&req.chat_id) {
                chats.push(req.chat_id);
            }
        }
        let mut told = 0;
        for chat_id in chats {
            log::warn!("telegram: abandoned the unanswered message in chat {chat_id} at shutdown");
            let job = Job::Notice {
                chat_id,
                text: RESTART_NOTICE.to_string(),
                reply_to: None,
            };
            if self.outbox.try_push(job) {
                told += 1;
            }
        }
        told
    }
}

/// Puts approval questions to a Telegram chat (the session is `telegram:<chat_id>`).
struct TelegramAsker {
    outbox: Outbox,
}

impl Asker for TelegramAsker {
    fn ask(&self, session: &str, question: &str) -> AskFuture {
        let chat_id = session
            .strip_prefix("telegram:")
            .and_then(|id| id.parse::<i64>().ok());
        let outbox = self.outbox.clone();
        let text = question.to_string();
        Box::pin(async move {
            let Some(chat_id) = chat_id else {
                return false;
            };
            let job = Job::Notice {
                chat_id,
                text,
                reply_to: None,
            };
            outbox.push(job).await
        })
    }
}

/// Lists a chat as running for as long as it lives (also when its task is dropped).
struct Running<'a> {
    list: &'a RefCell<Vec<i64>>,
    chat_id: i64,
}

impl<'a> Running<'a> {
    fn enter(list: &'a RefCell<Vec<i64>>, chat_id: i64) -> Running<'a> {
        list.borrow_mut().push(chat_id);
        Running { list, chat_id }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let mut l = self.list.borrow_mut();
        if let Some(i) = l.iter().position(|c| *c == self.chat_id) {
            l.swap_remove(i);
        }
    }
}
