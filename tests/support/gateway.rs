//! The gateway as a child process for the end-to-end tests: started with a test bot
//! token, its stdout and stderr collected on threads, waited on with a hang guard, and
//! stopped with SIGTERM (checking the shutdown contract when asked) or killed with SIGKILL.
#![allow(dead_code)]

use std::io::Read;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::TempHome;
use super::fake_telegram::FakeTelegram;

/// A realistic token shape: bot id, colon, 35 characters.
pub const TOKEN: &str = "123456789:AAHdQwErTyUiOpAsDfGhJkLzXcVbNm12345";
/// The part of [`TOKEN`] that must never appear in any output.
pub const TOKEN_SECRET_PART: &str = "AAHdQwErTyUiOpAsDfGhJkLzXcVbNm12345";
/// Longest wait for anything the gateway should do (a hang guard, not a timing check).
pub const PATIENCE: Duration = Duration::from_secs(40);
/// Telegram's backoff waits shortened 100 times, where the binary has the test hook (a
/// `cargo test` build): only a speed-up for the tests that pass it, which must pass
/// without it too (a shipped binary ignores the variable). A test whose checks need the
/// short waits uses [`fast_backoff`] instead.
pub const FAST_BACKOFF: (&str, &str) = (super::binary::TEST_BACKOFF_SCALE, "0.01");

/// [`FAST_BACKOFF`] for a test that cannot work without it (fails on a binary without the
/// hook: see `support::hook`).
pub fn fast_backoff() -> (&'static str, &'static str) {
    (super::hook(super::binary::TEST_BACKOFF_SCALE), "0.01")
}
/// How the reply to the barrier's `/help` begins ([`Gateway::barrier`]).
pub const BARRIER_REPLY: &str = "Commands:";

/// A running `yoctoclaw gateway`.
pub struct Gateway {
    child: Child,
    stderr: Arc<Mutex<String>>,
    stdout: Arc<Mutex<String>>,
}

fn collect(mut r: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let out = Arc::new(Mutex::new(String::new()));
    let o = out.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            o.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    out
}

impl Gateway {
    /// Start the gateway in `home` with `TELEGRAM_BOT_TOKEN` = [`TOKEN`] and `RUST_LOG` =
    /// info; `env` is applied after (so it can override either).
    pub fn start(home: &TempHome, env: &[(&str, &str)]) -> Gateway {
        Gateway::spawn(home.cmd(&["gateway"]), env)
    }

    fn spawn(mut cmd: std::process::Command, env: &[(&str, &str)]) -> Gateway {
        cmd.env("TELEGRAM_BOT_TOKEN", TOKEN)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start the gateway");
        let stderr = collect(child.stderr.take().unwrap());
        let stdout = collect(child.stdout.take().unwrap());
        Gateway {
            child,
            stderr,
            stdout,
        }
    }

    /// What the gateway logged so far (stderr).
    pub fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Wait until `cond` holds; panic with the log if the gateway exits or after
    /// [`PATIENCE`].
    pub fn wait_for(&mut self, what: &str, mut cond: impl FnMut() -> bool) {
        let start = Instant::now();
        while !cond() {
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!("gateway exited ({st}) waiting for {what}:\n{}", self.log());
            }
            if start.elapsed() > PATIENCE {
                panic!("timed out waiting for {what}:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait until the log contains `needle`.
    pub fn wait_for_log(&mut self, needle: &str) {
        let log = self.stderr.clone();
        self.wait_for(needle, || log.lock().unwrap().contains(needle));
    }

    /// Proves that nothing more is on its way to the private chat `chat` (absence shown by
    /// an event, not a sleep): sends `/help` from it and waits for the reply. A chat's
    /// turns, its commands, and what a restart resumes or sends again run in one order,
    /// and all its messages leave through one sender (channels/telegram/bot.rs,
    /// recover.rs), so anything still due to the chat went out before that reply. The
    /// reply (beginning [`BARRIER_REPLY`]) is the chat's last message until something new
    /// is sent; the caller leaves it out of what it checks.
    pub fn barrier(&mut self, tg: &FakeTelegram, chat: i64) {
        let before = tg.sent_to(chat).len();
        tg.push_private(chat, "barrier", "/help");
        self.wait_for("the reply to /help (the barrier)", || {
            tg.sent_to(chat)[before..]
                .iter()
                .any(|s| s.text.starts_with(BARRIER_REPLY))
        });
    }

    /// Wait for the gateway to exit by itself within `limit` (killed and a panic after).
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                // Let the reader threads see end of file.
                std::thread::sleep(Duration::from_millis(50));
                return st;
            }
            if start.elapsed() > limit {
                let _ = self.child.kill();
                panic!("the gateway did not exit in {limit:?}:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM; returns the status, how long the exit took, and all output.
    pub fn stop(mut self) -> (ExitStatus, Duration, String) {
        let pid = self.child.id().to_string();
        let started = Instant::now();
        let killed = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill");
        assert!(killed.success());
        let status = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st;
            }
            if started.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!("the gateway ignored SIGTERM:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let took = started.elapsed();
        // Let the reader threads see end of file.
        std::thread::sleep(Duration::from_millis(50));
        let all = format!("{}{}", self.stdout.lock().unwrap(), self.log());
        (status, took, all)
    }

    /// SIGKILL (a power cut, the OOM killer, a watchdog): no shutdown code runs. Returns
    /// all output.
    pub fn kill(mut self) -> String {
        let pid = self.child.id().to_string();
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .expect("run kill");
        assert!(killed.success());
        let _ = self.child.wait();
        std::thread::sleep(Duration::from_millis(50));
        let all = format!("{}{}", self.stdout.lock().unwrap(), self.log());
        all
    }

    /// Stop and check the shutdown contract: status 0, in time (the gateway exits by
    /// `SHUTDOWN_LIMIT_MS`, 1.7 s after the signal; measured loosely: the bound is generous
    /// for a loaded test machine), a "stopped" line, and the token nowhere in the output.
    /// Returns all output.
    pub fn stop_cleanly(self) -> String {
        let (status, took, out) = self.stop();
        assert!(status.success(), "exit status {status}:\n{out}");
        assert!(took < Duration::from_secs(5), "exit took {took:?}:\n{out}");
        assert!(out.contains("gateway: stopped"), "{out}");
        assert!(!out.contains(TOKEN_SECRET_PART), "the token leaked:\n{out}");
        out
    }
}

impl Drop for Gateway {
    /// A test that failed half-way leaves no gateway running.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
