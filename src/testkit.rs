//! Helpers shared by the tests: a tiny deterministic PRNG for property and fuzz-style
//! tests (no proptest dependency), and [`skipped`], the one way a test says it cannot run
//! here. The integration tests under `tests/` compile this same file as
//! `support::testkit` (`#[path]` in `tests/support/mod.rs`), so both sides skip alike.
//!
//! # Threads
//! Any thread: pure functions over their arguments; [`skipped`] writes one line to stderr.

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
