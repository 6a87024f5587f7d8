//! The MCP manager (`yoctoclaw::mcp::Mcp`) driven on a smol `LocalExecutor` as the app
//! drives it (its `run` spawned beside the calls), against real servers over real pipes
//! and sockets: the official Python SDK's `MCPServer` over stdio
//! (tests/fixtures/mcp/stdio_server.py) and over Streamable HTTP
//! (tests/fixtures/mcp/http_server.py), and a hostile server without the SDK
//! (tests/fixtures/mcp/hostile.py, one mode per bad behaviour).
//!
//! The SDK tests skip loudly (`support::skipped`; a failure under `YOCTOCLAW_NO_SKIP=1`)
//! when `python3` or its `mcp` package is missing; `.ci/run` installs it. The hostile
//! server needs only `python3`.

mod support;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};
use support::{TempHome, skipped};
use yoctoclaw::config::{self, Env};
use yoctoclaw::mcp::{Mcp, McpError, ServerState, Timing};
use yoctoclaw::runtime::Workers;
use yoctoclaw::store::Db;

/// How long a test waits for anything that should happen soon.
const WAIT: Duration = Duration::from_secs(30);

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp")
        .join(name)
}

fn python_ok(what: &str, import: &str) -> bool {
    match Command::new("python3")
        .args(["-c", import])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => true,
        Ok(_) => {
            skipped(what, &format!("python3 cannot `{import}`: pip install mcp"));
            false
        }
        Err(_) => {
            skipped(what, "python3 is not installed");
            false
        }
    }
}

fn sdk(what: &str) -> bool {
    python_ok(what, "import mcp.server")
}

/// A test's home: its workspace exists, secrets given through `env`.
struct Rig {
    home: TempHome,
    env: Env,
}

impl Rig {
    fn new(tag: &str, secrets: &[(&str, &str)]) -> Rig {
        let home = TempHome::new(tag);
        std::fs::create_dir_all(home.workspace()).unwrap();
        let mut vars: Vec<(&str, &str)> = secrets.to_vec();
        let path = std::env::var("PATH").unwrap_or_default();
        let path: &'static str = Box::leak(path.into_boxed_str());
        vars.push(("PATH", path));
        Rig {
            home,
            env: Env::isolated(&vars),
        }
    }

    fn record(&self) -> PathBuf {
        self.home.dir.join("record.txt")
    }

    fn recorded(&self) -> String {
        std::fs::read_to_string(self.record()).unwrap_or_default()
    }

    fn db(&self) -> Rc<Db> {
        Rc::new(Db::open(&self.home.dir.join("yoctoclaw.db"), 1024).unwrap())
    }

    /// The manager for `servers` (the `mcp.servers` object's text).
    fn mcp(&self, servers: &str, db: Option<Rc<Db>>, timing: Timing) -> Rc<Mcp> {
        let text = format!(r#"{{"mcp": {{"servers": {servers}}}}}"#);
        let cfg = config::parse(Some(&text), Path::new("config.json"), &self.env)
            .unwrap_or_else(|e| panic!("config: {e}"));
        Mcp::with_timing(
            &cfg.mcp,
            &self.env,
            &self.home.workspace(),
            Workers::start(2),
            db,
            timing,
        )
    }

    /// The SDK stdio server's entry.
    fn sdk_entry(&self, extra: &str) -> String {
        format!(
            r#"{{"command": "python3", "args": [{:?}, {:?}]{extra}}}"#,
            fixture("stdio_server.py").to_string_lossy(),
            self.record().to_string_lossy()
        )
    }
}

/// Short durations for restart tests.
fn fast() -> Timing {
    Timing {
        backoff_base: Duration::from_millis(50),
        max_restarts: 5,
        restart_window: Duration::from_secs(30),
        stop_grace: Duration::from_millis(500),
        idle_unit: Duration::from_secs(60),
    }
}

/// Run `f` on a `LocalExecutor` with the manager's background work spawned beside it,
/// as the gateway does.
fn drive<T>(mcp: &Rc<Mcp>, f: impl Future<Output = T>) -> T {
    let ex = smol::LocalExecutor::new();
    let m = mcp.clone();
    ex.spawn(async move { m.run().await }).detach();
    smol::block_on(ex.run(f))
}

/// Wait (driving the manager) until `cond` holds; panics after `WAIT`.
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        smol::Timer::after(Duration::from_millis(20)).await;
    }
}

fn text_of(result: &miniserde::json::Value) -> String {
    yoctoclaw::app::mcp_cmd::result_text(result).0
}

/// Whether process `pid` exists (a zombie counts).
fn exists(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

fn started_pids(recorded: &str) -> Vec<u32> {
    recorded
        .lines()
        .filter_map(|l| l.strip_prefix("started "))
        .filter_map(|p| p.trim().parse().ok())
        .collect()
}

#[test]
fn sdk_server_over_stdio_lists_calls_and_gets_no_secret() {
    let what = "MCP over stdio against the official Python SDK";
    if !sdk(what) {
        return;
    }
    let rig = Rig::new(
        "mcp-sdk-stdio",
        &[
            ("YOCTOCLAW_API_KEY", "sk-own-key-never-given"),
            ("HA_TOKEN", "ha-secret-for-the-server"),
        ],
    );
    let servers = format!(
        r#"{{"py": {}}}"#,
        rig.sdk_entry(
            r#", "env": {"GREETING": "hello ${HA_TOKEN}"}, "env_from_secrets": ["TOKEN=HA_TOKEN"]"#
        )
    );
    let mcp = rig.mcp(&servers, Some(rig.db()), Timing::default());
    assert_eq!(mcp.servers()[0].state, ServerState::Stopped);
    let g0 = mcp.generation();
    drive(&mcp, async {
        let took = mcp.start("py").await.expect("start");
        assert!(took < WAIT);
        let names: Vec<String> = mcp.tools("py").into_iter().map(|t| t.name).collect();
        for t in ["add", "echo", "env", "slow", "crash", "grow", "chatty"] {
            assert!(names.contains(&t.to_string()), "{t} missing from {names:?}");
        }
        assert!(mcp.generation() > g0);
        let add = mcp
            .tools("py")
            .into_iter()
            .find(|t| t.name == "add")
            .unwrap();
        assert!(add.input_schema.contains("\"a\""), "{}", add.input_schema);
        assert_eq!(add.description, "Add two integers.");

        let r = mcp
            .call_tool("py", "add", r#"{"a": 2, "b": 40}"#)
            .await
            .unwrap();
        assert_eq!(text_of(&r), "42");
        // Concurrent calls are multiplexed by id.
        let (a, b) = futures_lite_join(
            mcp.call_tool("py", "echo", r#"{"text": "one"}"#),
            mcp.call_tool("py", "echo", r#"{"text": "two"}"#),
        )
        .await;
        assert_eq!(
            (text_of(&a.unwrap()), text_of(&b.unwrap())),
            ("one".into(), "two".into())
        );
        // Log notifications before the answer are accepted and dropped.
        let r = mcp.call_tool("py", "chatty", r#"{"n": 20}"#).await.unwrap();
        assert_eq!(text_of(&r), "done after 20 steps");

        let env = text_of(&mcp.call_tool("py", "env", "{}").await.unwrap());
        assert!(
            env.contains("GREETING=hello ha-secret-for-the-server"),
            "{env}"
        );
        assert!(env.contains("TOKEN=ha-secret-for-the-server"), "{env}");
        assert!(!env.contains("sk-own-key"), "{env}");
        // Nothing else of ours: what the launcher adds (python3 may be pyenv's shim, a
        // shell script) aside, every variable is one the entry or the base names.
        let names: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
        for n in &names {
            let launcher = n.starts_with("PYENV")
                || n.starts_with("_PYENV")
                || *n == "SHLVL"
                || *n == "PWD"
                || *n == "LC_CTYPE";
            assert!(
                launcher || ["PATH", "HOME", "LANG", "TERM", "GREETING", "TOKEN"].contains(n),
                "unexpected variable {n} in {names:?}"
            );
        }

        // An unknown tool is the server's error; arguments must be an object.
        match mcp.call_tool("py", "nope", "{}").await {
            Ok(r) => assert!(yoctoclaw::app::mcp_cmd::result_text(&r).1, "no isError"),
            Err(McpError::Rpc { .. }) => {}
            Err(e) => panic!("{e}"),
        }
        assert_eq!(
            mcp.call_tool("py", "add", "[1]").await.err(),
            Some(McpError::Arguments)
        );
        assert_eq!(
            mcp.call_tool("nobody", "add", "{}").await.err(),
            Some(McpError::NoServer("nobody".into()))
        );
        let s = &mcp.servers()[0];
        assert_eq!(
            (s.state, s.restarts, s.last_error.clone()),
            (ServerState::Running, 0, None)
        );
        mcp.shutdown().await;
    });
    let s = &mcp.servers()[0];
    assert_eq!(s.state, ServerState::Stopped);
    // Stopped: the tools stay known; the process is gone and reaped.
    assert!(mcp.tools("py").len() >= 7);
    for pid in started_pids(&rig.recorded()) {
        assert!(!exists(pid), "process {pid} is still there");
    }
}

/// Both futures to completion, polled together.
async fn futures_lite_join<A, B>(a: impl Future<Output = A>, b: impl Future<Output = B>) -> (A, B) {
    smol::future::zip(a, b).await
}
