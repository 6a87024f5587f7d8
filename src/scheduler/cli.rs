//! The `heartbeat` and `cron` commands: thin wrappers over `heartbeat` and `jobs` that
//! load the config, open the database and map outcomes to exit statuses (0 ok, 1 runtime
//! failure, 2 bad usage such as an invalid schedule or target).
//!
//! # Blocking
//! Each command runs its async work with `smol::block_on` on the main thread; model and
//! Bot API requests go to one worker thread.

use super::heartbeat::{self, Outcome, Skip};
use super::jobs::{self, CronError, JobRequest};
use crate::channels::deliver::DeliverCtx;
use crate::cli::{CliError, CronSub, build_agent, load, open_db, runtime};
use crate::runtime::Workers;
use crate::time::build_epoch;
use std::path::Path;

/// `yoctoclaw heartbeat`: one check-in, then exit (0 done or skipped, 1 failed).
pub fn heartbeat_command(home: Option<&Path>) -> Result<(), CliError> {
    // Not quiet: this runs from a crontab, and its log is its output.
    let l = load(home, false)?;
    let db = open_db(&l)?;
    let workers = Workers::start(1);
    let now = crate::time::clock::now();
    let floor = build_epoch();
    let agent = build_agent(&l, db, workers.clone())?;
    let dctx = DeliverCtx::new(&l.cfg, &l.env, workers);
    match smol::block_on(heartbeat::check_in(&agent, &dctx, now, floor)) {
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
        Err(e) => Err(CliError::Runtime(format!("heartbeat failed: {e}"))),
    }
}

fn cron_err(e: CronError) -> CliError {
    if e.is_usage() {
        CliError::Usage(e.to_string())
    } else {
        CliError::Runtime(e.to_string())
    }
}

/// `yoctoclaw cron list|add|remove|run`.
pub fn cron_command(home: Option<&Path>, cmd: CronSub) -> Result<(), CliError> {
    let l = load(home, true)?;
    let db = open_db(&l)?;
    let tz = jobs::timezone(&l.cfg.agent.timezone).map_err(cron_err)?;
    let now = crate::time::clock::now();
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
            let agent = if job.is_message {
                None
            } else {
                Some(build_agent(&l, db.clone(), workers.clone())?)
            };
            let dctx = DeliverCtx::new(&l.cfg, &l.env, workers);
            let result = smol::block_on(jobs::run_now(agent.as_ref(), &dctx, &db, r.id, now))
                .map_err(cron_err)?;
            if result.starts_with("failed") {
                return Err(CliError::Runtime(format!("cron job {}: {result}", r.id)));
            }
            println!("cron job {}: {result}", r.id);
            Ok(())
        }
    }
}
