//! How long the Telegram threads wait after a failure, and a stop signal that cuts
//! those waits short at shutdown.
//!
//! Why it exists: the waits are fixed (409 Conflict ≥ 30 s, 429 as Telegram says, 5xx and
//! network errors 1 s → 60 s with jitter, never a tight loop on instant empty answers),
//! and tests must not take minutes. [`Backoff::standard`] holds those values;
//! [`Backoff::scaled`] multiplies every one of them by a factor for tests (in builds with
//! the `test-hooks` feature only, the gateway reads it from the hidden
//! `YOCTOCLAW_TEST_BACKOFF_SCALE` variable; see docs/DECISIONS.md). Release and board
//! builds never shorten them.
//!
//! # Bounds
//! - A scale is clamped to `MIN_SCALE..=1.0`: it can only shorten waits, never lengthen
//!   them, and never to zero.
//! - A `retry_after` from Telegram is honoured up to `MAX_RETRY_AFTER_SECS`; a larger
//!   value waits that long (a bogus hour-long value must not freeze the bot).
//! - [`ErrorDelay`] doubles from `error_min` and stops at `error_max`.
//! - A reply is retried for `reply_window` (`REPLY_RETRY_SECS`), then given up.
//!
//! # Threads
//! Any thread for the waits' values; [`Stop::sleep`] runs on the thread that waits (the
//! poller, the sender, or a worker delivering outside the gateway).
//!
//! # Blocking
//! [`Stop::sleep`] blocks the calling thread (the poller and the sender are dedicated
//! threads); it returns early once [`Stop::set`] is called.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Wait after a 409 Conflict (another poller, or a webhook is set).
pub const CONFLICT_WAIT_SECS: u64 = 30;
/// First wait after a 5xx or network error.
pub const ERROR_MIN_WAIT_SECS: u64 = 1;
/// Longest wait after repeated 5xx or network errors.
pub const ERROR_MAX_WAIT_SECS: u64 = 60;
/// Least time between two `getUpdates` calls that brought nothing new (servers that
/// answer a long poll at once must not become a tight loop).
pub const MIN_POLL_INTERVAL_MS: u64 = 1_000;
/// How long a reply whose sends keep failing transiently (network, 5xx, 429) is
/// retried before it is given up (its turn stays owed: a restart sends it again).
pub const REPLY_RETRY_SECS: u64 = 600;
/// Longest `retry_after` honoured as is.
pub const MAX_RETRY_AFTER_SECS: u64 = 600;
/// Smallest accepted test scale.
pub const MIN_SCALE: f64 = 0.001;
/// The hidden test variable that shortens backoff waits (`test-hooks` builds only).
#[cfg(feature = "test-hooks")]
pub const TEST_BACKOFF_SCALE_ENV: &str = "YOCTOCLAW_TEST_BACKOFF_SCALE";

/// The wait durations of the Telegram threads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// After a 409. Defaults to 30 s.
    pub conflict: Duration,
    /// First wait after a transient error. Defaults to 1 s.
    pub error_min: Duration,
    /// Longest wait after transient errors. Defaults to 60 s.
    pub error_max: Duration,
    /// Least time between polls that brought nothing new. Defaults to 1 s.
    pub min_poll_interval: Duration,
    /// How long a reply is retried. Defaults to `REPLY_RETRY_SECS`.
    pub reply_window: Duration,
    /// Factor applied to Telegram's `retry_after`. Defaults to 1.
    pub scale: f64,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::standard()
    }
}

impl Backoff {
    /// The production values (see the module's documentation).
    pub fn standard() -> Backoff {
        Backoff {
            conflict: Duration::from_secs(CONFLICT_WAIT_SECS),
            error_min: Duration::from_secs(ERROR_MIN_WAIT_SECS),
            error_max: Duration::from_secs(ERROR_MAX_WAIT_SECS),
            min_poll_interval: Duration::from_millis(MIN_POLL_INTERVAL_MS),
            reply_window: Duration::from_secs(REPLY_RETRY_SECS),
            scale: 1.0,
        }
    }

    /// Every wait multiplied by `factor` (clamped to `MIN_SCALE..=1`; NaN means 1).
    pub fn scaled(factor: f64) -> Backoff {
        let f = if factor.is_nan() {
            1.0
        } else {
            factor.clamp(MIN_SCALE, 1.0)
        };
        let s = Backoff::standard();
        Backoff {
            conflict: s.conflict.mul_f64(f),
            error_min: s.error_min.mul_f64(f),
            error_max: s.error_max.mul_f64(f),
            min_poll_interval: s.min_poll_interval.mul_f64(f),
            reply_window: s.reply_window.mul_f64(f),
            scale: f,
        }
    }

    /// The production values; in a `test-hooks` build, shortened by
    /// `YOCTOCLAW_TEST_BACKOFF_SCALE` when it holds a number (silently: the gateway logs it
    /// once at start).
    pub fn from_env() -> Backoff {
        #[cfg(feature = "test-hooks")]
        if let Some(f) = std::env::var(TEST_BACKOFF_SCALE_ENV)
            .ok()
            .and_then(|v| Backoff::parse_scale(&v))
        {
            return Backoff::scaled(f);
        }
        Backoff::standard()
    }

    /// Parse a scale such as `0.01`; `None` when it is not a number.
    pub fn parse_scale(s: &str) -> Option<f64> {
        s.trim().parse::<f64>().ok().filter(|f| f.is_finite())
    }

    /// The wait for a 429 that said `retry_after` seconds (at least one second,
    /// at most `MAX_RETRY_AFTER_SECS`, then scaled).
    pub fn retry_after(&self, secs: u64) -> Duration {
        Duration::from_secs(secs.clamp(1, MAX_RETRY_AFTER_SECS)).mul_f64(self.scale)
    }
}

/// Exponential delay with jitter for a streak of transient failures.
#[derive(Debug, Clone)]
pub struct ErrorDelay {
    min: Duration,
    max: Duration,
    failures: u32,
    rng: crate::runtime::Jitter,
}

impl ErrorDelay {
    pub fn new(b: &Backoff) -> ErrorDelay {
        ErrorDelay {
            min: b.error_min,
            max: b.error_max.max(b.error_min),
            failures: 0,
            rng: crate::runtime::Jitter::from_clock(),
        }
    }

    /// Failures in the current streak.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// The next wait: `min · 2^n` capped at `max`, times a factor in 0.8..1.2, kept
    /// within `min..=max`.
    pub fn next_delay(&mut self) -> Duration {
        let exp = self.failures.min(16);
        self.failures = self.failures.saturating_add(1);
        let base = self
            .min
            .checked_mul(1u32 << exp)
            .unwrap_or(self.max)
            .min(self.max);
        let r = (self.rng.next_u64() % 1_000) as f64 / 1_000.0;
        base.mul_f64(0.8 + 0.4 * r).clamp(self.min, self.max)
    }

    /// The streak ended with a success.
    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

/// A stop signal shared by the gateway and its threads.
#[derive(Clone, Default)]
pub struct Stop {
    inner: Arc<(Mutex<bool>, Condvar)>,
}

impl Stop {
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Ask every holder to stop; wakes sleepers.
    pub fn set(&self) {
        let (m, c) = &*self.inner;
        if let Ok(mut g) = m.lock() {
            *g = true;
        }
        c.notify_all();
    }

    pub fn is_set(&self) -> bool {
        let (m, _) = &*self.inner;
        m.lock().map(|g| *g).unwrap_or(true)
    }

    /// Sleep for `d` unless stopped first. Returns `true` when stopped.
    pub fn sleep(&self, d: Duration) -> bool {
        let (m, c) = &*self.inner;
        let deadline = Instant::now() + d;
        let Ok(mut g) = m.lock() else {
            return true;
        };
        loop {
            if *g {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            match c.wait_timeout(g, deadline - now) {
                Ok((next, _)) => g = next,
                Err(_) => return true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_values_are_the_spec() {
        let b = Backoff::standard();
        assert_eq!(b.conflict, Duration::from_secs(30));
        assert_eq!(b.error_min, Duration::from_secs(1));
        assert_eq!(b.error_max, Duration::from_secs(60));
        assert_eq!(b.min_poll_interval, Duration::from_secs(1));
        assert_eq!(b.reply_window, Duration::from_secs(600));
        assert_eq!(b.retry_after(7), Duration::from_secs(7));
        assert_eq!(b.retry_after(0), Duration::from_secs(1));
        assert_eq!(b.retry_after(u64::MAX), Duration::from_secs(600));
    }

    #[test]
    fn scaling_only_shortens() {
        let b = Backoff::scaled(0.01);
        assert_eq!(b.conflict, Duration::from_millis(300));
        assert_eq!(b.retry_after(2), Duration::from_millis(20));
        assert_eq!(Backoff::scaled(50.0), Backoff::standard());
        assert_eq!(Backoff::scaled(f64::NAN), Backoff::standard());
        assert!(Backoff::scaled(0.0).conflict > Duration::ZERO);
        assert_eq!(Backoff::parse_scale(" 0.5 "), Some(0.5));
        assert_eq!(Backoff::parse_scale("inf"), None);
        assert_eq!(Backoff::parse_scale("x"), None);
    }

    #[test]
    fn error_delay_grows_from_one_to_sixty_seconds() {
        let b = Backoff::standard();
        let mut d = ErrorDelay::new(&b);
        let first = d.next_delay();
        assert!(first >= Duration::from_secs(1) && first <= Duration::from_millis(1200));
        let mut last = first;
        for _ in 0..100 {
            last = d.next_delay();
            assert!(last >= Duration::from_secs(1) && last <= Duration::from_secs(60));
        }
        assert!(last >= Duration::from_secs(48), "{last:?}");
        d.reset();
        assert!(d.next_delay() <= Duration::from_millis(1200));
    }

    #[test]
    fn stop_cuts_a_sleep_short() {
        let s = Stop::new();
        assert!(!s.sleep(Duration::from_millis(1)));
        // A 600 s sleep on another thread, cut short by `set`; the test waits 10 s for
        // its answer, so a sleep that is not cut short fails it instead of hanging it.
        let asleep = |s: Stop| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = tx.send(s.sleep(Duration::from_secs(600)));
            });
            rx
        };
        let rx = asleep(s.clone());
        s.set();
        let cut = rx.recv_timeout(Duration::from_secs(10));
        assert_eq!(cut, Ok(true), "set did not end the sleep");
        assert!(s.is_set());
        // Once set, a sleep returns at once.
        let cut = asleep(s.clone()).recv_timeout(Duration::from_secs(10));
        assert_eq!(cut, Ok(true), "a sleep after set did not return");
    }
}
