//! The gateway's HTTP server end to end: the real binary with Telegram on (the fake Bot
//! API) and an echoing fake model, over real sockets. Health (ok and degraded), the token
//! (missing, wrong, right, not configured), the OpenAI-compatible API through the
//! official `openai` Python package (whole and streamed completions, the model list) and
//! through raw requests (sessions by `user` and `X-Session-Id`, commands, keep-alive,
//! pipelining, `Expect: 100-continue`, chunked bodies), the connection cap, and a
//! stream in flight at SIGTERM. The hostile inputs are in `http_bad_input.rs`.
//!
//! The Python test skips loudly (`support::skipped`; a failure under
//! `YOCTOCLAW_NO_SKIP=1`) when `python3` or its `openai` package is missing; `.ci/run`
//! installs it.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::TempHome;
use support::fake_telegram::FakeTelegram;
use support::gateway::TOKEN_SECRET_PART;
use support::http_client::*;

#[test]
fn health_and_the_token_guard_every_route() {
    let llm = echo_model(Duration::ZERO);
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("http-health", &http_config(&llm, Some(&tg), "", ""));
    let (mut g, port) = start(&home, true, true);

    let h = get(port, "/health", None);
    assert_eq!(h.status, 200, "{}", h.body);
    assert_eq!(h.header("content-type"), Some("application/json"));
    assert!(h.body.contains(r#""status":"ok""#), "{}", h.body);
    assert!(
        h.body
            .contains(r#""provider":{"ok":true,"last_result":"none""#),
        "{}",
        h.body
    );
    assert!(h.body.contains(r#""database":{"ok":true}"#), "{}", h.body);
    until("a poll in /health", || {
        get(port, "/health", None)
            .body
            .contains(r#""telegram":{"ok":true,"last_poll_secs":0"#)
    });
    let head = exchange(
        port,
        "HEAD /health HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(head.status, 200);
    assert!(
        head.header("content-length").is_some_and(|n| n != "0") && head.body.is_empty(),
        "{head:?}"
    );

    // The token: missing, wrong, of another scheme, right.
    for auth in [
        None,
        Some("Bearer not-the-token"),
        Some(&format!("Basic {HTTP_TOKEN}")[..]),
    ] {
        let a = auth
            .map(|a| format!("Authorization: {a}\r\n"))
            .unwrap_or_default();
        let r = exchange(
            port,
            &format!("GET /v1/models HTTP/1.1\r\nHost: b\r\n{a}Connection: close\r\n\r\n"),
        );
        assert_eq!(r.status, 401, "{auth:?}: {}", r.body);
        assert_eq!(
            r.header("www-authenticate"),
            Some(r#"Bearer realm="yoctoclaw""#)
        );
        assert!(
            r.error_message().contains("YOCTOCLAW_HTTP_TOKEN"),
            "{}",
            r.body
        );
        assert!(!r.body.contains(HTTP_TOKEN));
    }
    let m = get(port, "/v1/models", Some(HTTP_TOKEN));
    assert_eq!(m.status, 200, "{}", m.body);
    assert!(m.body.contains(r#""id":"yoctoclaw""#), "{}", m.body);
    // Nothing else is told without the token; with it, 404 and 405.
    assert_eq!(get(port, "/admin", None).status, 401);
    assert_eq!(get(port, "/metrics", None).status, 401);
    assert_eq!(get(port, "/admin", Some(HTTP_TOKEN)).status, 404);
    let m = get(port, "/metrics", Some(HTTP_TOKEN));
    assert_eq!(m.status, 200, "{}", m.body);
    assert_eq!(
        m.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert!(m.body.contains("\nyoctoclaw_uptime_seconds "), "{}", m.body);
    let r = get(port, "/v1/chat/completions", Some(HTTP_TOKEN));
    assert_eq!(
        (r.status, r.header("allow")),
        (405, Some("POST")),
        "{}",
        r.body
    );
    let r = complete(port, &ask("hi", ""), "");
    assert_eq!(answer_of(&r), "You said: hi");
    telegram_answers(&mut g, &tg, "still there?");

    // Every provider failing degrades the health until one answers again.
    let r = complete(port, &ask("FAIL now", ""), "");
    assert_eq!(r.status, 502, "{}", r.body);
    assert!(
        r.error_message()
            .starts_with("Sorry, I could not answer that"),
        "{}",
        r.body
    );
    let h = get(port, "/health", None);
    assert_eq!(h.status, 503, "{}", h.body);
    assert!(
        h.body.contains(r#""status":"degraded""#) && h.body.contains(r#""last_result":"error""#),
        "{}",
        h.body
    );
    assert!(
        !h.body.contains("API key"),
        "no error text on the open route: {}",
        h.body
    );
    telegram_answers(&mut g, &tg, "back?");
    let h = get(port, "/health", None);
    assert_eq!(h.status, 200, "{}", h.body);

    let out = g.stop_cleanly();
    assert!(
        !out.contains(HTTP_TOKEN) && !out.contains(TOKEN_SECRET_PART),
        "{out}"
    );
}

#[test]
fn without_a_token_the_api_says_how_to_set_one() {
    let llm = echo_model(Duration::ZERO);
    let home = TempHome::onboarded("http-notoken", &http_config(&llm, None, "", ""));
    let (g, port) = start(&home, false, false);
    let h = get(port, "/health", None);
    assert_eq!(h.status, 200, "{}", h.body);
    assert!(h.body.contains(r#""telegram":null"#), "{}", h.body);
    for path in ["/v1/models", "/metrics", "/nothing"] {
        let r = get(port, path, Some("anything"));
        assert_eq!(r.status, 503, "{path}: {}", r.body);
        assert_eq!(
            r.error_message(),
            "The HTTP API has no token yet: put YOCTOCLAW_HTTP_TOKEN=<a long random string> in secrets.env (or the environment) and restart the gateway."
        );
    }
    assert!(
        g.log().contains("token YOCTOCLAW_HTTP_TOKEN NOT SET"),
        "{}",
        g.log()
    );
    g.stop_cleanly();
}

/// `python3` with the `openai` package, or a loud skip.
fn python_openai() -> bool {
    let what = "the official openai Python client against the gateway";
    match Command::new("python3")
        .args(["-c", "import openai"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => true,
        Ok(_) => {
            support::skipped(what, "python3 cannot import openai (pip install openai)");
            false
        }
        Err(e) => {
            support::skipped(what, &format!("no python3: {e}"));
            false
        }
    }
}

#[test]
fn the_openai_python_client_gets_the_boards_answers_whole_and_streamed() {
    if !python_openai() {
        return;
    }
    let llm = echo_model(Duration::ZERO);
    let tg = FakeTelegram::start();
    // The model streams, so the streamed completion arrives in several chunks.
    let config = http_config(&llm, Some(&tg), "", "").replace(
        r#""model":"fake-model""#,
        r#""model":"fake-model","stream":true"#,
    );
    let home = TempHome::onboarded("http-openai", &config);
    let (mut g, port) = start(&home, true, true);
    let v = python_client(
        &g,
        "openai_client.py",
        &format!("http://127.0.0.1:{port}/v1"),
    );
    let s = |path: &[&str]| json_at(&v, path);
    assert_eq!(s(&["whole", "object"]), r#""chat.completion""#);
    assert_eq!(s(&["whole", "content"]), r#""You said: hello board""#);
    assert_eq!(s(&["whole", "role"]), r#""assistant""#);
    assert_eq!(s(&["whole", "finish"]), r#""stop""#);
    assert_eq!(s(&["whole", "model"]), r#""gpt-4o-mini""#);
    // The model streams without a usage chunk: the board's estimate.
    assert!(
        s(&["whole", "total_tokens"]).parse::<u64>().unwrap() > 0,
        "{}",
        yoctoclaw::json::to_string(&v)
    );
    let parts: Vec<String> = yoctoclaw::json::path(&v, &["stream", "parts"])
        .and_then(yoctoclaw::json::as_array)
        .unwrap()
        .iter()
        .filter_map(|p| yoctoclaw::json::as_str(p).map(str::to_string))
        .collect();
    assert!(parts.len() >= 2, "streamed in pieces: {parts:?}");
    assert_eq!(parts.concat(), "You said: and once more");
    assert_eq!(s(&["stream", "finish"]), r#""stop""#);
    assert_eq!(s(&["stream", "objects"]), r#"["chat.completion.chunk"]"#);
    assert!(
        s(&["stream", "total_tokens"]).parse::<u64>().unwrap() > 0,
        "{}",
        yoctoclaw::json::to_string(&v)
    );
    assert_eq!(s(&["models"]), r#"["yoctoclaw"]"#);
    assert_eq!(s(&["wrong_token"]), "401");

    // One session for user "alice": the second request sent only its last message, and
    // the model saw the first exchange too; the client's system message is not the
    // board's prompt.
    let asked = llm.requests_to("/chat/completions");
    assert_eq!(asked.len(), 2, "{asked:?}");
    let second = &asked[1].body;
    assert!(
        second.contains("hello board") && second.contains("You said: hello board"),
        "{second}"
    );
    assert!(!asked.iter().any(|r| r.body.contains("You are terse.")));
    telegram_answers(&mut g, &tg, "and Telegram?");
    g.stop_cleanly();
}

#[test]
fn sessions_follow_x_session_id_then_user_and_commands_work() {
    let llm = echo_model(Duration::ZERO);
    let home = TempHome::onboarded("http-sessions", &http_config(&llm, None, "", ""));
    let (g, port) = start(&home, true, false);
    let said = |n: usize| llm.requests_to("/chat/completions")[n].body.clone();
    assert_eq!(
        answer_of(&complete(port, &ask("one for bob", r#","user":"bob""#), "")),
        "You said: one for bob"
    );
    assert_eq!(
        answer_of(&complete(
            port,
            &ask("one for the kitchen", r#","user":"bob""#),
            "X-Session-Id: kitchen\r\n"
        )),
        "You said: one for the kitchen"
    );
    assert!(
        !said(1).contains("one for bob"),
        "the header wins over user: {}",
        said(1)
    );
    assert_eq!(
        answer_of(&complete(port, &ask("two for bob", r#","user":"bob""#), "")),
        "You said: two for bob"
    );
    assert!(
        said(2).contains("one for bob") && !said(2).contains("kitchen"),
        "{}",
        said(2)
    );
    assert_eq!(
        answer_of(&complete(port, &ask("no name", ""), "")),
        "You said: no name"
    );
    assert!(
        !said(3).contains("bob"),
        "the default session is its own: {}",
        said(3)
    );
    // A chat command, answered without the model, streamed like an answer when asked.
    let r = complete(port, &ask("/new", r#","user":"bob","stream":true"#), "");
    assert!(
        r.chunked && r.header("content-type") == Some("text/event-stream"),
        "{r:?}"
    );
    assert!(
        r.body.contains("Started a fresh conversation.") && r.body.ends_with("data: [DONE]\n\n"),
        "{}",
        r.body
    );
    assert_eq!(
        answer_of(&complete(
            port,
            &ask("three for bob", r#","user":"bob""#),
            ""
        )),
        "You said: three for bob"
    );
    assert!(!said(4).contains("one for bob"), "after /new: {}", said(4));
    let r = complete(port, &ask("x", r#","user":"two words""#), "");
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.error_message().contains("X-Session-Id"), "{}", r.body);
    g.stop_cleanly();
}

#[test]
fn keep_alive_pipelining_continue_and_chunked_bodies() {
    let llm = echo_model(Duration::ZERO);
    let home = TempHome::onboarded("http-keepalive", &http_config(&llm, None, "", ""));
    let (g, port) = start(&home, true, false);
    let mut c = Client::new(port);
    // Two requests in one write: both answered, in order, on the same connection.
    c.send(b"GET /health HTTP/1.1\r\nHost: b\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer yc-test-http-token-4f9a1c22d7e0b3a8\r\n\r\n");
    let a = c.read_reply().unwrap();
    let b = c.read_reply().unwrap();
    assert_eq!((a.status, b.status), (200, 200), "{a:?} {b:?}");
    assert!(a.body.contains("status") && b.body.contains("yoctoclaw"));
    // Expect: 100-continue: the body is asked for, then answered.
    let body = ask("continued", "");
    c.send(format!("POST /v1/chat/completions HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n", body.len()).as_bytes());
    assert_eq!(c.read_reply().unwrap().status, 100);
    c.send(body.as_bytes());
    assert_eq!(answer_of(&c.read_reply().unwrap()), "You said: continued");
    // A chunked body, in odd pieces, with an extension and a trailer.
    let body = ask("in chunks", "");
    let (x, y) = body.split_at(7);
    let chunked = format!(
        "{:x};ext=1\r\n{x}\r\n{:x}\r\n{y}\r\n0\r\nX-Trailer: t\r\n\r\n",
        x.len(),
        y.len()
    );
    c.send(format!("POST /v1/chat/completions HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n").as_bytes());
    for piece in chunked.as_bytes().chunks(5) {
        c.send(piece);
    }
    assert_eq!(answer_of(&c.read_reply().unwrap()), "You said: in chunks");
    // A streamed answer keeps the connection too (its body is chunked).
    let body = ask(
        "streamed",
        r#","stream":true,"stream_options":{"include_usage":true}"#,
    );
    c.send(format!("POST /v1/chat/completions HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    let s = c.read_reply().unwrap();
    assert_eq!(s.status, 200);
    let events: Vec<&str> = s.body.split("\n\n").filter(|e| !e.is_empty()).collect();
    assert!(
        events[0].contains(r#""delta":{"role":"assistant","content":""}"#),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e.contains(r#""content":"You said: streamed""#)),
        "{events:?}"
    );
    assert!(
        events[events.len() - 3].contains(r#""finish_reason":"stop""#),
        "{events:?}"
    );
    assert!(
        events[events.len() - 2].contains(r#""choices":[],"usage":{"prompt_tokens":10"#),
        "{events:?}"
    );
    assert_eq!(events[events.len() - 1], "data: [DONE]");
    // An HTTP/1.0 client has no chunked coding, even when it asks to keep the connection:
    // the stream comes as it is and the close ends it.
    let mut old = Client::new(port);
    old.send(format!("POST /v1/chat/completions HTTP/1.0\r\nConnection: keep-alive\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    let s = old.read_reply().unwrap();
    assert_eq!(s.status, 200);
    assert_eq!(s.header("transfer-encoding"), None, "{s:?}");
    assert_eq!(s.header("connection"), Some("close"), "{s:?}");
    assert!(s.body.starts_with("data: {"), "{:?}", s.body);
    assert!(
        s.body.contains(r#""content":"You said: streamed""#),
        "{:?}",
        s.body
    );
    assert!(s.body.ends_with("data: [DONE]\n\n"), "{:?}", s.body);
    assert!(old.closed());
    // Connection: close is honoured.
    c.send(b"GET /health HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n");
    let last = c.read_reply().unwrap();
    assert_eq!(last.header("connection"), Some("close"));
    assert!(c.closed());
    g.stop_cleanly();
}

#[test]
fn connections_past_the_cap_get_503_at_once() {
    let llm = echo_model(Duration::ZERO);
    let home = TempHome::onboarded(
        "http-cap",
        &http_config(&llm, None, r#""max_connections":2"#, ""),
    );
    let (g, port) = start(&home, true, false);
    let held: Vec<_> = (0..2).map(|_| connect(port)).collect();
    // The two are being served (waiting for their heads) before the third comes.
    let mut probe = Client::new(port);
    probe.send(b"GET /health HTTP/1.1\r\nHost: b\r\n\r\n");
    let r = probe.read_reply().unwrap();
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(
        r.error_message().contains("Too many connections"),
        "{}",
        r.body
    );
    drop(held);
    until("a free slot", || get(port, "/health", None).status == 200);
    g.stop_cleanly();
}

#[test]
fn a_stream_in_flight_at_sigterm_ends_with_an_error_event_and_done() {
    let llm = echo_model(Duration::from_secs(20));
    let home = TempHome::onboarded("http-sigterm", &http_config(&llm, None, "", ""));
    let (g, port) = start(&home, true, false);
    let mut c = Client::new(port);
    let body = ask("SLOW please", r#","stream":true"#);
    c.send(format!("POST /v1/chat/completions HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    // And a whole answer in another session.
    let mut w = Client::new(port);
    let body = ask("SLOW too", r#","user":"other""#);
    w.send(format!("POST /v1/chat/completions HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    until("the model asked twice", || {
        llm.requests_to("/chat/completions").len() == 2
    });
    let idle = Client::new(port);
    let started = Instant::now();
    let (status, took, out) = g.stop();
    assert!(status.success(), "{out}");
    assert!(took < Duration::from_secs(5), "{took:?}\n{out}");
    let r = c.read_reply().expect("the stream's end");
    assert_eq!(r.status, 200);
    assert!(
        r.body.contains(
            r#"data: {"error":{"message":"yoctoclaw is restarting: ask again in a minute.""#
        ),
        "{}",
        r.body
    );
    assert!(r.body.ends_with("data: [DONE]\n\n"), "{}", r.body);
    let r = w.read_reply().expect("the whole answer's end");
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(
        r.error_message(),
        "yoctoclaw is restarting: ask again in a minute."
    );
    assert_eq!(r.header("connection"), Some("close"));
    assert!(started.elapsed() < Duration::from_secs(10));
    let mut idle = idle;
    assert!(idle.closed(), "an idle connection is closed at shutdown");
    assert!(out.contains("gateway: stopped"), "{out}");
}

#[test]
fn doctor_finds_the_running_gateway_and_status_shows_the_api() {
    let llm = echo_model(Duration::ZERO);
    // A port nothing listens on, for a config doctor can check (not 0).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config =
        http_config(&llm, None, "", "").replace("127.0.0.1:0", &format!("127.0.0.1:{port}"));
    let home = TempHome::onboarded("http-doctor", &config);
    let doctor = |home: &TempHome| {
        let out = home
            .cmd(&["doctor"])
            .env("YOCTOCLAW_HTTP_TOKEN", HTTP_TOKEN)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let before = doctor(&home);
    assert!(
        before.contains(&format!("OK   http       127.0.0.1:{port} is free")),
        "{before}"
    );
    assert!(
        before.contains("OK   http       YOCTOCLAW_HTTP_TOKEN is set"),
        "{before}"
    );
    let (g, started) = start(&home, true, false);
    assert_eq!(started, port);
    let during = doctor(&home);
    assert!(
        during.contains(&format!(
            "OK   http       the gateway answers on 127.0.0.1:{port} (/health: ok)"
        )),
        "{during}"
    );
    let out = home
        .cmd(&["status"])
        .env("YOCTOCLAW_HTTP_TOKEN", HTTP_TOKEN)
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&out.stdout);
    assert!(
        status.contains(&format!(
            "http on 127.0.0.1:{port} (token YOCTOCLAW_HTTP_TOKEN set)"
        )),
        "{status}"
    );
    assert!(status.contains("tools on http:"), "{status}");
    g.stop_cleanly();
}
