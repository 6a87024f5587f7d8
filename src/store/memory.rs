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
//! itself capped at `MAX_MEMORY_LIST_ROWS`. A search ranks at most `MAX_RANKED_ROWS`
//! matches (its rarest terms; see `Db::memory_search`), so its time stays bounded however
//! common its words are. Export walks rows one at a time (never all in
//! RAM). Retention deletes in batches of `RETENTION_BATCH_ROWS` so one run never builds
//! a huge WAL on an SD card.
//!
//! # Threads
//! The thread that owns the `Db`: the executor in the gateway and the commands that run
//! turns, the main thread in `memory` commands.
//!
//! # Blocking
//! Every call runs one or a few small statements on the calling thread.

use super::{Db, StoreError};
use crate::store::fts_query::FtsQuery;
use crate::store::snippet::snippet;
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
/// Most matching rows a search ranks with bm25 (summed over the terms it keeps); rarer
/// terms are kept first, more common ones dropped (see `Db::memory_search`).
pub const MAX_RANKED_ROWS: i64 = 1_000;
/// Pseudo-memories holding none of a query's words, added to the store's count in
/// [`Db::memory_relevance`]: the prior that keeps a small store's word weights meaningful.
pub const RELEVANCE_PRIOR_MEMORIES: f64 = 3.0;
/// Above this many memories the prior moves a word's weight by a few percent at most and
/// [`Db::memory_relevance`] leaves relevance to bm25 (`None`).
pub const RELEVANCE_PRIOR_MAX_MEMORIES: i64 = 200;
/// Pages (4 KiB) one [`Db::memory_index_tidy`] call writes at most, and per step.
pub const FTS_TIDY_MAX_PAGES: i64 = 1024;
pub const FTS_TIDY_STEP_PAGES: i64 = 128;
/// Tokens of context around the matches in a search snippet.
pub const SNIPPET_TOKENS: usize = 16;

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
        self.vocab_changed();
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
        // Two statements, so that a category walks `memories_by_category` backwards and
        // stops at `limit` (one `?1 IS NULL OR category = ?1` statement scans and sorts
        // the whole table; the prompt lists core memories on every message).
        let mut stmt = match category {
            Some(_) => self.conn.prepare_cached(
                "SELECT key, text, category, created, updated FROM memories
                 WHERE category = ?1 ORDER BY updated DESC, id DESC LIMIT ?2",
            )?,
            None => self.conn.prepare_cached(
                "SELECT key, text, category, created, updated FROM memories
                 WHERE ?1 IS NULL ORDER BY updated DESC, id DESC LIMIT ?2",
            )?,
        };
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
    /// Ranking costs time for every row that matches, so only the query's rarest terms
    /// are ranked: terms are counted (up to `MAX_RANKED_ROWS` + 1 matches each) and kept,
    /// rarest first, while their matches add up to at most `MAX_RANKED_ROWS`. A term more
    /// common than that says little about which memory is meant (bm25 gives it a low
    /// weight anyway) and would cost tens of milliseconds at 100k memories. When every
    /// term is that common, the newest matching memories are returned with a score of 0
    /// (no ranking, and below any relevance floor). Stores of at most `MAX_RANKED_ROWS`
    /// memories skip the counting: every query is cheap there.
    ///
    /// Ranking reads only the FTS index (and the category when filtering); texts are then
    /// fetched by id for the returned rows alone, and their snippets made in Rust
    /// (`store::snippet`): FTS5's `snippet()` would evaluate the MATCH again per row.
    /// Words no memory holds are left out first (`store::vocab`): same results, fewer
    /// index seeks.
    pub fn memory_search(
        &self,
        query: &FtsQuery,
        category: Option<Category>,
        limit: usize,
    ) -> Result<Vec<Hit>, StoreError> {
        self.search(query, category, limit, true)
    }

    /// [`Db::memory_search`] without snippets (each `Hit::snippet` empty): the prompt's
    /// lookup shows whole texts.
    pub fn memory_matches(
        &self,
        query: &FtsQuery,
        category: Option<Category>,
        limit: usize,
    ) -> Result<Vec<Hit>, StoreError> {
        self.search(query, category, limit, false)
    }

    fn search(
        &self,
        query: &FtsQuery,
        category: Option<Category>,
        limit: usize,
        snippets: bool,
    ) -> Result<Vec<Hit>, StoreError> {
        let Some(query) = &self.known_terms(query)? else {
            return Ok(Vec::new());
        };
        let limit = limit.min(MAX_MEMORY_LIST_ROWS) as i64;
        let cat = category.map(Category::as_str);
        let mut ranked: Vec<(i64, f64)> = Vec::new();
        match self.rankable(query)? {
            Some(q) => {
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
                let rows = stmt.query_map(params![q.as_str(), cat, limit], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
                for row in rows {
                    ranked.push(row?);
                }
            }
            None => {
                let mut stmt = self.conn.prepare_cached(
                    "SELECT f.rowid FROM memories_fts f JOIN memories m ON m.id = f.rowid
                     WHERE memories_fts MATCH ?1 AND (?2 IS NULL OR m.category = ?2)
                     ORDER BY f.rowid DESC LIMIT ?3",
                )?;
                let rows = stmt.query_map(params![query.as_str(), cat, limit], |r| {
                    Ok((r.get(0)?, 0.0))
                })?;
                for row in rows {
                    ranked.push(row?);
                }
            }
        }
        let mut out = Vec::with_capacity(ranked.len());
        let mut stmt = self
            .conn
            .prepare_cached("SELECT key, category, text, updated FROM memories WHERE id = ?1")?;
        for (rowid, score) in ranked {
            let hit = stmt
                .query_row(params![rowid], |r| {
                    let text: String = r.get(2)?;
                    Ok(Hit {
                        key: r.get(0)?,
                        category: category_of(&r.get::<_, String>(1)?),
                        snippet: if snippets {
                            snippet(&text, query.terms(), SNIPPET_TOKENS)
                        } else {
                            String::new()
                        },
                        text,
                        updated: r.get(3)?,
                        score,
                    })
                })
                .optional()?;
            out.extend(hit);
        }
        Ok(out)
    }

    /// How relevant `text` (a hit of `query`) is, on the scale of bm25's IDF but with
    /// `RELEVANCE_PRIOR_MEMORIES` pseudo-memories holding none of the words: the sum, over
    /// the query's terms that `text` holds, of `ln((N + prior - n + 0.5) / (n + 0.5))`
    /// (floored at 0), N the memories in the store, n those holding the term. FTS5's bm25
    /// gives every word of a store of one or two memories a weight of ~0 (it is in half
    /// of them or more), so a relevance floor on its score dropped even exact matches; with
    /// the prior an exact match in a tiny store weighs about 1, while in a big store a word
    /// keeps the weight bm25 gives it. `None` above `RELEVANCE_PRIOR_MAX_MEMORIES`
    /// memories, where bm25's own score is that relevance to within a few percent.
    pub fn memory_relevance(
        &self,
        query: &FtsQuery,
        text: &str,
    ) -> Result<Option<f64>, StoreError> {
        let total: i64 = self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM memories")?
            .query_row([], |r| r.get(0))?;
        if total > RELEVANCE_PRIOR_MAX_MEMORIES {
            return Ok(None);
        }
        let mut relevance = 0.0;
        for (i, (term, prefix)) in query.terms().iter().enumerate() {
            if !crate::store::snippet::holds(text, term, *prefix) {
                continue;
            }
            let n = self.matches_up_to_cap(query.single(i, *prefix))? as f64;
            let idf = ((total as f64 + RELEVANCE_PRIOR_MEMORIES - n + 0.5) / (n + 0.5)).ln();
            relevance += idf.max(0.0);
        }
        Ok(Some(relevance))
    }

    /// The part of `query` worth ranking (see [`Db::memory_search`]): all of it in a small
    /// store, else its rarest terms; `None` when every term is too common to rank.
    fn rankable(&self, query: &FtsQuery) -> Result<Option<FtsQuery>, StoreError> {
        let max_id: i64 = self
            .conn
            .prepare_cached("SELECT IFNULL(MAX(id), 0) FROM memories")?
            .query_row([], |r| r.get(0))?;
        if max_id <= MAX_RANKED_ROWS {
            return Ok(Some(query.clone()));
        }
        let mut counted: Vec<(i64, usize)> = Vec::with_capacity(query.terms().len());
        for (i, (_, prefix)) in query.terms().iter().enumerate() {
            // The exact word first: counting it stops early, while a prefix term is
            // expanded over the whole index before the first row.
            let mut n = self.matches_up_to_cap(query.single(i, false))?;
            if *prefix && n <= MAX_RANKED_ROWS {
                n = self.matches_up_to_cap(query.single(i, true))?;
            }
            counted.push((n, i));
        }
        counted.sort_unstable();
        let mut keep = vec![false; counted.len()];
        let mut total = 0i64;
        for (n, i) in counted {
            if total + n > MAX_RANKED_ROWS {
                break;
            }
            total += n;
            if let Some(k) = keep.get_mut(i) {
                *k = true;
            }
        }
        Ok(query.subset(|i| keep.get(i).copied().unwrap_or(false)))
    }

    /// Rows matching `query`, counted up to `MAX_RANKED_ROWS` + 1.
    fn matches_up_to_cap(&self, query: Option<FtsQuery>) -> Result<i64, StoreError> {
        let Some(q) = query else { return Ok(0) };
        Ok(self
            .conn
            .prepare_cached(
                "SELECT COUNT(*) FROM (SELECT rowid FROM memories_fts
                 WHERE memories_fts MATCH ?1 LIMIT ?2)",
            )?
            .query_row(params![q.as_str(), MAX_RANKED_ROWS + 1], |r| r.get(0))?)
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

    /// Merge the full-text index's segments, at most `FTS_TIDY_MAX_PAGES` pages written
    /// per call, in steps of `FTS_TIDY_STEP_PAGES` (each its own commit); returns the
    /// steps that did work. Every stored or forgotten memory adds a small segment (a
    /// forgotten one a delete marker), and a search seeks each term in every segment:
    /// after the daily retention the index is back to one segment, and searches run
    /// about twice as fast as over the ten segments a few hundred changes leave.
    pub fn memory_index_tidy(&self) -> Result<usize, StoreError> {
        let mut steps = 0;
        for _ in 0..FTS_TIDY_MAX_PAGES / FTS_TIDY_STEP_PAGES {
            let before = self.conn.total_changes();
            self.conn
                .prepare_cached("INSERT INTO memories_fts(memories_fts, rank) VALUES('merge', ?1)")?
                .execute(params![-FTS_TIDY_STEP_PAGES])?;
            // FTS5: fewer than two changes means nothing was left to merge.
            if self.conn.total_changes() - before < 2 {
                break;
            }
            steps += 1;
        }
        Ok(steps)
    }

    /// Segments of the full-text index.
    #[cfg(test)]
    pub fn memory_index_segments(&self) -> Result<i64, StoreError> {
        Ok(self.conn.query_row(
            "SELECT count(DISTINCT segid) FROM memories_fts_idx",
            [],
            |r| r.get(0),
        )?)
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
    fn common_terms_are_not_ranked_in_a_big_store() {
        let db = Db::open_in_memory().unwrap();
        db.conn.execute_batch("BEGIN").unwrap();
        let n = MAX_RANKED_ROWS as usize + 100;
        for i in 0..n {
            let text = if i % 500 == 7 {
                format!("common word and a rare zebra {i}")
            } else {
                format!("common word number {i}")
            };
            db.memory_store(&format!("k{i}"), &text, Category::Daily, i as i64)
                .unwrap();
        }
        db.conn.execute_batch("COMMIT").unwrap();
        // The rare term is ranked; the common one is dropped from ranking.
        let hits = db.memory_search(&q("common zebra"), None, 10).unwrap();
        assert_eq!(hits.len(), n.div_ceil(500));
        assert!(hits.iter().all(|h| h.text.contains("zebra")), "{hits:?}");
        assert!(hits.iter().all(|h| h.score < 0.0));
        assert!(hits[0].snippet.contains("[common]") && hits[0].snippet.contains("[zebra]"));
        // Only common terms: the newest matches, unranked.
        let hits = db.memory_search(&q("common word"), None, 3).unwrap();
        let keys: Vec<&str> = hits.iter().map(|h| h.key.as_str()).collect();
        let newest: Vec<String> = (n - 3..n).rev().map(|i| format!("k{i}")).collect();
        assert_eq!(keys, newest);
        assert!(hits.iter().all(|h| h.score == 0.0));
        // The category filter applies on both paths.
        let hits = db
            .memory_search(&q("common"), Some(Category::Core), 3)
            .unwrap();
        assert!(hits.is_empty());
        db.memory_store("core1", "common core fact", Category::Core, 1)
            .unwrap();
        let hits = db
            .memory_search(&q("common"), Some(Category::Core), 3)
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].key, "core1");
        let hits = db
            .memory_search(&q("zebra fact"), Some(Category::Core), 3)
            .unwrap();
        assert_eq!(hits.len(), 1);
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
    fn index_tidy_merges_segments_and_keeps_search_results() {
        let db = Db::open_in_memory().unwrap();
        for i in 0..60 {
            db.memory_store(
                &format!("k{i}"),
                &format!("garden note {i} tomatoes"),
                Category::Daily,
                i,
            )
            .unwrap();
        }
        for i in 0..30 {
            db.memory_forget(&format!("k{i}")).unwrap();
        }
        let before = db.memory_index_segments().unwrap();
        let hits_before: Vec<String> = db
            .memory_search(&q("tomatoes"), None, 100)
            .unwrap()
            .into_iter()
            .map(|h| h.key)
            .collect();
        assert!(
            before > 1,
            "separate writes leave several segments ({before})"
        );
        assert!(db.memory_index_tidy().unwrap() >= 1);
        assert_eq!(db.memory_index_segments().unwrap(), 1);
        let hits_after: Vec<String> = db
            .memory_search(&q("tomatoes"), None, 100)
            .unwrap()
            .into_iter()
            .map(|h| h.key)
            .collect();
        assert_eq!(hits_after.len(), 30);
        assert_eq!(hits_before, hits_after);
        assert_eq!(db.memory_index_tidy().unwrap(), 0, "nothing left to merge");
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
