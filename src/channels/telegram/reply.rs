//! Reply delivery: markdown to Telegram HTML, split into messages Telegram accepts,
//! sent in order with retries, and a plain-text fallback when Telegram refuses our
//! HTML. The one Telegram send implementation: the gateway's replies, heartbeat and
//! cron deliveries (inside the gateway through the sender thread, outside it through
//! [`deliver_blocking`] on a worker) and the end of streamed replies (`preview`) all go
//! through [`deliver_parts`].
//!
//! Why it exists: a reply must never be silently lost. Each part is retried on 429
//! (after `retry_after`), 5xx and network errors (exponential backoff, 1 s → 60 s) for
//! `Backoff::reply_window` (10 minutes: a board that loses Wi-Fi for a while still
//! answers); other refusals (400, 403) are not retried; a 400 "can't
//! parse entities" resends the rest of the reply as plain text; a reply that still
//! fails is reported to the caller (the sender thread logs it with its chat id).
//! Every outgoing text passes through the scrubber (a model could echo a secret).
//!
//! # Bounds
//! - Each message part is retried until `Backoff::reply_window` has passed since its
//!   first failure; a 429 wait is capped by `Backoff::retry_after`. Shutdown (`Stop`)
//!   ends the wait at once.
//! - Parts are at most `TELEGRAM_MAX_MESSAGE_UTF16` UTF-16 code units; a reply goes
//!   out in at most `MAX_REPLY_PARTS` messages, the last one ending with `CUT_MARKER`
//!   when more was cut.
//!
//! # Threads
//! Blocking: [`deliver`], [`deliver_parts`] and [`deliver_blocking`] block (HTTP and
//! backoff sleeps): the sender thread or a worker, never the executor. A retried send
//! whose first answer was lost may show twice: a duplicate is preferred to a lost
//! reply. [`reply_parts`] is pure.

use super::api::{Api, ApiError, OutText};
use super::backoff::{Backoff, ErrorDelay, Stop};
use super::html::{html_to_plain, markdown_to_html};
use super::split::{TELEGRAM_MAX_MESSAGE_UTF16, split_html, split_plain, utf16_len};
use crate::security::scrub::scrub;
use std::fmt;

/// Most messages one reply or delivery goes out in (64 Ki UTF-16 units).
pub const MAX_REPLY_PARTS: usize = 16;
/// Ends the last message of a reply that was cut at `MAX_REPLY_PARTS`.
pub const CUT_MARKER: &str = "\n[… cut]";

/// What a delivery reports: parts sent, or why it stopped.
pub type DeliveryResult = Result<usize, Undelivered>;

/// Why a reply was not (fully) delivered.
#[derive(Debug, Clone, PartialEq)]
pub enum SendError {
    Api(ApiError),
    /// Shutdown began while waiting to retry (or the sender thread is gone).
    Stopped,
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::Api(e) => e.fmt(f),
            SendError::Stopped => f.write_str("shutting down"),
        }
    }
}

impl std::error::Error for SendError {}

/// A delivery that stopped part way.
#[derive(Debug, Clone, PartialEq)]
pub struct Undelivered {
    pub error: SendError,
    /// Parts sent before the failure.
    pub sent: usize,
}

impl fmt::Display for Undelivered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} part(s) sent before)", self.error, self.sent)
    }
}

impl std::error::Error for Undelivered {}

/// [`deliver`] through the Bot API (blocks: sender thread or a worker).
pub fn deliver_blocking(
    api: &Api,
    chat_id: i64,
    text: &str,
    markdown: bool,
    reply_to: Option<i64>,
    backoff: &Backoff,
    stop: &Stop,
) -> DeliveryResult {
    deliver(
        &mut |m: &OutText<'_>| api.send_message(m).map(|_| ()),
        chat_id,
        text,
        markdown,
        reply_to,
        backoff,
        stop,
    )
}

/// Send `text` to a chat: as HTML converted from markdown when `markdown` is true,
/// else as plain text; split to Telegram's limit; parts in order. Returns the number of
/// parts sent.
pub fn deliver<F>(
    send: &mut F,
    chat_id: i64,
    text: &str,
    markdown: bool,
    reply_to: Option<i64>,
    backoff: &Backoff,
    stop: &Stop,
) -> DeliveryResult
where
    F: FnMut(&OutText<'_>) -> Result<(), ApiError>,
{
    deliver_parts(
        &mut |_, m: &OutText<'_>| send(m),
        chat_id,
        text,
        markdown,
        reply_to,
        backoff,
        stop,
    )
}

/// The messages `text` goes out as: scrubbed, converted to HTML when `markdown`, split
/// to Telegram's limit, at most `MAX_REPLY_PARTS`.
pub fn reply_parts(text: &str, markdown: bool) -> Vec<String> {
    let text = scrub(text);
    if markdown {
        cap_parts(
            split_html(&markdown_to_html(&text), TELEGRAM_MAX_MESSAGE_UTF16),
            MAX_REPLY_PARTS,
            true,
        )
    } else {
        cap_parts(
            split_plain(&text, TELEGRAM_MAX_MESSAGE_UTF16),
            MAX_REPLY_PARTS,
            false,
        )
    }
}

/// Keep at most `max` parts; the last one kept is shortened and ends with `CUT_MARKER`.
fn cap_parts(mut parts: Vec<String>, max: usize, html: bool) -> Vec<String> {
    if parts.len() <= max {
        return parts;
    }
    parts.truncate(max.max(1));
    if let Some(last) = parts.last_mut() {
        let room = TELEGRAM_MAX_MESSAGE_UTF16 - utf16_len(CUT_MARKER);
        let mut kept = if html {
            split_html(last, room)
        } else {
            split_plain(last, room)
        }
        .into_iter()
        .next()
        .unwrap_or_default();
        kept.push_str(CUT_MARKER);
        *last = kept;
    }
    parts
}

/// [`deliver`] where `send` also gets the number of parts already sent (0 for the
/// first): a streamed reply edits its message with the first part.
pub fn deliver_parts<F>(
    send: &mut F,
    chat_id: i64,
    text: &str,
    markdown: bool,
    reply_to: Option<i64>,
    backoff: &Backoff,
    stop: &Stop,
) -> DeliveryResult
where
    F: FnMut(usize, &OutText<'_>) -> Result<(), ApiError>,
{
    let mut html = markdown;
    let mut parts = reply_parts(text, markdown);
    let mut sent = 0;
    let mut i = 0;
    while let Some(part) = parts.get(i) {
        let msg = OutText {
            chat_id,
            text: part,
            html,
            reply_to: if sent == 0 { reply_to } else { None },
        };
        match send_part(&mut |m: &OutText<'_>| send(sent, m), &msg, backoff, stop) {
            Ok(()) => {
                sent += 1;
                i += 1;
            }
            Err(SendError::Api(e)) if html && e.is_parse_entities() => {
                log::warn!(
                    "telegram: chat {chat_id} refused the reply's formatting ({e}); sending it as plain text"
                );
                let rest: String = parts
                    .get(i..)
                    .unwrap_or(&[])
                    .iter()
                    .map(|p| html_to_plain(p))
                    .collect();
                parts = cap_parts(
                    split_plain(&rest, TELEGRAM_MAX_MESSAGE_UTF16),
                    MAX_REPLY_PARTS.saturating_sub(sent),
                    false,
                );
                html = false;
                i = 0;
            }
            Err(error) => return Err(Undelivered { error, sent }),
        }
    }
    Ok(sent)
}

/// One part, retried on 429, 5xx and network errors for `backoff.reply_window`.
fn send_part<F>(
    send: &mut F,
    msg: &OutText<'_>,
    backoff: &Backoff,
    stop: &Stop,
) -> Result<(), SendError>
where
    F: FnMut(&OutText<'_>) -> Result<(), ApiError>,
{
    let mut delay = ErrorDelay::new(backoff);
    let mut failing_since = None;
    loop {
        let e = match send(msg) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        let wait = match &e {
            ApiError::RateLimited { retry_after_secs } => backoff.retry_after(*retry_after_secs),
            e if e.is_transient() => delay.next_delay(),
            _ => return Err(SendError::Api(e)),
        };
        if failing_since
            .get_or_insert_with(std::time::Instant::now)
            .elapsed()
            >= backoff.reply_window
        {
            return Err(SendError::Api(e));
        }
        log::debug!(
            "telegram: sending to chat {} failed ({e}); retrying in {} ms",
            msg.chat_id,
            wait.as_millis()
        );
        if stop.sleep(wait) {
            return Err(SendError::Stopped);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> (Backoff, Stop) {
        (Backoff::scaled(0.001), Stop::new())
    }

    /// Records sent parts; answers from a script, then success.
    struct Fake {
        script: Vec<Result<(), ApiError>>,
        sent: Vec<(String, bool, Option<i64>)>,
    }

    impl Fake {
        fn new(script: Vec<Result<(), ApiError>>) -> Fake {
            Fake {
                script,
                sent: Vec::new(),
            }
        }
        fn send(&mut self, m: &OutText<'_>) -> Result<(), ApiError> {
            let r = if self.script.is_empty() {
                Ok(())
            } else {
                self.script.remove(0)
            };
            if r.is_ok() {
                self.sent.push((m.text.to_string(), m.html, m.reply_to));
            }
            r
        }
    }

    fn run(fake: &mut Fake, text: &str, markdown: bool) -> Result<usize, Undelivered> {
        let (b, s) = quick();
        deliver(
            &mut |m: &OutText<'_>| fake.send(m),
            1,
            text,
            markdown,
            Some(9),
            &b,
            &s,
        )
    }

    #[test]
    fn markdown_goes_out_as_html_with_the_reply_marker_on_the_first_part() {
        let mut f = Fake::new(vec![]);
        assert_eq!(run(&mut f, "**hi** <you>", true), Ok(1));
        assert_eq!(
            f.sent,
            vec![("<b>hi</b> &lt;you&gt;".to_string(), true, Some(9))]
        );
    }

    #[test]
    fn a_parse_error_resends_the_same_text_plain() {
        let refused = ApiError::Rejected {
            status: 400,
            description: "Bad Request: can't parse entities: bad".into(),
        };
        let mut f = Fake::new(vec![Err(refused)]);
        assert_eq!(run(&mut f, "**bold** & [site](https://e.com)", true), Ok(1));
        assert_eq!(f.sent.len(), 1);
        assert_eq!(f.sent[0].0, "bold & site (https://e.com)");
        assert!(!f.sent[0].1);
    }

    #[test]
    fn transient_errors_and_429_are_retried() {
        let mut f = Fake::new(vec![
            Err(ApiError::RateLimited {
                retry_after_secs: 1,
            }),
            Err(ApiError::Server { status: 502 }),
            Err(ApiError::BadResponse { detail: "not JSON" }),
        ]);
        assert_eq!(run(&mut f, "hello", false), Ok(1));
        assert_eq!(f.sent[0].0, "hello");
    }

    #[test]
    fn permanent_errors_and_exhausted_retries_fail_with_a_count() {
        let blocked = ApiError::Rejected {
            status: 403,
            description: "Forbidden: bot was blocked by the user".into(),
        };
        let mut f = Fake::new(vec![Err(blocked.clone())]);
        assert_eq!(
            run(&mut f, "x", true),
            Err(Undelivered {
                error: SendError::Api(blocked),
                sent: 0
            })
        );
        // Transient failures are retried for the whole window, then given up.
        let mut f = Fake::new(vec![Err(ApiError::Server { status: 500 }); 8]);
        assert_eq!(
            run(&mut f, "x", false),
            Ok(1),
            "8 quick failures: still sent"
        );
        let b = Backoff {
            reply_window: std::time::Duration::from_millis(30),
            ..Backoff::scaled(0.001)
        };
        let mut f = Fake::new(vec![Err(ApiError::Server { status: 500 }); 10_000]);
        let r = deliver(
            &mut |m: &OutText<'_>| f.send(m),
            1,
            "x",
            false,
            None,
            &b,
            &Stop::new(),
        )
        .unwrap_err();
        assert_eq!(r.error, SendError::Api(ApiError::Server { status: 500 }));
        assert!(f.script.len() < 10_000 - 3, "retried more than once");
    }

    #[test]
    fn long_replies_are_split_in_order_and_reassemble() {
        let unit = "Tea 🍵 and cake 🎂 at five. ";
        let mut text = String::new();
        while text.chars().count() < 10_000 {
            text.push_str(unit);
            if text.len().is_multiple_of(7) {
                text.push('\n');
            }
        }
        for markdown in [true, false] {
            let mut f = Fake::new(vec![]);
            let n = run(&mut f, &text, markdown).unwrap();
            assert!(n >= 3, "{n}");
            let mut joined = String::new();
            for (p, _, _) in &f.sent {
                assert!(utf16_len(p) <= TELEGRAM_MAX_MESSAGE_UTF16);
                joined.push_str(&html_to_plain(p));
            }
            assert_eq!(joined, text);
        }
    }

    #[test]
    fn a_parse_error_in_a_later_part_resends_only_the_rest() {
        let text = "word ".repeat(2_000); // 10,000 chars: 3 parts
        let refused = ApiError::Rejected {
            status: 400,
            description: "Bad Request: can't parse entities".into(),
        };
        let mut f = Fake::new(vec![Ok(()), Err(refused)]);
        run(&mut f, &text, true).unwrap();
        let joined: String = f.sent.iter().map(|(p, _, _)| html_to_plain(p)).collect();
        assert_eq!(joined, text);
        assert!(f.sent[0].1 && !f.sent[1].1);
    }

    #[test]
    fn stop_ends_retries() {
        let b = Backoff::standard();
        let s = Stop::new();
        s.set();
        let mut f = Fake::new(vec![Err(ApiError::Server { status: 500 })]);
        let r = deliver(
            &mut |m: &OutText<'_>| f.send(m),
            1,
            "x",
            false,
            None,
            &b,
            &s,
        );
        assert_eq!(r.unwrap_err().error, SendError::Stopped);
    }
}
