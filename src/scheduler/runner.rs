//! The scheduler loop of the gateway: cron jobs, the heartbeat and daily housekeeping on
//! the executor's timers.
//!
//! One future ([`run`]) sleeps on a `smol::Timer` until the earliest of: the next cron
//! job, the next heartbeat, the next local midnight (when daily hooks are given), or
//! `MAX_SLEEP_SECS`. It wakes early when jobs change in this process
//! ([`crate::jobs::notify_jobs_changed`], sent by `cron_add`/`cron_remove`); changes made by
//! another process (`yoctoclaw cron add` while the daemon runs) are seen on the next
//! wake, at most `MAX_SLEEP_SECS` later. Every wake re-reads the table, so planning is
//! never stale for longer than that. No thread per job, no polling every second.
//!
//! Clock rules:
//! - Before the binary's build time (a board without an RTC that has not synced yet) one
//!   warning is logged and cron and heartbeat are held; the clock is checked again every
//!   `HOLD_RECHECK_SECS` and work resumes once it is sane.
//! - Each wake compares wall-clock and monotonic time elapsed during the sleep. A jump
//!   forward needs nothing special (due jobs run once by the catch-up rule); a jump back
//!   by more than `jobs::REPLAN_BACKWARD_JUMP_SECS` re-plans every job from the new time.
//!   Sleeps are capped at `MAX_SLEEP_SECS`, so a jump is noticed within that time.
//!
//! Daily hooks: `Options::daily` callbacks run once when the loop first sees a sane clock
//! and then after every local midnight (the gateway passes `memory::run_retention`).
//!
//! Stop the loop by dropping its future (e.g. `future::or` with a shutdown signal): it
//! holds no state that needs flushing between awaits.
//!
//! # Bounds
//! Sleeps last `MIN_SLEEP_SECS`..=`MAX_SLEEP_SECS`; a pass runs at most
//! `jobs::MAX_JOBS_PER_PASS` jobs, one after another.
//!
//! # Threads
//! Executor thread: one future on `smol::Timer`s; the turns and deliveries it starts await
//! their own threads.

use super::Deps;
use super::heartbeat::{self, LAST_RUN_KEY, LEASE_KEY, Outcome};
use super::jobs;
use crate::agent::Agent;
use crate::store::Db;
use crate::time::tz::Tz;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// How often a held scheduler checks whether the clock has been set.
pub const HOLD_RECHECK_SECS: u64 = 30;
/// Longest sleep: the bound on noticing another process's changes or a clock jump.
pub const MAX_SLEEP_SECS: u64 = 300;
/// Shortest sleep, so a job that cannot be moved never spins the loop.
pub const MIN_SLEEP_SECS: u64 = 1;
/// Wall and monotonic time may drift apart this much over one sleep before it counts as
/// a clock jump.
pub const JUMP_TOLERANCE_SECS: i64 = 90;

/// A daily housekeeping callback.
pub type DailyHook = Box<dyn Fn()>;

/// How the loop reads the time and what else it runs.
pub struct Options {
    /// Wall clock in Unix seconds. Defaults to `clock::now` (honours the test hook).
    pub clock: Rc<dyn Fn() -> i64>,
    /// The earliest sane clock. Defaults to the binary's build time.
    pub floor: i64,
    /// Run once a day (see the module doc).
    pub daily: Vec<DailyHook>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            clock: Rc::new(crate::time::clock::now),
            floor: crate::time::build_epoch(),
            daily: Vec::new(),
        }
    }
}

/// How the wall clock moved against the monotonic clock over one sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jump {
    None,
    /// Wall time moved this many seconds more than monotonic time.
    Forward(i64),
    /// Wall time moved this many seconds less (it was stepped back).
    Backward(i64),
}

/// Compare wall and monotonic seconds elapsed over the same stretch.
pub fn detect_jump(wall_elapsed: i64, mono_elapsed: i64) -> Jump {
    let d = wall_elapsed.saturating_sub(mono_elapsed);
    if d > JUMP_TOLERANCE_SECS {
        Jump::Forward(d)
    } else if d < -JUMP_TOLERANCE_SECS {
        Jump::Backward(d.saturating_neg())
    } else {
        Jump::None
    }
}

/// Seconds to sleep at `now` until the earliest of `events`, within
/// `MIN_SLEEP_SECS..=MAX_SLEEP_SECS`.
pub fn sleep_secs(now: i64, events: &[Option<i64>]) -> u64 {
    let earliest = events.iter().flatten().copied().min();
    let wait = match earliest {
        Some(t) => t.saturating_sub(now).max(0) as u64,
        None => MAX_SLEEP_SECS,
    };
    wait.clamp(MIN_SLEEP_SECS, MAX_SLEEP_SECS)
}

/// When the next heartbeat is due. `last_run` and `lease_until` come from the state
/// table (either may be from another process), `started` is when this loop started.
pub fn heartbeat_due(
    last_run: Option<i64>,
    lease_until: Option<i64>,
    interval: i64,
    started: i64,
    now: i64,
) -> i64 {
    let base = match last_run {
        // A last run "in the future" was recorded under a clock since stepped back.
        Some(t) if t > now => now,
        Some(t) => t.saturating_add(interval),
        None => started.saturating_add(interval),
    };
    match lease_until {
        // Another run holds the interval: wait for its lease, not for its record.
        Some(l) if l > now && l <= now.saturating_add(interval) => base.max(l),
        _ => base,
    }
}

/// The next local midnight after `now`, as a UTC instant.
pub fn next_midnight(now: i64, tz: &Tz) -> i64 {
    let today = tz.to_local(now).days();
    tz.fire_instant(today.saturating_add(1).saturating_mul(86_400))
}

/// Run cron jobs, the heartbeat and daily hooks until the future is dropped.
pub async fn run(agent: &Agent, deps: &Deps, opts: Options) {
    let clock = opts.clock.clone();
    let tz = match crate::jobs::timezone(&deps.cfg().agent.timezone) {
        Ok(tz) => tz,
        Err(e) => {
            log::error!("{e}; cron schedules use UTC until it is fixed");
            Tz::Utc
        }
    };
    let changes = crate::jobs::jobs_changed();
    // When the loop first saw a sane clock: a heartbeat that never ran is due one
    // interval after that.
    let mut started: Option<i64> = None;
    let mut held = false;
    let mut last_daily: Option<i64> = None;
    let mut slept: Option<(i64, Instant)> = None;
    loop {
        let now = clock();
        if let Some((wall0, mono0)) = slept.take() {
            let mono = i64::try_from(mono0.elapsed().as_secs()).unwrap_or(i64::MAX);
            match detect_jump(now.saturating_sub(wall0), mono) {
                Jump::None => {}
                Jump::Forward(d) => log::info!("the clock jumped forward by {d} s"),
                Jump::Backward(d) => {
                    log::warn!("the clock was stepped back by {d} s");
                    if d > crate::jobs::REPLAN_BACKWARD_JUMP_SECS
                        && now >= opts.floor
                        && let Err(e) = crate::jobs::replan_all(&deps.db, &tz, now)
                    {
                        log::error!("cannot re-plan cron jobs: {e}");
                    }
                }
            }
        }
        if now < opts.floor {
            if !held {
                log::warn!(
                    "the clock says {} UTC, before this binary was built: cron and heartbeat \
                     are held until the clock is set (NTP)",
                    crate::jobs::local_text(now, &Tz::Utc)
                );
                held = true;
            }
            slept = Some((now, Instant::now()));
            sleep_or_changed(HOLD_RECHECK_SECS, &changes).await;
            continue;
        }
        if held {
            log::info!("the clock is set: cron and heartbeat resume");
            held = false;
        }
        let started = *started.get_or_insert(now);
        let next_events = pass(agent, deps, &opts, &tz, started, now, &mut last_daily).await;
        let after = clock();
        let secs = sleep_secs(after, &next_events);
        log::debug!("scheduler sleeps {secs} s");
        slept = Some((after, Instant::now()));
        sleep_or_changed(secs, &changes).await;
    }
}

/// One wake: due jobs, the heartbeat if due, daily hooks; returns the next event times.
async fn pass(
    agent: &Agent,
    deps: &Deps,
    opts: &Options,
    tz: &Tz,
    started: i64,
    now: i64,
    last_daily: &mut Option<i64>,
) -> [Option<i64>; 3] {
    if let Err(e) = jobs::run_due(agent, deps, tz, now).await {
        log::error!("cron pass failed: {e}");
    }
    let c = deps.cfg();
    let hb = &c.heartbeat;
    let mut next_heartbeat = None;
    if hb.enabled {
        // Cron jobs may have taken a while: read the clock again.
        let now = (opts.clock)();
        let interval = heartbeat::interval_secs(hb.interval_mins);
        let due = heartbeat_state_due(&deps.db, interval, started, now);
        if due <= now {
            match heartbeat::check_in(agent, deps, now, opts.floor, heartbeat::Trigger::Timer).await
            {
                Ok(Outcome::Skipped(s)) => log::debug!("heartbeat skipped: {s:?}"),
                Ok(o) => log::info!("heartbeat: {}", o.text()),
                Err(e) => log::warn!("heartbeat failed: {e}"),
            }
        }
        let now = (opts.clock)();
        next_heartbeat = Some(heartbeat_state_due(&deps.db, interval, started, now));
    }
    let mut next_daily = None;
    if !opts.daily.is_empty() {
        let today = tz.to_local(now).days();
        if *last_daily != Some(today) {
            *last_daily = Some(today);
            for hook in &opts.daily {
                hook();
            }
        }
        next_daily = Some(next_midnight(now, tz));
    }
    let next_job = deps.db.next_cron_due().unwrap_or_else(|e| {
        log::error!("cannot read cron jobs: {e}");
        None
    });
    [next_job, next_heartbeat, next_daily]
}

fn heartbeat_state_due(db: &Db, interval: i64, started: i64, now: i64) -> i64 {
    let last_run = db
        .get_state(LAST_RUN_KEY)
        .ok()
        .flatten()
        .and_then(|v| v.trim().parse::<i64>().ok());
    let lease = db.lease_until(LEASE_KEY).ok().flatten();
    heartbeat_due(last_run, lease, interval, started, now)
}

/// Sleep `secs`, or less when jobs change in this process.
async fn sleep_or_changed(secs: u64, changes: &async_channel::Receiver<()>) {
    let timer = async {
        smol::Timer::after(Duration::from_secs(secs)).await;
    };
    let changed = async {
        if changes.recv().await.is_err() {
            // Cannot happen (the sender is static); never spin if it does.
            std::future::pending::<()>().await;
        }
    };
    smol::future::or(timer, changed).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_until_the_earliest_event_within_bounds() {
        assert_eq!(sleep_secs(1000, &[Some(1060), Some(1030), None]), 30);
        assert_eq!(sleep_secs(1000, &[None, None]), MAX_SLEEP_SECS);
        assert_eq!(sleep_secs(1000, &[Some(1_000_000)]), MAX_SLEEP_SECS);
        // Already due (more jobs than one pass runs): wake again almost at once.
        assert_eq!(sleep_secs(1000, &[Some(10)]), MIN_SLEEP_SECS);
        assert_eq!(sleep_secs(1000, &[Some(i64::MIN)]), MIN_SLEEP_SECS);
        assert_eq!(sleep_secs(i64::MIN, &[Some(i64::MAX)]), MAX_SLEEP_SECS);
    }

    #[test]
    fn jumps_are_told_from_drift() {
        assert_eq!(detect_jump(300, 300), Jump::None);
        assert_eq!(detect_jump(330, 300), Jump::None);
        assert_eq!(detect_jump(3900, 300), Jump::Forward(3600));
        assert_eq!(detect_jump(-3300, 300), Jump::Backward(3600));
        assert_eq!(detect_jump(i64::MIN, i64::MAX), Jump::Backward(i64::MAX));
    }

    #[test]
    fn heartbeat_due_follows_last_run_and_leases() {
        let iv = 1800;
        // Never ran: one interval after the loop started.
        assert_eq!(heartbeat_due(None, None, iv, 1000, 1000), 2800);
        // Ran at 5000: due at 6800.
        assert_eq!(heartbeat_due(Some(5000), Some(6740), iv, 0, 5100), 6800);
        // Another process holds the lease and has not recorded yet: wait for the lease.
        assert_eq!(heartbeat_due(Some(1000), Some(8000), iv, 0, 7000), 8000);
        // Last run recorded under a clock since stepped back: due now.
        assert_eq!(heartbeat_due(Some(99_999), None, iv, 0, 5000), 5000);
        // A lease from a wrong clock far ahead is ignored.
        assert_eq!(heartbeat_due(Some(1000), Some(99_999), iv, 0, 5000), 2800);
    }

    #[test]
    fn planning_with_a_fake_clock_never_spins_or_oversleeps() {
        // Walk a fake clock over a day of random events: every sleep is bounded and, when
        // an event is ahead within the cap, the wake lands exactly on it.
        let mut rng = crate::testkit::XorShift(0x2545_f491_4f6c_dd1d);
        let mut now: i64 = 1_800_000_000;
        for _ in 0..5000 {
            let x = rng.next();
            let a = now + (x % 1000) as i64 - 100;
            let b = now + ((x >> 20) % 100_000) as i64;
            let events = [Some(a), if x & 1 == 0 { Some(b) } else { None }, None];
            let s = sleep_secs(now, &events);
            assert!((MIN_SLEEP_SECS..=MAX_SLEEP_SECS).contains(&s));
            let earliest = events.iter().flatten().copied().min().unwrap();
            if earliest > now && earliest - now <= MAX_SLEEP_SECS as i64 {
                assert_eq!(now + s as i64, earliest);
            }
            now += s as i64;
        }
    }

    #[test]
    fn next_midnight_is_local() {
        // 2027-01-15 08:00 UTC; at +02:00 the next midnight is 2027-01-15 22:00 UTC.
        let now = 1_800_000_000;
        assert_eq!(next_midnight(now, &Tz::Utc), 1_800_000_000 + 16 * 3600);
        assert_eq!(
            next_midnight(now, &Tz::Fixed(7200)),
            1_800_000_000 + 14 * 3600
        );
    }
}
