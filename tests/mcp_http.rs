//! MCP over HTTP (`mcp::http`) against real servers over real sockets: the official
//! Python SDK's `MCPServer` (tests/fixtures/mcp/http_server.py) in its three HTTP modes
//! (Streamable HTTP answering with event streams, with JSON bodies, and the legacy
//! HTTP+SSE transport reached through the fallback), and hostile servers written here on
//! std sockets (expired sessions, 50 MB bodies, garbage, silence, redirects, a foreign
//! endpoint, slowloris, a legacy stream that must end on close).
//!
//! The SDK tests skip loudly (`support::skipped`; a failure under `YOCTOCLAW_NO_SKIP=1`)
//! when `python3` or its `mcp` package is missing; `.ci/run` installs it.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};
use yoctoclaw::mcp::http::{HttpConfig, HttpError, HttpTransport};

/// How long a test waits for anything that should happen at once.
const WAIT: Duration = Duration::from_secs(30);

/// Held by the tests that start `yc-mcp-sse` threads, so that counting them is exact.
static LEGACY: Mutex<()> = Mutex::new(());

fn legacy_lock() -> std::sync::MutexGuard<'static, ()> {
    LEGACY.lock().unwrap_or_else(|p| p.into_inner())
}

fn deadline() -> Instant {
    Instant::now() + WAIT
}

fn config(url: &str) -> HttpConfig {
    HttpConfig {
        url: url.to_string(),
        headers: vec![("Authorization".into(), "Bearer t0ken-S3CRET".into())],
        timeout: Duration::from_secs(10),
    }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"yoctoclaw-test","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn call(id: u64, tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args},"_meta":{{"progressToken":"p{id}"}}}}}}"#
    )
}

// ---------------------------------------------------------------------------------------
// The official Python SDK's server.

/// The fixture server, killed on drop.
struct PyServer {
    child: Child,
    port: u16,
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start the fixture in `mode`; `None` after a loud skip when Python or `mcp` is missing.
fn py_server(mode: &str) -> Option<PyServer> {
    let what = "MCP over HTTP against the official Python SDK";
    match Command::new("python3")
        .args(["-c", "import mcp.server, uvicorn"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => {}
        Ok(_) => {
            support::skipped(what, "python3 cannot import mcp (pip install 'mcp>=2,<3')");
            return None;
        }
        Err(e) => {
            support::skipped(what, &format!("no python3: {e}"));
            return None;
        }
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/http_server.py");
    let mut child = Command::new("python3")
        .arg(script)
        .args([mode, "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the fixture server");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let mut server = PyServer { child, port: 0 };
    let line = rx.recv_timeout(WAIT).expect("the fixture says READY");
    let port = line
        .strip_prefix("READY ")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    server.port = port;
    Some(server)
}

/// initialize, initialized, tools/list, three calls; returns the transport, open.
fn drive(url: &str) -> HttpTransport {
    let mut t = HttpTransport::new(config(url)).unwrap();
    let got = t.send(INIT, Some("1"), deadline()).unwrap();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains(r#""protocolVersion":"2025-06-18""#),
        "{got:?}"
    );
    assert!(got[0].contains(r#""name":"yc-test-http""#), "{got:?}");
    t.set_protocol_version("2025-06-18");
    assert_eq!(
        t.send(INITIALIZED, None, deadline()).unwrap(),
        Vec::<String>::new()
    );

    let got = t
        .send(
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            Some("2"),
            deadline(),
        )
        .unwrap();
    let list = got.last().unwrap();
    for name in ["\"add\"", "\"echo\"", "\"chatty\""] {
        assert!(list.contains(name), "{name} in {list}");
    }
    assert!(list.contains(r#""id":2"#));

    let got = t
        .send(&call(3, "add", r#"{"a":2,"b":40}"#), Some("3"), deadline())
        .unwrap();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains(r#""text":"42""#), "{got:?}");

    let text = "h\u{e9}llo \\\"w\u{f6}rld\\\" \u{1F600}";
    let got = t
        .send(
            &call(4, "echo", &format!(r#"{{"text":"{text}"}}"#)),
            Some("4"),
            deadline(),
        )
        .unwrap();
    assert!(
        got[0].contains(r#"h\u00e9llo"#) || got[0].contains("h\u{e9}llo"),
        "{got:?}"
    );
    t
}

/// The notifications a `chatty(3)` call sends before its answer.
fn chatty(t: &mut HttpTransport) -> Vec<String> {
    let got = t
        .send(&call(5, "chatty", r#"{"n":3}"#), Some("5"), deadline())
        .unwrap();
    let last = got.last().unwrap();
    assert!(
        last.contains("done after 3 steps") && last.contains(r#""id":5"#),
        "{got:?}"
    );
    got
}

/// A raw POST with a session id: the status the server answers.
fn post_with_session(port: u16, path: &str, session: &str) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#;
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    line.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[test]
fn python_sdk_streamable_http_with_event_streams() {
    let Some(server) = py_server("sse") else {
        return;
    };
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let mut t = drive(&url);
    assert!(!t.is_legacy());
    let session = t
        .session_id()
        .expect("the SDK gives a session id")
        .to_string();
    // Notifications first, in order, then the response, all from one event stream.
    let got = chatty(&mut t);
    assert_eq!(got.len(), 7, "{got:?}");
    for (i, m) in got[..6].iter().enumerate() {
        let method = if i % 2 == 0 {
            "notifications/message"
        } else {
            "notifications/progress"
        };
        assert!(m.contains(method), "{i}: {m}");
    }
    assert!(got[0].contains("step 1 of 3") && got[4].contains("step 3 of 3"));
    // Our session is live; DELETE at close ends it: the same id is then unknown (404).
    assert_eq!(post_with_session(server.port, "/mcp", &session), 200);
    t.close();
    assert_eq!(post_with_session(server.port, "/mcp", &session), 404);
    assert_eq!(
        t.send(INITIALIZED, None, deadline()),
        Err(HttpError::Closed)
    );
}

#[test]
fn python_sdk_streamable_http_with_json_answers() {
    let Some(server) = py_server("json") else {
        return;
    };
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let mut t = drive(&url);
    assert!(!t.is_legacy());
    let session = t.session_id().unwrap().to_string();
    // One JSON body has room for the response only.
    let got = chatty(&mut t);
    assert_eq!(got.len(), 1, "{got:?}");
    t.close();
    assert_eq!(post_with_session(server.port, "/mcp", &session), 404);
}

#[test]
fn python_sdk_legacy_http_with_sse_through_the_fallback() {
    let _one = legacy_lock();
    let Some(server) = py_server("legacy") else {
        return;
    };
    let before = thread_count("yc-mcp-sse");
    let url = format!("http://127.0.0.1:{}/sse", server.port);
    let mut t = drive(&url);
    assert!(t.is_legacy());
    assert_eq!(
        t.session_id(),
        None,
        "the legacy session lives in the endpoint"
    );
    assert_eq!(thread_count("yc-mcp-sse"), before + 1);
    let got = chatty(&mut t);
    assert_eq!(got.len(), 7, "{got:?}");
    assert!(got[0].contains("notifications/message"));
    t.close();
    assert_eq!(thread_count("yc-mcp-sse"), before);
    assert_eq!(
        t.send(INITIALIZED, None, deadline()),
        Err(HttpError::Closed)
    );
}

/// A session the server ended answers 404: `SessionExpired`; after `forget_session` a
/// new `initialize` gets a new session that works.
#[test]
fn python_sdk_expired_session_is_reported_and_renewed() {
    let Some(server) = py_server("sse") else {
        return;
    };
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let mut t = drive(&url);
    let old = t.session_id().unwrap().to_string();
    // The server ends the session (a DELETE from elsewhere, as a restart would).
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        s,
        "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nMcp-Session-Id: {old}\r\nMCP-Protocol-Version: 2025-06-18\r\nConnection: close\r\n\r\n",
        server.port
    )
    .unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    assert!(line.contains(" 200 "), "{line}");

    let list = r#"{"jsonrpc":"2.0","id":6,"method":"tools/list"}"#;
    assert_eq!(
        t.send(list, Some("6"), deadline()),
        Err(HttpError::SessionExpired)
    );
    t.forget_session();
    t.send(INIT, Some("1"), deadline()).unwrap();
    let new = t.session_id().unwrap().to_string();
    assert_ne!(new, old);
    t.set_protocol_version("2025-06-18");
    t.send(INITIALIZED, None, deadline()).unwrap();
    let got = t.send(list, Some("6"), deadline()).unwrap();
    assert!(got.last().unwrap().contains("\"chatty\""));
    t.close();
}

/// Threads of this process named `name` (`/proc/self/task/*/comm`).
fn thread_count(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    std::fs::read_to_string(e.path().join("comm"))
                        .is_ok_and(|c| c.trim_end() == name)
                })
                .count()
        })
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------------------
// Hostile servers.

/// One request as a hostile server read it.
#[derive(Debug, Clone)]
struct Req {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Req {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn read_req(s: &mut TcpStream) -> Option<Req> {
    let mut r = BufReader::new(s.try_clone().ok()?);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(Req {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

type Handler = dyn Fn(usize, &Req, TcpStream) + Send + Sync;

/// A server on 127.0.0.1: each connection's first request goes to `handler` (with its
/// number among all requests) and, a copy, to the returned channel.
fn hostile(
    handler: impl Fn(usize, &Req, TcpStream) + Send + Sync + 'static,
) -> (u16, Receiver<Req>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    let handler: Arc<Handler> = Arc::new(handler);
    let n = Arc::new(Mutex::new(0usize));
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut s) = conn else { continue };
            let (handler, tx, n) = (handler.clone(), tx.clone(), n.clone());
            thread::spawn(move || {
                let _ = s.set_read_timeout(Some(WAIT));
                let Some(req) = read_req(&mut s) else { return };
                let i = {
                    let mut n = n.lock().unwrap();
                    *n += 1;
                    *n
                };
                let _ = tx.send(req.clone());
                handler(i, &req, s);
            });
        }
    });
    (port, rx)
}

fn respond(s: &mut TcpStream, status: &str, headers: &str, body: &str) {
    let _ = write!(
        s,
        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

const INIT_RESULT: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"0"}}}"#;

/// Wait until the client closes the connection (a read returns 0 or fails).
fn until_closed(s: &mut TcpStream) {
    let mut b = [0u8; 256];
    while matches!(s.read(&mut b), Ok(n) if n > 0) {}
}

#[test]
fn a_404_with_a_session_is_session_expired_and_headers_are_sent_right() {
    let (port, reqs) = hostile(|i, _req, mut s| {
        if i == 1 {
            respond(
                &mut s,
                "200 OK",
                "Content-Type: application/json\r\nMcp-Session-Id: sess-1\r\n",
                INIT_RESULT,
            );
        } else {
            respond(&mut s, "404 Not Found", "", "");
        }
    });
    let mut t = HttpTransport::new(config(&format!("http://127.0.0.1:{port}/mcp"))).unwrap();
    let got = t.send(INIT, Some("1"), deadline()).unwrap();
    assert_eq!(got, vec![INIT_RESULT.to_string()]);
    assert_eq!(t.session_id(), Some("sess-1"));
    t.set_protocol_version("2025-06-18");
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    assert_eq!(
        t.send(list, Some("2"), deadline()),
        Err(HttpError::SessionExpired)
    );

    let init = reqs.recv_timeout(WAIT).unwrap();
    assert_eq!((init.method.as_str(), init.path.as_str()), ("POST", "/mcp"));
    assert_eq!(
        init.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(init.header("content-type"), Some("application/json"));
    assert_eq!(init.header("authorization"), Some("Bearer t0ken-S3CRET"));
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(init.header("mcp-protocol-version"), None);
    assert_eq!(init.body, INIT);
    let next = reqs.recv_timeout(WAIT).unwrap();
    assert_eq!(next.header("mcp-session-id"), Some("sess-1"));
    assert_eq!(next.header("mcp-protocol-version"), Some("2025-06-18"));
    assert_eq!(next.header("authorization"), Some("Bearer t0ken-S3CRET"));
    assert_eq!(next.body, list);
}

/// A 50 MB body is refused once the bound is read: the server manages to write only a
/// part of it before the client has dropped the connection.
#[test]
fn a_50_mb_body_is_too_large_and_not_read_whole() {
    const SIZE: usize = 50 * 1024 * 1024;
    for ctype in ["application/json", "text/event-stream"] {
        let (written_tx, written_rx) = mpsc::channel::<usize>();
        let written_tx = Mutex::new(written_tx);
        let (port, _reqs) = hostile(move |_, _req, mut s| {
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {SIZE}\r\n\r\n"
            );
            // One JSON string (or one event's data line) that never ends in time.
            let head: &[u8] = if ctype == "text/event-stream" {
                b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\""
            } else {
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\""
            };
            let mut sent = 0;
            if s.write_all(head).is_ok() {
                sent += head.len();
                let chunk = vec![b'x'; 64 * 1024];
                while sent < SIZE {
                    match s.write(&chunk) {
                        Ok(n) => sent += n,
                        Err(_) => break,
                    }
                }
            }
            let _ = written_tx.lock().unwrap().send(sent);
        });
        let mut t = HttpTransport::new(config(&format!("http://127.0.0.1:{port}/mcp"))).unwrap();
        assert_eq!(
            t.send(INIT, Some("1"), deadline()),
            Err(HttpError::TooLarge),
            "{ctype}"
        );
        let sent = written_rx
            .recv_timeout(WAIT)
            .expect("the server's write ends");
        assert!(sent < SIZE / 2, "{ctype}: the server wrote {sent} bytes");
    }
}

#[test]
fn garbage_is_a_bad_response() {
    let bodies: [(&str, &str); 6] = [
        ("application/json", "{not json"),
        ("application/json", "[1,2]"),
        (
            "application/json",
            r#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
        ),
        ("text/event-stream", "data: {not json\n\n"),
        (
            "text/event-stream",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n",
        ),
        ("text/html", "<html>login</html>"),
    ];
    for (ctype, body) in bodies {
        let (port, _reqs) = hostile(move |_, _req, mut s| {
            respond(
                &mut s,
                "200 OK",
                &format!("Content-Type: {ctype}\r\n"),
                body,
            );
        });
        let mut t = HttpTransport::new(config(&format!("http://127.0.0.1:{port}/mcp"))).unwrap();
        let got = t.send(INIT, Some("1"), deadline());
        assert!(
            matches!(got, Err(HttpError::BadResponse(_))),
            "{body}: {got:?}"
        );
        let msg = got.unwrap_err().to_string();
        assert!(
            !msg.contains("not json") && !msg.contains("127.0.0.1"),
            "{msg}"
        );
    }
}

/// A JSON-RPC error with an HTTP error status is the response (with our id, the server
/// may leave it null); without one the status is the error.
#[test]
fn error_statuses_with_and_without_a_json_rpc_error() {
    // A refused initialize tries the legacy GET, which may start a `yc-mcp-sse` thread.
    let _one = legacy_lock();
    let (port, _reqs) = hostile(|i, _req, mut s| match i {
        1 => respond(
            &mut s,
            "400 Bad Request",
            "Content-Type: application/json\r\n",
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"bad params"}}"#,
        ),
        2 => respond(
            &mut s,
            "401 Unauthorized",
            "Content-Type: text/plain\r\n",
            "no",
        ),
        _ => respond(&mut s, "500 Internal Server Error", "", ""),
    });
    let mut t = HttpTransport::new(config(&format!("http://127.0.0.1:{port}/mcp"))).unwrap();
    let list = r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#;
    let got = t.send(list, Some("7"), deadline()).unwrap();
    assert_eq!(
        got,
        vec![r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad params"}}"#]
    );
    assert_eq!(
        t.send(list, Some("7"), deadline()),
        Err(HttpError::Status(401))
    );
    assert!(HttpError::Status(401).to_string().contains("token"));
    assert_eq!(
        t.send(list, Some("7"), deadline()),
        Err(HttpError::Status(500))
    );
}

/// An event stream that never brings the response ends at the deadline, and so does a
/// server that sends its headers a byte at a time or trickles keep-alives (slowloris).
#[test]
fn silence_and_slowloris_end_at_the_deadline() {
    let cases: [&str; 3] = ["silent", "slow-headers", "trickle"];
    for case in cases {
        let (port, _reqs) = hostile(move |_, _req, mut s| match case {
            "silent" => {
                let _ = s.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n\
                      data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n",
                );
                until_closed(&mut s);
            }
            "slow-headers" => {
                for b in b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    .iter()
                    .cycle()
                {
                    if s.write_all(&[*b]).is_err() {
                        break;
                    }
                    thread::sleep(Duration::from_millis(50));
                }
            }
            _ => {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n");
                while s.write_all(b": k\n").is_ok() {
                    thread::sleep(Duration::from_millis(50));
                }
            }
        });
        let mut t = HttpTransport::new(config(&format!("http://127.0.0.1:{port}/mcp"))).unwrap();
        let start = Instant::now();
        let limit = Duration::from_millis(800);
        assert_eq!(
            t.send(INIT, Some("1"), start + limit),
            Err(HttpError::Timeout),
            "{case}"
        );
        let took = start.elapsed();
        assert!(
            took >= limit && took < limit + Duration::from_secs(10),
            "{case}: {took:?}"
        );
    }
}

/// A server whose first accepted request is recorded: proves nobody else connected to it
/// before the marker request the test sends itself.
fn bystander() -> (u16, Receiver<Req>) {
    hostile(|_, _req, mut s| respond(&mut s, "200 OK", "", ""))
}

fn first_request_is_the_marker(port: u16, reqs: &Receiver<Req>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET /marker HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let first = reqs.recv_timeout(WAIT).unwrap();
    assert_eq!(
        first.path, "/marker",
        "the other origin was contacted: {first:?}"
    );
}

#[test]
fn redirects_are_errors_not_followed() {
    for status in [
        "301 Moved Permanently",
        "302 Found",
        "303 See Other",
        "307 Temporary Redirect",
        "308 Permanent Redirect",
    ] {
        let (other, other_reqs) = bystander();
        let (port, _reqs) = hostile(move |_, _req, mut s| {
            respond(
                &mut s,
                status,
                &format!("Location: http://127.0.0.1:{other}/mcp\r\n"),
                "",
            );
        });
        let mut t = HttpTransport::new(config(&format!("http://127.0.0.1:{port}/mcp"))).unwrap();
        let got = t.send(INIT, Some("1"), deadline());
        let code: u16 = status[..3].parse().unwrap();
        assert_eq!(got, Err(HttpError::Redirect(code)));
        assert!(!got.unwrap_err().to_string().contains("127.0.0.1"));
        first_request_is_the_marker(other, &other_reqs);
    }
}

/// The legacy handshake with `endpoint` as given: POST → 405, GET → the event stream.
fn legacy_server(
    endpoint: String,
    stream_closed: Sender<()>,
    after_endpoint: fn(&mut TcpStream, &Receiver<String>),
) -> (u16, Receiver<Req>) {
    let (msg_tx, msg_rx) = mpsc::channel::<String>();
    let msg_tx = Mutex::new(msg_tx);
    let msg_rx = Mutex::new(Some(msg_rx));
    let stream_closed = Mutex::new(stream_closed);
    hostile(
        move |_, req, mut s| match (req.method.as_str(), req.path.as_str()) {
            ("POST", "/sse") => respond(&mut s, "405 Method Not Allowed", "", ""),
            ("GET", "/sse") => {
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nevent: endpoint\r\ndata: {endpoint}\r\n\r\n"
                );
                let rx = msg_rx.lock().unwrap().take().expect("one stream");
                after_endpoint(&mut s, &rx);
                let _ = stream_closed.lock().unwrap().send(());
            }
            ("POST", _) => {
                respond(&mut s, "202 Accepted", "", "Accepted");
                let _ = msg_tx.lock().unwrap().send(req.body.clone());
            }
            _ => respond(&mut s, "404 Not Found", "", ""),
        },
    )
}

#[test]
fn a_legacy_endpoint_on_another_origin_is_refused() {
    let _one = legacy_lock();
    let (other, other_reqs) = bystander();
    let (closed_tx, closed_rx) = mpsc::channel();
    let (port, _reqs) = legacy_server(
        format!("http://127.0.0.1:{other}/messages?session_id=1"),
        closed_tx,
        |s, _| until_closed(s),
    );
    let mut t = HttpTransport::new(config(&format!("http://127.0.0.1:{port}/sse"))).unwrap();
    assert_eq!(
        t.send(INIT, Some("1"), deadline()),
        Err(HttpError::EndpointRefused)
    );
    assert!(!t.is_legacy());
    // The stream was shut down at once, and nothing reached the other origin.
    closed_rx
        .recv_timeout(WAIT)
        .expect("the event stream is closed");
    first_request_is_the_marker(other, &other_reqs);
}

/// The legacy exchange against a server written here: responses arrive on the stream
/// after the 202; `close` ends the reader thread (joined: the server sees the stream
/// closed, and no `yc-mcp-sse` thread is left).
#[test]
fn the_legacy_stream_thread_ends_on_close() {
    let _one = legacy_lock();
    let (closed_tx, closed_rx) = mpsc::channel();
    let (port, reqs) = legacy_server("/messages?session_id=abc".into(), closed_tx, |s, rx| {
        // Answer each posted request on the stream (notifications get nothing), then
        // stay open until the client goes.
        while let Ok(body) = rx.recv_timeout(WAIT) {
            if body.contains("\"initialize\"") {
                let _ = write!(s, "event: message\ndata: {INIT_RESULT}\n\n");
            } else if body.contains("tools/list") {
                let _ = write!(
                    s,
                    "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{}}}}\n\n\
                     event: message\ndata: {{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"tools\":[]}}}}\n\n"
                );
                break;
            }
        }
        until_closed(s);
    });
    let before = thread_count("yc-mcp-sse");
    let mut t = HttpTransport::new(config(&format!("http://127.0.0.1:{port}/sse"))).unwrap();
    assert_eq!(
        t.send(INIT, Some("1"), deadline()).unwrap(),
        vec![INIT_RESULT.to_string()]
    );
    assert!(t.is_legacy());
    assert_eq!(
        t.send(INITIALIZED, None, deadline()).unwrap(),
        Vec::<String>::new()
    );
    let got = t
        .send(
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            Some("2"),
            deadline(),
        )
        .unwrap();
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[1].contains(r#""tools":[]"#));
    assert_eq!(thread_count("yc-mcp-sse"), before + 1);

    // Requests: POST /sse (405), GET /sse, then the three posts to the endpoint.
    let seen: Vec<Req> = (0..5).map(|_| reqs.recv_timeout(WAIT).unwrap()).collect();
    let get = seen.iter().find(|r| r.method == "GET").unwrap();
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("authorization"), Some("Bearer t0ken-S3CRET"));
    let posts: Vec<&Req> = seen
        .iter()
        .filter(|r| r.path == "/messages?session_id=abc")
        .collect();
    assert_eq!(posts.len(), 3);
    assert!(posts.iter().all(|r| r.header("authorization").is_some()));

    // `close` returns once the thread is joined; the server saw its stream close.
    let (done_tx, done_rx) = mpsc::channel();
    thread::spawn(move || {
        t.close();
        let _ = done_tx.send(t);
    });
    let t = done_rx.recv_timeout(WAIT).expect("close returns");
    assert!(!t.is_legacy());
    closed_rx
        .recv_timeout(WAIT)
        .expect("the event stream is closed");
    assert_eq!(thread_count("yc-mcp-sse"), before);
}

/// A legacy stream that ends: the waiting call says so at once (no wait for the
/// deadline), and so does every later call.
#[test]
fn a_legacy_stream_that_ends_is_an_error() {
    let _one = legacy_lock();
    let (closed_tx, _closed_rx) = mpsc::channel();
    let (port, _reqs) = legacy_server("/messages".into(), closed_tx, |s, rx| {
        // The initialize's answer, then the stream ends when tools/list is posted.
        if let Ok(body) = rx.recv_timeout(WAIT) {
            assert!(body.contains("initialize"));
            let _ = write!(s, "data: {INIT_RESULT}\n\n");
        }
        let _ = rx.recv_timeout(WAIT);
        let _ = s.shutdown(std::net::Shutdown::Both);
    });
    let mut t = HttpTransport::new(config(&format!("http://127.0.0.1:{port}/sse"))).unwrap();
    t.send(INIT, Some("1"), deadline()).unwrap();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let start = Instant::now();
    assert_eq!(
        t.send(list, Some("2"), deadline()),
        Err(HttpError::StreamClosed)
    );
    assert!(start.elapsed() < WAIT);
    assert_eq!(
        t.send(list, Some("2"), deadline()),
        Err(HttpError::StreamClosed)
    );
}

/// A refused `initialize`: with a JSON-RPC error (400) that error is the answer and no
/// legacy stream is tried; without one, and no event stream at `GET` either, the error
/// is the `POST`'s status.
#[test]
fn a_refused_initialize_is_answered_or_its_status() {
    // A refused initialize tries the legacy GET, which may start a `yc-mcp-sse` thread.
    let _one = legacy_lock();
    let (port, reqs) = hostile(|_, req, mut s| match req.method.as_str() {
        "POST" if req.header("x-case") == Some("rpc") => respond(
            &mut s,
            "400 Bad Request",
            "Content-Type: application/json\r\n",
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unsupported protocol version"}}"#,
        ),
        _ => respond(
            &mut s,
            "404 Not Found",
            "Content-Type: text/plain\r\n",
            "no",
        ),
    });
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut cfg = config(&url);
    cfg.headers.push(("X-Case".into(), "rpc".into()));
    let mut t = HttpTransport::new(cfg).unwrap();
    let got = t.send(INIT, Some("1"), deadline()).unwrap();
    assert!(got[0].contains("Unsupported protocol version"), "{got:?}");
    assert!(!t.is_legacy());
    // The next request the server sees is the next POST: no GET was tried.
    assert_eq!(
        t.send(INITIALIZED, None, deadline()),
        Err(HttpError::Status(400))
    );
    let seen: Vec<String> = (0..2)
        .map(|_| reqs.recv_timeout(WAIT).unwrap().method)
        .collect();
    assert_eq!(seen, ["POST", "POST"]);

    let mut t = HttpTransport::new(config(&url)).unwrap();
    assert_eq!(
        t.send(INIT, Some("1"), deadline()),
        Err(HttpError::Status(404))
    );
    let seen: Vec<String> = (0..2)
        .map(|_| reqs.recv_timeout(WAIT).unwrap().method)
        .collect();
    assert_eq!(seen, ["POST", "GET"]);
    assert!(!t.is_legacy());
}
