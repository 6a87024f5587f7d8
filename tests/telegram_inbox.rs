//! The Telegram message flow under stress, end to end: the real gateway against a fake
//! Bot API and scripted fake models, killed with SIGKILL mid-turn and restarted on the
//! same home (a power cut, the OOM killer, a watchdog), through a Telegram outage, with a
//! streamed answer cut early, and with a burst of messages to one busy chat
//! (docs/DECISIONS.md 88, 89).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::binary::TEST_NOW;
use support::fake_http::{
    FakeServer, Response, chat_bodies, openai_sse, openai_text, openai_tool_call,
};
use support::fake_telegram::FakeTelegram;
use support::gateway::{BARRIER_REPLY, FAST_BACKOFF, Gateway, fast_backoff};
use support::{TempHome, config_for, hook};
use yoctoclaw::store::Db;

const ALICE: i64 = 42;

fn config(llm: &FakeServer, tg: &FakeTelegram) -> String {
    config_for(
        &llm.url(),
        &format!(
            r#""telegram":{{"enabled":true,"api_base":"{}","allow_from":["{ALICE}"],"poll_timeout_secs":1}}"#,
            tg.url()
        ),
    )
}

fn start(home: &TempHome, env: &[(&str, &str)]) -> Gateway {
    let mut all = vec![FAST_BACKOFF, ("RUST_LOG", "debug")];
    all.extend_from_slice(env);
    Gateway::start(home, &all)
}

fn db(home: &TempHome) -> Db {
    Db::open(&home.dir.join("yoctoclaw.db"), 64).unwrap()
}

/// Messages stored and waiting for a turn.
fn waiting(home: &TempHome) -> i64 {
    db(home)
        .conn
        .query_row("SELECT count(*) FROM inbox", [], |r| r.get(0))
        .unwrap()
}

/// A fake model whose first call never answers in time (the gateway is killed while it
/// waits) and whose later calls answer at once with `answer N` (N counts from 1).
fn stuck_then_quick() -> FakeServer {
    let n = Arc::new(AtomicUsize::new(0));
    FakeServer::start(move |req| {
        if !req.path.ends_with("/v1/chat/completions") {
            return Response::json(404, r#"{"error":{"message":"no route"}}"#);
        }
        match n.fetch_add(1, Ordering::SeqCst) {
            0 => Response::Delay(
                Duration::from_secs(60),
                Box::new(Response::json(200, &openai_text("too late"))),
            ),
            i => Response::json(200, &openai_text(&format!("answer {i}"))),
        }
    })
}

/// The text of every `sendMessage` to Alice (refused attempts included), the replies to
/// [`settle_and_stop`]'s barriers left out.
fn texts(tg: &FakeTelegram) -> Vec<String> {
    tg.sent_to(ALICE)
        .into_iter()
        .map(|s| s.text)
        .filter(|t| !t.starts_with(BARRIER_REPLY))
        .collect()
}

/// Stop cleanly once nothing more (a replay, a resumed turn, a late answer) can be on its
/// way to Alice: the reply to a `/help` she sends now has arrived ([`Gateway::barrier`]),
/// and nothing came after it by the time the gateway stopped.
fn settle_and_stop(mut g: Gateway, tg: &FakeTelegram) -> String {
    g.barrier(tg, ALICE);
    let log = g.stop_cleanly();
    let last = tg.sent_to(ALICE).pop().map(|s| s.text).unwrap_or_default();
    assert!(
        last.starts_with(BARRIER_REPLY),
        "sent after the barrier: {last:?}\n{log}"
    );
    log
}

/// The last message of a Chat Completions request: what the turn answers.
fn last_message(body: &str) -> String {
    use yoctoclaw::json::{as_array, get, parse_value, str_at};
    let v = parse_value(body).unwrap();
    let msgs = get(&v, "messages").and_then(as_array).unwrap();
    str_at(msgs.last().unwrap(), "content").unwrap().to_string()
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn a_turn_killed_mid_way_is_answered_after_the_restart_and_so_is_what_waited_behind_it() {
    let llm = stuck_then_quick();
    let tg = FakeTelegram::start();
    tg.push_private(ALICE, "alice", "first question");
    let home = TempHome::onboarded("tg-kill", &config(&llm, &tg));
    let mut g = start(&home, &[]);
    g.wait_for("the first model call", || {
        llm.requests_to("/chat/completions").len() == 1
    });
    tg.push_private(ALICE, "alice", "second, sent meanwhile");
    tg.push_private(ALICE, "alice", "third, sent meanwhile");
    g.wait_for("both stored", || waiting(&home) == 2);
    g.kill();
    assert!(texts(&tg).is_empty(), "nothing answered before the kill");

    let mut g = start(&home, &[]);
    g.wait_for("two answers", || texts(&tg).len() >= 2);
    let log = settle_and_stop(g, &tg);
    assert_eq!(texts(&tg), vec!["answer 1", "answer 2"], "{log}");
    let turns = llm.requests_to("/chat/completions");
    assert_eq!(turns.len(), 3, "{log}");
    // The interrupted turn is answered from its own question...
    assert!(turns[1].body.contains("first question"));
    assert!(!turns[1].body.contains("second, sent meanwhile"));
    // ...then what waited behind it, as one message in order.
    assert!(
        turns[2]
            .body
            .contains(r#""content":"second, sent meanwhile\n\nthird, sent meanwhile""#),
        "{}",
        turns[2].body
    );
    assert!(log.contains("1 turn(s) resumed"), "{log}");
    assert!(db(&home).owed_replies().unwrap().is_empty());
    assert_eq!(waiting(&home), 0);

    // Nothing is answered twice, however often the gateway restarts.
    let g = start(&home, &[]);
    settle_and_stop(g, &tg);
    assert_eq!(texts(&tg).len(), 2);
    assert_eq!(llm.requests_to("/chat/completions").len(), 3);
}

#[test]
fn a_turn_killed_after_a_tool_round_is_resumed_from_that_round() {
    let n = Arc::new(AtomicUsize::new(0));
    let llm = FakeServer::start(move |_| {
        match n.fetch_add(1, Ordering::SeqCst) {
            0 => Response::json(200, &openai_tool_call("c1", "list_dir", r#""{}""#)),
            // The request after the tool round never answers in time: the kill comes.
            1 => Response::Delay(
                Duration::from_secs(60),
                Box::new(Response::json(200, &openai_text("too late"))),
            ),
            _ => Response::json(200, &openai_text("the folder holds your notes")),
        }
    });
    let tg = FakeTelegram::start();
    tg.push_private(ALICE, "alice", "what is in my folder?");
    let home = TempHome::onboarded("tg-kill-tool", &config(&llm, &tg));
    let mut g = start(&home, &[]);
    g.wait_for("the request after the tool round", || {
        llm.requests().len() == 2
    });
    g.kill();
    let mut g = start(&home, &[]);
    g.wait_for("the answer", || !texts(&tg).is_empty());
    let log = settle_and_stop(g, &tg);
    assert_eq!(texts(&tg), vec!["the folder holds your notes"], "{log}");
    let turns = llm.requests();
    assert_eq!(turns.len(), 3, "{log}");
    // The stored round (the call and its result) is sent again, the tool not run again.
    let resumed = &turns[2].body;
    assert!(resumed.contains(r#""tool_call_id":"c1""#), "{resumed}");
    assert_eq!(resumed.matches(r#""role":"tool""#).count(), 1, "{resumed}");
    assert!(log.contains("1 turn(s) resumed"), "{log}");
}

#[test]
fn messages_a_day_old_after_a_crash_are_told_in_one_line_never_answered() {
    let llm = stuck_then_quick();
    let tg = FakeTelegram::start();
    let t0 = unix_now();
    let (then, later) = (t0.to_string(), (t0 + 25 * 3600).to_string());
    tg.push_private(ALICE, "alice", "what about yesterday?");
    let home = TempHome::onboarded("tg-old", &config(&llm, &tg));
    let mut g = start(&home, &[(hook(TEST_NOW), &then)]);
    g.wait_for("the model call", || {
        llm.requests_to("/chat/completions").len() == 1
    });
    tg.push_private(ALICE, "alice", "and this?");
    tg.push_private(ALICE, "alice", "hello??");
    g.wait_for("both stored", || waiting(&home) == 2);
    g.kill();

    // The board comes back 25 hours later.
    let mut g = start(&home, &[(hook(TEST_NOW), &later)]);
    g.wait_for("the told line", || !texts(&tg).is_empty());
    let log = settle_and_stop(g, &tg);
    let sent = texts(&tg);
    assert_eq!(sent.len(), 1, "one line for the chat: {sent:?}\n{log}");
    assert!(
        sent[0].starts_with("Your 3 messages from ")
            && sent[0].contains("were not answered because the device restarted"),
        "{}",
        sent[0]
    );
    assert_eq!(
        llm.requests_to("/chat/completions").len(),
        1,
        "not answered"
    );
    assert!(db(&home).owed_replies().unwrap().is_empty());
    assert_eq!(waiting(&home), 0);

    // Told once: another restart says nothing more.
    let g = start(&home, &[(hook(TEST_NOW), &later)]);
    settle_and_stop(g, &tg);
    assert_eq!(texts(&tg).len(), 1);
}

#[test]
fn a_reply_is_retried_through_a_telegram_outage_and_survives_a_restart() {
    let llm = chat_bodies(vec![openai_text("the answer")], Duration::ZERO);
    let tg = FakeTelegram::start();
    // Nine failures in a row: about 10 minutes of backoff at full scale (here 1/100): this
    // needs the waits shortened.
    let scale = fast_backoff();
    tg.script_sends(vec![Response::text(502, "Bad Gateway"); 9]);
    tg.push_private(ALICE, "alice", "are you there?");
    let home = TempHome::onboarded("tg-outage", &config(&llm, &tg));
    let mut g = start(&home, &[scale]);
    g.wait_for("the answer after the outage", || texts(&tg).len() >= 10);
    let log = settle_and_stop(g, &tg);
    let sent = texts(&tg);
    assert_eq!(sent.len(), 10, "{sent:?}\n{log}");
    assert!(sent.iter().all(|t| t == "the answer"));
    assert!(db(&home).owed_replies().unwrap().is_empty(), "recorded");

    // Now Telegram cannot be reached at all, and the board is killed meanwhile.
    tg.script_sends(vec![Response::Hangup; 10_000]);
    tg.push_private(ALICE, "alice", "and now?");
    let mut g = start(&home, &[]);
    g.wait_for("a few failed sends", || texts(&tg).len() >= 13);
    g.kill();
    assert_eq!(db(&home).owed_replies().unwrap().len(), 1, "owed, on disk");
    tg.clear_send_script();
    let mut g = start(&home, &[]);
    g.wait_for("the answer sent again", || {
        tg.sent().len() >= 14 && waiting(&home) == 0
    });
    let log = settle_and_stop(g, &tg);
    assert_eq!(
        llm.requests_to("/chat/completions").len(),
        2,
        "sent again, not asked again: {log}"
    );
    assert!(log.contains("1 answer(s) sent again"), "{log}");
    assert_eq!(texts(&tg).last().map(String::as_str), Some("the answer"));
    assert!(db(&home).owed_replies().unwrap().is_empty());
}

#[test]
fn a_stream_cut_in_its_first_second_is_retried_like_any_other_failure() {
    // The first stream shows a few words, then the connection ends without `[DONE]`.
    let cut = Response::Chunked {
        status: 200,
        content_type: "text/event-stream".into(),
        chunks: vec![
            b"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n".to_vec(),
            b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Half an \"}}]}\n\n".to_vec(),
        ],
        pause: Duration::from_millis(20),
    };
    let whole = openai_sse(&["A whole ", "answer."], Duration::from_millis(20));
    let llm = support::fake_http::chat_model(vec![cut, whole]);
    let tg = FakeTelegram::start();
    tg.push_private(ALICE, "alice", "tell me");
    let cfg = config(&llm, &tg).replacen(
        r#""model":"fake-model""#,
        r#""model":"fake-model","stream":true"#,
        1,
    );
    let home = TempHome::onboarded("tg-cut", &cfg);
    // The retry after the cut waits the real backoff (under a second).
    let mut g = start(&home, &[]);
    g.wait_for("the answer", || !texts(&tg).is_empty());
    let log = settle_and_stop(g, &tg);
    let shown: Vec<String> = tg
        .shown_to(ALICE)
        .into_iter()
        .map(|s| s.text)
        .filter(|t| !t.starts_with(BARRIER_REPLY))
        .collect();
    assert_eq!(
        shown.last().map(String::as_str),
        Some("A whole answer."),
        "{shown:?}\n{log}"
    );
    assert!(
        shown.iter().all(|t| !t.contains("could not answer")),
        "{shown:?}"
    );
    assert_eq!(llm.requests_to("/chat/completions").len(), 2);
    assert!(log.contains("retrying"), "{log}");
}

#[test]
fn fifty_messages_sent_during_a_turn_all_reach_the_model_and_none_is_refused() {
    let n = Arc::new(AtomicUsize::new(0));
    let llm = FakeServer::start(move |_| {
        let body = Response::json(200, &openai_text("done"));
        match n.fetch_add(1, Ordering::SeqCst) {
            0 => Response::Delay(Duration::from_secs(2), Box::new(body)),
            _ => body,
        }
    });
    let tg = FakeTelegram::start();
    tg.push_private(ALICE, "alice", "first");
    let home = TempHome::onboarded("tg-burst", &config(&llm, &tg));
    let mut g = start(&home, &[]);
    g.wait_for("the first model call", || llm.requests().len() == 1);
    let note = |i: usize| format!("note {i:02} end");
    for i in 1..=25 {
        tg.push_private(ALICE, "alice", &note(i));
    }
    // A command ends the collection: what came before is one turn, what comes after the
    // next (docs/DECISIONS.md 88).
    tg.push_private(ALICE, "alice", "/status");
    for i in 26..=50 {
        tg.push_private(ALICE, "alice", &note(i));
    }
    let all_read = || {
        let bodies: Vec<String> = llm.requests().into_iter().map(|r| r.body).collect();
        (1..=50).all(|i| bodies.iter().any(|b| b.contains(&note(i))))
    };
    g.wait_for("all 50 texts at the model", all_read);
    g.wait_for("every turn answered", || {
        texts(&tg).iter().filter(|t| *t == "done").count() == llm.requests().len()
    });
    let log = settle_and_stop(g, &tg);
    let sent = texts(&tg);
    assert!(
        sent.iter().all(|t| !t.contains("still working")),
        "no busy reply: {sent:?}"
    );
    let turns = llm.requests();
    assert!(
        turns.len() <= 5,
        "collected, not one turn each: {}\n{log}",
        turns.len()
    );
    let asked: Vec<String> = turns.iter().map(|t| last_message(&t.body)).collect();
    assert!(
        asked
            .iter()
            .all(|m| !(m.contains(&note(25)) && m.contains(&note(26)))),
        "the command split the collection: {asked:?}"
    );
    let status = sent
        .iter()
        .position(|t| t.starts_with("yoctoclaw "))
        .unwrap();
    assert_eq!(sent.len(), turns.len() + 1, "{sent:?}");
    assert!(
        status >= 2 && status < sent.len() - 1,
        "in its place: {sent:?}"
    );
    assert_eq!(waiting(&home), 0);
}

#[test]
fn a_burst_past_16_kib_is_read_from_the_newest_and_the_rest_is_named_in_one_line() {
    let n = Arc::new(AtomicUsize::new(0));
    let llm = FakeServer::start(move |_| {
        let body = Response::json(200, &openai_text("ok"));
        match n.fetch_add(1, Ordering::SeqCst) {
            0 => Response::Delay(Duration::from_secs(2), Box::new(body)),
            _ => body,
        }
    });
    let tg = FakeTelegram::start();
    tg.push_private(ALICE, "alice", "start");
    let home = TempHome::onboarded("tg-cut16", &config(&llm, &tg));
    let mut g = start(&home, &[]);
    g.wait_for("the first model call", || llm.requests().len() == 1);
    for i in 0..30 {
        tg.push_private(ALICE, "alice", &format!("part {i:02} {}", "z".repeat(1000)));
    }
    g.wait_for("all stored", || waiting(&home) == 30);
    g.wait_for("the second turn answered", || {
        texts(&tg).iter().filter(|t| *t == "ok").count() == 2
    });
    let log = settle_and_stop(g, &tg);
    let turns = llm.requests();
    assert_eq!(turns.len(), 2, "{log}");
    assert!(turns[1].body.contains("part 29"), "the newest is read");
    assert!(!turns[1].body.contains("part 00"), "the oldest is cut");
    let cut = (0..30)
        .filter(|i| !turns[1].body.contains(&format!("part {i:02}")))
        .count();
    let sent = texts(&tg);
    let told = sent
        .iter()
        .find(|t| t.starts_with("I could not read your"))
        .unwrap_or_else(|| panic!("{sent:?}"));
    assert!(
        told.contains(&format!("your {cut} earliest messages")),
        "{told}"
    );
}
