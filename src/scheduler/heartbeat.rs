//! The heartbeat: every `heartbeat.interval_mins` the assistant reads workspace
//! `HEARTBEAT.md` and checks in by itself, from the gateway or from a system crontab
//! (`yoctoclaw heartbeat`).
//!
//! One check-in ([`check_in`]):
//! 1. held while the clock is before the binary's build time (no RTC, not synced yet);
//! 2. a missing file, or one of only headings, HTML comments (also over several lines),
//!    rules and blank lines, is skipped with no model call and takes no lease;
//! 3. the daemon's timer ([`Trigger::Timer`]) claims the `heartbeat.lease` state row for
//!    the interval (minus `LEASE_SLACK_SECS`) and defers when it is taken; a run by hand
//!    or from a crontab ([`Trigger::Manual`]) always runs, and then takes the interval
//!    from the timer, so the daemon and a crontab never both deliver in one interval;
//! 4. every run holds `heartbeat.running` while it runs (at most `RUNNING_LEASE_SECS`),
//!    so two check-ins never run at the same time (two overlapping crontab runs: one
//!    delivers, the other is skipped);
//! 5. the agent runs the file's content in session `heartbeat` with an instruction to
//!    answer `HEARTBEAT_OK` when nothing needs attention; a reply holding `HEARTBEAT_OK`
//!    is not delivered, anything else goes to `heartbeat.deliver_to`;
//! 6. `heartbeat.last_run` (Unix seconds as text) and `heartbeat.last_result` (a short
//!    outcome) are written to the state table for `status`.
//!
//! A failed check-in keeps its interval lease: the next timer try is one interval later,
//! so a provider that is down is not hammered.
//!
//! # Bounds
//! `HEARTBEAT.md` is read up to `MAX_HEARTBEAT_FILE_BYTES` (the rest is not sent). The
//! recorded outcome is cut to `MAX_OUTCOME_BYTES`.
//!
//! # Threads
//! Executor thread: the lease and records in SQLite; the turn awaits the model on a
//! worker thread; `HEARTBEAT.md` is one capped read of a small file.

use super::Deps;
use crate::agent::{Agent, AgentError};
use crate::chat::{ChannelKind, DeliverError, Target};
use crate::store::{Db, StoreError};
use std::fmt;
use std::path::Path;

/// The workspace file the heartbeat reads.
pub const HEARTBEAT_FILE: &str = "HEARTBEAT.md";
/// The session heartbeat turns run in.
pub const HEARTBEAT_SESSION: &str = "heartbeat";
/// The answer that means "nothing needs attention"; replies holding it are not delivered.
pub const OK_TOKEN: &str = "HEARTBEAT_OK";
/// State key: Unix seconds of the last check-in, as text (read by `status`).
pub const LAST_RUN_KEY: &str = "heartbeat.last_run";
/// State key: outcome of the last check-in (read by `status`).
pub const LAST_RESULT_KEY: &str = "heartbeat.last_result";
/// State key: the lease (expiry in Unix seconds) that makes overlapping runs run once.
pub const LEASE_KEY: &str = "heartbeat.lease";
/// The lease ends this much before the interval does, so a crontab run that starts a
/// little earlier than the previous one did still runs.
pub const LEASE_SLACK_SECS: i64 = 60;
/// Largest part of `HEARTBEAT.md` read and sent to the model.
pub const MAX_HEARTBEAT_FILE_BYTES: usize = 16 * 1024;
/// The state key a check-in in progress holds (any trigger), so two never run at once.
pub const RUNNING_KEY: &str = "heartbeat.running";
/// Longest a check-in holds [`RUNNING_KEY`]: a run that crashed frees it after this.
pub const RUNNING_LEASE_SECS: i64 = 15 * 60;
/// Longest outcome text recorded.
pub const MAX_OUTCOME_BYTES: usize = 300;

/// What a check-in did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The model answered `HEARTBEAT_OK`: nothing delivered.
    Ok,
    /// The reply was delivered to this target.
    Delivered(Target),
    /// No model call was made.
    Skipped(Skip),
}

/// Why a check-in made no model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// `heartbeat.enabled` is false.
    Disabled,
    /// The clock is before the binary's build time.
    ClockNotSet,
    /// The daemon's timer: another run holds this interval's lease.
    AlreadyRan,
    /// Another check-in is running right now.
    Running,
    /// No `HEARTBEAT.md` in the workspace.
    NoFile,
    /// The file holds only headings, comments and blank lines.
    Empty,
}

impl Outcome {
    /// The short text recorded as `heartbeat.last_result`.
    pub fn text(&self) -> String {
        match self {
            Outcome::Ok => format!("ok ({OK_TOKEN})"),
            Outcome::Delivered(t) => format!("delivered to {}", t.label()),
            Outcome::Skipped(Skip::Disabled) => "skipped: disabled".into(),
            Outcome::Skipped(Skip::ClockNotSet) => "held: clock before build time".into(),
            Outcome::Skipped(Skip::AlreadyRan) => "skipped: already ran this interval".into(),
            Outcome::Skipped(Skip::Running) => "skipped: another check-in is running".into(),
            Outcome::Skipped(Skip::NoFile) => format!("skipped: no {HEARTBEAT_FILE}"),
            Outcome::Skipped(Skip::Empty) => "skipped: empty".into(),
        }
    }
}

/// Who asked for a check-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The daemon's timer: defers to a run already made this interval.
    Timer,
    /// `yoctoclaw heartbeat` (by hand or from a crontab): always runs unless another
    /// check-in is running at this moment; the daemon's timer then defers to it.
    Manual,
}

/// Why a check-in failed.
#[derive(Debug)]
pub enum HeartbeatError {
    Agent(AgentError),
    Deliver(DeliverError),
    Store(StoreError),
}

impl fmt::Display for HeartbeatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeartbeatError::Agent(e) => e.fmt(f),
            HeartbeatError::Deliver(e) => write!(f, "delivery failed: {e}"),
            HeartbeatError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for HeartbeatError {}

impl From<StoreError> for HeartbeatError {
    fn from(e: StoreError) -> Self {
        HeartbeatError::Store(e)
    }
}

/// The interval in seconds.
pub fn interval_secs(interval_mins: u64) -> i64 {
    i64::try_from(interval_mins.max(1).saturating_mul(60)).unwrap_or(i64::MAX / 4)
}

/// One check-in at `now` (see the module doc). `floor` is the earliest sane clock
/// (`crate::time::build_epoch()`).
pub async fn check_in(
    agent: &Agent,
    deps: &Deps,
    now: i64,
    floor: i64,
    trigger: Trigger,
) -> Result<Outcome, HeartbeatError> {
    let c = deps.cfg();
    let cfg = &c.heartbeat;
    if !cfg.enabled {
        return Ok(Outcome::Skipped(Skip::Disabled));
    }
    if now < floor {
        return Ok(Outcome::Skipped(Skip::ClockNotSet));
    }
    // Nothing to do takes no lease: a run by hand right after still runs.
    let content = match read_file(&deps.workspace.join(HEARTBEAT_FILE)) {
        None => Some(Skip::NoFile),
        Some(c) if !has_tasks(&c) => Some(Skip::Empty),
        Some(c) => return run_leased(agent, deps, &c, now, trigger).await,
    };
    let skipped = Outcome::Skipped(content.unwrap_or(Skip::Empty));
    record(&deps.db, now, &skipped.text())?;
    Ok(skipped)
}

/// Take the leases `trigger` needs, run the check-in, record it.
async fn run_leased(
    agent: &Agent,
    deps: &Deps,
    content: &str,
    now: i64,
    trigger: Trigger,
) -> Result<Outcome, HeartbeatError> {
    let interval = interval_secs(deps.cfg().heartbeat.interval_mins);
    let until = now.saturating_add(interval - LEASE_SLACK_SECS.min(interval / 2));
    let db = &deps.db;
    if trigger == Trigger::Timer && !db.claim_lease(LEASE_KEY, now, until, interval)? {
        return Ok(Outcome::Skipped(Skip::AlreadyRan));
    }
    let running_until = now.saturating_add(RUNNING_LEASE_SECS);
    if !db.claim_lease(RUNNING_KEY, now, running_until, RUNNING_LEASE_SECS)? {
        return Ok(Outcome::Skipped(Skip::Running));
    }
    let result = run_claimed(agent, deps, content).await;
    let text = match &result {
        Ok(o) => o.text(),
        Err(e) => format!("failed: {e}"),
    };
    db.write_batch(|| {
        // Done: free the running lease; a run by hand also takes this interval from the
        // daemon's timer, so the two never both deliver in one interval.
        db.set_state(RUNNING_KEY, &now.to_string())?;
        if trigger == Trigger::Manual {
            db.set_state(LEASE_KEY, &until.to_string())?;
        }
        record(db, now, &text)
    })?;
    result
}

async fn run_claimed(agent: &Agent, deps: &Deps, content: &str) -> Result<Outcome, HeartbeatError> {
    let reply = agent
        .run_turn(HEARTBEAT_SESSION, ChannelKind::Heartbeat, &prompt(content))
        .await
        .map_err(HeartbeatError::Agent)?;
    if reply.contains(OK_TOKEN) {
        return Ok(Outcome::Ok);
    }
    let target = Target::parse(&deps.cfg().heartbeat.deliver_to).unwrap_or(Target::Log);
    deps.outbound
        .deliver(&target, &reply)
        .await
        .map_err(HeartbeatError::Deliver)?;
    Ok(Outcome::Delivered(target))
}

/// Write `heartbeat.last_run` and `heartbeat.last_result`.
pub fn record(db: &Db, ran_at: i64, outcome: &str) -> Result<(), StoreError> {
    db.set_state(LAST_RUN_KEY, &ran_at.to_string())?;
    db.set_state(LAST_RESULT_KEY, &cut(outcome, MAX_OUTCOME_BYTES))
}

fn cut(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("").to_string()
}

fn read_file(path: &Path) -> Option<String> {
    crate::agent::prompt::read_capped(path, MAX_HEARTBEAT_FILE_BYTES)
}

/// What the model is asked.
pub fn prompt(content: &str) -> String {
    format!(
        "This is a scheduled heartbeat check-in; no one is waiting for an answer. \
         Below is HEARTBEAT.md, the user's list of things to check. Do what it asks. \
         If nothing needs the user's attention, answer exactly {OK_TOKEN} and nothing else. \
         Otherwise answer with a short message for the user: it will be delivered to them.\n\n\
         <heartbeat_md>\n{}\n</heartbeat_md>",
        content.trim()
    )
}

/// True when the file holds anything besides headings, HTML comments, horizontal rules
/// and blank lines. Comments may span lines; an unclosed comment runs to the end.
pub fn has_tasks(text: &str) -> bool {
    let mut in_comment = false;
    for line in text.lines() {
        let mut rest = line;
        let mut visible = String::new();
        // Each pass consumes at least the 4 bytes of a marker, so this ends.
        loop {
            if in_comment {
                match rest.find("-->") {
                    Some(i) => {
                        rest = rest.get(i + 3..).unwrap_or("");
                        in_comment = false;
                    }
                    None => break,
                }
            } else {
                match rest.find("<!--") {
                    Some(i) => {
                        visible.push_str(rest.get(..i).unwrap_or(""));
                        rest = rest.get(i + 4..).unwrap_or("");
                        in_comment = true;
                    }
                    None => {
                        visible.push_str(rest);
                        break;
                    }
                }
            }
        }
        if line_has_content(visible.trim()) {
            return true;
        }
    }
    false
}

fn line_has_content(t: &str) -> bool {
    if t.is_empty() {
        return false;
    }
    // ATX heading: 1-6 `#` then a space or the end.
    let hashes = t.bytes().take_while(|&b| b == b'#').count();
    if (1..=6).contains(&hashes) {
        let after = t.get(hashes..).unwrap_or("");
        if after.is_empty() || after.starts_with([' ', '\t']) {
            return false;
        }
    }
    // Setext underlines and thematic breaks (`===`, `---`, `***`, `___`).
    !t.chars().all(|c| matches!(c, '=' | '-' | '*' | '_' | ' '))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = "# Heartbeat\n\n<!-- Every heartbeat interval the assistant reads this file. While it holds only headings,\n     comments and blank lines, no model call is made. Add tasks as plain lines, e.g.:\n     - Check disk space and tell me if it is above 90%.\n     The assistant answers HEARTBEAT_OK when nothing needs your attention. -->\n";

    #[test]
    fn the_onboard_template_has_no_tasks() {
        assert!(!has_tasks(TEMPLATE));
        assert!(!has_tasks(""));
        assert!(!has_tasks("\n\n  \n"));
        assert!(!has_tasks("# A\n## B\n###### C\n=====\n---\n***\n#\n"));
        assert!(!has_tasks("<!-- a --> <!-- b\n c --> \n# h"));
    }

    #[test]
    fn any_plain_line_is_a_task() {
        assert!(has_tasks("# Heartbeat\n- check the disk\n"));
        assert!(has_tasks(&format!("{TEMPLATE}Check the weather.\n")));
        assert!(has_tasks("<!-- c --> text after a comment"));
        assert!(has_tasks("text before <!-- a comment -->"));
        assert!(has_tasks("#hashtag is not a heading"));
        assert!(has_tasks("####### seven hashes is text"));
        assert!(has_tasks("Title\n====="));
    }

    #[test]
    fn an_unclosed_comment_hides_the_rest() {
        assert!(!has_tasks("# h\n<!-- open\nstill comment\n- not a task"));
        assert!(has_tasks("<!-- a -->\n<!-- b -->\nreal"));
    }

    #[test]
    fn has_tasks_follows_headings_comments_and_task_lines_on_random_input() {
        let mut x = crate::testkit::XorShift(0x9e37_79b9_7f4a_7c15);
        let alphabet = [
            "<!--", "-->", "#", " ", "\n", "a", "é", "-", "=", "<", "!", "\t",
        ];
        for _ in 0..5000 {
            let mut s = String::new();
            for _ in 0..x.below(40) {
                s.push_str(alphabet[x.index(alphabet.len())]);
            }
            let t = has_tasks(&s);
            // Properties: a heading or a blank line after the text changes nothing; the
            // text inside one comment has no tasks; a task line after a text with no
            // comment open makes tasks.
            assert_eq!(has_tasks(&format!("{s}\n# Heading\n\n")), t, "{s:?}");
            if !s.contains("-->") {
                assert!(!has_tasks(&format!("<!--\n{s}\n-->")), "{s:?}");
            }
            if !s.contains("<!--") {
                assert!(has_tasks(&format!("{s}\n- water the plants\n")), "{s:?}");
            }
        }
    }

    #[test]
    fn the_prompt_holds_the_file_and_the_token() {
        let p = prompt("- check the disk\n");
        assert!(p.contains("- check the disk"));
        assert!(p.contains(OK_TOKEN));
    }

    #[test]
    fn outcome_texts_are_what_status_shows() {
        assert_eq!(Outcome::Ok.text(), "ok (HEARTBEAT_OK)");
        assert_eq!(Outcome::Skipped(Skip::Empty).text(), "skipped: empty");
        assert_eq!(
            Outcome::Delivered(Target::Telegram(42)).text(),
            "delivered to telegram:42"
        );
        assert_eq!(Outcome::Delivered(Target::Log).text(), "delivered to log");
    }

    #[test]
    fn record_writes_both_keys() {
        let db = Db::open_in_memory().unwrap();
        record(&db, 1234, &"x".repeat(1000)).unwrap();
        assert_eq!(db.get_state(LAST_RUN_KEY).unwrap().as_deref(), Some("1234"));
        assert_eq!(
            db.get_state(LAST_RESULT_KEY).unwrap().unwrap().len(),
            MAX_OUTCOME_BYTES
        );
    }
}
