//! The command line's shape: every command, option and positional argument, as argh
//! types. Parsing only: `cli` turns these into calls of the composition root (`app`),
//! which passes the plain values down (the ripgrep way: parsing produces a value that is
//! handed down; nothing below reaches back up for it).
//!
//! # Bounds
//! argh takes what the shell gives; each command bounds its own inputs.
//!
//! # Threads
//! Main thread, before anything starts.

use argh::FromArgs;
use std::path::PathBuf;

#[derive(FromArgs, Debug)]
/// yoctoclaw: a personal AI assistant for small Linux boards.
pub struct Cli {
    /// home folder (default: $YOCTOCLAW_HOME, else ~/.yoctoclaw)
    #[argh(option)]
    pub home: Option<PathBuf>,
    /// print the version and exit
    #[argh(switch, short = 'V')]
    pub version: bool,
    /// write logs to this file instead of stderr, rotated at 1 MiB to FILE.1
    #[argh(option)]
    pub log_file: Option<PathBuf>,
    #[argh(subcommand)]
    pub cmd: Option<Cmd>,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum Cmd {
    Onboard(OnboardCmd),
    Agent(AgentCmd),
    Gateway(GatewayCmd),
    Serial(SerialCmd),
    Heartbeat(HeartbeatCmd),
    Cron(CronCmd),
    Memory(MemoryCmd),
    Audit(AuditCmd),
    Workers(WorkersCmd),
    Migrate(MigrateCmd),
    Status(StatusCmd),
    Reload(ReloadCmd),
    Doctor(DoctorCmd),
    Hw(HwCmd),
    Mcp(McpCmd),
    Service(ServiceCmd),
    Update(UpdateCmd),
    Version(VersionCmd),
}

#[derive(FromArgs, Debug)]
/// Show the audit trail: every tool call, its verdict and how it went (newest last).
#[argh(subcommand, name = "audit")]
pub struct AuditCmd {
    /// only calls since then: a duration back from now (30m, 12h, 7d) or a UTC date or
    /// time (2026-03-01, 2026-03-01T14:00)
    #[argh(option)]
    pub since: Option<String>,
    /// only calls of this tool (an MCP tool as SERVER__TOOL)
    #[argh(option)]
    pub tool: Option<String>,
    /// only calls on this channel (terminal, telegram, serial, http, heartbeat, cron)
    #[argh(option)]
    pub channel: Option<String>,
    /// show at most this many, the newest (default 50, at most 1000)
    #[argh(option)]
    pub limit: Option<usize>,
}

#[derive(FromArgs, Debug)]
/// List the saved workers, or `remove NAME` one.
#[argh(subcommand, name = "workers")]
pub struct WorkersCmd {
    #[argh(positional)]
    pub words: Vec<String>,
}

#[derive(FromArgs, Debug)]
/// Create the home folder, config.json and the workspace files.
#[argh(subcommand, name = "onboard")]
pub struct OnboardCmd {
    /// overwrite existing files
    #[argh(switch)]
    pub force: bool,
    /// add the pinout skill of a board: raspberry-pi, orange-pi-zero3, milkv-duo or
    /// licheerv-nano
    #[argh(option)]
    pub board: Option<String>,
}

#[derive(FromArgs, Debug)]
/// Chat on the terminal; with -m, one turn printed on stdout.
#[argh(subcommand, name = "agent")]
pub struct AgentCmd {
    /// one message: print the reply and exit
    #[argh(option, short = 'm')]
    pub message: Option<String>,
    /// session name (default: "default")
    #[argh(option, short = 's', default = "String::from(\"default\")")]
    pub session: String,
}

#[derive(FromArgs, Debug)]
/// Run the daemon: Telegram long-poll, cron and heartbeat.
#[argh(subcommand, name = "gateway")]
pub struct GatewayCmd {}

#[derive(FromArgs, Debug)]
/// Chat over a serial line.
#[argh(subcommand, name = "serial")]
pub struct SerialCmd {
    /// serial device, e.g. /dev/ttyS0
    #[argh(option)]
    pub device: String,
    /// baud rate (default 115200)
    #[argh(option, default = "115200")]
    pub baud: u32,
    /// echo typed characters back
    #[argh(switch)]
    pub echo: bool,
}

#[derive(FromArgs, Debug)]
/// One heartbeat check-in now, then exit.
#[argh(subcommand, name = "heartbeat")]
pub struct HeartbeatCmd {}

#[derive(FromArgs, Debug)]
/// Scheduled jobs: list, add, remove, run.
#[argh(subcommand, name = "cron")]
pub struct CronCmd {
    #[argh(subcommand)]
    pub cmd: CronSub,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum CronSub {
    List(CronList),
    Add(CronAdd),
    Remove(CronRemove),
    Run(CronRun),
}

#[derive(FromArgs, Debug)]
/// List jobs with their next run.
#[argh(subcommand, name = "list")]
pub struct CronList {}

#[derive(FromArgs, Debug)]
/// Add a job: SCHEDULE TEXT (cron expression, "every 15m", or "at 2026-12-01T09:00").
#[argh(subcommand, name = "add")]
pub struct CronAdd {
    #[argh(positional)]
    pub schedule: String,
    #[argh(positional)]
    pub text: String,
    /// delivery target: telegram:<chat_id>, stdout, or empty
    #[argh(option)]
    pub to: Option<String>,
    /// send TEXT as is instead of running it through the agent
    #[argh(switch)]
    pub message: bool,
}

#[derive(FromArgs, Debug)]
/// Remove a job.
#[argh(subcommand, name = "remove")]
pub struct CronRemove {
    #[argh(positional)]
    pub id: i64,
}

#[derive(FromArgs, Debug)]
/// Run a job now.
#[argh(subcommand, name = "run")]
pub struct CronRun {
    #[argh(positional)]
    pub id: i64,
}

#[derive(FromArgs, Debug)]
/// Long-term memory: search, list, add, forget, export, import.
#[argh(subcommand, name = "memory")]
pub struct MemoryCmd {
    #[argh(subcommand)]
    pub cmd: MemorySub,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum MemorySub {
    Search(MemSearch),
    List(MemList),
    Add(MemAdd),
    Forget(MemForget),
    Export(MemExport),
    Import(MemImport),
}

#[derive(FromArgs, Debug)]
/// Search memories.
#[argh(subcommand, name = "search")]
pub struct MemSearch {
    #[argh(positional)]
    pub query: Vec<String>,
    /// most results (default 10)
    #[argh(option, default = "10")]
    pub limit: u32,
}

#[derive(FromArgs, Debug)]
/// List memories.
#[argh(subcommand, name = "list")]
pub struct MemList {
    /// only this category
    #[argh(option)]
    pub category: Option<String>,
}

#[derive(FromArgs, Debug)]
/// Add or update a memory.
#[argh(subcommand, name = "add")]
pub struct MemAdd {
    #[argh(positional)]
    pub key: String,
    #[argh(positional)]
    pub text: Vec<String>,
    /// core, daily, conversation or custom (default core)
    #[argh(option)]
    pub category: Option<String>,
}

#[derive(FromArgs, Debug)]
/// Forget a memory.
#[argh(subcommand, name = "forget")]
pub struct MemForget {
    #[argh(positional)]
    pub key: String,
}

#[derive(FromArgs, Debug)]
/// Export all memories as JSON lines on stdout.
#[argh(subcommand, name = "export")]
pub struct MemExport {}

#[derive(FromArgs, Debug)]
/// Import memories from JSON lines or markdown.
#[argh(subcommand, name = "import")]
pub struct MemImport {
    #[argh(positional)]
    pub file: PathBuf,
}

#[derive(FromArgs, Debug)]
/// Bring another assistant's home across.
#[argh(subcommand, name = "migrate")]
pub struct MigrateCmd {
    /// openclaw, picoclaw, nullclaw or zeroclaw
    #[argh(option)]
    pub from: String,
    /// the peer's home (default: ~/.<peer>)
    #[argh(option)]
    pub path: Option<PathBuf>,
    /// say what would come, write nothing
    #[argh(switch)]
    pub dry_run: bool,
    /// replace yoctoclaw files and secrets that differ
    #[argh(switch)]
    pub force: bool,
}

#[derive(FromArgs, Debug)]
/// Show what is configured and how it is doing.
#[argh(subcommand, name = "status")]
pub struct StatusCmd {}

#[derive(FromArgs, Debug)]
/// Make the running gateway read config.json and secrets.env again, and say what it did.
#[argh(subcommand, name = "reload")]
pub struct ReloadCmd {}

#[derive(FromArgs, Debug)]
/// Check the setup and say what to fix.
#[argh(subcommand, name = "doctor")]
pub struct DoctorCmd {
    /// also ask the model to call a tool and say which provider.tool_mode fits it
    #[argh(switch)]
    pub deep: bool,
}

#[derive(FromArgs, Debug)]
/// One hardware tool call without a model: TOOL JSON [--yes] (gpio, i2c, spi,
/// serial_port), checked against hardware.allow like the model's calls.
#[argh(subcommand, name = "hw")]
pub struct HwCmd {
    #[argh(positional, greedy)]
    pub words: Vec<String>,
}

#[derive(FromArgs, Debug)]
/// Run the gateway at boot (systemd, OpenRC, BusyBox init, SysV): ACTION is install,
/// uninstall or status, then --system or --user (a systemd user unit, no root needed),
/// --dry-run (print, change nothing), --root DIR (an image or test tree instead of /).
/// Writes files and prints the commands that start it; runs nothing.
#[argh(subcommand, name = "service")]
pub struct ServiceCmd {
    /// ACTION and options, in that order (see above)
    #[argh(positional, greedy)]
    pub args: Vec<String>,
}

#[derive(FromArgs, Debug)]
/// Install a newer release for this board from update.url (its SHA-256 and minisign
/// signature checked), restart the service and roll back when the new gateway does not
/// confirm its start within update.confirm_secs.
#[argh(subcommand, name = "update")]
pub struct UpdateCmd {
    /// only say whether a newer release exists
    #[argh(switch)]
    pub check: bool,
    /// put the previous version (yoctoclaw.prev) back and restart the service
    #[argh(switch)]
    pub rollback: bool,
    /// install this local archive (with FILE.minisig beside it) instead of downloading
    #[argh(option)]
    pub from: Option<PathBuf>,
    /// where the service files are (an image or test tree instead of /)
    #[argh(option, default = "PathBuf::from(\"/\")")]
    pub root: PathBuf,
}

#[derive(FromArgs, Debug)]
/// MCP servers by hand: list them, list a server's tools, call one tool.
#[argh(subcommand, name = "mcp")]
pub struct McpCmd {
    #[argh(subcommand)]
    pub cmd: McpSub,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
pub enum McpSub {
    List(McpList),
    Tools(McpTools),
    Call(McpCall),
}

#[derive(FromArgs, Debug)]
/// Each server: state, transport, tool count, last error (starts nothing).
#[argh(subcommand, name = "list")]
pub struct McpList {}

#[derive(FromArgs, Debug)]
/// The tools of SERVER (default: every enabled server), starting it when its list is
/// not known yet.
#[argh(subcommand, name = "tools")]
pub struct McpTools {
    #[argh(positional)]
    pub server: Option<String>,
}

#[derive(FromArgs, Debug)]
/// Call TOOL of SERVER with ARGUMENTS (a JSON object, default {}) and print the result.
#[argh(subcommand, name = "call")]
pub struct McpCall {
    #[argh(positional)]
    pub server: String,
    #[argh(positional)]
    pub tool: String,
    #[argh(positional)]
    pub arguments: Option<String>,
}

#[derive(FromArgs, Debug)]
/// Print the version.
#[argh(subcommand, name = "version")]
pub struct VersionCmd {}
