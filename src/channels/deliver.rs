//! Delivery of heartbeat and cron output to a `Target`: the log, stdout, or a Telegram chat.
//!
//! The Telegram part is a plain `sendMessage` (text, no formatting, split at Telegram's
//! length limit) kept in one function, [`send_telegram`], so the gateway's sender (HTML,
//! retries, rate limits) can replace it without touching the callers.
//!
//! # Bounds
//! A text goes out in at most `MAX_DELIVERY_PARTS` Telegram messages of at most
//! `TELEGRAM_MAX_MESSAGE_UTF16` UTF-16 units; the rest is cut with a marker. Each request
//! has an overall timeout of `TELEGRAM_SEND_TIMEOUT_SECS` and reads at most
//! `MAX_TELEGRAM_REPLY_BYTES` of the answer. Error details are cut to
//! `MAX_ERROR_DETAIL_BYTES` and scrubbed.
//!
//! # Blocking
//! `deliver` is async; the HTTP request runs on the `Workers` pool. Stdout and log writes
//! block for one write.

use super::Target;
use super::telegram::format::{TELEGRAM_MAX_MESSAGE_UTF16, split_plain};
use crate::config::{Config, Env};
use crate::provider::http::{self, HttpError};
use crate::runtime::Workers;
use crate::security::scrub::scrub;
use std::fmt;
use std::io::Write;

/// Most Telegram messages one delivery sends.
pub const MAX_DELIVERY_PARTS: usize = 8;
/// Overall timeout of one `sendMessage` request.
pub const TELEGRAM_SEND_TIMEOUT_SECS: u64 = 30;
/// Largest `sendMessage` answer read.
pub const MAX_TELEGRAM_REPLY_BYTES: u64 = 64 * 1024;
/// Longest error detail kept from a Bot API answer.
pub const MAX_ERROR_DETAIL_BYTES: usize = 200;

/// What delivery needs: where the Bot API is, the token, and the worker pool.
#[derive(Clone)]
pub struct DeliverCtx {
    /// `telegram.api_base`, no trailing slash.
    pub api_base: String,
    /// The bot token (from `telegram.token_env`), if set.
    pub token: Option<String>,
    /// Name of the variable the token comes from, for error messages.
    pub token_env: String,
    pub workers: Workers,
}

impl fmt::Debug for DeliverCtx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the token.
        f.debug_struct("DeliverCtx")
            .field("api_base", &self.api_base)
            .field("token", &self.token.as_ref().map(|_| "[set]"))
            .finish()
    }
}

impl DeliverCtx {
    pub fn new(cfg: &Config, env: &Env, workers: Workers) -> DeliverCtx {
        DeliverCtx {
            api_base: cfg.telegram.api_base.trim_end_matches('/').to_string(),
            token: env.get(&cfg.telegram.token_env),
            token_env: cfg.telegram.token_env.clone(),
            workers,
        }
    }
}

/// Why a delivery failed.
#[derive(Debug, Clone, PartialEq)]
pub enum DeliverError {
    /// A Telegram target but no bot token configured (names the variable).
    NoToken(String),
    /// The Bot API could not be reached or answered garbage.
    Http(HttpError),
    /// The Bot API refused the message.
    Refused { status: u16, detail: String },
    /// Writing to stdout failed.
    Stdout(String),
    /// The worker pool stopped (shutdown).
    Stopped,
}

impl fmt::Display for DeliverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeliverError::NoToken(var) => {
                write!(f, "no telegram bot token: set {var} in secrets.env")
            }
            DeliverError::Http(e) => write!(f, "telegram {e}"),
            DeliverError::Refused { status, detail } => {
                write!(f, "telegram refused the message ({status}): {detail}")
            }
            DeliverError::Stdout(e) => write!(f, "cannot write to stdout: {e}"),
            DeliverError::Stopped => f.write_str("yoctoclaw is shutting down"),
        }
    }
}

impl std::error::Error for DeliverError {}

/// Deliver `text` to `target`, scrubbed of credentials first (every delivery is an
/// outbound message).
pub async fn deliver(ctx: &DeliverCtx, target: &Target, text: &str) -> Result<(), DeliverError> {
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

/// Send plain text to a Telegram chat with `sendMessage`, split at the length limit.
/// The lead swaps this for the gateway's sender (HTML, retries) once that is merged.
pub async fn send_telegram(ctx: &DeliverCtx, chat_id: i64, text: &str) -> Result<(), DeliverError> {
    let Some(token) = ctx.token.clone() else {
        return Err(DeliverError::NoToken(ctx.token_env.clone()));
    };
    let parts = telegram_parts(text);
    if parts.is_empty() {
        log::info!("nothing to send to telegram:{chat_id}: the text is empty");
        return Ok(());
    }
    // The URL holds the token: it is built here, used on the worker, and never logged.
    let url = format!("{}/bot{}/sendMessage", ctx.api_base, token);
    for part in parts {
        let body = crate::json::to_string(&crate::json::object([
            (
                "chat_id",
                miniserde::json::Value::Number(chat_number(chat_id)),
            ),
            ("text", crate::json::string(part)),
        ]));
        let url = url.clone();
        ctx.workers
            .run(move || send_blocking(&url, &body))
            .await
            .map_err(|_| DeliverError::Stopped)??;
    }
    Ok(())
}

fn chat_number(id: i64) -> miniserde::json::Number {
    if id >= 0 {
        miniserde::json::Number::U64(id as u64)
    } else {
        miniserde::json::Number::I64(id)
    }
}

/// The messages `text` goes out as: split at Telegram's limit, at most
/// `MAX_DELIVERY_PARTS`, the last one marked when more was cut.
pub fn telegram_parts(text: &str) -> Vec<String> {
    let mut parts = split_plain(text, TELEGRAM_MAX_MESSAGE_UTF16);
    if parts.len() > MAX_DELIVERY_PARTS {
        parts.truncate(MAX_DELIVERY_PARTS);
        if let Some(last) = parts.last_mut() {
            let marker = "\n[… cut]";
            let mut keep = split_plain(last, TELEGRAM_MAX_MESSAGE_UTF16 - 16)
                .into_iter()
                .next()
                .unwrap_or_default();
            keep.push_str(marker);
            *last = keep;
        }
    }
    parts
}

/// One `sendMessage` POST (blocks).
fn send_blocking(url: &str, body: &str) -> Result<(), DeliverError> {
    let agent = http::agent(TELEGRAM_SEND_TIMEOUT_SECS);
    let resp = agent
        .post(url)
        .header("Content-Type", "application/json")
        .send(body)
        .map_err(|e| DeliverError::Http(http::map_error(e)))?;
    let (status, text, _) =
        http::read_reply(resp, MAX_TELEGRAM_REPLY_BYTES).map_err(DeliverError::Http)?;
    let ok = crate::json::parse_value(&text)
        .ok()
        .and_then(|v| crate::json::get(&v, "ok").and_then(crate::json::as_bool));
    if status == 200 && ok == Some(true) {
        return Ok(());
    }
    let detail = crate::json::parse_value(&text)
        .ok()
        .and_then(|v| crate::json::str_at(&v, "description").map(str::to_string))
        .unwrap_or_else(|| "no description".to_string());
    Err(DeliverError::Refused {
        status,
        detail: cut(&scrub(&detail), MAX_ERROR_DETAIL_BYTES),
    })
}

fn cut(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_part_and_empty_is_none() {
        assert_eq!(telegram_parts("hello"), vec!["hello".to_string()]);
        assert!(telegram_parts("   \n ").is_empty());
    }

    #[test]
    fn huge_text_is_capped_and_marked() {
        let text = "word ".repeat(100_000);
        let parts = telegram_parts(&text);
        assert_eq!(parts.len(), MAX_DELIVERY_PARTS);
        for p in &parts {
            assert!(super::super::telegram::format::utf16_len(p) <= TELEGRAM_MAX_MESSAGE_UTF16);
        }
        assert!(parts.last().unwrap().ends_with("[… cut]"));
    }

    #[test]
    fn the_context_never_prints_the_token() {
        let ctx = DeliverCtx {
            api_base: "https://api.telegram.org".into(),
            token: Some("123:SECRETTOKEN".into()),
            token_env: "TELEGRAM_BOT_TOKEN".into(),
            workers: Workers::start(1),
        };
        assert!(!format!("{ctx:?}").contains("SECRET"));
    }

    #[test]
    fn telegram_without_a_token_names_the_variable() {
        let ctx = DeliverCtx {
            api_base: "http://127.0.0.1:9".into(),
            token: None,
            token_env: "TELEGRAM_BOT_TOKEN".into(),
            workers: Workers::start(1),
        };
        let r = smol::block_on(deliver(&ctx, &Target::Telegram(1), "hi"));
        let e = r.unwrap_err();
        assert!(e.to_string().contains("TELEGRAM_BOT_TOKEN"), "{e}");
    }

    #[test]
    fn an_unreachable_bot_api_is_an_error_without_the_token() {
        let ctx = DeliverCtx {
            // Port 9 (discard) on loopback is closed in test environments.
            api_base: "http://127.0.0.1:9".into(),
            token: Some("123:SECRETTOKEN".into()),
            token_env: "TELEGRAM_BOT_TOKEN".into(),
            workers: Workers::start(1),
        };
        let e = smol::block_on(deliver(&ctx, &Target::Telegram(1), "hi")).unwrap_err();
        assert!(!e.to_string().contains("SECRET"), "{e}");
    }
}
