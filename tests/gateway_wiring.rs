//! The gateway as a whole: the scheduler (cron, heartbeat, daily memory retention)
//! running beside Telegram, deliveries through the gateway's sender, the status record,
//! and streamed replies (drafts or one edited message) against a fake Bot API and a
//! fake OpenAI-compatible model that streams with pauses.
//!
//! Time checks here are lower bounds only ("at least 0.9 s apart"): a slow machine makes
//! calls later, never earlier.

mod support;

use std::time::Duration;
use support::fake_http::{
    FakeServer, Response, chat_model, openai_sse, openai_text, openai_tool_call,
};
use support::fake_telegram::{FakeTelegram, Shown, message};
use support::gateway::{BARRIER_REPLY, FAST_BACKOFF, Gateway};
use support::{TempHome, config_for, text};
use yoctoclaw::agent::think::{self, ThinkStart};
use yoctoclaw::channels::telegram::reply::reply_parts;
use yoctoclaw::config::ProviderConfig;
use yoctoclaw::scheduler::heartbeat;
use yoctoclaw::store::Db;
use yoctoclaw::store::memory::Category;

const ALICE: i64 = 42;
const TASKS: &str = "# Heartbeat\n- Check the backups and tell me if one is older than a day.\n";

fn tg_config(llm: &FakeServer, tg: &FakeTelegram, extra: &str) -> String {
    config_for(
        &llm.url(),
        &format!(
            r#""telegram":{{"enabled":true,"api_base":"{}","allow_from":["{ALICE}"],"poll_timeout_secs":1}}{extra}"#,
            tg.url()
        ),
    )
}

/// The same config with `"stream":true` in the provider section.
fn streaming(config: String) -> String {
    config.replacen(
        r#""model":"fake-model""#,
        r#""model":"fake-model","stream":true"#,
        1,
    )
}

fn db(home: &TempHome) -> Db {
    Db::open(&home.dir.join("yoctoclaw.db"), 64).unwrap()
}

/// Record what an earlier answer of the fake model left in the store: its answers start
/// outside thinking, so its streams show text as it comes (a model never seen before
/// holds its first answer until the end: `agent::think`).
fn answers_seen_before(home: &TempHome, llm: &FakeServer) {
    let cfg = ProviderConfig {
        base_url: format!("{}/v1", llm.url()),
        model: "fake-model".into(),
        ..ProviderConfig::default()
    };
    think::remember(&db(home), &cfg, ThinkStart::Outside).unwrap();
}

/// The gateway with `RUST_LOG=debug` and `env`.
fn start(home: &TempHome, env: &[(&str, &str)]) -> Gateway {
    let mut all = vec![("RUST_LOG", "debug")];
    all.extend_from_slice(env);
    Gateway::start(home, &all)
}

/// The wall clock, Unix seconds (these tests run on the real clock: no test hook).
fn unix_now() -> i64 {
    support::tls::unix_now()
}

/// Add cron job 1 (`cron add ARGS`), then leave it in the store as a board that was off
/// when it was due leaves it: its next run an hour ago.
fn cron_add_overdue(home: &TempHome, now: i64, args: &[&str]) {
    let mut all = vec!["cron", "add"];
    all.extend_from_slice(args);
    let out = home.cmd(&all).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    db(home).set_cron_next_run(1, Some(now - 3600)).unwrap();
}

// ---------------------------------------------------------------- scheduler in the gateway

#[test]
fn a_due_cron_job_is_delivered_through_the_gateways_sender() {
    let llm = chat_model(vec![Response::json(200, &openai_text("unused"))]);
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("gw-cron", &tg_config(&llm, &tg, ""));
    let t = unix_now();
    cron_add_overdue(
        &home,
        t,
        &[
            "every 1h",
            "**Stretch** your legs & drink water",
            "--to",
            "telegram:42",
            "--message",
        ],
    );
    // The first sendMessage is rate limited: the sender retries it, never drops it.
    tg.script_sends(vec![Response::json(
        429,
        r#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 1","parameters":{"retry_after":1}}"#,
    )]);
    let mut g = start(&home, &[FAST_BACKOFF]);
    let d = db(&home);
    g.wait_for("the job's result", || {
        d.get_cron_job(1)
            .unwrap()
            .is_some_and(|j| j.last_result.is_some())
    });
    let log = g.stop_cleanly();
    // The fake records every call: the refused one, then the retry.
    let sent = tg.sent_to(ALICE);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[1].text, "<b>Stretch</b> your legs &amp; drink water");
    assert_eq!(sent[1].text, sent[0].text);
    assert_eq!(sent[1].parse_mode.as_deref(), Some("HTML"));
    let j = d.get_cron_job(1).unwrap().unwrap();
    assert_eq!(j.last_result.as_deref(), Some("delivered to telegram:42"));
    assert!(j.last_run.is_some_and(|r| r >= t), "{:?}", j.last_run);
    // It went through the gateway's sender thread (which logs its sends).
    assert!(log.contains("telegram: sent 1 part(s) to chat 42"), "{log}");
    assert_eq!(llm.requests().len(), 0, "a message job makes no model call");
}

#[test]
fn a_send_message_tool_call_goes_through_the_sender_thread_with_its_429_wait_and_order() {
    const BOB: i64 = 43;
    // Alice's turn calls send_message; Bob's answer is ready while that message waits
    // out a 429. One sender thread means one order and one rate limit for the bot: Bob's
    // reply may not overtake the retry, and Alice's answer comes after her progress note.
    let llm = FakeServer::start(|req| {
        if !req.path.ends_with("/v1/chat/completions") {
            return Response::json(404, "{}");
        }
        if req.body.contains("reply to bob") {
            let r = Response::json(200, &openai_text("Bob's answer"));
            return Response::Delay(Duration::from_millis(300), Box::new(r));
        }
        if req.body.contains("\"role\":\"tool\"") {
            return Response::json(200, &openai_text("Alice's answer"));
        }
        Response::json(
            200,
            &openai_tool_call("c1", "send_message", r#"{"text":"progress note"}"#),
        )
    });
    let tg = FakeTelegram::start();
    tg.script_sends(vec![Response::json(
        429,
        r#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 1","parameters":{"retry_after":1}}"#,
    )]);
    tg.push_private(ALICE, "alice", "work on it and send me a progress note");
    tg.push_private(BOB, "bob", "reply to bob");
    let config = config_for(
        &llm.url(),
        &format!(
            r#""agent":{{"autonomy":"full"}},"telegram":{{"enabled":true,"api_base":"{}","allow_from":["{ALICE}","{BOB}"],"poll_timeout_secs":1}}"#,
            tg.url()
        ),
    );
    let home = TempHome::onboarded("gw-send-message", &config);
    // Real backoff (no scale): the 429's retry_after is honoured as Telegram says.
    let mut g = start(&home, &[]);
    g.wait_for("both answers", || {
        tg.sent_to(ALICE).len() == 3 && tg.sent_to(BOB).len() == 1
    });
    let log = g.stop_cleanly();
    let alice = tg.shown_to(ALICE);
    let bob = tg.shown_to(BOB);
    let texts: Vec<&str> = alice.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(
        texts,
        ["progress note", "progress note", "Alice's answer"],
        "refused note, its retry, then the answer"
    );
    let waited = alice[1].at - alice[0].at;
    assert!(
        waited >= Duration::from_millis(900),
        "retry_after honoured: {waited:?}"
    );
    assert!(
        bob[0].at >= alice[1].at,
        "Bob's reply overtook the rate-limited note: the note bypassed the sender thread"
    );
    assert!(
        log.contains("telegram: sent 1 part(s) to chat 42"),
        "the sender thread sent the note:\n{log}"
    );
}

#[test]
fn a_heartbeat_that_needs_attention_is_delivered_by_the_gateway() {
    let llm = chat_model(vec![Response::json(
        200,
        &openai_text("The backup is **3 days** old."),
    )]);
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded(
        "gw-hb",
        &tg_config(
            &llm,
            &tg,
            r#","heartbeat":{"deliver_to":"telegram:42","interval_mins":30}"#,
        ),
    );
    std::fs::write(home.workspace().join("HEARTBEAT.md"), TASKS).unwrap();
    // The last heartbeat two hours ago (interval 30 min): one is due at start.
    let t = unix_now();
    db(&home)
        .set_state(heartbeat::LAST_RUN_KEY, &(t - 7200).to_string())
        .unwrap();
    let mut g = start(&home, &[FAST_BACKOFF]);
    let d = db(&home);
    g.wait_for("the heartbeat's record", || {
        d.get_state(heartbeat::LAST_RUN_KEY)
            .unwrap()
            .and_then(|v| v.parse::<i64>().ok())
            .is_some_and(|r| r >= t)
    });
    g.wait_for("the delivery", || !tg.sent_to(ALICE).is_empty());
    g.stop_cleanly();
    let sent = tg.sent_to(ALICE);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].text, "The backup is <b>3 days</b> old.");
    assert_eq!(
        d.get_state(heartbeat::LAST_RESULT_KEY).unwrap().as_deref(),
        Some("delivered to telegram:42")
    );
}

#[test]
fn sigterm_during_a_heartbeat_turn_stops_the_scheduler_at_once() {
    let slow = Response::Delay(
        Duration::from_secs(20),
        Box::new(Response::json(200, &openai_text("late"))),
    );
    let llm = chat_model(vec![slow]);
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded(
        "gw-hb-stop",
        &tg_config(&llm, &tg, r#","heartbeat":{"deliver_to":"telegram:42"}"#),
    );
    std::fs::write(home.workspace().join("HEARTBEAT.md"), TASKS).unwrap();
    let t = unix_now();
    db(&home)
        .set_state(heartbeat::LAST_RUN_KEY, &(t - 7200).to_string())
        .unwrap();
    let mut g = start(&home, &[FAST_BACKOFF]);
    g.wait_for("the heartbeat's model call", || !llm.requests().is_empty());
    // `stop` checks: status 0 within the bound, "gateway: stopped".
    g.stop_cleanly();
    assert!(tg.sent_to(ALICE).is_empty());
}

#[test]
fn without_telegram_the_gateway_runs_cron_retention_and_the_status_record() {
    let llm = chat_model(vec![Response::json(200, &openai_text("unused"))]);
    // Telegram is off: the job goes out through the standalone sender to this fake.
    let tg = FakeTelegram::start();
    let config = config_for(
        &llm.url(),
        &format!(r#""telegram":{{"api_base":"{}"}}"#, tg.url()),
    );
    let home = TempHome::onboarded("gw-cron-only", &config);
    let t = unix_now();
    {
        let d = db(&home);
        let old = t - 40 * 86_400;
        d.memory_put("old-note", "an old daily note", Category::Daily, old, old)
            .unwrap();
        d.memory_put("fresh-note", "a fresh daily note", Category::Daily, t, t)
            .unwrap();
        d.memory_put("core-fact", "likes green tea", Category::Core, old, old)
            .unwrap();
    }
    cron_add_overdue(
        &home,
        t,
        &[
            "every 1h",
            "Water the plants",
            "--to",
            "telegram:42",
            "--message",
        ],
    );
    let mut g = start(&home, &[FAST_BACKOFF]);
    let pid = i64::from(g.pid());
    let d = db(&home);
    g.wait_for("the job's result", || {
        d.get_cron_job(1)
            .unwrap()
            .is_some_and(|j| j.last_result.is_some())
    });
    g.wait_for("the status record", || {
        d.get_state("gateway.status").unwrap().is_some()
    });
    let log = g.stop_cleanly();
    assert!(!log.contains("nothing to do"), "{log}");
    assert!(
        log.contains("telegram.enabled is false: running cron"),
        "{log}"
    );
    let sent = tg.sent_to(ALICE);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].text, "Water the plants");
    // Retention ran at start: the expired daily note is gone, the rest kept.
    assert!(d.memory_get("old-note").unwrap().is_none());
    assert!(d.memory_get("fresh-note").unwrap().is_some());
    assert!(d.memory_get("core-fact").unwrap().is_some());
    let status = d.get_state("gateway.status").unwrap().unwrap();
    let num = |k: &str| {
        status
            .split_whitespace()
            .find_map(|f| f.strip_prefix(&format!("{k}=")))
            .and_then(|v| v.parse::<i64>().ok())
    };
    assert_eq!(num("pid"), Some(pid), "{status}");
    assert!(num("rss_kib").is_some_and(|k| k > 0), "{status}");
    assert!(num("hwm_kib").is_some_and(|k| k > 0), "{status}");
    assert_eq!(num("live"), Some(0), "{status}");
    assert!(num("at").is_some_and(|a| a >= t), "{status}");
}

#[test]
fn with_nothing_to_do_the_gateway_says_so_and_still_stops_cleanly() {
    let llm = chat_model(vec![Response::json(200, &openai_text("x"))]);
    let home = TempHome::onboarded("gw-idle", &config_for(&llm.url(), ""));
    let mut g = start(&home, &[]);
    g.wait_for_log("nothing to do yet");
    g.stop_cleanly();
}

// ---------------------------------------------------------------- streamed replies

/// What holds for every streamed reply: no tool-call markup ever shown, and the calls
/// that show it growing (drafts, or the first `sendMessage` and its edits) at least
/// ~1 s apart.
fn check_stream(shown: &[Shown], preview_method: &str) {
    for s in shown {
        assert!(
            !s.text.contains("tool_call") && !s.text.contains("read_file"),
            "markup shown: {s:?}"
        );
    }
    let mut first_send = true;
    let previews: Vec<&Shown> = shown
        .iter()
        .filter(|s| match s.method.as_str() {
            "editMessageText" => true,
            "sendMessage" if preview_method == "sendMessage" => {
                std::mem::replace(&mut first_send, false)
            }
            m => m == preview_method && m != "sendMessage",
        })
        .collect();
    for w in previews.windows(2) {
        let gap = w[1].at.duration_since(w[0].at);
        assert!(
            gap >= Duration::from_millis(900),
            "previews {gap:?} apart: {:?} then {:?}",
            w[0].text,
            w[1].text
        );
    }
}

/// A first request that thinks aloud and calls a tool in text mode, then the answer,
/// both streamed slowly.
fn tool_then_answer(answer_parts: &[&str]) -> Vec<Response> {
    let pause = Duration::from_millis(350);
    vec![
        openai_sse(
            &[
                "Let me ",
                "look at ",
                "the notes.\n<tool",
                "_call>{\"name\":\"read_file\",",
                "\"arguments\":{\"path\":\"notes.txt\"}}",
                "</tool_call>",
            ],
            pause,
        ),
        openai_sse(answer_parts, pause),
    ]
}

#[test]
fn a_streamed_reply_is_one_message_edited_in_place_when_drafts_are_missing() {
    let answer = [
        "The notes ",
        "say: **buy ",
        "milk** ",
        "and call ",
        "Bob at 5 ",
        "<b> & done.",
    ];
    let full: String = answer.concat();
    let llm = chat_model(tool_then_answer(&answer));
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("gw-stream", &streaming(tg_config(&llm, &tg, "")));
    answers_seen_before(&home, &llm);
    std::fs::write(home.workspace().join("notes.txt"), "buy milk, call Bob").unwrap();
    tg.push_private(ALICE, "alice", "what do my notes say?");
    let mut g = start(&home, &[FAST_BACKOFF]);
    let want = reply_parts(&full, true);
    g.wait_for("the final text", || {
        tg.shown_to(ALICE).last().map(|s| s.text.as_str()) == Some(want[0].as_str())
    });
    // Any stray late call (an edit after the final text) would come before the reply to
    // a command sent now: the barrier, then nothing after it.
    g.barrier(&tg, ALICE);
    let log = g.stop_cleanly();
    let mut shown = tg.shown_to(ALICE);
    let barrier = shown.pop().unwrap();
    assert!(
        barrier.text.starts_with(BARRIER_REPLY),
        "shown after the barrier: {barrier:?}"
    );
    let methods: Vec<&str> = shown.iter().map(|s| s.method.as_str()).collect();
    // The draft was refused (404): one message, then edits of it.
    assert_eq!(methods[0], "sendMessageDraft", "{methods:?}");
    assert_eq!(methods[1], "sendMessage", "{methods:?}");
    assert!(
        methods[2..].iter().all(|m| *m == "editMessageText"),
        "{methods:?}"
    );
    assert!(methods.len() >= 4, "it grew in several steps: {methods:?}");
    check_stream(&shown[1..], "sendMessage");
    let last = shown.last().unwrap();
    assert_eq!(last.text, want[0]);
    assert_eq!(want.len(), 1);
    assert_eq!(last.parse_mode.as_deref(), Some("HTML"));
    assert!(last.text.contains("<b>buy milk</b>"), "{}", last.text);
    assert!(last.text.contains("&lt;b&gt; &amp; done."), "{}", last.text);
    assert!(log.contains("drafts are not available"), "{log}");
    // The thinking-aloud text was shown while the tool ran, then replaced.
    assert!(
        shown.iter().any(|s| s.text.starts_with("Let me")),
        "{shown:?}"
    );
}

#[test]
fn a_streamed_reply_uses_drafts_when_the_server_has_them() {
    let answer = ["Sunny ", "all day, ", "no umbrella ", "needed ", "today."];
    let full: String = answer.concat();
    let llm = chat_model(vec![openai_sse(&answer, Duration::from_millis(400))]);
    let tg = FakeTelegram::start();
    tg.set_drafts(true);
    let home = TempHome::onboarded("gw-draft", &streaming(tg_config(&llm, &tg, "")));
    answers_seen_before(&home, &llm);
    tg.push_private(ALICE, "alice", "weather?");
    let mut g = start(&home, &[FAST_BACKOFF]);
    g.wait_for("the final message", || !tg.sent_to(ALICE).is_empty());
    g.stop_cleanly();
    let shown = tg.shown_to(ALICE);
    let (last, drafts) = shown.split_last().unwrap();
    assert!(!drafts.is_empty(), "{shown:?}");
    assert!(
        drafts.iter().all(|s| s.method == "sendMessageDraft"),
        "{shown:?}"
    );
    let id = drafts[0].target.unwrap();
    assert!(id != 0 && drafts.iter().all(|s| s.target == Some(id)));
    check_stream(&shown, "sendMessageDraft");
    assert_eq!(last.method, "sendMessage");
    assert_eq!(last.text, full);
    assert_eq!(tg.sent_to(ALICE).len(), 1);
}

#[test]
fn a_long_streamed_reply_ends_as_the_same_messages_as_a_non_streamed_one() {
    // About 11,000 UTF-16 units with emoji, in a group (mentioned): three messages.
    let unit = "Tea 🍵 and cake 🎂 at five, **bring friends**. ";
    let pieces: Vec<String> = (0..10).map(|_| unit.repeat(25)).collect();
    let parts: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let full: String = parts.concat();
    let llm = chat_model(vec![openai_sse(&parts, Duration::from_millis(250))]);
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("gw-long", &streaming(tg_config(&llm, &tg, "")));
    let group = -100_777;
    tg.push_message(&message(
        group,
        "alice",
        ALICE,
        "supergroup",
        "@yc_test_bot plan the party",
        None,
    ));
    let mut g = start(&home, &[FAST_BACKOFF]);
    let want = reply_parts(full.trim(), true);
    assert!(want.len() >= 3, "{}", want.len());
    g.wait_for("every part", || tg.sent_to(group).len() == want.len());
    g.stop_cleanly();
    let shown = tg.shown_to(group);
    check_stream(&shown, "sendMessage");
    // The streamed message (the first sendMessage) ends as the first part: its last
    // edit, or the message itself when the preview already showed the whole part…
    let edits: Vec<&Shown> = shown
        .iter()
        .filter(|s| s.method == "editMessageText")
        .collect();
    let sends = tg.sent_to(group);
    let streamed = edits
        .last()
        .map_or(sends[0].text.as_str(), |e| e.text.as_str());
    assert_eq!(streamed, want[0]);
    assert!(edits.iter().all(|s| s.target == edits[0].target));
    // …and the other parts follow as new messages, in order, after it.
    let rest: Vec<String> = sends[1..].iter().map(|s| s.text.clone()).collect();
    assert_eq!(rest, want[1..].to_vec());
    assert!(
        sends[0].reply_to.is_some(),
        "the group reply answers the question"
    );
    assert_eq!(shown.last().unwrap().text, want[want.len() - 1]);
}

#[test]
fn a_429_on_an_edit_holds_the_next_one_for_retry_after() {
    let answer = [
        "One, ", "two, ", "three, ", "four, ", "five, ", "six, ", "seven, ", "eight, ", "nine, ",
        "ten.",
    ];
    let full: String = answer.concat();
    let llm = chat_model(vec![openai_sse(&answer, Duration::from_millis(400))]);
    let tg = FakeTelegram::start();
    tg.script_edits(vec![Response::json(
        429,
        r#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 2","parameters":{"retry_after":2}}"#,
    )]);
    let home = TempHome::onboarded("gw-429", &streaming(tg_config(&llm, &tg, "")));
    answers_seen_before(&home, &llm);
    tg.push_private(ALICE, "alice", "count to ten");
    // Real waits here: Telegram's retry_after is honoured as is.
    let mut g = start(&home, &[]);
    g.wait_for("the final text", || {
        tg.shown_to(ALICE).last().map(|s| s.text.as_str()) == Some(full.as_str())
    });
    g.stop_cleanly();
    let shown = tg.shown_to(ALICE);
    let edits: Vec<&Shown> = shown
        .iter()
        .filter(|s| s.method == "editMessageText")
        .collect();
    assert!(edits.len() >= 2, "{shown:?}");
    // The first edit got the 429; the next one waited at least retry_after.
    let gap = edits[1].at.duration_since(edits[0].at);
    assert!(gap >= Duration::from_millis(1900), "{gap:?}: {shown:?}");
    check_stream(&shown[1..], "sendMessage");
}
