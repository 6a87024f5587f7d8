//! Long-term memory and compaction end to end: the real binary, its `memory` commands and
//! a fake OpenAI-compatible server that records what the model was sent.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use support::fake_http::{FakeServer, Response, json_str, openai_text, openai_tool_call};
use support::{TempHome, config_for, text};
use yoctoclaw::json;

/// Marker of the compaction's summary request (its system prompt).
const SUMMARY_MARK: &str = "You compress conversations";

/// A fake provider: turn requests get the scripted bodies in order (the last repeats);
/// summary requests get `summary`.
fn fake(turns: Vec<String>, summary: Response) -> FakeServer {
    let n = Arc::new(AtomicUsize::new(0));
    FakeServer::start(move |req| {
        if !req.path.ends_with("/chat/completions") {
            return Response::json(404, r#"{"error":{"message":"no route"}}"#);
        }
        if req.body.contains(SUMMARY_MARK) {
            return summary.clone();
        }
        let i = n.fetch_add(1, Ordering::SeqCst).min(turns.len() - 1);
        Response::json(200, &turns[i])
    })
}

fn ok(out: &std::process::Output) -> String {
    support::succeeded(out)
}

/// The system prompt of a recorded chat request.
fn system_of(body: &str) -> String {
    let v = json::parse_value(body).unwrap();
    let msgs = json::as_array(json::get(&v, "messages").unwrap()).unwrap();
    msgs.iter()
        .find(|m| json::str_at(m, "role") == Some("system"))
        .and_then(|m| json::str_at(m, "content"))
        .unwrap_or("")
        .to_string()
}

fn non_system_messages(body: &str) -> Vec<miniserde::json::Value> {
    let v = json::parse_value(body).unwrap();
    let msgs = json::as_array(json::get(&v, "messages").unwrap()).unwrap();
    msgs.iter()
        .filter(|m| json::str_at(m, "role") != Some("system"))
        .cloned()
        .collect()
}

#[test]
fn relevant_memories_reach_the_prompt_and_irrelevant_ones_do_not() {
    let f = fake(vec![openai_text("ok")], Response::json(500, "{}"));
    let home = TempHome::onboarded("inject", &config_for(&f.url(), ""));
    for (k, t, c) in [
        ("dentist", "Dentist appointment on Friday at 10:00", "daily"),
        ("milk", "Bought oat milk on Monday", "daily"),
        ("wifi", "The wifi password is on the fridge", "custom"),
        ("bike", "The bike has a flat rear tyre", "conversation"),
    ] {
        ok(&home.run(&["memory", "add", k, t, "--category", c]));
    }
    ok(&home.run(&["memory", "add", "name", "The owner is called Ada"]));
    ok(&home.run(&["agent", "-m", "When is my dentist appointment?"]));
    ok(&home.run(&["agent", "-s", "other", "-m", "hello there"]));
    let reqs = f.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 2);
    let first = system_of(&reqs[0].body);
    assert!(first.contains("<memory>"), "{first}");
    assert!(
        first.contains("Dentist appointment on Friday at 10:00"),
        "{first}"
    );
    assert!(
        first.contains("- name: The owner is called Ada"),
        "core is always in: {first}"
    );
    for absent in ["oat milk", "wifi", "flat rear tyre"] {
        assert!(!first.contains(absent), "{absent} injected: {first}");
    }
    let second = system_of(&reqs[1].body);
    assert!(second.contains("The owner is called Ada"), "{second}");
    assert!(!second.contains("Dentist"), "{second}");
    // Without any memory there is no section at all.
    ok(&home.run(&["memory", "forget", "name"]));
    ok(&home.run(&["agent", "-s", "third", "-m", "hello there"]));
    let third = system_of(&f.requests_to("/chat/completions")[2].body);
    assert!(!third.contains("<memory>"), "{third}");
}

#[test]
fn in_a_store_of_two_or_one_memories_an_exact_match_still_reaches_the_prompt() {
    // A new user's first facts: bm25's IDF is ~0 for every word of a two-memory store,
    // so a relevance floor on raw scores dropped even exact matches.
    let f = fake(vec![openai_text("ok")], Response::json(500, "{}"));
    let home = TempHome::onboarded("inject-small", &config_for(&f.url(), ""));
    ok(&home.run(&[
        "memory",
        "add",
        "bike",
        "The bike lock code is 4312",
        "--category",
        "custom",
    ]));
    ok(&home.run(&["agent", "-m", "What is the code of my bike lock?"]));
    ok(&home.run(&[
        "memory",
        "add",
        "plant",
        "Water the fern every Sunday",
        "--category",
        "daily",
    ]));
    ok(&home.run(&["agent", "-s", "two", "-m", "When do I water the fern?"]));
    ok(&home.run(&["agent", "-s", "three", "-m", "Tell me a joke about cats"]));
    let reqs = f.requests_to("/chat/completions");
    let one = system_of(&reqs[0].body);
    assert!(one.contains("The bike lock code is 4312"), "{one}");
    let two = system_of(&reqs[1].body);
    assert!(two.contains("Water the fern every Sunday"), "{two}");
    assert!(!two.contains("bike lock"), "only what matches: {two}");
    let three = system_of(&reqs[2].body);
    assert!(!three.contains("<memory>"), "nothing matches: {three}");
}

#[test]
fn the_model_stores_and_searches_memories_with_tools() {
    let f = fake(
        vec![
            openai_tool_call(
                "c1",
                "memory_store",
                &json_str(r#"{"text":"Owner's cat is called Miso","key":"cat"}"#),
            ),
            openai_text("Noted."),
            openai_tool_call(
                "c2",
                "memory_search",
                &json_str(r#"{"query":"cat (name)"}"#),
            ),
            openai_text("Your cat is Miso."),
            openai_tool_call("c3", "memory_forget", &json_str(r#"{"key":"cat"}"#)),
            openai_text("Forgotten."),
        ],
        Response::json(500, "{}"),
    );
    let home = TempHome::onboarded("tools", &config_for(&f.url(), ""));
    ok(&home.run(&["agent", "-m", "remember my cat is Miso"]));
    let listed = ok(&home.run(&["memory", "list"]));
    assert!(
        listed.starts_with("cat (core, just now): Owner's cat is called Miso"),
        "{listed}"
    );
    assert_eq!(
        ok(&home.run(&["agent", "-s", "b", "-m", "what is my cat called?"])).trim(),
        "Your cat is Miso."
    );
    let reqs = f.requests_to("/chat/completions");
    assert!(
        reqs[0].body.contains("\"name\":\"memory_store\""),
        "tool offered"
    );
    let result = &reqs[3].body;
    assert!(
        result.contains("key: cat | core | just now | Owner's [cat] is called Miso"),
        "{result}"
    );
    ok(&home.run(&["agent", "-s", "c", "-m", "forget my cat"]));
    assert!(
        f.requests_to("/chat/completions")[5]
            .body
            .contains("Forgot \\\"cat\\\".")
    );
    assert_eq!(ok(&home.run(&["memory", "list"])), "no memories stored\n");
}

#[test]
fn memory_commands_print_results_and_use_the_exit_codes() {
    let home = TempHome::onboarded("cli", "{}");
    assert_eq!(
        ok(&home.run(&["memory", "add", "tea", "likes", "green", "tea"])),
        "stored \"tea\" (core)\n"
    );
    assert_eq!(
        ok(&home.run(&[
            "memory",
            "add",
            "tea",
            "likes black tea",
            "--category",
            "daily"
        ])),
        "updated \"tea\" (daily)\n"
    );
    ok(&home.run(&["memory", "add", "car", "The car is a blue Volvo"]));
    let list = ok(&home.run(&["memory", "list"]));
    assert_eq!(list.lines().count(), 2, "no duplicates: {list}");
    let daily = ok(&home.run(&["memory", "list", "--category", "daily"]));
    assert!(
        daily.starts_with("tea (daily, just now): likes black tea"),
        "{daily}"
    );
    let found = ok(&home.run(&["memory", "search", "blue", "AND", "(volvo"]));
    assert_eq!(found, "car (core, just now): The car is a [blue] [Volvo]\n");
    assert_eq!(
        ok(&home.run(&["memory", "search", "bicycle"])),
        "no memories match \"bicycle\"\n"
    );
    assert_eq!(
        ok(&home.run(&["memory", "forget", "car"])),
        "forgot \"car\"\n"
    );

    let out = home.run(&["memory", "forget", "car"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert_eq!(
        err,
        "yoctoclaw: no memory has the key \"car\" (see yoctoclaw memory list)\n"
    );
    let out = home.run(&["memory", "list", "--category", "weekly"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("use core, daily, conversation or custom"));
    let out = home.run(&["memory", "add", "k", "x", "--category", "forever"]);
    assert_eq!(out.status.code(), Some(2));
    let out = home.run(&["memory", "add", "k"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "empty text: {}",
        text(&out.stderr)
    );
    let out = home.run(&["memory", "search", "*", "\""]);
    assert_eq!(out.status.code(), Some(2));
    let out = home.run(&["memory", "import", "/nonexistent/file.md"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cannot read /nonexistent/file.md"));

    let fresh = TempHome::new("cli-none");
    let out = fresh.run(&["memory", "list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("run yoctoclaw onboard first"));
}

#[test]
fn export_then_import_round_trips_into_another_home() {
    let a = TempHome::onboarded("export-a", "{}");
    ok(&a.run(&["memory", "add", "name", "Owner is \"Ada\" 🎉"]));
    ok(&a.run(&[
        "memory",
        "add",
        "plan",
        "Paris trip\nin May",
        "--category",
        "custom",
    ]));
    let dump = ok(&a.run(&["memory", "export"]));
    assert_eq!(dump.lines().count(), 2, "{dump}");
    for line in dump.lines() {
        let v = json::parse_value(line).unwrap();
        for k in ["key", "text", "category", "created", "updated"] {
            assert!(json::get(&v, k).is_some(), "{k} missing in {line}");
        }
    }
    let file = a.dir.join("dump.jsonl");
    std::fs::write(&file, &dump).unwrap();
    let b = TempHome::onboarded("export-b", "{}");
    let said = ok(&b.run(&["memory", "import", file.to_str().unwrap()]));
    assert!(said.starts_with("imported 2 memories from "), "{said}");
    assert!(said.contains("(2 new, 0 updated, 0 skipped)"), "{said}");
    assert_eq!(ok(&b.run(&["memory", "export"])), dump);
    // A second import updates, never duplicates.
    let said = ok(&b.run(&["memory", "import", file.to_str().unwrap()]));
    assert!(said.contains("(0 new, 2 updated, 0 skipped)"), "{said}");
    assert_eq!(ok(&b.run(&["memory", "export"])), dump);
}

#[test]
fn a_markdown_memory_file_imports_one_memory_per_bullet_or_paragraph() {
    let home = TempHome::onboarded("markdown", "{}");
    let md = home.dir.join("MEMORY.md");
    std::fs::write(
        &md,
        "# Memory\n\n## About the owner\n- Name is Ada\n- Likes green tea,\n  no sugar\n\nWorks at the library\non weekdays.\n\n## Projects\n1. Garden shed\n",
    )
    .unwrap();
    let said = ok(&home.run(&["memory", "import", md.to_str().unwrap()]));
    assert!(said.contains("imported 4 memories"), "{said}");
    let list = ok(&home.run(&["memory", "list"]));
    for want in [
        "): Name is Ada",
        "): Likes green tea, no sugar",
        "): Works at the library on weekdays.",
        "): Garden shed",
    ] {
        assert!(list.contains(want), "{want} missing: {list}");
    }
    assert!(
        !list.contains("About the owner"),
        "headings are skipped: {list}"
    );
    assert!(list.contains("name-is-ada-"), "derived keys: {list}");
    // Importing the same file again keeps one memory per entry.
    ok(&home.run(&["memory", "import", md.to_str().unwrap()]));
    assert_eq!(ok(&home.run(&["memory", "list"])).lines().count(), 4);
}

#[test]
fn retention_at_agent_start_deletes_only_expired_categories() {
    let f = fake(vec![openai_text("ok")], Response::json(500, "{}"));
    let home = TempHome::onboarded("retention", &config_for(&f.url(), ""));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let days = |d: i64| now - d * 86_400;
    let lines: Vec<String> = [
        ("core-old", "core", 3000),
        ("daily-old", "daily", 31),
        ("daily-new", "daily", 29),
        ("conv-old", "conversation", 8),
        ("conv-new", "conversation", 6),
        ("custom-old", "custom", 91),
        ("custom-new", "custom", 89),
    ]
    .iter()
    .map(|(k, c, d)| {
        format!(
            r#"{{"key":"{k}","text":"note {k}","category":"{c}","created":{},"updated":{}}}"#,
            days(*d),
            days(*d)
        )
    })
    .collect();
    let file = home.dir.join("old.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    ok(&home.run(&["memory", "import", file.to_str().unwrap()]));
    assert_eq!(ok(&home.run(&["memory", "list"])).lines().count(), 7);
    ok(&home.run(&["agent", "-m", "hi"]));
    let list = ok(&home.run(&["memory", "list"]));
    for kept in ["core-old", "daily-new", "conv-new", "custom-new"] {
        assert!(list.contains(kept), "{kept} deleted: {list}");
    }
    for gone in ["daily-old", "conv-old", "custom-old"] {
        assert!(!list.contains(gone), "{gone} kept: {list}");
    }
}

const COMPACT_CONFIG: &str = r#""agent":{"compact_after_messages":6,"keep_recent_messages":2}"#;

#[test]
fn a_long_history_is_summarised_by_the_model() {
    let f = fake(
        vec![openai_text("fine")],
        Response::json(
            200,
            &openai_text("SUMMARY-XYZ: talked about alpha and bravo"),
        ),
    );
    let home = TempHome::onboarded("compact", &config_for(&f.url(), COMPACT_CONFIG));
    for word in ["alpha-one", "bravo-two", "charlie-three", "delta-four"] {
        ok(&home.run(&["agent", "-m", word]));
    }
    let reqs = f.requests_to("/chat/completions");
    // Three plain turns, then the summary request, then the fourth turn.
    assert_eq!(reqs.len(), 5);
    let summary_req = &reqs[3].body;
    assert!(summary_req.contains(SUMMARY_MARK), "{summary_req}");
    assert!(summary_req.contains("User: alpha-one"), "{summary_req}");
    assert!(summary_req.contains("Assistant: fine"), "{summary_req}");
    assert!(
        !summary_req.contains("\"tools\""),
        "no tools offered: {summary_req}"
    );
    let turn = &reqs[4].body;
    assert!(
        turn.contains("[Summary of earlier conversation]\\nSUMMARY-XYZ"),
        "{turn}"
    );
    assert!(
        !turn.contains("alpha-one") && !turn.contains("bravo-two"),
        "{turn}"
    );
    assert!(
        turn.contains("charlie-three") && turn.contains("delta-four"),
        "{turn}"
    );
    // The summary stays with the session for the next turn.
    ok(&home.run(&["agent", "-m", "echo-five"]));
    let next = &f.requests_to("/chat/completions")[5].body;
    assert!(next.contains("SUMMARY-XYZ"), "{next}");
    // /new starts over without it.
    ok(&home.run(&["agent", "-m", "/new"]));
    ok(&home.run(&["agent", "-m", "foxtrot-six"]));
    let last = f.requests_to("/chat/completions").pop().unwrap().body;
    assert!(
        !last.contains("SUMMARY-XYZ") && !last.contains("charlie"),
        "{last}"
    );
}

#[test]
fn when_summarising_fails_the_history_is_trimmed() {
    let f = fake(
        vec![openai_text("fine")],
        Response::json(400, r#"{"error":{"message":"context too long"}}"#),
    );
    let home = TempHome::onboarded("trim", &config_for(&f.url(), COMPACT_CONFIG));
    for word in ["alpha-one", "bravo-two", "charlie-three", "delta-four"] {
        ok(&home.run(&["agent", "-m", word]));
    }
    let reqs = f.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 5);
    assert!(reqs[3].body.contains(SUMMARY_MARK));
    let turn = &reqs[4].body;
    assert!(
        !turn.contains("[Summary of earlier conversation]"),
        "{turn}"
    );
    assert!(
        !turn.contains("alpha-one") && !turn.contains("bravo-two"),
        "{turn}"
    );
    assert!(
        turn.contains("charlie-three") && turn.contains("delta-four"),
        "{turn}"
    );
}

/// Every tool message must follow the assistant message that called it.
fn assert_tool_pairs_intact(body: &str) {
    let msgs = non_system_messages(body);
    assert_ne!(
        msgs.first().and_then(|m| json::str_at(m, "role")),
        Some("tool"),
        "{body}"
    );
    let mut open: Vec<String> = Vec::new();
    for m in &msgs {
        match json::str_at(m, "role") {
            Some("tool") => {
                let id = json::str_at(m, "tool_call_id").unwrap_or("").to_string();
                assert!(
                    open.contains(&id),
                    "tool result {id} without its call: {body}"
                );
            }
            Some("assistant") => {
                open = json::get(m, "tool_calls")
                    .and_then(json::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|c| json::str_at(c, "id").map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
            }
            _ => open.clear(),
        }
    }
}

#[test]
fn compaction_never_splits_a_tool_call_from_its_result() {
    // Four different calls (the same call three times in a row is a loop the agent stops).
    let paths = [".", "skills", "./", "skills/"];
    let mut turns: Vec<String> = (1..=4)
        .map(|i| {
            let args = format!(r#"{{"path":"{}"}}"#, paths[i - 1]);
            openai_tool_call(&format!("call_{i}"), "list_dir", &json_str(&args))
        })
        .collect();
    turns.push(openai_text("listed four times"));
    let summaries = Arc::new(Mutex::new(0usize));
    let s2 = summaries.clone();
    let n = Arc::new(AtomicUsize::new(0));
    let f = FakeServer::start(move |req| {
        if req.body.contains(SUMMARY_MARK) {
            *s2.lock().unwrap() += 1;
            return Response::json(200, &openai_text("SUMMARY-TOOLS"));
        }
        let i = n.fetch_add(1, Ordering::SeqCst).min(turns.len() - 1);
        Response::json(200, &turns[i])
    });
    let home = TempHome::onboarded(
        "pairs",
        &config_for(
            &f.url(),
            r#""agent":{"compact_after_messages":6,"keep_recent_messages":3}"#,
        ),
    );
    // Turn one: user, 4 x (call, result), answer = 10 messages.
    ok(&home.run(&["agent", "-m", "list it four times"]));
    // Turn two starts with 11 > 6: no user message to cut before, keep >= 3, so the cut
    // must land before call_4 (keeping call_4, its result, the answer and the question).
    ok(&home.run(&["agent", "-m", "and now?"]));
    assert_eq!(*summaries.lock().unwrap(), 1);
    let reqs: Vec<_> = f
        .requests_to("/chat/completions")
        .into_iter()
        .filter(|r| !r.body.contains(SUMMARY_MARK))
        .collect();
    for r in &reqs {
        assert_tool_pairs_intact(&r.body);
    }
    let last = &reqs.last().unwrap().body;
    assert!(last.contains("SUMMARY-TOOLS"), "{last}");
    assert!(last.contains("\"tool_call_id\":\"call_4\""), "{last}");
    assert!(!last.contains("call_3"), "{last}");
}
