//! Writing a plan into the yoctoclaw home, or on a dry run saying what would be written,
//! item by item on stdout, with one status word each:
//!
//! - `new`: not there yet (brought, or would be);
//! - `replace`: there and different, replaced because of `--force` or because it is the
//!   unedited onboard template;
//! - `same`: already there (a second run adds nothing);
//! - `kept`: there and different, left alone (`--force` replaces it);
//! - `skip`: cannot come across, with the reason.
//!
//! Memories and cron jobs go into the database in one transaction: an interrupted or
//! failed import leaves none of them. A memory is "already there" when its key or its
//! text (case and spacing ignored) is; a job when the same schedule and text are. Jobs
//! are checked and planned as `yoctoclaw cron add` does (`jobs::check`).
//!
//! # Bounds
//! Progress is printed every `PROGRESS_EVERY` memories (`PROGRESS_PLAIN_EVERY` when stdout
//! is not a terminal) once a plan holds at least `PROGRESS_MIN_MEMORIES`; at most
//! `MAX_REPORTED_REFUSALS` refused memories are named per source. The duplicate check
//! holds two `u64` hashes per memory (stored ones and the plan's), in a table at most
//! four times that size.
//!
//! # Threads
//! Main thread (`yoctoclaw migrate`).
//!
//! # Blocking
//! File writes (with fsync) and SQLite on the calling thread.

use super::mcp::Server;
use super::source::{each_row, open_ro};
use super::{MigrateError, Plan, When};
use crate::config::{Env, Home};
use crate::files::{create_dir_private, read_regular, write_atomic};
use crate::jobs::JobRequest;
use crate::limits::MAX_SECRETS_BYTES;
use crate::memory::{derive_key, text_hash};
use crate::onboard::{CONFIG_TEMPLATE, WORKSPACE_FILES};
use crate::store::memory::{MemoryError, check_key, check_text};
use crate::store::{Db, StoreError, cron::NewCronJob};
use crate::time::tz::Tz;
use rusqlite::{Connection, OpenFlags};
use std::io::{IsTerminal, Write};
use std::path::Path;

/// The note on a file that stays as it is.
const KEPT: &str = ": exists and differs (--force replaces it)";
/// The end of the first and the last line of a dry run.
const DRY_RUN: &str = " (dry run: nothing was written)\n";

/// Memories in a plan from which progress is shown.
pub const PROGRESS_MIN_MEMORIES: usize = 1000;
/// Memories between two progress updates on a terminal (one updating line).
pub const PROGRESS_EVERY: usize = 250;
/// Memories between two progress lines when stdout is not a terminal.
pub const PROGRESS_PLAIN_EVERY: usize = 1000;
/// Refused memories named one by one per source (the rest are counted).
pub const MAX_REPORTED_REFUSALS: usize = 3;

/// How to apply.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub dry_run: bool,
    pub force: bool,
    /// Show progress on one updating line (stdout is a terminal).
    pub tty: bool,
}

impl Options {
    pub fn new(dry_run: bool, force: bool) -> Options {
        Options {
            dry_run,
            force,
            tty: std::io::stdout().is_terminal(),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum St {
    New,
    Replace,
    Same,
    Kept,
    Skip,
}

/// Text to stdout (a closed stdout is not an error: the import still completes).
fn out(s: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(s.as_bytes());
    let _ = o.flush();
}

/// The report: one line per item, and how many of each status.
struct Report {
    counts: [usize; 5],
    dry_run: bool,
    force: bool,
}

impl Report {
    /// One item: its status word, its kind, then `parts` as they are.
    fn line(&mut self, st: St, kind: &str, parts: &[&str]) {
        self.counts[st as usize] += 1;
        let mut s = String::with_capacity(96);
        s.push_str("  ");
        for (w, col) in [
            (["new", "replace", "same", "kept", "skip"][st as usize], 10),
            (kind, 19),
        ] {
            s.push_str(w);
            while s.len() < col {
                s.push(' ');
            }
        }
        for p in parts {
            s.push_str(p);
        }
        s.push('\n');
        out(&s);
    }
}

impl From<StoreError> for MigrateError {
    fn from(e: StoreError) -> Self {
        MigrateError::Store(e.to_string())
    }
}

fn write(path: &Path, text: &str, mode: u32) -> Result<(), MigrateError> {
    if let Some(dir) = path.parent() {
        create_dir_private(dir, 0o700).map_err(|e| MigrateError::Write(dir.to_path_buf(), e))?;
    }
    write_atomic(path, text.as_bytes(), mode)
        .map_err(|e| MigrateError::Write(path.to_path_buf(), e))
}

/// Apply `plan` (read from `src_dir`) to `home`, printing one line per item to stdout.
/// Returns whether anything from the peer is (or would be) in the home afterwards.
#[inline(never)]
pub fn apply(
    plan: &Plan,
    src_dir: &Path,
    home: &Home,
    opts: &Options,
) -> Result<bool, MigrateError> {
    let dry = if opts.dry_run { DRY_RUN } else { "\n" };
    out(&[
        "migrate from ",
        plan.peer.name(),
        " at ",
        &src_dir.to_string_lossy(),
        " into ",
        &home.dir.to_string_lossy(),
        dry,
    ]
    .concat());
    let r = &mut Report {
        counts: [0; 5],
        dry_run: opts.dry_run,
        force: opts.force,
    };
    let tz_name = config(plan, home, r)?;
    secrets(plan, home, r)?;
    let ws = home.workspace();
    for (dest, text) in &plan.files {
        let path = ws.join(dest);
        let template = WORKSPACE_FILES.iter().find(|(n, _)| n == dest);
        let st = decide(r, &path, text, template.map(|t| t.1));
        let note = if st == St::Kept { KEPT } else { "" };
        r.line(st, "file", &["workspace/", dest, note]);
        write_if(r, st, &path, text, 0o644)?;
    }
    database(plan, home, &tz_name, opts, r)?;
    for (kind, what) in &plan.skipped {
        r.line(St::Skip, kind, &[what]);
    }
    let mut s = String::new();
    for (n, label) in r.counts.iter().zip([
        " new, ",
        " replaced, ",
        " already there, ",
        " kept, ",
        " skipped",
    ]) {
        s.push_str(&n.to_string());
        s.push_str(label);
    }
    s.push_str(dry);
    out(&s);
    let [new, replace, same, ..] = r.counts;
    Ok(new + replace + same > 0)
}

/// What to do with a file that may exist.
fn decide(r: &Report, path: &Path, new: &str, template: Option<&str>) -> St {
    let t = template.unwrap_or("");
    // One byte more than either: a longer file is neither.
    match read_regular(path, new.len().max(t.len()) + 1, true) {
        Err(_) => St::New,
        Ok((old, _)) if old == new.as_bytes() => St::Same,
        Ok((old, _)) if r.force || (template.is_some() && old == t.as_bytes()) => St::Replace,
        Ok(_) => St::Kept,
    }
}

/// Write `text` unless this is a dry run or the status says to leave the file alone.
fn write_if(r: &Report, st: St, path: &Path, text: &str, mode: u32) -> Result<(), MigrateError> {
    if matches!(st, St::New | St::Replace) && !r.dry_run {
        write(path, text, mode)?;
    }
    Ok(())
}

/// `config.json` as onboard writes it, with the plan's values set. Returns the time zone
/// the home's jobs run in.
#[inline(never)]
fn config(plan: &Plan, home: &Home, r: &mut Report) -> Result<String, MigrateError> {
    let path = home.config_file();
    let mut tz = plan.timezone.as_deref();
    if let Some(t) = tz
        && let Err(e) = Tz::parse(t)
    {
        r.line(
            St::Skip,
            "config",
            &["agent.timezone ", t, ": ", &e.to_string(), "; UTC is used"],
        );
        tz = None;
    }
    // Whether the home's own config.json stays what it is.
    let mut existing = true;
    // Each MCP server is checked alone, as the config would load it: one that would not
    // load is a skip line, the others still come.
    let mut servers = Vec::with_capacity(plan.mcp.len());
    for m in &plan.mcp {
        let text = config_text_with(plan, tz, std::slice::from_ref(m));
        match crate::config::parse(Some(&text), &path, &Env::empty()) {
            Ok(_) => servers.push(m.clone()),
            Err(e) => r.line(St::Skip, "mcp", &[&m.name, ": ", &e.to_string()]),
        }
    }
    if !plan.providers.is_empty()
        || plan.telegram.is_some()
        || tz.is_some()
        || !plan.settings.is_empty()
        || !servers.is_empty()
    {
        let text = config_text_with(plan, tz, &servers);
        match crate::config::parse(Some(&text), &path, &Env::default()) {
            Err(e) => r.line(
                St::Skip,
                "config",
                &[
                    "config.json would not load (",
                    &e.to_string(),
                    "): not written",
                ],
            ),
            Ok(_) => {
                // The settings share the status of the file that holds them.
                let st = decide(r, &path, &text, Some(CONFIG_TEMPLATE));
                for (i, p) in plan.providers.iter().enumerate() {
                    r.line(
                        st,
                        if i == 0 { "provider" } else { "fallback" },
                        &[
                            if p.anthropic { "anthropic " } else { "openai " },
                            &p.base_url,
                            " model ",
                            &p.model,
                            " (the peer's ",
                            &p.from,
                            "; key in ",
                            &p.key_env,
                            ")",
                        ],
                    );
                }
                if let Some(t) = &plan.telegram {
                    let who = if t.allow_from.is_empty() {
                        "nobody".to_string()
                    } else {
                        t.allow_from.join(", ")
                    };
                    let on = if t.enabled { "on" } else { "off" };
                    r.line(st, "telegram", &[on, ", allow_from: ", &who]);
                }
                for set in &plan.settings {
                    r.line(
                        st,
                        "setting",
                        &[set.key, " ", &set.value, " (the peer's ", &set.from, ")"],
                    );
                }
                for m in &servers {
                    r.line(st, "mcp", &[&m.name, ": ", &m.note]);
                }
                let note = if st == St::Kept { KEPT } else { "" };
                r.line(st, "config", &[&path.to_string_lossy(), note]);
                write_if(r, st, &path, &text, 0o600)?;
                existing = st == St::Kept;
            }
        }
    }
    Ok(match tz {
        _ if existing => crate::config::load(home, &Env::default())
            .map_or_else(|_| "UTC".to_string(), |c| c.agent.timezone),
        Some(t) => t.to_string(),
        None => "UTC".to_string(),
    })
}

/// The onboard template with the plan's values set in place (comments and order kept):
/// each setting's line is found by its key, in its section (`provider.model`,
/// `heartbeat.enabled`; top-level keys have no section).
#[cfg(test)]
pub fn config_text(plan: &Plan, tz: Option<&str>) -> String {
    config_text_with(plan, tz, &plan.mcp)
}

/// [`config_text`] with `servers` as `mcp.servers` (one line each).
#[inline(never)]
pub fn config_text_with(plan: &Plan, tz: Option<&str>, servers: &[Server]) -> String {
    let quote = crate::json::quote;
    let kind = |anthropic: bool| {
        if anthropic {
            "\"anthropic\""
        } else {
            "\"openai\""
        }
    };
    // (key, new value as JSON text).
    let mut set: Vec<(&str, String)> = Vec::new();
    if let Some((p, fallbacks)) = plan.providers.split_first() {
        set.push(("provider.kind", kind(p.anthropic).into()));
        set.push(("provider.base_url", quote(&p.base_url)));
        set.push(("provider.model", quote(&p.model)));
        let mut list = String::from("[");
        for p in fallbacks {
            for part in [
                "\n    { \"kind\": ",
                kind(p.anthropic),
                ", \"base_url\": ",
                &quote(&p.base_url),
                ", \"model\": ",
                &quote(&p.model),
                ", \"api_key_env\": ",
                &quote(&p.key_env),
                " },",
            ] {
                list.push_str(part);
            }
        }
        list.pop();
        list.push_str("\n  ]");
        if !fallbacks.is_empty() {
            set.push(("fallbacks", list));
        }
    }
    if let Some(t) = &plan.telegram {
        if t.enabled {
            set.push(("telegram.enabled", "true".into()));
        }
        let ids: Vec<String> = t.allow_from.iter().map(|a| quote(a)).collect();
        set.push(("telegram.allow_from", ["[", &ids.join(", "), "]"].concat()));
    }
    if let Some(tz) = tz {
        set.push(("agent.timezone", quote(tz)));
    }
    for st in &plan.settings {
        set.push((st.key, st.value.clone()));
    }
    if !servers.is_empty() {
        let mut obj = String::from("{");
        for m in servers {
            for part in ["\n      ", &quote(&m.name), ": ", &m.entry, ","] {
                obj.push_str(part);
            }
        }
        obj.pop();
        obj.push_str("\n    }");
        set.push(("mcp.servers", obj));
    }
    let mut s = String::with_capacity(CONFIG_TEMPLATE.len() + 512);
    let mut section = "";
    for line in CONFIG_TEMPLATE.split_inclusive('\n') {
        let t = line.trim_start();
        let indent = &line[..line.len() - t.len()];
        let Some((key, value)) = t.strip_prefix('"').and_then(|r| r.split_once("\": ")) else {
            s.push_str(line);
            continue;
        };
        let path = match indent.len() {
            2 => {
                // A section opens on its own line (inline ones are not set here).
                section = if value.trim_end() == "{" { key } else { "" };
                key.to_string()
            }
            4 if !section.is_empty() => [section, ".", key].concat(),
            _ => String::new(),
        };
        match set.iter().position(|(k, _)| *k == path) {
            Some(i) => {
                let (_, new) = set.swap_remove(i);
                let comma = if value.trim_end().ends_with(',') {
                    ","
                } else {
                    ""
                };
                for part in [indent, "\"", key, "\": ", &new, comma, "\n"] {
                    s.push_str(part);
                }
            }
            None => s.push_str(line),
        }
    }
    s
}

/// Keys and the bot token into `secrets.env` (mode 0600), never anywhere else; only the
/// variables' names are printed.
#[inline(never)]
fn secrets(plan: &Plan, home: &Home, r: &mut Report) -> Result<(), MigrateError> {
    if plan.secrets.is_empty() {
        return Ok(());
    }
    let path = home.secrets_file();
    let old = read_regular(&path, MAX_SECRETS_BYTES as usize, true)
        .unwrap_or_default()
        .0;
    let old = String::from_utf8_lossy(&old);
    let entry = |l| crate::config::secret_line(l).flatten();
    let mut text = String::with_capacity(old.len() + 256);
    let mut changed = false;
    // Existing lines stay; with --force a line of ours that differs is replaced.
    for l in old.lines() {
        match entry(l).and_then(|(k, v)| Some((plan.secrets.iter().find(|s| s.name == k)?, v))) {
            Some((s, v)) if v != s.value && r.force => {
                for part in [&s.name, "=", &s.value] {
                    text.push_str(part);
                }
                changed = true;
            }
            _ => text.push_str(l),
        }
        text.push('\n');
    }
    for s in &plan.secrets {
        let st = match old
            .lines()
            .find_map(|l| entry(l).filter(|(k, _)| *k == s.name))
        {
            None => {
                for part in [&s.name, "=", &s.value, "\n"] {
                    text.push_str(part);
                }
                changed = true;
                St::New
            }
            Some((_, v)) if v == s.value => St::Same,
            Some(_) if r.force => St::Replace,
            Some(_) => St::Kept,
        };
        let note = if st == St::Kept {
            " (holds another value; --force replaces it)"
        } else {
            ""
        };
        r.line(st, "secret", &[&s.name, " in secrets.env", note]);
    }
    write_if(
        r,
        if changed { St::New } else { St::Same },
        &path,
        &text,
        0o600,
    )
}

/// Hashes seen: a set with open addressing (0 marks an empty slot, so 0 is stored as 1).
#[derive(Default)]
struct Seen {
    slots: Vec<u64>,
    len: usize,
}

impl Seen {
    /// Where `h` is, or the empty slot where it would go.
    fn slot(&self, h: u64) -> (usize, bool) {
        let mask = self.slots.len().wrapping_sub(1);
        let mut i = h as usize & mask;
        loop {
            match self.slots.get(i) {
                Some(&x) if x == h => return (i, true),
                Some(&0) | None => return (i, false),
                Some(_) => i = (i + 1) & mask,
            }
        }
    }

    fn has(&self, h: u64) -> bool {
        self.slot(h.max(1)).1
    }

    fn add(&mut self, h: u64) {
        if (self.len + 1) * 2 > self.slots.len() {
            let grown = vec![0; (self.slots.len() * 2).max(1024)];
            let old = std::mem::replace(&mut self.slots, grown);
            self.len = 0;
            for x in old.into_iter().filter(|&x| x != 0) {
                self.add(x);
            }
        }
        let h = h.max(1);
        if let (i, false) = self.slot(h)
            && let Some(s) = self.slots.get_mut(i)
        {
            *s = h;
            self.len += 1;
        }
    }
}

/// A memory key's hash, kept apart from the texts' hashes.
fn key_hash(key: &str) -> u64 {
    text_hash(key) ^ 0x6b65_7973
}

/// Memories and jobs, in one transaction (dry run: read-only look at the database).
#[inline(never)]
fn database(
    plan: &Plan,
    home: &Home,
    tz_name: &str,
    opts: &Options,
    r: &mut Report,
) -> Result<(), MigrateError> {
    if plan.memories.is_empty() && plan.jobs.is_empty() {
        return Ok(());
    }
    let path = home.db_file();
    if opts.dry_run {
        // Never create or change anything: read an existing database without a journal
        // of our own (a live daemon's WAL is read through its existing -shm file).
        let peek = if path.exists() {
            let p = path.to_string_lossy();
            let wal = Path::new(&[&p, "-wal"].concat()).exists();
            let mut uri = String::from("file:");
            for c in p.chars() {
                match c {
                    '%' => uri.push_str("%25"),
                    '?' => uri.push_str("%3f"),
                    '#' => uri.push_str("%23"),
                    c => uri.push(c),
                }
            }
            uri.push_str(if wal { "?mode=ro" } else { "?immutable=1" });
            open_ro(Path::new(&uri), OpenFlags::SQLITE_OPEN_URI).ok()
        } else {
            None
        };
        return import(plan, peek.as_ref(), None, tz_name, opts, r);
    }
    create_dir_private(&home.dir, 0o700).map_err(|e| MigrateError::Write(home.dir.clone(), e))?;
    let db = Db::open(&path, crate::limits::DB_CACHE_KIB as u64)?;
    let store = |e: rusqlite::Error| MigrateError::Store(e.to_string());
    let tx = db.conn.unchecked_transaction().map_err(store)?;
    import(plan, Some(&db.conn), Some(&db), tz_name, opts, r)?;
    tx.commit().map_err(store)
}

/// The cells of every row of `sql` (an unreadable table reads as none).
fn rows(conn: Option<&Connection>, sql: &str, cols: usize, f: &mut dyn FnMut(&mut [String])) {
    if let Some(c) = conn {
        let _ = each_row(c, sql, cols, f);
    }
}

fn import(
    plan: &Plan,
    conn: Option<&Connection>,
    db: Option<&Db>,
    tz_name: &str,
    opts: &Options,
    r: &mut Report,
) -> Result<(), MigrateError> {
    let now = crate::time::now();
    // Texts and keys stored already, and those added by this import.
    let mut seen = Seen::default();
    rows(conn, "SELECT text, key FROM memories", 2, &mut |row| {
        seen.add(text_hash(&row[0]));
        seen.add(key_hash(&row[1]));
    });
    let total: usize = plan.memories.iter().map(|b| b.entries.len()).sum();
    let every = if opts.tty {
        PROGRESS_EVERY
    } else {
        PROGRESS_PLAIN_EVERY
    };
    let mut done = 0usize;
    for b in &plan.memories {
        let (mut new, mut same) = (0usize, 0usize);
        let mut refused = Vec::new();
        for e in &b.entries {
            done += 1;
            if total >= PROGRESS_MIN_MEMORIES && done.is_multiple_of(every) {
                let end = if opts.tty { "\r" } else { "\n" };
                out(&[
                    "  memories ",
                    &done.to_string(),
                    "/",
                    &total.to_string(),
                    end,
                ]
                .concat());
            }
            let text = e.text.trim();
            let key = match e.key.as_deref().map(check_key) {
                Some(Ok(k)) => k.to_string(),
                _ => derive_key(text),
            };
            let (th, kh) = (text_hash(text), key_hash(&key));
            if seen.has(th) || seen.has(kh) {
                same += 1;
                continue;
            }
            let stored = match (check_text(text), db) {
                (Err(e), _) => Err(e),
                (Ok(_), None) => Ok(()),
                (Ok(t), Some(db)) => {
                    let created = e.created.unwrap_or(now).min(now);
                    db.memory_put(&key, t, e.category, created, now).map(|_| ())
                }
            };
            match stored {
                Ok(()) => {
                    seen.add(th);
                    seen.add(kh);
                    new += 1;
                }
                Err(MemoryError::Store(s)) => return Err(s.into()),
                Err(e) => refused.push(e.to_string()),
            }
        }
        if total >= PROGRESS_MIN_MEMORIES && opts.tty {
            out("\r\x1b[K");
        }
        let st = if new > 0 {
            St::New
        } else if same > 0 {
            St::Same
        } else {
            St::Skip
        };
        let n = refused.len().to_string();
        let (sep, n, word) = if refused.is_empty() {
            ("", "", "")
        } else {
            (", ", n.as_str(), " refused")
        };
        r.line(
            st,
            "memory",
            &[
                &b.from,
                ": ",
                &new.to_string(),
                " new, ",
                &same.to_string(),
                " already there",
                sep,
                n,
                word,
            ],
        );
        for why in refused.iter().take(MAX_REPORTED_REFUSALS) {
            r.line(St::Skip, "memory", &[&b.from, ": ", why]);
        }
    }
    jobs(plan, conn, db, tz_name, now, r)
}

/// A peer's schedule as yoctoclaw schedule text, in `tz_name`.
#[inline(never)]
fn schedule_text(when: &When, tz_name: &str, tz: &Tz) -> Result<String, String> {
    Err(match when {
        When::Cron(_, Some(t)) if !t.eq_ignore_ascii_case(tz_name) => [
            "it runs in time zone ",
            t,
            ", yoctoclaw's jobs run in agent.timezone (",
            tz_name,
            ")",
        ]
        .concat(),
        When::Cron(expr, _) if expr.split_ascii_whitespace().nth(5).is_some() => {
            "yoctoclaw's cron expressions have five fields".into()
        }
        When::Cron(expr, _) => return Ok(expr.clone()),
        When::EveryMs(ms) if ms % 1000 != 0 => "its interval is not whole seconds".into(),
        When::EveryMs(ms) => return Ok(["every ", &(ms / 1000).to_string(), "s"].concat()),
        When::At(t) => return Ok(["at ", &tz.to_local(*t).to_string()].concat()),
    })
}

#[inline(never)]
fn jobs(
    plan: &Plan,
    conn: Option<&Connection>,
    db: Option<&Db>,
    tz_name: &str,
    now: i64,
    r: &mut Report,
) -> Result<(), MigrateError> {
    if plan.jobs.is_empty() {
        return Ok(());
    }
    let tz = crate::jobs::timezone(tz_name);
    // (schedule, text) of the jobs there already.
    let mut have = Vec::new();
    rows(
        conn,
        "SELECT schedule, prompt FROM cron_jobs",
        2,
        &mut |row| {
            have.push((std::mem::take(&mut row[0]), std::mem::take(&mut row[1])));
        },
    );
    for j in &plan.jobs {
        let what = ["\"", &j.name, "\": "].concat();
        let checked = match &tz {
            Ok(tz) => schedule_text(&j.when, tz_name, tz).and_then(|s| {
                let req = JobRequest {
                    schedule: &s,
                    text: &j.text,
                    to: Some(&j.target),
                    is_message: j.is_message,
                };
                crate::jobs::check(tz, &req, now, crate::time::build_epoch())
                    .map_err(|e| e.to_string())
            }),
            Err(e) => Err(e.to_string()),
        };
        let c = match checked {
            Ok(c) => c,
            Err(why) => {
                r.line(St::Skip, "cron", &[&what, &why]);
                continue;
            }
        };
        let to = if c.target.is_empty() {
            "the log"
        } else {
            &c.target
        };
        let kind = if j.is_message {
            ", message to "
        } else {
            ", prompt to "
        };
        let line = [what.as_str(), &c.schedule, kind, to];
        if have.iter().any(|(s, p)| *s == c.schedule && *p == j.text) {
            r.line(St::Same, "cron", &line);
            continue;
        }
        if let Some(db) = db {
            let job = NewCronJob {
                schedule: &c.schedule,
                prompt: &j.text,
                is_message: j.is_message,
                target: &c.target,
                next_run: c.next_run,
            };
            match db.add_cron_job(&job, now) {
                Ok(_) => {}
                Err(StoreError::Full(..)) => {
                    r.line(St::Skip, "cron", &[&what, "the cron table is full"]);
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        }
        r.line(St::New, "cron", &line);
        have.push((c.schedule, j.text.clone()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::{Peer, Telegram};

    #[test]
    fn config_text_keeps_onboards_shape_with_the_values_set() {
        let mut p = Plan::new(Peer::ZeroClaw);
        p.provider("anthropic", "claude-sonnet-4-6", None, false, None);
        p.provider("groq", "llama-3.3", None, false, None);
        p.telegram = Some(Telegram {
            enabled: true,
            allow_from: vec!["123".into(), "@ada".into()],
        });
        p.setting("provider.max_tokens", "4096", "max_tokens");
        p.setting("heartbeat.enabled", "false", "heartbeat.enabled");
        p.setting(
            "transcription.base_url",
            "\"https://api.groq.com/openai/v1\"",
            "groq",
        );
        p.setting("transcription.model", "\"whisper-large-v3\"", "groq");
        assert_eq!(p.settings.len(), 4);
        let text = config_text(&p, Some("+02:00"));
        let cfg =
            crate::config::parse(Some(&text), Path::new("c.json"), &Env::isolated(&[])).unwrap();
        // Each setting in its own section (`enabled` and `model` are in several).
        assert_eq!(cfg.provider.max_tokens, 4096);
        assert!(!cfg.heartbeat.enabled);
        assert_eq!(cfg.transcription.base_url, "https://api.groq.com/openai/v1");
        assert_eq!(cfg.transcription.model, "whisper-large-v3");
        use crate::config::ProviderKind;
        assert_eq!(cfg.provider.kind, ProviderKind::Anthropic);
        assert_eq!(cfg.provider.base_url, "https://api.anthropic.com");
        assert_eq!(cfg.provider.model, "claude-sonnet-4-6");
        assert_eq!(cfg.fallbacks.len(), 1);
        assert_eq!(cfg.fallbacks[0].kind, ProviderKind::OpenAi);
        assert_eq!(cfg.fallbacks[0].api_key_env, "GROQ_API_KEY");
        assert!(cfg.telegram.enabled);
        assert_eq!(cfg.telegram.allow_from, ["123", "@ada"]);
        assert_eq!(cfg.agent.timezone, "+02:00");
        // Same comments and key order as onboard's.
        let keys = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| l.trim().starts_with('"'))
                .filter_map(|l| l.trim().split_once("\":").map(|(k, _)| k.to_string()))
                .collect()
        };
        assert_eq!(keys(&text), keys(CONFIG_TEMPLATE));
        assert_eq!(
            config_text(&Plan::new(Peer::OpenClaw), None),
            CONFIG_TEMPLATE
        );
    }

    #[test]
    fn schedules_convert_or_say_why_not() {
        let tz = Tz::parse("UTC").unwrap();
        let s = |w: When| schedule_text(&w, "UTC", &tz);
        assert_eq!(
            s(When::Cron("0 9 * * 1-5".into(), None)).unwrap(),
            "0 9 * * 1-5"
        );
        assert_eq!(
            s(When::Cron("0 9 * * *".into(), Some("utc".into()))).unwrap(),
            "0 9 * * *"
        );
        assert!(
            s(When::Cron("0 9 * * *".into(), Some("Europe/Berlin".into())))
                .unwrap_err()
                .contains("Europe/Berlin")
        );
        assert!(
            s(When::Cron("0 0 9 * * *".into(), None))
                .unwrap_err()
                .contains("five fields")
        );
        assert_eq!(s(When::EveryMs(900_000)).unwrap(), "every 900s");
        assert!(s(When::EveryMs(1500)).is_err());
        assert_eq!(
            s(When::At(1_800_003_600)).unwrap(),
            "at 2027-01-15T09:00:00"
        );
        // A one-shot time that has passed is refused by the same check as `cron add`.
        let req = JobRequest {
            schedule: "at 2027-01-15T09:00:00",
            text: "t",
            to: None,
            is_message: false,
        };
        assert!(crate::jobs::check(&tz, &req, 1_800_003_601, 0).is_err());
        assert!(crate::jobs::check(&tz, &req, 1_800_000_000, 0).is_ok());
    }

    #[test]
    fn the_seen_set_finds_what_was_added_and_nothing_else() {
        let mut s = Seen::default();
        let mut rng = crate::testkit::XorShift(7);
        let added: Vec<u64> = (0..5000).map(|_| rng.next()).collect();
        for (i, h) in added.iter().enumerate() {
            assert!(!s.has(*h));
            s.add(*h);
            assert!(s.has(*h) && s.has(added[i / 2]));
        }
        s.add(0);
        assert!(s.has(0) && s.has(1));
        assert!((0..1000).all(|_| !s.has(rng.next())));
        assert!(s.slots.len() <= 4 * 5001 && s.slots.len().is_power_of_two());
    }
}
