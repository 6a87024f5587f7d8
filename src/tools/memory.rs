//! Memory tools: `memory_store`, `memory_search` and `memory_forget`, so the model can
//! keep facts across conversations.
//!
//! # Bounds
//! Keys and texts are bounded by `store::memory` (a too-long text is refused with a hint
//! to store a shorter summary). `memory_search` returns at most `MAX_SEARCH_RESULTS`
//! results, each snippet one line.
//!
//! # Threads
//! Executor thread (it owns the SQLite connection); each call is one short statement or
//! read, nothing here awaits I/O of its own.

use super::{Args, ToolError};
use crate::chat::ToolSpec;
use crate::memory::{age, derive_key};
use crate::store::Db;
use crate::store::fts_query::FtsQuery;
use crate::store::memory::{Category, MemoryError, Stored};
use std::borrow::Cow;

/// Most results one `memory_search` returns.
pub const MAX_SEARCH_RESULTS: u64 = 20;
/// Results when the model gives no limit.
pub const DEFAULT_SEARCH_RESULTS: u64 = 5;

pub const MEMORY_STORE: ToolSpec = ToolSpec {
    name: Cow::Borrowed("memory_store"),
    description: Cow::Borrowed(
        "Save a fact to long-term memory so it is remembered in later conversations. Storing under an existing key replaces that memory. Use category core for lasting facts about the user (always shown to you), daily for notes about today, conversation for context of this chat, custom for anything else.",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"text":{"type":"string","description":"The fact to remember, one or two short sentences (at most 4096 bytes)"},"key":{"type":"string","description":"Short unique name, e.g. user_name or favourite_tea; reuse a key to update that memory. Derived from the text when omitted (at most 128 bytes)"},"category":{"type":"string","enum":["core","daily","conversation","custom"],"description":"How long to keep it: core forever (default), daily 30 days, conversation 7 days, custom 90 days"}},"required":["text"],"additionalProperties":false}"#,
    ),
};

pub const MEMORY_SEARCH: ToolSpec = ToolSpec {
    name: Cow::Borrowed("memory_search"),
    description: Cow::Borrowed(
        "Search long-term memory by words; best matches first, each with its key, category, age and a snippet.",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"query":{"type":"string","description":"Words to look for"},"limit":{"type":"integer","minimum":1,"maximum":20,"description":"Most results (default 5)"},"category":{"type":"string","enum":["core","daily","conversation","custom"],"description":"Only search this category"}},"required":["query"],"additionalProperties":false}"#,
    ),
};

pub const MEMORY_FORGET: ToolSpec = ToolSpec {
    name: Cow::Borrowed("memory_forget"),
    description: Cow::Borrowed("Delete one memory by its key (find keys with memory_search)."),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"key":{"type":"string","description":"The key of the memory to delete"}},"required":["key"],"additionalProperties":false}"#,
    ),
};

fn category_arg(args: &Args) -> Result<Option<Category>, ToolError> {
    match args.opt_str("category")? {
        None => Ok(None),
        Some(c) if c.trim().is_empty() => Ok(None),
        Some(c) => Category::parse(c).map(Some).ok_or_else(|| {
            ToolError::BadArgs(format!(
                "\"category\" must be core, daily, conversation or custom, not {c:?}"
            ))
        }),
    }
}

fn store_err(e: MemoryError) -> ToolError {
    match e {
        MemoryError::BadKey(m) | MemoryError::BadText(m) => ToolError::BadArgs(m),
        other => ToolError::Failed(other.to_string()),
    }
}

pub fn memory_store(db: &Db, args: &Args, now: i64) -> Result<String, ToolError> {
    let text = args.str("text")?;
    let category = category_arg(args)?.unwrap_or(Category::Core);
    let key = match args.opt_str("key")? {
        Some(k) if !k.trim().is_empty() => k.trim().to_string(),
        _ => derive_key(text),
    };
    let stored = db
        .memory_store(&key, text, category, now)
        .map_err(store_err)?;
    Ok(match stored {
        Stored::Created => format!("Stored as {key:?} ({category})."),
        Stored::Updated => format!("Updated {key:?} ({category})."),
    })
}

pub fn memory_search(db: &Db, args: &Args, now: i64) -> Result<String, ToolError> {
    let query = args.str("query")?;
    let limit = args
        .opt_u64("limit")?
        .unwrap_or(DEFAULT_SEARCH_RESULTS)
        .clamp(1, MAX_SEARCH_RESULTS);
    let category = category_arg(args)?;
    let Some(q) = FtsQuery::from_text(query) else {
        return Err(ToolError::BadArgs(
            "\"query\" has no words to search for".into(),
        ));
    };
    let hits = db
        .memory_search(&q, category, limit as usize)
        .map_err(|e| ToolError::Failed(e.to_string()))?;
    if hits.is_empty() {
        return Ok(format!("No memories match {:?}.", query.trim()));
    }
    let mut out = String::new();
    for h in hits {
        let snippet = h.snippet.split_whitespace().collect::<Vec<_>>().join(" ");
        out.push_str(&format!(
            "- key: {} | {} | {} | {}\n",
            h.key,
            h.category,
            age(now, h.updated),
            snippet
        ));
    }
    Ok(out)
}

pub fn memory_forget(db: &Db, args: &Args) -> Result<String, ToolError> {
    let key = args.str("key")?.trim();
    if db
        .memory_forget(key)
        .map_err(|e| ToolError::Failed(e.to_string()))?
    {
        Ok(format!("Forgot {key:?}."))
    } else {
        Err(ToolError::Failed(format!(
            "no memory has the key {key:?}; use memory_search to find keys"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(json: &str) -> Args {
        Args::parse(json).unwrap()
    }

    #[test]
    fn store_search_forget() {
        let db = Db::open_in_memory().unwrap();
        let r = memory_store(&db, &a(r#"{"text":"Owner's cat is called Miso"}"#), 10).unwrap();
        assert!(r.starts_with("Stored as \"owner-s-cat-is-called-"), "{r}");
        let again = memory_store(&db, &a(r#"{"text":"Owner's cat is called Miso"}"#), 20).unwrap();
        assert!(
            again.starts_with("Updated"),
            "same text, same derived key: {again}"
        );
        memory_store(
            &db,
            &a(r#"{"text":"Dentist on Friday","key":"dentist","category":"daily"}"#),
            30,
        )
        .unwrap();
        let r = memory_search(&db, &a(r#"{"query":"cat OR \"miso"}"#), 30 + 3 * 86_400).unwrap();
        assert!(
            r.contains("| core | 3d ago | Owner's [cat] is called [Miso]"),
            "{r}"
        );
        let r = memory_search(&db, &a(r#"{"query":"friday","category":"core"}"#), 40).unwrap();
        assert!(r.starts_with("No memories match"), "{r}");
        let r = memory_search(&db, &a(r#"{"query":"friday","limit":"3"}"#), 40).unwrap();
        assert!(r.contains("key: dentist | daily"), "{r}");
        assert_eq!(
            memory_forget(&db, &a(r#"{"key":"dentist"}"#)).unwrap(),
            "Forgot \"dentist\"."
        );
        assert!(matches!(
            memory_forget(&db, &a(r#"{"key":"dentist"}"#)),
            Err(ToolError::Failed(_))
        ));
    }

    #[test]
    fn bad_arguments_are_clear() {
        let db = Db::open_in_memory().unwrap();
        for (json, want) in [
            (r#"{}"#, "required"),
            (r#"{"text":"x","category":"weekly"}"#, "must be core"),
            (r#"{"text":"   "}"#, "empty"),
        ] {
            let e = memory_store(&db, &a(json), 1).unwrap_err();
            assert!(e.to_string().contains(want), "{json}: {e}");
        }
        let big = format!(r#"{{"text":"{}"}}"#, "x".repeat(5000));
        assert!(
            memory_store(&db, &a(&big), 1)
                .unwrap_err()
                .to_string()
                .contains("shorter")
        );
        assert!(memory_search(&db, &a(r#"{"query":"()*"}"#), 1).is_err());
        assert!(memory_search(&db, &a(r#"{"query":"x","limit":-1}"#), 1).is_err());
        assert!(memory_forget(&db, &a(r#"{"key":5}"#)).is_err());
    }
}
