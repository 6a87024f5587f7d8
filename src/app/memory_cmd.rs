//! `yoctoclaw memory …`: search, list, add, forget, export and import, for the owner.
//!
//! Exit statuses follow the CLI's: 0 done, 1 runtime failure (unknown key, unreadable
//! file, database error), 2 bad usage (unknown category, empty text or query).
//!
//! # Bounds
//! `list` and `search` print at most `MAX_MEMORY_LIST_ROWS` rows (list says how many it
//! left out); texts in `list` are cut to `LIST_TEXT_CHARS` characters. `export` streams
//! one row at a time; `import` reads one bounded line at a time inside one transaction,
//! reporting at most `MAX_REPORTED_SKIPS` skipped entries by line number.
//!
//! # Threads
//! Main thread: one command, SQLite and stdout.

use super::{AppError, runtime};
use crate::args::MemorySub;
use crate::memory::transfer::{self, Entry, MAX_IMPORT_LINE_BYTES, Markdown};
use crate::memory::{age, derive_key};
use crate::store::Db;
use crate::store::memory::{Category, MAX_MEMORY_LIST_ROWS, MemoryError, Stored};
use std::io::{BufRead, Write};
use std::path::Path;

/// Characters of a memory's text shown by `list`.
pub const LIST_TEXT_CHARS: usize = 200;
/// Skipped import entries reported one by one (the rest are only counted).
pub const MAX_REPORTED_SKIPS: usize = 20;

/// Run one `memory` subcommand, printing to `out`.
pub fn run(db: &Db, sub: MemorySub, now: i64, out: &mut impl Write) -> Result<(), AppError> {
    let r = match sub {
        MemorySub::Search(s) => search(db, &s.query.join(" "), s.limit, now, out),
        MemorySub::List(l) => list(db, l.category.as_deref(), now, out),
        MemorySub::Add(a) => add(
            db,
            &a.key,
            &a.text.join(" "),
            a.category.as_deref(),
            now,
            out,
        ),
        MemorySub::Forget(f) => forget(db, &f.key, out),
        MemorySub::Export(_) => export(db, out),
        MemorySub::Import(i) => import(db, &i.file, now, out),
    };
    match r {
        Err(AppError::Runtime(m)) if m == BROKEN_PIPE => Ok(()),
        other => other,
    }
}

const BROKEN_PIPE: &str = "\0broken pipe";

fn io(e: std::io::Error) -> AppError {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        AppError::Runtime(BROKEN_PIPE.into())
    } else {
        AppError::Runtime(format!("cannot write the output: {e}"))
    }
}

fn parse_category(name: Option<&str>) -> Result<Option<Category>, AppError> {
    match name {
        None => Ok(None),
        Some(n) => Category::parse(n).map(Some).ok_or_else(|| {
            AppError::Usage(format!(
                "unknown category {n:?}: use core, daily, conversation or custom"
            ))
        }),
    }
}

fn one_line(s: &str, max_chars: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max_chars {
        return flat;
    }
    let mut t: String = flat.chars().take(max_chars).collect();
    t.push('…');
    t
}

fn search(
    db: &Db,
    query: &str,
    limit: u32,
    now: i64,
    out: &mut impl Write,
) -> Result<(), AppError> {
    let Some(q) = crate::store::fts_query::FtsQuery::from_text(query) else {
        return Err(AppError::Usage(
            "give words to search for: yoctoclaw memory search WORDS".into(),
        ));
    };
    let limit = (limit as usize).clamp(1, MAX_MEMORY_LIST_ROWS);
    let hits = db.memory_search(&q, None, limit).map_err(runtime)?;
    if hits.is_empty() {
        writeln!(out, "no memories match {:?}", query.trim()).map_err(io)?;
    }
    for h in hits {
        writeln!(
            out,
            "{} ({}, {}): {}",
            h.key,
            h.category,
            age(now, h.updated),
            one_line(&h.snippet, LIST_TEXT_CHARS)
        )
        .map_err(io)?;
    }
    Ok(())
}

fn list(db: &Db, category: Option<&str>, now: i64, out: &mut impl Write) -> Result<(), AppError> {
    let cat = parse_category(category)?;
    let mut shown = 0usize;
    let mut err = None;
    db.memory_list(cat, MAX_MEMORY_LIST_ROWS, |m| {
        let r = writeln!(
            out,
            "{} ({}, {}): {}",
            m.key,
            m.category,
            age(now, m.updated),
            one_line(&m.text, LIST_TEXT_CHARS)
        );
        shown += 1;
        match r {
            Ok(()) => true,
            Err(e) => {
                err = Some(e);
                false
            }
        }
    })
    .map_err(runtime)?;
    if let Some(e) = err {
        return Err(io(e));
    }
    if shown == 0 {
        match cat {
            Some(c) => writeln!(out, "no {c} memories stored"),
            None => writeln!(out, "no memories stored"),
        }
        .map_err(io)?;
    } else if shown >= MAX_MEMORY_LIST_ROWS {
        let total: u64 = match cat {
            None => db.memory_total().map_err(runtime)?,
            Some(c) => db
                .memory_counts()
                .map_err(runtime)?
                .into_iter()
                .filter(|(k, _)| *k == c)
                .map(|(_, n)| n)
                .sum(),
        };
        if total > shown as u64 {
            eprintln!(
                "yoctoclaw: showing the newest {shown} of {total} memories; yoctoclaw memory export prints them all"
            );
        }
    }
    Ok(())
}

fn add(
    db: &Db,
    key: &str,
    text: &str,
    category: Option<&str>,
    now: i64,
    out: &mut impl Write,
) -> Result<(), AppError> {
    let cat = parse_category(category)?.unwrap_or(Category::Core);
    let stored = db.memory_store(key, text, cat, now).map_err(|e| match e {
        MemoryError::BadKey(m) | MemoryError::BadText(m) => AppError::Usage(m),
        other => runtime(other),
    })?;
    let verb = match stored {
        Stored::Created => "stored",
        Stored::Updated => "updated",
    };
    writeln!(out, "{verb} {:?} ({cat})", key.trim()).map_err(io)
}

fn forget(db: &Db, key: &str, out: &mut impl Write) -> Result<(), AppError> {
    if db.memory_forget(key).map_err(runtime)? {
        writeln!(out, "forgot {:?}", key.trim()).map_err(io)
    } else {
        Err(AppError::Runtime(format!(
            "no memory has the key {:?} (see yoctoclaw memory list)",
            key.trim()
        )))
    }
}

fn export(db: &Db, out: &mut impl Write) -> Result<(), AppError> {
    db.memory_walk::<WalkError>(|m| {
        writeln!(out, "{}", transfer::to_json_line(&m)).map_err(WalkError::Io)
    })
    .map_err(|e| match e {
        WalkError::Io(e) => io(e),
        WalkError::Store(e) => runtime(e),
    })?;
    out.flush().map_err(io)
}

enum WalkError {
    Io(std::io::Error),
    Store(crate::store::StoreError),
}

impl From<crate::store::StoreError> for WalkError {
    fn from(e: crate::store::StoreError) -> Self {
        WalkError::Store(e)
    }
}

/// What an import did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub created: usize,
    pub updated: usize,
    pub skipped: usize,
}

fn import(db: &Db, file: &Path, now: i64, out: &mut impl Write) -> Result<(), AppError> {
    let f = std::fs::File::open(file)
        .map_err(|e| AppError::Runtime(format!("cannot read {}: {e}", file.display())))?;
    let mut reader = std::io::BufReader::new(f);
    let report = import_from(db, &mut reader, now, &mut |line, why| {
        eprintln!("yoctoclaw: {} line {line}: skipped: {why}", file.display());
    })?;
    let done = report.created + report.updated;
    if done == 0 && report.skipped > 0 {
        return Err(AppError::Runtime(format!(
            "nothing imported from {}: all {} entries were skipped",
            file.display(),
            report.skipped
        )));
    }
    writeln!(
        out,
        "imported {done} memories from {} ({} new, {} updated, {} skipped)",
        file.display(),
        report.created,
        report.updated,
        report.skipped
    )
    .map_err(io)
}

/// Import JSON lines (when the first non-blank line starts with `{`) or markdown, in one
/// transaction. `skip(line, why)` is told about the first `MAX_REPORTED_SKIPS` skips.
pub fn import_from(
    db: &Db,
    r: &mut impl BufRead,
    now: i64,
    skip: &mut dyn FnMut(usize, &str),
) -> Result<ImportReport, AppError> {
    let tx = db.conn.unchecked_transaction().map_err(runtime)?;
    let mut report = ImportReport::default();
    let mut buf = Vec::new();
    let mut json_mode: Option<bool> = None;
    let mut md = Markdown::default();
    let mut line_no = 0usize;
    let mut note = |report: &mut ImportReport, line: usize, why: &str| {
        report.skipped += 1;
        if report.skipped <= MAX_REPORTED_SKIPS {
            skip(line, why);
        }
    };
    loop {
        let read = transfer::read_line_bounded(r, &mut buf, MAX_IMPORT_LINE_BYTES)
            .map_err(|e| AppError::Runtime(format!("cannot read the import file: {e}")))?;
        let Some(too_long) = read else { break };
        line_no += 1;
        let text = String::from_utf8_lossy(&buf);
        let text = if line_no == 1 {
            text.trim_start_matches('\u{feff}').to_string()
        } else {
            text.into_owned()
        };
        if json_mode.is_none() && !text.trim().is_empty() {
            json_mode = Some(text.trim_start().starts_with('{'));
        }
        if json_mode == Some(true) {
            if text.trim().is_empty() {
                continue;
            }
            if too_long {
                note(&mut report, line_no, "line too long");
                continue;
            }
            match transfer::parse_json_line(&text) {
                Ok(e) => put(db, e, now, &mut report, line_no, &mut note)?,
                Err(why) => note(&mut report, line_no, &why),
            }
        } else if let Some((start, t)) = md.line(&text) {
            put(db, Entry::text(t), now, &mut report, start, &mut note)?;
        }
    }
    if let Some((start, t)) = md.finish() {
        put(db, Entry::text(t), now, &mut report, start, &mut note)?;
    }
    tx.commit().map_err(runtime)?;
    Ok(report)
}

fn put(
    db: &Db,
    e: Entry,
    now: i64,
    report: &mut ImportReport,
    line: usize,
    note: &mut impl FnMut(&mut ImportReport, usize, &str),
) -> Result<(), AppError> {
    let key = e.key.unwrap_or_else(|| derive_key(&e.text));
    let updated = e.updated.unwrap_or(now);
    let created = e.created.unwrap_or(updated);
    match db.memory_put(&key, &e.text, e.category, created, updated) {
        Ok(Stored::Created) => report.created += 1,
        Ok(Stored::Updated) => report.updated += 1,
        Err(MemoryError::Store(s)) => return Err(runtime(s)),
        Err(MemoryError::Full) => return Err(runtime(MemoryError::Full)),
        Err(other) => note(report, line, &other.to_string()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_import(db: &Db, text: &str) -> (ImportReport, Vec<(usize, String)>) {
        let mut skips = Vec::new();
        let mut r = std::io::Cursor::new(text.as_bytes().to_vec());
        let rep =
            import_from(db, &mut r, 1000, &mut |l, w| skips.push((l, w.to_string()))).unwrap();
        (rep, skips)
    }

    #[test]
    fn export_then_import_round_trips() {
        let a = Db::open_in_memory().unwrap();
        a.memory_put("tea", "likes \"green\" tea\nno sugar", Category::Core, 5, 7)
            .unwrap();
        a.memory_put("ünï", "東京 🎉", Category::Custom, 8, 9)
            .unwrap();
        let mut dump = Vec::new();
        export(&a, &mut dump).unwrap();
        let b = Db::open_in_memory().unwrap();
        let (rep, skips) = run_import(&b, &String::from_utf8(dump.clone()).unwrap());
        assert_eq!(
            rep,
            ImportReport {
                created: 2,
                updated: 0,
                skipped: 0
            },
            "{skips:?}"
        );
        let mut again = Vec::new();
        export(&b, &mut again).unwrap();
        assert_eq!(dump, again);
        // Importing twice updates instead of duplicating.
        let (rep, _) = run_import(&b, &String::from_utf8(dump).unwrap());
        assert_eq!(rep.updated, 2);
        assert_eq!(b.memory_total().unwrap(), 2);
    }

    #[test]
    fn markdown_import_derives_keys_and_reports_skips() {
        let db = Db::open_in_memory().unwrap();
        let big = "x".repeat(5000);
        let text = format!(
            "# Memory\n\n- Owner is Ada\n- Ada likes tea\n\n{big}\n\nA closing paragraph.\n"
        );
        let (rep, skips) = run_import(&db, &text);
        assert_eq!(rep.created, 3, "{skips:?}");
        assert_eq!(rep.skipped, 1);
        assert_eq!(skips[0].0, 6, "{skips:?}");
        assert!(skips[0].1.contains("shorter"), "{skips:?}");
        let m = db.memory_get(&derive_key("Owner is Ada")).unwrap().unwrap();
        assert_eq!(m.category, Category::Core);
        assert_eq!(m.created, 1000);
    }

    #[test]
    fn json_import_skips_bad_lines() {
        let db = Db::open_in_memory().unwrap();
        let text = "{\"text\":\"one\"}\nnot json\n\n{\"text\":\"two\",\"category\":\"bogus\"}\n{\"key\":\"k\",\"text\":\"three\",\"category\":\"daily\"}\n";
        let (rep, skips) = run_import(&db, text);
        assert_eq!((rep.created, rep.skipped), (2, 2));
        assert_eq!(skips[0].0, 2);
        assert_eq!(skips[1].0, 4);
        assert_eq!(
            db.memory_get("k").unwrap().unwrap().category,
            Category::Daily
        );
    }

    #[test]
    fn commands_print_and_fail_clearly() {
        let db = Db::open_in_memory().unwrap();
        let mut out = Vec::new();
        add(&db, "tea", "likes green tea", None, 100, &mut out).unwrap();
        add(&db, "tea", "likes black tea", Some("daily"), 100, &mut out).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out),
            "stored \"tea\" (core)\nupdated \"tea\" (daily)\n"
        );
        let e = add(&db, "x", "y", Some("weekly"), 1, &mut out).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let e = add(&db, "x", " ", None, 1, &mut out).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let e = forget(&db, "nope", &mut out).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().contains("no memory has the key \"nope\""));
        let mut out = Vec::new();
        search(&db, "black (tea", 10, 100 + 7200, &mut out).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out),
            "tea (daily, 2h ago): likes [black] [tea]\n"
        );
        assert_eq!(
            search(&db, "?!", 10, 1, &mut out).unwrap_err().exit_code(),
            2
        );
        let mut out = Vec::new();
        list(&db, Some("core"), 1, &mut out).unwrap();
        assert_eq!(String::from_utf8_lossy(&out), "no core memories stored\n");
    }
}
