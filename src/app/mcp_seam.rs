//! The tools' MCP seam (`tools::mcp::McpTools`) implemented over the MCP manager, and
//! the one place a process that runs the agent builds its manager ([`start`]).
//!
//! A server whose tools are not known yet (its first run) is started once to learn
//! them ([`discover`]); afterwards the list kept in the store is offered while it is
//! stopped. The tool list is rebuilt (`mcp::offer`: names, bounds, schema clean-up, the servers'
//! allow/deny lists) only when the manager's `generation` changes, so each turn reads a
//! shared list. A call's result becomes text by `mcp::content`; `isError` and the
//! manager's errors become tool errors the model reads. For a model that can see, the
//! result's images (decoded and checked by `mcp::content::render_seeing`) are written
//! to the spool folder on a worker and handed back as `ToolImage`s, each removed when
//! the round that shows it is over (docs/DECISIONS.md, "MCP results' images reach a
//! vision model").
//!
//! # Bounds
//! One cached list (at most `MCP_MAX_TOOLS` tools, `MCP_MAX_OFFER_BYTES` of text). Images:
//! at most `MCP_MAX_IMAGES_PER_RESULT` files of at most `MCP_MAX_IMAGE_BYTES` per call.
//!
//! # Threads
//! Executor thread: the manager and the cache live there; image files are written on
//! a worker (`runtime::Workers`).

use crate::chat::ToolSpec;
use crate::chat::media::ToolImage;
use crate::config::Config;
use crate::config::mcp::McpStart;
use crate::config::tool_rules::TOOL_NAMES;
use crate::mcp::content::{Decoded, Rendered, render, render_seeing};
use crate::mcp::{Mcp, ToolInfo, offer};
use crate::runtime::Workers;
use crate::store::Db;
use crate::tools::mcp::{McpCall, McpTool, McpTools};
use crate::tools::{ToolError, ToolOutput};
use std::borrow::Cow;
use std::cell::RefCell;
use std::future::Future;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The MCP tools of one process, over its manager.
pub struct McpSeam {
    mcp: Rc<Mcp>,
    cfg: Rc<Config>,
    /// The list offered, and the manager's generation it was built for.
    cache: RefCell<Option<(u64, Rc<[McpTool]>)>>,
    /// Where results' images are written, and the workers that write them.
    spool: PathBuf,
    workers: Workers,
}

impl McpSeam {
    /// The seam over `mcp`; images of results go to files in `spool`, written on
    /// `workers`.
    pub fn new(mcp: Rc<Mcp>, cfg: Rc<Config>, spool: PathBuf, workers: Workers) -> McpSeam {
        McpSeam {
            mcp,
            cfg,
            cache: RefCell::new(None),
            spool,
            workers,
        }
    }

    /// `images` written to spool files on a worker, in order; how many could not be.
    async fn spool(&self, images: Vec<Decoded>) -> (Vec<ToolImage>, usize) {
        if images.is_empty() {
            return (Vec::new(), 0);
        }
        let (dir, n) = (self.spool.clone(), images.len());
        let written = self.workers.run(move || write_images(&dir, images)).await;
        let written = written.unwrap_or_default();
        let failed = n - written.len();
        (written, failed)
    }
}

/// Numbers the image files of this process.
static SEQ: AtomicU64 = AtomicU64::new(0);

/// Each image in a file `<pid>-mcp-<n>.<ext>` of `dir` (a failed write leaves nothing
/// behind and is logged). Blocks: on a worker.
fn write_images(dir: &std::path::Path, images: Vec<Decoded>) -> Vec<ToolImage> {
    if let Err(e) = std::fs::create_dir_all(dir) {
        log::warn!(
            "mcp: cannot make the spool folder for an image: {}",
            e.kind()
        );
        return Vec::new();
    }
    let mut out = Vec::with_capacity(images.len());
    for img in images {
        let ext = img.mime.strip_prefix("image/").unwrap_or("img");
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{}-mcp-{n}.{ext}", std::process::id()));
        let len = img.bytes.len() as u64;
        // Adopted first: a failed write removes what it left (and a file of the same
        // name a crashed process of the same pid left is replaced).
        let file = ToolImage::adopt(path, img.mime, len);
        match std::fs::write(file.path(), &img.bytes) {
            Ok(()) => out.push(file),
            Err(e) => log::warn!("mcp: cannot write an image to the spool: {}", e.kind()),
        }
    }
    out
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

    fn call<'a>(
        &'a self,
        server: &'a str,
        tool: &'a str,
        arguments: &'a str,
        images: Option<usize>,
    ) -> McpCall<'a> {
        Box::pin(async move {
            let result = match self.mcp.call_tool(server, tool, arguments).await {
                Ok(result) => result,
                Err(e) => {
                    log::warn!("mcp: {server} {tool}: {e}");
                    return Err(ToolError::Failed(e.to_string()));
                }
            };
            let (rendered, decoded) = match images {
                Some(room) => render_seeing(&result, room),
                None => (render(&result), Vec::new()),
            };
            // The message (with its base64) goes before the files are written.
            drop(result);
            let Rendered { mut text, is_error } = rendered;
            if is_error {
                return Err(ToolError::Failed(text));
            }
            let (images, failed) = self.spool(decoded).await;
            if failed > 0 {
                text.push_str(&format!(
                    "\n[{failed} image(s) of this result not shown: they could not be saved for the request]"
                ));
            }
            Ok(ToolOutput { text, images })
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
/// idle stops) driven beside it.
pub fn block_on<T>(mcp: Option<&Rc<Mcp>>, f: impl Future<Output = T>) -> T {
    match mcp {
        Some(m) => smol::block_on(smol::future::or(f, async {
            // `run` never ends; should it, `f` alone goes on.
            m.run().await;
            smol::future::pending().await
        })),
        None => smol::block_on(f),
    }
}

/// Stop `mcp`'s servers (at the end of a command; the gateway awaits `shutdown` itself).
pub fn stop(mcp: Option<&Rc<Mcp>>) {
    if let Some(m) = mcp {
        smol::block_on(m.shutdown());
    }
}
