//! The tools the model can call: their schemas, argument parsing and dispatch.
//!
//! Every tool validates its arguments and answers a `ToolError` (shown to the model as a
//! tool error it can recover from) instead of panicking. Results are scrubbed of
//! credentials and cut to `agent.max_tool_result_bytes` by the agent before they enter
//! history.
//!
//! # Bounds
//! Arguments above `MAX_TOOL_ARGS_BYTES` are refused; each tool bounds its own output.

mod args;
pub mod cron;
pub mod fs;
pub mod memory;

pub use args::Args;

use crate::config::Config;
use crate::provider::ToolSpec;
use crate::runtime::{Workers, now_secs};
use crate::store::Db;
use std::fmt;
use std::path::PathBuf;
use std::rc::Rc;

/// Why a tool call did not produce a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The model asked for a tool that does not exist.
    Unknown(String),
    /// Missing, mistyped or oversized arguments.
    BadArgs(String),
    /// Refused by policy (confinement, autonomy, deny list, the user said no).
    Denied(String),
    /// The tool ran and failed.
    Failed(String),
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::Unknown(n) => write!(f, "unknown tool {n:?}"),
            ToolError::BadArgs(m) => write!(f, "bad arguments: {m}"),
            ToolError::Denied(m) => write!(f, "refused: {m}"),
            ToolError::Failed(m) => write!(f, "failed: {m}"),
        }
    }
}

impl std::error::Error for ToolError {}

/// What a tool may know about the turn that called it.
#[derive(Debug, Clone)]
pub struct CallContext {
    pub session: String,
    pub channel: crate::channels::ChannelKind,
}

/// The tool set of one running program.
pub struct Tools {
    pub workspace: PathBuf,
    pub cfg: Rc<Config>,
    pub workers: Workers,
    pub db: Rc<Db>,
}

const ALL: &[ToolSpec] = &[
    fs::READ_FILE,
    fs::LIST_DIR,
    memory::MEMORY_STORE,
    memory::MEMORY_SEARCH,
    memory::MEMORY_FORGET,
    cron::CRON_ADD,
    cron::CRON_LIST,
    cron::CRON_REMOVE,
];

/// Tools that ask the user first under `supervised` autonomy (and are refused under
/// `read_only`): they change what runs unattended.
const NEEDS_APPROVAL: &[&str] = &["cron_add", "cron_remove"];

/// True when a call to `name` needs the user's approval under `supervised` autonomy.
pub fn needs_approval(name: &str) -> bool {
    NEEDS_APPROVAL.contains(&name)
}

impl Tools {
    pub fn new(workspace: PathBuf, cfg: Rc<Config>, workers: Workers, db: Rc<Db>) -> Tools {
        Tools {
            workspace,
            cfg,
            workers,
            db,
        }
    }

    /// The tools offered to the model.
    pub fn specs(&self) -> &'static [ToolSpec] {
        ALL
    }

    pub fn is_tool(&self, name: &str) -> bool {
        ALL.iter().any(|t| t.name == name)
    }

    /// Run one tool call.
    pub async fn call(
        &self,
        name: &str,
        arguments: &str,
        ctx: &CallContext,
    ) -> Result<String, ToolError> {
        let args = Args::parse(arguments)?;
        let restrict = self.cfg.agent.restrict_to_workspace;
        match name {
            "read_file" => fs::read_file(&self.workspace, restrict, &args),
            "list_dir" => fs::list_dir(&self.workspace, restrict, &args),
            "memory_store" => memory::memory_store(&self.db, &args, now_secs()),
            "memory_search" => memory::memory_search(&self.db, &args, now_secs()),
            "memory_forget" => memory::memory_forget(&self.db, &args),
            "cron_add" => cron::add(&self.db, &self.cfg, ctx, &args, crate::clock::now()),
            "cron_list" => cron::list(&self.db, &self.cfg),
            "cron_remove" => cron::remove(&self.db, &self.cfg, &args),
            other => Err(ToolError::Unknown(other.to_string())),
        }
    }
}

/// Cut `s` to at most `max` bytes at a char boundary, with a marker saying how much went.
pub fn cap_text(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max.saturating_sub(64);
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… truncated {} of {} bytes]",
        &s[..end],
        s.len() - end,
        s.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_text_cuts_at_char_boundaries() {
        let s = "é".repeat(1000);
        let c = cap_text(&s, 301);
        assert!(c.len() <= 301 + 64);
        assert!(c.contains("truncated"));
        assert_eq!(cap_text("short", 100), "short");
    }

    #[test]
    fn cron_changes_need_approval_and_listing_does_not() {
        assert!(needs_approval("cron_add") && needs_approval("cron_remove"));
        assert!(!needs_approval("cron_list") && !needs_approval("read_file"));
    }

    #[test]
    fn every_schema_is_valid_json_object() {
        for t in ALL {
            let v = crate::json::parse_value(t.parameters).unwrap();
            assert_eq!(
                crate::json::str_at(&v, "type"),
                Some("object"),
                "{}",
                t.name
            );
        }
    }
}
