//! Cron job records: validating and adding a job, removing it, planning its runs,
//! listing jobs; shared by the `cron` command, the `cron_*` tools and the scheduler.
//!
//! Why it exists apart from the scheduler: the tools need job records, and the scheduler
//! (which runs jobs through the agent) sits above the tools. This module sits below both,
//! over `store` and `time` only.
//!
//! Decisions:
//! - A one-shot `at` job is disabled, not removed, after it runs, so `cron list` still
//!   shows when it ran and how it went; `cron remove` deletes it.
//! - Jobs added while the clock is before the build time are stored unplanned (next run
//!   empty) and planned by the scheduler once the clock is sane.
//!
//! # Bounds
//! Job text up to `MAX_CRON_TEXT_BYTES`; the table holds `store::cron::MAX_CRON_JOBS`.
//! The change signal holds at most one pending wake.
//!
//! # Threads
//! Executor thread (SQLite calls are short; see `store`).

use crate::chat::Target;
use crate::store::cron::{CronJob, NewCronJob};
use crate::store::{Db, StoreError};
use crate::time::schedule::{Schedule, ScheduleError};
use crate::time::tz::{Tz, TzError};
use std::fmt;
use std::sync::OnceLock;

/// Longest prompt or message a job may hold.
pub const MAX_CRON_TEXT_BYTES: usize = 8 * 1024;
/// Large backward clock steps re-plan every job; smaller ones (NTP corrections) keep the
/// plan, so a job that just ran is not run again.
pub const REPLAN_BACKWARD_JUMP_SECS: i64 = 3600;

type ChangeChannel = (async_channel::Sender<()>, async_channel::Receiver<()>);

fn change_channel() -> &'static ChangeChannel {
    static CHANGES: OnceLock<ChangeChannel> = OnceLock::new();
    CHANGES.get_or_init(|| async_channel::bounded(1))
}

/// Tell a scheduler running in this process that cron jobs changed, so it re-plans now.
/// Never blocks; wakes coalesce. (Another process's changes are seen on the loop's next
/// bounded wake.)
pub fn notify_jobs_changed() {
    let _ = change_channel().0.try_send(());
}

/// The receiving end of [`notify_jobs_changed`], for the scheduler loop.
pub fn jobs_changed() -> async_channel::Receiver<()> {
    change_channel().1.clone()
}

/// Why a cron request was refused or a job could not run.
#[derive(Debug)]
pub enum CronError {
    BadSchedule(ScheduleError),
    /// `agent.timezone` cannot be resolved.
    BadTimezone(TzError),
    /// The delivery target text is not `telegram:<id>`, `stdout` or empty.
    BadTarget(String),
    /// The prompt or message is empty.
    EmptyText,
    /// The prompt or message is longer than `MAX_CRON_TEXT_BYTES`.
    TextTooLong,
    /// A one-shot time that has already passed.
    AtInThePast,
    /// No job with this id.
    NotFound(i64),
    Store(StoreError),
}

impl CronError {
    /// True for mistakes in what the user asked (exit 2), false for failures (exit 1).
    pub fn is_usage(&self) -> bool {
        !matches!(self, CronError::NotFound(_) | CronError::Store(_))
    }
}

impl fmt::Display for CronError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CronError::BadSchedule(e) => e.fmt(f),
            CronError::BadTimezone(e) => write!(f, "agent.timezone: {e}"),
            CronError::BadTarget(t) => write!(
                f,
                "invalid delivery target {t:?}: use telegram:<chat_id>, stdout, or leave it empty for the log"
            ),
            CronError::EmptyText => f.write_str("the job's text is empty"),
            CronError::TextTooLong => {
                write!(
                    f,
                    "the job's text is longer than {MAX_CRON_TEXT_BYTES} bytes"
                )
            }
            CronError::AtInThePast => f.write_str("that one-shot time has already passed"),
            CronError::NotFound(id) => {
                write!(f, "no cron job with id {id} (see yoctoclaw cron list)")
            }
            CronError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CronError {}

impl From<StoreError> for CronError {
    fn from(e: StoreError) -> Self {
        CronError::Store(e)
    }
}

/// The configured time zone.
pub fn timezone(name: &str) -> Result<Tz, CronError> {
    Tz::parse(name).map_err(CronError::BadTimezone)
}

/// A new job as asked for by the CLI or the model.
#[derive(Debug, Clone, Copy)]
pub struct JobRequest<'a> {
    pub schedule: &'a str,
    pub text: &'a str,
    /// Delivery target text; `None` or empty means the log.
    pub to: Option<&'a str>,
    pub is_message: bool,
}

/// The first run of a new (or unplanned) job: the next slot after `now`; for `at`, its
/// instant even when past (a missed one-shot runs once).
pub fn first_run(schedule: &Schedule, now: i64, tz: &Tz) -> Option<i64> {
    match schedule {
        Schedule::At(local) => Some(tz.fire_instant(local.to_unix())),
        other => other.next_after(now, tz, None),
    }
}

/// A job request checked and planned, ready to store: the schedule as canonical text,
/// the delivery target as text, and the first run (`None` before the clock is sane).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub schedule: String,
    pub target: String,
    pub next_run: Option<i64>,
}

/// Validate a job and plan its first run without storing it. `floor` is the earliest
/// sane clock: before it the job is left unplanned.
pub fn check(tz: &Tz, req: &JobRequest<'_>, now: i64, floor: i64) -> Result<Checked, CronError> {
    let schedule = Schedule::parse(req.schedule).map_err(CronError::BadSchedule)?;
    let text = req.text.trim();
    if text.is_empty() {
        return Err(CronError::EmptyText);
    }
    if text.len() > MAX_CRON_TEXT_BYTES {
        return Err(CronError::TextTooLong);
    }
    let to = req.to.unwrap_or("").trim();
    let target = Target::parse(to).ok_or_else(|| CronError::BadTarget(to.to_string()))?;
    let next_run = if now >= floor {
        let at = first_run(&schedule, now, tz);
        if schedule.is_one_shot() && at.is_none_or(|t| t <= now) {
            return Err(CronError::AtInThePast);
        }
        at
    } else {
        None
    };
    Ok(Checked {
        schedule: schedule.to_string(),
        target: target.to_string(),
        next_run,
    })
}

/// Validate and store a job (see [`check`]).
pub fn add(
    db: &Db,
    tz: &Tz,
    req: &JobRequest<'_>,
    now: i64,
    floor: i64,
) -> Result<CronJob, CronError> {
    let c = check(tz, req, now, floor)?;
    let id = db.add_cron_job(
        &NewCronJob {
            schedule: &c.schedule,
            prompt: req.text.trim(),
            is_message: req.is_message,
            target: &c.target,
            next_run: c.next_run,
        },
        now,
    )?;
    notify_jobs_changed();
    db.get_cron_job(id)?.ok_or(CronError::NotFound(id))
}

/// Remove a job.
pub fn remove(db: &Db, id: i64) -> Result<(), CronError> {
    if db.remove_cron_job(id)? {
        notify_jobs_changed();
        Ok(())
    } else {
        Err(CronError::NotFound(id))
    }
}

/// Plan enabled jobs that have no next run yet (added while the clock was not set).
pub fn plan_unplanned(db: &Db, tz: &Tz, now: i64) -> Result<usize, StoreError> {
    let mut n = 0;
    for job in db.list_cron_jobs()? {
        if !job.enabled || job.next_run.is_some() {
            continue;
        }
        match Schedule::parse(&job.schedule) {
            Ok(s) => match first_run(&s, now, tz) {
                Some(t) => db.set_cron_next_run(job.id, Some(t))?,
                None => db.set_cron_enabled(job.id, false)?,
            },
            Err(e) => disable_broken(db, &job, &e, now)?,
        }
        n += 1;
    }
    Ok(n)
}

/// After a large backward clock step: plan every enabled job again from `now` (plans made
/// under the wrong clock may lie far in the future). One-shot times are kept.
pub fn replan_all(db: &Db, tz: &Tz, now: i64) -> Result<(), StoreError> {
    for job in db.list_cron_jobs()? {
        if !job.enabled {
            continue;
        }
        let Ok(s) = Schedule::parse(&job.schedule) else {
            continue;
        };
        if s.is_one_shot() {
            continue;
        }
        let next = first_run(&s, now, tz);
        if next.is_some() && next != job.next_run {
            db.set_cron_next_run(job.id, next)?;
        }
    }
    Ok(())
}

pub fn disable_broken(
    db: &Db,
    job: &CronJob,
    e: &ScheduleError,
    now: i64,
) -> Result<(), StoreError> {
    log::warn!("cron job {} disabled: its schedule is invalid: {e}", job.id);
    db.set_cron_enabled(job.id, false)?;
    db.record_cron_result(job.id, now, &format!("failed: invalid schedule: {e}"))
}

/// `YYYY-MM-DD HH:MM` in `tz`.
pub fn local_text(utc: i64, tz: &Tz) -> String {
    let c = tz.to_local(utc);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        c.year, c.month, c.day, c.hour, c.minute
    )
}

/// The job's next run as shown by `cron list` and `cron_list`.
pub fn next_run_text(job: &CronJob, tz: &Tz) -> String {
    match (job.enabled, job.next_run) {
        (true, Some(t)) => local_text(t, tz),
        (true, None) => "waiting for the clock to be set".into(),
        (false, _) => "never (disabled)".into(),
    }
}

/// The listing shared by `cron list` and the `cron_list` tool.
pub fn list_text(db: &Db, tz: &Tz) -> Result<String, StoreError> {
    let jobs = db.list_cron_jobs()?;
    if jobs.is_empty() {
        return Ok("No cron jobs.".to_string());
    }
    let mut out = String::new();
    for j in &jobs {
        let kind = if j.is_message { "message" } else { "prompt" };
        let to = Target::parse(&j.target)
            .map(|t| t.label())
            .unwrap_or_else(|| j.target.clone());
        out.push_str(&format!(
            "#{} {} | next: {} ({}) | {} | to {}\n   {kind}: {}\n   last: {}\n",
            j.id,
            j.schedule,
            next_run_text(j, tz),
            tz.name(),
            if j.enabled { "enabled" } else { "disabled" },
            to,
            one_line(&j.prompt, 80),
            match (j.last_run, &j.last_result) {
                (Some(t), Some(r)) => format!("{} {}", local_text(t, tz), r),
                _ => "never ran".to_string(),
            }
        ));
    }
    Ok(out.trim_end().to_string())
}

/// `s` on one line, at most `max` chars, with `…` when cut.
fn one_line(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        return flat;
    }
    let mut out: String = flat.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000; // 2027-01-15 08:00 UTC

    fn req<'a>(schedule: &'a str, text: &'a str, to: Option<&'a str>) -> JobRequest<'a> {
        JobRequest {
            schedule,
            text,
            to,
            is_message: true,
        }
    }

    #[test]
    fn add_validates_and_plans() {
        let db = Db::open_in_memory().unwrap();
        let j = add(
            &db,
            &Tz::Utc,
            &req("every 15m", "hi", Some("stdout")),
            NOW,
            0,
        )
        .unwrap();
        assert_eq!(j.next_run, Some(NOW + 900));
        assert_eq!(j.target, "stdout");
        let j = add(&db, &Tz::Utc, &req("*/15 * * * *", "hi", None), NOW + 60, 0).unwrap();
        assert_eq!(j.next_run, Some(NOW + 900));
        assert_eq!(j.target, "");
        assert!(matches!(
            add(&db, &Tz::Utc, &req("every 0m", "hi", None), NOW, 0),
            Err(CronError::BadSchedule(_))
        ));
        assert!(matches!(
            add(&db, &Tz::Utc, &req("every 1h", " ", None), NOW, 0),
            Err(CronError::EmptyText)
        ));
        assert!(matches!(
            add(
                &db,
                &Tz::Utc,
                &req("every 1h", "x", Some("mail:me")),
                NOW,
                0
            ),
            Err(CronError::BadTarget(_))
        ));
        let long = "x".repeat(MAX_CRON_TEXT_BYTES + 1);
        assert!(matches!(
            add(&db, &Tz::Utc, &req("every 1h", &long, None), NOW, 0),
            Err(CronError::TextTooLong)
        ));
        assert!(matches!(
            add(
                &db,
                &Tz::Utc,
                &req("at 2020-01-01T00:00", "x", None),
                NOW,
                0
            ),
            Err(CronError::AtInThePast)
        ));
        assert_eq!(db.cron_job_count().unwrap(), 2);
    }

    #[test]
    fn before_the_clock_is_set_jobs_wait_unplanned() {
        let db = Db::open_in_memory().unwrap();
        let j = add(&db, &Tz::Utc, &req("every 15m", "hi", None), 86_400, NOW).unwrap();
        assert_eq!(j.next_run, None);
        // An `at` in the "past" of a 1970 clock is accepted and planned later.
        let a = add(
            &db,
            &Tz::Utc,
            &req("at 2027-02-01T09:00", "x", None),
            86_400,
            NOW,
        )
        .unwrap();
        assert_eq!(a.next_run, None);
        assert_eq!(plan_unplanned(&db, &Tz::Utc, NOW).unwrap(), 2);
        assert_eq!(
            db.get_cron_job(j.id).unwrap().unwrap().next_run,
            Some(NOW + 900)
        );
        assert!(db.get_cron_job(a.id).unwrap().unwrap().next_run.is_some());
        assert_eq!(plan_unplanned(&db, &Tz::Utc, NOW).unwrap(), 0);
    }

    #[test]
    fn listing_shows_next_run_in_the_zone_and_the_last_result() {
        let db = Db::open_in_memory().unwrap();
        assert_eq!(list_text(&db, &Tz::Utc).unwrap(), "No cron jobs.");
        let tz = Tz::Fixed(2 * 3600);
        let j = add(
            &db,
            &tz,
            &req("every 1h", "water\nplants", Some("telegram:42")),
            NOW,
            0,
        )
        .unwrap();
        db.record_cron_result(j.id, NOW, "delivered to telegram:42")
            .unwrap();
        let t = list_text(&db, &tz).unwrap();
        assert!(t.contains("#1 every 1h"), "{t}");
        assert!(t.contains("next: 2027-01-15 11:00 (+02:00)"), "{t}");
        assert!(t.contains("to telegram:42"), "{t}");
        assert!(t.contains("message: water plants"), "{t}");
        assert!(
            t.contains("last: 2027-01-15 10:00 delivered to telegram:42"),
            "{t}"
        );
    }

    #[test]
    fn remove_unknown_is_not_found() {
        let db = Db::open_in_memory().unwrap();
        assert!(matches!(remove(&db, 7), Err(CronError::NotFound(7))));
        assert!(!CronError::NotFound(7).is_usage());
        assert!(CronError::EmptyText.is_usage());
    }

    #[test]
    fn a_large_backward_step_replans_but_keeps_one_shots() {
        let db = Db::open_in_memory().unwrap();
        let far = NOW + 10 * 365 * 86_400;
        let e = add(&db, &Tz::Utc, &req("every 1h", "x", None), far, 0).unwrap();
        let a = add(
            &db,
            &Tz::Utc,
            &req("at 2040-01-01T00:00", "x", None),
            far - 1000 * 86_400,
            0,
        )
        .unwrap();
        replan_all(&db, &Tz::Utc, NOW).unwrap();
        assert_eq!(
            db.get_cron_job(e.id).unwrap().unwrap().next_run,
            Some(NOW + 3600)
        );
        assert_eq!(db.get_cron_job(a.id).unwrap().unwrap().next_run, a.next_run);
    }

    #[test]
    fn random_requests_never_panic_and_only_valid_ones_are_stored() {
        let db = Db::open_in_memory().unwrap();
        let pieces = [
            "every",
            "at",
            " ",
            "*",
            "/",
            "-",
            ",",
            "5",
            "0",
            "59",
            "61",
            "m",
            "h",
            "d",
            "2027-01-15T09:00",
            "mon",
            "jan",
            "@daily",
            "telegram:",
            "42",
            "stdout",
            "é",
            "\n",
            "\u{0}",
            "99999999999999999999",
        ];
        let mut x = crate::testkit::XorShift(0x1234_5678_9abc_def1);
        let mut next = || x.next();
        for _ in 0..3000 {
            let mut parts = [String::new(), String::new(), String::new()];
            for p in parts.iter_mut() {
                for _ in 0..(next() % 8) {
                    p.push_str(pieces[(next() % pieces.len() as u64) as usize]);
                }
            }
            let req = JobRequest {
                schedule: &parts[0],
                text: &parts[1],
                to: Some(&parts[2]),
                is_message: next() & 1 == 0,
            };
            if let Ok(job) = add(&db, &Tz::Utc, &req, NOW, 0) {
                assert!(Schedule::parse(&job.schedule).is_ok());
                assert!(Target::parse(&job.target).is_some());
                assert!(!job.prompt.trim().is_empty());
                db.remove_cron_job(job.id).unwrap();
            }
        }
    }

    #[test]
    fn one_line_cuts_long_text() {
        assert_eq!(one_line("a\nb", 10), "a b");
        assert_eq!(one_line(&"é".repeat(100), 5), "éééé…");
    }
}
