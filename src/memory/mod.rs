//! Long-term memory on top of `store::memory`: the memory
//! section of the system prompt, retention, derived keys, export/import formats (the
//! `memory` command is `app::memory_cmd`).
//!
//! # Retention
//! [`run_retention`] deletes `daily`, `conversation` and `custom` memories whose last
//! update is older than `memory.*_days`; `core` memories never expire. It deletes the
//! audit trail's rows older than `memory.audit_days`. Then it merges
//! the full-text index's segments (`Db::memory_index_tidy`, bounded work). The `agent`
//! command runs it at start; the gateway runs it at start and once a day.
//!
//! # Bounds
//! Derived keys are at most `MAX_SLUG_BYTES` plus a 9-byte hash suffix. Everything else
//! is bounded in the submodules and in `store::memory`.
//!
//! # Threads
//! Executor thread (it owns the SQLite connection); each call is one short statement or
//! read, nothing here awaits I/O of its own.

pub mod inject;
pub mod transfer;

use crate::config::MemoryConfig;
use crate::store::memory::Category;
use crate::store::{Db, StoreError};

/// Longest slug part of a derived key.
pub const MAX_SLUG_BYTES: usize = 40;
/// Words of the text used for a derived key's slug.
pub const SLUG_WORDS: usize = 5;
const SECS_PER_DAY: i64 = 86_400;

/// Delete expired memories; returns how many were deleted. `core` never expires.
pub fn run_retention(db: &Db, cfg: &MemoryConfig, now: i64) -> Result<usize, StoreError> {
    let mut total = 0;
    for (cat, days) in [
        (Category::Daily, cfg.daily_days),
        (Category::Conversation, cfg.conversation_days),
        (Category::Custom, cfg.custom_days),
    ] {
        let days = i64::try_from(days).unwrap_or(i64::MAX);
        let cutoff = now.saturating_sub(days.saturating_mul(SECS_PER_DAY));
        total += db.memory_delete_older_than(cat, cutoff)?;
    }
    if total > 0 {
        log::info!("memory retention deleted {total} expired memories");
    }
    let days = i64::try_from(cfg.audit_days).unwrap_or(i64::MAX);
    let audit =
        db.audit_delete_older_than(now.saturating_sub(days.saturating_mul(SECS_PER_DAY)))?;
    if audit > 0 {
        log::info!("retention deleted {audit} audit trail rows older than {days} days");
    }
    db.memory_index_tidy()?;
    Ok(total)
}

/// A stable key for a memory stored without one: a slug of its first words and a short
/// hash of the whole text (case and spacing ignored), e.g. `likes-green-tea-1a2b3c4d`.
pub fn derive_key(text: &str) -> String {
    let mut slug = String::new();
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(SLUG_WORDS)
    {
        let w = word.to_lowercase();
        let extra = if slug.is_empty() { 0 } else { 1 };
        if slug.len() + extra + w.len() > MAX_SLUG_BYTES {
            break;
        }
        if extra == 1 {
            slug.push('-');
        }
        slug.push_str(&w);
    }
    if slug.is_empty() {
        slug.push_str("memory");
    }
    format!("{slug}-{:08x}", text_hash(text) as u32)
}

/// Hash of a memory's text with case and spacing ignored: two texts that differ only
/// there are the same memory (what [`derive_key`] appends, in full).
pub fn text_hash(text: &str) -> u64 {
    let normalised: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    fnv1a(normalised.as_bytes())
}

/// FNV-1a, 64 bits: stable across builds and platforms.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// How long ago `then` was, short: `just now`, `5m ago`, `3h ago`, `3d ago`.
pub fn age(now: i64, then: i64) -> String {
    let d = now.saturating_sub(then);
    if d < 60 {
        "just now".to_string()
    } else if d < 3600 {
        format!("{}m ago", d / 60)
    } else if d < SECS_PER_DAY {
        format!("{}h ago", d / 3600)
    } else {
        format!("{}d ago", d / SECS_PER_DAY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_keys_are_stable_and_readable() {
        let a = derive_key("Likes green tea, no sugar.");
        assert!(a.starts_with("likes-green-tea-no-sugar-"), "{a}");
        assert_eq!(a, derive_key("  likes green   TEA, no sugar. "));
        assert_ne!(a, derive_key("Likes green tea, with sugar."));
        assert!(derive_key("🎉🎉").starts_with("memory-"));
        let long = derive_key(&"supercalifragilistic ".repeat(10));
        assert!(long.len() <= MAX_SLUG_BYTES + 9, "{long}");
        assert!(derive_key(&"é".repeat(100)).len() <= MAX_SLUG_BYTES + 9);
        // Fixed hash: keys must not change between releases.
        assert_eq!(derive_key("x"), "x-86021707");
    }

    #[test]
    fn ages_are_short() {
        assert_eq!(age(100, 90), "just now");
        assert_eq!(age(100, 200), "just now");
        assert_eq!(age(4000, 100), "1h ago");
        assert_eq!(age(700, 100), "10m ago");
        assert_eq!(age(3 * 86_400 + 5, 0), "3d ago");
        assert_eq!(
            age(i64::MAX, i64::MIN),
            format!("{}d ago", i64::MAX / 86_400)
        );
    }

    #[test]
    fn retention_keeps_core_and_fresh_rows() {
        let db = Db::open_in_memory().unwrap();
        let cfg = MemoryConfig::default();
        let now = 1_000 * SECS_PER_DAY;
        let ago = |days: i64| now - days * SECS_PER_DAY - 1;
        db.memory_store("core-old", "x", Category::Core, ago(5000))
            .unwrap();
        db.memory_store("daily-old", "x", Category::Daily, ago(31))
            .unwrap();
        db.memory_store("daily-new", "x", Category::Daily, ago(29))
            .unwrap();
        db.memory_store("conv-old", "x", Category::Conversation, ago(7))
            .unwrap();
        db.memory_store("conv-new", "x", Category::Conversation, ago(6))
            .unwrap();
        db.memory_store("custom-old", "x", Category::Custom, ago(90))
            .unwrap();
        db.memory_store("custom-new", "x", Category::Custom, ago(89))
            .unwrap();
        assert_eq!(run_retention(&db, &cfg, now).unwrap(), 3);
        for k in ["core-old", "daily-new", "conv-new", "custom-new"] {
            assert!(db.memory_get(k).unwrap().is_some(), "{k}");
        }
        for k in ["daily-old", "conv-old", "custom-old"] {
            assert!(db.memory_get(k).unwrap().is_none(), "{k}");
        }
        // Huge configured days never overflow.
        let cfg = MemoryConfig {
            daily_days: u64::MAX,
            ..MemoryConfig::default()
        };
        assert_eq!(run_retention(&db, &cfg, now).unwrap(), 0);
    }
}
