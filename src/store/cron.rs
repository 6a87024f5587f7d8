//! Cron jobs in the `cron_jobs` table: add, list, get, remove, claim a due run, record
//! its outcome.
//!
//! The store does not parse schedules or targets: the `jobs` module validates them before
//! a row is written and treats a row that no longer parses as a failed job.
//!
//! A `next_run` of NULL on an enabled job means "not planned yet": the job was added while
//! the clock was before the build time, and the scheduler plans it once the clock is sane.
//!
//! # Bounds
//! At most `MAX_CRON_JOBS` rows; adding beyond is `StoreError::Full`. Every list is capped
//! at `MAX_CRON_JOBS` rows; `due_cron_jobs` at the `limit` passed. `last_result` is cut to
//! `MAX_CRON_RESULT_BYTES`.
//!
//! # Threads
//! Executor thread (it owns the SQLite connection); each call is one short statement or
//! read, nothing here awaits I/O of its own.

use super::{Db, StoreError};
use rusqlite::{OptionalExtension, Row, params};

/// Most cron jobs stored; `cron add` beyond this is refused.
pub const MAX_CRON_JOBS: usize = 256;
/// Longest `last_result` text kept (cut at a char boundary).
pub const MAX_CRON_RESULT_BYTES: usize = 300;

/// One stored job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronJob {
    pub id: i64,
    /// Schedule text as accepted by `scheduler::schedule::Schedule::parse`.
    pub schedule: String,
    /// A prompt for the agent, or the message itself when `is_message`.
    pub prompt: String,
    pub is_message: bool,
    /// Delivery target text (`telegram:<id>`, `stdout`, empty for log).
    pub target: String,
    pub enabled: bool,
    pub created: i64,
    pub last_run: Option<i64>,
    pub last_result: Option<String>,
    /// Next planned run (Unix seconds); `None` when not planned yet or finished.
    pub next_run: Option<i64>,
}

/// What `add_cron_job` stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCronJob<'a> {
    pub schedule: &'a str,
    pub prompt: &'a str,
    pub is_message: bool,
    pub target: &'a str,
    pub next_run: Option<i64>,
}

const COLUMNS: &str =
    "id, schedule, prompt, is_message, target, enabled, created, last_run, last_result, next_run";

fn job_from_row(r: &Row<'_>) -> rusqlite::Result<CronJob> {
    Ok(CronJob {
        id: r.get(0)?,
        schedule: r.get(1)?,
        prompt: r.get(2)?,
        is_message: r.get::<_, i64>(3)? != 0,
        target: r.get(4)?,
        enabled: r.get::<_, i64>(5)? != 0,
        created: r.get(6)?,
        last_run: r.get(7)?,
        last_result: r.get(8)?,
        next_run: r.get(9)?,
    })
}

/// `s` cut to at most `max` bytes at a char boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("")
}

impl Db {
    /// Store a new, enabled job; returns its id. Refused with `StoreError::Full` when
    /// `MAX_CRON_JOBS` jobs exist.
    pub fn add_cron_job(&self, job: &NewCronJob<'_>, now: i64) -> Result<i64, StoreError> {
        if self.cron_job_count()? >= MAX_CRON_JOBS {
            return Err(StoreError::Full("cron jobs", MAX_CRON_JOBS));
        }
        self.conn
            .prepare_cached(
                "INSERT INTO cron_jobs(schedule, prompt, is_message, target, enabled, created, next_run)
                 VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6)",
            )?
            .execute(params![
                job.schedule,
                job.prompt,
                job.is_message as i64,
                job.target,
                now,
                job.next_run
            ])?;
        Ok(self.conn.last_insert_rowid())
    }

    pub fn cron_job_count(&self) -> Result<usize, StoreError> {
        let n: i64 = self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM cron_jobs")?
            .query_row([], |r| r.get(0))?;
        Ok(n.max(0) as usize)
    }

    /// All jobs by id (at most `MAX_CRON_JOBS`).
    pub fn list_cron_jobs(&self) -> Result<Vec<CronJob>, StoreError> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM cron_jobs ORDER BY id LIMIT {MAX_CRON_JOBS}"
        ))?;
        let rows = stmt.query_map([], job_from_row)?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    pub fn get_cron_job(&self, id: i64) -> Result<Option<CronJob>, StoreError> {
        Ok(self
            .conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM cron_jobs WHERE id = ?1"))?
            .query_row(params![id], job_from_row)
            .optional()?)
    }

    /// Remove a job; false when there was none with that id.
    pub fn remove_cron_job(&self, id: i64) -> Result<bool, StoreError> {
        let n = self
            .conn
            .prepare_cached("DELETE FROM cron_jobs WHERE id = ?1")?
            .execute(params![id])?;
        Ok(n > 0)
    }

    /// Enabled jobs whose next run is at or before `now`, earliest first, at most `limit`.
    pub fn due_cron_jobs(&self, now: i64, limit: usize) -> Result<Vec<CronJob>, StoreError> {
        let limit = limit.min(MAX_CRON_JOBS) as i64;
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM cron_jobs
             WHERE enabled = 1 AND next_run IS NOT NULL AND next_run <= ?1
             ORDER BY next_run, id LIMIT ?2"
        ))?;
        let rows = stmt.query_map(params![now, limit], job_from_row)?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// The earliest next run among enabled jobs.
    pub fn next_cron_due(&self) -> Result<Option<i64>, StoreError> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT MIN(next_run) FROM cron_jobs WHERE enabled = 1 AND next_run IS NOT NULL",
            )?
            .query_row([], |r| r.get::<_, Option<i64>>(0))?)
    }

    /// Take a due run: move the job's next run from `expected_next` to `new_next` (and
    /// disable it when `disable`), only if nobody else did first. True when this caller
    /// owns the run. Done before the job runs, so a crash mid-run never runs it twice.
    pub fn claim_cron_run(
        &self,
        id: i64,
        expected_next: i64,
        new_next: Option<i64>,
        disable: bool,
    ) -> Result<bool, StoreError> {
        let n = self
            .conn
            .prepare_cached(
                "UPDATE cron_jobs SET next_run = ?3, enabled = CASE WHEN ?4 THEN 0 ELSE enabled END
                 WHERE id = ?1 AND enabled = 1 AND next_run = ?2",
            )?
            .execute(params![id, expected_next, new_next, disable])?;
        Ok(n > 0)
    }

    /// Record when a job ran and how it went (the text is cut to `MAX_CRON_RESULT_BYTES`).
    pub fn record_cron_result(&self, id: i64, ran_at: i64, result: &str) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("UPDATE cron_jobs SET last_run = ?2, last_result = ?3 WHERE id = ?1")?
            .execute(params![id, ran_at, cut(result, MAX_CRON_RESULT_BYTES)])?;
        Ok(())
    }

    /// Set a job's next run (planning, re-planning after a clock jump).
    pub fn set_cron_next_run(&self, id: i64, next_run: Option<i64>) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("UPDATE cron_jobs SET next_run = ?2 WHERE id = ?1")?
            .execute(params![id, next_run])?;
        Ok(())
    }

    /// Enable or disable a job.
    pub fn set_cron_enabled(&self, id: i64, enabled: bool) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("UPDATE cron_jobs SET enabled = ?2 WHERE id = ?1")?
            .execute(params![id, enabled as i64])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_job(next: Option<i64>) -> NewCronJob<'static> {
        NewCronJob {
            schedule: "every 15m",
            prompt: "water the plants",
            is_message: true,
            target: "stdout",
            next_run: next,
        }
    }

    #[test]
    fn jobs_round_trip() {
        let db = Db::open_in_memory().unwrap();
        assert!(db.list_cron_jobs().unwrap().is_empty());
        let id = db.add_cron_job(&new_job(Some(1000)), 100).unwrap();
        let j = db.get_cron_job(id).unwrap().unwrap();
        assert_eq!(j.schedule, "every 15m");
        assert_eq!(j.prompt, "water the plants");
        assert!(j.is_message && j.enabled);
        assert_eq!((j.created, j.next_run, j.last_run), (100, Some(1000), None));
        assert_eq!(db.list_cron_jobs().unwrap(), vec![j]);
        db.record_cron_result(id, 1000, "ok").unwrap();
        db.set_cron_next_run(id, Some(1900)).unwrap();
        let j = db.get_cron_job(id).unwrap().unwrap();
        assert_eq!(j.last_run, Some(1000));
        assert_eq!(j.last_result.as_deref(), Some("ok"));
        assert_eq!(j.next_run, Some(1900));
        assert!(db.remove_cron_job(id).unwrap());
        assert!(!db.remove_cron_job(id).unwrap());
        assert_eq!(db.get_cron_job(id).unwrap(), None);
    }

    #[test]
    fn due_jobs_are_enabled_and_past_and_ordered() {
        let db = Db::open_in_memory().unwrap();
        let a = db.add_cron_job(&new_job(Some(500)), 0).unwrap();
        let b = db.add_cron_job(&new_job(Some(300)), 0).unwrap();
        let _later = db.add_cron_job(&new_job(Some(5000)), 0).unwrap();
        let _unplanned = db.add_cron_job(&new_job(None), 0).unwrap();
        let off = db.add_cron_job(&new_job(Some(1)), 0).unwrap();
        db.set_cron_enabled(off, false).unwrap();
        let due: Vec<i64> = db
            .due_cron_jobs(1000, 10)
            .unwrap()
            .iter()
            .map(|j| j.id)
            .collect();
        assert_eq!(due, vec![b, a]);
        assert_eq!(db.due_cron_jobs(1000, 1).unwrap().len(), 1);
        assert_eq!(db.next_cron_due().unwrap(), Some(300));
    }

    #[test]
    fn a_run_is_claimed_once() {
        let db = Db::open_in_memory().unwrap();
        let id = db.add_cron_job(&new_job(Some(500)), 0).unwrap();
        assert!(db.claim_cron_run(id, 500, Some(1400), false).unwrap());
        assert!(!db.claim_cron_run(id, 500, Some(1400), false).unwrap());
        assert!(db.claim_cron_run(id, 1400, None, true).unwrap());
        let j = db.get_cron_job(id).unwrap().unwrap();
        assert!(!j.enabled);
        assert_eq!(j.next_run, None);
        assert!(!db.claim_cron_run(id, 1400, None, true).unwrap());
    }

    #[test]
    fn the_table_is_bounded() {
        let db = Db::open_in_memory().unwrap();
        for _ in 0..MAX_CRON_JOBS {
            db.add_cron_job(&new_job(None), 0).unwrap();
        }
        assert!(matches!(
            db.add_cron_job(&new_job(None), 0),
            Err(StoreError::Full(_, MAX_CRON_JOBS))
        ));
        assert_eq!(db.list_cron_jobs().unwrap().len(), MAX_CRON_JOBS);
    }

    #[test]
    fn long_results_are_cut_at_a_char_boundary() {
        let db = Db::open_in_memory().unwrap();
        let id = db.add_cron_job(&new_job(None), 0).unwrap();
        db.record_cron_result(id, 1, &"é".repeat(1000)).unwrap();
        let r = db.get_cron_job(id).unwrap().unwrap().last_result.unwrap();
        assert!(r.len() <= MAX_CRON_RESULT_BYTES && r.starts_with('é'));
    }
}
