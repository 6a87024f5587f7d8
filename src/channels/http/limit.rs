//! The rate limit per client address: a sliding window of one minute, kept as the
//! counts of the current and the previous minute (the previous one weighted by how much
//! of it the window still covers), so each address costs a few bytes instead of a time
//! per request. A request over `http.rate_per_minute` is refused with the seconds until
//! one would be taken; refused requests are not counted.
//!
//! # Bounds
//! At most `HTTP_RATE_TABLE_ENTRIES` addresses; a new address past it replaces, first,
//! one idle for two minutes (its counts are zero anyway), else the one seen least
//! recently.
//!
//! # Threads
//! Executor thread (owned by the HTTP server); pure over the times it is given.

use crate::limits::HTTP_RATE_TABLE_ENTRIES;
use std::net::IpAddr;

const WINDOW_MS: u64 = 60_000;

#[derive(Debug, Clone, Copy)]
struct Entry {
    ip: IpAddr,
    /// The minute (`now_ms / WINDOW_MS`) `curr` counts.
    minute: u64,
    prev: u64,
    curr: u64,
    /// When it was last seen, in checks (a strict order, unlike milliseconds).
    seen: u64,
}

/// The per-address sliding windows.
#[derive(Debug)]
pub struct RateLimiter {
    per_minute: u64,
    entries: Vec<Entry>,
    /// Checks so far.
    tick: u64,
}

impl RateLimiter {
    pub fn new(per_minute: u64) -> RateLimiter {
        RateLimiter {
            per_minute: per_minute.max(1),
            entries: Vec::new(),
            tick: 0,
        }
    }

    /// Addresses tracked now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Count a request from `ip` at `now_ms` (milliseconds of a monotonic clock), or
    /// refuse it: `Err(seconds)` until a request from it would be taken.
    pub fn check(&mut self, ip: IpAddr, now_ms: u64) -> Result<(), u64> {
        let minute = now_ms / WINDOW_MS;
        let i = match self.entries.iter().position(|e| e.ip == ip) {
            Some(i) => i,
            None => self.insert(ip, minute),
        };
        self.tick += 1;
        let e = &mut self.entries[i];
        e.seen = self.tick;
        if e.minute != minute {
            e.prev = if e.minute + 1 == minute { e.curr } else { 0 };
            e.curr = 0;
            e.minute = minute;
        }
        let into = now_ms % WINDOW_MS;
        let limit = self.per_minute;
        // Taken when prev × (what the window still covers of the last minute) + curr + 1
        // ≤ limit, in milliseconds to stay in integers.
        let weighted = e.prev * (WINDOW_MS - into);
        let room = limit.saturating_sub(e.curr + 1) * WINDOW_MS;
        if e.curr < limit && weighted <= room {
            e.curr += 1;
            return Ok(());
        }
        Err(retry_after(e.prev, e.curr, limit, into))
    }

    /// Make room for `ip` and add it; its index.
    fn insert(&mut self, ip: IpAddr, minute: u64) -> usize {
        if self.entries.len() >= HTTP_RATE_TABLE_ENTRIES {
            self.entries.retain(|e| e.minute + 1 >= minute);
        }
        if self.entries.len() >= HTTP_RATE_TABLE_ENTRIES
            && let Some(oldest) = (0..self.entries.len()).min_by_key(|&i| self.entries[i].seen)
        {
            self.entries.swap_remove(oldest);
        }
        self.entries.push(Entry {
            ip,
            minute,
            prev: 0,
            curr: 0,
            seen: 0,
        });
        self.entries.len() - 1
    }
}

/// Whole seconds (at least 1) until a request would be taken, `into` ms into the current
/// minute, with no more taken meanwhile.
fn retry_after(prev: u64, curr: u64, limit: u64, into: u64) -> u64 {
    let ms = if curr < limit {
        // In this minute, once the previous one's weight has fallen enough:
        // prev × (WINDOW − t) ≤ (limit − curr − 1) × WINDOW.
        let room = (limit - curr - 1) * WINDOW_MS;
        let t = WINDOW_MS - room / prev.max(1);
        t.saturating_sub(into)
    } else {
        // In the next minute, where this minute's count is the previous one's.
        let room = (limit - 1) * WINDOW_MS;
        let t = WINDOW_MS.saturating_sub(room / curr.max(1));
        WINDOW_MS - into + t
    };
    ms.div_ceil(1000).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, n])
    }

    #[test]
    fn a_burst_is_cut_at_the_limit_and_let_in_again_as_the_window_slides() {
        let mut r = RateLimiter::new(10);
        let t0 = 3 * WINDOW_MS; // the start of a minute
        for _ in 0..10 {
            assert_eq!(r.check(ip(1), t0), Ok(()));
        }
        // Ten at the start of a minute: the eleventh when 9 of them remain in the window
        // sliding over the next minute, 6 s into it.
        let wait = r.check(ip(1), t0).unwrap_err();
        assert_eq!(wait, 66);
        // Another address is not affected.
        assert_eq!(r.check(ip(2), t0), Ok(()));
        // Refused requests are not counted, and the wait said is enough, not more.
        assert!(r.check(ip(1), t0 + (wait - 1) * 1000).is_err());
        assert_eq!(r.check(ip(1), t0 + wait * 1000), Ok(()));
        // Half-way through the next minute, half of the last one still counts.
        let mut r = RateLimiter::new(10);
        for _ in 0..10 {
            r.check(ip(1), t0).unwrap();
        }
        let half = t0 + WINDOW_MS + WINDOW_MS / 2;
        for _ in 0..5 {
            assert_eq!(r.check(ip(1), half), Ok(()));
        }
        assert!(r.check(ip(1), half).is_err());
        // Two idle minutes later, everything is forgotten.
        for _ in 0..10 {
            assert_eq!(r.check(ip(1), t0 + 4 * WINDOW_MS), Ok(()));
        }
    }

    #[test]
    fn the_wait_said_is_exact_enough() {
        for limit in [1, 2, 7, 120, 1000] {
            let mut r = RateLimiter::new(limit);
            let mut t = 5 * WINDOW_MS + 1234;
            let mut refused = 0;
            // 200 seconds of a client asking every 100 ms and waiting as told.
            while t < 5 * WINDOW_MS + 200_000 {
                match r.check(ip(1), t) {
                    Ok(()) => t += 100,
                    Err(s) => {
                        refused += 1;
                        assert!(s <= 120, "{limit}: {s}");
                        assert!(
                            r.check(ip(1), t + s * 1000).is_ok(),
                            "{limit} at {t} after {s} s"
                        );
                        t += s * 1000 + 100;
                    }
                }
            }
            assert!(refused > 0 || limit >= 1000, "{limit}");
        }
    }

    #[test]
    fn the_table_is_bounded_and_keeps_the_busy_addresses() {
        let mut r = RateLimiter::new(5);
        let t0 = WINDOW_MS;
        for _ in 0..5 {
            r.check(ip(1), t0).unwrap();
        }
        for n in 0..10 * HTTP_RATE_TABLE_ENTRIES {
            let a = IpAddr::from([192, 168, (n / 256) as u8, (n % 256) as u8]);
            let _ = r.check(a, t0 + 1 + n as u64 / 1000);
            r.check(ip(1), t0 + 1 + n as u64 / 1000).unwrap_err();
            assert!(r.len() <= HTTP_RATE_TABLE_ENTRIES);
        }
    }
}
