//! `GET /health`: whether the gateway is doing its job, for a monitor. `ok` (200) or
//! `degraded` (503), with what it was judged on:
//! - `telegram`: the age of the last `getUpdates` that answered (null while Telegram is
//!   off); too old (more than twice the long poll and its margin) is degraded;
//! - `provider`: the last model request, `ok`, `error` (every provider failed: degraded)
//!   or `none` yet, and its age; no error text (the route is open to anyone who reaches
//!   it);
//! - `database`: a read of the store works;
//! - `disk`: free bytes under the home; under `MIN_FREE_DISK_BYTES` (SQLite cannot
//!   commit) is degraded.
//!
//! # Threads
//! The executor (the report); [`Beat::mark`] on any thread (the Telegram poller's).
//!
//! # Blocking
//! One `statvfs` of the home and one small SQLite read: the same filesystem the executor
//! writes the database to on every turn.

use crate::json::Writer;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Free disk below this is degraded (doctor's failure threshold too).
pub const MIN_FREE_DISK_BYTES: u64 = 5 * 1024 * 1024;

/// The last time something worked, shared between threads.
#[derive(Debug)]
pub struct Beat {
    base: Instant,
    /// Milliseconds after `base`, plus one (0: never).
    at_ms: AtomicU64,
}

impl Default for Beat {
    fn default() -> Self {
        Beat {
            base: Instant::now(),
            at_ms: AtomicU64::new(0),
        }
    }
}

impl Beat {
    /// It worked now.
    pub fn mark(&self) {
        let ms = self
            .base
            .elapsed()
            .as_millis()
            .min(u128::from(u64::MAX - 1)) as u64;
        self.at_ms.store(ms + 1, Ordering::Relaxed);
    }

    /// How long ago it last worked (`None`: never).
    pub fn age(&self) -> Option<Duration> {
        match self.at_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(
                self.base
                    .elapsed()
                    .saturating_sub(Duration::from_millis(ms - 1)),
            ),
        }
    }
}

/// What the report is made of (gathered by the server).
pub struct Facts<'a> {
    pub uptime: Duration,
    /// Telegram's poll beat and the age past which it is stale; `None`: Telegram is off.
    pub telegram: Option<(&'a Beat, Duration)>,
    /// The last model request: its age and whether it was answered.
    pub provider: Option<(Duration, bool)>,
    pub database_ok: bool,
    /// Free bytes under the home (`None`: unreadable).
    pub disk_free: Option<u64>,
}

/// The status code and JSON body.
pub fn report(f: &Facts<'_>) -> (u16, String) {
    let mut ok = true;
    let mut w = Writer::with_capacity(256);
    w.begin_object();
    w.key("telegram");
    match f.telegram {
        None => w.null(),
        Some((beat, stale)) => {
            let age = beat.age();
            // Before the first poll answered, the gateway's age stands for it.
            let fresh = age.unwrap_or(f.uptime) <= stale;
            ok &= fresh;
            w.begin_object();
            w.key("ok");
            w.bool(fresh);
            w.key("last_poll_secs");
            match age {
                Some(a) => w.uint(a.as_secs()),
                None => w.null(),
            }
            w.end_object();
        }
    }
    w.key("provider");
    w.begin_object();
    let (result, age) = match f.provider {
        None => ("none", None),
        Some((age, true)) => ("ok", Some(age)),
        Some((age, false)) => ("error", Some(age)),
    };
    ok &= result != "error";
    w.key("ok");
    w.bool(result != "error");
    w.field_str("last_result", result);
    w.key("last_secs");
    match age {
        Some(a) => w.uint(a.as_secs()),
        None => w.null(),
    }
    w.end_object();
    ok &= f.database_ok;
    w.key("database");
    w.begin_object();
    w.key("ok");
    w.bool(f.database_ok);
    w.end_object();
    let disk_ok = f.disk_free.is_none_or(|b| b >= MIN_FREE_DISK_BYTES);
    ok &= disk_ok;
    w.key("disk");
    w.begin_object();
    w.key("ok");
    w.bool(disk_ok);
    w.key("free_bytes");
    match f.disk_free {
        Some(b) => w.uint(b),
        None => w.null(),
    }
    w.end_object();
    w.key("uptime_secs");
    w.uint(f.uptime.as_secs());
    w.field_str("status", if ok { "ok" } else { "degraded" });
    w.end_object();
    (if ok { 200 } else { 503 }, w.finish())
}

/// Free bytes for an unprivileged writer under `dir`.
pub fn disk_free(dir: &Path) -> Option<u64> {
    rustix::fs::statvfs(dir)
        .ok()
        .map(|s| s.f_bavail.saturating_mul(s.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    fn facts<'a>(beat: Option<&'a Beat>) -> Facts<'a> {
        Facts {
            uptime: Duration::from_secs(5),
            telegram: beat.map(|b| (b, Duration::from_secs(60))),
            provider: Some((Duration::from_secs(2), true)),
            database_ok: true,
            disk_free: Some(1 << 30),
        }
    }

    #[test]
    fn ok_until_something_fails() {
        let beat = Beat::default();
        assert_eq!(beat.age(), None);
        let (status, body) = report(&facts(Some(&beat)));
        assert_eq!(status, 200, "{body}");
        let v = json::parse_value(&body).unwrap();
        assert_eq!(json::str_at(&v, "status"), Some("ok"));
        assert!(body.contains("\"last_poll_secs\":null"), "{body}");
        beat.mark();
        assert!(beat.age().unwrap() < Duration::from_secs(1));
        let (_, body) = report(&facts(None));
        assert!(body.contains("\"telegram\":null"), "{body}");
        for broken in [
            Facts {
                provider: Some((Duration::ZERO, false)),
                ..facts(None)
            },
            Facts {
                database_ok: false,
                ..facts(None)
            },
            Facts {
                disk_free: Some(1024),
                ..facts(None)
            },
            Facts {
                uptime: Duration::from_secs(600),
                ..facts(Some(&Beat::default()))
            },
        ] {
            let (status, body) = report(&broken);
            assert_eq!(status, 503, "{body}");
            assert!(body.contains("\"status\":\"degraded\""), "{body}");
        }
    }
}
