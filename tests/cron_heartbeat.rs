//! Heartbeat and cron end to end: the real binary (and, for the daemon's scheduler loop,
//! the library in process) against a fake provider and a fake Telegram Bot API.

mod support;

use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::binary::TEST_NOW;
use support::fake_http::{FakeServer, Request, Response, openai_text};
use support::{TempHome, config_for, hook, text};
use yoctoclaw::agent::Agent;
use yoctoclaw::app::{self, Loaded};
use yoctoclaw::config::{Env, Home};
use yoctoclaw::jobs;
use yoctoclaw::runtime::Workers;
use yoctoclaw::scheduler::{Deps, heartbeat, runner};
use yoctoclaw::store::Db;

const TOKEN: &str = "123456:TEST-TOKEN-abcdef";
/// 2027-01-15 08:00 UTC: after any build time of this binary.
const T: i64 = 1_800_000_000;
const TASKS: &str =
    "# Heartbeat\n<!-- template comment -->\n- Check the disk and tell me if it is above 90%.\n";

/// One fake server for both the provider (`/v1/chat/completions`, answering `reply`
/// after `delay`) and the Bot API (`/bot<token>/sendMessage`).
fn fakes(reply: &str, delay: Duration) -> FakeServer {
    let body = openai_text(reply);
    FakeServer::start(move |req: &Request| {
        if req.path.ends_with("/chat/completions") {
            let r = Response::json(200, &body);
            if delay.is_zero() {
                r
            } else {
                Response::Delay(delay, Box::new(r))
            }
        } else if req.path.ends_with("/sendMessage") {
            Response::json(
                200,
                r#"{"ok":true,"result":{"message_id":1,"date":0,"chat":{"id":42,"type":"private"}}}"#,
            )
        } else {
            Response::json(404, r#"{"ok":false,"description":"Not Found"}"#)
        }
    })
}

fn config(url: &str, heartbeat: &str) -> String {
    config_for(
        url,
        &format!(r#""telegram":{{"api_base":"{url}"}},"heartbeat":{{{heartbeat}}}"#),
    )
}

fn home_with(url: &str, heartbeat: &str) -> TempHome {
    TempHome::onboarded("cronhb", &config(url, heartbeat))
}

fn state(home: &TempHome, key: &str) -> Option<String> {
    let db = Db::open(&home.dir.join("yoctoclaw.db"), 64).unwrap();
    db.get_state(key).unwrap()
}

fn sends(fake: &FakeServer) -> Vec<Request> {
    fake.requests_to("/sendMessage")
}

fn chats(fake: &FakeServer) -> usize {
    fake.requests_to("/chat/completions").len()
}

// ---------------------------------------------------------------- cron CLI

#[test]
fn cron_add_list_remove_round_trip() {
    let fake = fakes("unused", Duration::ZERO);
    let home = TempHome::onboarded(
        "cronrt",
        &config_for(&fake.url(), r#""agent":{"timezone":"+02:00"}"#),
    );
    let now = T.to_string();
    let run = |args: &[&str]| home.cmd(args).env(hook(TEST_NOW), &now).output().unwrap();
    let out = run(&["cron", "list"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("No cron jobs."));

    let out = run(&[
        "cron",
        "add",
        "every 15m",
        "water the plants",
        "--to",
        "stdout",
        "--message",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "cron job 1 added: every 15m, next run 2027-01-15 10:15 (+02:00)\n"
    );
    let out = run(&["cron", "add", "0 7 * * mon-fri", "What is on today?"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("cron job 2 added: 0 7 * * 1-5, next run 2027-01-18 07:00")
    );

    let out = run(&["cron", "list"]);
    let list = text(&out.stdout);
    assert!(
        list.contains("#1 every 15m | next: 2027-01-15 10:15 (+02:00) | enabled | to stdout"),
        "{list}"
    );
    assert!(list.contains("message: water the plants"), "{list}");
    assert!(list.contains("#2 0 7 * * 1-5"), "{list}");
    assert!(list.contains("prompt: What is on today?"), "{list}");
    assert!(list.contains("last: never ran"), "{list}");

    let out = run(&["cron", "remove", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "cron job 1 removed\n");
    let out = run(&["cron", "remove", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no cron job with id 1"));
    let list = text(&run(&["cron", "list"]).stdout);
    assert!(!list.contains("#1 ") && list.contains("#2 "), "{list}");
}

#[test]
fn bad_schedules_and_targets_exit_2_with_a_clear_error() {
    let fake = fakes("unused", Duration::ZERO);
    let home = home_with(&fake.url(), "");
    for (args, needle) in [
        (
            vec!["cron", "add", "every 3 fortnights", "x"],
            "invalid interval",
        ),
        (vec!["cron", "add", "61 * * * *", "x"], "invalid schedule"),
        (vec!["cron", "add", "0 0 30 2 *", "x"], "never fires"),
        (
            vec!["cron", "add", "at 2001-01-01T09:00", "x"],
            "already passed",
        ),
        (
            vec!["cron", "add", "every 1h", "x", "--to", "email:me"],
            "invalid delivery target",
        ),
        (vec!["cron", "add", "every 1h", "  "], "empty"),
    ] {
        let out = home.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.starts_with("yoctoclaw: ") && err.contains(needle),
            "{args:?}: {err}"
        );
    }
    let out = home.run(&["cron", "run", "99"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no cron job with id 99"));
}

#[test]
fn an_unknown_timezone_is_a_clear_error() {
    let fake = fakes("unused", Duration::ZERO);
    let home = TempHome::onboarded(
        "crontz",
        &config_for(&fake.url(), r#""agent":{"timezone":"Mars/Olympus_Mons"}"#),
    );
    let out = home.run(&["cron", "list"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("agent.timezone") && err.contains("Mars/Olympus_Mons"),
        "{err}"
    );
}

#[test]
fn cron_run_sends_a_message_to_telegram_and_records_it() {
    let fake = fakes("unused", Duration::ZERO);
    let home = home_with(&fake.url(), "");
    let out = home.run(&[
        "cron",
        "add",
        "every 1h",
        "Stretch your legs!",
        "--to",
        "telegram:42",
        "--message",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = home
        .cmd(&["cron", "run", "1"])
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "cron job 1: delivered to telegram:42\n");
    let s = sends(&fake);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].path, format!("/bot{TOKEN}/sendMessage"));
    assert!(s[0].body.contains(r#""chat_id":42"#), "{}", s[0].body);
    assert!(
        s[0].body.contains(r#""text":"Stretch your legs!""#),
        "{}",
        s[0].body
    );
    assert_eq!(chats(&fake), 0, "a message job makes no model call");
    let list = text(&home.run(&["cron", "list"]).stdout);
    assert!(list.contains("delivered to telegram:42"), "{list}");
    // The token never shows up in any output.
    assert!(!text(&out.stderr).contains("TEST-TOKEN"));
}

#[test]
fn cron_run_without_a_bot_token_fails_with_exit_1_and_says_what_to_set() {
    let fake = fakes("unused", Duration::ZERO);
    let home = home_with(&fake.url(), "");
    home.run(&[
        "cron",
        "add",
        "every 1h",
        "hi",
        "--to",
        "telegram:42",
        "--message",
    ]);
    let out = home.run(&["cron", "run", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("TELEGRAM_BOT_TOKEN"),
        "{}",
        text(&out.stderr)
    );
    let list = text(&home.run(&["cron", "list"]).stdout);
    assert!(list.contains("failed: delivery to telegram:42"), "{list}");
}

#[test]
fn cron_run_runs_a_prompt_through_the_agent_in_its_own_session() {
    let fake = fakes("Sunny, no umbrella needed.", Duration::ZERO);
    let home = home_with(&fake.url(), "");
    home.run(&["cron", "add", "0 7 * * *", "Weather?", "--to", "stdout"]);
    let out = home.run(&["cron", "run", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "Sunny, no umbrella needed.\ncron job 1: delivered to stdout\n"
    );
    let reqs = fake.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].body.contains("Session: cron:1"), "{}", reqs[0].body);
    assert!(reqs[0].body.contains("Channel: cron"), "{}", reqs[0].body);
    assert!(
        reqs[0].body.contains(r#""content":"Weather?""#),
        "{}",
        reqs[0].body
    );
}

// ---------------------------------------------------------------- heartbeat command

#[test]
fn heartbeat_skips_the_template_file_without_a_model_call() {
    let fake = fakes("should not be asked", Duration::ZERO);
    let home = home_with(&fake.url(), r#""deliver_to":"telegram:42""#);
    let out = home.run(&["heartbeat"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(fake.requests().len(), 0, "no provider call, no delivery");
    assert_eq!(
        state(&home, "heartbeat.last_result").as_deref(),
        Some("skipped: empty")
    );
    let last: i64 = state(&home, "heartbeat.last_run").unwrap().parse().unwrap();
    assert!(last > 1_600_000_000);
}

#[test]
fn heartbeat_without_a_file_is_skipped_and_recorded() {
    let fake = fakes("should not be asked", Duration::ZERO);
    let home = home_with(&fake.url(), "");
    std::fs::remove_file(home.workspace().join("HEARTBEAT.md")).unwrap();
    let out = home.run(&["heartbeat"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(fake.requests().len(), 0);
    assert_eq!(
        state(&home, "heartbeat.last_result").as_deref(),
        Some("skipped: no HEARTBEAT.md")
    );
}

#[test]
fn heartbeat_ok_is_not_delivered() {
    let fake = fakes("All fine. HEARTBEAT_OK", Duration::ZERO);
    let home = home_with(&fake.url(), r#""deliver_to":"telegram:42""#);
    std::fs::write(home.workspace().join("HEARTBEAT.md"), TASKS).unwrap();
    let out = home
        .cmd(&["heartbeat"])
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let reqs = fake.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 1);
    let body = &reqs[0].body;
    assert!(body.contains("Check the disk"), "{body}");
    assert!(body.contains("HEARTBEAT_OK"), "{body}");
    assert!(body.contains("Session: heartbeat"), "{body}");
    assert!(body.contains("Channel: heartbeat"), "{body}");
    assert!(sends(&fake).is_empty());
    assert_eq!(
        state(&home, "heartbeat.last_result").as_deref(),
        Some("ok (HEARTBEAT_OK)")
    );
}

#[test]
fn a_heartbeat_that_needs_attention_is_delivered_to_telegram() {
    let fake = fakes("The disk is 95% full.", Duration::ZERO);
    let home = home_with(&fake.url(), r#""deliver_to":"telegram:42""#);
    std::fs::write(home.workspace().join("HEARTBEAT.md"), TASKS).unwrap();
    let out = home
        .cmd(&["heartbeat"])
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = sends(&fake);
    assert_eq!(s.len(), 1);
    assert!(s[0].body.contains(r#""chat_id":42"#), "{}", s[0].body);
    assert!(s[0].body.contains("The disk is 95% full."), "{}", s[0].body);
    assert_eq!(
        state(&home, "heartbeat.last_result").as_deref(),
        Some("delivered to telegram:42")
    );
    assert!(!text(&out.stderr).contains("TEST-TOKEN"));
}

#[test]
fn a_failed_heartbeat_exits_1_and_records_the_failure() {
    let fake = FakeServer::start(|_req: &Request| {
        Response::json(400, r#"{"error":{"message":"bad request"}}"#)
    });
    let home = home_with(&fake.url(), r#""deliver_to":"stdout""#);
    std::fs::write(home.workspace().join("HEARTBEAT.md"), TASKS).unwrap();
    let out = home.run(&["heartbeat"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("heartbeat failed"),
        "{}",
        text(&out.stderr)
    );
    let r = state(&home, "heartbeat.last_result").unwrap();
    assert!(r.starts_with("failed: "), "{r}");
}

#[test]
fn two_overlapping_heartbeat_runs_deliver_once() {
    // The model takes 4 s, so the two runs overlap even when a loaded machine starts
    // the second process late (with 1.5 s a CI run once saw the second start after the
    // first had finished, and run again, as a run by hand should).
    let fake = fakes("Backup is 3 days old.", Duration::from_secs(4));
    let home = home_with(&fake.url(), r#""deliver_to":"telegram:42""#);
    std::fs::write(home.workspace().join("HEARTBEAT.md"), TASKS).unwrap();
    let spawn = || {
        home.cmd(&["heartbeat"])
            .env("TELEGRAM_BOT_TOKEN", TOKEN)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success(), "{}", text(&a.stderr));
    assert!(b.status.success(), "{}", text(&b.stderr));
    assert_eq!(chats(&fake), 1, "one model call");
    assert_eq!(sends(&fake).len(), 1, "one delivery");
    let skipped = [&a, &b]
        .iter()
        .filter(|o| text(&o.stderr).contains("another check-in is running"))
        .count();
    assert_eq!(skipped, 1, "the overlapping run says why it did nothing");
}

#[test]
fn a_heartbeat_by_hand_always_runs_and_the_daemons_timer_defers_to_it() {
    let fake = fakes("Backup is 3 days old.", Duration::ZERO);
    let home = home_with(&fake.url(), r#""deliver_to":"telegram:42""#);
    let run = || {
        let out = home
            .cmd(&["heartbeat"])
            .env("TELEGRAM_BOT_TOKEN", TOKEN)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    // The onboard template has no tasks: skipped, and no lease is taken...
    run();
    assert_eq!(
        state(&home, "heartbeat.last_result").as_deref(),
        Some("skipped: empty")
    );
    assert_eq!(state(&home, "heartbeat.lease"), None);
    // ...so a run right after the file gets tasks happens at once,
    std::fs::write(home.workspace().join("HEARTBEAT.md"), TASKS).unwrap();
    run();
    assert_eq!(sends(&fake).len(), 1);
    // and a run by hand within the interval runs again (only the timer defers).
    let err = run();
    assert!(!err.contains("already ran"), "{err}");
    assert_eq!(chats(&fake), 2);
    assert_eq!(sends(&fake).len(), 2);
    // The daemon's timer defers to it: the interval lease runs ~an interval ahead.
    let lease: i64 = state(&home, "heartbeat.lease").unwrap().parse().unwrap();
    let last: i64 = state(&home, "heartbeat.last_run").unwrap().parse().unwrap();
    assert!(lease > last + 25 * 60, "lease {lease}, last run {last}");
}

#[test]
fn a_clock_before_the_build_time_holds_the_heartbeat() {
    let fake = fakes("The disk is 95% full.", Duration::ZERO);
    let home = home_with(&fake.url(), r#""deliver_to":"telegram:42""#);
    std::fs::write(home.workspace().join("HEARTBEAT.md"), TASKS).unwrap();
    let out = home
        .cmd(&["heartbeat"])
        .env("TELEGRAM_BOT_TOKEN", TOKEN)
        .env(hook(TEST_NOW), "86400")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("WARN") && err.contains("before this binary was built"),
        "{err}"
    );
    assert!(err.contains("1970-01-02 00:00"), "{err}");
    assert_eq!(fake.requests().len(), 0, "nothing ran");
    assert_eq!(state(&home, "heartbeat.last_run"), None);
}

#[test]
fn cron_add_on_a_1970_clock_waits_for_the_clock() {
    let fake = fakes("unused", Duration::ZERO);
    let home = home_with(&fake.url(), "");
    let out = home
        .cmd(&["cron", "add", "every 1h", "x", "--message"])
        .env(hook(TEST_NOW), "86400")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("waiting for the clock to be set"));
}

// ---------------------------------------------------------------- the daemon's loop, in process

struct InProcess {
    _home: TempHome,
    agent: Rc<Agent>,
    deps: Deps,
    db: Rc<Db>,
}

/// An agent and scheduler wired like the gateway's (through the composition root), on a
/// fresh home, talking to `fake`.
fn in_process(fake: &FakeServer, heartbeat: &str) -> InProcess {
    let home = TempHome::new("loop");
    std::fs::create_dir_all(home.workspace()).unwrap();
    let text = config(&fake.url(), heartbeat);
    let env = Env::isolated(&[("TELEGRAM_BOT_TOKEN", TOKEN)]);
    let cfg = yoctoclaw::config::parse(Some(&text), &home.dir.join("config.json"), &env).unwrap();
    let home_dir = Home {
        dir: home.dir.clone(),
    };
    let l = Loaded::new(home_dir, env, cfg);
    let db = Rc::new(Db::open(&home.dir.join("yoctoclaw.db"), 64).unwrap());
    let workers = Workers::start(1);
    let out = app::outbound(&l, &workers, None);
    let agent = app::agent(
        &l,
        &db,
        &workers,
        app::providers(&l).unwrap(),
        out.clone(),
        None,
    );
    let deps = Deps::new(l.live.clone(), &db, l.home.workspace(), out);
    InProcess {
        _home: home,
        agent,
        deps,
        db,
    }
}

/// Run the scheduler loop with `clock`, calling `step` every 20 ms until it returns true;
/// gives up after a generous bound so a bug fails instead of hanging.
fn run_loop(p: &InProcess, clock: impl Fn() -> i64 + 'static, step: impl Fn() -> bool) {
    let opts = runner::Options {
        clock: Rc::new(clock),
        ..runner::Options::default()
    };
    let finished = smol::block_on(smol::future::or(
        async {
            runner::run(&p.agent, &p.deps, opts).await;
            false
        },
        async {
            for _ in 0..1500 {
                if step() {
                    return true;
                }
                smol::Timer::after(Duration::from_millis(20)).await;
            }
            false
        },
    ));
    assert!(finished, "the scheduler did not get there");
}

#[test]
fn an_at_job_whose_time_passed_runs_once_via_the_scheduler_and_is_disabled() {
    let fake = fakes("Reminder: call the plumber.", Duration::ZERO);
    let p = in_process(&fake, "");
    let tz = jobs::timezone("UTC").unwrap();
    let req = jobs::JobRequest {
        schedule: "at 2027-01-15T09:00",
        text: "Remind me to call the plumber",
        to: Some("telegram:42"),
        is_message: false,
    };
    let job = jobs::add(&p.db, &tz, &req, T, 0).unwrap();
    assert_eq!(job.next_run, Some(T + 3600));
    // The daemon was down at 09:00 and starts at 11:00.
    let db = p.db.clone();
    run_loop(
        &p,
        move || T + 3 * 3600,
        || {
            db.get_cron_job(job.id)
                .unwrap()
                .is_some_and(|j| j.last_result.is_some())
        },
    );
    let j = p.db.get_cron_job(job.id).unwrap().unwrap();
    assert!(!j.enabled, "one-shot jobs are disabled after running");
    assert_eq!(j.next_run, None);
    assert_eq!(j.last_run, Some(T + 3 * 3600));
    assert_eq!(j.last_result.as_deref(), Some("delivered to telegram:42"));
    assert_eq!(chats(&fake), 1);
    let s = sends(&fake);
    assert_eq!(s.len(), 1);
    assert!(s[0].body.contains("call the plumber"), "{}", s[0].body);
}

#[test]
fn a_job_missed_for_a_month_runs_once_and_is_planned_from_now() {
    let fake = fakes("unused", Duration::ZERO);
    let p = in_process(&fake, "");
    let tz = jobs::timezone("UTC").unwrap();
    let req = jobs::JobRequest {
        schedule: "every 15m",
        text: "ping",
        to: Some("telegram:42"),
        is_message: true,
    };
    let job = jobs::add(&p.db, &tz, &req, T - 30 * 86_400, 0).unwrap();
    let db = p.db.clone();
    run_loop(
        &p,
        move || T,
        || {
            db.get_cron_job(job.id)
                .unwrap()
                .is_some_and(|j| j.last_run.is_some())
        },
    );
    let j = p.db.get_cron_job(job.id).unwrap().unwrap();
    assert!(j.enabled);
    assert_eq!(
        j.next_run,
        Some(T + 900),
        "planned from now, missed slots skipped"
    );
    assert_eq!(sends(&fake).len(), 1, "once, not once per missed slot");
}

#[test]
fn the_loop_runs_a_due_heartbeat_and_delivers_it() {
    let fake = fakes("Backup is 3 days old.", Duration::ZERO);
    let p = in_process(&fake, r#""deliver_to":"telegram:42","interval_mins":30"#);
    std::fs::write(p._home.workspace().join("HEARTBEAT.md"), TASKS).unwrap();
    let db = p.db.clone();
    db.set_state(heartbeat::LAST_RUN_KEY, &(T - 7200).to_string())
        .unwrap();
    run_loop(
        &p,
        move || T,
        || db.get_state(heartbeat::LAST_RUN_KEY).unwrap().as_deref() == Some(&*T.to_string()),
    );
    assert_eq!(
        db.get_state(heartbeat::LAST_RESULT_KEY).unwrap().as_deref(),
        Some("delivered to telegram:42")
    );
    assert_eq!(sends(&fake).len(), 1);
}

#[test]
fn the_loop_holds_everything_while_the_clock_is_before_the_build_time() {
    let fake = fakes("The disk is 95% full.", Duration::ZERO);
    let p = in_process(&fake, r#""deliver_to":"telegram:42""#);
    std::fs::write(p._home.workspace().join("HEARTBEAT.md"), TASKS).unwrap();
    let db = p.db.clone();
    db.set_state(heartbeat::LAST_RUN_KEY, "0").unwrap();
    let tz = jobs::timezone("UTC").unwrap();
    let req = jobs::JobRequest {
        schedule: "every 1m",
        text: "ping",
        to: Some("telegram:42"),
        is_message: true,
    };
    let job = jobs::add(&db, &tz, &req, 0, 0).unwrap();
    assert_eq!(job.next_run, Some(60));
    // Let the loop make its first pass (it is immediate), then stop it.
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = calls.clone();
    let settled = std::cell::Cell::new(0);
    run_loop(
        &p,
        move || {
            c2.fetch_add(1, Ordering::SeqCst);
            86_400
        },
        || {
            // The first pass is immediate; then give the loop 200 ms to do anything wrong.
            if calls.load(Ordering::SeqCst) >= 2 {
                settled.set(settled.get() + 1);
            }
            settled.get() > 10
        },
    );
    assert_eq!(fake.requests().len(), 0, "nothing ran");
    let j = db.get_cron_job(job.id).unwrap().unwrap();
    assert_eq!((j.next_run, j.last_run), (Some(60), None));
    assert_eq!(
        db.get_state(heartbeat::LAST_RUN_KEY).unwrap().as_deref(),
        Some("0")
    );
}

#[test]
fn a_job_added_while_the_loop_sleeps_runs_without_waiting_for_the_next_wake() {
    let fake = fakes("unused", Duration::ZERO);
    let p = in_process(&fake, r#""enabled":false"#);
    let db = p.db.clone();
    let tz = jobs::timezone("UTC").unwrap();
    let clock = Rc::new(std::cell::Cell::new(T));
    let added = std::cell::Cell::new(None);
    let polls = std::cell::Cell::new(0);
    run_loop(
        &p,
        move || clock.get(),
        || {
            polls.set(polls.get() + 1);
            match added.get() {
                // Give the loop time to go to sleep (it has nothing to do), then add a job
                // that is already due.
                None if polls.get() > 5 => {
                    let req = jobs::JobRequest {
                        schedule: "every 1h",
                        text: "ping",
                        to: Some("telegram:42"),
                        is_message: true,
                    };
                    added.set(Some(jobs::add(&db, &tz, &req, T - 7200, 0).unwrap().id));
                    false
                }
                None => false,
                Some(id) => {
                    // Other tests' loops in this process share the signal: keep ringing.
                    jobs::notify_jobs_changed();
                    db.get_cron_job(id).unwrap().unwrap().last_run.is_some()
                }
            }
        },
    );
    assert_eq!(sends(&fake).len(), 1);
}

#[test]
fn a_clock_stepped_far_back_replans_the_jobs() {
    let fake = fakes("unused", Duration::ZERO);
    let p = in_process(&fake, r#""enabled":false"#);
    let db = p.db.clone();
    let tz = jobs::timezone("UTC").unwrap();
    // The board's clock was set ten years ahead when the job was planned.
    let wrong = T + 10 * 365 * 86_400;
    let req = jobs::JobRequest {
        schedule: "every 1h",
        text: "ping",
        to: Some("telegram:42"),
        is_message: true,
    };
    let id = jobs::add(&db, &tz, &req, wrong, 0).unwrap().id;
    let clock = Rc::new(std::cell::Cell::new(wrong));
    let polls = std::cell::Cell::new(0);
    let c = clock.clone();
    run_loop(
        &p,
        move || clock.get(),
        || {
            polls.set(polls.get() + 1);
            if polls.get() == 5 {
                // NTP steps the clock back; the loop notices on its next wake.
                c.set(T);
            }
            jobs::notify_jobs_changed();
            db.get_cron_job(id).unwrap().unwrap().next_run == Some(T + 3600)
        },
    );
    assert_eq!(sends(&fake).len(), 0, "re-planned, not run");
}
