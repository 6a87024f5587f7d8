//! Channels: where messages come from and where replies go (terminal, Telegram, serial),
//! plus the delivery targets used by heartbeat and cron (`telegram:<id>`, `stdout`, log).

pub mod deliver;
pub mod serial;
pub mod telegram;
pub mod terminal;

use std::fmt;

/// The kind of channel a message came in on; shown to the model in the system prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelKind {
    Terminal,
    Telegram,
    Serial,
    Heartbeat,
    Cron,
}

impl ChannelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Terminal => "terminal",
            ChannelKind::Telegram => "telegram",
            ChannelKind::Serial => "serial",
            ChannelKind::Heartbeat => "heartbeat",
            ChannelKind::Cron => "cron",
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
    }
}
