//! The environment a child process starts from: a few of our variables, named by the
//! caller, passed on only when set and clean (a value the scrubber would redact, because
//! it holds a configured secret or looks like a credential, is left out), plus safe
//! defaults for `PATH` and `TERM`. Used by `exec` (its allowlist) and the MCP stdio
//! servers (`PATH`, `HOME`, `LANG`, `TERM`). `secrets.env` is never in our process
//! environment (`config::Env` keeps it apart), so none of its variables can be passed on.
//!
//! # Bounds
//! As many variables as the caller names.
//!
//! # Threads
//! Any thread (reads the process environment).

/// `PATH` when ours is not set.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// `TERM` when ours is not set.
pub const DEFAULT_TERM: &str = "dumb";

/// `names` from our environment, minus anything holding a credential (logged as `who`'s),
/// with `PATH` and `TERM` defaulted.
pub fn inherit(names: &[&str], who: &str) -> Vec<(String, String)> {
    let mut env = Vec::new();
    for name in names {
        let Ok(value) = std::env::var(name) else {
            continue;
        };
        if matches!(super::scrub::scrub(&value), std::borrow::Cow::Owned(_)) {
            log::warn!("{who}: {name} left out of the child's environment: it holds a secret");
            continue;
        }
        env.push((name.to_string(), value));
    }
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), DEFAULT_PATH.into()));
    }
    if !env.iter().any(|(k, _)| k == "TERM") {
        env.push(("TERM".into(), DEFAULT_TERM.into()));
    }
    env
}
