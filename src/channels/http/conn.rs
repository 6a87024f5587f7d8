//! One connection: requests read one after another (keep-alive, pipelined requests
//! included), each head and body within its deadline, each answer written within
//! `HTTP_SERVER_WRITE_TIMEOUT_SECS`; the connection ends when the client closes it or
//! asks to, after an error that leaves the stream unreadable, after
//! `HTTP_SERVER_MAX_REQUESTS_PER_CONN` requests, at a timeout, or at shutdown (between
//! requests). Also the 503 of a connection past the cap ([`refuse`]).
//!
//! # Bounds
//! The read buffer holds at most a head (`HTTP_SERVER_MAX_HEAD_BYTES`) plus one read;
//! a body at most `http.max_body_kib`, and all connections' bodies at most the server's
//! budget (`HTTP_BODIES_IN_RAM`); see `super` for the rest.
//!
//! # Threads
//! Executor thread: each connection is a task; sockets are non-blocking.

use super::Server;
use super::parse::{BodyKind, ChunkError, Chunked, HEAD_TOO_LARGE, Head, Method, parse_head};
use super::respond::Response;
use super::routes::{self, Outcome};
use crate::limits::{
    HTTP_SERVER_IDLE_SECS, HTTP_SERVER_LINGER_BYTES, HTTP_SERVER_LINGER_MS,
    HTTP_SERVER_MAX_HEAD_BYTES, HTTP_SERVER_MAX_REQUESTS_PER_CONN, HTTP_SERVER_REFUSE_LINGER_MS,
    HTTP_SERVER_WRITE_TIMEOUT_SECS,
};
use smol::Async;
use smol::io::{AsyncReadExt, AsyncWriteExt};
use std::net::{IpAddr, Shutdown, TcpStream};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Bytes asked of the socket per read.
const READ_BYTES: usize = 4096;

/// Serve a connection until it ends; `refused` (past `http.max_connections`): answer it
/// 503 and close it (after a short linger).
pub(super) async fn run(srv: Rc<Server>, stream: Async<TcpStream>, ip: IpAddr, refused: bool) {
    let _count = Counted(&srv, refused);
    let mut c = Conn::new(&srv, stream, ip);
    let last = if refused {
        let r = Response::error(503, "Too many connections are open: try again in a moment.")
            .with_header("Retry-After", "1");
        Some((r, HTTP_SERVER_REFUSE_LINGER_MS))
    } else {
        c.serve().await
    };
    // An answer before the request could be read: written, then a linger and close.
    if let Some((r, linger_ms)) = last
        && c.send(&r, false, false).await
    {
        c.linger(Duration::from_millis(linger_ms)).await;
    }
}

/// Counts the connection while it lives (among those refused when `.1`).
struct Counted<'a>(&'a Server, bool);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        let count = if self.1 {
            &self.0.refusing
        } else {
            &self.0.conns
        };
        let n = count.get().saturating_sub(1);
        count.set(n);
        if self.0.conns.get() + self.0.refusing.get() == 0 {
            // The connections' cancelled timers must not wake the idle gateway later.
            crate::runtime::forget_dropped_timers();
        }
    }
}

/// How a read ended.
enum Read {
    Data(usize),
    /// The client closed its side, or the socket failed.
    Closed,
    Timeout,
    /// The shutdown began while nothing of a request had come.
    Stopped,
}

/// A request body held in RAM, counted in the server's body budget while it lives.
pub(super) struct Body<'a> {
    pub data: Vec<u8>,
    srv: &'a Server,
    counted: usize,
}

impl Body<'_> {
    /// Count what `data` holds now; `false` when that passes the server's budget.
    fn count(&mut self) -> bool {
        let more = self.data.len().saturating_sub(self.counted);
        let held = self.srv.body_bytes.get();
        if held + more > self.srv.body_budget() {
            return false;
        }
        self.srv.body_bytes.set(held + more);
        self.counted += more;
        true
    }
}

impl Drop for Body<'_> {
    fn drop(&mut self) {
        let held = self.srv.body_bytes.get();
        self.srv.body_bytes.set(held.saturating_sub(self.counted));
    }
}

/// One connection's state.
pub(super) struct Conn<'a> {
    pub srv: &'a Server,
    pub(super) stream: Async<TcpStream>,
    pub ip: IpAddr,
    /// Bytes read and not yet used (a head being read, the start of a body, a pipelined
    /// request, a WebSocket's frames).
    pub(super) buf: Vec<u8>,
    /// When the connection was accepted (the first head's deadline counts from it).
    accepted: Instant,
}

impl<'a> Conn<'a> {
    fn new(srv: &'a Server, stream: Async<TcpStream>, ip: IpAddr) -> Conn<'a> {
        Conn {
            srv,
            stream,
            ip,
            buf: Vec::new(),
            accepted: Instant::now(),
        }
    }

    /// Serve requests until the connection ends; the last answer, when a head is refused.
    async fn serve(&mut self) -> Option<(Response, u64)> {
        for n in 1..=HTTP_SERVER_MAX_REQUESTS_PER_CONN {
            let head = match self.read_head(n == 1).await {
                Ok(h) => h,
                Err(None) => return None,
                Err(Some(r)) => return Some((r, HTTP_SERVER_LINGER_MS)),
            };
            if !self
                .request(head, n == HTTP_SERVER_MAX_REQUESTS_PER_CONN)
                .await
            {
                return None;
            }
        }
        None
    }

    /// Read the next request's head. `Err(None)`: the connection ends quietly (closed,
    /// idle too long, shutdown); `Err(Some(answer))`: refused, answer and close.
    async fn read_head(&mut self, first: bool) -> Result<Head, Option<Response>> {
        let header = Duration::from_secs(self.srv.deps.cfg.header_timeout_secs);
        let mut started = first || !self.buf.is_empty();
        let mut deadline = if first {
            self.accepted + header
        } else if started {
            Instant::now() + header
        } else {
            Instant::now() + Duration::from_secs(HTTP_SERVER_IDLE_SECS)
        };
        loop {
            if !self.buf.is_empty() {
                match parse_head(&self.buf) {
                    Ok(Some((head, len))) => {
                        self.buf.drain(..len);
                        return Ok(head);
                    }
                    Ok(None) if self.buf.len() >= HTTP_SERVER_MAX_HEAD_BYTES => {
                        return Err(Some(Response::error(
                            HEAD_TOO_LARGE.status,
                            HEAD_TOO_LARGE.message,
                        )));
                    }
                    Ok(None) => {}
                    Err(e) => return Err(Some(Response::error(e.status, e.message))),
                }
            }
            let room = HTTP_SERVER_MAX_HEAD_BYTES - self.buf.len();
            let idle = self.buf.is_empty();
            match self.read_more(room, deadline, idle).await {
                Read::Data(_) => {
                    if !started {
                        started = true;
                        deadline = Instant::now() + header;
                    }
                }
                Read::Closed | Read::Stopped => return Err(None),
                Read::Timeout if idle => return Err(None),
                Read::Timeout => {
                    return Err(Some(Response::error(
                        408,
                        "The request's head took too long to arrive.",
                    )));
                }
            }
        }
    }

    /// Read at most `room` (and `READ_BYTES`) more bytes into the buffer before
    /// `deadline`; `stoppable`: the shutdown ends the wait too.
    async fn read_more(&mut self, room: usize, deadline: Instant, stoppable: bool) -> Read {
        let old = self.buf.len();
        self.buf.resize(old + room.clamp(1, READ_BYTES), 0);
        let Conn {
            stream, buf, srv, ..
        } = self;
        let read = async {
            match (&*stream).read(&mut buf[old..]).await {
                Ok(0) | Err(_) => Read::Closed,
                Ok(n) => Read::Data(n),
            }
        };
        let timeout = async {
            smol::Timer::at(deadline).await;
            Read::Timeout
        };
        let stopped = async {
            if stoppable {
                let _ = srv.stopping.recv().await;
                Read::Stopped
            } else {
                std::future::pending().await
            }
        };
        let r = smol::future::or(read, smol::future::or(timeout, stopped)).await;
        let n = if let Read::Data(n) = r { n } else { 0 };
        self.buf.truncate(old + n);
        r
    }

    /// Serve one request whose head was read; `true` to read the next one.
    async fn request(&mut self, head: Head, last: bool) -> bool {
        let has_body = head.body != BodyKind::None;
        // (the outcome, whether a body is left unread)
        let (outcome, unread) = match self.checked(&head) {
            Err(r) => (Outcome::Answer(r), has_body),
            Ok(route) => {
                let body = if route.takes_body() {
                    self.read_body(&head).await.map(Some)
                } else {
                    Ok(None)
                };
                match body {
                    Err(r) => (Outcome::Answer(r), true),
                    Ok(body) => {
                        let unread = has_body && body.is_none();
                        let keep = head.keep_alive && !last && !unread;
                        (routes::handle(self, &head, route, body, keep).await, unread)
                    }
                }
            }
        };
        match outcome {
            Outcome::Answer(r) => {
                if r.status >= 400 {
                    log::debug!("http: {} to {}: {}", r.status, self.ip, r.body);
                }
                self.answer(&head, r, unread, last).await
            }
            // An HTTP/1.0 stream is not chunked: its end is the connection's close.
            Outcome::Streamed(ok) => {
                ok && head.keep_alive && !head.http10 && !last && !self.srv.stopping()
            }
        }
    }

    /// The request's route, once its address is within the rate limit and it may have
    /// the route; else the refusal.
    fn checked(&self, head: &Head) -> Result<routes::Route, Response> {
        let srv = self.srv;
        if let Err(secs) = srv.limiter.borrow_mut().check(self.ip, srv.now_ms()) {
            return Err(Response::error(
                429,
                &format!(
                    "Too many requests from this address (http.rate_per_minute is {}): try again in {secs} s.",
                    srv.deps.cfg.rate_per_minute
                ),
            )
            .with_header("Retry-After", &secs.to_string()));
        }
        let route = routes::route(head);
        routes::authorize(srv, head, route)?;
        Ok(route)
    }

    /// Write `r`; `true` when the connection goes on. `unread`: the request's body (or
    /// part of it) was not read: the connection closes after a linger.
    async fn answer(&mut self, head: &Head, r: Response, unread: bool, last: bool) -> bool {
        let keep = head.keep_alive && !r.close && !unread && !last && !self.srv.stopping();
        let sent = self.send(&r, keep, head.method == Method::Head).await;
        if !keep {
            if unread && sent {
                self.linger(Duration::from_millis(HTTP_SERVER_LINGER_MS))
                    .await;
            } else {
                let _ = self.stream.get_ref().shutdown(Shutdown::Write);
            }
        }
        sent && keep
    }

    /// Write an answer whole (its head only for a HEAD request).
    pub async fn send(&mut self, r: &Response, keep: bool, head_only: bool) -> bool {
        let mut out = r.head(keep).into_bytes();
        if !head_only {
            out.extend_from_slice(r.body.as_bytes());
        }
        self.write_all(&out).await
    }

    /// Write `bytes` within `HTTP_SERVER_WRITE_TIMEOUT_SECS`; `false` when the client is
    /// gone or does not read.
    pub async fn write_all(&mut self, bytes: &[u8]) -> bool {
        let stream = &self.stream;
        let write = async { (&*stream).write_all(bytes).await.is_ok() };
        let timeout = async {
            smol::Timer::after(Duration::from_secs(HTTP_SERVER_WRITE_TIMEOUT_SECS)).await;
            false
        };
        smol::future::or(write, timeout).await
    }

    /// Close after an answer given early: stop writing, then read and drop what the client
    /// still sends (at most `HTTP_SERVER_LINGER_BYTES`, for at most `time`), so it reads
    /// the answer rather than a reset.
    pub(super) async fn linger(&mut self, time: Duration) {
        let _ = self.stream.get_ref().shutdown(Shutdown::Write);
        let until = Instant::now() + time;
        let mut dropped = 0;
        while dropped < HTTP_SERVER_LINGER_BYTES {
            self.buf.clear();
            match self.read_more(READ_BYTES, until, false).await {
                Read::Data(n) => dropped += n,
                _ => break,
            }
        }
        self.buf = Vec::new();
    }

    /// Read the request's body (framed as `head` says), within `http.body_timeout_secs`,
    /// `http.max_body_kib` and the server's budget; an `Err` is the answer (the
    /// connection then closes).
    async fn read_body(&mut self, head: &Head) -> Result<Body<'a>, Response> {
        let srv = self.srv;
        let max = srv.max_body();
        let too_large = || {
            Response::error(
                413,
                &format!(
                    "The body is larger than http.max_body_kib ({} KiB).",
                    srv.deps.cfg.max_body_kib
                ),
            )
        };
        let busy = || {
            Response::error(
                503,
                "Too many request bodies are being read: try again in a moment.",
            )
            .with_header("Retry-After", "1")
        };
        let length = match head.body {
            BodyKind::Length(n) if n > max as u64 => return Err(too_large()),
            BodyKind::Length(n) => Some(n as usize),
            _ => None,
        };
        let mut body = Body {
            data: Vec::with_capacity(length.unwrap_or(0).min(READ_BYTES * 4)),
            srv,
            counted: 0,
        };
        if head.expect_continue
            && self.buf.is_empty()
            && !self.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await
        {
            return Err(Response::error(400, "The connection failed."));
        }
        let deadline = Instant::now() + Duration::from_secs(srv.deps.cfg.body_timeout_secs);
        let mut chunked = Chunked::default();
        loop {
            // What the buffer holds first, then reads.
            match length {
                Some(n) => {
                    let take = (n - body.data.len()).min(self.buf.len());
                    body.data.extend(self.buf.drain(..take));
                    if !body.count() {
                        return Err(busy());
                    }
                    if body.data.len() == n {
                        return Ok(body);
                    }
                }
                None => {
                    let used = chunked.feed(&self.buf, &mut body.data, max).map_err(|e| match e {
                        ChunkError::TooLarge => too_large(),
                        ChunkError::Framing => Response::error(
                            400,
                            "The chunked body's framing is broken (a chunk differs from its size, or a size line is malformed).",
                        ),
                    })?;
                    self.buf.drain(..used);
                    if !body.count() {
                        return Err(busy());
                    }
                    if chunked.done() {
                        return Ok(body);
                    }
                }
            }
            match self.read_more(READ_BYTES, deadline, false).await {
                Read::Data(_) => {}
                Read::Timeout => {
                    return Err(Response::error(
                        408,
                        "The request's body took too long to arrive.",
                    ));
                }
                Read::Closed | Read::Stopped => {
                    return Err(Response::error(
                        400,
                        "The body ended before its Content-Length or last chunk.",
                    ));
                }
            }
        }
    }
}
