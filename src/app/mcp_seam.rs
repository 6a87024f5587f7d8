//! The tools' MCP seam (`tools::mcp::McpTools`) implemented over the MCP manager, and
//! the one place a process that runs the agent builds its manager ([`start`]).
//!
//! A server whose tools are not known yet (its first run) is started once to learn
//! them ([`discover`]); afterwards the list kept in the store is offered while it is
//! stopped. The tool list is rebuilt (`mcp::offer`: names, bounds, schema clean-up, the servers'
//! allow/deny lists) only when the manager's `generation` changes, so each turn reads a
//! shared list. A call's result becomes text by `mcp::content`; `isError` and the
//! manager's errors become tool errors the model reads.
//!
//! # Bounds
//! One cached list (at most `MCP_MAX_TOOLS` tools, `MCP_MAX_OFFER_BYTES` of text).
//!
//! # Threads
//! Executor thread: the manager and the cache live there.

use crate::chat::ToolSpec;
use crate::config::Config;
use crate::config::mcp::McpStart;
use crate::config::tool_rules::TOOL_NAMES;
use crate::mcp::content::{Rendered, render};
use crate::mcp::{Mcp, ToolInfo, offer};
use crate::store::Db;
use crate::tools::ToolError;
use crate::tools::mcp::{McpCall, McpTool, McpTools};
use std::borrow::Cow;
use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

/// The MCP tools of one process, over its manager.
pub struct McpSeam {
    mcp: Rc<Mcp>,
    cfg: Rc<Config>,
    /// The list offered, and the manager's generation it was built for.
    cache: RefCell<Option<(u64, Rc<[McpTool]>)>>,
}

impl McpSeam {
    pub fn new(mcp: Rc<Mcp>, cfg: Rc<Config>) -> McpSeam {
        McpSeam {
            mcp,
            cfg,
            cache: RefCell::new(None),
        }
    }
}

impl McpTools for McpSeam {
    fn tools(&self) -> Rc<[McpTool]> {
        let generation = self.mcp.generation();
        if let Some((g, list)) = &*self.cache.borrow()
            && *g == generation
        {
            return list.clone();
        }
        let lists: Vec<(String, Vec<ToolInfo>)> = self
            .cfg
            .mcp
            .servers
            .iter()
            .filter(|s| s.enabled)
            .map(|s| (s.name.clone(), self.mcp.tools(&s.name)))
            .collect();
        let list: Rc<[McpTool]> = offer::offer(&self.cfg.mcp, &lists, &TOOL_NAMES)
            .into_iter()
            .map(|o| McpTool {
                spec: ToolSpec {
                    name: Cow::Owned(o.name),
                    description: Cow::Owned(o.description),
                    parameters: Cow::Owned(o.schema),
                },
                server: o.server,
                tool: o.tool,
                trust: o.trust,
            })
            .collect();
        *self.cache.borrow_mut() = Some((generation, list.clone()));
        list
    }

    fn call<'a>(&'a self, server: &'a str, tool: &'a str, arguments: &'a str) -> McpCall<'a> {
        Box::pin(async move {
            match self.mcp.call_tool(server, tool, arguments).await {
                Ok(result) => match render(&result) {
                    Rendered {
                        text,
                        is_error: false,
                    } => Ok(text),
                    Rendered { text, .. } => Err(ToolError::Failed(text)),
                },
                Err(e) => {
                    log::warn!("mcp: {server} {tool}: {e}");
                    Err(ToolError::Failed(e.to_string()))
                }
            }
        })
    }
}

/// The MCP manager of a process that runs the agent (tool lists kept in `db`), with its
/// servers' secrets taught to the scrubber; `None` when no server is enabled (nothing is
/// offered, nothing runs).
pub fn start(l: &super::Loaded, db: &Rc<Db>) -> Option<Rc<Mcp>> {
    if !l.cfg.mcp.servers.iter().any(|s| s.enabled) {
        return None;
    }
    crate::security::scrub::install_secret_literals(super::mcp_cmd::server_secrets(&l.cfg, &l.env));
    let db = Some(db.clone());
    Some(super::mcp_cmd::manager(&l.cfg, &l.env, &l.home, db))
}

/// [`start`] for a command that runs turns itself: the servers whose tools are not
/// known yet are started first ([`discover`]), so its turn is offered them.
pub fn start_now(l: &super::Loaded, db: &Rc<Db>) -> Option<Rc<Mcp>> {
    let mcp = start(l, db)?;
    block_on(Some(&mcp), discover(&mcp, &l.cfg));
    Some(mcp)
}

/// Start the enabled servers whose tools are not known yet (never run here, nothing
/// kept in the store): a `first_use` server is started on a call to one of its tools,
/// and the model calls only the tools it was offered. Once listed, the tools are kept,
/// and the server stops when idle.
pub async fn discover(mcp: &Mcp, cfg: &Config) {
    for s in cfg.mcp.servers.iter().filter(|s| s.enabled) {
        if s.start == McpStart::FirstUse && mcp.tools(&s.name).is_empty() {
            match mcp.start(&s.name).await {
                Ok(d) => log::info!(
                    "mcp {}: started to learn its tools ({} tool(s), {:.2} s)",
                    s.name,
                    mcp.tools(&s.name).len(),
                    d.as_secs_f64()
                ),
                Err(e) => log::warn!("mcp {}: {e}", s.name),
            }
        }
    }
}

/// Run `f` to its end with `mcp`'s background work (servers' output, pings, restarts,
/// idle stops) driven beside it. One `block_on` with or without a manager: each `f` is
/// compiled into the binary once.
pub fn block_on<T>(mcp: Option<&Rc<Mcp>>, f: impl Future<Output = T>) -> T {
    smol::block_on(smol::future::or(f, async {
        // `run` never ends; should it (or with no manager), `f` alone goes on.
        if let Some(m) = mcp {
            m.run().await;
        }
        smol::future::pending().await
    }))
}

/// Stop `mcp`'s servers (at the end of a command; the gateway awaits `shutdown` itself).
pub fn stop(mcp: Option<&Rc<Mcp>>) {
    if let Some(m) = mcp {
        smol::block_on(m.shutdown());
    }
}
