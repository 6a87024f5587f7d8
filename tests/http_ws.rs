//! `GET /ws` end to end: the real gateway binary (Telegram on, the fake Bot API, an
//! echoing fake model that streams) over real sockets. The official Python `websockets`
//! client: the handshake, a streamed reply (deltas then done), sessions by the frame and
//! by `X-Session-Id`, the token as a browser's subprotocols, a ping, and upgrades refused
//! 401 without the right token. Raw sockets: an unmasked frame, an oversize message, bad
//! UTF-8, a binary message, garbage after the handshake, the close handshake, a wrong
//! version (426), a foreign `Origin` (403), and 200 idle WebSockets while Telegram and
//! another WebSocket are still answered, the gateway's memory bounded.
//!
//! The Python test skips loudly (`support::skipped`; a failure under
//! `YOCTOCLAW_NO_SKIP=1`) when `python3` or its `websockets` package is missing;
//! `.ci/run` installs it.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::TempHome;
use support::fake_telegram::FakeTelegram;
use support::http_client::*;

/// `python3` with the `websockets` package, or a loud skip.
fn python_websockets() -> bool {
    let what = "the official websockets Python client against the gateway";
    match Command::new("python3")
        .args(["-c", "import websockets.asyncio.client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => true,
        Ok(_) => {
            support::skipped(
                what,
                "python3 cannot import websockets (pip install 'websockets>=13')",
            );
            false
        }
        Err(e) => {
            support::skipped(what, &format!("no python3: {e}"));
            false
        }
    }
}

fn streaming_config(llm: &support::fake_http::FakeServer, tg: &FakeTelegram, http: &str) -> String {
    http_config(llm, Some(tg), http, "").replace(
        r#""model":"fake-model""#,
        r#""model":"fake-model","stream":true"#,
    )
}

#[test]
fn the_websockets_python_client_chats_streamed() {
    if !python_websockets() {
        return;
    }
    let llm = echo_model(Duration::ZERO);
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("http-ws-py", &streaming_config(&llm, &tg, ""));
    let (mut g, port) = start(&home, true, true);
    let v = python_client(&g, "ws_client.py", &format!("ws://127.0.0.1:{port}/ws"));
    let s = |path: &[&str]| json_at(&v, path);
    let deltas: Vec<String> = yoctoclaw::json::path(&v, &["first", "deltas"])
        .and_then(yoctoclaw::json::as_array)
        .unwrap()
        .iter()
        .filter_map(|p| yoctoclaw::json::as_str(p).map(str::to_string))
        .collect();
    assert!(!deltas.is_empty(), "streamed: {deltas:?}");
    assert_eq!(deltas.concat(), "You said: hello socket");
    assert_eq!(s(&["first", "end", "type"]), r#""done""#);
    assert_eq!(
        s(&["first", "end", "content"]),
        r#""You said: hello socket""#
    );
    assert_eq!(s(&["first", "end", "session"]), r#""default""#);
    assert_eq!(s(&["other", "end", "content"]), r#""You said: in b""#);
    assert_eq!(s(&["other", "end", "session"]), r#""b""#);
    assert_eq!(s(&["header_session", "end", "session"]), r#""c""#);
    assert_eq!(s(&["pong"]), "true");
    assert_eq!(s(&["bad", "end", "type"]), r#""error""#);
    assert_eq!(s(&["subprotocol"]), r#""bearer""#);
    assert_eq!(
        s(&["browser", "end", "content"]),
        r#""You said: from a page""#
    );
    assert_eq!(s(&["wrong_token"]), "401");
    assert_eq!(s(&["no_token"]), "401");
    // Sessions are the board's: "b" saw only its own message.
    let asked = llm.requests_to("/chat/completions");
    let in_b = asked.iter().find(|r| r.body.contains("in b")).unwrap();
    assert!(!in_b.body.contains("hello socket"), "{}", in_b.body);
    telegram_answers(&mut g, &tg, "and Telegram?");
    g.stop_cleanly();
}

const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

/// Open a WebSocket by hand (with `extra` header lines and `after` bytes sent with the
/// handshake); the answer's head.
fn open(port: u16, extra: &str, after: &[u8]) -> (TcpStream, String) {
    let mut s = connect(port);
    let mut req = format!(
        "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Key: {KEY}\r\nAuthorization: Bearer {HTTP_TOKEN}\r\n{extra}\r\n"
    )
    .into_bytes();
    req.extend_from_slice(after);
    s.write_all(&req).unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read(&mut b).unwrap(), 1, "the head ended early: {head:?}");
        head.push(b[0]);
    }
    (s, String::from_utf8(head).unwrap())
}

fn ws(port: u16) -> TcpStream {
    let (s, head) = open(port, "Sec-WebSocket-Version: 13\r\n", b"");
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert!(
        head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"),
        "{head}"
    );
    s
}

/// A client frame: `b0` (FIN, opcode), masked unless `unmasked`.
fn client_frame(b0: u8, payload: &[u8], unmasked: bool) -> Vec<u8> {
    let mask = [0x37u8, 0xfa, 0x21, 0x3d];
    let bit = if unmasked { 0 } else { 0x80 };
    let mut v = vec![b0];
    match payload.len() {
        n if n < 126 => v.push(bit | n as u8),
        n if n <= 0xffff => {
            v.push(bit | 126);
            v.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            v.push(bit | 127);
            v.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    if !unmasked {
        v.extend_from_slice(&mask);
    }
    v.extend(
        payload
            .iter()
            .enumerate()
            .map(|(i, b)| if unmasked { *b } else { b ^ mask[i % 4] }),
    );
    v
}

/// The next server frame: opcode and payload (server frames are never masked).
fn server_frame(s: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut h = [0u8; 2];
    s.read_exact(&mut h).expect("a frame");
    assert_eq!(h[1] & 0x80, 0, "a server frame is not masked");
    let len = match h[1] & 0x7f {
        126 => {
            let mut b = [0u8; 2];
            s.read_exact(&mut b).unwrap();
            u16::from_be_bytes(b) as usize
        }
        127 => {
            let mut b = [0u8; 8];
            s.read_exact(&mut b).unwrap();
            u64::from_be_bytes(b) as usize
        }
        n => n as usize,
    };
    let mut p = vec![0u8; len];
    s.read_exact(&mut p).unwrap();
    (h[0], p)
}

/// The close code the server ends with (frames before it skipped).
fn close_code(s: &mut TcpStream) -> u16 {
    loop {
        let (b0, p) = server_frame(s);
        if b0 == 0x88 {
            return u16::from_be_bytes([p[0], p[1]]);
        }
    }
}

/// The `done` (or `error`) after a message: the JSON texts received.
fn chat(s: &mut TcpStream, content: &str) -> Vec<String> {
    let msg = format!(r#"{{"type":"message","content":"{content}"}}"#);
    s.write_all(&client_frame(0x81, msg.as_bytes(), false))
        .unwrap();
    let mut got = Vec::new();
    loop {
        let (b0, p) = server_frame(s);
        assert_eq!(b0, 0x81, "a text frame");
        let t = String::from_utf8(p).unwrap();
        let end = !t.contains(r#""type":"delta""#);
        got.push(t);
        if end {
            return got;
        }
    }
}

fn vm_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn hostile_frames_are_closed_with_the_rfcs_codes_and_idle_sockets_cost_little() {
    let llm = echo_model(Duration::ZERO);
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded(
        "http-ws-raw",
        &streaming_config(
            &llm,
            &tg,
            r#""max_connections":256,"rate_per_minute":100000"#,
        ),
    );
    let (mut g, port) = start(&home, true, true);

    // Handshakes refused before any upgrade.
    let (_, head) = open(port, "Sec-WebSocket-Version: 8\r\n", b"");
    assert!(head.starts_with("HTTP/1.1 426 "), "{head}");
    assert!(head.contains("Sec-WebSocket-Version: 13\r\n"), "{head}");
    let (_, head) = open(
        port,
        "Sec-WebSocket-Version: 13\r\nOrigin: https://evil.example\r\n",
        b"",
    );
    assert!(head.starts_with("HTTP/1.1 403 "), "{head}");
    let (_, head) = open(
        port,
        &format!("Sec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1:{port}\r\n"),
        b"",
    );
    assert!(head.starts_with("HTTP/1.1 101 "), "same origin: {head}");

    let cases: [(&str, Vec<u8>, u16); 6] = [
        (
            "unmasked",
            client_frame(0x81, br#"{"type":"message"}"#, true),
            1002,
        ),
        (
            "oversize",
            client_frame(0x81, &vec![b'a'; 70_000], false),
            1009,
        ),
        ("bad UTF-8", client_frame(0x81, b"\xff\xfe", false), 1007),
        ("binary", client_frame(0x82, b"\x00\x01", false), 1003),
        ("reserved bit", client_frame(0xc1, b"x", false), 1002),
        ("long ping", client_frame(0x89, &[0; 126], false), 1002),
    ];
    for (what, bytes, code) in cases {
        let mut s = ws(port);
        let _ = s.write_all(&bytes);
        assert_eq!(close_code(&mut s), code, "{what}");
    }
    // Fragments past the bound together.
    let mut s = ws(port);
    s.write_all(&client_frame(0x01, &vec![b'a'; 40_000], false))
        .unwrap();
    let _ = s.write_all(&client_frame(0x80, &vec![b'a'; 40_000], false));
    assert_eq!(close_code(&mut s), 1009, "fragments");
    // Garbage sent with the handshake.
    let (mut s, head) = open(
        port,
        "Sec-WebSocket-Version: 13\r\n",
        b"GET / HTTP/1.1\r\n\r\n",
    );
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert_eq!(close_code(&mut s), 1002, "garbage after the handshake");
    // The close handshake echoes the code; a ping gets its pong.
    let mut s = ws(port);
    s.write_all(&client_frame(0x89, b"hi", false)).unwrap();
    assert_eq!(server_frame(&mut s), (0x8a, b"hi".to_vec()));
    s.write_all(&client_frame(0x88, &4000u16.to_be_bytes(), false))
        .unwrap();
    assert_eq!(server_frame(&mut s), (0x88, 4000u16.to_be_bytes().to_vec()));
    // A fragmented message is one message; a second one during a turn is an error.
    let mut s = ws(port);
    s.write_all(&client_frame(0x01, br#"{"type":"message","#, false))
        .unwrap();
    s.write_all(&client_frame(0x89, b"mid", false)).unwrap();
    s.write_all(&client_frame(0x80, br#""content":"in pieces"}"#, false))
        .unwrap();
    assert_eq!(server_frame(&mut s), (0x8a, b"mid".to_vec()));
    let got = chat(&mut s, "x");
    assert!(
        got.last().unwrap().contains(r#""type":"error""#)
            || got.last().unwrap().contains("in pieces"),
        "{got:?}"
    );

    // 200 idle WebSockets and 20 connections that never send: the rest is still served.
    let before = vm_rss_kib(g.pid());
    let idle: Vec<TcpStream> = (0..200).map(|_| ws(port)).collect();
    let silent: Vec<TcpStream> = (0..20).map(|_| connect(port)).collect();
    let after = vm_rss_kib(g.pid());
    assert!(
        after.saturating_sub(before) < 8 * 1024,
        "200 idle WebSockets took {} KiB",
        after - before
    );
    let mut s = ws(port);
    let got = chat(&mut s, "still here");
    assert!(
        got.last().unwrap().contains("You said: still here"),
        "{got:?}"
    );
    telegram_answers(&mut g, &tg, "and Telegram?");
    drop((idle, silent));
    g.stop_cleanly();
}
