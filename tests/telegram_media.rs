//! Telegram media end to end: the real gateway against a fake Bot API (with `getFile` and
//! `/file/bot<token>/<file_path>` downloads), a fake speech-to-text server and fake
//! OpenAI/Anthropic models. Request shapes are checked as the real APIs document them:
//! multipart bodies (RFC 7578) with their `Content-Length`, data URLs, Anthropic image
//! blocks; files of 10–20 MB go through.
//!
//! `media_benchmark_run` is a benchmark, not a check (`#[ignore]`): it prints the gateway's
//! peak RSS (`VmHWM`) after a 20 MB voice note, a 10 MB photo and a 20 MB document;
//! `scripts/bench-media.sh` runs it with `--ignored` against a release build.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::fake_http::{
    FakeServer, Request, Response, chat_bodies, json_str, openai_text, openai_tool_call,
};
use support::fake_telegram::FakeTelegram;
use support::gateway::{FAST_BACKOFF, Gateway};
use support::{TempHome, config_for};

const ALICE: i64 = 42;
const KEY: &str = "sk-transcribe-SECRET-1234567890";

/// Bytes that look like a file of the given kind: the magic, then noise.
fn file_bytes(magic: &[u8], len: usize) -> Vec<u8> {
    let mut v = magic.to_vec();
    let mut x: u32 = 0x1234_5678;
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.push((x >> 8) as u8);
    }
    v.truncate(len);
    v
}

fn media_message(kind_json: &str, caption: Option<&str>) -> String {
    let caption = caption
        .map(|c| format!(r#","caption":{}"#, json_str(c)))
        .unwrap_or_default();
    format!(
        r#"{{"message_id":77,"from":{{"id":{ALICE},"is_bot":false,"first_name":"A","username":"alice"}},"chat":{{"id":{ALICE},"type":"private"}},"date":1700000000,{kind_json}{caption}}}"#
    )
}

fn voice(file_id: &str, duration: u64, size: usize) -> String {
    format!(
        r#""voice":{{"file_id":"{file_id}","file_unique_id":"u{file_id}","duration":{duration},"mime_type":"audio/ogg","file_size":{size}}}"#
    )
}

fn photo(sizes: &[(&str, u64)]) -> String {
    let list: Vec<String> = sizes
        .iter()
        .enumerate()
        .map(|(i, (id, n))| {
            format!(
                r#"{{"file_id":"{id}","file_unique_id":"u{id}","width":{},"height":{},"file_size":{n}}}"#,
                90 * (i + 1),
                90 * (i + 1)
            )
        })
        .collect();
    format!(r#""photo":[{}]"#, list.join(","))
}

fn document(file_id: &str, name: &str, mime: &str, size: u64) -> String {
    format!(
        r#""document":{{"file_id":"{file_id}","file_unique_id":"u{file_id}","file_name":{},"mime_type":"{mime}","file_size":{size}}}"#,
        json_str(name)
    )
}

fn config(llm: &str, tg: &FakeTelegram, extra: &str) -> String {
    let sep = if extra.is_empty() { "" } else { "," };
    config_for(
        llm,
        &format!(
            r#""telegram":{{"enabled":true,"api_base":"{}","allow_from":["{ALICE}"],"poll_timeout_secs":1}}{sep}{extra}"#,
            tg.url()
        ),
    )
}

/// The parts of a multipart body: `(headers, content)` each, checked against the
/// boundary of `content_type` and the RFC 7578 layout (CRLF everywhere, closing
/// delimiter last).
fn multipart_parts(content_type: &str, body: &[u8]) -> Vec<(String, Vec<u8>)> {
    let boundary = content_type
        .strip_prefix("multipart/form-data; boundary=")
        .unwrap_or_else(|| panic!("content type {content_type}"));
    let delim = format!("--{boundary}");
    let close = format!("\r\n--{boundary}--\r\n");
    assert!(
        body.starts_with(delim.as_bytes()),
        "body starts with the boundary"
    );
    assert!(
        body.ends_with(close.as_bytes()),
        "body ends with the closing delimiter"
    );
    let inner = &body[..body.len() - close.len()];
    let sep = format!("\r\n--{boundary}\r\n");
    let mut parts = Vec::new();
    let mut rest = &inner[delim.len() + 2..];
    loop {
        let end = find(rest, sep.as_bytes()).unwrap_or(rest.len());
        let part = &rest[..end];
        let h = find(part, b"\r\n\r\n").expect("part headers end");
        parts.push((
            String::from_utf8_lossy(&part[..h]).into_owned(),
            part[h + 4..].to_vec(),
        ));
        if end == rest.len() {
            break;
        }
        rest = &rest[end + sep.len()..];
    }
    parts
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn b64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for q in s.as_bytes().chunks(4) {
        let n = q.iter().filter(|c| **c != b'=').count();
        let mut acc = 0u32;
        for (i, c) in q.iter().enumerate() {
            acc |= (if *c == b'=' { 0 } else { val(*c) as u32 }) << (18 - 6 * i);
        }
        out.extend_from_slice(&acc.to_be_bytes()[1..n]);
    }
    out
}

/// A fake speech-to-text server answering `/v1/audio/transcriptions` with `answers` in
/// order (the last repeats).
fn transcriber(answers: Vec<Response>) -> FakeServer {
    let n = AtomicUsize::new(0);
    FakeServer::start(move |req| {
        if req.path != "/v1/audio/transcriptions" {
            return Response::json(404, r#"{"error":{"message":"no route"}}"#);
        }
        let i = n.fetch_add(1, Ordering::SeqCst).min(answers.len() - 1);
        answers[i].clone()
    })
}

fn sent_texts(tg: &FakeTelegram) -> Vec<String> {
    tg.sent_to(ALICE).into_iter().map(|s| s.text).collect()
}

fn wait_sent(g: &mut Gateway, tg: &FakeTelegram, what: &str, needle: &str) {
    g.wait_for(what, || sent_texts(tg).iter().any(|t| t.contains(needle)));
}

fn spool_is_empty(home: &TempHome) -> bool {
    std::fs::read_dir(home.dir.join("spool")).map_or(true, |d| d.count() == 0)
}

fn model_requests(llm: &FakeServer) -> Vec<Request> {
    llm.requests_to("/chat/completions")
}

#[test]
fn voice_notes_are_streamed_to_transcription_and_every_failure_is_one_sentence() {
    let llm = chat_bodies(
        vec![
            openai_text("Lights are on."),
            openai_text("Yes, still here."),
        ],
        Duration::ZERO,
    );
    let stt = transcriber(vec![
        Response::json(200, r#"{"text":"  turn on the lights  "}"#),
        Response::json(500, r#"{"error":{"message":"boom"}}"#),
        Response::text(200, "<html><body>Welcome to nginx</body></html>"),
        Response::Delay(
            Duration::from_secs(8),
            Box::new(Response::json(200, r#"{"text":"late"}"#)),
        ),
    ]);
    let tg = FakeTelegram::start();
    let big = file_bytes(b"OggS", 20_000_000);
    tg.add_file("v1", "voice/file_1.oga", big.clone(), None);
    for id in ["v2", "v3", "v4"] {
        tg.add_file(
            id,
            &format!("voice/{id}.oga"),
            file_bytes(b"OggS", 2_000),
            None,
        );
    }
    let extra = format!(
        r#""transcription":{{"base_url":"{}/v1","timeout_secs":5}}"#,
        stt.url()
    );
    let home = TempHome::onboarded("media-voice", &config(&llm.url(), &tg, &extra));
    tg.push_message(&media_message(&voice("v1", 3, big.len()), None));
    let mut g = Gateway::start(
        &home,
        &[FAST_BACKOFF, ("YOCTOCLAW_TRANSCRIPTION_API_KEY", KEY)],
    );
    wait_sent(&mut g, &tg, "the answer", "Lights are on.");

    // The upload: multipart/form-data as OpenAI documents it, streamed with a length.
    let reqs = stt.requests_to("/v1/audio/transcriptions");
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(
        r.header("Authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        r.header("Content-Length"),
        Some(r.raw.len().to_string().as_str())
    );
    assert!(r.header("Transfer-Encoding").is_none());
    let parts = multipart_parts(r.header("Content-Type").unwrap(), &r.raw);
    assert_eq!(parts.len(), 3);
    assert_eq!(
        parts[0].0,
        r#"Content-Disposition: form-data; name="model""#
    );
    assert_eq!(parts[0].1, b"whisper-1");
    assert_eq!(
        parts[1].0,
        r#"Content-Disposition: form-data; name="response_format""#
    );
    assert_eq!(parts[1].1, b"json");
    assert_eq!(
        parts[2].0,
        "Content-Disposition: form-data; name=\"file\"; filename=\"voice.ogg\"\r\nContent-Type: audio/ogg"
    );
    assert!(parts[2].1 == big, "the voice note arrived byte for byte");
    // The transcript is the user's message; the chat is told what was heard first.
    let sent = sent_texts(&tg);
    let heard = sent.iter().position(|t| t == "Heard: “turn on the lights”");
    let answer = sent.iter().position(|t| t == "Lights are on.");
    assert!(heard.is_some() && heard < answer, "{sent:?}");
    let first = &model_requests(&llm)[0].body;
    assert!(
        first.contains("[Voice note, 3 s, transcribed:] turn on the lights"),
        "{first}"
    );

    // Bad answers and a voice note of 0 seconds: one sentence each, the session goes on.
    tg.push_message(&media_message(&voice("v2", 2, 2_000), None));
    wait_sent(
        &mut g,
        &tg,
        "the 500 sentence",
        "transcription service failed (HTTP 500",
    );
    tg.push_message(&media_message(&voice("v3", 2, 2_000), None));
    wait_sent(&mut g, &tg, "the HTML sentence", "an answer I cannot read");
    tg.push_message(&media_message(&voice("v0", 0, 0), None));
    wait_sent(&mut g, &tg, "the empty sentence", "empty (0 seconds)");
    tg.push_message(&media_message(&voice("v4", 2, 2_000), None));
    wait_sent(
        &mut g,
        &tg,
        "the timeout sentence",
        "did not answer in time",
    );
    tg.push_private(ALICE, "alice", "still there?");
    wait_sent(&mut g, &tg, "the next answer", "Yes, still here.");
    assert!(
        spool_is_empty(&home),
        "the spool is emptied after each voice note"
    );
    let out = g.stop_cleanly();
    assert!(!out.contains(KEY), "the transcription key leaked:\n{out}");
    assert!(!out.contains("panicked"), "{out}");
    // The 0-second note was never downloaded.
    let asked: Vec<String> = tg
        .server
        .requests_to("/getFile")
        .iter()
        .map(|r| r.body.clone())
        .collect();
    assert!(!asked.iter().any(|b| b.contains("v0")), "{asked:?}");
    // History holds the transcript as text, never audio bytes.
    let reqs = model_requests(&llm);
    let last = &reqs.last().unwrap().body;
    assert!(
        last.contains("turn on the lights") && last.len() < 100_000,
        "{}",
        last.len()
    );
}

#[test]
fn voice_notes_without_transcription_get_one_sentence_and_no_download() {
    let llm = chat_bodies(vec![openai_text("unused")], Duration::ZERO);
    let tg = FakeTelegram::start();
    tg.add_file("v1", "voice/file_1.oga", file_bytes(b"OggS", 1000), None);
    let home = TempHome::onboarded("media-nostt", &config(&llm.url(), &tg, ""));
    // What a crash left in the spool is removed at start.
    std::fs::create_dir_all(home.dir.join("spool")).unwrap();
    std::fs::write(home.dir.join("spool/123-0.part"), b"half a download").unwrap();
    tg.push_message(&media_message(&voice("v1", 3, 1000), None));
    let mut g = Gateway::start(&home, &[FAST_BACKOFF]);
    wait_sent(&mut g, &tg, "the sentence", "set transcription.base_url");
    assert!(spool_is_empty(&home));
    g.stop_cleanly();
    assert!(tg.server.requests_to("/getFile").is_empty());
    assert!(model_requests(&llm).is_empty());
}

#[test]
fn photos_reach_an_openai_vision_model_as_streamed_data_urls_and_bad_images_are_refused() {
    let llm = chat_bodies(
        vec![openai_text("A cat."), openai_text("Still a cat.")],
        Duration::ZERO,
    );
    let tg = FakeTelegram::start();
    let jpeg = file_bytes(&[0xFF, 0xD8, 0xFF, 0xE0], 10_000_000);
    tg.add_file(
        "p_small",
        "photos/s.jpg",
        file_bytes(&[0xFF, 0xD8, 0xFF], 900),
        None,
    );
    tg.add_file("p_large", "photos/l.jpg", jpeg.clone(), None);
    tg.add_file(
        "zip",
        "photos/z.jpg",
        file_bytes(b"PK\x03\x04", 5_000),
        None,
    );
    tg.add_file("one", "photos/o.jpg", vec![0xFF], None);
    let home = TempHome::onboarded(
        "media-vision",
        &config(&llm.url(), &tg, "").replacen(
            r#""model":"fake-model""#,
            r#""model":"fake-model","vision":true"#,
            1,
        ),
    );
    tg.push_message(&media_message(
        &photo(&[
            ("p_small", 900),
            ("p_large", jpeg.len() as u64),
            ("p_huge", 50_000_000),
        ]),
        Some("what is this?"),
    ));
    let mut g = Gateway::start(&home, &[FAST_BACKOFF]);
    wait_sent(&mut g, &tg, "the answer", "A cat.");
    let req = &model_requests(&llm)[0];
    assert_eq!(
        req.header("Content-Length"),
        Some(req.raw.len().to_string().as_str())
    );
    let v = yoctoclaw::json::parse_value(&req.body).expect("the body is JSON");
    let msgs = yoctoclaw::json::get(&v, "messages")
        .and_then(yoctoclaw::json::as_array)
        .unwrap();
    let user = msgs
        .iter()
        .rev()
        .find(|m| yoctoclaw::json::str_at(m, "role") == Some("user"))
        .unwrap();
    let content = yoctoclaw::json::get(user, "content")
        .and_then(yoctoclaw::json::as_array)
        .unwrap();
    assert_eq!(content.len(), 2);
    assert_eq!(yoctoclaw::json::str_at(&content[0], "type"), Some("text"));
    let text = yoctoclaw::json::str_at(&content[0], "text").unwrap();
    assert!(
        text.starts_with("[Photo saved at inbox/photo-")
            && text.contains("(image/jpeg, 10.0 MB)]\nwhat is this?"),
        "{text}"
    );
    assert_eq!(
        yoctoclaw::json::str_at(&content[1], "type"),
        Some("image_url")
    );
    let url = yoctoclaw::json::path(&content[1], &["image_url", "url"])
        .and_then(yoctoclaw::json::as_str)
        .unwrap();
    let data = url
        .strip_prefix("data:image/jpeg;base64,")
        .expect("data URL prefix");
    assert!(b64_decode(data) == jpeg, "the photo arrived byte for byte");
    // The largest size under the cap was fetched; the 50 MB one was not asked for.
    let asked: Vec<String> = tg
        .server
        .requests_to("/getFile")
        .iter()
        .map(|r| r.body.clone())
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("p_large"));

    // A "photo" that is a ZIP, a 1-byte photo, a 50 MB photo: one sentence each.
    tg.push_message(&media_message(&photo(&[("zip", 5_000)]), None));
    wait_sent(&mut g, &tg, "the zip sentence", "not an image I can read");
    tg.push_message(&media_message(&photo(&[("one", 1)]), None));
    g.wait_for("the second sentence", || {
        sent_texts(&tg)
            .iter()
            .filter(|t| t.contains("not an image I can read"))
            .count()
            == 2
    });
    tg.push_message(&media_message(&photo(&[("p_huge", 50_000_000)]), None));
    wait_sent(
        &mut g,
        &tg,
        "the size sentence",
        "too large: I take files up to 20 MB",
    );
    tg.push_private(ALICE, "alice", "and now?");
    wait_sent(&mut g, &tg, "the next answer", "Still a cat.");
    g.stop_cleanly();
    // Only the good photo was saved; the next request carries its placeholder as text,
    // never its bytes.
    let inbox: Vec<_> = std::fs::read_dir(home.workspace().join("inbox"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(inbox.len(), 1, "{inbox:?}");
    assert_eq!(std::fs::read(inbox[0].path()).unwrap().len(), jpeg.len());
    let next = &model_requests(&llm)[1];
    assert!(next.body.contains("[Photo saved at inbox/photo-") && next.body.len() < 100_000);
    assert!(spool_is_empty(&home));
}

#[test]
fn photos_reach_an_anthropic_model_as_base64_image_blocks() {
    let body = r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"A dog."}],"stop_reason":"end_turn","usage":{"input_tokens":20,"output_tokens":6}}"#;
    let llm = FakeServer::start(move |_| Response::json(200, body));
    let tg = FakeTelegram::start();
    let png = file_bytes(b"\x89PNG\r\n\x1a\n", 2_000_001);
    tg.add_file("d1", "documents/dog.png", png.clone(), None);
    let cfg = format!(
        r#"{{"provider":{{"kind":"anthropic","base_url":"{}","model":"claude-test","vision":true,"stream":true}},"telegram":{{"enabled":true,"api_base":"{}","allow_from":["{ALICE}"],"poll_timeout_secs":1}}}}"#,
        llm.url(),
        tg.url()
    );
    let home = TempHome::onboarded("media-anthropic", &cfg);
    // An image sent as a file (no compression) counts as a photo.
    tg.push_message(&media_message(
        &document("d1", "dog.png", "image/png", png.len() as u64),
        Some("who?"),
    ));
    // Streamed (`"stream":true`: the body goes out through the streaming path; this
    // server answers with one JSON body, which is accepted).
    let mut g = Gateway::start(&home, &[FAST_BACKOFF, ("YOCTOCLAW_API_KEY", "sk-ant-test")]);
    g.wait_for("the answer", || {
        tg.shown_to(ALICE).iter().any(|s| s.text.contains("A dog."))
    });
    g.stop_cleanly();
    let req = &llm.requests_to("/v1/messages")[0];
    assert_eq!(req.header("Accept"), Some("text/event-stream"));
    assert_eq!(
        req.header("Content-Length"),
        Some(req.raw.len().to_string().as_str())
    );
    let v = yoctoclaw::json::parse_value(&req.body).expect("JSON");
    let msgs = yoctoclaw::json::get(&v, "messages")
        .and_then(yoctoclaw::json::as_array)
        .unwrap();
    let content = yoctoclaw::json::get(msgs.last().unwrap(), "content")
        .and_then(yoctoclaw::json::as_array)
        .unwrap();
    let img = &content[0];
    assert_eq!(yoctoclaw::json::str_at(img, "type"), Some("image"));
    let src = yoctoclaw::json::get(img, "source").unwrap();
    assert_eq!(yoctoclaw::json::str_at(src, "type"), Some("base64"));
    assert_eq!(
        yoctoclaw::json::str_at(src, "media_type"),
        Some("image/png")
    );
    assert!(b64_decode(yoctoclaw::json::str_at(src, "data").unwrap()) == png);
    let text = yoctoclaw::json::str_at(&content[1], "text").unwrap();
    assert!(
        text.starts_with("[Photo saved at inbox/dog.png (image/png, 2.0 MB)]\nwho?"),
        "{text}"
    );
    // The block's exact shape, as Anthropic documents it.
    assert!(req.body.contains(
        r#"{"type":"image","source":{"type":"base64","media_type":"image/png","data":""#
    ));
}

#[test]
fn without_vision_photos_are_saved_and_described_by_path() {
    let llm = chat_bodies(vec![openai_text("Saved it.")], Duration::ZERO);
    let tg = FakeTelegram::start();
    tg.add_file(
        "p",
        "photos/p.jpg",
        file_bytes(&[0xFF, 0xD8, 0xFF], 40_000),
        None,
    );
    let home = TempHome::onboarded(
        "media-novision",
        &config(&llm.url(), &tg, "").replacen(
            r#""model":"fake-model""#,
            r#""model":"fake-model","vision":false"#,
            1,
        ),
    );
    tg.push_message(&media_message(&photo(&[("p", 40_000)]), None));
    let mut g = Gateway::start(&home, &[FAST_BACKOFF]);
    wait_sent(&mut g, &tg, "the answer", "Saved it.");
    g.stop_cleanly();
    let body = &model_requests(&llm)[0].body;
    assert!(
        body.contains(r#"[Photo saved at inbox/photo-"#) && body.contains("(image/jpeg, 40 KB)]"),
        "{body}"
    );
    assert!(
        !body.contains("image_url") && !body.contains("base64"),
        "{body}"
    );
    assert_eq!(
        std::fs::read_dir(home.workspace().join("inbox"))
            .unwrap()
            .count(),
        1
    );
}

#[test]
fn a_model_that_refuses_photos_is_asked_again_without_them_and_remembered() {
    // llama.cpp without a projector: 500 "image input is not supported".
    let llm = FakeServer::start(|req| {
        if req.body.contains("image_url") {
            Response::json(
                500,
                r#"{"error":{"code":500,"message":"image input is not supported - hint: if this is unexpected, you may need to provide the mmproj","type":"server_error"}}"#,
            )
        } else {
            Response::json(200, &openai_text("I see a path."))
        }
    });
    let tg = FakeTelegram::start();
    tg.add_file(
        "p1",
        "photos/1.jpg",
        file_bytes(&[0xFF, 0xD8, 0xFF], 3_000),
        None,
    );
    tg.add_file(
        "p2",
        "photos/2.jpg",
        file_bytes(&[0xFF, 0xD8, 0xFF], 3_000),
        None,
    );
    let home = TempHome::onboarded("media-blind", &config(&llm.url(), &tg, ""));
    tg.push_message(&media_message(&photo(&[("p1", 3_000)]), Some("look")));
    let mut g = Gateway::start(&home, &[FAST_BACKOFF]);
    wait_sent(&mut g, &tg, "the first answer", "I see a path.");
    tg.push_message(&media_message(&photo(&[("p2", 3_000)]), Some("and this")));
    g.wait_for("the second answer", || {
        sent_texts(&tg)
            .iter()
            .filter(|t| *t == "I see a path.")
            .count()
            == 2
    });
    let log = g.log();
    g.stop_cleanly();
    let reqs = model_requests(&llm);
    let with_images = reqs.iter().filter(|r| r.body.contains("image_url")).count();
    assert_eq!(with_images, 1, "one try with the photo, then never again");
    assert_eq!(reqs.len(), 3);
    assert!(reqs[2].body.contains("[Photo saved at inbox/photo-"));
    assert!(
        log.contains("photos go to it as their path from now on"),
        "{log}"
    );
    assert!(!sent_texts(&tg).iter().any(|t| t.contains("Sorry")));
}

#[test]
fn documents_are_saved_under_safe_unique_names_within_the_caps() {
    let llm = chat_bodies(vec![openai_text("Got the file.")], Duration::ZERO);
    let tg = FakeTelegram::start();
    let big = file_bytes(b"#!/bin/sh\n", 20_000_000);
    tg.add_file("d1", "documents/a.sh", big.clone(), None);
    tg.add_file("d2", "documents/b.sh", b"echo hi\n".to_vec(), None);
    // Larger than getFile says, and cut short.
    tg.add_file(
        "d3",
        "documents/c.bin",
        file_bytes(b"x", 4_000),
        Some(1_000),
    );
    tg.add_file(
        "d4",
        "documents/d.bin",
        file_bytes(b"x", 1_000),
        Some(4_000),
    );
    tg.add_file("d5", "documents/e.bin", file_bytes(b"x", 2_000_000), None);
    let home = TempHome::onboarded(
        "media-docs",
        &config(&llm.url(), &tg, r#""media":{"inbox_max_mb":20}"#),
    );
    tg.push_message(&media_message(
        &document("d1", "../../evil.sh", "application/x-sh", big.len() as u64),
        None,
    ));
    let mut g = Gateway::start(&home, &[FAST_BACKOFF]);
    wait_sent(&mut g, &tg, "the answer", "Got the file.");
    let body = &model_requests(&llm)[0].body;
    assert!(
        body.contains("[File saved at inbox/evil.sh (application/x-sh, 20.0 MB)]"),
        "{body}"
    );
    tg.push_message(&media_message(
        &document("d2", "evil.sh", "application/x-sh", 8),
        Some("again"),
    ));
    g.wait_for("the second file", || {
        home.workspace().join("inbox/evil-2.sh").exists()
    });
    tg.push_message(&media_message(
        &document("d3", "c.bin", "application/octet-stream", 1_000),
        None,
    ));
    wait_sent(
        &mut g,
        &tg,
        "the larger-than-announced sentence",
        "incomplete or not as announced",
    );
    tg.push_message(&media_message(
        &document("d4", "d.bin", "application/octet-stream", 4_000),
        None,
    ));
    wait_sent(
        &mut g,
        &tg,
        "the cut download sentence",
        "could not download that file",
    );
    tg.push_message(&media_message(
        &document("d5", "e.bin", "application/octet-stream", 2_000_000),
        None,
    ));
    wait_sent(&mut g, &tg, "the inbox cap sentence", "My inbox is full");
    tg.push_message(&media_message(
        &document("d6", "f.bin", "application/octet-stream", 30_000_000),
        None,
    ));
    wait_sent(&mut g, &tg, "the file cap sentence", "too large");
    g.stop_cleanly();
    let mut names: Vec<String> = std::fs::read_dir(home.workspace().join("inbox"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["evil-2.sh", "evil.sh"]);
    assert!(std::fs::read(home.workspace().join("inbox/evil.sh")).unwrap() == big);
    assert_eq!(
        std::fs::read(home.workspace().join("inbox/evil-2.sh")).unwrap(),
        b"echo hi\n"
    );
    assert!(!home.dir.join("evil.sh").exists());
    assert!(spool_is_empty(&home));
    // "sending a file…" while it worked.
    let actions = tg.server.requests_to("/sendChatAction");
    assert!(
        actions
            .iter()
            .any(|r| r.body.contains(r#""action":"upload_document""#)),
        "{:?}",
        actions.iter().map(|r| &r.body).collect::<Vec<_>>()
    );
}

#[test]
fn send_file_uploads_workspace_files_by_type_and_refuses_paths_outside() {
    let llm = chat_bodies(
        vec![
            openai_tool_call("c1", "send_file", r#""{\"path\":\"report.pdf\"}""#),
            openai_tool_call("c2", "send_file", r#""{\"path\":\"pic.jpg\"}""#),
            openai_tool_call("c3", "send_file", r#""{\"path\":\"../secrets.env\"}""#),
            openai_text("Sent both."),
        ],
        Duration::ZERO,
    );
    let tg = FakeTelegram::start();
    let home = TempHome::onboarded("media-send", &config(&llm.url(), &tg, ""));
    let pdf = file_bytes(b"%PDF-1.7\n", 3_000_000);
    let jpg = file_bytes(&[0xFF, 0xD8, 0xFF, 0xE1], 50_000);
    std::fs::write(home.workspace().join("report.pdf"), &pdf).unwrap();
    std::fs::write(home.workspace().join("pic.jpg"), &jpg).unwrap();
    tg.push_private(ALICE, "alice", "send me the report and the picture");
    let mut g = Gateway::start(&home, &[FAST_BACKOFF]);
    wait_sent(&mut g, &tg, "the answer", "Sent both.");
    g.stop_cleanly();
    let ups = tg.uploads();
    assert_eq!(
        ups.len(),
        2,
        "{:?}",
        ups.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    for (r, method, field, name, mime, bytes) in [
        (
            &ups[0],
            "/sendDocument",
            "document",
            "report.pdf",
            "application/octet-stream",
            &pdf,
        ),
        (
            &ups[1],
            "/sendPhoto",
            "photo",
            "pic.jpg",
            "image/jpeg",
            &jpg,
        ),
    ] {
        assert!(r.path.ends_with(method), "{}", r.path);
        assert_eq!(
            r.header("Content-Length"),
            Some(r.raw.len().to_string().as_str())
        );
        let parts = multipart_parts(r.header("Content-Type").unwrap(), &r.raw);
        assert_eq!(
            parts[0].0,
            r#"Content-Disposition: form-data; name="chat_id""#
        );
        assert_eq!(parts[0].1, ALICE.to_string().as_bytes());
        assert_eq!(
            parts[1].0,
            format!(
                "Content-Disposition: form-data; name=\"{field}\"; filename=\"{name}\"\r\nContent-Type: {mime}"
            )
        );
        assert!(&parts[1].1 == bytes);
    }
    let last = &model_requests(&llm)[3].body;
    assert!(last.contains("outside the workspace"), "{last}");
}

/// Not a check: the figures for `scripts/bench-media.sh` (a 20 MB voice note, a 10 MB
/// photo to a vision model and a 20 MB document, one after the other; the gateway's peak
/// RSS and the time per MB), which runs it with `--ignored`.
#[test]
#[ignore = "a benchmark, not a check: scripts/bench-media.sh runs it (--ignored)"]
fn media_benchmark_run() {
    let llm = chat_bodies(vec![openai_text("ok")], Duration::ZERO);
    let stt = transcriber(vec![Response::json(200, r#"{"text":"hello"}"#)]);
    let tg = FakeTelegram::start();
    let mb = 1_000_000usize;
    tg.add_file("v", "voice/v.oga", file_bytes(b"OggS", 20 * mb), None);
    tg.add_file(
        "p",
        "photos/p.jpg",
        file_bytes(&[0xFF, 0xD8, 0xFF], 10 * mb),
        None,
    );
    tg.add_file("d", "documents/d.bin", file_bytes(b"data", 20 * mb), None);
    let extra = format!(r#""transcription":{{"base_url":"{}/v1"}}"#, stt.url());
    let cfg = config(&llm.url(), &tg, &extra).replacen(
        r#""model":"fake-model""#,
        r#""model":"fake-model","vision":true"#,
        1,
    );
    let home = TempHome::onboarded("media-bench", &cfg);
    let mut g = Gateway::start(&home, &[]);
    g.wait_for_log("serving Telegram");
    let hwm = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmHWM:"))
                    .map(|l| l.to_string())
            })
            .unwrap_or_default()
    };
    println!("idle: {}", hwm(g.pid()));
    for (answers, (msg, mbs)) in [
        (media_message(&voice("v", 60, 20 * mb), None), 20),
        (
            media_message(&photo(&[("p", (10 * mb) as u64)]), Some("what?")),
            10,
        ),
        (
            media_message(
                &document("d", "d.bin", "application/octet-stream", (20 * mb) as u64),
                None,
            ),
            20,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let t = Instant::now();
        tg.push_message(&msg);
        g.wait_for("the answer", || {
            sent_texts(&tg).iter().filter(|t| *t == "ok").count() > answers
        });
        let took = t.elapsed();
        println!(
            "{mbs} MB: {:.0} ms, {:.1} ms/MB, {}",
            took.as_secs_f64() * 1000.0,
            took.as_secs_f64() * 1000.0 / mbs as f64,
            hwm(g.pid())
        );
    }
    g.stop_cleanly();
}
