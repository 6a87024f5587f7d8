//! Reading a peer home without leaving it: every path is resolved (symlinks included) and
//! must stay inside the home; loops, non-regular files, oversized and non-UTF-8 files are
//! reported, never read. Also what the peers share: their workspace layout, markdown and
//! SQLite memories, config parsing, and the JSON shape of their cron schedules.
//!
//! # Bounds
//! Files are read up to the limit the caller gives (`MAX_PEER_*` in the parent module),
//! folder listings stop at `MAX_PEER_DIR_ENTRIES`, a peer database is read up to
//! `store::memory::MAX_MEMORIES` rows (and the plan's own memory bound).
//!
//! # Blocking
//! Plain file and SQLite reads on the calling thread.

use super::{
    Job, MAX_PEER_CONFIG_BYTES, MAX_PEER_DIR_ENTRIES, MAX_PEER_FILE_BYTES,
    MAX_PEER_MEMORY_FILE_BYTES, Plan, When, parse_instant, time_value,
};
use crate::json;
use crate::memory::transfer::{Entry, Markdown};
use crate::store::memory::{Category, MAX_MEMORIES, check_key};
use miniserde::json::Value;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

/// The workspace files brought across, by their yoctoclaw names.
pub const BOOTSTRAP_FILES: [&str; 6] = [
    "SOUL.md",
    "AGENTS.md",
    "USER.md",
    "IDENTITY.md",
    "HEARTBEAT.md",
    "TOOLS.md",
];

/// A peer home, resolved.
pub struct Src {
    root: PathBuf,
    /// `.openclaw`, ...: paths the peer's config writes below its home are taken as
    /// relative, so a home copied elsewhere (`--path`) still finds its workspace.
    home_name: String,
}

/// How a peer writes its config.
#[derive(Clone, Copy)]
pub enum Format {
    Json,
    Json5,
    Toml,
}

impl Src {
    pub fn open(dir: &Path, peer: super::Peer) -> Result<Src, String> {
        let root = dir.canonicalize().map_err(|e| e.to_string())?;
        if !root.is_dir() {
            return Err("not a folder".into());
        }
        Ok(Src {
            root,
            home_name: ["/.", peer.name(), "/"].concat(),
        })
    }

    /// A path as the peer's config writes it (`~/.openclaw/workspace`, absolute, or
    /// relative to the home), as a path below the home when it is one.
    pub fn rel(&self, configured: &str) -> String {
        let c = configured.trim();
        if let Some(i) = c.find(&self.home_name) {
            return c[i + self.home_name.len()..].to_string();
        }
        match (c.strip_prefix("~/"), std::env::var_os("HOME")) {
            (Some(rest), Some(h)) => Path::new(&h).join(rest).to_string_lossy().into_owned(),
            _ => c.to_string(),
        }
    }

    /// The real path of `rel` inside the home; `None` when it does not exist.
    pub fn real(&self, rel: &str) -> Result<Option<PathBuf>, String> {
        match self.root.join(rel).canonicalize() {
            Ok(p) if p.starts_with(&self.root) => Ok(Some(p)),
            Ok(_) => Err("it leads outside the peer home: not read".into()),
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
                Err("it is a symlink loop: not read".into())
            }
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                Ok(None)
            }
            Err(e) => Err(["cannot read it: ", &e.to_string()].concat()),
        }
    }

    /// Up to `max` bytes of a regular file, and whether it was longer.
    pub fn bytes(&self, rel: &str, max: u64) -> Result<Option<(Vec<u8>, bool)>, String> {
        let Some(p) = self.real(rel)? else {
            return Ok(None);
        };
        let read = || -> std::io::Result<Result<(Vec<u8>, bool), String>> {
            let f = std::fs::File::open(&p)?;
            if !f.metadata()?.is_file() {
                return Ok(Err("not a regular file: not read".into()));
            }
            let mut buf = Vec::new();
            f.take(max + 1).read_to_end(&mut buf)?;
            let cut = buf.len() as u64 > max;
            buf.truncate(max as usize);
            Ok(Ok((buf, cut)))
        };
        match read() {
            Ok(r) => r.map(Some),
            Err(e) => Err(["cannot read it: ", &e.to_string()].concat()),
        }
    }

    /// Names in a folder (sorted, hidden ones left out); empty when it does not exist.
    pub fn list(&self, rel: &str) -> Vec<String> {
        let Ok(Some(p)) = self.real(rel) else {
            return Vec::new();
        };
        let Ok(rd) = std::fs::read_dir(p) else {
            return Vec::new();
        };
        let mut names: Vec<String> = rd
            .take(MAX_PEER_DIR_ENTRIES)
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort_unstable();
        names
    }
}

/// A UTF-8 file of at most `max` bytes; anything else is reported in the plan.
pub fn text(plan: &mut Plan, src: &Src, rel: &str, max: u64) -> Option<String> {
    let why = match src.bytes(rel, max) {
        Ok(None) => return None,
        Ok(Some((_, true))) => "it is larger than migrate reads: not brought".to_string(),
        Ok(Some((b, false))) => match String::from_utf8(b) {
            Ok(t) => return Some(t),
            Err(_) => "not UTF-8 text: not brought".to_string(),
        },
        Err(why) => why,
    };
    plan.skip("file", rel, &why);
    None
}

/// A peer config file as a value tree; a broken file is reported and yields nothing.
pub fn config(plan: &mut Plan, src: &Src, rel: &str, format: Format) -> Option<Value> {
    let t = text(plan, src, rel, MAX_PEER_CONFIG_BYTES)?;
    let t = t.trim_start_matches('\u{feff}');
    let parsed = match format {
        Format::Json => json::parse_value(t).map_err(|e| ("JSON", e.to_string())),
        Format::Json5 => {
            json::parse_value(&super::json5::to_json(t)).map_err(|e| ("JSON5", e.to_string()))
        }
        Format::Toml => super::toml::parse(t).map_err(|e| ("TOML", e.to_string())),
    };
    match parsed {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => Some(v),
        Ok(_) => {
            plan.skip(
                "config",
                rel,
                "it holds no settings: nothing in it was brought",
            );
            None
        }
        Err((what, e)) => {
            plan.skip(
                "config",
                rel,
                &[
                    "not valid ",
                    what,
                    " (",
                    &e,
                    "): its settings were not brought",
                ]
                .concat(),
            );
            None
        }
    }
}

/// Workspace files, skills and memories of a peer workspace at `ws` (below the home).
pub fn workspace(plan: &mut Plan, src: &Src, ws: &str) {
    if let Err(why) = src.real(ws) {
        return plan.skip("file", ws, &why);
    }
    for name in BOOTSTRAP_FILES {
        file(plan, src, &[ws, "/", name].concat(), name);
    }
    // PicoClaw's name for AGENTS.md.
    if !plan.files.iter().any(|(d, _)| d == "AGENTS.md") {
        file(plan, src, &[ws, "/AGENT.md"].concat(), "AGENTS.md");
    }
    skills(plan, src, &[ws, "/skills"].concat());
    let dir = [ws, "/memory"].concat();
    for rel in [[ws, "/MEMORY.md"].concat(), [&dir, "/MEMORY.md"].concat()] {
        markdown(plan, src, &rel, Category::Core);
    }
    // Daily notes: memory/2026-03-01.md, or PicoClaw's memory/202603/20260301.md.
    for name in src.list(&dir) {
        if name.ends_with(".md") {
            if name != "MEMORY.md" {
                markdown(plan, src, &[&dir, "/", &name].concat(), Category::Daily);
            }
        } else if name.bytes().all(|b| b.is_ascii_digit()) {
            let sub = [&dir, "/", &name].concat();
            for n in src.list(&sub).into_iter().filter(|n| n.ends_with(".md")) {
                markdown(plan, src, &[&sub, "/", &n].concat(), Category::Daily);
            }
        }
    }
}

/// One workspace file to `dest` (in the yoctoclaw workspace), unless one came already.
pub fn file(plan: &mut Plan, src: &Src, rel: &str, dest: &str) {
    if plan.files.iter().any(|(d, _)| d == dest) {
        return;
    }
    if let Some(t) = text(plan, src, rel, MAX_PEER_FILE_BYTES) {
        plan.files.push((dest.to_string(), t));
    }
}

/// `dir/<name>/SKILL.md` for every skill folder.
pub fn skills(plan: &mut Plan, src: &Src, dir: &str) {
    for name in src.list(dir) {
        file(
            plan,
            src,
            &[dir, "/", &name, "/SKILL.md"].concat(),
            &["skills/", &name, "/SKILL.md"].concat(),
        );
    }
}

/// Memories from a markdown file: one per bullet or paragraph (as `memory import` reads
/// them); NullClaw's `- **key**: text` keeps its key.
pub fn markdown(plan: &mut Plan, src: &Src, rel: &str, category: Category) {
    let (mut b, cut) = match src.bytes(rel, MAX_PEER_MEMORY_FILE_BYTES) {
        Ok(Some(r)) => r,
        Ok(None) => return,
        Err(why) => return plan.skip("memory", rel, &why),
    };
    if cut {
        let end = b.iter().rposition(|&c| c == b'\n').unwrap_or(0);
        b.truncate(end);
        plan.skip(
            "memory",
            rel,
            "larger than 4 MiB: only its first 4 MiB were read",
        );
    }
    let Ok(t) = String::from_utf8(b) else {
        return plan.skip("memory", rel, "not UTF-8 text: no memories read from it");
    };
    let mut md = Markdown::default();
    let mut out = Vec::new();
    let mut push = |text: String| {
        let keyed = text
            .strip_prefix("**")
            .and_then(|r| r.split_once("**:"))
            .filter(|(k, v)| check_key(k).is_ok() && !v.trim().is_empty());
        let (key, text) = match keyed {
            Some((k, v)) => (Some(k.trim().to_string()), v.trim().to_string()),
            None => (None, text),
        };
        out.push(Entry {
            key,
            category,
            ..Entry::text(text)
        });
    };
    for line in t.lines() {
        if let Some((_, m)) = md.line(line) {
            push(m);
        }
    }
    if let Some((_, m)) = md.finish() {
        push(m);
    }
    plan.batch(rel, out);
}

/// Memories from a peer's SQLite `memories` table (NullClaw `memory.db`, ZeroClaw
/// `brain.db`), whatever its column names.
pub fn database(plan: &mut Plan, src: &Src, rel: &str) {
    let path = match src.real(rel) {
        Ok(Some(p)) => p,
        Ok(None) => return,
        Err(why) => return plan.skip("memory", rel, &why),
    };
    match read_memories(&path) {
        Ok(v) => plan.batch(rel, v),
        Err(e) => plan.skip(
            "memory",
            rel,
            &["its memories cannot be read (", &e.to_string(), ")"].concat(),
        ),
    }
}

/// Open a peer database read-only (nothing is created or changed beside it).
pub fn open_db(path: &Path) -> rusqlite::Result<Connection> {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

/// The rows of `sql` (at most `MAX_MEMORIES`) on a peer database opened read-only, as
/// text cells (numbers as digits, anything else `None`).
pub fn db_rows(path: &Path, sql: &str, cols: usize) -> rusqlite::Result<Vec<Vec<Option<String>>>> {
    let conn = open_db(path)?;
    let mut stmt = conn.prepare(sql)?;
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        if out.len() >= MAX_MEMORIES as usize {
            break;
        }
        out.push((0..cols).map(|i| cell(r, i)).collect());
    }
    Ok(out)
}

/// A cell as text (numbers too).
pub fn cell(r: &rusqlite::Row<'_>, i: usize) -> Option<String> {
    match r.get_ref(i).ok()? {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(n) => Some(n.to_string()),
        _ => None,
    }
}

/// NullClaw's and ZeroClaw's `memories` tables (same column names).
fn read_memories(path: &Path) -> rusqlite::Result<Vec<Entry>> {
    let rows = db_rows(
        path,
        "SELECT key, content, category, created_at FROM memories",
        4,
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for mut r in rows {
        let Some(text) = r[1].take().filter(|t| !t.trim().is_empty()) else {
            continue;
        };
        out.push(Entry {
            key: r[0].take(),
            text,
            category: r[2].as_deref().map_or(Category::Core, |c| {
                Category::parse(c).unwrap_or(Category::Custom)
            }),
            created: r[3].as_deref().and_then(parse_instant),
            updated: None,
        });
    }
    Ok(out)
}

/// A job's schedule as OpenClaw, PicoClaw and ZeroClaw store it: `{kind: "cron", expr,
/// tz}`, `{kind: "every", everyMs | every_ms}`, `{kind: "at", at | atMs}`.
pub fn when(v: &Value) -> Result<When, String> {
    let get = |keys: &[&str]| keys.iter().find_map(|k| json::get(v, k));
    let kind = json::str_at(v, "kind").unwrap_or("");
    let w = match kind {
        "cron" => json::str_at(v, "expr").map(|e| {
            let tz = json::str_at(v, "tz").filter(|t| !t.trim().is_empty());
            When::Cron(e.to_string(), tz.map(str::to_string))
        }),
        "every" => get(&["everyMs", "every_ms"])
            .and_then(json::as_u64)
            .map(When::EveryMs),
        "at" => get(&["atMs", "at_ms", "at"])
            .and_then(time_value)
            .map(When::At),
        _ => return Err(["\"", kind, "\" schedules have no yoctoclaw equivalent"].concat()),
    };
    w.ok_or_else(|| "its schedule is incomplete".to_string())
}

/// `telegram:<chat_id>` when a job delivers to a Telegram chat, else empty (the log).
pub fn target(channel: Option<&str>, to: Option<&Value>) -> String {
    let to = to.and_then(super::scalar).unwrap_or_default();
    let to = to.strip_prefix("telegram:").unwrap_or(&to);
    let telegram = channel.is_none_or(|c| c.eq_ignore_ascii_case("telegram"));
    match to.trim().parse::<i64>() {
        Ok(id) if telegram => ["telegram:", &id.to_string()].concat(),
        _ => String::new(),
    }
}

/// Add a job, or report why it cannot come.
pub fn job(
    plan: &mut Plan,
    name: &str,
    when: Result<When, String>,
    text: &str,
    is_message: bool,
    target: String,
) {
    let what = ["\"", name, "\""].concat();
    match when {
        Err(why) => plan.skip("cron", &what, &why),
        Ok(_) if text.trim().is_empty() => plan.skip("cron", &what, "it has no prompt or message"),
        Ok(when) => plan.jobs.push(Job {
            name: name.to_string(),
            when,
            text: text.trim().to_string(),
            is_message,
            target,
        }),
    }
}

/// The peers' cron jobs as JSON objects: OpenClaw and PicoClaw `jobs.json` entries
/// (`schedule`, `payload`, `delivery`), ZeroClaw `[[cron.jobs]]` and `jobs.db` rows
/// (`job_type`, `prompt`, `command`), NullClaw `cron.json` entries (`expression`,
/// `one_shot`, `next_run_secs`). `deliver_as_is`: the peer's `deliver` flag means "send
/// the text without the agent" (PicoClaw), not "deliver the agent's answer".
pub fn jobs(plan: &mut Plan, list: &[Value], deliver_as_is: bool) {
    for j in list {
        let s = |k: &str| json::str_at(j, k).filter(|v| !v.trim().is_empty());
        let name = s("name").or_else(|| s("id")).unwrap_or("job");
        let off = |k: &str, v: bool| json::get(j, k).and_then(json::as_bool) == Some(v);
        let p = json::get(j, "payload").unwrap_or(j);
        let ps = |k: &str| json::str_at(p, k).filter(|v| !v.trim().is_empty());
        let agent = s("job_type") == Some("agent");
        let refusal = if off("enabled", false) || off("paused", true) {
            "it is disabled in the peer"
        } else if s("job_type") == Some("shell") || (!agent && ps("command").is_some()) {
            "it runs a shell command; yoctoclaw jobs run a prompt or send a message"
        } else {
            ""
        };
        let text = ps("message")
            .or_else(|| ps("text"))
            .or_else(|| s("prompt"))
            .unwrap_or("");
        let when = match (json::get(j, "schedule"), s("expression")) {
            _ if !refusal.is_empty() => Err(refusal.to_string()),
            (Some(sch), _) => when(sch),
            (None, _) if off("one_shot", true) => json::get(j, "next_run_secs")
                .and_then(time_value)
                .map(When::At)
                .ok_or_else(|| "its one-shot time is missing".to_string()),
            (None, Some(e)) => Ok(When::Cron(e.to_string(), None)),
            (None, None) => Err("it has no schedule".to_string()),
        };
        let d = json::get(j, "delivery").unwrap_or(p);
        let deliver = json::get(p, "deliver").and_then(json::as_bool) == Some(true);
        let announce = !matches!(json::str_at(d, "mode"), None | Some("none"));
        let target = if deliver || announce || json::get(d, "to").is_some() {
            target(json::str_at(d, "channel"), json::get(d, "to"))
        } else {
            String::new()
        };
        job(plan, name, when, text, deliver && deliver_as_is, target);
    }
}

/// `list` when it is an array, else its `jobs` member's array (the peers' two shapes).
pub fn job_list(v: &Value) -> &[Value] {
    json::as_array(v)
        .or_else(|| json::get(v, "jobs").and_then(json::as_array))
        .map_or(&[], |a| a.as_slice())
}
