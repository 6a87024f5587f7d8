//! Images of MCP tool results through the real gateway: the binary against the fake Bot
//! API, a fake model (Anthropic-shaped or OpenAI-shaped), and an MCP server built on the
//! official Python SDK (tests/fixtures/mcp/image_server.py: a screenshot with text, a
//! gallery of PNGs, images that must not be shown). The checks are on the exact place the
//! image reaches the model (inside the `tool_result` block for Anthropic; a `user`
//! message after the `tool` messages for OpenAI), that each round shows only its own
//! images and the spool keeps none after the turn, the bounds (4 a result, 8 a round,
//! 2 MiB, PNG/JPEG/GIF/WebP, valid base64), and the placeholder alone for a model without
//! vision or one that refuses images (llama.cpp's server without its projector).
//!
//! The fake models are driven by what the user says: each line `call NAME {json}` is a
//! tool call; a line `then` starts the next round's calls; once the rounds are done the
//! model answers `seen.`.
//!
//! The tests skip loudly (`support::skipped`; a failure under `YOCTOCLAW_NO_SKIP=1`) when
//! `python3` or its `mcp` package is missing; `.ci/run` installs it.

mod support;

use miniserde::json::Value;
use std::path::{Path, PathBuf};
use support::fake_http::{
    FakeServer, Request, Response, json_str, openai_text, openai_tool_calls_ids,
};
use support::fake_telegram::FakeTelegram;
use support::gateway::{FAST_BACKOFF, Gateway};
use support::{TempHome, sdk_python};
use yoctoclaw::json::{as_array, as_str, get, parse_value, path, str_at};

const ALICE: i64 = 42;
/// The fixture's 1x1 PNG, as base64 (what reaches the model, byte for byte).
const PNG_B64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAACAAFUok9dAAAAAElFTkSuQmCC";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/image_server.py")
}

/// The calls of each round the user asked for: `call NAME {json}` lines, rounds
/// separated by a line `then`.
fn rounds(text: &str) -> Vec<Vec<(String, String)>> {
    text.split("\nthen\n")
        .map(|group| {
            group
                .lines()
                .filter_map(|l| l.trim().strip_prefix("call "))
                .filter_map(|rest| rest.split_once(' '))
                .map(|(n, a)| (n.to_string(), a.to_string()))
                .collect()
        })
        .collect()
}

fn messages(body: &str) -> Vec<Value> {
    parse_value(body)
        .ok()
        .and_then(|v| get(&v, "messages").and_then(as_array).cloned())
        .map(|a| a.to_vec())
        .unwrap_or_default()
}

/// The text of a message's content (a string, or its text parts/blocks joined).
fn text_of(m: &Value) -> String {
    match get(m, "content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| str_at(p, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Where the turn stands in a request: the user's typed text and how many rounds of
/// calls the model already made after it.
fn turn_of(msgs: &[Value], typed: impl Fn(&Value) -> bool) -> (String, usize) {
    let at = msgs.iter().rposition(typed).unwrap_or(0);
    let done = msgs[at..]
        .iter()
        .filter(|m| str_at(m, "role") == Some("assistant"))
        .count();
    (text_of(&msgs[at]), done)
}

/// The OpenAI-shaped model described in the header.
fn openai_model(refuse_images: bool) -> FakeServer {
    FakeServer::start(move |req: &Request| {
        if !req.path.ends_with("/v1/chat/completions") {
            return Response::json(404, r#"{"error":{"message":"no route"}}"#);
        }
        if refuse_images && req.body.contains("\"image_url\"") {
            // llama.cpp's server without a projector.
            return Response::json(
                500,
                r#"{"error":{"code":500,"message":"image input is not supported - hint: if this is unexpected, you may need to provide the mmproj","type":"server_error"}}"#,
            );
        }
        let msgs = messages(&req.body);
        // The typed message: a user message that is not the images of tool results.
        let typed = |m: &Value| {
            str_at(m, "role") == Some("user") && !text_of(m).starts_with("The images returned")
        };
        let (text, done) = turn_of(&msgs, typed);
        let Some(calls) = rounds(&text)
            .into_iter()
            .nth(done)
            .filter(|c| !c.is_empty())
        else {
            return Response::json(200, &openai_text("seen."));
        };
        Response::json(
            200,
            &openai_tool_calls_ids(&format!("call_{done}"), &calls, Some((10, 5))),
        )
    })
}

/// The Anthropic-shaped model described in the header.
fn anthropic_model() -> FakeServer {
    FakeServer::start(|req: &Request| {
        if !req.path.ends_with("/v1/messages") {
            return Response::json(
                404,
                r#"{"type":"error","error":{"type":"not_found_error","message":"no route"}}"#,
            );
        }
        let msgs = messages(&req.body);
        let typed = |m: &Value| {
            str_at(m, "role") == Some("user")
                && get(m, "content")
                    .and_then(as_array)
                    .is_some_and(|b| b.iter().all(|b| str_at(b, "type") != Some("tool_result")))
        };
        let (text, done) = turn_of(&msgs, typed);
        let usage = r#""usage":{"input_tokens":20,"output_tokens":6}"#;
        let Some(calls) = rounds(&text)
            .into_iter()
            .nth(done)
            .filter(|c| !c.is_empty())
        else {
            return Response::json(
                200,
                &format!(
                    r#"{{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{{"type":"text","text":"seen."}}],"stop_reason":"end_turn",{usage}}}"#
                ),
            );
        };
        let blocks: Vec<String> = calls
            .iter()
            .enumerate()
            .map(|(i, (n, a))| {
                format!(
                    r#"{{"type":"tool_use","id":"toolu_{done}_{i}","name":{},"input":{a}}}"#,
                    json_str(n)
                )
            })
            .collect();
        Response::json(
            200,
            &format!(
                r#"{{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{}],"stop_reason":"tool_use",{usage}}}"#,
                blocks.join(",")
            ),
        )
    })
}

/// A home whose provider is `provider` (the members of its `provider` object) with
/// the fixture as the trusted server `cams`.
fn home(tag: &str, py: &str, provider: &str, tg: &FakeTelegram) -> TempHome {
    let config = format!(
        r#"{{"provider":{{{provider}}},"agent":{{"max_tool_iterations":4}},"telegram":{{"enabled":true,"api_base":"{}","allow_from":["{ALICE}"],"poll_timeout_secs":1}},"mcp":{{"servers":{{"cams":{{"command":{},"args":[{}],"trust":true,"start":"boot"}}}}}}}}"#,
        tg.url(),
        json_str(py),
        json_str(&fixture().to_string_lossy()),
    );
    TempHome::onboarded(tag, &config)
}

fn start(home: &TempHome) -> Gateway {
    let mut g = Gateway::start(home, &[FAST_BACKOFF, ("YOCTOCLAW_API_KEY", "sk-test")]);
    g.wait_for_log("mcp cams: started with");
    g
}

fn answers(tg: &FakeTelegram) -> usize {
    tg.sent_to(ALICE)
        .iter()
        .filter(|s| s.text.contains("seen."))
        .count()
}

/// Alice says `text`; waits for the `n`th answer of the test.
fn ask(g: &mut Gateway, tg: &FakeTelegram, text: &str, n: usize) {
    tg.push_private(ALICE, "alice", text);
    g.wait_for("the answer", || answers(tg) >= n);
}

/// Files in the home's spool folder.
fn spooled(home: &TempHome) -> Vec<PathBuf> {
    std::fs::read_dir(home.dir.join("spool"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// `(type, text or image data)` of an OpenAI content part or an Anthropic block.
fn part(p: &Value) -> (String, String) {
    let kind = str_at(p, "type").unwrap_or("").to_string();
    let data = match kind.as_str() {
        "text" => str_at(p, "text").unwrap_or("").to_string(),
        "image_url" => path(p, &["image_url", "url"])
            .and_then(as_str)
            .unwrap_or("")
            .to_string(),
        "image" => format!(
            "{};{}",
            path(p, &["source", "media_type"])
                .and_then(as_str)
                .unwrap_or(""),
            path(p, &["source", "data"]).and_then(as_str).unwrap_or("")
        ),
        _ => String::new(),
    };
    (kind, data)
}

fn parts(m: &Value) -> Vec<(String, String)> {
    get(m, "content")
        .and_then(as_array)
        .map(|a| a.iter().map(part).collect())
        .unwrap_or_default()
}

fn t(text: &str) -> (String, String) {
    ("text".into(), text.into())
}

fn png_url() -> (String, String) {
    (
        "image_url".into(),
        format!("data:image/png;base64,{PNG_B64}"),
    )
}

#[test]
fn an_anthropic_model_sees_a_tools_image_inside_its_tool_result_for_that_round_only() {
    let what = "mcp images: anthropic";
    let Some(py) = sdk_python(what) else { return };
    let llm = anthropic_model();
    let tg = FakeTelegram::start();
    let provider = format!(
        r#""kind":"anthropic","base_url":"{}","model":"claude-test""#,
        llm.url()
    );
    let home = home("mcp-img-anthropic", &py, &provider, &tg);
    let mut g = start(&home);

    ask(
        &mut g,
        &tg,
        "call cams__screenshot {}\nthen\ncall cams__gallery {\"n\":0}",
        1,
    );
    let reqs = llm.requests_to("/v1/messages");
    assert_eq!(reqs.len(), 3, "two rounds and the answer");
    // Round 1's request: the screenshot inside its tool_result, after the result's text,
    // as the Messages API documents a tool_result's content list.
    let msgs = messages(&reqs[1].body);
    let user = msgs.last().unwrap();
    let blocks = get(user, "content").and_then(as_array).unwrap();
    assert_eq!(blocks.len(), 1, "{}", reqs[1].body);
    assert_eq!(str_at(&blocks[0], "type"), Some("tool_result"));
    assert_eq!(str_at(&blocks[0], "tool_use_id"), Some("toolu_0_0"));
    assert_eq!(
        parts(&blocks[0]),
        [
            t(&fenced(
                "cams__screenshot",
                "The kitchen camera:\n[image: image/png, 66 bytes]"
            )),
            ("image".into(), format!("image/png;{PNG_B64}"))
        ]
    );
    assert!(reqs[1].body.contains(&format!(
        r#"{{"type":"image","source":{{"type":"base64","media_type":"image/png","data":"{PNG_B64}"}}}}"#
    )));
    // Round 2's request: the screenshot's result is text now; the round brought none.
    let later = &reqs[2].body;
    assert!(
        !later.contains(PNG_B64) && !later.contains(r#""type":"image""#),
        "{later}"
    );
    assert!(later.contains(r#"The kitchen camera:\n[image: image/png, 66 bytes]\n</untrusted>""#));
    // The turn is over: its image file is gone.
    assert!(spooled(&home).is_empty(), "{:?}", spooled(&home));

    // The next turn reads the result from history: text, never the bytes.
    ask(&mut g, &tg, "and now?", 2);
    let next = &llm.requests_to("/v1/messages")[3].body;
    assert!(next.contains("[image: image/png, 66 bytes]") && !next.contains(PNG_B64));
    let log = g.stop_cleanly();
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn an_openai_model_gets_a_rounds_images_after_its_tool_messages_within_the_bounds() {
    let what = "mcp images: openai";
    let Some(py) = sdk_python(what) else { return };
    let llm = openai_model(false);
    let tg = FakeTelegram::start();
    let provider = format!(r#""base_url":"{}/v1","model":"fake-model""#, llm.url());
    let home = home("mcp-img-openai", &py, &provider, &tg);
    let mut g = start(&home);

    // Round 1: 6 + 6 + 1 images asked for: 4 of each gallery (a result's bound), then
    // none of the third call (the round's 8 are used). Round 2: the screenshot alone.
    // Round 3: images that must not be shown.
    ask(
        &mut g,
        &tg,
        "call cams__gallery {\"n\":6}\ncall cams__gallery {\"n\":6}\ncall cams__screenshot {}\nthen\ncall cams__screenshot {}\nthen\ncall cams__odd {}",
        1,
    );
    let reqs = llm.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 4, "three rounds and the answer");

    let msgs = messages(&reqs[1].body);
    let n = msgs.len();
    let roles: Vec<&str> = msgs[n - 5..]
        .iter()
        .filter_map(|m| str_at(m, "role"))
        .collect();
    assert_eq!(roles, ["assistant", "tool", "tool", "tool", "user"]);
    let results: Vec<String> = msgs[n - 4..n - 1].iter().map(text_of).collect();
    let shown = "[image: image/png, 66 bytes]";
    let per_result = "[image: image/png, 66 bytes, not shown: a result shows at most 4 images]";
    let per_round =
        "[image: image/png, 66 bytes, not shown: a round of tool calls shows at most 8 images]";
    let gallery = [shown, shown, shown, shown, per_result, per_result].join("\n");
    let gallery = fenced("cams__gallery", &gallery);
    assert_eq!(results[0], gallery);
    assert_eq!(results[1], gallery);
    let camera = format!("The kitchen camera:\n{per_round}");
    assert_eq!(results[2], fenced("cams__screenshot", &camera));
    // One user message after the tool messages: per call, a line naming it, its images.
    let mut expected = vec![t(
        "The images returned by tool call call_0_0 (cams__gallery):",
    )];
    expected.extend(std::iter::repeat_n(png_url(), 4));
    expected.push(t(
        "The images returned by tool call call_0_1 (cams__gallery):",
    ));
    expected.extend(std::iter::repeat_n(png_url(), 4));
    assert_eq!(parts(&msgs[n - 1]), expected);

    // Round 2: only its own image; round 1's tool messages are text alone now.
    let msgs = messages(&reqs[2].body);
    let last = msgs.last().unwrap();
    assert_eq!(
        parts(last),
        [
            t("The images returned by tool call call_1_0 (cams__screenshot):"),
            png_url()
        ]
    );
    assert_eq!(reqs[2].body.matches(PNG_B64).count(), 1);

    // Round 3: nothing shown, each placeholder says why; no images message.
    let msgs = messages(&reqs[3].body);
    let last = msgs.last().unwrap();
    assert_eq!(str_at(last, "role"), Some("tool"));
    let odd = [
        "[image: image/bmp, 66 bytes, not shown: only PNG, JPEG, GIF and WebP images are shown]",
        "[image: image/png, 8 bytes, not shown: its data is not valid base64]",
        "[image: image/png, 20 bytes, not shown: only PNG, JPEG, GIF and WebP images are shown]",
        "[image: image/png, 3 MB, not shown: larger than the 2 MB an image may be]",
    ];
    assert_eq!(text_of(last), fenced("cams__odd", &odd.join("\n")));
    assert!(!reqs[3].body.contains("image_url"));
    assert!(spooled(&home).is_empty(), "{:?}", spooled(&home));
    let log = g.stop_cleanly();
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn without_vision_the_model_reads_the_placeholder_only() {
    let what = "mcp images: no vision";
    let Some(py) = sdk_python(what) else { return };
    let llm = openai_model(false);
    let tg = FakeTelegram::start();
    let provider = format!(
        r#""base_url":"{}/v1","model":"fake-model","vision":false"#,
        llm.url()
    );
    let home = home("mcp-img-blind", &py, &provider, &tg);
    let mut g = start(&home);
    ask(&mut g, &tg, "call cams__screenshot {}", 1);
    let reqs = llm.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 2);
    let msgs = messages(&reqs[1].body);
    let last = msgs.last().unwrap();
    assert_eq!(str_at(last, "role"), Some("tool"));
    let camera = "The kitchen camera:\n[image: image/png, 66 bytes]";
    assert_eq!(
        str_at(last, "content"),
        Some(fenced("cams__screenshot", camera).as_str())
    );
    assert!(!reqs[1].body.contains("image_url") && !reqs[1].body.contains(PNG_B64));
    // Nothing was written for a model that cannot see.
    assert!(spooled(&home).is_empty());
    g.stop_cleanly();
}

#[test]
fn a_model_that_refuses_images_is_asked_again_with_the_placeholder_and_remembered() {
    let what = "mcp images: refused (llama.cpp without a projector)";
    let Some(py) = sdk_python(what) else { return };
    let llm = openai_model(true);
    let tg = FakeTelegram::start();
    let provider = format!(r#""base_url":"{}/v1","model":"fake-model""#, llm.url());
    let home = home("mcp-img-refused", &py, &provider, &tg);
    let mut g = start(&home);
    ask(&mut g, &tg, "call cams__screenshot {}", 1);
    g.wait_for_log("refused a request with an image");
    let reqs = llm.requests_to("/chat/completions");
    assert_eq!(
        reqs.len(),
        3,
        "the call, the refused images, the same without"
    );
    assert!(
        reqs[1]
            .body
            .contains(&format!("data:image/png;base64,{PNG_B64}"))
    );
    let msgs = messages(&reqs[2].body);
    let last = msgs.last().unwrap();
    assert_eq!(str_at(last, "role"), Some("tool"));
    let camera = "The kitchen camera:\n[image: image/png, 66 bytes]";
    assert_eq!(
        str_at(last, "content"),
        Some(fenced("cams__screenshot", camera).as_str())
    );
    // Remembered: the next screenshot is not tried as an image at all.
    ask(&mut g, &tg, "call cams__screenshot {}", 2);
    let reqs = llm.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 5);
    assert_eq!(
        reqs.iter().filter(|r| r.body.contains("image_url")).count(),
        1
    );
    assert!(spooled(&home).is_empty());
    g.stop_cleanly();
}

/// An MCP result as the model gets it: fenced as untrusted content.
fn fenced(source: &str, text: &str) -> String {
    format!("<untrusted source=\"{source}\">\n{text}\n</untrusted>")
}
