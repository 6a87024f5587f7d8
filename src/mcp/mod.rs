//! MCP client: tools from Model Context Protocol servers (stdio child processes and
//! Streamable HTTP), offered to the model beside the built-in ones.
//!
//! The manager ([`Mcp`]) keeps one state per configured server: started at boot or on
//! first use, its session (`session`: initialize, tool lists, calls) over stdio (`stdio`:
//! a child process whose pipes are on smol's reactor) or HTTP (`http`, on the workers),
//! JSON-RPC framing in `rpc`. A server that crashes, closes its output or breaks the
//! protocol is restarted with exponential backoff (`Timing::backoff_base`, doubling), at
//! most `Timing::max_restarts` times within `Timing::restart_window` or in a row without
//! a working session, then left `Failed` until yoctoclaw restarts; its tools are listed
//! again after each start. A server unused
//! for its `idle_stop_mins` is stopped (one timer per running server; none when nothing
//! runs); its last tool list is kept in SQLite (`state` rows `mcp.tools.NAME`), so
//! [`Mcp::tools`] answers for a stopped server and its first call starts it again.
//!
//! The manager's background work (reading stdio servers, answering their pings,
//! restarts, idle stops, re-listing on `list_changed`) runs on its own `LocalExecutor`,
//! driven by [`Mcp::run`] (the gateway spawns it) and by every call while it is awaited.
//!
//! # Bounds
//! At most `config::mcp::MCP_MAX_SERVERS` servers (config), `MCP_MAX_TOOLS` tools in all,
//! one JSON-RPC message at most `MCP_MAX_MESSAGE_BYTES` (the other bounds: `session`,
//! `stdio`, `rpc`). Per server: one session, one stdio reader, one stderr reader, one idle
//! timer, at most one pending restart and one re-list.
//!
//! # Threads
//! Executor thread: the manager, every session's protocol state and the stdio pipes
//! (non-blocking, on smol's reactor); HTTP exchanges run on the worker threads, and a
//! legacy HTTP+SSE server's stream on its own `yc-mcp-sse` thread (`http`).

pub mod content;
pub mod http;
pub mod names;
pub mod offer;
pub mod rpc;
pub mod session;
pub mod stdio;

use crate::config::Env;
use crate::config::mcp::{MCP_MAX_SERVERS, McpConfig, McpServerConfig, McpStart, McpTransport};
use crate::json;
use crate::runtime::Workers;
use crate::store::Db;
use http::{HttpConfig, HttpTransport};
use miniserde::json::Value;
use session::{Event, Link, Session, with_timeout};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};
use std::rc::{Rc, Weak};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use stdio::{Pipes, ReadEnd, ServerProcess};

/// Most MCP tools offered in all (the rest are left out with one log line).
pub const MCP_MAX_TOOLS: usize = 128;

/// What a server is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    /// `enabled: false`.
    Disabled,
    /// Not running (never started, or stopped when idle); its cached tools are offered.
    Stopped,
    Starting,
    Running,
    /// Restarted too often (5 times in 30 s, or 5 times in a row without getting
    /// through `initialize` and `tools/list`): left stopped until the next config reload
    /// or restart.
    Failed,
}

/// One server as `mcp list`, `status` and `doctor` show it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    pub name: String,
    /// `stdio`, `http` or `sse`.
    pub transport: &'static str,
    pub state: ServerState,
    pub tools: usize,
    /// One sentence, no host, no secret.
    pub last_error: Option<String>,
    pub restarts: u32,
}

/// A tool as the server declared it (names not yet prefixed with the server's).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    /// `inputSchema` as compact JSON text.
    pub input_schema: String,
}

/// Why an MCP request did not produce a result.
#[derive(Debug, Clone, PartialEq)]
pub enum McpError {
    /// No server by that name, or it is disabled.
    NoServer(String),
    /// The server could not be started or initialized (one sentence).
    Start(String),
    /// The server failed too often and is left stopped.
    Failed(String),
    /// No answer within `timeout_secs` (the request was cancelled).
    Timeout(u64),
    /// The server answered with a JSON-RPC error.
    Rpc { code: i64, message: String },
    /// The server broke the protocol or went away mid-request (it is restarted).
    Protocol(String),
    /// An HTTP server could not be reached, or the exchange failed (one sentence, no host).
    Transport(String),
    /// The server has no such tool, or its entry's `allow_tools`/`deny_tools` keep it out.
    NoTool(String),
    /// The arguments are not one JSON object.
    Arguments,
}

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpError::NoServer(n) => write!(f, "there is no enabled MCP server named {n:?}"),
            McpError::Start(m) => write!(f, "the MCP server did not start: {m}"),
            McpError::Failed(n) => write!(
                f,
                "the MCP server {n:?} failed too often and is stopped until yoctoclaw restarts"
            ),
            McpError::Timeout(s) => write!(f, "the MCP server did not answer within {s} s"),
            McpError::Rpc { code, message } => {
                write!(f, "the MCP server refused the request ({code}): {message}")
            }
            McpError::Protocol(m) => write!(f, "the MCP server broke the protocol: {m}"),
            McpError::Transport(m) => write!(f, "the MCP server could not be reached: {m}"),
            McpError::NoTool(t) => write!(f, "the MCP server offers no tool named {t:?}"),
            McpError::Arguments => write!(f, "the tool's arguments must be one JSON object"),
        }
    }
}

impl std::error::Error for McpError {}

/// The manager's durations; [`Timing::default`] is the product's. Tests pass shorter ones
/// to [`Mcp::with_timing`] (never read from the environment).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// The first restart's delay; each further one in a row doubles it.
    pub backoff_base: Duration,
    /// Most restarts within `restart_window`, and in a row without a working session;
    /// one more and the server is `Failed`.
    pub max_restarts: usize,
    pub restart_window: Duration,
    /// How long a stopping stdio server is given to exit after its stdin closes, and again
    /// after `SIGTERM`, before `SIGKILL`.
    pub stop_grace: Duration,
    /// One unit of `idle_stop_mins` (a minute).
    pub idle_unit: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            backoff_base: Duration::from_millis(500),
            max_restarts: 5,
            restart_window: Duration::from_secs(30),
            stop_grace: Duration::from_secs(2),
            idle_unit: Duration::from_secs(60),
        }
    }
}

/// Doublings of the restart delay at most (0.5 s becomes at most 8 s).
const MAX_BACKOFF_DOUBLINGS: u32 = 4;
/// Longest wait to write our answer to a stdio server's request (`ping`).
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);
/// Prefix of the `state` rows holding each server's last tool list.
pub const TOOLS_STATE_PREFIX: &str = "mcp.tools.";

/// One configured server.
struct Server {
    cfg: McpServerConfig,
    state: Cell<ServerState>,
    session: RefCell<Option<Rc<Session>>>,
    process: RefCell<Option<ServerProcess>>,
    /// The live list while it runs, else the last one known (SQLite).
    tools: RefCell<Vec<ToolInfo>>,
    last_error: RefCell<Option<String>>,
    restarts: Cell<u32>,
    /// When recent restarts were attempted (within the window).
    recent: RefCell<VecDeque<Instant>>,
    /// Failures in a row since the last good start (the backoff's exponent).
    failures: Cell<u32>,
    /// Held by whoever starts the server (a call, a restart waiting out its backoff).
    start_lock: smol::lock::Mutex<()>,
    last_used: Cell<Instant>,
    /// Bumped at each start and stop: tasks of an older run leave.
    run: Cell<u64>,
    restart_scheduled: Cell<bool>,
    relisting: Cell<bool>,
    relist_again: Cell<bool>,
}

/// Every configured server of one process.
pub struct Mcp {
    me: Weak<Mcp>,
    servers: Vec<Rc<Server>>,
    /// Runs the manager's own tasks (stdio readers, restarts, idle stops, re-lists):
    /// driven by [`Mcp::run`] and by every call while it is awaited.
    ex: smol::LocalExecutor<'static>,
    env: Env,
    workspace: PathBuf,
    workers: Workers,
    db: Option<Rc<Db>>,
    timing: Timing,
    generation: Cell<u64>,
    shut: Cell<bool>,
    /// Closed by [`Mcp::shutdown`]: a restart waiting out its backoff (with its server's
    /// start lock held) gives up at once rather than holding the shutdown for up to the
    /// longest backoff.
    stopping: async_channel::Receiver<()>,
    stop_now: async_channel::Sender<()>,
    /// The tool cap was logged for this generation.
    cap_logged: Cell<u64>,
}

impl Mcp {
    /// The manager for `cfg`'s servers; nothing starts until [`Mcp::start_boot_servers`]
    /// or a call. `env` resolves `${NAME}` references and `env_from_secrets`; a stdio
    /// server without `cwd` runs in `workspace`; HTTP exchanges and process spawns run on
    /// `workers`; `db` keeps each server's last tool list (`None`: kept in memory only).
    pub fn new(
        cfg: &McpConfig,
        env: &Env,
        workspace: &Path,
        workers: Workers,
        db: Option<Rc<Db>>,
    ) -> Rc<Mcp> {
        Mcp::with_timing(cfg, env, workspace, workers, db, Timing::default())
    }

    /// [`Mcp::new`] with other durations (tests).
    pub fn with_timing(
        cfg: &McpConfig,
        env: &Env,
        workspace: &Path,
        workers: Workers,
        db: Option<Rc<Db>>,
        timing: Timing,
    ) -> Rc<Mcp> {
        let servers = cfg
            .servers
            .iter()
            .take(MCP_MAX_SERVERS)
            .map(|c| {
                let cached = db
                    .as_deref()
                    .map(|db| load_cached(db, &c.name))
                    .unwrap_or_default();
                Rc::new(Server {
                    cfg: c.clone(),
                    state: Cell::new(if c.enabled {
                        ServerState::Stopped
                    } else {
                        ServerState::Disabled
                    }),
                    session: RefCell::new(None),
                    process: RefCell::new(None),
                    tools: RefCell::new(cached),
                    last_error: RefCell::new(None),
                    restarts: Cell::new(0),
                    recent: RefCell::new(VecDeque::new()),
                    failures: Cell::new(0),
                    start_lock: smol::lock::Mutex::new(()),
                    last_used: Cell::new(Instant::now()),
                    run: Cell::new(0),
                    restart_scheduled: Cell::new(false),
                    relisting: Cell::new(false),
                    relist_again: Cell::new(false),
                })
            })
            .collect();
        let (stop_now, stopping) = async_channel::bounded(1);
        Rc::new_cyclic(|me| Mcp {
            me: me.clone(),
            stopping,
            stop_now,
            servers,
            ex: smol::LocalExecutor::new(),
            env: env.clone(),
            workspace: workspace.to_path_buf(),
            workers,
            db,
            timing,
            generation: Cell::new(1),
            shut: Cell::new(false),
            cap_logged: Cell::new(0),
        })
    }

    /// Drives the manager's background work (stdio servers' output, pings, restarts,
    /// idle stops) forever: the gateway spawns it on its executor. Without it that work
    /// moves only while a call is awaited (enough for a command's single call).
    pub async fn run(&self) {
        self.ex.run(smol::future::pending::<()>()).await
    }

    fn server(&self, name: &str) -> Result<&Rc<Server>, McpError> {
        self.servers
            .iter()
            .find(|s| s.cfg.name == name && s.cfg.enabled)
            .ok_or_else(|| McpError::NoServer(name.to_string()))
    }

    /// Every configured server, in name order.
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.servers
            .iter()
            .map(|s| ServerStatus {
                name: s.cfg.name.clone(),
                transport: s.cfg.transport_name(),
                state: s.state.get(),
                tools: if s.cfg.enabled {
                    self.tools(&s.cfg.name).len()
                } else {
                    0
                },
                last_error: s.last_error.borrow().clone(),
                restarts: s.restarts.get(),
            })
            .collect()
    }

    /// `server`'s tools: the live list when it runs, else the one cached from its last
    /// run, else none. Its `allow_tools`/`deny_tools` are applied, and `MCP_MAX_TOOLS` in
    /// all (servers in name order; the rest left out with one log line).
    pub fn tools(&self, server: &str) -> Vec<ToolInfo> {
        let mut room = MCP_MAX_TOOLS;
        for s in self.servers.iter().filter(|s| s.cfg.enabled) {
            let list: Vec<ToolInfo> = s
                .tools
                .borrow()
                .iter()
                .filter(|t| offered(&s.cfg, &t.name))
                .cloned()
                .collect();
            if s.cfg.name == server {
                if list.len() > room && self.cap_logged.get() != self.generation.get() {
                    self.cap_logged.set(self.generation.get());
                    log::warn!(
                        "mcp {server}: {} of its tools left out: at most {MCP_MAX_TOOLS} MCP tools in all",
                        list.len() - room
                    );
                }
                return list.into_iter().take(room).collect();
            }
            room = room.saturating_sub(list.len());
        }
        Vec::new()
    }

    /// Bumped whenever a tool list changes (a start, `list_changed`, a restart).
    pub fn generation(&self) -> u64 {
        self.generation.get()
    }

    /// `tools/call`: starts the server when it is not running; answers the `result`
    /// object; after `timeout_secs` sends `notifications/cancelled` and answers `Timeout`.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments_json: &str,
    ) -> Result<Value, McpError> {
        let srv = self.server(server)?.clone();
        if !offered(&srv.cfg, tool) {
            return Err(McpError::NoTool(tool.to_string()));
        }
        let arguments = match json::parse_value(arguments_json.trim()) {
            Ok(v @ Value::Object(_)) => v,
            _ => return Err(McpError::Arguments),
        };
        let timeout = Duration::from_secs(srv.cfg.timeout_secs.max(1));
        self.ex
            .run(async {
                srv.last_used.set(Instant::now());
                let session = self.ensure_running(&srv).await?;
                let run = srv.run.get();
                let out = session.call_tool(tool, arguments, timeout).await;
                srv.last_used.set(Instant::now());
                // An HTTP server has no reader to notice its end: a broken exchange ends
                // the session here, and the server is initialized again under the backoff.
                if session.is_http() {
                    if let Err(McpError::Transport(m)) = &out {
                        session.kill(m);
                    }
                    if let Some(why) = session.dead() {
                        self.on_dead(&srv, run, why).await;
                    }
                }
                out
            })
            .await
    }

    /// Starts `server` (initialize, tool list) if it is not running; how long it took.
    pub async fn start(&self, server: &str) -> Result<Duration, McpError> {
        let srv = self.server(server)?.clone();
        let t0 = Instant::now();
        self.ex
            .run(async {
                srv.last_used.set(Instant::now());
                self.ensure_running(&srv).await.map(|_| t0.elapsed())
            })
            .await
    }

    /// Starts the servers whose `start` is `boot` (each failure logged, none fatal).
    pub async fn start_boot_servers(&self) {
        for s in self.servers.clone() {
            if s.cfg.enabled && s.cfg.start == McpStart::Boot {
                match self.start(&s.cfg.name).await {
                    Ok(d) => log::info!(
                        "mcp {}: started with {} tool(s) in {:.2} s",
                        s.cfg.name,
                        s.tools.borrow().len(),
                        d.as_secs_f64()
                    ),
                    Err(e) => log::warn!("mcp {}: {e}", s.cfg.name),
                }
            }
        }
    }

    /// Stops every server (stdin closed, a short wait, SIGTERM then SIGKILL to its group;
    /// HTTP sessions deleted); nothing restarts afterwards.
    pub async fn shutdown(&self) {
        self.shut.set(true);
        self.stop_now.close();
        self.ex
            .run(async {
                let tasks: Vec<_> = self
                    .servers
                    .iter()
                    .map(|s| {
                        let me = self.me.clone();
                        let s = s.clone();
                        self.ex.spawn(async move {
                            if let Some(m) = me.upgrade() {
                                m.stop(&s, "yoctoclaw is stopping").await;
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await;
                }
            })
            .await
    }

    /// The running session of `srv`, starting it (or waiting for the start under way)
    /// when needed.
    async fn ensure_running(&self, srv: &Rc<Server>) -> Result<Rc<Session>, McpError> {
        if let Some(s) = self.live(srv) {
            return Ok(s);
        }
        // A restart may be waiting out its backoff with the lock held: wait for it, within
        // the longest backoff and one start.
        let wait = self.timing.backoff_base * (1 << MAX_BACKOFF_DOUBLINGS)
            + Duration::from_secs(srv.cfg.timeout_secs.max(1)) * 3;
        let Some(_guard) = with_timeout(wait, srv.start_lock.lock()).await else {
            return Err(McpError::Start("it is still starting".into()));
        };
        if let Some(s) = self.live(srv) {
            return Ok(s);
        }
        self.start_locked(srv).await
    }

    /// The session of a running server.
    fn live(&self, srv: &Server) -> Option<Rc<Session>> {
        if srv.state.get() != ServerState::Running {
            return None;
        }
        srv.session
            .borrow()
            .as_ref()
            .filter(|s| s.dead().is_none())
            .cloned()
    }

    /// Start `srv` (its start lock held): counted as a restart after a failure; `Failed`
    /// once `max_restarts` restarts happened within `restart_window`, or that many in a
    /// row did not reach a working session.
    async fn start_locked(&self, srv: &Rc<Server>) -> Result<Rc<Session>, McpError> {
        let name = srv.cfg.name.clone();
        if self.shut.get() {
            return Err(McpError::Start("yoctoclaw is stopping".into()));
        }
        if srv.state.get() == ServerState::Failed {
            return Err(McpError::Failed(name));
        }
        if srv.failures.get() > 0 {
            let now = Instant::now();
            let mut recent = srv.recent.borrow_mut();
            while recent
                .front()
                .is_some_and(|t| now.duration_since(*t) > self.timing.restart_window)
            {
                recent.pop_front();
            }
            // `failures - 1` restarts in a row have not reached a working session: a
            // server that never starts (an `initialize` that times out takes longer than
            // the window allows five of) is given up on without the window.
            let in_a_row = srv.failures.get() as usize > self.timing.max_restarts;
            if recent.len() >= self.timing.max_restarts || in_a_row {
                srv.state.set(ServerState::Failed);
                let last = srv.last_error.borrow();
                let last = last.as_deref().unwrap_or("none");
                if in_a_row {
                    log::warn!(
                        "mcp {name}: did not start after {} restarts in a row; left stopped until yoctoclaw restarts (last error: {last})",
                        self.timing.max_restarts
                    );
                } else {
                    log::warn!(
                        "mcp {name}: failed {} times within {} s; left stopped until yoctoclaw restarts (last error: {last})",
                        recent.len() + 1,
                        self.timing.restart_window.as_secs()
                    );
                }
                return Err(McpError::Failed(name));
            }
            recent.push_back(now);
            srv.restarts.set(srv.restarts.get() + 1);
        }
        srv.state.set(ServerState::Starting);
        let run = srv.run.get() + 1;
        srv.run.set(run);
        match self.launch(srv, run).await {
            Ok(session) => {
                if srv.run.get() != run || session.dead().is_some() {
                    let why = session.dead().unwrap_or_else(|| "it stopped".into());
                    return Err(self.start_failed(srv, McpError::Protocol(why)).await);
                }
                srv.state.set(ServerState::Running);
                srv.failures.set(0);
                srv.last_used.set(Instant::now());
                self.spawn_idle(srv, run);
                Ok(session)
            }
            Err(e) => Err(self.start_failed(srv, e).await),
        }
    }

    /// A start failed: what is left of it stopped, the error kept, a restart scheduled.
    async fn start_failed(&self, srv: &Rc<Server>, e: McpError) -> McpError {
        let e = match e {
            McpError::Start(_) | McpError::Failed(_) => e,
            other => McpError::Start(other.to_string()),
        };
        // Info: a caller gets the error itself; a background restart's failure is told
        // when the server ends `Failed` (a warning).
        log::info!("mcp {}: {e}", srv.cfg.name);
        *srv.last_error.borrow_mut() = Some(e.to_string());
        self.teardown(srv).await;
        srv.state.set(ServerState::Stopped);
        srv.failures.set(srv.failures.get() + 1);
        self.schedule_restart(srv);
        e
    }

    /// Spawn (stdio) or connect (HTTP), initialize, list the tools.
    async fn launch(&self, srv: &Rc<Server>, run: u64) -> Result<Rc<Session>, McpError> {
        let name = srv.cfg.name.clone();
        let timeout = Duration::from_secs(srv.cfg.timeout_secs.max(1));
        let me = self.me.clone();
        let srv_w = Rc::downgrade(srv);
        let on_event: Box<dyn Fn(Event)> = Box::new(move |ev| {
            if let (Some(m), Some(s)) = (me.upgrade(), srv_w.upgrade()) {
                m.on_event(&s, run, ev);
            }
        });
        let session = match &srv.cfg.transport {
            McpTransport::Stdio {
                command, args, env, ..
            } => {
                let spec = stdio::Spec {
                    command: command.clone(),
                    args: args.clone(),
                    env: self.child_env(&srv.cfg, env)?,
                    cwd: self.cwd(&srv.cfg),
                };
                let spawned = self
                    .workers
                    .run(move || stdio::spawn(spec))
                    .await
                    .map_err(|_| McpError::Start("yoctoclaw is stopping".into()))?
                    .map_err(McpError::Start)?;
                let (process, pipes) = Pipes::new(spawned)
                    .map_err(|e| McpError::Start(format!("its pipes could not be set up ({e})")))?;
                log::debug!("mcp {name}: started as process {}", process.id());
                *srv.process.borrow_mut() = Some(process);
                let session = Rc::new(Session::new(
                    &name,
                    Link::Stdio(smol::lock::Mutex::new(Some(pipes.stdin))),
                    timeout,
                    on_event,
                ));
                self.spawn_reader(srv, run, &session, pipes.stdout);
                let n = name.clone();
                self.ex
                    .spawn(async move { stdio::log_stderr(&n, pipes.stderr).await })
                    .detach();
                session
            }
            McpTransport::Http { url, headers, .. } => {
                let mut resolved = Vec::with_capacity(headers.len());
                for (k, v) in headers {
                    resolved.push((k.clone(), self.resolve(v)?));
                }
                let t = HttpTransport::new(HttpConfig {
                    url: url.clone(),
                    headers: resolved,
                    timeout,
                })
                .map_err(|e| McpError::Start(e.to_string()))?;
                Rc::new(Session::new(
                    &name,
                    Link::Http {
                        transport: Arc::new(Mutex::new(Some(t))),
                        workers: self.workers.clone(),
                    },
                    timeout,
                    on_event,
                ))
            }
        };
        *srv.session.borrow_mut() = Some(session.clone());
        session.initialize().await?;
        let list = session.list_tools().await?;
        self.set_tools(srv, list);
        Ok(session)
    }

    /// The stdio reader task: each line to the session; the end of output or a fault ends
    /// the session (and the server is restarted).
    fn spawn_reader(
        &self,
        srv: &Rc<Server>,
        run: u64,
        session: &Rc<Session>,
        stdout: smol::Async<std::process::ChildStdout>,
    ) {
        let me = self.me.clone();
        let srv = Rc::downgrade(srv);
        let session = Rc::downgrade(session);
        self.ex
            .spawn(async move {
                let mut reader = stdio::LineReader::new(stdout);
                let why = loop {
                    let line = match reader.next_line().await {
                        Ok(l) => l,
                        Err(ReadEnd::Eof) => break "it exited or closed its output".to_string(),
                        Err(ReadEnd::Io(e)) => break format!("its output failed ({e})"),
                        Err(ReadEnd::Fault(f)) => break f.to_string(),
                    };
                    let Some(s) = session.upgrade() else { return };
                    match s.on_message(&line) {
                        Ok(replies) => {
                            let mut deaf = false;
                            for r in replies {
                                if s.write_stdio(&r, REPLY_TIMEOUT).await.is_err() {
                                    deaf = true;
                                    break;
                                }
                            }
                            if deaf {
                                break "it does not read its input".to_string();
                            }
                        }
                        Err(f) => break f.to_string(),
                    }
                };
                drop(reader);
                if let Some(s) = session.upgrade() {
                    s.kill(&why);
                }
                if let (Some(m), Some(srv)) = (me.upgrade(), srv.upgrade()) {
                    m.on_dead(&srv, run, why).await;
                }
            })
            .detach();
    }

    /// A running server's session ended by itself: stop what is left, restart it later.
    async fn on_dead(&self, srv: &Rc<Server>, run: u64, why: String) {
        if srv.run.get() != run || self.shut.get() {
            return;
        }
        if srv.state.get() != ServerState::Running {
            // Still starting: the start fails with the session's reason.
            return;
        }
        log::warn!("mcp {}: stopped: {why}; it is restarted", srv.cfg.name);
        *srv.last_error.borrow_mut() = Some(format!("it stopped: {why}"));
        srv.state.set(ServerState::Stopped);
        srv.failures.set(srv.failures.get() + 1);
        self.teardown(srv).await;
        self.schedule_restart(srv);
    }

    fn on_event(&self, srv: &Rc<Server>, run: u64, ev: Event) {
        match ev {
            Event::ListChanged => {
                if srv.run.get() != run || srv.state.get() != ServerState::Running {
                    return;
                }
                if srv.relisting.get() {
                    srv.relist_again.set(true);
                    return;
                }
                srv.relisting.set(true);
                let me = self.me.clone();
                let srv = srv.clone();
                self.ex
                    .spawn(async move {
                        loop {
                            srv.relist_again.set(false);
                            let Some(m) = me.upgrade() else { return };
                            let Some(session) = m.live(&srv) else { break };
                            match session.list_tools().await {
                                Ok(list) => m.set_tools(&srv, list),
                                Err(e) => log::warn!(
                                    "mcp {}: its changed tool list could not be read: {e}",
                                    srv.cfg.name
                                ),
                            }
                            if !srv.relist_again.get() {
                                break;
                            }
                        }
                        srv.relisting.set(false);
                    })
                    .detach();
            }
        }
    }

    /// Keep `list` as `srv`'s tools (and in SQLite); bump the generation when it changed.
    fn set_tools(&self, srv: &Server, list: Vec<ToolInfo>) {
        if *srv.tools.borrow() == list {
            return;
        }
        if let Some(db) = &self.db {
            let text = encode_tools(&list);
            let key = [TOOLS_STATE_PREFIX, &srv.cfg.name].concat();
            if let Err(e) = db.deferred_sync(|| db.set_state(&key, &text)) {
                log::warn!("mcp {}: its tool list was not saved: {e}", srv.cfg.name);
            }
        }
        *srv.tools.borrow_mut() = list;
        self.generation.set(self.generation.get() + 1);
    }

    /// After a failure: wait out the backoff holding the start lock, then start again.
    fn schedule_restart(&self, srv: &Rc<Server>) {
        if srv.restart_scheduled.get() || self.shut.get() || srv.state.get() == ServerState::Failed
        {
            return;
        }
        srv.restart_scheduled.set(true);
        let doublings = srv
            .failures
            .get()
            .saturating_sub(1)
            .min(MAX_BACKOFF_DOUBLINGS);
        let delay = self.timing.backoff_base * (1u32 << doublings);
        log::info!(
            "mcp {}: restarting in {:.1} s",
            srv.cfg.name,
            delay.as_secs_f64()
        );
        let me = self.me.clone();
        let srv = srv.clone();
        let stopping = self.stopping.clone();
        self.ex
            .spawn(async move {
                let _guard = srv.start_lock.lock().await;
                // The backoff, cut short by a shutdown (which then finds `shut` below).
                smol::future::or(
                    async {
                        smol::Timer::after(delay).await;
                    },
                    async {
                        let _ = stopping.recv().await;
                    },
                )
                .await;
                srv.restart_scheduled.set(false);
                let Some(m) = me.upgrade() else { return };
                if m.shut.get() || srv.state.get() != ServerState::Stopped {
                    return;
                }
                // A failure schedules the next restart itself.
                let _ = m.start_locked(&srv).await;
            })
            .detach();
    }

    /// Stop `srv` when it has not been used for its `idle_stop_mins`.
    fn spawn_idle(&self, srv: &Rc<Server>, run: u64) {
        let mins = srv.cfg.idle_stop_mins;
        if mins == 0 {
            return;
        }
        let idle = self.timing.idle_unit * u32::try_from(mins).unwrap_or(u32::MAX);
        let me = self.me.clone();
        let srv = Rc::downgrade(srv);
        self.ex
            .spawn(async move {
                loop {
                    let Some(s) = srv.upgrade() else { return };
                    let due = s.last_used.get() + idle;
                    drop(s);
                    if Instant::now() < due {
                        smol::Timer::at(due).await;
                        continue;
                    }
                    let (Some(m), Some(s)) = (me.upgrade(), srv.upgrade()) else {
                        return;
                    };
                    if s.run.get() != run || s.state.get() != ServerState::Running {
                        return;
                    }
                    if s.session
                        .borrow()
                        .as_ref()
                        .is_some_and(|x| x.in_flight() > 0)
                    {
                        s.last_used.set(Instant::now());
                        continue;
                    }
                    log::info!(
                        "mcp {}: stopped after {mins} min unused; its tools stay offered",
                        s.cfg.name
                    );
                    m.stop(&s, "idle").await;
                    return;
                }
            })
            .detach();
    }

    /// Stop `srv` on purpose (idle, shutdown): no restart follows.
    async fn stop(&self, srv: &Rc<Server>, why: &str) {
        let _guard = srv.start_lock.lock().await;
        srv.run.set(srv.run.get() + 1);
        if srv.session.borrow().is_some() || srv.process.borrow().is_some() {
            log::debug!("mcp {}: stopping ({why})", srv.cfg.name);
        }
        self.teardown(srv).await;
        if srv.state.get() != ServerState::Failed && srv.state.get() != ServerState::Disabled {
            srv.state.set(ServerState::Stopped);
        }
    }

    /// End the session and stop the process (or close the HTTP session).
    async fn teardown(&self, srv: &Server) {
        // Both taken before any wait: a start made meanwhile (a call, after a crash) sets
        // its own, which are not this teardown's to stop.
        let session = srv.session.borrow_mut().take();
        let process = srv.process.borrow_mut().take();
        if let Some(s) = &session {
            s.kill("the server was stopped");
            s.close_stdin().await;
            if let Some((t, workers)) = s.http_transport() {
                let _ = workers
                    .run(move || {
                        let taken = t.lock().unwrap_or_else(|p| p.into_inner()).take();
                        if let Some(mut tr) = taken {
                            tr.close();
                        }
                    })
                    .await;
            }
        }
        if let Some(p) = process {
            let how = stdio::stop(p, self.timing.stop_grace).await;
            log::debug!("mcp {}: {how}", srv.cfg.name);
        }
    }

    /// A stdio server's environment: the clean base, its entry's `env` (references
    /// resolved), `env_from_secrets`.
    fn child_env(
        &self,
        cfg: &McpServerConfig,
        entry: &[(String, String)],
    ) -> Result<Vec<(String, String)>, McpError> {
        let mut env = crate::security::child_env::inherit(stdio::BASE_ENV, "mcp");
        let mut set = |k: &str, v: String| {
            env.retain(|(n, _)| n != k);
            env.push((k.to_string(), v));
        };
        for (k, v) in entry {
            set(k, self.resolve(v)?);
        }
        for (k, var) in &cfg.env_from_secrets {
            match self.env.get(var) {
                Some(v) => set(k, v),
                None => return Err(unset(var)),
            }
        }
        Ok(env)
    }

    fn resolve(&self, value: &str) -> Result<String, McpError> {
        crate::config::mcp::resolve_refs(value, &self.env).map_err(|n| unset(&n))
    }

    fn cwd(&self, cfg: &McpServerConfig) -> PathBuf {
        match &cfg.transport {
            McpTransport::Stdio { cwd, .. } if !cwd.is_empty() => self.workspace.join(cwd),
            _ => self.workspace.clone(),
        }
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        // Processes still running are killed with their groups and reaped
        // (`ServerProcess`'s drop) when the servers go.
        for s in &self.servers {
            s.session.borrow_mut().take();
            s.process.borrow_mut().take();
        }
    }
}

fn unset(var: &str) -> McpError {
    McpError::Start(format!(
        "the variable {var} its entry names is not set (secrets.env or the environment)"
    ))
}

/// Whether the entry's `allow_tools`/`deny_tools` let `tool` through.
fn offered(cfg: &McpServerConfig, tool: &str) -> bool {
    (cfg.allow_tools.is_empty() || cfg.allow_tools.iter().any(|t| t == tool))
        && !cfg.deny_tools.iter().any(|t| t == tool)
}

/// A tool list as stored: `[[name, description, schema], ...]`.
fn encode_tools(list: &[ToolInfo]) -> String {
    let items = list
        .iter()
        .map(|t| {
            json::array(vec![
                json::string(t.name.clone()),
                json::string(t.description.clone()),
                json::string(t.input_schema.clone()),
            ])
        })
        .collect();
    json::to_string(&json::array(items))
}

fn decode_tools(text: &str) -> Option<Vec<ToolInfo>> {
    let v = json::parse_value(text).ok()?;
    let mut out = Vec::new();
    for item in json::as_array(&v)?.iter().take(MCP_MAX_TOOLS) {
        let a = json::as_array(item)?;
        let s = |i: usize| a.get(i).and_then(json::as_str).map(str::to_string);
        out.push(ToolInfo {
            name: s(0)?,
            description: s(1)?,
            input_schema: s(2)?,
        });
    }
    Some(out)
}

/// The tool list kept from `name`'s last run.
fn load_cached(db: &Db, name: &str) -> Vec<ToolInfo> {
    let key = [TOOLS_STATE_PREFIX, name].concat();
    match db.get_state(&key) {
        Ok(Some(text)) => decode_tools(&text).unwrap_or_else(|| {
            log::warn!("mcp {name}: its saved tool list is unreadable; ignored");
            Vec::new()
        }),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_lists_round_trip_through_their_stored_form() {
        let list = vec![
            ToolInfo {
                name: "add".into(),
                description: "Add \"two\"\nnumbers".into(),
                input_schema: r#"{"type":"object"}"#.into(),
            },
            ToolInfo {
                name: "é".into(),
                description: String::new(),
                input_schema: "{}".into(),
            },
        ];
        assert_eq!(decode_tools(&encode_tools(&list)), Some(list));
        assert_eq!(decode_tools("[[1,2]]"), None);
        assert_eq!(decode_tools("garbage"), None);
    }

    #[test]
    fn allow_and_deny_lists_filter_tools() {
        let mut c = crate::config::mcp::McpServerConfig {
            name: "s".into(),
            transport: McpTransport::Stdio {
                command: "x".into(),
                args: vec![],
                env: vec![],
                cwd: String::new(),
            },
            enabled: true,
            start: McpStart::FirstUse,
            timeout_secs: 5,
            allow_tools: vec![],
            deny_tools: vec!["rm".into()],
            env_from_secrets: vec![],
            trust: false,
            idle_stop_mins: 10,
        };
        assert!(offered(&c, "ls") && !offered(&c, "rm"));
        c.allow_tools = vec!["ls".into()];
        assert!(offered(&c, "ls") && !offered(&c, "cat"));
    }
}
