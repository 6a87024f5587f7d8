//! `yoctoclaw audit [--since] [--tool] [--channel] [--limit]`: the audit trail of tool
//! calls as a plain table, newest last (`store::audit`).
//!
//! Exit statuses follow the CLI's: 0 done, 1 a database error, 2 bad usage (a `--since`
//! that is neither a duration nor a date, a `--limit` of 0).
//!
//! # Bounds
//! At most `--limit` rows (default `DEFAULT_AUDIT_LIST_ROWS`, at most
//! `MAX_AUDIT_LIST_ROWS`); each field is already capped in the store.
//!
//! # Threads
//! Main thread: one command, SQLite and stdout.

use super::AppError;
use crate::args::AuditCmd;
use crate::limits::{DEFAULT_AUDIT_LIST_ROWS, MAX_AUDIT_LIST_ROWS};
use crate::store::Db;
use crate::store::audit::{Entry, Filter};
use crate::time::civil::{CivilDateTime, SECS_PER_DAY};
use std::io::Write;

/// Print the rows `cmd` asks for to `out`.
pub fn run(db: &Db, cmd: &AuditCmd, now: i64, out: &mut impl Write) -> Result<(), AppError> {
    let since = match cmd.since.as_deref() {
        Some(s) => Some(parse_since(s, now).ok_or_else(|| {
            AppError::Usage(format!(
                "--since {s:?} is neither a duration (30m, 12h, 7d) nor a UTC date (2026-03-01, 2026-03-01T14:00)"
            ))
        })?),
        None => None,
    };
    let limit = cmd.limit.unwrap_or(DEFAULT_AUDIT_LIST_ROWS);
    if limit == 0 || limit > MAX_AUDIT_LIST_ROWS {
        return Err(AppError::Usage(format!(
            "--limit must be 1 to {MAX_AUDIT_LIST_ROWS}"
        )));
    }
    let filter = Filter {
        since,
        tool: cmd.tool.clone(),
        channel: cmd.channel.clone(),
        limit,
    };
    let rows = db
        .audit_list(&filter)
        .map_err(|e| AppError::Runtime(format!("cannot read the audit trail: {e}")))?;
    let io = |e: std::io::Error| AppError::Runtime(format!("cannot write the output: {e}"));
    let r = print(&rows, out);
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(io),
    }
}

fn print(rows: &[Entry], out: &mut impl Write) -> std::io::Result<()> {
    if rows.is_empty() {
        return writeln!(out, "No tool calls recorded.");
    }
    // The row format's widths below: 19, 9, 8, 24, 20, then 7 and 7 right-aligned.
    writeln!(
        out,
        "time (UTC)           channel    verdict   tool                      session                    ms    bytes  arguments / error"
    )?;
    for e in rows {
        let t = CivilDateTime::from_unix(e.at);
        let time = format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            t.year, t.month, t.day, t.hour, t.minute, t.second
        );
        let mut last = one_line(&e.args);
        if let Some(err) = &e.error {
            last.push_str(" / ");
            last.push_str(&one_line(err));
        }
        writeln!(
            out,
            "{time:<19}  {:<9}  {:<8}  {:<24}  {:<20}  {:>7}  {:>7}  {last}",
            one_line(&e.channel),
            e.verdict.as_str(),
            one_line(&e.tool),
            one_line(&e.session),
            e.ms,
            e.bytes,
        )?;
    }
    Ok(())
}

/// `s` with control characters shown as spaces, so a row stays one line.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `30m`, `12h`, `7d`, `90s` back from `now`; or `YYYY-MM-DD` (midnight UTC) or
/// `YYYY-MM-DDTHH:MM[:SS]` (UTC).
pub fn parse_since(s: &str, now: i64) -> Option<i64> {
    let s = s.trim();
    if let Some(unit) = s.chars().last().filter(|c| c.is_ascii_alphabetic()) {
        let n: i64 = s[..s.len() - 1].parse().ok().filter(|n| *n >= 0)?;
        let secs = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => SECS_PER_DAY,
            'w' => 7 * SECS_PER_DAY,
            _ => return None,
        };
        return Some(now.saturating_sub(n.saturating_mul(secs)));
    }
    // A date alone is its midnight.
    let at = if s.len() == 10 {
        [s, "T00:00"].concat()
    } else {
        s.to_string()
    };
    CivilDateTime::parse(&at).ok().map(|t| t.to_unix())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_durations_and_utc_dates() {
        let now = 1_764_000_000;
        assert_eq!(parse_since("30m", now), Some(now - 1800));
        assert_eq!(parse_since("7d", now), Some(now - 7 * 86_400));
        assert_eq!(parse_since("2025-11-24", now), Some(1_763_942_400));
        assert_eq!(
            parse_since("2025-11-24T16:00", now),
            Some(1_763_942_400 + 16 * 3600)
        );
        for bad in [
            "",
            "m",
            "-5m",
            "5y",
            "2025-13-01",
            "2025-02-30",
            "yesterday",
            "２h",
        ] {
            assert_eq!(parse_since(bad, now), None, "{bad}");
        }
    }
}
