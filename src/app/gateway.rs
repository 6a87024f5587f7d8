//! `yoctoclaw gateway`: the daemon. Start-up checks, the Telegram channel's threads,
//! the scheduler (cron, heartbeat, daily memory retention), the HTTP server when
//! `http.enabled` (`channels::http`), a periodic status record, the executor, signal
//! handling and a bounded shutdown, in [`run`].
//!
//! Why it exists: this is the program's main loop, written once and read top to bottom
//! (the project's rule: the daemon's main loop is one documented function).
//!
//! # Threads
//! The calling thread runs the smol `LocalExecutor` (Telegram update handling, the
//! agent's turns, the scheduler's timers, SQLite). `yc-tg-poll` runs the long poll,
//! `yc-tg-send` sends replies, streamed previews, heartbeat and cron deliveries and
//! chat actions, the `Workers` pool runs provider calls. They talk over bounded
//! async-channels only. The HTTP server's sockets are non-blocking, on the executor.
//!
//! # Bounds
//! - Shutdown: the scheduler stops at once (a heartbeat or cron turn in flight is
//!   dropped; its run was claimed, so it does not run twice); running turns get
//!   `TURN_GRACE_MS` to finish; then chats left unanswered are told they are answered
//!   after the restart, and pending replies get until `SHUTDOWN_LIMIT_MS` after the
//!   signal; the process then exits with status 0 whatever is still in flight (turns
//!   and answers still owed are in SQLite: `Bot::recover` picks them up at start).
//! - Start-up: `getMe` is retried with backoff on network errors (a board that boots
//!   before its network); a refused token (401/404) is fatal at once. The scheduler and
//!   the sender run meanwhile, so cron and heartbeat deliveries do not wait for it.
//! - The HTTP server: bound before the executor runs (an address it cannot have is a
//!   start-up error); at the signal it stops accepting, its running turns get
//!   `TURN_GRACE_MS`, and it is waited for at most `SHUTDOWN_LIMIT_MS`, beside Telegram's
//!   shutdown.
//! - MCP servers: those with `start: boot` start once the executor runs, the others on
//!   their first call; after the shutdown above their servers are stopped (the manager's
//!   own bounded shutdown) before the store closes, and their last state recorded.
//! - The status record (and the MCP servers' records, `mcp_cmd::record_servers`) is
//!   rewritten every `STATUS_RECORD_SECS`; the heap is trimmed then
//!   (`heap::trim`, and the free pages inside the heap: `heap::release_free_pages`) and
//!   once start-up is done.
//!
//! # Test hook
//! In builds with the `test-hooks` feature only (`cargo test`; never a release or board
//! build): `YOCTOCLAW_TEST_BACKOFF_SCALE` (a number in 0.001..=1) multiplies every
//! Telegram backoff wait, so the integration tests exercise 409/429/5xx paths in
//! milliseconds. It is logged when set and can only shorten waits (docs/DECISIONS.md).

use super::mcp_cmd::record_servers;
use super::{
    AppError, Loaded, agent as build_agent, mcp_seam, open_db, outbound, providers, runtime,
};
use crate::agent::Agent;
use crate::channels::http::{self, health::Beat};
use crate::channels::telegram::api::{Api, ApiError, BotIdentity, Posted};
use crate::channels::telegram::backoff::{Backoff, ErrorDelay, Stop};
use crate::channels::telegram::bot::Bot;
use crate::channels::telegram::media::{self, Media};
use crate::channels::telegram::outbox::Outbox;
use crate::channels::telegram::poller::{POLL_BATCH_UPDATES, POLL_MARGIN_SECS, poll_loop};
use crate::channels::telegram::sender::sender_loop;
use crate::config::{Config, Home, TelegramConfig, TelegramMode};
use crate::limits::{INBOUND_QUEUE_LEN, WORKER_THREADS};
use crate::mcp::Mcp;
use crate::provider::upload::Transcriber;
use crate::runtime::{Workers, spawn_thread};
use crate::scheduler::{self, Deps, heartbeat};
use crate::signals::Signals;
use crate::store::Db;
use crate::time::build_epoch;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Time running turns get to finish after SIGINT/SIGTERM.
pub const TURN_GRACE_MS: u64 = 1_000;
/// Time after the signal when the process exits regardless.
pub const SHUTDOWN_LIMIT_MS: u64 = 1_700;
/// Overall timeout of one outgoing Bot API call (sendMessage, getMe…).
pub const SEND_TIMEOUT_SECS: u64 = 30;
#[cfg(feature = "test-hooks")]
pub use crate::channels::telegram::backoff::TEST_BACKOFF_SCALE_ENV;
/// How often the gateway rewrites its status record.
pub const STATUS_RECORD_SECS: u64 = crate::status::GATEWAY_RECORD_INTERVAL_SECS;
/// The `state` key of the gateway's status record.
pub const STATUS_KEY: &str = crate::status::GATEWAY_STATUS_KEY;
/// How often shutdown checks whether turns and sends are done.
const SHUTDOWN_TICK_MS: u64 = 20;
/// Yields at the end of shutdown, so woken turns record their delivered answers.
const SHUTDOWN_YIELDS: usize = 8;

/// The Telegram bot once it is serving (for the status record and reloads).
use super::reload::BotSlot;

/// Run the daemon until SIGINT or SIGTERM (exit status 0), or a fatal start-up error.
///
/// 1. Open the database, start the worker pool, build the agent, watch for signals,
///    apply memory retention once.
/// 2. If Telegram is enabled: check the token's shape and start the sender thread.
/// 3. Start the scheduler (cron jobs, heartbeat, daily retention; its Telegram
///    deliveries go through the sender) and the status record timer, both stopped
///    as soon as a signal arrives; with `http.enabled`, bind the HTTP server, which
///    serves beside the rest until the signal, then drains.
/// 4. Telegram: ask `getMe` who we are (retrying network errors; a refused token is a
///    clear fatal error naming its variable), recover what the last run left
///    unanswered, start the poller thread (from the persisted offset), then handle
///    updates until a signal arrives. Without Telegram:
///    wait for the signal (the gateway is then a cron and heartbeat daemon).
/// 5. Stop polling, give running turns a moment, tell unanswered chats they are
///    answered after the restart, flush what can be sent, and return.
pub fn run(l: &Loaded) -> Result<(), AppError> {
    // An update's leftovers, its last rollback's line, and a new binary past its deadline
    // without a health mark (rolled back here; the exit makes the service start the
    // previous one).
    let mark_owed = crate::update::at_start(&l.home).map_err(runtime)?;
    crate::metrics::start();
    let db = open_db(l)?;
    // What a crash left in the spool (a download, a tool result's image) goes first.
    media::clean_spool(&l.home.spool());
    let providers = providers(l)?;
    let workers = Workers::start(WORKER_THREADS);
    let signals =
        Signals::install().map_err(|e| runtime(format!("cannot watch for signals: {e}")))?;
    // SIGHUP reloads config.json and secrets.env (`reload`).
    signals.catch_reload();
    let backoff = test_backoff();
    let tg = &l.cfg.telegram;
    let token = if tg.enabled {
        Some(bot_token(l)?)
    } else {
        None
    };
    let stop = Stop::new();
    let sender = match &token {
        Some(token) => Some(start_sender(tg, token, backoff, &stop)?),
        None => None,
    };
    // The daemon's one outbound seam: with Telegram on, every delivery (replies, the
    // send_message tool, heartbeat, cron, approvals) goes through the sender thread.
    let out = outbound(l, &workers, sender.as_ref().map(|(_, o)| o.clone()));
    let mcp = mcp_seam::start(l, &db);
    let agent = build_agent(l, &db, &workers, providers, out.clone(), mcp.as_ref());
    let deps = Rc::new(Deps::new(l.live.clone(), &db, l.home.workspace(), out));
    memory_retention(&db, &l.cfg);
    announce(&l.cfg, &l.home, &db);
    let ex: smol::LocalExecutor<'static> = smol::LocalExecutor::new();
    let bot: BotSlot = Rc::new(RefCell::new(None));
    // Closed when a signal arrives: stops the scheduler, the status timer and the HTTP
    // server.
    let (stopping, stopped) = async_channel::bounded::<()>(1);
    // Marked by every getUpdates that answers (for the HTTP server's /health).
    let polled = Arc::new(Beat::default());
    // Webhook mode: the HTTP server hands posted updates to the bot over this queue.
    let (webhook, posted) = match webhook_secret(l)? {
        Some(secret) => {
            let (tx, rx) = async_channel::bounded(INBOUND_QUEUE_LEN);
            let w = http::Webhook {
                secret: secret.clone(),
                updates: tx,
            };
            (Some(w), Some((rx, secret)))
        }
        None => (None, None),
    };
    // An installed update's health mark: given by the first getUpdates that answers when
    // the gateway polls Telegram, else once the gateway serves.
    let polls = tg.enabled && posted.is_none();
    let mark_on_poll = (mark_owed && polls).then(|| l.home.clone());
    let http = http_server(l, &agent, &db, (&polled, &bot, webhook), stopped.clone())?;
    ex.spawn(until_closed(
        scheduler_task(agent.clone(), deps),
        stopped.clone(),
    ))
    .detach();
    let reloader = super::reload::Reloader {
        home: l.home.clone(),
        env: RefCell::new(l.env.clone()),
        live: l.live.clone(),
        agent: agent.clone(),
        bot: bot.clone(),
        db: db.clone(),
        generation: std::cell::Cell::new(0),
    };
    let requests = signals.reloads();
    ex.spawn(until_closed(
        async move { reloader.run(requests).await },
        stopped.clone(),
    ))
    .detach();
    let live = Live {
        bot: bot.clone(),
        http: http.as_ref().map(|(server, _)| server.clone()),
    };
    ex.spawn(until_closed(
        status_task(db.clone(), live, mcp.clone()),
        stopped.clone(),
    ))
    .detach();
    // MCP servers with `start: boot` start once the gateway runs (each failure logged);
    // the others on their first call, but once now if their tools are not known yet.
    // The manager's background work (servers' output, pings, restarts, idle stops) runs
    // beside them until the signal.
    if let Some(m) = mcp.clone() {
        let (db, driven, cfg) = (db.clone(), m.clone(), l.cfg.clone());
        ex.spawn(until_closed(
            async move { driven.run().await },
            stopped.clone(),
        ))
        .detach();
        let boot = async move {
            m.start_boot_servers().await;
            mcp_seam::discover(&m, &cfg).await;
            record_servers(&db, &m, crate::time::clock::now());
        };
        ex.spawn(until_closed(boot, stopped.clone())).detach();
    }
    // The serial console beside Telegram when `serial.device` is set.
    if let Some(started) = crate::channels::serial::start_from_config(&l.cfg.serial) {
        let (lines, writer) = started
            .map_err(|e| AppError::Usage(format!("serial console {}: {e}", l.cfg.serial.device)))?;
        let (a, w, device) = (agent.clone(), workers.clone(), l.cfg.serial.device.clone());
        ex.spawn(until_closed(
            async move {
                crate::channels::serial::run_console(&a, &w, &device, lines, writer).await
            },
            stopped,
        ))
        .detach();
    }
    let mut wd = crate::watchdog::Watchdog::start(&crate::watchdog::Settings {
        device: &l.cfg.watchdog.device,
        timeout_secs: l.cfg.watchdog.timeout_secs,
        stall_secs: l.cfg.watchdog.stall_secs,
    });
    let res = smol::block_on(ex.run(async {
        // Every channel is spawned: the gateway serves.
        wd.ready();
        if mark_owed && !polls {
            crate::update::confirm(&l.home);
        }
        // The HTTP server runs beside the channels until the signal, then drains.
        let serve_http = async {
            if let Some((server, listener)) = http {
                server.serve(&ex, listener).await;
            }
        };
        let main = async {
            match (token, sender) {
                (Some(token), Some((api, outbox))) => {
                    let t = Telegram {
                        cfg: &l.cfg,
                        media: media_ctx(l, &token),
                        token: &token,
                        api,
                        outbox,
                        backoff,
                        stop,
                        polled,
                        posted,
                        mark_on_poll,
                    };
                    let s = Serving {
                        live: &l.live,
                        agent: &agent,
                        db: &db,
                        workers: &workers,
                        signals: &signals,
                        stopping: &stopping,
                        slot: &bot,
                    };
                    serve_telegram(&ex, t, s).await
                }
                _ => {
                    signals.wait().await;
                    stopping.close();
                    log::info!("gateway: stopped");
                    Ok(())
                }
            }
        };
        let served = async {
            let (res, ()) = smol::future::zip(main, serve_http).await;
            // The servers stop before the store closes, and their last state is recorded.
            if let Some(m) = &mcp {
                m.shutdown().await;
                record_servers(&db, m, crate::time::clock::now());
            }
            res
        };
        // The watchdogs are fed from this executor until the gateway has stopped.
        smol::future::or(served, wd.run()).await
    }));
    wd.stopping();
    res
}

/// Run `task` until the channel closes.
async fn until_closed(task: impl Future<Output = ()>, closed: async_channel::Receiver<()>) {
    smol::future::or(task, async {
        let _ = closed.recv().await;
    })
    .await;
}

/// The scheduler loop with the gateway's daily hooks (never returns).
async fn scheduler_task(agent: Rc<Agent>, deps: Rc<Deps>) {
    let (db, live) = (deps.db.clone(), deps.live.clone());
    let opts = scheduler::Options {
        daily: vec![Box::new(move || memory_retention(&db, &live.get()))],
        ..scheduler::Options::default()
    };
    scheduler::run(&agent, &deps, opts).await;
}

/// What runs turns, for the status record's live sessions.
struct Live {
    bot: BotSlot,
    http: Option<Rc<http::Server>>,
}

impl Live {
    fn sessions(&self) -> usize {
        let bot = self.bot.borrow().as_ref().map_or(0, |b| b.live_sessions());
        bot + self.http.as_ref().map_or(0, |h| h.running_turns())
    }
}

/// Rewrite the status record (and the MCP servers' records) now and every
/// `STATUS_RECORD_SECS` (never returns).
async fn status_task(db: Rc<Db>, live: Live, mcp: Option<Rc<Mcp>>) {
    loop {
        let sessions = live.sessions();
        // What start-up or the last minute read into SQLite's page cache, and what is
        // then free at the top of the heap, goes back to the system.
        write_status_record(&db, sessions);
        if let Some(m) = &mcp {
            record_servers(&db, m, crate::time::clock::now());
        }
        db.release_memory();
        crate::heap::trim();
        crate::heap::release_free_pages();
        smol::Timer::after(Duration::from_secs(STATUS_RECORD_SECS)).await;
    }
}

/// Delete expired memories (`memory.*_days`), unless the clock is not set yet.
fn memory_retention(db: &Db, cfg: &Config) {
    let now = crate::time::clock::now();
    if now < build_epoch() {
        return;
    }
    if let Err(e) = crate::memory::run_retention(db, &cfg.memory, now) {
        log::warn!("memory retention failed: {e}");
    }
}

/// Say what the gateway will do; warn when it has nothing to do.
fn announce(cfg: &Config, home: &Home, db: &Db) {
    let telegram = cfg.telegram.enabled;
    let heartbeat = cfg.heartbeat.enabled
        && crate::agent::prompt::read_capped(
            &home.workspace().join(heartbeat::HEARTBEAT_FILE),
            heartbeat::MAX_HEARTBEAT_FILE_BYTES,
        )
        .is_some_and(|t| heartbeat::has_tasks(&t));
    let jobs = match db.list_cron_jobs() {
        Ok(list) => list.iter().filter(|j| j.enabled).count(),
        Err(e) => {
            log::warn!("gateway: cannot read cron jobs: {e}");
            0
        }
    };
    if !telegram && !heartbeat && jobs == 0 {
        log::warn!(
            "gateway: nothing to do yet: telegram.enabled is false, the heartbeat has no tasks (heartbeat.enabled or HEARTBEAT.md) and there are no cron jobs; running anyway (jobs added later run), waiting for SIGINT/SIGTERM"
        );
    } else if !telegram {
        log::info!(
            "gateway: telegram.enabled is false: running cron ({jobs} job(s)) and the heartbeat ({}) only",
            if heartbeat { "has tasks" } else { "no tasks" }
        );
    }
}

/// Write the gateway's status record (`status::write_gateway_record`): pid, memory,
/// live sessions, time. `yoctoclaw status` reads it.
pub fn write_status_record(db: &Db, live_sessions: usize) {
    let rss = crate::status::self_rss_kib().unwrap_or_default();
    if let Err(e) = crate::status::write_gateway_record(
        db,
        std::process::id(),
        rss,
        live_sessions,
        crate::time::clock::now(),
    ) {
        log::warn!("gateway: cannot write the status record: {e}");
    }
}

/// What `/metrics` shows that only the gateway knows, read now: Telegram's sessions with
/// a turn running (`bot`, once it serves) and the messages waiting in its inbox, the
/// process's memory (the API's turns are added by [`metrics_body`]).
pub fn metrics_gauges(db: &Db, bot: Option<&Bot>) -> crate::metrics::Gauges {
    let rss = crate::status::self_rss_kib();
    let waiting = db.inbox_len().unwrap_or_else(|e| {
        log::debug!("metrics: cannot count the messages waiting: {e}");
        0
    });
    crate::metrics::Gauges {
        open_sessions: bot.map_or(0, |b| b.live_sessions()) as u64,
        queue_depth: waiting as u64,
        rss_bytes: rss.map(|r| r.rss_kib * 1024),
        peak_rss_bytes: rss.map(|r| r.hwm_kib * 1024),
    }
}

/// The body of `GET /metrics`, given the API's turns running and waiting: the process's
/// counters with Telegram's and the API's sessions and waiting messages together.
fn metrics_body(db: Rc<Db>, bot: BotSlot) -> Box<dyn Fn(usize, usize) -> String> {
    Box::new(move |running, waiting| {
        let mut g = metrics_gauges(&db, bot.borrow().as_deref());
        g.open_sessions += running as u64;
        g.queue_depth += waiting as u64;
        let mut out = String::with_capacity(4096);
        crate::metrics::render(&mut out, &g);
        out
    })
}

/// What media handling needs, from the config: the spool (emptied at start), the
/// caps, the transcription service and its key.
fn media_ctx(l: &Loaded, token: &str) -> Arc<Media> {
    let (cfg, tg, tr) = (&l.cfg, &l.cfg.telegram, &l.cfg.transcription);
    let spool = l.home.spool();
    let transcriber = (!tr.base_url.is_empty()).then(|| Transcriber {
        url: format!("{}/audio/transcriptions", tr.base_url),
        model: tr.model.clone(),
        key: l.env.get(&tr.api_key_env),
        agent: crate::provider::http::agent(tr.timeout_secs),
    });
    Arc::new(Media {
        api: Api::new(&tg.api_base, token, media::MEDIA_DOWNLOAD_TIMEOUT_SECS),
        spool,
        workspace: l.home.workspace(),
        max_file: cfg.media.max_file_mb * 1024 * 1024,
        inbox_max: cfg.media.inbox_max_mb * 1024 * 1024,
        transcriber,
    })
}

/// The HTTP server and its bound listener.
type HttpServer = (Rc<http::Server>, smol::Async<std::net::TcpListener>);

/// The HTTP server and its listener when `http.enabled`: bound now (an address that
/// cannot be had is a start-up error), serving once the executor runs.
fn http_server(
    l: &Loaded,
    agent: &Rc<Agent>,
    db: &Rc<Db>,
    (polled, bot, webhook): (&Arc<Beat>, &BotSlot, Option<http::Webhook>),
    stopped: async_channel::Receiver<()>,
) -> Result<Option<HttpServer>, AppError> {
    let cfg = &l.cfg.http;
    if !cfg.enabled {
        return Ok(None);
    }
    let listener = http::bind(cfg.listen).map_err(|e| {
        runtime(format!(
            "cannot listen on {} (http.listen): {e}; choose another address or port, or set http.enabled to false",
            cfg.listen
        ))
    })?;
    let addr = listener.get_ref().local_addr().unwrap_or(cfg.listen);
    let token = l
        .env
        .get(&cfg.token_env)
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty());
    if let Some(t) = &token {
        crate::security::scrub::install_secret_literals([t.clone()]);
    }
    let tg = &l.cfg.telegram;
    // A long poll answers within its timeout; twice that and its margin is stale.
    let stale = Duration::from_secs(2 * (tg.poll_timeout_secs + POLL_MARGIN_SECS));
    let deps = http::Deps {
        agent: agent.clone(),
        db: db.clone(),
        cfg: cfg.clone(),
        home: l.home.dir.clone(),
        token,
        // Webhook mode has no poll whose age could tell anything.
        telegram: (tg.enabled && webhook.is_none()).then(|| (polled.clone(), stale)),
        metrics: Some(metrics_body(db.clone(), bot.clone())),
        board: board(l.live.clone()),
        webhook,
        grace: Duration::from_millis(TURN_GRACE_MS),
        drain: Duration::from_millis(SHUTDOWN_LIMIT_MS),
    };
    let token_state = if deps.token.is_some() {
        "set"
    } else {
        "NOT SET: every route but /health answers 503"
    };
    log::info!(
        "http: listening on {addr} (token {} {token_state})",
        cfg.token_env
    );
    if !addr.ip().is_loopback() {
        log::warn!(
            "http: {addr} is reachable beyond this machine, in plain HTTP: keep it on a network you trust, or put a TLS proxy or tunnel in front (README, HTTP API)"
        );
    }
    Ok(Some((http::Server::new(deps, stopped), listener)))
}

/// What the status page says about the configuration in use (read at each request: a
/// reload changes the model and the budget).
fn board(live: crate::config::Live) -> Box<dyn Fn() -> http::page::Board> {
    Box::new(move || {
        let cfg = live.get();
        http::page::Board {
            provider: cfg.provider.kind.name().into(),
            model: cfg.provider.model.clone(),
            fallbacks: cfg.fallbacks.len(),
            timezone: cfg.agent.timezone.clone(),
            budget: cfg.budget.clone(),
        }
    })
}

/// The sender thread and its API client.
fn start_sender(
    tg: &TelegramConfig,
    token: &str,
    backoff: Backoff,
    stop: &Stop,
) -> Result<(Api, Outbox), AppError> {
    let api = Api::new(&tg.api_base, token, SEND_TIMEOUT_SECS);
    let (outbox, out_rx) = Outbox::new(api.down_flag());
    let (a, stop) = (api.clone(), stop.clone());
    spawn_thread("yc-tg-send", move || sender_loop(a, out_rx, backoff, stop))
        .map_err(|e| runtime(format!("cannot start the Telegram sender: {e}")))?;
    Ok((api, outbox))
}

/// The Telegram side of [`serve_telegram`].
struct Telegram<'a> {
    cfg: &'a Config,
    /// Voice notes, photos and files (`telegram::media`).
    media: Arc<Media>,
    token: &'a str,
    /// The sender's client (`getMe` uses it too).
    api: Api,
    outbox: Outbox,
    backoff: Backoff,
    /// Stops the poller and the sender's waits.
    stop: Stop,
    /// Marked by every `getUpdates` that answers.
    polled: Arc<Beat>,
    /// Webhook mode: the updates the HTTP server was posted (no poller runs).
    posted: Option<(async_channel::Receiver<Posted>, String)>,
    /// The home whose installed update the first answered `getUpdates` confirms
    /// (`update::confirm`, on the poller's thread), when it owes its health mark.
    mark_on_poll: Option<Home>,
}

/// The rest of the daemon, as [`serve_telegram`] sees it.
struct Serving<'a> {
    /// The configuration in use (the allow list and group rule as the last reload left
    /// them).
    live: &'a crate::config::Live,
    agent: &'a Rc<Agent>,
    db: &'a Rc<Db>,
    workers: &'a Workers,
    signals: &'a Signals,
    stopping: &'a async_channel::Sender<()>,
    slot: &'a BotSlot,
}

/// Step 4 and 5 of [`run`] for Telegram: identify, start polling, serve until a
/// signal, shut down.
async fn serve_telegram(
    ex: &smol::LocalExecutor<'static>,
    t: Telegram<'_>,
    s: Serving<'_>,
) -> Result<(), AppError> {
    let Serving {
        live,
        agent,
        db,
        workers,
        signals,
        stopping,
        slot,
    } = s;
    let tg = &t.cfg.telegram;
    let identify = identify(&t.api, workers, &t.backoff, &tg.token_env);
    let stopped = async {
        signals.wait().await;
        Ok(None)
    };
    let me = match smol::future::or(identify, stopped).await {
        Ok(Some(me)) => me,
        other => {
            stopping.close();
            t.stop.set();
            if other.is_ok() {
                log::info!("gateway: stopped before Telegram answered");
            }
            return other.map(|_| ());
        }
    };

    let now_cfg = live.get();
    let allow = super::reload::allow_list(&now_cfg);
    let allow_len = allow.len();
    if allow.is_empty() {
        log::warn!(
            "telegram.allow_from is empty: every user is refused (and told their id to add)"
        );
    }

    let bot = Rc::new(Bot::new(
        agent.clone(),
        db.clone(),
        &now_cfg,
        me.clone(),
        allow,
        t.outbox.clone(),
    ));
    bot.set_media(t.media.clone(), workers.clone());
    *slot.borrow_mut() = Some(bot.clone());
    // What the last run left unanswered or undelivered goes first (docs/DECISIONS.md 88).
    let (resent, resumed, told) = bot.recover(ex).await;
    if resent + resumed + told > 0 {
        log::info!(
            "gateway: after the restart: {resent} answer(s) sent again, {resumed} turn(s) resumed, {told} chat(s) told"
        );
    }
    let (tx, rx) = async_channel::bounded(INBOUND_QUEUE_LEN);
    let posted = t.posted.clone();
    if let Some((_, secret)) = &posted {
        drop(tx);
        let (api, w, url) = (t.api.clone(), workers.clone(), tg.webhook_url.clone());
        let (secret, backoff, stop) = (secret.clone(), t.backoff, t.stop.clone());
        ex.spawn(set_webhook(api, w, (url, secret), backoff, stop))
            .detach();
    } else {
        let poll_timeout = tg.poll_timeout_secs;
        let api = Api::new(&tg.api_base, t.token, poll_timeout + POLL_MARGIN_SECS);
        let (offset, stop, backoff) = (bot.next_offset(), t.stop.clone(), t.backoff);
        let (polled, mut mark) = (t.polled.clone(), t.mark_on_poll.clone());
        spawn_thread("yc-tg-poll", move || {
            // A webhook left set (webhook mode before) makes every getUpdates a 409.
            let mut webhook_checked = false;
            leave_webhook(&api);
            let fetch = |off| {
                let got = api.get_updates(off, poll_timeout, POLL_BATCH_UPDATES);
                if got.is_ok() {
                    polled.mark();
                    if let Some(home) = mark.take() {
                        crate::update::confirm(&home);
                    }
                } else if matches!(got, Err(ApiError::Conflict { .. })) && !webhook_checked {
                    webhook_checked = true;
                    leave_webhook(&api);
                }
                got
            };
            poll_loop(fetch, offset, &backoff, &tx, &stop);
        })
        .map_err(|e| runtime(format!("cannot start the Telegram poller: {e}")))?;
    }
    db.release_memory();
    crate::heap::trim();
    crate::heap::release_free_pages();
    log::info!(
        "gateway: serving Telegram as @{} via {} ({}, allow_from: {} entries, groups: {:?}, streaming: {})",
        me.username,
        t.api.host(),
        tg.mode.name(),
        allow_len,
        tg.group_mode,
        if agent.streams() { "on" } else { "off" }
    );

    let serve = async {
        match posted {
            Some((posted, _)) => bot.serve_posted(ex, posted).await,
            None => bot.serve(ex, rx).await,
        }
        false
    };
    let signalled = async {
        signals.wait().await;
        true
    };
    let by_signal = smol::future::or(serve, signalled).await;
    stopping.close();
    t.stop.set();
    if !by_signal {
        return Err(runtime("the Telegram poller stopped unexpectedly"));
    }
    log::info!("gateway: stopping");
    shutdown(&bot, &t.outbox).await;
    log::info!("gateway: stopped");
    Ok(())
}

/// Webhook mode's secret from its variable, checked for the shape Telegram takes
/// (1–256 of `A-Z a-z 0-9 _ -`; never printed); `None` in polling mode or with
/// Telegram off.
fn webhook_secret(l: &Loaded) -> Result<Option<String>, AppError> {
    let tg = &l.cfg.telegram;
    if !tg.enabled || tg.mode != TelegramMode::Webhook {
        return Ok(None);
    }
    let var = &tg.webhook_secret_env;
    let secret = l
        .env
        .get(var)
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    if !crate::config::webhook_secret_ok(&secret) {
        return Err(AppError::Usage(format!(
            "telegram.mode is \"webhook\" but {var} is not a usable secret: put 1 to 256 letters, digits, _ or - (a long random string) in secrets.env or the environment"
        )));
    }
    crate::security::scrub::install_secret_literals([secret.clone()]);
    Ok(Some(secret))
}

/// `setWebhook` with the configured URL and secret, retried on failures until it
/// works (updates posted meanwhile under an older registration are still taken).
async fn set_webhook(
    api: Api,
    workers: Workers,
    (url, secret): (String, String),
    backoff: Backoff,
    stop: Stop,
) {
    let mut delay = ErrorDelay::new(&backoff);
    while !stop.is_set() {
        let (a, url, sec) = (api.clone(), url.clone(), secret.clone());
        let e = match workers.run(move || a.set_webhook(&url, &sec)).await {
            Ok(Ok(())) => {
                log::info!("telegram: webhook set: Telegram posts updates to telegram.webhook_url");
                return;
            }
            Ok(Err(e)) => e,
            Err(_) => return, // the workers stopped: shutting down
        };
        let wait = match &e {
            ApiError::RateLimited { retry_after_secs } => backoff.retry_after(*retry_after_secs),
            _ => delay.next_delay(),
        };
        log::warn!(
            "telegram: setWebhook failed ({e}): check telegram.webhook_url (public, https); retrying in {} ms",
            wait.as_millis()
        );
        smol::Timer::after(wait).await;
    }
}

/// Polling mode: a webhook still set (from webhook mode) is deleted, keeping the updates
/// that wait, so `getUpdates` gets them. A failure is logged; polling goes on.
fn leave_webhook(api: &Api) {
    match api.webhook_info() {
        Ok(info) if info.url.is_empty() => {}
        Ok(_) => match api.delete_webhook() {
            Ok(()) => log::info!(
                "telegram: deleted the webhook left set (telegram.mode is \"polling\"); polling now"
            ),
            Err(e) => log::warn!("telegram: cannot delete the webhook left set ({e})"),
        },
        Err(e) => log::debug!("telegram: getWebhookInfo failed ({e}); polling anyway"),
    }
}

/// The bot token from its variable, checked for shape (never printed).
fn bot_token(l: &Loaded) -> Result<String, AppError> {
    let var = &l.cfg.telegram.token_env;
    let Some(token) = l.env.get(var) else {
        return Err(AppError::Usage(format!(
            "telegram.enabled is true but {var} is not set: put the token from @BotFather in secrets.env or the environment"
        )));
    };
    let token = token.trim().to_string();
    let shape_ok = token.contains(':')
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b':' | b'_' | b'-'));
    if !shape_ok {
        return Err(AppError::Usage(format!(
            "{var} does not look like a bot token (digits, a colon, then letters, as @BotFather gives it)"
        )));
    }
    crate::security::scrub::install_secret_literals([token.clone()]);
    Ok(token)
}

/// The backoff waits: the production ones, or in a `test-hooks` build shortened by the
/// test variable (logged).
#[cfg(not(feature = "test-hooks"))]
fn test_backoff() -> Backoff {
    Backoff::standard()
}

/// The backoff waits: the production ones, or in a `test-hooks` build shortened by the
/// test variable (logged).
#[cfg(feature = "test-hooks")]
fn test_backoff() -> Backoff {
    let Ok(v) = std::env::var(TEST_BACKOFF_SCALE_ENV) else {
        return Backoff::standard();
    };
    match Backoff::parse_scale(&v) {
        Some(f) => {
            let b = Backoff::scaled(f);
            log::warn!(
                "gateway: {TEST_BACKOFF_SCALE_ENV}={} shortens every Telegram backoff wait (tests only)",
                b.scale
            );
            b
        }
        None => {
            log::warn!("gateway: ignored {TEST_BACKOFF_SCALE_ENV}: not a number");
            Backoff::standard()
        }
    }
}

/// `getMe`, retried on transient errors; a refused token is fatal.
async fn identify(
    api: &Api,
    workers: &Workers,
    backoff: &Backoff,
    token_env: &str,
) -> Result<Option<BotIdentity>, AppError> {
    let mut delay = ErrorDelay::new(backoff);
    loop {
        let a = api.clone();
        let result = workers
            .run(move || a.get_me())
            .await
            .map_err(|e| runtime(format!("cannot ask Telegram who the bot is: {e}")))?;
        let e = match result {
            Ok(me) => return Ok(Some(me)),
            Err(e) => e,
        };
        let wait = match &e {
            ApiError::Unauthorized | ApiError::NotFound => {
                let status = if e == ApiError::Unauthorized {
                    401
                } else {
                    404
                };
                return Err(AppError::Runtime(format!(
                    "Telegram refused the bot token (HTTP {status}): check {token_env} (a token from @BotFather) and telegram.api_base"
                )));
            }
            ApiError::RateLimited { retry_after_secs } => backoff.retry_after(*retry_after_secs),
            _ => delay.next_delay(),
        };
        log::warn!(
            "telegram: getMe failed ({e}); retrying in {} ms",
            wait.as_millis()
        );
        smol::Timer::after(wait).await;
    }
}

/// Let running turns finish briefly, tell the chats still waiting that they are answered
/// after the restart, flush the sender and record what it delivered (what it did not
/// stays owed in SQLite and goes out after the restart).
async fn shutdown(bot: &Bot, outbox: &Outbox) {
    let start = Instant::now();
    let tick = Duration::from_millis(SHUTDOWN_TICK_MS);
    while bot.running_turns() > 0 && start.elapsed() < Duration::from_millis(TURN_GRACE_MS) {
        smol::Timer::after(tick).await;
    }
    bot.tell_unanswered_chats();
    while !outbox.is_idle() && start.elapsed() < Duration::from_millis(SHUTDOWN_LIMIT_MS) {
        smol::Timer::after(tick).await;
    }
    // Let the chats' turns record what the sender just delivered.
    for _ in 0..SHUTDOWN_YIELDS {
        smol::future::yield_now().await;
    }
    if !outbox.is_idle() {
        log::warn!(
            "gateway: exiting with Telegram messages still unsent (owed answers go out after the restart)"
        );
    }
}
