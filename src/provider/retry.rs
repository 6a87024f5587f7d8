//! The retry policy for provider calls: which failures are worth another attempt on the
//! same provider, and how long to wait first.
//!
//! Transient failures (429, 500/502/503/504/529, network errors, timeouts, a stream cut
//! before any text was shown) are retried with exponential backoff and jitter: 1 s, then
//! 2 s (each 50–100 % of that, so many clients do not retry in step), at most
//! `PROVIDER_ATTEMPTS` attempts. A retryable status with `Retry-After: N` (a 429, or a
//! 503 saying how long it will be down; RFC 9110 §10.2.3, and what the official OpenAI
//! and Anthropic clients honour on any status) waits exactly N seconds, 0 included; a
//! provider asking for more than `RETRY_AFTER_MAX_SECS` is not waited for (the next
//! fallback is tried at once). No attempt starts once `RETRY_BUDGET_SECS` have passed
//! since the first one. Everything else (400, 401, 403, 404, unreadable answers) is not
//! retried: the same request would fail the same way.
//!
//! The waits themselves are `smol::Timer`s awaited by the agent on the executor, never
//! a blocking sleep. Nothing shortens them but the server's own `Retry-After` (the
//! integration tests' fake servers send one).
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
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            attempts: PROVIDER_ATTEMPTS,
            base: Duration::from_millis(RETRY_BASE_DELAY_MS),
            max_delay: Duration::from_millis(RETRY_MAX_DELAY_MS),
            retry_after_max: Duration::from_secs(RETRY_AFTER_MAX_SECS),
            budget: Duration::from_secs(RETRY_BUDGET_SECS),
        }
    }
}

impl Backoff {
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
            }
            | ProviderError::Status {
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
}

pub use crate::runtime::Jitter;

#[cfg(test)]
mod tests {
    use super::*;

    fn status(s: u16) -> ProviderError {
        ProviderError::Status {
            status: s,
            detail: String::new(),
            retry_after_secs: None,
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
        // A 503 (or any retryable status) that says how long: that long, 0 included.
        let down = |s| ProviderError::Status {
            status: 503,
            detail: String::new(),
            retry_after_secs: s,
        };
        assert_eq!(
            b.next_delay(1, &down(Some(0)), Duration::ZERO, 0),
            Some(Duration::ZERO)
        );
        assert_eq!(
            b.next_delay(2, &down(Some(3)), Duration::ZERO, 0),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            b.next_delay(1, &down(Some(RETRY_AFTER_MAX_SECS + 1)), Duration::ZERO, 0),
            None
        );
        // Not on a status that is not retried.
        let bad = crate::provider::openai::status_error(
            400,
            "",
            Some(0),
            &crate::config::ProviderConfig::default(),
        );
        assert_eq!(b.next_delay(1, &bad, Duration::ZERO, 0), None);
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
}
