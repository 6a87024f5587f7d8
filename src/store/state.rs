//! Small key/value state that must survive restarts (Telegram offset, last heartbeat…).
//!
//! # Threads
//! Executor thread (it owns the SQLite connection); each call is one short statement or
//! read, nothing here awaits I/O of its own.

use super::{Db, StoreError};
use rusqlite::{OptionalExtension, params};

impl Db {
    pub fn get_state(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .prepare_cached("SELECT value FROM state WHERE key = ?1")?
            .query_row(params![key], |r| r.get(0))
            .optional()?)
    }

    pub fn set_state(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO state(key, value) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            )?
            .execute(params![key, value])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_and_overwrites() {
        let db = Db::open_in_memory().unwrap();
        assert_eq!(db.get_state("k").unwrap(), None);
        db.set_state("k", "1").unwrap();
        db.set_state("k", "2").unwrap();
        assert_eq!(db.get_state("k").unwrap().as_deref(), Some("2"));
    }
}
