//! One MCP session with one running server, over either transport: `initialize` and
//! version negotiation, `notifications/initialized`, `tools/list` (following
//! `nextCursor`), `tools/call` with a deadline (cancelled on timeout), and what the server
//! sends by itself (`ping` answered, other requests refused, `tools/list_changed` handed to
//! the manager, progress and log notifications logged at debug level and dropped).
//!
//! Requests are multiplexed by id: each waits on its own slot in `pending` (a `Waiter`),
//! filled by whoever reads the server's answer: the stdio reader task (`mod.rs`), or the
//! HTTP request itself (the answers come back with the `POST`). A message that breaks the
//! protocol ([`Fault`]) kills the session; the manager restarts the server.
//!
//! HTTP: [`HttpTransport`] blocks, so each exchange runs on a worker, the transport behind
//! an `Arc<Mutex>` (requests to one HTTP server are therefore serialized). A session the
//! server expired (`HttpError::SessionExpired`) is initialized again once and the request
//! retried. A legacy server's messages that arrived between requests (`take_pending`) are
//! read before each request.
//!
//! # Bounds
//! - Requests in flight: as many as callers (each bounded by its timeout); replies to the
//!   server's requests: one at a time, each within the server's timeout.
//! - Notifications and the server's requests together: `MCP_MAX_NOTIFICATIONS_PER_SEC`
//!   (more: `Fault::Flood`); logged ones
//!   cut to `MAX_LOGGED_NOTE_BYTES`.
//! - Ids of cancelled requests remembered: `MCP_CANCELLED_IDS`.
//! - Tool lists: `MCP_MAX_TOOL_PAGES` pages, `MCP_MAX_TOOLS` tools, each description
//!   `MCP_MAX_DESCRIPTION_BYTES`, each schema `MCP_MAX_SCHEMA_BYTES`.
//!
//! # Threads
//! Executor thread; HTTP exchanges on worker threads (`runtime::Workers`).

use super::http::{HttpError, HttpTransport};
use super::rpc::{self, Fault, Incoming, RpcError};
use super::{MCP_MAX_TOOLS, McpError, ToolInfo};
use crate::json;
use crate::limits::{
    MCP_CANCELLED_IDS, MCP_MAX_DESCRIPTION_BYTES, MCP_MAX_NOTIFICATIONS_PER_SEC,
    MCP_MAX_SCHEMA_BYTES, MCP_MAX_TOOL_PAGES,
};
use crate::runtime::Workers;
use miniserde::json::Value;
use smol::Async;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::process::ChildStdin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The protocol version we ask for.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// The versions we accept in the server's answer.
pub const SUPPORTED_VERSIONS: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];
/// Longest notification text logged at debug level.
pub const MAX_LOGGED_NOTE_BYTES: usize = 200;

/// What a session tells the manager.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `notifications/tools/list_changed`.
    ListChanged,
}

/// What a session asks of its HTTP transport, on a worker (one kind of job, so one
/// worker hand-off in the binary rather than one per closure).
enum HttpJob {
    /// The messages that were pending (legacy), then `line` sent (`id`: the request's, as
    /// JSON text, when it expects a response).
    Send {
        line: String,
        id: Option<String>,
        deadline: Instant,
    },
    /// The protocol version `initialize` negotiated.
    Version(String),
    /// Drop the session before initializing again (a legacy stream's thread is joined).
    Forget,
    /// End the session; later jobs find no transport.
    Close,
}

/// What a job gives back: the pending messages and the sent message's answer (`Send`).
type JobResult = (
    Result<Vec<String>, HttpError>,
    Result<Vec<String>, HttpError>,
);

/// Run `job` on the transport (the worker's side).
fn run_job(transport: &Mutex<Option<HttpTransport>>, job: HttpJob) -> JobResult {
    let none = || (Ok(Vec::new()), Ok(Vec::new()));
    if let HttpJob::Close = job {
        // Taken out first: the `DELETE` runs without the lock held.
        let taken = lock(transport).take();
        if let Some(mut t) = taken {
            t.close();
        }
        return none();
    }
    let mut g = lock(transport);
    let Some(t) = g.as_mut() else {
        return (Ok(Vec::new()), Err(HttpError::Closed));
    };
    match job {
        HttpJob::Send { line, id, deadline } => {
            let pending = t.take_pending();
            (pending, t.send(&line, id.as_deref(), deadline))
        }
        HttpJob::Version(v) => {
            t.set_protocol_version(&v);
            none()
        }
        HttpJob::Forget => {
            t.forget_session();
            none()
        }
        HttpJob::Close => none(),
    }
}

/// Why an HTTP exchange did not complete.
enum Exchange {
    /// The server ended the session (initialize again and retry once).
    Expired,
    Failed(McpError),
}

impl From<RpcError> for McpError {
    fn from(e: RpcError) -> McpError {
        McpError::Rpc {
            code: e.code,
            message: e.message,
        }
    }
}

/// A request waiting for its answer: whoever reads the answer puts it in `slot` and drops
/// the waiter, and dropping `wake` wakes the request (dropped with the slot empty: the
/// session ended). A channel of `()` (already in the binary) rather than one of answers.
struct Waiter {
    id: u64,
    slot: Rc<RefCell<Option<Result<Value, RpcError>>>>,
    /// Never sent on: dropped to wake the request.
    _wake: async_channel::Sender<()>,
}

/// How the session reaches its server.
pub enum Link {
    /// The child's stdin (the reader task owns stdout); `None` once closed.
    Stdio(smol::lock::Mutex<Option<Async<ChildStdin>>>),
    Http {
        transport: Arc<Mutex<Option<HttpTransport>>>,
        workers: Workers,
    },
}

/// One session.
pub struct Session {
    pub name: String,
    link: Link,
    timeout: Duration,
    /// The requests waiting for their answers (a list: as many as callers wait at once,
    /// a few).
    pending: RefCell<Vec<Waiter>>,
    next_id: Cell<u64>,
    cancelled: RefCell<VecDeque<u64>>,
    /// Why the session is over, once it is.
    dead: RefCell<Option<String>>,
    /// Notifications in the current one-second window: (window start, count).
    notes: Cell<(Instant, u32)>,
    on_event: Box<dyn Fn(Event)>,
    /// The version the server agreed to.
    pub protocol: RefCell<String>,
}

/// Lock a mutex, taking it even when a thread panicked holding it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Session {
    pub fn new(name: &str, link: Link, timeout: Duration, on_event: Box<dyn Fn(Event)>) -> Self {
        Session {
            name: name.to_string(),
            link,
            timeout,
            pending: RefCell::new(Vec::new()),
            next_id: Cell::new(1),
            cancelled: RefCell::new(VecDeque::new()),
            dead: RefCell::new(None),
            notes: Cell::new((Instant::now(), 0)),
            on_event,
            protocol: RefCell::new(String::new()),
        }
    }

    pub fn is_http(&self) -> bool {
        matches!(self.link, Link::Http { .. })
    }

    /// Why the session ended, if it did.
    pub fn dead(&self) -> Option<String> {
        self.dead.borrow().clone()
    }

    /// End the session for `why`: every waiting request fails with it. The first reason
    /// is kept.
    pub fn kill(&self, why: &str) {
        if self.dead.borrow().is_none() {
            *self.dead.borrow_mut() = Some(why.to_string());
        }
        // Dropping the waiters wakes every request, its slot empty.
        self.pending.borrow_mut().clear();
    }

    /// Request `id`'s waiter, no longer waiting.
    fn unwait(&self, id: u64) -> Option<Waiter> {
        let mut p = self.pending.borrow_mut();
        let i = p.iter().position(|w| w.id == id)?;
        Some(p.swap_remove(i))
    }

    /// Requests waiting for an answer.
    pub fn in_flight(&self) -> usize {
        self.pending.borrow().len()
    }

    /// Close the stdio child's stdin (a well-behaved server exits on it).
    pub async fn close_stdin(&self) {
        if let Link::Stdio(stdin) = &self.link {
            stdin.lock().await.take();
        }
    }

    /// End an HTTP session (`DELETE`; a legacy stream's thread stopped), on a worker.
    pub async fn close_http(&self) {
        self.http_job(HttpJob::Close).await;
    }

    /// Run `job` on the HTTP transport on a worker (it may block: a legacy stream's
    /// thread is joined by `Forget` and `Close`); `None` for a stdio session or when the
    /// workers are gone.
    async fn http_job(&self, job: HttpJob) -> Option<JobResult> {
        let Link::Http { transport, workers } = &self.link else {
            return None;
        };
        let t = transport.clone();
        workers.run(move || run_job(&t, job)).await.ok()
    }

    fn dead_error(&self) -> McpError {
        McpError::Protocol(
            self.dead()
                .unwrap_or_else(|| "the server went away mid-request".into()),
        )
    }

    /// One message (or batch) from the server: answers delivered to their waiters, the
    /// server's requests answered (the replies returned, for the caller to send),
    /// notifications handled.
    pub fn on_message(&self, text: &str) -> Result<Vec<String>, Fault> {
        let mut replies = Vec::new();
        for m in rpc::parse(text)? {
            match m {
                Incoming::Response { id, result } => {
                    let waiter = self.unwait(id);
                    match waiter {
                        Some(w) => {
                            // Dropping the waiter wakes the request.
                            *w.slot.borrow_mut() = Some(result);
                        }
                        None if self.cancelled.borrow().contains(&id) => {
                            log::debug!(
                                "mcp {}: a late answer to cancelled request {id}",
                                self.name
                            );
                        }
                        None => return Err(Fault::UnknownId),
                    }
                }
                Incoming::Request { id, method } => {
                    // The server's requests count toward the same rate bound.
                    self.count_note()?;
                    if method == "ping" {
                        replies.push(rpc::response(
                            &id,
                            &json::object::<[(&str, Value); 0], _>([]),
                        ));
                    } else {
                        log::debug!("mcp {}: refused the server's request {method}", self.name);
                        replies.push(rpc::error_response(
                            &id,
                            rpc::METHOD_NOT_FOUND,
                            "Method not found",
                        ));
                    }
                }
                Incoming::Notification { method, params } => {
                    self.count_note()?;
                    match method.as_str() {
                        "notifications/tools/list_changed" => (self.on_event)(Event::ListChanged),
                        _ => {
                            if log::log_enabled!(log::Level::Debug) {
                                let p = params.as_ref().map(json::to_string).unwrap_or_default();
                                log::debug!(
                                    "mcp {}: {method} {}",
                                    self.name,
                                    crate::text::cap_text(&p, MAX_LOGGED_NOTE_BYTES)
                                );
                            }
                        }
                    }
                }
            }
        }
        Ok(replies)
    }

    fn count_note(&self) -> Result<(), Fault> {
        let (start, n) = self.notes.get();
        let now = Instant::now();
        let (start, n) = if now.duration_since(start) >= Duration::from_secs(1) {
            (now, 1)
        } else {
            (start, n + 1)
        };
        self.notes.set((start, n));
        if n > MCP_MAX_NOTIFICATIONS_PER_SEC {
            return Err(Fault::Flood);
        }
        Ok(())
    }

    /// Write one message to a stdio server (bounded by `timeout`).
    pub async fn write_stdio(&self, line: &str, timeout: Duration) -> Result<(), McpError> {
        let Link::Stdio(stdin) = &self.link else {
            return Ok(());
        };
        let write = async {
            let mut g = stdin.lock().await;
            match g.as_mut() {
                Some(s) => super::stdio::write_line(s, line)
                    .await
                    .map_err(|_| self.dead_error()),
                None => Err(self.dead_error()),
            }
        };
        match with_timeout(timeout, write).await {
            Some(r) => r,
            None => Err(McpError::Protocol("it does not read its input".into())),
        }
    }

    /// Send a notification (or a reply) and the messages that come back over HTTP.
    async fn send_only(&self, line: String) -> Result<(), McpError> {
        match &self.link {
            Link::Stdio(_) => self.write_stdio(&line, self.timeout).await,
            Link::Http { .. } => match self.http_exchange(line, None, self.timeout).await {
                Ok(()) => Ok(()),
                Err(Exchange::Failed(e)) => Err(e),
                Err(Exchange::Expired) => Err(McpError::Protocol(
                    "it ended the session while being notified".into(),
                )),
            },
        }
    }

    /// One HTTP exchange on a worker: messages that were pending (legacy), then `line`;
    /// every message that came back handled. A fault kills the session.
    async fn http_exchange(
        &self,
        line: String,
        request_id: Option<u64>,
        timeout: Duration,
    ) -> Result<(), Exchange> {
        if !self.is_http() {
            return Ok(());
        }
        let job = HttpJob::Send {
            line,
            id: request_id.map(|i| i.to_string()),
            deadline: Instant::now() + timeout,
        };
        let (pending, sent) = self.http_job(job).await.ok_or_else(|| {
            Exchange::Failed(McpError::Transport("yoctoclaw is shutting down".into()))
        })?;
        let mut messages = pending.unwrap_or_default();
        let sent = sent.map_err(|e| match e {
            HttpError::Timeout => Exchange::Failed(McpError::Timeout(timeout.as_secs())),
            HttpError::SessionExpired => Exchange::Expired,
            e => Exchange::Failed(McpError::Transport(e.to_string())),
        });
        if let Ok(m) = &sent {
            messages.extend(m.iter().cloned());
        }
        for m in messages {
            match self.on_message(&m) {
                Ok(replies) => {
                    for r in replies {
                        Box::pin(self.send_only(r))
                            .await
                            .map_err(Exchange::Failed)?;
                    }
                }
                Err(f) => {
                    let why = f.to_string();
                    self.kill(&why);
                    return Err(Exchange::Failed(McpError::Protocol(why)));
                }
            }
        }
        sent.map(|_| ())
    }

    /// A request; its `result`, or why not. On timeout the request is cancelled.
    pub async fn request(
        &self,
        method: &str,
        params: Option<&Value>,
        timeout: Duration,
    ) -> Result<Value, McpError> {
        if self.dead.borrow().is_some() {
            return Err(self.dead_error());
        }
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let (wake, woken) = async_channel::bounded::<()>(1);
        let slot = Rc::new(RefCell::new(None));
        self.pending.borrow_mut().push(Waiter {
            id,
            slot: slot.clone(),
            _wake: wake,
        });
        let line = rpc::request(id, method, params);
        let exchange = async {
            match &self.link {
                Link::Stdio(_) => {
                    self.write_stdio(&line, timeout).await?;
                    // Ends when the waiter is dropped (answered, or the session ended).
                    let _ = woken.recv().await;
                    match slot.take() {
                        Some(r) => r.map_err(McpError::from),
                        None => Err(self.dead_error()),
                    }
                }
                Link::Http { .. } => {
                    let mut sent = self.http_exchange(line.clone(), Some(id), timeout).await;
                    if matches!(sent, Err(Exchange::Expired)) && method != "initialize" {
                        log::info!(
                            "mcp {}: the server ended the session; initializing again",
                            self.name
                        );
                        Box::pin(self.reinitialize_http()).await?;
                        sent = self.http_exchange(line.clone(), Some(id), timeout).await;
                    }
                    match sent {
                        Ok(()) => {}
                        Err(Exchange::Failed(e)) => return Err(e),
                        Err(Exchange::Expired) => {
                            return Err(McpError::Protocol("it ended the session again".into()));
                        }
                    }
                    match slot.take() {
                        Some(r) => r.map_err(McpError::from),
                        None if self.dead.borrow().is_some() => Err(self.dead_error()),
                        None => Err(McpError::Protocol(
                            "it answered the request with no response".into(),
                        )),
                    }
                }
            }
        };
        let out = match with_timeout(timeout, exchange).await {
            Some(r) => r,
            None => Err(McpError::Timeout(timeout.as_secs())),
        };
        self.unwait(id);
        if matches!(out, Err(McpError::Timeout(_))) && self.dead.borrow().is_none() {
            self.cancel(id, method).await;
        }
        out
    }

    /// `notifications/cancelled` for request `id` (never for `initialize`, as the
    /// specification says); its late answer will be dropped.
    async fn cancel(&self, id: u64, method: &str) {
        {
            let mut c = self.cancelled.borrow_mut();
            if c.len() >= MCP_CANCELLED_IDS {
                c.pop_front();
            }
            c.push_back(id);
        }
        if method == "initialize" {
            return;
        }
        let params = json::object([
            ("requestId", json::number(id)),
            ("reason", json::string("timed out")),
        ]);
        let note = rpc::notification("notifications/cancelled", Some(&params));
        if let Err(e) = self.send_only(note).await {
            log::debug!("mcp {}: the cancellation was not sent: {e}", self.name);
        }
    }

    /// `initialize` and `notifications/initialized`.
    pub async fn initialize(&self) -> Result<(), McpError> {
        let params = json::object([
            ("protocolVersion", json::string(PROTOCOL_VERSION)),
            ("capabilities", json::object::<[(&str, Value); 0], _>([])),
            (
                "clientInfo",
                json::object([
                    ("name", json::string("yoctoclaw")),
                    ("version", json::string(env!("CARGO_PKG_VERSION"))),
                ]),
            ),
        ]);
        let result = match self
            .request("initialize", Some(&params), self.timeout)
            .await
        {
            Ok(r) => r,
            Err(McpError::Timeout(s)) => {
                return Err(McpError::Start(format!(
                    "it did not answer initialize within {s} s"
                )));
            }
            Err(e) => return Err(e),
        };
        let version = json::str_at(&result, "protocolVersion").unwrap_or("");
        if !SUPPORTED_VERSIONS.contains(&version) {
            let shown: String = version
                .chars()
                .take(32)
                .filter(|c| c.is_ascii_graphic())
                .collect();
            let why = format!(
                "it speaks MCP protocol version {shown:?}, which yoctoclaw does not (it speaks {})",
                SUPPORTED_VERSIONS.join(", ")
            );
            self.kill(&why);
            return Err(McpError::Start(why));
        }
        *self.protocol.borrow_mut() = version.to_string();
        self.http_job(HttpJob::Version(version.to_string())).await;
        self.send_only(rpc::notification("notifications/initialized", None))
            .await
    }

    /// `tools/list`, every page (bounded).
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, McpError> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MCP_MAX_TOOL_PAGES {
            let params = cursor
                .as_ref()
                .map(|c| json::object([("cursor", json::string(c.clone()))]));
            let page = self
                .request("tools/list", params.as_ref(), self.timeout)
                .await?;
            for t in json::get(&page, "tools")
                .and_then(json::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(info) = tool_info(&self.name, t)
                    && out.len() < MCP_MAX_TOOLS
                {
                    out.push(info);
                }
            }
            cursor = json::str_at(&page, "nextCursor")
                .filter(|c| !c.is_empty())
                .map(str::to_string);
            if cursor.is_none() || out.len() >= MCP_MAX_TOOLS {
                return Ok(out);
            }
        }
        log::warn!(
            "mcp {}: more than {MCP_MAX_TOOL_PAGES} pages of tools; the rest left out",
            self.name
        );
        Ok(out)
    }

    /// `tools/call`.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<Value, McpError> {
        let params = json::object([("name", json::string(tool)), ("arguments", arguments)]);
        self.request("tools/call", Some(&params), timeout).await
    }

    /// Run one HTTP request again after the server expired the session: initialize anew.
    pub async fn reinitialize_http(&self) -> Result<(), McpError> {
        self.http_job(HttpJob::Forget).await;
        self.initialize().await
    }
}

/// A tool declaration as [`ToolInfo`]; `None` when it has no usable name.
fn tool_info(server: &str, t: &Value) -> Option<ToolInfo> {
    let name = json::str_at(t, "name")?;
    if name.is_empty() || name.len() > 128 {
        log::warn!("mcp {server}: a tool with an empty or over-long name left out");
        return None;
    }
    let mut description = json::str_at(t, "description").unwrap_or("").to_string();
    if description.len() > MCP_MAX_DESCRIPTION_BYTES {
        let mut end = MCP_MAX_DESCRIPTION_BYTES;
        while !description.is_char_boundary(end) {
            end -= 1;
        }
        description.truncate(end);
    }
    let schema = match json::get(t, "inputSchema") {
        Some(s @ Value::Object(_)) => json::to_string(s),
        _ => r#"{"type":"object"}"#.to_string(),
    };
    let input_schema = if schema.len() > MCP_MAX_SCHEMA_BYTES {
        log::warn!(
            "mcp {server}: the tool {name}'s input schema is over {} KiB; offered without it",
            MCP_MAX_SCHEMA_BYTES / 1024
        );
        r#"{"type":"object"}"#.to_string()
    } else {
        schema
    };
    Some(ToolInfo {
        name: name.to_string(),
        description,
        input_schema,
    })
}

/// `fut`'s output, or `None` when `d` passes first.
pub async fn with_timeout<T>(d: Duration, fut: impl std::future::Future<Output = T>) -> Option<T> {
    smol::future::or(async { Some(fut.await) }, async {
        smol::Timer::after(d).await;
        None
    })
    .await
}
