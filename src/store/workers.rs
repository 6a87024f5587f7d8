//! Saved worker definitions (`spawn_worker` with `save`, `delegate`, `yoctoclaw workers`):
//! a name, its instructions and the tools it is denied (space-separated names).
//!
//! # Bounds
//! At most `MAX_SAVED_WORKERS` rows: saving a new name past it is refused.
//!
//! # Threads
//! Executor thread (it owns the SQLite connection); one short statement per call.

use super::{Db, StoreError};
use crate::limits::MAX_SAVED_WORKERS;
use rusqlite::{OptionalExtension, params};

/// One saved worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worker {
    pub name: String,
    pub instructions: String,
    /// Tool names the worker is denied, space-separated.
    pub deny: String,
    pub at: i64,
}

impl Db {
    /// Save (or replace) `w`; `Ok(false)` when it is new and `MAX_SAVED_WORKERS` are kept.
    pub fn save_worker(&self, w: &Worker) -> Result<bool, StoreError> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM workers WHERE name != ?1",
            params![w.name],
            |r| r.get(0),
        )?;
        if n as usize >= MAX_SAVED_WORKERS {
            return Ok(false);
        }
        self.conn.execute(
            "INSERT OR REPLACE INTO workers (name, instructions, deny, at) VALUES (?1, ?2, ?3, ?4)",
            params![w.name, w.instructions, w.deny, w.at],
        )?;
        Ok(true)
    }

    /// The saved worker `name`.
    pub fn worker(&self, name: &str) -> Result<Option<Worker>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT name, instructions, deny, at FROM workers WHERE name = ?1",
                params![name],
                row,
            )
            .optional()?)
    }

    /// Every saved worker, by name.
    pub fn workers(&self) -> Result<Vec<Worker>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT name, instructions, deny, at FROM workers ORDER BY name")?;
        let rows = st.query_map([], row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Remove the saved worker `name`; whether there was one.
    pub fn remove_worker(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .execute("DELETE FROM workers WHERE name = ?1", params![name])?
            > 0)
    }
}

fn row(r: &rusqlite::Row) -> rusqlite::Result<Worker> {
    Ok(Worker {
        name: r.get(0)?,
        instructions: r.get(1)?,
        deny: r.get(2)?,
        at: r.get(3)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_workers_are_bounded_replaced_and_removed() {
        let db = Db::open_in_memory().unwrap();
        let w = |name: &str| Worker {
            name: name.into(),
            instructions: "be brief".into(),
            deny: "exec".into(),
            at: 1,
        };
        for i in 0..MAX_SAVED_WORKERS {
            assert!(db.save_worker(&w(&format!("w{i:02}"))).unwrap());
        }
        assert!(!db.save_worker(&w("one_more")).unwrap(), "full");
        let mut again = w("w00");
        again.instructions = "be long".into();
        assert!(db.save_worker(&again).unwrap(), "a replacement fits");
        assert_eq!(db.worker("w00").unwrap(), Some(again));
        assert_eq!(db.workers().unwrap().len(), MAX_SAVED_WORKERS);
        assert!(db.remove_worker("w00").unwrap());
        assert!(!db.remove_worker("w00").unwrap());
        assert_eq!(db.worker("w00").unwrap(), None);
    }
}
