//! The gateway's HTTP server (`http.enabled`): `GET /health` for monitors, and an
//! OpenAI-compatible API (`POST /v1/chat/completions`, streamed or not, `GET /v1/models`)
//! whose conversations are the board's sessions, answered by the agent with its tools,
//! and the same chat over a WebSocket (`GET /ws`, `ws`); `GET /metrics` is routed, its
//! body handed in by the gateway ([`Deps::metrics`]); `GET /` is a status page for a
//! browser, opened by a login with the token (`page`, `login`).
//!
//! HTTP/1.1 on the executor, no framework: `parse` reads a head (with `httparse`) and the
//! body's framing, `conn` runs a connection (keep-alive, timeouts, bodies, answers),
//! `routes` decides what a request gets, `auth` the token, `limit` the rate per address,
//! `turns` the order of the API's turns, `running` the turn a completion or `/ws` drives,
//! `ws` the WebSocket chat, `openai` the JSON shapes,
//! `health` the health report, `respond` answers and errors, `webhook` Telegram's
//! `POST /webhook/telegram` (its secret header instead of the token; the update goes to
//! the bot's inbox).
//!
//! A request goes: head read (within `http.header_timeout_secs`; a kept-alive connection
//! waits `HTTP_SERVER_IDLE_SECS` for it) → rate limit of its address (429 before any
//! other work) → route → token (every route but `/health`, and `/metrics` with
//! `http.metrics_public`) → body (within `http.body_timeout_secs`, `100 Continue` when
//! asked) → handler → answer. An answer given before the request was read whole closes
//! the connection after reading and dropping what still arrives for a moment
//! (`HTTP_SERVER_LINGER_MS`), so the client reads the answer rather than a reset.
//!
//! Shutdown (SIGINT/SIGTERM, [`Server::serve`]'s `stopping` closed): the listener is
//! closed at once, idle connections close, turns running get [`Deps::grace`] to finish
//! (then a whole answer is 503 and a stream ends with an error event and `[DONE]`), and
//! `serve` returns once every connection ended or [`Deps::drain`] passed.
//!
//! # Bounds
//! Connections: `http.max_connections` (past it: 503 and closed, at most
//! `HTTP_SERVER_MAX_REFUSING` at a time, the rest closed unanswered); per connection a
//! head of at most `HTTP_SERVER_MAX_HEAD_BYTES` and `HTTP_SERVER_MAX_REQUESTS_PER_CONN`
//! requests; a body of at most `http.max_body_kib`, and all bodies being read at most
//! `HTTP_BODIES_IN_RAM` times that (past it: 503); JSON values `HTTP_MAX_JSON_VALUES`;
//! the rate table `HTTP_RATE_TABLE_ENTRIES`; the status page's logins `HTTP_PAGE_LOGINS`; turns `HTTP_MAX_RUNNING_TURNS` running and
//! `HTTP_MAX_WAITING_TURNS` waiting (`turns`); every read and write has a deadline.
//!
//! # Threads
//! Executor thread only: the listener and connections are `smol::Async` sockets
//! (non-blocking), turns run as on every channel (model calls on the workers).

pub mod auth;
mod complete;
mod conn;
pub mod health;
pub mod limit;
mod login;
pub mod openai;
pub mod page;
pub mod parse;
pub mod respond;
mod routes;
mod running;
pub mod turns;
mod webhook;
pub mod ws;

use crate::agent::Agent;
use crate::config::HttpConfig;
use crate::limits::{HTTP_BODIES_IN_RAM, HTTP_SERVER_ACCEPT_PAUSE_MS, HTTP_SERVER_MAX_REFUSING};
use crate::store::Db;
use health::Beat;
use limit::RateLimiter;
use smol::Async;
use std::cell::{Cell, RefCell};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use turns::Gate;

/// What the server is given by the gateway.
pub struct Deps {
    pub agent: Rc<Agent>,
    pub db: Rc<Db>,
    pub cfg: HttpConfig,
    /// The home (free disk for `/health`).
    pub home: PathBuf,
    /// The API's token; `None`: not set (every route but `/health` answers 503).
    pub token: Option<String>,
    /// Telegram's poll beat and the age past which `/health` calls it stale; `None`
    /// while Telegram is off.
    pub telegram: Option<(Arc<Beat>, Duration)>,
    /// The body of `/metrics` (Prometheus text), given the API's turns running and
    /// waiting now (the gateway adds what it knows: `app::gateway`); `None`: the route
    /// answers 404.
    pub metrics: Option<Box<dyn Fn(usize, usize) -> String>>,
    /// What the status page (`GET /`) says about the configuration in use, read at
    /// each request.
    pub board: Box<dyn Fn() -> page::Board>,
    /// Telegram's webhook (`telegram.mode: "webhook"`); `None`: `POST /webhook/telegram`
    /// is not served (404 like any unknown path).
    pub webhook: Option<Webhook>,
    /// How long turns running at shutdown may still take.
    pub grace: Duration,
    /// How long [`Server::serve`] waits for its connections after the signal.
    pub drain: Duration,
}

/// What `POST /webhook/telegram` needs: the secret Telegram sends back, and the bot's
/// queue of posted updates (bounded: `INBOUND_QUEUE_LEN`).
pub struct Webhook {
    pub secret: String,
    pub updates: async_channel::Sender<crate::channels::telegram::api::Posted>,
}

/// The server's state, shared by its connections.
pub struct Server {
    deps: Deps,
    gate: Gate,
    limiter: RefCell<RateLimiter>,
    /// The status page's logins.
    logins: RefCell<login::Logins>,
    /// Connections being served.
    conns: Cell<usize>,
    /// Connections past the cap being answered 503.
    refusing: Cell<usize>,
    /// Bytes of request bodies held now.
    body_bytes: Cell<usize>,
    /// Closed at shutdown.
    stopping: async_channel::Receiver<()>,
    started: Instant,
    /// Completions answered so far (their ids).
    completions: Cell<u64>,
}

/// Bind `addr` (before the executor runs: a refusal is a start-up error).
pub fn bind(addr: SocketAddr) -> std::io::Result<Async<TcpListener>> {
    Async::<TcpListener>::bind(addr)
}

impl Server {
    /// A server over `deps` that stops when `stopping` closes.
    pub fn new(deps: Deps, stopping: async_channel::Receiver<()>) -> Rc<Server> {
        Rc::new(Server {
            limiter: RefCell::new(RateLimiter::new(deps.cfg.rate_per_minute)),
            deps,
            logins: RefCell::default(),
            gate: Gate::default(),
            conns: Cell::new(0),
            refusing: Cell::new(0),
            body_bytes: Cell::new(0),
            stopping,
            started: Instant::now(),
            completions: Cell::new(0),
        })
    }

    /// Turns of the API running now (the gateway's status record counts them live).
    pub fn running_turns(&self) -> usize {
        self.gate.running()
    }

    /// Accept connections on `listener` until `stopping` closes, then wait for those
    /// open (at most `Deps::drain`). Connections run as tasks on `ex`.
    pub async fn serve(
        self: &Rc<Self>,
        ex: &smol::LocalExecutor<'static>,
        listener: Async<TcpListener>,
    ) {
        let mut failing = false;
        loop {
            let next = smol::future::or(async { Some(listener.accept().await) }, async {
                let _ = self.stopping.recv().await;
                None
            })
            .await;
            match next {
                None => break,
                Some(Ok((stream, peer))) => {
                    failing = false;
                    self.admit(ex, stream, peer.ip().to_canonical());
                }
                Some(Err(e)) => {
                    if !failing {
                        log::warn!("http: cannot accept a connection ({e}); trying again");
                        failing = true;
                    }
                    smol::Timer::after(Duration::from_millis(HTTP_SERVER_ACCEPT_PAUSE_MS)).await;
                }
            }
        }
        drop(listener);
        let until = Instant::now() + self.deps.drain;
        while self.conns.get() + self.refusing.get() > 0 && Instant::now() < until {
            smol::Timer::after(Duration::from_millis(20)).await;
        }
    }

    /// Serve a new connection, or answer it 503 past the cap.
    fn admit(
        self: &Rc<Self>,
        ex: &smol::LocalExecutor<'static>,
        stream: Async<TcpStream>,
        ip: IpAddr,
    ) {
        let _ = stream.get_ref().set_nodelay(true);
        if self.conns.get() >= self.deps.cfg.max_connections as usize {
            if self.refusing.get() >= HTTP_SERVER_MAX_REFUSING {
                log::debug!("http: closed a connection from {ip} unanswered (too many at once)");
                return;
            }
            log::debug!("http: refused a connection from {ip}: http.max_connections reached");
            self.refusing.set(self.refusing.get() + 1);
            ex.spawn(conn::run(self.clone(), stream, ip, true)).detach();
            return;
        }
        self.conns.set(self.conns.get() + 1);
        ex.spawn(conn::run(self.clone(), stream, ip, false))
            .detach();
    }

    /// Milliseconds since the server started (the rate limiter's clock).
    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn stopping(&self) -> bool {
        self.stopping.is_closed()
    }

    /// Completes `Deps::grace` after the shutdown began.
    async fn cut_off(&self) {
        let _ = self.stopping.recv().await;
        smol::Timer::after(self.deps.grace).await;
    }

    /// The most body bytes held at once.
    fn body_budget(&self) -> usize {
        self.max_body() * HTTP_BODIES_IN_RAM
    }

    fn max_body(&self) -> usize {
        self.deps.cfg.max_body_kib as usize * 1024
    }

    /// A new completion id.
    fn completion_id(&self) -> String {
        let n = self.completions.get() + 1;
        self.completions.set(n);
        format!(
            "chatcmpl-yc{:x}{n:06x}",
            self.started.elapsed().as_micros() as u32
        )
    }
}
