//! The injection screen's precision and recall on the corpus under
//! tests/fixtures/injection: `injections.txt` (known injections: overrides, role play,
//! chat-template tokens, split by zero-width characters, in base64 and hex, in
//! look-alike letters, indirect "when you read this" orders, hidden HTML and markdown)
//! and `benign.txt` (text that looks like them: README install steps, recipes, shell
//! and administration how-tos, a chat about prompt injection, code with `system`
//! variables, translations, other scripts). Samples are separated by `%%%` lines;
//! `generate.py` writes both files (the disguises are invisible in an editor).
//!
//! The floors are what the screen measured (docs/footprint/injection.md), a little
//! under: a change that loses recall or precision fails here, naming the samples.

use std::path::Path;
use yoctoclaw::security::injection::{DEFAULT_THRESHOLD, Screen};

fn samples(name: &str) -> Vec<String> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/injection");
    let text = std::fs::read_to_string(p.join(name)).expect("fixture");
    text.split("\n%%%\n")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Recall at least this (injections caught / injections).
const MIN_RECALL: f64 = 0.9;
/// Precision at least this (injections among what was flagged).
const MIN_PRECISION: f64 = 0.95;

#[test]
fn layers_one_and_two_meet_their_floors_on_the_corpus() {
    let screen = Screen::new(&[], DEFAULT_THRESHOLD).unwrap();
    let bad = samples("injections.txt");
    let good = samples("benign.txt");
    assert!(
        bad.len() >= 60 && good.len() >= 60,
        "{} {}",
        bad.len(),
        good.len()
    );
    let missed: Vec<&String> = bad.iter().filter(|s| screen.check(s).is_none()).collect();
    let flagged: Vec<(&String, String)> = good
        .iter()
        .filter_map(|s| screen.check(s).map(|f| (s, f.to_string())))
        .collect();
    let tp = (bad.len() - missed.len()) as f64;
    let recall = tp / bad.len() as f64;
    let precision = tp / (tp + flagged.len() as f64);
    let by_layer = |l| {
        bad.iter()
            .filter(|s| screen.check(s).is_some_and(|f| f.layer == l))
            .count()
    };
    use yoctoclaw::security::injection::Layer;
    println!(
        "injections {}, benign {}: caught {} (patterns {}, score {}), false alarms {}; recall {recall:.3}, precision {precision:.3}",
        bad.len(),
        good.len(),
        tp,
        by_layer(Layer::Pattern),
        by_layer(Layer::Score),
        flagged.len()
    );
    for m in &missed {
        println!("missed: {m:?} (score {:.2})", screen.score(m).0);
    }
    for (s, f) in &flagged {
        println!("false alarm: {s:?}: {f}");
    }
    assert!(recall >= MIN_RECALL, "recall {recall:.3}");
    assert!(precision >= MIN_PRECISION, "precision {precision:.3}");
}

#[test]
fn benign_scores_stay_well_under_the_threshold() {
    // Layer 2 alone: how close benign text comes to the threshold (a margin, not a hit).
    let screen = Screen::new(&[], DEFAULT_THRESHOLD).unwrap();
    let worst = samples("benign.txt")
        .iter()
        .map(|s| (screen.score(s).0, s.clone()))
        .fold(
            (0.0f32, String::new()),
            |a, b| if b.0 > a.0 { b } else { a },
        );
    println!("highest benign score {:.2}: {:?}", worst.0, worst.1);
    assert!(worst.0 < DEFAULT_THRESHOLD, "{worst:?}");
}
