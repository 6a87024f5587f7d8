//! The time from an MCP tool call to its result, over stdio and over Streamable HTTP,
//! against the official Python SDK's servers (tests/fixtures/mcp/stdio_server.py and
//! http_server.py; `pip install mcp`), through the manager as the gateway uses it.
//!
//! `cargo run --release --example mcp_call_time [CALLS]` prints, per transport, the time
//! to start the server (initialize and the tool list) and the median, 90th percentile
//! and slowest of CALLS (default 200) sequential `add` calls. A benchmark, not a test.

use std::path::Path;
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};
use yoctoclaw::config::{self, Env};
use yoctoclaw::mcp::Mcp;
use yoctoclaw::runtime::Workers;

fn measure(label: &str, servers: &str, calls: usize) {
    let env = Env::new(Default::default());
    let text = format!(r#"{{"mcp": {{"servers": {servers}}}}}"#);
    let cfg = config::parse(Some(&text), Path::new("config.json"), &env).expect("config");
    let mcp = Mcp::new(
        &cfg.mcp,
        &env,
        &std::env::temp_dir(),
        Workers::start(2),
        None,
    );
    let ex = smol::LocalExecutor::new();
    let m: Rc<Mcp> = mcp.clone();
    ex.spawn(async move { m.run().await }).detach();
    smol::block_on(ex.run(async {
        let start = mcp.start("s").await.expect("start");
        let mut times: Vec<Duration> = Vec::with_capacity(calls);
        for i in 0..calls {
            let args = format!(r#"{{"a": {i}, "b": 1}}"#);
            let t0 = Instant::now();
            mcp.call_tool("s", "add", &args).await.expect("call");
            times.push(t0.elapsed());
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "{label}: start {:.0} ms; {calls} calls: median {:.2} ms, p90 {:.2} ms, max {:.2} ms",
            ms(start),
            ms(times[calls / 2]),
            ms(times[calls * 9 / 10]),
            ms(times[calls - 1])
        );
        mcp.shutdown().await;
    }));
}

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200)
        .max(1);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp");
    let stdio = fixtures.join("stdio_server.py");
    measure(
        "stdio",
        &format!(
            r#"{{"s": {{"command": "python3", "args": [{:?}]}}}}"#,
            stdio.to_string_lossy()
        ),
        calls,
    );
    let mut child = Command::new("python3")
        .arg(fixtures.join("http_server.py"))
        .args(["json", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).expect("READY");
    let port = line.trim().trim_start_matches("READY ");
    measure(
        "http (json)",
        &format!(r#"{{"s": {{"url": "http://127.0.0.1:{port}/mcp"}}}}"#),
        calls,
    );
    let _ = child.kill();
    let _ = child.wait();
}
