//! The audit trail end to end: the real binary, a fake OpenAI-compatible model making
//! tool calls, then `yoctoclaw audit` reading what was recorded: verdicts (run, denied by
//! a rule, approved and refused at the terminal), arguments scrubbed, the filters,
//! retention (`memory.audit_days`), a full database while the trail is written, and the
//! count in `status`.

mod support;

use std::io::Write;
use std::process::{Output, Stdio};
use support::fake_http::{FakeServer, Response, openai_text, openai_tool_calls};
use support::{TempHome, config_for, hook, succeeded, text};

const KEY: &str = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH";

/// A model that makes `calls` whenever the user spoke last and answers `done` once the
/// tool results are in.
fn tool_model(calls: Vec<(String, String)>) -> FakeServer {
    FakeServer::start(move |req| {
        if !req.path.ends_with("/v1/chat/completions") {
            return Response::json(404, r#"{"error":{"message":"no route"}}"#);
        }
        let tool_last = req
            .body
            .rfind("\"role\":\"tool\"")
            .is_some_and(|t| req.body.rfind("\"role\":\"user\"").is_none_or(|u| t > u));
        if tool_last {
            Response::json(200, &openai_text("done"))
        } else {
            Response::json(200, &openai_tool_calls(&calls, None))
        }
    })
}

fn calls(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, a)| (n.to_string(), a.to_string()))
        .collect()
}

fn agent(home: &TempHome, msg: &str, env: &[(&str, &str)]) -> Output {
    let mut c = home.cmd(&["agent", "-m", msg]);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run yoctoclaw")
}

fn audit(home: &TempHome, args: &[&str]) -> String {
    let mut a = vec!["audit"];
    a.extend_from_slice(args);
    succeeded(&home.run(&a))
}

/// The table's rows (its header left out).
fn rows(table: &str) -> Vec<String> {
    table.lines().skip(1).map(str::to_string).collect()
}

#[test]
fn calls_are_recorded_with_their_verdicts_scrubbed_and_filtered() {
    let secret_args = format!(r#"{{"command":"curl -H 'x-api-key: {KEY}' example.org"}}"#);
    let model = tool_model(calls(&[
        ("read_file", r#"{"path":"notes.md"}"#),
        ("exec", &secret_args),
    ]));
    let home = TempHome::onboarded(
        "audit-verdicts",
        &config_for(
            &model.url(),
            r#""agent":{"autonomy":"full"},"tools":{"deny":["exec"]}"#,
        ),
    );
    std::fs::write(home.workspace().join("notes.md"), "buy milk").unwrap();
    let before = audit(&home, &[]);
    assert_eq!(before.trim(), "No tool calls recorded.");
    let out = agent(&home, "go", &[]);
    assert_eq!(succeeded(&out).trim(), "done");

    let table = audit(&home, &[]);
    assert!(table.starts_with("time (UTC)"), "{table}");
    let r = rows(&table);
    assert_eq!(r.len(), 2, "{table}");
    assert!(
        r[0].contains("terminal") && r[0].contains("run"),
        "{}",
        r[0]
    );
    assert!(r[0].contains("read_file"), "{}", r[0]);
    assert!(r[0].contains("notes.md"), "{}", r[0]);
    assert!(r[0].contains("       8  "), "8 bytes of result: {}", r[0]);
    assert!(!table.contains(KEY), "the secret is scrubbed: {table}");
    assert!(r[1].contains("denied") && r[1].contains("exec"), "{}", r[1]);
    assert!(r[1].contains("tools.deny"), "the rule's error: {}", r[1]);
    assert!(r[1].contains("curl -H"), "the arguments: {}", r[1]);

    // Filters.
    let exec = rows(&audit(&home, &["--tool", "exec"]));
    assert_eq!(exec.len(), 1);
    assert!(exec[0].contains("denied"), "{exec:?}");
    assert_eq!(
        audit(&home, &["--channel", "telegram"]).trim(),
        "No tool calls recorded."
    );
    assert_eq!(rows(&audit(&home, &["--channel", "terminal"])).len(), 2);
    assert_eq!(rows(&audit(&home, &["--since", "1h"])).len(), 2);
    assert_eq!(rows(&audit(&home, &["--since", "2000-01-01"])).len(), 2);
    assert_eq!(
        audit(&home, &["--since", "2999-01-01"]).trim(),
        "No tool calls recorded."
    );
    let newest = rows(&audit(&home, &["--limit", "1"]));
    assert_eq!(newest.len(), 1);
    assert!(newest[0].contains("exec"), "newest last: {newest:?}");
    let bad = home.run(&["audit", "--since", "yesterday"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
    assert!(
        text(&bad.stderr).contains("--since"),
        "{}",
        text(&bad.stderr)
    );

    // status counts today's calls and the refused ones.
    let status = succeeded(&home.run(&["status"]));
    assert!(
        status.contains("tool calls: today 2, 1 denied, refused or blocked"),
        "{status}"
    );
}

#[test]
fn approvals_at_the_terminal_are_recorded_as_approved_and_refused() {
    let model = tool_model(calls(&[("exec", r#"{"command":"echo ran >> ran.txt"}"#)]));
    let home = TempHome::onboarded("audit-approve", &config_for(&model.url(), ""));
    let mut child = home
        .cmd(&["agent"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        // The answer is read once the question is out; the fourth line answers the
        // second turn's question.
        stdin
            .write_all(b"please run it\n/yes\nand again\n/no\n")
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = rows(&audit(&home, &["--tool", "exec"]));
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(r[0].contains("approved"), "{}", r[0]);
    assert!(
        r[1].contains("refused") && r[1].contains("said no"),
        "{}",
        r[1]
    );
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("ran.txt")).unwrap(),
        "ran\n"
    );
}

#[test]
fn retention_deletes_rows_older_than_audit_days() {
    let model = tool_model(calls(&[("list_dir", r#"{"path":"."}"#)]));
    let home = TempHome::onboarded(
        "audit-retention",
        &config_for(&model.url(), r#""memory":{"audit_days":30}"#),
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let old = (now - 40 * 86_400).to_string();
    let recent = (now - 20 * 86_400).to_string();
    succeeded(&agent(&home, "old", &[(hook("YOCTOCLAW_TEST_NOW"), &old)]));
    succeeded(&agent(
        &home,
        "recent",
        &[(hook("YOCTOCLAW_TEST_NOW"), &recent)],
    ));
    assert_eq!(rows(&audit(&home, &[])).len(), 2);
    // `agent` runs retention at start: the 40-day-old row goes, the 20-day-old stays.
    succeeded(&agent(&home, "now", &[]));
    let r = rows(&audit(&home, &[]));
    assert_eq!(r.len(), 2, "{r:?}");
    let day = |secs: u64| {
        let d = yoctoclaw::time::civil::CivilDateTime::from_unix(secs as i64);
        format!("{:04}-{:02}-{:02}", d.year, d.month, d.day)
    };
    assert!(r[0].starts_with(&day(now - 20 * 86_400)), "{r:?}");
    assert!(
        !r.iter().any(|l| l.starts_with(&day(now - 40 * 86_400))),
        "{r:?}"
    );
}

#[test]
fn a_full_database_while_the_trail_is_written_loses_no_turn() {
    // Arguments of a page and more: the audit row needs a new page, which the full
    // database (the test hook) refuses with SQLITE_FULL.
    let long = format!(r#"{{"path":"{}"}}"#, "n".repeat(1500));
    let model = tool_model(calls(&[("read_file", &long)]));
    let home = TempHome::onboarded("audit-full", &config_for(&model.url(), ""));
    let out = agent(
        &home,
        "first question",
        &[(hook("YOCTOCLAW_TEST_AUDIT_FULL"), "1")],
    );
    assert_eq!(succeeded(&out).trim(), "done");
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("audit trail could not record"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("full"), "{}", lines[0]);
    assert_eq!(audit(&home, &[]).trim(), "No tool calls recorded.");
    // The turn's messages were kept: the next turn's request carries them.
    succeeded(&agent(&home, "second question", &[]));
    let reqs = model.requests_to("/chat/completions");
    let last = &reqs.last().unwrap().body;
    assert!(last.contains("first question"), "{last}");
    assert!(last.contains("\"role\":\"tool\""), "{last}");
    // And the trail works again once there is room.
    assert_eq!(rows(&audit(&home, &[])).len(), 1);
}
