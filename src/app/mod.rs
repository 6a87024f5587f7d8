//! The composition root: it loads the config, opens the store, starts the workers, builds
//! the providers, the tools, the agent and the outbound seam, and hands each part only
//! what it needs. `cli` parses the command line and calls in here; nothing below imports
//! this module.
//!
//! - this file: loading ([`load`]), the store ([`open_db`]), the outbound seam
//!   ([`outbound`]) and the agent ([`agent`]), and the error every command returns;
//! - `gateway`: the daemon's main loop (Telegram, scheduler, serial console, shutdown);
//! - `commands`: the other commands that run the agent or the scheduler (`agent`,
//!   `heartbeat`, `cron`, `serial`);
//! - `memory_cmd`: the `memory` command; `audit_cmd`: the `audit` command;
//! - `reload`: the gateway's live reload (SIGHUP) and the `reload` command;
//! - `mcp_cmd`: the `mcp` command, the MCP manager as commands build it, and the servers'
//!   records for `status`;
//! - `mcp_seam`: the MCP servers' tools handed to the agent's tools.
//!
//! # Bounds
//! One database connection, one worker pool and one outbound seam per process.
//!
//! # Threads
//! Main thread: it becomes the executor thread of the command it runs.

pub mod audit_cmd;
pub mod commands;
pub mod gateway;
pub mod mcp_cmd;
pub mod mcp_seam;
pub mod memory_cmd;
pub mod reload;
pub mod workers_cmd;

use crate::agent::Agent;
use crate::channels::deliver::Delivery;
use crate::channels::telegram::outbox::Outbox;
use crate::chat::Outbound;
use crate::config::{self, Config, ConfigError, Env, Home};
use crate::provider::Provider;
use crate::runtime::Workers;
pub use crate::runtime::version_text;
use crate::store::Db;
use crate::tools::Tools;
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;

/// A failure of a command, with its exit status.
#[derive(Debug)]
pub enum AppError {
    /// Bad usage (exit 2).
    Usage(String),
    /// Bad configuration (exit 2).
    Config(ConfigError),
    /// Anything that failed while running (exit 1).
    Runtime(String),
}

impl AppError {
    pub fn exit_code(&self) -> i32 {
        match self {
            AppError::Usage(_) | AppError::Config(_) => 2,
            AppError::Runtime(_) => 1,
        }
    }
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppError::Usage(m) | AppError::Runtime(m) => f.write_str(m),
            AppError::Config(e) => e.fmt(f),
        }
    }
}

impl From<ConfigError> for AppError {
    fn from(e: ConfigError) -> Self {
        AppError::Config(e)
    }
}

pub fn runtime(e: impl fmt::Display) -> AppError {
    AppError::Runtime(e.to_string())
}

/// Everything a command needs from the environment.
pub struct Loaded {
    pub home: Home,
    pub env: Env,
    /// The configuration as loaded at start.
    pub cfg: Rc<Config>,
    /// The configuration in use: `cfg` at start; in the gateway a reload swaps it
    /// (`reload`), and the agent, its tools and the scheduler read it from here.
    pub live: config::Live,
}

/// Resolve the home, read secrets.env and config.json, set up logging and the scrubber,
/// and take the secrets out of the process environment (`hide_secrets`).
///
/// # Safety
/// As [`crate::sandbox::clear_environment`]: no other thread may read or change the
/// environment while this runs. Call it from the main thread before the executor, the
/// workers or anything else that might has started (`cli::main` does, first thing).
pub unsafe fn load(home_flag: Option<&std::path::Path>, quiet: bool) -> Result<Loaded, AppError> {
    let home = Home::resolve(home_flag)?;
    let secrets = config::load_secrets_file(&home.secrets_file())?;
    let env = Env::new(secrets);
    // The scrubber learns the secrets' values before anything can log them.
    crate::security::scrub::install_secret_literals(env.secret_file_values().map(str::to_string));
    // Logging comes up before the config so config warnings are seen.
    let rust_log = std::env::var("RUST_LOG").ok();
    let from_env = rust_log
        .as_deref()
        .and_then(crate::logging::level_from_rust_log);
    crate::logging::init(from_env.unwrap_or(log::LevelFilter::Warn));
    let cfg = config::load(&home, &env)?;
    install_ca_file(&home, &cfg)?;
    let secret_names = cfg.secret_names();
    crate::security::scrub::install_secret_literals(secret_names.iter().filter_map(|n| env.get(n)));
    // SAFETY: this function's own contract (no other thread touches the environment).
    let env = unsafe { hide_secrets(env, &secret_names) };
    crate::tools::exec::run_as(&cfg.tools.exec.user)?;
    let level = from_env.unwrap_or_else(|| {
        let configured =
            crate::logging::parse_level(&cfg.log_level).unwrap_or(log::LevelFilter::Info);
        if quiet {
            configured.min(log::LevelFilter::Warn)
        } else {
            configured
        }
    });
    crate::logging::init(level);
    Ok(Loaded::new(home, env, cfg))
}

impl Loaded {
    pub fn new(home: Home, env: Env, cfg: Config) -> Loaded {
        let cfg = Rc::new(cfg);
        Loaded {
            home,
            env,
            live: config::Live::new(cfg.clone()),
            cfg,
        }
    }
}

/// Trust the anchors of `tls.ca_file` for every HTTPS connection; a file that cannot be
/// used is a configuration error (exit 2).
pub fn install_ca_file(home: &Home, cfg: &Config) -> Result<(), ConfigError> {
    match crate::provider::tls::install_ca_file(&home.dir, &cfg.tls.ca_file) {
        Ok(Some((path, n))) => {
            log::debug!("tls: {n} extra trust anchor(s) from {}", path.display());
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(e) => Err(ConfigError::BadValue {
            key: "tls.ca_file".into(),
            expected: format!("a PEM file of CA certificates, but {e}"),
        }),
    }
}

/// Take the secrets out of reach of child processes (`sandbox`): the configured keys and
/// any variable that looks like a credential leave our environment block (overwritten in
/// place; `env` keeps their values), and only root may read our memory.
///
/// # Safety
/// As [`crate::sandbox::clear_environment`]: no other thread may read or change the
/// environment while this runs.
unsafe fn hide_secrets(mut env: Env, secret_names: &[String]) -> Env {
    use crate::security::scrub::{install_secret_literals, scrub};
    // SAFETY: passed on from this function's contract; the closure only reads its
    // arguments and the scrubber's patterns, never the environment.
    let taken = unsafe {
        crate::sandbox::clear_environment(|name, value| {
            secret_names.iter().any(|n| n == name)
                || matches!(
                    scrub(&format!("{name}={value}")),
                    std::borrow::Cow::Owned(_)
                )
        })
    };
    install_secret_literals(taken.iter().map(|(_, v)| v.clone()));
    env.keep_taken(taken);
    if let Err(e) = crate::sandbox::no_dumps() {
        log::warn!("cannot make the process undumpable: {e}");
    }
    env
}

/// Open the database; the home must exist.
pub fn open_db(l: &Loaded) -> Result<Rc<Db>, AppError> {
    if !l.home.dir.is_dir() {
        return Err(AppError::Usage(format!(
            "no yoctoclaw home at {}: run yoctoclaw onboard first",
            l.home.dir.display()
        )));
    }
    Db::open(&l.home.db_file(), l.cfg.memory.cache_kib)
        .map(Rc::new)
        .map_err(runtime)
}

/// The process's one outbound seam: deliveries to the log, stdout and Telegram. `outbox`
/// is the gateway's Telegram sender thread: inside the gateway every delivery (replies,
/// `send_message`, heartbeat, cron, approvals) goes through it, in one order and under
/// one 429 backoff; elsewhere Telegram deliveries run on a worker.
pub fn outbound(l: &Loaded, workers: &Workers, outbox: Option<Outbox>) -> Rc<dyn Outbound> {
    Rc::new(Delivery::new(&l.cfg, &l.env, workers.clone(), outbox))
}

/// The primary provider and the usable fallbacks (fails without a key for an https
/// primary).
pub fn providers(l: &Loaded) -> Result<Vec<Arc<Provider>>, AppError> {
    Provider::chain(&l.cfg.provider, &l.cfg.fallbacks, &l.env).map_err(runtime)
}

/// The agent over `providers`, with its tools delivering through `outbound` and offering
/// `mcp`'s servers' tools (`mcp_seam::start` builds it).
pub fn agent(
    l: &Loaded,
    db: &Rc<Db>,
    workers: &Workers,
    providers: Vec<Arc<Provider>>,
    outbound: Rc<dyn Outbound>,
    mcp: Option<&Rc<crate::mcp::Mcp>>,
) -> Rc<Agent> {
    let workspace = l.home.workspace();
    crate::tools::exec::announce_confinement();
    let keys = crate::tools::search::SearchKeys::from_env(&l.cfg.tools.web_search, &l.env);
    let mut tools = Tools::new(
        workspace.clone(),
        l.live.clone(),
        workers.clone(),
        db.clone(),
        outbound,
    )
    .with_search_keys(keys);
    if let Some(m) = mcp {
        tools = tools.with_mcp(Rc::new(mcp_seam::McpSeam::new(
            m.clone(),
            l.cfg.clone(),
            l.home.spool(),
            workers.clone(),
        )));
    }
    Rc::new(Agent::new(
        l.live.clone(),
        workspace,
        db.clone(),
        providers,
        workers.clone(),
        tools,
    ))
}
