//! The commands that run the agent or the scheduler outside the gateway: `agent` (the
//! terminal chat), `heartbeat`, `cron` and `serial`. Each wires what it needs from the
//! composition root and maps outcomes to `AppError` (exit 1 runtime failure, 2 bad usage
//! such as an invalid schedule or target).
//!
//! # Threads
//! Each command runs its async work with `smol::block_on` on the main thread; model and
//! Bot API requests go to the worker threads (one, or `WORKER_THREADS` for `serial`).

use super::{AppError, Loaded, agent, mcp_seam, open_db, outbound, providers, runtime};
use crate::args::CronSub;
use crate::channels::{serial, terminal};
use crate::jobs::{self, CronError, JobRequest};
use crate::runtime::Workers;
use crate::scheduler::heartbeat::{self, Outcome, Skip};
use crate::scheduler::{self, Deps};
use crate::time::build_epoch;

/// `yoctoclaw agent [-m TEXT] [-s NAME]`: one turn printed on stdout, or the terminal chat.
pub fn agent_command(l: &Loaded, session: &str, message: Option<String>) -> Result<(), AppError> {
    let db = open_db(l)?;
    if let Err(e) = crate::memory::run_retention(&db, &l.cfg.memory, crate::time::now()) {
        log::warn!("memory retention failed: {e}");
    }
    let providers = providers(l)?;
    let workers = Workers::start(1);
    let out = outbound(l, &workers, None);
    let mcp = mcp_seam::start_now(l, &db);
    let agent = agent(l, &db, &workers, providers, out, mcp.as_ref());
    let session = terminal::session_id(session);
    let res = match message {
        Some(m) => {
            if let Some(reply) = terminal::handle_command(&agent, &session, &m) {
                println!("{reply}");
                Ok(())
            } else {
                let turn = terminal::one_shot(&agent, &session, &m);
                mcp_seam::block_on(mcp.as_ref(), turn).map_err(runtime)
            }
        }
        None => {
            mcp_seam::block_on(mcp.as_ref(), terminal::interactive(&agent, &session));
            Ok(())
        }
    };
    mcp_seam::stop(mcp.as_ref());
    res
}

/// `yoctoclaw heartbeat`: one check-in, then exit (0 done or skipped, 1 failed).
pub fn heartbeat_command(l: &Loaded) -> Result<(), AppError> {
    let db = open_db(l)?;
    let providers = providers(l)?;
    let workers = Workers::start(1);
    // A board without an RTC or NTP, run from a crontab: the provider's answer tells the
    // time (only when the clock is before the build and nothing else told it yet).
    crate::provider::http::learn_time(&l.cfg.provider.base_url);
    let now = crate::time::now();
    let floor = build_epoch();
    let out = outbound(l, &workers, None);
    let mcp = mcp_seam::start_now(l, &db);
    let agent = agent(l, &db, &workers, providers, out.clone(), mcp.as_ref());
    let deps = Deps::new(l.live.clone(), &db, l.home.workspace(), out);
    let checked = smol::block_on(heartbeat::check_in(
        &agent,
        &deps,
        now,
        floor,
        heartbeat::Trigger::Manual,
    ));
    mcp_seam::stop(mcp.as_ref());
    match checked {
        Ok(Outcome::Skipped(Skip::ClockNotSet)) => {
            log::warn!(
                "the clock says {} UTC, before this binary was built: heartbeat held until \
                 the clock is set (NTP)",
                jobs::local_text(now, &crate::time::tz::Tz::Utc)
            );
            Ok(())
        }
        Ok(Outcome::Skipped(Skip::Disabled)) => {
            log::warn!("heartbeat.enabled is false: no check-in");
            Ok(())
        }
        Ok(o) => {
            log::info!("heartbeat: {}", o.text());
            Ok(())
        }
        Err(e) => Err(AppError::Runtime(format!("heartbeat failed: {e}"))),
    }
}

fn cron_err(e: CronError) -> AppError {
    if e.is_usage() {
        AppError::Usage(e.to_string())
    } else {
        AppError::Runtime(e.to_string())
    }
}

/// `yoctoclaw cron list|add|remove|run`.
pub fn cron_command(l: &Loaded, cmd: CronSub) -> Result<(), AppError> {
    let db = open_db(l)?;
    let tz = jobs::timezone(&l.cfg.agent.timezone).map_err(cron_err)?;
    let now = crate::time::now();
    match cmd {
        CronSub::List(_) => {
            let text = jobs::list_text(&db, &tz).map_err(runtime)?;
            if text == "No cron jobs." {
                println!("No cron jobs. Add one with: yoctoclaw cron add \"every 1h\" \"TEXT\"");
            } else {
                println!("{text}");
            }
            Ok(())
        }
        CronSub::Add(a) => {
            let req = JobRequest {
                schedule: &a.schedule,
                text: &a.text,
                to: a.to.as_deref(),
                is_message: a.message,
            };
            let job = jobs::add(&db, &tz, &req, now, build_epoch()).map_err(cron_err)?;
            if job.next_run.is_none() {
                log::warn!(
                    "the clock is before this binary's build time: job {} runs once the clock is set",
                    job.id
                );
            }
            println!(
                "cron job {} added: {}, next run {} ({})",
                job.id,
                job.schedule,
                jobs::next_run_text(&job, &tz),
                tz.name()
            );
            Ok(())
        }
        CronSub::Remove(r) => {
            jobs::remove(&db, r.id).map_err(cron_err)?;
            println!("cron job {} removed", r.id);
            Ok(())
        }
        CronSub::Run(r) => {
            let job = db
                .get_cron_job(r.id)
                .map_err(runtime)?
                .ok_or_else(|| cron_err(CronError::NotFound(r.id)))?;
            let workers = Workers::start(1);
            let out = outbound(l, &workers, None);
            // A message job needs no model (and no key).
            let mcp = if job.is_message {
                None
            } else {
                mcp_seam::start_now(l, &db)
            };
            let agent = if job.is_message {
                None
            } else {
                Some(agent(
                    l,
                    &db,
                    &workers,
                    providers(l)?,
                    out.clone(),
                    mcp.as_ref(),
                ))
            };
            let result = smol::block_on(scheduler::jobs::run_now(
                agent.as_deref(),
                out.as_ref(),
                &db,
                r.id,
                now,
            ));
            mcp_seam::stop(mcp.as_ref());
            let result = result.map_err(cron_err)?;
            if result.starts_with("failed") {
                return Err(AppError::Runtime(format!("cron job {}: {result}", r.id)));
            }
            println!("cron job {}: {result}", r.id);
            Ok(())
        }
    }
}

/// `yoctoclaw serial`: the console alone, until killed.
pub fn serial_command(l: &Loaded, device: &str, baud: u32, echo: bool) -> Result<(), AppError> {
    let (lines, writer) = serial::start(device, baud, echo).map_err(|e| match e {
        serial::SerialError::Thread(_) => AppError::Runtime(e.to_string()),
        _ => AppError::Usage(e.to_string()),
    })?;
    let db = open_db(l)?;
    let providers = providers(l)?;
    let workers = Workers::start(crate::limits::WORKER_THREADS);
    let out = outbound(l, &workers, None);
    let mcp = mcp_seam::start_now(l, &db);
    let agent = agent(l, &db, &workers, providers, out, mcp.as_ref());
    let console = serial::run_console(&agent, &workers, device, lines, writer);
    mcp_seam::block_on(mcp.as_ref(), console);
    mcp_seam::stop(mcp.as_ref());
    Err(AppError::Runtime(format!(
        "the serial reader for {device} stopped"
    )))
}
