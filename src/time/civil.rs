//! Calendar arithmetic: a wall-clock date and time with no time zone attached.
//!
//! The scheduler reasons in local wall time (cron fields, `at` times) and in
//! Unix seconds (what is stored and compared). This module converts between
//! the two "as if UTC" with Howard Hinnant's days-from-civil algorithms; the
//! time zone layer (`tz`) adds the offset. No clock is read here.
//!
//! # Bounds
//!
//! - Years are limited to [`MIN_YEAR`]..=[`MAX_YEAR`]. [`CivilDateTime::from_unix`]
//!   clamps any `i64` into that range ([`MIN_UNIX_SECS`]..=[`MAX_UNIX_SECS`]), so
//!   no input overflows. All arithmetic on public fields is done in `i64`, so
//!   even an out-of-range value built by hand cannot overflow.
//! - [`CivilDateTime::parse`] accepts at most [`MAX_DATETIME_TEXT_BYTES`] bytes
//!   and only four-digit years.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use std::fmt;

/// Earliest year represented; earlier instants clamp to its first second.
pub const MIN_YEAR: i32 = -9999;
/// Latest year represented; later instants clamp to its last second.
pub const MAX_YEAR: i32 = 9999;
/// Seconds in one civil day (no leap seconds, as in Unix time).
pub const SECS_PER_DAY: i64 = 86_400;
/// Longest text [`CivilDateTime::parse`] looks at (`YYYY-MM-DDTHH:MM:SS` is 19).
pub const MAX_DATETIME_TEXT_BYTES: usize = 32;

/// Unix seconds of `-9999-01-01T00:00:00`, the earliest representable instant.
pub const MIN_UNIX_SECS: i64 = -377_705_116_800;
/// Unix seconds of `9999-12-31T23:59:59`, the latest representable instant.
pub const MAX_UNIX_SECS: i64 = 253_402_300_799;

/// A calendar date and time of day without a zone (proleptic Gregorian).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CivilDateTime {
    pub year: i32,
    pub month: u8,
    pub day: u8,
    pub hour: u8,
    pub minute: u8,
    pub second: u8,
}

/// Why a date-time text was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CivilError {
    /// The text is not `YYYY-MM-DDTHH:MM[:SS]`.
    Format,
    /// A field is outside its range (month 13, February 30, hour 24, ...).
    Range,
}

impl fmt::Display for CivilError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Format => f.write_str("expected YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS"),
            Self::Range => f.write_str("date or time field out of range"),
        }
    }
}

impl std::error::Error for CivilError {}

/// Whether `year` is a Gregorian leap year.
pub fn is_leap_year(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// Days in `month` (1-12) of `year`; 0 for a month outside 1-12.
pub fn days_in_month(year: i64, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap_year(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Days since 1970-01-01 of a civil date (Hinnant's `days_from_civil`).
///
/// Exact for valid dates; for out-of-range months or days the result is
/// meaningless but never overflows (year is an `i32` widened to `i64`).
pub fn days_from_civil(year: i32, month: u8, day: u8) -> i64 {
    let m = i64::from(month);
    let d = i64::from(day);
    let y = i64::from(year) - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400; // [0, 399]
    let mp = (m + 9) % 12; // March = 0
    let doy = (153 * mp + 2) / 5 + d - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

/// Civil date `(year, month, day)` of a day count since 1970-01-01
/// (Hinnant's `civil_from_days`). The day count is clamped to the years
/// [`MIN_YEAR`]..=[`MAX_YEAR`].
pub fn civil_from_days(days: i64) -> (i32, u8, u8) {
    let z = days.clamp(
        MIN_UNIX_SECS.div_euclid(SECS_PER_DAY),
        MAX_UNIX_SECS.div_euclid(SECS_PER_DAY),
    ) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097; // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let day = doy - (153 * mp + 2) / 5 + 1; // [1, 31]
    let month = if mp < 10 { mp + 3 } else { mp - 9 }; // [1, 12]
    let year = yoe + era * 400 + i64::from(month <= 2);
    // The clamp above keeps the year within MIN_YEAR..=MAX_YEAR, so these
    // conversions cannot fail; the fallbacks only keep the code panic-free.
    (
        i32::try_from(year).unwrap_or(MAX_YEAR),
        u8::try_from(month).unwrap_or(1),
        u8::try_from(day).unwrap_or(1),
    )
}

/// Weekday of a day count since 1970-01-01: 0 = Sunday ... 6 = Saturday.
pub fn weekday_from_days(days: i64) -> u8 {
    // 1970-01-01 was a Thursday (4). rem_euclid keeps the result in 0..7.
    u8::try_from((days.rem_euclid(7) + 4) % 7).unwrap_or(0)
}

impl CivilDateTime {
    /// A validated date-time; `None` when any field is out of range.
    pub fn new(year: i32, month: u8, day: u8, hour: u8, minute: u8, second: u8) -> Option<Self> {
        let dt = Self {
            year,
            month,
            day,
            hour,
            minute,
            second,
        };
        dt.is_valid().then_some(dt)
    }

    /// Whether every field is within its range (including the day of month).
    pub fn is_valid(&self) -> bool {
        (MIN_YEAR..=MAX_YEAR).contains(&self.year)
            && (1..=12).contains(&self.month)
            && self.day >= 1
            && self.day <= days_in_month(i64::from(self.year), self.month)
            && self.hour < 24
            && self.minute < 60
            && self.second < 60
    }

    /// The civil date-time of Unix seconds read as UTC; clamped to
    /// [`MIN_UNIX_SECS`]..=[`MAX_UNIX_SECS`].
    pub fn from_unix(secs: i64) -> Self {
        let secs = secs.clamp(MIN_UNIX_SECS, MAX_UNIX_SECS);
        let days = secs.div_euclid(SECS_PER_DAY);
        let tod = secs.rem_euclid(SECS_PER_DAY); // [0, 86399]
        let (year, month, day) = civil_from_days(days);
        Self {
            year,
            month,
            day,
            hour: u8::try_from(tod / 3600).unwrap_or(0),
            minute: u8::try_from(tod % 3600 / 60).unwrap_or(0),
            second: u8::try_from(tod % 60).unwrap_or(0),
        }
    }

    /// Unix seconds of this date-time read as UTC. Never overflows, even for
    /// hand-built out-of-range fields.
    pub fn to_unix(&self) -> i64 {
        self.days() * SECS_PER_DAY
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second)
    }

    /// Days since 1970-01-01 of the date part.
    pub fn days(&self) -> i64 {
        days_from_civil(self.year, self.month, self.day)
    }

    /// Weekday of the date part: 0 = Sunday ... 6 = Saturday.
    pub fn weekday(&self) -> u8 {
        weekday_from_days(self.days())
    }

    /// Parses `YYYY-MM-DDTHH:MM` or `YYYY-MM-DDTHH:MM:SS` (a lowercase `t` is
    /// accepted too). Surrounding whitespace is not.
    pub fn parse(text: &str) -> Result<Self, CivilError> {
        let b = text.as_bytes();
        if b.len() != 16 && b.len() != 19 {
            return Err(CivilError::Format);
        }
        let sep_ok = b.get(4) == Some(&b'-')
            && b.get(7) == Some(&b'-')
            && matches!(b.get(10), Some(b'T' | b't'))
            && b.get(13) == Some(&b':')
            && (b.len() == 16 || b.get(16) == Some(&b':'));
        if !sep_ok {
            return Err(CivilError::Format);
        }
        let year = digits(b, 0, 4)?;
        let month = digits(b, 5, 2)?;
        let day = digits(b, 8, 2)?;
        let hour = digits(b, 11, 2)?;
        let minute = digits(b, 14, 2)?;
        let second = if b.len() == 19 { digits(b, 17, 2)? } else { 0 };
        let narrow = |v: u32| u8::try_from(v).map_err(|_| CivilError::Range);
        Self::new(
            i32::try_from(year).map_err(|_| CivilError::Range)?,
            narrow(month)?,
            narrow(day)?,
            narrow(hour)?,
            narrow(minute)?,
            narrow(second)?,
        )
        .ok_or(CivilError::Range)
    }
}

/// Reads `len` ASCII digits of `b` starting at `at`.
fn digits(b: &[u8], at: usize, len: usize) -> Result<u32, CivilError> {
    let slice = b.get(at..at + len).ok_or(CivilError::Format)?;
    slice.iter().try_fold(0u32, |acc, &c| {
        if c.is_ascii_digit() {
            Ok(acc * 10 + u32::from(c - b'0'))
        } else {
            Err(CivilError::Format)
        }
    })
}

impl fmt::Display for CivilDateTime {
    /// `YYYY-MM-DDTHH:MM:SS` (years outside 0-9999 get a sign and more digits).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if (0..=9999).contains(&self.year) {
            write!(f, "{:04}", self.year)?;
        } else {
            write!(f, "{:+05}", self.year)?;
        }
        write!(
            f,
            "-{:02}-{:02}T{:02}:{:02}:{:02}",
            self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testkit::XorShift;

    #[test]
    fn known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        let dt = CivilDateTime::from_unix(1_764_579_600);
        assert_eq!(dt.to_string(), "2025-12-01T09:00:00");
        assert_eq!(dt.weekday(), 1); // a Monday
        assert_eq!(CivilDateTime::from_unix(0).weekday(), 4); // Thursday
        assert_eq!(days_in_month(2024, 2), 29);
        assert_eq!(days_in_month(2100, 2), 28);
        assert_eq!(days_in_month(2000, 2), 29);
    }

    #[test]
    fn limits_match_constants() {
        let lo = CivilDateTime::new(MIN_YEAR, 1, 1, 0, 0, 0).map(|d| d.to_unix());
        let hi = CivilDateTime::new(MAX_YEAR, 12, 31, 23, 59, 59).map(|d| d.to_unix());
        assert_eq!(lo, Some(MIN_UNIX_SECS));
        assert_eq!(hi, Some(MAX_UNIX_SECS));
        assert_eq!(CivilDateTime::from_unix(i64::MIN).to_unix(), MIN_UNIX_SECS);
        assert_eq!(CivilDateTime::from_unix(i64::MAX).to_unix(), MAX_UNIX_SECS);
    }

    #[test]
    fn round_trip_random_instants() {
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..5000 {
            let secs =
                (rng.next() as i64).rem_euclid(MAX_UNIX_SECS - MIN_UNIX_SECS) + MIN_UNIX_SECS;
            let dt = CivilDateTime::from_unix(secs);
            assert!(dt.is_valid(), "{dt:?}");
            assert_eq!(dt.to_unix(), secs);
        }
        // Any i64 is safe, including hand-built garbage fields.
        for _ in 0..5000 {
            let secs = rng.next() as i64;
            let dt = CivilDateTime::from_unix(secs);
            assert!(dt.is_valid());
            let junk = CivilDateTime {
                year: rng.next() as i32,
                month: rng.next() as u8,
                day: rng.next() as u8,
                hour: rng.next() as u8,
                minute: rng.next() as u8,
                second: rng.next() as u8,
            };
            let _ = junk.to_unix();
            let _ = junk.weekday();
            let _ = junk.to_string();
        }
    }

    #[test]
    fn weekdays_advance_daily() {
        let mut prev = weekday_from_days(-800_000);
        for d in -799_999..800_000 {
            let w = weekday_from_days(d);
            assert_eq!(w, (prev + 1) % 7);
            prev = w;
        }
    }

    #[test]
    fn parse_and_display() {
        let dt = CivilDateTime::parse("2026-12-01T09:00");
        assert_eq!(
            dt,
            Ok(CivilDateTime::new(2026, 12, 1, 9, 0, 0).unwrap_or_else(|| unreachable!()))
        );
        let dt = CivilDateTime::parse("2024-02-29t23:59:58").map(|d| d.to_string());
        assert_eq!(dt.as_deref(), Ok("2024-02-29T23:59:58"));
        for bad in [
            "",
            "2026-12-01",
            "2026-12-01 09:00",
            "2026-12-01T9:00",
            "+026-12-01T09:00",
        ] {
            assert_eq!(CivilDateTime::parse(bad), Err(CivilError::Format), "{bad}");
        }
        for bad in [
            "2025-02-29T00:00",
            "2026-13-01T00:00",
            "2026-12-01T24:00",
            "2026-00-10T00:00",
        ] {
            assert_eq!(CivilDateTime::parse(bad), Err(CivilError::Range), "{bad}");
        }
        assert_eq!(
            CivilError::Range.to_string(),
            "date or time field out of range"
        );
    }

    #[test]
    fn parse_never_panics() {
        let mut rng = XorShift(7);
        let alphabet = b"0123456789-T:t +";
        for _ in 0..5000 {
            let len = (rng.next() % 24) as usize;
            let s: String = (0..len)
                .map(|_| alphabet[(rng.next() % alphabet.len() as u64) as usize] as char)
                .collect();
            if let Ok(dt) = CivilDateTime::parse(&s) {
                assert!(dt.is_valid());
            }
        }
        let _ = CivilDateTime::parse("2026-12-01T09:0é");
        let _ = CivilDateTime::parse("ééééééééé");
    }
}
