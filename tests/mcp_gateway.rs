//! MCP servers' tools through the real gateway: the binary against the fake Bot API and a
//! fake OpenAI-compatible model, with the official Python SDK's `MCPServer` over stdio
//! (tests/fixtures/mcp/stdio_server.py) as the server. The model asks for `SERVER__TOOL`
//! calls; the checks are on what the model was offered (names, cleaned schemas, deny
//! lists), what reached the server, what came back to the model's next request and what
//! the chat got; approval under `supervised` and `read_only`, trusted servers.
//!
//! The tests skip loudly (`support::skipped`; a failure under `YOCTOCLAW_NO_SKIP=1`) when
//! `python3` or its `mcp` package is missing; `.ci/run` installs it.

mod support;

use miniserde::json::Value;
use std::path::{Path, PathBuf};
use support::fake_http::{
    FakeServer, Response, json_str, last_message, openai_text, openai_tool_calls,
};
use support::fake_telegram::FakeTelegram;
use support::gateway::{FAST_BACKOFF, Gateway};
use support::{TempHome, config_for, sdk_python};
use yoctoclaw::json::{self, as_array, get, parse_value, str_at};

const ALICE: i64 = 42;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/stdio_server.py")
}

/// One `mcp.servers` entry running the SDK fixture, recording to `record`.
fn server(python: &str, record: &Path, extra: &str) -> String {
    format!(
        r#"{{"command":{},"args":[{},{}]{extra}}}"#,
        json_str(python),
        json_str(&fixture().to_string_lossy()),
        json_str(&record.to_string_lossy())
    )
}

fn config(model: &FakeServer, tg: &FakeTelegram, servers: &str, agent: &str) -> String {
    config_for(
        &model.url(),
        &format!(
            r#""agent":{{{agent}}},"mcp":{{"servers":{{{servers}}}}},"telegram":{{"enabled":true,"api_base":"{}","allow_from":["{ALICE}"],"poll_timeout_secs":1,"deny_tools":["demo__env"]}}"#,
            tg.url()
        ),
    )
}

/// A model that, when the user wrote `call NAME {ARGS}`, calls NAME with ARGS, and once
/// the result is in answers `got: RESULT`.
fn model() -> FakeServer {
    FakeServer::start(|req| {
        if !req.path.ends_with("/v1/chat/completions") {
            return Response::json(404, r#"{"error":{"message":"no route"}}"#);
        }
        let (role, content) = last_message(&req.body);
        if role == "tool" {
            let content = support::unfence(&content);
            return Response::json(200, &openai_text(&format!("got: {content}")));
        }
        let Some((name, args)) = content
            .strip_prefix("call ")
            .and_then(|c| c.split_once(' '))
        else {
            return Response::json(200, &openai_text("nothing to call"));
        };
        Response::json(200, &openai_tool_calls(&[(name, args)], None))
    })
}

fn texts(tg: &FakeTelegram) -> Vec<String> {
    tg.sent_to(ALICE).into_iter().map(|s| s.text).collect()
}

fn count(tg: &FakeTelegram, needle: &str) -> usize {
    texts(tg).iter().filter(|t| t.contains(needle)).count()
}

/// Send `text` and wait for the chat's `n`th reply starting `got: `.
fn ask(g: &mut Gateway, tg: &FakeTelegram, text: &str, n: usize) -> String {
    tg.push_private(ALICE, "alice", text);
    g.wait_for(text, || count(tg, "got: ") >= n);
    texts(tg)
        .into_iter()
        .filter(|t| t.starts_with("got: "))
        .nth(n - 1)
        .unwrap()
}

/// The tools offered in the model's first request, by name.
fn offered(model: &FakeServer) -> Vec<Value> {
    let reqs = model.requests_to("/chat/completions");
    let v = parse_value(&reqs[0].body).expect("request JSON");
    get(&v, "tools")
        .and_then(as_array)
        .map(|a| a.to_vec())
        .unwrap_or_default()
}

fn tool_named<'a>(tools: &'a [Value], name: &str) -> Option<&'a Value> {
    tools
        .iter()
        .find(|t| json::path(t, &["function", "name"]).and_then(json::as_str) == Some(name))
}

/// The tool results the model got, in order, without their fences (`support::unfence`:
/// MCP results are untrusted content).
fn tool_results(model: &FakeServer) -> Vec<String> {
    model
        .requests_to("/chat/completions")
        .iter()
        .map(|r| last_message(&r.body))
        .filter(|(role, _)| role == "tool")
        .map(|(_, c)| support::unfence(&c))
        .collect()
}

fn start(home: &TempHome) -> Gateway {
    Gateway::start(home, &[FAST_BACKOFF, ("RUST_LOG", "info")])
}

#[test]
fn a_trusted_servers_tools_are_offered_called_and_answered_without_asking() {
    let what = "mcp gateway: trusted server";
    let Some(py) = sdk_python(what) else { return };
    let model = model();
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("mcp-gw-trusted", "{}");
    let record = home.dir.join("record.txt");
    home.write_config(&config(
        &model,
        &tg,
        &format!(r#""demo":{}"#, server(&py, &record, r#","trust":true"#)),
        "",
    ));
    let mut g = start(&home);
    // Its tools are not known yet: the gateway starts it once to learn them.
    g.wait_for_log("mcp demo: started to learn its tools (9 tool(s)");

    // A call reaches the SDK server; its result the model's next request; the answer
    // the chat. Supervised autonomy, but the server is trusted: nobody is asked.
    let got = ask(&mut g, &tg, r#"call demo__add {"a":2,"b":3}"#, 1);
    assert_eq!(got, "got: 5");
    assert_eq!(tool_results(&model), ["5"]);
    assert_eq!(count(&tg, "Approve?"), 0);
    let rec = std::fs::read_to_string(&record).unwrap_or_default();
    assert_eq!(
        rec.matches("started").count(),
        1,
        "started on first use: {rec}"
    );

    // The model was offered the server's tools under SERVER__TOOL, the schema as the
    // SDK wrote it, without the length bounds a grammar-constrained server unrolls.
    let tools = offered(&model);
    let add = tool_named(&tools, "demo__add").expect("demo__add offered");
    let params = json::path(add, &["function", "parameters"]).unwrap();
    assert_eq!(str_at(params, "type"), Some("object"));
    assert!(
        json::path(params, &["properties", "a"]).is_some(),
        "{}",
        json::to_string(params)
    );
    let shout = tool_named(&tools, "demo__shout").expect("demo__shout offered");
    let text = json::path(shout, &["function", "parameters", "properties", "text"]).unwrap();
    assert_eq!(str_at(text, "description"), Some("What to shout"));
    assert!(
        get(text, "maxLength").is_none(),
        "{}",
        json::to_string(text)
    );
    assert_eq!(
        json::path(shout, &["function", "description"]).and_then(json::as_str),
        Some("Return the text in capitals.")
    );
    assert!(
        tool_named(&tools, "read_file").is_some(),
        "built-ins still offered"
    );
    // Denied on Telegram (`telegram.deny_tools`): not offered, and a call refused.
    assert!(tool_named(&tools, "demo__env").is_none());
    let got = ask(&mut g, &tg, "call demo__env {}", 2);
    assert_eq!(
        got,
        "got: error: refused: demo__env is not available on telegram (telegram.deny_tools)"
    );

    // isError: the tool's own message, as an error the model reads.
    let got = ask(
        &mut g,
        &tg,
        r#"call demo__fail {"reason":"no such city"}"#,
        3,
    );
    assert_eq!(
        got,
        "got: error: failed: Error executing tool fail: no such city"
    );
    // A call the server refuses (arguments against its schema) is an error too.
    let got = ask(&mut g, &tg, r#"call demo__add {"a":"x"}"#, 4);
    assert!(got.starts_with("got: error: failed: "), "{got}");

    let log = g.log();
    g.stop();
    assert!(!log.contains("panicked"), "{log}");
    // The gateway recorded the server for `status` and `mcp list`.
    let out = home.run(&["mcp", "list"]);
    let list = String::from_utf8_lossy(&out.stdout);
    assert!(list.contains("demo") && list.contains("stdio"), "{list}");
}

#[test]
fn supervised_asks_on_telegram_for_an_untrusted_server() {
    let what = "mcp gateway: supervised approval";
    let Some(py) = sdk_python(what) else { return };
    let model = model();
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("mcp-gw-ask", "{}");
    let record = home.dir.join("record.txt");
    home.write_config(&config(
        &model,
        &tg,
        &format!(r#""demo":{}"#, server(&py, &record, "")),
        "",
    ));
    let mut g = start(&home);
    g.wait_for_log("mcp demo: started to learn its tools");

    const ASK: &str = r#"Approve? demo: add {"a":2,"b":40}"#;
    tg.push_private(ALICE, "alice", r#"call demo__add {"a":2,"b":40}"#);
    g.wait_for("the question", || count(&tg, ASK) == 1);
    assert!(
        tool_results(&model).is_empty(),
        "nothing ran before the answer"
    );
    tg.push_private(ALICE, "alice", "/yes");
    g.wait_for("the answer", || count(&tg, "got: 42") == 1);
    assert_eq!(count(&tg, r#"Approved: demo: add {"a":2,"b":40}"#), 1);

    tg.push_private(ALICE, "alice", r#"call demo__echo {"text":"hi"}"#);
    g.wait_for("the second question", || {
        count(&tg, r#"Approve? demo: echo {"text":"hi"}"#) == 1
    });
    tg.push_private(ALICE, "alice", "/no");
    g.wait_for("the refusal", || {
        count(&tg, "got: error: refused: the user said no") == 1
    });
    assert_eq!(tool_results(&model).len(), 2);
    g.stop();
}

#[test]
fn read_only_refuses_untrusted_servers_and_runs_trusted_ones_started_at_boot() {
    let what = "mcp gateway: read_only";
    let Some(py) = sdk_python(what) else { return };
    let model = model();
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("mcp-gw-ro", "{}");
    let (rec_demo, rec_sure) = (home.dir.join("demo.txt"), home.dir.join("sure.txt"));
    let servers = format!(
        r#""demo":{},"sure":{}"#,
        server(&py, &rec_demo, ""),
        server(&py, &rec_sure, r#","trust":true,"start":"boot""#)
    );
    home.write_config(&config(&model, &tg, &servers, r#""autonomy":"read_only""#));
    let mut g = start(&home);
    // `start: boot`: the trusted server runs before anyone calls it.
    g.wait_for_log("mcp sure: started with");
    g.wait_for_log("mcp demo: started to learn its tools");
    assert!(
        std::fs::read_to_string(&rec_sure)
            .unwrap_or_default()
            .contains("started")
    );

    let got = ask(&mut g, &tg, r#"call demo__add {"a":1,"b":1}"#, 1);
    assert!(
        got.starts_with("got: error: refused: autonomy is read_only: demo__add is not allowed"),
        "{got}"
    );
    assert!(got.contains("\"trust\": true"), "{got}");
    let got = ask(&mut g, &tg, r#"call sure__add {"a":1,"b":1}"#, 2);
    assert_eq!(got, "got: 2");
    assert_eq!(count(&tg, "Approve?"), 0);
    g.stop();
}
