//! Providers end to end over the real binary: the Anthropic Messages API, retries and
//! fallbacks, streamed replies (OpenAI-compatible and Anthropic SSE), budgets, and the
//! quirks of real OpenAI-compatible servers — all against fake servers on 127.0.0.1.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;
use support::fake_http::{Response, json_str, openai_text, openai_tool_call, scripted};
use support::{TempHome, config_for, text};
use yoctoclaw::agent::think::{self, ThinkStart};
use yoctoclaw::config::ProviderConfig;
use yoctoclaw::store::Db;

// No test hook shortens the retries' waits: a test that is not about them has its fake
// send `Retry-After: 0` (honoured on any retryable status); the others wait the real
// backoff (at most 3 s per provider).

/// Record what an earlier answer of the model at `url` left in the store: its answers
/// start outside thinking, so its streams show text as it comes (a model never seen
/// before holds its first answer until the end: `agent::think`).
fn answers_seen_before(home: &TempHome, url: &str) {
    let cfg = ProviderConfig {
        base_url: format!("{url}/v1"),
        model: "fake-model".into(),
        ..ProviderConfig::default()
    };
    let db = Db::open(&home.dir.join("yoctoclaw.db"), 64).unwrap();
    think::remember(&db, &cfg, ThinkStart::Outside).unwrap();
}

fn ok(body: &str) -> Response {
    Response::json(200, body)
}

fn run(home: &TempHome, args: &[&str]) -> std::process::Output {
    home.cmd(args).output().unwrap()
}

fn anthropic_config(url: &str, extra: &str) -> String {
    let sep = if extra.is_empty() { "" } else { "," };
    format!(
        r#"{{"provider":{{"kind":"anthropic","base_url":"{url}","model":"claude-test"}}{sep}{extra}}}"#
    )
}

fn anthropic_text(text: &str) -> String {
    format!(
        r#"{{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{{"type":"text","text":{}}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{{"input_tokens":20,"output_tokens":6}}}}"#,
        json_str(text)
    )
}

fn anthropic_tool_use(id: &str, name: &str, input: &str) -> String {
    format!(
        r#"{{"id":"msg_2","type":"message","role":"assistant","model":"claude-test","content":[{{"type":"text","text":"Let me look."}},{{"type":"tool_use","id":"{id}","name":"{name}","input":{input}}}],"stop_reason":"tool_use","usage":{{"input_tokens":15,"output_tokens":9}}}}"#
    )
}

/// SSE bytes of an OpenAI-compatible stream carrying `parts` of text.
fn openai_sse(parts: &[&str]) -> String {
    let mut s = String::from(": OPENROUTER PROCESSING\n\n");
    s.push_str("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n");
    for p in parts {
        s.push_str(&format!(
            "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"finish_reason\":null}}]}}\n\n",
            json_str(p)
        ));
        s.push_str(": OPENROUTER PROCESSING\n\n");
    }
    s.push_str("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    s.push_str("data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":4,\"total_tokens\":15}}\n\n");
    s.push_str("data: [DONE]\n\n");
    s
}

/// A chunked SSE response cut into pieces at the given byte offsets.
fn sse_response(body: &str, cuts: &[usize]) -> Response {
    let bytes = body.as_bytes();
    let mut chunks = Vec::new();
    let mut from = 0;
    for &c in cuts.iter().chain(std::iter::once(&bytes.len())) {
        let c = c.min(bytes.len());
        if c > from {
            chunks.push(bytes[from..c].to_vec());
            from = c;
        }
    }
    Response::Chunked {
        status: 200,
        content_type: "text/event-stream".into(),
        chunks,
        pause: Duration::from_millis(5),
    }
}

/// Every `n` bytes.
fn every(n: usize, len: usize) -> Vec<usize> {
    (1..=len / n).map(|i| i * n).collect()
}

fn stream_config(url: &str, extra: &str) -> String {
    let sep = if extra.is_empty() { "" } else { "," };
    format!(
        r#"{{"provider":{{"base_url":"{url}/v1","model":"fake-model","stream":true}}{sep}{extra}}}"#
    )
}

fn usage_rows(home: &TempHome) -> Vec<(String, String, i64, i64)> {
    let db = rusqlite::Connection::open(home.dir.join("yoctoclaw.db")).unwrap();
    let mut st = db
        .prepare(
            "SELECT session, provider, prompt_tokens, completion_tokens FROM usage ORDER BY id",
        )
        .unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

// ---------------------------------------------------------------- Anthropic

#[test]
fn anthropic_tool_use_round_trip() {
    let fake = scripted(vec![
        ok(&anthropic_tool_use(
            "toolu_01",
            "read_file",
            r#"{"path":"notes.md"}"#,
        )),
        ok(&anthropic_text("The note says: buy milk")),
    ]);
    let home = TempHome::onboarded("anth", &anthropic_config(&fake.url(), ""));
    std::fs::write(home.workspace().join("notes.md"), "buy milk").unwrap();
    let out = home
        .cmd(&["agent", "-m", "what does my note say?"])
        .env("YOCTOCLAW_API_KEY", "sk-ant-test-0123456789")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "The note says: buy milk\n");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some("sk-ant-test-0123456789"));
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        assert!(r.header("authorization").is_none());
    }
    let first = &reqs[0].body;
    assert!(first.contains("\"system\":\"# Identity"), "{first}");
    assert!(first.contains("You are yoctoclaw"), "{first}");
    assert!(first.contains("\"input_schema\""), "{first}");
    assert!(first.contains("\"model\":\"claude-test\""), "{first}");
    let second = &reqs[1].body;
    assert!(
        second.contains(
            r#"{"type":"tool_use","id":"toolu_01","name":"read_file","input":{"path":"notes.md"}}"#
        ),
        "{second}"
    );
    assert!(
        second.contains(r#"{"type":"tool_result","tool_use_id":"toolu_01","content":"buy milk"}"#),
        "{second}"
    );
    assert!(!second.contains("\"role\":\"tool\""), "{second}");
    // Usage recorded per request, under the Anthropic provider.
    let rows = usage_rows(&home);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].1, "anthropic:claude-test");
    assert_eq!((rows[0].2, rows[0].3), (15, 9));
}

#[test]
fn anthropic_overloaded_529_is_retried() {
    let overloaded = Response::json(
        529,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    let fake = scripted(vec![overloaded, ok(&anthropic_text("fine now"))]);
    let home = TempHome::onboarded("a529", &anthropic_config(&fake.url(), ""));
    let out = run(&home, &["agent", "-m", "hi"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "fine now\n");
    assert_eq!(fake.requests().len(), 2);
    assert!(
        text(&out.stderr).contains("HTTP 529"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn anthropic_errors_are_clear() {
    let fake = scripted(vec![Response::json(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    )]);
    let home = TempHome::onboarded("a401", &anthropic_config(&fake.url(), ""));
    let out = run(&home, &["agent", "-m", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("refused the API key (HTTP 401: invalid x-api-key)"),
        "{err}"
    );
    assert_eq!(fake.requests().len(), 1);
}

fn anthropic_sse(events: &[(&str, String)]) -> String {
    events
        .iter()
        .map(|(e, d)| format!("event: {e}\ndata: {d}\n\n"))
        .collect()
}

#[test]
fn anthropic_streamed_tool_use_and_answer() {
    let tool_round = anthropic_sse(&[
        ("message_start", r#"{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":30,"output_tokens":1}}}"#.into()),
        ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_7","name":"read_file","input":{}}}"#.into()),
        ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"to"}}"#.into()),
        ("ping", r#"{"type":"ping"}"#.into()),
        ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"do.txt\"}"}}"#.into()),
        ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#.into()),
        ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":12}}"#.into()),
        ("message_stop", r#"{"type":"message_stop"}"#.into()),
    ]);
    let answer = anthropic_sse(&[
        ("message_start", r#"{"type":"message_start","message":{"usage":{"input_tokens":50,"output_tokens":1}}}"#.into()),
        ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#.into()),
        ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Call "}}"#.into()),
        ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"mum ☎️."}}"#.into()),
        ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#.into()),
        ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}"#.into()),
        ("message_stop", r#"{"type":"message_stop"}"#.into()),
    ]);
    let len = answer.len();
    let fake = scripted(vec![
        sse_response(&tool_round, &every(17, tool_round.len())),
        sse_response(&answer, &every(5, len)),
    ]);
    let cfg = format!(
        r#"{{"provider":{{"kind":"anthropic","base_url":"{}","model":"claude-test","stream":true}}}}"#,
        fake.url()
    );
    let home = TempHome::onboarded("astream", &cfg);
    std::fs::write(home.workspace().join("todo.txt"), "call mum").unwrap();
    let out = run(&home, &["agent", "-m", "todo?"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Call mum ☎️.\n");
    let reqs = fake.requests();
    assert!(reqs[0].body.contains("\"stream\":true"));
    assert_eq!(reqs[0].header("accept"), Some("text/event-stream"));
    let second = &reqs[1].body;
    assert!(
        second.contains(r#""input":{"path":"todo.txt"}"#),
        "{second}"
    );
    assert!(second.contains(r#""content":"call mum""#), "{second}");
    let rows = usage_rows(&home);
    assert_eq!(
        rows.iter().map(|r| (r.2, r.3)).collect::<Vec<_>>(),
        [(30, 12), (50, 4)]
    );
}

// ---------------------------------------------------------- retries, fallbacks

#[test]
fn a_429_with_retry_after_is_retried() {
    let limited = Response::json(429, r#"{"error":{"message":"Rate limit reached"}}"#)
        .with_header("Retry-After", "2");
    let fake = scripted(vec![limited, ok(&openai_text("after the wait"))]);
    let home = TempHome::onboarded("r429", &config_for(&fake.url(), ""));
    let out = run(&home, &["agent", "-m", "hi"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "after the wait\n");
    assert_eq!(fake.requests().len(), 2);
    let err = text(&out.stderr);
    assert!(err.contains("HTTP 429"), "{err}");
    assert!(
        err.contains("retrying in 2 s (attempt 2 of 3)"),
        "Retry-After honoured: {err}"
    );
}

#[test]
fn a_retry_after_beyond_the_cap_moves_on_at_once() {
    let limited = Response::json(429, r#"{"error":{"message":"slow down"}}"#)
        .with_header("Retry-After", "3600");
    let fake = scripted(vec![limited]);
    let home = TempHome::onboarded("r429cap", &config_for(&fake.url(), ""));
    let out = run(&home, &["agent", "-m", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(fake.requests().len(), 1);
    assert!(text(&out.stderr).contains("rate limiting us"));
}

#[test]
fn repeated_500s_fall_back_to_the_next_provider() {
    let primary = scripted(vec![
        Response::json(500, r#"{"error":{"message":"boom"}}"#).with_header("Retry-After", "0"),
    ]);
    let backup = scripted(vec![ok(&openai_text("from the backup"))]);
    let cfg = config_for(
        &primary.url(),
        &format!(
            r#""fallbacks":[{{"base_url":"{}/v1","model":"backup-model"}}]"#,
            backup.url()
        ),
    );
    let home = TempHome::onboarded("fallback", &cfg);
    let out = run(&home, &["agent", "-m", "hi"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "from the backup\n");
    assert_eq!(primary.requests().len(), 3, "three attempts on the primary");
    assert!(
        text(&out.stderr).contains("retrying in 0 s (attempt 2 of 3)"),
        "the 500's Retry-After honoured: {}",
        text(&out.stderr)
    );
    assert_eq!(backup.requests().len(), 1);
    assert!(
        backup.requests()[0]
            .body
            .contains("\"model\":\"backup-model\"")
    );
    let rows = usage_rows(&home);
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0].1, "openai:backup-model",
        "usage under the provider that answered"
    );
}

#[test]
fn when_every_provider_fails_the_user_hears_what_failed() {
    let primary = scripted(vec![
        Response::json(503, r#"{"error":{"message":"down"}}"#).with_header("Retry-After", "0"),
    ]);
    let backup = scripted(vec![Response::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided: sk-backup-SECRET-123"}}"#,
    )]);
    let cfg = config_for(
        &primary.url(),
        &format!(
            r#""fallbacks":[{{"base_url":"{}/v1","model":"backup-model","api_key_env":"BACKUP_KEY"}}]"#,
            backup.url()
        ),
    );
    let home = TempHome::onboarded("allfail", &cfg);
    let out = home
        .cmd(&["agent", "-m", "hi"])
        .env("BACKUP_KEY", "sk-backup-SECRET-123")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    let last = err.lines().last().unwrap_or("");
    assert!(
        last.starts_with("yoctoclaw: every provider failed"),
        "{err}"
    );
    assert!(
        last.contains("openai:fake-model: the provider failed (HTTP 503: down)"),
        "{err}"
    );
    assert!(
        last.contains("openai:backup-model: the provider refused the API key"),
        "{err}"
    );
    assert!(!err.contains("SECRET"), "the key never appears: {err}");
    assert_eq!(primary.requests().len(), 3);
    assert_eq!(backup.requests().len(), 1, "a 401 is not retried");
}

#[test]
fn a_401_is_not_retried() {
    let fake = scripted(vec![Response::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided"}}"#,
    )]);
    let home = TempHome::onboarded("no401", &config_for(&fake.url(), ""));
    let out = run(&home, &["agent", "-m", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(fake.requests().len(), 1);
    let err = text(&out.stderr);
    assert!(err.contains("refused the API key"), "{err}");
    assert!(!err.contains("retrying"), "{err}");
}

#[test]
fn network_errors_are_retried_then_reported() {
    let fake = scripted(vec![Response::Hangup]);
    let home = TempHome::onboarded("hangup", &config_for(&fake.url(), ""));
    let out = run(&home, &["agent", "-m", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(fake.requests().len(), 3);
    assert!(
        text(&out.stderr).contains("retrying"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_broken_answer_logs_where_it_broke_and_never_its_text() {
    // A body cut off in the middle of the answer's text (a proxy that closed early), and
    // one with a raw control byte in it: each is one sentence to the user and one log line
    // naming the byte where the JSON broke and the body's length, never the body.
    let full = openai_text("Marta's number is 555-0143-SECRETISH, call after nine.");
    let cut = &full[..full.find("555").unwrap() + 3];
    let raw = full.replacen("call after", "call\u{1}after", 1);
    for (name, body, at) in [
        ("cut", cut.to_string(), cut.len()),
        ("raw", raw.clone(), raw.find('\u{1}').unwrap()),
    ] {
        let fake = scripted(vec![ok(&body)]);
        let home = TempHome::onboarded(&format!("broken-{name}"), &config_for(&fake.url(), ""));
        let out = run(&home, &["agent", "-m", "hi"]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert_eq!(fake.requests().len(), 1, "{name}: not retried");
        let err = text(&out.stderr);
        let logged = format!(
            "not valid Chat Completions JSON (byte {at} of {}: ",
            body.len()
        );
        assert!(err.contains(&logged), "{name}: {logged} in {err}");
        assert!(
            err.contains("the provider sent an answer yoctoclaw cannot read (not valid Chat Completions JSON)"),
            "{name}: {err}"
        );
        assert!(
            !err.contains("555"),
            "{name}: the body is never logged: {err}"
        );
    }
}

// ---------------------------------------------------------------- streaming

#[test]
fn a_streamed_answer_with_comments_and_split_utf8_prints_whole() {
    let body = openai_sse(&["Grüß ", "dich, ", "世界 ", "🎉!"]);
    // Cut inside every multi-byte character and between CR/LF pairs.
    let cuts: Vec<usize> = body
        .char_indices()
        .filter(|(_, c)| c.len_utf8() > 1)
        .map(|(i, _)| i + 1)
        .collect();
    let fake = scripted(vec![sse_response(&body, &cuts)]);
    let home = TempHome::onboarded("sse", &stream_config(&fake.url(), ""));
    let out = run(&home, &["agent", "-m", "hi"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Grüß dich, 世界 🎉!\n");
    assert_eq!(
        support::binary::without_landlock_notice(&text(&out.stderr)),
        ""
    );
    let req = &fake.requests()[0];
    assert!(req.body.contains(r#""stream":true"#));
    assert!(
        req.body
            .contains(r#""stream_options":{"include_usage":true}"#)
    );
    // History holds the same answer as a non-streamed turn would.
    let rows = usage_rows(&home);
    assert_eq!((rows[0].2, rows[0].3), (11, 4));
}

#[test]
fn a_streamed_turn_without_a_usage_chunk_records_an_estimate() {
    // Many local servers send no usage chunk even when asked: the turn still counts.
    let body = openai_sse(&["Hello ", "there"]).replace(
        "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":4,\"total_tokens\":15}}\n\n",
        "",
    );
    assert!(!body.contains("usage"));
    let fake = scripted(vec![sse_response(&body, &[])]);
    let home = TempHome::onboarded("sse-nousage", &stream_config(&fake.url(), ""));
    let out = run(&home, &["agent", "-m", "hi"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = usage_rows(&home);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let (_, provider, prompt, completion) = &rows[0];
    assert!(provider.ends_with("(estimated)"), "{provider}");
    // About a quarter of the bytes: the request is a few KiB, the answer 11 bytes.
    let sent = fake.requests()[0].body.len() as i64;
    assert_eq!(*prompt, (sent + 3) / 4);
    assert_eq!(*completion, 3);
}

#[test]
fn streamed_and_plain_turns_print_the_same() {
    let answer = "  Line one.\n\nLine *two* with <b>tags</b>.  \n";
    let plain = scripted(vec![ok(&openai_text(answer))]);
    let home = TempHome::onboarded("same1", &config_for(&plain.url(), ""));
    let out_plain = run(&home, &["agent", "-m", "hi"]);
    let streamed = scripted(vec![sse_response(
        &openai_sse(&[
            "  Line",
            " one.\n",
            "\nLine *two* with <",
            "b>tags</b>.",
            "  \n",
        ]),
        &[3, 40, 41, 200],
    )]);
    let home = TempHome::onboarded("same2", &stream_config(&streamed.url(), ""));
    let out_stream = run(&home, &["agent", "-m", "hi"]);
    assert!(out_stream.status.success(), "{}", text(&out_stream.stderr));
    assert_eq!(text(&out_stream.stdout), text(&out_plain.stdout));
}

/// OpenAI streamed tool-call deltas: id and name first, arguments in pieces, two calls.
fn openai_tool_stream() -> String {
    let mut s = String::new();
    let chunk = |delta: &str, finish: &str| {
        format!(
            "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    };
    s.push_str(&chunk(r#"{"role":"assistant","content":null}"#, "null"));
    s.push_str(&chunk(r#"{"tool_calls":[{"index":0,"id":"call_r","type":"function","function":{"name":"read_file","arguments":""}}]}"#, "null"));
    s.push_str(&chunk(
        r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}"#,
        "null",
    ));
    s.push_str(&chunk(
        r#"{"tool_calls":[{"index":0,"function":{"arguments":"th\": \"todo.txt\"}"}}]}"#,
        "null",
    ));
    s.push_str(&chunk(r#"{"tool_calls":[{"index":1,"id":"call_l","type":"function","function":{"name":"list_dir","arguments":"{}"}}]}"#, "null"));
    s.push_str(&chunk("{}", "\"tool_calls\""));
    s.push_str("data: [DONE]\n\n");
    s
}

#[test]
fn streamed_tool_call_deltas_run_the_tools() {
    let tools = openai_tool_stream();
    let answer = openai_sse(&["You have ", "to call mum."]);
    let fake = scripted(vec![
        sse_response(&tools, &every(11, tools.len())),
        sse_response(&answer, &every(13, answer.len())),
    ]);
    let home = TempHome::onboarded("ssetools", &stream_config(&fake.url(), ""));
    std::fs::write(home.workspace().join("todo.txt"), "call mum").unwrap();
    let out = run(&home, &["agent", "-m", "todo?"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "You have to call mum.\n");
    let second = &fake.requests()[1].body;
    assert!(
        second.contains(r#""arguments":"{\"path\": \"todo.txt\"}""#),
        "arguments assembled from the deltas: {second}"
    );
    assert!(second.contains(r#""tool_call_id":"call_r""#), "{second}");
    assert!(second.contains(r#""tool_call_id":"call_l""#), "{second}");
    assert!(second.contains(r#""content":"call mum""#), "{second}");
}

#[test]
fn text_tool_call_markup_is_never_printed_while_streaming() {
    let first = openai_sse(&[
        "Let me check.\n<tool",
        "_call>{\"name\":\"read_file\",",
        "\"arguments\":{\"path\":\"todo.txt\"}}</tool_call>",
    ]);
    let second = openai_sse(&["Call ", "mum."]);
    let fake = scripted(vec![
        sse_response(&first, &every(9, first.len())),
        sse_response(&second, &[]),
    ]);
    let home = TempHome::onboarded("markup", &stream_config(&fake.url(), ""));
    std::fs::write(home.workspace().join("todo.txt"), "call mum").unwrap();
    let out = run(&home, &["agent", "-m", "todo?"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout, "Let me check.\nCall mum.\n");
    assert!(!stdout.contains("tool_call"));
}

#[test]
fn a_stream_cut_mid_way_is_an_error_not_a_short_answer() {
    let full = openai_sse(&["The first half", " and the second half."]);
    let cut_at = full.find("the second").unwrap();
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    let raw = format!("{head}{}", &full[..cut_at]);
    let fake = scripted(vec![Response::Raw(raw.into_bytes())]);
    let home = TempHome::onboarded("cut", &stream_config(&fake.url(), ""));
    answers_seen_before(&home, &fake.url());
    let out = run(&home, &["agent", "-m", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("broke off before the end"), "{err}");
    assert!(err.contains("incomplete"), "{err}");
    // What was shown stays on its own line; it is not retried (it cannot be unshown).
    assert_eq!(text(&out.stdout), "The first half\n");
    assert_eq!(fake.requests().len(), 1);
    // Nothing of it went into the history as an answer.
    let next = scripted(vec![ok(&openai_text("ok"))]);
    home.write_config(&config_for(&next.url(), ""));
    assert!(run(&home, &["agent", "-m", "again"]).status.success());
    assert!(!next.requests()[0].body.contains("first half"));
}

#[test]
fn a_stream_cut_before_any_text_is_retried() {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    let cut = Response::Raw(format!("{head}: OPENROUTER PROCESSING\n\n").into_bytes());
    let body = openai_sse(&["second try"]);
    let fake = scripted(vec![cut, sse_response(&body, &[])]);
    let home = TempHome::onboarded("cut0", &stream_config(&fake.url(), ""));
    let out = run(&home, &["agent", "-m", "hi"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "second try\n");
    assert_eq!(fake.requests().len(), 2);
}

#[test]
fn a_server_that_ignores_stream_still_works() {
    let fake = scripted(vec![ok(&openai_text("one piece"))]);
    let home = TempHome::onboarded("nostream", &stream_config(&fake.url(), ""));
    let out = run(&home, &["agent", "-m", "hi"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "one piece\n");
}

/// A one-connection SSE server that sends `first`, then waits for the test's signal
/// before sending `rest`: proves text is printed before the answer is complete.
fn gated_sse_server(
    first: String,
    rest: String,
) -> (
    String,
    std::sync::mpsc::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let handle = std::thread::spawn(move || {
        let (conn, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(conn.try_clone().unwrap());
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let l = line.trim_end().to_ascii_lowercase();
            if let Some(v) = l.strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
            if l.is_empty() {
                break;
            }
        }
        let mut body = vec![0u8; len];
        reader.read_exact(&mut body).unwrap();
        let mut w = conn;
        write!(
            w,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{first}"
        )
        .unwrap();
        w.flush().unwrap();
        let _ = rx.recv_timeout(Duration::from_secs(30));
        let _ = w.write_all(rest.as_bytes());
        let _ = w.flush();
    });
    (url, tx, handle)
}

#[test]
fn tokens_are_printed_as_they_arrive() {
    let full = openai_sse(&["Hello", " there, ", "friend."]);
    let split = full
        .find("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there")
        .unwrap();
    let (url, go, server) = gated_sse_server(full[..split].to_string(), full[split..].to_string());
    let home = TempHome::onboarded("live", &stream_config(&url, ""));
    answers_seen_before(&home, &url);
    let mut child = home
        .cmd(&["agent", "-m", "hi"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 64];
    while !String::from_utf8_lossy(&seen).contains("Hello") {
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "stdout closed before the first token: {seen:?}");
        seen.extend_from_slice(&buf[..n]);
    }
    // The first token is out while the server still holds the rest of the answer.
    assert_eq!(String::from_utf8_lossy(&seen), "Hello");
    go.send(()).unwrap();
    stdout.read_to_end(&mut seen).unwrap();
    let status = child.wait().unwrap();
    server.join().unwrap();
    assert!(status.success());
    assert_eq!(String::from_utf8_lossy(&seen), "Hello there, friend.\n");
}

#[test]
fn interactive_chat_streams_too() {
    let fake = scripted(vec![
        sse_response(&openai_sse(&["first ", "answer"]), &[]),
        sse_response(&openai_sse(&["second ", "answer"]), &[]),
    ]);
    let home = TempHome::onboarded("istream", &stream_config(&fake.url(), ""));
    let mut child = home
        .cmd(&["agent"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "one").unwrap();
        writeln!(stdin, "two").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "first answer\nsecond answer\n");
}

// ---------------------------------------------------------------- budgets

#[test]
fn a_used_up_budget_refuses_new_turns() {
    let fake = scripted(vec![ok(&openai_text("ok"))]);
    let home = TempHome::onboarded(
        "budget",
        &config_for(&fake.url(), r#""budget":{"daily_tokens":20}"#),
    );
    // 15 tokens: under the budget.
    assert!(run(&home, &["agent", "-m", "one"]).status.success());
    // 30 tokens: this turn started under the budget, so it runs.
    assert!(run(&home, &["agent", "-m", "two"]).status.success());
    let out = run(&home, &["agent", "-m", "three"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("daily token budget is used up (30 of 20 tokens today"),
        "{err}"
    );
    assert!(err.contains("budget.daily_tokens"), "{err}");
    assert_eq!(
        fake.requests().len(),
        2,
        "no request once the budget is used up"
    );
    let status = text(&run(&home, &["status"]).stdout);
    assert!(
        status
            .contains("tokens:     today 30 of 20 (20 in, 10 out), this month 30 (20 in, 10 out)"),
        "{status}"
    );
}

#[test]
fn a_monthly_budget_refuses_too() {
    let fake = scripted(vec![ok(&openai_text("ok"))]);
    let home = TempHome::onboarded(
        "mbudget",
        &config_for(&fake.url(), r#""budget":{"monthly_tokens":10}"#),
    );
    assert!(run(&home, &["agent", "-m", "one"]).status.success());
    let out = run(&home, &["agent", "-m", "two"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("monthly token budget"));
}

// ------------------------------------------------- quirks of real servers

#[test]
fn ollama_object_arguments_and_missing_usage() {
    let fake = scripted(vec![
        ok(
            r#"{"model":"llama3.2","created_at":"x","choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[{"id":"call_abc","index":0,"type":"function","function":{"name":"read_file","arguments":{"path":"todo.txt"}}}]},"finish_reason":"tool_calls"}]}"#,
        ),
        ok(
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Call mum.","reasoning":"the file says so"},"finish_reason":"stop"}]}"#,
        ),
    ]);
    let home = TempHome::onboarded("ollama", &config_for(&fake.url(), ""));
    std::fs::write(home.workspace().join("todo.txt"), "call mum").unwrap();
    let out = run(&home, &["agent", "-m", "todo?"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Call mum.\n");
    assert!(fake.requests()[1].body.contains(r#""content":"call mum""#));
    // No usage reported: an estimate is recorded, marked as one (issue: usage of local
    // servers that send no counts must still count).
    let rows = usage_rows(&home);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows.iter().all(|r| r.1.ends_with("(estimated)")),
        "{rows:?}"
    );
}

#[test]
fn llama_cpp_function_call_and_null_finish_reason() {
    let fake = scripted(vec![
        ok(
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"function_call":{"name":"read_file","arguments":"{\"path\":\"todo.txt\"}"}},"finish_reason":"function_call"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#,
        ),
        ok(
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Done."},"finish_reason":null}]}"#,
        ),
    ]);
    let home = TempHome::onboarded("llamacpp", &config_for(&fake.url(), ""));
    std::fs::write(home.workspace().join("todo.txt"), "call mum").unwrap();
    let out = run(&home, &["agent", "-m", "todo?"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Done.\n");
    assert!(fake.requests()[1].body.contains(r#""content":"call mum""#));
}

#[test]
fn a_length_finish_reason_still_answers() {
    let fake = scripted(vec![ok(
        r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"This answer was cu"},"finish_reason":"length"}]}"#,
    )]);
    let home = TempHome::onboarded("length", &config_for(&fake.url(), ""));
    let out = run(&home, &["agent", "-m", "hi"]);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "This answer was cu\n");
}

#[test]
fn empty_choices_are_a_clear_error() {
    let fake = scripted(vec![ok(
        r#"{"id":"x","choices":[],"usage":{"prompt_tokens":1}}"#,
    )]);
    let home = TempHome::onboarded("nochoice", &config_for(&fake.url(), ""));
    let out = run(&home, &["agent", "-m", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("no choices in the answer"), "{err}");
    assert_eq!(fake.requests().len(), 1, "not retried");
}

#[test]
fn openrouter_upstream_errors_in_a_200_are_retried() {
    let fake = scripted(vec![
        ok(r#"{"error":{"message":"Provider returned error","code":502}}"#),
        ok(&openai_text("recovered")),
    ]);
    let home = TempHome::onboarded("orerr", &config_for(&fake.url(), ""));
    let out = run(&home, &["agent", "-m", "hi"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "recovered\n");
}

#[test]
fn the_tool_call_helper_shapes_still_work_streaming_off() {
    // Guard: the non-streamed native path is unchanged by the streaming work.
    let fake = scripted(vec![
        ok(&openai_tool_call("c1", "list_dir", &json_str("{}"))),
        ok(&openai_text("listed")),
    ]);
    let home = TempHome::onboarded("plainnative", &config_for(&fake.url(), ""));
    let out = run(&home, &["agent", "-m", "ls"]);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "listed\n");
    assert!(!fake.requests()[0].body.contains("stream_options"));
}
