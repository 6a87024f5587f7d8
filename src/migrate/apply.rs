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

use super::{MigrateError, Plan, When};
use crate::config::{Env, Home, ProviderKind};
use crate::files::{create_dir_private, write_atomic};
use crate::memory::derive_key;
use crate::onboard::{CONFIG_TEMPLATE, WORKSPACE_FILES};
use crate::scheduler::schedule::Schedule;
use crate::scheduler::tz::Tz;
use crate::store::cron::NewCronJob;
use crate::store::memory::{MemoryError, check_key, check_text};
use crate::store::{Db, StoreError};
use rusqlite::Connection;
use std::collections::BTreeSet;
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
    fn line(&mut self, st: St, kind: &str, what: &str) {
        self.counts[st as usize] += 1;
        let word = ["new", "replace", "same", "kept", "skip"][st as usize];
        let _ = writeln!(self.out, "  {word:<8}{kind:<9}{what}");
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
    let _ = writeln!(
        out,
        "migrate from {} at {} into {}{}",
        plan.peer.name(),
        src_dir.display(),
        home.dir.display(),
        if opts.dry_run {
            " (dry run: nothing is written)"
        } else {
            ""
        }
    );
    let mut rep = Report {
        out,
        counts: [0; 5],
    };
    let r = &mut rep;
    let dry = opts.dry_run;
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
        r.line(st, "file", &format!("workspace/{dest}{note}"));
        if go && !dry {
            write(&path, text, 0o644)?;
        }
    }
    database(plan, home, &tz_name, opts, r)?;
    for (what, why) in &plan.skipped {
        let (kind, what) = skip_kind(what);
        r.line(St::Skip, kind, &format!("{what}: {why}"));
    }
    let [new, replace, same, kept, skip] = rep.counts;
    let _ = writeln!(
        rep.out,
        "{} new, {replace} replaced, {same} already there, {kept} kept, {skip} skipped{}",
        new,
        if dry {
            " (dry run: nothing was written)"
        } else {
            ""
        }
    );
    Ok(new + replace + same > 0)
}

/// The report column of something the plan could not read, and the rest of its name.
fn skip_kind(what: &str) -> (&'static str, &str) {
    let prefixes = [
        ("cron job ", "cron"),
        ("provider ", "provider"),
        ("telegram ", "telegram"),
    ];
    if let Some((rest, kind)) = prefixes
        .iter()
        .find_map(|(p, k)| Some((what.strip_prefix(p)?, *k)))
    {
        return (kind, rest);
    }
    let kinds = [
        ("model", "provider"),
        ("key of", "secret"),
        ("memor", "memory"),
        (".json", "config"),
        (".toml", "config"),
        (".yml", "config"),
        (".env", "config"),
    ];
    let w = what.to_ascii_lowercase();
    let kind = kinds.iter().find(|(k, _)| w.contains(k));
    (kind.map_or("file", |(_, v)| v), what)
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
        crate::config::parse(text.as_deref(), &path, &Env::isolated(&[]))
            .map_or_else(|_| "UTC".to_string(), |c| c.agent.timezone)
    };
    let mut tz = plan.timezone.clone();
    if let Some(t) = tz.as_deref()
        && let Err(e) = Tz::parse(t)
    {
        r.line(
            St::Skip,
            "config",
            &format!("agent.timezone {t:?}: {e}; UTC is used"),
        );
        tz = None;
    }
    if plan.provider.is_none() && plan.telegram.is_none() && tz.is_none() {
        return Ok(existing_tz());
    }
    let text = config_text(plan, tz.as_deref());
    if let Err(e) = crate::config::parse(Some(&text), &path, &Env::isolated(&[])) {
        r.line(
            St::Skip,
            "config",
            &format!("config.json would not load ({e}): not written"),
        );
        return Ok(existing_tz());
    }
    // The settings share the status of the file that holds them.
    let (st, go) = decide(&path, &text, Some(CONFIG_TEMPLATE), opts.force);
    if let Some(p) = &plan.provider {
        r.line(st, "provider", &describe(p));
    }
    for p in &plan.fallbacks {
        r.line(st, "fallback", &describe(p));
    }
    if let Some(t) = &plan.telegram {
        let who = if t.allow_from.is_empty() {
            "nobody (deny all)".to_string()
        } else {
            t.allow_from.join(", ")
        };
        let on = if t.enabled { "on" } else { "off" };
        r.line(st, "telegram", &format!("{on}, allow_from: {who}"));
    }
    let note = if st == St::Kept {
        ": exists and differs, the settings above are not in it (--force replaces it)"
    } else {
        ""
    };
    r.line(st, "config", &format!("{}{note}", path.display()));
    if go && !opts.dry_run {
        write(&path, &text, 0o600)?;
    }
    Ok(match st {
        St::Kept => existing_tz(),
        _ => tz.unwrap_or_else(|| "UTC".to_string()),
    })
}

fn describe(p: &super::Provider) -> String {
    let kind = match p.kind {
        ProviderKind::OpenAi => "openai",
        ProviderKind::Anthropic => "anthropic",
    };
    format!(
        "{kind} {} model {} (the peer's {}; key in {})",
        p.base_url, p.model, p.from, p.key_env
    )
}

fn provider_json(p: &super::Provider) -> String {
    use crate::json::quote;
    let kind = if p.kind == ProviderKind::Anthropic {
        "anthropic"
    } else {
        "openai"
    };
    format!(
        "{{ \"kind\": \"{kind}\", \"base_url\": {}, \"model\": {}, \"api_key_env\": {} }}",
        quote(&p.base_url),
        quote(&p.model),
        quote(&p.key_env)
    )
}

/// The onboard template with the plan's values set in place (comments and order kept).
pub fn config_text(plan: &Plan, tz: Option<&str>) -> String {
    use crate::json::quote;
    let mut s = CONFIG_TEMPLATE.to_string();
    let mut set = |old: &str, new: String| {
        debug_assert!(s.contains(old), "{old}");
        s = s.replacen(old, &new, 1);
    };
    if let Some(p) = &plan.provider {
        if p.kind == ProviderKind::Anthropic {
            set("\"kind\": \"openai\"", "\"kind\": \"anthropic\"".into());
        }
        set(
            "\"base_url\": \"https://openrouter.ai/api/v1\"",
            format!("\"base_url\": {}", quote(&p.base_url)),
        );
        set(
            "\"model\": \"anthropic/claude-sonnet-4.5\"",
            format!("\"model\": {}", quote(&p.model)),
        );
    }
    if !plan.fallbacks.is_empty() {
        let items: Vec<String> = plan.fallbacks.iter().map(provider_json).collect();
        set(
            "\"fallbacks\": []",
            format!("\"fallbacks\": [\n    {}\n  ]", items.join(",\n    ")),
        );
    }
    if let Some(t) = &plan.telegram {
        if t.enabled {
            set(
                "\"enabled\": false,\n    \"api_base\"",
                "\"enabled\": true,\n    \"api_base\"".into(),
            );
        }
        let ids: Vec<String> = t.allow_from.iter().map(|a| quote(a)).collect();
        set(
            "\"allow_from\": []",
            format!("\"allow_from\": [{}]", ids.join(", ")),
        );
    }
    if let Some(tz) = tz {
        set(
            "\"timezone\": \"UTC\"",
            format!("\"timezone\": {}", quote(tz)),
        );
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
    let have = |name: &str| {
        old.lines().find_map(|l| {
            let parsed = crate::config::parse_secrets(l).ok()?;
            parsed.get(name).cloned()
        })
    };
    let mut replace = Vec::new();
    let mut add = String::new();
    for s in &plan.secrets {
        let st = match have(&s.name) {
            None => {
                add.push_str(&format!("{}={}\n", s.name, s.value));
                St::New
            }
            Some(v) if v == s.value => St::Same,
            Some(_) if opts.force => {
                replace.push(s);
                St::Replace
            }
            Some(_) => St::Kept,
        };
        let note = if st == St::Kept {
            " (holds another value; --force replaces it)"
        } else {
            ""
        };
        r.line(st, "secret", &format!("{} in secrets.env{note}", s.name));
    }
    if opts.dry_run || (add.is_empty() && replace.is_empty()) {
        return Ok(());
    }
    let mut text = String::with_capacity(old.len() + add.len());
    for l in old.lines() {
        let key = crate::config::parse_secrets(l)
            .ok()
            .and_then(|m| m.into_keys().next());
        match replace
            .iter()
            .find(|s| key.as_deref() == Some(s.name.as_str()))
        {
            Some(s) => text.push_str(&format!("{}={}", s.name, s.value)),
            None => text.push_str(l),
        }
        text.push('\n');
    }
    text.push_str(&add);
    write(&path, &text, 0o600)
}

/// Hash of a memory's text with case and spacing ignored (duplicate check).
fn text_hash(t: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in t.split_whitespace() {
        for c in w.chars().flat_map(char::to_lowercase) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        h = (h ^ u64::from(b' ')).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
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
            Connection::open_with_flags(
                uri,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
            )
            .ok()
        } else {
            None
        };
        return import(plan, peek.as_ref(), None, tz_name, opts, r);
    }
    create_dir_private(&home.dir, 0o700).map_err(|e| MigrateError::Write(home.dir.clone(), e))?;
    let db = Db::open(&path, crate::limits::DB_CACHE_KIB as u64)?;
    db.write_batch(|| import(plan, Some(&db.conn), Some(&db), tz_name, opts, r))
}

fn import(
    plan: &Plan,
    conn: Option<&Connection>,
    db: Option<&Db>,
    tz_name: &str,
    opts: &Options,
    r: &mut Report<'_>,
) -> Result<(), MigrateError> {
    let now = crate::runtime::now_secs();
    let sql = |e: rusqlite::Error| MigrateError::from(StoreError::Sql(e));
    // Existing texts (hashed) and a key lookup; an unreadable table counts as empty.
    let mut texts = BTreeSet::new();
    if let Some(c) = conn
        && let Ok(mut st) = c.prepare("SELECT text FROM memories")
    {
        let mut rows = st.query([]).map_err(sql)?;
        while let Some(row) = rows.next().map_err(sql)? {
            texts.insert(text_hash(&row.get::<_, String>(0).unwrap_or_default()));
        }
    }
    let key_taken = |k: &str| {
        conn.and_then(|c| {
            c.prepare_cached("SELECT 1 FROM memories WHERE key = ?1")
                .and_then(|mut s| s.exists([k]))
                .ok()
        })
        .unwrap_or(false)
    };
    let mut keys = BTreeSet::new();
    let total: usize = plan.memories.iter().map(|b| b.entries.len()).sum();
    let mut done = 0usize;
    for b in &plan.memories {
        let (mut new, mut same) = (0usize, 0usize);
        let mut refused = Vec::new();
        for e in &b.entries {
            done += 1;
            let every = if opts.tty { PROGRESS_EVERY } else { PROGRESS_PLAIN_EVERY };
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
            if texts.contains(&h) || keys.contains(&text_hash(&key)) || key_taken(&key) {
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
                    texts.insert(h);
                    keys.insert(text_hash(&key));
                    new += 1;
                }
                Err(MemoryError::Store(s)) => return Err(s.into()),
                Err(e) => refused.push(e.to_string()),
            }
        }
        if total >= PROGRESS_MIN_MEMORIES && opts.tty {
            let _ = write!(r.out, "\r\x1b[K");
        }
        let st = if new > 0 {
            St::New
        } else if same > 0 {
            St::Same
        } else {
            St::Skip
        };
        let mut what = format!("{}: {new} new, {same} already there", b.from);
        if !refused.is_empty() {
            what.push_str(&format!(", {} refused", refused.len()));
        }
        r.line(st, "memory", &what);
        for why in refused.iter().take(MAX_REPORTED_REFUSALS) {
            r.line(St::Skip, "memory", &format!("{}: {why}", b.from));
        }
    }
    jobs(plan, conn, db, tz_name, now, r)
}

/// A peer's schedule as yoctoclaw schedule text, in `tz_name`.
fn schedule_text(when: &When, tz_name: &str, tz: &Tz, now: i64) -> Result<String, String> {
    match when {
        When::Cron(expr, Some(t)) if !t.eq_ignore_ascii_case(tz_name) => Err(format!(
            "it runs in time zone {t}, and yoctoclaw runs every job in agent.timezone ({tz_name})"
        )),
        When::Cron(expr, _) if expr.split_whitespace().count() > 5 => Err(format!(
            "{expr:?} has a seconds or years field; yoctoclaw's cron expressions have five fields"
        )),
        When::Cron(expr, _) => Ok(expr.clone()),
        When::EveryMs(ms) if ms % 1000 != 0 => Err(format!(
            "it runs every {ms} ms; yoctoclaw's intervals are whole seconds"
        )),
        When::EveryMs(ms) => Ok(format!("every {}s", ms / 1000)),
        When::At(t) if *t <= now => Err("its one-shot time has passed".into()),
        When::At(t) => Ok(format!("at {}", tz.to_local(*t))),
    }
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
    let tz = match Tz::parse(tz_name) {
        Ok(tz) => tz,
        Err(e) => {
            for j in &plan.jobs {
                r.line(
                    St::Skip,
                    "cron",
                    &format!("{:?}: agent.timezone {tz_name:?}: {e}", j.name),
                );
            }
            return Ok(());
        }
    };
    let mut have: Vec<(String, String)> = Vec::new();
    if let Some(c) = conn
        && let Ok(mut st) = c.prepare("SELECT schedule, prompt FROM cron_jobs")
        && let Ok(rows) = st.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
    {
        have.extend(rows.flatten());
    }
    for j in &plan.jobs {
        let what = format!("{:?}", j.name);
        let schedule = schedule_text(&j.when, tz_name, &tz, now)
            .and_then(|s| Schedule::parse(&s).map_err(|e| e.to_string()));
        let schedule = match schedule {
            Ok(s) => s,
            Err(why) => {
                r.line(St::Skip, "cron", &format!("{what}: {why}"));
                continue;
            }
        };
        let canonical = schedule.to_string();
        if j.text.len() > crate::scheduler::jobs::MAX_CRON_TEXT_BYTES {
            r.line(St::Skip, "cron", &format!("{what}: its text is too long"));
            continue;
        }
        let to = if j.target.is_empty() {
            "the log"
        } else {
            &j.target
        };
        let kind = if j.is_message { "message" } else { "prompt" };
        let line = format!("{what}: {canonical}, {kind} to {to}");
        if have.iter().any(|(s, p)| *s == canonical && *p == j.text) {
            r.line(St::Same, "cron", &line);
            continue;
        }
        // Clock not set yet (1970 boards): stored unplanned, the scheduler plans it later.
        let next_run = if now < crate::runtime::build_epoch() {
            None
        } else {
            match &j.when {
                When::At(t) => Some(*t),
                _ => schedule.next_after(now, &tz, None),
            }
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
                    r.line(St::Skip, "cron", &format!("{what}: the cron table is full"));
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        }
        have.push((canonical, j.text.clone()));
        r.line(St::New, "cron", &line);
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
