//! The retry policy for provider calls: which failures are worth another attempt on the
//! same provider, and how long to wait first.
//!
//! Transient failures (429, 500/502/503/504/529, network errors, timeouts, a stream cut
//! before any text was shown) are retried with exponential backoff and jitter: 1 s, then
//! 2 s (each 50–100 % of that, so many clients do not retry in step), at most
//! `PROVIDER_ATTEMPTS` attempts. A 429 with `Retry-After: N` waits exactly N seconds; a
//! provider asking for more than `RETRY_AFTER_MAX_SECS` is not waited for (the next
//! fallback is tried at once). No attempt starts once `RETRY_BUDGET_SECS` have passed
//! since the first one. Everything else (400, 401, 403, 404, unreadable answers) is not
//! retried: the same request would fail the same way.
//!
//! The waits themselves are `smol::Timer`s awaited by the agent on the executor, never
//! a blocking sleep.
//!
//! # Test hook
//! `YOCTOCLAW_TEST_BACKOFF_MS=N` (hidden, for the integration tests) makes each second
//! of backoff last N milliseconds of real time (clamped to 0..=1000, so it can only
//! shorten waits). Logged delays stay in logical seconds.
//!
//! # Bounds
//! Attempts, single delays, `Retry-After` and the total time per provider are all capped
//! by the constants of `limits`.
//!
//! # Threads
//! Any thread for the policy (pure); the waits are awaited by the agent on the executor
//! thread.

use super::ProviderError;
use crate::limits::{
    PROVIDER_ATTEMPTS, RETRY_AFTER_MAX_SECS, RETRY_BASE_DELAY_MS, RETRY_BUDGET_SECS,
    RETRY_MAX_DELAY_MS,
};
use std::time::Duration;

/// The hidden environment variable that shrinks backoff waits in tests.
pub const TEST_BACKOFF_ENV: &str = "YOCTOCLAW_TEST_BACKOFF_MS";

/// The retry policy. `Backoff::default()` is the production policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Attempts per provider, the first included. Defaults to `PROVIDER_ATTEMPTS`.
    pub attempts: u32,
    /// First delay. Defaults to `RETRY_BASE_DELAY_MS`.
    pub base: Duration,
    /// Longest single delay. Defaults to `RETRY_MAX_DELAY_MS`.
    pub max_delay: Duration,
    /// Longest `Retry-After` honoured. Defaults to `RETRY_AFTER_MAX_SECS`.
    pub retry_after_max: Duration,
    /// No new attempt after this long since the first. Defaults to `RETRY_BUDGET_SECS`.
    pub budget: Duration,
    /// Real milliseconds per logical second of waiting. Defaults to 1000.
    pub ms_per_sec: u64,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            attempts: PROVIDER_ATTEMPTS,
            base: Duration::from_millis(RETRY_BASE_DELAY_MS),
            max_delay: Duration::from_millis(RETRY_MAX_DELAY_MS),
            retry_after_max: Duration::from_secs(RETRY_AFTER_MAX_SECS),
            budget: Duration::from_secs(RETRY_BUDGET_SECS),
            ms_per_sec: 1000,
        }
    }
}

impl Backoff {
    /// The production policy, with the test hook `YOCTOCLAW_TEST_BACKOFF_MS` applied.
    pub fn from_env() -> Backoff {
        let scale = std::env::var(TEST_BACKOFF_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok());
        Backoff {
            ms_per_sec: scale.map_or(1000, |n| n.min(1000)),
            ..Backoff::default()
        }
    }

    /// After failed attempt `attempt` (1-based) with `err`, `elapsed` since the first
    /// attempt on this provider: how long to wait before the next attempt, or `None` to
    /// give up on this provider. `random` is any random number (for the jitter).
    pub fn next_delay(
        &self,
        attempt: u32,
        err: &ProviderError,
        elapsed: Duration,
        random: u64,
    ) -> Option<Duration> {
        if !err.is_retryable() || attempt >= self.attempts {
            return None;
        }
        let delay = match err {
            ProviderError::RateLimited {
                retry_after_secs: Some(s),
                ..
            } => {
                let d = Duration::from_secs(*s);
                if d > self.retry_after_max {
                    return None;
                }
                d
            }
            _ => {
                let doublings = attempt.saturating_sub(1).min(16);
                let full = self
                    .base
                    .saturating_mul(1u32 << doublings)
                    .min(self.max_delay);
                // 50–100 % of the full delay.
                let permille = 500 + random % 501;
                full.mul_f64(permille as f64 / 1000.0)
            }
        };
        if elapsed.saturating_add(delay) > self.budget {
            return None;
        }
        Some(delay)
    }

    /// The real time to sleep for a logical delay (shorter only under the test hook).
    pub fn real(&self, logical: Duration) -> Duration {
        let ms = logical.as_millis().min(u64::MAX as u128) as u64;
        Duration::from_millis(ms.saturating_mul(self.ms_per_sec) / 1000)
    }
}

pub use crate::runtime::Jitter;

#[cfg(test)]
mod tests {
    use super::*;

    fn status(s: u16) -> ProviderError {
        ProviderError::Status {
            status: s,
            detail: String::new(),
        }
    }

    #[test]
    fn transient_errors_back_off_exponentially_with_jitter() {
        let b = Backoff::default();
        let zero = Duration::ZERO;
        let mut j = Jitter(42);
        for code in [500, 502, 503, 504, 529] {
            for _ in 0..200 {
                let d1 = b.next_delay(1, &status(code), zero, j.next_u64()).unwrap();
                assert!(d1 >= Duration::from_millis(500) && d1 <= Duration::from_secs(1));
                let d2 = b.next_delay(2, &status(code), zero, j.next_u64()).unwrap();
                assert!(d2 >= Duration::from_secs(1) && d2 <= Duration::from_secs(2));
                assert_eq!(b.next_delay(3, &status(code), zero, j.next_u64()), None);
            }
        }
        let net = ProviderError::Unreachable {
            host: "h".into(),
            detail: "refused".into(),
        };
        assert!(b.next_delay(1, &net, zero, 1).is_some());
        // Long runs stay under the cap.
        let many = Backoff {
            attempts: 100,
            budget: Duration::from_secs(10_000),
            ..b
        };
        assert!(many.next_delay(60, &status(503), zero, u64::MAX).unwrap() <= b.max_delay);
    }

    #[test]
    fn client_errors_are_not_retried() {
        let b = Backoff::default();
        for code in [400, 401, 403, 404] {
            let e = crate::provider::openai::status_error(
                code,
                "",
                None,
                &crate::config::ProviderConfig::default(),
            );
            assert_eq!(b.next_delay(1, &e, Duration::ZERO, 0), None, "{code}");
        }
        let e = ProviderError::BadResponse { detail: "x".into() };
        assert_eq!(b.next_delay(1, &e, Duration::ZERO, 0), None);
    }

    #[test]
    fn retry_after_is_honoured_up_to_its_cap() {
        let b = Backoff::default();
        let rl = |s| ProviderError::RateLimited {
            retry_after_secs: s,
            detail: String::new(),
        };
        assert_eq!(
            b.next_delay(1, &rl(Some(7)), Duration::ZERO, 0),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            b.next_delay(1, &rl(Some(RETRY_AFTER_MAX_SECS + 1)), Duration::ZERO, 0),
            None
        );
        assert!(b.next_delay(1, &rl(None), Duration::ZERO, 0).is_some());
    }

    #[test]
    fn the_total_budget_stops_retries() {
        let b = Backoff::default();
        let late = b.budget - Duration::from_millis(100);
        assert_eq!(b.next_delay(1, &status(503), late, 0), None);
        assert!(
            b.next_delay(1, &status(503), Duration::from_secs(1), 0)
                .is_some()
        );
    }

    #[test]
    fn the_test_hook_only_shortens() {
        let b = Backoff {
            ms_per_sec: 1,
            ..Backoff::default()
        };
        assert_eq!(b.real(Duration::from_secs(2)), Duration::from_millis(2));
        assert_eq!(
            Backoff::default().real(Duration::from_secs(2)),
            Duration::from_secs(2)
        );
    }
}
