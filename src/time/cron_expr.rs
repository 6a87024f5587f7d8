//! Five-field cron expressions and when they next fire in a time zone.
//!
//! Cron jobs are the main schedule form users type (`*/15 7-22 * * 1-5`).
//! Parsing is kept apart from computing: [`CronExpr::parse`] builds bit sets,
//! [`CronExpr::next_after`] walks local days, hours and minutes in a [`Tz`].
//!
//! Syntax: `minute hour day-of-month month day-of-week` with `*`, lists
//! (`1,15`), ranges (`1-5`), steps (`*/15`, `8-18/2`, and `5/15` meaning
//! `5-59/15`), month names `JAN`-`DEC`, weekday names `SUN`-`SAT` (case does
//! not matter), `7` for Sunday, and the macros `@hourly`, `@daily`
//! (`@midnight`), `@weekly`, `@monthly`, `@yearly` (`@annually`).
//!
//! Day rule (Vixie cron): when both day fields are restricted, a day matches
//! if EITHER matches; otherwise both must. A field is "restricted" when it
//! does not cover every value, so `*/1` counts as `*` but `*/2` does not.
//!
//! Daylight saving: a wall time skipped by a spring-forward gap fires once at
//! the end of the gap (a 02:30 job fires at 03:00 that day); a wall time that
//! happens twice on fall-back fires only at its first occurrence. So a job
//! never fires zero or two times for one matching wall time, and all wall
//! times inside one gap collapse into a single firing.
//!
//! # Bounds
//!
//! - Expressions longer than [`MAX_CRON_EXPR_BYTES`] are rejected.
//! - [`CronExpr::next_after`] searches at most [`MAX_SEARCH_DAYS`] local days
//!   (8 years, enough to reach a February 29 across 2100) and
//!   [`MAX_SEARCH_STEPS`] loop steps, then returns `None`. It skips whole
//!   months, days and hours, never stepping minute by minute over long spans.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use std::fmt;

use super::civil::{self, MAX_UNIX_SECS, MIN_UNIX_SECS, SECS_PER_DAY};
use super::tz::Tz;

/// Longest cron expression accepted.
pub const MAX_CRON_EXPR_BYTES: usize = 256;
/// Local days [`CronExpr::next_after`] searches before giving up.
pub const MAX_SEARCH_DAYS: i64 = 8 * 366 + 1;
/// Loop steps [`CronExpr::next_after`] takes before giving up.
pub const MAX_SEARCH_STEPS: u32 = 100_000;

/// Why a cron expression was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CronError {
    /// Nothing but whitespace.
    Empty,
    /// Longer than [`MAX_CRON_EXPR_BYTES`].
    TooLong,
    /// Not exactly five fields; holds the count found.
    FieldCount(usize),
    /// An `@` macro other than the supported ones.
    UnknownMacro,
    /// A field is not well formed.
    InvalidField {
        field: &'static str,
        reason: &'static str,
    },
    /// A number is outside the field's range.
    OutOfRange {
        field: &'static str,
        value: u32,
        min: u32,
        max: u32,
    },
}

impl fmt::Display for CronError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("empty cron expression"),
            Self::TooLong => write!(f, "cron expression longer than {MAX_CRON_EXPR_BYTES} bytes"),
            Self::FieldCount(n) => write!(
                f,
                "expected 5 fields (minute hour day-of-month month day-of-week), found {n}"
            ),
            Self::UnknownMacro => {
                f.write_str("unknown macro: use @hourly, @daily, @weekly, @monthly or @yearly")
            }
            Self::InvalidField { field, reason } => write!(f, "invalid {field} field: {reason}"),
            Self::OutOfRange {
                field,
                value,
                min,
                max,
            } => write!(f, "{field} value {value} is outside {min}-{max}"),
        }
    }
}

impl std::error::Error for CronError {}

/// A parsed cron expression: one bit set per field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CronExpr {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
}

/// How one field is spelled and bounded.
struct FieldSpec {
    name: &'static str,
    /// Range that `*` covers.
    min: u32,
    max: u32,
    /// Largest number accepted (7 for weekdays, folded onto 0).
    max_value: u32,
    /// Names for `min`, `min + 1`, ... (three letters, any case).
    names: &'static [&'static str],
}

const MINUTE: FieldSpec = FieldSpec {
    name: "minute",
    min: 0,
    max: 59,
    max_value: 59,
    names: &[],
};
const HOUR: FieldSpec = FieldSpec {
    name: "hour",
    min: 0,
    max: 23,
    max_value: 23,
    names: &[],
};
const DAY: FieldSpec = FieldSpec {
    name: "day-of-month",
    min: 1,
    max: 31,
    max_value: 31,
    names: &[],
};
const MONTH: FieldSpec = FieldSpec {
    name: "month",
    min: 1,
    max: 12,
    max_value: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const WEEKDAY: FieldSpec = FieldSpec {
    name: "day-of-week",
    min: 0,
    max: 6,
    max_value: 7,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// Bits `lo..=hi` set.
const fn span(lo: u32, hi: u32) -> u64 {
    (u64::MAX >> (63 - hi)) & !((1u64 << lo) - 1)
}

const ALL_DAYS: u64 = span(1, 31);
const ALL_WEEKDAYS: u64 = span(0, 6);

impl CronExpr {
    /// Parses a five-field expression or an `@` macro.
    pub fn parse(text: &str) -> Result<CronExpr, CronError> {
        if text.len() > MAX_CRON_EXPR_BYTES {
            return Err(CronError::TooLong);
        }
        let text = text.trim();
        if text.is_empty() {
            return Err(CronError::Empty);
        }
        let expanded = if text.starts_with('@') {
            match text.to_ascii_lowercase().as_str() {
                "@hourly" => "0 * * * *",
                "@daily" | "@midnight" => "0 0 * * *",
                "@weekly" => "0 0 * * 0",
                "@monthly" => "0 0 1 * *",
                "@yearly" | "@annually" => "0 0 1 1 *",
                _ => return Err(CronError::UnknownMacro),
            }
        } else {
            text
        };
        let fields: Vec<&str> = expanded.split_whitespace().take(6).collect();
        let [mi, h, d, mo, w] = fields[..] else {
            return Err(CronError::FieldCount(expanded.split_whitespace().count()));
        };
        let mut weekdays = parse_field(w, &WEEKDAY)?;
        if weekdays & (1 << 7) != 0 {
            weekdays = (weekdays & !(1 << 7)) | 1;
        }
        Ok(CronExpr {
            minutes: parse_field(mi, &MINUTE)?,
            hours: parse_field(h, &HOUR)?,
            days: parse_field(d, &DAY)?,
            months: parse_field(mo, &MONTH)?,
            weekdays,
        })
    }

    /// Whether the expression fires at this local wall time (seconds ignored).
    pub fn matches(&self, local: &civil::CivilDateTime) -> bool {
        has(self.minutes, u32::from(local.minute))
            && has(self.hours, u32::from(local.hour))
            && has(self.months, u32::from(local.month))
            && self.day_matches(local.day, local.weekday())
    }

    /// True when no date can ever match, like `0 0 30 2 *` (day 30 never
    /// occurs in February). Such an expression parses (as in Vixie cron) but
    /// [`CronExpr::next_after`] returns `None`.
    pub fn never_fires(&self) -> bool {
        if self.weekdays != ALL_WEEKDAYS && self.days != ALL_DAYS {
            return false; // either field may match: weekdays always occur
        }
        if self.days == ALL_DAYS {
            return false; // every month has days and all weekdays
        }
        !(1..=12u8).any(|m| {
            // 2000 is a leap year, so February allows the 29th here.
            has(self.months, u32::from(m))
                && self.days & span(1, u32::from(civil::days_in_month(2000, m))) != 0
        })
    }

    fn day_matches(&self, day: u8, weekday: u8) -> bool {
        let dom = has(self.days, u32::from(day));
        let dow = has(self.weekdays, u32::from(weekday));
        if self.days != ALL_DAYS && self.weekdays != ALL_WEEKDAYS {
            dom || dow
        } else {
            dom && dow
        }
    }

    /// The first instant strictly after `after_utc` at which the job fires in
    /// `tz`, with the daylight-saving rules of the module doc; `None` when
    /// nothing fires within [`MAX_SEARCH_DAYS`] or before the year 10000.
    pub fn next_after(&self, after_utc: i64, tz: &Tz) -> Option<i64> {
        if after_utc >= MAX_UNIX_SECS {
            return None;
        }
        let after = after_utc.max(MIN_UNIX_SECS);
        let local_after = after.saturating_add(i64::from(tz.offset_at(after)));
        // Candidates start at the next whole local minute: the fire instant
        // grows with the wall time, and no earlier wall time can fire after
        // `after`.
        let start = local_after.div_euclid(60) * 60 + 60;
        let mut day = start.div_euclid(SECS_PER_DAY);
        let tod = start.rem_euclid(SECS_PER_DAY);
        let (mut hour, mut minute) = (tod / 3600, tod % 3600 / 60);
        let last_day = (day + MAX_SEARCH_DAYS).min(MAX_UNIX_SECS.div_euclid(SECS_PER_DAY));
        for _ in 0..MAX_SEARCH_STEPS {
            if day > last_day {
                return None;
            }
            let (y, m, d) = civil::civil_from_days(day);
            if !has(self.months, u32::from(m)) {
                let (ny, nm) = if m >= 12 { (y + 1, 1) } else { (y, m + 1) };
                day = civil::days_from_civil(ny, nm, 1);
                (hour, minute) = (0, 0);
                continue;
            }
            if !self.day_matches(d, civil::weekday_from_days(day)) {
                day += 1;
                (hour, minute) = (0, 0);
                continue;
            }
            let Some(h) = next_bit(self.hours, hour, 23) else {
                day += 1;
                (hour, minute) = (0, 0);
                continue;
            };
            if h != hour {
                (hour, minute) = (h, 0);
            }
            let Some(mi) = next_bit(self.minutes, minute, 59) else {
                (hour, minute) = (hour + 1, 0);
                if hour > 23 {
                    day += 1;
                    hour = 0;
                }
                continue;
            };
            let local = day * SECS_PER_DAY + hour * 3600 + mi * 60;
            let fire = tz.fire_instant(local);
            if fire > after {
                return Some(fire);
            }
            // Only inside a repeated (fall-back) hour: this wall time already
            // fired at its first occurrence; try the next minute.
            minute = mi + 1;
            if minute > 59 {
                (hour, minute) = (hour + 1, 0);
                if hour > 23 {
                    day += 1;
                    hour = 0;
                }
            }
        }
        None
    }
}

/// Whether bit `v` is set.
fn has(mask: u64, v: u32) -> bool {
    v < 64 && mask & (1u64 << v) != 0
}

/// Smallest set bit in `from..=max`, if any.
fn next_bit(mask: u64, from: i64, max: u32) -> Option<i64> {
    let from = u32::try_from(from).ok().filter(|&f| f <= max)?;
    let rest = mask & span(from, max);
    (rest != 0).then(|| i64::from(rest.trailing_zeros()))
}

/// Parses one field into a bit set.
fn parse_field(text: &str, spec: &FieldSpec) -> Result<u64, CronError> {
    let invalid = |reason| CronError::InvalidField {
        field: spec.name,
        reason,
    };
    let mut mask = 0u64;
    for part in text.split(',') {
        if part.is_empty() {
            return Err(invalid("empty list item"));
        }
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (r, Some(parse_number(s, spec, u32::MAX)?)),
            None => (part, None),
        };
        let (lo, hi) = if range == "*" {
            (spec.min, spec.max)
        } else if let Some((a, b)) = range.split_once('-') {
            (parse_value(a, spec)?, parse_value(b, spec)?)
        } else {
            let v = parse_value(range, spec)?;
            // `5/15` means `5-max/15`, as in Vixie cron.
            (v, if step.is_some() { spec.max.max(v) } else { v })
        };
        if lo > hi {
            return Err(invalid("range start is after its end"));
        }
        let step = step.unwrap_or(1);
        if step == 0 {
            return Err(invalid("step must be at least 1"));
        }
        let mut v = lo;
        while v <= hi {
            mask |= 1u64 << v;
            v = match v.checked_add(step) {
                Some(n) => n,
                None => break,
            };
        }
    }
    Ok(mask)
}

/// A number or (for months and weekdays) a three-letter name.
fn parse_value(text: &str, spec: &FieldSpec) -> Result<u32, CronError> {
    if let Some(i) = spec.names.iter().position(|n| n.eq_ignore_ascii_case(text)) {
        // Name tables have at most 12 entries, so this cannot overflow.
        return Ok(spec.min + u32::try_from(i).unwrap_or(0));
    }
    let v = parse_number(text, spec, spec.max_value)?;
    if v < spec.min {
        return Err(CronError::OutOfRange {
            field: spec.name,
            value: v,
            min: spec.min,
            max: spec.max_value,
        });
    }
    Ok(v)
}

/// A plain decimal number no larger than `max`.
fn parse_number(text: &str, spec: &FieldSpec, max: u32) -> Result<u32, CronError> {
    if text.is_empty() {
        return Err(CronError::InvalidField {
            field: spec.name,
            reason: "missing number",
        });
    }
    if !text.bytes().all(|c| c.is_ascii_digit()) {
        return Err(CronError::InvalidField {
            field: spec.name,
            reason: if spec.names.is_empty() {
                "expected a number, `*`, a list, a range or a step"
            } else {
                "expected a number or a three-letter name"
            },
        });
    }
    let too_big = CronError::OutOfRange {
        field: spec.name,
        value: u32::MAX,
        min: spec.min,
        max: spec.max_value,
    };
    let v: u32 = text.parse().map_err(|_| too_big.clone())?;
    if v > max {
        return Err(CronError::OutOfRange {
            field: spec.name,
            value: v,
            min: spec.min,
            max: spec.max_value,
        });
    }
    Ok(v)
}

/// Canonical text of one field: `*`, `*/n`, or a list of values and ranges.
fn render(f: &mut fmt::Formatter<'_>, mask: u64, lo: u32, hi: u32) -> fmt::Result {
    let full = span(lo, hi);
    if mask & full == full {
        return f.write_str("*");
    }
    let vals: Vec<u32> = (lo..=hi).filter(|&v| has(mask, v)).collect();
    if let [first, second, ..] = vals[..] {
        let step = second - first;
        // `*/n` only when it stands for three or more values: `0,30` reads better.
        if first == lo && step >= 2 && vals.len() >= 3 {
            let expected: u64 = (lo..=hi).step_by(step as usize).fold(0, |m, v| m | 1 << v);
            if expected == mask & full {
                return write!(f, "*/{step}");
            }
        }
    }
    let mut i = 0;
    let mut sep = "";
    while let Some(&start) = vals.get(i) {
        let mut j = i;
        while vals
            .get(j + 1)
            .is_some_and(|&n| n == vals.get(j).copied().unwrap_or(0) + 1)
        {
            j += 1;
        }
        let end = vals.get(j).copied().unwrap_or(start);
        if j - i >= 2 {
            write!(f, "{sep}{start}-{end}")?;
            i = j + 1;
        } else {
            write!(f, "{sep}{start}")?;
            i += 1;
        }
        sep = ",";
    }
    Ok(())
}

impl fmt::Display for CronExpr {
    /// Canonical five fields with numbers (`*/15 7-22 * * 1-5`); parsing it
    /// gives back an equal expression.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        render(f, self.minutes, 0, 59)?;
        f.write_str(" ")?;
        render(f, self.hours, 0, 23)?;
        f.write_str(" ")?;
        render(f, self.days, 1, 31)?;
        f.write_str(" ")?;
        render(f, self.months, 1, 12)?;
        f.write_str(" ")?;
        render(f, self.weekdays, 0, 6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::civil::CivilDateTime;
    use crate::time::tz::fixtures;

    use crate::testkit::XorShift;

    fn utc(text: &str) -> i64 {
        CivilDateTime::parse(text).expect("test date").to_unix()
    }

    fn cron(text: &str) -> CronExpr {
        CronExpr::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    /// All firings in [from, to), by brute force: every UTC minute is
    /// checked. A minute fires when its wall time matches and this is the
    /// wall time's first occurrence, or when it ends a gap containing a
    /// matching wall time. Only `Tz::offset_at` and `matches` are used.
    fn brute_fires(expr: &CronExpr, tz: &Tz, from: i64, to: i64) -> Vec<i64> {
        let mut offsets: Vec<i32> = Vec::new();
        for u in (from - 2 * 86_400..to + 2 * 86_400).step_by(1800) {
            let o = tz.offset_at(u);
            if !offsets.contains(&o) {
                offsets.push(o);
            }
        }
        let mut out = Vec::new();
        let mut prev = tz.offset_at(from - 60);
        for u in (from..to).step_by(60) {
            let off = tz.offset_at(u);
            let wall = u + i64::from(off);
            let mut fire = false;
            if expr.matches(&CivilDateTime::from_unix(wall)) {
                fire = offsets.iter().all(|&o| {
                    let earlier = wall - i64::from(o);
                    !(earlier < u && tz.offset_at(earlier) == o)
                });
            }
            if off > prev {
                let gap = (u + i64::from(prev)..u + i64::from(off)).step_by(60);
                fire |= gap
                    .into_iter()
                    .any(|g| expr.matches(&CivilDateTime::from_unix(g)));
            }
            if fire {
                out.push(u);
            }
            prev = off;
        }
        out
    }

    /// Checks `next_after` against the brute-force list for many `after`s.
    /// Returns how many `after`s had a firing inside the window.
    fn check_against_brute(
        expr: &CronExpr,
        tz: &Tz,
        from: i64,
        to: i64,
        rng: &mut XorShift,
    ) -> usize {
        let fires = brute_fires(expr, tz, from, to);
        let mut afters: Vec<i64> = (0..40)
            .map(|_| from + rng.below((to - from) as u64) as i64)
            .collect();
        for &f in fires.iter().step_by((fires.len() / 40).max(1)) {
            afters.extend([f - 1, f, f + 1]);
        }
        let mut hits = 0;
        for after in afters {
            if after < from {
                continue;
            }
            let got = expr.next_after(after, tz);
            match fires.iter().find(|&&f| f > after) {
                Some(&want) => {
                    hits += 1;
                    assert_eq!(
                        got,
                        Some(want),
                        "`{expr}` in {} after {} (want {})",
                        tz.name(),
                        CivilDateTime::from_unix(after),
                        CivilDateTime::from_unix(want)
                    )
                }
                None => assert!(
                    got.is_none_or(|g| g >= to),
                    "`{expr}` in {} after {after}",
                    tz.name()
                ),
            }
        }
        hits
    }

    fn random_field(rng: &mut XorShift, lo: u32, hi: u32, names: &[&str]) -> String {
        let pick = |rng: &mut XorShift| lo + rng.below(u64::from(hi - lo + 1)) as u32;
        let name_or_num = |rng: &mut XorShift, v: u32| {
            let i = (v - lo) as usize;
            if i < names.len() && rng.below(3) == 0 {
                names[i].to_uppercase()
            } else {
                v.to_string()
            }
        };
        match rng.below(7) {
            0 | 1 => "*".into(),
            2 => format!("*/{}", 1 + rng.below(u64::from(hi - lo + 1))),
            3 => {
                let v = pick(rng);
                name_or_num(rng, v)
            }
            4 => {
                let (a, b) = (pick(rng), pick(rng));
                let (a, b) = (a.min(b), a.max(b));
                format!("{}-{}", name_or_num(rng, a), name_or_num(rng, b))
            }
            5 => {
                let (a, b) = (pick(rng), pick(rng));
                format!("{}-{}/{}", a.min(b), a.max(b), 1 + rng.below(7))
            }
            _ => (0..1 + rng.below(4))
                .map(|_| pick(rng).to_string())
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    fn random_expr(rng: &mut XorShift) -> String {
        format!(
            "{} {} {} {} {}",
            random_field(rng, 0, 59, &[]),
            random_field(rng, 0, 23, &[]),
            random_field(rng, 1, 31, &[]),
            random_field(rng, 1, 12, MONTH.names),
            random_field(rng, 0, 7, WEEKDAY.names),
        )
    }

    /// Random minute and hour fields, usually `*` for the day fields, so
    /// that short windows contain firings.
    fn random_dense_expr(rng: &mut XorShift) -> String {
        let mut day_field = |lo, hi, names| {
            if rng.below(4) == 0 {
                random_field(rng, lo, hi, names)
            } else {
                "*".to_string()
            }
        };
        let (d, m, w) = (
            day_field(1, 31, &[]),
            day_field(1, 12, MONTH.names),
            day_field(0, 7, WEEKDAY.names),
        );
        format!(
            "{} {} {d} {m} {w}",
            random_field(rng, 0, 59, &[]),
            random_field(rng, 0, 23, &[])
        )
    }

    #[test]
    fn parses_valid_expressions_to_canonical_text() {
        let cases = [
            ("*/15 7-22 * * 1-5", "*/15 7-22 * * 1-5"),
            ("0 9 * JAN-MAR mon-fri", "0 9 * 1-3 1-5"),
            ("0 0 * * 7", "0 0 * * 0"),
            ("0 0 * * 5-7", "0 0 * * 0,5,6"),
            ("@daily", "0 0 * * *"),
            ("@HOURLY", "0 * * * *"),
            ("@weekly", "0 0 * * 0"),
            ("@monthly", "0 0 1 * *"),
            ("@yearly", "0 0 1 1 *"),
            ("5/15 * * * *", "5,20,35,50 * * * *"),
            ("*/1 * * * *", "* * * * *"),
            ("0,30 * * * *", "0,30 * * * *"),
            ("*/20 * * * *", "*/20 * * * *"),
            ("1-2 * * * *", "1,2 * * * *"),
            ("  0   12 1,15 */3 *  ", "0 12 1,15 */3 *"),
            ("0 8-18/2 * * sun,SAT", "0 8,10,12,14,16,18 * * 0,6"),
            ("0 0 1-31 1-12 0-6", "0 0 * * *"),
            ("0-59 0-23 * * *", "* * * * *"),
        ];
        for (text, canonical) in cases {
            let e = cron(text);
            assert_eq!(e.to_string(), canonical, "{text}");
            assert_eq!(cron(canonical), e, "{text}");
        }
    }

    #[test]
    fn rejects_invalid_expressions_with_clear_messages() {
        let cases = [
            ("", "empty cron expression"),
            (
                "* * * *",
                "expected 5 fields (minute hour day-of-month month day-of-week), found 4",
            ),
            ("* * * * * *", "found 6"),
            ("60 * * * *", "minute value 60 is outside 0-59"),
            ("* 24 * * *", "hour value 24 is outside 0-23"),
            ("* * 0 * *", "day-of-month value 0 is outside 1-31"),
            ("* * * 13 *", "month value 13 is outside 1-12"),
            ("* * * * 8", "day-of-week value 8 is outside 0-7"),
            (
                "*/0 * * * *",
                "invalid minute field: step must be at least 1",
            ),
            (
                "5-1 * * * *",
                "invalid minute field: range start is after its end",
            ),
            (
                "* * * foo *",
                "invalid month field: expected a number or a three-letter name",
            ),
            (
                "* * * * monday",
                "invalid day-of-week field: expected a number or a three-letter name",
            ),
            ("1,,2 * * * *", "invalid minute field: empty list item"),
            ("-5 * * * *", "invalid minute field: missing number"),
            (
                "x * * * *",
                "invalid minute field: expected a number, `*`, a list, a range or a step",
            ),
            (
                "99999999999 * * * *",
                "minute value 4294967295 is outside 0-59",
            ),
            (
                "@reboot",
                "unknown macro: use @hourly, @daily, @weekly, @monthly or @yearly",
            ),
        ];
        for (text, msg) in cases {
            let err = CronExpr::parse(text).expect_err(text);
            assert!(err.to_string().contains(msg), "{text}: {err}");
        }
        assert_eq!(CronExpr::parse(&"* ".repeat(200)), Err(CronError::TooLong));
    }

    #[test]
    fn display_round_trips_random_expressions() {
        let mut rng = XorShift(0x1234_5678);
        for _ in 0..3000 {
            let text = random_expr(&mut rng);
            let e = cron(&text);
            let shown = e.to_string();
            assert_eq!(cron(&shown), e, "{text} -> {shown}");
            assert_eq!(cron(&shown).to_string(), shown);
        }
    }

    #[test]
    fn day_fields_follow_the_vixie_rule() {
        let monday_or_first = cron("0 0 1 * 1");
        // 2026-06-01 is a Monday; 2026-06-08 a Monday; 2026-07-01 a Wednesday.
        let at = |t: &str| CivilDateTime::parse(t).expect("date");
        assert!(monday_or_first.matches(&at("2026-06-08T00:00")));
        assert!(monday_or_first.matches(&at("2026-07-01T00:00")));
        assert!(!monday_or_first.matches(&at("2026-07-02T00:00")));
        // Only one field restricted: both must match (the other is `*`).
        let first = cron("0 0 1 * *");
        assert!(!first.matches(&at("2026-06-08T00:00")));
        let weekdays = cron("0 0 * * 1-5");
        assert!(!weekdays.matches(&at("2026-06-07T00:00"))); // Sunday
        // `*/2` is restricted: OR with the weekday.
        let odd_days_or_monday = cron("0 0 */2 * 1");
        assert!(odd_days_or_monday.matches(&at("2026-06-08T00:00")));
        assert!(odd_days_or_monday.matches(&at("2026-06-03T00:00")));
        assert!(!odd_days_or_monday.matches(&at("2026-06-04T00:00")));
    }

    #[test]
    fn next_after_simple_utc_cases() {
        let tz = Tz::Utc;
        let e = cron("*/15 7-22 * * 1-5");
        // Friday 2026-06-05 22:50 -> Monday 07:00.
        assert_eq!(
            e.next_after(utc("2026-06-05T22:50"), &tz),
            Some(utc("2026-06-08T07:00"))
        );
        assert_eq!(
            e.next_after(utc("2026-06-08T07:00"), &tz),
            Some(utc("2026-06-08T07:15"))
        );
        assert_eq!(
            e.next_after(utc("2026-06-08T07:14:59"), &tz),
            Some(utc("2026-06-08T07:15"))
        );
        let leap = cron("0 0 29 2 *");
        assert_eq!(
            leap.next_after(utc("2026-01-01T00:00"), &tz),
            Some(utc("2028-02-29T00:00"))
        );
        assert_eq!(
            leap.next_after(utc("2097-03-01T00:00"), &tz),
            Some(utc("2104-02-29T00:00"))
        );
        assert_eq!(
            cron("0 0 1 1 *").next_after(utc("2026-12-31T23:59:59"), &tz),
            Some(utc("2027-01-01T00:00"))
        );
        let fixed = Tz::Fixed(19_800); // +05:30
        assert_eq!(
            cron("0 9 * * *").next_after(utc("2026-06-01T00:00"), &fixed),
            Some(utc("2026-06-01T03:30"))
        );
    }

    #[test]
    fn impossible_expressions_end_the_search() {
        for text in ["0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 31 feb *"] {
            let e = cron(text);
            assert!(e.never_fires(), "{text}");
            assert_eq!(
                e.next_after(utc("2026-01-01T00:00"), &Tz::Utc),
                None,
                "{text}"
            );
            assert_eq!(
                e.next_after(utc("2026-01-01T00:00"), &fixtures::berlin_slim()),
                None
            );
        }
        for text in ["0 0 29 2 *", "0 0 30 2 1", "* * * * *", "0 0 31 * *"] {
            assert!(!cron(text).never_fires(), "{text}");
        }
    }

    #[test]
    fn extreme_instants_terminate() {
        let zones = [
            Tz::Utc,
            Tz::Fixed(50_400),
            Tz::Fixed(-43_200),
            fixtures::berlin_slim(),
            fixtures::lord_howe(2025..=2028),
        ];
        for tz in &zones {
            for text in ["* * * * *", "0 0 29 2 *", "0 0 30 2 *", "59 23 31 12 *"] {
                let e = cron(text);
                for t in [
                    i64::MIN,
                    civil::MIN_UNIX_SECS - 1,
                    civil::MIN_UNIX_SECS,
                    civil::MAX_UNIX_SECS - 120,
                    civil::MAX_UNIX_SECS,
                    i64::MAX,
                ] {
                    if let Some(n) = e.next_after(t, tz) {
                        assert!(n > t);
                    }
                }
            }
        }
    }

    /// Counts firings whose local date is `day` (YYYY-MM-DD).
    fn fires_on_local_day(expr: &CronExpr, tz: &Tz, day: &str) -> Vec<String> {
        let start = utc(&format!("{day}T00:00")) - 2 * 86_400;
        let mut t = start;
        let mut out = Vec::new();
        while let Some(n) = expr.next_after(t, tz) {
            if n > start + 5 * 86_400 {
                break;
            }
            let l = tz.to_local(n).to_string();
            if l.starts_with(day) {
                out.push(l);
            }
            t = n;
        }
        out
    }

    #[test]
    fn spring_forward_job_fires_once_at_gap_end() {
        for tz in [fixtures::berlin(2025..=2028), fixtures::berlin_slim()] {
            let e = cron("30 2 * * *");
            assert_eq!(
                fires_on_local_day(&e, &tz, "2026-03-29"),
                ["2026-03-29T03:00:00"]
            );
            assert_eq!(
                e.next_after(utc("2026-03-28T12:00"), &tz),
                Some(utc("2026-03-29T01:00"))
            );
            assert_eq!(
                e.next_after(utc("2026-03-29T01:00"), &tz),
                Some(utc("2026-03-30T00:30"))
            );
            // Several wall times in the gap collapse into one firing, shared with 03:00.
            let e = cron("*/15 2,3 * * *");
            let got = fires_on_local_day(&e, &tz, "2026-03-29");
            assert_eq!(
                got,
                [
                    "2026-03-29T03:00:00",
                    "2026-03-29T03:15:00",
                    "2026-03-29T03:30:00",
                    "2026-03-29T03:45:00"
                ]
            );
            assert_eq!(
                fires_on_local_day(&cron("0 * * * *"), &tz, "2026-03-29").len(),
                23
            );
        }
        let ny = fixtures::new_york(2025..=2028);
        assert_eq!(
            fires_on_local_day(&cron("30 2 * * *"), &ny, "2026-03-08"),
            ["2026-03-08T03:00:00"]
        );
    }

    #[test]
    fn fall_back_job_fires_once_at_first_occurrence() {
        let ny = fixtures::new_york(2025..=2028);
        let e = cron("30 1 * * *");
        assert_eq!(
            fires_on_local_day(&e, &ny, "2026-11-01"),
            ["2026-11-01T01:30:00"]
        );
        assert_eq!(
            e.next_after(utc("2026-10-31T12:00"), &ny),
            Some(utc("2026-11-01T05:30"))
        ); // EDT
        assert_eq!(
            e.next_after(utc("2026-11-01T05:30"), &ny),
            Some(utc("2026-11-02T06:30"))
        ); // EST
        for tz in [fixtures::berlin(2025..=2028), fixtures::berlin_slim()] {
            let e = cron("30 2 * * *");
            assert_eq!(
                fires_on_local_day(&e, &tz, "2026-10-25"),
                ["2026-10-25T02:30:00"]
            );
            assert_eq!(
                e.next_after(utc("2026-10-25T00:00"), &tz),
                Some(utc("2026-10-25T00:30"))
            );
            // During the repeat, the next firing is the following day.
            assert_eq!(
                e.next_after(utc("2026-10-25T01:10"), &tz),
                Some(utc("2026-10-26T01:30"))
            );
            assert_eq!(
                fires_on_local_day(&cron("0 * * * *"), &tz, "2026-10-25").len(),
                24
            );
            let minutes = fires_on_local_day(&cron("* 2 * * *"), &tz, "2026-10-25");
            assert_eq!(minutes.len(), 60);
        }
    }

    #[test]
    fn matches_brute_force_over_a_year() {
        let mut rng = XorShift(0xC0FF_EE00);
        let zones = [
            (Tz::Utc, "2026"),
            (Tz::Fixed(19_800), "2026"),
            (fixtures::berlin(2025..=2028), "2026"),
            (fixtures::berlin_slim(), "2030"),
            (fixtures::new_york(2025..=2028), "2026"),
            (fixtures::lord_howe(2025..=2028), "2026"),
        ];
        for (tz, year) in &zones {
            let from = utc(&format!("{year}-01-01T00:00"));
            let to = from + 365 * 86_400;
            let mut texts = vec!["30 2 * * *".to_string(), "*/20 1-3 * * *".to_string()];
            texts.extend((0..2).map(|_| random_dense_expr(&mut rng)));
            for text in &texts {
                let hits = check_against_brute(&cron(text), tz, from, to, &mut rng);
                assert!(hits > 20, "{text}: {hits}");
            }
        }
    }

    #[test]
    fn matches_brute_force_for_random_expressions_around_transitions() {
        let mut rng = XorShift(0xABCD_EF01);
        let zones = [
            (Tz::Utc, vec!["2026-02-26", "2026-12-29"]),
            (Tz::Fixed(-12_600), vec!["2026-02-26"]),
            (
                fixtures::berlin(2025..=2028),
                vec!["2026-03-28", "2026-10-24"],
            ),
            (fixtures::berlin_slim(), vec!["2031-03-29", "2031-10-25"]),
            (
                fixtures::new_york(2025..=2028),
                vec!["2026-03-07", "2026-10-31"],
            ),
            (
                fixtures::lord_howe(2025..=2028),
                vec!["2026-04-04", "2026-10-03"],
            ),
        ];
        let mut hits = 0;
        let mut cases = 0;
        for (tz, days) in &zones {
            for day in days {
                let from = utc(&format!("{day}T00:00")) - 86_400;
                let to = from + 4 * 86_400;
                for i in 0..40 {
                    let text = if i % 4 == 0 {
                        random_expr(&mut rng)
                    } else {
                        random_dense_expr(&mut rng)
                    };
                    hits += check_against_brute(&cron(&text), tz, from, to, &mut rng);
                    cases += 1;
                }
                for text in [
                    "* * * * *",
                    "*/7 * * * *",
                    "0 * * * *",
                    "59 1,2 * * *",
                    "0 3 * * *",
                    "30 2 * * *",
                ] {
                    hits += check_against_brute(&cron(text), tz, from, to, &mut rng);
                }
            }
        }
        assert!(
            cases >= 400 && hits > 10_000,
            "{cases} expressions, {hits} checked firings"
        );
    }

    #[test]
    fn parse_never_panics_on_random_text() {
        let alphabet = b"0123456789*/-,@ abcdefjmnorstuwyADEFJMNOSTUW\t\xc3";
        let mut rng = XorShift(31);
        for _ in 0..20_000 {
            let len = rng.below(30) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            let text = String::from_utf8_lossy(&bytes);
            if let Ok(e) = CronExpr::parse(&text) {
                assert_eq!(cron(&e.to_string()), e, "{text}");
                let _ = e.next_after(utc("2026-01-01T00:00"), &Tz::Utc);
            }
        }
    }
}
