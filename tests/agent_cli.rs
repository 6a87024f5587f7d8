//! The terminal agent end to end: the real binary against a fake OpenAI-compatible server.

mod support;

use support::fake_http::{
    FakeServer, Response, chat_bodies, json_str, openai_text, openai_tool_call,
};
use support::{TempHome, config_for, text};

/// A fake provider answering the scripted bodies in order (the last one repeats).
fn scripted(bodies: Vec<String>) -> FakeServer {
    chat_bodies(bodies, std::time::Duration::ZERO)
}

#[test]
fn one_turn_prints_the_reply_on_stdout_only() {
    let fake = scripted(vec![openai_text("Hello from the fake model")]);
    let home = TempHome::onboarded("plain", &config_for(&fake.url(), ""));
    let out = home.run(&["agent", "-m", "hello"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Hello from the fake model\n");
    // (A kernel without Landlock, e.g. under qemu-user, adds its one start-up warning.)
    assert_eq!(
        support::binary::without_landlock_notice(&text(&out.stderr)),
        "",
        "no logs on a successful quiet turn"
    );
    let reqs = fake.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 1);
    let body = &reqs[0].body;
    assert!(body.contains("\"model\":\"fake-model\""), "{body}");
    assert!(body.contains("\"content\":\"hello\""), "{body}");
    // The system prompt carries the workspace files, the time and the channel.
    assert!(body.contains("You are yoctoclaw"), "{body}");
    assert!(body.contains("Channel: terminal"), "{body}");
    assert!(body.contains("Current time: "), "{body}");
    // No key configured and a plain-http server: no Authorization header.
    assert!(reqs[0].header("authorization").is_none());
}

#[test]
fn the_api_key_is_sent_as_a_bearer_token() {
    let fake = scripted(vec![openai_text("ok")]);
    let home = TempHome::onboarded("key", &config_for(&fake.url(), ""));
    let out = home
        .cmd(&["agent", "-m", "hi"])
        .env("YOCTOCLAW_API_KEY", "sk-test-1234567890")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let reqs = fake.requests();
    assert_eq!(
        reqs[0].header("authorization"),
        Some("Bearer sk-test-1234567890")
    );
}

#[test]
fn a_native_tool_call_result_reaches_the_model_and_the_answer() {
    let fake = scripted(vec![
        openai_tool_call("call_1", "read_file", &json_str(r#"{"path":"notes.md"}"#)),
        openai_text("The note says: buy milk"),
    ]);
    let home = TempHome::onboarded("native", &config_for(&fake.url(), ""));
    std::fs::write(home.workspace().join("notes.md"), "buy milk").unwrap();
    let out = home.run(&["agent", "-m", "what does my note say?"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "The note says: buy milk");
    let reqs = fake.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[0].body.contains("\"name\":\"read_file\""),
        "tools offered"
    );
    let second = &reqs[1].body;
    assert!(second.contains("\"role\":\"tool\""), "{second}");
    assert!(second.contains("\"tool_call_id\":\"call_1\""), "{second}");
    assert!(second.contains("\"content\":\"buy milk\""), "{second}");
    assert!(second.contains("\"tool_calls\":[{"), "{second}");
}

#[test]
fn tool_arguments_as_an_object_work_too() {
    let fake = scripted(vec![
        openai_tool_call("c9", "list_dir", r#"{"path":"."}"#),
        openai_text("done"),
    ]);
    let home = TempHome::onboarded("objargs", &config_for(&fake.url(), ""));
    let out = home.run(&["agent", "-m", "list"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let second = &fake.requests()[1].body;
    assert!(
        second.contains("SOUL.md"),
        "list_dir output reached the model: {second}"
    );
}

#[test]
fn the_text_fallback_runs_tools_for_models_without_native_calls() {
    let fake = scripted(vec![
        openai_text(
            "Let me check.\n<tool_call>{\"name\":\"read_file\",\"arguments\":{\"path\":\"todo.txt\"}}</tool_call>",
        ),
        openai_text("You have one thing to do: call mum."),
    ]);
    let home = TempHome::onboarded("textcall", &config_for(&fake.url(), ""));
    std::fs::write(home.workspace().join("todo.txt"), "call mum").unwrap();
    let out = home.run(&["agent", "-m", "todo?"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        "You have one thing to do: call mum."
    );
    let second = &fake.requests()[1].body;
    assert!(
        second.contains("<tool_result name=\\\"read_file\\\">\\ncall mum"),
        "{second}"
    );
}

#[test]
fn prose_that_mentions_json_is_not_a_tool_call() {
    let answer = "Use {\"name\":\"read_file\",\"arguments\":{\"path\":\"x\"}} in your request.";
    let fake = scripted(vec![openai_text(answer)]);
    let home = TempHome::onboarded("prose", &config_for(&fake.url(), ""));
    let out = home.run(&["agent", "-m", "how?"]);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout).trim(), answer);
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn the_tool_round_cap_forces_a_final_answer() {
    let fake = scripted(vec![openai_tool_call("loop", "list_dir", &json_str("{}"))]);
    let home = TempHome::onboarded(
        "cap",
        &config_for(&fake.url(), r#""agent":{"max_tool_iterations":2}"#),
    );
    let out = home.run(&["agent", "-m", "loop forever"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3, "two tool rounds, then one final request");
    assert!(reqs[1].body.contains("\"tools\""));
    assert!(
        !reqs[2].body.contains("\"tools\""),
        "the last request offers no tools"
    );
    assert!(reqs[2].body.contains("used all tool rounds"));
    assert!(!text(&out.stdout).trim().is_empty());
}

#[test]
fn path_escapes_are_refused_as_tool_errors() {
    let fake = scripted(vec![
        openai_tool_call("c1", "read_file", &json_str(r#"{"path":"../config.json"}"#)),
        openai_text("I cannot read that."),
    ]);
    let home = TempHome::onboarded("escape", &config_for(&fake.url(), ""));
    let out = home.run(&["agent", "-m", "read the config"]);
    assert!(out.status.success());
    let second = &fake.requests()[1].body;
    assert!(second.contains("outside the workspace"), "{second}");
    assert!(
        !second.contains("api_key_env"),
        "config content leaked: {second}"
    );
}

fn provider_error(resp: Response) -> (i32, String) {
    let fake = FakeServer::start(move |_| resp.clone());
    let home = TempHome::onboarded("err", &config_for(&fake.url(), ""));
    let out = home.run(&["agent", "-m", "hi"]);
    (out.status.code().unwrap_or(-1), text(&out.stderr))
}

fn assert_one_clear_line(stderr: &str) {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("yoctoclaw:"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("Error {"), "no Debug dumps: {stderr}");
}

#[test]
fn provider_401_is_a_clear_error() {
    let (code, err) = provider_error(Response::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#,
    ));
    assert_eq!(code, 1);
    assert_one_clear_line(&err);
    assert!(err.contains("refused the API key"), "{err}");
    assert!(err.contains("YOCTOCLAW_API_KEY"), "{err}");
}

#[test]
fn provider_404_names_the_model() {
    let (code, err) = provider_error(Response::json(
        404,
        r#"{"error":{"message":"model not found"}}"#,
    ));
    assert_eq!(code, 1);
    assert!(err.contains("fake-model"), "{err}");
}

#[test]
fn provider_500_is_a_clear_error() {
    let (code, err) = provider_error(Response::json(500, r#"{"error":{"message":"boom"}}"#));
    assert_eq!(code, 1);
    assert!(err.contains("HTTP 500"), "{err}");
}

#[test]
fn a_garbage_body_is_a_clear_error() {
    let (code, err) = provider_error(Response::text(200, "<html>Bad gateway</html>"));
    assert_eq!(code, 1);
    assert!(err.contains("not valid Chat Completions JSON"), "{err}");
}

#[test]
fn connection_refused_is_a_clear_error() {
    // Bind then drop a listener to get a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let home = TempHome::onboarded(
        "refused",
        &config_for(&format!("http://127.0.0.1:{port}"), ""),
    );
    let out = home.run(&["agent", "-m", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    // The sentence names no host; the log line before it does.
    assert!(
        err.contains("yoctoclaw: cannot reach the provider (connection refused)"),
        "{err}"
    );
    assert!(
        err.contains(&format!("provider at 127.0.0.1:{port}")),
        "{err}"
    );
}

#[test]
fn a_missing_key_for_an_https_provider_says_which_variable() {
    let home = TempHome::onboarded("nokey", "{}");
    let out = home.run(&["agent", "-m", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("set YOCTOCLAW_API_KEY"), "{err}");
}

#[test]
fn history_survives_a_restart_and_new_starts_fresh() {
    let fake = scripted(vec![openai_text("noted")]);
    let home = TempHome::onboarded("history", &config_for(&fake.url(), ""));
    assert!(
        home.run(&["agent", "-s", "work", "-m", "my name is Ada"])
            .status
            .success()
    );
    assert!(
        home.run(&["agent", "-s", "work", "-m", "what is my name?"])
            .status
            .success()
    );
    let second = &fake.requests()[1].body;
    assert!(second.contains("my name is Ada"), "{second}");
    assert!(second.contains("\"content\":\"noted\""), "{second}");
    // Another session does not see it.
    assert!(
        home.run(&["agent", "-s", "other", "-m", "hi"])
            .status
            .success()
    );
    assert!(!fake.requests()[2].body.contains("my name is Ada"));
    // /new starts a fresh conversation in the same session.
    let out = home.run(&["agent", "-s", "work", "-m", "/new"]);
    assert!(text(&out.stdout).contains("fresh conversation"));
    assert!(
        home.run(&["agent", "-s", "work", "-m", "again"])
            .status
            .success()
    );
    assert!(!fake.requests()[3].body.contains("my name is Ada"));
}

#[test]
fn interactive_chat_reads_lines_until_end_of_input() {
    use std::io::Write;
    let fake = scripted(vec![
        openai_text("first answer"),
        openai_text("second answer"),
    ]);
    let home = TempHome::onboarded("interactive", &config_for(&fake.url(), ""));
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
        writeln!(stdin, "/help").unwrap();
        writeln!(stdin, "two").unwrap();
    } // closing stdin = Ctrl-D
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let a = stdout.find("first answer").expect(&stdout);
    let h = stdout.find("/new").expect(&stdout);
    let b = stdout.find("second answer").expect(&stdout);
    assert!(a < h && h < b, "{stdout}");
    assert_eq!(fake.requests().len(), 2);
}
