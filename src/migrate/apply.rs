//! Writing a plan into the yoctoclaw home, or on a dry run saying what would be written,
//! item by item, with one status word each:
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
//! text (case and spacing ignored) is; a job when the same schedule and text are.
//!
//! # Bounds
//! Progress is printed every `PROGRESS_EVERY` memories (`PROGRESS_PLAIN_EVERY` when stdout
//! is not a terminal) once a plan holds at least
//! `PROGRESS_MIN_MEMORIES`; at most `MAX_REPORTED_REFUSALS` refused memories are named per
//! source. The text-hash set for duplicate checks holds one `u64` per stored memory
//! (`store::memory::MAX_MEMORIES` at most).
//!
//! # Blocking
//! File writes (with fsync) and SQLite on the calling thread.

use super::{MigrateError, Plan, Provider, When};
use crate::config::{Env, Home, ProviderKind};
use crate::files::{create_dir_private, write_atomic};
use crate::memory::derive_key;
use crate::onboard::{CONFIG_TEMPLATE, WORKSPACE_FILES};
use crate::store::cron::NewCronJob;
use crate::store::memory::{MemoryError, check_key, check_text};
use crate::store::{Db, StoreError};
use crate::time::schedule::Schedule;
use crate::time::tz::Tz;
use rusqlite::Connection;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::Path;

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

struct Report<'a> {
    out: &'a mut dyn Write,
    counts: [usize; 5],
}

impl Report<'_> {
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
        parts.iter().for_each(|p| s.push_str(p));
        s.push('\n');
        let _ = self.out.write_all(s.as_bytes());
    }
}

impl From<StoreError> for MigrateError {
    fn from(e: StoreError) -> Self {
        MigrateError::Store(e.to_string())
    }
}

/// What to do with a file that may exist: its status, and whether to write.
fn decide(path: &Path, new: &str, template: Option<&str>, force: bool) -> (St, bool) {
    match std::fs::read(path) {
        Err(_) => (St::New, true),
        Ok(old) if old == new.as_bytes() => (St::Same, false),
        Ok(old) if force || template.is_some_and(|t| old == t.as_bytes()) => (St::Replace, true),
        Ok(_) => (St::Kept, false),
    }
}

fn write(path: &Path, text: &str, mode: u32) -> Result<(), MigrateError> {
    if let Some(dir) = path.parent() {
        create_dir_private(dir, 0o700).map_err(|e| MigrateError::Write(dir.to_path_buf(), e))?;
    }
    write_atomic(path, text.as_bytes(), mode)
        .map_err(|e| MigrateError::Write(path.to_path_buf(), e))
}

/// Apply `plan` (read from `src_dir`) to `home`, printing one line per item to `out`.
/// Returns whether anything from the peer is (or would be) in the home afterwards.
pub fn apply(
    plan: &Plan,
    src_dir: &Path,
    home: &Home,
    opts: &Options,
    out: &mut dyn Write,
) -> Result<bool, MigrateError> {
    let dry = if opts.dry_run {
        " (dry run: nothing is written)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "migrate from {} at {} into {}{dry}",
        plan.peer.name(),
        src_dir.display(),
        home.dir.display(),
    );
    let mut rep = Report {
        out,
        counts: [0; 5],
    };
    let r = &mut rep;
    let ws = home.workspace();
    let tz_name = config(plan, home, opts, r)?;
    secrets(plan, home, opts, r)?;
    for (dest, text) in &plan.files {
        let path = ws.join(dest);
        let template = WORKSPACE_FILES
            .iter()
            .find(|(n, _)| n == dest)
            .map(|(_, t)| *t);
        let (st, go) = decide(&path, text, template, opts.force);
        let note = if st == St::Kept {
            ": exists and differs (--force replaces it)"
        } else {
            ""
        };
        r.line(st, "file", &["workspace/", dest, note]);
        if go && !opts.dry_run {
            write(&path, text, 0o644)?;
        }
    }
    database(plan, home, &tz_name, opts, r)?;
    for (kind, what, why) in &plan.skipped {
        r.line(St::Skip, kind, &[what, ": ", why]);
    }
    let [new, replace, same, kept, skip] = rep.counts;
    let _ = writeln!(
        rep.out,
        "{new} new, {replace} replaced, {same} already there, {kept} kept, {skip} skipped{}",
        if opts.dry_run {
            " (dry run: nothing was written)"
        } else {
            ""
        }
    );
    Ok(new + replace + same > 0)
}

/// `config.json` as onboard writes it, with the plan's values set. Returns the time zone
/// the home's jobs run in.
fn config(
    plan: &Plan,
    home: &Home,
    opts: &Options,
    r: &mut Report<'_>,
) -> Result<String, MigrateError> {
    let path = home.config_file();
    let existing_tz = || {
        let text = std::fs::read_to_string(&path).ok();
        crate::config::parse(text.as_deref(), &path, &Env::default())
            .map_or_else(|_| "UTC".to_string(), |c| c.agent.timezone)
    };
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
    if plan.provider.is_none() && plan.telegram.is_none() && tz.is_none() {
        return Ok(existing_tz());
    }
    let text = config_text(plan, tz);
    if let Err(e) = crate::config::parse(Some(&text), &path, &Env::default()) {
        r.line(
            St::Skip,
            "config",
            &[
                "config.json would not load (",
                &e.to_string(),
                "): not written",
            ],
        );
        return Ok(existing_tz());
    }
    // The settings share the status of the file that holds them.
    let (st, go) = decide(&path, &text, Some(CONFIG_TEMPLATE), opts.force);
    for (i, p) in plan.provider.iter().chain(&plan.fallbacks).enumerate() {
        let kind = if p.kind == ProviderKind::Anthropic {
            "anthropic "
        } else {
            "openai "
        };
        r.line(
            st,
            if i == 0 { "provider" } else { "fallback" },
            &[
                kind,
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
            "nobody (deny all)".to_string()
        } else {
            t.allow_from.join(", ")
        };
        r.line(
            st,
            "telegram",
            &[if t.enabled { "on" } else { "off" }, ", allow_from: ", &who],
        );
    }
    let note = if st == St::Kept {
        ": exists and differs, the settings above are not in it (--force replaces it)"
    } else {
        ""
    };
    r.line(st, "config", &[&path.to_string_lossy(), note]);
    if go && !opts.dry_run {
        write(&path, &text, 0o600)?;
    }
    Ok(match st {
        St::Kept => existing_tz(),
        _ => tz.unwrap_or("UTC").to_string(),
    })
}

/// The onboard template with the plan's values set in place (comments and order kept).
pub fn config_text(plan: &Plan, tz: Option<&str>) -> String {
    use crate::json::quote;
    let mut s = CONFIG_TEMPLATE.to_string();
    let mut set = |key: &str, old: &str, new: &str| {
        let old = [key, old].concat();
        debug_assert!(s.contains(&old), "{old}");
        s = s.replacen(&old, &[key, new].concat(), 1);
    };
    let kind = |p: &Provider| {
        if p.kind == ProviderKind::Anthropic {
            "\"anthropic\""
        } else {
            "\"openai\""
        }
    };
    if let Some(p) = &plan.provider {
        set("\"kind\": ", "\"openai\"", kind(p));
        set(
            "\"base_url\": ",
            "\"https://openrouter.ai/api/v1\"",
            &quote(&p.base_url),
        );
        set(
            "\"model\": ",
            "\"anthropic/claude-sonnet-4.5\"",
            &quote(&p.model),
        );
    }
    if !plan.fallbacks.is_empty() {
        let mut list = String::from("[");
        for (i, p) in plan.fallbacks.iter().enumerate() {
            list.push_str(if i == 0 { "\n    " } else { ",\n    " });
            for (k, v) in [
                ("{ \"kind\": ", kind(p)),
                (", \"base_url\": ", &quote(&p.base_url)),
                (", \"model\": ", &quote(&p.model)),
                (", \"api_key_env\": ", &quote(&p.key_env)),
            ] {
                list.push_str(k);
                list.push_str(v);
            }
            list.push_str(" }");
        }
        list.push_str("\n  ]");
        set("\"fallbacks\": ", "[]", &list);
    }
    if let Some(t) = &plan.telegram {
        if t.enabled {
            set(
                "\"enabled\": ",
                "false,\n    \"api_base\"",
                "true,\n    \"api_base\"",
            );
        }
        let ids: Vec<String> = t.allow_from.iter().map(|a| quote(a)).collect();
        set(
            "\"allow_from\": ",
            "[]",
            &["[", &ids.join(", "), "]"].concat(),
        );
    }
    if let Some(tz) = tz {
        set("\"timezone\": ", "\"UTC\"", &quote(tz));
    }
    s
}

/// Keys and the bot token into `secrets.env` (mode 0600), never anywhere else; only the
/// variables' names are printed.
fn secrets(
    plan: &Plan,
    home: &Home,
    opts: &Options,
    r: &mut Report<'_>,
) -> Result<(), MigrateError> {
    if plan.secrets.is_empty() {
        return Ok(());
    }
    let path = home.secrets_file();
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    // `NAME=value` lines as the config reader parses them (export, quotes, comments).
    let entry = |l: &str| {
        let m = crate::config::parse_secrets(l).ok()?;
        m.iter().next().map(|(k, v)| (k.clone(), v.clone()))
    };
    let mut text = String::with_capacity(old.len() + 256);
    let mut changed = false;
    for l in old.lines() {
        let e = entry(l);
        let s = e
            .as_ref()
            .and_then(|(k, _)| plan.secrets.iter().find(|s| s.name == *k));
        match (s, e) {
            (Some(s), Some((_, v))) if v != s.value && opts.force => {
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
        let have = old
            .lines()
            .find_map(|l| entry(l).filter(|(k, _)| *k == s.name));
        let st = match have {
            None => {
                for part in [&s.name, "=", &s.value, "\n"] {
                    text.push_str(part);
                }
                changed = true;
                St::New
            }
            Some((_, v)) if v == s.value => St::Same,
            Some(_) if opts.force => St::Replace,
            Some(_) => St::Kept,
        };
        let note = if st == St::Kept {
            " (holds another value; --force replaces it)"
        } else {
            ""
        };
        r.line(st, "secret", &[&s.name, " in secrets.env", note]);
    }
    if changed && !opts.dry_run {
        write(&path, &text, 0o600)?;
    }
    Ok(())
}

/// Hash of a memory's text with case and spacing ignored (duplicate check).
fn text_hash(t: &str) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in t.split_whitespace() {
        for c in w.chars().flat_map(char::to_lowercase).chain([' ']) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
    }
    h as usize
}

/// Memories and jobs, in one transaction (dry run: read-only look at the database).
fn database(
    plan: &Plan,
    home: &Home,
    tz_name: &str,
    opts: &Options,
    r: &mut Report<'_>,
) -> Result<(), MigrateError> {
    if plan.memories.is_empty() && plan.jobs.is_empty() {
        return Ok(());
    }
    let path = home.db_file();
    if opts.dry_run {
        // Never create or change anything: read an existing database without a journal
        // of our own (a live daemon's WAL is read through its existing -shm file).
        let peek = if path.exists() {
            let wal = path.with_extension("db-wal").exists();
            let mut uri = String::from("file:");
            for c in path.to_string_lossy().chars() {
                match c {
                    '%' => uri.push_str("%25"),
                    '?' => uri.push_str("%3f"),
                    '#' => uri.push_str("%23"),
                    c => uri.push(c),
                }
            }
            uri.push_str(if wal { "?mode=ro" } else { "?immutable=1" });
            let flags =
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI;
            Connection::open_with_flags(uri, flags).ok()
        } else {
            None
        };
        return import(plan, peek.as_ref(), None, tz_name, opts, r);
    }
    create_dir_private(&home.dir, 0o700).map_err(|e| MigrateError::Write(home.dir.clone(), e))?;
    let db = Db::open(&path, crate::limits::DB_CACHE_KIB as u64)?;
    db.write_batch(|| import(plan, Some(&db.conn), Some(&db), tz_name, opts, r))
}

/// The first two columns of every row of `sql` (an unreadable table reads as empty).
fn rows(conn: Option<&Connection>, sql: &str, arg: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(c) = conn else { return out };
    let Ok(mut st) = c.prepare_cached(sql) else {
        return out;
    };
    let params = rusqlite::params![arg];
    let Ok(mut rows) = st.query(if sql.contains('?') { params } else { &[] }) else {
        return out;
    };
    while let Ok(Some(row)) = rows.next() {
        let cell = |i| super::source::cell(row, i).unwrap_or_default();
        out.push((cell(0), cell(1)));
    }
    out
}

fn import(
    plan: &Plan,
    conn: Option<&Connection>,
    db: Option<&Db>,
    tz_name: &str,
    opts: &Options,
    r: &mut Report<'_>,
) -> Result<(), MigrateError> {
    let now = crate::time::now();
    // Texts stored already (hashed, as the telegram formatter's map type: one copy of
    // that code), and keys seen in this import.
    let mut texts: HashMap<usize, usize> = HashMap::new();
    for (t, _) in rows(conn, "SELECT text, NULL FROM memories", "") {
        texts.insert(text_hash(&t), 0);
    }
    let mut keys: HashMap<usize, usize> = HashMap::new();
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
                let _ = write!(r.out, "  memories {done}/{total}{end}");
                let _ = r.out.flush();
            }
            let text = e.text.trim();
            let key = match e.key.as_deref().map(check_key) {
                Some(Ok(k)) => k.to_string(),
                _ => derive_key(text),
            };
            let h = text_hash(text);
            let taken =
                || !rows(conn, "SELECT key, NULL FROM memories WHERE key = ?1", &key).is_empty();
            if texts.contains_key(&h) || keys.contains_key(&text_hash(&key)) || taken() {
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
                    texts.insert(h, 0);
                    keys.insert(text_hash(&key), 0);
                    new += 1;
                }
                Err(MemoryError::Store(s)) => return Err(s.into()),
                Err(e) => refused.push(e.to_string()),
            }
        }
        if total >= PROGRESS_MIN_MEMORIES && opts.tty {
            let _ = r.out.write_all(b"\r\x1b[K");
        }
        let st = if new > 0 {
            St::New
        } else if same > 0 {
            St::Same
        } else {
            St::Skip
        };
        let mut counts = [
            &new.to_string(),
            " new, ",
            &same.to_string(),
            " already there",
        ]
        .concat();
        if !refused.is_empty() {
            counts.push_str(&[", ", &refused.len().to_string(), " refused"].concat());
        }
        r.line(st, "memory", &[&b.from, ": ", &counts]);
        for why in refused.iter().take(MAX_REPORTED_REFUSALS) {
            r.line(St::Skip, "memory", &[&b.from, ": ", why]);
        }
    }
    jobs(plan, conn, db, tz_name, now, r)
}

/// A peer's schedule as yoctoclaw schedule text, in `tz_name`.
fn schedule_text(when: &When, tz_name: &str, tz: &Tz, now: i64) -> Result<String, String> {
    Err(match when {
        When::Cron(_, Some(t)) if !t.eq_ignore_ascii_case(tz_name) => [
            "it runs in time zone ",
            t,
            ", and yoctoclaw runs every job in agent.timezone (",
            tz_name,
            ")",
        ]
        .concat(),
        When::Cron(expr, _) if expr.split_whitespace().count() > 5 => {
            "it has a seconds or years field; yoctoclaw's cron expressions have five fields".into()
        }
        When::Cron(expr, _) => return Ok(expr.clone()),
        When::EveryMs(ms) if ms % 1000 != 0 => "its interval is not whole seconds".into(),
        When::EveryMs(ms) => return Ok(["every ", &(ms / 1000).to_string(), "s"].concat()),
        When::At(t) if *t <= now => "its one-shot time has passed".into(),
        When::At(t) => return Ok(["at ", &tz.to_local(*t).to_string()].concat()),
    })
}

fn jobs(
    plan: &Plan,
    conn: Option<&Connection>,
    db: Option<&Db>,
    tz_name: &str,
    now: i64,
    r: &mut Report<'_>,
) -> Result<(), MigrateError> {
    if plan.jobs.is_empty() {
        return Ok(());
    }
    let tz = Tz::parse(tz_name).map_err(|e| e.to_string());
    let mut have = rows(conn, "SELECT schedule, prompt FROM cron_jobs", "");
    for j in &plan.jobs {
        let what = ["\"", &j.name, "\": "].concat();
        let schedule = tz.clone().and_then(|tz| {
            let s = schedule_text(&j.when, tz_name, &tz, now)?;
            let s = Schedule::parse(&s).map_err(|e| e.to_string())?;
            if j.text.len() > crate::jobs::MAX_CRON_TEXT_BYTES {
                return Err("its text is too long".into());
            }
            Ok((tz, s))
        });
        let (tz, schedule) = match schedule {
            Ok(s) => s,
            Err(why) => {
                r.line(St::Skip, "cron", &[&what, &why]);
                continue;
            }
        };
        let canonical = schedule.to_string();
        let to = if j.target.is_empty() {
            "the log"
        } else {
            &j.target
        };
        let kind = if j.is_message {
            ", message to "
        } else {
            ", prompt to "
        };
        let line = [&what, canonical.as_str(), kind, to];
        if have.iter().any(|(s, p)| *s == canonical && *p == j.text) {
            r.line(St::Same, "cron", &line);
            continue;
        }
        // Clock not set yet (1970 boards): stored unplanned, the scheduler plans it later.
        let next_run = match &j.when {
            _ if now < crate::time::build_epoch() => None,
            When::At(t) => Some(*t),
            _ => schedule.next_after(now, &tz, None),
        };
        if let Some(db) = db {
            let job = NewCronJob {
                schedule: &canonical,
                prompt: &j.text,
                is_message: j.is_message,
                target: &j.target,
                next_run,
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
        have.push((canonical, j.text.clone()));
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
        let text = config_text(&p, Some("+02:00"));
        let cfg =
            crate::config::parse(Some(&text), Path::new("c.json"), &Env::isolated(&[])).unwrap();
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
        let now = 1_800_000_000;
        let s = |w: When| schedule_text(&w, "UTC", &tz, now);
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
        assert_eq!(s(When::At(now + 3600)).unwrap(), "at 2027-01-15T09:00:00");
        assert!(s(When::At(now - 1)).is_err());
        assert_eq!(text_hash("Likes  green\nTEA"), text_hash("likes green tea"));
        assert_ne!(text_hash("likes green tea"), text_hash("likes greentea"));
    }
}
