//! The sub-agent tools' schemas and their SQLite side: `spawn_worker` and `delegate` are
//! run by the agent (a worker is a turn of its own, `agent::workers`); their arguments
//! are checked here, and `list_workers` and `remove_worker` run here.
//!
//! # Bounds
//! Names `MAX_WORKER_NAME_BYTES` of `[a-z0-9_-]`, instructions
//! `MAX_WORKER_INSTRUCTIONS_BYTES`, saved workers `MAX_SAVED_WORKERS` (`store::workers`).
//!
//! # Threads
//! Executor thread (it owns the SQLite connection); one short statement per call.

use super::{Args, ToolError};
use crate::chat::ToolSpec;
use crate::limits::{MAX_WORKER_INSTRUCTIONS_BYTES, MAX_WORKER_NAME_BYTES};
use crate::store::Db;
use crate::store::workers::Worker;
use std::borrow::Cow;

pub const SPAWN_WORKER: ToolSpec = ToolSpec {
    name: Cow::Borrowed("spawn_worker"),
    description: Cow::Borrowed(
        "Start a worker: a helper with its own instructions and your tools that does one task and returns its answer. save keeps it for delegate.",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"name":{"type":"string","description":"a-z 0-9 _ -"},"instructions":{"type":"string","description":"Its role and rules"},"task":{"type":"string"},"save":{"type":"boolean"},"deny_tools":{"type":"string","description":"Tool names it may not use"}},"required":["name","instructions","task"],"additionalProperties":false}"#,
    ),
};

pub const DELEGATE: ToolSpec = ToolSpec {
    name: Cow::Borrowed("delegate"),
    description: Cow::Borrowed("Give a task to a saved worker; returns its answer."),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"worker":{"type":"string"},"task":{"type":"string"}},"required":["worker","task"],"additionalProperties":false}"#,
    ),
};

pub const LIST_WORKERS: ToolSpec = ToolSpec {
    name: Cow::Borrowed("list_workers"),
    description: Cow::Borrowed("List the saved workers."),
    parameters: Cow::Borrowed(r#"{"type":"object","properties":{},"additionalProperties":false}"#),
};

pub const REMOVE_WORKER: ToolSpec = ToolSpec {
    name: Cow::Borrowed("remove_worker"),
    description: Cow::Borrowed("Delete a saved worker."),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}"#,
    ),
};

/// `name` if it is a fit worker name.
pub fn check_name(name: &str) -> Result<&str, ToolError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_WORKER_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if ok {
        Ok(name)
    } else {
        Err(ToolError::BadArgs(format!(
            "a worker name is 1 to {MAX_WORKER_NAME_BYTES} of a-z, 0-9, _ and -"
        )))
    }
}

/// The worker a `spawn_worker` call defines, its task, and whether to save it.
pub fn spawned(args: &Args, now: i64) -> Result<(Worker, String, bool), ToolError> {
    let instructions = args.str("instructions")?;
    if instructions.len() > MAX_WORKER_INSTRUCTIONS_BYTES {
        return Err(ToolError::BadArgs(format!(
            "instructions are at most {MAX_WORKER_INSTRUCTIONS_BYTES} bytes"
        )));
    }
    let deny = args.opt_str("deny_tools")?.unwrap_or("");
    let w = Worker {
        name: check_name(args.str("name")?)?.to_string(),
        instructions: instructions.to_string(),
        deny: deny
            .split([',', ' '])
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
        at: now,
    };
    let save = args.opt_bool("save")?.unwrap_or(false);
    Ok((w, args.str("task")?.to_string(), save))
}

/// The saved worker a `delegate` call names, and its task.
pub fn delegated(db: &Db, args: &Args) -> Result<(Worker, String), ToolError> {
    let name = check_name(args.str("worker")?)?;
    let w = db.worker(name).map_err(failed)?.ok_or_else(|| {
        ToolError::BadArgs(format!("no saved worker {name:?}: list_workers names them"))
    })?;
    Ok((w, args.str("task")?.to_string()))
}

/// `list_workers`: one line per saved worker.
pub fn list(db: &Db) -> Result<String, ToolError> {
    let all = db.workers().map_err(failed)?;
    if all.is_empty() {
        return Ok("No saved workers.".into());
    }
    Ok(all.iter().map(line).collect::<Vec<_>>().join("\n"))
}

/// One worker as a line: its name, what it is denied, its instructions' start.
pub fn line(w: &Worker) -> String {
    let deny = if w.deny.is_empty() {
        String::new()
    } else {
        format!(" (denied: {})", w.deny)
    };
    let first = w.instructions.lines().next().unwrap_or("");
    format!("{}{deny}: {}", w.name, crate::text::cap_text(first, 100))
}

/// `remove_worker`.
pub fn remove(db: &Db, args: &Args) -> Result<String, ToolError> {
    let name = check_name(args.str("name")?)?;
    if db.remove_worker(name).map_err(failed)? {
        Ok(format!("Removed worker {name}."))
    } else {
        Err(ToolError::BadArgs(format!("no saved worker {name:?}")))
    }
}

fn failed(e: crate::store::StoreError) -> ToolError {
    ToolError::Failed(e.to_string())
}
