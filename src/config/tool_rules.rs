//! Which tools each channel offers: the deny lists `tools.deny`, `telegram.deny_tools`,
//! `serial.deny_tools` and `heartbeat.deny_tools`, the groups they may name, and the
//! `tools.exec.enabled` switch (docs/DECISIONS.md 87).
//!
//! A list holds tool names and group names; anything else is a config error naming it.
//! The terminal gets `tools.deny` alone; Telegram, serial and the heartbeat add their own
//! list; cron jobs get every list, because a job may have been added on any channel and
//! its record does not say which (no channel reaches a tool denied to it through a job).
//!
//! # Bounds
//! A [`ToolSet`] is one bit per name of [`TOOL_NAMES`] in a `u32` (32 tools at most).
//!
//! # Threads
//! Any thread: pure functions over their arguments.

use super::{Config, ConfigError};
use crate::chat::ChannelKind;

/// Every tool the model can be offered, in bit order (`tools` checks its table matches).
pub const TOOL_NAMES: [&str; 19] = [
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "exec",
    "web_fetch",
    "memory_store",
    "memory_search",
    "memory_forget",
    "cron_add",
    "cron_list",
    "cron_remove",
    "send_message",
    "send_file",
    "system_info",
    "gpio",
    "i2c",
    "spi",
    "serial_port",
];

/// The hardware tools (offered only with a `hardware.allow`).
pub const HARDWARE_TOOLS: &[&str] = &["gpio", "i2c", "spi", "serial_port"];

/// The groups a deny list may name, with their tools.
pub const TOOL_GROUPS: [(&str, &[&str]); 9] = [
    ("fs_read", &["read_file", "list_dir"]),
    ("fs_write", &["write_file", "edit_file"]),
    ("exec", &["exec"]),
    ("web", &["web_fetch"]),
    (
        "memory",
        &["memory_store", "memory_search", "memory_forget"],
    ),
    ("cron", &["cron_add", "cron_list", "cron_remove"]),
    ("messaging", &["send_message", "send_file"]),
    ("system", &["system_info"]),
    ("hardware", HARDWARE_TOOLS),
];

/// Every channel kind, in the order `status` lists their tools.
pub const CHANNELS: [ChannelKind; 5] = [
    ChannelKind::Terminal,
    ChannelKind::Telegram,
    ChannelKind::Serial,
    ChannelKind::Heartbeat,
    ChannelKind::Cron,
];

/// A set of tools (one deny list, its groups expanded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolSet(u32);

fn bit(name: &str) -> u32 {
    TOOL_NAMES
        .iter()
        .position(|n| *n == name)
        .map_or(0, |i| 1 << i)
}

impl ToolSet {
    pub fn contains(self, name: &str) -> bool {
        self.0 & bit(name) != 0
    }

    /// The tools and groups named by `entries`; the first unknown one is an error
    /// naming `key` and the entry.
    pub fn parse(entries: &[String], key: &str) -> Result<ToolSet, ConfigError> {
        let mut set = 0;
        for e in entries {
            let add = match TOOL_GROUPS.iter().find(|(g, _)| g == e) {
                Some((_, tools)) => tools.iter().fold(0, |a, t| a | bit(t)),
                None => bit(e),
            };
            if add == 0 {
                let groups: Vec<&str> = TOOL_GROUPS.iter().map(|(g, _)| *g).collect();
                return Err(ConfigError::BadValue {
                    key: key.into(),
                    expected: format!(
                        "a list of tool names (like read_file) or groups ({}); {e:?} is neither",
                        groups.join(", ")
                    ),
                });
            }
            set |= add;
        }
        Ok(ToolSet(set))
    }
}

impl Config {
    /// The config key that takes tool `name` away from turns on `channel`, or `None`
    /// when it is allowed there.
    pub fn tool_denied_by(&self, name: &str, channel: ChannelKind) -> Option<&'static str> {
        if name == "exec" && !self.tools.exec.enabled {
            return Some("tools.exec.enabled");
        }
        let cron = channel == ChannelKind::Cron;
        [
            (true, self.tools.deny, "tools.deny"),
            (
                cron || channel == ChannelKind::Telegram,
                self.telegram.deny_tools,
                "telegram.deny_tools",
            ),
            (
                cron || channel == ChannelKind::Serial,
                self.serial.deny_tools,
                "serial.deny_tools",
            ),
            (
                cron || channel == ChannelKind::Heartbeat,
                self.heartbeat.deny_tools,
                "heartbeat.deny_tools",
            ),
        ]
        .into_iter()
        .find(|(applies, set, _)| *applies && set.contains(name))
        .map(|(_, _, key)| key)
    }

    /// Whether a turn on `channel` is offered tool `name`: not denied there, and for a
    /// hardware tool, `hardware.allow` names something.
    pub fn tool_offered(&self, name: &str, channel: ChannelKind) -> bool {
        (!HARDWARE_TOOLS.contains(&name) || !self.hardware.allow.is_empty())
            && self.tool_denied_by(name, channel).is_none()
    }
}
