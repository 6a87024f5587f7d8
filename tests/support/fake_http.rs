//! A tiny scriptable HTTP/1.1 server on 127.0.0.1 for tests: fakes of the LLM providers
//! and the Telegram Bot API are built on it. std only, one thread per connection; over
//! TLS when started through `tls.rs` ([`FakeServer::start_wrapped`]).
//!
//! Every request is recorded; the handler decides the response. Responses close the
//! connection (`Connection: close`), which every client handles, so no keep-alive logic;
//! except on a server started with [`FakeServer::start_keep_alive`] (the footprint soak),
//! which answers plain responses with `Connection: keep-alive` and reads the next
//! request from the same connection, as real APIs do.
//!
//! Every answer carries a `Date` header of the real time, as a real server's does (a
//! board with a 1970 clock takes its time from it over HTTPS), unless the handler set
//! one itself; `Raw` answers are written as given.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// One request as the fake server saw it.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The body's bytes as sent (multipart uploads are binary).
    pub raw: Arc<Vec<u8>>,
    /// When the whole request had arrived.
    pub at: Instant,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server sends back.
#[derive(Clone, Debug)]
pub enum Response {
    /// A normal response with a status, extra headers and a body.
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Raw bytes written as is, then the connection is closed (for garbage and cut streams).
    Raw(Vec<u8>),
    /// Wait, then answer with the inner response.
    Delay(Duration, Box<Response>),
    /// Close the connection without answering.
    Hangup,
    /// Send chunks with a pause between them (for streaming), chunked transfer encoding.
    Chunked {
        status: u16,
        content_type: String,
        chunks: Vec<Vec<u8>>,
        pause: Duration,
    },
}

impl Response {
    pub fn json(status: u16, body: &str) -> Response {
        Response::Full {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
        }
    }
    pub fn text(status: u16, body: &str) -> Response {
        Response::Full {
            status,
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: body.as_bytes().to_vec(),
        }
    }
    pub fn with_header(self, k: &str, v: &str) -> Response {
        match self {
            Response::Full {
                status,
                mut headers,
                body,
            } => {
                headers.push((k.into(), v.into()));
                Response::Full {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }
}

type Handler = dyn Fn(&Request) -> Response + Send + Sync + 'static;

/// A connection requests are served on: plain TCP, or TLS over it (`tls.rs`).
pub trait Conn: Read + Write + Send {
    /// End the connection (over TLS, with its close_notify first).
    fn close(&mut self);
}

impl Conn for TcpStream {
    fn close(&mut self) {
        let _ = self.shutdown(std::net::Shutdown::Both);
    }
}

/// Turns an accepted connection into the one requests are served on (a TLS handshake), or
/// `None` when it dealt with the connection itself (a misbehaving TLS server).
pub type Wrap = dyn Fn(TcpStream) -> Option<Box<dyn Conn>> + Send + Sync + 'static;

/// A running fake server; stops accepting when dropped.
pub struct FakeServer {
    port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    /// Connections accepted (over TLS: handshakes begun).
    accepted: Arc<AtomicU64>,
    /// Requests being answered now, and the most at once so far.
    load: Arc<Load>,
    tls: bool,
}

/// Requests between their arrival and the end of their response (a delay included).
#[derive(Default)]
struct Load {
    now: AtomicU64,
    max: AtomicU64,
}

impl FakeServer {
    pub fn start<F>(handler: F) -> FakeServer
    where
        F: Fn(&Request) -> Response + Send + Sync + 'static,
    {
        FakeServer::start_with(handler, false)
    }

    /// Like [`FakeServer::start`], but connections stay open between requests.
    pub fn start_keep_alive<F>(handler: F) -> FakeServer
    where
        F: Fn(&Request) -> Response + Send + Sync + 'static,
    {
        FakeServer::start_with(handler, true)
    }

    fn start_with<F>(handler: F, keep_alive: bool) -> FakeServer
    where
        F: Fn(&Request) -> Response + Send + Sync + 'static,
    {
        let plain: Box<Wrap> = Box::new(|c| Some(Box::new(c) as Box<dyn Conn>));
        FakeServer::start_wrapped(handler, keep_alive, plain, false)
    }

    /// A server whose every accepted connection first goes through `wrap` (on the
    /// connection's own thread); `tls`: [`FakeServer::url`] says `https`.
    pub fn start_wrapped<F>(handler: F, keep_alive: bool, wrap: Box<Wrap>, tls: bool) -> FakeServer
    where
        F: Fn(&Request) -> Response + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicU64::new(0));
        let load = Arc::new(Load::default());
        let handler: Arc<Handler> = Arc::new(handler);
        let wrap: Arc<Wrap> = Arc::from(wrap);
        {
            let requests = requests.clone();
            let stop = stop.clone();
            let accepted = accepted.clone();
            let load = load.clone();
            thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    accepted.fetch_add(1, Ordering::SeqCst);
                    let requests = requests.clone();
                    let handler = handler.clone();
                    let wrap = wrap.clone();
                    let load = load.clone();
                    thread::spawn(move || {
                        let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
                        if let Some(conn) = wrap(conn) {
                            serve(conn, &requests, &load, &*handler, keep_alive);
                        }
                    });
                }
            });
        }
        FakeServer {
            port,
            requests,
            stop,
            accepted,
            load,
            tls,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT`, or `https://…` over TLS (no trailing slash).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// Connections accepted so far (over TLS: handshakes).
    pub fn connections(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }

    /// The most requests this server was answering at once (each counted from its arrival
    /// to the end of its response, a delay included).
    pub fn max_in_flight(&self) -> u64 {
        self.load.max.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Requests whose path ends with `suffix`.
    pub fn requests_to(&self, suffix: &str) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.split('?').next().unwrap_or("").ends_with(suffix))
            .collect()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(
    conn: Box<dyn Conn>,
    requests: &Mutex<Vec<Request>>,
    load: &Load,
    handler: &Handler,
    keep_alive: bool,
) {
    let mut reader = BufReader::new(conn);
    loop {
        let Some(req) = read_request(&mut reader) else {
            return;
        };
        let now = load.now.fetch_add(1, Ordering::SeqCst) + 1;
        load.max.fetch_max(now, Ordering::SeqCst);
        if let Ok(mut r) = requests.lock() {
            r.push(req.clone());
        }
        let resp = handler(&req);
        let again = keep_alive && write_keep_alive(reader.get_mut(), &resp);
        if !again {
            write_response(reader.get_mut(), resp);
        }
        load.now.fetch_sub(1, Ordering::SeqCst);
        if !again {
            return;
        }
    }
}

/// Write a plain response (after its delay, if any) without closing the connection;
/// false for other kinds, which the caller writes and closes as usual.
fn write_keep_alive(conn: &mut Box<dyn Conn>, resp: &Response) -> bool {
    match resp {
        Response::Full {
            status,
            headers,
            body,
        } => {
            let mut head = format!("HTTP/1.1 {} {}\r\n", status, reason(*status));
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            push_date(&mut head, headers);
            head.push_str(&format!(
                "Content-Length: {}\r\nConnection: keep-alive\r\n\r\n",
                body.len()
            ));
            let mut all = head.into_bytes();
            all.extend_from_slice(body);
            let _ = conn.write_all(&all);
            let _ = conn.flush();
            true
        }
        Response::Delay(d, inner) if matches!(**inner, Response::Full { .. }) => {
            thread::sleep(*d);
            write_keep_alive(conn, inner)
        }
        _ => false,
    }
}

fn read_request(reader: &mut impl BufRead) -> Option<Request> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    let mut content_length = 0usize;
    let mut chunked = false;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let (k, v) = (k.trim().to_string(), v.trim().to_string());
            if k.eq_ignore_ascii_case("content-length") {
                content_length = v.parse().unwrap_or(0);
            }
            if k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked") {
                chunked = true;
            }
            headers.push((k, v));
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size_line = String::new();
            reader.read_line(&mut size_line).ok()?;
            let size = usize::from_str_radix(size_line.trim(), 16).ok()?;
            let mut chunk = vec![0u8; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        body.resize(content_length, 0);
        reader.read_exact(&mut body).ok()?;
    }
    Some(Request {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        raw: Arc::new(body),
        at: Instant::now(),
    })
}

/// A `Date: …` line of the real time, unless `headers` hold one.
fn push_date(head: &mut String, headers: &[(String, String)]) {
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("date")) {
        head.push_str(&format!("Date: {}\r\n", http_date(unix_now())));
    }
}

/// Seconds since the epoch by the real clock.
fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// An HTTP date (RFC 9110 IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`) of `unix`.
pub fn http_date(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn write_response(conn: &mut Box<dyn Conn>, resp: Response) {
    match resp {
        Response::Full {
            status,
            headers,
            body,
        } => {
            let mut head = format!("HTTP/1.1 {} {}\r\n", status, reason(status));
            for (k, v) in &headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            push_date(&mut head, &headers);
            head.push_str(&format!(
                "Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            ));
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(&body);
        }
        Response::Raw(bytes) => {
            let _ = conn.write_all(&bytes);
        }
        Response::Delay(d, inner) => {
            thread::sleep(d);
            write_response(conn, *inner);
            return;
        }
        Response::Hangup => {}
        Response::Chunked {
            status,
            content_type,
            chunks,
            pause,
        } => {
            let head = format!(
                "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nDate: {}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                status,
                reason(status),
                content_type,
                http_date(unix_now())
            );
            let _ = conn.write_all(head.as_bytes());
            for c in chunks {
                let _ = conn.write_all(format!("{:x}\r\n", c.len()).as_bytes());
                let _ = conn.write_all(&c);
                let _ = conn.write_all(b"\r\n");
                let _ = conn.flush();
                thread::sleep(pause);
            }
            let _ = conn.write_all(b"0\r\n\r\n");
        }
    }
    let _ = conn.flush();
    conn.close();
}

/// A server answering the scripted responses in order, whatever the path (the last one
/// repeats).
pub fn scripted(responses: Vec<Response>) -> FakeServer {
    let n = std::sync::atomic::AtomicUsize::new(0);
    FakeServer::start(move |_| {
        let i = n.fetch_add(1, Ordering::SeqCst).min(responses.len() - 1);
        responses[i].clone()
    })
}

/// A fake OpenAI-compatible model answering `/v1/chat/completions` with the scripted
/// responses in order (the last one repeats); other paths get 404.
pub fn chat_model(responses: Vec<Response>) -> FakeServer {
    let n = std::sync::atomic::AtomicUsize::new(0);
    FakeServer::start(move |req| {
        if !req.path.ends_with("/v1/chat/completions") {
            return Response::json(404, r#"{"error":{"message":"no route"}}"#);
        }
        let i = n.fetch_add(1, Ordering::SeqCst).min(responses.len() - 1);
        responses[i].clone()
    })
}

/// [`chat_model`] with 200 JSON bodies, each answered after `delay`.
pub fn chat_bodies(bodies: Vec<String>, delay: Duration) -> FakeServer {
    chat_model(
        bodies
            .iter()
            .map(|b| {
                let r = Response::json(200, b);
                if delay.is_zero() {
                    r
                } else {
                    Response::Delay(delay, Box::new(r))
                }
            })
            .collect(),
    )
}

/// An OpenAI-compatible SSE stream (chunked) sending `parts` of text, `pause` apart,
/// with OpenRouter's keep-alive comment first and `[DONE]` last.
pub fn openai_sse(parts: &[&str], pause: Duration) -> Response {
    let mut chunks = vec![
        b": OPENROUTER PROCESSING\n\n".to_vec(),
        b"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n".to_vec(),
    ];
    for p in parts {
        chunks.push(
            format!(
                "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"finish_reason\":null}}]}}\n\n",
                json_str(p)
            )
            .into_bytes(),
        );
    }
    chunks.push(
        b"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
            .to_vec(),
    );
    Response::Chunked {
        status: 200,
        content_type: "text/event-stream".into(),
        chunks,
        pause,
    }
}

/// An OpenAI Chat Completions response carrying a plain assistant message.
pub fn openai_text(content: &str) -> String {
    format!(
        r#"{{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"fake","choices":[{{"index":0,"message":{{"role":"assistant","content":{}}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}}}"#,
        json_str(content)
    )
}

/// The last message of a Chat Completions request body: (role, content), empty strings
/// when the body is not one.
pub fn last_message(body: &str) -> (String, String) {
    use yoctoclaw::json::{as_array, get, parse_value, str_at};
    let Ok(v) = parse_value(body) else {
        return Default::default();
    };
    let last = get(&v, "messages")
        .and_then(as_array)
        .and_then(|m| m.last());
    let s = |k| last.and_then(|m| str_at(m, k)).unwrap_or("").to_string();
    (s("role"), s("content"))
}

/// An OpenAI Chat Completions response carrying one native tool call.
/// `arguments` is inserted as raw JSON: pass a JSON string literal or an object.
pub fn openai_tool_call(id: &str, name: &str, arguments_json: &str) -> String {
    format!(
        r#"{{"id":"chatcmpl-2","object":"chat.completion","created":1700000000,"model":"fake","choices":[{{"index":0,"message":{{"role":"assistant","content":null,"tool_calls":[{{"id":{},"type":"function","function":{{"name":{},"arguments":{}}}}}]}},"finish_reason":"tool_calls"}}]}}"#,
        json_str(id),
        json_str(name),
        arguments_json
    )
}

/// An OpenAI Chat Completions response calling every `(name, arguments)` in order
/// (`arguments` a JSON text, carried as a string as the API does), reporting `usage`
/// (prompt and completion tokens) when given.
pub fn openai_tool_calls<N: AsRef<str>, A: AsRef<str>>(
    calls: &[(N, A)],
    usage: Option<(u64, u64)>,
) -> String {
    openai_tool_calls_ids("call", calls, usage)
}

/// [`openai_tool_calls`] with the calls' ids `{prefix}_0`, `{prefix}_1`... (a model
/// gives each call of a conversation its own id).
pub fn openai_tool_calls_ids<N: AsRef<str>, A: AsRef<str>>(
    prefix: &str,
    calls: &[(N, A)],
    usage: Option<(u64, u64)>,
) -> String {
    let list: Vec<String> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            format!(
                r#"{{"id":"{prefix}_{i}","type":"function","function":{{"name":{},"arguments":{}}}}}"#,
                json_str(name.as_ref()),
                json_str(args.as_ref())
            )
        })
        .collect();
    let usage = usage.map_or(String::new(), |(p, c)| {
        format!(
            r#","usage":{{"prompt_tokens":{p},"completion_tokens":{c},"total_tokens":{}}}"#,
            p + c
        )
    });
    format!(
        r#"{{"id":"c","object":"chat.completion","created":1,"model":"fake","choices":[{{"index":0,"message":{{"role":"assistant","content":null,"tool_calls":[{}]}},"finish_reason":"tool_calls"}}]{usage}}}"#,
        list.join(",")
    )
}

/// Encode a JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
