//! Wall-clock helpers: formatting "now" for the prompt in the configured timezone, and the
//! build-time floor used on boards without a real-time clock.

use crate::runtime::{build_epoch, now_secs};

/// True when the wall clock is earlier than the binary's build time (a board that booted
/// without an RTC and has not synced yet).
pub fn clock_is_insane() -> bool {
    now_secs() < build_epoch()
}

/// `YYYY-MM-DD HH:MM (zone, ±HH:MM)` for the prompt.
pub fn format_now(timezone: &str) -> String {
    format_at(now_secs(), timezone)
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
