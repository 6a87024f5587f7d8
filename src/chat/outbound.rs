//! Where messages come from ([`ChannelKind`]) and where text goes ([`Target`]), and the
//! one outbound seam ([`Outbound`]) through which the agent, the tools and the scheduler
//! send text without knowing the channels.
//!
//! Why it exists: sending is needed low (the `send_message` tool, cron deliveries, the
//! heartbeat) and implemented high (Telegram's sender thread). The trait is defined here,
//! beside the chat types; `channels::deliver` implements it; the composition root (`app`)
//! builds one implementation per process and hands it down, so inside the gateway every
//! delivery goes through the Telegram sender thread (one order, one 429 backoff, one
//! shutdown drain).
//!
//! # Bounds
//! None here: implementations bound what they send (parts per message, attempts).
//!
//! # Threads
//! Executor thread: [`Outbound::deliver`] returns a future polled there; implementations
//! hand blocking work to their own threads.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// The kind of channel a message came in on; shown to the model in the system prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelKind {
    Terminal,
    Telegram,
    Serial,
    Heartbeat,
    Cron,
    /// The gateway's HTTP API (`channels::http`).
    Http,
}

impl ChannelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Terminal => "terminal",
            ChannelKind::Telegram => "telegram",
            ChannelKind::Serial => "serial",
            ChannelKind::Heartbeat => "heartbeat",
            ChannelKind::Cron => "cron",
            ChannelKind::Http => "http",
        }
    }
}

/// A delivery target: `telegram:<chat_id>`, `stdout`, or empty (log only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Log,
    Stdout,
    Telegram(i64),
}

impl Target {
    pub fn parse(s: &str) -> Option<Target> {
        let s = s.trim();
        if s.is_empty() || s == "log" {
            return Some(Target::Log);
        }
        if s == "stdout" {
            return Some(Target::Stdout);
        }
        let id = s.strip_prefix("telegram:")?.trim();
        id.parse::<i64>().ok().map(Target::Telegram)
    }

    /// `telegram:42`, `stdout`, or `log` (the config form writes the log as empty).
    pub fn label(&self) -> String {
        match self {
            Target::Log => "log".into(),
            other => other.to_string(),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Log => f.write_str(""),
            Target::Stdout => f.write_str("stdout"),
            Target::Telegram(id) => write!(f, "telegram:{id}"),
        }
    }
}

/// Why a delivery failed. Display strings are one secret-free sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliverError {
    /// The target's channel is not set up here (names what to set, e.g. the token's
    /// variable).
    NotConfigured(String),
    /// The channel did not take (all of) the text.
    Failed(String),
    /// The program is shutting down.
    Stopped,
}

impl fmt::Display for DeliverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeliverError::NotConfigured(m) | DeliverError::Failed(m) => f.write_str(m),
            DeliverError::Stopped => f.write_str("yoctoclaw is shutting down"),
        }
    }
}

impl std::error::Error for DeliverError {}

/// A delivery in progress (polled on the executor).
pub type Delivering<'a> = Pin<Box<dyn Future<Output = Result<(), DeliverError>> + 'a>>;

/// Sends text to a [`Target`]. Implementations scrub the text of credentials first:
/// every delivery is an outbound message.
pub trait Outbound {
    fn deliver<'a>(&'a self, target: &'a Target, text: &'a str) -> Delivering<'a>;

    /// Send the file at `path` (already checked to be inside the workspace) to `target`,
    /// streamed from disk. Only Telegram takes files.
    fn send_file<'a>(&'a self, _target: &'a Target, _path: &'a std::path::Path) -> Delivering<'a> {
        Box::pin(async {
            Err(DeliverError::NotConfigured(
                "files cannot be sent from here".into(),
            ))
        })
    }
}

/// An [`Outbound`] with no channel behind it: every delivery to a chat is refused with
/// one sentence (`log` and `stdout` targets still work). For commands that never send
/// (`memory`, `status`) and for tests.
#[derive(Debug, Clone, Copy, Default)]
pub struct Nowhere;

impl Outbound for Nowhere {
    fn deliver<'a>(&'a self, target: &'a Target, text: &'a str) -> Delivering<'a> {
        Box::pin(async move {
            match target {
                Target::Log => {
                    log::info!("delivery (log only): {text}");
                    Ok(())
                }
                _ => Err(DeliverError::NotConfigured(
                    "messages cannot be sent from here".into(),
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_print() {
        assert_eq!(Target::parse(""), Some(Target::Log));
        assert_eq!(Target::parse("stdout"), Some(Target::Stdout));
        assert_eq!(
            Target::parse("telegram:-100123"),
            Some(Target::Telegram(-100123))
        );
        assert_eq!(Target::parse("telegram:"), None);
        assert_eq!(Target::parse("telegram:abc"), None);
        assert_eq!(Target::parse("email:x"), None);
        assert_eq!(Target::Telegram(42).to_string(), "telegram:42");
        assert_eq!(Target::Log.label(), "log");
        assert_eq!(Target::Log.to_string(), "");
    }
}
