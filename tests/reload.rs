//! Live reload end to end: the real gateway over a fake Bot API and a fake model, the
//! config file rewritten while it runs, then `yoctoclaw reload` (or SIGHUP). An
//! allowlist change takes effect without a restart, both ways; a file that does not load
//! (bad JSON, cut short, empty, a bad value) changes nothing and `reload` says what is
//! wrong; a restart-only key is named; SIGHUP alone works; a tool rule and the model
//! change at the next turn. Every "nothing changed" is shown by a reply (a refusal, an
//! answer), never by a sleep.

mod support;

use std::time::Duration;
use support::fake_http::{FakeServer, Request, chat_bodies, openai_text};
use support::fake_telegram::FakeTelegram;
use support::gateway::{FAST_BACKOFF, Gateway};
use support::{TempHome, config_for, text};
use yoctoclaw::json::{as_array, parse_value, path, str_at};

const ALICE: i64 = 42;
const BOB: i64 = 43;
const CAROL: i64 = 44;
const REFUSED: &str = "Sorry, I only talk to people on my allow list";

fn config(llm: &FakeServer, tg: &FakeTelegram, allow: &[i64], extra: &str) -> String {
    let allow: Vec<String> = allow.iter().map(|a| format!("\"{a}\"")).collect();
    config_for(
        &llm.url(),
        &format!(
            r#""telegram":{{"enabled":true,"api_base":"{}","allow_from":[{}],"poll_timeout_secs":1{extra}}}"#,
            tg.url(),
            allow.join(",")
        ),
    )
}

/// `yoctoclaw reload`: (success, stdout, stderr).
fn reload(home: &TempHome) -> (bool, String, String) {
    let out = home.run(&["reload"]);
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// Send `msg` from `user` and wait for a new message to them containing `want`.
fn said(g: &mut Gateway, tg: &FakeTelegram, user: i64, msg: &str, want: &str) {
    let before = tg.sent_to(user).len();
    tg.push_private(user, "someone", msg);
    g.wait_for(&format!("\"{want}\" to {user}"), || {
        tg.sent_to(user)[before..]
            .iter()
            .any(|s| s.text.contains(want))
    });
}

#[test]
fn the_allowlist_changes_without_a_restart_and_a_broken_file_changes_nothing() {
    let tg = FakeTelegram::start();
    let llm = chat_bodies(vec![openai_text("hello from the model")], Duration::ZERO);
    let home = TempHome::onboarded("reload-allow", "{}");
    home.write_config(&config(&llm, &tg, &[ALICE], ""));
    let mut g = Gateway::start(&home, &[FAST_BACKOFF]);
    said(&mut g, &tg, ALICE, "hi", "hello from the model");
    said(&mut g, &tg, BOB, "hi", REFUSED);

    // Bob added: answered after the reload, with no restart.
    home.write_config(&config(&llm, &tg, &[ALICE, BOB], ""));
    let (ok, out, err) = reload(&home);
    assert!(ok, "{out}{err}");
    assert!(out.contains("reloaded: applied"), "{out}");
    said(&mut g, &tg, BOB, "hello?", "hello from the model");

    // And the reverse: Alice removed is refused.
    home.write_config(&config(&llm, &tg, &[BOB], ""));
    assert!(reload(&home).0);
    said(&mut g, &tg, ALICE, "still there?", REFUSED);

    // Files that do not load change nothing, and `reload` says what is wrong and where.
    let whole = config(&llm, &tg, &[ALICE, BOB], "");
    let cut = &whole[..whole.len() / 2];
    let cases: [(&str, &str); 4] = [
        (cut, "is not valid JSON at line 1"),
        (
            "{\"telegram\": {\"allow_from\": [\"43\",]}}",
            "is not valid JSON",
        ),
        ("", "is empty or missing"),
        (
            r#"{"agent":{"autonomy":"yolo"}}"#,
            "config key \"agent.autonomy\" must be",
        ),
    ];
    for (file, why) in cases {
        home.write_config(file);
        let (ok, out, err) = reload(&home);
        assert!(!ok, "a broken file was applied: {out}");
        assert!(err.contains(why), "{file:?}: {err}");
        assert!(
            err.contains("refused, the running configuration is kept"),
            "{err}"
        );
    }
    assert!(
        g.log()
            .contains("refused, the running configuration is kept")
    );
    // Still Bob only: Bob answered, Alice refused (her refusal is rate-limited, so the
    // running list is shown through Bob, and Alice's refusal after the next reload).
    said(
        &mut g,
        &tg,
        BOB,
        "after the broken files",
        "hello from the model",
    );

    // A restart-only key is named (log and output); the rest still applies: Alice back.
    let webhook = r#","webhook_url":"https://bot.example.org/webhook/telegram""#;
    home.write_config(&config(&llm, &tg, &[ALICE, BOB], webhook));
    let (ok, out, err) = reload(&home);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("needs a restart to change: telegram.webhook_url"),
        "{out}"
    );
    g.wait_for_log(
        "changed but needing a restart (the running values stay until then): telegram.webhook_url",
    );
    said(&mut g, &tg, ALICE, "back?", "hello from the model");

    // SIGHUP alone does the same: Carol, never heard of, is answered.
    home.write_config(&config(&llm, &tg, &[ALICE, CAROL], ""));
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &g.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(hup.success());
    g.wait_for_log("reload 8: applied");
    said(&mut g, &tg, CAROL, "hi", "hello from the model");
    let status = home.run(&["status"]);
    assert!(
        text(&status.stdout).contains("reload:     8 at "),
        "{}",
        text(&status.stdout)
    );
    let out = g.stop_cleanly();
    assert!(!out.contains("panicked"), "{out}");

    // No gateway: one sentence, non-zero.
    let (ok, _, err) = reload(&home);
    assert!(!ok);
    assert!(err.contains("no gateway is running for"), "{err}");
}

/// The tool names and the model a Chat Completions request carries.
fn asked(req: &Request) -> (Vec<String>, String) {
    let v = parse_value(&req.body).expect("a JSON request");
    let tools = yoctoclaw::json::get(&v, "tools")
        .and_then(as_array)
        .map(|t| {
            t.iter()
                .filter_map(|t| path(t, &["function"]).and_then(|f| str_at(f, "name")))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    (tools, str_at(&v, "model").unwrap_or_default().to_string())
}

#[test]
fn a_tool_rule_and_the_model_change_at_the_next_turn() {
    let tg = FakeTelegram::start();
    let llm = chat_bodies(vec![openai_text("done")], Duration::ZERO);
    let home = TempHome::onboarded("reload-tools", "{}");
    home.write_config(&config(&llm, &tg, &[ALICE], ""));
    let mut g = Gateway::start(&home, &[FAST_BACKOFF]);
    said(&mut g, &tg, ALICE, "one", "done");
    let reqs = llm.requests_to("/chat/completions");
    let (tools, model) = asked(reqs.last().unwrap());
    assert!(tools.iter().any(|t| t == "exec"), "{tools:?}");
    assert_eq!(model, "fake-model");

    let cfg = config(&llm, &tg, &[ALICE], r#","deny_tools":["exec"]"#)
        .replace("\"fake-model\"", "\"fake-model-2\"");
    home.write_config(&cfg);
    let (ok, out, err) = reload(&home);
    assert!(ok, "{out}{err}");
    said(&mut g, &tg, ALICE, "two", "done");
    let reqs = llm.requests_to("/chat/completions");
    let (tools, model) = asked(reqs.last().unwrap());
    assert!(!tools.iter().any(|t| t == "exec"), "{tools:?}");
    assert!(tools.iter().any(|t| t == "read_file"), "{tools:?}");
    assert_eq!(model, "fake-model-2");
    g.stop_cleanly();
}
