//! Time: the wall clock and everything computed from it, with no imports from the rest
//! of the crate (the bottom layer).
//!
//! - `clock`: the one reader of the wall clock ([`now`]), its test hook, the build-time
//!   floor ([`build_epoch`]) and "now" formatted for the prompt.
//! - `civil`: proleptic Gregorian dates and times from Unix seconds and back.
//! - `tz`: time zones: UTC, fixed offsets, POSIX TZ strings, TZif files (IANA names).
//! - `cron_expr`: 5-field cron expressions.
//! - `schedule`: a job's schedule (cron, `every N`, one-shot `at`) and its next run.
//!
//! Everything but `clock::now` is pure: times are passed in as Unix seconds (UTC), so
//! tests can fake any instant.
//!
//! # Bounds
//! Each submodule documents its own limits (text lengths, zoneinfo size, search spans).
//!
//! # Threads
//! Any thread; nothing here blocks except reading a zoneinfo file (`tz::Tz::parse`,
//! one bounded read of a small regular file).

pub mod civil;
pub mod clock;
pub mod cron_expr;
pub mod schedule;
pub mod tz;
pub mod tzdb;

pub use clock::{build_epoch, now};
