//! Running one shell command for `exec`: `sh -c` in its own process group, a cleared
//! environment, stdout and stderr merged into one pipe read without blocking forever, a
//! deadline after which the whole group is killed.
//!
//! Confinement (`sandbox`): the caller may hand a Landlock ruleset, which the child
//! applies to itself between fork and exec, and a user to run as.
//!
//! Why a process group: `sh -c 'sleep 60 & sleep 60'` leaves children that killing the
//! shell alone would orphan. The child is started with `process_group(0)` (its pid is the
//! group id) and every kill is `kill(-pgid, SIGKILL)`. When the shell exits by itself,
//! whatever it left running in its group is killed too, so nothing the model started
//! outlives the call (a program meant to keep running must be started with `setsid`).
//!
//! # Bounds
//! - Time: `timeout` from spawn; then the group is killed and the call returns. After a
//!   normal exit, output is read for at most `EXEC_DRAIN_AFTER_EXIT_MS` more (a process
//!   that left the group may still hold the pipe).
//! - Output: a [`HeadTail`] of `max_output` bytes; everything beyond is counted, not kept.
//!
//! # Threads
//! Worker threads; the child is forked by std's `Command` (no thread of its own) and its
//! output read with `poll` on the same worker.
//!
//! # Blocking
//! [`run_blocking`] blocks for the whole run: call it on a worker thread
//! (`runtime::Workers`), never on the executor.

use super::output::HeadTail;
use crate::limits::EXEC_DRAIN_AFTER_EXIT_MS;
use crate::sandbox::Ruleset;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Bytes read from the pipe per read call.
const READ_CHUNK_BYTES: usize = 8 * 1024;
/// Longest single wait for output before the deadline and the child are checked again.
const POLL_SLICE_MS: u64 = 100;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub command: String,
    pub cwd: PathBuf,
    /// The child's whole environment (the caller's allowlist).
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    pub max_output: usize,
    /// Run as this (uid, gid) instead of ours (`tools.exec.user`; we are root then).
    pub user: Option<(u32, u32)>,
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Exited(i32),
    /// Killed by a signal (not by us).
    Signal(i32),
    /// The deadline passed; the group was killed.
    TimedOut,
}

/// The result of a run: how it ended, its output (head and tail kept, scrubbed) and how
/// many bytes it wrote in all.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub ending: Ending,
    pub output: String,
    pub total_bytes: u64,
}

/// Run `spec` and wait for it (see the module documentation); with `ruleset`, the child
/// restricts itself to it (Landlock) between fork and exec.
pub fn run_blocking(spec: RunSpec, ruleset: Option<&Ruleset>) -> Result<Outcome, String> {
    let (mut reader, writer) = std::io::pipe().map_err(|e| format!("cannot make a pipe: {e}"))?;
    let writer2 = writer
        .try_clone()
        .map_err(|e| format!("cannot make a pipe: {e}"))?;
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2)
        .process_group(0);
    if let Some((uid, gid)) = spec.user {
        // std drops the supplementary groups too when we are root.
        cmd.uid(uid).gid(gid);
    }
    if let Some(rs) = ruleset {
        let fd = rs.raw();
        // SAFETY: runs in the child between fork and exec: `restrict_self` makes two
        // system calls on integers and allocates nothing (async-signal-safe). `rs`
        // outlives the spawn.
        unsafe {
            cmd.pre_exec(move || crate::sandbox::restrict_self(fd));
        }
    }
    let spawned = cmd.spawn();
    // The Command holds our copies of the pipe's write end: drop them, or the pipe never
    // reaches end of file.
    drop(cmd);
    let mut child = spawned.map_err(|e| format!("cannot start /bin/sh: {e}"))?;
    let pgid = child.id() as i32;
    rustix::io::ioctl_fionbio(&reader, true)
        .map_err(|e| format!("cannot read the command's output: {e}"))?;

    let started = Instant::now();
    let deadline = started + spec.timeout;
    let mut out = HeadTail::new(spec.max_output);
    let mut buf = [0u8; READ_CHUNK_BYTES];
    let mut eof = false;
    let mut exited: Option<(std::process::ExitStatus, Instant)> = None;
    let mut timed_out = false;
    loop {
        // Read whatever is there.
        while !eof {
            match reader.read(&mut buf) {
                Ok(0) => eof = true,
                Ok(n) => out.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => eof = true,
            }
        }
        if exited.is_none()
            && let Ok(Some(status)) = child.try_wait()
        {
            // Anything the shell left in its group goes now (the group id cannot have
            // been reused: the group still had the shell in it a moment ago).
            kill_group(pgid);
            exited = Some((status, Instant::now()));
        }
        let now = Instant::now();
        if let Some((_, at)) = exited
            && (eof || now >= at + Duration::from_millis(EXEC_DRAIN_AFTER_EXIT_MS))
        {
            break;
        }
        if exited.is_none() && now >= deadline {
            kill_group(pgid);
            let _ = child.wait();
            timed_out = true;
            // Take what is already in the pipe, without waiting for stragglers.
            drain_now(&mut reader, &mut out, &mut buf);
            break;
        }
        if eof {
            // The pipe closed but the shell runs on: just wait for it.
            std::thread::sleep(
                Duration::from_millis(POLL_SLICE_MS).min(deadline.saturating_duration_since(now)),
            );
            continue;
        }
        let limit = match exited {
            Some((_, at)) => at + Duration::from_millis(EXEC_DRAIN_AFTER_EXIT_MS),
            None => deadline,
        };
        let wait = limit
            .saturating_duration_since(now)
            .min(Duration::from_millis(POLL_SLICE_MS));
        wait_readable(&reader, wait);
    }
    let ending = if timed_out {
        Ending::TimedOut
    } else {
        match exited.map(|(s, _)| s) {
            Some(s) => match (s.code(), s.signal()) {
                (Some(c), _) => Ending::Exited(c),
                (None, Some(sig)) => Ending::Signal(sig),
                (None, None) => Ending::Exited(-1),
            },
            None => Ending::Exited(-1),
        }
    };
    let total_bytes = out.total();
    Ok(Outcome {
        ending,
        output: out.finish(),
        total_bytes,
    })
}

/// SIGKILL every process of the group (errors mean the group is already gone).
fn kill_group(pgid: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// Wait until the pipe has data or is closed, or `wait` passes.
fn wait_readable(reader: &std::io::PipeReader, wait: Duration) {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut fds = [PollFd::new(reader, PollFlags::IN)];
    let ts = Timespec {
        tv_sec: wait.as_secs() as _,
        tv_nsec: wait.subsec_nanos() as _,
    };
    let _ = poll(&mut fds, Some(&ts));
}

/// Read what the pipe holds right now.
fn drain_now(reader: &mut std::io::PipeReader, out: &mut HeadTail, buf: &mut [u8]) {
    // Bounded: a process that escaped the group could write forever.
    for _ in 0..64 {
        match reader.read(buf) {
            Ok(0) => break,
            Ok(n) => out.push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_blocking_plain(s: RunSpec) -> Result<Outcome, String> {
        run_blocking(s, None)
    }

    fn spec(cmd: &str, timeout_ms: u64) -> RunSpec {
        RunSpec {
            command: cmd.to_string(),
            cwd: std::env::temp_dir(),
            env: vec![("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into())],
            timeout: Duration::from_millis(timeout_ms),
            max_output: 4096,
            user: None,
        }
    }

    #[test]
    fn output_and_exit_code_are_reported() {
        let o = run_blocking_plain(spec("echo out; echo err >&2; exit 3", 10_000)).unwrap();
        assert_eq!(o.ending, Ending::Exited(3));
        assert!(
            o.output.contains("out\n") && o.output.contains("err\n"),
            "{o:?}"
        );
    }

    #[test]
    fn the_environment_is_only_what_was_given() {
        // SAFETY-free: reading our own env only; the child must not inherit it.
        let o = run_blocking_plain(spec("env", 10_000)).unwrap();
        let vars: Vec<&str> = o
            .output
            .lines()
            .filter_map(|l| l.split('=').next())
            .filter(|k| !["PATH", "PWD", "SHLVL", "_", "OLDPWD"].contains(k))
            .collect();
        assert!(vars.is_empty(), "unexpected variables: {vars:?}");
    }

    /// Whether a process whose arguments contain `needle` is still alive (not a zombie).
    /// Without `ps` this fails: "no process found" must not pass for "none alive".
    fn alive(needle: &str) -> bool {
        let ps = Command::new("ps")
            .args(["-eo", "stat,args"])
            .output()
            .expect("run ps (procps) to list the processes");
        String::from_utf8_lossy(&ps.stdout)
            .lines()
            .any(|l| l.contains(needle) && !l.trim_start().starts_with('Z'))
    }

    #[test]
    fn a_timeout_kills_the_whole_group() {
        // Unique sleep lengths so this test can find its own processes.
        let a = format!("sleep 7{}", std::process::id());
        let b = format!("sleep 8{}", std::process::id());
        let o = run_blocking_plain(spec(&format!("{a} & {b}"), 300)).unwrap();
        assert_eq!(o.ending, Ending::TimedOut);
        // SIGKILL is delivered at once; the processes vanish as soon as they are reaped.
        let start = Instant::now();
        while (alive(&a) || alive(&b)) && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(&a) && !alive(&b), "a sleep outlived the timeout");
    }

    #[test]
    fn background_children_do_not_hold_the_call() {
        let o = run_blocking_plain(spec("sleep 60 & echo started", 30_000)).unwrap();
        assert_eq!(o.ending, Ending::Exited(0));
        assert!(o.output.contains("started"));
    }

    #[test]
    fn huge_output_keeps_head_and_tail() {
        let o = run_blocking_plain(spec("seq 1 200000", 30_000)).unwrap();
        assert_eq!(o.ending, Ending::Exited(0));
        assert!(o.output.starts_with("1\n2\n3\n"), "{}", &o.output[..20]);
        assert!(o.output.ends_with("199999\n200000\n"));
        assert!(o.output.contains("left out"));
        assert!(o.total_bytes > 1_000_000);
    }

    #[test]
    fn a_missing_folder_is_an_error_not_a_panic() {
        let mut s = spec("true", 1000);
        s.cwd = PathBuf::from("/nonexistent/yc");
        assert!(run_blocking(s, None).is_err());
    }
}
