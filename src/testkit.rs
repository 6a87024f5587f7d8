//! Helpers shared by the unit tests: a tiny deterministic PRNG for property and
//! fuzz-style tests (no proptest dependency), and the `SKIPPED:` report.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

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

/// Reports a test (or part of one) that cannot run on this machine: `SKIPPED: what (why)`
/// on the process's real stderr, which the test harness does not capture, so the skip
/// shows in a plain `cargo test` run instead of passing silently.
pub fn skipped(what: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {what} ({why})");
}
