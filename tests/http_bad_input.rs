//! Hostile input to the gateway's HTTP server, each through the real binary over real
//! sockets, each while Alice talks to the bot on Telegram (the fake Bot API): the
//! message she sends while the attack runs is answered. Garbage instead of HTTP, a 10 MB
//! header, bodies longer and shorter than their `Content-Length`, chunked framing that
//! lies, invalid and oversized JSON, 1,000 requests a second from one address, 200
//! connections that send one byte and wait. Each gets a status and one sentence where
//! the client can still read it; the gateway never stops (its exit after SIGTERM is
//! clean: status 0, in time) and its peak memory does not grow with what it was sent.

mod support;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;
use support::TempHome;
use support::fake_http::FakeServer;
use support::fake_telegram::FakeTelegram;
use support::gateway::Gateway;
use support::http_client::*;

/// A gateway with Telegram, the echoing model and the HTTP server (`http_extra` added to
/// its section).
struct Setup {
    g: Gateway,
    port: u16,
    tg: FakeTelegram,
    _llm: FakeServer,
    _home: TempHome,
}

fn setup(tag: &str, http_extra: &str) -> Setup {
    let llm = echo_model(Duration::ZERO);
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded(tag, &http_config(&llm, Some(&tg), http_extra, ""));
    let (g, port) = start(&home, true, true);
    Setup {
        g,
        port,
        tg,
        _llm: llm,
        _home: home,
    }
}

impl Setup {
    fn telegram_answers(&mut self, text: &str) {
        telegram_answers(&mut self.g, &self.tg, text);
    }

    /// The gateway's peak resident memory so far (KiB).
    fn peak_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.g.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    /// Still serving: `/health` answers; then a clean stop.
    fn finish(mut self) {
        until("the server after the attack", || {
            get(self.port, "/health", None).status == 200
        });
        self.telegram_answers("all good?");
        let out = self.g.stop_cleanly();
        assert!(!out.contains("panicked"), "{out}");
        assert!(!out.contains(HTTP_TOKEN), "{out}");
    }
}

#[test]
fn garbage_instead_of_http_is_told_400() {
    let mut s = setup("http-garbage", "");
    // A TLS ClientHello (someone tried https://), then binary noise.
    let mut c = Client::new(s.port);
    c.send(
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\xde\xad\xbe\xef garbage \x00\xff\r\n\r\n",
    );
    s.telegram_answers("during garbage");
    let r = c.read_reply().expect("an answer");
    assert_eq!(r.status, 400);
    assert_eq!(r.error_message(), "This is not an HTTP/1.1 request.");
    assert_eq!(r.header("connection"), Some("close"));
    assert!(c.closed());
    // Text that never becomes a request line: cut at the head's cap.
    let mut c = Client::new(s.port);
    c.send(&[b'A'; 20 * 1024]);
    let r = c.read_reply().expect("an answer");
    assert_eq!(r.status, 431, "{}", r.body);
    s.finish();
}

#[test]
fn a_10_mb_header_is_cut_at_16_kib_with_431() {
    let mut s = setup("http-bighead", "");
    let before = s.peak_kib();
    let stream = connect(s.port);
    let mut writer = stream.try_clone().unwrap();
    let sent = Arc::new(Mutex::new(0usize));
    let sending = {
        let sent = sent.clone();
        thread::spawn(move || {
            let mut out = b"GET /health HTTP/1.1\r\nHost: b\r\nX-Big: ".to_vec();
            out.resize(64 * 1024, b'a');
            let _ = writer.write_all(&out);
            let piece = vec![b'a'; 64 * 1024];
            for _ in 0..160 {
                if writer.write_all(&piece).is_err() {
                    return;
                }
                *sent.lock().unwrap() += piece.len();
            }
        })
    };
    s.telegram_answers("during a big header");
    let mut c = Client::on(stream);
    let r = c.read_reply().expect("an answer before the reset");
    assert_eq!(r.status, 431, "{}", r.body);
    assert!(r.error_message().contains("16 KiB"), "{}", r.body);
    sending.join().unwrap();
    let sent = *sent.lock().unwrap();
    assert!(
        sent < 10 * 1024 * 1024,
        "the server stopped taking it ({sent} bytes went)"
    );
    let grew = s.peak_kib().saturating_sub(before);
    assert!(grew < 4 * 1024, "peak memory grew {grew} KiB");
    s.finish();
}

#[test]
fn bodies_longer_or_shorter_than_their_content_length() {
    let mut s = setup("http-length", r#""body_timeout_secs":2"#);
    let body = ask("exact", "");
    // Longer: the request is answered, the bytes after it are a broken next request.
    let mut c = Client::new(s.port);
    c.send(format!("POST /v1/chat/completions HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nContent-Length: {}\r\n\r\n{body}}}}} trailing junk\r\n\r\n", body.len()).as_bytes());
    assert_eq!(answer_of(&c.read_reply().unwrap()), "You said: exact");
    let r = c.read_reply().expect("the junk's answer");
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(c.closed());
    // Shorter, the client waiting: 408 after http.body_timeout_secs, Telegram meanwhile.
    let mut c = Client::new(s.port);
    c.send(format!("POST /v1/chat/completions HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nContent-Length: {}\r\n\r\n{body}", body.len() + 50).as_bytes());
    s.telegram_answers("during a short body");
    let r = c.read_reply().expect("an answer");
    assert_eq!(r.status, 408, "{}", r.body);
    assert_eq!(
        r.error_message(),
        "The request's body took too long to arrive."
    );
    assert!(c.closed());
    // Shorter, the client done sending: 400 at once.
    let mut c = Client::new(s.port);
    c.send(format!("POST /v1/chat/completions HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nContent-Length: {}\r\n\r\n{body}", body.len() + 50).as_bytes());
    c.stream.shutdown(Shutdown::Write).unwrap();
    let r = c.read_reply().expect("an answer");
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.error_message().contains("ended before"), "{}", r.body);
    // Larger than http.max_body_kib: 413 before reading it.
    let r = exchange(
        s.port,
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nContent-Length: {}\r\n\r\n",
            2 * 1024 * 1024
        ),
    );
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(
        r.error_message().contains("http.max_body_kib (1024 KiB)"),
        "{}",
        r.body
    );
    // Both framings: refused as smuggling.
    let r = exchange(
        s.port,
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        ),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    s.finish();
}

#[test]
fn chunked_framing_that_lies_is_refused_400() {
    let mut s = setup("http-chunked", "");
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    for (lie, status) in [
        ("5\r\nhello world\r\n0\r\n\r\n", 400), // longer than its size
        ("zz\r\nhello\r\n0\r\n\r\n", 400),      // not a size
        ("5\r\nhe\r\n0\r\n\r\n", 400),          // shorter
        ("fffffff\r\n", 413),                   // beyond http.max_body_kib
        ("5\nhello\n0\n\n", 400),               // bare line feeds
    ] {
        let mut c = Client::new(s.port);
        c.send(format!("{head}{lie}").as_bytes());
        let r = c
            .read_reply()
            .unwrap_or_else(|| panic!("no answer to {lie:?}"));
        assert_eq!(r.status, status, "{lie:?}: {}", r.body);
        assert_eq!(r.header("connection"), Some("close"), "{lie:?}");
        assert!(c.closed(), "{lie:?}");
    }
    // A chunked body that stops coming while Alice talks: the body timeout ends it.
    let mut c = Client::new(s.port);
    c.send(format!("{head}400\r\nonly a little").as_bytes());
    s.telegram_answers("during a stalled chunk");
    let r = c.read_reply().expect("an answer");
    assert_eq!(r.status, 408, "{}", r.body);
    s.finish();
}

#[test]
fn invalid_json_is_told_400_with_where() {
    let mut s = setup("http-json", "");
    let r = complete(
        s.port,
        r#"{"messages": [{"role": "user", "content": "hi"}"#,
        "",
    );
    assert_eq!(r.status, 400);
    assert!(
        r.error_message()
            .starts_with("The body is not valid JSON (line 1, column 48"),
        "{}",
        r.body
    );
    assert_eq!(r.header("content-type"), Some("application/json"));
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    assert_eq!(complete(s.port, &deep, "").status, 400);
    let many = format!(
        r#"{{"messages":[{}{{"role":"user","content":"x"}}]}}"#,
        r#"{"role":"user","content":"x"},"#.repeat(3000)
    );
    let r = complete(s.port, &many, "");
    assert_eq!(r.status, 413, "{}", r.body);
    for (body, says) in [
        ("[]", "JSON object"),
        (
            r#"{"messages":[{"role":"assistant","content":"x"}]}"#,
            "the user's",
        ),
        ("\u{0}\u{1}", "not valid JSON"),
    ] {
        let r = complete(s.port, body, "");
        assert_eq!(r.status, 400, "{body}");
        assert!(r.error_message().contains(says), "{}", r.body);
    }
    // The connection stays usable after a refused body it read whole.
    let mut c = Client::new(s.port);
    let bad = "{nope";
    c.send(format!("POST /v1/chat/completions HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nContent-Length: {}\r\n\r\n{bad}GET /health HTTP/1.1\r\nHost: b\r\n\r\n", bad.len()).as_bytes());
    assert_eq!(c.read_reply().unwrap().status, 400);
    assert_eq!(c.read_reply().unwrap().status, 200);
    s.telegram_answers("after bad JSON");
    s.finish();
}

#[test]
fn a_thousand_requests_a_second_from_one_address_get_429() {
    let mut s = setup("http-flood", "");
    let port = s.port;
    let done = Arc::new(AtomicBool::new(false));
    let flood = {
        let done = done.clone();
        thread::spawn(move || {
            let mut statuses = Vec::new();
            let mut retry_after = Vec::new();
            // 10 batches of 100 pipelined requests, 100 ms apart: 1,000 in a second.
            // Each on a connection of its own: the server closes one after 100 requests.
            for _ in 0..10 {
                let mut c = Client::new(port);
                let batch = "GET /health HTTP/1.1\r\nHost: b\r\n\r\n".repeat(100);
                c.send(batch.as_bytes());
                for _ in 0..100 {
                    let r = c.read_reply().expect("every request answered");
                    if r.status == 429 {
                        retry_after.push(r.header("retry-after").unwrap().parse::<u64>().unwrap());
                    }
                    statuses.push(r.status);
                }
                thread::sleep(Duration::from_millis(100));
            }
            done.store(true, Ordering::SeqCst);
            (statuses, retry_after)
        })
    };
    s.telegram_answers("during the flood");
    let (statuses, retry_after) = flood.join().unwrap();
    assert!(done.load(Ordering::SeqCst));
    let ok = statuses.iter().filter(|&&c| c == 200).count();
    let limited = statuses.iter().filter(|&&c| c == 429).count();
    assert_eq!(ok, 120, "http.rate_per_minute's default");
    assert_eq!(limited, 1000 - 120);
    assert!(
        retry_after.iter().all(|&s| (1..=120).contains(&s)),
        "{retry_after:?}"
    );
    let r = get(port, "/v1/models", Some(HTTP_TOKEN));
    assert_eq!(r.status, 429);
    assert!(
        r.error_message().contains("http.rate_per_minute is 120"),
        "{}",
        r.body
    );
    // The limit is per address and counts what was let in: /health from here waits too,
    // so the end check goes by Telegram and the exit.
    s.telegram_answers("after the flood");
    let out = s.g.stop_cleanly();
    assert!(!out.contains("panicked"), "{out}");
}

#[test]
fn slow_connections_are_dropped_by_the_header_timeout() {
    let mut s = setup("http-slowloris", r#""header_timeout_secs":2"#);
    let before = s.peak_kib();
    // 200 connections, each sending one byte of a request and then nothing.
    let mut conns: Vec<TcpStream> = (0..200)
        .map(|_| {
            let mut c = connect(s.port);
            c.write_all(b"G").unwrap();
            c
        })
        .collect();
    s.telegram_answers("during the slow connections");
    let (mut dropped, mut refused, mut unanswered) = (0, 0, 0);
    for c in &mut conns {
        let mut got = Vec::new();
        let _ = c.read_to_end(&mut got);
        let text = String::from_utf8_lossy(&got);
        if text.starts_with("HTTP/1.1 408 ") {
            assert!(
                text.contains("The request's head took too long to arrive."),
                "{text}"
            );
            dropped += 1;
        } else if text.starts_with("HTTP/1.1 503 ") {
            refused += 1;
        } else {
            assert!(text.is_empty(), "{text}");
            unanswered += 1;
        }
    }
    // The first http.max_connections were served and timed out (a slot freed that way
    // may take one more of the late ones on a slow machine).
    assert!(dropped >= 16, "{dropped} dropped by the header timeout");
    assert_eq!(dropped + refused + unanswered, 200);
    assert!(
        refused >= 64,
        "{refused} answered 503, {unanswered} closed unanswered"
    );
    let grew = s.peak_kib().saturating_sub(before);
    assert!(grew < 4 * 1024, "peak memory grew {grew} KiB");
    s.finish();
}
