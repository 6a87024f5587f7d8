//! MCP over HTTP: the Streamable HTTP transport (protocol 2025-03-26 and 2025-06-18) and,
//! as its fallback, the legacy HTTP+SSE transport (2024-11-05). Blocking code for a
//! worker thread; the JSON-RPC session above it (ids, `initialize`, the tools) is the
//! caller's.
//!
//! Streamable HTTP: every message is a `POST` to the server's URL with `Accept:
//! application/json, text/event-stream`. A notification or a response is answered
//! `202 Accepted`; a request either with one JSON body (a message or a batch array) or
//! with an event stream whose `message` events carry the server's notifications and
//! requests and, last, the response, after which the stream is dropped. The
//! `Mcp-Session-Id` the server gives with the `initialize` answer goes on every later
//! request, with `MCP-Protocol-Version` once the caller set it; a `404` while holding a
//! session means the server ended it ([`HttpError::SessionExpired`]: the caller
//! initializes again). [`HttpTransport::close`] sends `DELETE` with the session id (a
//! `405` says the server does not end sessions on request). No `GET` stream is opened
//! for messages the server sends on its own: what the tools need (the answers and the
//! notifications about a call) arrives on each request's own stream, and a standing
//! `GET` would cost a thread and a connection per server while idle.
//!
//! Legacy fallback, as the 2025-03-26 specification's backwards-compatibility section
//! says: when the `POST` of `initialize` is answered `400`, `404` or `405`, a `GET` of the
//! same URL opens an event stream whose first event, `endpoint`, names the URL to post
//! messages to (relative or absolute, resolved against the server's URL, and refused
//! unless on the same scheme, host and port). Messages are then posted there (`202`/`200`,
//! body ignored) and every answer arrives as a `message` event on the `GET` stream, read
//! by one thread per server that hands the events to [`HttpTransport::send`] over a
//! bounded channel.
//!
//! Network guard: the server's URL passes `netguard::parse_http_url` (one unambiguous
//! spelling, no user name); its host is reached even when private or loopback, because
//! the user configured it (a Home Assistant on the LAN, a server on the board itself).
//! Nothing else is: redirects are never followed (a `3xx` is an error) and a legacy
//! `endpoint` on another origin is refused. TLS is the providers' (`provider::tls`: the
//! embedded roots and `tls.ca_file`), names are resolved by `provider::resolve`.
//!
//! Secrets: the configured headers' values (tokens) are sent and never logged; errors'
//! Display is one sentence for the user with no host, URL, header or body in it.
//!
//! # Bounds
//! - One JSON-RPC message: `MCP_MAX_MESSAGE_BYTES` (a JSON body, an event's data; one
//!   event-stream line is bounded by the same number); messages in answer to one
//!   message: `MCP_MAX_MESSAGES_PER_SEND`, and `MCP_MAX_ANSWER_BYTES` in all. A body
//!   over its bound is refused once the bound is read, never buffered whole; an event
//!   stream is read in `STREAM_READ_CHUNK_BYTES` pieces.
//! - HTTP buffers `HTTP_INPUT_BUFFER_BYTES` each way per layer, headers
//!   `HTTP_MAX_HEADER_BYTES`, an error body read up to [`MAX_ERROR_BODY_BYTES`], a session
//!   id up to [`MAX_SESSION_ID_BYTES`].
//! - Time: every request and every read of its answer is bounded by the caller's
//!   deadline (connecting also by `HTTP_CONNECT_TIMEOUT_SECS`); `close` by the
//!   configured timeout.
//! - Legacy stream: `MCP_SSE_QUEUE_LEN` events queued between its thread and `send`;
//!   when the queue is full the thread waits, and the server's writes with it.
//!
//! # Threads
//! [`HttpTransport`] runs on the thread that calls it, a worker (`runtime::Workers`): every
//! method blocks. A legacy server has one more thread, `yc-mcp-sse`
//! (`runtime::spawn_thread`, `THREAD_STACK_BYTES`), started by the fallback and reading
//! its event stream until the stream ends or [`HttpTransport::close`] (or
//! `forget_session`, or dropping the transport) shuts its connection down and joins it.
//!
//! # Blocking
//! `send` blocks until the answer is complete or the deadline passes; `close` for up to
//! the configured timeout (the `DELETE`) plus the legacy thread's exit (immediate once its
//! connection is shut, or after a connect in progress gives up).

use crate::json;
use crate::limits::{
    MCP_MAX_ANSWER_BYTES, MCP_MAX_MESSAGE_BYTES, MCP_MAX_MESSAGES_PER_SEND, MCP_SSE_QUEUE_LEN,
    STREAM_READ_CHUNK_BYTES,
};
use crate::provider::http as phttp;
use crate::provider::sse::{SseEvent, SseParser};
use crate::provider::tls::TlsFailure;
use crate::security::netguard::{self, HttpUrl, UrlError};
use miniserde::json::Value;
use std::fmt;
use std::io::Read;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Largest error body read (a JSON-RPC error with a `4xx`/`5xx`); the rest is not read.
pub const MAX_ERROR_BODY_BYTES: u64 = 64 * 1024;
/// Longest `Mcp-Session-Id` accepted (the specification: visible ASCII; a UUID or a JWT).
pub const MAX_SESSION_ID_BYTES: usize = 1024;
/// Header names the transport sets itself; a configured header with one of these names
/// is left out.
const RESERVED_HEADERS: [&str; 7] = [
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// One HTTP MCP server as configured.
#[derive(Clone)]
pub struct HttpConfig {
    /// The server's URL (`http` or `https`).
    pub url: String,
    /// Headers sent with every request, values already resolved from secrets (never
    /// logged).
    pub headers: Vec<(String, String)>,
    /// How long one message may take (the `DELETE` of `close`; `send` takes a deadline).
    pub timeout: Duration,
}

impl fmt::Debug for HttpConfig {
    /// The header names only: the values are secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("HttpConfig")
            .field("headers", &names)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Why an exchange with an HTTP MCP server failed. Display: one sentence for the user,
/// never a host, a URL, a header or a body.
#[derive(Debug, Clone, PartialEq)]
pub enum HttpError {
    /// The configured URL is not an acceptable `http`/`https` URL.
    Refused(UrlError),
    /// A configured header's name or value cannot be sent (a control character, a
    /// character HTTP does not allow).
    BadHeader,
    /// The server could not be reached or the connection broke (a secret-free detail).
    Network(String),
    /// TLS failed (`provider::tls`).
    Tls(TlsFailure),
    /// The deadline passed.
    Timeout,
    /// The server answered with this error status.
    Status(u16),
    /// The server answered with a redirect, which is not followed.
    Redirect(u16),
    /// A `404` for the session id: the server ended the session; initialize again.
    SessionExpired,
    /// A message (or the whole answer) over its bound.
    TooLarge,
    /// More messages in answer to one message than `MCP_MAX_MESSAGES_PER_SEND`.
    TooMany,
    /// The answer is not what the protocol allows (our own words, never the server's).
    BadResponse(&'static str),
    /// A legacy server's `endpoint` event names a URL on another origin, or none usable.
    EndpointRefused,
    /// A legacy server's event stream ended; the server has to be started again.
    StreamClosed,
    /// The transport was closed.
    Closed,
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Refused(e) => write!(f, "the MCP server's url is not usable: {e}"),
            HttpError::BadHeader => f.write_str(
                "a header configured for the MCP server has a character HTTP does not allow",
            ),
            HttpError::Network(d) => write!(
                f,
                "cannot reach the MCP server ({d}); check that it runs and its url"
            ),
            HttpError::Tls(t) => write!(f, "TLS with the MCP server failed: {t}"),
            HttpError::Timeout => f.write_str("the MCP server did not answer in time"),
            HttpError::Status(s @ (401 | 403)) => write!(
                f,
                "the MCP server refused the request (HTTP {s}); check the token in its headers"
            ),
            HttpError::Status(s) => write!(f, "the MCP server answered with an error (HTTP {s})"),
            HttpError::Redirect(s) => write!(
                f,
                "the MCP server answered with a redirect (HTTP {s}), which is not followed; \
                 configure the url it redirects to"
            ),
            HttpError::SessionExpired => f.write_str("the MCP server ended the session"),
            HttpError::TooLarge => write!(
                f,
                "the MCP server sent a message larger than {} MiB",
                MCP_MAX_MESSAGE_BYTES / (1024 * 1024)
            ),
            HttpError::TooMany => write!(
                f,
                "the MCP server sent more than {MCP_MAX_MESSAGES_PER_SEND} messages for one request"
            ),
            HttpError::BadResponse(d) => write!(f, "the MCP server sent an invalid answer: {d}"),
            HttpError::EndpointRefused => f.write_str(
                "the MCP server named a message endpoint on another origin, which is refused",
            ),
            HttpError::StreamClosed => f.write_str("the MCP server's event stream ended"),
            HttpError::Closed => f.write_str("the connection to the MCP server is closed"),
        }
    }
}

impl std::error::Error for HttpError {}

impl From<phttp::HttpError> for HttpError {
    fn from(e: phttp::HttpError) -> HttpError {
        match e {
            phttp::HttpError::Unreachable(d) | phttp::HttpError::Malformed(d) => {
                HttpError::Network(d)
            }
            phttp::HttpError::Timeout => HttpError::Timeout,
            phttp::HttpError::TooLarge => HttpError::TooLarge,
            phttp::HttpError::Tls(t) => HttpError::Tls(t),
        }
    }
}

fn net(e: ureq::Error) -> HttpError {
    phttp::map_error(e).into()
}

fn net_io(e: std::io::Error) -> HttpError {
    phttp::map_io_error(e).into()
}

/// Which transport the server speaks, as far as known.
enum Mode {
    /// Nothing succeeded yet: the `initialize` may still fall back to legacy.
    Unknown,
    Streamable,
    Legacy(Legacy),
    Closed,
}

/// A legacy server's event stream and where to post.
struct Legacy {
    /// The `endpoint` event's URL, checked to be on the server's origin.
    endpoint: String,
    /// Events from the reader thread; `None` once the stream ended.
    events: Option<Receiver<StreamItem>>,
    /// The stream's own agent: shutting it down ends the thread's blocked read.
    agent: ureq::Agent,
    thread: Option<JoinHandle<()>>,
}

/// What the legacy reader thread hands over.
enum StreamItem {
    Event(SseEvent),
    /// The stream ended (the thread exits after sending this).
    End(HttpError),
}

/// One HTTP MCP server's connection state. `Send`: it moves into worker jobs.
pub struct HttpTransport {
    url: String,
    origin: HttpUrl,
    headers: Vec<(String, String)>,
    timeout: Duration,
    agent: ureq::Agent,
    session: Option<String>,
    protocol: Option<String>,
    mode: Mode,
}

impl fmt::Debug for HttpTransport {
    /// No URL, no headers, no session id.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTransport")
            .field("legacy", &self.is_legacy())
            .field("has_session", &self.session.is_some())
            .finish_non_exhaustive()
    }
}

impl HttpTransport {
    /// Check the URL and the headers; nothing is sent yet. TLS uses the process's roots
    /// (`provider::tls`, `tls.ca_file` installed at start), so nothing else is needed.
    pub fn new(cfg: HttpConfig) -> Result<HttpTransport, HttpError> {
        let origin = netguard::parse_http_url(&cfg.url).map_err(HttpError::Refused)?;
        let mut headers = Vec::with_capacity(cfg.headers.len());
        for (k, v) in cfg.headers {
            let name_ok = !k.is_empty()
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            let value_ok = v.bytes().all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f));
            if !name_ok || !value_ok {
                return Err(HttpError::BadHeader);
            }
            if RESERVED_HEADERS.iter().any(|r| k.eq_ignore_ascii_case(r)) {
                log::warn!("mcp: the configured header {k} is set by the transport; left out");
                continue;
            }
            headers.push((k, v));
        }
        Ok(HttpTransport {
            url: origin.to_string(),
            origin,
            headers,
            timeout: cfg.timeout,
            agent: phttp::agent_per_request(),
            session: None,
            protocol: None,
            mode: Mode::Unknown,
        })
    }

    /// Send one JSON-RPC message (one serialized JSON object). `request_id`: the id, as
    /// JSON text, when the message is a request that expects a response. Returns every
    /// message the server sent in answer, each one serialized JSON object, in order, the
    /// response with `request_id` last; nothing for a notification or a response
    /// (`202 Accepted`). The first `initialize` may switch to the legacy transport.
    pub fn send(
        &mut self,
        message: &str,
        request_id: Option<&str>,
        deadline: Instant,
    ) -> Result<Vec<String>, HttpError> {
        if message.len() > MCP_MAX_MESSAGE_BYTES {
            return Err(HttpError::TooLarge);
        }
        match self.mode {
            Mode::Closed => Err(HttpError::Closed),
            Mode::Legacy(_) => self.legacy_send(message, request_id, deadline),
            Mode::Unknown | Mode::Streamable => self.streamable_send(message, request_id, deadline),
        }
    }

    /// The protocol version `initialize` negotiated, sent as `MCP-Protocol-Version` on
    /// every later Streamable HTTP request.
    pub fn set_protocol_version(&mut self, v: &str) {
        self.protocol = Some(v.to_string());
    }

    /// Drop the session (and a legacy stream) before initializing again.
    pub fn forget_session(&mut self) {
        self.session = None;
        self.protocol = None;
        if let Mode::Legacy(legacy) = &mut self.mode {
            stop(legacy);
            self.mode = Mode::Unknown;
        }
    }

    /// End the session (`DELETE` with its id; a `405` or any failure is only logged) and
    /// stop a legacy stream's thread. Later calls to `send` fail with `Closed`.
    pub fn close(&mut self) {
        match std::mem::replace(&mut self.mode, Mode::Closed) {
            Mode::Legacy(mut legacy) => stop(&mut legacy),
            Mode::Streamable if self.session.is_some() => {
                let deadline = Instant::now() + self.timeout;
                match self.call("DELETE", &self.url, None, true, deadline) {
                    Ok(resp) => {
                        let s = resp.status().as_u16();
                        if s == 405 {
                            log::debug!("mcp: the server does not end sessions on request");
                        } else if !(200..300).contains(&s) {
                            log::debug!("mcp: ending the session answered HTTP {s}");
                        }
                    }
                    Err(e) => log::debug!("mcp: ending the session failed: {e}"),
                }
            }
            _ => {}
        }
        self.session = None;
    }

    /// True once the server was found to speak the legacy HTTP+SSE transport.
    pub fn is_legacy(&self) -> bool {
        matches!(self.mode, Mode::Legacy(_))
    }

    /// The session id the server gave (a credential of sorts: never log it).
    pub fn session_id(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Legacy transport only: the messages that arrived on the event stream since the
    /// last `send` (a server's `ping` or notifications while idle), without waiting.
    /// Streamable HTTP: always empty (no standing stream).
    pub fn take_pending(&mut self) -> Result<Vec<String>, HttpError> {
        let Mode::Legacy(legacy) = &mut self.mode else {
            return Ok(Vec::new());
        };
        let mut answer = Answer::new(None);
        loop {
            let Some(rx) = &legacy.events else {
                return Err(HttpError::StreamClosed);
            };
            match rx.try_recv() {
                Ok(StreamItem::Event(ev)) => {
                    answer.event(ev)?;
                }
                Ok(StreamItem::End(e)) => {
                    legacy.events = None;
                    log::debug!("mcp: the legacy event stream ended: {e}");
                    return if answer.messages.is_empty() {
                        Err(HttpError::StreamClosed)
                    } else {
                        Ok(answer.messages)
                    };
                }
                Err(TryRecvError::Empty) => return Ok(answer.messages),
                Err(TryRecvError::Disconnected) => {
                    legacy.events = None;
                    return Err(HttpError::StreamClosed);
                }
            }
        }
    }

    /// One request with our headers and the remaining time as its overall timeout.
    /// `version`: with `MCP-Protocol-Version` once set (not on `initialize`, which
    /// negotiates it, nor to a legacy server, which predates it).
    fn call(
        &self,
        method: &str,
        url: &str,
        body: Option<&str>,
        version: bool,
        deadline: Instant,
    ) -> Result<ureq::http::Response<ureq::Body>, HttpError> {
        let remaining = remaining(deadline)?;
        let mut req = ureq::http::Request::builder().method(method).uri(url);
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        req = req.header("accept", "application/json, text/event-stream");
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s.as_str());
        }
        if let (Some(v), true) = (&self.protocol, version) {
            req = req.header("mcp-protocol-version", v.as_str());
        }
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        let req = req
            .body(body.unwrap_or("").as_bytes())
            .map_err(|_| HttpError::BadHeader)?;
        let req = self
            .agent
            .configure_request(req)
            .timeout_global(Some(remaining))
            .build();
        let resp = self.agent.run(req).map_err(net)?;
        phttp::note_date(&resp, url);
        Ok(resp)
    }

    fn streamable_send(
        &mut self,
        message: &str,
        request_id: Option<&str>,
        deadline: Instant,
    ) -> Result<Vec<String>, HttpError> {
        let initialize = request_id.is_some() && is_initialize(message);
        let resp = self.call("POST", &self.url, Some(message), !initialize, deadline)?;
        let status = resp.status().as_u16();
        if let (true, Mode::Unknown, 400 | 404 | 405, Some(id)) =
            (initialize, &self.mode, status, request_id)
        {
            // A JSON-RPC error with the 400 is a Streamable HTTP server refusing this
            // `initialize` (its parameters): that is the answer, not a reason to fall back.
            if status == 400
                && let Ok(error) = error_answer(resp, status, id)
            {
                return Ok(error);
            }
            log::debug!("mcp: POST answered HTTP {status}; trying the legacy HTTP+SSE transport");
            return self.fall_back(message, id, status, deadline);
        }
        if status == 404 && self.session.is_some() {
            return Err(HttpError::SessionExpired);
        }
        if (300..400).contains(&status) {
            return Err(HttpError::Redirect(status));
        }
        if status >= 400 {
            return match request_id {
                Some(id) => error_answer(resp, status, id),
                None => Err(HttpError::Status(status)),
            };
        }
        if status == 202 {
            return match request_id {
                Some(_) => Err(HttpError::BadResponse(
                    "a request was answered 202 Accepted, with no response",
                )),
                None => Ok(Vec::new()),
            };
        }
        if !(200..300).contains(&status) {
            return Err(HttpError::Status(status));
        }
        if initialize {
            self.session = session_id(&resp)?;
            self.mode = Mode::Streamable;
        }
        let Some(id) = request_id else {
            // A notification or a response needs no answer; a body, if any, is dropped.
            return Ok(Vec::new());
        };
        let mut answer = Answer::new(Some(id));
        match content_type(&resp).as_str() {
            "application/json" => {
                let text = resp
                    .into_body()
                    .into_with_config()
                    .limit(MCP_MAX_ANSWER_BYTES as u64)
                    .read_to_string()
                    .map_err(net)?;
                answer.body(text)?;
            }
            "text/event-stream" => {
                let mut reader = resp.into_body().into_reader();
                read_events(&mut reader, |ev| answer.event(ev))?;
                if !answer.done {
                    return Err(HttpError::BadResponse(
                        "the event stream ended before the response",
                    ));
                }
            }
            _ => {
                return Err(HttpError::BadResponse(
                    "the answer is neither JSON nor an event stream",
                ));
            }
        }
        answer.finish()
    }

    /// The `POST` of `initialize` was refused with `status`: open the legacy event
    /// stream, wait for its `endpoint`, then send `initialize` there. A `GET` that opens
    /// no event stream means the server is no legacy one: the error is the `POST`'s.
    fn fall_back(
        &mut self,
        message: &str,
        request_id: &str,
        status: u16,
        deadline: Instant,
    ) -> Result<Vec<String>, HttpError> {
        let mut legacy = self.open_stream(deadline)?;
        let first = match legacy.events.as_ref().map(|rx| recv_until(rx, deadline)) {
            Some(Ok(StreamItem::Event(ev))) => Ok(ev),
            Some(Ok(StreamItem::End(
                HttpError::Status(_) | HttpError::Redirect(_) | HttpError::BadResponse(_),
            ))) => Err(HttpError::Status(status)),
            Some(Ok(StreamItem::End(e))) | Some(Err(e)) => Err(e),
            None => Err(HttpError::StreamClosed),
        };
        let endpoint = first.and_then(|ev| {
            if ev.event == "endpoint" {
                resolve_endpoint(&self.origin, &ev.data)
            } else {
                Err(HttpError::BadResponse(
                    "the event stream did not start with its endpoint",
                ))
            }
        });
        match endpoint {
            Ok(url) => legacy.endpoint = url,
            Err(e) => {
                stop(&mut legacy);
                return Err(e);
            }
        }
        self.session = None;
        self.mode = Mode::Legacy(legacy);
        self.legacy_send(message, Some(request_id), deadline)
    }

    /// Start the thread that opens and reads the legacy event stream.
    fn open_stream(&self, deadline: Instant) -> Result<Legacy, HttpError> {
        let agent = phttp::agent_per_request();
        let mut req = ureq::http::Request::builder()
            .method("GET")
            .uri(self.url.as_str());
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let req = req
            .header("accept", "text/event-stream")
            .header("cache-control", "no-cache")
            .body(())
            .map_err(|_| HttpError::BadHeader)?;
        // The headers must come within the deadline; the stream itself may stay quiet
        // for as long as the server has nothing to say.
        let req = agent
            .configure_request(req)
            .timeout_recv_response(Some(remaining(deadline)?))
            .build();
        let (tx, rx) = sync_channel(MCP_SSE_QUEUE_LEN);
        let thread_agent = agent.clone();
        let thread = crate::runtime::spawn_thread("yc-mcp-sse", move || {
            read_stream(&thread_agent, req, &tx);
        })
        .map_err(|_| HttpError::Network("cannot start a thread".into()))?;
        Ok(Legacy {
            endpoint: String::new(),
            events: Some(rx),
            agent,
            thread: Some(thread),
        })
    }

    fn legacy_send(
        &mut self,
        message: &str,
        request_id: Option<&str>,
        deadline: Instant,
    ) -> Result<Vec<String>, HttpError> {
        let Mode::Legacy(legacy) = &self.mode else {
            return Err(HttpError::Closed);
        };
        if legacy.events.is_none() {
            return Err(HttpError::StreamClosed);
        }
        let resp = self.call("POST", &legacy.endpoint, Some(message), false, deadline)?;
        let status = resp.status().as_u16();
        drop(resp);
        match status {
            200..=299 => {}
            300..=399 => return Err(HttpError::Redirect(status)),
            404 => return Err(HttpError::SessionExpired),
            s => return Err(HttpError::Status(s)),
        }
        let Some(id) = request_id else {
            return Ok(Vec::new());
        };
        let Mode::Legacy(legacy) = &mut self.mode else {
            return Err(HttpError::Closed);
        };
        let mut answer = Answer::new(Some(id));
        while !answer.done {
            let Some(rx) = &legacy.events else {
                return Err(HttpError::StreamClosed);
            };
            match recv_until(rx, deadline) {
                Ok(StreamItem::Event(ev)) => {
                    answer.event(ev)?;
                }
                Ok(StreamItem::End(e)) => {
                    log::debug!("mcp: the legacy event stream ended: {e}");
                    legacy.events = None;
                    return Err(HttpError::StreamClosed);
                }
                Err(e) => {
                    if e == HttpError::StreamClosed {
                        legacy.events = None;
                    }
                    return Err(e);
                }
            }
        }
        answer.finish()
    }
}

impl Drop for HttpTransport {
    /// Stop a legacy stream's thread (no `DELETE`: dropping sends nothing).
    fn drop(&mut self) {
        if let Mode::Legacy(legacy) = &mut self.mode {
            stop(legacy);
        }
    }
}

/// Time left before `deadline`, or `Timeout` when none is.
fn remaining(deadline: Instant) -> Result<Duration, HttpError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        Err(HttpError::Timeout)
    } else {
        Ok(left)
    }
}

/// The next item of a legacy stream, waiting until `deadline`.
fn recv_until(rx: &Receiver<StreamItem>, deadline: Instant) -> Result<StreamItem, HttpError> {
    match rx.recv_timeout(remaining(deadline)?) {
        Ok(item) => Ok(item),
        Err(RecvTimeoutError::Timeout) => Err(HttpError::Timeout),
        Err(RecvTimeoutError::Disconnected) => Err(HttpError::StreamClosed),
    }
}

/// End a legacy stream: drop the queue (a thread waiting to hand over an event wakes
/// with an error), shut its connection (a thread blocked in a read wakes), wait for the
/// thread to end.
fn stop(legacy: &mut Legacy) {
    legacy.events = None;
    legacy.agent.clone().shutdown();
    if let Some(t) = legacy.thread.take()
        && t.join().is_err()
    {
        log::warn!("mcp: the event stream's thread panicked");
    }
}

/// The legacy stream's thread: `GET`, then every event into the queue until the stream
/// ends, the queue is dropped, or the connection is shut down.
fn read_stream(agent: &ureq::Agent, req: ureq::http::Request<()>, tx: &SyncSender<StreamItem>) {
    let end = match agent.run(req) {
        Err(e) => net(e),
        Ok(resp) => {
            let status = resp.status().as_u16();
            if status != 200 {
                if (300..400).contains(&status) {
                    HttpError::Redirect(status)
                } else {
                    HttpError::Status(status)
                }
            } else if content_type(&resp) != "text/event-stream" {
                HttpError::BadResponse("the GET answer is not an event stream")
            } else {
                let mut reader = resp.into_body().into_reader();
                let handed = read_events(&mut reader, |ev| {
                    tx.send(StreamItem::Event(ev))
                        .map(|()| false)
                        .map_err(|_| HttpError::Closed)
                });
                match handed {
                    Ok(()) => HttpError::StreamClosed,
                    Err(e) => e,
                }
            }
        }
    };
    // Fails when the transport already let go of the queue: nobody to tell.
    let _ = tx.send(StreamItem::End(end));
}

/// Read an event stream in bounded pieces, handing each event to `on_event` until it
/// says it has what it needs (`Ok(true)`), it fails, or the stream ends.
fn read_events(
    reader: &mut impl Read,
    mut on_event: impl FnMut(SseEvent) -> Result<bool, HttpError>,
) -> Result<(), HttpError> {
    // Room for the field name: the message bound itself is `Answer`'s.
    let mut parser = SseParser::with_limit(MCP_MAX_MESSAGE_BYTES + 64);
    let mut buf = [0u8; STREAM_READ_CHUNK_BYTES];
    let mut events = Vec::new();
    loop {
        let n = reader.read(&mut buf).map_err(net_io)?;
        if n == 0 {
            return Ok(());
        }
        parser
            .push(&buf[..n], &mut events)
            .map_err(|_| HttpError::TooLarge)?;
        for ev in events.drain(..) {
            if on_event(ev)? {
                return Ok(());
            }
        }
    }
}

/// The messages collected in answer to one message, and whether its response came.
struct Answer {
    /// The request's id as compact JSON, for comparison.
    want: Option<String>,
    messages: Vec<String>,
    bytes: usize,
    done: bool,
}

impl Answer {
    fn new(request_id: Option<&str>) -> Answer {
        let want = request_id.map(|id| match json::parse_value(id) {
            Ok(v) => json::to_string(&v),
            Err(_) => id.trim().to_string(),
        });
        Answer {
            want,
            messages: Vec::new(),
            bytes: 0,
            done: false,
        }
    }

    /// One event of a stream; true once the response arrived. Events other than
    /// `message` (the default name) are ignored, and so is an empty one (a stream's
    /// priming event, a keep-alive).
    fn event(&mut self, ev: SseEvent) -> Result<bool, HttpError> {
        if !(ev.event.is_empty() || ev.event == "message") || ev.data.trim().is_empty() {
            return Ok(self.done);
        }
        self.text(ev.data)?;
        Ok(self.done)
    }

    /// A JSON body: one message or a batch array.
    fn body(&mut self, text: String) -> Result<(), HttpError> {
        self.text(text)?;
        if !self.done {
            return Err(HttpError::BadResponse("the answer holds no response"));
        }
        Ok(())
    }

    /// One text holding a message or a batch array of them.
    fn text(&mut self, text: String) -> Result<(), HttpError> {
        let value = json::parse_value(&text)
            .map_err(|_| HttpError::BadResponse("a message is not JSON"))?;
        match value {
            Value::Object(_) => {
                if text.len() > MCP_MAX_MESSAGE_BYTES {
                    return Err(HttpError::TooLarge);
                }
                let id = self.response_id(&value);
                drop(value);
                self.push(text, id)
            }
            Value::Array(items) if !items.is_empty() => {
                drop(text);
                for item in items.iter() {
                    if !matches!(item, Value::Object(_)) {
                        return Err(HttpError::BadResponse("a batch holds a non-object"));
                    }
                    let one = json::to_string(item);
                    if one.len() > MCP_MAX_MESSAGE_BYTES {
                        return Err(HttpError::TooLarge);
                    }
                    let id = self.response_id(item);
                    self.push(one, id)?;
                }
                Ok(())
            }
            _ => Err(HttpError::BadResponse("a message is not a JSON object")),
        }
    }

    /// True when `v` is the response (a result or an error, no method) to our request.
    fn response_id(&self, v: &Value) -> bool {
        let Some(want) = &self.want else {
            return false;
        };
        let is_response = json::get(v, "method").is_none()
            && (json::get(v, "result").is_some() || json::get(v, "error").is_some());
        is_response && json::get(v, "id").is_some_and(|id| json::to_string(id) == *want)
    }

    fn push(&mut self, message: String, is_ours: bool) -> Result<(), HttpError> {
        if self.done {
            // Whatever follows the response in one body is left out: the answer ends there.
            return Ok(());
        }
        if self.messages.len() >= MCP_MAX_MESSAGES_PER_SEND {
            return Err(HttpError::TooMany);
        }
        self.bytes += message.len();
        if self.bytes > MCP_MAX_ANSWER_BYTES {
            return Err(HttpError::TooLarge);
        }
        self.messages.push(message);
        self.done = is_ours;
        Ok(())
    }

    fn finish(self) -> Result<Vec<String>, HttpError> {
        if self.done {
            Ok(self.messages)
        } else {
            Err(HttpError::BadResponse("the answer holds no response"))
        }
    }
}

/// A `4xx`/`5xx` in answer to a request: a JSON-RPC error in the body (as the
/// specification allows, sometimes with a `null` id) becomes the response, with our id;
/// anything else is the status.
fn error_answer(
    resp: ureq::http::Response<ureq::Body>,
    status: u16,
    request_id: &str,
) -> Result<Vec<String>, HttpError> {
    if content_type(&resp) != "application/json" {
        return Err(HttpError::Status(status));
    }
    let Ok(text) = resp
        .into_body()
        .into_with_config()
        .limit(MAX_ERROR_BODY_BYTES)
        .read_to_string()
    else {
        return Err(HttpError::Status(status));
    };
    let Ok(value) = json::parse_value(&text) else {
        return Err(HttpError::Status(status));
    };
    match json::get(&value, "error") {
        Some(error @ Value::Object(_)) if json::get(&value, "method").is_none() => {
            let mut w = json::Writer::with_capacity(text.len() + request_id.len() + 32);
            w.begin_object();
            w.field_str("jsonrpc", "2.0");
            w.key("id");
            w.raw(request_id);
            w.key("error");
            w.raw(&json::to_string(error));
            w.end_object();
            Ok(vec![w.finish()])
        }
        _ => Err(HttpError::Status(status)),
    }
}

/// The media type of an answer, lowercase, without parameters.
fn content_type<B>(resp: &ureq::http::Response<B>) -> String {
    resp.headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default()
}

/// The `Mcp-Session-Id` of an `initialize` answer: visible ASCII, bounded.
fn session_id<B>(resp: &ureq::http::Response<B>) -> Result<Option<String>, HttpError> {
    let Some(v) = resp.headers().get("mcp-session-id") else {
        return Ok(None);
    };
    let b = v.as_bytes();
    if b.is_empty()
        || b.len() > MAX_SESSION_ID_BYTES
        || !b.iter().all(|c| (0x21..=0x7e).contains(c))
    {
        return Err(HttpError::BadResponse(
            "the session id is not visible ASCII",
        ));
    }
    Ok(Some(String::from_utf8_lossy(b).into_owned()))
}

/// True when the message is an `initialize` request.
fn is_initialize(message: &str) -> bool {
    message.contains("\"initialize\"")
        && json::parse_value(message)
            .is_ok_and(|v| json::str_at(&v, "method") == Some("initialize"))
}

/// The URL of a legacy `endpoint` event (relative or absolute), which must be on the
/// server's own scheme, host and port.
fn resolve_endpoint(base: &HttpUrl, data: &str) -> Result<String, HttpError> {
    let data = data.trim();
    let scheme = match base.scheme {
        netguard::Scheme::Http => "http",
        netguard::Scheme::Https => "https",
    };
    let origin = {
        let mut o = base.clone();
        o.path_and_query = String::new();
        o.to_string()
    };
    let joined = if data.contains("://") {
        data.to_string()
    } else if data.starts_with("//") {
        format!("{scheme}:{data}")
    } else if data.starts_with('/') {
        format!("{origin}{data}")
    } else if data.starts_with('?') {
        let path = base.path_and_query.split('?').next().unwrap_or("/");
        format!("{origin}{path}{data}")
    } else if data.is_empty() {
        return Err(HttpError::EndpointRefused);
    } else {
        let path = base.path_and_query.split('?').next().unwrap_or("/");
        let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        format!("{origin}{dir}{data}")
    };
    let url = netguard::parse_http_url(&joined).map_err(|_| HttpError::EndpointRefused)?;
    if url.scheme != base.scheme || url.host != base.host || url.port != base.port {
        return Err(HttpError::EndpointRefused);
    }
    Ok(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(s: &str) -> HttpUrl {
        netguard::parse_http_url(s).unwrap()
    }

    #[test]
    fn endpoints_resolve_on_the_same_origin_only() {
        let b = base("http://127.0.0.1:8000/sse");
        let ok = |d: &str| resolve_endpoint(&b, d);
        assert_eq!(
            ok("/messages/?session_id=ab12").unwrap(),
            "http://127.0.0.1:8000/messages/?session_id=ab12"
        );
        assert_eq!(
            ok("http://127.0.0.1:8000/m?x=1").unwrap(),
            "http://127.0.0.1:8000/m?x=1"
        );
        assert_eq!(
            ok("messages?s=1").unwrap(),
            "http://127.0.0.1:8000/messages?s=1"
        );
        assert_eq!(ok("?s=1").unwrap(), "http://127.0.0.1:8000/sse?s=1");
        let nested = base("https://ha.local/api/mcp/sse");
        assert_eq!(
            resolve_endpoint(&nested, "messages").unwrap(),
            "https://ha.local/api/mcp/messages"
        );
        for bad in [
            "http://127.0.0.1:8001/m",
            "https://127.0.0.1:8000/m",
            "http://evil.example/m",
            "//evil.example/m",
            "http://user@127.0.0.1:8000/m",
            "/m\r\nX: y",
            "",
            "ftp://127.0.0.1:8000/m",
        ] {
            assert_eq!(ok(bad), Err(HttpError::EndpointRefused), "{bad:?}");
        }
    }

    #[test]
    fn answers_end_at_the_response_and_keep_the_order() {
        let mut a = Answer::new(Some("7"));
        a.text(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#.into())
            .unwrap();
        // A request from the server with the same id is not the response.
        a.text(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#.into())
            .unwrap();
        // A response to another id is collected, not taken for ours.
        a.text(r#"{"jsonrpc":"2.0","id":8,"result":{}}"#.into())
            .unwrap();
        assert!(!a.done);
        a.text(r#"{"jsonrpc":"2.0","id":7,"result":{"ok":true}}"#.into())
            .unwrap();
        assert!(a.done);
        let got = a.finish().unwrap();
        assert_eq!(got.len(), 4);
        assert!(got[3].contains("\"ok\":true"));
    }

    #[test]
    fn string_ids_and_batches() {
        let mut a = Answer::new(Some("\"abc\""));
        a.body(r#"[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"abc","error":{"code":-1,"message":"m"}}]"#.into())
            .unwrap();
        let got = a.finish().unwrap();
        assert_eq!(got.len(), 2);
        assert!(got[1].contains("\"error\""));
        let mut a = Answer::new(Some("1"));
        assert_eq!(
            a.body(r#"{"jsonrpc":"2.0","id":"1","result":{}}"#.into()),
            Err(HttpError::BadResponse("the answer holds no response"))
        );
        for bad in ["[]", "[1]", "\"x\"", "{", "null"] {
            let mut a = Answer::new(Some("1"));
            assert!(
                matches!(a.body(bad.into()), Err(HttpError::BadResponse(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn too_many_messages_are_refused() {
        let mut a = Answer::new(Some("1"));
        let n = r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#;
        let mut last = Ok(());
        for _ in 0..=MCP_MAX_MESSAGES_PER_SEND {
            last = a.text(n.into());
            if last.is_err() {
                break;
            }
        }
        assert_eq!(last, Err(HttpError::TooMany));
    }

    #[test]
    fn priming_and_other_events_are_skipped() {
        let mut a = Answer::new(Some("1"));
        let ev = |e: &str, d: &str| SseEvent {
            event: e.into(),
            data: d.into(),
        };
        assert!(!a.event(ev("message", "")).unwrap());
        assert!(!a.event(ev("ping", "{}")).unwrap());
        assert!(
            a.event(ev("", r#"{"jsonrpc":"2.0","id":1,"result":{}}"#))
                .unwrap()
        );
        assert_eq!(a.messages.len(), 1);
    }

    #[test]
    fn configured_headers_are_checked_and_never_shown() {
        let cfg = |headers: Vec<(&str, &str)>| HttpConfig {
            url: "http://127.0.0.1:9/mcp".into(),
            headers: headers
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            timeout: Duration::from_secs(1),
        };
        assert_eq!(
            HttpTransport::new(cfg(vec![("Authorization", "Bearer a\r\nX: y")])).err(),
            Some(HttpError::BadHeader)
        );
        assert_eq!(
            HttpTransport::new(cfg(vec![("Bad Name", "v")])).err(),
            Some(HttpError::BadHeader)
        );
        let c = cfg(vec![("Authorization", "Bearer s3cr3t-token")]);
        assert!(!format!("{c:?}").contains("s3cr3t"));
        let t = HttpTransport::new(c).unwrap();
        assert!(!format!("{t:?}").contains("s3cr3t"));
        let t = HttpTransport::new(cfg(vec![("Accept", "text/html"), ("X-Key", "k")])).unwrap();
        assert_eq!(t.headers, vec![("X-Key".to_string(), "k".to_string())]);
        assert!(matches!(
            HttpTransport::new(HttpConfig {
                url: "http://user:pw@127.0.0.1/mcp".into(),
                ..cfg(vec![])
            }),
            Err(HttpError::Refused(UrlError::Userinfo))
        ));
    }

    #[test]
    fn messages_name_no_host() {
        for e in [
            HttpError::Network("connection refused".into()),
            HttpError::Status(401),
            HttpError::Status(500),
            HttpError::Redirect(302),
            HttpError::TooLarge,
            HttpError::EndpointRefused,
            HttpError::Refused(UrlError::Userinfo),
        ] {
            let s = e.to_string();
            assert!(!s.contains("127.0.0.1") && !s.contains('\n'), "{s}");
            assert!(s.starts_with("the ") || s.starts_with("cannot") || s.starts_with('a'));
        }
    }
}
