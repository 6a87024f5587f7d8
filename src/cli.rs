//! The command line: argument definitions, loading the config, dispatch, and the mapping
//! of every outcome to an exit status (0 success, 1 runtime failure, 2 bad usage or bad
//! configuration). Errors print as one `yoctoclaw: …` sentence on stderr.

use crate::agent::Agent;
use crate::config::{self, Config, ConfigError, Env, Home};
use crate::runtime::Workers;
use crate::store::Db;
use argh::FromArgs;
use std::fmt;
use std::path::PathBuf;
use std::rc::Rc;

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
    Migrate(MigrateCmd),
    Status(StatusCmd),
    Doctor(DoctorCmd),
    Version(VersionCmd),
}

#[derive(FromArgs, Debug)]
/// Create the home folder, config.json and the workspace files.
#[argh(subcommand, name = "onboard")]
pub struct OnboardCmd {
    /// overwrite existing files
    #[argh(switch)]
    pub force: bool,
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
/// Bring a peer's settings, keys, workspace, memories and cron jobs across.
#[argh(subcommand, name = "migrate")]
pub struct MigrateCmd {
    /// the peer: openclaw, picoclaw, nullclaw or zeroclaw
    #[argh(option)]
    pub from: String,
    /// the peer's home folder (default: ~/.openclaw, ~/.picoclaw ...)
    #[argh(option)]
    pub path: Option<PathBuf>,
    /// say what would be brought, write nothing
    #[argh(switch)]
    pub dry_run: bool,
    /// replace existing yoctoclaw files and secrets that differ
    #[argh(switch)]
    pub force: bool,
}

#[derive(FromArgs, Debug)]
/// Show what is configured and how it is doing.
#[argh(subcommand, name = "status")]
pub struct StatusCmd {}

#[derive(FromArgs, Debug)]
/// Check the setup and say what to fix.
#[argh(subcommand, name = "doctor")]
pub struct DoctorCmd {}

#[derive(FromArgs, Debug)]
/// Print the version.
#[argh(subcommand, name = "version")]
pub struct VersionCmd {}

/// A failure of a command, with its exit status.
#[derive(Debug)]
pub enum CliError {
    /// Bad usage (exit 2).
    Usage(String),
    /// Bad configuration (exit 2).
    Config(ConfigError),
    /// Anything that failed while running (exit 1).
    Runtime(String),
}

impl CliError {
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) | CliError::Config(_) => 2,
            CliError::Runtime(_) => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Runtime(m) => f.write_str(m),
            CliError::Config(e) => e.fmt(f),
        }
    }
}

impl From<ConfigError> for CliError {
    fn from(e: ConfigError) -> Self {
        CliError::Config(e)
    }
}

pub fn runtime(e: impl fmt::Display) -> CliError {
    CliError::Runtime(e.to_string())
}

pub fn version_text() -> String {
    format!(
        "yoctoclaw {} ({} {})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH,
        std::env::consts::OS
    )
}

/// Run with the process's arguments; returns the exit status.
pub fn main() -> i32 {
    let args: Vec<String> = std::env::args().collect();
    run(&args)
}

/// Run with the given arguments (`args[0]` is the program name).
pub fn run(args: &[String]) -> i32 {
    // Fast path: `--version` does nothing else.
    if args.len() == 2 && matches!(args[1].as_str(), "--version" | "-V" | "version") {
        println!("{}", version_text());
        return 0;
    }
    let name = args.first().map(String::as_str).unwrap_or("yoctoclaw");
    let rest: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let cli = match Cli::from_args(&[name], &rest) {
        Ok(c) => c,
        Err(early) => {
            return if early.status.is_ok() {
                print!("{}", early.output);
                0
            } else {
                eprint!("{}", early.output);
                eprintln!("Run yoctoclaw --help for usage.");
                2
            };
        }
    };
    if let Some(path) = &cli.log_file
        && let Err(e) = crate::logging::log_to_file(path, crate::logging::LOG_FILE_MAX_BYTES)
    {
        eprintln!(
            "yoctoclaw: cannot open the log file {}: {e}; logging to stderr",
            path.display()
        );
    }
    match dispatch(cli) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("yoctoclaw: {e}");
            e.exit_code()
        }
    }
}

/// Everything a command needs from the environment.
pub struct Loaded {
    pub home: Home,
    pub env: Env,
    pub cfg: Rc<Config>,
}

/// Resolve the home, read secrets.env and config.json, set up logging and the scrubber.
pub fn load(home_flag: Option<&std::path::Path>, quiet: bool) -> Result<Loaded, CliError> {
    let home = Home::resolve(home_flag)?;
    let secrets = config::load_secrets_file(&home.secrets_file())?;
    let env = Env::new(secrets);
    // The scrubber learns the secrets' values before anything can log them.
    crate::security::scrub::install_secret_literals(env.secret_file_values().map(str::to_string));
    // Logging comes up before the config so config warnings are seen.
    let rust_log = std::env::var("RUST_LOG").ok();
    let from_env = rust_log
        .as_deref()
        .and_then(crate::logging::level_from_rust_log);
    crate::logging::init(from_env.unwrap_or(log::LevelFilter::Warn));
    let cfg = config::load(&home, &env)?;
    let mut secret_names = vec![
        cfg.provider.api_key_env.clone(),
        cfg.telegram.token_env.clone(),
    ];
    secret_names.extend(cfg.fallbacks.iter().map(|f| f.api_key_env.clone()));
    crate::security::scrub::install_secret_literals(secret_names.iter().filter_map(|n| env.get(n)));
    let level = from_env.unwrap_or_else(|| {
        let configured =
            crate::logging::parse_level(&cfg.log_level).unwrap_or(log::LevelFilter::Info);
        if quiet {
            configured.min(log::LevelFilter::Warn)
        } else {
            configured
        }
    });
    crate::logging::init(level);
    Ok(Loaded {
        home,
        env,
        cfg: Rc::new(cfg),
    })
}

/// Open the database; the home must exist.
pub fn open_db(l: &Loaded) -> Result<Rc<Db>, CliError> {
    if !l.home.dir.is_dir() {
        return Err(CliError::Usage(format!(
            "no yoctoclaw home at {}: run yoctoclaw onboard first",
            l.home.dir.display()
        )));
    }
    Db::open(&l.home.db_file(), l.cfg.memory.cache_kib)
        .map(Rc::new)
        .map_err(runtime)
}

/// Build the agent (fails without a key for an https provider).
pub fn build_agent(l: &Loaded, db: Rc<Db>, workers: Workers) -> Result<Agent, CliError> {
    Agent::new(l.cfg.clone(), l.home.clone(), l.env.clone(), db, workers).map_err(runtime)
}

fn dispatch(cli: Cli) -> Result<(), CliError> {
    if cli.version {
        println!("{}", version_text());
        return Ok(());
    }
    let Some(cmd) = cli.cmd else {
        return Err(CliError::Usage(
            "no command given: try yoctoclaw onboard, then yoctoclaw agent (see --help)".into(),
        ));
    };
    let home = cli.home.as_deref();
    match cmd {
        Cmd::Version(_) => {
            println!("{}", version_text());
            Ok(())
        }
        Cmd::Onboard(o) => {
            let h = Home::resolve(home)?;
            let report = crate::onboard::run(&h, o.force).map_err(|e| {
                CliError::Runtime(format!("cannot create {}: {e}", h.dir.display()))
            })?;
            println!("{}", crate::onboard::summary(&h, &report));
            Ok(())
        }
        Cmd::Agent(a) => {
            let l = load(home, true)?;
            let db = open_db(&l)?;
            if let Err(e) =
                crate::memory::run_retention(&db, &l.cfg.memory, crate::runtime::now_secs())
            {
                log::warn!("memory retention failed: {e}");
            }
            let workers = Workers::start(1);
            let agent = build_agent(&l, db, workers)?;
            let session = crate::channels::terminal::session_id(&a.session);
            match a.message {
                Some(m) => {
                    if let Some(reply) =
                        crate::channels::terminal::handle_command(&agent, &session, &m)
                    {
                        println!("{reply}");
                        return Ok(());
                    }
                    smol::block_on(crate::channels::terminal::one_shot(&agent, &session, &m))
                        .map_err(runtime)
                }
                None => {
                    smol::block_on(crate::channels::terminal::interactive(&agent, &session));
                    Ok(())
                }
            }
        }
        Cmd::Status(_) => {
            let l = load(home, true)?;
            println!("{}", crate::status::report(&l));
            Ok(())
        }
        Cmd::Memory(m) => {
            let l = load(home, true)?;
            let db = open_db(&l)?;
            let mut out = std::io::stdout().lock();
            crate::memory::cli::run(&db, m.cmd, crate::runtime::now_secs(), &mut out)
        }
        Cmd::Gateway(_) => {
            let l = load(home, false)?;
            crate::gateway::run(&l)
        }
        Cmd::Heartbeat(_) => crate::scheduler::cli::heartbeat_command(home),
        Cmd::Cron(c) => crate::scheduler::cli::cron_command(home, c.cmd),
        Cmd::Serial(s) => {
            let l = load(home, false)?;
            crate::channels::serial::command(&l, &s.device, s.baud, s.echo)
        }
        Cmd::Doctor(_) => crate::doctor::command(home),
        Cmd::Migrate(m) => {
            let h = Home::resolve(home)?;
            let opts = crate::migrate::Options::new(m.dry_run, m.force);
            let mut out = std::io::stdout().lock();
            match crate::migrate::command(&h, &m.from, m.path.as_deref(), &opts, &mut out) {
                Ok(true) => Ok(()),
                Ok(false) => Err(CliError::Runtime(
                    "nothing was brought across: see the lines above".into(),
                )),
                Err(e) if e.is_usage() => Err(CliError::Usage(e.to_string())),
                Err(e) => Err(runtime(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, argh::EarlyExit> {
        Cli::from_args(&["yoctoclaw"], args)
    }

    #[test]
    fn commands_parse() {
        let c = parse(&["--home", "/tmp/x", "agent", "-m", "hi", "-s", "work"]).unwrap();
        match c.cmd {
            Some(Cmd::Agent(a)) => {
                assert_eq!(a.message.as_deref(), Some("hi"));
                assert_eq!(a.session, "work");
            }
            other => panic!("{other:?}"),
        }
        assert!(parse(&["cron", "add", "every 15m", "water plants", "--to", "stdout"]).is_ok());
        match parse(&["memory", "add", "k", "some", "text", "--category", "daily"])
            .unwrap()
            .cmd
        {
            Some(Cmd::Memory(MemoryCmd {
                cmd: MemorySub::Add(a),
            })) => {
                assert_eq!(a.text, ["some", "text"]);
                assert_eq!(a.category.as_deref(), Some("daily"));
            }
            other => panic!("{other:?}"),
        }
        assert!(parse(&["bogus"]).is_err());
    }

    #[test]
    fn bad_usage_exits_2_and_help_exits_0() {
        assert_eq!(run(&["yoctoclaw".into(), "bogus".into()]), 2);
        assert_eq!(run(&["yoctoclaw".into(), "--help".into()]), 0);
        assert_eq!(run(&["yoctoclaw".into(), "--version".into()]), 0);
        assert_eq!(run(&["yoctoclaw".into()]), 2);
    }
}
