//! The words the memory index holds, kept in RAM, so a search leaves out the words no
//! memory has before FTS5 sees them.
//!
//! A message's prompt lookup asks FTS5 for each of its keywords; FTS5 then seeks each one
//! in every index segment (a prefix term visits every word it starts), and bm25 runs each
//! one again to count its documents. Most words of a message are in no memory at all,
//! and a word in no memory changes no result and no score (bm25 sums over the phrases a
//! row holds), so dropping it first is exact. On the footprint soak's store (70
//! memories, 179 words) the prompt's memory section went from 145 to 102 µs per message
//! with the list (docs/DECISIONS.md, 108).
//!
//! The words come from `memories_vocab` (an `fts5vocab` table over `memories_fts`, made
//! by `Db::setup`): the index's own terms, already folded by its tokenizer (lower case,
//! diacritics removed). A query term is looked up only when it is plain ASCII, whose
//! folding is its lower case; any other term is always kept (FTS5 folds it).
//!
//! The list is read again when the index changed: FTS5 rewrites its structure record
//! (`memories_fts_data` row 10) with every write committed by any process, and this
//! connection's own memory writes drop the list at once (an uncommitted write is not in
//! the structure record yet).
//!
//! # Bounds
//! Read only for stores of at most `MAX_VOCAB_MEMORIES` memories, and kept only when the
//! index holds at most `MAX_VOCAB_TERMS` words of `MAX_VOCAB_BYTES` in all (about 40 KiB
//! of RAM at most, under 2 KiB for the soak's store); past either, searches go to FTS5 whole,
//! as before. At most `MAX_VOCAB_TERMS` + 1 rows are read per load.
//!
//! # Threads
//! The thread that owns the `Db` (the executor in the gateway); no I/O of its own beyond
//! the connection's.

use super::{Db, StoreError};
use crate::store::fts_query::FtsQuery;
use rusqlite::OptionalExtension;

/// Most memories a store may hold for its word list to be read.
pub const MAX_VOCAB_MEMORIES: u64 = 2_000;
/// Most distinct words kept.
pub const MAX_VOCAB_TERMS: usize = 4_096;
/// Most bytes of words kept (offsets are `u16`: must stay under 64 KiB).
pub const MAX_VOCAB_BYTES: usize = 32 * 1024;

/// FTS5's structure record: every committed write to the index changes it.
const STRUCTURE_SQL: &str = "SELECT block FROM memories_fts_data WHERE id = 10";

/// The cached list and the index state it was read at.
#[derive(Default)]
pub(super) struct VocabCache {
    /// The structure record when read; `None`: nothing read yet (or dropped).
    stamp: Option<Vec<u8>>,
    /// The words, or `None` when the store is past the bounds.
    words: Option<Words>,
    /// Tests: search without the list, to compare.
    #[cfg(test)]
    pub(super) off: bool,
}

/// Sorted words, one after another, and where each starts.
struct Words {
    text: String,
    starts: Vec<u16>,
}

impl Words {
    fn get(&self, i: usize) -> Option<&str> {
        let start = usize::from(*self.starts.get(i)?);
        let end = self
            .starts
            .get(i + 1)
            .map_or(self.text.len(), |&e| usize::from(e));
        self.text.get(start..end)
    }

    /// Whether a word equals `term` (or starts with it, for a prefix term).
    fn has(&self, term: &str, prefix: bool) -> bool {
        match self.get(self.lower_bound(term)) {
            Some(w) if prefix => w.starts_with(term),
            Some(w) => w == term,
            None => false,
        }
    }

    /// Index of the first word not less than `term`.
    fn lower_bound(&self, term: &str) -> usize {
        let (mut lo, mut hi) = (0, self.starts.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.get(mid).is_some_and(|w| w < term) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

impl Db {
    /// `query` without the ASCII terms no memory holds (`None`: no term is left, nothing
    /// can match). The query as is when the word list is not kept (a big store).
    pub(super) fn known_terms(&self, query: &FtsQuery) -> Result<Option<FtsQuery>, StoreError> {
        #[cfg(test)]
        if self.vocab.borrow().off {
            return Ok(Some(query.clone()));
        }
        self.refresh_vocab()?;
        let cache = self.vocab.borrow();
        let Some(words) = cache.words.as_ref() else {
            return Ok(Some(query.clone()));
        };
        let terms = query.terms();
        Ok(query.subset(|i| {
            terms
                .get(i)
                .is_some_and(|(t, p)| !t.is_ascii() || words.has(t, *p))
        }))
    }

    /// Forget the word list (this connection changed the memories).
    pub(super) fn vocab_changed(&self) {
        self.vocab.borrow_mut().stamp = None;
    }

    fn refresh_vocab(&self) -> Result<(), StoreError> {
        let stamp: Vec<u8> = self
            .conn
            .prepare_cached(STRUCTURE_SQL)?
            .query_row([], |r| r.get(0))
            .optional()?
            .unwrap_or_default();
        if self.vocab.borrow().stamp.as_ref() == Some(&stamp) {
            return Ok(());
        }
        let words = self.read_words()?;
        let mut cache = self.vocab.borrow_mut();
        cache.stamp = Some(stamp);
        cache.words = words;
        Ok(())
    }

    /// The index's words, or `None` past the bounds (or when the list cannot be read:
    /// searches then work as without it).
    fn read_words(&self) -> Result<Option<Words>, StoreError> {
        // Row ids are the largest id plus one, so the count is at most the largest id:
        // a big store is told by one index seek, its count only read when ids say little.
        let max_id: i64 = self
            .conn
            .prepare_cached("SELECT IFNULL(MAX(id), 0) FROM memories")?
            .query_row([], |r| r.get(0))?;
        if max_id > MAX_VOCAB_MEMORIES as i64 && self.memory_total()? > MAX_VOCAB_MEMORIES {
            return Ok(None);
        }
        let mut stmt = match self
            .conn
            .prepare_cached("SELECT term FROM memories_vocab LIMIT ?1")
        {
            Ok(s) => s,
            Err(e) => {
                log::debug!("no memory word list: {e}");
                return Ok(None);
            }
        };
        let mut rows = stmt.query([MAX_VOCAB_TERMS as i64 + 1])?;
        let mut w = Words {
            text: String::new(),
            starts: Vec::new(),
        };
        let mut last = 0;
        while let Some(row) = rows.next()? {
            let term = row.get_ref(0)?.as_str().unwrap_or("");
            let start = w.text.len();
            // fts5vocab gives the words in byte order, which the binary search needs:
            // checked, not assumed.
            let in_order = w.text.get(last..).is_none_or(|prev| prev < term);
            if w.starts.len() >= MAX_VOCAB_TERMS
                || start + term.len() > MAX_VOCAB_BYTES
                || !in_order
            {
                return Ok(None);
            }
            let Ok(at) = u16::try_from(start) else {
                return Ok(None);
            };
            w.starts.push(at);
            w.text.push_str(term);
            last = start;
        }
        Ok(Some(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::memory::Category;
    use crate::testkit::XorShift;

    fn words(list: &[&str]) -> Words {
        let mut text = String::new();
        let mut starts = Vec::new();
        for w in list {
            starts.push(text.len() as u16);
            text.push_str(w);
        }
        Words { text, starts }
    }

    fn keys(db: &Db, text: &str) -> Vec<String> {
        let q = FtsQuery::from_text(text).unwrap();
        db.memory_search(&q, None, 10)
            .unwrap()
            .into_iter()
            .map(|h| h.key)
            .collect()
    }

    fn temp_db_path(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("yc-vocab-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("v.db")
    }

    #[test]
    fn words_are_found_exactly_or_as_prefixes() {
        let w = words(&["apple", "banana", "bandana", "cafe", "straße"]);
        assert!(w.has("apple", false));
        assert!(w.has("app", true));
        assert!(!w.has("app", false));
        assert!(w.has("band", true));
        assert!(!w.has("bandanas", true));
        assert!(w.has("straße", false));
        assert!(!w.has("zebra", true));
        assert!(!w.has("a", false));
        assert!(!words(&[]).has("x", true));
    }

    #[test]
    fn searches_with_the_word_list_rank_exactly_as_without_it() {
        // Random stores and queries over a small vocabulary (accents, capitals, digits,
        // words that are prefixes of others), compared hit by hit, score by score.
        const POOL: &[&str] = &[
            "garden",
            "gardening",
            "Garden",
            "tomato",
            "tomatoes",
            "café",
            "cafe",
            "Müller",
            "muller",
            "straße",
            "car",
            "cart",
            "carton",
            "anna",
            "2024",
            "20",
            "x",
            "bike",
            "bicycle",
            "дом",
            "дома",
            "naïve",
            "zebra",
            "the",
            "is",
            "a",
        ];
        let mut rng = XorShift(0x5eed_1234);
        for round in 0..20 {
            let db = Db::open_in_memory().unwrap();
            for i in 0..rng.below(40) + 1 {
                let n = rng.below(8) + 1;
                let text: Vec<&str> = (0..n).map(|_| POOL[rng.index(POOL.len())]).collect();
                db.memory_store(
                    &format!("k{i}"),
                    &text.join(" "),
                    Category::Core,
                    1_000 + i as i64,
                )
                .unwrap();
            }
            for _ in 0..30 {
                let n = rng.below(5) + 1;
                let text: Vec<String> = (0..n)
                    .map(|_| {
                        let w = POOL[rng.index(POOL.len())];
                        // Also words no memory holds, and cut words (prefixes).
                        match rng.below(4) {
                            0 => format!("{w}q"),
                            1 => w.chars().take(4).collect(),
                            _ => w.to_string(),
                        }
                    })
                    .collect();
                let Some(q) = FtsQuery::from_text(&text.join(" ")) else {
                    continue;
                };
                let with = db.memory_search(&q, None, 50).unwrap();
                db.vocab.borrow_mut().off = true;
                let without = db.memory_search(&q, None, 50).unwrap();
                db.vocab.borrow_mut().off = false;
                assert_eq!(with, without, "round {round}, query {:?}", q.as_str());
            }
        }
    }

    #[test]
    fn words_stored_by_another_connection_are_found_at_once() {
        let path = temp_db_path("other");
        let a = Db::open(&path, 64).unwrap();
        let b = Db::open(&path, 64).unwrap();
        a.memory_store("bike", "the bike is blue", Category::Core, 1)
            .unwrap();
        assert_eq!(keys(&a, "zebra"), Vec::<String>::new());
        assert_eq!(keys(&b, "bike"), vec!["bike"]);
        b.memory_store("zoo", "a zebra at the zoo", Category::Core, 2)
            .unwrap();
        assert_eq!(keys(&a, "zebra"), vec!["zoo"]);
        assert_eq!(keys(&a, "zebr"), vec!["zoo"]);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn a_word_stored_in_the_open_transaction_is_found() {
        let db = Db::open_in_memory().unwrap();
        db.memory_store("bike", "the bike is blue", Category::Core, 1)
            .unwrap();
        assert!(keys(&db, "tomatoes").is_empty());
        db.write_batch(|| -> Result<(), StoreError> {
            db.memory_store("veg", "tomatoes in the garden", Category::Core, 2)
                .unwrap();
            assert_eq!(keys(&db, "tomato"), vec!["veg"]);
            Ok(())
        })
        .unwrap();
        assert_eq!(keys(&db, "tomatoes"), vec!["veg"]);
    }

    #[test]
    fn words_with_accents_and_other_scripts_are_left_to_fts5() {
        let db = Db::open_in_memory().unwrap();
        db.memory_store("cafe", "Café Müller on Straße 5", Category::Core, 1)
            .unwrap();
        db.memory_store("home", "дома тепло", Category::Core, 1)
            .unwrap();
        for q in ["cafe", "café", "CAFÉ", "muller", "Müller", "straße"] {
            assert_eq!(keys(&db, q), vec!["cafe"], "{q}");
        }
        assert_eq!(keys(&db, "дома"), vec!["home"]);
        assert!(keys(&db, "strasse").is_empty());
    }

    #[test]
    fn a_store_past_the_bounds_is_searched_without_the_list() {
        let db = Db::open_in_memory().unwrap();
        db.write_batch(|| -> Result<(), StoreError> {
            for i in 0..=MAX_VOCAB_MEMORIES {
                db.memory_store(
                    &format!("m{i}"),
                    &format!("word{i} shared"),
                    Category::Core,
                    1,
                )
                .unwrap();
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(keys(&db, "word1999"), vec!["m1999"]);
        let cache = db.vocab.borrow();
        assert!(cache.stamp.is_some() && cache.words.is_none());
    }

    #[test]
    fn a_list_past_the_word_bound_is_not_kept() {
        let db = Db::open_in_memory().unwrap();
        // Fewer memories than the bound, more words than the list keeps.
        let per = MAX_VOCAB_TERMS / 100 + 1;
        db.write_batch(|| -> Result<(), StoreError> {
            for i in 0..100 {
                let text: Vec<String> = (0..per).map(|j| format!("w{i}x{j}")).collect();
                db.memory_store(&format!("m{i}"), &text.join(" "), Category::Core, 1)
                    .unwrap();
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(keys(&db, "w99x3"), vec!["m99"]);
        assert!(db.vocab.borrow().words.is_none());
        db.memory_forget("m99").unwrap();
        for i in 0..99 {
            db.memory_forget(&format!("m{i}")).unwrap();
        }
        db.memory_store("small", "a small store again", Category::Core, 2)
            .unwrap();
        assert_eq!(keys(&db, "small"), vec!["small"]);
        assert!(db.vocab.borrow().words.is_some());
        assert!(keys(&db, "w99x3").is_empty());
    }

    #[test]
    fn opening_a_file_again_keeps_one_word_list_table() {
        let path = temp_db_path("reopen");
        drop(Db::open(&path, 64).unwrap());
        let db = Db::open(&path, 64).unwrap();
        let n: i64 = db
            .conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_schema WHERE name = 'memories_vocab'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 1);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }
}
