//! Which tools each channel offers: the deny lists `tools.deny`, `telegram.deny_tools`,
//! `serial.deny_tools`, `heartbeat.deny_tools` and `http.deny_tools`, the groups they may
//! name, and the `tools.exec.enabled` switch (docs/DECISIONS.md 87).
//!
//! A list holds tool names and group names; anything else is a config error naming it.
//! MCP servers' tools are named as the model sees them: `SERVER__TOOL` (one tool),
//! `SERVER__*` (every tool of a server) or the group `mcp` (every MCP tool). Such names
//! are accepted without knowing the tools (servers declare theirs when they run).
//! The terminal gets `tools.deny` alone; Telegram, serial, the heartbeat and the HTTP API
//! add their own list; cron jobs get every list, because a job may have been added on any channel and
//! its record does not say which (no channel reaches a tool denied to it through a job).
//!
//! # Bounds
//! A [`ToolSet`] is one bit per name of [`TOOL_NAMES`] in a `u32` (32 tools at most),
//! plus at most [`MAX_MCP_ENTRIES`] MCP names.
//!
//! # Threads
//! Any thread: pure functions over their arguments.

use super::{Config, ConfigError};
use crate::chat::ChannelKind;

/// Every tool the model can be offered, in bit order (`tools` checks its table matches).
pub const TOOL_NAMES: [&str; 24] = [
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "exec",
    "web_fetch",
    "web_search",
    "memory_store",
    "memory_search",
    "memory_forget",
    "cron_add",
    "cron_list",
    "cron_remove",
    "send_message",
    "send_file",
    "spawn_worker",
    "delegate",
    "list_workers",
    "remove_worker",
    "system_info",
    "gpio",
    "i2c",
    "spi",
    "serial_port",
];

/// The hardware tools (offered only with a `hardware.allow`).
pub const HARDWARE_TOOLS: &[&str] = &["gpio", "i2c", "spi", "serial_port"];

/// The sub-agent tools (never offered to a worker itself).
pub const WORKER_TOOLS: &[&str] = &["spawn_worker", "delegate", "list_workers", "remove_worker"];

/// The groups a deny list may name, with their tools.
pub const TOOL_GROUPS: [(&str, &[&str]); 10] = [
    ("fs_read", &["read_file", "list_dir"]),
    ("fs_write", &["write_file", "edit_file"]),
    ("exec", &["exec"]),
    ("web", &["web_fetch", "web_search"]),
    (
        "memory",
        &["memory_store", "memory_search", "memory_forget"],
    ),
    ("cron", &["cron_add", "cron_list", "cron_remove"]),
    ("messaging", &["send_message", "send_file"]),
    ("system", &["system_info"]),
    ("workers", WORKER_TOOLS),
    ("hardware", HARDWARE_TOOLS),
];

/// The group naming every MCP tool.
pub const MCP_GROUP: &str = "mcp";
/// MCP names (`SERVER__TOOL`, `SERVER__*`) one deny list may hold.
pub const MAX_MCP_ENTRIES: usize = 64;
/// Longest tool name a provider takes (`[A-Za-z0-9_-]{1,64}`).
const MAX_TOOL_NAME: usize = 64;

/// Every channel kind, in the order `status` lists their tools.
pub const CHANNELS: [ChannelKind; 6] = [
    ChannelKind::Terminal,
    ChannelKind::Telegram,
    ChannelKind::Serial,
    ChannelKind::Http,
    ChannelKind::Heartbeat,
    ChannelKind::Cron,
];

/// A set of tools (one deny list, its groups expanded).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolSet {
    builtin: u32,
    /// Every MCP tool (the group `mcp`).
    all_mcp: bool,
    /// `SERVER__TOOL` names, and `SERVER__` prefixes (from `SERVER__*`, the `*` dropped).
    mcp: Vec<String>,
}

fn bit(name: &str) -> u32 {
    TOOL_NAMES
        .iter()
        .position(|n| *n == name)
        .map_or(0, |i| 1 << i)
}

/// Whether `e` names MCP tools: `SERVER__TOOL` or `SERVER__*`, of the characters tool
/// names may hold, at most 64 long.
fn is_mcp_name(e: &str) -> bool {
    let name_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let Some((server, tool)) = e.split_once("__") else {
        return false;
    };
    let tool_ok = tool == "*" || !tool.is_empty() && tool.chars().all(name_char);
    !server.is_empty() && e.len() <= MAX_TOOL_NAME && server.chars().all(name_char) && tool_ok
}

impl ToolSet {
    /// Whether tool `name` is in the set: a built-in tool by its bit, any other name as
    /// an MCP tool's (`SERVER__TOOL`, which never equals a built-in's).
    pub fn contains(&self, name: &str) -> bool {
        let b = bit(name);
        if b != 0 {
            return self.builtin & b != 0;
        }
        self.all_mcp
            || self
                .mcp
                .iter()
                .any(|e| e == name || e.ends_with("__") && name.starts_with(e.as_str()))
    }

    /// The tools and groups named by `entries`; the first unknown one is an error
    /// naming `key` and the entry.
    pub fn parse(entries: &[String], key: &str) -> Result<ToolSet, ConfigError> {
        let mut set = ToolSet::default();
        for e in entries {
            let add = match TOOL_GROUPS.iter().find(|(g, _)| g == e) {
                Some((_, tools)) => tools.iter().fold(0, |a, t| a | bit(t)),
                None => bit(e),
            };
            if add != 0 {
                set.builtin |= add;
            } else if e == MCP_GROUP {
                set.all_mcp = true;
            } else if is_mcp_name(e) {
                if set.mcp.len() == MAX_MCP_ENTRIES {
                    return Err(ConfigError::BadValue {
                        key: key.into(),
                        expected: format!("at most {MAX_MCP_ENTRIES} MCP tool names"),
                    });
                }
                set.mcp.push(e.strip_suffix('*').unwrap_or(e).to_string());
            } else {
                let groups: Vec<&str> = TOOL_GROUPS.iter().map(|(g, _)| *g).collect();
                return Err(ConfigError::BadValue {
                    key: key.into(),
                    expected: format!(
                        "a list of tool names (like read_file), groups ({}, {MCP_GROUP}) or MCP tools (SERVER__TOOL, SERVER__*); {e:?} is none of them",
                        groups.join(", ")
                    ),
                });
            }
        }
        Ok(set)
    }
}

impl Config {
    /// The variables this configuration names that hold secrets (API keys, tokens).
    pub fn secret_names(&self) -> Vec<String> {
        let mut names = vec![
            self.provider.api_key_env.clone(),
            self.telegram.token_env.clone(),
            self.http.token_env.clone(),
        ];
        names.extend(self.fallbacks.iter().map(|f| f.api_key_env.clone()));
        let ws = &self.tools.web_search;
        names.extend([ws.brave_key_env.clone(), ws.tavily_key_env.clone()]);
        names
    }

    /// The config key that takes tool `name` away from turns on `channel`, or `None`
    /// when it is allowed there.
    pub fn tool_denied_by(&self, name: &str, channel: ChannelKind) -> Option<&'static str> {
        if name == "exec" && !self.tools.exec.enabled {
            return Some("tools.exec.enabled");
        }
        let cron = channel == ChannelKind::Cron;
        [
            (true, &self.tools.deny, "tools.deny"),
            (
                cron || channel == ChannelKind::Telegram,
                &self.telegram.deny_tools,
                "telegram.deny_tools",
            ),
            (
                cron || channel == ChannelKind::Serial,
                &self.serial.deny_tools,
                "serial.deny_tools",
            ),
            (
                cron || channel == ChannelKind::Heartbeat,
                &self.heartbeat.deny_tools,
                "heartbeat.deny_tools",
            ),
            (
                cron || channel == ChannelKind::Http,
                &self.http.deny_tools,
                "http.deny_tools",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn set(l: &[&str]) -> Result<ToolSet, ConfigError> {
        let l: Vec<String> = l.iter().map(|s| s.to_string()).collect();
        ToolSet::parse(&l, "tools.deny")
    }

    #[test]
    fn deny_lists_name_mcp_tools_servers_and_the_group() {
        let s = set(&["exec", "home__turn_on", "nas__*"]).unwrap();
        assert!(s.contains("exec") && !s.contains("read_file"));
        assert!(s.contains("home__turn_on") && !s.contains("home__turn_off"));
        assert!(s.contains("nas__df") && s.contains("nas__x_1a2b3c4d"));
        assert!(!s.contains("nasa__df"), "a prefix is the whole server name");
        let all = set(&["mcp"]).unwrap();
        assert!(all.contains("home__turn_on") && !all.contains("exec"));
        assert!(!ToolSet::default().contains("home__turn_on"));
        for bad in [
            "rm",
            "__x",
            "home__",
            "home__a*",
            "home__*x",
            "h/me__x",
            "home__tü",
            &format!("home__{}", "x".repeat(60)),
        ] {
            let e = set(&[bad]).unwrap_err().to_string();
            assert!(e.contains("SERVER__TOOL"), "{bad}: {e}");
        }
        let many: Vec<String> = (0..=MAX_MCP_ENTRIES).map(|i| format!("s__t{i}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(set(&refs[..MAX_MCP_ENTRIES]).is_ok());
        assert!(set(&refs).is_err());
    }
}
