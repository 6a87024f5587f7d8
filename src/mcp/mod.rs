//! MCP client: tools from Model Context Protocol servers (stdio child processes and
//! Streamable HTTP), offered to the model beside the built-in ones.
//!
//! SKELETON (lead, issue 30): the public API below is the contract between the helpers
//! building the MCP client; bodies are placeholders that answer `McpError::NotBuilt`
//! until the core lands. Replace this paragraph when it does.
//!
//! # Bounds
//! At most `config::mcp::MCP_MAX_SERVERS` servers (config), `MCP_MAX_TOOLS` tools in all,
//! one JSON-RPC message at most `MCP_MAX_MESSAGE_BYTES`.
//!
//! # Threads
//! Executor thread: the manager, every session's protocol state and the stdio pipes
//! (non-blocking, on smol's reactor); HTTP exchanges run on the worker threads, and a
//! legacy HTTP+SSE server's stream on its own `yc-mcp-sse` thread (`http`).

pub mod content;
pub mod http;
pub mod names;
pub mod offer;

use crate::config::mcp::McpConfig;
use miniserde::json::Value;
use std::fmt;
use std::rc::Rc;
use std::time::Duration;

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
    /// Restarted too often (5 times in 30 s): left stopped until the next config reload
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
    /// Placeholder until the core lands.
    NotBuilt,
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
            McpError::NotBuilt => write!(f, "MCP is not built yet"),
        }
    }
}

impl std::error::Error for McpError {}

/// Every configured server of one process.
pub struct Mcp {
    cfg: McpConfig,
}

impl Mcp {
    /// The manager for `cfg`'s servers; nothing starts until [`Mcp::start_boot_servers`]
    /// or a call. (The core adds what it needs: the `Env` for `${NAME}` references, the
    /// workspace, `Workers`, the store for cached tool lists, TLS settings.)
    pub fn new(cfg: &McpConfig) -> Rc<Mcp> {
        Rc::new(Mcp { cfg: cfg.clone() })
    }

    /// Every configured server, in name order.
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.cfg
            .servers
            .iter()
            .map(|s| ServerStatus {
                name: s.name.clone(),
                transport: s.transport_name(),
                state: if s.enabled {
                    ServerState::Stopped
                } else {
                    ServerState::Disabled
                },
                tools: 0,
                last_error: None,
                restarts: 0,
            })
            .collect()
    }

    /// `server`'s tools: the live list when it runs, else the one cached from its last
    /// run, else none. Its `allow_tools`/`deny_tools` are applied.
    pub fn tools(&self, _server: &str) -> Vec<ToolInfo> {
        Vec::new()
    }

    /// Bumped whenever a tool list changes (a start, `list_changed`, a restart).
    pub fn generation(&self) -> u64 {
        0
    }

    /// `tools/call`: starts the server when it is not running; answers the `result`
    /// object; after `timeout_secs` sends `notifications/cancelled` and answers `Timeout`.
    pub async fn call_tool(
        &self,
        _server: &str,
        _tool: &str,
        _arguments_json: &str,
    ) -> Result<Value, McpError> {
        Err(McpError::NotBuilt)
    }

    /// Starts `server` (initialize, tool list) if it is not running; how long it took.
    pub async fn start(&self, _server: &str) -> Result<Duration, McpError> {
        Err(McpError::NotBuilt)
    }

    /// Starts the servers whose `start` is `boot` (each failure logged, none fatal).
    pub async fn start_boot_servers(&self) {}

    /// Stops every server (stdin closed, a short wait, SIGTERM then SIGKILL to its group;
    /// HTTP sessions deleted).
    pub async fn shutdown(&self) {}
}
