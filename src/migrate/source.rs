//! Reading a peer home without leaving it: every path is resolved (symlinks included) and
//! must stay inside the home; loops, non-regular files, oversized and non-UTF-8 files are
//! reported, never read. Also what the peers share: their workspace layout, markdown and
//! SQLite memories, config files, and the JSON shape of their cron jobs.
//!
//! # Bounds
//! Files are read up to the limit the caller gives (`MAX_PEER_*` in the parent module),
//! folder listings stop at `MAX_PEER_DIR_ENTRIES`, a database is read up to
//! `store::memory::MAX_MEMORIES` rows (and the plan's own memory bound).
//!
//! # Threads
//! Main thread (`yoctoclaw migrate`).
//!
//! # Blocking
//! Plain file and SQLite reads on the calling thread.

use super::formats::{self, Format};
use super::{
    Job, MAX_PEER_CONFIG_BYTES, MAX_PEER_DIR_ENTRIES, MAX_PEER_FILE_BYTES,
    MAX_PEER_MEMORY_FILE_BYTES, Plan, When, parse_instant, time_value,
};
use crate::files::{ReadError, read_regular};
use crate::json;
use crate::memory::transfer::{Entry, Markdown};
use crate::store::memory::{Category, MAX_MEMORIES, check_key};
use miniserde::json::Value;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// A peer home, resolved.
pub struct Src {
    root: PathBuf,
    /// `/.openclaw/`, ...: paths the peer's config writes below its home are taken as
    /// relative, so a home copied elsewhere (`--path`) still finds its workspace.
    home_name: String,
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
            Err(e) => Err(e.to_string()),
        }
    }

    /// Up to `max` bytes of a regular file, and whether it was longer.
    pub fn bytes(&self, rel: &str, max: usize) -> Result<Option<(Vec<u8>, bool)>, String> {
        let Some(p) = self.real(rel)? else {
            return Ok(None);
        };
        match read_regular(&p, max, false) {
            Ok((b, total)) => Ok(Some((b, total > max as u64))),
            Err(ReadError::NotFound) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Names in a folder (sorted, hidden ones left out); empty when it does not exist.
    pub fn list(&self, rel: &str) -> Vec<String> {
        let mut names = Vec::new();
        if let Ok(Some(p)) = self.real(rel)
            && let Ok(rd) = std::fs::read_dir(p)
        {
            for e in rd.take(MAX_PEER_DIR_ENTRIES).flatten() {
                if let Ok(n) = e.file_name().into_string()
                    && !n.starts_with('.')
                {
                    names.push(n);
                }
            }
        }
        names.sort();
        names
    }
}

/// A UTF-8 file of at most `max` bytes; anything else is reported in the plan.
#[inline(never)]
pub fn text(plan: &mut Plan, src: &Src, rel: &str, max: usize) -> Option<String> {
    let why = match src.bytes(rel, max) {
        Ok(None) => return None,
        Ok(Some((_, true))) => "too large: not read".to_string(),
        Ok(Some((b, false))) => match String::from_utf8(b) {
            Ok(t) => return Some(t),
            Err(_) => "not UTF-8 text: not read".to_string(),
        },
        Err(why) => why,
    };
    plan.skip("file", rel, &why);
    None
}

/// A peer config file as a value tree; a broken file is reported and yields nothing.
#[inline(never)]
pub fn config(plan: &mut Plan, src: &Src, rel: &str, format: Format) -> Option<Value> {
    let t = text(plan, src, rel, MAX_PEER_CONFIG_BYTES)?;
    let why = match formats::parse(t.trim_start_matches('\u{feff}'), format) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => return Some(v),
        Ok(_) => "no settings in it".to_string(),
        Err(e) => [
            "not valid ",
            format.name(),
            " (",
            &e.to_string(),
            "): not read",
        ]
        .concat(),
    };
    plan.skip("config", rel, &why);
    None
}

/// Workspace files, skills and memories of a peer workspace at `ws` (below the home).
#[inline(never)]
pub fn workspace(plan: &mut Plan, src: &Src, ws: &str) {
    if let Err(why) = src.real(ws) {
        return plan.skip("file", ws, &why);
    }
    for (name, _) in crate::onboard::WORKSPACE_FILES {
        file(plan, src, &[ws, "/", name].concat(), name);
    }
    // PicoClaw's name for AGENTS.md.
    file(plan, src, &[ws, "/AGENT.md"].concat(), "AGENTS.md");
    skills(plan, src, &[ws, "/skills"].concat());
    let dir = [ws, "/memory"].concat();
    for rel in [[ws, "/MEMORY.md"].concat(), [&dir, "/MEMORY.md"].concat()] {
        markdown(plan, src, &rel, Category::Core);
    }
    // Daily notes: memory/2026-03-01.md, or PicoClaw's memory/202603/20260301.md.
    for name in src.list(&dir) {
        let rel = [&dir, "/", &name].concat();
        if name.bytes().all(|b| b.is_ascii_digit()) {
            for n in src.list(&rel) {
                if n.ends_with(".md") {
                    markdown(plan, src, &[&rel, "/", &n].concat(), Category::Daily);
                }
            }
        } else if name.ends_with(".md") && name != "MEMORY.md" {
            markdown(plan, src, &rel, Category::Daily);
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
        let rel = ["/", &name, "/SKILL.md"].concat();
        file(plan, src, &[dir, &rel].concat(), &["skills", &rel].concat());
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
        return plan.skip("memory", rel, "not UTF-8 text: not read");
    };
    let mut md = Markdown::default();
    let mut texts: Vec<String> = t.lines().filter_map(|l| Some(md.line(l)?.1)).collect();
    texts.extend(md.finish().map(|m| m.1));
    let mut out = Vec::with_capacity(texts.len());
    for text in texts {
        let keyed = text
            .strip_prefix("**")
            .and_then(|r| r.split_once("**:"))
            .filter(|(k, v)| check_key(k).is_ok() && !v.trim().is_empty())
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()));
        let (key, text) = match keyed {
            Some((k, v)) => (Some(k), v),
            None => (None, text),
        };
        out.push(Entry {
            key,
            category,
            ..Entry::text(text)
        });
    }
    plan.batch(rel, out);
}

/// Open a database read-only (nothing is created or changed beside it).
pub fn open_ro(path: &Path, flags: OpenFlags) -> rusqlite::Result<Connection> {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | flags)
}

/// Every row of `sql` as `cols` text cells (numbers as digits, NULL and anything else
/// empty), handed to `f`; at most `MAX_MEMORIES` rows.
pub fn each_row(
    conn: &Connection,
    sql: &str,
    cols: usize,
    f: &mut dyn FnMut(&mut [String]),
) -> rusqlite::Result<()> {
    let mut st = conn.prepare(sql)?;
    let mut rows = st.query([])?;
    let mut row = vec![String::new(); cols];
    let mut n = 0;
    while let Some(r) = rows.next()? {
        n += 1;
        if n > MAX_MEMORIES {
            break;
        }
        for (i, cell) in row.iter_mut().enumerate() {
            *cell = match r.get_ref(i)? {
                ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                ValueRef::Integer(n) => n.to_string(),
                _ => String::new(),
            };
        }
        f(&mut row);
    }
    Ok(())
}

/// Memories from a peer's SQLite `memories` table (NullClaw and ZeroClaw use the same
/// column names).
pub fn database(plan: &mut Plan, src: &Src, rel: &str) {
    let mut out = Vec::new();
    let sql = "SELECT key, content, category, created_at FROM memories";
    let r = match src.real(rel) {
        Ok(None) => return,
        Ok(Some(path)) => open_ro(&path, OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .and_then(|c| {
                each_row(&c, sql, 4, &mut |r| {
                    if r[1].trim().is_empty() {
                        return;
                    }
                    out.push(Entry {
                        key: Some(std::mem::take(&mut r[0])).filter(|k| !k.is_empty()),
                        text: std::mem::take(&mut r[1]),
                        category: Category::parse(&r[2]).unwrap_or(if r[2].is_empty() {
                            Category::Core
                        } else {
                            Category::Custom
                        }),
                        created: parse_instant(&r[3]),
                        updated: None,
                    });
                })
            })
            .map_err(|e| ["its memories cannot be read (", &e.to_string(), ")"].concat()),
        Err(why) => Err(why),
    };
    if let Err(why) = r {
        return plan.skip("memory", rel, &why);
    }
    plan.batch(rel, out);
}

const INCOMPLETE: &str = "its schedule is incomplete";

/// A job's schedule as OpenClaw, PicoClaw and ZeroClaw store it: `{kind: "cron", expr,
/// tz}`, `{kind: "every", everyMs | every_ms}`, `{kind: "at", at | atMs}`.
fn when(v: &Value) -> Result<When, String> {
    let get = |keys: &str| keys.split(' ').find_map(|k| json::get(v, k));
    let kind = json::str_at(v, "kind").unwrap_or("");
    let w = match kind {
        "cron" => json::str_at(v, "expr").map(|e| {
            let tz = json::str_at(v, "tz").filter(|t| !t.trim().is_empty());
            When::Cron(e.to_string(), tz.map(str::to_string))
        }),
        "every" => get("everyMs every_ms")
            .and_then(json::as_u64)
            .map(When::EveryMs),
        "at" => get("atMs at_ms at").and_then(time_value).map(When::At),
        _ => return Err(["\"", kind, "\" schedules have no yoctoclaw equivalent"].concat()),
    };
    w.ok_or_else(|| INCOMPLETE.to_string())
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
        let is = |v: &Value, k: &str, b: bool| json::get(v, k).and_then(json::as_bool) == Some(b);
        let p = json::get(j, "payload").unwrap_or(j);
        let ps = |k: &str| json::str_at(p, k).filter(|v| !v.trim().is_empty());
        let text = ps("message")
            .or_else(|| ps("text"))
            .or_else(|| s("prompt"))
            .unwrap_or("");
        let when = if is(j, "enabled", false) || is(j, "paused", true) {
            Err("disabled in the peer".to_string())
        } else if s("job_type") == Some("shell")
            || (s("job_type") != Some("agent") && ps("command").is_some())
        {
            Err("it runs a shell command".into())
        } else if let Some(sch) = json::get(j, "schedule") {
            when(sch)
        } else if is(j, "one_shot", true) {
            json::get(j, "next_run_secs")
                .and_then(time_value)
                .map(When::At)
                .ok_or_else(|| INCOMPLETE.to_string())
        } else if let Some(e) = s("expression") {
            Ok(When::Cron(e.to_string(), None))
        } else {
            Err(INCOMPLETE.to_string())
        };
        let d = json::get(j, "delivery").unwrap_or(p);
        let deliver = is(p, "deliver", true);
        let mut target = String::new();
        if deliver
            || !matches!(json::str_at(d, "mode"), None | Some("none"))
            || json::get(d, "to").is_some()
        {
            // `telegram:<chat_id>` when it delivers to a Telegram chat, else the log.
            let to = json::get(d, "to")
                .and_then(super::scalar)
                .unwrap_or_default();
            let telegram =
                json::str_at(d, "channel").is_none_or(|c| c.eq_ignore_ascii_case("telegram"));
            if let Ok(id) = to
                .strip_prefix("telegram:")
                .unwrap_or(&to)
                .trim()
                .parse::<i64>()
                && telegram
            {
                target = ["telegram:", &id.to_string()].concat();
            }
        }
        let what = ["\"", name, "\""].concat();
        match when {
            Err(why) => plan.skip("cron", &what, &why),
            Ok(_) if text.trim().is_empty() => {
                plan.skip("cron", &what, "it has no prompt or message")
            }
            Ok(when) => plan.jobs.push(Job {
                name: name.to_string(),
                when,
                text: text.trim().to_string(),
                is_message: deliver && deliver_as_is,
                target,
            }),
        }
    }
}

/// `list` when it is an array, else its `jobs` member's array (the peers' two shapes).
pub fn job_list(v: &Value) -> &[Value] {
    json::as_array(v)
        .or_else(|| json::get(v, "jobs").and_then(json::as_array))
        .map_or(&[], |a| a.as_slice())
}
