//! Token usage per turn, per session and provider, for `status` and budgets.
//!
//! # Threads
//! Executor thread (it owns the SQLite connection); each call is one short statement or
//! read, nothing here awaits I/O of its own.

use super::{Db, StoreError};
use crate::chat::Usage;
use rusqlite::params;

impl Db {
    pub fn record_usage(
        &self,
        session: &str,
        provider: &str,
        model: &str,
        u: Usage,
        now: i64,
    ) -> Result<(), StoreError> {
        let day = day_of(now);
        // Estimated counts keep their provider but say so (`status` and the totals count
        // them like the others).
        let estimated;
        let provider = if u.estimated {
            estimated = format!("{provider} (estimated)");
            estimated.as_str()
        } else {
            provider
        };
        self.conn
            .prepare_cached(
                "INSERT INTO usage(ts, day, session, provider, model, prompt_tokens, completion_tokens)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                now,
                day,
                session,
                provider,
                model,
                u.prompt_tokens as i64,
                u.completion_tokens as i64
            ])?;
        Ok(())
    }

    /// (prompt, completion) tokens on days whose `YYYY-MM-DD` starts with `prefix`
    /// (a day, or a month `YYYY-MM`).
    pub fn usage_totals(&self, prefix: &str) -> Result<(u64, u64), StoreError> {
        let (p, c): (i64, i64) = self
            .conn
            .prepare_cached(
                "SELECT IFNULL(SUM(prompt_tokens),0), IFNULL(SUM(completion_tokens),0)
                 FROM usage WHERE day LIKE ?1 || '%'",
            )?
            .query_row(params![prefix], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok((p.max(0) as u64, c.max(0) as u64))
    }

    /// The id of the newest usage row (0 when there is none): what a turn records after
    /// it is that turn's ([`Db::usage_since`]).
    pub fn usage_mark(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .prepare_cached("SELECT IFNULL(MAX(id), 0) FROM usage")?
            .query_row([], |r| r.get(0))?)
    }

    /// (prompt, completion) tokens recorded for `session` in rows after `mark`.
    pub fn usage_since(&self, session: &str, mark: i64) -> Result<(u64, u64), StoreError> {
        let (p, c): (i64, i64) = self
            .conn
            .prepare_cached(
                "SELECT IFNULL(SUM(prompt_tokens),0), IFNULL(SUM(completion_tokens),0)
                 FROM usage WHERE id > ?1 AND session = ?2",
            )?
            .query_row(params![mark, session], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok((p.max(0) as u64, c.max(0) as u64))
    }
}

/// `YYYY-MM-DD` (UTC) of a Unix time.
pub fn day_of(secs: i64) -> String {
    let c = crate::time::civil::CivilDateTime::from_unix(secs);
    format!("{:04}-{:02}-{:02}", c.year, c.month, c.day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_sums_by_day_and_month() {
        let db = Db::open_in_memory().unwrap();
        let u = Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
            estimated: false,
        };
        db.record_usage("s", "openai:m", "m", u, 1_764_000_000)
            .unwrap();
        db.record_usage("s", "openai:m", "m", u, 1_764_000_100)
            .unwrap();
        let day = day_of(1_764_000_000);
        assert_eq!(db.usage_totals(&day).unwrap(), (20, 10));
        assert_eq!(db.usage_totals(&day[..7]).unwrap(), (20, 10));
        assert_eq!(db.usage_totals("1999-01").unwrap(), (0, 0));
    }

    #[test]
    fn usage_since_a_mark_counts_one_session_only() {
        let db = Db::open_in_memory().unwrap();
        assert_eq!(db.usage_mark().unwrap(), 0);
        let u = Usage {
            prompt_tokens: 7,
            completion_tokens: 3,
            estimated: false,
        };
        db.record_usage("a", "p", "m", u, 1).unwrap();
        let mark = db.usage_mark().unwrap();
        assert!(mark > 0);
        db.record_usage("a", "p", "m", u, 2).unwrap();
        db.record_usage("b", "p", "m", u, 2).unwrap();
        db.record_usage("a", "p", "m", u, 3).unwrap();
        assert_eq!(db.usage_since("a", mark).unwrap(), (14, 6));
        assert_eq!(db.usage_since("b", mark).unwrap(), (7, 3));
        assert_eq!(db.usage_since("c", 0).unwrap(), (0, 0));
    }
}
