//! The stdio transport: an MCP server as a child process speaking newline-delimited
//! JSON-RPC on its stdin and stdout, its stderr going to our log.
//!
//! The child is spawned by std's `Command` on a worker thread (fork and exec block), in a
//! process group of its own (its pid is the group id, as `exec`'s children), with an
//! environment built from scratch: `PATH`, `HOME`, `LANG` and `TERM` from ours when clean
//! (`security::child_env`), then what the entry names. Nothing else of ours is passed: our
//! environment may hold secrets. Its three pipes are then made non-blocking and driven on
//! the executor thread through smol's reactor (`smol::Async`): no thread per server, and
//! nothing here blocks the executor.
//!
//! Stopping ([`stop`]): stdin closed (a well-behaved server exits on end of input), up to
//! `grace` for it to exit, `SIGTERM` to the group, `grace` again, then `SIGKILL` to the
//! group; the process is reaped, and whatever it left in its group is killed before that
//! (while the unreaped leader keeps the group id from being reused). Dropping a
//! [`ServerProcess`] that was not stopped kills the group and reaps at once. The exit is
//! an event: the process's pidfd (`pidfd_open`, Linux 5.3+) on the reactor, readable once
//! it has exited; where the kernel (or qemu-user) has no `pidfd_open`, it is polled.
//!
//! # Bounds
//! - One stdout line (a message): `MCP_MAX_MESSAGE_BYTES`; a longer line is a fault
//!   (a line that never ends is one), never buffered beyond the bound; the buffer shrinks
//!   back to `READ_CHUNK_BYTES` after a large message.
//! - stderr: each line logged up to `MAX_STDERR_LINE_BYTES`, at most `MCP_STDERR_LOG_BYTES`
//!   per run of the server, the rest read and dropped (one line says so).
//! - Exit waits: one pidfd while a stop is in progress; without one, a poll every
//!   `EXIT_POLL_MS` for as long.
//!
//! # Threads
//! `spawn` runs on a worker thread (`runtime::Workers`); everything else on the executor
//! thread (non-blocking pipes on the reactor, timers).

use super::rpc::Fault;
use crate::limits::{MCP_MAX_MESSAGE_BYTES, MCP_STDERR_LOG_BYTES};
use rustix::process::{Pid, PidfdFlags, Signal, WaitId, WaitIdOptions};
use smol::Async;
use smol::io::{AsyncReadExt, AsyncWriteExt};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// Bytes read from a pipe per read call.
pub const READ_CHUNK_BYTES: usize = 8 * 1024;
/// Longest stderr line logged (the rest of the line is dropped).
pub const MAX_STDERR_LINE_BYTES: usize = 512;
/// How often a stopping server is checked for its exit where there is no pidfd.
pub const EXIT_POLL_MS: u64 = 20;
/// Variables of ours a server is given (when set and clean).
pub const BASE_ENV: &[&str] = &["PATH", "HOME", "LANG", "TERM"];

/// What to run.
#[derive(Clone)]
pub struct Spec {
    pub command: String,
    pub args: Vec<String>,
    /// The whole environment (base, the entry's `env`, `env_from_secrets`).
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
}

impl std::fmt::Debug for Spec {
    /// Variable names only: values may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Spec")
            .field("command", &self.command)
            .field("env", &names)
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

/// A running server process; killed with its group and reaped when dropped unstopped.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    reaped: bool,
}

/// The pipes of a freshly spawned server, still blocking (made non-blocking by
/// [`Pipes::new`] on the executor thread).
pub struct Spawned {
    pub process: ServerProcess,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
}

/// The pipes on the reactor.
pub struct Pipes {
    pub stdin: Async<ChildStdin>,
    pub stdout: Async<ChildStdout>,
    pub stderr: Async<ChildStderr>,
}

impl Pipes {
    pub fn new(s: Spawned) -> std::io::Result<(ServerProcess, Pipes)> {
        let pipes = Pipes {
            stdin: Async::new(s.stdin)?,
            stdout: Async::new(s.stdout)?,
            stderr: Async::new(s.stderr)?,
        };
        Ok((s.process, pipes))
    }
}

/// On a worker thread: start `spec`'s process. The error is one sentence for the user.
pub fn spawn(spec: Spec) -> Result<Spawned, String> {
    if !spec.cwd.is_dir() {
        return Err(format!(
            "its working folder {} does not exist",
            spec.cwd.display()
        ));
    }
    let mut cmd = Command::new(&spec.command);
    cmd.args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&spec.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "the command {:?} was not found: is it installed and on PATH?",
            spec.command
        ),
        std::io::ErrorKind::PermissionDenied => {
            format!(
                "the command {:?} may not be run (permission denied)",
                spec.command
            )
        }
        _ => format!("the command {:?} could not be started ({e})", spec.command),
    })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let mut p = ServerProcess {
            child,
            reaped: false,
        };
        p.kill_now();
        return Err("its pipes could not be set up".into());
    };
    Ok(Spawned {
        process: ServerProcess {
            child,
            reaped: false,
        },
        stdin,
        stdout,
        stderr,
    })
}

impl ServerProcess {
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    fn pid(&self) -> Option<Pid> {
        Pid::from_raw(self.child.id() as i32)
    }

    /// Whether the process has exited (it stays a zombie: not reaped, so its pid and group
    /// id cannot be reused yet).
    fn exited(&self) -> bool {
        let Some(pid) = self.pid() else { return true };
        match rustix::process::waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
        ) {
            Ok(Some(_)) => true,
            Ok(None) => false,
            // ECHILD: already reaped.
            Err(_) => true,
        }
    }

    /// The process's exit as an event on the reactor: its pidfd, readable once it has
    /// exited. `None` where `pidfd_open` is missing (ENOSYS: before Linux 5.3, qemu-user)
    /// or refused; the exit is then polled.
    fn exit_event(&self) -> Option<Async<OwnedFd>> {
        let pid = self.pid()?;
        let fd = rustix::process::pidfd_open(pid, PidfdFlags::empty())
            .map_err(|e| log::debug!("no pidfd for process {pid:?} ({e}): its exit is polled"))
            .ok()?;
        Async::new(fd).ok()
    }

    fn signal_group(&self, sig: Signal) {
        if let Some(pid) = self.pid() {
            let _ = rustix::process::kill_process_group(pid, sig);
        }
    }

    /// Kill what is left of the group, then reap the leader (which has exited, or is
    /// killed here).
    fn finish(&mut self) {
        if self.reaped {
            return;
        }
        self.signal_group(Signal::KILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.reaped = true;
    }

    /// SIGKILL to the group and reap (a blocking wait of the moment a killed process
    /// takes to go).
    pub fn kill_now(&mut self) {
        self.finish();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Wait until `p` exits or `wait` passes; whether it exited. `exit` is its pidfd
/// ([`ServerProcess::exit_event`]); without one (or once it fails) the exit is polled
/// every `EXIT_POLL_MS`.
async fn wait_exit(p: &ServerProcess, mut exit: Option<&Async<OwnedFd>>, wait: Duration) -> bool {
    let until = Instant::now() + wait;
    loop {
        if p.exited() {
            return true;
        }
        let now = Instant::now();
        if now >= until {
            return false;
        }
        match exit {
            Some(fd) => {
                let woke = smol::future::or(async { Some(fd.readable().await) }, async {
                    smol::Timer::at(until).await;
                    None
                })
                .await;
                if let Some(Err(e)) = woke {
                    log::debug!("a pidfd failed ({e}): the exit is polled");
                    exit = None;
                }
            }
            None => {
                let tick = now + Duration::from_millis(EXIT_POLL_MS);
                smol::Timer::at(tick.min(until)).await;
            }
        }
    }
}

/// Stop `p` (its stdin already closed by the caller): up to `grace` for it to exit,
/// SIGTERM to its group, `grace` again, SIGKILL to the group; reaped. How it ended, for
/// the log.
pub async fn stop(mut p: ServerProcess, grace: Duration) -> &'static str {
    let exit = p.exit_event();
    let how = if wait_exit(&p, exit.as_ref(), grace).await {
        "exited"
    } else {
        p.signal_group(Signal::TERM);
        if wait_exit(&p, exit.as_ref(), grace).await {
            "stopped by SIGTERM"
        } else {
            "killed by SIGKILL"
        }
    };
    p.finish();
    how
}

/// Write one message and its newline.
pub async fn write_line(stdin: &mut Async<ChildStdin>, line: &str) -> std::io::Result<()> {
    stdin.write_all(line.as_bytes()).await?;
    stdin.write_all(b"\n").await?;
    stdin.flush().await
}

/// Reads newline-delimited messages from a server's stdout, each at most
/// `MCP_MAX_MESSAGE_BYTES`.
pub struct LineReader<R> {
    src: R,
    buf: Vec<u8>,
    /// Bytes of `buf` already searched for a newline.
    scanned: usize,
}

/// What ended the reading.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadEnd {
    /// End of output (the server closed stdout or exited).
    Eof,
    /// A read error (a secret-free description).
    Io(String),
    /// Broke the framing: a line over the bound, or not UTF-8.
    Fault(Fault),
}

impl<R: smol::io::AsyncRead + Unpin> LineReader<R> {
    pub fn new(src: R) -> Self {
        LineReader {
            src,
            buf: Vec::with_capacity(READ_CHUNK_BYTES),
            scanned: 0,
        }
    }

    /// The next non-empty line, without its newline (and `\r`).
    pub async fn next_line(&mut self) -> Result<String, ReadEnd> {
        loop {
            if let Some(i) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') {
                let end = self.scanned + i;
                let mut line: Vec<u8> = self.buf.drain(..=end).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.scanned = 0;
                if self.buf.is_empty() && self.buf.capacity() > 4 * READ_CHUNK_BYTES {
                    self.buf = Vec::with_capacity(READ_CHUNK_BYTES);
                }
                if line.len() > MCP_MAX_MESSAGE_BYTES {
                    return Err(ReadEnd::Fault(Fault::TooLarge));
                }
                if line.iter().all(|b| b.is_ascii_whitespace()) {
                    continue;
                }
                return String::from_utf8(line).map_err(|_| ReadEnd::Fault(Fault::NotJson));
            }
            self.scanned = self.buf.len();
            if self.buf.len() > MCP_MAX_MESSAGE_BYTES {
                return Err(ReadEnd::Fault(Fault::EndlessLine));
            }
            let old = self.buf.len();
            self.buf.resize(old + READ_CHUNK_BYTES, 0);
            let n = match self.src.read(&mut self.buf[old..]).await {
                Ok(n) => n,
                Err(e) => {
                    self.buf.truncate(old);
                    return Err(ReadEnd::Io(e.kind().to_string()));
                }
            };
            self.buf.truncate(old + n);
            if n == 0 {
                return Err(ReadEnd::Eof);
            }
        }
    }
}

/// Read a server's stderr until it ends, logging its lines as `mcp NAME: ...` (the
/// logger scrubs them) within `MCP_STDERR_LOG_BYTES`; the rest is read and dropped.
pub async fn log_stderr<R: smol::io::AsyncRead + Unpin>(name: &str, mut src: R) {
    let mut buf = vec![0u8; READ_CHUNK_BYTES];
    let mut line: Vec<u8> = Vec::new();
    let mut logged = 0usize;
    let mut told = false;
    let emit = |line: &mut Vec<u8>, logged: &mut usize, told: &mut bool| {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end();
        if !text.is_empty() {
            if *logged < MCP_STDERR_LOG_BYTES {
                *logged += text.len();
                log::info!("mcp {name}: {text}");
            } else if !*told {
                *told = true;
                log::info!(
                    "mcp {name}: more on stderr, not logged (over {} KiB this run)",
                    MCP_STDERR_LOG_BYTES / 1024
                );
            }
        }
        line.clear();
    };
    loop {
        let n = match src.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                emit(&mut line, &mut logged, &mut told);
            } else if line.len() < MAX_STDERR_LINE_BYTES {
                line.push(b);
            }
        }
    }
    emit(&mut line, &mut logged, &mut told);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> Vec<Result<String, ReadEnd>> {
        smol::block_on(async {
            let mut r = LineReader::new(input);
            let mut out = Vec::new();
            loop {
                let l = r.next_line().await;
                let end = l.is_err();
                out.push(l);
                if end {
                    return out;
                }
            }
        })
    }

    #[test]
    fn lines_are_split_and_bounded() {
        assert_eq!(
            lines(b"{\"a\":1}\r\n\n  \n{\"b\":2}\n"),
            vec![
                Ok("{\"a\":1}".to_string()),
                Ok("{\"b\":2}".to_string()),
                Err(ReadEnd::Eof)
            ]
        );
        let endless = vec![b'x'; MCP_MAX_MESSAGE_BYTES + 2 * READ_CHUNK_BYTES];
        assert_eq!(
            lines(&endless),
            vec![Err(ReadEnd::Fault(Fault::EndlessLine))]
        );
        let mut long = vec![b'x'; MCP_MAX_MESSAGE_BYTES + 1];
        long.push(b'\n');
        assert_eq!(lines(&long)[0], Err(ReadEnd::Fault(Fault::TooLarge)));
        assert_eq!(lines(b"\xff\xfe\n")[0], Err(ReadEnd::Fault(Fault::NotJson)));
    }

    /// Whether `fd` is readable now (a pidfd: its process has exited).
    fn readable_now(fd: &Async<OwnedFd>) -> bool {
        let mut fds = [rustix::event::PollFd::new(
            fd.get_ref(),
            rustix::event::PollFlags::IN,
        )];
        let zero = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        rustix::event::poll(&mut fds, Some(&zero)).unwrap() == 1
    }

    #[test]
    fn the_exit_is_an_event_on_the_pidfd_and_polled_without_one() {
        let ten_s = Duration::from_secs(10);
        smol::block_on(async {
            for with_pidfd in [true, false] {
                // `cat` cannot exit before its stdin closes.
                let s = spawn(Spec {
                    command: "cat".into(),
                    args: vec![],
                    env: vec![("PATH".into(), "/usr/bin:/bin".into())],
                    cwd: std::env::temp_dir(),
                })
                .unwrap();
                let p = s.process;
                let exit = if with_pidfd {
                    match p.exit_event() {
                        Some(fd) => Some(fd),
                        None => {
                            crate::testkit::skipped("the pidfd path", "no pidfd_open here");
                            continue;
                        }
                    }
                } else {
                    None
                };
                assert!(!wait_exit(&p, exit.as_ref(), Duration::from_millis(50)).await);
                if let Some(fd) = &exit {
                    assert!(!readable_now(fd), "readable before the exit");
                }
                drop(s.stdin);
                assert!(wait_exit(&p, exit.as_ref(), ten_s).await, "{with_pidfd}");
                if let Some(fd) = &exit {
                    assert!(readable_now(fd), "the exit is the pidfd's event");
                }
                assert_eq!(stop(p, ten_s).await, "exited");
            }
        });
    }

    #[test]
    fn a_missing_command_is_one_sentence() {
        let e = spawn(Spec {
            command: "yc-no-such-command-xyz".into(),
            args: vec![],
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            cwd: std::env::temp_dir(),
        })
        .err()
        .unwrap();
        assert!(e.contains("was not found"), "{e}");
    }
}
