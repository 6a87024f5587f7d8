//! Sub-agents end to end: the real binary, a fake OpenAI-compatible model playing both
//! the parent and its workers (told apart by the worker's system prompt): a worker
//! spawned, saved and its answer used in the reply; a saved worker delegated to; a worker
//! asking to spawn another refused; the turn cap and the concurrency cap hit; bad names,
//! huge instructions and unknown workers refused; `yoctoclaw workers` and the audit trail.

mod support;

use std::process::Output;
use std::sync::{Arc, Mutex};
use support::fake_http::{FakeServer, Response, last_message, openai_text, openai_tool_calls};
use support::{TempHome, config_for, succeeded};

/// A model: a worker's request (its system prompt names it a worker) goes to `worker`,
/// any other to `parent`; each gets the last message's role and content and answers a
/// body. Every worker request body is kept.
fn model(
    parent: fn(&str, &str) -> String,
    worker: fn(&str, &str) -> String,
) -> (FakeServer, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let server = FakeServer::start(move |req| {
        let (role, content) = last_message(&req.body);
        let body = if req.body.contains("You are the worker") {
            s.lock().unwrap().push(req.body.clone());
            worker(&role, &content)
        } else {
            parent(&role, &content)
        };
        Response::json(200, &body)
    });
    (server, seen)
}

fn call(name: &str, args: &str) -> String {
    openai_tool_calls(&[(name, args)], None)
}

/// The parent: its user's message is the tool call to make (`NAME ARGS`); once a result
/// is in, it answers `parent saw: RESULT`.
fn parent(role: &str, content: &str) -> String {
    if role == "tool" {
        return openai_text(&format!("parent saw: {content}"));
    }
    let (name, args) = content.split_once(' ').unwrap_or((content, "{}"));
    call(name, args)
}

fn agent(home: &TempHome, msg: &str) -> Output {
    home.cmd(&["agent", "-m", msg])
        .output()
        .expect("run yoctoclaw")
}

#[test]
fn a_worker_is_spawned_saved_delegated_to_and_cannot_spawn_another() {
    // The worker tries to spawn a worker of its own, then answers with what it was told.
    fn worker(role: &str, content: &str) -> String {
        if role == "tool" {
            openai_text(&format!("bonjour; my spawn got: {content}"))
        } else {
            call(
                "spawn_worker",
                r#"{"name":"sub","instructions":"x","task":"y"}"#,
            )
        }
    }
    let (m, seen) = model(parent, worker);
    let home = TempHome::onboarded("workers-spawn", &config_for(&m.url(), ""));
    assert_eq!(
        succeeded(&home.run(&["workers"])).trim(),
        "No saved workers."
    );
    let spawn = r#"spawn_worker {"name":"french","instructions":"Answer in French.\nBe brief.","task":"greet","save":true}"#;
    let out = succeeded(&agent(&home, spawn));
    assert!(out.starts_with("parent saw: "), "{out}");
    assert!(
        out.contains("bonjour"),
        "the worker's answer is the result: {out}"
    );
    assert!(
        out.contains("a worker cannot start or manage workers"),
        "recursion refused: {out}"
    );
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "two worker requests");
        assert!(seen[0].contains("Answer in French."), "its instructions");
        assert!(seen[0].contains("greet"), "its task");
        assert!(
            !seen[0].contains("\"name\":\"spawn_worker\""),
            "no worker tools offered"
        );
        assert!(
            seen[0].contains("\"name\":\"list_dir\""),
            "the parent's other tools"
        );
    }
    let listed = succeeded(&home.run(&["workers"]));
    assert_eq!(listed.trim(), "french: Answer in French.", "{listed}");

    let out = succeeded(&agent(
        &home,
        r#"delegate {"worker":"french","task":"again"}"#,
    ));
    assert!(out.contains("bonjour"), "{out}");
    assert!(seen.lock().unwrap()[2].contains("again"));

    // The audit trail: the parent's calls, and the worker's refused one under its session.
    let trail = succeeded(&home.run(&["audit"]));
    let worker_rows: Vec<&str> = trail
        .lines()
        .filter(|l| l.contains("/worker:french"))
        .collect();
    assert_eq!(worker_rows.len(), 2, "{trail}");
    assert!(
        worker_rows
            .iter()
            .all(|l| l.contains("denied") && l.contains("spawn_worker"))
    );
    assert!(
        trail
            .lines()
            .any(|l| l.contains("delegate") && l.contains(" run ")),
        "{trail}"
    );

    let status = succeeded(&home.run(&["status"]));
    assert!(
        status.contains("workers:    1 saved, none running"),
        "{status}"
    );
    succeeded(&home.run(&["workers", "remove", "french"]));
    assert_eq!(
        succeeded(&home.run(&["workers"])).trim(),
        "No saved workers."
    );
    let gone = home.run(&["workers", "remove", "french"]);
    assert_eq!(gone.status.code(), Some(2));
}

#[test]
fn a_looping_worker_stops_at_its_turn_cap_with_its_last_text() {
    fn worker(_: &str, _: &str) -> String {
        call("list_dir", r#"{"path":"."}"#)
    }
    // Asked without tools (the cap), the fake answers what it would; a real model writes
    // its last text. The turn answers whatever came.
    let (m, seen) = model(parent, worker);
    let home = TempHome::onboarded(
        "workers-cap",
        &config_for(&m.url(), r#""agent":{"worker_max_turns":2}"#),
    );
    let out = agent(
        &home,
        r#"spawn_worker {"name":"loop","instructions":"x","task":"loop"}"#,
    );
    let out = succeeded(&out);
    assert!(out.starts_with("parent saw: "), "{out}");
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.len(),
        3,
        "two tool rounds, then one request without tools"
    );
    assert!(seen[1].contains("\"tools\""));
    assert!(
        !seen[2].contains("\"tools\""),
        "the last request offers no tools"
    );
    assert!(seen[2].contains("You have used all tool rounds"));
}

#[test]
fn bad_names_huge_instructions_unknown_workers_and_a_cap_of_zero_are_refused() {
    fn worker(_: &str, _: &str) -> String {
        openai_text("never")
    }
    let (m, seen) = model(parent, worker);
    let home = TempHome::onboarded("workers-bad", &config_for(&m.url(), ""));
    let long = "x".repeat(5000);
    let cases = [
        (
            r#"spawn_worker {"name":"Bad Name!","instructions":"x","task":"y"}"#.to_string(),
            "a worker name is 1 to 32 of a-z, 0-9, _ and -",
        ),
        (
            format!(
                r#"spawn_worker {{"name":"{}","instructions":"x","task":"y"}}"#,
                "a".repeat(33)
            ),
            "a worker name is 1 to 32",
        ),
        (
            format!(r#"spawn_worker {{"name":"big","instructions":"{long}","task":"y"}}"#),
            "instructions are at most 4096 bytes",
        ),
        (
            r#"delegate {"worker":"nobody","task":"y"}"#.to_string(),
            r#"no saved worker "nobody""#,
        ),
        (
            r#"remove_worker {"name":"nobody"}"#.to_string(),
            "no saved worker",
        ),
    ];
    for (msg, want) in cases {
        let out = succeeded(&agent(&home, &msg));
        assert!(out.contains(want), "{msg}: {out}");
    }
    assert!(seen.lock().unwrap().is_empty(), "no worker ran");

    let off = TempHome::onboarded(
        "workers-off",
        &config_for(&m.url(), r#""agent":{"max_workers":0}"#),
    );
    let out = succeeded(&agent(
        &off,
        r#"spawn_worker {"name":"w","instructions":"x","task":"y"}"#,
    ));
    assert!(out.contains("agent.max_workers is 0"), "{out}");
    assert!(seen.lock().unwrap().is_empty(), "no worker ran");
}

#[test]
fn the_cap_holds_across_turns_status_shows_the_worker_and_shutdown_cancels_it() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::{Duration, Instant};
    use support::http_client::{ask, complete, http_config, start, until};
    let held = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(AtomicBool::new(false));
    let (h, r) = (held.clone(), release.clone());
    // The worker "slow" gets no answer until released (at most 20 s, a hang guard).
    let m = FakeServer::start(move |req| {
        let (role, content) = last_message(&req.body);
        if req.body.contains(r#"You are the worker \"slow\""#) {
            h.fetch_add(1, Ordering::SeqCst);
            let start = Instant::now();
            while !r.load(Ordering::SeqCst) && start.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(10));
            }
            return Response::json(200, &openai_text("late"));
        }
        Response::json(200, &parent(&role, &content))
    });
    let home = TempHome::onboarded(
        "workers-gateway",
        &http_config(&m, None, "", r#","agent":{"max_workers":1}"#),
    );
    let (g, port) = start(&home, true, false);
    let spawn = |name: &str| {
        ask(
            &format!(r#"spawn_worker {{"name":"{name}","instructions":"x","task":"y"}}"#),
            "",
        )
    };
    let slow = spawn("slow");
    let a = std::thread::spawn(move || complete(port, &slow, "X-Session-Id: a\r\n"));
    until("the slow worker's request", || {
        held.load(Ordering::SeqCst) == 1
    });
    until("the running worker in status", || {
        succeeded(&home.run(&["status"])).contains("workers:    0 saved, 1 running: slow@")
    });
    let b = complete(port, &spawn("fast"), "X-Session-Id: b\r\n");
    let answer = support::http_client::answer_of(&b);
    assert!(
        answer.contains("1 worker(s) running, agent.max_workers is 1"),
        "{answer}"
    );
    // Shutdown ends the parent turn, and with it the worker waiting on its model.
    let (status, took, log) = g.stop();
    assert!(status.success(), "{log}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let a = a.join().unwrap();
    assert_ne!(a.status, 200, "{}", a.body);
    release.store(true, Ordering::SeqCst);
    assert_eq!(held.load(Ordering::SeqCst), 1, "the worker asked once");
}
