//! `yoctoclaw mcp list|tools|call`: MCP servers checked by hand, and [`manager`], the one
//! place a command builds the MCP manager (the gateway, `doctor` and these commands).
//!
//! - `list`: each configured server, its transport, tool count and state as the gateway
//!   recorded it (`status::read_mcp_record`, believed only while the gateway runs);
//!   starts nothing.
//! - `tools [SERVER]`: each tool's name as the model is offered it (`SERVER__TOOL`) and
//!   the first line of its description; a server whose tool list is not known yet is
//!   started for it.
//! - `call SERVER TOOL ['{json}']`: starts the server, calls the tool, prints the result's
//!   text; exit 1 with one sentence when the server or the tool fails (the tool's own
//!   error text is printed first, on stdout).
//!
//! Exit statuses: 2 for an unknown or disabled server or arguments that are not a JSON
//! object, 1 when a server fails, 0 otherwise.
//!
//! # Bounds
//! A description's first line is cut to `MAX_DESCRIPTION_CHARS`; a call's printed result
//! to `MAX_CALL_OUTPUT_BYTES` (the rest counted); arguments up to `MAX_ARGUMENTS_BYTES`.
//!
//! # Threads
//! Main thread: the manager's async calls run under `smol::block_on` (the executor on the
//! main thread, as `agent -m` does); HTTP exchanges on the one worker started here.

use super::{AppError, Loaded};
use crate::args::McpSub;
use crate::config::mcp::McpServerConfig;
use crate::config::{Config, Env, Home};
use crate::json;
use crate::mcp::{Mcp, McpError, ServerStatus};
use crate::status::{Gateway, McpRecord, mcp_state_text, read_gateway_record, read_mcp_record};
use crate::store::Db;
use miniserde::json::Value;
use std::fmt::Write as _;
use std::rc::Rc;

/// Characters of a tool description's first line shown by `mcp tools`.
pub const MAX_DESCRIPTION_CHARS: usize = 100;
/// Bytes of a call's result text printed by `mcp call`.
pub const MAX_CALL_OUTPUT_BYTES: usize = 64 * 1024;
/// Largest arguments object `mcp call` takes.
pub const MAX_ARGUMENTS_BYTES: usize = 64 * 1024;

/// The MCP manager for `cfg`'s servers (nothing starts until asked): `${NAME}` references
/// resolved from `env`, stdio servers in `home`'s workspace, HTTP exchanges and spawns on
/// one worker of its own started here (`yc-mcp-0`: an HTTP server that hangs for its
/// `timeout_secs` holds it, never a worker the model's requests need), tool lists kept in
/// `db` when given.
pub fn manager(cfg: &Config, env: &Env, home: &Home, db: Option<Rc<Db>>) -> Rc<Mcp> {
    Mcp::new(
        &cfg.mcp,
        env,
        &home.workspace(),
        crate::runtime::Workers::start_named("yc-mcp", 1),
        db,
    )
}

/// The database, opened (created) when the home exists, for the tool lists a server gave:
/// `mcp tools` and `mcp call` keep them so `mcp list` and the gateway know them.
fn tools_db(l: &Loaded) -> Option<Rc<Db>> {
    super::open_db(l).ok()
}

/// The database when it exists (`mcp list` creates nothing).
fn existing_db(l: &Loaded) -> Option<Rc<Db>> {
    let path = l.home.db_file();
    path.exists()
        .then(|| Db::open(&path, l.cfg.memory.cache_kib).ok())
        .flatten()
        .map(Rc::new)
}

/// The record `status` and `mcp list` read, for one server as the manager sees it.
pub fn record_of(s: &ServerStatus, now: i64) -> McpRecord {
    use crate::mcp::ServerState::*;
    McpRecord {
        state: match s.state {
            Disabled => "disabled",
            Stopped => "stopped",
            Starting => "starting",
            Running => "running",
            Failed => "failed",
        }
        .to_string(),
        tools: s.tools as u64,
        restarts: s.restarts,
        at: now,
        error: s.last_error.clone().unwrap_or_default(),
    }
}

/// Record every server's state for `status` and `mcp list` (the gateway calls this with
/// its own record, and when a server's state changes). Unchanged records are not
/// written.
pub fn record_servers(db: &Db, mcp: &Mcp, now: i64) {
    for s in mcp.servers() {
        if let Err(e) = crate::status::write_mcp_record(db, &s.name, &record_of(&s, now)) {
            log::warn!("cannot record the MCP server {}'s state: {e}", s.name);
        }
    }
}

/// The secrets `cfg`'s servers are given from `env` (what their `${NAME}` references and
/// `env_from_secrets` read) and literal `env`/header values named like secrets: taught to
/// the scrubber before anything a server says is printed.
pub fn server_secrets(cfg: &Config, env: &Env) -> Vec<String> {
    use crate::config::mcp::{McpTransport, refs};
    let mut out = Vec::new();
    for s in &cfg.mcp.servers {
        let pairs = match &s.transport {
            McpTransport::Stdio { env, .. } => env,
            McpTransport::Http { headers, .. } => headers,
        };
        let mut names: Vec<&str> = s.env_from_secrets.iter().map(|(_, v)| v.as_str()).collect();
        for (k, v) in pairs {
            let r = refs(v).unwrap_or_default();
            if r.is_empty() && crate::migrate::mcp::secret_name(k) {
                out.push(v.clone());
            }
            names.extend(r);
        }
        out.extend(names.iter().filter_map(|n| env.get(n)));
    }
    out
}

/// The server named `name`, enabled; a usage error naming what to do otherwise.
fn enabled<'a>(cfg: &'a Config, name: &str) -> Result<&'a McpServerConfig, AppError> {
    match cfg.mcp.server(name) {
        Some(s) if s.enabled => Ok(s),
        Some(_) => Err(AppError::Usage(format!(
            "the MCP server {name:?} is disabled: set \"enabled\": true in its mcp.servers entry"
        ))),
        None => Err(AppError::Usage(format!(
            "there is no MCP server named {name:?}: yoctoclaw mcp list shows the configured ones"
        ))),
    }
}

/// An error of the manager as a command's error (exit 1; no server: exit 2).
fn failed(name: &str, e: McpError) -> AppError {
    match e {
        McpError::NoServer(_) => AppError::Usage(e.to_string()),
        e => AppError::Runtime(format!("{name}: {e}")),
    }
}

/// `yoctoclaw mcp list|tools|call`, printing to `out`.
pub fn command(l: &Loaded, cmd: McpSub, out: &mut dyn std::io::Write) -> Result<(), AppError> {
    let text = match cmd {
        McpSub::List(_) => (list(l), Ok(())),
        McpSub::Tools(t) => tools(l, t.server.as_deref()),
        McpSub::Call(c) => call(l, &c.server, &c.tool, c.arguments.as_deref()),
    };
    let (text, res) = text;
    out.write_all(text.as_bytes()).map_err(super::runtime)?;
    res
}

/// `mcp list`: from the config and the gateway's records; starts nothing.
fn list(l: &Loaded) -> String {
    let cfg = &l.cfg;
    if cfg.mcp.servers.is_empty() {
        return "No MCP servers configured: add them under mcp.servers in config.json \
                (README, MCP servers).\n"
            .into();
    }
    let db = existing_db(l);
    let sys_now = crate::time::clock::system_secs();
    let gateway = db
        .as_ref()
        .and_then(|db| read_gateway_record(db, sys_now).ok())
        .unwrap_or(Gateway::Never);
    let mcp = manager(cfg, &l.env, &l.home, db.clone());
    let mut s = String::new();
    let width = cfg
        .mcp
        .servers
        .iter()
        .map(|m| m.name.len())
        .max()
        .unwrap_or(4);
    for m in &cfg.mcp.servers {
        let record = db.as_ref().and_then(|db| read_mcp_record(db, &m.name));
        // The tool count: the list the manager knows (cached from the last run), else
        // the gateway's record.
        let known = mcp.tools(&m.name).len() as u64;
        let count = if known > 0 {
            known
        } else {
            record.as_ref().map_or(0, |r| r.tools)
        };
        let _ = writeln!(
            s,
            "{:<width$}  {:<5}  {:>3} tool(s)  {}",
            m.name,
            m.transport_name(),
            count,
            mcp_state_text(m.enabled, record.as_ref(), &gateway)
        );
    }
    s
}

/// The first line of `text`, cut to `MAX_DESCRIPTION_CHARS` characters.
pub fn first_line(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or("").trim();
    match line.char_indices().nth(MAX_DESCRIPTION_CHARS) {
        Some((i, _)) => [&line[..i], "…"].concat(),
        None => line.to_string(),
    }
}

/// `mcp tools [SERVER]`: (what to print on stdout, the command's outcome).
fn tools(l: &Loaded, only: Option<&str>) -> (String, Result<(), AppError>) {
    let cfg = &l.cfg;
    let names: Vec<&str> = match only {
        Some(n) => match enabled(cfg, n) {
            Ok(s) => vec![s.name.as_str()],
            Err(e) => return (String::new(), Err(e)),
        },
        None => cfg
            .mcp
            .servers
            .iter()
            .filter(|s| s.enabled)
            .map(|s| s.name.as_str())
            .collect(),
    };
    if names.is_empty() {
        let none = "No enabled MCP servers: add them under mcp.servers in config.json.\n";
        return (none.into(), Ok(()));
    }
    let mcp = manager(cfg, &l.env, &l.home, tools_db(l));
    let mut s = String::new();
    let mut failure = None;
    for name in names {
        let mut list = mcp.tools(name);
        if list.is_empty() {
            match smol::block_on(mcp.start(name)) {
                Ok(_) => list = mcp.tools(name),
                Err(e) => {
                    if only.is_none() {
                        let _ = writeln!(s, "{name}: {e}");
                    }
                    failure.get_or_insert(failed(name, e));
                    continue;
                }
            }
        }
        if list.is_empty() {
            let _ = writeln!(s, "{name}: no tools");
        }
        let pairs: Vec<(&str, &str)> = list.iter().map(|t| (name, t.name.as_str())).collect();
        let exposed = crate::mcp::names::exposed(&pairs, &crate::config::tool_rules::TOOL_NAMES);
        let width = exposed.iter().flatten().map(String::len).max().unwrap_or(0);
        for (t, exposed) in list.iter().zip(&exposed) {
            // A repeated declaration is offered once.
            let Some(exposed) = exposed else { continue };
            let _ = writeln!(s, "{exposed:<width$}  {}", first_line(&t.description));
        }
    }
    smol::block_on(mcp.shutdown());
    // With one server asked for, its failure is the command's; with several, the others'
    // tools are still printed and the status says one failed.
    let res = match failure {
        Some(e) if only.is_some() => Err(e),
        Some(_) => Err(AppError::Runtime(
            "an MCP server did not start: see its line above".into(),
        )),
        None => Ok(()),
    };
    (s, res)
}

/// `mcp call`: (what to print on stdout, the command's outcome).
fn call(
    l: &Loaded,
    server: &str,
    tool: &str,
    arguments: Option<&str>,
) -> (String, Result<(), AppError>) {
    let (cfg, env) = (&l.cfg, &l.env);
    let args = arguments.map(str::trim).unwrap_or("{}");
    if let Err(e) = enabled(cfg, server) {
        return (String::new(), Err(e));
    }
    let object = args.len() <= MAX_ARGUMENTS_BYTES
        && matches!(json::parse_value(args), Ok(Value::Object(_)));
    if !object {
        return (
            String::new(),
            Err(AppError::Usage(
                "the arguments must be one JSON object, e.g. '{\"message\": \"hi\"}'".into(),
            )),
        );
    }
    let mcp = manager(cfg, env, &l.home, tools_db(l));
    crate::security::scrub::install_secret_literals(server_secrets(cfg, env));
    let res = smol::block_on(mcp.call_tool(server, tool, args));
    smol::block_on(mcp.shutdown());
    match res {
        Err(e) => (String::new(), Err(failed(server, e))),
        Ok(result) => {
            let crate::mcp::content::Rendered { text, is_error } =
                crate::mcp::content::render(&result);
            // Scrubbed like every tool result: a server that echoes its environment
            // shows no secret.
            let text = crate::security::scrub::scrub(&text);
            let mut shown = crate::text::cap_text(&text, MAX_CALL_OUTPUT_BYTES);
            if !shown.ends_with('\n') {
                shown.push('\n');
            }
            let res = if is_error {
                Err(AppError::Runtime(format!(
                    "the tool {tool} of {server} answered with an error (printed above)"
                )))
            } else {
                Ok(())
            };
            (shown, res)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_show_their_first_line_cut() {
        assert_eq!(
            first_line("  Echoes back the input\nmore"),
            "Echoes back the input"
        );
        assert_eq!(
            first_line(&"é".repeat(150)).chars().count(),
            MAX_DESCRIPTION_CHARS + 1
        );
    }
}
