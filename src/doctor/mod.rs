//! `yoctoclaw doctor`: one line per check, `OK`, `WARN` or `FAIL`, each saying what to do.
//! Exit status 0 when nothing failed, 1 otherwise.
//!
//! Doctor loads everything itself instead of through `app::load`, so a broken piece is a
//! `FAIL` line rather than an early exit: a bad `secrets.env` or `config.json` is reported
//! and the checks that do not depend on it still run. Checks that need the config are
//! skipped (one `WARN` line) when it does not parse.
//!
//! Checks, local first: home folder, `secrets.env`, `config.json`, keys present (never
//! printed), clock (not before the build), disk free, memory available, database
//! (`PRAGMA integrity_check`, schema version), FTS5, how `exec` commands are confined
//! (Landlock, or `tools.exec.user`); then the network: DNS + TCP (+ TLS
//! for https) to the provider, the model (see `net`), and when Telegram is enabled the
//! same to the Bot API plus the bot token (`getMe`); with `http.enabled`, the API's token,
//! its address (free to listen on, or a running gateway answering there) and whether it
//! reaches beyond this machine (`http`); then each enabled MCP server started,
//! its tools listed, with the time it took (`mcp`). Every line is scrubbed of secrets.
//!
//! # Bounds
//! Network steps time out after `net::NET_TIMEOUT_SECS`, the model and token checks after
//! `net::MODEL_TIMEOUT_SECS`: a doctor run against dead hosts ends in well under a
//! minute (MCP servers: each within its `timeout_secs`). `/proc/meminfo` is read up to `MAX_MEMINFO_BYTES`; integrity problems listed
//! up to `MAX_INTEGRITY_ROWS`.
//!
//! # Threads
//! Main thread; each DNS lookup on a short-lived `yc-dns` thread (`net`). The HTTP checks
//! resolve on the main thread (`provider::resolve`; each check builds a new client, so
//! nothing is cached).
//!
//! # Blocking
//! Everything blocks; doctor runs on the main thread (plus one short-lived thread per DNS
//! lookup, see `net`).

mod http;
mod mcp;
pub mod net;

use crate::app::AppError;
use crate::config::{self, Config, Env, Home};
use crate::security::scrub::{install_secret_literals, scrub};
use std::fmt;
use std::path::Path;

/// Disk free below this is a warning.
pub const DISK_WARN_BYTES: u64 = 50 * 1024 * 1024;
/// Disk free below this is a failure (SQLite cannot commit on a full disk).
pub const DISK_FAIL_BYTES: u64 = 5 * 1024 * 1024;
/// Available memory below this is a warning (the gateway needs a few MiB, the kernel more).
pub const MEM_WARN_KIB: u64 = 16 * 1024;
/// Available memory below this is a failure.
pub const MEM_FAIL_KIB: u64 = 4 * 1024;
pub use crate::status::MAX_MEMINFO_BYTES;
/// Rows of `integrity_check` output read.
pub const MAX_INTEGRITY_ROWS: usize = 20;

/// A check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Ok,
    Warn,
    Fail,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Verdict::Ok => "OK",
            Verdict::Warn => "WARN",
            Verdict::Fail => "FAIL",
        })
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub verdict: Verdict,
    pub name: &'static str,
    /// What was found and, unless OK, what to do. Already scrubbed.
    pub text: String,
}

impl Check {
    pub fn new(verdict: Verdict, name: &'static str, text: impl AsRef<str>) -> Check {
        Check {
            verdict,
            name,
            text: scrub(text.as_ref()).into_owned(),
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<4} {:<10} {}", self.verdict, self.name, self.text)
    }
}

/// `yoctoclaw doctor`: print every check as it finishes; fail when any check failed.
/// `deep`: also the tool-call check (`net::tool_calls`, a few tokens).
pub fn command(home_flag: Option<&Path>, deep: bool) -> Result<(), AppError> {
    let checks = run(home_flag, deep, &mut |c| println!("{c}"));
    let count = |v| checks.iter().filter(|c| c.verdict == v).count();
    let (warn, fail) = (count(Verdict::Warn), count(Verdict::Fail));
    println!(
        "{} checks: {} OK, {warn} WARN, {fail} FAIL",
        checks.len(),
        count(Verdict::Ok)
    );
    if fail > 0 {
        Err(AppError::Runtime(format!(
            "{fail} check(s) failed: fix the FAIL lines above, then run yoctoclaw doctor again"
        )))
    } else {
        Ok(())
    }
}

/// The version, and an update waiting for the new gateway to confirm its start (`update`).
fn update_check(home: &Home) -> Check {
    let (verdict, line) = match crate::update::read_pending(home) {
        Some(p) => (
            Verdict::Warn,
            format!(
                "version {}; update to {} waiting for the gateway to confirm its start",
                crate::update::VERSION,
                p.version
            ),
        ),
        None => (
            Verdict::Ok,
            concat!("version ", env!("CARGO_PKG_VERSION"), "; no update pending").into(),
        ),
    };
    Check::new(verdict, "version", line)
}

/// Run every check, handing each to `out` as soon as it is known.
pub fn run(home_flag: Option<&Path>, deep: bool, out: &mut dyn FnMut(&Check)) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut emit = |c: Check| {
        out(&c);
        checks.push(c);
    };
    let rust_log = std::env::var("RUST_LOG").ok();
    crate::logging::init(
        rust_log
            .as_deref()
            .and_then(crate::logging::level_from_rust_log)
            .unwrap_or(log::LevelFilter::Warn),
    );
    let home = match Home::resolve(home_flag) {
        Ok(h) => h,
        Err(e) => {
            emit(Check::new(Verdict::Fail, "home", e.to_string()));
            return checks;
        }
    };
    emit(home_check(&home));
    emit(update_check(&home));
    let (env, c) = secrets_check(&home);
    emit(c);
    let (cfg, c) = config_check(&home, &env);
    emit(c);
    if let Some(cfg) = &cfg {
        install_secret_literals(cfg.secret_names().iter().filter_map(|n| env.get(n)));
        for c in key_checks(cfg, &env) {
            emit(c);
        }
        if !cfg.tls.ca_file.trim().is_empty() {
            emit(net::ca_file(&home.dir, &cfg.tls.ca_file));
        }
    }
    emit(clock_check(
        crate::time::clock::now(),
        crate::time::build_epoch(),
    ));
    if let Some(cfg) = &cfg {
        emit(timezone_check(
            &cfg.agent.timezone,
            crate::time::clock::now(),
        ));
    }
    emit(disk_check(&home.dir));
    emit(memory_check());
    emit(database_check(&home));
    if let Some(cfg) = &cfg {
        emit(tool_mode_check(&home, cfg));
    }
    emit(fts5_check());
    emit(confine_check(cfg.as_ref()));
    let Some(cfg) = cfg else {
        emit(Check::new(
            Verdict::Warn,
            "network",
            "provider and Telegram checks skipped until config.json parses",
        ));
        return checks;
    };
    let reach = net::reach("provider", &cfg.provider.base_url);
    let provider_up = reach.verdict != Verdict::Fail;
    emit(reach);
    let key = env.get(&cfg.provider.api_key_env);
    if provider_up {
        let model = net::model(&cfg.provider, key.as_deref());
        let works = model.verdict != Verdict::Fail;
        emit(model);
        if deep && works {
            emit(net::tool_calls(&cfg.provider, &env));
        }
        if let Some(c) = net::context_window(&cfg.provider) {
            emit(c);
        }
    } else {
        emit(Check::new(
            Verdict::Warn,
            "model",
            "not checked: the provider is unreachable",
        ));
    }
    if cfg.telegram.enabled {
        let reach = net::reach("telegram", &cfg.telegram.api_base);
        let up = reach.verdict != Verdict::Fail;
        emit(reach);
        match env.get(&cfg.telegram.token_env) {
            Some(token) if up => emit(net::bot_token(
                &cfg.telegram.api_base,
                &token,
                &cfg.telegram.token_env,
            )),
            Some(_) => emit(Check::new(
                Verdict::Warn,
                "bot token",
                "not checked: the Bot API is unreachable",
            )),
            None => {} // already a FAIL in the key checks
        }
    }
    http::checks(&cfg, &env, &mut emit);
    mcp::checks(&cfg, &env, &home, &mut emit);
    if let Some(c) = time_source_check() {
        emit(c);
    }
    checks
}

/// After the HTTPS checks, on a board whose system clock is before this build: which
/// clock is in use (the Date of a verified HTTPS answer, or none yet).
fn time_source_check() -> Option<Check> {
    use crate::time::clock::{Source, format_at, now, source};
    let src = source();
    if !matches!(src, Source::Network | Source::Unset) {
        return None;
    }
    let (verdict, text) = if src == Source::Network {
        (
            Verdict::Ok,
            format!("{}, from {}", format_at(now(), "UTC"), src.describe()),
        )
    } else {
        (Verdict::Warn, src.describe().to_string())
    };
    Some(Check::new(verdict, "time", text))
}

/// How `exec` commands are kept from the secrets on this kernel.
fn confine_check(cfg: Option<&Config>) -> Check {
    let user = cfg.map(|c| c.tools.exec.user.trim()).unwrap_or("");
    if let Err(e) = crate::tools::exec::run_as(user) {
        return Check::new(Verdict::Fail, "confine", e.to_string());
    }
    match crate::sandbox::landlock() {
        Ok(abi) => Check::new(
            Verdict::Ok,
            "confine",
            format!(
                "exec commands are confined by Landlock (ABI {abi}): the yoctoclaw home outside the workspace is out of their reach"
            ),
        ),
        Err(m) if !user.is_empty() => Check::new(
            Verdict::Ok,
            "confine",
            format!(
                "{} ({m}); exec commands run as user {user}",
                crate::tools::exec::LANDLOCK_MISSING
            ),
        ),
        Err(m) => Check::new(
            Verdict::Warn,
            "confine",
            format!(
                "{} ({m}): exec commands can read what yoctoclaw can; set tools.exec.user to run them as another user (yoctoclaw must run as root), or run yoctoclaw as its own user",
                crate::tools::exec::LANDLOCK_MISSING
            ),
        ),
    }
}

fn mode_of(p: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p)
            .ok()
            .map(|m| m.permissions().mode() & 0o777)
    }
    #[cfg(not(unix))]
    {
        let _ = p;
        None
    }
}

fn home_check(home: &Home) -> Check {
    let dir = home.dir.display();
    if !home.dir.is_dir() {
        return Check::new(
            Verdict::Fail,
            "home",
            format!("{dir} does not exist: run yoctoclaw onboard"),
        );
    }
    match mode_of(&home.dir) {
        Some(m) if m & 0o022 != 0 => Check::new(
            Verdict::Warn,
            "home",
            format!("{dir} has mode {m:o}, writable by others: run chmod 700 {dir}"),
        ),
        Some(m) if m & 0o077 != 0 => Check::new(
            Verdict::Warn,
            "home",
            format!("{dir} has mode {m:o}, readable by others: run chmod 700 {dir}"),
        ),
        _ => Check::new(Verdict::Ok, "home", format!("{dir}, private")),
    }
}

fn secrets_check(home: &Home) -> (Env, Check) {
    let path = home.secrets_file();
    match config::load_secrets_file(&path) {
        Ok(map) => {
            let n = map.len();
            let env = Env::new(map);
            install_secret_literals(env.secret_file_values().map(str::to_string));
            let c = if path.exists() {
                let mode = mode_of(&path).unwrap_or(0o600);
                Check::new(
                    Verdict::Ok,
                    "secrets",
                    format!("{} mode {mode:o}, {n} key(s)", path.display()),
                )
            } else {
                Check::new(
                    Verdict::Ok,
                    "secrets",
                    format!(
                        "no {} (keys come from the environment only)",
                        path.display()
                    ),
                )
            };
            (env, c)
        }
        Err(e) => (
            Env::new(Default::default()),
            Check::new(Verdict::Fail, "secrets", e.to_string()),
        ),
    }
}

fn config_check(home: &Home, env: &Env) -> (Option<Config>, Check) {
    let path = home.config_file();
    match config::load(home, env) {
        Ok(cfg) => {
            let text = if path.exists() {
                format!("{} parses", path.display())
            } else {
                format!("no {} (all defaults)", path.display())
            };
            (Some(cfg), Check::new(Verdict::Ok, "config", text))
        }
        Err(e) => (None, Check::new(Verdict::Fail, "config", e.to_string())),
    }
}

fn key_checks(cfg: &Config, env: &Env) -> Vec<Check> {
    let mut out = Vec::new();
    let p = &cfg.provider;
    let where_from = |name: &str| {
        if std::env::var_os(name).is_some() {
            "environment"
        } else {
            "secrets.env"
        }
    };
    out.push(if env.get(&p.api_key_env).is_some() {
        Check::new(
            Verdict::Ok,
            "api key",
            format!(
                "{} is set (from {})",
                p.api_key_env,
                where_from(&p.api_key_env)
            ),
        )
    } else if p.base_url.starts_with("https://") {
        Check::new(
            Verdict::Fail,
            "api key",
            format!(
                "{} is not set: put {}=... in secrets.env (chmod 600) or the environment",
                p.api_key_env, p.api_key_env
            ),
        )
    } else {
        Check::new(
            Verdict::Ok,
            "api key",
            format!(
                "{} not set; none needed for a local http:// provider",
                p.api_key_env
            ),
        )
    });
    for f in &cfg.fallbacks {
        if env.get(&f.api_key_env).is_none() && f.base_url.starts_with("https://") {
            out.push(Check::new(
                Verdict::Warn,
                "api key",
                format!(
                    "fallback {} has no key: {} is not set, so it will be skipped",
                    f.model, f.api_key_env
                ),
            ));
        }
    }
    let t = &cfg.telegram;
    if t.enabled {
        out.push(if env.get(&t.token_env).is_some() {
            Check::new(
                Verdict::Ok,
                "bot token",
                format!("{} is set (from {})", t.token_env, where_from(&t.token_env)),
            )
        } else {
            Check::new(
                Verdict::Fail,
                "bot token",
                format!(
                    "telegram is enabled but {} is not set: put {}=... (from @BotFather) in secrets.env",
                    t.token_env, t.token_env
                ),
            )
        });
        if t.allow_from.is_empty() {
            out.push(Check::new(
                Verdict::Warn,
                "telegram",
                "telegram.allow_from is empty, so the bot answers nobody: add your numeric user id",
            ));
        }
        if t.mode == crate::config::TelegramMode::Webhook {
            out.push(webhook_check(t, env, &where_from));
        }
    }
    out.push(search_check(&cfg.tools.web_search, env));
    out.push(watchdog_check(&cfg.watchdog));
    out
}

/// Webhook mode: the configuration already holds http.enabled and an https URL (it
/// does not load otherwise); the secret is checked here.
fn webhook_check(
    t: &crate::config::TelegramConfig,
    env: &Env,
    where_from: &dyn Fn(&str) -> &'static str,
) -> Check {
    let var = &t.webhook_secret_env;
    match env.get(var).as_deref().map(str::trim) {
        Some(s) if crate::config::webhook_secret_ok(s) => Check::new(
            Verdict::Ok,
            "telegram webhook",
            format!(
                "webhook mode: Telegram posts to {} (https), {var} is set (from {}), http.enabled",
                t.webhook_url,
                where_from(var)
            ),
        ),
        Some(_) => Check::new(
            Verdict::Fail,
            "telegram webhook",
            format!(
                "{var} must be 1 to 256 letters, digits, _ or -: put a long random string there (openssl rand -hex 32)"
            ),
        ),
        None => Check::new(
            Verdict::Fail,
            "telegram webhook",
            format!(
                "telegram.mode is \"webhook\" but {var} is not set: put a long random string in secrets.env (openssl rand -hex 32)"
            ),
        ),
    }
}

/// Which watchdogs the gateway feeds. The device is looked at, never opened (opening
/// one starts it).
fn watchdog_check(w: &crate::config::WatchdogConfig) -> Check {
    let s = crate::watchdog::Settings {
        device: &w.device,
        timeout_secs: w.timeout_secs,
        stall_secs: w.stall_secs,
    };
    let what = crate::watchdog::describe(&s, false);
    let text = format!("{what}; systemd's too when run by the unit from `service install`");
    if !w.device.is_empty() && std::fs::metadata(&w.device).is_err() {
        return Check::new(
            Verdict::Warn,
            "watchdog",
            format!("{text}; but watchdog.device does not exist: load the driver or fix the path"),
        );
    }
    Check::new(Verdict::Ok, "watchdog", text)
}

/// `web_search`'s backends, in order, and the keys that are missing (a backend without
/// its key is skipped at every search).
fn search_check(ws: &crate::config::WebSearchConfig, env: &Env) -> Check {
    let names: Vec<&str> = ws.chain.iter().map(|b| b.name()).collect();
    let order = names.join(", then ");
    let missing: Vec<String> = ws
        .chain
        .iter()
        .filter_map(|&b| {
            let var = ws.key_env(b)?;
            env.get(var)
                .is_none()
                .then(|| [b.name(), " (", var, ")"].concat())
        })
        .collect();
    if missing.is_empty() {
        return Check::new(Verdict::Ok, "web search", order);
    }
    Check::new(
        Verdict::Warn,
        "web search",
        format!(
            "{order}: no key for {}, so web_search skips it: put the key in secrets.env",
            missing.join(" and ")
        ),
    )
}

/// `agent.timezone` (already valid: the config parsed): the local time at `now` and
/// where the zone's rules came from, the system zoneinfo or the built-in table.
pub fn timezone_check(timezone: &str, now: i64) -> Check {
    use crate::time::tz::{Source, Tz};
    match Tz::parse(timezone) {
        Ok(tz) => {
            let local = crate::time::clock::format_at(now, timezone);
            let text = match tz.source() {
                Source::Builtin => format!(
                    "{local}: rules from {}, no zoneinfo file for it here; install tzdata to follow rule changes",
                    Source::Builtin
                ),
                source => format!("{local}: rules from {source}"),
            };
            Check::new(Verdict::Ok, "timezone", text)
        }
        Err(e) => Check::new(Verdict::Fail, "timezone", e.to_string()),
    }
}

/// The clock against the build time (`now` and `built` in Unix seconds).
pub fn clock_check(now: i64, built: i64) -> Check {
    let day = crate::store::usage::day_of;
    if now < built {
        Check::new(
            Verdict::Warn,
            "clock",
            format!(
                "the clock says {}, before this build ({}): enable NTP (timedatectl set-ntp true, or busybox ntpd -p pool.ntp.org); TLS and cron need the right time",
                day(now),
                day(built)
            ),
        )
    } else {
        Check::new(
            Verdict::Ok,
            "clock",
            crate::time::clock::format_at(now, "UTC"),
        )
    }
}

/// Judge free disk bytes.
pub fn disk_verdict(free: u64) -> Verdict {
    if free < DISK_FAIL_BYTES {
        Verdict::Fail
    } else if free < DISK_WARN_BYTES {
        Verdict::Warn
    } else {
        Verdict::Ok
    }
}

fn disk_check(dir: &Path) -> Check {
    // The home may not exist yet: look at the nearest folder that does.
    let mut at = dir;
    while !at.exists() {
        match at.parent() {
            Some(p) => at = p,
            None => break,
        }
    }
    match rustix::fs::statvfs(at) {
        Ok(s) => {
            let free = s.f_bavail.saturating_mul(s.f_frsize);
            let v = disk_verdict(free);
            let mib = free / (1024 * 1024);
            let text = match v {
                Verdict::Ok => format!("{mib} MiB free under {}", at.display()),
                _ => format!(
                    "only {mib} MiB free under {}: free some space (old logs, journald: journalctl --vacuum-size=10M)",
                    at.display()
                ),
            };
            Check::new(v, "disk", text)
        }
        Err(e) => Check::new(
            Verdict::Warn,
            "disk",
            format!("cannot read free space of {}: {e}", at.display()),
        ),
    }
}

pub use crate::status::mem_available_kib;

fn memory_check() -> Check {
    let Some(kib) = crate::status::mem_available_now() else {
        return Check::new(
            Verdict::Warn,
            "memory",
            "cannot read MemAvailable from /proc/meminfo",
        );
    };
    let mib = kib / 1024;
    if kib < MEM_FAIL_KIB {
        Check::new(
            Verdict::Fail,
            "memory",
            format!("only {mib} MiB available: stop other services or add swap (zram)"),
        )
    } else if kib < MEM_WARN_KIB {
        Check::new(
            Verdict::Warn,
            "memory",
            format!("{mib} MiB available, which is tight: stop other services or add zram swap"),
        )
    } else {
        Check::new(Verdict::Ok, "memory", format!("{mib} MiB available"))
    }
}

fn database_check(home: &Home) -> Check {
    let path = home.db_file();
    if !path.exists() {
        return Check::new(
            Verdict::Ok,
            "database",
            format!("{} not created yet (made on first use)", path.display()),
        );
    }
    // Open without creating or migrating anything: doctor only looks.
    let flags =
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    crate::store::sqlite_alloc::install();
    let conn = match rusqlite::Connection::open_with_flags(&path, flags) {
        Ok(c) => c,
        Err(e) => {
            return Check::new(
                Verdict::Fail,
                "database",
                format!(
                    "cannot open {}: {e}: check its owner and mode",
                    path.display()
                ),
            );
        }
    };
    let _ = conn.busy_timeout(std::time::Duration::from_millis(
        crate::limits::DB_BUSY_TIMEOUT_MS,
    ));
    let rows: Result<Vec<String>, rusqlite::Error> = (|| {
        let mut stmt = conn.prepare("PRAGMA integrity_check")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        rows.take(MAX_INTEGRITY_ROWS).collect()
    })();
    let first = match rows {
        Ok(r) => r.into_iter().next().unwrap_or_else(|| "no answer".into()),
        Err(e) => e.to_string(),
    };
    if first != "ok" {
        return Check::new(
            Verdict::Fail,
            "database",
            format!(
                "{} is damaged ({}): stop yoctoclaw, keep a copy, then try sqlite3 {} .recover, or move it away to start fresh",
                path.display(),
                first,
                path.display()
            ),
        );
    }
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap_or(-1);
    let want = crate::store::SCHEMA_VERSION;
    let mode = match mode_of(&path) {
        Some(m) if m & 0o077 != 0 => format!("; mode {m:o}: run chmod 600 {}", path.display()),
        _ => String::new(),
    };
    let verdict_mode = if mode.is_empty() {
        Verdict::Ok
    } else {
        Verdict::Warn
    };
    if version > want {
        Check::new(
            Verdict::Fail,
            "database",
            format!("schema {version} is newer than this yoctoclaw ({want}): upgrade yoctoclaw"),
        )
    } else if version < want {
        Check::new(
            Verdict::Warn,
            "database",
            format!(
                "integrity ok, schema {version}: upgraded to {want} the next time yoctoclaw opens it{mode}"
            ),
        )
    } else {
        Check::new(
            verdict_mode,
            "database",
            format!("integrity ok, schema {version}{mode}"),
        )
    }
}

/// `provider.tool_mode`, and whether a server refused native tools on a turn (the agent
/// switched to text for that run and left a state row saying so).
fn tool_mode_check(home: &Home, cfg: &Config) -> Check {
    use crate::config::ToolMode;
    let mode = cfg.provider.tool_mode;
    let name = match mode {
        ToolMode::Native => "native",
        ToolMode::Text => "text",
        ToolMode::None => "none",
    };
    let refused: Option<String> = (|| {
        let flags =
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = rusqlite::Connection::open_with_flags(home.db_file(), flags).ok()?;
        conn.query_row(
            "SELECT value FROM state WHERE key = ?1",
            [crate::agent::TOOLS_REFUSED_KEY],
            |r| r.get::<_, String>(0),
        )
        .ok()
    })();
    match refused {
        Some(row) if mode == ToolMode::Native => {
            let (when, detail) = row.split_once(' ').unwrap_or((row.as_str(), ""));
            let at = when
                .parse::<i64>()
                .map(|t| crate::time::civil::CivilDateTime::from_unix(t).to_string())
                .unwrap_or_default();
            Check::new(
                Verdict::Warn,
                "tool mode",
                format!(
                    "native, but the server refused tools ({}) at {at} UTC and yoctoclaw fell back to text for that run: set provider.tool_mode to text",
                    crate::text::cap_text(detail, 160)
                ),
            )
        }
        _ => Check::new(
            Verdict::Ok,
            "tool mode",
            format!("provider.tool_mode {name}"),
        ),
    }
}

fn fts5_check() -> Check {
    crate::store::sqlite_alloc::install();
    let r = rusqlite::Connection::open_in_memory().and_then(|c| {
        c.execute_batch("CREATE VIRTUAL TABLE t USING fts5(x); INSERT INTO t VALUES ('probe');")
    });
    match r {
        Ok(()) => Check::new(Verdict::Ok, "fts5", "full-text search available"),
        Err(e) => Check::new(
            Verdict::Fail,
            "fts5",
            format!(
                "SQLite has no FTS5 ({e}): this build cannot search memory; use an official build"
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(disk_verdict(1024), Verdict::Fail);
        assert_eq!(disk_verdict(DISK_FAIL_BYTES), Verdict::Warn);
        assert_eq!(disk_verdict(DISK_WARN_BYTES), Verdict::Ok);
        assert_eq!(clock_check(100, 200).verdict, Verdict::Warn);
        assert_eq!(clock_check(300, 200).verdict, Verdict::Ok);
        assert!(
            clock_check(86_400, 1_700_000_000)
                .text
                .contains("1970-01-02")
        );
    }

    #[test]
    fn timezone_check_names_the_source_of_the_rules() {
        let jan = 1_768_478_400; // 2026-01-15 12:00 UTC
        let c = timezone_check("UTC", jan);
        assert_eq!(c.verdict, Verdict::Ok);
        assert_eq!(
            c.text,
            "2026-01-15 12:00 (UTC, +00:00): rules from a fixed offset"
        );
        // From the system zoneinfo or, on a machine without tzdata, the built-in table.
        let c = timezone_check("Europe/Berlin", jan);
        assert_eq!(c.verdict, Verdict::Ok);
        assert!(
            c.text
                .starts_with("2026-01-15 13:00 (Europe/Berlin, +01:00): rules from the "),
            "{}",
            c.text
        );
        let c = timezone_check("Mars/Olympus_Mons", jan);
        assert_eq!(c.verdict, Verdict::Fail);
        assert!(c.text.contains("Mars/Olympus_Mons"), "{}", c.text);
    }

    #[test]
    fn meminfo_is_parsed() {
        let t = "MemTotal:  60000 kB\nMemFree:  1000 kB\nMemAvailable:   30123 kB\n";
        assert_eq!(mem_available_kib(t), Some(30123));
        assert_eq!(mem_available_kib("MemTotal: 1 kB\n"), None);
        assert_eq!(mem_available_kib("MemAvailable: many\n"), None);
    }

    #[test]
    fn lines_are_scrubbed_and_aligned() {
        install_secret_literals(["doctor-secret-123".to_string()]);
        let c = Check::new(Verdict::Fail, "x", "token doctor-secret-123 refused");
        assert!(!c.to_string().contains("doctor-secret-123"));
        assert!(
            c.to_string()
                .starts_with("FAIL x          token [REDACTED]")
        );
        assert_eq!(
            Check::new(Verdict::Ok, "disk", "fine").to_string(),
            "OK   disk       fine"
        );
    }

    #[test]
    fn a_damaged_database_fails_the_check() {
        let dir = std::env::temp_dir().join(format!("yc-doc-db-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let home = Home { dir: dir.clone() };
        assert_eq!(database_check(&home).verdict, Verdict::Ok, "absent is fine");
        drop(crate::store::Db::open(&home.db_file(), 64).unwrap());
        let c = database_check(&home);
        assert_eq!(c.verdict, Verdict::Ok, "{c}");
        let schema = format!("schema {}", crate::store::SCHEMA_VERSION);
        assert!(c.text.contains(&schema), "{c}");
        // Garbage where the database should be.
        std::fs::write(home.db_file(), vec![0x5a; 8192]).unwrap();
        let _ = std::fs::remove_file(dir.join("yoctoclaw.db-wal"));
        let _ = std::fs::remove_file(dir.join("yoctoclaw.db-shm"));
        assert_eq!(database_check(&home).verdict, Verdict::Fail);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn fts5_is_compiled_in() {
        assert_eq!(fts5_check().verdict, Verdict::Ok);
    }
}
