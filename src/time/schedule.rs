//! A cron job's schedule as the user writes it, and when the job runs next.
//!
//! Three forms (README, "Cron jobs"): a five-field cron expression
//! (`*/15 7-22 * * 1-5`, see `cron_expr`), a fixed interval (`every 15m`,
//! `every 2h`, `every 1d`, `every 90s`), or a one-shot local time
//! (`at 2026-12-01T09:00`). All times are Unix seconds passed in by the
//! caller; nothing here reads the clock.
//!
//! # Catch-up rule
//!
//! A job missed while the daemon was down runs once at start, not once per
//! missed slot. The caller stores each job's next run; on every tick it calls
//! [`catch_up`] with that value and the current time. If the job is due
//! ([`due_now`]: next run at or before now) it runs once, and the new next
//! run is computed from *now* ([`Schedule::next_after`] with `last_run =
//! now`), which skips every slot missed in between. A one-shot `at` job that
//! was missed runs once at start and then has no next run.
//!
//! # Bounds
//!
//! - Schedule text longer than [`MAX_SCHEDULE_BYTES`] is rejected.
//! - Intervals are [`MIN_EVERY_SECS`]..=[`MAX_EVERY_SECS`]; outside is an error
//!   that names the limit.
//! - Cron expressions that can never fire (`0 0 30 2 *`) are rejected here
//!   so that a job is never stored that would silently never run.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use std::fmt;

use super::civil::{CivilDateTime, CivilError};
use super::cron_expr::{CronError, CronExpr};
use super::tz::Tz;

/// Longest schedule text accepted.
pub const MAX_SCHEDULE_BYTES: usize = 256;
/// Shortest `every` interval (one minute).
pub const MIN_EVERY_SECS: u64 = 60;
/// Longest `every` interval (366 days).
pub const MAX_EVERY_SECS: u64 = 366 * 86_400;

/// The forms users can write, as a reminder inside error messages.
const FORMS: &str = "expected a cron expression like `*/15 7-22 * * 1-5`, `every 15m` \
                     (s, m, h or d), or `at 2026-12-01T09:00`";

/// Why schedule text was rejected. Each message says which form is expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScheduleError {
    /// Nothing but whitespace.
    Empty,
    /// Longer than [`MAX_SCHEDULE_BYTES`].
    TooLong,
    /// `every` without a well-formed `<number><unit>`.
    BadInterval,
    /// `every` below [`MIN_EVERY_SECS`].
    IntervalTooShort,
    /// `every` above [`MAX_EVERY_SECS`].
    IntervalTooLong,
    /// `at` with a bad date-time.
    BadAt(CivilError),
    /// Neither `every` nor `at`, and not a valid cron expression.
    BadCron(CronError),
    /// A valid cron expression whose dates never occur (`0 0 30 2 *`).
    NeverFires,
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(f, "empty schedule: {FORMS}"),
            Self::TooLong => write!(f, "schedule longer than {MAX_SCHEDULE_BYTES} bytes"),
            Self::BadInterval => f.write_str(
                "invalid interval: expected `every <number><unit>` with unit s, m, h or d, \
                 like `every 15m`",
            ),
            Self::IntervalTooShort => f.write_str("interval too short: the minimum is `every 1m`"),
            Self::IntervalTooLong => f.write_str("interval too long: the maximum is `every 366d`"),
            Self::BadAt(e) => write!(
                f,
                "invalid one-shot time: {e}; expected `at YYYY-MM-DDTHH:MM` in agent.timezone"
            ),
            Self::BadCron(e) => write!(f, "invalid schedule: {e}; {FORMS}"),
            Self::NeverFires => f.write_str(
                "cron expression never fires: that day of the month does not occur in the \
                 chosen months",
            ),
        }
    }
}

impl std::error::Error for ScheduleError {}

/// When a job runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// A five-field cron expression in local wall time.
    Cron(CronExpr),
    /// Every `secs` seconds after the previous run.
    Every { secs: u64 },
    /// Once, at a local wall time.
    At(CivilDateTime),
}

/// What a scheduler tick decided for one job; see the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    /// Run the job now (once, however many slots were missed).
    pub run_now: bool,
    /// The next run to store; `None` when the job is finished (`at`) or can
    /// no longer fire.
    pub next_run: Option<i64>,
}

/// Whether a job whose stored next run is `next_run` is due at `now`.
pub fn due_now(next_run: i64, now: i64) -> bool {
    next_run <= now
}

/// Applies the catch-up rule: a due job runs once and its next run is
/// computed from `now`, skipping all slots missed while the daemon was down.
pub fn catch_up(schedule: &Schedule, next_run: i64, now: i64, tz: &Tz) -> Tick {
    if !due_now(next_run, now) {
        return Tick {
            run_now: false,
            next_run: Some(next_run),
        };
    }
    Tick {
        run_now: true,
        next_run: schedule.next_after(now, tz, Some(now)),
    }
}

impl Schedule {
    /// Parses `every <n><s|m|h|d>`, `at YYYY-MM-DDTHH:MM[:SS]`, or else a
    /// cron expression (or `@daily`-style macro).
    pub fn parse(text: &str) -> Result<Schedule, ScheduleError> {
        if text.len() > MAX_SCHEDULE_BYTES {
            return Err(ScheduleError::TooLong);
        }
        let text = text.trim();
        if text.is_empty() {
            return Err(ScheduleError::Empty);
        }
        let (word, rest) = text
            .split_once(char::is_whitespace)
            .map_or((text, ""), |(w, r)| (w, r.trim()));
        if word.eq_ignore_ascii_case("every") {
            return parse_every(rest).map(|secs| Schedule::Every { secs });
        }
        if word.eq_ignore_ascii_case("at") {
            return CivilDateTime::parse(rest)
                .map(Schedule::At)
                .map_err(ScheduleError::BadAt);
        }
        let expr = CronExpr::parse(text).map_err(ScheduleError::BadCron)?;
        if expr.never_fires() {
            return Err(ScheduleError::NeverFires);
        }
        Ok(Schedule::Cron(expr))
    }

    /// Whether the job runs once only (`at`).
    pub fn is_one_shot(&self) -> bool {
        matches!(self, Schedule::At(_))
    }

    /// The next run strictly after `after_utc` for cron and `at` schedules
    /// (`None` once an `at` time has passed); for `every`, `last_run + secs`,
    /// or `after_utc + secs` when the job never ran. An `at` time skipped by
    /// a daylight-saving gap runs at the gap's end; one that happens twice
    /// runs at its first occurrence.
    pub fn next_after(&self, after_utc: i64, tz: &Tz, last_run: Option<i64>) -> Option<i64> {
        match self {
            Schedule::Cron(expr) => expr.next_after(after_utc, tz),
            Schedule::Every { secs } => {
                let secs = i64::try_from(*secs).unwrap_or(i64::MAX);
                Some(last_run.unwrap_or(after_utc).saturating_add(secs))
            }
            Schedule::At(local) => {
                let at = tz.fire_instant(local.to_unix());
                (at > after_utc).then_some(at)
            }
        }
    }
}

/// Parses the part after `every`: digits, optional space, unit.
fn parse_every(text: &str) -> Result<u64, ScheduleError> {
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (num, unit) = text.split_at(digits_end);
    if num.is_empty() || num.len() > 12 {
        return Err(ScheduleError::BadInterval);
    }
    let n: u64 = num.parse().map_err(|_| ScheduleError::BadInterval)?;
    let unit_secs = match unit.trim_start().to_ascii_lowercase().as_str() {
        "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600,
        "d" | "day" | "days" => 86_400,
        _ => return Err(ScheduleError::BadInterval),
    };
    let secs = n
        .checked_mul(unit_secs)
        .ok_or(ScheduleError::IntervalTooLong)?;
    if secs < MIN_EVERY_SECS {
        return Err(ScheduleError::IntervalTooShort);
    }
    if secs > MAX_EVERY_SECS {
        return Err(ScheduleError::IntervalTooLong);
    }
    Ok(secs)
}

impl fmt::Display for Schedule {
    /// Canonical text that parses back to an equal schedule.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Cron(expr) => write!(f, "{expr}"),
            Schedule::Every { secs } => {
                let (n, unit) = [(86_400, 'd'), (3600, 'h'), (60, 'm')]
                    .into_iter()
                    .find(|&(u, _)| secs % u == 0)
                    .map_or((*secs, 's'), |(u, c)| (secs / u, c));
                write!(f, "every {n}{unit}")
            }
            Schedule::At(t) => {
                write!(
                    f,
                    "at {:04}-{:02}-{:02}T{:02}:{:02}",
                    t.year, t.month, t.day, t.hour, t.minute
                )?;
                if t.second != 0 {
                    write!(f, ":{:02}", t.second)?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::tz::fixtures;

    use crate::testkit::XorShift;

    fn utc(text: &str) -> i64 {
        CivilDateTime::parse(text).expect("test date").to_unix()
    }

    fn sched(text: &str) -> Schedule {
        Schedule::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn parses_the_three_forms() {
        assert_eq!(sched("every 15m"), Schedule::Every { secs: 900 });
        assert_eq!(sched("every 2h"), Schedule::Every { secs: 7200 });
        assert_eq!(sched("every 1d"), Schedule::Every { secs: 86_400 });
        assert_eq!(sched("every 90s"), Schedule::Every { secs: 90 });
        assert_eq!(sched("  EVERY 15 minutes "), Schedule::Every { secs: 900 });
        assert_eq!(
            sched("every 366d"),
            Schedule::Every {
                secs: MAX_EVERY_SECS
            }
        );
        let at = CivilDateTime::new(2026, 12, 1, 9, 0, 0).expect("valid");
        assert_eq!(sched("at 2026-12-01T09:00"), Schedule::At(at));
        assert!(sched("at 2026-12-01T09:00").is_one_shot());
        assert!(!sched("every 1h").is_one_shot());
        assert!(matches!(sched("*/15 7-22 * * 1-5"), Schedule::Cron(_)));
        assert!(matches!(sched("@daily"), Schedule::Cron(_)));
    }

    #[test]
    fn rejects_bad_text_saying_what_is_expected() {
        let cases = [
            ("", "empty schedule: expected a cron expression like"),
            ("every", "expected `every <number><unit>`"),
            ("every 15", "expected `every <number><unit>`"),
            ("every 15x", "with unit s, m, h or d"),
            ("every -5m", "expected `every <number><unit>`"),
            ("every 30s", "interval too short: the minimum is `every 1m`"),
            ("every 0m", "interval too short"),
            (
                "every 367d",
                "interval too long: the maximum is `every 366d`",
            ),
            ("every 999999999999d", "interval too long"),
            ("at tomorrow", "expected `at YYYY-MM-DDTHH:MM`"),
            (
                "at 2026-02-30T09:00",
                "out of range; expected `at YYYY-MM-DDTHH:MM`",
            ),
            ("at", "invalid one-shot time"),
            ("hello", "expected 5 fields"),
            ("hello", "`every 15m`"),
            ("61 * * * *", "minute value 61 is outside 0-59"),
            ("0 0 30 2 *", "never fires"),
        ];
        for (text, msg) in cases {
            let err = Schedule::parse(text).expect_err(text);
            assert!(err.to_string().contains(msg), "{text}: {err}");
        }
        assert_eq!(
            Schedule::parse(&"x".repeat(300)),
            Err(ScheduleError::TooLong)
        );
    }

    #[test]
    fn display_is_canonical_and_round_trips() {
        let cases = [
            ("every 15m", "every 15m"),
            ("every 120s", "every 2m"),
            ("every 90 s", "every 90s"),
            ("every 48h", "every 2d"),
            ("every 1440m", "every 1d"),
            ("at 2026-12-01T09:00", "at 2026-12-01T09:00"),
            ("at 2026-12-01t09:00:30", "at 2026-12-01T09:00:30"),
            ("*/15 7-22 * * mon-fri", "*/15 7-22 * * 1-5"),
            ("@hourly", "0 * * * *"),
        ];
        for (text, shown) in cases {
            let s = sched(text);
            assert_eq!(s.to_string(), shown, "{text}");
            assert_eq!(sched(shown), s);
        }
        let mut rng = XorShift(77);
        for _ in 0..2000 {
            let s = Schedule::Every {
                secs: MIN_EVERY_SECS + rng.below(MAX_EVERY_SECS - MIN_EVERY_SECS + 1),
            };
            assert_eq!(sched(&s.to_string()), s);
            let t = CivilDateTime::from_unix(rng.below(253_402_300_799) as i64);
            let s = Schedule::At(t);
            assert_eq!(sched(&s.to_string()), s);
        }
    }

    #[test]
    fn every_counts_from_the_last_run() {
        let tz = Tz::Utc;
        let s = sched("every 15m");
        assert_eq!(s.next_after(1000, &tz, Some(500)), Some(1400));
        assert_eq!(s.next_after(1000, &tz, None), Some(1900));
        assert_eq!(s.next_after(i64::MAX - 10, &tz, None), Some(i64::MAX));
    }

    #[test]
    fn at_fires_once_and_handles_dst() {
        let berlin = fixtures::berlin(2025..=2028);
        let s = sched("at 2026-12-01T09:00");
        let when = utc("2026-12-01T08:00");
        assert_eq!(
            s.next_after(utc("2026-06-01T00:00"), &berlin, None),
            Some(when)
        );
        assert_eq!(s.next_after(when - 1, &berlin, None), Some(when));
        assert_eq!(s.next_after(when, &berlin, Some(when)), None);
        assert_eq!(s.next_after(when + 1, &berlin, None), None);
        // Skipped by spring-forward: the end of the gap.
        let gap = sched("at 2026-03-29T02:30");
        assert_eq!(
            gap.next_after(0, &berlin, None),
            Some(utc("2026-03-29T01:00"))
        );
        // Repeated on fall-back: the first occurrence.
        let twice = sched("at 2026-10-25T02:30");
        assert_eq!(
            twice.next_after(0, &berlin, None),
            Some(utc("2026-10-25T00:30"))
        );
        assert_eq!(
            twice.next_after(utc("2026-10-25T00:30"), &berlin, None),
            None
        );
        assert_eq!(
            s.next_after(0, &Tz::Fixed(-3600), None),
            Some(utc("2026-12-01T10:00"))
        );
    }

    #[test]
    fn missed_jobs_run_once_at_start() {
        let tz = fixtures::berlin(2025..=2028);
        let hourly = sched("0 * * * *");
        // Stored next run 10:00Z; the daemon was down until 15:20Z.
        let down_until = utc("2026-06-01T15:20");
        let tick = catch_up(&hourly, utc("2026-06-01T10:00"), down_until, &tz);
        assert_eq!(
            tick,
            Tick {
                run_now: true,
                next_run: Some(utc("2026-06-01T16:00"))
            }
        );
        let tick = catch_up(&hourly, utc("2026-06-01T16:00"), down_until + 60, &tz);
        assert_eq!(
            tick,
            Tick {
                run_now: false,
                next_run: Some(utc("2026-06-01T16:00"))
            }
        );

        let every = sched("every 15m");
        let tick = catch_up(&every, utc("2026-06-01T10:00"), down_until, &tz);
        assert_eq!(
            tick,
            Tick {
                run_now: true,
                next_run: Some(down_until + 900)
            }
        );

        let once = sched("at 2026-06-01T12:00");
        let due = once
            .next_after(utc("2026-05-01T00:00"), &tz, None)
            .expect("future");
        assert_eq!(
            catch_up(&once, due, down_until, &tz),
            Tick {
                run_now: true,
                next_run: None
            }
        );
        assert_eq!(
            catch_up(&once, due, due - 1, &tz),
            Tick {
                run_now: false,
                next_run: Some(due)
            }
        );
        assert!(due_now(5, 5) && due_now(4, 5) && !due_now(6, 5));
    }

    #[test]
    fn parse_never_panics_on_random_text() {
        let words = [
            "every",
            "at",
            "@daily",
            "15m",
            "2026-12-01T09:00",
            "*",
            "*/5",
            "1-5",
            "mon",
            "90s",
            "d",
        ];
        let alphabet = b"0123456789*/-,:@Tdhms \t\xe2\x82\xac";
        let mut rng = XorShift(3);
        for _ in 0..20_000 {
            let text = if rng.below(2) == 0 {
                (0..1 + rng.below(6))
                    .map(|_| words[rng.below(words.len() as u64) as usize])
                    .collect::<Vec<_>>()
                    .join(" ")
            } else {
                let len = rng.below(30) as usize;
                let bytes: Vec<u8> = (0..len)
                    .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                    .collect();
                String::from_utf8_lossy(&bytes).into_owned()
            };
            if let Ok(s) = Schedule::parse(&text) {
                assert_eq!(sched(&s.to_string()), s, "{text}");
                for t in [i64::MIN, 0, i64::MAX] {
                    let _ = s.next_after(t, &Tz::Utc, Some(t));
                }
            }
        }
    }
}
