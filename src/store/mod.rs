//! The one SQLite file: schema and migrations, pragmas for SD cards and small RAM, and the
//! typed stores on top (session history, key/value state, the Telegram inbox and owed
//! answers, the audit trail of tool calls; memory, cron and usage tables are created here
//! too and used by their modules).
//!
//! # Bounds
//! Page cache `memory.cache_kib` (default `DB_CACHE_KIB`), no lookaside allocator, no
//! mmap, temp store on file, `DB_STATEMENT_CACHE` prepared statements, 1 KiB pages in a new
//! file (`DB_PAGE_SIZE`), a WAL auto-checkpoint every `WAL_CHECKPOINT_BYTES` (1 MiB) of
//! pages and the WAL file truncated to that size after checkpoints.
//!
//! # Threads
//! The thread that owns the `Db` (it is not shared between threads): the executor thread in
//! the gateway and in the commands that run turns, the main thread in one-shot commands
//! (`status`, `memory`, `migrate`, `doctor`).
//!
//! # Blocking
//! Calls block the calling thread for the length of one small statement (SQLite with
//! `synchronous=FULL` waits for the SD card on commit). The executor thread owns the
//! connection; see docs/DECISIONS.md for why that is acceptable here.

pub mod audit;
pub mod cron;
pub mod fts_query;
pub mod history;
pub mod inbox;
pub mod lease;
pub mod memory;
pub mod snippet;
pub mod sqlite_alloc;
pub mod state;
pub mod summary;
pub mod usage;
mod vocab;
pub mod workers;

use crate::limits::{DB_BUSY_TIMEOUT_MS, DB_STATEMENT_CACHE};
use rusqlite::Connection;
use rusqlite::config::DbConfig;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Current schema version (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 4;

/// Page size of a new database file, in bytes. Every commit writes each page it changed
/// to the WAL whole, and a turn changes a few rows on a handful of pages (history, its
/// index, the session, usage, state): with SQLite's default 4 KiB pages that was ~50 KB
/// written to the SD card per message, with 1 KiB pages it is a quarter
/// (docs/DECISIONS.md, 92). A file created with another size keeps it (changing it needs
/// a VACUUM outside WAL mode).
pub const DB_PAGE_SIZE: u32 = 1024;

/// The WAL is copied back into the database file (a checkpoint: two disk syncs and every
/// page changed since the last one rewritten) once it holds this many bytes of pages:
/// 1,024 pages of a new database, 256 of one with 4 KiB pages. Also the size the WAL file
/// is cut back to after a checkpoint (`journal_size_limit`).
pub const WAL_CHECKPOINT_BYTES: i64 = 1024 * 1024;

#[derive(Debug)]
pub enum StoreError {
    /// The database could not be opened or created.
    Open(PathBuf, rusqlite::Error),
    /// The file was written by a newer yoctoclaw.
    TooNew(i64),
    /// A statement failed.
    Sql(rusqlite::Error),
    /// Stored data could not be decoded.
    Corrupt(String),
    /// A bounded table is full (what, its limit).
    Full(&'static str, usize),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Open(p, e) => write!(
                f,
                "cannot open the database {}: {e} (check the folder exists and is writable)",
                p.display()
            ),
            StoreError::TooNew(v) => write!(
                f,
                "the database has schema version {v}, newer than this yoctoclaw ({SCHEMA_VERSION}): upgrade yoctoclaw"
            ),
            StoreError::Sql(e) => write!(f, "database error: {e}"),
            StoreError::Corrupt(what) => write!(f, "database holds bad data: {what}"),
            StoreError::Full(what, max) => {
                write!(f, "too many {what}: the limit is {max}, remove some first")
            }
        }
    }
}

impl std::error::Error for StoreError {}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sql(e)
    }
}

/// An open database.
pub struct Db {
    pub conn: Connection,
    /// Depth of [`Db::deferred_sync`] calls in progress (0: every commit waits for the disk).
    deferred: std::cell::Cell<u32>,
    /// The memory index's words (`vocab`), read when a search needs them.
    vocab: std::cell::RefCell<vocab::VocabCache>,
}

const MIGRATIONS: &[&str] = &[
    // 1: everything the first release needs.
    r#"
CREATE TABLE state (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE sessions (
    id        TEXT PRIMARY KEY,
    created   INTEGER NOT NULL,
    updated   INTEGER NOT NULL,
    -- messages with id <= start_id belong to an earlier conversation (/new) or were
    -- compacted into `summary`
    start_id  INTEGER NOT NULL DEFAULT 0,
    -- the model's summary of the compacted messages of the current conversation
    summary   TEXT
);

-- Plain rowid ids (no AUTOINCREMENT, whose sqlite_sequence row was one more page
-- written per message): messages are never deleted, so ids are never reused either way.
-- Files made before keep AUTOINCREMENT; both behave the same.
CREATE TABLE messages (
    id           INTEGER PRIMARY KEY,
    session      TEXT NOT NULL,
    role         TEXT NOT NULL,
    content      TEXT NOT NULL DEFAULT '',
    tool_calls   TEXT,
    tool_call_id TEXT,
    created      INTEGER NOT NULL
);
CREATE INDEX messages_by_session ON messages(session, id);

CREATE TABLE memories (
    id        INTEGER PRIMARY KEY,
    key       TEXT NOT NULL UNIQUE,
    text      TEXT NOT NULL,
    category  TEXT NOT NULL DEFAULT 'core',
    created   INTEGER NOT NULL,
    updated   INTEGER NOT NULL
);
CREATE INDEX memories_by_category ON memories(category, updated);
CREATE VIRTUAL TABLE memories_fts USING fts5(
    key, text, content='memories', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2'
);
-- Index leaves of at most ~900 bytes: each fits one 1 KiB database page (DB_PAGE_SIZE)
-- without an overflow page (the default, 1,000, would not).
INSERT INTO memories_fts(memories_fts, rank) VALUES ('pgsz', 900);
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, key, text) VALUES (new.id, new.key, new.text);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, text) VALUES ('delete', old.id, old.key, old.text);
END;
CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, text) VALUES ('delete', old.id, old.key, old.text);
    INSERT INTO memories_fts(rowid, key, text) VALUES (new.id, new.key, new.text);
END;

CREATE TABLE cron_jobs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    schedule    TEXT NOT NULL,
    prompt      TEXT NOT NULL,
    is_message  INTEGER NOT NULL DEFAULT 0,
    target      TEXT NOT NULL DEFAULT '',
    enabled     INTEGER NOT NULL DEFAULT 1,
    created     INTEGER NOT NULL,
    last_run    INTEGER,
    last_result TEXT,
    next_run    INTEGER
);

CREATE TABLE usage (
    id                INTEGER PRIMARY KEY,
    ts                INTEGER NOT NULL,
    day               TEXT NOT NULL,
    session           TEXT NOT NULL,
    provider          TEXT NOT NULL,
    model             TEXT NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL
);
"#,
    // 2: Telegram messages waiting for a turn, and turns owed a delivered answer
    // (`inbox`; docs/DECISIONS.md 88). No index: both tables stay small.
    r#"
CREATE TABLE inbox (
    id       INTEGER PRIMARY KEY,
    chat_id  INTEGER NOT NULL,
    reply_to INTEGER,
    cmd      INTEGER NOT NULL,
    at       INTEGER NOT NULL,
    text     TEXT NOT NULL
);
CREATE TABLE replies (
    -- the id of the turn's user message
    id       INTEGER PRIMARY KEY,
    session  TEXT NOT NULL,
    reply_to INTEGER,
    at       INTEGER NOT NULL
);
"#,
    // 3: the audit trail, one row per tool call (`audit`). No index: rows are read newest
    // first by rowid and the table is capped (MAX_AUDIT_ROWS), and an index would be one
    // more page written with every round.
    r#"
CREATE TABLE audit (
    id      INTEGER PRIMARY KEY,
    at      INTEGER NOT NULL,
    channel TEXT NOT NULL,
    session TEXT NOT NULL,
    tool    TEXT NOT NULL,
    args    TEXT NOT NULL,
    verdict TEXT NOT NULL,
    ms      INTEGER NOT NULL,
    bytes   INTEGER NOT NULL,
    error   TEXT
);
"#,
    // 4: saved worker definitions (`workers`), at most MAX_SAVED_WORKERS rows.
    r#"
CREATE TABLE workers (
    name         TEXT PRIMARY KEY,
    instructions TEXT NOT NULL,
    deny         TEXT NOT NULL,
    at           INTEGER NOT NULL
);
"#,
];

impl Db {
    /// Open (creating with mode 0600 if needed) and migrate.
    pub fn open(path: &Path, cache_kib: u64) -> Result<Db, StoreError> {
        create_private(path).map_err(|e| {
            StoreError::Open(
                path.to_path_buf(),
                rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                    Some(e.to_string()),
                ),
            )
        })?;
        sqlite_alloc::install();
        let conn = Connection::open(path).map_err(|e| StoreError::Open(path.to_path_buf(), e))?;
        Self::setup(conn, cache_kib)
    }

    /// A private in-memory database (tests, benchmarks).
    pub fn open_in_memory() -> Result<Db, StoreError> {
        sqlite_alloc::install();
        let conn = Connection::open_in_memory()
            .map_err(|e| StoreError::Open(PathBuf::from(":memory:"), e))?;
        Self::setup(conn, 256)
    }

    fn setup(conn: Connection, cache_kib: u64) -> Result<Db, StoreError> {
        disable_lookaside(&conn);
        conn.busy_timeout(Duration::from_millis(DB_BUSY_TIMEOUT_MS))?;
        conn.set_prepared_statement_cache_capacity(DB_STATEMENT_CACHE);
        // Plans must not depend on bound values: otherwise a cached statement whose
        // `LIMIT ?` gets a new value is parsed and planned again on every step (SQLite
        // inlines bound LIMITs), which was a fifth of the gateway's CPU per message.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        // Takes effect only on a file with no pages yet (a new database).
        conn.execute_batch(&format!("PRAGMA page_size={DB_PAGE_SIZE}"))?;
        set_wal(&conn)?;
        let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        let checkpoint_pages = WAL_CHECKPOINT_BYTES / page_size.max(512);
        conn.execute_batch(&format!(
            "PRAGMA cache_size=-{cache_kib};
             PRAGMA mmap_size=0;
             PRAGMA temp_store=FILE;
             PRAGMA synchronous=FULL;
             PRAGMA foreign_keys=ON;
             PRAGMA wal_autocheckpoint={checkpoint_pages};
             PRAGMA journal_size_limit={WAL_CHECKPOINT_BYTES};"
        ))?;
        let db = Db {
            conn,
            deferred: std::cell::Cell::new(0),
            vocab: Default::default(),
        };
        db.migrate()?;
        // Files made before had an index on usage(day) that no query can use (the day is
        // matched with LIKE): one more page written with every usage row. Best effort.
        if let Err(e) = db.conn.execute_batch("DROP INDEX IF EXISTS usage_by_day") {
            log::debug!("cannot drop the unused usage index: {e}");
        }
        // The memory index's word list (`vocab`): schema only, nothing stored. Made here
        // rather than in a migration so an older yoctoclaw still opens the file; without
        // it (a read-only file) searches work as before, only slower.
        // Looked up first: a file that has it is not written to when opened.
        let has_vocab = db
            .conn
            .query_row(
                "SELECT 1 FROM sqlite_schema WHERE name = 'memories_vocab'",
                [],
                |_| Ok(()),
            )
            .is_ok();
        if !has_vocab
            && let Err(e) = db.conn.execute_batch(
                "CREATE VIRTUAL TABLE memories_vocab USING fts5vocab(memories_fts, row)",
            )
        {
            log::debug!("cannot make the memory word list: {e}");
        }
        Ok(db)
    }

    /// Run `f` with commits that do not wait for the disk (`synchronous=NORMAL`).
    ///
    /// What `f` writes survives a crash of the process at once (it is in the WAL, in the
    /// kernel's hands), and a power cut from the next ordinary commit on: that commit's
    /// sync of the WAL file covers every frame before it. The agent writes a turn's user
    /// message, tool rounds and token usage this way and its final answer ordinarily, so
    /// a turn costs one disk sync instead of six (docs/DECISIONS.md, 59).
    pub fn deferred_sync<T>(&self, f: impl FnOnce() -> T) -> T {
        let depth = self.deferred.get();
        if depth == 0 {
            self.set_synchronous("NORMAL");
        }
        self.deferred.set(depth + 1);
        let out = f();
        self.deferred.set(depth);
        if depth == 0 {
            self.set_synchronous("FULL");
        }
        out
    }

    /// Run `f` in one read transaction (one snapshot, one set of file locks for all its
    /// statements), or inside the transaction already open. Never across an `.await`:
    /// every session shares this connection.
    pub fn read_batch<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.batch("BEGIN DEFERRED", f)
    }

    /// Run `f` in one write transaction (one commit for all it writes; rolled back when
    /// it fails), or inside the transaction already open. Never across an `.await`.
    pub fn write_batch<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.batch("BEGIN IMMEDIATE", f)
    }

    fn batch<T, E: From<StoreError>>(
        &self,
        begin: &'static str,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        if !self.conn.is_autocommit() {
            return f();
        }
        self.exec_cached(begin)?;
        let out = f();
        let end = if out.is_ok() { "COMMIT" } else { "ROLLBACK" };
        if let Err(e) = self.exec_cached(end) {
            if !self.conn.is_autocommit() {
                let _ = self.exec_cached("ROLLBACK");
            }
            return Err(e.into());
        }
        out
    }

    fn exec_cached(&self, sql: &str) -> Result<(), StoreError> {
        self.conn.prepare_cached(sql)?.execute([])?;
        Ok(())
    }

    /// Free what SQLite holds that it can read back (unused page-cache pages, lookaside):
    /// the gateway calls it when it trims the heap, so an idle daemon does not keep the
    /// pages that start-up or the last burst of messages read.
    pub fn release_memory(&self) {
        if let Err(e) = self.exec_cached("PRAGMA shrink_memory") {
            log::debug!("PRAGMA shrink_memory failed: {e}");
        }
    }

    fn set_synchronous(&self, level: &'static str) {
        let sql = match level {
            "NORMAL" => "PRAGMA synchronous=NORMAL",
            _ => "PRAGMA synchronous=FULL",
        };
        if let Err(e) = self.exec_cached(sql) {
            log::warn!("cannot set {sql}: {e}");
        }
    }

    fn migrate(&self) -> Result<(), StoreError> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > MIGRATIONS.len() as i64 {
            return Err(StoreError::TooNew(version));
        }
        if version == MIGRATIONS.len() as i64 {
            return Ok(());
        }
        // Take the write lock before reading the version again: two processes opening a
        // new file at once (daemon + crontab) must not both run a migration.
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        match self.migrate_locked() {
            Ok(()) => Ok(self.conn.execute_batch("COMMIT")?),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    fn migrate_locked(&self) -> Result<(), StoreError> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > MIGRATIONS.len() as i64 {
            return Err(StoreError::TooNew(version));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
            self.conn.execute_batch(sql)?;
            self.conn
                .execute_batch(&format!("PRAGMA user_version={}", i + 1))?;
            log::info!("database migrated to schema version {}", i + 1);
        }
        Ok(())
    }

    pub fn schema_version(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }
}

/// Turn off SQLite's per-connection lookaside allocator (by default 100 slots of 1,200
/// bytes, allocated at open): the footprint soak measured 45 KiB less idle RSS without
/// it and no measurable CPU change (docs/DECISIONS.md). Best effort: SQLite refuses
/// only while lookaside memory is in use, and then nothing changes.
fn disable_lookaside(conn: &Connection) {
    use rusqlite::ffi;
    // SAFETY: `handle()` is the open connection owned by `conn`, used on this thread only
    // for the duration of the call. SQLITE_DBCONFIG_LOOKASIDE takes (void*, int, int):
    // a null buffer and zero sizes, passed with the C types the variadic call expects.
    unsafe {
        let db = conn.handle();
        let _ = ffi::sqlite3_db_config(
            db,
            ffi::SQLITE_DBCONFIG_LOOKASIDE,
            std::ptr::null_mut::<std::ffi::c_void>(),
            0 as std::ffi::c_int,
            0 as std::ffi::c_int,
        );
    }
}

/// Switch to WAL. On a new file the switch needs an exclusive lock, and SQLite answers
/// SQLITE_BUSY at once (without the busy handler) when another process opens the same
/// new file at that moment (daemon + crontab run on first boot): retry for up to the busy
/// timeout.
fn set_wal(conn: &Connection) -> Result<(), StoreError> {
    let deadline = std::time::Instant::now() + Duration::from_millis(DB_BUSY_TIMEOUT_MS);
    loop {
        // journal_mode returns a row; query it rather than execute.
        match conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Create the file with mode 0600 if it does not exist (SQLite gives its WAL and SHM
/// files the same mode).
fn create_private(path: &Path) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synchronous(db: &Db) -> i64 {
        db.conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn deferred_sync_relaxes_commits_only_inside_and_nests() {
        let dir = std::env::temp_dir().join(format!("yc-defer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let db = Db::open(&dir.join("t.db"), 256).unwrap();
        assert_eq!(synchronous(&db), 2, "FULL by default");
        let inner = db.deferred_sync(|| {
            let outer = synchronous(&db);
            let nested = db.deferred_sync(|| synchronous(&db));
            (outer, nested, synchronous(&db))
        });
        assert_eq!(inner, (1, 1, 1), "NORMAL inside, also after a nested call");
        assert_eq!(synchronous(&db), 2, "FULL again after");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn release_memory_keeps_the_data() {
        let db = Db::open_in_memory().unwrap();
        db.set_state("k", &"x".repeat(50_000)).unwrap();
        db.release_memory();
        assert_eq!(db.get_state("k").unwrap().map(|v| v.len()), Some(50_000));
    }

    #[test]
    fn write_batch_commits_once_or_rolls_back_and_nests() {
        let db = Db::open_in_memory().unwrap();
        let r: Result<(), StoreError> = db.write_batch(|| {
            db.set_state("a", "1")?;
            db.write_batch(|| db.set_state("b", "2"))?;
            assert!(!db.conn.is_autocommit(), "one transaction around both");
            Ok(())
        });
        r.unwrap();
        assert!(db.conn.is_autocommit());
        let failed: Result<(), StoreError> = db.write_batch(|| {
            db.set_state("a", "changed")?;
            Err(StoreError::Corrupt("test".into()))
        });
        assert!(failed.is_err());
        assert!(db.conn.is_autocommit(), "no transaction left open");
        assert_eq!(
            db.get_state("a").unwrap().as_deref(),
            Some("1"),
            "rolled back"
        );
        assert_eq!(db.get_state("b").unwrap().as_deref(), Some("2"));
        let read: Result<Option<String>, StoreError> = db.read_batch(|| db.get_state("b"));
        assert_eq!(read.unwrap().as_deref(), Some("2"));
        assert!(db.conn.is_autocommit());
    }

    #[test]
    fn lookaside_is_off() {
        let db = Db::open_in_memory().unwrap();
        db.conn
            .query_row("SELECT count(*) FROM memories", [], |r| r.get::<_, i64>(0))
            .unwrap();
        let (mut cur, mut hi) = (0, 0);
        // SAFETY: the handle of an open connection; out-pointers to live locals.
        let rc = unsafe {
            rusqlite::ffi::sqlite3_db_status(
                db.conn.handle(),
                rusqlite::ffi::SQLITE_DBSTATUS_LOOKASIDE_USED,
                &mut cur,
                &mut hi,
                0,
            )
        };
        assert_eq!(rc, 0);
        assert_eq!((cur, hi), (0, 0));
    }

    #[test]
    fn fresh_database_is_migrated_and_private() {
        let dir = std::env::temp_dir().join(format!("yc-db-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("t.db");
        let _ = std::fs::remove_file(&path);
        let db = Db::open(&path, 128).unwrap();
        assert_eq!(db.schema_version().unwrap(), SCHEMA_VERSION);
        drop(db);
        // Reopening is a no-op migration.
        let db = Db::open(&path, 128).unwrap();
        assert_eq!(db.schema_version().unwrap(), SCHEMA_VERSION);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let mode: String = db
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn pragma(db: &Db, name: &str) -> i64 {
        db.conn
            .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .unwrap()
    }

    fn count(db: &Db, sql: &str) -> i64 {
        db.conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    fn usage() -> crate::chat::Usage {
        crate::chat::Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
            estimated: false,
        }
    }

    #[test]
    fn a_new_file_has_small_pages_and_writes_few_of_them() {
        let dir = std::env::temp_dir().join(format!("yc-db-pages-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let db = Db::open(&dir.join("t.db"), 128).unwrap();
        assert_eq!(pragma(&db, "page_size"), i64::from(DB_PAGE_SIZE));
        assert_eq!(
            pragma(&db, "wal_autocheckpoint"),
            WAL_CHECKPOINT_BYTES / i64::from(DB_PAGE_SIZE)
        );
        assert_eq!(pragma(&db, "journal_size_limit"), WAL_CHECKPOINT_BYTES);
        // An FTS5 index leaf fits one page.
        let pgsz = count(&db, "SELECT v FROM memories_fts_config WHERE k = 'pgsz'");
        assert!(pgsz > 0 && pgsz < i64::from(DB_PAGE_SIZE) - 64, "{pgsz}");
        let msg = crate::chat::Message::new(crate::chat::Role::User, "hello");
        db.append_message("s", &msg, 1).unwrap();
        db.append_message("s", &msg, 2).unwrap();
        db.record_usage("s", "p", "m", usage(), 1_764_000_000)
            .unwrap();
        // No sequence row and no index page written with every message and usage row.
        assert_eq!(
            count(
                &db,
                "SELECT count(*) FROM sqlite_sequence WHERE name = 'messages'"
            ),
            0
        );
        assert_eq!(
            count(
                &db,
                "SELECT count(*) FROM sqlite_schema WHERE name = 'usage_by_day'"
            ),
            0
        );
        assert_eq!(count(&db, "SELECT max(id) FROM messages"), 2);
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_made_before_keeps_its_pages_and_loses_the_unused_index() {
        let dir = std::env::temp_dir().join(format!("yc-db-old-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("old.db");
        // The schema as the releases before made it: 4 KiB pages, messages with
        // AUTOINCREMENT, an index on usage(day).
        let old = MIGRATIONS[0].replacen(
            "id           INTEGER PRIMARY KEY,",
            "id           INTEGER PRIMARY KEY AUTOINCREMENT,",
            1,
        ) + "CREATE INDEX usage_by_day ON usage(day);";
        assert_ne!(
            old,
            MIGRATIONS[0].to_string() + "CREATE INDEX usage_by_day ON usage(day);"
        );
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch("PRAGMA page_size=4096; PRAGMA journal_mode=WAL;")
                .unwrap();
            c.execute_batch(&old).unwrap();
            c.execute_batch(MIGRATIONS[1]).unwrap();
            c.execute_batch("PRAGMA user_version=2").unwrap();
        }
        let db = Db::open(&path, 128).unwrap();
        assert_eq!(pragma(&db, "page_size"), 4096);
        assert_eq!(pragma(&db, "wal_autocheckpoint"), 256);
        assert_eq!(
            count(
                &db,
                "SELECT count(*) FROM sqlite_schema WHERE name = 'usage_by_day'"
            ),
            0
        );
        let msg = crate::chat::Message::new(crate::chat::Role::User, "hello");
        db.append_message("s", &msg, 1).unwrap();
        assert_eq!(
            count(
                &db,
                "SELECT seq FROM sqlite_sequence WHERE name = 'messages'"
            ),
            1
        );
        db.record_usage("s", "p", "m", usage(), 1_764_000_000)
            .unwrap();
        let day = crate::store::usage::day_of(1_764_000_000);
        assert_eq!(db.usage_totals(&day).unwrap(), (10, 5));
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn concurrent_first_opens_migrate_once() {
        let dir = std::env::temp_dir().join(format!("yc-db-race-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("race.db");
        for round in 0..5 {
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_file(dir.join("race.db-wal"));
            let _ = std::fs::remove_file(dir.join("race.db-shm"));
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let p = path.clone();
                    std::thread::spawn(move || Db::open(&p, 64).map(|db| db.schema_version()))
                })
                .collect();
            for t in threads {
                let r = t.join().unwrap();
                assert!(matches!(r, Ok(Ok(SCHEMA_VERSION))), "round {round}: {r:?}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn newer_schema_is_refused() {
        let db = Db::open_in_memory().unwrap();
        db.conn.execute_batch("PRAGMA user_version=99").unwrap();
        assert!(matches!(db.migrate(), Err(StoreError::TooNew(99))));
    }
}
