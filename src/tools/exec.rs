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
//! The deny list (`security::exec_policy`) refuses what it can read; a command that hides
//! what it runs is marked in its [`Approval`] (asked about even after `/always`, refused
//! in full autonomy). What a command does at run time is limited by confinement
//! (`sandbox`): where the kernel has Landlock, each child gets a ruleset built here on the
//! worker (nothing of the yoctoclaw home but the workspace, writes only in the workspace,
//! the temp folder and `tools.exec.write_paths`); without it, a command naming a path
//! that resolves into the home is refused. `tools.exec.user` runs children as another
//! user ([`run_as`]; only when we are root).
//!
//! # Bounds
//! - Command text: `exec_policy::MAX_COMMAND_BYTES`; paths checked without Landlock:
//!   `exec_policy::MAX_PATH_WORDS`; `/etc/passwd` read up to `MAX_PASSWD_BYTES`.
//! - Time: `tools.exec.timeout_secs` (1..=600, default 30); the model may ask for less,
//!   never more.
//! - Output: `tools.exec.max_output_bytes`, and never more than the agent's tool-result
//!   cap minus room for the status line (so the tail is not cut away again).
//!
//! # Threads
//! Executor thread for the policy checks and the approval; the command itself on a worker
//! thread.
//!
//! # Blocking
//! The command runs on a worker thread (`runtime::Workers`); the executor only awaits it.

use super::process::{self, Ending, RunSpec};
use super::{Approval, Args, ToolError, Tools};
use crate::chat::ToolSpec;
use crate::config::ConfigError;
use crate::sandbox::{self, Confinement, Ruleset};
use crate::security::exec_policy::{self, MAX_COMMAND_BYTES, PolicyContext};
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const EXEC: ToolSpec = ToolSpec {
    name: Cow::Borrowed("exec"),
    description: Cow::Borrowed(
        "Run a shell command with sh -c in the workspace folder and get its output (stdout and stderr together, long output shortened in the middle) and exit code. No terminal and no input; stopped, with everything it started, after the time limit. Destructive commands (wiping disks or system folders, power off, fork bombs) and reading keys or secrets are refused.",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"command":{"type":"string","description":"The shell command line, e.g. 'ls -la' or 'df -h /'"},"timeout_secs":{"type":"integer","minimum":1,"description":"Stop the command after this many seconds (at most the configured limit, which is also the default)"}},"required":["command"]}"#,
    ),
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

/// Room left in the tool result for the status line and the cut marker.
const STATUS_ROOM_BYTES: usize = 256;

/// A validated `exec` call.
struct ExecReq<'a> {
    command: &'a str,
    timeout_secs: u64,
    /// The command hides what it runs (`exec_policy::hidden_command`).
    hidden: Option<exec_policy::Hidden>,
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
    let max = tools.cfg().tools.exec.timeout_secs.max(1);
    let timeout_secs = match args.opt_u64("timeout_secs")? {
        None => max,
        Some(0) => {
            return Err(ToolError::BadArgs(
                "\"timeout_secs\" must be at least 1".into(),
            ));
        }
        Some(t) => t.min(max),
    };
    let ctx = policy_context(&tools.workspace);
    exec_policy::check_command(command, &ctx).map_err(|d| {
        ToolError::Denied(format!(
            "{} ({}); exec does not run destructive or secret-reading commands",
            d.command(),
            d.reason()
        ))
    })?;
    Ok(ExecReq {
        command,
        timeout_secs,
        hidden: exec_policy::hidden_command(command, &ctx),
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

/// The approval of an `exec` call (validates it and checks the policy first); a command
/// that hides what it runs is marked so that it is asked about even after `/always`, and
/// refused in full autonomy.
pub fn summary(tools: &Tools, args: &Args) -> Result<Approval, ToolError> {
    let r = exec_req(tools, args)?;
    Ok(Approval {
        summary: format!("Run command: {}", r.command),
        opaque: r
            .hidden
            .map(|h| format!("this command hides the command it runs ({h})")),
    })
}

/// The child's environment: the allowlist, minus anything holding a credential.
pub fn child_env() -> Vec<(String, String)> {
    crate::security::child_env::inherit(ENV_ALLOWLIST, "exec")
}

pub async fn exec(tools: &Tools, args: &Args) -> Result<String, ToolError> {
    let r = exec_req(tools, args)?;
    if !tools.workspace.is_dir() {
        return Err(ToolError::Failed(format!(
            "the workspace {} does not exist: run yoctoclaw onboard",
            tools.workspace.display()
        )));
    }
    let result_cap = tools.cfg().agent.max_tool_result_bytes as usize;
    let max_output = (tools.cfg().tools.exec.max_output_bytes as usize)
        .min(result_cap.saturating_sub(STATUS_ROOM_BYTES))
        .max(512);
    let spec = RunSpec {
        command: r.command.to_string(),
        cwd: tools.workspace.clone(),
        env: child_env(),
        timeout: Duration::from_secs(r.timeout_secs),
        max_output,
        user: None,
    };
    let plan = Plan {
        spec,
        ctx: policy_context(&tools.workspace),
        write_paths: tools.cfg().tools.exec.write_paths.clone(),
        user: tools.cfg().tools.exec.user.clone(),
    };
    let outcome = tools
        .workers
        .run(move || run_confined(plan))
        .await
        .map_err(|_| ToolError::Failed("yoctoclaw is shutting down".into()))??;
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

/// Everything a confined run needs, moved to the worker thread.
struct Plan {
    spec: RunSpec,
    ctx: PolicyContext,
    write_paths: Vec<String>,
    user: String,
}

/// On a worker thread: run the command confined by Landlock where the kernel has it;
/// elsewhere refuse a command whose paths resolve (symlinks followed) into the yoctoclaw
/// home outside the workspace. Either way as `tools.exec.user` when set.
fn run_confined(mut plan: Plan) -> Result<process::Outcome, ToolError> {
    let who = run_as(&plan.user).map_err(|e| ToolError::Failed(e.to_string()))?;
    if let Some(who) = who {
        plan.spec.user = Some((who.uid, who.gid));
        plan.spec
            .env
            .retain(|(k, _)| !matches!(k.as_str(), "HOME" | "USER" | "LOGNAME"));
        if let Some(home) = who.home {
            plan.spec.env.push(("HOME".into(), home));
        }
        if let Some(name) = who.name {
            plan.spec.env.push(("USER".into(), name.clone()));
            plan.spec.env.push(("LOGNAME".into(), name));
        }
    }
    let workspace = canonical(&plan.spec.cwd);
    let app_home = PathBuf::from(&plan.ctx.app_home);
    match sandbox::landlock() {
        Ok(abi) => {
            let c = confinement(&workspace, &app_home, &plan.write_paths);
            let rs = Ruleset::build(&c, abi).map_err(|e| {
                ToolError::Failed(format!(
                    "cannot confine the command ({e}), so it was not run"
                ))
            })?;
            process::run_blocking(plan.spec, Some(&rs)).map_err(ToolError::Failed)
        }
        Err(_) => {
            check_resolved_paths(&plan.spec.command, &plan.ctx, &workspace, &app_home)?;
            process::run_blocking(plan.spec, None).map_err(ToolError::Failed)
        }
    }
}

/// `p` with symlinks resolved, or as it is when it cannot be.
fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// What a command may reach: nothing of the yoctoclaw home but the workspace, nothing of
/// `~/.ssh` and `~/.gnupg`; writes in the workspace, the temp folder and
/// `tools.exec.write_paths` (those inside a hidden folder are left out).
fn confinement(workspace: &Path, app_home: &Path, write_paths: &[String]) -> Confinement {
    let mut hidden = vec![canonical(app_home)];
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        for d in [".ssh", ".gnupg"] {
            if let Ok(p) = Path::new(&home).join(d).canonicalize() {
                hidden.push(p);
            }
        }
    }
    let mut writable = vec![workspace.to_path_buf()];
    let others = std::iter::once(std::env::temp_dir())
        .chain(write_paths.iter().map(PathBuf::from))
        .filter_map(|p| p.canonicalize().ok());
    for p in others {
        let inside_hidden = hidden.iter().any(|h| p.starts_with(h));
        if inside_hidden && !p.starts_with(workspace) {
            log::debug!(
                "exec: {} is inside a protected folder: not writable",
                p.display()
            );
            continue;
        }
        writable.push(p);
    }
    Confinement { hidden, writable }
}

/// Without Landlock: refuse a command naming a path that resolves into the yoctoclaw
/// home outside the workspace (a symlink in the workspace, `cd` and `..` included). Paths
/// built when the command runs are not seen: `tools.exec.user` is the answer to those.
fn check_resolved_paths(
    command: &str,
    ctx: &PolicyContext,
    workspace: &Path,
    app_home: &Path,
) -> Result<(), ToolError> {
    let app_home = canonical(app_home);
    for word in exec_policy::path_words(command, ctx) {
        let p = Path::new(&word);
        let real = match p.canonicalize() {
            Ok(r) => r,
            Err(_) => match (p.parent().map(Path::canonicalize), p.file_name()) {
                (Some(Ok(dir)), Some(name)) => dir.join(name),
                _ => continue,
            },
        };
        if real.starts_with(&app_home) && !real.starts_with(workspace) {
            return Err(ToolError::Denied(format!(
                "{word} resolves into the yoctoclaw home outside the workspace (config, secrets, database), which commands may not touch"
            )));
        }
    }
    Ok(())
}

/// Who commands run as when `tools.exec.user` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
    pub name: Option<String>,
    pub home: Option<String>,
}

/// `/etc/passwd` is read up to this many bytes.
const MAX_PASSWD_BYTES: u64 = 256 * 1024;

/// `tools.exec.user` resolved through `/etc/passwd` (a name, or a numeric uid); `None`
/// when empty. A config error when it cannot be used: unknown, or we are not root.
pub fn run_as(user: &str) -> Result<Option<RunAs>, ConfigError> {
    let user = user.trim();
    if user.is_empty() {
        return Ok(None);
    }
    let bad = |expected: String| ConfigError::BadValue {
        key: "tools.exec.user".into(),
        expected,
    };
    let euid = rustix::process::geteuid().as_raw();
    if euid != 0 {
        return Err(bad(format!(
            "empty unless yoctoclaw runs as root (it runs as uid {euid}): only root can run commands as another user"
        )));
    }
    let mut passwd = String::new();
    if let Ok(f) = std::fs::File::open("/etc/passwd") {
        use std::io::Read;
        let _ = f.take(MAX_PASSWD_BYTES).read_to_string(&mut passwd);
    }
    match lookup_user(user, &passwd) {
        Some(who) => Ok(Some(who)),
        None => Err(bad(format!(
            "a user name from /etc/passwd or a numeric uid (there is no user \"{user}\")"
        ))),
    }
}

/// A user by name or uid in `passwd` text; a numeric uid not listed runs with gid = uid.
fn lookup_user(user: &str, passwd: &str) -> Option<RunAs> {
    for line in passwd.lines() {
        let f: Vec<&str> = line.split(':').collect();
        let [name, _, uid, gid, _, home, ..] = f.as_slice() else {
            continue;
        };
        if *name == user || *uid == user {
            return Some(RunAs {
                uid: uid.parse().ok()?,
                gid: gid.parse().ok()?,
                name: Some(name.to_string()),
                home: Some(home.to_string()).filter(|h| h.starts_with('/')),
            });
        }
    }
    let uid: u32 = user.parse().ok()?;
    Some(RunAs {
        uid,
        gid: uid,
        name: None,
        home: None,
    })
}

/// Say once, at start, how `exec` commands are confined on this machine.
pub fn announce_confinement() {
    match sandbox::landlock() {
        Ok(abi) => log::info!(
            "exec: commands are confined by Landlock (ABI {abi}): no access to the yoctoclaw home outside the workspace, writes only in the workspace, the temp folder and tools.exec.write_paths"
        ),
        Err(m) => log::warn!(
            "exec: {} ({m}): commands are not confined; paths that resolve into the yoctoclaw home are refused, and tools.exec.user can run commands as another user",
            LANDLOCK_MISSING
        ),
    }
}

/// The words the log and `doctor` use when Landlock is missing.
pub const LANDLOCK_MISSING: &str = "Landlock is not available";

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
    fn users_resolve_by_name_or_uid() {
        let passwd = "root:x:0:0:root:/root:/bin/sh\nbroken line\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\npi:x:1000:1000::/home/pi:/bin/bash\n";
        let who = |u: &str| lookup_user(u, passwd);
        assert_eq!(who("pi").map(|r| (r.uid, r.gid)), Some((1000, 1000)));
        assert_eq!(who("pi").and_then(|r| r.home).as_deref(), Some("/home/pi"));
        assert_eq!(who("65534").and_then(|r| r.name).as_deref(), Some("nobody"));
        assert_eq!(
            who("4242").map(|r| (r.uid, r.gid, r.name)),
            Some((4242, 4242, None))
        );
        assert_eq!(who("mallory"), None);
        assert_eq!(who(""), None);
        assert!(matches!(run_as(" "), Ok(None)));
    }

    #[test]
    fn without_landlock_paths_into_the_home_are_refused() {
        let base = std::env::temp_dir().join(format!("yc-exec-fallback-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let ws = base.join("workspace");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::write(base.join("secrets.env"), "K=v").unwrap();
        std::os::unix::fs::symlink(base.join("secrets.env"), ws.join("s")).unwrap();
        std::os::unix::fs::symlink(&base, ws.join("up")).unwrap();
        let base = base.canonicalize().unwrap();
        let ws = ws.canonicalize().unwrap();
        let ctx = policy_context(&ws);
        let check = |c: &str| check_resolved_paths(c, &ctx, &ws, &base);
        for bad in [
            "cat s",
            "ls up",
            "cat up/config.json",
            "echo x > up/new.txt",
            "cd sub; cat ../s",
        ] {
            assert!(matches!(check(bad), Err(ToolError::Denied(_))), "{bad}");
        }
        for ok in [
            "ls",
            "cat sub/x",
            "echo x > new.txt",
            "ls up/workspace",
            "cat /etc/hostname",
        ] {
            assert!(check(ok).is_ok(), "{ok}");
        }
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn the_policy_knows_the_app_home() {
        let ws = std::env::temp_dir().join("yc-exec-ctx/workspace");
        let ctx = policy_context(&ws);
        assert!(ctx.app_home.ends_with("yc-exec-ctx"), "{}", ctx.app_home);
    }
}
