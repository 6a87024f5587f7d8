//! The audit trail: one row per tool call (when, where, which tool, its arguments
//! scrubbed, the verdict, how long it ran, how big its result was, its error), written in
//! the same transaction as the tool round it belongs to, so it adds no disk sync.
//!
//! A row that cannot be written (a full disk, `SQLITE_FULL`) costs one log line: the
//! round's messages are committed without it and the turn goes on
//! ([`Db::append_round`]).
//!
//! # Bounds
//! Arguments kept: `MAX_AUDIT_ARGS_BYTES`; an error: one line of `MAX_AUDIT_ERROR_BYTES`;
//! a tool name `MAX_AUDIT_TOOL_BYTES`. Rows: the newest `MAX_AUDIT_ROWS` (older ones are
//! deleted as new ones come), and none older than `memory.audit_days` (retention). A
//! listing returns at most the `limit` asked for, itself at most `MAX_AUDIT_LIST_ROWS`.
//!
//! # Threads
//! Executor thread (it owns the SQLite connection); each call is one short statement or
//! read, nothing here awaits I/O of its own.

use super::{Db, StoreError};
use crate::chat::Message;
use crate::limits::{
    MAX_AUDIT_ARGS_BYTES, MAX_AUDIT_ERROR_BYTES, MAX_AUDIT_LIST_ROWS, MAX_AUDIT_ROWS,
    MAX_AUDIT_TOOL_BYTES,
};
use crate::security::scrub::scrub;
use crate::text::cap_text;
use rusqlite::params;

/// What became of a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It ran (it may still have failed: see the error).
    Run,
    /// A rule refused it: a channel's or the global tool deny list, `read_only` autonomy,
    /// a command full autonomy cannot read, an approval that could not be asked.
    Denied,
    /// The user approved it (`/yes`, `/always`), then it ran.
    Approved,
    /// The user said no, or did not answer in time.
    Refused,
    /// The injection screen stopped it ([`Entry::block`]).
    Blocked,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Run => "run",
            Verdict::Denied => "denied",
            Verdict::Approved => "approved",
            Verdict::Refused => "refused",
            Verdict::Blocked => "blocked",
        }
    }

    pub fn parse(s: &str) -> Option<Verdict> {
        [
            Verdict::Run,
            Verdict::Denied,
            Verdict::Approved,
            Verdict::Refused,
            Verdict::Blocked,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }
}

/// One tool call as the trail keeps it. Made with [`Entry::new`], which scrubs and caps
/// what it is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Unix seconds when the call was made.
    pub at: i64,
    /// The channel kind (`terminal`, `telegram`, …).
    pub channel: String,
    pub session: String,
    /// The tool's name as the model called it (an MCP tool as `SERVER__TOOL`).
    pub tool: String,
    /// The arguments, scrubbed, at most `MAX_AUDIT_ARGS_BYTES`.
    pub args: String,
    pub verdict: Verdict,
    /// How long the tool ran (0 when it did not), in milliseconds.
    pub ms: u64,
    /// Bytes of the result's text before it was capped for history.
    pub bytes: u64,
    /// What went wrong: one line, scrubbed, at most `MAX_AUDIT_ERROR_BYTES`.
    pub error: Option<String>,
}

impl Entry {
    /// A call of `tool` with `args` (scrubbed and capped here), before its verdict is known
    /// (`Run` until set).
    pub fn new(at: i64, channel: &str, session: &str, tool: &str, args: &str) -> Entry {
        let args = scrub(args);
        Entry {
            at,
            channel: channel.to_string(),
            session: session.to_string(),
            tool: cap_text(tool, MAX_AUDIT_TOOL_BYTES),
            args: cap_bytes(&args, MAX_AUDIT_ARGS_BYTES),
            verdict: Verdict::Run,
            ms: 0,
            bytes: 0,
            error: None,
        }
    }

    /// Set the error: its first line, scrubbed, capped.
    pub fn set_error(&mut self, error: &str) {
        let line = error.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        self.error = Some(cap_bytes(&scrub(line.trim()), MAX_AUDIT_ERROR_BYTES));
    }

    /// The injection screen stopped this call (or its result): the verdict becomes
    /// `blocked` and `why` (one line, scrubbed, capped) its error. What the screen calls.
    pub fn block(&mut self, why: &str) {
        self.verdict = Verdict::Blocked;
        self.set_error(why);
    }
}

/// `s` cut to at most `max` bytes on a character boundary, with `…` when cut.
fn cap_bytes(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// What `yoctoclaw audit` asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only rows at or after this time (unix seconds).
    pub since: Option<i64>,
    pub tool: Option<String>,
    pub channel: Option<String>,
    /// At most this many rows (the newest), itself capped by `MAX_AUDIT_LIST_ROWS`.
    pub limit: usize,
}

impl Db {
    /// Append a tool round's messages and its calls' audit rows in one transaction (one
    /// commit). The audit rows go in a savepoint after the messages: when they cannot be
    /// written (a full disk) one line is logged and the messages are committed without
    /// them; when SQLite gave up the whole transaction the messages are written again
    /// alone. Returns whether the audit rows were written.
    pub fn append_round(
        &self,
        session: &str,
        msgs: &[Message],
        audit: &[Entry],
        now: i64,
    ) -> Result<bool, StoreError> {
        let audited = std::cell::Cell::new(false);
        let first = self.write_batch(|| {
            for m in msgs {
                self.insert_message(session, m, now)?;
            }
            match self.audit_in_savepoint(audit) {
                Ok(()) => audited.set(true),
                Err(e) => log::warn!(
                    "the audit trail could not record {} tool call(s) in {session} ({e}); the turn goes on without them",
                    audit.len()
                ),
            }
            Ok(())
        });
        match first {
            Ok(()) => Ok(audited.get()),
            Err(e) if !audited.get() && !audit.is_empty() => {
                log::debug!("writing the round again without its audit rows after: {e}");
                self.write_batch(|| {
                    msgs.iter()
                        .try_for_each(|m| self.insert_message(session, m, now))
                })?;
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    fn audit_in_savepoint(&self, audit: &[Entry]) -> Result<(), StoreError> {
        if audit.is_empty() {
            return Ok(());
        }
        self.exec_cached("SAVEPOINT audit")?;
        let out = self.insert_audit(audit);
        if out.is_err() && !self.conn.is_autocommit() {
            let _ = self.exec_cached("ROLLBACK TO audit");
        }
        if !self.conn.is_autocommit() {
            let _ = self.exec_cached("RELEASE audit");
        }
        out
    }

    fn insert_audit(&self, audit: &[Entry]) -> Result<(), StoreError> {
        #[cfg(feature = "test-hooks")]
        let _full = hooks::FullDisk::arm(self)?;
        let mut stmt = self.conn.prepare_cached(
            "INSERT INTO audit(at, channel, session, tool, args, verdict, ms, bytes, error)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        let mut last = 0;
        for e in audit {
            stmt.execute(params![
                e.at,
                e.channel,
                e.session,
                e.tool,
                e.args,
                e.verdict.as_str(),
                i64::try_from(e.ms).unwrap_or(i64::MAX),
                i64::try_from(e.bytes).unwrap_or(i64::MAX),
                e.error
            ])?;
            last = self.conn.last_insert_rowid();
        }
        // The newest MAX_AUDIT_ROWS stay: a range of rowids, nothing to read when
        // there is nothing to delete.
        self.conn
            .prepare_cached("DELETE FROM audit WHERE id <= ?1")?
            .execute(params![last - MAX_AUDIT_ROWS as i64])?;
        Ok(())
    }

    /// Delete audit rows older than `cutoff` (unix seconds); returns how many.
    pub fn audit_delete_older_than(&self, cutoff: i64) -> Result<usize, StoreError> {
        Ok(self
            .conn
            .prepare_cached("DELETE FROM audit WHERE at < ?1")?
            .execute(params![cutoff])?)
    }

    /// The newest rows matching `f`, oldest first.
    pub fn audit_list(&self, f: &Filter) -> Result<Vec<Entry>, StoreError> {
        let limit = f.limit.min(MAX_AUDIT_LIST_ROWS) as i64;
        let mut stmt = self.conn.prepare_cached(
            "SELECT at, channel, session, tool, args, verdict, ms, bytes, error FROM audit
             WHERE at >= ?1 AND (?2 IS NULL OR tool = ?2) AND (?3 IS NULL OR channel = ?3)
             ORDER BY id DESC LIMIT ?4",
        )?;
        let rows = stmt.query_map(
            params![f.since.unwrap_or(i64::MIN), f.tool, f.channel, limit],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, i64>(6)?,
                    r.get::<_, i64>(7)?,
                    r.get::<_, Option<String>>(8)?,
                ))
            },
        )?;
        let mut out = Vec::new();
        for row in rows {
            let (at, channel, session, tool, args, verdict, ms, bytes, error) = row?;
            let verdict = Verdict::parse(&verdict)
                .ok_or_else(|| StoreError::Corrupt(format!("audit verdict {verdict:?}")))?;
            out.push(Entry {
                at,
                channel,
                session,
                tool,
                args,
                verdict,
                ms: ms.max(0) as u64,
                bytes: bytes.max(0) as u64,
                error,
            });
        }
        out.reverse();
        Ok(out)
    }

    /// (tool calls, of which refused by the user or denied or blocked) at or after
    /// `since` (unix seconds): what `status` shows for today.
    pub fn audit_counts(&self, since: i64) -> Result<(u64, u64), StoreError> {
        let (n, refused): (i64, i64) = self
            .conn
            .prepare_cached(
                "SELECT COUNT(*), IFNULL(SUM(verdict IN ('denied', 'refused', 'blocked')), 0)
                 FROM audit WHERE at >= ?1",
            )?
            .query_row(params![since], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok((n.max(0) as u64, refused.max(0) as u64))
    }
}

/// Test builds only: `YOCTOCLAW_TEST_AUDIT_FULL=1` makes the database full (SQLite's
/// `max_page_count` set to its current size) while audit rows are written, so a real
/// `SQLITE_FULL` meets them.
#[cfg(feature = "test-hooks")]
mod hooks {
    use super::{Db, StoreError};

    pub const AUDIT_FULL_ENV: &str = "YOCTOCLAW_TEST_AUDIT_FULL";

    /// Restores `max_page_count` when dropped.
    pub struct FullDisk<'a> {
        db: &'a Db,
        before: i64,
    }

    impl FullDisk<'_> {
        pub fn arm(db: &Db) -> Result<Option<FullDisk<'_>>, StoreError> {
            if std::env::var_os(AUDIT_FULL_ENV).is_none() {
                return Ok(None);
            }
            let before: i64 = db
                .conn
                .query_row("PRAGMA max_page_count", [], |r| r.get(0))?;
            let pages: i64 = db.conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
            db.conn
                .query_row(&format!("PRAGMA max_page_count={pages}"), [], |_| Ok(()))?;
            Ok(Some(FullDisk { db, before }))
        }
    }

    impl Drop for FullDisk<'_> {
        fn drop(&mut self) {
            let _ = self.db.conn.query_row(
                &format!("PRAGMA max_page_count={}", self.before),
                [],
                |_| Ok(()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::Role;

    fn entry(at: i64, tool: &str, verdict: Verdict) -> Entry {
        let mut e = Entry::new(at, "terminal", "s", tool, r#"{"path":"a"}"#);
        e.verdict = verdict;
        e
    }

    fn count(db: &Db, sql: &str) -> i64 {
        db.conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    /// Commits on `db`'s connection while `f` runs, counted by SQLite's commit hook.
    fn commits(db: &Db, f: impl FnOnce()) -> u32 {
        use std::os::raw::{c_int, c_void};
        unsafe extern "C" fn hook(n: *mut c_void) -> c_int {
            // SAFETY: `n` is the `u32` below, alive while the hook is installed.
            unsafe { *(n as *mut u32) += 1 };
            0
        }
        let mut n = 0u32;
        // SAFETY: the open connection's handle; the counter outlives the hook, which is
        // removed before the counter goes out of scope.
        unsafe {
            rusqlite::ffi::sqlite3_commit_hook(
                db.conn.handle(),
                Some(hook),
                &mut n as *mut u32 as *mut c_void,
            );
        }
        f();
        // SAFETY: as above; no hook afterwards.
        unsafe {
            rusqlite::ffi::sqlite3_commit_hook(db.conn.handle(), None, std::ptr::null_mut());
        }
        n
    }

    #[test]
    fn a_round_with_its_audit_rows_is_one_commit() {
        let db = Db::open_in_memory().unwrap();
        let msgs = [
            Message::new(Role::Assistant, "calling"),
            Message::new(Role::Tool, "result"),
        ];
        let without = commits(&db, || {
            db.append_round("s", &msgs, &[], 1).unwrap();
        });
        let audit = [
            entry(1, "read_file", Verdict::Run),
            entry(1, "exec", Verdict::Denied),
        ];
        let with = commits(&db, || {
            assert!(db.append_round("s", &msgs, &audit, 1).unwrap());
        });
        assert_eq!((without, with), (1, 1));
        assert_eq!(count(&db, "SELECT count(*) FROM messages"), 4);
        let rows = db
            .audit_list(&Filter {
                limit: 10,
                ..Filter::default()
            })
            .unwrap();
        assert_eq!(rows, audit);
    }

    #[test]
    fn a_full_database_keeps_the_round_and_drops_only_the_audit_rows() {
        let db = Db::open_in_memory().unwrap();
        db.append_message("s", &Message::new(Role::User, "hi"), 1)
            .unwrap();
        // Room for the round's messages, none for a row with a page of arguments.
        let pages = count(&db, "PRAGMA page_count");
        db.conn
            .query_row(&format!("PRAGMA max_page_count={}", pages + 2), [], |_| {
                Ok(())
            })
            .unwrap();
        let mut big = Entry::new(1, "terminal", "s", "write_file", "");
        big.args = "x".repeat(MAX_AUDIT_ARGS_BYTES);
        let audit = vec![big; 8];
        let msgs = [Message::new(Role::Tool, "ok")];
        assert!(!db.append_round("s", &msgs, &audit, 1).unwrap());
        assert!(db.conn.is_autocommit());
        assert_eq!(count(&db, "SELECT count(*) FROM messages"), 2);
        assert_eq!(count(&db, "SELECT count(*) FROM audit"), 0);
    }

    #[test]
    fn secrets_are_scrubbed_and_fields_capped() {
        let key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH";
        let mut e = Entry::new(
            0,
            "terminal",
            "s",
            &"t".repeat(500),
            &format!(r#"{{"token":"{key}","pad":"{}"}}"#, "é".repeat(2000)),
        );
        assert!(!e.args.contains(key), "{}", e.args);
        assert!(e.args.len() <= MAX_AUDIT_ARGS_BYTES, "{}", e.args.len());
        assert!(e.tool.len() <= MAX_AUDIT_TOOL_BYTES);
        e.set_error(&format!("\n  failed with {key}\nsecond line"));
        let err = e.error.clone().unwrap();
        assert!(err.starts_with("failed with "), "{err}");
        assert!(!err.contains(key) && !err.contains("second"), "{err}");
        e.block(&"y".repeat(5000));
        assert_eq!(e.verdict, Verdict::Blocked);
        assert!(e.error.unwrap().len() <= MAX_AUDIT_ERROR_BYTES);
    }

    #[test]
    fn filters_retention_and_the_row_cap() {
        let db = Db::open_in_memory().unwrap();
        let mut rows = vec![
            entry(100, "read_file", Verdict::Run),
            entry(200, "exec", Verdict::Refused),
            entry(300, "read_file", Verdict::Approved),
        ];
        rows[1].channel = "telegram".into();
        db.append_round("s", &[], &rows, 0).unwrap();
        let list = |f: Filter| db.audit_list(&Filter { limit: 10, ..f }).unwrap();
        assert_eq!(list(Filter::default()), rows);
        let tool = list(Filter {
            tool: Some("read_file".into()),
            ..Filter::default()
        });
        assert_eq!(tool, [rows[0].clone(), rows[2].clone()]);
        let chan = list(Filter {
            channel: Some("telegram".into()),
            ..Filter::default()
        });
        assert_eq!(chan, [rows[1].clone()]);
        let since = list(Filter {
            since: Some(200),
            ..Filter::default()
        });
        assert_eq!(since, rows[1..]);
        let newest = db
            .audit_list(&Filter {
                limit: 1,
                ..Filter::default()
            })
            .unwrap();
        assert_eq!(newest, rows[2..]);
        assert_eq!(db.audit_counts(150).unwrap(), (2, 1));
        assert_eq!(db.audit_delete_older_than(250).unwrap(), 2);
        assert_eq!(list(Filter::default()), rows[2..]);
        // The cap: the newest MAX_AUDIT_ROWS stay.
        let many: Vec<Entry> = (0..MAX_AUDIT_ROWS + 5)
            .map(|i| entry(1000 + i as i64, "x", Verdict::Run))
            .collect();
        db.append_round("s", &[], &many, 0).unwrap();
        assert_eq!(
            count(&db, "SELECT count(*) FROM audit"),
            MAX_AUDIT_ROWS as i64
        );
        assert_eq!(count(&db, "SELECT min(at) FROM audit"), 1000 + 5);
    }
}
