//! Thinking its template opened in the prompt (QwQ, DeepSeek-R1 distills, Qwen3 "Thinking"
//! models on llama.cpp or vLLM without a reasoning parser): the answer starts mid-thought
//! and holds only the closing `</think>`. Streamed to the terminal (`agent -m`) and to
//! Telegram previews, none of the thinking may show, the first answer of a model never
//! seen before included; the final message equals the non-streamed one. A model that does
//! not think shows its first answer whole at its end and streams from then on (what was
//! learned is kept in the store, so the next `agent -m` streams too).
//!
//! The fake model streams exactly as llama.cpp's server does: a first chunk with the role
//! and `"content":null`, one chunk per piece, a last chunk with `finish_reason`, `usage`
//! and `timings`, then `data: [DONE]`.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::fake_http::{FakeServer, Response, chat_model, json_str, openai_text};
use support::fake_telegram::FakeTelegram;
use support::gateway::Gateway;
use support::{TempHome, config_for, succeeded};
use yoctoclaw::agent::think::{self, CUT_WITHOUT_ANSWER};
use yoctoclaw::channels::telegram::reply::reply_parts;
use yoctoclaw::config::ProviderConfig;
use yoctoclaw::store::Db;

const ALICE: i64 = 42;
/// Longest wait for anything (a hang guard, not a timing check).
const PATIENCE: Duration = Duration::from_secs(40);

/// Qwen3-4B-Thinking-2507's answer as llama.cpp streams it with `--reasoning-format none`
/// (the template ends the prompt with `<think>\n`): thinking, the closer split over two
/// deltas, blank lines, the answer. Every piece of the thinking says "SECRET".
const QWEN3_THINKING: &[&str] = &[
    "Okay",
    ", the user asks",
    " for the capital of France. SECRET",
    " plan: answer in one line",
    ", bold the city. SECRET.\n",
    "</th",
    "ink>",
    "\n\n",
    "The capital",
    " of France",
    " is **Paris**.",
];
const QWEN3_ANSWER: &str = "The capital of France is **Paris**.";

/// One `data:` event of llama.cpp's stream.
fn llamacpp_event(choice: &str, extra: &str) -> Vec<u8> {
    format!(
        "data: {{\"choices\":[{choice}],\"created\":1754523863,\"id\":\"chatcmpl-X6urH4f6JOotPwco2Ege\",\"model\":\"qwen3-4b-thinking-2507\",\"system_fingerprint\":\"b6097-9515c613\",\"object\":\"chat.completion.chunk\"{extra}}}\n\n"
    )
    .into_bytes()
}

/// llama.cpp's SSE chunks for `parts`, ending with `finish`.
fn llamacpp_chunks(parts: &[&str], finish: &str) -> Vec<Vec<u8>> {
    let mut chunks = vec![llamacpp_event(
        r#"{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}"#,
        "",
    )];
    for p in parts {
        chunks.push(llamacpp_event(
            &format!(
                r#"{{"finish_reason":null,"index":0,"delta":{{"content":{}}}}}"#,
                json_str(p)
            ),
            "",
        ));
    }
    let mut last = llamacpp_event(
        &format!(r#"{{"finish_reason":"{finish}","index":0,"delta":{{}}}}"#),
        r#","usage":{"completion_tokens":61,"prompt_tokens":1085,"total_tokens":1146},"timings":{"prompt_n":1085,"prompt_ms":203.378,"predicted_n":61,"predicted_ms":933.63}"#,
    );
    last.extend_from_slice(b"data: [DONE]\n\n");
    chunks.push(last);
    chunks
}

/// llama.cpp's streamed answer of `parts`, `pause` between events.
fn llamacpp_sse(parts: &[&str], pause: Duration, finish: &str) -> Response {
    Response::Chunked {
        status: 200,
        content_type: "text/event-stream".into(),
        chunks: llamacpp_chunks(parts, finish),
        pause,
    }
}

fn stream_config(llm_url: &str, extra: &str) -> String {
    config_for(llm_url, extra).replacen(
        r#""model":"fake-model""#,
        r#""model":"fake-model","stream":true"#,
        1,
    )
}

/// The store's record of where the fake model's answers start.
fn learned(home: &TempHome, llm_url: &str) -> Option<String> {
    let cfg = ProviderConfig {
        base_url: format!("{llm_url}/v1"),
        model: "fake-model".into(),
        ..ProviderConfig::default()
    };
    let db = Db::open(&home.dir.join("yoctoclaw.db"), 64).unwrap();
    db.get_state(&think::state_key(&cfg)).unwrap()
}

fn agent_m(home: &TempHome, session: &str, text: &str) -> String {
    succeeded(&home.run(&["agent", "-s", session, "-m", text]))
}

#[test]
fn agent_m_never_prints_thinking_opened_in_the_prompt_the_first_time_or_after() {
    let llm = chat_model(vec![llamacpp_sse(QWEN3_THINKING, Duration::ZERO, "stop")]);
    let home = TempHome::onboarded("think-term", &stream_config(&llm.url(), ""));
    assert_eq!(learned(&home, &llm.url()), None);
    // The very first answer of this model: stdout is append-only, so what it holds at the
    // end is everything ever printed.
    let out = agent_m(&home, "a", "capital of France?");
    assert_eq!(out, format!("{QWEN3_ANSWER}\n"));
    assert_eq!(learned(&home, &llm.url()).as_deref(), Some("inside"));
    // Known now (another process): the same.
    let out = agent_m(&home, "a", "again?");
    assert_eq!(out, format!("{QWEN3_ANSWER}\n"));
    // History sent back to the model holds the answer, never the thinking.
    let second = &llm.requests_to("/chat/completions")[1].body;
    assert!(
        second.contains("**Paris**") && !second.contains("SECRET"),
        "{second}"
    );
    // Not streamed: the same final text.
    let plain = chat_model(vec![Response::json(
        200,
        &openai_text(&QWEN3_THINKING.concat()),
    )]);
    home.write_config(&config_for(&plain.url(), ""));
    assert_eq!(agent_m(&home, "b", "capital?"), format!("{QWEN3_ANSWER}\n"));
}

#[test]
fn every_split_of_the_closer_and_a_call_after_thinking_stream_clean() {
    // The closer split at every byte across two deltas, then a call in text after it:
    // the tool runs (its result goes back), nothing of the thinking or the markup shows.
    let thought = "I should list the SECRET folder.\n";
    let after = "\n\nLet me look.\n<tool_call>\n{\"name\": \"list_dir\", \"arguments\": {\"path\": \".\"}}\n</tool_call>";
    let home = TempHome::onboarded("think-split", "{}");
    for cut in 1.."</think>".len() {
        let (a, b) = "</think>".split_at(cut);
        let first = [thought, a, b, after];
        let llm = chat_model(vec![
            llamacpp_sse(&first, Duration::ZERO, "stop"),
            llamacpp_sse(
                &["Your ", "folder ", "holds ", "SOUL.md."],
                Duration::ZERO,
                "stop",
            ),
        ]);
        home.write_config(&stream_config(&llm.url(), ""));
        let out = agent_m(&home, &format!("s{cut}"), "what is here?");
        assert_eq!(
            out, "Let me look.\nYour folder holds SOUL.md.\n",
            "cut {cut}"
        );
        let reqs = llm.requests_to("/chat/completions");
        assert_eq!(reqs.len(), 2, "cut {cut}");
        assert!(reqs[1].body.contains("SOUL.md"), "list_dir ran: cut {cut}");
        assert!(!reqs[1].body.contains("SECRET"), "cut {cut}");
    }
}

#[test]
fn a_model_cut_inside_its_thinking_says_it_ran_out_of_room() {
    let cut = ["Let me think", " about SECRET", " things for a long"];
    for stream in [true, false] {
        let (teach, cut) = if stream {
            (
                llamacpp_sse(QWEN3_THINKING, Duration::ZERO, "stop"),
                llamacpp_sse(&cut, Duration::ZERO, "length"),
            )
        } else {
            (
                Response::json(200, &openai_text(&QWEN3_THINKING.concat())),
                Response::json(
                    200,
                    &openai_text(&cut.concat()).replace(r#""stop""#, r#""length""#),
                ),
            )
        };
        let llm = chat_model(vec![teach, cut]);
        let config = if stream {
            stream_config(&llm.url(), "")
        } else {
            config_for(&llm.url(), "")
        };
        let home = TempHome::onboarded("think-cut", &config);
        // The first answer teaches that this model starts inside thinking...
        assert_eq!(agent_m(&home, "c", "capital?"), format!("{QWEN3_ANSWER}\n"));
        assert_eq!(learned(&home, &llm.url()).as_deref(), Some("inside"));
        // ...so an answer cut at max_tokens before its `</think>` is all thought.
        let out = agent_m(&home, "c", "tell me more");
        assert_eq!(out, format!("{CUT_WITHOUT_ANSWER}\n"), "stream {stream}");
        // A cut answer teaches nothing.
        assert_eq!(learned(&home, &llm.url()).as_deref(), Some("inside"));
    }
}

/// A fake model answering one connection after another with `answers` in order: the
/// head and the events before `gate_after`, then (when set) a wait for the gate (at most
/// `PATIENCE`) before the rest.
fn gated_model(answers: Vec<(Vec<Vec<u8>>, Option<usize>)>) -> (String, mpsc::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let (open, gate) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        for (chunks, gate_after) in answers {
            let Ok((conn, _)) = listener.accept() else {
                return;
            };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let l = line.trim_end().to_ascii_lowercase();
                if let Some(v) = l.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if l.is_empty() {
                    break;
                }
            }
            let mut body = vec![0u8; length];
            let _ = reader.read_exact(&mut body);
            let mut conn = conn;
            let _ = conn.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
            );
            for (i, c) in chunks.iter().enumerate() {
                if Some(i) == gate_after {
                    let _ = gate.recv_timeout(PATIENCE);
                }
                let _ = conn.write_all(format!("{:x}\r\n", c.len()).as_bytes());
                let _ = conn.write_all(c);
                let _ = conn.write_all(b"\r\n");
                let _ = conn.flush();
            }
            let _ = conn.write_all(b"0\r\n\r\n");
            let _ = conn.flush();
        }
    });
    (url, open)
}

#[test]
fn a_model_without_thinking_is_learned_and_then_streams_at_once() {
    let parts = ["Hello", " there,", " friend."];
    let chunks = llamacpp_chunks(&parts, "stop");
    // The second answer stops after its first words until the test has seen them printed.
    let (url, gate) = gated_model(vec![(chunks.clone(), None), (chunks, Some(2))]);
    let home = TempHome::onboarded("think-plain", &stream_config(&url, ""));
    // First answer of a model never seen: held, then shown whole at its end.
    assert_eq!(agent_m(&home, "p", "hi"), "Hello there, friend.\n");
    assert_eq!(learned(&home, &url).as_deref(), Some("outside"));
    // A new process knows it from the store: the first words are printed while the
    // server still holds the rest back.
    let mut child = home
        .cmd(&["agent", "-s", "p", "-m", "hi again"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 256];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    while !String::from_utf8_lossy(&seen).contains("Hello") {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(bytes) => seen.extend(bytes),
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "the first words were not printed while the rest was held: {:?}",
                    String::from_utf8_lossy(&seen)
                );
            }
        }
    }
    gate.send(()).unwrap();
    while let Ok(bytes) = rx.recv_timeout(PATIENCE) {
        seen.extend(bytes);
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(String::from_utf8_lossy(&seen), "Hello there, friend.\n");
}

fn tg_stream_config(llm: &FakeServer, tg: &FakeTelegram) -> String {
    stream_config(
        &llm.url(),
        &format!(
            r#""telegram":{{"enabled":true,"api_base":"{}","allow_from":["{ALICE}"],"poll_timeout_secs":1}}"#,
            tg.url()
        ),
    )
}

#[test]
fn telegram_previews_never_show_thinking_opened_in_the_prompt() {
    // Slow enough that previews (one a second) are sent while the model still thinks:
    // a stream that showed thinking would put it in a draft or an edit.
    let pause = Duration::from_millis(250);
    let second = [
        "The user ",
        "wants SECRET ",
        "weather.\n",
        "Say sunny.\n",
        "</think>\n\n",
        "Sunny ",
        "all day, ",
        "no umbrella ",
        "needed.",
    ];
    for drafts in [true, false] {
        let llm = chat_model(vec![
            llamacpp_sse(QWEN3_THINKING, pause, "stop"),
            llamacpp_sse(&second, pause, "stop"),
        ]);
        let tg = FakeTelegram::start();
        tg.set_drafts(drafts);
        let home = TempHome::onboarded("think-tg", &tg_stream_config(&llm, &tg));
        tg.push_private(ALICE, "alice", "capital of France?");
        let mut g = Gateway::start(&home, &[("YOCTOCLAW_TEST_BACKOFF_SCALE", "0.01")]);
        let first_final = reply_parts(QWEN3_ANSWER, true);
        // Where a final text shows (drafts are previews only; without drafts the streamed
        // message is edited into the final text).
        let final_at = |want: &str| {
            tg.shown_to(ALICE)
                .iter()
                .position(|s| s.method != "sendMessageDraft" && s.text == want)
        };
        g.wait_for("the first answer", || final_at(&first_final[0]).is_some());
        // The second answer, from a model now known to start inside thinking.
        tg.push_private(ALICE, "alice", "weather?");
        let second_final = reply_parts("Sunny all day, no umbrella needed.", true);
        g.wait_for("the second answer", || final_at(&second_final[0]).is_some());
        let log = g.stop_cleanly();
        let shown = tg.shown_to(ALICE);
        for s in &shown {
            assert!(
                !s.text.contains("SECRET") && !s.text.contains("think"),
                "drafts {drafts}: thinking shown by {}: {:?}",
                s.method,
                s.text
            );
        }
        // The final messages are exactly the non-streamed ones, in order.
        assert!(
            final_at(&first_final[0]) < final_at(&second_final[0]),
            "{shown:?}"
        );
        assert!(log.contains("starts its answers inside thinking"), "{log}");
    }
}

#[test]
fn a_stream_cut_while_its_start_is_held_is_asked_again() {
    // Nothing of a held start was shown, so a cut there is retried like a cut before any
    // text (a known model would have shown "The first half" and ended with the error).
    let events = llamacpp_chunks(&["The first half", " and the second half."], "stop");
    let mut raw =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n".to_vec();
    for e in &events[..2] {
        raw.extend_from_slice(e);
    }
    let llm = chat_model(vec![
        Response::Raw(raw),
        llamacpp_sse(&["Whole ", "answer."], Duration::ZERO, "stop"),
    ]);
    let home = TempHome::onboarded("think-cut-held", &stream_config(&llm.url(), ""));
    let out = home
        .cmd(&["agent", "-m", "hi"])
        .env("YOCTOCLAW_TEST_BACKOFF_MS", "1")
        .output()
        .unwrap();
    assert_eq!(succeeded(&out), "Whole answer.\n");
    assert_eq!(llm.requests_to("/chat/completions").len(), 2);
}

#[test]
fn a_thinking_stream_with_tools_cut_twice_is_still_asked_streamed() {
    // Cut twice mid-thought (network blips; text came, held back as maybe thinking): not
    // a server that cannot stream tool calls (that one sends nothing), so the third
    // attempt still streams.
    let events = llamacpp_chunks(QWEN3_THINKING, "stop");
    let mut raw =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n".to_vec();
    for e in &events[..4] {
        raw.extend_from_slice(e);
    }
    let llm = chat_model(vec![
        Response::Raw(raw.clone()),
        Response::Raw(raw),
        llamacpp_sse(QWEN3_THINKING, Duration::ZERO, "stop"),
    ]);
    let home = TempHome::onboarded("think-cut-tools", &stream_config(&llm.url(), ""));
    let out = home
        .cmd(&["agent", "-m", "capital?"])
        .env("YOCTOCLAW_TEST_BACKOFF_MS", "1")
        .output()
        .unwrap();
    assert_eq!(succeeded(&out), format!("{QWEN3_ANSWER}\n"));
    let reqs = llm.requests_to("/chat/completions");
    assert_eq!(reqs.len(), 3);
    assert!(reqs.iter().all(|r| r.body.contains("\"tools\":")));
    assert!(reqs[2].body.contains("\"stream\":true"), "{}", reqs[2].body);
}

#[test]
fn what_follows_the_thinking_is_still_scrubbed_as_it_streams() {
    // Thinking is removed first, then the scrubbing sink sees the visible text: a key split
    // over deltas after `</think>` is redacted, on stdout and in history.
    let parts = [
        "The user pasted a SECRET key.\n</think>\n\nYour key is sk-proj-AbCd",
        "EfGhIjKlMnOpQrStUvWx",
        "Yz0123456789abcd, keep it safe.",
    ];
    let llm = chat_model(vec![
        llamacpp_sse(&parts, Duration::ZERO, "stop"),
        llamacpp_sse(&["</think>Ok."], Duration::ZERO, "stop"),
    ]);
    let home = TempHome::onboarded("think-scrub", &stream_config(&llm.url(), ""));
    let out = agent_m(&home, "k", "what is my key?");
    assert_eq!(out, "Your key is [REDACTED], keep it safe.\n");
    assert_eq!(agent_m(&home, "k", "thanks"), "Ok.\n");
    let second = &llm.requests_to("/chat/completions")[1].body;
    assert!(
        !second.contains("AbCdEf") && !second.contains("SECRET"),
        "{second}"
    );
}
