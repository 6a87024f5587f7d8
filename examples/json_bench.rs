//! The cost of reading the JSON bodies a message brings, through the library exactly as
//! the gateway reads them: `json::parse_value` for provider answers and stream events,
//! `telegram::api::updates_from_body` for a `getUpdates` answer. The bodies are the
//! recorded shapes in `tests/fixtures/json/` (an OpenAI reply and tool call, an Anthropic
//! reply, both providers' stream events, a Telegram `getUpdates` answer with two updates
//! and a `sendMessage` answer) plus the empty long-poll answer.
//!
//! Usage: `json_bench [--iters N] [--only NAME]` (default 20,000 rounds over every body;
//! `--only` reads one set of bodies, named as in the table). Prints the
//! nanoseconds per body read and one `BENCH-JSON key=value …` line. Wall time on a shared
//! machine is noisy; for a repeatable figure count instructions instead:
//! `valgrind --tool=callgrind --callgrind-out-file=/dev/null json_bench --iters N` for two
//! values of N: the difference over the difference of N is the instructions per round.
//!
//! # Bounds
//! The bodies are fixed; nothing grows with `--iters`.

use std::hint::black_box;
use std::time::Instant;
use yoctoclaw::channels::telegram::api::updates_from_body;
use yoctoclaw::json;

const OPENAI_REPLY: &str = include_str!("../tests/fixtures/json/openai-reply.json");
const OPENAI_TOOL_CALL: &str = include_str!("../tests/fixtures/json/openai-tool-call.json");
const ANTHROPIC_REPLY: &str = include_str!("../tests/fixtures/json/anthropic-reply.json");
const OPENAI_STREAM: &str = include_str!("../tests/fixtures/json/openai-stream.sse");
const ANTHROPIC_STREAM: &str = include_str!("../tests/fixtures/json/anthropic-stream.sse");
const TELEGRAM_UPDATES: &str = include_str!("../tests/fixtures/json/telegram-updates.json");
const TELEGRAM_SENT: &str = include_str!("../tests/fixtures/json/telegram-sent.json");
const TELEGRAM_EMPTY: &str = r#"{"ok":true,"result":[]}"#;

/// The JSON of each `data:` line of an SSE text (`[DONE]` left out).
fn events(sse: &str) -> Vec<&str> {
    sse.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .collect()
}

enum Read {
    Value,
    Updates,
}

fn read(how: &Read, body: &str) -> usize {
    match how {
        Read::Value => {
            json::parse_value(body).map_or(0, |v| json::as_object(&v).map_or(1, |o| o.len()))
        }
        Read::Updates => updates_from_body(200, body, None).map_or(0, |u| u.len() + 1),
    }
}

fn main() {
    let mut iters: u64 = 20_000;
    let mut only: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--iters" => {
                iters = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--only" => only = Some(args.next().unwrap_or_else(|| usage())),
            _ => usage(),
        }
    }
    let openai_events = events(OPENAI_STREAM);
    let anthropic_events = events(ANTHROPIC_STREAM);
    let sets: Vec<(&str, Read, Vec<&str>)> = vec![
        ("openai_reply", Read::Value, vec![OPENAI_REPLY]),
        ("openai_tool_call", Read::Value, vec![OPENAI_TOOL_CALL]),
        ("anthropic_reply", Read::Value, vec![ANTHROPIC_REPLY]),
        ("openai_events", Read::Value, openai_events),
        ("anthropic_events", Read::Value, anthropic_events),
        ("telegram_updates", Read::Updates, vec![TELEGRAM_UPDATES]),
        ("telegram_empty", Read::Updates, vec![TELEGRAM_EMPTY]),
        ("telegram_sent", Read::Value, vec![TELEGRAM_SENT]),
    ];
    let sets: Vec<_> = sets
        .into_iter()
        .filter(|(name, _, _)| only.as_deref().is_none_or(|o| o == *name))
        .collect();
    if sets.is_empty() {
        usage();
    }
    for (name, how, bodies) in &sets {
        for b in bodies {
            assert!(read(how, b) > 0, "{name}: a body did not read: {b}");
        }
    }
    let mut line = String::from("BENCH-JSON");
    let mut total_ns = 0.0;
    println!(
        "{:<18} {:>7} {:>7} {:>10}",
        "bodies", "count", "bytes", "ns/body"
    );
    for (name, how, bodies) in &sets {
        let bytes: usize = bodies.iter().map(|b| b.len()).sum();
        let start = Instant::now();
        let mut sink = 0usize;
        for _ in 0..iters {
            for b in bodies {
                sink = sink.wrapping_add(read(how, black_box(b)));
            }
        }
        black_box(sink);
        let per = start.elapsed().as_nanos() as f64 / (iters.max(1) * bodies.len() as u64) as f64;
        total_ns += per * bodies.len() as f64;
        println!("{name:<18} {:>7} {bytes:>7} {per:>10.0}", bodies.len());
        line.push_str(&format!(" {name}_ns={per:.0}"));
    }
    println!("{line} round_ns={total_ns:.0} iters={iters}");
}

fn usage() -> ! {
    eprintln!("usage: json_bench [--iters N] [--only NAME]");
    std::process::exit(2)
}
