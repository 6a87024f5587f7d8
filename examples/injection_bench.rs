//! The cost of the injection screen's layers 1 and 2 (`security::injection::Screen::check`,
//! folding included) per KiB of content, on this machine, through the library exactly as
//! the agent calls it on a tool result. The texts are built from the corpus under
//! `tests/fixtures/injection/`: its benign samples repeated to 16 KiB (the default
//! `agent.max_tool_result_bytes`: the common case, every pattern's keyword looked for and
//! the score computed), the same with one injection at the end (the pattern search runs
//! through to it), and a 16 KiB run of base64-looking words (the decoder's worst case:
//! `MAX_DECODED_RUNS` decoded).
//!
//! Usage: `injection_bench [--iters N]` (default 200 rounds per text). Prints the
//! microseconds per KiB for each text and one `BENCH-INJECTION key=value …` line;
//! `scripts/bench-injection.sh` builds it in release and runs it. Wall time on a shared
//! machine is noisy: take the lowest of a few runs.
//!
//! # Bounds
//! The texts are fixed (16 KiB each); nothing grows with `--iters`.

use std::hint::black_box;
use std::time::Instant;
use yoctoclaw::security::injection::{self, DEFAULT_THRESHOLD, Screen};

const BENIGN: &str = include_str!("../tests/fixtures/injection/benign.txt");
const INJECTIONS: &str = include_str!("../tests/fixtures/injection/injections.txt");
const SIZE: usize = 16 * 1024;

fn fill(piece: &str) -> String {
    let mut s = String::with_capacity(SIZE + piece.len());
    while s.len() < SIZE {
        s.push_str(piece);
        s.push('\n');
    }
    let mut end = SIZE;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s
}

fn main() {
    let mut iters = 200u32;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--iters" => iters = args.next().and_then(|n| n.parse().ok()).unwrap_or(iters),
            other => {
                eprintln!("usage: injection_bench [--iters N] (not {other:?})");
                std::process::exit(2);
            }
        }
    }
    let screen = Screen::new(&[], DEFAULT_THRESHOLD).expect("the built-in screen");
    let benign = fill(&BENIGN.replace("%%%", ""));
    let mut injected = benign.clone();
    injected.truncate(SIZE - 200);
    injected.push_str(INJECTIONS.split("\n%%%\n").next().unwrap_or(""));
    let encoded = fill("QmFzZTY0IGxvb2tzIGxpa2UgdGhpcw Y29uZmlndXJhdGlvbiBibG9i aGVsbG8gd29ybGQ");
    let t0 = Instant::now();
    let screen2 = Screen::new(&[], DEFAULT_THRESHOLD).expect("the built-in screen");
    let build_us = t0.elapsed().as_secs_f64() * 1e6;
    drop(screen2);
    let mut line = format!("BENCH-INJECTION build_us={build_us:.0}");
    for (name, text, hit) in [
        ("benign", &benign, false),
        ("injected", &injected, true),
        ("encoded", &encoded, false),
    ] {
        let found = screen.check(text);
        assert_eq!(found.is_some(), hit, "{name}: {found:?}");
        let t = Instant::now();
        for _ in 0..iters {
            black_box(screen.check(black_box(text)));
        }
        let per = t.elapsed().as_secs_f64() / f64::from(iters);
        // Layer 2 alone (the score over every window, no patterns but the decoded runs').
        let t2 = Instant::now();
        for _ in 0..iters {
            black_box(screen.score(black_box(text)));
        }
        let score_per = t2.elapsed().as_secs_f64() / f64::from(iters);
        let score_us_per_kib = score_per * 1e6 / (text.len() as f64 / 1024.0);
        let us_per_kib = per * 1e6 / (text.len() as f64 / 1024.0);
        println!(
            "{name:>9}: {} bytes, {:.0} µs per check, {us_per_kib:.1} µs per KiB (layer 2 alone: {score_us_per_kib:.1})",
            text.len(),
            per * 1e6
        );
        line.push_str(&format!(
            " {name}_us_per_kib={us_per_kib:.1} {name}_score_us_per_kib={score_us_per_kib:.1}"
        ));
    }
    // The same patterns as one alternation over the whole folded text (a comparison:
    // one pass instead of one per pattern near its literals).
    let joined: Vec<String> = injection::builtin_patterns()
        .map(|p| ["(?:", p, ")"].concat())
        .collect();
    let one = regex_lite::Regex::new(&joined.join("|")).expect("the joined patterns");
    let folded = injection::fold(&benign);
    let t = Instant::now();
    for _ in 0..iters {
        black_box(one.find(black_box(&folded)));
    }
    let per = t.elapsed().as_secs_f64() / f64::from(iters);
    let joined_us_per_kib = per * 1e6 / (folded.len() as f64 / 1024.0);
    println!(
        "   joined: the patterns as one regex over the folded benign text: {joined_us_per_kib:.1} µs per KiB"
    );
    line.push_str(&format!(" joined_us_per_kib={joined_us_per_kib:.1}"));
    println!("{line}");
}
