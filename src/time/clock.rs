//! Wall-clock helpers: the one place that reads the wall clock (`now`), formatting "now"
//! for the prompt in the configured timezone, and the build-time floor used on boards
//! without a real-time clock.
//!
//! # Network time
//! A board without an RTC boots in 1970 and may have no NTP. While the system clock is
//! before the binary's build time, the `Date` header of a verified HTTPS response (the
//! model's or Telegram's, [`observe_https_date`]) gives the time: `now` is that date plus
//! the monotonic time since it was seen, for everything (cron, heartbeat, the prompt,
//! message timestamps, certificate checks) until the system clock itself passes the build
//! time. A date before the build is ignored (a broken server), and network time only ever
//! moves forward. [`source`] says which clock is in use.
//!
//! # Test hook
//! In builds with the `test-hooks` feature only (`cargo test` turns it on; release and
//! board builds never have it): `YOCTOCLAW_TEST_NOW=<unix seconds>` makes `now` return
//! that fixed time for the whole process (read once). It exists so integration tests can
//! put the binary in 1970 (a board without an RTC) and check `doctor` and cron behave; it
//! is not a user setting. Every reader of the wall clock goes through `now`, so the hook
//! moves the whole program's idea of time, log timestamps and the TLS certificate clock
//! (`provider::tls::FloorClock`) included.
//!
//! # Threads
//! Any thread: one read of the system clock (or of the test hook, read once).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;

/// The test hook's environment variable (see the module doc; `test-hooks` builds only).
#[cfg(feature = "test-hooks")]
pub const TEST_NOW_ENV: &str = "YOCTOCLAW_TEST_NOW";

/// Network time, as the Unix second at which [`mono_start`] was (`NO_NETWORK_TIME`: none).
static NETWORK_BASE: AtomicI64 = AtomicI64::new(NO_NETWORK_TIME);
const NO_NETWORK_TIME: i64 = i64::MIN;

/// The monotonic origin network time is counted from.
fn mono_start() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

fn mono_secs() -> i64 {
    i64::try_from(mono_start().elapsed().as_secs()).unwrap_or(i64::MAX / 2)
}

/// Where [`now`] takes the time from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The system clock (at or after the build time).
    System,
    /// The test hook's fixed time (builds with `test-hooks` only), at or after the build
    /// time.
    TestHook,
    /// The system clock is before the build time; an HTTPS `Date` header gave the time.
    Network,
    /// The system clock is before the build time and no HTTPS answer has come yet.
    Unset,
}

impl Source {
    /// The short name the gateway's status record carries.
    pub fn name(self) -> &'static str {
        match self {
            Source::System => "system",
            Source::TestHook => "test",
            Source::Network => "https",
            Source::Unset => "unset",
        }
    }

    /// The source a [`Source::name`] names.
    pub fn from_name(s: &str) -> Option<Source> {
        [
            Source::System,
            Source::TestHook,
            Source::Network,
            Source::Unset,
        ]
        .into_iter()
        .find(|k| k.name() == s)
    }

    /// One line for `doctor` and `status`.
    pub fn describe(self) -> &'static str {
        match self {
            Source::System => "the system clock",
            Source::TestHook => "the test clock (a test build's fixed time)",
            Source::Network => {
                "the Date of a verified HTTPS answer (the system clock is before this build)"
            }
            Source::Unset => {
                "none yet: the system clock is before this build and no HTTPS answer came"
            }
        }
    }
}

/// The system clock (or the test hook): seconds since the epoch, 0 before 1970.
fn system_now() -> (i64, bool) {
    #[cfg(feature = "test-hooks")]
    {
        static FIXED: OnceLock<Option<i64>> = OnceLock::new();
        let fixed = FIXED.get_or_init(|| {
            std::env::var(TEST_NOW_ENV)
                .ok()
                .and_then(|v| v.trim().parse::<i64>().ok())
        });
        if let Some(t) = fixed {
            return (*t, true);
        }
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs().min(i64::MAX as u64) as i64)
        .unwrap_or(0);
    (t, false)
}

/// Seconds since the Unix epoch: the system clock (or the test hook's fixed time),
/// unless that is before the build time and network time is known (see the module doc).
pub fn now() -> i64 {
    let (sys, _) = system_now();
    if sys >= build_epoch() {
        return sys;
    }
    match NETWORK_BASE.load(Ordering::Relaxed) {
        NO_NETWORK_TIME => sys,
        base => base.saturating_add(mono_secs()),
    }
}

/// The system clock alone (or the test hook), whatever [`now`] uses: for comparing times
/// between processes, which may not all have seen network time.
pub fn system_secs() -> i64 {
    system_now().0
}

/// Which clock [`now`] reads.
pub fn source() -> Source {
    let (sys, hooked) = system_now();
    if sys >= build_epoch() {
        return if hooked {
            Source::TestHook
        } else {
            Source::System
        };
    }
    if NETWORK_BASE.load(Ordering::Relaxed) == NO_NETWORK_TIME {
        Source::Unset
    } else {
        Source::Network
    }
}

/// A `Date` header (`Sun, 06 Nov 1994 08:49:37 GMT`) of an answer that came over a
/// verified TLS connection. Taken as the time while the system clock is before the build
/// time; ignored when it is itself before the build time, or behind the network time
/// already known. Returns true when it moved the clock.
pub fn observe_https_date(header: &str) -> bool {
    let (sys, _) = system_now();
    let built = build_epoch();
    if sys >= built {
        return false; // the usual case: nothing to parse
    }
    let Some(date) = super::civil::parse_http_date(header) else {
        return false;
    };
    if date < built {
        return false;
    }
    let base = date.saturating_sub(mono_secs());
    let before = NETWORK_BASE.fetch_max(base, Ordering::Relaxed);
    if before == NO_NETWORK_TIME {
        log::warn!(
            "the system clock says {}, before this binary was built: using the time of an HTTPS answer, {}, until the system clock is set",
            format_at(sys, "UTC"),
            format_at(date, "UTC")
        );
    }
    before < base
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
