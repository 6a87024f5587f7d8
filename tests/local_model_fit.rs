//! Local models end to end, the parts that are not formats: the context window
//! (`provider.context_window`: fitting, the retry after an overflow, the small-window
//! prompt), the tool mode (`provider.tool_mode`, and the switch to text when a server
//! refuses tools, which `doctor` reports), and the loop guard. All through the real binary
//! against fake OpenAI-compatible servers on 127.0.0.1 that answer the way llama.cpp,
//! llama-cpp-python and Ollama do.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use support::fake_http::{FakeServer, Request, Response, json_str, openai_text, openai_tool_call};
use support::{TempHome, text};

const SUMMARY_MARK: &str = "You compress conversations";

/// llama.cpp's `llama-server` when the prompt does not fit `--ctx-size`.
const LLAMA_SERVER_OVERFLOW: &str = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":1491,"n_ctx":1024}}"#;
/// llama-cpp-python's server for the same.
const LLAMA_CPP_PYTHON_OVERFLOW: &str = r#"{"error":{"message":"Requested tokens (1491) exceed context window of 1024","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
/// Ollama for a model whose template has no tools.
const OLLAMA_NO_TOOLS: &str =
    r#"{"error":"registry.ollama.ai/library/gemma2:2b does not support tools"}"#;

fn config(url: &str, provider_extra: &str) -> String {
    format!(r#"{{"provider":{{"base_url":"{url}/v1","model":"local-model"{provider_extra}}}}}"#)
}

fn ok(out: &std::process::Output) -> String {
    support::succeeded(out)
}

fn chats(f: &FakeServer) -> Vec<Request> {
    f.requests_to("/chat/completions")
        .into_iter()
        .filter(|r| !r.body.contains(SUMMARY_MARK))
        .collect()
}

fn summaries(f: &FakeServer) -> usize {
    f.requests_to("/chat/completions")
        .iter()
        .filter(|r| r.body.contains(SUMMARY_MARK))
        .count()
}

/// Fill a session with `turns` exchanges of about `bytes` each (answers from a server that
/// never overflows).
fn fill(home: &TempHome, turns: usize, bytes: usize) {
    let answer = openai_text(&"The tomatoes need water twice a week. ".repeat(bytes / 40));
    let f = FakeServer::start(move |_| Response::json(200, &answer));
    home.write_config(&config(&f.url(), ""));
    for i in 0..turns {
        let q = format!(
            "question {i}: {}",
            "how are the tomatoes doing? ".repeat(bytes / 30)
        );
        ok(&home.run(&["agent", "-m", &q]));
    }
}

#[test]
fn an_overflow_is_compacted_and_asked_again_once_and_the_user_gets_the_answer() {
    for overflow in [LLAMA_SERVER_OVERFLOW, LLAMA_CPP_PYTHON_OVERFLOW] {
        let home = TempHome::onboarded("overflow-retry", "{}");
        fill(&home, 6, 600);
        let n = Arc::new(AtomicUsize::new(0));
        let n2 = n.clone();
        let f = FakeServer::start(move |req| {
            if req.body.contains(SUMMARY_MARK) {
                return Response::json(200, &openai_text("SUMMARY: tomatoes, watering."));
            }
            // The first request overflows; the one after compaction fits.
            if n2.fetch_add(1, Ordering::SeqCst) == 0 {
                return Response::json(400, overflow);
            }
            Response::json(200, &openai_text("Water them on Sunday."))
        });
        home.write_config(&config(&f.url(), ""));
        let out = ok(&home.run(&["agent", "-m", "and when next?"]));
        assert!(out.contains("Water them on Sunday."), "{out}");
        let reqs = chats(&f);
        assert_eq!(reqs.len(), 2, "one retry only");
        assert_eq!(summaries(&f), 1, "compacted before the retry");
        assert!(
            reqs[1].body.len() < reqs[0].body.len(),
            "the retry is smaller: {} then {}",
            reqs[0].body.len(),
            reqs[1].body.len()
        );
        assert!(
            reqs[1].body.contains("SUMMARY: tomatoes"),
            "{}",
            reqs[1].body
        );
        assert!(reqs[1].body.contains("and when next?"));
        // And the session goes on.
        let out = ok(&home.run(&["agent", "-m", "thanks"]));
        assert!(out.contains("Water them on Sunday."), "{out}");
    }
}

#[test]
fn an_overflow_that_persists_is_one_sentence_naming_the_window_and_the_key_and_the_next_message_works()
 {
    let home = TempHome::onboarded("overflow-stuck", "{}");
    fill(&home, 3, 300);
    let fail = Arc::new(AtomicUsize::new(1));
    let fail2 = fail.clone();
    let f = FakeServer::start(move |req| {
        if req.body.contains(SUMMARY_MARK) {
            return Response::json(200, &openai_text("SUMMARY"));
        }
        if fail2.load(Ordering::SeqCst) == 1 {
            return Response::json(400, LLAMA_CPP_PYTHON_OVERFLOW);
        }
        Response::json(200, &openai_text("Fine again."))
    });
    home.write_config(&config(&f.url(), ""));
    let out = home.run(&["agent", "-m", &"a very long paste ".repeat(200)]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("context window"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("1024 tokens"), "{line}");
    assert!(line.contains("provider.context_window"), "{line}");
    assert!(!line.contains("127.0.0.1") && !line.contains('{'), "{line}");
    assert_eq!(chats(&f).len(), 2, "asked again once, not forever");
    // The next message works without /new.
    fail.store(0, Ordering::SeqCst);
    let out = ok(&home.run(&["agent", "-m", "hello?"]));
    assert!(out.contains("Fine again."), "{out}");
}

/// Estimated prompt tokens of a body the way a 4-bytes-a-token tokenizer counts it.
fn tokens(body: &str) -> usize {
    body.len() / 4
}

#[test]
fn a_small_window_gets_a_short_prompt_short_tools_and_requests_that_fit() {
    let home = TempHome::onboarded("small-window", "{}");
    fill(&home, 12, 300);
    // Usage as a 4-bytes-a-token tokenizer would count it (the agent calibrates on it).
    let f = FakeServer::start(|req| {
        let body = openai_text("Sure.").replace(
            "\"prompt_tokens\":10",
            &format!("\"prompt_tokens\":{}", tokens(&req.body)),
        );
        Response::json(200, &body)
    });
    // 1024 tokens, 256 of them for the answer.
    home.write_config(&config(
        &f.url(),
        r#","context_window":1024,"max_tokens":256"#,
    ));
    ok(&home.run(&["agent", "-m", "what about the tomatoes?"]));
    let reqs = chats(&f);
    let body = &reqs.last().unwrap().body;
    assert!(
        tokens(body) <= 1024 - 256,
        "{} bytes: about {} tokens: {body}",
        body.len(),
        tokens(body)
    );
    assert!(body.contains("what about the tomatoes?"));
    // The newest exchange stays, the oldest went.
    assert!(body.contains("question 11"), "{body}");
    assert!(!body.contains("question 0:"), "{body}");
    // Tools without their parameter descriptions.
    assert!(body.contains("\"name\":\"read_file\"") || !body.contains("\"tools\""));
    assert!(
        !body.contains("File path relative to the workspace"),
        "{body}"
    );

    // The same history with the default window (8192 for a local URL) keeps more.
    let f2 = FakeServer::start(|_| Response::json(200, &openai_text("Sure.")));
    home.write_config(&config(&f2.url(), ""));
    ok(&home.run(&["agent", "-m", "and the peppers?"]));
    let big = &chats(&f2).last().unwrap().body.clone();
    assert!(
        big.len() > body.len() * 2,
        "{} vs {}",
        big.len(),
        body.len()
    );
    assert!(big.contains("File path relative to the workspace"));
}

#[test]
fn a_server_that_refuses_tools_gets_them_as_text_for_the_rest_of_the_run_and_doctor_says_so() {
    let home = TempHome::onboarded("tools-refused", "{}");
    let n = Arc::new(AtomicUsize::new(0));
    let n2 = n.clone();
    let f = FakeServer::start(move |req| {
        if req.body.contains("\"tools\":") {
            return Response::json(400, OLLAMA_NO_TOOLS);
        }
        match n2.fetch_add(1, Ordering::SeqCst) {
            0 => Response::json(
                200,
                &openai_text("<tool_call>{\"name\":\"list_dir\",\"arguments\":{}}</tool_call>"),
            ),
            _ => Response::json(200, &openai_text("Your workspace has SOUL.md and more.")),
        }
    });
    home.write_config(&config(&f.url(), ""));
    let out = home.run(&["agent", "-m", "what is in my workspace?"]);
    let stdout = ok(&out);
    assert!(stdout.contains("Your workspace has SOUL.md"), "{stdout}");
    let err = text(&out.stderr);
    assert_eq!(
        err.matches("refused native tools").count(),
        1,
        "logged once: {err}"
    );
    let reqs = chats(&f);
    assert_eq!(reqs.len(), 3, "refused, then text call, then answer");
    assert!(reqs[0].body.contains("\"tools\":"));
    for r in &reqs[1..] {
        assert!(!r.body.contains("\"tools\":"), "{}", r.body);
        assert!(!r.body.contains("tool_choice"), "{}", r.body);
        // The schemas are described in the system prompt.
        assert!(r.body.contains("list_dir"), "{}", r.body);
    }
    // The tool ran: its result went back as text.
    assert!(reqs[2].body.contains("<tool_result"), "{}", reqs[2].body);
    assert!(reqs[2].body.contains("SOUL.md"), "{}", reqs[2].body);
    // A new run asks natively once more (the model may have changed), and doctor says
    // what to set.
    let out = ok(&home.run(&["agent", "-m", "again?"]));
    assert!(out.contains("SOUL.md"), "{out}");
    assert_eq!(chats(&f).len(), 5);
    assert!(!chats(&f)[4].body.contains("\"tools\":"));
    let doc = home.run(&["doctor"]);
    let all = text(&doc.stdout) + &text(&doc.stderr);
    let line = all
        .lines()
        .find(|l| l.contains("tool_mode"))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(line.contains("text"), "{line}");
}

#[test]
fn tool_mode_text_and_none_are_what_the_requests_carry() {
    let home = TempHome::onboarded("tool-modes", "{}");
    let f = FakeServer::start(|_| Response::json(200, &openai_text("ok")));
    home.write_config(&config(&f.url(), r#","tool_mode":"text""#));
    ok(&home.run(&["agent", "-m", "hi"]));
    let body = chats(&f).last().unwrap().body.clone();
    assert!(!body.contains("\"tools\":"), "{body}");
    assert!(
        body.contains("<tool_call>"),
        "the format is described: {body}"
    );
    assert!(body.contains("memory_search"), "{body}");

    home.write_config(&config(&f.url(), r#","tool_mode":"none""#));
    ok(&home.run(&["agent", "-m", "hi"]));
    let body = chats(&f).last().unwrap().body.clone();
    assert!(!body.contains("\"tools\":"), "{body}");
    assert!(!body.contains("memory_search"), "{body}");

    home.write_config(&config(&f.url(), r#","tool_mode":"sometimes""#));
    let out = home.run(&["agent", "-m", "hi"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("tool_mode"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_same_call_three_times_in_a_row_gets_one_last_request_without_tools() {
    let home = TempHome::onboarded("loop-guard", "{}");
    let f = FakeServer::start(|req| {
        if req.body.contains("\"tools\":") {
            let args = json_str(r#"{"path":"."}"#);
            return Response::json(200, &openai_tool_call("call_x", "list_dir", &args));
        }
        Response::json(200, &openai_text("I listed it: SOUL.md and others."))
    });
    home.write_config(&config(&f.url(), ""));
    let out = home.run(&["agent", "-m", "list my files"]);
    let stdout = ok(&out);
    assert!(stdout.contains("I listed it"), "{stdout}");
    let err = text(&out.stderr);
    assert!(
        err.contains("same arguments 3 times in a row"),
        "the log says why: {err}"
    );
    let reqs = chats(&f);
    // Three requests with tools: the first two calls ran, the third is the loop.
    assert_eq!(reqs.len(), 4, "three with tools, one final without");
    assert!(!reqs[3].body.contains("\"tools\":"));
    assert_eq!(reqs[3].body.matches("\"role\":\"tool\"").count(), 2);
}

fn doctor_line(home: &TempHome, name: &str) -> String {
    let out = home.run(&["doctor"]);
    let all = text(&out.stdout) + &text(&out.stderr);
    all.lines()
        .find(|l| l.contains(name))
        .unwrap_or_else(|| panic!("no {name} line: {all}"))
        .to_string()
}

#[test]
fn doctor_reads_the_window_from_llama_cpp_lm_studio_and_ollama() {
    let home = TempHome::onboarded("doctor-window", "{}");
    // llama.cpp's llama-server: GET /props.
    let llama = FakeServer::start(|req| match req.path.as_str() {
        "/props" => Response::json(
            200,
            r#"{"default_generation_settings":{"n_ctx":2048,"temperature":0.8},"total_slots":1,"model_path":"/models/qwen.gguf","chat_template":"{{ x }}","build_info":"b6000"}"#,
        ),
        "/v1/chat/completions" => Response::json(200, &openai_text("p")),
        _ => Response::json(
            404,
            r#"{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}"#,
        ),
    });
    home.write_config(&config(&llama.url(), ""));
    let line = doctor_line(&home, "context window");
    assert!(
        line.contains("llama.cpp") && line.contains("2048"),
        "{line}"
    );
    assert!(
        line.contains("set provider.context_window to 2048"),
        "{line}"
    );
    home.write_config(&config(&llama.url(), r#","context_window":2048"#));
    let line = doctor_line(&home, "context window");
    assert!(line.contains("2048 tokens, as llama.cpp"), "{line}");

    // LM Studio: GET /api/v0/models/NAME.
    let lms = FakeServer::start(|req| match req.path.as_str() {
        "/api/v0/models/local-model" => Response::json(
            200,
            r#"{"id":"local-model","object":"model","type":"llm","publisher":"lmstudio-community","arch":"qwen2","compatibility_type":"gguf","quantization":"Q4_K_M","state":"loaded","max_context_length":32768,"loaded_context_length":4096}"#,
        ),
        "/v1/chat/completions" => Response::json(200, &openai_text("p")),
        _ => Response::json(404, r#"{"error":"Unexpected endpoint or method."}"#),
    });
    home.write_config(&config(&lms.url(), r#","context_window":8192"#));
    let line = doctor_line(&home, "context window");
    assert!(
        line.contains("is 8192") && line.contains("LM Studio") && line.contains("set it to 4096"),
        "{line}"
    );

    // Ollama: POST /api/show, num_ctx in the parameters or Ollama's default.
    for (params, want) in [
        (
            "num_ctx                        16384\nstop \"<|im_end|>\"",
            "16384",
        ),
        ("stop \"<|im_end|>\"", "4096"),
    ] {
        let body = format!(
            r#"{{"modelfile":"FROM x","parameters":{},"template":"{{{{ .Prompt }}}}","details":{{"format":"gguf","family":"qwen2"}},"model_info":{{"general.architecture":"qwen2","qwen2.context_length":32768}}}}"#,
            json_str(params)
        );
        let ollama = FakeServer::start(move |req| match req.path.as_str() {
            "/api/show" => Response::json(200, &body),
            "/v1/chat/completions" => Response::json(200, &openai_text("p")),
            _ => Response::text(404, "404 page not found"),
        });
        home.write_config(&config(&ollama.url(), ""));
        let line = doctor_line(&home, "context window");
        assert!(line.contains("Ollama") && line.contains(want), "{line}");
        let show = ollama.requests_to("/api/show");
        assert_eq!(show.len(), 1);
        assert!(
            show[0].body.contains("\"model\":\"local-model\""),
            "{}",
            show[0].body
        );
    }

    // A server that says nothing: the assumed window, and the key to set.
    let quiet = FakeServer::start(|req| match req.path.as_str() {
        "/v1/chat/completions" => Response::json(200, &openai_text("p")),
        _ => Response::text(404, "not found"),
    });
    home.write_config(&config(&quiet.url(), ""));
    let line = doctor_line(&home, "context window");
    assert!(
        line.contains("8192 tokens assumed") && line.contains("provider.context_window"),
        "{line}"
    );
}

#[test]
fn an_empty_answer_with_tools_offered_is_asked_again_without_them() {
    // What llama-cpp-python's chatml-function-calling answers for a small model that
    // picks neither text nor a call: `"content":""`, no tool_calls, finish_reason stop.
    let home = TempHome::onboarded("empty-with-tools", "{}");
    let f = FakeServer::start(|req| {
        if req.body.contains("\"tools\":") {
            return Response::json(
                200,
                r#"{"id":"chatcmpl-1","object":"chat.completion","created":1795790175,"model":"smollm2","choices":[{"index":0,"message":{"content":"","role":"assistant"},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":197,"completion_tokens":9,"total_tokens":206}}"#,
            );
        }
        Response::json(200, &openai_text("Hello there!"))
    });
    home.write_config(&config(&f.url(), ""));
    let out = ok(&home.run(&["agent", "-m", "Say hello."]));
    assert!(out.contains("Hello there!"), "{out}");
    let reqs = chats(&f);
    assert_eq!(reqs.len(), 2, "asked once more, once");
    assert!(!reqs[1].body.contains("\"tools\":"));
    // A model that answers nothing even then gets the one sentence, not a loop.
    let f2 = FakeServer::start(|_| {
        Response::json(
            200,
            r#"{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"content":"","role":"assistant"},"finish_reason":"stop"}]}"#,
        )
    });
    home.write_config(&config(&f2.url(), ""));
    let out = ok(&home.run(&["agent", "-m", "Say hello."]));
    assert!(out.contains("no answer"), "{out}");
    assert_eq!(chats(&f2).len(), 2);
}

#[test]
fn a_stream_with_tools_that_breaks_before_any_text_is_asked_again_unstreamed() {
    // llama-cpp-python's chatml-function-calling: streamed with tool_choice auto, a model
    // that picks a tool raises "Automatic streaming tool choice is not supported" after
    // the headers; the stream ends with no data and no [DONE].
    let home = TempHome::onboarded("stream-tools", "{}");
    let n = Arc::new(AtomicUsize::new(0));
    let n2 = n.clone();
    let f = FakeServer::start(move |req| {
        let streamed = req.body.contains("\"stream\":true");
        let tools = req.body.contains("\"tools\":");
        if streamed && tools {
            return Response::Chunked {
                status: 200,
                content_type: "text/event-stream; charset=utf-8".into(),
                chunks: vec![],
                pause: std::time::Duration::from_millis(1),
            };
        }
        assert!(!streamed, "only requests with tools go unstreamed");
        match n2.fetch_add(1, Ordering::SeqCst) {
            0 => Response::json(
                200,
                &openai_tool_call("call__0_list_dir_cmpl-1", "list_dir", &json_str("{}")),
            ),
            _ => Response::json(200, &openai_text("You have SOUL.md and friends.")),
        }
    });
    home.write_config(&config(&f.url(), r#","stream":true"#));
    let out = home.run(&["agent", "-m", "list my files"]);
    let stdout = ok(&out);
    assert!(stdout.contains("You have SOUL.md"), "{stdout}");
    assert_eq!(
        text(&out.stderr).matches("without streaming").count(),
        1,
        "{}",
        text(&out.stderr)
    );
    let reqs = chats(&f);
    assert_eq!(
        reqs.len(),
        4,
        "broken stream twice (a blip is retried streamed once), unstreamed call, unstreamed answer"
    );
    assert!(reqs[0].body.contains("\"stream\":true"));
    assert!(reqs[1].body.contains("\"stream\":true"));
    assert!(reqs[2].body.contains("\"stream\":false"));
    assert!(
        reqs[3].body.contains("\"stream\":false"),
        "remembered for the run"
    );
    assert!(
        reqs[3].body.contains("SOUL.md"),
        "the tool's result went back"
    );
}
