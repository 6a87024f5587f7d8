//! `/metrics`' text, read by the official parser (`prometheus_client`'s
//! `text_string_to_metric_families`, installed by `.ci/run`), and its counts after real
//! work:
//! - the binary: `yoctoclaw gateway` with Telegram (the fake Bot API) and the HTTP API on,
//!   a Telegram turn that calls tools and a completion over HTTP, then `GET /metrics`
//!   over a socket;
//! - the gateway's own main loop (`app::gateway::run`) in this process, for what the
//!   binary's test cannot see from outside: a model that fails once (retried), a tool
//!   denied, and the counters read after the gateway stopped;
//! - counters of a test's own with hostile label values.

mod support;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::fake_http::{Response, chat_model, json_str, openai_text, openai_tool_calls};
use support::fake_telegram::FakeTelegram;
use support::gateway::{PATIENCE, TOKEN, TOKEN_SECRET_PART};
use support::http_client::{self, answer_of, ask, complete, http_config};
use support::{TempHome, config_for, skipped};
use yoctoclaw::app::{self, Loaded};
use yoctoclaw::chat::ChannelKind;
use yoctoclaw::config::{Env, Home};
use yoctoclaw::metrics::{self, Gauges, Registry, ToolOutcome};
use yoctoclaw::store::Db;

const ALICE: i64 = 42;

/// Prints what the official parser read: `F name type` per family, `S name{k="v",…}
/// value` per sample (each label value JSON-quoted, which escapes `\`, `"` and newlines
/// as the exposition format does).
const PARSER: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
for f in text_string_to_metric_families(sys.stdin.read()):
    print("F", f.name, f.type)
    for s in f.samples:
        labels = ",".join(k + "=" + json.dumps(v, ensure_ascii=False) for k, v in s.labels.items())
        print("S", s.name + ("{" + labels + "}" if labels else ""), repr(float(s.value)))
"#;

/// What the parser read: family types, and each sample's value.
struct Parsed {
    types: BTreeMap<String, String>,
    samples: BTreeMap<String, f64>,
}

impl Parsed {
    /// Each sample of `counts` has its value (`{P` stands for the fake model's
    /// `{provider="openai:fake-model"`); `text` is shown when one has not.
    fn expect(&self, counts: &[(&str, f64)], text: &str) {
        for (name, v) in counts {
            let name = name.replace("{P", r#"{provider="openai:fake-model""#);
            assert_eq!(self.value(&name), *v, "{name}\n{text}");
        }
    }

    fn value(&self, sample: &str) -> f64 {
        *self.samples.get(sample).unwrap_or_else(|| {
            let names: Vec<&String> = self.samples.keys().collect();
            panic!("the parser read no {sample}; it read {names:#?}")
        })
    }
}

#[test]
fn the_gateway_binary_serves_its_counts_on_get_metrics() {
    let llm = chat_model(vec![
        Response::json(
            200,
            &openai_tool_calls(
                &[("list_dir", r#"{"path":"."}"#), ("no_such_tool", "{}")],
                Some((100, 20)),
            ),
        ),
        Response::json(200, &openai_text("Listed.")),
        Response::json(200, &openai_text("Hello over HTTP.")),
        Response::json(200, &openai_text("Streamed hello.")),
    ]);
    let tg = FakeTelegram::start();
    let public = r#""metrics_public":true"#;
    let home = TempHome::onboarded("metrics-bin", &http_config(&llm, Some(&tg), public, ""));
    let (mut g, port) = http_client::start(&home, true, true);
    tg.push_private(ALICE, "alice", "What is in my workspace?");
    g.wait_for("Telegram's answer", || {
        tg.sent_to(ALICE).iter().any(|s| s.text.contains("Listed."))
    });
    assert_eq!(
        answer_of(&complete(port, &ask("hello", ""), "")),
        "Hello over HTTP."
    );
    let streamed = complete(port, &ask("again", r#","stream":true"#), "");
    assert!(
        streamed.chunked && streamed.body.contains("Streamed hello."),
        "{streamed:?}"
    );
    assert!(
        streamed.body.ends_with("data: [DONE]\n\n"),
        "{}",
        streamed.body
    );
    // Telegram's answer is counted once the Bot API said ok (after the fake saw it).
    let sent = r#"yoctoclaw_messages_sent_total{channel="telegram"}"#;
    let mut m = http_client::get(port, "/metrics", None);
    g.wait_for("the delivery counted", || {
        m = http_client::get(port, "/metrics", None);
        sample(&m.body, sent) == Some(1.0)
    });
    assert_eq!(m.status, 200, "{}", m.body);
    assert_eq!(
        m.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let p = parse(&m.body);
    let counts: &[(&str, f64)] = &[
        (
            r#"yoctoclaw_messages_received_total{channel="telegram"}"#,
            1.0,
        ),
        (r#"yoctoclaw_messages_sent_total{channel="telegram"}"#, 1.0),
        // One whole answer, one streamed.
        (r#"yoctoclaw_messages_received_total{channel="http"}"#, 2.0),
        (r#"yoctoclaw_messages_sent_total{channel="http"}"#, 2.0),
        (
            r#"yoctoclaw_turns_total{channel="telegram",outcome="ok"}"#,
            1.0,
        ),
        (r#"yoctoclaw_turns_total{channel="http",outcome="ok"}"#, 2.0),
        (
            r#"yoctoclaw_turns_total{channel="http",outcome="error"}"#,
            0.0,
        ),
        (
            r#"yoctoclaw_tool_calls_total{tool="list_dir",outcome="ok"}"#,
            1.0,
        ),
        (
            r#"yoctoclaw_tool_calls_total{tool="other",outcome="unknown"}"#,
            1.0,
        ),
        ("yoctoclaw_provider_requests_total{P}", 4.0),
        ("yoctoclaw_provider_errors_total{P}", 0.0),
        ("yoctoclaw_provider_request_duration_seconds_count{P}", 4.0),
        // 100 + 10 + 10 + 10 in, 20 + 5 + 5 + 5 out.
        (r#"yoctoclaw_provider_tokens_total{P,type="input"}"#, 130.0),
        (r#"yoctoclaw_provider_tokens_total{P,type="output"}"#, 35.0),
        ("yoctoclaw_open_sessions", 0.0),
        ("yoctoclaw_queue_depth", 0.0),
    ];
    p.expect(counts, &m.body);
    assert!(p.value("process_resident_memory_bytes") > 1_000_000.0);
    assert!(p.value("yoctoclaw_uptime_seconds") > 0.0);
    let build = format!(
        r#"yoctoclaw_build_info{{version="{}",target="{}"}}"#,
        env!("CARGO_PKG_VERSION"),
        build_target(&m.body)
    );
    assert_eq!(p.value(&build), 1.0);
    assert!(!m.body.contains(http_client::HTTP_TOKEN));
    assert!(!m.body.contains(TOKEN_SECRET_PART));
    g.stop_cleanly();
}

/// `text` through the official parser. Where it is not installed (after [`skipped`]
/// said so), read here instead, samples only (`types` stays empty), so the counts are
/// still checked.
fn parse(text: &str) -> Parsed {
    let check = Command::new("python3")
        .args(["-c", "import prometheus_client.parser"])
        .output();
    if !check.is_ok_and(|o| o.status.success()) {
        skipped(
            "the official Prometheus parser reading /metrics",
            "python3 with prometheus_client is not installed (.ci/run installs it: pip install prometheus-client)",
        );
        let samples = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (name, v) = l.rsplit_once(' ')?;
                Some((name.to_string(), v.parse().ok()?))
            })
            .collect();
        return Parsed {
            types: BTreeMap::new(),
            samples,
        };
    }
    let mut child = Command::new("python3")
        .args(["-c", PARSER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the parser refused the text:\n{}\n---\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut p = Parsed {
        types: BTreeMap::new(),
        samples: BTreeMap::new(),
    };
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        if let Some(rest) = line.strip_prefix("F ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            p.types.insert(name.into(), kind.into());
        } else if let Some(rest) = line.strip_prefix("S ") {
            let (name, value) = rest.rsplit_once(' ').unwrap();
            let v: f64 = value.parse().unwrap();
            assert!(p.samples.insert(name.into(), v).is_none(), "twice: {name}");
        }
    }
    p
}

/// The process's metrics now, with the gauges the gateway would give.
fn render_now(db: &Db) -> String {
    let mut out = String::new();
    metrics::render(&mut out, &app::gateway::metrics_gauges(db, None));
    out
}

/// `name{labels} value` in `text`, as a number.
fn sample(text: &str, head: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(head)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn a_telegram_turn_with_tools_is_counted_and_the_official_parser_reads_it() {
    // The model: one 500 (retried), then three tool calls, then the answer.
    let llm = chat_model(vec![
        Response::json(500, r#"{"error":{"message":"overloaded"}}"#),
        Response::json(
            200,
            &openai_tool_calls(
                &[
                    ("list_dir", r#"{"path":"."}"#),
                    ("web_fetch", r#"{"url":"https://example.com/"}"#),
                    ("no_such_tool", "{}"),
                ],
                Some((100, 20)),
            ),
        ),
        Response::json(200, &openai_text("All done: the workspace is listed.")),
    ]);
    let tg = FakeTelegram::start();
    let config = config_for(
        &llm.url(),
        &format!(
            r#""telegram":{{"enabled":true,"api_base":"{}","allow_from":["{ALICE}"],"poll_timeout_secs":1,"deny_tools":["web_fetch"]}}"#,
            tg.url()
        ),
    );
    let home = TempHome::new("metrics");
    std::fs::create_dir_all(home.workspace()).unwrap();
    std::fs::write(home.workspace().join("notes.md"), "hello").unwrap();
    let dir = home.dir.clone();
    // The gateway's loop on a thread of its own, as the binary's main thread runs it.
    let gateway = std::thread::spawn(move || {
        let env = Env::isolated(&[("TELEGRAM_BOT_TOKEN", TOKEN)]);
        let cfg = yoctoclaw::config::parse(Some(&config), &dir.join("config.json"), &env)
            .expect("the config parses");
        let l = Loaded::new(Home { dir }, env, cfg);
        app::gateway::run(&l).map_err(|e| e.to_string())
    });
    tg.push_private(ALICE, "alice", "What is in my workspace?");

    let started = Instant::now();
    while tg.sent_to(ALICE).is_empty() {
        assert!(
            !gateway.is_finished(),
            "the gateway stopped: {:?}",
            gateway.join()
        );
        assert!(started.elapsed() < PATIENCE, "no answer in {PATIENCE:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Counted once the Bot API said ok (the fake saw the request before it answered).
    let db = Db::open(&home.dir.join("yoctoclaw.db"), 64).unwrap();
    loop {
        let text = render_now(&db);
        if sample(
            &text,
            r#"yoctoclaw_messages_sent_total{channel="telegram"}"#,
        ) == Some(1.0)
        {
            break;
        }
        assert!(
            !gateway.is_finished(),
            "the gateway stopped: {:?}",
            gateway.join()
        );
        assert!(
            started.elapsed() < PATIENCE,
            "no delivery counted in {PATIENCE:?}:\n{text}\nsent: {:?}",
            tg.sent()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = tg.sent_to(ALICE);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].text.contains("All done"), "{sent:?}");

    // SIGTERM, as a service manager stops it: the gateway shuts down and returns, and
    // everything its threads counted is seen here.
    rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::TERM)
        .unwrap();
    assert_eq!(gateway.join().unwrap(), Ok(()));
    let text = render_now(&db);
    let p = parse(&text);

    let counts: &[(&str, f64)] = &[
        (
            r#"yoctoclaw_messages_received_total{channel="telegram"}"#,
            1.0,
        ),
        (r#"yoctoclaw_messages_sent_total{channel="telegram"}"#, 1.0),
        (
            r#"yoctoclaw_messages_received_total{channel="serial"}"#,
            0.0,
        ),
        (r#"yoctoclaw_messages_sent_total{channel="http"}"#, 0.0),
        (
            r#"yoctoclaw_turns_total{channel="telegram",outcome="ok"}"#,
            1.0,
        ),
        (
            r#"yoctoclaw_turns_total{channel="telegram",outcome="error"}"#,
            0.0,
        ),
        (r#"yoctoclaw_turns_total{channel="cron",outcome="ok"}"#, 0.0),
        (
            r#"yoctoclaw_tool_calls_total{tool="list_dir",outcome="ok"}"#,
            1.0,
        ),
        (
            r#"yoctoclaw_tool_calls_total{tool="list_dir",outcome="error"}"#,
            0.0,
        ),
        (
            r#"yoctoclaw_tool_calls_total{tool="web_fetch",outcome="denied"}"#,
            1.0,
        ),
        (
            r#"yoctoclaw_tool_calls_total{tool="other",outcome="unknown"}"#,
            1.0,
        ),
        (r#"yoctoclaw_cron_runs_total{outcome="ok"}"#, 0.0),
        (r#"yoctoclaw_cron_runs_total{outcome="error"}"#, 0.0),
        ("yoctoclaw_open_sessions", 0.0),
        ("yoctoclaw_queue_depth", 0.0),
        // The 500, the tool round, the answer.
        ("yoctoclaw_provider_requests_total{P}", 3.0),
        ("yoctoclaw_provider_errors_total{P}", 1.0),
        ("yoctoclaw_provider_request_duration_seconds_count{P}", 3.0),
        (
            r#"yoctoclaw_provider_request_duration_seconds_bucket{P,le="+Inf"}"#,
            3.0,
        ),
        // The fake model answers at once: well under the largest bound.
        (
            r#"yoctoclaw_provider_request_duration_seconds_bucket{P,le="300"}"#,
            3.0,
        ),
        // The two answers' usage: 100 + 10 in, 20 + 5 out (the 500 used none).
        (r#"yoctoclaw_provider_tokens_total{P,type="input"}"#, 110.0),
        (r#"yoctoclaw_provider_tokens_total{P,type="output"}"#, 25.0),
    ];
    p.expect(counts, &text);
    let build = format!(
        r#"yoctoclaw_build_info{{version="{}",target="{}"}}"#,
        env!("CARGO_PKG_VERSION"),
        build_target(&text)
    );
    assert_eq!(p.value(&build), 1.0);
    let sum = r#"yoctoclaw_provider_request_duration_seconds_sum{provider="openai:fake-model"}"#;
    assert!(p.value(sum) > 0.0 && p.value(sum) < 60.0, "{text}");
    assert!(p.value("yoctoclaw_uptime_seconds") > 0.0);
    assert!(p.value("process_resident_memory_bytes") > 1_000_000.0);
    assert!(
        p.value("yoctoclaw_resident_memory_peak_bytes") >= p.value("process_resident_memory_bytes")
    );
    // Every family, with its type (the parser names a counter without `_total`).
    if p.types.is_empty() {
        return; // not the official parser (said above)
    }
    for (family, kind) in [
        ("yoctoclaw_build_info", "gauge"),
        ("yoctoclaw_uptime_seconds", "gauge"),
        ("process_resident_memory_bytes", "gauge"),
        ("yoctoclaw_resident_memory_peak_bytes", "gauge"),
        ("yoctoclaw_open_sessions", "gauge"),
        ("yoctoclaw_queue_depth", "gauge"),
        ("yoctoclaw_messages_received", "counter"),
        ("yoctoclaw_messages_sent", "counter"),
        ("yoctoclaw_turns", "counter"),
        ("yoctoclaw_tool_calls", "counter"),
        ("yoctoclaw_cron_runs", "counter"),
        ("yoctoclaw_provider_requests", "counter"),
        ("yoctoclaw_provider_errors", "counter"),
        ("yoctoclaw_provider_tokens", "counter"),
        ("yoctoclaw_provider_request_duration_seconds", "histogram"),
    ] {
        assert_eq!(
            p.types.get(family).map(String::as_str),
            Some(kind),
            "{family}"
        );
    }
    assert_eq!(p.types.len(), 15, "{:?}", p.types.keys());
    // The model's made-up name is not a label; no URL is either.
    assert!(!text.contains("no_such_tool"), "{text}");
    assert!(!text.contains("127.0.0.1"), "{text}");
    assert!(!text.contains(TOKEN_SECRET_PART));
}

/// The `target` label of `yoctoclaw_build_info` in `text` (the triple this test was
/// built for), checked for shape.
fn build_target(text: &str) -> String {
    let t = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("yoctoclaw_build_info{")?
                .split("target=\"")
                .nth(1)
        })
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default()
        .to_string();
    assert!(
        t.split('-').count() >= 3 && t.contains("linux"),
        "a target triple: {t:?}"
    );
    t
}

#[test]
fn hostile_label_values_reach_the_official_parser_intact() {
    let r = Registry::new();
    let odd = [
        "srv__quote\"d",
        "srv__back\\slash",
        "srv__new\nline",
        "srv__all \\\" \n } , = # é 🦀",
    ];
    for (i, name) in odd.iter().enumerate() {
        for _ in 0..=i {
            r.tool_call(Some(name), ToolOutcome::Ok);
        }
    }
    r.tool_call(Some("srv__quote\"d"), ToolOutcome::Denied);
    let p = r.provider_slot("openai:org/model \"v2\"");
    r.provider_request(p, Duration::from_millis(700), true);
    r.tokens(p, 7, 3);
    r.message_in(ChannelKind::Serial);
    r.turn(ChannelKind::Heartbeat, true);
    let mut text = String::new();
    r.render(
        &mut text,
        &Gauges {
            open_sessions: 1,
            queue_depth: 5,
            rss_bytes: Some(3 << 20),
            peak_rss_bytes: Some(4 << 20),
        },
        Duration::from_secs(90),
    );
    let parsed = parse(&text);
    for (i, name) in odd.iter().enumerate() {
        let quoted = json_str(name);
        let head = format!(r#"yoctoclaw_tool_calls_total{{tool={quoted},outcome="ok"}}"#);
        assert_eq!(parsed.value(&head), (i + 1) as f64, "{text}");
    }
    let denied = format!(
        r#"yoctoclaw_tool_calls_total{{tool={},outcome="denied"}}"#,
        json_str("srv__quote\"d")
    );
    assert_eq!(parsed.value(&denied), 1.0);
    let provider = format!("provider={}", json_str("openai:org/model \"v2\""));
    for (name, v) in [
        (
            format!(r#"yoctoclaw_provider_request_duration_seconds_bucket{{{provider},le="0.5"}}"#),
            0.0,
        ),
        (
            format!(r#"yoctoclaw_provider_request_duration_seconds_bucket{{{provider},le="1"}}"#),
            1.0,
        ),
        (
            format!("yoctoclaw_provider_request_duration_seconds_sum{{{provider}}}"),
            0.7,
        ),
        (
            format!(r#"yoctoclaw_provider_tokens_total{{{provider},type="output"}}"#),
            3.0,
        ),
        (
            r#"yoctoclaw_messages_received_total{channel="serial"}"#.into(),
            1.0,
        ),
        (
            r#"yoctoclaw_turns_total{channel="heartbeat",outcome="ok"}"#.into(),
            1.0,
        ),
        ("yoctoclaw_uptime_seconds".into(), 90.0),
        ("yoctoclaw_queue_depth".into(), 5.0),
        ("process_resident_memory_bytes".into(), (3 << 20) as f64),
    ] {
        assert_eq!(parsed.value(&name), v, "{name}\n{text}");
    }
}
