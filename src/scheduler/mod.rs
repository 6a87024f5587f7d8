//! Scheduler time layer: civil dates, time zones, cron expressions and schedules.
//!
//! Pure functions only: every time is passed in as Unix seconds (UTC), so the
//! cron runner decides when to read the clock and tests never depend on it.
//!
//! # Bounds
//!
//! Each submodule documents its own limits (text lengths, zoneinfo size,
//! search spans).

pub mod civil;
pub mod cron_expr;
pub mod schedule;
pub mod tz;
