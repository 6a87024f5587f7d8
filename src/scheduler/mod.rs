//! Scheduler: the heartbeat, cron jobs and the loop that runs them in the gateway, over
//! the pure `time` layer (civil dates, time zones, cron expressions, schedules) and the
//! job records (`crate::jobs`). It sits above the agent: it runs turns and delivers their
//! results through the outbound seam it is given.
//!
//! `heartbeat`, `jobs` and `runner` read the clock only through `time::now`, so tests
//! can fake it.
//!
//! # Bounds
//!
//! Each submodule documents its own limits (text lengths, zoneinfo size, search spans,
//! jobs per pass, sleep lengths).
//!
//! # Threads
//! Executor thread: each submodule says what it hands to other threads.

pub mod heartbeat;
pub mod jobs;
pub mod runner;

pub use runner::{Options, run};

use crate::chat::Outbound;
use crate::config::{Config, Live};
use crate::store::Db;
use std::path::PathBuf;
use std::rc::Rc;

/// What the scheduler works with besides the agent, handed over by the composition root.
pub struct Deps {
    /// The configuration in use (`config::Live`: a reload swaps it); read with
    /// [`Deps::cfg`].
    pub live: Live,
    pub db: Rc<Db>,
    /// The workspace folder (`HEARTBEAT.md`).
    pub workspace: PathBuf,
    /// Where heartbeat and cron output goes (inside the gateway: its Telegram sender).
    pub outbound: Rc<dyn Outbound>,
}

impl Deps {
    pub fn new(
        cfg: impl Into<Live>,
        db: &Rc<Db>,
        workspace: PathBuf,
        outbound: Rc<dyn Outbound>,
    ) -> Deps {
        Deps {
            live: cfg.into(),
            db: db.clone(),
            workspace,
            outbound,
        }
    }

    /// The configuration in use now.
    pub fn cfg(&self) -> Rc<Config> {
        self.live.get()
    }
}
