//! Wall-clock helpers: "now" for the scheduler (with a test hook), formatting "now" for the
//! prompt in the configured timezone, and the build-time floor used on boards without a
//! real-time clock.
//!
//! # Test hook
//! `YOCTOCLAW_TEST_NOW=<unix seconds>` in the environment freezes [`now`] at that instant
//! for the whole process (read once). Integration tests use it to fake a 1970 board or a
//! job whose time has passed; it is not a user setting and is not documented as one.

use crate::runtime::{build_epoch, now_secs};
use std::sync::OnceLock;

/// Name of the hidden environment variable that freezes [`now`] (tests only).
pub const TEST_NOW_ENV: &str = "YOCTOCLAW_TEST_NOW";

/// Seconds since the Unix epoch: the wall clock, or `YOCTOCLAW_TEST_NOW` when set to a
/// whole number. Scheduler, heartbeat and cron read the time only through this.
pub fn now() -> i64 {
    static FROZEN: OnceLock<Option<i64>> = OnceLock::new();
    let frozen = FROZEN.get_or_init(|| {
        std::env::var(TEST_NOW_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<i64>().ok())
    });
    frozen.unwrap_or_else(now_secs)
}

/// True when the wall clock is earlier than the binary's build time (a board that booted
/// without an RTC and has not synced yet).
pub fn clock_is_insane() -> bool {
    now() < build_epoch()
}

/// `YYYY-MM-DD HH:MM (zone, ±HH:MM)` for the prompt.
pub fn format_now(timezone: &str) -> String {
    format_at(now(), timezone)
}

pub fn format_at(utc: i64, timezone: &str) -> String {
    let (offset, label) = match crate::scheduler::tz::Tz::parse(timezone) {
        Ok(tz) => (tz.offset_at(utc), timezone.to_string()),
        Err(_) => (0, "UTC".to_string()),
    };
    let local = utc.saturating_add(offset as i64);
    let c = crate::scheduler::civil::CivilDateTime::from_unix(local);
    let sign = if offset < 0 { '-' } else { '+' };
    let off = offset.unsigned_abs();
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02} ({label}, {sign}{:02}:{:02})",
        c.year,
        c.month,
        c.day,
        c.hour,
        c.minute,
        off / 3600,
        (off % 3600) / 60
    )
}
