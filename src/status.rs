//! `yoctoclaw status`: what is configured and how it is doing, in one screen: version and
//! build date, home, provider and model, channels (the HTTP API when on) and the tools
//! each is offered, the gateway (running or not, its RSS), sessions, memory entries by
//! category, cron jobs and the next run, the last heartbeat, today's token usage, and the
//! database size.
//!
//! It reads the database directly (plain `SELECT`s) so it works whether or not the gateway
//! runs, and learns about a running gateway from a status record the gateway writes, not
//! from a socket.
//!
//! # State keys
//! - `gateway.status` (`GATEWAY_STATUS_KEY`): written by the gateway with
//!   `write_gateway_record` every `GATEWAY_RECORD_INTERVAL_SECS`; `pid=… rss_kib=…
//!   hwm_kib=… live=… at=…`. A record whose process is gone (`/proc/<pid>` missing) or
//!   older than `GATEWAY_RECORD_STALE_SECS` means the gateway is not running.
//! - `gateway.reload` (`GATEWAY_RELOAD_KEY`): the running gateway's last reload
//!   ([`write_reload_record`]): `PID GENERATION AT APPLIED VERDICT`, the verdict one
//!   line to the end; `yoctoclaw reload` waits for its generation to grow.
//! - `heartbeat.last_run` (`HEARTBEAT_LAST_RUN_KEY`): Unix seconds, in decimal, of the
//!   last heartbeat check-in; written by the heartbeat.
//! - `heartbeat.last_result` (`HEARTBEAT_LAST_RESULT_KEY`): one short line saying how it
//!   went, e.g. `ok`, `skipped: nothing to do`, `delivered to telegram:123`, `error: …`.
//! - `mcp.server.<NAME>` (`MCP_RECORD_PREFIX`): each MCP server as the gateway last saw
//!   it, written with [`write_mcp_record`] beside the gateway's own record (through
//!   `app::mcp_cmd::record_servers`; an unchanged record is not rewritten); `state=… tools=… restarts=… at=… error=…` (the error, one sentence without
//!   host or secret, runs to the end). Read by `status` and `yoctoclaw mcp list`, and
//!   believed only while the gateway's own record says it runs.
//!
//! # Bounds
//! Stored texts are shown cut to `MAX_SHOWN_TEXT_BYTES`; at most `MAX_CATEGORIES_SHOWN`
//! memory categories are listed. `/proc/self/status` is read up to
//! `MAX_PROC_STATUS_BYTES`, a gateway's `/proc/PID/cmdline` up to `MAX_CMDLINE_BYTES`.
//! One MCP record per configured server (at most `config::mcp::MCP_MAX_SERVERS`), its
//! error cut to `MAX_SHOWN_TEXT_BYTES`.
//!
//! # Threads
//! Main thread for `yoctoclaw status`; the gateway writes its record on the executor thread
//! ([`write_gateway_record`], one small deferred commit a minute).
//!
//! # Blocking
//! Small SQLite reads and file metadata; meant for the command line, not the executor.

use crate::config::{Config, Env, Home};
use crate::store::{Db, StoreError};
use crate::time::clock::{Source, format_at};
use rusqlite::params;
use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

/// State key of the gateway's status record.
pub const GATEWAY_STATUS_KEY: &str = "gateway.status";
/// The `state` key naming the workers a process runs now: `PID NAME@SESSION…`.
pub const WORKERS_RUNNING_KEY: &str = "workers.running";
/// State key of the gateway's last reload.
pub const GATEWAY_RELOAD_KEY: &str = "gateway.reload";
/// State key: Unix seconds of the last heartbeat check-in.
pub const HEARTBEAT_LAST_RUN_KEY: &str = "heartbeat.last_run";
/// State key: one line on how the last heartbeat went.
pub const HEARTBEAT_LAST_RESULT_KEY: &str = "heartbeat.last_result";
/// How often the gateway should write its record.
pub const GATEWAY_RECORD_INTERVAL_SECS: u64 = 60;
/// A record older than this means the gateway stopped (five missed writes).
pub const GATEWAY_RECORD_STALE_SECS: i64 = 5 * 60;
/// Longest stored text shown in the report.
pub const MAX_SHOWN_TEXT_BYTES: usize = 200;
/// Most memory categories listed.
pub const MAX_CATEGORIES_SHOWN: usize = 16;
/// Bytes of `/proc/self/status` read (the file is about 1.5 KiB).
pub const MAX_PROC_STATUS_BYTES: u64 = 16 * 1024;
/// Most of a process's command line read to tell it is a gateway.
const MAX_CMDLINE_BYTES: u64 = 4096;

/// Resident memory of a process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rss {
    /// Resident now (VmRSS).
    pub rss_kib: u64,
    /// Peak resident (VmHWM).
    pub hwm_kib: u64,
}

/// This process's resident memory from `/proc/self/status`; `None` where there is no
/// `/proc` (not Linux).
pub fn self_rss_kib() -> Option<Rss> {
    let f = std::fs::File::open("/proc/self/status").ok()?;
    let mut text = String::new();
    f.take(MAX_PROC_STATUS_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    parse_proc_status(&text)
}

/// VmRSS and VmHWM (kB) from the text of `/proc/<pid>/status`.
pub fn parse_proc_status(text: &str) -> Option<Rss> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
    };
    let rss_kib = field("VmRSS:")?;
    let hwm_kib = field("VmHWM:").unwrap_or(rss_kib);
    Some(Rss { rss_kib, hwm_kib })
}

/// Bytes of `/proc/meminfo` read (the file is about 1.5 KiB).
pub const MAX_MEMINFO_BYTES: u64 = 16 * 1024;

/// MemAvailable (KiB) from the text of `/proc/meminfo`.
pub fn mem_available_kib(meminfo: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The system's MemAvailable now (KiB); `None` where there is no `/proc`.
pub fn mem_available_now() -> Option<u64> {
    let f = std::fs::File::open("/proc/meminfo").ok()?;
    let mut text = String::new();
    f.take(MAX_MEMINFO_BYTES).read_to_string(&mut text).ok()?;
    mem_available_kib(&text)
}

/// Tokens used (prompt, completion) today and this month (UTC days).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUse {
    pub day: (u64, u64),
    pub month: (u64, u64),
}

/// The tokens used today and this month, at Unix seconds `now`.
pub fn token_use(db: &Db, now: i64) -> TokenUse {
    let day = crate::store::usage::day_of(now);
    let month = day.get(..7).unwrap_or(&day);
    TokenUse {
        day: db.usage_totals(&day).unwrap_or((0, 0)),
        month: db.usage_totals(month).unwrap_or((0, 0)),
    }
}

/// What the gateway last said about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatewayRecord {
    pub pid: u32,
    pub rss_kib: u64,
    pub hwm_kib: u64,
    pub live_sessions: u64,
    /// Unix seconds when written (by the gateway's clock).
    pub at: i64,
    /// The same moment by the gateway's system clock (differs on network time).
    pub sys_at: i64,
    /// Which clock the gateway used.
    pub clock: Source,
}

impl GatewayRecord {
    fn encode(&self) -> String {
        format!(
            "pid={} rss_kib={} hwm_kib={} live={} at={} sys={} clock={}",
            self.pid,
            self.rss_kib,
            self.hwm_kib,
            self.live_sessions,
            self.at,
            self.sys_at,
            self.clock.name()
        )
    }

    fn decode(s: &str) -> Option<GatewayRecord> {
        let mut r = GatewayRecord {
            pid: 0,
            rss_kib: 0,
            hwm_kib: 0,
            live_sessions: 0,
            at: 0,
            sys_at: 0,
            clock: Source::System,
        };
        let (mut has_pid, mut has_at, mut has_sys) = (false, false, false);
        for part in s.split_whitespace() {
            let (k, v) = part.split_once('=')?;
            match k {
                "pid" => {
                    r.pid = v.parse().ok()?;
                    has_pid = true;
                }
                "rss_kib" => r.rss_kib = v.parse().ok()?,
                "hwm_kib" => r.hwm_kib = v.parse().ok()?,
                "live" => r.live_sessions = v.parse().ok()?,
                "at" => {
                    r.at = v.parse().ok()?;
                    has_at = true;
                }
                "sys" => {
                    r.sys_at = v.parse().ok()?;
                    has_sys = true;
                }
                "clock" => r.clock = Source::from_name(v).unwrap_or(Source::System),
                _ => {}
            }
        }
        // Records written before `sys` existed: the system clock was the clock.
        if !has_sys {
            r.sys_at = r.at;
        }
        (has_pid && has_at && r.pid > 0).then_some(r)
    }
}

/// Store the gateway's status record (the gateway calls this every
/// `GATEWAY_RECORD_INTERVAL_SECS` with `std::process::id()`, `self_rss_kib()`, its live
/// session count and `clock::now()`; the system clock and the clock's source are read
/// here).
pub fn write_gateway_record(
    db: &Db,
    pid: u32,
    rss: Rss,
    live_sessions: usize,
    now: i64,
) -> Result<(), StoreError> {
    let sys = if crate::time::clock::source() == Source::Network {
        crate::time::clock::system_secs()
    } else {
        now
    };
    let r = GatewayRecord {
        pid,
        rss_kib: rss.rss_kib,
        hwm_kib: rss.hwm_kib,
        live_sessions: live_sessions as u64,
        at: now,
        sys_at: sys,
        clock: crate::time::clock::source(),
    };
    // Not synced to disk: a record lost to a power cut describes a process that is gone
    // anyway. An idle gateway then costs the SD card no sync a minute (docs/DECISIONS.md,
    // 95); the next answer's commit, or the kernel's writeback, puts it on the card.
    db.deferred_sync(|| db.set_state(GATEWAY_STATUS_KEY, &r.encode()))
}

/// The workers the running gateway runs now (by its record's pid).
fn running(db: &Db, gateway: &Gateway) -> String {
    let v = db.get_state(WORKERS_RUNNING_KEY).ok().flatten();
    let mut words = v.as_deref().unwrap_or("").split(' ');
    let pid = words.next().and_then(|p| p.parse::<u32>().ok());
    let names: Vec<&str> = words.filter(|w| !w.is_empty()).collect();
    match gateway {
        Gateway::Running(r) if pid == Some(r.pid) && !names.is_empty() => {
            format!("{} running: {}", names.len(), names.join(" "))
        }
        _ => "none running".into(),
    }
}

/// A gateway's last reload (`GATEWAY_RELOAD_KEY`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadRecord {
    /// The gateway process that reloaded.
    pub pid: u32,
    /// Reloads that process did (applied or refused), counted from 1.
    pub generation: u64,
    /// When (`clock::now`).
    pub at: i64,
    /// Whether the new configuration is in use.
    pub applied: bool,
    /// The one line the gateway logged.
    pub verdict: String,
}

impl ReloadRecord {
    fn encode(&self) -> String {
        let applied = u8::from(self.applied);
        let (pid, generation, at) = (self.pid, self.generation, self.at);
        format!("{pid} {generation} {at} {applied} {}", self.verdict)
    }

    fn decode(text: &str) -> Option<ReloadRecord> {
        let mut f = text.splitn(5, ' ');
        Some(ReloadRecord {
            pid: f.next()?.parse().ok()?,
            generation: f.next()?.parse().ok()?,
            at: f.next()?.parse().ok()?,
            applied: f.next()? == "1",
            verdict: f.next().unwrap_or_default().to_string(),
        })
    }
}

/// Store the gateway's last reload (synced: `yoctoclaw reload` is waiting for it).
pub fn write_reload_record(db: &Db, r: &ReloadRecord) -> Result<(), StoreError> {
    db.set_state(GATEWAY_RELOAD_KEY, &r.encode())
}

/// The last reload of gateway `pid`, if it did one.
pub fn read_reload_record(db: &Db, pid: u32) -> Option<ReloadRecord> {
    let text = db.get_state(GATEWAY_RELOAD_KEY).ok()??;
    ReloadRecord::decode(&text).filter(|r| r.pid == pid)
}

/// Whether a gateway is running, by its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gateway {
    /// A fresh record from a live process.
    Running(GatewayRecord),
    /// The last record, from a process that is gone or stopped writing.
    Stopped(GatewayRecord),
    /// No (readable) record: the gateway never ran here.
    Never,
}

/// Read the gateway's record and judge it at `sys_now`, this process's system clock (the
/// gateway may be on network time while this process is not: both sides compare system
/// clocks).
pub fn read_gateway_record(db: &Db, sys_now: i64) -> Result<Gateway, StoreError> {
    let Some(text) = db.get_state(GATEWAY_STATUS_KEY)? else {
        return Ok(Gateway::Never);
    };
    let Some(r) = GatewayRecord::decode(&text) else {
        return Ok(Gateway::Never);
    };
    let fresh =
        sys_now.saturating_sub(r.sys_at) <= GATEWAY_RECORD_STALE_SECS && r.sys_at <= sys_now + 60;
    Ok(if fresh && process_exists(r.pid) {
        Gateway::Running(r)
    } else {
        Gateway::Stopped(r)
    })
}

fn process_exists(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// The gateway running on `db`, by a fresh record whose process still runs the `gateway`
/// command: the one a signal may be sent to (a gateway killed without a word leaves a
/// fresh record, and its pid may be another program's by now).
pub fn live_gateway(db: &Db) -> Option<GatewayRecord> {
    match read_gateway_record(db, crate::time::clock::system_secs()) {
        Ok(Gateway::Running(r)) if runs_gateway(r.pid) => Some(r),
        _ => None,
    }
}

/// Whether process `pid` was started with the `gateway` command (`/proc/PID/cmdline`).
fn runs_gateway(pid: u32) -> bool {
    let mut b = Vec::new();
    let read = std::fs::File::open(format!("/proc/{pid}/cmdline"))
        .and_then(|f| f.take(MAX_CMDLINE_BYTES).read_to_end(&mut b));
    read.is_ok() && b.split(|&c| c == 0).any(|arg| arg == b"gateway")
}

/// State key prefix of the MCP servers' records (`mcp.server.<NAME>`).
pub const MCP_RECORD_PREFIX: &str = "mcp.server.";

/// An MCP server as the gateway last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpRecord {
    /// `disabled`, `stopped`, `starting`, `running` or `failed`.
    pub state: String,
    pub tools: u64,
    pub restarts: u32,
    /// Unix seconds when written.
    pub at: i64,
    /// The last error (one sentence, no host, no secret); empty: none.
    pub error: String,
}

impl McpRecord {
    fn encode(&self) -> String {
        let mut error = cut(self.error.trim()).replace(['\r', '\n'], " ");
        if error.is_empty() {
            error.push('-');
        }
        format!(
            "state={} tools={} restarts={} at={} error={error}",
            self.state, self.tools, self.restarts, self.at
        )
    }

    fn decode(s: &str) -> Option<McpRecord> {
        let (head, error) = s.split_once(" error=").unwrap_or((s, "-"));
        let mut r = McpRecord {
            state: String::new(),
            tools: 0,
            restarts: 0,
            at: 0,
            error: if error == "-" {
                String::new()
            } else {
                error.to_string()
            },
        };
        for part in head.split_whitespace() {
            let (k, v) = part.split_once('=')?;
            match k {
                "state" => r.state = v.to_string(),
                "tools" => r.tools = v.parse().ok()?,
                "restarts" => r.restarts = v.parse().ok()?,
                "at" => r.at = v.parse().ok()?,
                _ => {}
            }
        }
        (!r.state.is_empty()).then_some(r)
    }
}

/// Store MCP server `name`'s record (the gateway, on the executor thread; deferred sync
/// like its own record).
pub fn write_mcp_record(db: &Db, name: &str, r: &McpRecord) -> Result<(), StoreError> {
    let key = [MCP_RECORD_PREFIX, name].concat();
    let text = r.encode();
    if db.get_state(&key)?.as_deref() == Some(text.as_str()) {
        return Ok(());
    }
    db.deferred_sync(|| db.set_state(&key, &text))
}

/// MCP server `name`'s last record, if the gateway wrote one.
pub fn read_mcp_record(db: &Db, name: &str) -> Option<McpRecord> {
    let text = db.get_state(&[MCP_RECORD_PREFIX, name].concat()).ok()??;
    McpRecord::decode(&text)
}

/// What `status` and `mcp list` say of a server's state: the gateway's record while it
/// runs, else that nothing runs it (and what it last recorded).
pub fn mcp_state_text(enabled: bool, record: Option<&McpRecord>, gateway: &Gateway) -> String {
    if !enabled {
        return "disabled".into();
    }
    let last = |r: &McpRecord| {
        let mut t = format!("{}, {} tool(s)", r.state, r.tools);
        if r.restarts > 0 {
            let _ = write!(t, ", {} restart(s)", r.restarts);
        }
        if !r.error.is_empty() {
            let _ = write!(t, ", last error: {}", r.error);
        }
        t
    };
    match (gateway, record) {
        (Gateway::Running(_), Some(r)) => last(r),
        (Gateway::Running(_), None) => "not recorded (the gateway has not used it)".into(),
        (_, Some(r)) => format!("not running (the gateway is not; last: {})", last(r)),
        (_, None) => "not recorded (the gateway is not running)".into(),
    }
}

/// The report printed by `yoctoclaw status`.
pub fn report(home: &Home, env: &Env, cfg: &Config) -> String {
    let now = crate::time::clock::now();
    let tz = cfg.agent.timezone.as_str();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}, built {}",
        crate::runtime::version_text(),
        crate::store::usage::day_of(crate::time::build_epoch())
    );
    let _ = writeln!(s, "home:       {}", home.dir.display());
    let key = if env.get(&cfg.provider.api_key_env).is_some() {
        "set"
    } else {
        "not set"
    };
    let _ = writeln!(
        s,
        "provider:   {} {} ({}), key {} ({key}){}",
        cfg.provider.kind.name(),
        cfg.provider.model,
        cfg.provider.base_url,
        cfg.provider.api_key_env,
        match cfg.fallbacks.len() {
            0 => String::new(),
            n => format!(", {n} fallback(s)"),
        }
    );
    let mut channels = vec!["terminal".to_string()];
    let set = |var: &str| {
        if env.get(var).is_some() {
            "set"
        } else {
            "NOT SET"
        }
    };
    if cfg.telegram.enabled {
        let token = set(&cfg.telegram.token_env);
        channels.push(format!(
            "telegram ({}, token {} {token}, {} user(s) allowed)",
            cfg.telegram.mode.name(),
            cfg.telegram.token_env,
            cfg.telegram.allow_from.len()
        ));
    } else {
        channels.push("telegram disabled".into());
    }
    if !cfg.serial.device.is_empty() {
        channels.push(format!(
            "serial {} at {} baud",
            cfg.serial.device, cfg.serial.baud
        ));
    }
    if cfg.http.enabled {
        let token = set(&cfg.http.token_env);
        channels.push(format!(
            "http on {} (token {} {token})",
            cfg.http.listen, cfg.http.token_env
        ));
    }
    let _ = writeln!(s, "channels:   {}", channels.join(", "));
    tools_lines(cfg, &mut s);

    let db_path = home.db_file();
    if !db_path.exists() {
        let _ = writeln!(s, "gateway:    never started");
        let _ = write!(
            s,
            "database:   not created yet (run yoctoclaw agent or gateway)"
        );
        return s;
    }
    let db = match Db::open(&db_path, cfg.memory.cache_kib) {
        Ok(db) => db,
        Err(e) => {
            let _ = write!(s, "database:   {e}");
            return s;
        }
    };
    let sys_now = crate::time::clock::system_secs();
    let gateway = read_gateway_record(&db, sys_now).unwrap_or(Gateway::Never);
    let _ = writeln!(s, "gateway:    {}", gateway_text(&gateway, sys_now, tz));
    if let Gateway::Running(g) = gateway
        && let Some(r) = read_reload_record(&db, g.pid)
    {
        let _ = writeln!(
            s,
            "reload:     {} at {}: {}",
            r.generation,
            format_at(r.at, tz),
            cut(&r.verdict)
        );
    }
    let stored = db.session_count().unwrap_or(0);
    let live = match gateway {
        Gateway::Running(r) => format!("{} live in the gateway", r.live_sessions),
        _ => "none live".to_string(),
    };
    let _ = writeln!(s, "sessions:   {stored} stored, {live}");
    let saved = db.workers().map_or(0, |w| w.len());
    let _ = writeln!(s, "workers:    {saved} saved, {}", running(&db, &gateway));
    let _ = writeln!(s, "memory:     {}", memory_text(&db));
    let _ = writeln!(s, "cron:       {}", cron_text(&db, tz));
    let _ = writeln!(s, "heartbeat:  {}", heartbeat_text(cfg, &db, tz));
    if cfg.mcp.servers.is_empty() {
        let _ = writeln!(s, "mcp:        no servers configured");
    }
    for m in &cfg.mcp.servers {
        let r = read_mcp_record(&db, &m.name);
        let _ = writeln!(
            s,
            "mcp:        {} ({}): {}",
            m.name,
            m.transport_name(),
            mcp_state_text(m.enabled, r.as_ref(), &gateway)
        );
    }
    let _ = writeln!(s, "{}", tokens_line(&db, &cfg.budget, now));
    if let Some(line) = tool_calls_line(&db, now) {
        let _ = writeln!(s, "{line}");
    }
    let size = file_len(&db_path) + file_len(&wal_path(&db_path));
    let _ = write!(
        s,
        "database:   {} ({} KiB with its WAL, schema {})",
        db_path.display(),
        size.div_ceil(1024),
        db.schema_version().unwrap_or(0)
    );
    s
}

/// One line per channel: how many tools its turns are offered, and those denied there.
fn tools_lines(cfg: &Config, s: &mut String) {
    use crate::config::tool_rules::{CHANNELS, HARDWARE_TOOLS, TOOL_NAMES};
    let hw = !cfg.hardware.allow.is_empty();
    let all: Vec<&str> = TOOL_NAMES
        .into_iter()
        .filter(|t| hw || !HARDWARE_TOOLS.contains(t))
        .collect();
    for ch in CHANNELS {
        let denied: Vec<&str> = all
            .iter()
            .copied()
            .filter(|t| cfg.tool_denied_by(t, ch).is_some())
            .collect();
        let label = format!("tools on {}:", ch.as_str());
        let _ = write!(
            s,
            "{label:<20}{} of {}",
            all.len() - denied.len(),
            all.len()
        );
        if !denied.is_empty() {
            let _ = write!(s, ", not {}", denied.join(" "));
        }
        s.push('\n');
    }
}

fn gateway_text(g: &Gateway, sys_now: i64, tz: &str) -> String {
    match g {
        Gateway::Running(r) => format!(
            "running, pid {}, RSS {} KiB (peak {} KiB), {} live session(s), record {} s old; time from {}",
            r.pid,
            r.rss_kib,
            r.hwm_kib,
            r.live_sessions,
            sys_now.saturating_sub(r.sys_at).max(0),
            r.clock.describe()
        ),
        Gateway::Stopped(r) => format!("not running (last seen {})", format_at(r.at, tz)),
        Gateway::Never => "not running (never started)".into(),
    }
}

fn memory_text(db: &Db) -> String {
    let rows: Result<Vec<(String, i64)>, rusqlite::Error> = (|| {
        let mut stmt = db.conn.prepare(
            "SELECT category, COUNT(*) FROM memories GROUP BY category ORDER BY category LIMIT ?1",
        )?;
        let rows = stmt.query_map(params![MAX_CATEGORIES_SHOWN as i64], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        rows.collect()
    })();
    match rows {
        Ok(rows) if rows.is_empty() => "0 entries".into(),
        Ok(rows) => {
            let total: i64 = rows.iter().map(|(_, n)| n).sum();
            let parts: Vec<String> = rows
                .iter()
                .map(|(c, n)| format!("{} {n}", cut(c)))
                .collect();
            format!("{total} entries ({})", parts.join(", "))
        }
        Err(e) => format!("cannot read: {e}"),
    }
}

fn cron_text(db: &Db, tz: &str) -> String {
    let counts = db.conn.query_row(
        "SELECT COUNT(*), IFNULL(SUM(enabled != 0), 0) FROM cron_jobs",
        [],
        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
    );
    let (total, enabled) = match counts {
        Ok(c) => c,
        Err(e) => return format!("cannot read: {e}"),
    };
    if total == 0 {
        return "no jobs".into();
    }
    let next = db.conn.query_row(
        "SELECT id, next_run FROM cron_jobs
         WHERE enabled != 0 AND next_run IS NOT NULL ORDER BY next_run LIMIT 1",
        [],
        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
    );
    let next = match next {
        Ok((id, at)) => format!("next: job {id} at {}", format_at(at, tz)),
        Err(_) => "nothing scheduled".into(),
    };
    format!("{total} job(s), {enabled} enabled; {next}")
}

fn heartbeat_text(cfg: &Config, db: &Db, tz: &str) -> String {
    let hb = &cfg.heartbeat;
    let setting = if hb.enabled {
        format!("every {} min", hb.interval_mins)
    } else {
        "disabled".into()
    };
    let last = db
        .get_state(HEARTBEAT_LAST_RUN_KEY)
        .ok()
        .flatten()
        .and_then(|v| v.trim().parse::<i64>().ok());
    let result = db
        .get_state(HEARTBEAT_LAST_RESULT_KEY)
        .ok()
        .flatten()
        .map(|r| cut(r.lines().next().unwrap_or("")));
    match (last, result) {
        (Some(at), Some(r)) => format!("{setting}; last {}: {r}", format_at(at, tz)),
        (Some(at), None) => format!("{setting}; last {}", format_at(at, tz)),
        (None, _) => format!("{setting}; never ran"),
    }
}

/// A stored text cut for display, scrubbed of secrets.
pub fn cut(s: &str) -> String {
    let s = crate::security::scrub::scrub(s);
    if s.len() <= MAX_SHOWN_TEXT_BYTES {
        return s.into_owned();
    }
    let mut end = MAX_SHOWN_TEXT_BYTES;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", s.get(..end).unwrap_or(""))
}

fn wal_path(db: &Path) -> std::path::PathBuf {
    let mut p = db.as_os_str().to_os_string();
    p.push("-wal");
    p.into()
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// `tool calls: today N, R denied, refused or blocked` (UTC day, from the audit trail);
/// `None` when the trail cannot be read (a database made by an older yoctoclaw and not
/// opened for writing since).
fn tool_calls_line(db: &Db, now: i64) -> Option<String> {
    let midnight = now - now.rem_euclid(crate::time::civil::SECS_PER_DAY);
    let (n, refused) = db.audit_counts(midnight).ok()?;
    Some(format!(
        "tool calls: today {n}, {refused} denied, refused or blocked (yoctoclaw audit)"
    ))
}

/// `tokens:     today N (P in, C out), this month M (…)` (UTC days), with the budgets
/// when set.
fn tokens_line(db: &Db, budget: &crate::config::BudgetConfig, now: i64) -> String {
    let TokenUse {
        day: (dp, dc),
        month: (mp, mc),
    } = token_use(db, now);
    let of = |limit: Option<u64>| limit.map(|n| format!(" of {n}")).unwrap_or_default();
    format!(
        "tokens:     today {}{} ({dp} in, {dc} out), this month {}{} ({mp} in, {mc} out)",
        dp.saturating_add(dc),
        of(budget.daily_tokens),
        mp.saturating_add(mc),
        of(budget.monthly_tokens),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_status_is_parsed() {
        let text =
            "Name:\tyoctoclaw\nVmPeak:\t  9000 kB\nVmHWM:\t    6100 kB\nVmRSS:\t    5120 kB\n";
        assert_eq!(
            parse_proc_status(text),
            Some(Rss {
                rss_kib: 5120,
                hwm_kib: 6100
            })
        );
        assert_eq!(parse_proc_status("Name: x\n"), None);
        assert_eq!(parse_proc_status("VmRSS: lots\n"), None);
        #[cfg(target_os = "linux")]
        {
            let me = self_rss_kib().unwrap();
            assert!(me.rss_kib > 0 && me.hwm_kib >= me.rss_kib);
        }
    }

    #[test]
    fn reload_records_round_trip_and_belong_to_their_gateway() {
        let db = Db::open_in_memory().unwrap();
        assert_eq!(read_reload_record(&db, 7), None);
        let r = ReloadRecord {
            pid: 7,
            generation: 3,
            at: 1000,
            applied: false,
            verdict: "refused, the running configuration is kept: config.json is empty".into(),
        };
        write_reload_record(&db, &r).unwrap();
        assert_eq!(read_reload_record(&db, 7), Some(r));
        // Another process's record (a gateway since restarted) is not this one's.
        assert_eq!(read_reload_record(&db, 8), None);
        db.set_state(GATEWAY_RELOAD_KEY, "7 x").unwrap();
        assert_eq!(read_reload_record(&db, 7), None);
    }

    #[test]
    fn gateway_records_round_trip_and_go_stale() {
        let db = Db::open_in_memory().unwrap();
        assert_eq!(read_gateway_record(&db, 1000).unwrap(), Gateway::Never);
        let me = std::process::id();
        let rss = Rss {
            rss_kib: 4000,
            hwm_kib: 4500,
        };
        write_gateway_record(&db, me, rss, 3, 1000).unwrap();
        let Gateway::Running(r) = read_gateway_record(&db, 1030).unwrap() else {
            panic!("our own pid is alive");
        };
        assert_eq!(
            (r.pid, r.rss_kib, r.hwm_kib, r.live_sessions),
            (me, 4000, 4500, 3)
        );
        // Too old.
        assert!(matches!(
            read_gateway_record(&db, 1000 + GATEWAY_RECORD_STALE_SECS + 1).unwrap(),
            Gateway::Stopped(_)
        ));
        // A pid that cannot exist (above the kernel's pid_max limit).
        write_gateway_record(&db, 4_999_999, rss, 0, 1000).unwrap();
        assert!(matches!(
            read_gateway_record(&db, 1000).unwrap(),
            Gateway::Stopped(_)
        ));
        // Garbage is "never", not an error.
        db.set_state(GATEWAY_STATUS_KEY, "pid=x at=").unwrap();
        assert_eq!(read_gateway_record(&db, 1000).unwrap(), Gateway::Never);
    }

    #[test]
    fn record_decoding_survives_random_text() {
        let mut rng = crate::testkit::XorShift(0x1234_5678_9abc_def1);
        let alphabet = b"pid=rss_kibhwmliveat0123456789 -\n\xff";
        for _ in 0..3000 {
            let mut s = Vec::new();
            for _ in 0..rng.below(60) {
                s.push(alphabet[rng.index(alphabet.len())]);
            }
            let _ = GatewayRecord::decode(&String::from_utf8_lossy(&s));
        }
    }

    #[test]
    fn long_texts_are_cut_on_a_character_boundary() {
        let long = "é".repeat(300);
        let c = cut(&long);
        assert!(c.len() <= MAX_SHOWN_TEXT_BYTES + '…'.len_utf8());
        assert!(c.ends_with('…'));
        assert_eq!(cut("short"), "short");
    }

    #[test]
    fn mcp_records_round_trip_and_are_believed_only_while_the_gateway_runs() {
        let db = Db::open_in_memory().unwrap();
        assert_eq!(read_mcp_record(&db, "ha"), None);
        let r = McpRecord {
            state: "failed".into(),
            tools: 3,
            restarts: 5,
            at: 1_800_000_000,
            error: "the MCP server did not start: exit\nstatus 1".into(),
        };
        write_mcp_record(&db, "ha", &r).unwrap();
        let back = read_mcp_record(&db, "ha").unwrap();
        assert_eq!(back.error, "the MCP server did not start: exit status 1");
        assert_eq!((back.tools, back.restarts, back.at), (3, 5, 1_800_000_000));
        let ok = McpRecord {
            error: String::new(),
            state: "running".into(),
            ..r
        };
        write_mcp_record(&db, "ha", &ok).unwrap();
        assert_eq!(read_mcp_record(&db, "ha"), Some(ok.clone()));
        let gw = GatewayRecord {
            pid: std::process::id(),
            rss_kib: 1,
            hwm_kib: 1,
            live_sessions: 0,
            at: 0,
            sys_at: 0,
            clock: Source::System,
        };
        let running = Gateway::Running(gw);
        assert_eq!(
            mcp_state_text(true, Some(&ok), &running),
            "running, 3 tool(s), 5 restart(s)"
        );
        assert!(mcp_state_text(true, Some(&ok), &Gateway::Stopped(gw)).starts_with("not running"));
        assert!(mcp_state_text(true, None, &Gateway::Never).starts_with("not recorded"));
        assert_eq!(mcp_state_text(false, Some(&ok), &running), "disabled");
        assert_eq!(McpRecord::decode("garbage"), None);
    }
}
