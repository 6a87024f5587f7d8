//! Live reload: the gateway reads `config.json` and `secrets.env` again on SIGHUP
//! ([`Reloader`]), and `yoctoclaw reload` sends that signal to the running gateway of its
//! home and prints what the gateway made of it ([`command`]).
//!
//! Why it exists: editing an allowlist or a budget on a board should not cost a restart
//! (and the turns a restart interrupts). The new configuration goes behind the one swap
//! point (`config::Live`) that the agent, its tools and the scheduler read; the parts
//! that keep a copy of what they need are told (the Telegram bot's allow list and group
//! rule, the agent's provider chain and injection screen, the log level, the scheduler's
//! plan). Settings that built something running stay as they are until a restart and are
//! named in one log line (`config::live::keep_restart_only`). A file that does not load
//! (bad JSON, a bad value, a file being written: empty or cut short) changes nothing: the
//! reason is logged and recorded, in the sentences loading gives at start.
//!
//! # Bounds
//! One reload at a time; SIGHUPs that arrive meanwhile make one more (`signals`).
//! `yoctoclaw reload` waits at most `RELOAD_WAIT_SECS` for the gateway's answer.
//!
//! # Threads
//! [`Reloader`] runs on the gateway's executor thread; [`command`] on the main thread of
//! `yoctoclaw reload`.
//!
//! # Blocking
//! A reload reads two small files on the executor (`config.json`, at most
//! `MAX_CONFIG_BYTES`, and `secrets.env`, at most `MAX_SECRETS_BYTES`: local reads like the
//! store's own) and writes one state row. `yoctoclaw reload` polls the store every
//! `RELOAD_POLL_MS`.

use super::{AppError, runtime};
use crate::agent::Agent;
use crate::channels::telegram::bot::Bot;
use crate::channels::telegram::inbound::AllowList;
use crate::config::{self, Config, Env, Home, Live};
use crate::provider::Provider;
use crate::status::ReloadRecord;
use crate::store::Db;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Longest `yoctoclaw reload` waits for the gateway's verdict.
pub const RELOAD_WAIT_SECS: u64 = 10;
/// How often `yoctoclaw reload` looks for it.
const RELOAD_POLL_MS: u64 = 50;

/// The Telegram bot once it serves (set by the gateway).
pub type BotSlot = Rc<RefCell<Option<Rc<Bot>>>>;

/// What a reload touches in the running gateway.
pub struct Reloader {
    pub home: Home,
    /// The environment in use: the process's variables and `secrets.env` as last read.
    pub env: RefCell<Env>,
    pub live: Live,
    pub agent: Rc<Agent>,
    pub bot: BotSlot,
    pub db: Rc<Db>,
    /// Reloads done (applied or refused).
    pub generation: Cell<u64>,
}

impl Reloader {
    /// Reload on every request until the channel closes.
    pub async fn run(&self, requests: async_channel::Receiver<()>) {
        while requests.recv().await.is_ok() {
            self.reload();
        }
    }

    /// Read the files, use what they say (or keep everything), log it and record it.
    pub fn reload(&self) {
        let generation = self.generation.get() + 1;
        self.generation.set(generation);
        let read = config::reload(&self.home, &self.env.borrow());
        let outcome = read.map_err(|e| e.to_string()).and_then(|(cfg, env)| {
            // The scrubber knows the new secrets before anything can print them.
            install_secrets(&cfg, &env);
            self.apply(cfg, env)
        });
        let (applied, verdict) = match outcome {
            Ok(restart) => {
                log::info!("reload {generation}: applied config.json and secrets.env");
                if restart.is_empty() {
                    (true, "applied".to_string())
                } else {
                    let names = restart.join(", ");
                    log::warn!(
                        "reload {generation}: changed but needing a restart (the running values stay until then): {names}"
                    );
                    (true, format!("applied; needs a restart to change: {names}"))
                }
            }
            Err(e) => {
                log::warn!("reload {generation}: refused, the running configuration is kept: {e}");
                (
                    false,
                    format!("refused, the running configuration is kept: {e}"),
                )
            }
        };
        let r = ReloadRecord {
            pid: std::process::id(),
            generation,
            at: crate::time::clock::now(),
            applied,
            verdict,
        };
        if let Err(e) = crate::status::write_reload_record(&self.db, &r) {
            log::warn!("reload {generation}: cannot record the outcome: {e}");
        }
    }

    /// Put `loaded` in use; the names of the settings left for a restart, or why nothing
    /// changed.
    fn apply(&self, loaded: Config, env: Env) -> Result<Vec<String>, String> {
        let running = self.live.get();
        let (cfg, kept) = config::live::keep_restart_only(&running, loaded);
        let mut restart: Vec<String> = kept.iter().map(|s| s.to_string()).collect();
        let old_env = self.env.borrow().clone();
        // Secrets read once at start: the bot token, the API token, the webhook secret,
        // the transcription key.
        let (t, tr) = (&running.telegram, &running.transcription);
        let http = &running.http;
        for (used, var) in [
            (t.enabled, &t.token_env),
            (http.enabled, &http.token_env),
            (t.enabled, &t.webhook_secret_env),
            (!tr.base_url.is_empty(), &tr.api_key_env),
        ] {
            if used && old_env.get(var) != env.get(var) && !restart.contains(var) {
                restart.push(var.clone());
            }
        }
        let chain_changed = chain_inputs(&running, &old_env) != chain_inputs(&cfg, &env);
        let providers = match chain_changed {
            true => Some(
                Provider::chain(&cfg.provider, &cfg.fallbacks, &env).map_err(|e| e.to_string())?,
            ),
            false => None,
        };
        let keys = crate::tools::search::SearchKeys::from_env(&cfg.tools.web_search, &env);
        // Nothing can fail from here on.
        let cfg = Rc::new(cfg);
        self.live.set(cfg.clone());
        *self.env.borrow_mut() = env;
        self.agent.reconfigure(providers, keys);
        if let Some(bot) = self.bot.borrow().as_ref() {
            bot.set_rules(allow_list(&cfg), cfg.telegram.group_mode);
        }
        set_log_level(&cfg);
        // The scheduler plans again (heartbeat settings, budgets).
        crate::jobs::notify_jobs_changed();
        Ok(restart)
    }
}

/// `telegram.allow_from` as the bot checks it; entries it cannot use are logged.
pub fn allow_list(cfg: &Config) -> AllowList {
    let (allow, bad) = AllowList::parse(&cfg.telegram.allow_from);
    for b in bad {
        log::warn!("telegram.allow_from: ignored \"{b}\": not a numeric id or a @username");
    }
    allow
}

/// What the provider chain is built from: the providers' settings and their keys.
fn chain_inputs(cfg: &Config, env: &Env) -> Vec<(crate::config::ProviderConfig, Option<String>)> {
    std::iter::once(&cfg.provider)
        .chain(&cfg.fallbacks)
        .map(|p| (p.clone(), env.get(&p.api_key_env)))
        .collect()
}

/// The values of `secrets.env` and of every secret the configuration names, for the
/// scrubber.
fn install_secrets(cfg: &Config, env: &Env) {
    use crate::security::scrub::install_secret_literals;
    install_secret_literals(env.secret_file_values().map(str::to_string));
    install_secret_literals(cfg.secret_names().iter().filter_map(|n| env.get(n)));
}

/// `log_level` as the new configuration says, unless `RUST_LOG` chose the level.
fn set_log_level(cfg: &Config) {
    let from_env = std::env::var("RUST_LOG")
        .ok()
        .and_then(|v| crate::logging::level_from_rust_log(&v));
    if from_env.is_none() {
        let level = crate::logging::parse_level(&cfg.log_level).unwrap_or(log::LevelFilter::Info);
        crate::logging::init(level);
    }
}

/// `yoctoclaw reload`: send SIGHUP to the gateway running in `home` and wait (at most
/// `RELOAD_WAIT_SECS`) for its verdict: the line to print when it applied the files, an
/// error (exit 1) when it refused them, when no gateway runs or when it did not answer.
pub fn command(home: &Home) -> Result<String, AppError> {
    let not_running = || {
        runtime(format!(
            "no gateway is running for {}: nothing to reload (a gateway reads the files when it starts)",
            home.dir.display()
        ))
    };
    let db_file = home.db_file();
    if !db_file.is_file() {
        return Err(not_running());
    }
    let cache = crate::config::MemoryConfig::default().cache_kib;
    let db = Db::open(&db_file, cache).map_err(runtime)?;
    // Never a pid reused since a gateway was killed: a hangup could end that program.
    let Some(g) = crate::status::live_gateway(&db) else {
        return Err(not_running());
    };
    let before = crate::status::read_reload_record(&db, g.pid).map_or(0, |r| r.generation);
    let pid = i32::try_from(g.pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(not_running)?;
    rustix::process::kill_process(pid, rustix::process::Signal::HUP).map_err(|e| {
        runtime(format!(
            "cannot signal the gateway (pid {}): {e}; run this as the user the gateway runs as",
            g.pid
        ))
    })?;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(RELOAD_WAIT_SECS) {
        std::thread::sleep(Duration::from_millis(RELOAD_POLL_MS));
        let Some(r) = crate::status::read_reload_record(&db, g.pid) else {
            continue;
        };
        if r.generation <= before {
            continue;
        }
        return match r.applied {
            true => Ok(format!("gateway (pid {}) reloaded: {}", g.pid, r.verdict)),
            false => Err(runtime(format!(
                "the gateway (pid {}) {}",
                g.pid, r.verdict
            ))),
        };
    }
    Err(runtime(format!(
        "the gateway (pid {}) did not answer within {RELOAD_WAIT_SECS} s: see its log",
        g.pid
    )))
}
