//! Reply delivery: markdown to Telegram HTML, split into messages Telegram accepts,
//! sent in order on one dedicated sender thread, with retries, and a plain-text
//! fallback when Telegram refuses our HTML. The one Telegram send implementation:
//! the gateway's replies, heartbeat and cron deliveries (inside the gateway through
//! the [`Outbox`], outside it through [`deliver_blocking`] on a worker) and the end of
//! streamed replies (`stream`) all go through [`deliver_parts`].
//!
//! Why it exists: a reply must never be silently lost. Each part is retried on 429
//! (after `retry_after`), 5xx and network errors (exponential backoff); a 400 "can't
//! parse entities" resends the rest of the reply as plain text; a reply that still
//! fails is logged with its chat id (and, for deliveries, reported to the caller).
//! Every outgoing text passes through the scrubber (a model could echo a secret).
//!
//! The executor hands work over through an [`Outbox`] (bounded channel plus a count of
//! unfinished jobs, so shutdown can wait for the last replies); chat actions
//! ("typing…") and streamed previews go through the same thread and are best-effort:
//! one attempt, dropped when the queue is full.
//!
//! # Bounds
//! - At most `SEND_QUEUE_LEN` jobs wait; `Outbox::push` then waits (back-pressure).
//! - Each message part is tried at most `MAX_SEND_ATTEMPTS` times; a 429 wait is capped
//!   by `Backoff::retry_after`.
//! - Parts are at most `TELEGRAM_MAX_MESSAGE_UTF16` UTF-16 code units; a reply goes
//!   out in at most `MAX_REPLY_PARTS` messages, the last one ending with `CUT_MARKER`
//!   when more was cut.
//!
//! # Blocking
//! [`deliver`], [`deliver_parts`], [`deliver_blocking`] and [`sender_loop`] block (HTTP
//! and backoff sleeps): sender thread or worker only. A retried send whose first answer
//! was lost may show twice: a duplicate is preferred to a lost reply.

use super::api::{Api, ApiError, OutText};
use super::backoff::{Backoff, ErrorDelay, Stop};
use super::format::{
    TELEGRAM_MAX_MESSAGE_UTF16, markdown_to_html, split_html, split_plain, utf16_len,
};
use super::stream::{self, DraftSupport, LiveReply};
use crate::security::scrub::scrub;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Jobs waiting for the sender thread.
pub const SEND_QUEUE_LEN: usize = 32;
/// Tries per message part before the reply is given up (and logged).
pub const MAX_SEND_ATTEMPTS: u32 = 5;
/// Most messages one reply or delivery goes out in (64 Ki UTF-16 units).
pub const MAX_REPLY_PARTS: usize = 16;
/// Ends the last message of a reply that was cut at `MAX_REPLY_PARTS`.
pub const CUT_MARKER: &str = "\n[… cut]";

/// What the sender thread reports for a delivery: parts sent, or why it stopped.
pub type DeliveryResult = Result<usize, Undelivered>;

/// Work for the sender thread.
#[derive(Debug, Clone)]
pub enum Outbound {
    /// A model answer in markdown: sent as HTML, plain if Telegram refuses it.
    Reply {
        chat_id: i64,
        text: String,
        reply_to: Option<i64>,
    },
    /// A short fixed text (refusal, busy, command output), sent as plain text.
    Notice {
        chat_id: i64,
        text: String,
        reply_to: Option<i64>,
    },
    /// Show "typing…" (best effort).
    Typing { chat_id: i64 },
    /// A heartbeat or cron delivery, sent like a `Reply`; the outcome goes back on
    /// `done` so the scheduler records what really happened.
    Delivery {
        chat_id: i64,
        text: String,
        done: async_channel::Sender<DeliveryResult>,
    },
    /// Show a streamed reply's text so far (one attempt; see `stream`).
    Preview(Arc<LiveReply>),
    /// A streamed reply ended with `text`: make what the chat shows the final answer.
    StreamEnd { live: Arc<LiveReply>, text: String },
}

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

/// The executor's handle on the sender thread.
#[derive(Clone)]
pub struct Outbox {
    tx: async_channel::Sender<Outbound>,
    /// Jobs pushed and not yet finished by the sender thread.
    pending: Arc<AtomicUsize>,
}

impl fmt::Debug for Outbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outbox")
            .field("pending", &self.pending.load(Ordering::SeqCst))
            .finish()
    }
}

/// The sender thread's end of an [`Outbox`].
pub struct OutboxReceiver {
    rx: async_channel::Receiver<Outbound>,
    pending: Arc<AtomicUsize>,
}

impl Outbox {
    pub fn new() -> (Outbox, OutboxReceiver) {
        let (tx, rx) = async_channel::bounded(SEND_QUEUE_LEN);
        let pending = Arc::new(AtomicUsize::new(0));
        (
            Outbox {
                tx,
                pending: pending.clone(),
            },
            OutboxReceiver { rx, pending },
        )
    }

    /// Queue a job, waiting while the queue is full. `false` when the sender is gone.
    pub async fn push(&self, job: Outbound) -> bool {
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.tx.send(job).await.is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// Queue a job unless the queue is full (for "typing…" and previews).
    pub fn try_push(&self, job: Outbound) -> bool {
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.tx.try_send(job).is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// Deliver markdown `text` to a chat like a reply and wait for the outcome.
    pub async fn deliver(&self, chat_id: i64, text: &str) -> DeliveryResult {
        let gone = Undelivered {
            error: SendError::Stopped,
            sent: 0,
        };
        let (done, outcome) = async_channel::bounded(1);
        let job = Outbound::Delivery {
            chat_id,
            text: text.to_string(),
            done,
        };
        if !self.push(job).await {
            return Err(gone);
        }
        outcome.recv().await.unwrap_or(Err(gone))
    }

    /// Nothing queued and nothing being sent.
    pub fn is_idle(&self) -> bool {
        self.pending.load(Ordering::SeqCst) == 0
    }
}

/// The sender thread: run jobs in order until every [`Outbox`] is dropped.
pub fn sender_loop(api: Api, rx: OutboxReceiver, backoff: Backoff, stop: Stop) {
    let mut drafts = DraftSupport::new();
    while let Ok(job) = rx.rx.recv_blocking() {
        run_job(&api, job, &backoff, &stop, &mut drafts);
        rx.pending.fetch_sub(1, Ordering::SeqCst);
    }
}

fn run_job(api: &Api, job: Outbound, backoff: &Backoff, stop: &Stop, drafts: &mut DraftSupport) {
    let (chat_id, result) = match job {
        Outbound::Typing { chat_id } => {
            if let Err(e) = api.send_chat_action(chat_id) {
                log::debug!("telegram: typing action for chat {chat_id} failed: {e}");
            }
            return;
        }
        Outbound::Preview(live) => {
            stream::preview(api, &live, backoff, drafts);
            return;
        }
        Outbound::Reply {
            chat_id,
            text,
            reply_to,
        } => (
            chat_id,
            deliver_blocking(api, chat_id, &text, true, reply_to, backoff, stop),
        ),
        Outbound::Notice {
            chat_id,
            text,
            reply_to,
        } => (
            chat_id,
            deliver_blocking(api, chat_id, &text, false, reply_to, backoff, stop),
        ),
        Outbound::Delivery {
            chat_id,
            text,
            done,
        } => {
            let r = deliver_blocking(api, chat_id, &text, true, None, backoff, stop);
            // The waiting side may be gone (shutdown): then the log line below is all.
            let _ = done.try_send(r.clone());
            (chat_id, r)
        }
        Outbound::StreamEnd { live, text } => (
            live.chat_id,
            stream::finish(api, &live, &text, backoff, stop),
        ),
    };
    match result {
        Ok(parts) => log::debug!("telegram: sent {parts} part(s) to chat {chat_id}"),
        Err(u) => log::error!(
            "telegram: a reply to chat {chat_id} was not delivered ({} part(s) sent before the failure): {}",
            u.sent,
            u.error
        ),
    }
}

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

/// One part, retried on 429, 5xx and network errors.
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
    let mut attempt = 0;
    loop {
        attempt += 1;
        let e = match send(msg) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        let wait = match &e {
            ApiError::RateLimited { retry_after_secs } => backoff.retry_after(*retry_after_secs),
            e if e.is_transient() => delay.next_delay(),
            _ => return Err(SendError::Api(e)),
        };
        if attempt >= MAX_SEND_ATTEMPTS {
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

/// The text Telegram would show for `html` (our own subset): tags dropped, entities
/// decoded, a link's address kept after its text.
pub fn html_to_plain(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    let mut href: Option<String> = None;
    let mut link_start = 0;
    while let Some(c) = rest.chars().next() {
        match c {
            '<' => {
                let end = rest.find('>').map_or(rest.len(), |i| i + 1);
                let tag = &rest[..end];
                if let Some(attrs) = tag.strip_prefix("<a ") {
                    href = attrs
                        .split_once("href=\"")
                        .and_then(|(_, v)| v.split_once('"'))
                        .map(|(v, _)| decode_entities(v));
                    link_start = out.len();
                } else if tag == "</a>"
                    && let Some(h) = href.take()
                    && out.get(link_start..) != Some(h.as_str())
                {
                    out.push_str(" (");
                    out.push_str(&h);
                    out.push(')');
                }
                rest = &rest[end..];
            }
            '&' => {
                let end = rest
                    .char_indices()
                    .take(12)
                    .find(|(_, c)| *c == ';')
                    .map(|(i, _)| i + 1);
                match end.and_then(|e| entity(&rest[..e]).map(|ch| (e, ch))) {
                    Some((e, ch)) => {
                        out.push(ch);
                        rest = &rest[e..];
                    }
                    None => {
                        out.push('&');
                        rest = &rest[1..];
                    }
                }
            }
            c => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

fn decode_entities(s: &str) -> String {
    html_to_plain(&s.replace('<', "&lt;"))
}

/// The character of one `&…;` entity.
fn entity(e: &str) -> Option<char> {
    let body = e.strip_prefix('&')?.strip_suffix(';')?;
    match body {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => {
            let num = body.strip_prefix('#')?;
            let n = match num.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => num.parse::<u32>().ok()?,
            };
            char::from_u32(n)
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
        let mut f = Fake::new(vec![Err(ApiError::Server { status: 500 }); 10]);
        let r = run(&mut f, "x", false).unwrap_err();
        assert_eq!(r.error, SendError::Api(ApiError::Server { status: 500 }));
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

    #[test]
    fn html_to_plain_decodes_what_the_formatter_writes() {
        assert_eq!(
            html_to_plain("a &lt;b&gt; &amp;&quot;&#39;&#x41;"),
            "a <b> &\"'A"
        );
        assert_eq!(
            html_to_plain("<pre><code class=\"x\">1 &lt; 2</code></pre>"),
            "1 < 2"
        );
        assert_eq!(
            html_to_plain("<a href=\"https://a.b/?x=1&amp;y\">https://a.b/?x=1&amp;y</a>"),
            "https://a.b/?x=1&y"
        );
        assert_eq!(
            html_to_plain("&bogus; & &#xZZ; <unterminated"),
            "&bogus; & &#xZZ; "
        );
    }

    #[test]
    fn random_html_never_panics() {
        let alphabet = [
            "<",
            ">",
            "&",
            ";",
            "#",
            "x",
            "a",
            "<a href=\"",
            "\"",
            "</a>",
            "é",
            "😀",
            "&lt;",
            "&#",
        ];
        let mut x: u64 = 77;
        for _ in 0..5_000 {
            let mut s = String::new();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for _ in 0..(x % 16) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.push_str(alphabet[(x % alphabet.len() as u64) as usize]);
            }
            let _ = html_to_plain(&s);
        }
    }

    #[test]
    fn the_outbox_counts_unfinished_jobs() {
        let (o, r) = Outbox::new();
        assert!(o.is_idle());
        assert!(o.try_push(Outbound::Typing { chat_id: 1 }));
        assert!(!o.is_idle());
        let job = r.rx.try_recv().unwrap();
        assert!(matches!(job, Outbound::Typing { chat_id: 1 }));
        r.pending.fetch_sub(1, Ordering::SeqCst);
        assert!(o.is_idle());
        drop(r);
        assert!(!o.try_push(Outbound::Typing { chat_id: 1 }));
        assert!(o.is_idle());
    }
}
