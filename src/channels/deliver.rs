//! The implementation of the outbound seam (`chat::Outbound`): text to a `Target`, the log,
//! stdout, or a Telegram chat. The agent's `send_message` tool, heartbeat and cron output
//! all go through one [`Delivery`], built once per process by the composition root.
//!
//! Telegram output goes through the one Telegram send implementation (`telegram::reply`:
//! markdown to HTML, split at the length limit, plain-text fallback, retries). Inside
//! the gateway, [`Delivery::outbox`] hands it to the gateway's sender thread (same
//! queue, order, 429 backoff and shutdown drain as the bot's replies) and waits for the
//! outcome; outside it (`yoctoclaw heartbeat`, `cron run`, `agent`), [`send_telegram`]
//! runs `reply::deliver_blocking` on a worker thread.
//!
//! # Bounds
//! A text goes out in at most `reply::MAX_REPLY_PARTS` Telegram messages of at most
//! `TELEGRAM_MAX_MESSAGE_UTF16` UTF-16 units (the rest is cut with a marker); each is
//! retried for `Backoff::reply_window` (10 minutes) on transient failures. Each request
//! has an overall timeout of `TELEGRAM_SEND_TIMEOUT_SECS`.
//!
//! # Threads
//! Executor thread: `deliver` and `send_file` are awaited there; the HTTP runs on the
//! sender thread (`yc-tg-send`, inside the gateway) or a worker thread, stdout and log
//! writes on the executor.
//!
//! # Blocking
//! `deliver` is async; HTTP runs on the sender thread or the `Workers` pool. Stdout and
//! log writes block for one write.

use super::telegram::api::Api;
use super::telegram::backoff::{Backoff, Stop};
use super::telegram::outbox::Outbox;
use super::telegram::reply::{self, Undelivered};
use crate::chat::{ChannelKind, DeliverError as OutError, Delivering, Outbound, Target};
use crate::config::{Config, Env};
use crate::runtime::Workers;
use crate::security::scrub::scrub;
use std::fmt;
use std::io::Write;

/// Overall timeout of one `sendMessage` request.
pub const TELEGRAM_SEND_TIMEOUT_SECS: u64 = 30;

/// What delivery needs: where the Bot API is, the token, the worker pool, and inside
/// the gateway its Telegram sender.
#[derive(Clone)]
pub struct Delivery {
    /// `telegram.api_base`, no trailing slash.
    pub api_base: String,
    /// The bot token (from `telegram.token_env`), if set.
    pub token: Option<String>,
    /// Name of the variable the token comes from, for error messages.
    pub token_env: String,
    pub workers: Workers,
    /// The gateway's sender thread, when running inside the gateway.
    pub outbox: Option<Outbox>,
    /// Retry waits of the standalone path.
    pub backoff: Backoff,
}

impl fmt::Debug for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the token.
        f.debug_struct("Delivery")
            .field("api_base", &self.api_base)
            .field("token", &self.token.as_ref().map(|_| "[set]"))
            .field("outbox", &self.outbox.is_some())
            .finish()
    }
}

impl Delivery {
    /// `outbox`: the gateway's Telegram sender thread, when there is one.
    pub fn new(cfg: &Config, env: &Env, workers: Workers, outbox: Option<Outbox>) -> Delivery {
        Delivery {
            api_base: cfg.telegram.api_base.trim_end_matches('/').to_string(),
            token: env.get(&cfg.telegram.token_env),
            token_env: cfg.telegram.token_env.clone(),
            workers,
            outbox,
            backoff: Backoff::from_env(),
        }
    }
}

/// Why a delivery failed.
#[derive(Debug, Clone, PartialEq)]
pub enum DeliverError {
    /// A Telegram target but no bot token configured (names the variable).
    NoToken(String),
    /// Telegram did not take (all of) the message.
    Telegram(Undelivered),
    /// Writing to stdout failed.
    Stdout(String),
    /// A file upload failed (the sentence says why).
    File(String),
    /// The worker pool stopped (shutdown).
    Stopped,
}

impl fmt::Display for DeliverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeliverError::NoToken(var) => {
                write!(f, "no telegram bot token: set {var} in secrets.env")
            }
            DeliverError::Telegram(u) => write!(f, "telegram: {u}"),
            DeliverError::Stdout(e) => write!(f, "cannot write to stdout: {e}"),
            DeliverError::File(e) => write!(f, "the file was not sent: {e}"),
            DeliverError::Stopped => f.write_str("yoctoclaw is shutting down"),
        }
    }
}

impl std::error::Error for DeliverError {}

impl Outbound for Delivery {
    fn deliver<'a>(&'a self, target: &'a Target, text: &'a str) -> Delivering<'a> {
        Box::pin(async move { deliver(self, target, text).await.map_err(OutError::from) })
    }

    fn send_file<'a>(&'a self, target: &'a Target, path: &'a std::path::Path) -> Delivering<'a> {
        Box::pin(async move {
            let Target::Telegram(chat_id) = *target else {
                return Err(OutError::NotConfigured(
                    "files can be sent only to Telegram chats".into(),
                ));
            };
            send_file(self, chat_id, path)
                .await
                .inspect(|()| crate::metrics::message_out(ChannelKind::Telegram))
                .map_err(OutError::from)
        })
    }
}

/// Overall timeout of one file upload (50 MB over a slow link).
pub const TELEGRAM_UPLOAD_TIMEOUT_SECS: u64 = 600;
/// Telegram's limits for bots: photos 10 MB, other files 50 MB.
pub const TELEGRAM_MAX_PHOTO_BYTES: u64 = 10 * 1024 * 1024;
pub const TELEGRAM_MAX_UPLOAD_BYTES: u64 = 50 * 1024 * 1024;

/// How a file goes to Telegram: `(method, field, mime)` by its first bytes and size.
pub fn upload_kind(head: &[u8], size: u64) -> (&'static str, &'static str, &'static str) {
    use crate::channels::telegram::media::sniff_image;
    match sniff_image(head) {
        Some((_, mime @ ("image/jpeg" | "image/png" | "image/webp")))
            if size <= TELEGRAM_MAX_PHOTO_BYTES =>
        {
            ("sendPhoto", "photo", mime)
        }
        _ if head.starts_with(b"OggS") => ("sendVoice", "voice", "audio/ogg"),
        _ => ("sendDocument", "document", "application/octet-stream"),
    }
}

/// Upload a workspace file to a Telegram chat on a worker (streamed from disk:
/// `sendPhoto`, `sendVoice` or `sendDocument`).
pub async fn send_file(
    ctx: &Delivery,
    chat_id: i64,
    path: &std::path::Path,
) -> Result<(), DeliverError> {
    let Some(token) = ctx.token.clone() else {
        return Err(DeliverError::NoToken(ctx.token_env.clone()));
    };
    let api = Api::new(&ctx.api_base, &token, TELEGRAM_UPLOAD_TIMEOUT_SECS);
    let path = path.to_path_buf();
    ctx.workers
        .run(move || {
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if size > TELEGRAM_MAX_UPLOAD_BYTES {
                return Err(DeliverError::File(
                    "it is larger than Telegram's 50 MB limit for bots".into(),
                ));
            }
            let head = std::fs::File::open(&path)
                .map(|mut f| crate::files::head(&mut f))
                .unwrap_or_default();
            let (method, field, mime) = upload_kind(&head, size);
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .map(crate::channels::telegram::media::safe_name)
                .unwrap_or_else(|| "file".into());
            api.send_file(chat_id, (method, field), &path, (&name, mime))
                .map_err(|e| DeliverError::File(e.to_string()))
        })
        .await
        .map_err(|_| DeliverError::Stopped)?
}

impl From<DeliverError> for OutError {
    fn from(e: DeliverError) -> OutError {
        match e {
            DeliverError::NoToken(_) => OutError::NotConfigured(e.to_string()),
            DeliverError::Stopped => OutError::Stopped,
            other => OutError::Failed(other.to_string()),
        }
    }
}

/// Deliver `text` to `target`, scrubbed of credentials first (every delivery is an
/// outbound message).
pub async fn deliver(ctx: &Delivery, target: &Target, text: &str) -> Result<(), DeliverError> {
    let text = &*scrub(text);
    match target {
        Target::Log => {
            log::info!("delivery (log only): {text}");
            Ok(())
        }
        Target::Stdout => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{text}")
                .and_then(|_| out.flush())
                .map_err(|e| DeliverError::Stdout(e.kind().to_string()))
        }
        Target::Telegram(chat_id) => send_telegram(ctx, *chat_id, text).await,
    }
}

/// Send markdown `text` to a Telegram chat: through the gateway's sender when there is
/// one, else with the standalone sender on a worker thread.
pub async fn send_telegram(ctx: &Delivery, chat_id: i64, text: &str) -> Result<(), DeliverError> {
    if text.trim().is_empty() {
        log::info!("nothing to send to telegram:{chat_id}: the text is empty");
        return Ok(());
    }
    if let Some(outbox) = &ctx.outbox {
        return outbox
            .deliver(chat_id, text)
            .await
            .map(|_| ())
            .map_err(DeliverError::Telegram);
    }
    let Some(token) = ctx.token.clone() else {
        return Err(DeliverError::NoToken(ctx.token_env.clone()));
    };
    let api = Api::new(&ctx.api_base, &token, TELEGRAM_SEND_TIMEOUT_SECS);
    let text = text.to_string();
    let backoff = ctx.backoff;
    ctx.workers
        .run(move || {
            reply::deliver_blocking(&api, chat_id, &text, true, None, &backoff, &Stop::new())
        })
        .await
        .map_err(|_| DeliverError::Stopped)?
        .map(|_| ())
        .map_err(DeliverError::Telegram)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(token: Option<&str>) -> Delivery {
        Delivery {
            // Port 9 (discard) on loopback is closed in test environments.
            api_base: "http://127.0.0.1:9".into(),
            token: token.map(str::to_string),
            token_env: "TELEGRAM_BOT_TOKEN".into(),
            workers: Workers::start(1),
            outbox: None,
            backoff: Backoff::scaled(0.001),
        }
    }

    #[test]
    fn huge_text_is_capped_and_marked() {
        let text = "word ".repeat(100_000);
        let parts = reply::reply_parts(&text, true);
        assert_eq!(parts.len(), reply::MAX_REPLY_PARTS);
        for p in &parts {
            assert!(
                super::super::telegram::split::utf16_len(p)
                    <= super::super::telegram::split::TELEGRAM_MAX_MESSAGE_UTF16
            );
        }
        assert!(parts.last().unwrap().ends_with("[… cut]"));
    }

    #[test]
    fn empty_text_sends_nothing() {
        let r = smol::block_on(deliver(&ctx(None), &Target::Telegram(1), "  \n "));
        assert_eq!(r, Ok(()));
    }

    #[test]
    fn inside_the_gateway_the_outbox_carries_the_delivery_and_its_outcome() {
        let (outbox, rx) = Outbox::new(Default::default());
        let mut c = ctx(None);
        c.outbox = Some(outbox);
        // No sender thread: the receiver is dropped, so the delivery fails as stopped
        // (and is not silently reported as delivered).
        drop(rx);
        let r = smol::block_on(deliver(&c, &Target::Telegram(1), "hi"));
        assert!(matches!(r, Err(DeliverError::Telegram(_))), "{r:?}");
    }

    #[test]
    fn the_context_never_prints_the_token() {
        let ctx = ctx(Some("123:SECRETTOKEN"));
        assert!(!format!("{ctx:?}").contains("SECRET"));
    }

    #[test]
    fn telegram_without_a_token_names_the_variable() {
        let r = smol::block_on(deliver(&ctx(None), &Target::Telegram(1), "hi"));
        let e = r.unwrap_err();
        assert!(e.to_string().contains("TELEGRAM_BOT_TOKEN"), "{e}");
    }

    #[test]
    fn an_unreachable_bot_api_is_an_error_without_the_token() {
        let c = ctx(Some("123:SECRETTOKEN"));
        let e = smol::block_on(deliver(&c, &Target::Telegram(1), "hi")).unwrap_err();
        assert!(!e.to_string().contains("SECRET"), "{e}");
    }
}
