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
    yoctoclaw::mcp::content::render(result).text
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
            Ok(r) => assert!(yoctoclaw::mcp::content::render(&r).is_error, "no isError"),
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

// ---------------------------------------------------------------------------------------
// The hostile server.

impl Rig {
    /// A hostile server's entry in `mode`.
    fn hostile(&self, mode: &str, extra: &str) -> String {
        format!(
            r#"{{"command": "python3", "args": [{:?}, {mode:?}, {:?}]{extra}}}"#,
            fixture("hostile.py").to_string_lossy(),
            self.record().to_string_lossy()
        )
    }

    /// `bad` (the hostile `mode`, with `extra` keys) beside `good`, a well-behaved one.
    fn pair(&self, mode: &str, extra: &str) -> Rc<Mcp> {
        let servers = format!(
            r#"{{"bad": {}, "good": {}}}"#,
            self.hostile(mode, extra),
            self.hostile("fine", "")
        );
        self.mcp(&servers, None, fast())
    }
}

fn python(what: &str) -> bool {
    python_ok(what, "import json")
}

/// The good server beside answers.
async fn good_answers(mcp: &Mcp) {
    let r = mcp.call_tool("good", "t", "{}").await.expect("good server");
    assert_eq!(text_of(&r), "ok");
}

fn status(mcp: &Mcp, name: &str) -> yoctoclaw::mcp::ServerStatus {
    mcp.servers().into_iter().find(|s| s.name == name).unwrap()
}

/// Every process the fixtures started is gone (reaped: not even a zombie).
fn none_left(rig: &Rig) {
    let rec = rig.recorded();
    let mut pids = started_pids(&rec);
    pids.extend(
        rec.lines()
            .filter_map(|l| l.strip_prefix("child "))
            .filter_map(|p| p.trim().parse::<u32>().ok()),
    );
    let end = Instant::now() + WAIT;
    for pid in pids {
        while exists(pid) {
            assert!(Instant::now() < end, "process {pid} is left: {rec}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A start of `bad` fails with an error containing `needle`; then it is restarted under
/// the backoff until `Failed`; `good` is unaffected throughout.
fn fails_to_start(tag: &str, mode: &str, extra: &str, needle: &str) {
    fails_to_start_with(tag, mode, extra, needle, fast());
}

/// [`fails_to_start`] with the manager's `timing`; `good` is called all the while `bad`
/// is being restarted.
fn fails_to_start_with(tag: &str, mode: &str, extra: &str, needle: &str, timing: Timing) {
    if !python(tag) {
        return;
    }
    let rig = Rig::new(tag, &[]);
    let servers = format!(
        r#"{{"bad": {}, "good": {}}}"#,
        rig.hostile(mode, extra),
        rig.hostile("fine", "")
    );
    let mcp = rig.mcp(&servers, None, timing);
    drive(&mcp, async {
        let e = mcp.start("bad").await.unwrap_err();
        assert!(matches!(e, McpError::Start(_)), "{e:?}");
        assert!(e.to_string().contains(needle), "{e}");
        let end = Instant::now() + WAIT;
        while status(&mcp, "bad").state != ServerState::Failed {
            assert!(
                Instant::now() < end,
                "bad never Failed: {:?}",
                status(&mcp, "bad")
            );
            good_answers(&mcp).await;
            smol::Timer::after(Duration::from_millis(20)).await;
        }
        let s = status(&mcp, "bad");
        assert_eq!(s.restarts, 5, "{s:?}");
        assert!(
            s.last_error.as_deref().unwrap_or("").contains(needle),
            "{s:?}"
        );
        assert_eq!(
            mcp.call_tool("bad", "t", "{}").await.err(),
            Some(McpError::Failed("bad".into()))
        );
        good_answers(&mcp).await;
        assert_eq!(status(&mcp, "good").restarts, 0);
        mcp.shutdown().await;
    });
    none_left(&rig);
}

#[test]
fn a_server_that_is_not_installed() {
    if !python("not installed") {
        return;
    }
    let rig = Rig::new("mcp-missing", &[]);
    let servers = format!(
        r#"{{"bad": {{"command": "yc-no-such-mcp-server"}}, "good": {}}}"#,
        rig.hostile("fine", "")
    );
    let mcp = rig.mcp(&servers, None, fast());
    drive(&mcp, async {
        let e = mcp.call_tool("bad", "t", "{}").await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "the MCP server did not start: the command \"yc-no-such-mcp-server\" was not found: is it installed and on PATH?"
        );
        good_answers(&mcp).await;
        until("Failed", || {
            status(&mcp, "bad").state == ServerState::Failed
        })
        .await;
        mcp.shutdown().await;
    });
}

#[test]
fn a_server_that_exits_at_once() {
    fails_to_start("mcp-exit", "exit", "", "exited or closed its output");
}

#[test]
fn a_server_that_prints_before_initialize() {
    fails_to_start("mcp-banner", "banner", "", "not JSON");
}

#[test]
fn a_server_with_another_protocol_version() {
    fails_to_start("mcp-version", "version", "", "\"1999-01-01\"");
}

#[test]
fn a_server_that_sends_garbage() {
    fails_to_start("mcp-garbage", "garbage", "", "not JSON");
}

/// A server that never answers `initialize`: each start takes its whole `timeout_secs`,
/// so no two restarts fall within a window shorter than that (as five never fell within
/// 30 s of a 3 s or longer timeout); five failed restarts in a row make it `Failed` all
/// the same.
#[test]
fn a_server_that_hangs() {
    fails_to_start_with(
        "mcp-hang",
        "hang",
        r#", "timeout_secs": 1"#,
        "did not answer initialize within 1 s",
        Timing {
            restart_window: Duration::from_millis(500),
            ..fast()
        },
    );
}

/// A call to `bad` fails with an error containing `needle`; the server is restarted (its
/// tools listed again) and `good` is unaffected.
fn breaks_mid_call(tag: &str, mode: &str, needle: &str) {
    if !python(tag) {
        return;
    }
    let rig = Rig::new(tag, &[]);
    let mcp = rig.pair(mode, "");
    drive(&mcp, async {
        mcp.start("good").await.expect("start good");
        mcp.start("bad").await.expect("start");
        let g = mcp.generation();
        let e = mcp.call_tool("bad", "t", "{}").await.unwrap_err();
        assert!(matches!(e, McpError::Protocol(_)), "{e:?}");
        assert!(e.to_string().contains(needle), "{e}");
        good_answers(&mcp).await;
        until("bad restarted", || {
            let s = status(&mcp, "bad");
            s.state == ServerState::Running && s.restarts == 1
        })
        .await;
        assert!(status(&mcp, "bad").last_error.unwrap().contains(needle));
        assert_eq!(mcp.tools("bad").len(), 1);
        assert_eq!(mcp.generation(), g, "the same list after the restart");
        assert_eq!(started_pids(&rig.recorded()).len(), 3);
        mcp.shutdown().await;
    });
    none_left(&rig);
}

/// The tool a `crash_after` run declares after its pid.
fn pid_tool(mcp: &Mcp) -> String {
    let names: Vec<String> = mcp.tools("bad").into_iter().map(|t| t.name).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    names.into_iter().find(|n| n.starts_with("pid")).unwrap()
}

/// A server that answers two calls and dies in the middle of the third: that call gets
/// one clear error, the other server's call made at the same moment goes through; it is
/// restarted, and the new process's tool list (another `pidN` tool) replaces the old one.
#[test]
fn a_server_that_dies_mid_call() {
    if !python("die") {
        return;
    }
    let rig = Rig::new("mcp-die", &[]);
    let mcp = rig.pair("crash_after:2", "");
    drive(&mcp, async {
        mcp.start("good").await.expect("start good");
        mcp.start("bad").await.expect("start");
        let before = pid_tool(&mcp);
        for _ in 0..2 {
            assert_eq!(
                text_of(&mcp.call_tool("bad", "t", "{}").await.unwrap()),
                "ok"
            );
        }
        let g = mcp.generation();
        let (e, ()) = smol::future::zip(mcp.call_tool("bad", "t", "{}"), good_answers(&mcp)).await;
        let e = e.unwrap_err();
        assert_eq!(
            e,
            McpError::Protocol("it exited or closed its output".into()),
            "{e}"
        );
        until("bad restarted", || {
            let s = status(&mcp, "bad");
            s.state == ServerState::Running && s.restarts == 1
        })
        .await;
        let after = pid_tool(&mcp);
        assert_ne!(before, after, "the tools were listed again");
        assert!(mcp.generation() > g);
        let pids: Vec<String> = started_pids(&rig.recorded())
            .iter()
            .map(|p| format!("pid{p}"))
            .collect();
        assert!(pids.contains(&before) && pids.contains(&after), "{pids:?}");
        assert_eq!(
            text_of(&mcp.call_tool("bad", &after, "{}").await.unwrap()),
            "ok"
        );
        assert_eq!(status(&mcp, "good").restarts, 0);
        mcp.shutdown().await;
    });
    none_left(&rig);
}

/// A server that gets through `initialize` and its tool list and then crashes (at each
/// call here) starts well every time, so only the window counts its restarts: five
/// within 30 s make it `Failed` at the sixth crash; with a window shorter than one of its
/// runs it is restarted for as long as it is called.
#[test]
fn a_server_that_crashes_after_good_starts_is_failed_by_the_window_only() {
    if !python("crash loop") {
        return;
    }
    for (window, crashes) in [(Duration::from_secs(30), 6), (Duration::from_millis(1), 8)] {
        let rig = Rig::new("mcp-crash-loop", &[]);
        let timing = Timing {
            restart_window: window,
            ..fast()
        };
        let servers = format!(r#"{{"bad": {}}}"#, rig.hostile("crash_after:0", ""));
        let mcp = rig.mcp(&servers, None, timing);
        drive(&mcp, async {
            mcp.start("bad").await.expect("start");
            for i in 0..crashes {
                let e = mcp.call_tool("bad", "t", "{}").await.unwrap_err();
                assert!(matches!(e, McpError::Protocol(_)), "crash {i}: {e:?}");
            }
            if crashes == 6 {
                let e = mcp.call_tool("bad", "t", "{}").await.unwrap_err();
                assert_eq!(e, McpError::Failed("bad".into()));
                let s = status(&mcp, "bad");
                assert_eq!((s.state, s.restarts), (ServerState::Failed, 5), "{s:?}");
            } else {
                until("the last restart", || {
                    let s = status(&mcp, "bad");
                    assert_ne!(s.state, ServerState::Failed, "{s:?}");
                    s.state == ServerState::Running && s.restarts == 8
                })
                .await;
            }
            mcp.shutdown().await;
        });
        // The first run and one per restart (none after the sixth crash of the first).
        let runs = if crashes == 6 { 6 } else { crashes + 1 };
        assert_eq!(started_pids(&rig.recorded()).len(), runs);
        none_left(&rig);
    }
}

#[test]
fn a_server_that_returns_50_mb() {
    breaks_mid_call("mcp-huge", "huge", "over 4 MiB");
}

#[test]
fn a_server_whose_line_never_ends() {
    breaks_mid_call("mcp-endless", "endless", "without an end");
}

#[test]
fn a_server_that_answers_unknown_ids() {
    breaks_mid_call("mcp-unknown", "unknown", "never sent");
}

#[test]
fn a_server_that_floods_notifications() {
    breaks_mid_call("mcp-flood", "flood", "flooded");
}

#[test]
fn a_tool_named_like_a_built_in_is_listed_as_the_server_declared_it() {
    if !python("builtin") {
        return;
    }
    let rig = Rig::new("mcp-builtin", &[]);
    let mcp = rig.pair("builtin", "");
    drive(&mcp, async {
        mcp.start("bad").await.unwrap();
        let names: Vec<String> = mcp.tools("bad").into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["t", "exec"]);
        assert_eq!(
            text_of(&mcp.call_tool("bad", "exec", "{}").await.unwrap()),
            "ok"
        );
        mcp.shutdown().await;
    });
}

#[test]
fn tools_are_listed_over_pages_and_capped_in_all() {
    if !python("pages") {
        return;
    }
    let rig = Rig::new("mcp-pages", &[]);
    let servers = format!(
        r#"{{"a": {}, "b": {}, "c": {}}}"#,
        rig.hostile("paged", ""),
        rig.hostile("many", ""),
        rig.hostile("fine", "")
    );
    let mcp = rig.mcp(&servers, None, fast());
    drive(&mcp, async {
        for s in ["a", "b", "c"] {
            mcp.start(s).await.unwrap();
        }
        let a: Vec<String> = mcp.tools("a").into_iter().map(|t| t.name).collect();
        assert_eq!(a, ["t0a", "t0b", "t1a", "t1b", "t2a", "t2b"]);
        // 128 in all, servers in name order: b gets what a left, c nothing.
        assert_eq!(mcp.tools("b").len(), 128 - 6);
        assert_eq!(mcp.tools("c").len(), 0);
        let counts: Vec<usize> = mcp.servers().iter().map(|s| s.tools).collect();
        assert_eq!(counts, [6, 122, 0]);
        mcp.shutdown().await;
    });
}

#[test]
fn the_servers_ping_is_answered_and_other_requests_refused() {
    if !python("ping") {
        return;
    }
    let rig = Rig::new("mcp-ping", &[]);
    let mcp = rig.pair("ping", "");
    drive(&mcp, async {
        let r = mcp.call_tool("bad", "t", "{}").await.unwrap();
        assert_eq!(
            text_of(&r),
            r#"[{"id": "srv-1", "jsonrpc": "2.0", "result": {}}, {"error": {"code": -32601, "message": "Method not found"}, "id": "srv-2", "jsonrpc": "2.0"}]"#
        );
        mcp.shutdown().await;
    });
}

#[test]
fn a_timed_out_call_is_cancelled() {
    if !python("cancel") {
        return;
    }
    let rig = Rig::new("mcp-cancel", &[]);
    // 3 s: the same bound covers initialize, which a loaded CI machine may take a second for.
    let mcp = rig.pair("silent", r#", "timeout_secs": 3"#);
    drive(&mcp, async {
        mcp.start("bad").await.unwrap();
        let t0 = Instant::now();
        let e = mcp.call_tool("bad", "t", "{}").await.unwrap_err();
        assert_eq!(e, McpError::Timeout(3));
        assert!(t0.elapsed() >= Duration::from_secs(3));
        until("the cancellation", || {
            rig.recorded().contains("notifications/cancelled")
        })
        .await;
        // Still running, still usable by others.
        assert_eq!(status(&mcp, "bad").state, ServerState::Running);
        good_answers(&mcp).await;
        mcp.shutdown().await;
    });
    let rec = rig.recorded();
    let line = rec.lines().find(|l| l.contains("cancelled")).unwrap();
    // The call was our third request (initialize, tools/list, tools/call).
    assert!(
        line.contains(r#""requestId":3"#) && line.contains(r#""reason":"timed out""#),
        "{line}"
    );
}

#[test]
fn a_stubborn_server_and_its_group_are_killed_at_shutdown() {
    if !python("stubborn") {
        return;
    }
    let rig = Rig::new("mcp-stubborn", &[]);
    let mcp = rig.pair("stubborn", "");
    drive(&mcp, async {
        mcp.start("bad").await.unwrap();
        until("the child", || rig.recorded().contains("child ")).await;
        let t0 = Instant::now();
        mcp.shutdown().await;
        // stdin closed, grace, SIGTERM (ignored), grace, SIGKILL.
        assert!(t0.elapsed() >= fast().stop_grace * 2, "{:?}", t0.elapsed());
    });
    none_left(&rig);
}

// ---------------------------------------------------------------------------------------
// The SDK server: list_changed, cancellation, a crash, idle stop and the kept list.

#[test]
fn sdk_server_list_changed_cancel_and_crash() {
    let what = "MCP over stdio against the official Python SDK";
    if !sdk(what) {
        return;
    }
    let rig = Rig::new("mcp-sdk-more", &[]);
    let servers = format!(r#"{{"py": {}}}"#, rig.sdk_entry(r#", "timeout_secs": 15"#));
    let mcp = rig.mcp(&servers, None, fast());
    drive(&mcp, async {
        mcp.start("py").await.unwrap();
        let g = mcp.generation();
        assert!(!mcp.tools("py").iter().any(|t| t.name == "extra"));
        assert_eq!(
            text_of(&mcp.call_tool("py", "grow", "{}").await.unwrap()),
            "grown"
        );
        until("the new list", || mcp.generation() > g).await;
        assert!(mcp.tools("py").iter().any(|t| t.name == "extra"));
        assert_eq!(
            text_of(&mcp.call_tool("py", "extra", "{}").await.unwrap()),
            "extra"
        );

        let e = mcp
            .call_tool("py", "slow", r#"{"seconds": 60}"#)
            .await
            .unwrap_err();
        assert_eq!(e, McpError::Timeout(15));
        until("the cancellation", || rig.recorded().contains("cancelled ")).await;
        assert_eq!(
            text_of(
                &mcp.call_tool("py", "add", r#"{"a":1,"b":2}"#)
                    .await
                    .unwrap()
            ),
            "3"
        );

        let e = mcp.call_tool("py", "crash", "{}").await.unwrap_err();
        assert!(matches!(e, McpError::Protocol(_)), "{e:?}");
        until("the restart", || {
            let s = status(&mcp, "py");
            assert_ne!(s.state, ServerState::Failed, "{s:?}");
            s.state == ServerState::Running && s.restarts >= 1
        })
        .await;
        // Rediscovered: the fresh process has no `extra`.
        assert!(!mcp.tools("py").iter().any(|t| t.name == "extra"));
        assert_eq!(
            text_of(
                &mcp.call_tool("py", "add", r#"{"a":1,"b":2}"#)
                    .await
                    .unwrap()
            ),
            "3"
        );
        mcp.shutdown().await;
    });
    none_left(&rig);
}

#[test]
fn an_idle_server_stops_and_its_kept_list_starts_it_again() {
    if !python("idle") {
        return;
    }
    let rig = Rig::new("mcp-idle", &[]);
    let servers = format!(
        r#"{{"h": {}}}"#,
        rig.hostile("builtin", r#", "idle_stop_mins": 1"#)
    );
    let timing = Timing {
        idle_unit: Duration::from_millis(300),
        ..fast()
    };
    let mcp = rig.mcp(&servers, Some(rig.db()), timing);
    drive(&mcp, async {
        mcp.start("h").await.unwrap();
        until("the idle stop", || {
            status(&mcp, "h").state == ServerState::Stopped
        })
        .await;
        assert_eq!(mcp.tools("h").len(), 2, "the list stays offered");
    });
    none_left(&rig);
    drop(mcp);
    // Another process (a restarted gateway): the list is known before any start.
    let mcp = rig.mcp(&servers, Some(rig.db()), timing);
    assert_eq!(status(&mcp, "h").state, ServerState::Stopped);
    let names: Vec<String> = mcp.tools("h").into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["t", "exec"]);
    assert_eq!(status(&mcp, "h").tools, 2);
    drive(&mcp, async {
        assert_eq!(text_of(&mcp.call_tool("h", "t", "{}").await.unwrap()), "ok");
        assert_eq!(status(&mcp, "h").state, ServerState::Running);
        mcp.shutdown().await;
    });
    assert_eq!(started_pids(&rig.recorded()).len(), 2);
    none_left(&rig);
}

// ---------------------------------------------------------------------------------------
// HTTP.

#[test]
fn sdk_server_over_streamable_http() {
    let what = "MCP over HTTP against the official Python SDK";
    if !python_ok(what, "import mcp.server, uvicorn") {
        return;
    }
    let mut child = Command::new("python3")
        .arg(fixture("http_server.py"))
        .args(["sse", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    let port: u16 = line.trim().strip_prefix("READY ").unwrap().parse().unwrap();
    let rig = Rig::new("mcp-http", &[("HTTP_TOKEN", "tok-123")]);
    let servers = format!(
        r#"{{"web": {{"url": "http://127.0.0.1:{port}/mcp", "headers": {{"Authorization": "Bearer ${{HTTP_TOKEN}}"}}}}}}"#
    );
    let mcp = rig.mcp(&servers, None, fast());
    drive(&mcp, async {
        mcp.start("web").await.unwrap();
        let names: Vec<String> = mcp.tools("web").into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["add", "echo", "chatty"]);
        let r = mcp
            .call_tool("web", "add", r#"{"a": 20, "b": 22}"#)
            .await
            .unwrap();
        assert_eq!(text_of(&r), "42");
        let r = mcp.call_tool("web", "chatty", r#"{"n": 5}"#).await.unwrap();
        assert_eq!(text_of(&r), "done after 5 steps");
        assert_eq!(status(&mcp, "web").state, ServerState::Running);
        mcp.shutdown().await;
        assert_eq!(status(&mcp, "web").state, ServerState::Stopped);
    });
    // The server goes away: the call fails in one sentence without the host, and the
    // manager tries again under the backoff until it gives up.
    let mcp = rig.mcp(&servers, None, fast());
    drive(&mcp, async {
        mcp.start("web").await.unwrap();
        let _ = child.kill();
        let _ = child.wait();
        let e = mcp
            .call_tool("web", "add", r#"{"a": 1, "b": 1}"#)
            .await
            .unwrap_err();
        assert!(matches!(e, McpError::Transport(_)), "{e:?}");
        assert!(!e.to_string().contains("127.0.0.1"), "{e}");
        until("Failed", || {
            status(&mcp, "web").state == ServerState::Failed
        })
        .await;
        assert_eq!(status(&mcp, "web").restarts, 5);
        mcp.shutdown().await;
    });
}
