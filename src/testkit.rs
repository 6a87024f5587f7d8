//! Helpers shared by the tests: a tiny deterministic PRNG for property and fuzz-style
//! tests (no proptest dependency); [`skipped`], the one way a test says it cannot run
//! here; [`pty`], a pseudo-terminal that plays a serial device. The integration tests
//! under `tests/` compile this same file as `support::testkit` (`#[path]` in
//! `tests/support/mod.rs`), so both sides skip alike.
//!
//! # Threads
//! Any thread: the PRNG is pure; [`skipped`] writes one line to stderr; [`pty`] opens a
//! pseudo-terminal (short system calls).

/// xorshift64: fast, deterministic, good enough to generate test inputs.
pub struct XorShift(pub u64);

impl XorShift {
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// An index in `0..n` (`n` > 0).
    pub fn index(&mut self, n: usize) -> usize {
        (self.next() % (n.max(1) as u64)) as usize
    }
}

/// The environment variable that turns every skip into a failure (`.ci/run` sets it: CI
/// provides everything the tests need, so a skip there is a defect of the machine).
pub const NO_SKIP_ENV: &str = "YOCTOCLAW_NO_SKIP";

/// Reports a test (or part of one) that cannot run on this machine; the caller then
/// returns (or leaves the part out). Without `YOCTOCLAW_NO_SKIP=1` it writes one line,
/// `SKIPPED: <test>: <what> (<why>)`, to the process's real stderr, which the test harness
/// does not capture, so every skip shows in a plain `cargo test` run and
/// `cargo test 2>&1 | grep -c '^SKIPPED:'` counts them. With `YOCTOCLAW_NO_SKIP=1` it
/// panics with the same words instead: the test fails rather than passing unchecked.
/// `<test>` is the harness's thread name (the test's path).
pub fn skipped(what: &str, why: &str) {
    use std::io::Write;
    let current = std::thread::current();
    let test = current.name().unwrap_or("a test");
    if std::env::var_os(NO_SKIP_ENV).is_some_and(|v| v == "1") {
        panic!("{test} cannot run here: {what} ({why}); {NO_SKIP_ENV}=1 makes that a failure");
    }
    let _ = writeln!(std::io::stderr(), "SKIPPED: {test}: {what} ({why})");
}

/// A pseudo-terminal pair for a test that plays a serial device: the master (the device's
/// side) and the path of the slave (the port the program opens). `None` only after
/// [`skipped`] said which step failed (`what`: the check that needs it).
pub fn pty(what: &str) -> Option<(rustix::fd::OwnedFd, std::path::PathBuf)> {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let no_pty = |step: &str, e: rustix::io::Errno| {
        skipped(what, &format!("no pseudo-terminal: {step}: {e}"));
        None
    };
    // CLOEXEC: a master inherited by a child would never close.
    let master = match openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC) {
        Ok(m) => m,
        Err(e) => return no_pty("openpt", e),
    };
    if let Err(e) = grantpt(&master) {
        return no_pty("grantpt", e);
    }
    if let Err(e) = unlockpt(&master) {
        return no_pty("unlockpt", e);
    }
    let name = match ptsname(&master, Vec::new()) {
        Ok(n) => n,
        Err(e) => return no_pty("ptsname", e),
    };
    let slave = name.to_str().expect("a pty's name is ASCII");
    Some((master, std::path::PathBuf::from(slave)))
}
