//! The command line: parse the arguments (`args`), call the composition root (`app`) or
//! the operator commands (`doctor`, `status`, `onboard`, `migrate`, `service`), and map
//! every outcome to an exit status (0 success, 1 runtime failure, 2 bad usage or bad
//! configuration). Errors print as one `yoctoclaw: …` sentence on stderr.
//!
//! # Threads
//! Main thread; each command says what it starts.

use crate::app::{self, AppError, commands, open_db, version_text};
use crate::args::{Cli, Cmd};
use crate::config::Home;
use argh::FromArgs;

/// Run with the process's arguments; returns the exit status.
///
/// # Safety
/// Call it from the main thread before any other thread that reads or changes the
/// environment exists: the commands that load a home wipe the secrets out of the
/// environment block in place (`app::load`).
pub unsafe fn main() -> i32 {
    let args: Vec<String> = std::env::args().collect();
    // SAFETY: this function's own contract.
    unsafe { run(&args) }
}

/// Run with the given arguments (`args[0]` is the program name).
///
/// # Safety
/// As [`main`].
pub unsafe fn run(args: &[String]) -> i32 {
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
    // SAFETY: this function's own contract.
    match unsafe { dispatch(cli) } {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("yoctoclaw: {e}");
            e.exit_code()
        }
    }
}

/// # Safety
/// As [`main`].
unsafe fn dispatch(cli: Cli) -> Result<(), AppError> {
    // SAFETY: passed on from this function's contract (no other thread touches the
    // environment while a command loads its home).
    let load = |home, quiet| unsafe { app::load(home, quiet) };
    if cli.version {
        println!("{}", version_text());
        return Ok(());
    }
    let Some(cmd) = cli.cmd else {
        return Err(AppError::Usage(
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
            let pinout = match o.board.as_deref() {
                Some(b) => Some(crate::onboard::board_skill(b).map_err(AppError::Usage)?),
                None => None,
            };
            let report = crate::onboard::run(&h, o.force, pinout).map_err(|e| {
                AppError::Runtime(format!("cannot create {}: {e}", h.dir.display()))
            })?;
            println!("{}", crate::onboard::summary(&h, &report));
            Ok(())
        }
        Cmd::Agent(a) => commands::agent_command(&load(home, true)?, &a.session, a.message),
        Cmd::Status(_) => {
            let l = load(home, true)?;
            println!("{}", crate::status::report(&l.home, &l.env, &l.cfg));
            Ok(())
        }
        // Not `load`: a broken config.json is the gateway's to judge (and report).
        Cmd::Reload(_) => {
            println!("{}", app::reload::command(&Home::resolve(home)?)?);
            Ok(())
        }
        // The commands that read and write the store, and print to stdout.
        Cmd::Memory(_) | Cmd::Audit(_) | Cmd::Workers(_) => {
            let db = open_db(&load(home, true)?)?;
            let out = &mut std::io::stdout().lock();
            let now = crate::time::now();
            match cmd {
                Cmd::Memory(m) => app::memory_cmd::run(&db, m.cmd, now, out),
                Cmd::Audit(a) => app::audit_cmd::run(&db, &a, now, out),
                Cmd::Workers(w) => app::workers_cmd::run(&db, &w.words, out),
                // Not reached: the arm names these three.
                _ => Ok(()),
            }
        }
        Cmd::Gateway(_) => app::gateway::run(&load(home, false)?),
        // Not quiet: this runs from a crontab, and its log is its output.
        Cmd::Heartbeat(_) => commands::heartbeat_command(&load(home, false)?),
        Cmd::Cron(c) => commands::cron_command(&load(home, true)?, c.cmd),
        Cmd::Serial(s) => commands::serial_command(&load(home, false)?, &s.device, s.baud, s.echo),
        Cmd::Doctor(d) => crate::doctor::command(home, d.deep),
        Cmd::Hw(h) => {
            let l = load(home, true)?;
            let out = crate::tools::hardware::run_cli(&l.cfg, &h.words).map_err(|e| match e {
                crate::tools::ToolError::BadArgs(m) => AppError::Usage(m),
                other => AppError::Runtime(other.to_string()),
            })?;
            println!("{out}");
            Ok(())
        }
        Cmd::Mcp(m) => {
            let l = load(home, true)?;
            let mut out = std::io::stdout().lock();
            app::mcp_cmd::command(&l, m.cmd, &mut out)
        }
        Cmd::Migrate(m) => {
            let h = Home::resolve(home)?;
            let opts = crate::migrate::Options::new(m.dry_run, m.force);
            match crate::migrate::command(&h, &m.from, m.path.as_deref(), &opts) {
                Ok(true) => Ok(()),
                Ok(false) => Err(AppError::Runtime(
                    "nothing was brought across: see the lines above".into(),
                )),
                Err(e) if e.is_usage() => Err(AppError::Usage(e.to_string())),
                Err(e) => Err(AppError::Runtime(e.to_string())),
            }
        }
        Cmd::Update(u) => {
            // Under sudo (the binary's folder is root's), the service's home, as
            // `service install` found it.
            let h = crate::service::home_of(std::path::Path::new("/"), home)
                .map_err(|e| AppError::Usage(e.to_string()))?;
            let l = load(Some(&h.dir), true)?;
            match crate::update::command(&l.home, &l.cfg, &u) {
                Ok(out) => {
                    println!("{out}");
                    Ok(())
                }
                Err(e) if e.is_usage() => Err(AppError::Usage(e.to_string())),
                Err(e) => Err(AppError::Runtime(e.to_string())),
            }
        }
        Cmd::Service(s) => match crate::service::command(&s, home) {
            Ok(out) => {
                println!("{out}");
                Ok(())
            }
            Err(e @ crate::service::ServiceError::Usage(_)) => Err(AppError::Usage(e.to_string())),
            Err(e) => Err(AppError::Runtime(e.to_string())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{MemoryCmd, MemorySub};

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
        // SAFETY: none of these reaches a command that loads a home, so nothing touches
        // the environment while the test harness's other threads run.
        let run = |a: &[&str]| unsafe { run(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>()) };
        assert_eq!(run(&["yoctoclaw", "bogus"]), 2);
        assert_eq!(run(&["yoctoclaw", "--help"]), 0);
        assert_eq!(run(&["yoctoclaw", "--version"]), 0);
        assert_eq!(run(&["yoctoclaw"]), 2);
    }
}
