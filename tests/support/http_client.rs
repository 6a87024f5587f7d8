//! The gateway with its HTTP server, for the HTTP end-to-end tests: started with Telegram
//! (the fake Bot API) and an echoing fake model, its port read from its log, and a raw
//! HTTP/1.1 client on std sockets that sends exactly the bytes a test gives and reads
//! answers framed by `Content-Length` or chunked.
#![allow(dead_code)]

use super::TempHome;
use super::fake_http::{FakeServer, Response, json_str, openai_sse, openai_text};
use super::fake_telegram::FakeTelegram;
use super::gateway::{FAST_BACKOFF, Gateway};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The API token the tests configure.
pub const HTTP_TOKEN: &str = "yc-test-http-token-4f9a1c22d7e0b3a8";
/// The Telegram user the tests talk as.
pub const ALICE: i64 = 42;
/// Longest wait for an answer (a hang guard).
pub const WAIT: Duration = Duration::from_secs(40);

/// The last user message of a Chat Completions request body.
pub fn last_user_text(body: &str) -> String {
    let v = yoctoclaw::json::parse_value(body).expect("a JSON request");
    let msgs = yoctoclaw::json::get(&v, "messages")
        .and_then(yoctoclaw::json::as_array)
        .expect("messages");
    msgs.iter()
        .rev()
        .find(|m| yoctoclaw::json::str_at(m, "role") == Some("user"))
        .and_then(|m| yoctoclaw::json::str_at(m, "content"))
        .unwrap_or("")
        .to_string()
}

/// A fake OpenAI-compatible model answering "You said: <the last user message>" (an SSE
/// stream of its words when the request streams), or 401 when the message holds "FAIL",
/// after `delay` when it holds "SLOW".
pub fn echo_model(delay: Duration) -> FakeServer {
    FakeServer::start(move |req| {
        if !req.path.ends_with("/chat/completions") {
            return Response::json(404, r#"{"error":{"message":"no route"}}"#);
        }
        let said = last_user_text(&req.body);
        if said.contains("FAIL") {
            return Response::json(401, r#"{"error":{"message":"Incorrect API key provided"}}"#);
        }
        let text = format!("You said: {said}");
        let answer = if req.body.contains(r#""stream":true"#) {
            let words: Vec<String> = text.split_inclusive(' ').map(str::to_string).collect();
            let parts: Vec<&str> = words.iter().map(String::as_str).collect();
            openai_sse(&parts, Duration::from_millis(5))
        } else {
            Response::json(200, &openai_text(&text))
        };
        if said.contains("SLOW") {
            Response::Delay(delay, Box::new(answer))
        } else {
            answer
        }
    })
}

/// `config.json` with Telegram on (ALICE allowed) when `tg` is given, the model at `llm`,
/// and `"http": {"enabled": true, "listen": "127.0.0.1:0", <http_extra>}`; `extra`: more
/// top-level keys (with a leading comma).
pub fn http_config(
    llm: &FakeServer,
    tg: Option<&FakeTelegram>,
    http_extra: &str,
    extra: &str,
) -> String {
    let telegram = match tg {
        Some(tg) => format!(
            r#""telegram":{{"enabled":true,"api_base":"{}","allow_from":["{ALICE}"],"poll_timeout_secs":1}},"#,
            tg.url()
        ),
        None => String::new(),
    };
    let sep = if http_extra.is_empty() { "" } else { "," };
    format!(
        r#"{{"provider":{{"base_url":"{}/v1","model":"fake-model"}},{telegram}"http":{{"enabled":true,"listen":"127.0.0.1:0"{sep}{http_extra}}}{extra}}}"#,
        llm.url()
    )
}

/// The gateway started in `home` with the API token (unless `token` is false), its HTTP
/// port once it listens, and (with Telegram on) once it serves Telegram.
pub fn start(home: &TempHome, token: bool, telegram: bool) -> (Gateway, u16) {
    let mut env = vec![FAST_BACKOFF];
    if token {
        env.push(("YOCTOCLAW_HTTP_TOKEN", HTTP_TOKEN));
    }
    let mut g = Gateway::start(home, &env);
    g.wait_for_log("http: listening on 127.0.0.1:");
    if telegram {
        g.wait_for_log("serving Telegram");
    }
    let log = g.log();
    let at =
        log.find("http: listening on 127.0.0.1:").unwrap() + "http: listening on 127.0.0.1:".len();
    let port = log[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port in the log");
    (g, port)
}

/// Alice says `text` on Telegram; returns once the gateway answered it ("You said: …").
pub fn telegram_answers(g: &mut Gateway, tg: &FakeTelegram, text: &str) {
    let before = tg.sent_to(ALICE).len();
    tg.push_private(ALICE, "alice", text);
    let want = format!("You said: {text}");
    g.wait_for("Telegram's answer", || {
        tg.sent_to(ALICE)[before..].iter().any(|s| s.text == want)
    });
}

/// A connection to the gateway's HTTP server with a read timeout.
pub fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the gateway");
    s.set_read_timeout(Some(WAIT)).unwrap();
    s.set_write_timeout(Some(WAIT)).unwrap();
    s
}

/// One answer as read off the wire.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The body was chunked.
    pub chunked: bool,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `error.message` of an OpenAI-shaped error body.
    pub fn error_message(&self) -> String {
        let v = yoctoclaw::json::parse_value(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body));
        yoctoclaw::json::path(&v, &["error", "message"])
            .and_then(yoctoclaw::json::as_str)
            .unwrap_or_else(|| panic!("no error.message: {}", self.body))
            .to_string()
    }
}

/// Reads answers off one connection (keeps what it read past an answer).
pub struct Client {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub fn new(port: u16) -> Client {
        Client {
            stream: connect(port),
            buf: Vec::new(),
        }
    }

    /// Read answers off a connection the test opened itself.
    pub fn on(stream: TcpStream) -> Client {
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// More bytes; false at the end of the stream.
    fn fill(&mut self) -> bool {
        let mut b = [0u8; 8192];
        match self.stream.read(&mut b) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&b[..n]);
                true
            }
        }
    }

    /// Read one answer (a 100 Continue is returned as it is, like any other).
    pub fn read_reply(&mut self) -> Option<Reply> {
        self.read_answer(false)
    }

    /// Read the answer to a HEAD request (a head without a body).
    pub fn read_head_reply(&mut self) -> Option<Reply> {
        self.read_answer(true)
    }

    fn read_answer(&mut self, head_only: bool) -> Option<Reply> {
        let end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            if !self.fill() {
                return None;
            }
        };
        let head = String::from_utf8_lossy(&self.buf[..end]).into_owned();
        self.buf.drain(..end);
        let mut lines = head.split("\r\n");
        let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let mut r = Reply {
            status,
            headers,
            body: String::new(),
            chunked: false,
        };
        if status == 100 || head_only {
            return Some(r);
        }
        if let Some(n) = r
            .header("content-length")
            .and_then(|v| v.parse::<usize>().ok())
        {
            while self.buf.len() < n {
                if !self.fill() {
                    return None;
                }
            }
            r.body = String::from_utf8_lossy(&self.buf[..n]).into_owned();
            self.buf.drain(..n);
        } else if r.header("transfer-encoding") == Some("chunked") {
            r.chunked = true;
            let mut body = Vec::new();
            loop {
                let line_end = loop {
                    if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                        break i;
                    }
                    if !self.fill() {
                        return None;
                    }
                };
                let size = usize::from_str_radix(
                    std::str::from_utf8(&self.buf[..line_end]).ok()?.trim(),
                    16,
                )
                .ok()?;
                self.buf.drain(..line_end + 2);
                while self.buf.len() < size + 2 {
                    if !self.fill() {
                        return None;
                    }
                }
                body.extend_from_slice(&self.buf[..size]);
                self.buf.drain(..size + 2);
                if size == 0 {
                    break;
                }
            }
            r.body = String::from_utf8_lossy(&body).into_owned();
        } else {
            while self.fill() {}
            r.body = String::from_utf8_lossy(&self.buf).into_owned();
            self.buf.clear();
        }
        Some(r)
    }

    /// The server closed the connection (nothing more comes).
    pub fn closed(&mut self) -> bool {
        self.buf.is_empty() && !self.fill()
    }
}

/// Send `req` on a new connection and read one answer.
pub fn exchange(port: u16, req: &str) -> Reply {
    let mut c = Client::new(port);
    c.send(req.as_bytes());
    c.read_answer(req.starts_with("HEAD "))
        .unwrap_or_else(|| panic!("no answer to {req:?}"))
}

/// `GET path` (with the token when `token`), `Connection: close`.
pub fn get(port: u16, path: &str, token: Option<&str>) -> Reply {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    exchange(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: board\r\n{auth}Connection: close\r\n\r\n"),
    )
}

/// `POST /v1/chat/completions` with `body` and the token; `extra` headers end in CRLF.
pub fn complete(port: u16, body: &str, extra: &str) -> Reply {
    exchange(
        port,
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: board\r\nAuthorization: Bearer {HTTP_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

/// A completion request body with one user message.
pub fn ask(text: &str, more: &str) -> String {
    format!(
        r#"{{"model":"any","messages":[{{"role":"user","content":{}}}]{more}}}"#,
        json_str(text)
    )
}

/// The `choices[0].message.content` of a completion.
pub fn answer_of(r: &Reply) -> String {
    assert_eq!(r.status, 200, "{}", r.body);
    let v = yoctoclaw::json::parse_value(&r.body).unwrap();
    let c = &yoctoclaw::json::as_array(yoctoclaw::json::get(&v, "choices").unwrap()).unwrap()[0];
    yoctoclaw::json::path(c, &["message", "content"])
        .and_then(yoctoclaw::json::as_str)
        .unwrap()
        .to_string()
}

/// Wait until `cond` holds, at most [`WAIT`].
pub fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Run `tests/fixtures/http/<script>` (a real Python client) against `url` with the API
/// token and read the JSON it prints; a failed run fails the test with its output and
/// the gateway's log.
pub fn python_client(g: &Gateway, script: &str, url: &str) -> miniserde::json::Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/http")
        .join(script);
    let out = std::process::Command::new("python3")
        .arg(path)
        .arg(url)
        .arg(HTTP_TOKEN)
        .output()
        .expect("run the client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        g.log()
    );
    yoctoclaw::json::parse_value(stdout.trim()).expect("the client's JSON")
}

/// The JSON text at `path` in `v` (empty when there is none).
pub fn json_at(v: &miniserde::json::Value, path: &[&str]) -> String {
    yoctoclaw::json::path(v, path)
        .map(yoctoclaw::json::to_string)
        .unwrap_or_default()
}
