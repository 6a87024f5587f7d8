//! Long-term memories in SQLite: upsert by key, get, forget, bounded lists, FTS5/bm25
//! search with snippets, counts, retention deletes and a streaming walk for export.
//!
//! The `memories` table holds the rows; `memories_fts` (external content, kept in sync by
//! triggers in migration 1) indexes `key` and `text`. Storing an existing key updates the
//! row in place, so restarts and repeated stores never duplicate a memory.
//!
//! # Bounds
//! Keys at most `MAX_MEMORY_KEY_BYTES`, texts at most `MAX_MEMORY_TEXT_BYTES` (longer is
//! refused with `MemoryError`). At most `MAX_MEMORIES` rows: a new key beyond that is
//! refused (updates still work). Lists and searches return at most the `limit` passed,
//! itself capped at `MAX_MEMORY_LIST_ROWS`. Export walks rows one at a time (never all in
//! RAM). Retention deletes in batches of `RETENTION_BATCH_ROWS` so one run never builds
//! a huge WAL on an SD card.
//!
//! # Blocking
//! Every call runs one or a few small statements on the calling thread.

use super::{Db, StoreError};
use crate::memory::query::FtsQuery;
use rusqlite::{OptionalExtension, params};
use std::fmt;

/// Longest key accepted.
pub const MAX_MEMORY_KEY_BYTES: usize = 128;
/// Longest memory text accepted.
pub const MAX_MEMORY_TEXT_BYTES: usize = 4096;
/// Most memories stored; new keys beyond this are refused.
pub const MAX_MEMORIES: u64 = 100_000;
/// Most rows one list or search returns.
pub const MAX_MEMORY_LIST_ROWS: usize = 1000;
/// Rows deleted per retention statement.
pub const RETENTION_BATCH_ROWS: i64 = 500;
/// Retention statements per category per run (so one run deletes at most
/// `RETENTION_BATCH_ROWS * RETENTION_MAX_BATCHES` rows per category; the next run goes on).
pub const RETENTION_MAX_BATCHES: usize = 1000;
/// Tokens of context around the matches in a search snippet.
pub const SNIPPET_TOKENS: i64 = 16;

/// A memory's category: how long it is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    /// Lasting facts; never expire.
    Core,
    /// Notes about a day; kept `memory.daily_days`.
    Daily,
    /// Context of a conversation; kept `memory.conversation_days`.
    Conversation,
    /// Anything else; kept `memory.custom_days`.
    Custom,
}

impl Category {
    pub const ALL: [Category; 4] = [
        Category::Core,
        Category::Daily,
        Category::Conversation,
        Category::Custom,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Core => "core",
            Category::Daily => "daily",
            Category::Conversation => "conversation",
            Category::Custom => "custom",
        }
    }

    /// Parse a category name (case-insensitive, surrounding spaces ignored).
    pub fn parse(s: &str) -> Option<Category> {
        let s = s.trim();
        Category::ALL
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(s))
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a memory was not stored.
#[derive(Debug)]
pub enum MemoryError {
    /// The key is empty, too long or holds control characters.
    BadKey(String),
    /// The text is empty or too long.
    BadText(String),
    /// `MAX_MEMORIES` are stored already.
    Full,
    /// The database failed.
    Store(StoreError),
}

impl fmt::Display for MemoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryError::BadKey(m) | MemoryError::BadText(m) => f.write_str(m),
            MemoryError::Full => write!(
                f,
                "memory is full ({MAX_MEMORIES} entries): forget something first"
            ),
            MemoryError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for MemoryError {}

impl From<StoreError> for MemoryError {
    fn from(e: StoreError) -> Self {
        MemoryError::Store(e)
    }
}

impl From<rusqlite::Error> for MemoryError {
    fn from(e: rusqlite::Error) -> Self {
        MemoryError::Store(StoreError::Sql(e))
    }
}

/// One stored memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    pub key: String,
    pub text: String,
    pub category: Category,
    /// Seconds since the epoch.
    pub created: i64,
    pub updated: i64,
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub key: String,
    pub category: Category,
    /// Text around the matches, matches in `[` `]`.
    pub snippet: String,
    /// The full text (bounded by `MAX_MEMORY_TEXT_BYTES`).
    pub text: String,
    pub updated: i64,
    /// FTS5 bm25 score: negative, smaller is better.
    pub score: f64,
}

/// What a store did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    Created,
    Updated,
}

/// Check a key: trimmed, 1..=`MAX_MEMORY_KEY_BYTES`, no control characters.
pub fn check_key(key: &str) -> Result<&str, MemoryError> {
    let k = key.trim();
    if k.is_empty() {
        return Err(MemoryError::BadKey("the memory key is empty".into()));
    }
    if k.len() > MAX_MEMORY_KEY_BYTES {
        return Err(MemoryError::BadKey(format!(
            "the memory key is longer than {MAX_MEMORY_KEY_BYTES} bytes"
        )));
    }
    if k.chars().any(char::is_control) {
        return Err(MemoryError::BadKey(
            "the memory key holds control characters".into(),
        ));
    }
    Ok(k)
}

/// Check a text: trimmed, 1..=`MAX_MEMORY_TEXT_BYTES`.
pub fn check_text(text: &str) -> Result<&str, MemoryError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(MemoryError::BadText("the memory text is empty".into()));
    }
    if t.len() > MAX_MEMORY_TEXT_BYTES {
        return Err(MemoryError::BadText(format!(
            "the memory text is {} bytes, more than {MAX_MEMORY_TEXT_BYTES}: store a shorter summary",
            t.len()
        )));
    }
    Ok(t)
}

fn category_of(s: &str) -> Category {
    Category::parse(s).unwrap_or(Category::Custom)
}

fn row_to_memory(r: &rusqlite::Row<'_>) -> rusqlite::Result<Memory> {
    Ok(Memory {
        key: r.get(0)?,
        text: r.get(1)?,
        category: category_of(&r.get::<_, String>(2)?),
        created: r.get(3)?,
        updated: r.get(4)?,
    })
}

impl Db {
    /// Store a memory: a new key is created, an existing key is updated in place (its
    /// `created` time is kept).
    pub fn memory_store(
        &self,
        key: &str,
        text: &str,
        category: Category,
        now: i64,
    ) -> Result<Stored, MemoryError> {
        self.memory_put(key, text, category, now, now)
    }

    /// Store with explicit times (import). An existing key keeps the older `created`.
    pub fn memory_put(
        &self,
        key: &str,
        text: &str,
        category: Category,
        created: i64,
        updated: i64,
    ) -> Result<Stored, MemoryError> {
        let key = check_key(key)?;
        let text = check_text(text)?;
        let exists = self.memory_exists(key)?;
        if !exists && self.memory_may_be_full()? && self.memory_total()? >= MAX_MEMORIES {
            return Err(MemoryError::Full);
        }
        self.conn
            .prepare_cached(
                "INSERT INTO memories(key, text, category, created, updated)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(key) DO UPDATE SET text = excluded.text,
                     category = excluded.category, updated = excluded.updated,
                     created = MIN(created, excluded.created)",
            )?
            .execute(params![key, text, category.as_str(), created, updated])?;
        Ok(if exists {
            Stored::Updated
        } else {
            Stored::Created
        })
    }

    fn memory_exists(&self, key: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .prepare_cached("SELECT 1 FROM memories WHERE key = ?1")?
            .query_row(params![key], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// False when fewer than `MAX_MEMORIES` rows are stored for sure: row ids are
    /// handed out as the largest id plus one, so the count never exceeds the largest id.
    /// Lets bulk imports skip a full count per row.
    fn memory_may_be_full(&self) -> Result<bool, StoreError> {
        let max_id: i64 = self
            .conn
            .prepare_cached("SELECT IFNULL(MAX(id), 0) FROM memories")?
            .query_row([], |r| r.get(0))?;
        Ok(max_id >= MAX_MEMORIES as i64)
    }

    /// Number of memories stored.
    pub fn memory_total(&self) -> Result<u64, StoreError> {
        let n: i64 = self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM memories")?
            .query_row([], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    }

    /// The memory stored under `key`.
    pub fn memory_get(&self, key: &str) -> Result<Option<Memory>, StoreError> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT key, text, category, created, updated FROM memories WHERE key = ?1",
            )?
            .query_row(params![key.trim()], row_to_memory)
            .optional()?)
    }

    /// Delete the memory under `key`; false when there was none.
    pub fn memory_forget(&self, key: &str) -> Result<bool, StoreError> {
        let n = self
            .conn
            .prepare_cached("DELETE FROM memories WHERE key = ?1")?
            .execute(params![key.trim()])?;
        Ok(n > 0)
    }

    /// Newest-updated first, at most `limit` (capped at `MAX_MEMORY_LIST_ROWS`), each
    /// handed to `each` as it is read; `each` returns false to stop early.
    pub fn memory_list(
        &self,
        category: Option<Category>,
        limit: usize,
        mut each: impl FnMut(Memory) -> bool,
    ) -> Result<(), StoreError> {
        let limit = limit.min(MAX_MEMORY_LIST_ROWS) as i64;
        let mut stmt = self.conn.prepare_cached(
            "SELECT key, text, category, created, updated FROM memories
             WHERE ?1 IS NULL OR category = ?1
             ORDER BY updated DESC, id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![category.map(Category::as_str), limit], |r| {
            row_to_memory(r)
        })?;
        for row in rows {
            if !each(row?) {
                break;
            }
        }
        Ok(())
    }

    /// Every memory, oldest first, one at a time (export). `each` may stop the walk by
    /// returning an error, which is passed back.
    pub fn memory_walk<E: From<StoreError>>(
        &self,
        mut each: impl FnMut(Memory) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT key, text, category, created, updated FROM memories ORDER BY id",
            )
            .map_err(StoreError::from)?;
        let mut rows = stmt.query([]).map_err(StoreError::from)?;
        while let Some(r) = rows.next().map_err(StoreError::from)? {
            each(row_to_memory(r).map_err(StoreError::from)?)?;
        }
        Ok(())
    }

    /// Best matches first (bm25), at most `limit` (capped at `MAX_MEMORY_LIST_ROWS`).
    ///
    /// Ranking reads only the FTS index (and the category when filtering); snippets and
    /// texts are then fetched for the returned rows alone, which halves the time of a
    /// query matching many memories.
    pub fn memory_search(
        &self,
        query: &FtsQuery,
        category: Option<Category>,
        limit: usize,
    ) -> Result<Vec<Hit>, StoreError> {
        let limit = limit.min(MAX_MEMORY_LIST_ROWS) as i64;
        let mut ranked: Vec<(i64, f64)> = Vec::new();
        {
            let mut stmt = match category {
                None => self.conn.prepare_cached(
                    "SELECT rowid, bm25(memories_fts) AS score FROM memories_fts
                     WHERE memories_fts MATCH ?1 AND ?2 IS NULL
                     ORDER BY score, rowid DESC LIMIT ?3",
                )?,
                Some(_) => self.conn.prepare_cached(
                    "SELECT f.rowid, bm25(memories_fts) AS score
                     FROM memories_fts f JOIN memories m ON m.id = f.rowid
                     WHERE memories_fts MATCH ?1 AND m.category = ?2
                     ORDER BY score, f.rowid DESC LIMIT ?3",
                )?,
            };
            let rows = stmt.query_map(
                params![query.as_str(), category.map(Category::as_str), limit],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            for row in rows {
                ranked.push(row?);
            }
        }
        let mut out = Vec::with_capacity(ranked.len());
        let mut stmt = self.conn.prepare_cached(
            "SELECT m.key, m.category, snippet(memories_fts, 1, '[', ']', '…', ?3),
                    m.text, m.updated
             FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid
             WHERE memories_fts MATCH ?1 AND memories_fts.rowid = ?2",
        )?;
        for (rowid, score) in ranked {
            let hit = stmt
                .query_row(params![query.as_str(), rowid, SNIPPET_TOKENS], |r| {
                    Ok(Hit {
                        key: r.get(0)?,
                        category: category_of(&r.get::<_, String>(1)?),
                        snippet: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                        text: r.get(3)?,
                        updated: r.get(4)?,
                        score,
                    })
                })
                .optional()?;
            out.extend(hit);
        }
        Ok(out)
    }

    /// How many memories each category holds (categories with none are left out).
    pub fn memory_counts(&self) -> Result<Vec<(Category, u64)>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT category, COUNT(*) FROM memories GROUP BY category ORDER BY category",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        let mut out: Vec<(Category, u64)> = Vec::new();
        for row in rows {
            let (c, n) = row?;
            let c = category_of(&c);
            let n = n.max(0) as u64;
            match out.iter_mut().find(|(k, _)| *k == c) {
                Some(e) => e.1 += n,
                None => out.push((c, n)),
            }
        }
        Ok(out)
    }

    /// Delete the memories of `category` last updated before `cutoff`; returns how many.
    pub fn memory_delete_older_than(
        &self,
        category: Category,
        cutoff: i64,
    ) -> Result<usize, StoreError> {
        let mut total = 0usize;
        for _ in 0..RETENTION_MAX_BATCHES {
            let n = self
                .conn
                .prepare_cached(
                    "DELETE FROM memories WHERE id IN (
                         SELECT id FROM memories WHERE category = ?1 AND updated < ?2 LIMIT ?3)",
                )?
                .execute(params![category.as_str(), cutoff, RETENTION_BATCH_ROWS])?;
            total += n;
            if (n as i64) < RETENTION_BATCH_ROWS {
                break;
            }
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> FtsQuery {
        FtsQuery::from_text(text).unwrap()
    }

    #[test]
    fn storing_an_existing_key_updates_it() {
        let db = Db::open_in_memory().unwrap();
        assert_eq!(
            db.memory_store("tea", "likes green tea", Category::Core, 10)
                .unwrap(),
            Stored::Created
        );
        assert_eq!(
            db.memory_store(" tea ", "likes black tea", Category::Daily, 20)
                .unwrap(),
            Stored::Updated
        );
        assert_eq!(db.memory_total().unwrap(), 1);
        let m = db.memory_get("tea").unwrap().unwrap();
        assert_eq!(m.text, "likes black tea");
        assert_eq!(m.category, Category::Daily);
        assert_eq!((m.created, m.updated), (10, 20));
        // The index follows the update: the old text is gone from search.
        assert!(db.memory_search(&q("green"), None, 10).unwrap().is_empty());
        assert_eq!(db.memory_search(&q("black"), None, 10).unwrap().len(), 1);
    }

    #[test]
    fn forget_removes_the_row_and_its_index_entry() {
        let db = Db::open_in_memory().unwrap();
        db.memory_store("a", "apples are red", Category::Core, 1)
            .unwrap();
        assert!(db.memory_forget("a").unwrap());
        assert!(!db.memory_forget("a").unwrap());
        assert!(db.memory_get("a").unwrap().is_none());
        assert!(db.memory_search(&q("apples"), None, 10).unwrap().is_empty());
        // Integrity check of the external-content index.
        db.conn
            .execute(
                "INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')",
                [],
            )
            .unwrap();
    }

    #[test]
    fn keys_and_texts_are_checked() {
        let db = Db::open_in_memory().unwrap();
        assert!(matches!(
            db.memory_store("", "x", Category::Core, 1),
            Err(MemoryError::BadKey(_))
        ));
        assert!(matches!(
            db.memory_store("k\n", "x", Category::Core, 1).map(|_| ()),
            Ok(())
        ));
        assert!(matches!(
            db.memory_store("a\u{7}b", "x", Category::Core, 1),
            Err(MemoryError::BadKey(_))
        ));
        let long = "k".repeat(MAX_MEMORY_KEY_BYTES + 1);
        assert!(db.memory_store(&long, "x", Category::Core, 1).is_err());
        assert!(matches!(
            db.memory_store("k", "  ", Category::Core, 1),
            Err(MemoryError::BadText(_))
        ));
        let big = "x".repeat(MAX_MEMORY_TEXT_BYTES + 1);
        assert!(matches!(
            db.memory_store("k", &big, Category::Core, 1),
            Err(MemoryError::BadText(_))
        ));
    }

    #[test]
    fn the_best_match_comes_first() {
        let db = Db::open_in_memory().unwrap();
        let rows = [
            (
                "garden",
                "The garden needs water on Mondays and the roses need pruning",
            ),
            ("roses", "Roses roses roses: the owner loves roses"),
            ("car", "The car is a blue Volvo parked in the street"),
            ("work", "Works at the library on weekdays"),
            ("cat", "The cat is called Miso and eats at seven"),
        ];
        for (k, t) in rows {
            db.memory_store(k, t, Category::Core, 1).unwrap();
        }
        let hits = db.memory_search(&q("roses"), None, 10).unwrap();
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].key, "roses");
        assert!(hits[0].score < hits[1].score);
        assert!(hits[0].snippet.contains("[roses]") || hits[0].snippet.contains("[Roses]"));
        let hits = db
            .memory_search(&q("what colour is my car?"), None, 10)
            .unwrap();
        assert_eq!(hits[0].key, "car");
        let hits = db
            .memory_search(&q("roses"), Some(Category::Daily), 10)
            .unwrap();
        assert!(hits.is_empty());
        db.memory_store("car", "The car is a blue Volvo", Category::Daily, 2)
            .unwrap();
        let hits = db
            .memory_search(&q("roses car"), Some(Category::Core), 10)
            .unwrap();
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert_eq!(hits[0].key, "roses");
        let hits = db
            .memory_search(&q("roses car"), Some(Category::Daily), 10)
            .unwrap();
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!(hits[0].key, "car");
        assert!(hits[0].snippet.contains("[car]"), "{hits:?}");
        assert_eq!(db.memory_search(&q("roses"), None, 1).unwrap().len(), 1);
    }

    #[test]
    fn list_counts_and_walk() {
        let db = Db::open_in_memory().unwrap();
        db.memory_store("a", "one", Category::Core, 1).unwrap();
        db.memory_store("b", "two", Category::Daily, 2).unwrap();
        db.memory_store("c", "three", Category::Daily, 3).unwrap();
        let mut keys = Vec::new();
        db.memory_list(None, 10, |m| {
            keys.push(m.key);
            true
        })
        .unwrap();
        assert_eq!(keys, ["c", "b", "a"]);
        let mut keys = Vec::new();
        db.memory_list(Some(Category::Daily), 1, |m| {
            keys.push(m.key);
            true
        })
        .unwrap();
        assert_eq!(keys, ["c"]);
        let counts = db.memory_counts().unwrap();
        assert!(counts.contains(&(Category::Core, 1)));
        assert!(counts.contains(&(Category::Daily, 2)));
        let mut walked = Vec::new();
        db.memory_walk::<StoreError>(|m| {
            walked.push(m.key);
            Ok(())
        })
        .unwrap();
        assert_eq!(walked, ["a", "b", "c"]);
    }

    #[test]
    fn retention_deletes_only_old_rows_of_the_category() {
        let db = Db::open_in_memory().unwrap();
        for i in 0..1200 {
            db.memory_store(&format!("old{i}"), "old note", Category::Daily, 100)
                .unwrap();
        }
        db.memory_store("new", "new note", Category::Daily, 500)
            .unwrap();
        db.memory_store("core", "old fact", Category::Core, 100)
            .unwrap();
        assert_eq!(
            db.memory_delete_older_than(Category::Daily, 200).unwrap(),
            1200
        );
        assert!(db.memory_get("new").unwrap().is_some());
        assert!(db.memory_get("core").unwrap().is_some());
        assert_eq!(db.memory_total().unwrap(), 2);
    }

    #[test]
    fn a_full_store_refuses_new_keys_but_updates_old_ones() {
        let db = Db::open_in_memory().unwrap();
        db.memory_store("a", "one", Category::Core, 1).unwrap();
        // Fill up fast: plain rows without index maintenance (the test never searches).
        db.conn
            .execute_batch("DROP TRIGGER memories_ai; DROP TRIGGER memories_ad;")
            .unwrap();
        db.conn
            .execute(
                "WITH RECURSIVE n(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM n WHERE v < ?1)
                 INSERT INTO memories(key, text, category, created, updated)
                 SELECT 'k' || v, 'x', 'daily', 1, 1 FROM n",
                [MAX_MEMORIES as i64 - 1],
            )
            .unwrap();
        assert!(matches!(
            db.memory_store("new", "two", Category::Core, 2),
            Err(MemoryError::Full)
        ));
        assert_eq!(
            db.memory_store("a", "one again", Category::Core, 2)
                .unwrap(),
            Stored::Updated
        );
        assert!(db.memory_forget("k1").unwrap());
        assert_eq!(
            db.memory_store("new", "two", Category::Core, 2).unwrap(),
            Stored::Created
        );
    }

    #[test]
    fn import_times_keep_the_older_created() {
        let db = Db::open_in_memory().unwrap();
        db.memory_put("k", "v1", Category::Core, 50, 60).unwrap();
        db.memory_put("k", "v2", Category::Core, 10, 70).unwrap();
        let m = db.memory_get("k").unwrap().unwrap();
        assert_eq!((m.created, m.updated, m.text.as_str()), (10, 70, "v2"));
    }
}
