//! Logging to stderr, one compact line per record, every line passed through the
//! credential scrubber (the bot token is inside every Bot API URL; an API key may be
//! echoed back in a provider error).
//!
//! Level: `log_level` from the config, or `RUST_LOG` (a single level, or
//! `level,crate=level` pairs; only the first bare level and our crate's entry are used).
//! HTTP and TLS internals are held at `warn`: their debug output carries URLs and headers.
//!
//! A hand-written `log::Log` replaces simple_logger: it cannot scrub lines, and it logs
//! to stdout unless a feature is enabled (docs/DECISIONS.md).

use crate::security::scrub::scrub;
use log::{Level, LevelFilter, Log, Metadata, Record};
use std::io::Write;

struct Logger {
    level: LevelFilter,
}

/// Crates whose debug output may carry URLs or headers.
const NOISY: &[&str] = &["ureq", "ureq_proto", "rustls", "async_io", "polling"];

impl Log for Logger {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        if m.level() > self.level {
            return false;
        }
        let root = m.target().split("::").next().unwrap_or("");
        !(NOISY.contains(&root) && m.level() > Level::Warn)
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let ts = timestamp();
        let msg = record.args().to_string();
        let target = record.target();
        let line = if target.starts_with("yoctoclaw") {
            format!("{ts} {:<5} {}\n", record.level(), scrub(&msg))
        } else {
            format!("{ts} {:<5} [{target}] {}\n", record.level(), scrub(&msg))
        };
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn flush(&self) {}
}

fn timestamp() -> String {
    let now = crate::runtime::now_secs();
    let c = crate::scheduler::civil::CivilDateTime::from_unix(now);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

/// Parse a level word.
pub fn parse_level(s: &str) -> Option<LevelFilter> {
    Some(match s.trim().to_ascii_lowercase().as_str() {
        "off" => LevelFilter::Off,
        "error" => LevelFilter::Error,
        "warn" | "warning" => LevelFilter::Warn,
        "info" => LevelFilter::Info,
        "debug" | "trace" => LevelFilter::Debug,
        _ => return None,
    })
}

/// The level `RUST_LOG` asks for, if any.
pub fn level_from_rust_log(v: &str) -> Option<LevelFilter> {
    let mut bare = None;
    for part in v.split(',') {
        match part.split_once('=') {
            Some((k, lvl)) if k.trim() == "yoctoclaw" => return parse_level(lvl),
            Some(_) => {}
            None => bare = bare.or_else(|| parse_level(part)),
        }
    }
    bare
}

/// Install the logger (once; later calls only change the level).
pub fn init(level: LevelFilter) {
    static LOGGER: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    LOGGER.get_or_init(|| {
        let _ = log::set_boxed_logger(Box::new(Logger {
            level: LevelFilter::Debug,
        }));
    });
    log::set_max_level(level);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_log_forms() {
        assert_eq!(level_from_rust_log("debug"), Some(LevelFilter::Debug));
        assert_eq!(
            level_from_rust_log("warn,yoctoclaw=info"),
            Some(LevelFilter::Info)
        );
        assert_eq!(level_from_rust_log("ureq=debug"), None);
        assert_eq!(level_from_rust_log("bogus"), None);
    }
}
