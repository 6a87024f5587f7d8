//! The `exec` tool: one shell command in the workspace, checked by the command policy,
//! with a cleared environment, a timeout that kills everything the command started, and
//! an output cap keeping the head and the tail.
//!
//! The child's environment is built from scratch: only [`ENV_ALLOWLIST`] variables are
//! passed on from ours, and one whose value the scrubber would redact (it holds a
//! configured secret or looks like a credential) is left out too. `secrets.env` is never
//! in our process environment (`config::Env` keeps it apart), so none of its variables,
//! the API keys or the bot token reach the command.
//!
//! Not a sandbox: see `security::exec_policy` for what the deny list does and does not
//! catch. Confinement of file tools does not apply to what a command does.
//!
//! # Bounds
//! - Command text: `exec_policy::MAX_COMMAND_BYTES`.
//! - Time: `tools.exec.timeout_secs` (1..=600, default 30); the model may ask for less,
//!   never more.
//! - Output: `tools.exec.max_output_bytes`, and never more than the agent's tool-result
//!   cap minus room for the status line (so the tail is not cut away again).
//!
//! # Blocking
//! The command runs on a worker thread (`runtime::Workers`); the executor only awaits it.

use super::process::{self, Ending, RunSpec};
use super::{Args, ToolError, Tools};
use crate::chat::ToolSpec;
use crate::security::exec_policy::{self, MAX_COMMAND_BYTES, PolicyContext};
use std::path::Path;
use std::time::Duration;

pub const EXEC: ToolSpec = ToolSpec {
    name: "exec",
    description: "Run a shell command with sh -c in the workspace folder and get its output (stdout and stderr together, long output shortened in the middle) and exit code. No terminal and no input; stopped, with everything it started, after the time limit. Destructive commands (wiping disks or system folders, power off, fork bombs) and reading keys or secrets are refused.",
    parameters: r#"{"type":"object","properties":{"command":{"type":"string","description":"The shell command line, e.g. 'ls -la' or 'df -h /'"},"timeout_secs":{"type":"integer","minimum":1,"description":"Stop the command after this many seconds (at most the configured limit, which is also the default)"}},"required":["command"]}"#,
};

/// Variables passed on to the command from our environment (when set and clean).
pub const ENV_ALLOWLIST: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "TZ",
    "TMPDIR",
];

/// `PATH` when ours is not set.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Room left in the tool result for the status line and the cut marker.
const STATUS_ROOM_BYTES: usize = 256;

/// A validated `exec` call.
struct ExecReq<'a> {
    command: &'a str,
    timeout_secs: u64,
}

fn exec_req<'a>(tools: &Tools, args: &'a Args) -> Result<ExecReq<'a>, ToolError> {
    let command = args.str("command")?;
    if command.trim().is_empty() {
        return Err(ToolError::BadArgs("\"command\" is empty".into()));
    }
    if command.len() > MAX_COMMAND_BYTES {
        return Err(ToolError::BadArgs(format!(
            "\"command\" is longer than {MAX_COMMAND_BYTES} bytes"
        )));
    }
    if command.contains('\0') {
        return Err(ToolError::BadArgs(
            "\"command\" contains a NUL character".into(),
        ));
    }
    let max = tools.cfg.tools.exec.timeout_secs.max(1);
    let timeout_secs = match args.opt_u64("timeout_secs")? {
        None => max,
        Some(0) => {
            return Err(ToolError::BadArgs(
                "\"timeout_secs\" must be at least 1".into(),
            ));
        }
        Some(t) => t.min(max),
    };
    exec_policy::check_command(command, &policy_context(&tools.workspace)).map_err(|d| {
        ToolError::Denied(format!(
            "{} ({}); exec does not run destructive or secret-reading commands",
            d.command(),
            d.reason()
        ))
    })?;
    Ok(ExecReq {
        command,
        timeout_secs,
    })
}

/// The policy's view of where commands run: the user's home and the yoctoclaw home (the
/// workspace's parent).
pub fn policy_context(workspace: &Path) -> PolicyContext {
    let app_home = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let app_home = app_home.parent().unwrap_or(&app_home);
    PolicyContext {
        home_dir: std::env::var("HOME").ok().filter(|h| h.starts_with('/')),
        app_home: app_home.to_string_lossy().into_owned(),
    }
}

/// One-line approval summary of an `exec` call (validates it and checks the policy first).
pub fn summary(tools: &Tools, args: &Args) -> Result<String, ToolError> {
    let r = exec_req(tools, args)?;
    Ok(format!("Run command: {}", r.command))
}

/// The child's environment: the allowlist, minus anything holding a credential.
pub fn child_env() -> Vec<(String, String)> {
    let mut env = Vec::new();
    for name in ENV_ALLOWLIST {
        let Ok(value) = std::env::var(name) else {
            continue;
        };
        if matches!(
            crate::security::scrub::scrub(&value),
            std::borrow::Cow::Owned(_)
        ) {
            log::warn!("exec: {name} left out of the command's environment: it holds a secret");
            continue;
        }
        env.push((name.to_string(), value));
    }
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), DEFAULT_PATH.into()));
    }
    if !env.iter().any(|(k, _)| k == "TERM") {
        env.push(("TERM".into(), "dumb".into()));
    }
    env
}

pub async fn exec(tools: &Tools, args: &Args) -> Result<String, ToolError> {
    let r = exec_req(tools, args)?;
    if !tools.workspace.is_dir() {
        return Err(ToolError::Failed(format!(
            "the workspace {} does not exist: run yoctoclaw onboard",
            tools.workspace.display()
        )));
    }
    let result_cap = tools.cfg.agent.max_tool_result_bytes as usize;
    let max_output = (tools.cfg.tools.exec.max_output_bytes as usize)
        .min(result_cap.saturating_sub(STATUS_ROOM_BYTES))
        .max(512);
    let spec = RunSpec {
        command: r.command.to_string(),
        cwd: tools.workspace.clone(),
        env: child_env(),
        timeout: Duration::from_secs(r.timeout_secs),
        max_output,
    };
    let outcome = tools
        .workers
        .run(move || process::run_blocking(spec))
        .await
        .map_err(|_| ToolError::Failed("yoctoclaw is shutting down".into()))?
        .map_err(ToolError::Failed)?;
    let status = match outcome.ending {
        Ending::Exited(code) => format!("exit code: {code}"),
        Ending::Signal(sig) => format!("killed by signal {sig}"),
        Ending::TimedOut => format!(
            "timed out after {} s: the command and everything it started were stopped",
            r.timeout_secs
        ),
    };
    let body = if outcome.total_bytes == 0 {
        "(no output)".to_string()
    } else {
        outcome.output
    };
    Ok(format!("{status}\n{body}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_environment_is_an_allowlist() {
        let env = child_env();
        assert!(env.iter().any(|(k, _)| k == "PATH"));
        for (k, _) in &env {
            assert!(ENV_ALLOWLIST.contains(&k.as_str()), "{k}");
        }
    }

    #[test]
    fn the_policy_knows_the_app_home() {
        let ws = std::env::temp_dir().join("yc-exec-ctx/workspace");
        let ctx = policy_context(&ws);
        assert!(ctx.app_home.ends_with("yc-exec-ctx"), "{}", ctx.app_home);
    }
}
