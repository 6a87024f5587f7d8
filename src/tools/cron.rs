//! Cron tools for the model: `cron_add`, `cron_list`, `cron_remove`, over the same
//! validation and listing as the `cron` command (`crate::jobs`).
//!
//! `cron_add` and `cron_remove` change what runs unattended: they are listed in
//! `tools::needs_approval` (supervised autonomy asks the user first) and refused outright
//! in `read_only` autonomy. A Telegram chat named as a job's target passes the same check
//! as `send_message` (`message::allowed_chat`): an id in `telegram.allow_from`, or this chat.
//!
//! # Bounds
//! Job text up to `jobs::MAX_CRON_TEXT_BYTES`, at most `MAX_CRON_JOBS` jobs; the listing
//! is one short block per job and is cut by the agent's tool-result cap.
//!
//! # Threads
//! Executor thread (it owns the SQLite connection); each call is one short statement or
//! read, nothing here awaits I/O of its own.

use super::{Args, CallContext, ToolError};
use crate::chat::ToolSpec;
use crate::chat::{ChannelKind, Target};
use crate::config::{Autonomy, Config};
use crate::jobs::{self, CronError, JobRequest};
use crate::store::Db;
use crate::time::build_epoch;
use std::borrow::Cow;

pub const CRON_ADD: ToolSpec = ToolSpec {
    name: Cow::Borrowed("cron_add"),
    description: Cow::Borrowed(
        "Schedule a job that runs by itself later: at each time, the prompt runs through the assistant (or, with message=true, is sent as is) and the result is delivered. Times are in the user's time zone. Returns the job id.",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"schedule":{"type":"string","description":"When to run: a 5-field cron expression 'minute hour day-of-month month day-of-week' such as '0 8 * * 1-5' (weekdays at 08:00) or '*/30 9-17 * * *'; or 'every N' with unit s, m, h or d such as 'every 2h' (at least 1m); or 'at YYYY-MM-DDTHH:MM' for once, e.g. 'at 2026-12-01T09:00'"},"prompt":{"type":"string","description":"What the assistant should do each time (e.g. 'Check the weather in Berlin and tell me if I need an umbrella'), or the exact text to send when message is true"},"message":{"type":"boolean","description":"true: send prompt word for word without running the assistant (reminders). Default false"},"to":{"type":"string","description":"Where to deliver: 'telegram:<chat_id>', 'stdout', or '' for the log only. Default: this chat when talking on Telegram, else the heartbeat's target"}},"required":["schedule","prompt"]}"#,
    ),
};

pub const CRON_LIST: ToolSpec = ToolSpec {
    name: Cow::Borrowed("cron_list"),
    description: Cow::Borrowed(
        "List scheduled jobs: id, schedule, next run in the user's time zone, enabled, target, text and last result.",
    ),
    parameters: Cow::Borrowed(r#"{"type":"object","properties":{}}"#),
};

pub const CRON_REMOVE: ToolSpec = ToolSpec {
    name: Cow::Borrowed("cron_remove"),
    description: Cow::Borrowed("Delete a scheduled job by its id (see cron_list)."),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"id":{"type":"integer","minimum":1,"description":"The job id shown by cron_list"}},"required":["id"]}"#,
    ),
};

fn tool_err(e: CronError) -> ToolError {
    if e.is_usage() {
        ToolError::BadArgs(e.to_string())
    } else {
        ToolError::Failed(e.to_string())
    }
}

fn refuse_read_only(cfg: &Config) -> Result<(), ToolError> {
    if cfg.agent.autonomy == Autonomy::ReadOnly {
        return Err(ToolError::Denied(
            "autonomy is read_only: cron jobs cannot be changed".into(),
        ));
    }
    Ok(())
}

/// Where a job goes when the model names no target: the Telegram chat it is talking in,
/// else `heartbeat.deliver_to`.
pub fn default_target(ctx: &CallContext, cfg: &Config) -> String {
    if ctx.channel == ChannelKind::Telegram
        && let Some(t @ Target::Telegram(_)) = Target::parse(&ctx.session)
    {
        return t.to_string();
    }
    cfg.heartbeat.deliver_to.clone()
}

pub fn add(
    db: &Db,
    cfg: &Config,
    ctx: &CallContext,
    args: &Args,
    now: i64,
) -> Result<String, ToolError> {
    refuse_read_only(cfg)?;
    let tz = jobs::timezone(&cfg.agent.timezone).map_err(|e| ToolError::Failed(e.to_string()))?;
    let default_to = default_target(ctx, cfg);
    let chosen = args.opt_str("to")?;
    // A chat the model names must be one `send_message` could reach; the default (this
    // chat, or the owner's heartbeat.deliver_to) is not the model's choice.
    if let Some(Target::Telegram(id)) = chosen.and_then(|t| Target::parse(t.trim())) {
        super::message::allowed_chat(cfg, ctx, id)?;
    }
    let req = JobRequest {
        schedule: args.str("schedule")?,
        text: args.str("prompt")?,
        to: Some(chosen.unwrap_or(&default_to)),
        is_message: args.opt_bool("message")?.unwrap_or(false),
    };
    let job = jobs::add(db, &tz, &req, now, build_epoch()).map_err(tool_err)?;
    let to = Target::parse(&job.target)
        .map(|t| t.label())
        .unwrap_or_default();
    Ok(format!(
        "Added cron job {}: {}, next run {} ({}), delivered to {}.",
        job.id,
        job.schedule,
        jobs::next_run_text(&job, &tz),
        tz.name(),
        to
    ))
}

/// One-line approval summary of a `cron_add` call.
pub fn add_summary(args: &Args) -> Result<String, ToolError> {
    let schedule = args.str("schedule")?;
    let text = args.str("prompt")?;
    let is_message = args.opt_bool("message")?.unwrap_or(false);
    let to = args.opt_str("to")?.unwrap_or("");
    let what = if is_message { "send" } else { "run" };
    let to = if to.trim().is_empty() {
        String::new()
    } else {
        format!(" to {}", to.trim())
    };
    Ok(format!(
        "Add cron job ({}): {what} {text:?}{to}",
        schedule.trim()
    ))
}

/// One-line approval summary of a `cron_remove` call.
pub fn remove_summary(args: &Args) -> Result<String, ToolError> {
    let id = args
        .opt_u64("id")?
        .ok_or_else(|| ToolError::BadArgs("\"id\" is required".into()))?;
    Ok(format!("Remove cron job {id}"))
}

pub fn list(db: &Db, cfg: &Config) -> Result<String, ToolError> {
    let tz = jobs::timezone(&cfg.agent.timezone).map_err(|e| ToolError::Failed(e.to_string()))?;
    jobs::list_text(db, &tz).map_err(|e| ToolError::Failed(e.to_string()))
}

pub fn remove(db: &Db, cfg: &Config, args: &Args) -> Result<String, ToolError> {
    refuse_read_only(cfg)?;
    let id = args
        .opt_u64("id")?
        .ok_or_else(|| ToolError::BadArgs("\"id\" is required".into()))?;
    let id = i64::try_from(id).map_err(|_| tool_err(CronError::NotFound(i64::MAX)))?;
    jobs::remove(db, id).map_err(tool_err)?;
    Ok(format!("Removed cron job {id}."))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn ctx(channel: ChannelKind, session: &str) -> CallContext {
        CallContext {
            session: session.into(),
            channel,
        }
    }

    #[test]
    fn add_list_remove_round_trip() {
        let db = Db::open_in_memory().unwrap();
        let cfg = Config::default();
        let c = ctx(ChannelKind::Telegram, "telegram:42");
        let a = Args::parse(r#"{"schedule":"every 2h","prompt":"drink water","message":true}"#)
            .unwrap();
        let out = add(&db, &cfg, &c, &a, NOW).unwrap();
        assert!(out.starts_with("Added cron job 1: every 2h"), "{out}");
        assert!(out.contains("delivered to telegram:42"), "{out}");
        let l = list(&db, &cfg).unwrap();
        assert!(
            l.contains("#1 every 2h") && l.contains("message: drink water"),
            "{l}"
        );
        let r = Args::parse(r#"{"id":"1"}"#).unwrap();
        assert_eq!(remove(&db, &cfg, &r).unwrap(), "Removed cron job 1.");
        assert!(matches!(remove(&db, &cfg, &r), Err(ToolError::Failed(_))));
        assert_eq!(list(&db, &cfg).unwrap(), "No cron jobs.");
    }

    #[test]
    fn the_default_target_is_this_chat_or_the_heartbeat_target() {
        let mut cfg = Config::default();
        cfg.heartbeat.deliver_to = "stdout".into();
        assert_eq!(
            default_target(&ctx(ChannelKind::Telegram, "telegram:-100"), &cfg),
            "telegram:-100"
        );
        assert_eq!(
            default_target(&ctx(ChannelKind::Terminal, "stdio:default"), &cfg),
            "stdout"
        );
    }

    #[test]
    fn bad_arguments_are_errors_the_model_can_fix() {
        let db = Db::open_in_memory().unwrap();
        let cfg = Config::default();
        let c = ctx(ChannelKind::Terminal, "stdio:default");
        for bad in [
            r#"{"prompt":"x"}"#,
            r#"{"schedule":"every 2 fortnights","prompt":"x"}"#,
            r#"{"schedule":"every 1h","prompt":""}"#,
            r#"{"schedule":"every 1h","prompt":"x","to":"email:me"}"#,
            r#"{"schedule":"every 1h","prompt":"x","message":"maybe"}"#,
            r#"{"schedule":5,"prompt":"x"}"#,
        ] {
            let a = Args::parse(bad).unwrap();
            assert!(
                matches!(add(&db, &cfg, &c, &a, NOW), Err(ToolError::BadArgs(_))),
                "{bad}"
            );
        }
        for bad in [r#"{}"#, r#"{"id":-1}"#, r#"{"id":"x"}"#] {
            let a = Args::parse(bad).unwrap();
            assert!(remove(&db, &cfg, &a).is_err(), "{bad}");
        }
        assert_eq!(db.cron_job_count().unwrap(), 0);
    }

    #[test]
    fn a_named_chat_must_be_allowed_like_send_message() {
        let db = Db::open_in_memory().unwrap();
        let mut cfg = Config::default();
        cfg.telegram.allow_from = vec!["42".into(), "@bob".into()];
        let job = |to: &str| format!(r#"{{"schedule":"every 1h","prompt":"x","to":"{to}"}}"#);
        let term = ctx(ChannelKind::Terminal, "stdio:default");
        let chat = ctx(ChannelKind::Telegram, "telegram:-100");
        for (c, to) in [
            (&term, "telegram:99"),
            (&chat, "telegram:99"),
            (&term, "telegram:-100"),
        ] {
            let a = Args::parse(&job(to)).unwrap();
            assert!(
                matches!(add(&db, &cfg, c, &a, NOW), Err(ToolError::Denied(_))),
                "{to}"
            );
        }
        assert_eq!(db.cron_job_count().unwrap(), 0);
        for (c, to) in [
            (&term, "telegram:42"),
            (&chat, "telegram:-100"),
            (&term, "stdout"),
            (&term, ""),
        ] {
            let a = Args::parse(&job(to)).unwrap();
            assert!(add(&db, &cfg, c, &a, NOW).is_ok(), "{to}");
        }
        // The default target (this chat) needs no listing.
        let a = Args::parse(r#"{"schedule":"every 1h","prompt":"x"}"#).unwrap();
        assert!(
            add(&db, &cfg, &chat, &a, NOW)
                .unwrap()
                .contains("telegram:-100")
        );
    }

    #[test]
    fn read_only_autonomy_refuses_changes() {
        let db = Db::open_in_memory().unwrap();
        let mut cfg = Config::default();
        cfg.agent.autonomy = Autonomy::ReadOnly;
        let c = ctx(ChannelKind::Terminal, "stdio:default");
        let a = Args::parse(r#"{"schedule":"every 1h","prompt":"x"}"#).unwrap();
        assert!(matches!(
            add(&db, &cfg, &c, &a, NOW),
            Err(ToolError::Denied(_))
        ));
        assert!(list(&db, &cfg).is_ok());
    }
}
