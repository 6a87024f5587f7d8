//! Streamed replies on Telegram, the sender thread's side: show the text so far, then
//! make the chat show exactly the message a non-streamed reply would have been.
//!
//! How: a `Preview` job ([`preview`]) shows the latest text of a `LiveReply` (`live`,
//! filled on the executor by `stream`):
//! - in a private chat, as an animated draft (`sendMessageDraft`, Bot API 9.3+) while
//!   the server accepts drafts; a 404 or a 400 refusal turns drafts off for the process
//!   and the same preview goes out the next way at once;
//! - otherwise as one message, sent at the first preview and edited in place
//!   (`editMessageText`) after that (groups always stream this way).
//!
//! At the end ([`finish`], a `StreamEnd` job) the answer goes through
//! `reply::deliver_parts`, the code every reply uses: a streamed message is edited to
//! the first part (skipped when it already shows exactly that) and the other parts are
//! sent as new messages; a draft is followed by a normal `sendMessage`. So HTML
//! conversion, splitting and the plain-text fallback are those of a non-streamed reply.
//!
//! # Bounds
//! - A preview shows at most one message (the first part of what the text so far
//!   would make): the rest arrives with the final answer.
//! - A preview is one attempt, never retried in place: a failed one leaves its text to
//!   the next (a 429 sets when the next may be tried).
//! - Picking the way to show a preview takes at most three steps (draft id, refused
//!   draft, message).
//!
//! # Threads
//! Sender thread only: [`preview`] and [`finish`] block on HTTP (and `finish` on
//! backoff sleeps). They take the `LiveReply`'s lock only to read or record state,
//! never across a call.

use super::api::{Api, ApiError, OutText};
use super::backoff::{Backoff, Stop};
use super::html::{html_to_plain, markdown_to_html};
use super::live::{LiveReply, Shown, next_draft_id};
use super::reply::{self, DeliveryResult};
use super::split::{TELEGRAM_MAX_MESSAGE_UTF16, split_plain};
use crate::security::scrub::scrub;
use std::time::Instant;

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

/// What a preview of `text` shows: the first message of the reply it would make.
pub fn render(text: &str, html: bool) -> Option<String> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    if html {
        return reply::reply_parts(t, true).into_iter().next();
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
    live.wake();
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
        return reply::deliver(
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
    reply::deliver_parts(
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
    use crate::channels::telegram::split::utf16_len;
    use crate::testkit::XorShift;
    use std::cell::RefCell;
    use std::sync::Arc;
    use std::time::Duration;

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

    /// A streamed reply with a zero debounce.
    fn live(chat: i64) -> Arc<LiveReply> {
        LiveReply::new(chat, None, Duration::ZERO).0
    }

    #[test]
    fn a_group_reply_is_sent_once_then_edited_then_finished() {
        let s = live(-100);
        let f = Fake::default();
        let (b, stop) = quick();
        let mut d = DraftSupport::new();
        s.push_text("**Hel");
        preview(&f, &s, &b, &mut d);
        s.push_text("lo** you");
        preview(&f, &s, &b, &mut d);
        // Nothing new: no call.
        preview(&f, &s, &b, &mut d);
        assert_eq!(finish(&f, &s, "**Hello** you", &b, &stop), Ok(1));
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
        let s = live(42);
        let f = Fake::default();
        let (b, stop) = quick();
        let mut d = DraftSupport::new();
        s.push_text("Hi");
        preview(&f, &s, &b, &mut d);
        s.push_text(" there");
        preview(&f, &s, &b, &mut d);
        finish(&f, &s, "Hi there", &b, &stop).unwrap();
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
            let s = live(42);
            let f = Fake::default();
            f.drafts.borrow_mut().push(Err(refusal));
            let (b, _) = quick();
            let mut d = DraftSupport::new();
            s.push_text("Hi");
            preview(&f, &s, &b, &mut d);
            assert!(!d.available());
            assert_eq!(*f.calls.borrow(), vec![Call::Send("Hi".into(), true, None)]);
            // The next reply does not try drafts again.
            let s2 = live(42);
            s2.push_text("Yo");
            preview(&f, &s2, &b, &mut d);
            assert_eq!(f.calls.borrow().len(), 2);
            assert!(matches!(f.calls.borrow()[1], Call::Send(..)));
        }
    }

    #[test]
    fn a_429_sets_a_wait_and_keeps_the_text_for_later() {
        let s = live(-5);
        let f = Fake::default();
        let (_, stop) = quick();
        let b = Backoff::standard();
        let mut d = DraftSupport::new();
        s.push_text("one");
        preview(&f, &s, &b, &mut d);
        f.edits.borrow_mut().push(Err(ApiError::RateLimited {
            retry_after_secs: 7,
        }));
        s.push_text(" two");
        preview(&f, &s, &b, &mut d);
        let at = s.next_preview_at().expect("still something to show");
        assert!(at >= Instant::now() + Duration::from_secs(6), "{at:?}");
        let settle = s.settled_at(Instant::now()).unwrap();
        assert!(settle >= Instant::now() + Duration::from_secs(6));
        assert_eq!(finish(&f, &s, "one two", &b, &stop), Ok(1));
        assert_eq!(
            f.calls.borrow().last(),
            Some(&Call::Edit(101, "one two".into(), true))
        );
    }

    #[test]
    fn refused_html_previews_go_on_in_plain_text() {
        let s = live(-5);
        let f = Fake::default();
        f.sends
            .borrow_mut()
            .push(Err(rejected("Bad Request: can't parse entities")));
        let (b, _) = quick();
        let mut d = DraftSupport::new();
        s.push_text("a **b** & c");
        preview(&f, &s, &b, &mut d);
        assert!(s.lock().dirty && !s.lock().html);
        preview(&f, &s, &b, &mut d);
        assert_eq!(
            *f.calls.borrow(),
            vec![Call::Send("a b & c".into(), false, None)]
        );
    }

    #[test]
    fn a_long_final_answer_edits_the_first_part_and_sends_the_rest() {
        let s = live(-5);
        let f = Fake::default();
        let (b, stop) = quick();
        let mut d = DraftSupport::new();
        let text = "Tea 🍵 and cake. ".repeat(700); // ~ 11,900 UTF-16 units
        s.push_text(&text[..200]);
        preview(&f, &s, &b, &mut d);
        s.push_text(&text[200..]);
        preview(&f, &s, &b, &mut d);
        let n = finish(&f, &s, &text, &b, &stop).unwrap();
        let want = reply::reply_parts(&text, true);
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
        let s = live(-5);
        let f = Fake::default();
        let (b, stop) = quick();
        let mut d = DraftSupport::new();
        s.push_text("partial");
        preview(&f, &s, &b, &mut d);
        f.edits
            .borrow_mut()
            .push(Err(rejected("Bad Request: message to edit not found")));
        assert_eq!(finish(&f, &s, "the whole answer", &b, &stop), Ok(1));
        assert_eq!(
            f.calls.borrow().last(),
            Some(&Call::Send("the whole answer".into(), true, None))
        );
    }

    #[test]
    fn a_preview_ends_the_pending_mark_and_restarts_the_debounce() {
        let (s, woken) = LiveReply::new(-5, None, Duration::from_secs(1));
        s.push_text("x");
        assert!(s.begin_preview());
        let _ = woken.try_recv();
        let f = Fake::default();
        let (b, _) = quick();
        preview(&f, &s, &b, &mut DraftSupport::new());
        assert!(!s.lock().pending);
        assert!(
            woken.try_recv().is_ok(),
            "the executor is woken when it is done"
        );
        assert_eq!(s.next_preview_at(), None, "nothing new to show");
        s.push_text("y");
        let second = s.next_preview_at().unwrap();
        assert!(second >= s.lock().last_sent.unwrap() + Duration::from_secs(1));
    }

    #[test]
    fn render_matches_the_first_part_of_a_reply() {
        assert_eq!(render("  \n ", true), None);
        assert_eq!(
            render("**a** <b>", true).as_deref(),
            Some("<b>a</b> &lt;b&gt;")
        );
        assert_eq!(render("**a** <b>", false).as_deref(), Some("a <b>"));
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
        let mut rng = XorShift(0x1234_5678_9abc_def1);
        for _ in 0..2_000 {
            let mut s = String::new();
            for _ in 0..rng.below(30) {
                s.push_str(alphabet[rng.index(alphabet.len())]);
            }
            let html = render(&s, true);
            if let Some(r) = &html {
                assert_eq!(Some(r), reply::reply_parts(s.trim(), true).first());
                assert!(utf16_len(r) <= TELEGRAM_MAX_MESSAGE_UTF16);
            }
            // A short reply fits one message: the plain preview is what the HTML one
            // shows.
            assert_eq!(
                render(&s, false),
                html.as_deref().map(html_to_plain),
                "input {s:?}"
            );
        }
    }

    /// A chat as Telegram keeps it: messages by id, edits in place; calls fail at
    /// random with the errors a real server gives.
    struct Chat {
        messages: RefCell<Vec<(i64, String, bool)>>,
        rng: RefCell<XorShift>,
        failing: bool,
    }

    impl Chat {
        fn roll(&self) -> Option<ApiError> {
            if !self.failing {
                return None;
            }
            match self.rng.borrow_mut().below(10) {
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
        let mut rng = XorShift(0xA5A5_1234_0F0F_9876);
        let (b, stop) = quick();
        for case in 0..300 {
            let chat_id = if case % 2 == 0 { 7 } else { -7 };
            let s = live(chat_id);
            let chat = Chat {
                messages: RefCell::new(Vec::new()),
                rng: RefCell::new(XorShift(rng.next() | 1)),
                failing: true,
            };
            let mut drafts = DraftSupport::new();
            let mut answer = String::new();
            // Long enough, now and then, to need several messages.
            let n = 1 + rng.below(if case % 10 == 0 { 3_000 } else { 40 });
            for _ in 0..n {
                let w = words[rng.index(words.len())];
                answer.push_str(w);
                s.push_text(w);
                if rng.below(50) == 0 {
                    s.end_round();
                    answer.clear();
                }
                if rng.below(4) == 0 {
                    preview(&chat, &s, &b, &mut drafts);
                    assert!(!s.lock().pending);
                }
            }
            let answer = answer.trim().to_string();
            let chat = Chat {
                failing: false,
                ..chat
            };
            let r = finish(&chat, &s, &answer, &b, &stop);
            let want = reply::reply_parts(&answer, true);
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
            // No message the chat ever showed (previews included) was over the limit.
            for (_, text, _) in msgs.iter() {
                assert!(utf16_len(text) <= TELEGRAM_MAX_MESSAGE_UTF16, "case {case}");
            }
        }
    }
}
