//! Streamed replies on Telegram (`provider.stream = true`): the answer appears and grows
//! while the model writes it, then becomes exactly the message a non-streamed reply
//! would have been.
//!
//! How: the turn's [`LiveSink`] collects the visible text (the agent's `MarkupFilter`
//! has already held back tool-call markup) into a [`LiveReply`] shared with the sender
//! thread. A pump on the executor ([`Streamer::pump`]) queues a `Preview` job when there
//! is new text, no preview is queued, and the debounce allows it. On the sender thread
//! ([`preview`]) the text so far is shown:
//! - in a private chat, as an animated draft (`sendMessageDraft`, Bot API 9.3+) while
//!   the server accepts drafts; a 404 or a 400 refusal turns drafts off for the process
//!   and the same preview goes out the next way at once;
//! - otherwise as one message, sent at the first preview and edited in place
//!   (`editMessageText`) after that (groups always stream this way).
//!
//! At the end ([`finish`], a `StreamEnd` job) the answer goes through
//! `send::deliver_parts`, the code every reply uses: a streamed message is edited to
//! the first part (skipped when it already shows exactly that) and the other parts are
//! sent as new messages; a draft is followed by a normal `sendMessage`. So HTML
//! conversion, splitting and the plain-text fallback are those of a non-streamed reply.
//!
//! # Bounds
//! - At most one preview per reply is queued or being sent; newer text replaces older
//!   (the sender reads the latest text when it reaches the job).
//! - Previews of a reply are at least `STREAM_EDIT_INTERVAL_MS` apart, the first one
//!   that long after the turn began (a quick answer goes out as one message), and none
//!   before a 429's `retry_after` has passed. The final edit waits the same way, for at
//!   most `MAX_SETTLE_SECS` (then the sender's own 429 handling applies).
//! - The previewed text is at most `MAX_PREVIEW_BYTES` of the current model request's
//!   text, and a preview shows at most one message (its first part): the rest arrives
//!   with the final answer.
//! - A preview is one attempt, never retried in place: a failed one leaves its text to
//!   the next.
//!
//! # Threads
//! [`LiveSink`] and [`Streamer`] run on the executor; [`preview`] and [`finish`] block on
//! the sender thread. They share one `Mutex`, never held across I/O.

use super::api::{Api, ApiError, OutText};
use super::backoff::{Backoff, Stop};
use super::format::{TELEGRAM_MAX_MESSAGE_UTF16, markdown_to_html, split_plain};
use super::send::{self, DeliveryResult, Outbound, Outbox, html_to_plain};
use crate::agent::streaming::StreamSink;
use crate::security::scrub::scrub;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Least time between two previews (drafts or edits) of one reply, and before the first.
pub const STREAM_EDIT_INTERVAL_MS: u64 = 1_000;
/// Most bytes of streamed text kept for previews.
pub const MAX_PREVIEW_BYTES: usize = 16 * 1024;
/// Longest wait before the final answer is queued (for a pending preview, the debounce
/// or a 429).
pub const MAX_SETTLE_SECS: u64 = 10;

/// Draft ids: non-zero, different for every reply of the process.
static NEXT_DRAFT_ID: AtomicI64 = AtomicI64::new(1);

fn next_draft_id() -> i64 {
    let n = NEXT_DRAFT_ID.fetch_add(1, Ordering::Relaxed);
    n.rem_euclid(i64::from(i32::MAX)) + 1
}

/// The Bot API calls streaming uses (the real [`Api`], or a fake in tests).
pub trait BotCalls {
    /// `sendMessage`; the new message's id when the answer gives it.
    fn send(&self, m: &OutText<'_>) -> Result<Option<i64>, ApiError>;
    /// `editMessageText`.
    fn edit(&self, message_id: i64, m: &OutText<'_>) -> Result<(), ApiError>;
    /// `sendMessageDraft`.
    fn draft(&self, draft_id: i64, m: &OutText<'_>) -> Result<(), ApiError>;
}

impl BotCalls for Api {
    fn send(&self, m: &OutText<'_>) -> Result<Option<i64>, ApiError> {
        self.send_message(m)
    }
    fn edit(&self, message_id: i64, m: &OutText<'_>) -> Result<(), ApiError> {
        self.edit_message_text(message_id, m)
    }
    fn draft(&self, draft_id: i64, m: &OutText<'_>) -> Result<(), ApiError> {
        self.send_message_draft(draft_id, m)
    }
}

/// Whether the Bot API server takes `sendMessageDraft` (the sender thread's memory).
#[derive(Debug)]
pub struct DraftSupport {
    available: bool,
}

impl Default for DraftSupport {
    fn default() -> Self {
        DraftSupport::new()
    }
}

impl DraftSupport {
    /// Drafts are tried until the server refuses one.
    pub fn new() -> DraftSupport {
        DraftSupport { available: true }
    }

    pub fn available(&self) -> bool {
        self.available
    }
}

/// What the chat shows of a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown {
    Nothing,
    Draft(i64),
    Message(i64),
    /// The streamed message cannot be edited (deleted, chat gone): no more previews;
    /// the answer goes out as new messages.
    Off,
}

#[derive(Debug)]
struct State {
    /// Visible text of the current model request (at most `MAX_PREVIEW_BYTES`).
    text: String,
    /// `text` reached its cap: later deltas are not kept.
    full: bool,
    /// A tool round ended: the next delta starts a new text.
    new_round: bool,
    /// `text` changed since a preview last took it.
    dirty: bool,
    /// A preview is queued or being sent.
    pending: bool,
    shown: Shown,
    /// Previews as HTML (until Telegram refuses our HTML).
    html: bool,
    /// The text and mode the streamed message or draft shows now.
    showing: Option<(String, bool)>,
    /// When the last preview call was made.
    last_sent: Option<Instant>,
    /// No call before this (a 429's `retry_after`).
    not_before: Option<Instant>,
}

/// One streamed reply, shared by the executor and the sender thread.
#[derive(Debug)]
pub struct LiveReply {
    pub chat_id: i64,
    pub reply_to: Option<i64>,
    started: Instant,
    interval: Duration,
    state: Mutex<State>,
    /// Wakes the executor side (new text, a preview done).
    wake: async_channel::Sender<()>,
}

impl LiveReply {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a panic elsewhere; the state is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push_text(&self, delta: &str) {
        {
            let mut st = self.lock();
            if st.new_round {
                st.text.clear();
                st.full = false;
                st.new_round = false;
            }
            if st.full {
                return;
            }
            let room = MAX_PREVIEW_BYTES.saturating_sub(st.text.len());
            let mut take = delta.len().min(room);
            while !delta.is_char_boundary(take) {
                take -= 1;
            }
            st.text.push_str(&delta[..take]);
            if take < delta.len() {
                st.full = true;
            }
            if take > 0 {
                st.dirty = true;
            }
        }
        let _ = self.wake.try_send(());
    }

    /// When the next preview may be queued; `None` while nothing needs showing.
    fn next_preview_at(&self) -> Option<Instant> {
        let st = self.lock();
        if st.pending || !st.dirty || st.shown == Shown::Off {
            return None;
        }
        let mut at = self.started + self.interval;
        if let Some(t) = st.last_sent {
            at = at.max(t + self.interval);
        }
        if let Some(t) = st.not_before {
            at = at.max(t);
        }
        Some(at)
    }

    /// When the final answer may be queued; `None` while a preview is pending.
    fn settled_at(&self, now: Instant) -> Option<Instant> {
        let st = self.lock();
        if st.pending {
            return None;
        }
        let mut at = st.not_before.unwrap_or(now);
        if let (Shown::Message(_), Some(t)) = (st.shown, st.last_sent) {
            at = at.max(t + self.interval);
        }
        Some(at)
    }

    /// Mark a preview as queued; `false` when one already is.
    fn begin_preview(&self) -> bool {
        let mut st = self.lock();
        if st.pending {
            return false;
        }
        st.pending = true;
        true
    }

    fn cancel_preview(&self) {
        self.lock().pending = false;
    }
}

/// The executor's side of one streamed reply: the sink for the turn, the pump that
/// queues previews, and the wait before the final answer.
pub struct Streamer {
    live: Arc<LiveReply>,
    woken: async_channel::Receiver<()>,
}

impl Streamer {
    /// A reply to `chat_id` (answering `reply_to` in groups), previews at most once per
    /// `STREAM_EDIT_INTERVAL_MS`.
    pub fn new(chat_id: i64, reply_to: Option<i64>) -> Streamer {
        Streamer::with_interval(
            chat_id,
            reply_to,
            Duration::from_millis(STREAM_EDIT_INTERVAL_MS),
        )
    }

    pub fn with_interval(chat_id: i64, reply_to: Option<i64>, interval: Duration) -> Streamer {
        let (wake, woken) = async_channel::bounded(1);
        let live = Arc::new(LiveReply {
            chat_id,
            reply_to,
            started: Instant::now(),
            interval,
            state: Mutex::new(State {
                text: String::new(),
                full: false,
                new_round: false,
                dirty: false,
                pending: false,
                shown: Shown::Nothing,
                html: true,
                showing: None,
                last_sent: None,
                not_before: None,
            }),
            wake,
        });
        Streamer { live, woken }
    }

    /// The sink to hand to `Agent::run_turn_streamed`.
    pub fn sink(&self) -> LiveSink {
        LiveSink {
            live: self.live.clone(),
        }
    }

    /// The shared reply, for the `StreamEnd` job.
    pub fn live(&self) -> Arc<LiveReply> {
        self.live.clone()
    }

    /// Queue previews as text arrives, debounced. Never returns: race it with the turn.
    pub async fn pump(&self, outbox: &Outbox) {
        loop {
            match self.live.next_preview_at() {
                Some(at) if at <= Instant::now() => {
                    if self.live.begin_preview()
                        && !outbox.try_push(Outbound::Preview(self.live.clone()))
                    {
                        // The sender's queue is full: this preview is skipped, try later.
                        self.live.cancel_preview();
                        smol::Timer::after(self.live.interval).await;
                    }
                }
                Some(at) => {
                    smol::future::or(
                        async {
                            let _ = self.woken.recv().await;
                        },
                        async {
                            smol::Timer::at(at).await;
                        },
                    )
                    .await;
                }
                None => {
                    if self.woken.recv().await.is_err() {
                        // Cannot happen (the sender lives in `live`); never spin.
                        std::future::pending::<()>().await;
                    }
                }
            }
        }
    }

    /// Wait until the final answer may go out: no preview pending, the debounce after
    /// the last edit passed, no 429 in force; at most `MAX_SETTLE_SECS`.
    pub async fn settle(&self) {
        let limit = Instant::now() + Duration::from_secs(MAX_SETTLE_SECS);
        loop {
            let now = Instant::now();
            if now >= limit {
                return;
            }
            match self.live.settled_at(now) {
                Some(at) if at <= now => return,
                Some(at) => {
                    smol::Timer::at(at.min(limit)).await;
                }
                None => {
                    smol::future::or(
                        async {
                            let _ = self.woken.recv().await;
                        },
                        async {
                            smol::Timer::at(limit).await;
                        },
                    )
                    .await;
                }
            }
        }
    }
}

/// The turn's view of a streamed reply: keeps the current request's visible text.
pub struct LiveSink {
    live: Arc<LiveReply>,
}

impl StreamSink for LiveSink {
    fn text(&mut self, delta: &str) {
        self.live.push_text(delta);
    }

    fn round_end(&mut self, more: bool) {
        if more {
            // What the model said before its tool calls stays shown until the next
            // request writes something.
            self.live.lock().new_round = true;
        }
    }
}

/// What a preview of `text` shows: the first message of the reply it would make.
pub fn render(text: &str, html: bool) -> Option<String> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    if html {
        return send::reply_parts(t, true).into_iter().next();
    }
    let plain = html_to_plain(&markdown_to_html(&scrub(t)));
    split_plain(&plain, TELEGRAM_MAX_MESSAGE_UTF16)
        .into_iter()
        .next()
}

/// A draft refused in a way that means "no drafts here" (not a rate limit or a
/// formatting error).
fn drafts_refused(e: &ApiError) -> bool {
    match e {
        ApiError::NotFound => true,
        ApiError::Rejected { status: 400, .. } => !e.is_parse_entities(),
        _ => false,
    }
}

/// Show the reply's latest text (sender thread; one attempt, see the module doc).
pub fn preview<C: BotCalls + ?Sized>(
    calls: &C,
    live: &LiveReply,
    backoff: &Backoff,
    drafts: &mut DraftSupport,
) {
    let (text, before, html, showing) = {
        let mut st = live.lock();
        st.dirty = false;
        (st.text.clone(), st.shown, st.html, st.showing.clone())
    };
    let rendered = render(&text, html);
    let mut shown = before;
    let mut result: Option<Result<(), ApiError>> = None;
    if let Some(rendered) = &rendered {
        let msg = OutText {
            chat_id: live.chat_id,
            text: rendered,
            html,
            reply_to: live.reply_to,
        };
        // Picking a draft id, a refused draft, then a message: at most three steps.
        for _ in 0..3 {
            let r = match shown {
                Shown::Off => None,
                Shown::Nothing if live.chat_id > 0 && drafts.available => {
                    shown = Shown::Draft(next_draft_id());
                    continue;
                }
                Shown::Draft(id) => Some(calls.draft(id, &msg)),
                Shown::Nothing => Some(calls.send(&msg).map(|id| match id {
                    Some(id) => shown = Shown::Message(id),
                    None => {
                        log::warn!(
                            "telegram: no message id for the streamed reply in chat {}; the answer follows as a new message",
                            live.chat_id
                        );
                        shown = Shown::Off;
                    }
                })),
                // Already shown (e.g. the text grew past the first message): no call.
                Shown::Message(_) if showing.as_ref() == Some(&(rendered.clone(), html)) => None,
                Shown::Message(id) => Some(calls.edit(id, &msg)),
            };
            if let (Shown::Draft(_), Some(Err(e))) = (shown, &r)
                && drafts_refused(e)
            {
                log::info!(
                    "telegram: drafts are not available ({e}); streaming by editing a message instead"
                );
                drafts.available = false;
                shown = Shown::Nothing;
                continue;
            }
            result = r;
            break;
        }
    }
    let now = Instant::now();
    {
        let mut st = live.lock();
        st.pending = false;
        match (result, rendered) {
            (None, _) | (_, None) => {}
            (Some(Ok(())), Some(r)) => {
                st.shown = shown;
                st.showing = Some((r, html));
                st.last_sent = Some(now);
            }
            (Some(Err(e)), Some(r)) => {
                st.last_sent = Some(now);
                if e.is_not_modified() {
                    st.shown = shown;
                    st.showing = Some((r, html));
                } else if let ApiError::RateLimited { retry_after_secs } = e {
                    st.not_before = Some(now + backoff.retry_after(retry_after_secs));
                    st.dirty = true;
                    if let Shown::Draft(_) = shown {
                        st.shown = shown;
                    }
                    log::debug!(
                        "telegram: preview in chat {} rate limited for {retry_after_secs} s",
                        live.chat_id
                    );
                } else if html && e.is_parse_entities() {
                    st.html = false;
                    st.dirty = true;
                } else if e.is_transient() {
                    st.dirty = true;
                    log::debug!("telegram: preview in chat {} failed: {e}", live.chat_id);
                } else {
                    log::warn!(
                        "telegram: stopped streaming the reply in chat {} ({e}); the answer follows as a new message",
                        live.chat_id
                    );
                    st.shown = Shown::Off;
                }
            }
        }
    }
    let _ = live.wake.try_send(());
}

/// Make the chat show the final `text` (sender thread; retried like every reply).
pub fn finish<C: BotCalls + ?Sized>(
    calls: &C,
    live: &LiveReply,
    text: &str,
    backoff: &Backoff,
    stop: &Stop,
) -> DeliveryResult {
    let (shown, showing) = {
        let st = live.lock();
        (st.shown, st.showing.clone())
    };
    let Shown::Message(id) = shown else {
        return send::deliver(
            &mut |m: &OutText<'_>| calls.send(m).map(|_| ()),
            live.chat_id,
            text,
            true,
            live.reply_to,
            backoff,
            stop,
        );
    };
    let chat_id = live.chat_id;
    send::deliver_parts(
        &mut |i, m: &OutText<'_>| {
            if i > 0 {
                return calls.send(m).map(|_| ());
            }
            if showing
                .as_ref()
                .is_some_and(|(t, h)| t == m.text && *h == m.html)
            {
                return Ok(());
            }
            match calls.edit(id, m) {
                Err(e) if e.is_not_modified() => Ok(()),
                Err(e @ ApiError::Rejected { .. }) if !e.is_parse_entities() => {
                    log::warn!(
                        "telegram: cannot edit the streamed reply in chat {chat_id} ({e}); sending the answer as a new message"
                    );
                    calls.send(m).map(|_| ())
                }
                r => r,
            }
        },
        chat_id,
        text,
        true,
        live.reply_to,
        backoff,
        stop,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channels::telegram::format::utf16_len;
    use std::cell::RefCell;

    #[derive(Debug, Clone, PartialEq)]
    enum Call {
        Send(String, bool, Option<i64>),
        Edit(i64, String, bool),
        Draft(i64, String),
    }

    /// Records calls; answers from per-method scripts, then success.
    #[derive(Default)]
    struct Fake {
        calls: RefCell<Vec<Call>>,
        sends: RefCell<Vec<Result<Option<i64>, ApiError>>>,
        edits: RefCell<Vec<Result<(), ApiError>>>,
        drafts: RefCell<Vec<Result<(), ApiError>>>,
        next_id: RefCell<i64>,
    }

    fn next<T>(script: &RefCell<Vec<T>>) -> Option<T> {
        let mut s = script.borrow_mut();
        if s.is_empty() {
            None
        } else {
            Some(s.remove(0))
        }
    }

    impl BotCalls for Fake {
        fn send(&self, m: &OutText<'_>) -> Result<Option<i64>, ApiError> {
            let r = next(&self.sends).unwrap_or_else(|| {
                *self.next_id.borrow_mut() += 1;
                Ok(Some(100 + *self.next_id.borrow()))
            });
            if r.is_ok() {
                self.calls
                    .borrow_mut()
                    .push(Call::Send(m.text.into(), m.html, m.reply_to));
            }
            r
        }
        fn edit(&self, id: i64, m: &OutText<'_>) -> Result<(), ApiError> {
            let r = next(&self.edits).unwrap_or(Ok(()));
            if r.is_ok() {
                self.calls
                    .borrow_mut()
                    .push(Call::Edit(id, m.text.into(), m.html));
            }
            r
        }
        fn draft(&self, id: i64, m: &OutText<'_>) -> Result<(), ApiError> {
            let r = next(&self.drafts).unwrap_or(Ok(()));
            if r.is_ok() {
                self.calls.borrow_mut().push(Call::Draft(id, m.text.into()));
            }
            r
        }
    }

    fn quick() -> (Backoff, Stop) {
        (Backoff::scaled(0.001), Stop::new())
    }

    fn rejected(d: &str) -> ApiError {
        ApiError::Rejected {
            status: 400,
            description: d.into(),
        }
    }

    /// A streamer with a zero debounce, and its sink.
    fn streamer(chat: i64) -> (Streamer, LiveSink) {
        let s = Streamer::with_interval(chat, None, Duration::ZERO);
        let sink = s.sink();
        (s, sink)
    }

    #[test]
    fn a_group_reply_is_sent_once_then_edited_then_finished() {
        let (s, mut sink) = streamer(-100);
        let f = Fake::default();
        let (b, stop) = quick();
        let mut d = DraftSupport::new();
        sink.text("**Hel");
        preview(&f, &s.live, &b, &mut d);
        sink.text("lo** you");
        preview(&f, &s.live, &b, &mut d);
        // Nothing new: no call.
        preview(&f, &s.live, &b, &mut d);
        assert_eq!(finish(&f, &s.live, "**Hello** you", &b, &stop), Ok(1));
        assert_eq!(
            *f.calls.borrow(),
            vec![
                Call::Send("**Hel".into(), true, None),
                Call::Edit(101, "<b>Hello</b> you".into(), true),
            ],
            "the final edit is skipped: the message already shows it"
        );
    }

    #[test]
    fn private_chats_use_drafts_then_a_real_message() {
        let (s, mut sink) = streamer(42);
        let f = Fake::default();
        let (b, stop) = quick();
        let mut d = DraftSupport::new();
        sink.text("Hi");
        preview(&f, &s.live, &b, &mut d);
        sink.text(" there");
        preview(&f, &s.live, &b, &mut d);
        finish(&f, &s.live, "Hi there", &b, &stop).unwrap();
        let calls = f.calls.borrow();
        let (Call::Draft(a, t1), Call::Draft(b2, t2)) = (&calls[0], &calls[1]) else {
            panic!("{calls:?}");
        };
        assert_eq!((a, t1.as_str(), t2.as_str()), (b2, "Hi", "Hi there"));
        assert!(*a != 0);
        assert_eq!(calls[2], Call::Send("Hi there".into(), true, None));
    }

    #[test]
    fn refused_drafts_fall_back_to_a_message_at_once_and_stay_off() {
        for refusal in [
            ApiError::NotFound,
            rejected("Bad Request: method not found"),
        ] {
            let (s, mut sink) = streamer(42);
            let f = Fake::default();
            f.drafts.borrow_mut().push(Err(refusal));
            let (b, _) = quick();
            let mut d = DraftSupport::new();
            sink.text("Hi");
            preview(&f, &s.live, &b, &mut d);
            assert!(!d.available());
            assert_eq!(*f.calls.borrow(), vec![Call::Send("Hi".into(), true, None)]);
            // The next reply does not try drafts again.
            let (s2, mut sink2) = streamer(42);
            sink2.text("Yo");
            preview(&f, &s2.live, &b, &mut d);
            assert_eq!(f.calls.borrow().len(), 2);
            assert!(matches!(f.calls.borrow()[1], Call::Send(..)));
        }
    }

    #[test]
    fn a_429_sets_a_wait_and_keeps_the_text_for_later() {
        let (s, mut sink) = streamer(-5);
        let f = Fake::default();
        let (_, stop) = quick();
        let b = Backoff::standard();
        let mut d = DraftSupport::new();
        sink.text("one");
        preview(&f, &s.live, &b, &mut d);
        f.edits.borrow_mut().push(Err(ApiError::RateLimited {
            retry_after_secs: 7,
        }));
        sink.text(" two");
        preview(&f, &s.live, &b, &mut d);
        let at = s.live.next_preview_at().expect("still something to show");
        assert!(at >= Instant::now() + Duration::from_secs(6), "{at:?}");
        let settle = s.live.settled_at(Instant::now()).unwrap();
        assert!(settle >= Instant::now() + Duration::from_secs(6));
        assert_eq!(finish(&f, &s.live, "one two", &b, &stop), Ok(1));
        assert_eq!(
            f.calls.borrow().last(),
            Some(&Call::Edit(101, "one two".into(), true))
        );
    }

    #[test]
    fn refused_html_previews_go_on_in_plain_text() {
        let (s, mut sink) = streamer(-5);
        let f = Fake::default();
        f.sends
            .borrow_mut()
            .push(Err(rejected("Bad Request: can't parse entities")));
        let (b, _) = quick();
        let mut d = DraftSupport::new();
        sink.text("a **b** & c");
        preview(&f, &s.live, &b, &mut d);
        assert!(s.live.lock().dirty && !s.live.lock().html);
        preview(&f, &s.live, &b, &mut d);
        assert_eq!(
            *f.calls.borrow(),
            vec![Call::Send("a b & c".into(), false, None)]
        );
    }

    #[test]
    fn a_long_final_answer_edits_the_first_part_and_sends_the_rest() {
        let (s, mut sink) = streamer(-5);
        let f = Fake::default();
        let (b, stop) = quick();
        let mut d = DraftSupport::new();
        let text = "Tea 🍵 and cake. ".repeat(700); // ~ 11,900 UTF-16 units
        sink.text(&text[..200]);
        preview(&f, &s.live, &b, &mut d);
        sink.text(&text[200..]);
        preview(&f, &s.live, &b, &mut d);
        let n = finish(&f, &s.live, &text, &b, &stop).unwrap();
        let want = send::reply_parts(&text, true);
        assert_eq!(n, want.len());
        assert!(want.len() >= 3);
        let calls = f.calls.borrow();
        // send, edit (preview of the first part), then the other parts: the final
        // edit is skipped because the preview already shows the first part.
        assert_eq!(calls[1], Call::Edit(101, want[0].clone(), true));
        let rest: Vec<String> = calls[2..]
            .iter()
            .map(|c| match c {
                Call::Send(t, true, None) => t.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(rest, want[1..].to_vec());
        for p in &want {
            assert!(utf16_len(p) <= TELEGRAM_MAX_MESSAGE_UTF16);
        }
    }

    #[test]
    fn a_deleted_streamed_message_gets_the_answer_as_a_new_one() {
        let (s, mut sink) = streamer(-5);
        let f = Fake::default();
        let (b, stop) = quick();
        let mut d = DraftSupport::new();
        sink.text("partial");
        preview(&f, &s.live, &b, &mut d);
        f.edits
            .borrow_mut()
            .push(Err(rejected("Bad Request: message to edit not found")));
        assert_eq!(finish(&f, &s.live, "the whole answer", &b, &stop), Ok(1));
        assert_eq!(
            f.calls.borrow().last(),
            Some(&Call::Send("the whole answer".into(), true, None))
        );
    }

    #[test]
    fn tool_rounds_restart_the_text_and_nothing_is_kept_past_the_cap() {
        let (s, mut sink) = streamer(-5);
        sink.text("Let me look.");
        sink.round_end(true);
        assert_eq!(s.live.lock().text, "Let me look.");
        sink.text("Found");
        assert_eq!(s.live.lock().text, "Found");
        sink.round_end(false);
        let big = "é".repeat(MAX_PREVIEW_BYTES);
        sink.text(&big);
        let st = s.live.lock();
        assert!(st.full && st.text.len() <= MAX_PREVIEW_BYTES);
    }

    #[test]
    fn one_preview_at_a_time_and_the_debounce_is_kept() {
        let s = Streamer::with_interval(-5, None, Duration::from_secs(1));
        let mut sink = s.sink();
        assert_eq!(s.live.next_preview_at(), None, "nothing to show yet");
        sink.text("x");
        let first = s.live.next_preview_at().unwrap();
        assert!(first >= s.live.started + Duration::from_secs(1));
        assert!(s.live.begin_preview());
        assert!(!s.live.begin_preview());
        assert_eq!(s.live.next_preview_at(), None);
        let f = Fake::default();
        let (b, _) = quick();
        preview(&f, &s.live, &b, &mut DraftSupport::new());
        sink.text("y");
        let second = s.live.next_preview_at().unwrap();
        assert!(second >= s.live.lock().last_sent.unwrap() + Duration::from_secs(1));
    }

    #[test]
    fn render_matches_the_first_part_of_a_reply() {
        assert_eq!(render("  \n ", true), None);
        assert_eq!(
            render("**a** <b>", true).as_deref(),
            Some("<b>a</b> &lt;b&gt;")
        );
        assert_eq!(render("**a** <b>", false).as_deref(), Some("a <b>"));
        let mut x: u64 = 0x1234_5678_9abc_def1;
        let alphabet = [
            "**",
            "`",
            "<",
            "&",
            "a",
            " ",
            "\n",
            "é",
            "😀",
            "[l](http://x)",
        ];
        for _ in 0..2_000 {
            let mut s = String::new();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for _ in 0..(x % 30) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.push_str(alphabet[(x % alphabet.len() as u64) as usize]);
            }
            if let Some(r) = render(&s, true) {
                assert_eq!(Some(&r), send::reply_parts(s.trim(), true).first());
            }
            let _ = render(&s, false);
        }
    }

    /// A chat as Telegram keeps it: messages by id, edits in place; calls fail at
    /// random with the errors a real server gives.
    struct Chat {
        messages: RefCell<Vec<(i64, String, bool)>>,
        rng: RefCell<u64>,
        failing: bool,
    }

    impl Chat {
        fn roll(&self) -> Option<ApiError> {
            if !self.failing {
                return None;
            }
            let mut x = self.rng.borrow_mut();
            *x ^= *x << 13;
            *x ^= *x >> 7;
            *x ^= *x << 17;
            match *x % 10 {
                0 => Some(ApiError::RateLimited {
                    retry_after_secs: 1,
                }),
                1 => Some(ApiError::Server { status: 502 }),
                2 => Some(rejected("Bad Request: can't parse entities")),
                3 => Some(ApiError::NotFound),
                4 => Some(rejected("Bad Request: message to edit not found")),
                _ => None,
            }
        }
    }

    impl BotCalls for Chat {
        fn send(&self, m: &OutText<'_>) -> Result<Option<i64>, ApiError> {
            if let Some(e) = self.roll().filter(|e| !matches!(e, ApiError::NotFound)) {
                return Err(e);
            }
            let mut msgs = self.messages.borrow_mut();
            let id = 1 + msgs.len() as i64;
            msgs.push((id, m.text.to_string(), m.html));
            Ok(Some(id))
        }
        fn edit(&self, id: i64, m: &OutText<'_>) -> Result<(), ApiError> {
            if let Some(e) = self.roll().filter(|e| !matches!(e, ApiError::NotFound)) {
                return Err(e);
            }
            let mut msgs = self.messages.borrow_mut();
            let Some(msg) = msgs.iter_mut().find(|(i, _, _)| *i == id) else {
                return Err(rejected("Bad Request: message to edit not found"));
            };
            if msg.1 == m.text && msg.2 == m.html {
                return Err(rejected("Bad Request: message is not modified"));
            }
            msg.1 = m.text.to_string();
            msg.2 = m.html;
            Ok(())
        }
        fn draft(&self, _id: i64, _m: &OutText<'_>) -> Result<(), ApiError> {
            self.roll().map_or(Ok(()), Err)
        }
    }

    #[test]
    fn whatever_previews_meet_the_chat_ends_with_the_reply_parts() {
        let words = ["**bold** ", "a < b ", "& ", "😀 ", "word ", "\n\n", "`x` "];
        let mut x: u64 = 0xA5A5_1234_0F0F_9876;
        let mut step = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (b, stop) = quick();
        for case in 0..300 {
            let chat_id = if case % 2 == 0 { 7 } else { -7 };
            let (s, mut sink) = streamer(chat_id);
            let chat = Chat {
                messages: RefCell::new(Vec::new()),
                rng: RefCell::new(step() | 1),
                failing: true,
            };
            let mut drafts = DraftSupport::new();
            let mut answer = String::new();
            // Long enough, now and then, to need several messages.
            let n = 1 + step() % if case % 10 == 0 { 3_000 } else { 40 };
            for _ in 0..n {
                let w = words[(step() % words.len() as u64) as usize];
                answer.push_str(w);
                sink.text(w);
                if step() % 50 == 0 {
                    sink.round_end(true);
                    answer.clear();
                }
                if step() % 4 == 0 {
                    preview(&chat, &s.live, &b, &mut drafts);
                    assert!(!s.live.lock().pending);
                }
            }
            sink.round_end(false);
            let answer = answer.trim().to_string();
            let chat = Chat {
                failing: false,
                ..chat
            };
            let r = finish(&chat, &s.live, &answer, &b, &stop);
            let want = send::reply_parts(&answer, true);
            assert_eq!(r, Ok(want.len()), "case {case}");
            let msgs = chat.messages.borrow();
            let tail: Vec<String> = msgs
                .iter()
                .skip(msgs.len().saturating_sub(want.len()))
                .map(|(_, t, _)| t.clone())
                .collect();
            // Also after previews fell back to plain text: the final answer is HTML
            // again unless Telegram refuses it.
            assert_eq!(tail, want, "case {case}");
        }
    }
}
