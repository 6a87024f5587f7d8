//! Cron jobs at work: running one (a prompt through the agent in session `cron:<id>`, or
//! a message sent as is), delivering the result through the outbound seam, and the
//! scheduler's pass over due jobs with the catch-up rule. The records themselves
//! (validation, planning, listing) are in `crate::jobs`.
//!
//! Decisions:
//! - A due run is claimed (next run moved, one-shot disabled) before the job runs, so a
//!   crash mid-run or a second process never runs it twice.
//! - A job missed while nothing was running runs once, and its next run is computed from
//!   now (`schedule::catch_up`), skipping the missed slots.
//! - `cron run ID` runs the job now and records the result; it does not move the plan.
//!
//! # Bounds
//! At most `MAX_JOBS_PER_PASS` jobs run per pass (the rest run on the next pass, right
//! after).
//!
//! # Threads
//! Executor thread; the agent's turn and the delivery await their own threads.

use crate::agent::Agent;
use crate::chat::{ChannelKind, Outbound, Target};
use crate::jobs::{CronError, disable_broken, plan_unplanned};
use crate::store::cron::CronJob;
use crate::store::{Db, StoreError};
use crate::time::schedule::{Schedule, catch_up};
use crate::time::tz::Tz;

/// Most jobs run in one scheduler pass.
pub const MAX_JOBS_PER_PASS: usize = 16;

/// Run a job's work and delivery (counted in `/metrics`); returns the result text to
/// record (`delivered to telegram:42`, `failed: …`). Prompt jobs need `agent`.
pub async fn execute(agent: Option<&Agent>, out: &dyn Outbound, job: &CronJob) -> String {
    let ran = execute_inner(agent, out, job).await;
    crate::metrics::cron_run(ran.is_ok());
    match ran {
        Ok(t) => format!("delivered to {}", t.label()),
        Err(e) => format!("failed: {e}"),
    }
}

async fn execute_inner(
    agent: Option<&Agent>,
    out: &dyn Outbound,
    job: &CronJob,
) -> Result<Target, String> {
    let target = Target::parse(&job.target)
        .ok_or_else(|| CronError::BadTarget(job.target.clone()).to_string())?;
    let text = if job.is_message {
        job.prompt.clone()
    } else {
        let agent = agent.ok_or("no model is configured for prompt jobs")?;
        agent
            .run_turn(&session_of(job.id), ChannelKind::Cron, &job.prompt)
            .await
            .map_err(|e| e.to_string())?
    };
    out.deliver(&target, &text)
        .await
        .map_err(|e| format!("delivery to {}: {e}", target.label()))?;
    Ok(target)
}

/// The session a job's prompt runs in.
pub fn session_of(id: i64) -> String {
    format!("cron:{id}")
}

/// `cron run ID`: run a job now (enabled or not), record the result, keep its plan.
pub async fn run_now(
    agent: Option<&Agent>,
    out: &dyn Outbound,
    db: &Db,
    id: i64,
    now: i64,
) -> Result<String, CronError> {
    let job = db.get_cron_job(id)?.ok_or(CronError::NotFound(id))?;
    let result = execute(agent, out, &job).await;
    db.record_cron_result(id, now, &result)?;
    Ok(result)
}

/// One scheduler pass at `now`: plan unplanned jobs, then run each due job once (catch-up
/// rule) and record its result. Returns how many jobs ran.
pub async fn run_due(
    agent: &Agent,
    deps: &super::Deps,
    tz: &Tz,
    now: i64,
) -> Result<usize, StoreError> {
    let (db, out) = (&*deps.db, deps.outbound.as_ref());
    plan_unplanned(db, tz, now)?;
    let mut ran = 0;
    for job in db.due_cron_jobs(now, MAX_JOBS_PER_PASS)? {
        let Some(next) = job.next_run else { continue };
        let schedule = match Schedule::parse(&job.schedule) {
            Ok(s) => s,
            Err(e) => {
                disable_broken(db, &job, &e, now)?;
                continue;
            }
        };
        let tick = catch_up(&schedule, next, now, tz);
        if !tick.run_now {
            continue;
        }
        let disable = schedule.is_one_shot() || tick.next_run.is_none();
        if !db.claim_cron_run(job.id, next, tick.next_run, disable)? {
            continue;
        }
        log::info!("cron job {} runs ({})", job.id, job.schedule);
        let result = execute(Some(agent), out, &job).await;
        if result.starts_with("failed") {
            log::warn!("cron job {}: {result}", job.id);
        }
        db.record_cron_result(job.id, now, &result)?;
        ran += 1;
    }
    Ok(ran)
}
