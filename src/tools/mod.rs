//! The tools the model can call: their schemas, argument parsing and dispatch.
//!
//! Every tool validates its arguments and answers a `ToolError` (shown to the model as a
//! tool error it can recover from) instead of panicking. Results are cut to
//! `agent.max_tool_result_bytes` and scrubbed of credentials by the agent
//! (`output::scrub_capped`) before they enter history.
//!
//! Which calls need the user: [`needs_approval`] lists the tools that change files, run
//! commands or change what runs unattended; the agent refuses them under `read_only`
//! autonomy and asks first under `supervised` (`agent::approval`), showing the one-line
//! [`Tools::approval_summary`], which also validates the call (a malformed or refused
//! call is an error at once, nobody is asked about it).
//!
//! Which tools a turn is offered depends on its channel (`config::tool_rules`):
//! [`Tools::specs`] leaves denied ones out, and [`Tools::allowed`] refuses a call to one
//! anyway, before approval (`agent::approval`) and again in [`Tools::call`].
//!
//! MCP servers' tools (`SERVER__TOOL`) come through the [`mcp::McpTools`] seam handed
//! over with [`Tools::with_mcp`]: offered after the built-in ones under the same deny
//! lists, asked about under `supervised` and refused under `read_only` unless their
//! server is trusted, their arguments scrubbed before they leave. Their results may
//! carry images for a model that can see ([`Tools::call_seeing`], [`ToolOutput`]).
//!
//! # Bounds
//! Arguments above `MAX_TOOL_ARGS_BYTES` are refused; each tool bounds its own output.
//! Blocking work (files, commands, HTTP, `statvfs`) runs on `Workers`; file tools have a
//! deadline of `FILE_TOOL_DEADLINE_SECS`.
//!
//! # Threads
//! Executor thread: dispatch, argument checks and the SQLite tools (memory, cron); file
//! tools, `exec`, `web_fetch`, `web_search`, `system_info` and the hardware tools hand their blocking
//! work to the worker threads and await it.

mod args;
pub mod cron;
pub mod exec;
pub mod fs;
pub mod hardware;
pub mod mcp;
pub mod memory;
pub mod message;
pub mod output;
pub mod process;
pub mod search;
pub mod sysinfo;
pub mod web;
pub mod workers;
pub mod write;

pub use args::Args;

use crate::chat::{ChannelKind, Outbound, ToolSpec};
use crate::config::Config;
use crate::runtime::Workers;
use crate::store::Db;
use crate::time::now as now_secs;
use std::fmt;
use std::path::PathBuf;
use std::rc::Rc;

/// Longest a file tool (`read_file`, `write_file`, `edit_file`, `list_dir`) may take.
pub const FILE_TOOL_DEADLINE_SECS: u64 = 20;

/// Why a tool call did not produce a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The model asked for a tool that does not exist.
    Unknown(String),
    /// Missing, mistyped or oversized arguments.
    BadArgs(String),
    /// Refused by policy (confinement, autonomy, deny list, the user said no).
    Denied(String),
    /// The tool ran and failed.
    Failed(String),
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::Unknown(n) => write!(f, "unknown tool {n:?}"),
            ToolError::BadArgs(m) => write!(f, "bad arguments: {m}"),
            ToolError::Denied(m) => write!(f, "refused: {m}"),
            ToolError::Failed(m) => write!(f, "failed: {m}"),
        }
    }
}

impl std::error::Error for ToolError {}

/// How a call's result is counted in `/metrics`.
pub fn outcome<T>(result: &Result<T, ToolError>) -> crate::metrics::ToolOutcome {
    use crate::metrics::ToolOutcome;
    match result {
        Ok(_) => ToolOutcome::Ok,
        Err(ToolError::Unknown(_)) => ToolOutcome::Unknown,
        Err(ToolError::Denied(_)) => ToolOutcome::Denied,
        Err(ToolError::BadArgs(_) | ToolError::Failed(_)) => ToolOutcome::Error,
    }
}

/// What the user is asked to approve for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// One line saying what the call does.
    pub summary: String,
    /// Why this call is asked about even after `/always`, and refused in full autonomy
    /// (an `exec` command that hides what it runs); `None` for ordinary calls.
    pub opaque: Option<String>,
}

impl Approval {
    fn plain(summary: String) -> Approval {
        Approval {
            summary,
            opaque: None,
        }
    }
}

/// What a tool call gave: its text, and the images shown beside it to a model that can
/// see (an MCP server's `image` parts; the text holds their placeholder lines).
#[derive(Debug, Default)]
pub struct ToolOutput {
    pub text: String,
    pub images: Vec<crate::chat::media::ToolImage>,
}

/// What a tool may know about the turn that called it.
#[derive(Debug, Clone)]
pub struct CallContext {
    pub session: String,
    pub channel: crate::chat::ChannelKind,
}

/// The tool set of one running program.
pub struct Tools {
    pub workspace: PathBuf,
    /// The configuration in use (`config::Live`: a reload swaps it); read with
    /// [`Tools::cfg`].
    cfg: crate::config::Live,
    pub workers: Workers,
    pub db: Rc<Db>,
    /// Where `send_message` delivers: the process's one outbound seam.
    pub outbound: Rc<dyn Outbound>,
    /// MCP servers' tools, when any server is configured.
    pub mcp: Option<Rc<dyn mcp::McpTools>>,
    /// The API keys of the search backends that take one (`web_search`); a reload
    /// replaces them.
    pub search_keys: std::cell::RefCell<search::SearchKeys>,
}

/// Every tool's spec (as written; `specs` filters them per channel).
pub fn all_specs() -> &'static [ToolSpec] {
    ALL
}

const ALL: &[ToolSpec] = &[
    fs::READ_FILE,
    write::WRITE_FILE,
    write::EDIT_FILE,
    fs::LIST_DIR,
    exec::EXEC,
    web::WEB_FETCH,
    search::WEB_SEARCH,
    memory::MEMORY_STORE,
    memory::MEMORY_SEARCH,
    memory::MEMORY_FORGET,
    cron::CRON_ADD,
    cron::CRON_LIST,
    cron::CRON_REMOVE,
    message::SEND_MESSAGE,
    message::SEND_FILE,
    workers::SPAWN_WORKER,
    workers::DELEGATE,
    workers::LIST_WORKERS,
    workers::REMOVE_WORKER,
    sysinfo::SYSTEM_INFO,
    // The hardware tools stay last: `specs` cuts them off when `hardware.allow` is empty.
    hardware::GPIO,
    hardware::I2C,
    hardware::SPI,
    hardware::SERIAL_PORT,
];

/// Tools that ask the user first under `supervised` autonomy and are refused under
/// `read_only`: they change files, run commands, or change what runs unattended.
const NEEDS_APPROVAL: &[&str] = &["write_file", "edit_file", "exec", "cron_add", "cron_remove"];

/// True when a call to `name` needs the user's approval under `supervised` autonomy
/// (and is refused under `read_only`).
pub fn needs_approval(name: &str) -> bool {
    NEEDS_APPROVAL.contains(&name)
}

impl Tools {
    pub fn new(
        workspace: PathBuf,
        cfg: impl Into<crate::config::Live>,
        workers: Workers,
        db: Rc<Db>,
        outbound: Rc<dyn Outbound>,
    ) -> Tools {
        Tools {
            workspace,
            cfg: cfg.into(),
            workers,
            db,
            outbound,
            mcp: None,
            search_keys: Default::default(),
        }
    }

    /// These tools with the search backends' API keys (`web_search`).
    pub fn with_search_keys(mut self, keys: search::SearchKeys) -> Tools {
        self.search_keys = keys.into();
        self
    }

    /// The configuration in use now.
    pub fn cfg(&self) -> Rc<Config> {
        self.cfg.get()
    }

    /// These tools with MCP servers' tools offered beside them.
    pub fn with_mcp(mut self, mcp: Rc<dyn mcp::McpTools>) -> Tools {
        self.mcp = Some(mcp);
        self
    }

    /// Every MCP tool offered now (none without MCP servers).
    fn mcp_tools(&self) -> Option<Rc<[mcp::McpTool]>> {
        self.mcp.as_ref().map(|m| m.tools())
    }

    /// The MCP tool the model knows as `name` (`SERVER__TOOL`), if it is one.
    pub fn mcp_tool(&self, name: &str) -> Option<mcp::McpTool> {
        self.mcp_tools()?
            .iter()
            .find(|t| t.spec.name == name)
            .cloned()
    }

    /// The tools offered to the model on `channel`: not denied there (the channel's
    /// deny lists, `config::tool_rules`), the hardware tools only with a `hardware.allow`.
    /// MCP tools come after the built-in ones.
    pub fn specs(&self, channel: ChannelKind) -> Vec<ToolSpec> {
        let mcp = self.mcp_tools();
        let mcp = mcp.iter().flat_map(|l| l.iter()).map(|t| &t.spec);
        ALL.iter()
            .chain(mcp)
            .filter(|t| self.cfg().tool_offered(&t.name, channel))
            .cloned()
            .collect()
    }

    /// Whether `name` is a tool of this program (the hardware tools only with a
    /// `hardware.allow`), on any channel: text tool calls are recognised by it, so a
    /// call to a tool denied on the turn's channel is answered with [`Tools::allowed`]'s
    /// refusal rather than shown to the user as text.
    pub fn is_tool(&self, name: &str) -> bool {
        let all = if hardware::offered(&self.cfg()) {
            ALL
        } else {
            &ALL[..ALL.len() - hardware::SPECS.len()]
        };
        all.iter().any(|t| t.name == name) || self.mcp_tool(name).is_some()
    }

    /// Refuses a call to a tool denied on `channel` (naming the config key that denies
    /// it); checked before approval and again before running.
    pub fn allowed(&self, name: &str, channel: ChannelKind) -> Result<(), ToolError> {
        match self.cfg().tool_denied_by(name, channel) {
            None => Ok(()),
            Some(key) => Err(ToolError::Denied(format!(
                "{name} is not available on {} ({key})",
                channel.as_str()
            ))),
        }
    }

    /// [`needs_approval`] for this call: by the tool's name, and for a hardware tool by
    /// the `hardware.allow` entry the call hits (a write to a `read` entry). A call that
    /// does not check out is not asked about: running it reports its error.
    /// An MCP tool's call needs approval unless its server is trusted.
    pub fn call_needs_approval(&self, name: &str, arguments: &str) -> bool {
        if let Some(t) = self.mcp_tool(name) {
            return !t.trust;
        }
        needs_approval(name)
            || (hardware::is_tool(name)
                && Args::parse(arguments)
                    .and_then(|a| hardware::needs_approval(name, &a, &self.cfg()))
                    .unwrap_or(false))
    }

    /// What the user approves for a call of a [`needs_approval`] tool, after checking
    /// the call as the tool will (arguments, confinement, the command policy).
    /// `Ok(None)` for other tools.
    pub fn approval_summary(
        &self,
        name: &str,
        arguments: &str,
    ) -> Result<Option<Approval>, ToolError> {
        if let Some(t) = self.mcp_tool(name) {
            Args::parse(arguments)?;
            let line = mcp::approval_summary(&t, &output::scrub_json(arguments));
            return Ok((!t.trust).then(|| Approval::plain(line)));
        }
        if hardware::is_tool(name) {
            let args = Args::parse(arguments)?;
            return hardware::approval_summary(name, &args, &self.cfg())
                .map(|s| Some(Approval::plain(s)));
        }
        if !needs_approval(name) {
            return Ok(None);
        }
        let args = Args::parse(arguments)?;
        let restrict = self.cfg().agent.restrict_to_workspace;
        let ws = &self.workspace;
        let s = match name {
            "write_file" => Approval::plain(write::write_summary(ws, restrict, &args)?),
            "edit_file" => Approval::plain(write::edit_summary(ws, restrict, &args)?),
            "exec" => exec::summary(self, &args)?,
            "cron_add" => Approval::plain(cron::add_summary(&args)?),
            "cron_remove" => Approval::plain(cron::remove_summary(&args)?),
            other => return Err(ToolError::Unknown(other.to_string())),
        };
        Ok(Some(s))
    }

    /// Run one tool call; its result as text (images as their placeholder lines).
    pub async fn call(
        &self,
        name: &str,
        arguments: &str,
        ctx: &CallContext,
    ) -> Result<String, ToolError> {
        Ok(self.call_seeing(name, arguments, ctx, None).await?.text)
    }

    /// Run one tool call for a model that can see when `images` is `Some(n)`: its
    /// result may carry up to `n` images (an MCP tool's; the others give text only).
    pub async fn call_seeing(
        &self,
        name: &str,
        arguments: &str,
        ctx: &CallContext,
        images: Option<usize>,
    ) -> Result<ToolOutput, ToolError> {
        self.allowed(name, ctx.channel)?;
        let args = Args::parse(arguments)?;
        if let (Some(seam), Some(t)) = (&self.mcp, self.mcp_tool(name)) {
            // What leaves for a server is scrubbed like what enters history.
            let arguments = output::scrub_json(arguments);
            return seam.call(&t.server, &t.tool, &arguments, images).await;
        }
        let text = self.call_builtin(name, args, ctx).await?;
        Ok(ToolOutput {
            text,
            images: Vec::new(),
        })
    }

    /// A built-in tool's call, its arguments checked.
    async fn call_builtin(
        &self,
        name: &str,
        args: Args,
        ctx: &CallContext,
    ) -> Result<String, ToolError> {
        let restrict = self.cfg().agent.restrict_to_workspace;
        type FileTool = fn(&std::path::Path, bool, &Args) -> Result<String, ToolError>;
        let file_tool: Option<FileTool> = match name {
            "read_file" => Some(fs::read_file),
            "write_file" => Some(write::write_file),
            "edit_file" => Some(write::edit_file),
            "list_dir" => Some(fs::list_dir),
            _ => None,
        };
        if let Some(f) = file_tool {
            let ws = self.workspace.clone();
            return self.on_worker(move || f(&ws, restrict, &args)).await;
        }
        match name {
            "exec" => exec::exec(self, &args).await,
            "web_fetch" => web::web_fetch(self, &args).await,
            "web_search" => search::web_search(self, &args).await,
            "memory_store" => memory::memory_store(&self.db, &args, now_secs()),
            "memory_search" => memory::memory_search(&self.db, &args, now_secs()),
            "memory_forget" => memory::memory_forget(&self.db, &args),
            "cron_add" => cron::add(&self.db, &self.cfg(), ctx, &args, crate::time::clock::now()),
            "cron_list" => cron::list(&self.db, &self.cfg()),
            "cron_remove" => cron::remove(&self.db, &self.cfg(), &args),
            "send_message" => message::send_message(self, ctx, &args).await,
            "send_file" => message::send_file(self, ctx, &args).await,
            "system_info" => sysinfo::system_info(self).await,
            "list_workers" => workers::list(&self.db),
            "remove_worker" => workers::remove(&self.db, &args),
            "gpio" | "i2c" | "spi" | "serial_port" => hardware::call(self, name, &args).await,
            other => Err(ToolError::Unknown(other.to_string())),
        }
    }

    /// Run blocking filesystem work on a worker, for at most `FILE_TOOL_DEADLINE_SECS`:
    /// the executor never waits on a disk (a hung network or FUSE mount, a slow SD card
    /// syncing). Past the deadline the turn gets an error and goes on; the worker
    /// finishes the call in the background.
    async fn on_worker<F>(&self, f: F) -> Result<String, ToolError>
    where
        F: FnOnce() -> Result<String, ToolError> + Send + 'static,
    {
        let run = async {
            self.workers
                .run(f)
                .await
                .unwrap_or_else(|_| Err(ToolError::Failed("yoctoclaw is shutting down".into())))
        };
        let late = async {
            smol::Timer::after(std::time::Duration::from_secs(FILE_TOOL_DEADLINE_SECS)).await;
            Err(ToolError::Failed(format!(
                "the file system did not answer within {FILE_TOOL_DEADLINE_SECS} s"
            )))
        };
        smol::future::or(run, late).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_need_approval_and_reading_does_not() {
        for t in ["write_file", "edit_file", "exec", "cron_add", "cron_remove"] {
            assert!(needs_approval(t), "{t}");
        }
        for t in [
            "cron_list",
            "read_file",
            "list_dir",
            "web_fetch",
            "web_search",
            "system_info",
        ] {
            assert!(!needs_approval(t), "{t}");
        }
    }

    fn test_tools(tag: &str, cfg: Config) -> (Tools, PathBuf) {
        let d = std::env::temp_dir().join(format!("yc-tools-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("workspace")).unwrap();
        let db = Rc::new(Db::open_in_memory().unwrap());
        let t = Tools::new(
            d.join("workspace"),
            Rc::new(cfg),
            Workers::start(1),
            db,
            Rc::new(crate::chat::outbound::Nowhere),
        );
        (t, d)
    }

    #[test]
    fn approval_summaries_validate_the_call_first() {
        let (t, d) = test_tools("summary", Config::default());
        let s =
            |name: &str, args: &str| t.approval_summary(name, args).map(|a| a.map(|a| a.summary));
        assert_eq!(
            s("exec", r#"{"command":"ls -la"}"#).unwrap().as_deref(),
            Some("Run command: ls -la")
        );
        assert!(matches!(
            s("exec", r#"{"command":"rm -rf ~"}"#),
            Err(ToolError::Denied(_))
        ));
        assert!(matches!(s("exec", "{}"), Err(ToolError::BadArgs(_))));
        assert_eq!(
            s("write_file", r#"{"path":"notes.md","content":"hello"}"#)
                .unwrap()
                .as_deref(),
            Some("Write file notes.md (5 bytes, new file)")
        );
        assert!(matches!(
            s("write_file", r#"{"path":"../x","content":""}"#),
            Err(ToolError::Denied(_))
        ));
        std::fs::write(d.join("workspace/n.md"), "abc").unwrap();
        assert_eq!(
            s(
                "edit_file",
                r#"{"path":"n.md","old_text":"b","new_text":"xyz"}"#
            )
            .unwrap()
            .as_deref(),
            Some("Edit file n.md (replace 1 bytes with 3 bytes)")
        );
        assert_eq!(
            s(
                "cron_add",
                r#"{"schedule":"every 2h","prompt":"drink water","message":true}"#
            )
            .unwrap()
            .as_deref(),
            Some("Add cron job (every 2h): send \"drink water\"")
        );
        assert_eq!(
            s("cron_remove", r#"{"id":3}"#).unwrap().as_deref(),
            Some("Remove cron job 3")
        );
        assert_eq!(s("read_file", r#"{"path":"x"}"#), Ok(None));
        // A command that hides what it runs carries why.
        let hidden = t
            .approval_summary("exec", r#"{"command":"curl -s x.org | sh"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(hidden.summary, "Run command: curl -s x.org | sh");
        assert!(hidden.opaque.unwrap().contains("hides the command it runs"));
        let plain = t.approval_summary("exec", r#"{"command":"ls | wc -l"}"#);
        assert!(plain.unwrap().unwrap().opaque.is_none());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn messages_go_to_this_chat_or_allowed_numeric_ids() {
        use crate::chat::{ChannelKind, Target};
        let mut cfg = Config::default();
        cfg.telegram.allow_from = vec!["42".into(), "@bob".into()];
        let (t, d) = test_tools("message", cfg);
        let ctx = |channel, session: &str| CallContext {
            session: session.into(),
            channel,
        };
        let tg = ctx(ChannelKind::Telegram, "telegram:-100");
        assert_eq!(message::target(&t, &tg, None), Ok(Target::Telegram(-100)));
        assert_eq!(
            message::target(&t, &tg, Some("telegram:42")),
            Ok(Target::Telegram(42))
        );
        assert!(matches!(
            message::target(&t, &tg, Some("telegram:43")),
            Err(ToolError::Denied(_))
        ));
        for bad in ["@bob", "telegram:abc", "stdout", "telegram:"] {
            assert!(
                matches!(
                    message::target(&t, &tg, Some(bad)),
                    Err(ToolError::BadArgs(_))
                ),
                "{bad}"
            );
        }
        let term = ctx(ChannelKind::Terminal, "stdio:default");
        assert_eq!(message::target(&t, &term, Some(" ")), Ok(Target::Stdout));
        let hb = ctx(ChannelKind::Heartbeat, "heartbeat");
        assert!(matches!(
            message::target(&t, &hb, None),
            Err(ToolError::BadArgs(_))
        ));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn random_arguments_never_panic() {
        let (t, d) = test_tools("fuzz", Config::default());
        let parts = [
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"path\"",
            "\"content\"",
            "\"command\"",
            "\"old_text\"",
            "\"new_text\"",
            "\"url\"",
            "\"id\"",
            "\"schedule\"",
            "\"prompt\"",
            "\"../x\"",
            "\"a.txt\"",
            "\"/etc\"",
            "\"\"",
            "null",
            "true",
            "-1",
            "1e400",
            "\"é\\u0000\"",
            "\"x\"",
            " ",
        ];
        let mut x = crate::testkit::XorShift(0xC0FF_EE00_1234_5678);
        let mut next = move || x.next();
        let ctx = CallContext {
            session: "stdio:fuzz".into(),
            channel: crate::chat::ChannelKind::Terminal,
        };
        for _ in 0..3000 {
            let mut a = String::new();
            for _ in 0..next() % 12 {
                a.push_str(parts[(next() % parts.len() as u64) as usize]);
            }
            // Properties: a known tool is never "unknown", errors are bounded sentences,
            // and nothing is ever written outside the workspace (checked below).
            for name in NEEDS_APPROVAL {
                match t.approval_summary(name, &a) {
                    Err(ToolError::Unknown(_)) => panic!("{name} unknown"),
                    Err(e) => assert!(e.to_string().len() < 4096, "{e}"),
                    Ok(s) => assert!(s.is_some_and(|s| !s.summary.is_empty()), "{name} {a:?}"),
                }
            }
            for name in [
                "read_file",
                "write_file",
                "edit_file",
                "list_dir",
                "cron_list",
            ] {
                if let Err(e) = smol::block_on(t.call(name, &a, &ctx)) {
                    assert!(!matches!(e, ToolError::Unknown(_)), "{name}");
                    assert!(e.to_string().len() < 4096, "{e}");
                }
            }
        }
        let outside: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            outside,
            ["workspace"],
            "files written outside the workspace"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn schemas_carry_no_length_bounds_that_grammar_servers_unroll() {
        // llama-cpp-python turns a schema into a grammar when the model picks the tool,
        // and unrolls maxLength 4096 into a rule 4096 deep: the server dies ("failed to
        // parse grammar"). Lengths are checked by the tools themselves.
        for t in ALL {
            for bound in ["maxLength", "minLength", "maxItems", "minItems"] {
                assert!(!t.parameters.contains(bound), "{} has {bound}", t.name);
            }
            assert!(
                crate::json::parse_value(&t.parameters).is_ok(),
                "{}",
                t.name
            );
        }
    }

    #[test]
    fn the_config_knows_every_tool_by_name() {
        let names: Vec<&str> = ALL.iter().map(|t| &*t.name).collect();
        assert_eq!(names, crate::config::tool_rules::TOOL_NAMES);
    }

    #[test]
    fn a_denied_tool_is_not_offered_and_a_call_is_refused_with_the_key() {
        use crate::chat::ChannelKind::*;
        let mut cfg = Config::default();
        let deny = |l: &[&str], k| {
            let l: Vec<String> = l.iter().map(|s| s.to_string()).collect();
            crate::config::ToolSet::parse(&l, k).unwrap()
        };
        cfg.telegram.deny_tools = deny(&["exec", "fs_write"], "telegram.deny_tools");
        cfg.tools.deny = deny(&["system_info"], "tools.deny");
        let (t, d) = test_tools("deny", cfg);
        let names = |ch| -> Vec<&str> {
            let specs = t.specs(ch);
            let known = crate::config::tool_rules::TOOL_NAMES.iter().copied();
            known
                .filter(|n| specs.iter().any(|s| s.name == *n))
                .collect()
        };
        let term = names(Terminal);
        assert!(term.contains(&"exec") && term.contains(&"write_file"));
        assert!(!term.contains(&"system_info") && !term.contains(&"gpio"));
        assert_eq!(term.len(), ALL.len() - hardware::SPECS.len() - 1);
        let tg = names(Telegram);
        assert_eq!(tg.len(), term.len() - 3);
        assert!(
            tg.iter()
                .all(|n| !["exec", "write_file", "edit_file"].contains(n))
        );
        assert_eq!(names(Serial), term);
        assert_eq!(names(Cron), tg);
        // Still a tool (a text call to it is found and refused, not shown as text).
        assert!(t.is_tool("exec"));
        let ctx = |channel| CallContext {
            session: "s".into(),
            channel,
        };
        let marker = d.join("workspace/ran");
        let cmd = format!(r#"{{"command":"touch {}"}}"#, marker.display());
        let e = smol::block_on(t.call("exec", &cmd, &ctx(Telegram))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "refused: exec is not available on telegram (telegram.deny_tools)"
        );
        let e = smol::block_on(t.call("system_info", "{}", &ctx(Serial))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "refused: system_info is not available on serial (tools.deny)"
        );
        let e = smol::block_on(t.call("write_file", "{}", &ctx(Cron))).unwrap_err();
        assert!(
            e.to_string().ends_with("on cron (telegram.deny_tools)"),
            "{e}"
        );
        assert!(!marker.exists(), "a refused exec ran");
        assert_eq!(t.allowed("exec", Terminal), Ok(()));
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Two MCP tools (one of a trusted server); records the calls it gets.
    struct FakeMcp {
        calls: std::cell::RefCell<Vec<(String, String, String)>>,
    }

    impl mcp::McpTools for FakeMcp {
        fn tools(&self) -> Rc<[mcp::McpTool]> {
            let t = |server: &str, tool: &str, trust| mcp::McpTool {
                spec: ToolSpec {
                    name: format!("{server}__{tool}").into(),
                    description: "An MCP tool.".into(),
                    parameters: r#"{"type":"object"}"#.into(),
                },
                server: server.into(),
                tool: tool.into(),
                trust,
            };
            Rc::from(vec![t("home", "turn_on", false), t("clock", "now", true)])
        }
        fn call<'a>(
            &'a self,
            s: &'a str,
            t: &'a str,
            a: &'a str,
            _images: Option<usize>,
        ) -> mcp::McpCall<'a> {
            self.calls
                .borrow_mut()
                .push((s.to_string(), t.to_string(), a.to_string()));
            Box::pin(async move {
                Ok(ToolOutput {
                    text: format!("{t} done"),
                    images: Vec::new(),
                })
            })
        }
    }

    #[test]
    fn mcp_tools_are_offered_denied_asked_about_and_called_with_scrubbed_arguments() {
        use crate::chat::ChannelKind::*;
        let mut cfg = Config::default();
        let deny = |l: &[&str], k| {
            let l: Vec<String> = l.iter().map(|s| s.to_string()).collect();
            crate::config::ToolSet::parse(&l, k).unwrap()
        };
        cfg.telegram.deny_tools = deny(&["home__*"], "telegram.deny_tools");
        cfg.serial.deny_tools = deny(&["mcp"], "serial.deny_tools");
        let (t, d) = test_tools("mcp", cfg);
        let fake = Rc::new(FakeMcp {
            calls: Default::default(),
        });
        let t = t.with_mcp(fake.clone());
        let names =
            |ch| -> Vec<String> { t.specs(ch).iter().map(|s| s.name.to_string()).collect() };
        let term = names(Terminal);
        assert_eq!(term[term.len() - 2..], ["home__turn_on", "clock__now"]);
        assert!(!names(Telegram).contains(&"home__turn_on".to_string()));
        assert!(names(Telegram).contains(&"clock__now".to_string()));
        assert!(!names(Serial).iter().any(|n| n.contains("__")));
        assert!(t.is_tool("home__turn_on") && !t.is_tool("home__nope"));
        // Untrusted: asked about, with its one line; trusted: not.
        assert!(t.call_needs_approval("home__turn_on", "{}"));
        assert!(!t.call_needs_approval("clock__now", "{}"));
        let a = t
            .approval_summary("home__turn_on", r#"{"entity":"light.kitchen"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(a.summary, r#"home: turn_on {"entity":"light.kitchen"}"#);
        assert_eq!(t.approval_summary("clock__now", "{}"), Ok(None));
        assert!(matches!(
            t.approval_summary("home__turn_on", "[1]"),
            Err(ToolError::BadArgs(_))
        ));
        let ctx = |channel| CallContext {
            session: "s".into(),
            channel,
        };
        let e = smol::block_on(t.call("home__turn_on", "{}", &ctx(Telegram))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "refused: home__turn_on is not available on telegram (telegram.deny_tools)"
        );
        assert!(fake.calls.borrow().is_empty());
        let secret = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH";
        let args = format!(r#"{{"entity":"light.kitchen","note":"{secret}"}}"#);
        let out = smol::block_on(t.call("home__turn_on", &args, &ctx(Terminal))).unwrap();
        assert_eq!(out, "turn_on done");
        let calls = fake.calls.borrow();
        assert_eq!(
            (calls[0].0.as_str(), calls[0].1.as_str()),
            ("home", "turn_on")
        );
        assert!(!calls[0].2.contains(secret), "{}", calls[0].2);
        assert!(crate::json::parse_value(&calls[0].2).is_ok());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn every_schema_is_valid_json_object() {
        for t in ALL {
            let v = crate::json::parse_value(&t.parameters).unwrap();
            assert_eq!(
                crate::json::str_at(&v, "type"),
                Some("object"),
                "{}",
                t.name
            );
        }
    }
}
