//! `mcp`: the MCP servers whose tools the model is offered (the `mcp` module runs them).
//!
//! `mcp.servers` is an object keyed by server name whose entries have the shape MCP
//! users paste between clients (Claude Desktop's, Cursor's and Cline's `mcpServers`):
//! stdio `{"command", "args", "env", "cwd"}` or HTTP `{"url", "headers"}` (`"type"`
//! `"stdio"`, `"http"`/`"streamable-http"`/`"streamableHttp"` or `"sse"` when given),
//! plus yoctoclaw's own keys: `enabled` (Cline's `disabled` read too), `start`,
//! `timeout_secs` (Cline's `timeout`), `allow_tools`, `deny_tools`, `env_from_secrets`,
//! `trust`, `idle_stop_mins`. Keys other clients write that mean nothing here
//! (`autoApprove`, `alwaysAllow`, `description`, ...) are accepted and ignored, so a
//! pasted entry loads; anything else is an error naming it.
//!
//! Secrets: a value in `env` or `headers` may hold `${NAME}` references, resolved when the
//! server starts from the environment and `secrets.env` ([`resolve_refs`]), so a key is
//! never written into `config.json`; `env_from_secrets` lists variables passed to the
//! server under their own name (`"HA_TOKEN"`) or another (`"TOKEN=HA_TOKEN"`). A reference
//! to one of yoctoclaw's own secrets (the model's API keys, the bot token) is refused
//! here: those never reach an MCP server.
//!
//! # Bounds
//! At most `MCP_MAX_SERVERS` servers, names of 1..=`MCP_MAX_NAME` characters of
//! `[A-Za-z0-9_-]` (they prefix tool names, which providers cap at 64), at most
//! `MCP_MAX_ARGS` arguments, `MCP_MAX_VARS` variables or headers per server.
//!
//! # Threads
//! Main thread, at start-up (pure functions over the parsed config).

use super::fields::Fields;
use super::{ConfigError, Env};
use crate::json;
use miniserde::json::Value;

/// Most MCP servers configured (enabled or not).
pub const MCP_MAX_SERVERS: usize = 8;
/// Longest server name: it prefixes each tool's name (`SERVER__TOOL`, ≤ 64 characters).
pub const MCP_MAX_NAME: usize = 24;
/// Most command-line arguments of a stdio server.
pub const MCP_MAX_ARGS: usize = 64;
/// Most `env` entries, headers or `env_from_secrets` entries per server.
pub const MCP_MAX_VARS: usize = 32;

/// `mcp` section.
#[derive(Debug, Clone, PartialEq)]
pub struct McpConfig {
    /// In the order of their names (`config.json`'s object order is not kept).
    pub servers: Vec<McpServerConfig>,
    /// Default for servers' `idle_stop_mins`: 0..=10,080, defaults to 10; 0 = never.
    pub idle_stop_mins: u64,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            servers: Vec::new(),
            idle_stop_mins: 10,
        }
    }
}

impl McpConfig {
    pub fn server(&self, name: &str) -> Option<&McpServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }
}

/// How yoctoclaw talks to a server.
#[derive(Debug, Clone, PartialEq)]
pub enum McpTransport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// `env`: names and values (values may hold `${NAME}` references).
        env: Vec<(String, String)>,
        /// Working folder; empty: the workspace.
        cwd: String,
    },
    /// Streamable HTTP (`legacy_sse`: the 2024-11-05 HTTP+SSE transport from the start,
    /// `"type": "sse"`; otherwise it is the fallback when the server asks for it).
    Http {
        url: String,
        /// Header names and values (values may hold `${NAME}` references).
        headers: Vec<(String, String)>,
        legacy_sse: bool,
    },
}

/// When a server is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpStart {
    /// With the gateway.
    Boot,
    /// When one of its tools is first called (its cached tool list is offered before).
    FirstUse,
}

/// One `mcp.servers` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerConfig {
    /// The entry's key: `[A-Za-z0-9_-]{1,24}`.
    pub name: String,
    pub transport: McpTransport,
    /// Defaults to true (`"disabled": true` also turns it off).
    pub enabled: bool,
    pub start: McpStart,
    /// One request (initialize, a tool call), 1..=3,600 s, defaults to 60.
    pub timeout_secs: u64,
    /// Tool names of this server offered to the model; empty: all.
    pub allow_tools: Vec<String>,
    /// Tool names of this server never offered.
    pub deny_tools: Vec<String>,
    /// `(name in the server's environment, variable looked up)`.
    pub env_from_secrets: Vec<(String, String)>,
    /// Calls skip approval under `agent.autonomy: supervised`. Defaults to false.
    pub trust: bool,
    /// Stopped after this many minutes without a call; 0 = never. Defaults to
    /// `mcp.idle_stop_mins`.
    pub idle_stop_mins: u64,
}

impl McpServerConfig {
    pub fn transport_name(&self) -> &'static str {
        match &self.transport {
            McpTransport::Stdio { .. } => "stdio",
            McpTransport::Http {
                legacy_sse: true, ..
            } => "sse",
            McpTransport::Http { .. } => "http",
        }
    }
}

/// Keys other MCP clients write into an entry that mean nothing to yoctoclaw.
const FOREIGN_KEYS: &[&str] = &[
    "autoApprove",
    "alwaysAllow",
    "description",
    "transportType",
    "icon",
    "envFile",
];

fn bad(key: String, expected: &str) -> ConfigError {
    ConfigError::BadValue {
        key,
        expected: expected.to_string(),
    }
}

/// Whether `name` may name a server.
pub fn valid_server_name(name: &str) -> bool {
    (1..=MCP_MAX_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn valid_var_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.as_bytes()[0].is_ascii_digit()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The `${NAME}` references in `value`, or `None` for a malformed one (`${`, `${}`,
/// `${A-B}`). `$` not followed by `{` is literal.
pub fn refs(value: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(i) = rest.find("${") {
        let after = &rest[i + 2..];
        let end = after.find('}')?;
        let name = &after[..end];
        if !valid_var_name(name) {
            return None;
        }
        out.push(name);
        rest = &after[end + 1..];
    }
    Some(out)
}

/// `value` with each `${NAME}` replaced by the variable's value from `env`; `Err(NAME)`
/// for the first one that is not set (the name, never a value, goes into messages).
pub fn resolve_refs(value: &str, env: &Env) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(end) = after.find('}') else {
            return Err(String::new());
        };
        let name = &after[..end];
        match env.get(name) {
            Some(v) => out.push_str(&v),
            None => return Err(name.to_string()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Reads `mcp`; `own_secrets` are the variable names holding yoctoclaw's own secrets
/// (none of them may be handed to a server).
pub(super) fn read_mcp(s: &mut Fields<'_>, own_secrets: &[&str]) -> Result<McpConfig, ConfigError> {
    let d = McpConfig::default();
    let idle_stop_mins = s.uint("idle_stop_mins", d.idle_stop_mins, 0, 10_080)?;
    let mut servers = Vec::new();
    for (path, name, v) in s.object_map("servers")? {
        if servers.len() == MCP_MAX_SERVERS {
            return Err(bad(
                "mcp.servers".into(),
                &format!("at most {MCP_MAX_SERVERS} servers"),
            ));
        }
        if !valid_server_name(&name) {
            return Err(bad(
                path,
                &format!("a server name of 1 to {MCP_MAX_NAME} letters, digits, '_' or '-'"),
            ));
        }
        let mut f = Fields::item(v, path.clone(), s.env())?;
        servers.push(read_server(
            &mut f,
            &path,
            name,
            idle_stop_mins,
            own_secrets,
        )?);
        for k in FOREIGN_KEYS {
            f.ignore(k);
        }
        f.finish()?;
    }
    Ok(McpConfig {
        servers,
        idle_stop_mins,
    })
}

fn read_server(
    f: &mut Fields<'_>,
    path: &str,
    name: String,
    default_idle: u64,
    own_secrets: &[&str],
) -> Result<McpServerConfig, ConfigError> {
    let key = |k: &str| format!("{path}.{k}");
    let kind = f.string("type", "")?;
    let command = f.string("command", "")?;
    let url = f.string("url", "")?;
    let legacy_sse = match kind.as_str() {
        "" | "stdio" | "http" | "streamable-http" | "streamableHttp" | "streamable_http" => false,
        "sse" => true,
        _ => {
            return Err(bad(
                key("type"),
                "\"stdio\", \"http\", \"streamable-http\" or \"sse\"",
            ));
        }
    };
    let transport = match (command.trim().is_empty(), url.trim().is_empty()) {
        (false, true) if kind.is_empty() || kind == "stdio" => {
            let args = f.string_list("args")?;
            if args.len() > MCP_MAX_ARGS {
                return Err(bad(
                    key("args"),
                    &format!("at most {MCP_MAX_ARGS} arguments"),
                ));
            }
            if args.iter().chain([&command]).any(|a| a.contains('\0')) {
                return Err(bad(key("args"), "strings without NUL characters"));
            }
            let env = string_map(f, "env", &key("env"))?;
            for (k, _) in &env {
                if !valid_var_name(k) {
                    return Err(bad(key("env"), "variable names of letters, digits and '_'"));
                }
            }
            McpTransport::Stdio {
                command: command.trim().to_string(),
                args,
                env,
                cwd: f.string("cwd", "")?,
            }
        }
        (true, false) if kind != "stdio" => {
            let url = url.trim().to_string();
            let ok = url.starts_with("https://") && url.len() > 8
                || url.starts_with("http://") && url.len() > 7;
            if !ok || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(bad(key("url"), "an http:// or https:// URL"));
            }
            let headers = string_map(f, "headers", &key("headers"))?;
            for (k, v) in &headers {
                let token = !k.is_empty()
                    && k.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                if !token || v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                    return Err(bad(key("headers"), "header names and one-line values"));
                }
            }
            McpTransport::Http {
                url,
                headers,
                legacy_sse,
            }
        }
        _ => {
            return Err(bad(
                path.to_string(),
                "either \"command\" (a stdio server) or \"url\" (an HTTP server)",
            ));
        }
    };
    let disabled = f.bool("disabled", false)?;
    let enabled = f.bool("enabled", true)? && !disabled;
    let start = match f
        .choice("start", "first_use", &["boot", "first_use"])?
        .as_str()
    {
        "boot" => McpStart::Boot,
        _ => McpStart::FirstUse,
    };
    let timeout = f.opt_uint("timeout", 1, 3_600)?;
    let timeout_secs = match timeout {
        Some(t) => f.uint("timeout_secs", t, 1, 3_600)?,
        None => f.uint("timeout_secs", 60, 1, 3_600)?,
    };
    let allow_tools = f.string_list("allow_tools")?;
    let deny_tools = f.string_list("deny_tools")?;
    let mut env_from_secrets = Vec::new();
    for entry in f.string_list("env_from_secrets")? {
        let (to, from) = match entry.split_once('=') {
            Some((to, from)) => (to.trim().to_string(), from.trim().to_string()),
            None => (entry.clone(), entry.clone()),
        };
        if !valid_var_name(&to) || !valid_var_name(&from) {
            return Err(bad(
                key("env_from_secrets"),
                "variable names (\"HA_TOKEN\" or \"TOKEN=HA_TOKEN\")",
            ));
        }
        env_from_secrets.push((to, from));
    }
    let trust = f.bool("trust", false)?;
    let idle_stop_mins = f.uint("idle_stop_mins", default_idle, 0, 10_080)?;

    // Which variables the entry reads: none may be one of yoctoclaw's own secrets.
    let mut read: Vec<&str> = env_from_secrets.iter().map(|(_, v)| v.as_str()).collect();
    let templated: Vec<&(String, String)> = match &transport {
        McpTransport::Stdio { env, .. } => env.iter().collect(),
        McpTransport::Http { headers, .. } => headers.iter().collect(),
    };
    for (k, v) in &templated {
        match refs(v) {
            Some(names) => read.extend(names),
            None => {
                return Err(bad(
                    format!(
                        "{path}.{}",
                        if matches!(transport, McpTransport::Stdio { .. }) {
                            "env"
                        } else {
                            "headers"
                        }
                    ),
                    &format!("values whose references read ${{NAME}} (in {k:?})"),
                ));
            }
        }
    }
    if let Some(own) = read.iter().find(|n| own_secrets.contains(n)) {
        return Err(bad(
            path.to_string(),
            &format!(
                "no reference to {own}: it holds one of yoctoclaw's own secrets, which never reach an MCP server"
            ),
        ));
    }
    if env_from_secrets.len() > MCP_MAX_VARS || templated.len() > MCP_MAX_VARS {
        return Err(bad(
            path.to_string(),
            &format!("at most {MCP_MAX_VARS} variables and {MCP_MAX_VARS} headers"),
        ));
    }
    Ok(McpServerConfig {
        name,
        transport,
        enabled,
        start,
        timeout_secs,
        allow_tools,
        deny_tools,
        env_from_secrets,
        trust,
        idle_stop_mins,
    })
}

/// An object of strings (`env`, `headers`); numbers and booleans are taken as their text
/// (`"PORT": 8123` is common in pasted entries).
fn string_map(
    f: &mut Fields<'_>,
    key: &'static str,
    path: &str,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for (_, k, v) in f.object_map(key)? {
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Bool(b) => b.to_string(),
            Value::Number(_) => match (json::as_i64(v), json::as_f64(v)) {
                (Some(n), _) => n.to_string(),
                (None, Some(x)) => x.to_string(),
                _ => return Err(bad(path.to_string(), "an object of strings")),
            },
            _ => return Err(bad(path.to_string(), "an object of strings")),
        };
        if out.len() == MCP_MAX_VARS {
            return Err(bad(
                path.to_string(),
                &format!("at most {MCP_MAX_VARS} entries"),
            ));
        }
        out.push((k, text));
    }
    Ok(out)
}
