//! Leases in the `state` table: "this period is mine", claimed atomically across
//! processes (the gateway daemon and `yoctoclaw heartbeat` from a system crontab share the
//! database file).
//!
//! A lease is a state row whose value is the Unix second it expires. Claiming reads and
//! writes it in one `Db::write_batch` (`BEGIN IMMEDIATE`), which takes SQLite's write lock first, so of two
//! processes claiming at once one waits (busy timeout) and then sees the other's lease.
//!
//! # Bounds
//! A lease that expires further ahead than `max_ahead_secs` from now is treated as stale
//! (it was written under a wrong clock that has since been corrected), so a clock stepped
//! backwards can block a lease for at most one period.
//!
//! # Threads
//! Executor thread (it owns the SQLite connection): the gateway's, or the main thread of
//! `yoctoclaw heartbeat`.
//!
//! # Blocking
//! Waits up to the database busy timeout for another writer.

use super::{Db, StoreError};
use rusqlite::{OptionalExtension, params};

impl Db {
    /// Claim lease `key` until `until` if it is free at `now` (absent, expired, or
    /// implausibly far ahead). True when this caller now holds it.
    pub fn claim_lease(
        &self,
        key: &str,
        now: i64,
        until: i64,
        max_ahead_secs: i64,
    ) -> Result<bool, StoreError> {
        // `write_batch` begins IMMEDIATE: the write lock first, then the read.
        self.write_batch(|| self.claim_lease_in_tx(key, now, until, max_ahead_secs))
    }

    fn claim_lease_in_tx(
        &self,
        key: &str,
        now: i64,
        until: i64,
        max_ahead_secs: i64,
    ) -> Result<bool, StoreError> {
        let current: Option<String> = self
            .conn
            .prepare_cached("SELECT value FROM state WHERE key = ?1")?
            .query_row(params![key], |r| r.get(0))
            .optional()?;
        let expires = current.and_then(|v| v.trim().parse::<i64>().ok());
        let free = match expires {
            None => true,
            Some(t) => t <= now || t > now.saturating_add(max_ahead_secs),
        };
        if free {
            self.set_state(key, &until.to_string())?;
        }
        Ok(free)
    }

    /// When lease `key` expires, if it was ever claimed.
    pub fn lease_until(&self, key: &str) -> Result<Option<i64>, StoreError> {
        Ok(self
            .get_state(key)?
            .and_then(|v| v.trim().parse::<i64>().ok()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_held_until_it_expires() {
        let db = Db::open_in_memory().unwrap();
        assert!(db.claim_lease("l", 100, 200, 1000).unwrap());
        assert!(!db.claim_lease("l", 150, 250, 1000).unwrap());
        assert!(!db.claim_lease("l", 199, 299, 1000).unwrap());
        assert!(db.claim_lease("l", 200, 300, 1000).unwrap());
        assert_eq!(db.lease_until("l").unwrap(), Some(300));
    }

    #[test]
    fn a_lease_from_a_wrong_clock_is_stale() {
        let db = Db::open_in_memory().unwrap();
        assert!(db.claim_lease("l", 10_000_000, 10_000_100, 1000).unwrap());
        // The clock was stepped back by a lot: the old lease no longer counts.
        assert!(db.claim_lease("l", 100, 200, 1000).unwrap());
        // Garbage in the row is a free lease.
        db.set_state("l", "garbage").unwrap();
        assert!(db.claim_lease("l", 100, 200, 1000).unwrap());
    }

    #[test]
    fn two_connections_claim_once() {
        let dir = std::env::temp_dir().join(format!("yc-lease-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("l.db");
        let _ = std::fs::remove_file(&path);
        let a = Db::open(&path, 64).unwrap();
        let b = Db::open(&path, 64).unwrap();
        assert!(a.claim_lease("hb", 1000, 2000, 5000).unwrap());
        assert!(!b.claim_lease("hb", 1000, 2000, 5000).unwrap());
        drop((a, b));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
