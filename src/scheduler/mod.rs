//! Scheduler: the pure time layer (civil dates, time zones, cron expressions, schedules)
//! and, on top, the heartbeat, cron jobs and the loop that runs them in the gateway.
//!
//! The time layer (`civil`, `tz`, `cron_expr`, `schedule`) is pure: every time is passed
//! in as Unix seconds (UTC). `heartbeat`, `jobs` and `runner` read the clock only through
//! `clock::now` (or the clock given to `runner::run`), so tests can fake it.
//!
//! # Bounds
//!
//! Each submodule documents its own limits (text lengths, zoneinfo size, search spans,
//! jobs per pass, sleep lengths). The change signal holds at most one pending wake.

pub mod civil;
pub mod cli;
pub mod cron_expr;
pub mod heartbeat;
pub mod jobs;
pub mod runner;
pub mod schedule;
pub mod tz;
pub mod tzdb;

pub use runner::{Options, run};

use std::sync::OnceLock;

type ChangeChannel = (async_channel::Sender<()>, async_channel::Receiver<()>);

fn change_channel() -> &'static ChangeChannel {
    static CHANGES: OnceLock<ChangeChannel> = OnceLock::new();
    CHANGES.get_or_init(|| async_channel::bounded(1))
}

/// Tell a scheduler running in this process that cron jobs changed, so it re-plans now.
/// Never blocks; wakes coalesce. (Another process's changes are seen on the loop's next
/// bounded wake.)
pub fn notify_jobs_changed() {
    let _ = change_channel().0.try_send(());
}

/// The receiving end of [`notify_jobs_changed`], for the scheduler loop.
pub fn jobs_changed() -> async_channel::Receiver<()> {
    change_channel().1.clone()
}
