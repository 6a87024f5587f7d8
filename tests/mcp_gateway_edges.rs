//! MCP servers' tools end to end, the cases tests/mcp_gateway.rs leaves out: deny lists
//! naming servers and the group `mcp`, a server's own allow/deny lists, structured and
//! image results (as text; the image itself is tests/mcp_images.rs's), arguments that are not an object, secrets in arguments and results,
//! the result cap, `provider.tool_mode` text and none, a small context window, a call
//! that times out, a server that crashes mid-call or changes its tools, one that cannot
//! start, the shutdown while a restart waits out its backoff, and the SDK's HTTP servers
//! (Streamable HTTP, legacy HTTP+SSE) through the gateway. The real gateway over the fake
//! Bot API and a fake OpenAI-compatible model, with real MCP servers built on the
//! official Python SDK (`mcp` 2.x, `MCPServer`): over stdio
//! tests/fixtures/mcp/gateway_server.py (tests/fixtures/mcp/stdio_server.py plus the
//! tools these tests need), over HTTP tests/fixtures/mcp/http_server.py.
//!
//! The fake model is driven by what the user says: a line `call NAME {json}` in the
//! user's message makes it call tool NAME with those arguments (native tool calls, or a
//! `<tool_call>` block in the answer's text under `provider.tool_mode: text`); once tool
//! results are in, it answers `result: ` and the results, so the chat shows what the
//! tool returned. What reached the server is read from its record file (`started PID`,
//! `note TEXT`), what reached the model from the fake's requests.
//!
//! Every test skips loudly (`support::skipped`; a failure under `YOCTOCLAW_NO_SKIP=1`)
//! when `python3` or its `mcp` package is missing; `.ci/run` installs it.

mod support;

use miniserde::json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::fake_http::{FakeServer, Request, Response, json_str, openai_text, openai_tool_calls};
use support::fake_telegram::FakeTelegram;
use support::gateway::{FAST_BACKOFF, Gateway, TOKEN_SECRET_PART};
use support::{TempHome, sdk_python, skipped};
use yoctoclaw::json::{as_array, as_str, get, parse_value, path, str_at, to_string};

const ALICE: i64 = 42;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/gateway_server.py")
}

// ---------------------------------------------------------------------------------
// The fake model.

/// The messages of a chat request.
fn messages(body: &str) -> Vec<Value> {
    parse_value(body)
        .ok()
        .and_then(|v| get(&v, "messages").and_then(as_array).cloned())
        .map(|a| a.to_vec())
        .unwrap_or_default()
}

/// `(name, arguments)` of every `call NAME {json}` line in `text`.
fn wanted_calls(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split_once("call ").map(|(_, rest)| rest.trim()))
        .filter_map(|rest| rest.split_once(' '))
        .map(|(name, args)| (name.to_string(), args.to_string()))
        .collect()
}

/// An answer calling `calls`: native tool calls, or `<tool_call>` blocks as text.
fn calling(calls: &[(String, String)], text_mode: bool) -> String {
    if text_mode {
        let blocks: Vec<String> = calls
            .iter()
            .map(|(n, a)| {
                format!(
                    r#"<tool_call>{{"name": {}, "arguments": {a}}}</tool_call>"#,
                    json_str(n)
                )
            })
            .collect();
        return openai_text(&blocks.join("\n"));
    }
    openai_tool_calls(calls, None)
}

/// The model described in the header.
fn model() -> FakeServer {
    FakeServer::start(|req: &Request| {
        if !req.path.ends_with("/v1/chat/completions") {
            return Response::json(404, r#"{"error":{"message":"no route"}}"#);
        }
        let mut msgs = messages(&req.body);
        // The images of tool results (a user message after the tool messages) are seen,
        // not answered: the results before them are.
        if msgs.last().is_some_and(is_images) {
            msgs.pop();
        }
        let Some(last) = msgs.last() else {
            return Response::json(400, r#"{"error":{"message":"no messages"}}"#);
        };
        let content = str_at(last, "content").unwrap_or("");
        let text_mode = !req.body.contains(r#""tools":["#);
        let answer = match str_at(last, "role") {
            Some("tool") => {
                let start = msgs
                    .iter()
                    .rposition(|m| str_at(m, "role") == Some("assistant"))
                    .map_or(0, |i| i + 1);
                let results: Vec<String> = msgs[start..]
                    .iter()
                    .filter_map(|m| str_at(m, "content"))
                    .map(support::unfence)
                    .collect();
                openai_text(&format!("result: {}", results.join(" | ")))
            }
            Some("user") if content.contains("<tool_result") => {
                openai_text(&format!("result: {content}"))
            }
            Some("user") if !wanted_calls(content).is_empty() => {
                calling(&wanted_calls(content), text_mode)
            }
            _ => openai_text("nothing to call"),
        };
        // Usage as a 4-bytes-a-token tokenizer would count it (the agent calibrates on
        // it when it fits a small window).
        let answer = answer.replace(
            "\"prompt_tokens\":10",
            &format!("\"prompt_tokens\":{}", req.body.len() / 4),
        );
        Response::json(200, &answer)
    })
}

/// The user message that carries the images of a round's tool results (a vision model's:
/// its first part names the tool call).
fn is_images(m: &Value) -> bool {
    str_at(m, "role") == Some("user")
        && get(m, "content")
            .and_then(as_array)
            .and_then(|p| p.first())
            .and_then(|p| str_at(p, "text"))
            .is_some_and(|t| t.starts_with("The images returned by tool call"))
}

/// The bodies of the model's requests, as JSON.
fn requests(llm: &FakeServer) -> Vec<Value> {
    llm.requests_to("/chat/completions")
        .iter()
        .map(|r| parse_value(&r.body).expect("a request is JSON"))
        .collect()
}

/// The tool results (role `tool`) of the latest turn, as the model's latest request
/// carried them: those after the turn's user message.
fn results(llm: &FakeServer) -> Vec<String> {
    let reqs = requests(llm);
    let msgs: Vec<&Value> = reqs
        .last()
        .and_then(|r| get(r, "messages").and_then(as_array))
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    let turn = msgs
        .iter()
        .rposition(|m| str_at(m, "role") == Some("user") && !is_images(m))
        .unwrap_or(0);
    msgs[turn..]
        .iter()
        .filter(|m| str_at(m, "role") == Some("tool"))
        // MCP results are untrusted content: compared without their fence.
        .filter_map(|m| str_at(m, "content").map(support::unfence))
        .collect()
}

/// The tools offered in request `i`: `(name, description, parameters)`.
fn offered(llm: &FakeServer, i: usize) -> Vec<(String, String, Value)> {
    let reqs = requests(llm);
    let tools = get(&reqs[i], "tools").and_then(as_array);
    tools
        .map(|l| {
            l.iter()
                .filter_map(|t| get(t, "function"))
                .map(|f| {
                    (
                        str_at(f, "name").unwrap_or("").to_string(),
                        str_at(f, "description").unwrap_or("").to_string(),
                        get(f, "parameters").cloned().unwrap_or(Value::Null),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn names(tools: &[(String, String, Value)]) -> Vec<&str> {
    tools.iter().map(|t| t.0.as_str()).collect()
}

// ---------------------------------------------------------------------------------
// The rig.

/// Extra keys of the config's sections (each empty or `"key":value,...`).
#[derive(Default)]
struct Extra {
    agent: &'static str,
    telegram: &'static str,
    provider: &'static str,
    /// Top-level keys.
    top: &'static str,
}

/// A gateway's world: the fake model and Bot API, a home, and MCP servers named in
/// `servers` (`(name, extra keys of its entry)`), each the fixture with its own record
/// file, started at boot unless the extra keys say otherwise.
struct Rig {
    llm: FakeServer,
    tg: FakeTelegram,
    home: TempHome,
}

impl Rig {
    fn new(tag: &str, py: &str, servers: &[(&str, &str)], x: Extra) -> Rig {
        let llm = model();
        let tg = FakeTelegram::start();
        let home = TempHome::new(tag);
        let entries: Vec<String> = servers
            .iter()
            .map(|(name, extra)| {
                let record = home.dir.join(format!("{name}.record"));
                let start = if extra.contains("\"start\"") {
                    ""
                } else {
                    r#","start":"boot""#
                };
                format!(
                    r#"{}:{{"command":{},"args":[{},{}]{start}{extra}}}"#,
                    json_str(name),
                    json_str(py),
                    json_str(&fixture().to_string_lossy()),
                    json_str(&record.to_string_lossy()),
                )
            })
            .collect();
        let sep = |s: &str| {
            if s.is_empty() {
                String::new()
            } else {
                format!(",{s}")
            }
        };
        let config = format!(
            r#"{{"provider":{{"base_url":"{}/v1","model":"fake-model"{}}},"agent":{{"max_tool_iterations":4{}}},"telegram":{{"enabled":true,"api_base":"{}","allow_from":["{ALICE}"],"poll_timeout_secs":1{}}},"mcp":{{"servers":{{{}}}}}{}}}"#,
            llm.url(),
            sep(x.provider),
            sep(x.agent),
            tg.url(),
            sep(x.telegram),
            entries.join(","),
            sep(x.top)
        );
        let out = home.cmd(&["onboard"]).output().expect("run onboard");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        home.write_config(&config);
        Rig { llm, tg, home }
    }

    /// The gateway, once every server of `boot` has started (its record says so and
    /// the log says its tools are known).
    fn start(&self, boot: &[&str]) -> Gateway {
        let mut g = Gateway::start(&self.home, &[FAST_BACKOFF]);
        for name in boot {
            g.wait_for(&format!("{name} to start"), || {
                self.recorded(name).contains("started ")
            });
            g.wait_for_log(&format!("mcp {name}: started with"));
        }
        g
    }

    fn recorded(&self, server: &str) -> String {
        std::fs::read_to_string(self.home.dir.join(format!("{server}.record"))).unwrap_or_default()
    }

    /// The process ids the server `name` was started as.
    fn pids(&self, name: &str) -> Vec<u32> {
        self.recorded(name)
            .lines()
            .filter_map(|l| l.strip_prefix("started ")?.trim().parse().ok())
            .collect()
    }

    fn texts(&self) -> Vec<String> {
        self.tg.sent_to(ALICE).into_iter().map(|s| s.text).collect()
    }

    fn count(&self, needle: &str) -> usize {
        self.texts().iter().filter(|t| t.contains(needle)).count()
    }

    /// Alice says `text`; waits for the `n`th message starting `result: ` (counting
    /// every such message of the test) and returns it.
    fn ask(&self, g: &mut Gateway, text: &str, n: usize) -> String {
        self.tg.push_private(ALICE, "alice", text);
        g.wait_for("the answer", || self.count("result: ") >= n);
        self.texts()
            .into_iter()
            .filter(|t| t.contains("result: "))
            .nth(n - 1)
            .unwrap()
    }
}

/// Whether process `pid` still runs (a zombie, waiting for a parent that is gone, does
/// not).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit_once(") ").map(|(_, r)| r.chars().next());
            !matches!(state, Some(Some('Z' | 'X')))
        }
        Err(_) => false,
    }
}

// ---------------------------------------------------------------------------------
// The tests.

#[test]
fn a_tool_is_offered_with_its_schema_cleaned_called_and_its_result_reaches_model_and_chat() {
    let Some(py) = sdk_python("the SDK's stdio server") else {
        return;
    };
    let rig = Rig::new(
        "mcp-call",
        &py,
        &[("demo", r#","trust":true"#)],
        Extra::default(),
    );
    let mut g = rig.start(&["demo"]);

    let answer = rig.ask(&mut g, r#"call demo__add {"a":2,"b":3}"#, 1);
    assert_eq!(
        results(&rig.llm),
        ["5"],
        "the tool's text part, nothing else"
    );
    assert_eq!(answer, "result: 5");

    // The offer: the server's tools beside the built-in ones, named SERVER__TOOL, with
    // the server's descriptions and schemas, cleaned of length bounds.
    let tools = offered(&rig.llm, 0);
    let n = names(&tools);
    for t in [
        "read_file",
        "demo__add",
        "demo__note",
        "demo__fail",
        "demo__echo",
    ] {
        assert!(n.contains(&t), "{t} not offered: {n:?}");
    }
    let add = tools.iter().find(|t| t.0 == "demo__add").unwrap();
    assert_eq!(add.1, "Add two integers.");
    assert_eq!(str_at(&add.2, "type"), Some("object"));
    for p in ["a", "b"] {
        assert_eq!(
            path(&add.2, &["properties", p, "type"]).and_then(as_str),
            Some("integer"),
            "{:?}",
            to_string(&add.2)
        );
    }
    let note = tools.iter().find(|t| t.0 == "demo__note").unwrap();
    let schema = to_string(&note.2);
    for bound in ["maxLength", "minLength", "maxItems", "minItems"] {
        assert!(!schema.contains(bound), "{bound} left in: {schema}");
    }
    assert_eq!(
        path(&note.2, &["properties", "text", "description"]).and_then(as_str),
        Some("What to write down."),
        "{schema}"
    );
    assert_eq!(
        path(&note.2, &["properties", "tags", "items", "type"]).and_then(as_str),
        Some("string"),
        "{schema}"
    );
    let required = path(&note.2, &["required"]).map(to_string);
    assert_eq!(required.as_deref(), Some(r#"["text"]"#), "{schema}");

    // The arguments reach the server as the model gave them.
    let answer = rig.ask(
        &mut g,
        r#"call demo__note {"text":"buy milk","tags":["home"]}"#,
        2,
    );
    assert_eq!(answer, "result: noted: buy milk");
    assert!(rig.recorded("demo").contains("note buy milk\n"));

    // Structured output: the server's text part (its JSON), the numbers there.
    let answer = rig.ask(&mut g, r#"call demo__weather {"city":"Oslo"}"#, 3);
    let r = results(&rig.llm);
    assert!(r[0].contains("Oslo") && r[0].contains("21.5"), "{r:?}");
    assert!(answer.contains("21.5"), "{answer}");

    // An image: never its base64 in the text; a line saying what it was. The model
    // (vision by default) got the image itself after the tool message
    // (tests/mcp_images.rs checks its place and bounds).
    rig.ask(&mut g, "call demo__picture {}", 4);
    let r = results(&rig.llm);
    assert!(r[0].contains("image/png"), "{r:?}");
    assert!(
        !r[0].contains("iVBORw0KGgo"),
        "the image's bytes reached the text: {r:?}"
    );
    let last = requests(&rig.llm).pop().unwrap();
    let msgs = get(&last, "messages").and_then(as_array).unwrap();
    assert!(is_images(msgs.last().unwrap()), "{}", to_string(&last));

    // The manager's own worker beside the gateway's two, each name once.
    let mut threads: Vec<String> = std::fs::read_dir(format!("/proc/{}/task", g.pid()))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|c| c.trim().to_string())
        .filter(|c| c.starts_with("yc-worker") || c.starts_with("yc-mcp"))
        .collect();
    threads.sort();
    assert_eq!(threads, ["yc-mcp-0", "yc-worker-0", "yc-worker-1"]);

    let pids = rig.pids("demo");
    assert_eq!(
        pids.len(),
        1,
        "one server for every call: {}",
        rig.recorded("demo")
    );
    assert!(running(pids[0]));
    let out = g.stop_cleanly();
    assert!(!running(pids[0]), "the server outlived the gateway:\n{out}");
    assert_eq!(
        rig.count("Approve?"),
        0,
        "a trusted server is not asked about"
    );
}

#[test]
fn an_error_result_and_bad_arguments_reach_the_model_as_tool_errors() {
    let Some(py) = sdk_python("the SDK's stdio server") else {
        return;
    };
    let rig = Rig::new(
        "mcp-error",
        &py,
        &[("demo", r#","trust":true"#)],
        Extra::default(),
    );
    let mut g = rig.start(&["demo"]);

    // isError: true, from the tool itself.
    let answer = rig.ask(
        &mut g,
        r#"call demo__fail {"reason":"the door is locked"}"#,
        1,
    );
    let r = results(&rig.llm);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].starts_with("error: "), "an error result: {r:?}");
    assert!(r[0].contains("the door is locked"), "{r:?}");
    assert!(answer.contains("the door is locked"), "{answer}");

    // The SDK's own validation (isError: true) for arguments of the wrong type.
    rig.ask(&mut g, r#"call demo__add {"a":"two","b":3}"#, 2);
    let r = results(&rig.llm);
    assert!(r[0].starts_with("error: "), "{r:?}");
    assert!(r[0].contains("valid integer"), "{r:?}");

    // Arguments that are not a JSON object never leave for the server.
    rig.ask(&mut g, r#"call demo__note ["x"]"#, 3);
    let r = results(&rig.llm);
    assert!(r[0].starts_with("error: "), "{r:?}");
    assert!(
        !rig.recorded("demo").contains("note "),
        "{}",
        rig.recorded("demo")
    );

    // The gateway and the server go on.
    let answer = rig.ask(&mut g, r#"call demo__add {"a":20,"b":22}"#, 4);
    assert_eq!(answer, "result: 42");
    assert_eq!(rig.pids("demo").len(), 1);
    g.stop_cleanly();
}

#[test]
fn deny_lists_name_mcp_tools_servers_and_the_group() {
    let Some(py) = sdk_python("the SDK's stdio server") else {
        return;
    };
    // Telegram denies one tool of `demo`; `tools.deny` every tool of `other`; `demo`'s
    // own entry offers only add, note and echo, and denies echo.
    let rig = Rig::new(
        "mcp-deny",
        &py,
        &[
            (
                "demo",
                r#","trust":true,"allow_tools":["add","note","echo"],"deny_tools":["echo"]"#,
            ),
            ("other", r#","trust":true"#),
        ],
        Extra {
            telegram: r#""deny_tools":["demo__note"]"#,
            top: r#""tools":{"deny":["other__*"]}"#,
            ..Extra::default()
        },
    );
    let mut g = rig.start(&["demo", "other"]);
    let answer = rig.ask(&mut g, r#"call demo__note {"text":"secret plan"}"#, 1);
    let tools = offered(&rig.llm, 0);
    let mcp: Vec<&str> = names(&tools)
        .into_iter()
        .filter(|n| n.contains("__"))
        .collect();
    assert_eq!(mcp, ["demo__add"], "{:?}", names(&tools));
    let r = results(&rig.llm);
    assert!(r[0].starts_with("error: refused"), "{r:?}");
    assert!(
        r[0].contains("telegram.deny_tools"),
        "the key that denies it: {r:?}"
    );
    assert!(answer.contains("refused"), "{answer}");
    // The turn ran the refused call before its answer: the server never saw it.
    assert!(
        !rig.recorded("demo").contains("note "),
        "{}",
        rig.recorded("demo")
    );

    // A tool the server's own entry leaves out, and one of a denied server: refused.
    rig.ask(&mut g, r#"call demo__echo {"text":"x"}"#, 2);
    let r = results(&rig.llm);
    assert!(r[0].starts_with("error: "), "{r:?}");
    rig.ask(
        &mut g,
        r#"call other__note {"text":"through the back door"}"#,
        3,
    );
    let r = results(&rig.llm);
    assert!(r[0].starts_with("error: refused"), "{r:?}");
    assert!(r[0].contains("tools.deny"), "{r:?}");
    assert!(
        !rig.recorded("other").contains("note "),
        "{}",
        rig.recorded("other")
    );
    g.stop_cleanly();

    // The group `mcp`: no MCP tool offered at all, a call refused.
    let rig = Rig::new(
        "mcp-deny-all",
        &py,
        &[("demo", r#","trust":true"#)],
        Extra {
            telegram: r#""deny_tools":["mcp"]"#,
            ..Extra::default()
        },
    );
    let mut g = rig.start(&["demo"]);
    rig.ask(&mut g, r#"call demo__note {"text":"x"}"#, 1);
    let tools = offered(&rig.llm, 0);
    assert!(names(&tools).contains(&"read_file"), "{:?}", names(&tools));
    assert!(
        !names(&tools).iter().any(|n| n.starts_with("demo__")),
        "{:?}",
        names(&tools)
    );
    let r = results(&rig.llm);
    assert!(r[0].starts_with("error: refused"), "{r:?}");
    assert!(!rig.recorded("demo").contains("note "));
    g.stop_cleanly();
}

#[test]
fn text_tool_mode_describes_mcp_tools_in_the_prompt() {
    let Some(py) = sdk_python("the SDK's stdio server") else {
        return;
    };
    let rig = Rig::new(
        "mcp-text",
        &py,
        &[("demo", r#","trust":true"#)],
        Extra {
            provider: r#""tool_mode":"text""#,
            ..Extra::default()
        },
    );
    let mut g = rig.start(&["demo"]);
    rig.ask(&mut g, r#"call demo__add {"a":1,"b":2}"#, 1);
    let reqs = requests(&rig.llm);
    assert!(get(&reqs[0], "tools").is_none(), "text mode sends no tools");
    let content = |r: &Value, first: bool| {
        let m = get(r, "messages").and_then(as_array);
        let m = if first {
            m.and_then(|m| m.first())
        } else {
            m.and_then(|m| m.last())
        };
        m.and_then(|m| str_at(m, "content"))
            .unwrap_or("")
            .to_string()
    };
    let system = content(&reqs[0], true);
    assert!(
        system.contains("- demo__add: Add two integers. Arguments: {"),
        "{system}"
    );
    let back = content(reqs.last().unwrap(), false);
    assert!(
        back.contains("<tool_result name=\"demo__add\">\n<untrusted source=\"demo__add\">\n3\n</untrusted>\n</tool_result>"),
        "{back}"
    );
    g.stop_cleanly();
}

#[test]
fn tool_mode_none_offers_no_mcp_tool() {
    let Some(py) = sdk_python("the SDK's stdio server") else {
        return;
    };
    let rig = Rig::new(
        "mcp-none",
        &py,
        &[("demo", r#","trust":true"#)],
        Extra {
            provider: r#""tool_mode":"none""#,
            ..Extra::default()
        },
    );
    let mut g = rig.start(&["demo"]);
    rig.tg
        .push_private(ALICE, "alice", r#"call demo__add {"a":1,"b":2}"#);
    g.wait_for("the answer", || !rig.texts().is_empty());
    let reqs = requests(&rig.llm);
    assert!(get(&reqs[0], "tools").is_none(), "no tools offered");
    let body = &rig.llm.requests_to("/chat/completions")[0].body;
    assert!(!body.contains("Add two integers"), "{body}");
    g.stop_cleanly();
}

#[test]
fn a_first_use_server_is_offered_from_the_first_turn_and_started_by_its_first_call() {
    let Some(py) = sdk_python("the SDK's stdio server") else {
        return;
    };
    let rig = Rig::new(
        "mcp-first-use",
        &py,
        &[("demo", r#","trust":true,"start":"first_use""#)],
        Extra::default(),
    );
    let mut g = rig.start(&[]);
    // Its tools are not known yet: the gateway starts it once to learn them.
    g.wait_for_log("mcp demo: started to learn its tools");
    let answer = rig.ask(&mut g, r#"call demo__add {"a":4,"b":5}"#, 1);
    assert_eq!(answer, "result: 9");
    let first = offered(&rig.llm, 0);
    assert!(
        names(&first).contains(&"demo__add"),
        "the first request offers the server's tools: {:?}",
        names(&first)
    );
    assert_eq!(rig.pids("demo").len(), 1);
    g.stop_cleanly();
}

#[test]
fn a_server_that_cannot_start_leaves_the_others_and_the_gateway_working() {
    let Some(py) = sdk_python("the SDK's stdio server") else {
        return;
    };
    let rig = Rig::new(
        "mcp-broken",
        &py,
        &[("demo", r#","trust":true"#)],
        Extra::default(),
    );
    let cfg = std::fs::read_to_string(rig.home.dir.join("config.json")).unwrap();
    let cfg = cfg.replacen(
        r#""servers":{"#,
        r#""servers":{"broken":{"command":"/nonexistent/yc-mcp-server","start":"boot","trust":true},"#,
        1,
    );
    rig.home.write_config(&cfg);
    let mut g = rig.start(&["demo"]);
    let answer = rig.ask(&mut g, r#"call demo__add {"a":1,"b":1}"#, 1);
    assert_eq!(answer, "result: 2");
    let answer = rig.ask(&mut g, r#"call broken__anything {}"#, 2);
    assert!(answer.contains("error: "), "{answer}");
    assert!(
        !answer.contains("/nonexistent"),
        "no path or dump for the user: {answer}"
    );
    let out = g.stop_cleanly();
    assert!(out.contains("mcp broken"), "one line saying so:\n{out}");
    assert!(!out.contains(TOKEN_SECRET_PART));
}

#[test]
fn a_server_waiting_out_its_restart_backoff_does_not_hold_the_shutdown() {
    // A server that cannot start is restarted with a doubling delay (0.5 s to 8 s); the
    // restart waits with its start lock held, which the shutdown takes too. Stopped
    // during the longest delay, the gateway still exits within the shutdown's bound
    // (`stop_cleanly`: under 5 s), not after the delay.
    let home = TempHome::new("mcp-backoff");
    let llm = model();
    let out = home.cmd(&["onboard"]).output().expect("run onboard");
    assert!(out.status.success());
    home.write_config(&format!(
        r#"{{"provider":{{"base_url":"{}/v1","model":"fake-model"}},"mcp":{{"servers":{{"broken":{{"command":"/nonexistent/yc-mcp-server","start":"boot"}}}}}}}}"#,
        llm.url()
    ));
    let mut g = Gateway::start(&home, &[]);
    g.wait_for_log("mcp broken: restarting in 8.0 s");
    g.stop_cleanly();
}

#[test]
fn secrets_never_reach_a_server_and_its_results_are_scrubbed_and_capped() {
    let Some(py) = sdk_python("the SDK's stdio server") else {
        return;
    };
    const KEY: &str = "sk-proj-Ab3dEfGh1jKlMn0pQrStUvWxYz_0123456789-abcdefghij";
    let rig = Rig::new(
        "mcp-scrub",
        &py,
        &[(
            "demo",
            &format!(r#","trust":true,"env":{{"LEAK":"{KEY}"}}"#),
        )],
        Extra {
            agent: r#""max_tool_result_bytes":2048"#,
            ..Extra::default()
        },
    );
    let mut g = rig.start(&["demo"]);

    // Arguments: the bot token and a key the model was shown leave scrubbed.
    let call = format!(
        r#"call demo__note {{"text":"token {} and key {KEY}"}}"#,
        support::gateway::TOKEN
    );
    rig.ask(&mut g, &call, 1);
    let rec = rig.recorded("demo");
    assert!(
        rec.contains("note token "),
        "the call reached the server: {rec}"
    );
    assert!(
        !rec.contains(TOKEN_SECRET_PART),
        "the bot token reached the server: {rec}"
    );
    assert!(!rec.contains(KEY), "a key reached the server: {rec}");
    assert!(rec.contains("[REDACTED]"), "{rec}");

    // A result carrying a key (the server's own environment): scrubbed before the model.
    rig.ask(&mut g, "call demo__env {}", 2);
    let r = results(&rig.llm);
    assert!(r[0].contains("LEAK="), "{r:?}");
    assert!(!r[0].contains(KEY), "the key reached the model: {r:?}");

    // A result over `agent.max_tool_result_bytes`: cut, and said so.
    let long = "x".repeat(6000);
    rig.ask(
        &mut g,
        &format!(r#"call demo__echo {{"text":"{long}"}}"#),
        3,
    );
    let r = results(&rig.llm);
    assert!(r[0].len() <= 2048, "{} bytes", r[0].len());
    assert!(r[0].contains("truncated"), "{}", &r[0][r[0].len() - 80..]);
    let out = g.stop_cleanly();
    assert!(!out.contains(KEY), "the key reached the log");
}

#[test]
fn a_server_that_hangs_crashes_or_changes_its_tools_mid_conversation() {
    let Some(py) = sdk_python("the SDK's stdio server") else {
        return;
    };
    let rig = Rig::new(
        "mcp-lively",
        &py,
        &[("demo", r#","trust":true,"timeout_secs":15"#)],
        Extra::default(),
    );
    let mut g = rig.start(&["demo"]);

    // A call that outlives timeout_secs: a timeout error, and the server told to cancel.
    // (timeout_secs bounds initialize too: 15 s leaves room for the SDK to start on a loaded machine.)
    rig.ask(&mut g, r#"call demo__slow {"seconds":30}"#, 1);
    let r = results(&rig.llm);
    assert!(r[0].starts_with("error: "), "{r:?}");
    g.wait_for("the cancellation at the server", || {
        rig.recorded("demo").contains("cancelled ")
    });

    // A server that dies mid-call: an error for this call, a new server for the next.
    rig.ask(&mut g, "call demo__crash {}", 2);
    let r = results(&rig.llm);
    assert!(r[0].starts_with("error: "), "{r:?}");
    let answer = rig.ask(&mut g, r#"call demo__add {"a":6,"b":7}"#, 3);
    assert_eq!(answer, "result: 13");
    assert_eq!(
        rig.pids("demo").len(),
        2,
        "restarted once: {}",
        rig.recorded("demo")
    );

    // notifications/tools/list_changed: the next request offers the new tool.
    let before = requests(&rig.llm).len();
    assert!(!names(&offered(&rig.llm, before - 1)).contains(&"demo__extra"));
    rig.ask(&mut g, "call demo__grow {}", 4);
    let answer = rig.ask(&mut g, "call demo__extra {}", 5);
    assert_eq!(answer, "result: extra");
    let last = requests(&rig.llm).len() - 1;
    assert!(names(&offered(&rig.llm, last)).contains(&"demo__extra"));
    g.stop_cleanly();
}

#[test]
fn a_window_too_small_for_the_mcp_tools_keeps_the_built_in_ones() {
    let Some(py) = sdk_python("the SDK's stdio server") else {
        return;
    };
    // 2,048 tokens, 256 of them for the answer: about 7 KB of request at 4 bytes a token.
    // The built-in tools fit in their short form (about 6 KB with the prompt); with the
    // server's twelve tools they do not.
    let rig = Rig::new(
        "mcp-fit",
        &py,
        &[("demo", r#","trust":true"#)],
        Extra {
            provider: r#""context_window":2048,"max_tokens":256"#,
            ..Extra::default()
        },
    );
    let mut g = rig.start(&["demo"]);
    let answer = rig.ask(&mut g, r#"call demo__add {"a":1,"b":2}"#, 1);
    // Not offered, but still a tool: the model's call runs.
    assert_eq!(answer, "result: 3");
    for r in rig.llm.requests_to("/chat/completions") {
        assert!(
            r.body.len() / 4 <= 2048 - 256,
            "{} bytes: about {} tokens: {}",
            r.body.len(),
            r.body.len() / 4,
            r.body
        );
    }
    let first = offered(&rig.llm, 0);
    let n = names(&first);
    assert!(n.contains(&"read_file") && n.contains(&"exec"), "{n:?}");
    assert!(!n.iter().any(|t| t.contains("__")), "{n:?}");
    let log = g.log();
    g.stop_cleanly();
    assert!(
        log.contains("the MCP servers' tools do not fit the context window of 2048 tokens"),
        "{log}"
    );

    // A window with room: every tool.
    let rig = Rig::new(
        "mcp-fit-room",
        &py,
        &[("demo", r#","trust":true"#)],
        Extra {
            provider: r#""context_window":4096,"max_tokens":256"#,
            ..Extra::default()
        },
    );
    let mut g = rig.start(&["demo"]);
    rig.ask(&mut g, r#"call demo__add {"a":1,"b":2}"#, 1);
    let first = offered(&rig.llm, 0);
    let n = names(&first);
    assert!(
        n.contains(&"read_file") && n.contains(&"demo__note"),
        "{n:?}"
    );
    g.stop_cleanly();
}

/// The SDK's HTTP server (tests/fixtures/mcp/http_server.py) in `mode`, killed on drop.
struct HttpServer {
    child: std::process::Child,
    port: u16,
}

impl HttpServer {
    /// The servers of `modes`, started together (each takes seconds to import the SDK).
    fn start(py: &str, modes: &[&str]) -> Vec<HttpServer> {
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/http_server.py");
        let children: Vec<std::process::Child> = modes
            .iter()
            .map(|mode| {
                Command::new(py)
                    .arg(&fixture)
                    .args([mode, "0"])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("start the SDK's HTTP server")
            })
            .collect();
        children
            .into_iter()
            .map(|mut child| {
                let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
                let mut line = String::new();
                std::io::BufRead::read_line(&mut out, &mut line).unwrap();
                let port = line
                    .trim()
                    .strip_prefix("READY ")
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| panic!("the HTTP server said {line:?}"));
                HttpServer { child, port }
            })
            .collect()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn http_servers_tools_through_the_gateway_streamable_json_and_legacy() {
    let Some(py) = sdk_python("the SDK's HTTP server") else {
        return;
    };
    if Command::new(&py)
        .args(["-c", "import uvicorn"])
        .status()
        .map_or(true, |s| !s.success())
    {
        skipped(
            "the SDK's HTTP server",
            "python3 cannot `import uvicorn`: pip install mcp",
        );
        return;
    }
    let servers = HttpServer::start(&py, &["sse", "json", "legacy"]);
    let rig = Rig::new("mcp-http", &py, &[], Extra::default());
    let entries = format!(
        r#""servers":{{"stream":{{"url":"http://127.0.0.1:{}/mcp","trust":true,"start":"boot"}},"body":{{"url":"http://127.0.0.1:{}/mcp","trust":true,"start":"boot"}},"old":{{"url":"http://127.0.0.1:{}/sse","type":"sse","trust":true,"start":"boot"}}"#,
        servers[0].port, servers[1].port, servers[2].port
    );
    let cfg = std::fs::read_to_string(rig.home.dir.join("config.json")).unwrap();
    rig.home
        .write_config(&cfg.replacen(r#""servers":{"#, &entries, 1));
    let mut g = Gateway::start(&rig.home, &[FAST_BACKOFF]);
    for name in ["stream", "body", "old"] {
        g.wait_for_log(&format!("mcp {name}: started with"));
    }
    for (i, name) in ["stream", "body", "old"].iter().enumerate() {
        let answer = rig.ask(
            &mut g,
            &format!(r#"call {name}__add {{"a":{i},"b":40}}"#),
            i + 1,
        );
        assert_eq!(answer, format!("result: {}", 40 + i));
    }
    // Notifications before the answer, in an event stream.
    let answer = rig.ask(&mut g, r#"call stream__chatty {"n":3}"#, 4);
    assert_eq!(answer, "result: done after 3 steps");
    let first = offered(&rig.llm, 0);
    let n = names(&first);
    for t in ["stream__add", "body__echo", "old__chatty"] {
        assert!(n.contains(&t), "{t}: {n:?}");
    }
    g.stop_cleanly();
}
