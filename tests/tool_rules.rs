//! Tool rules per channel end to end (docs/DECISIONS.md 87): the real binary, a fake
//! Telegram and fake OpenAI-compatible models. With `telegram.deny_tools: ["exec"]` the
//! model's requests on Telegram carry no `exec` tool while the terminal's do; an `exec`
//! call on Telegram anyway (native, or in the text fallback) is refused with a sentence
//! naming the key and the command never runs (under full autonomy, which would run it);
//! `status` lists each channel's tools.

mod support;

use std::time::Duration;
use support::fake_http::{
    FakeServer, Request, chat_bodies, json_str, openai_text, openai_tool_call,
};
use support::fake_telegram::FakeTelegram;
use support::gateway::{FAST_BACKOFF, Gateway};
use support::{TempHome, config_for, text};
use yoctoclaw::json::{as_array, parse_value, path, str_at};

const ALICE: i64 = 42;
const REFUSAL: &str = "refused: exec is not available on telegram (telegram.deny_tools)";

fn config(llm: &FakeServer, tg: &FakeTelegram) -> String {
    config_for(
        &llm.url(),
        &format!(
            r#""telegram":{{"enabled":true,"api_base":"{}","allow_from":["{ALICE}"],"poll_timeout_secs":1,"deny_tools":["exec"]}},
               "tools":{{"deny":["system"]}},"agent":{{"autonomy":"full"}}"#,
            tg.url()
        ),
    )
}

/// The tool names a Chat Completions request offers.
fn offered(req: &Request) -> Vec<String> {
    let v = parse_value(&req.body).expect("a JSON request");
    let Some(tools) = yoctoclaw::json::get(&v, "tools").and_then(as_array) else {
        return Vec::new();
    };
    tools
        .iter()
        .filter_map(|t| path(t, &["function"]).and_then(|f| str_at(f, "name")))
        .map(str::to_string)
        .collect()
}

#[test]
fn exec_denied_on_telegram_is_not_offered_there_and_a_call_anyway_is_refused() {
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("toolrules", "{}");
    // In the workspace, under full autonomy: exec would run it if it were let through.
    let marker = home.workspace().join("exec-ran");
    let cmd = json_str(&format!(r#"{{"command":"touch {}"}}"#, marker.display()));
    // The model calls exec natively, then in the text fallback, then answers.
    let text_call = format!(
        r#"<tool_call>{{"name":"exec","arguments":{{"command":"touch {}"}}}}</tool_call>"#,
        marker.display()
    );
    let llm = chat_bodies(
        vec![
            openai_tool_call("call_1", "exec", &cmd),
            openai_text(&text_call),
            openai_text("done"),
        ],
        Duration::ZERO,
    );
    // The terminal gets the global list only: exec is offered, system_info is not.
    let term_llm = chat_bodies(vec![openai_text("hello")], Duration::ZERO);
    home.write_config(&config(&term_llm, &tg));
    let out = home.run(&["agent", "-m", "hi"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let term = offered(&term_llm.requests_to("/chat/completions")[0]);
    assert!(term.iter().any(|t| t == "exec"), "{term:?}");
    assert!(term.iter().any(|t| t == "read_file"), "{term:?}");
    assert!(!term.iter().any(|t| t == "system_info"), "{term:?}");

    home.write_config(&config(&llm, &tg));
    tg.push_private(ALICE, "alice", "run it");
    let mut g = Gateway::start(&home, &[FAST_BACKOFF]);
    g.wait_for("the answer", || {
        tg.sent_to(ALICE).iter().any(|s| s.text.contains("done"))
    });
    let log = g.log();
    g.stop_cleanly();

    assert!(!marker.exists(), "a refused exec ran:\n{log}");
    let reqs = llm.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 3, "{log}");
    for r in &reqs[..2] {
        let tools = offered(r);
        assert!(
            !tools.iter().any(|t| t == "exec" || t == "system_info"),
            "{tools:?}"
        );
        assert_eq!(tools.len(), term.len() - 1, "{tools:?} vs {term:?}");
    }
    // The native call's tool result, then the text call's result, both the refusal.
    assert_eq!(reqs[1].body.matches(REFUSAL).count(), 1, "{}", reqs[1].body);
    assert_eq!(reqs[2].body.matches(REFUSAL).count(), 2, "{}", reqs[2].body);
    let sent = tg.sent_to(ALICE);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(!sent[0].text.contains("<tool_call>"), "{}", sent[0].text);

    // status: one line per channel.
    let out = home.run(&["status"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = text(&out.stdout);
    let line = |ch: &str| {
        let p = format!("tools on {ch}:");
        r.lines()
            .find_map(|l| l.strip_prefix(&p))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no {p} line in\n{r}"))
            .to_string()
    };
    assert_eq!(line("terminal"), "19 of 20, not system_info");
    assert_eq!(line("telegram"), "18 of 20, not exec system_info");
    assert_eq!(line("serial"), "19 of 20, not system_info");
    assert_eq!(line("heartbeat"), "19 of 20, not system_info");
    assert_eq!(line("cron"), "18 of 20, not exec system_info");
}
