//! Wall-clock helpers: the one place that reads the wall clock (`now`), formatting "now"
//! for the prompt in the configured timezone, and the build-time floor used on boards
//! without a real-time clock.
//!
//! # Test hook
//! `YOCTOCLAW_TEST_NOW=<unix seconds>` makes `now` return that fixed time for the whole
//! process (read once). It exists so integration tests can put the binary in 1970 (a board
//! without an RTC) and check `doctor` and cron behave; it is not a user setting. Every
//! reader of the wall clock goes through `now` , so the
//! hook moves the whole program's idea of time, log timestamps included. TLS certificate
//! checks use the real clock.
//!
//! # Threads
//! Any thread: one read of the system clock (or of the test hook, read once).

use std::sync::OnceLock;

/// The test hook's environment variable (see the module doc).
pub const TEST_NOW_ENV: &str = "YOCTOCLAW_TEST_NOW";

/// Seconds since the Unix epoch by the wall clock (0 if the clock is before 1970), or the
/// fixed `YOCTOCLAW_TEST_NOW` when set to an integer.
pub fn now() -> i64 {
    static FIXED: OnceLock<Option<i64>> = OnceLock::new();
    let fixed = FIXED.get_or_init(|| {
        std::env::var(TEST_NOW_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<i64>().ok())
    });
    if let Some(t) = fixed {
        return *t;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs().min(i64::MAX as u64) as i64)
        .unwrap_or(0)
}

/// The binary's build time (Unix seconds, from `build.rs`): the floor for certificate
/// checks and the line below which the wall clock is taken as unset (no RTC).
pub fn build_epoch() -> i64 {
    env!("YOCTOCLAW_BUILD_EPOCH").parse().unwrap_or(0)
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
    let (offset, label) = match super::tz::Tz::parse(timezone) {
        Ok(tz) => (tz.offset_at(utc), timezone.to_string()),
        Err(_) => (0, "UTC".to_string()),
    };
    let local = utc.saturating_add(offset as i64);
    let c = super::civil::CivilDateTime::from_unix(local);
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
