//! Logging to stderr (or a rotated file), one compact line per record, every line passed
//! through the credential scrubber (the bot token is inside every Bot API URL; an API key
//! may be echoed back in a provider error).
//!
//! Format: `2026-05-01T12:00:00Z INFO  message` (UTC wall time; `[target]` for records
//! from other crates). Newlines inside a message are written as `\n`, so one record is
//! always one line.
//!
//! `--log-file PATH` (for boards without journald) sends the lines to `PATH` instead of
//! stderr. When the next line would take `PATH` past `LOG_FILE_MAX_BYTES`, `PATH` is
//! renamed to `PATH.1` (replacing the older one) and a fresh `PATH` is started, so the
//! logs never take more than two files' worth of the SD card. If the file cannot be
//! opened or written, lines go to stderr again (with one note saying why). One process
//! per log file is assumed: two writers would each count only their own lines.
//!
//! Level: `log_level` from the config, or `RUST_LOG` (a single level, or
//! `level,crate=level` pairs; only the first bare level and our crate's entry are used).
//! HTTP and TLS internals are held at `warn`: their debug output carries URLs and headers.
//!
//! A hand-written `log::Log` replaces simple_logger: it cannot scrub lines, and it logs
//! to stdout unless a feature is enabled (docs/DECISIONS.md).
//!
//! # Bounds
//! A line is at most `MAX_LOG_LINE_BYTES` (longer messages are cut with `…`); the log
//! file at most `LOG_FILE_MAX_BYTES` plus its one previous generation `PATH.1`.
//!
//! # Threads
//! Any thread: every thread logs; the lock keeps each line whole.
//!
//! # Blocking
//! Each record is one `write` to stderr or the file, under a lock.

use crate::security::scrub::scrub;
use log::{Level, LevelFilter, Log, Metadata, Record};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Largest log file before it is rotated to `PATH.1`.
pub const LOG_FILE_MAX_BYTES: u64 = 1024 * 1024;
/// Longest log line; a longer message is cut.
pub const MAX_LOG_LINE_BYTES: usize = 4096;

/// The log file, when `--log-file` was given and works.
static SINK: Mutex<Option<FileSink>> = Mutex::new(None);

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
        let msg = one_line(&scrub(&msg), MAX_LOG_LINE_BYTES);
        let target = record.target();
        let line = if target.starts_with("yoctoclaw") {
            format!("{ts} {:<5} {msg}\n", record.level())
        } else {
            format!("{ts} {:<5} [{target}] {msg}\n", record.level())
        };
        if !write_to_file(line.as_bytes()) {
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
    }

    fn flush(&self) {}
}

/// Write to the log file if there is one; false means "use stderr".
fn write_to_file(line: &[u8]) -> bool {
    let Ok(mut sink) = SINK.lock() else {
        return false;
    };
    let Some(file) = sink.as_mut() else {
        return false;
    };
    match file.write_line(line) {
        Ok(()) => true,
        Err(e) => {
            let note = format!(
                "yoctoclaw: cannot write the log file {}: {e}; logging to stderr from now on\n",
                file.path.display()
            );
            let _ = std::io::stderr().lock().write_all(note.as_bytes());
            *sink = None;
            false
        }
    }
}

/// Send log lines to `path` (rotated at `max_bytes`) instead of stderr. On error nothing
/// changes and the caller should say so.
pub fn log_to_file(path: &Path, max_bytes: u64) -> std::io::Result<()> {
    let sink = FileSink::open(path, max_bytes)?;
    if let Ok(mut s) = SINK.lock() {
        *s = Some(sink);
    }
    Ok(())
}

/// A log file with one previous generation (`PATH.1`).
#[derive(Debug)]
pub struct FileSink {
    path: PathBuf,
    file: File,
    size: u64,
    max_bytes: u64,
}

impl FileSink {
    /// Open `path` for appending (created with mode 0600).
    pub fn open(path: &Path, max_bytes: u64) -> std::io::Result<FileSink> {
        let file = open_append(path)?;
        let size = file.metadata()?.len();
        Ok(FileSink {
            path: path.to_path_buf(),
            file,
            size,
            max_bytes: max_bytes.max(1),
        })
    }

    /// Append one line, rotating first when it would take the file past the bound.
    pub fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        let len = line.len() as u64;
        if self.size > 0 && self.size.saturating_add(len) > self.max_bytes {
            self.rotate()?;
        }
        self.file.write_all(line)?;
        self.size = self.size.saturating_add(len);
        Ok(())
    }

    /// `PATH` becomes `PATH.1` (replacing it); a fresh `PATH` is started.
    fn rotate(&mut self) -> std::io::Result<()> {
        std::fs::rename(&self.path, previous_generation(&self.path))?;
        self.file = open_append(&self.path)?;
        self.size = 0;
        Ok(())
    }
}

/// `PATH.1`.
pub fn previous_generation(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_os_string();
    p.push(".1");
    PathBuf::from(p)
}

fn open_append(path: &Path) -> std::io::Result<File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)
}

/// One line: line breaks written as `\n`/`\r`, other control characters as `?`, cut at
/// `max` bytes on a character boundary.
fn one_line(msg: &str, max: usize) -> String {
    let mut out = String::with_capacity(msg.len().min(max) + 3);
    for c in msg.chars() {
        if out.len() + c.len_utf8() + 2 > max {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push(' '),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

fn timestamp() -> String {
    let now = crate::time::now();
    let c = crate::time::civil::CivilDateTime::from_unix(now);
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

    #[test]
    fn messages_become_one_bounded_line() {
        assert_eq!(one_line("a\nb\r\tc\u{7}", 100), "a\\nb\\r c?");
        let long = "é".repeat(5000);
        let cut = one_line(&long, MAX_LOG_LINE_BYTES);
        assert!(cut.len() <= MAX_LOG_LINE_BYTES + '…'.len_utf8());
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn the_log_file_rotates_into_two_bounded_generations() {
        let dir = std::env::temp_dir().join(format!("yc-logrot-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("yoctoclaw.log");
        let max = 4096;
        let mut sink = FileSink::open(&path, max).unwrap();
        let mut longest = 0;
        for i in 0..2000 {
            let line = format!(
                "2026-01-01T00:00:00Z INFO  line {i} {}\n",
                "x".repeat(i % 90)
            );
            longest = longest.max(line.len() as u64);
            sink.write_line(line.as_bytes()).unwrap();
        }
        let cur = std::fs::metadata(&path).unwrap().len();
        let old = std::fs::metadata(previous_generation(&path)).unwrap().len();
        assert!(cur <= max + longest, "{cur}");
        assert!(old <= max + longest, "{old}");
        assert!(old > max - longest, "the old generation was full: {old}");
        // The newest line is in the current file, and nothing else is in the folder.
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("line 1999 "), "{text}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
        // Reopening continues the count from the file's size.
        drop(sink);
        let mut sink = FileSink::open(&path, max).unwrap();
        assert_eq!(sink.size, cur);
        sink.write_line(&vec![b'y'; 5000]).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unopenable_log_file_is_an_error_not_a_panic() {
        assert!(FileSink::open(Path::new("/nonexistent-dir/x.log"), 10).is_err());
        assert!(log_to_file(Path::new("/nonexistent-dir/x.log"), 10).is_err());
    }
}
