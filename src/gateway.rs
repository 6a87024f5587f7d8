//! `yoctoclaw gateway`: the daemon. Start-up checks, the Telegram channel's threads,
//! the executor, signal handling and a bounded shutdown, in [`run`].
//!
//! Why it exists: this is the program's main loop, written once and read top to bottom
//! (STYLE: "the daemon's main loop is one documented function").
//!
//! # Threads
//! The calling thread runs the smol `LocalExecutor` (Telegram update handling, the
//! agent's turns, SQLite). `yc-tg-poll` runs the long poll, `yc-tg-send` sends replies
//! and chat actions, the `Workers` pool runs provider calls. They talk over bounded
//! async-channels only.
//!
//! # Bounds
//! - Shutdown: running turns get `TURN_GRACE_MS` to finish; then chats left unanswered
//!   are told to resend, and pending replies get until `SHUTDOWN_LIMIT_MS` after the
//!   signal; the process then exits with status 0 whatever is still in flight.
//! - Start-up: `getMe` is retried with backoff on network errors (a board that boots
//!   before its network); a refused token (401/404) is fatal at once.
//!
//! # Test hook
//! `YOCTOCLAW_TEST_BACKOFF_SCALE` (a number in 0.001..=1) multiplies every Telegram
//! backoff wait, so the integration tests exercise 409/429/5xx paths in milliseconds.
//! It is read only here, logged when set, and can only shorten waits
//! (docs/DECISIONS-gw.md).

use crate::agent::Agent;
use crate::channels::telegram::api::{Api, ApiError, BotIdentity};
use crate::channels::telegram::backoff::{Backoff, ErrorDelay, Stop};
use crate::channels::telegram::bot::Bot;
use crate::channels::telegram::inbound::AllowList;
use crate::channels::telegram::poller::{POLL_BATCH_UPDATES, POLL_MARGIN_SECS, poll_loop};
use crate::channels::telegram::send::{Outbox, sender_loop};
use crate::cli::{CliError, Loaded, build_agent, open_db, runtime};
use crate::config::TelegramConfig;
use crate::limits::{INBOUND_QUEUE_LEN, WORKER_THREADS};
use crate::runtime::{Workers, spawn_thread};
use crate::signals::Signals;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Time running turns get to finish after SIGINT/SIGTERM.
pub const TURN_GRACE_MS: u64 = 1_000;
/// Time after the signal when the process exits regardless.
pub const SHUTDOWN_LIMIT_MS: u64 = 1_700;
/// Overall timeout of one outgoing Bot API call (sendMessage, getMe…).
pub const SEND_TIMEOUT_SECS: u64 = 30;
/// The hidden test variable that shortens backoff waits.
pub const TEST_BACKOFF_SCALE_ENV: &str = "YOCTOCLAW_TEST_BACKOFF_SCALE";
/// How often shutdown checks whether turns and sends are done.
const SHUTDOWN_TICK_MS: u64 = 20;

/// Run the daemon until SIGINT or SIGTERM (exit status 0), or a fatal start-up error.
///
/// 1. Open the database, start the worker pool, build the agent, watch for signals.
/// 2. If Telegram is enabled: check the token's shape, ask `getMe` who we are (retrying
///    network errors; a refused token is a clear fatal error naming its variable).
/// 3. Start the sender thread and the poller thread (from the persisted offset), then
///    handle updates on the executor until a signal arrives.
/// 4. Stop polling, give running turns a moment, tell unanswered chats to resend,
///    flush what can be sent, and return.
pub fn run(l: &Loaded) -> Result<(), CliError> {
    let db = open_db(l)?;
    let workers = Workers::start(WORKER_THREADS);
    let agent = Rc::new(build_agent(l, db, workers)?);
    let signals =
        Signals::install().map_err(|e| runtime(format!("cannot watch for signals: {e}")))?;
    let backoff = test_backoff();
    let tg = &l.cfg.telegram;
    let token = if tg.enabled {
        Some(bot_token(l)?)
    } else {
        None
    };
    let ex: smol::LocalExecutor<'static> = smol::LocalExecutor::new();
    smol::block_on(ex.run(async {
        match token {
            Some(token) => serve_telegram(&ex, &agent, tg, &token, backoff, &signals).await,
            None => {
                log::warn!(
                    "gateway: telegram.enabled is false, so there is nothing to serve yet; waiting for SIGINT/SIGTERM"
                );
                signals.wait().await;
                Ok(())
            }
        }
    }))
}

/// Steps 2 to 4 of [`run`] for Telegram: identify, start the threads, serve until a
/// signal, shut down.
async fn serve_telegram(
    ex: &smol::LocalExecutor<'static>,
    agent: &Rc<Agent>,
    tg: &TelegramConfig,
    token: &str,
    backoff: Backoff,
    signals: &Signals,
) -> Result<(), CliError> {
    let send_api = Api::new(&tg.api_base, token, SEND_TIMEOUT_SECS);
    let identify = identify(&send_api, &agent.workers, &backoff, &tg.token_env);
    let stopped = async {
        signals.wait().await;
        Ok(None)
    };
    let Some(me) = smol::future::or(identify, stopped).await? else {
        log::info!("gateway: stopped before Telegram answered");
        return Ok(());
    };

    let (allow, bad) = AllowList::parse(&tg.allow_from);
    for b in bad {
        log::warn!("telegram.allow_from: ignored \"{b}\": not a numeric id or a @username");
    }
    let allow_len = allow.len();
    if allow.is_empty() {
        log::warn!(
            "telegram.allow_from is empty: every user is refused (and told their id to add)"
        );
    }

    let stop = Stop::new();
    let (outbox, out_rx) = Outbox::new();
    {
        let (api, stop) = (send_api.clone(), stop.clone());
        spawn_thread("yc-tg-send", move || {
            sender_loop(api, out_rx, backoff, stop)
        })
        .map_err(|e| runtime(format!("cannot start the Telegram sender: {e}")))?;
    }
    let bot = Rc::new(Bot::new(agent.clone(), me.clone(), allow, outbox.clone()));
    let (tx, rx) = async_channel::bounded(INBOUND_QUEUE_LEN);
    {
        let poll_timeout = tg.poll_timeout_secs;
        let api = Api::new(&tg.api_base, token, poll_timeout + POLL_MARGIN_SECS);
        let (offset, stop) = (bot.next_offset(), stop.clone());
        spawn_thread("yc-tg-poll", move || {
            let fetch = |off| api.get_updates(off, poll_timeout, POLL_BATCH_UPDATES);
            poll_loop(fetch, offset, &backoff, &tx, &stop);
        })
        .map_err(|e| runtime(format!("cannot start the Telegram poller: {e}")))?;
    }
    log::info!(
        "gateway: serving Telegram as @{} via {} (allow_from: {} entries, groups: {:?})",
        me.username,
        send_api.host(),
        allow_len,
        tg.group_mode
    );

    let serve = async {
        bot.serve(ex, rx).await;
        false
    };
    let signalled = async {
        signals.wait().await;
        true
    };
    let by_signal = smol::future::or(serve, signalled).await;
    stop.set();
    if !by_signal {
        return Err(runtime("the Telegram poller stopped unexpectedly"));
    }
    log::info!("gateway: stopping");
    shutdown(&bot, &outbox).await;
    log::info!("gateway: stopped");
    Ok(())
}

/// The bot token from its variable, checked for shape (never printed).
fn bot_token(l: &Loaded) -> Result<String, CliError> {
    let var = &l.cfg.telegram.token_env;
    let Some(token) = l.env.get(var) else {
        return Err(CliError::Usage(format!(
            "telegram.enabled is true but {var} is not set: put the token from @BotFather in secrets.env or the environment"
        )));
    };
    let token = token.trim().to_string();
    let shape_ok = token.contains(':')
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b':' | b'_' | b'-'));
    if !shape_ok {
        return Err(CliError::Usage(format!(
            "{var} does not look like a bot token (digits, a colon, then letters, as @BotFather gives it)"
        )));
    }
    crate::security::scrub::install_secret_literals([token.clone()]);
    Ok(token)
}

/// The backoff waits: the spec's, or shortened by the test variable.
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
) -> Result<Option<BotIdentity>, CliError> {
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
                return Err(CliError::Runtime(format!(
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

/// Let running turns finish briefly, tell the rest to resend, flush the sender.
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
    if !outbox.is_idle() {
        log::warn!("gateway: exiting with Telegram messages still unsent");
    }
}
