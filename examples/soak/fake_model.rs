//! An instant fake OpenAI-compatible model for the soak, on `fake_http`.
//!
//! It reads the turn's tag (`plan::parse_tag`) from the newest user message of the
//! request and answers at once: a native tool call on the first round of tool turns,
//! the final answer once a tool result is the last message, a 500 with `Retry-After: 0`
//! on the first request of error turns (the gateway retries at once, as a real client
//! does when told to), and a short summary for compaction requests.
//! A heartbeat check-in (a request whose newest user message holds `HEARTBEAT_OK`, from
//! the heartbeat's instruction) is answered with [`HEARTBEAT_REPLY`], which is not
//! `HEARTBEAT_OK`, so the heartbeat delivers it (the VM test looks for it at the fake
//! Bot API).
//!
//! # Bounds
//! Remembers which error turns already failed (one number per error turn).

use crate::fake_http::{FakeServer, Request, Response, json_str, openai_text, openai_tool_call};
use crate::plan::{Kind, final_answer, kind_of, parse_tag, search_words};
use crate::tls::TestCa;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use yoctoclaw::json;

/// The fake model's answer to a heartbeat check-in: needs attention, so it is delivered.
pub const HEARTBEAT_REPLY: &str =
    "Heartbeat check-in: the disk is at 42 percent, nothing else to report.";

/// What the fake model did.
#[derive(Default)]
pub struct ModelStats {
    pub requests: AtomicU64,
    pub tool_calls: AtomicU64,
    pub errors: AtomicU64,
    pub summaries: AtomicU64,
    pub heartbeats: AtomicU64,
    pub untagged: AtomicU64,
    pub request_bytes: AtomicU64,
    failed: Mutex<HashSet<u64>>,
}

pub struct FakeModel {
    pub server: FakeServer,
    pub stats: Arc<ModelStats>,
}

impl FakeModel {
    /// `plain`: every turn is a plain answer (no tools, long replies or errors). `tls`:
    /// serve HTTPS with a certificate from that CA.
    pub fn start(plain: bool, tls: Option<&TestCa>) -> FakeModel {
        let stats = Arc::new(ModelStats::default());
        let st = stats.clone();
        let handler = move |req: &Request| {
            if req.method != "POST" || !req.path.ends_with("/chat/completions") {
                return Response::json(404, r#"{"error":{"message":"no route"}}"#);
            }
            answer(&st, &req.body, plain)
        };
        let server = match tls {
            Some(ca) => crate::tls::serve(handler, true, ca).0,
            None => FakeServer::start_keep_alive(handler),
        };
        FakeModel { server, stats }
    }

    /// The `base_url` for the config (`http(s)://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.url())
    }
}

fn answer(st: &ModelStats, body: &str, plain: bool) -> Response {
    st.requests.fetch_add(1, Ordering::Relaxed);
    st.request_bytes
        .fetch_add(body.len() as u64, Ordering::Relaxed);
    let Ok(v) = json::parse_value(body) else {
        return Response::json(400, r#"{"error":{"message":"bad json"}}"#);
    };
    let msgs = json::get(&v, "messages").and_then(json::as_array);
    let msgs: &[miniserde::json::Value] = msgs.map_or(&[], |a| a.as_slice());
    let role = |m: &miniserde::json::Value| json::str_at(m, "role").unwrap_or("").to_string();
    let content = |m: &miniserde::json::Value| json::str_at(m, "content").unwrap_or("").to_string();
    let system = msgs.first().map(content).unwrap_or_default();
    if system.starts_with("You compress conversations") {
        st.summaries.fetch_add(1, Ordering::Relaxed);
        return Response::json(
            200,
            &openai_text("The user asked about chores, plans and notes; all were answered."),
        );
    }
    let last_user = msgs.iter().rev().find(|m| role(m) == "user");
    if last_user.is_some_and(|m| content(m).contains("HEARTBEAT_OK")) {
        st.heartbeats.fetch_add(1, Ordering::Relaxed);
        return Response::json(200, &openai_text(HEARTBEAT_REPLY));
    }
    let tag = msgs
        .iter()
        .rev()
        .filter(|m| role(m) == "user")
        .find_map(|m| parse_tag(&content(m)));
    let Some(i) = tag else {
        st.untagged.fetch_add(1, Ordering::Relaxed);
        return Response::json(200, &openai_text("I am not sure what you mean."));
    };
    let kind = if plain { Kind::Chat } else { kind_of(i) };
    let last_is_tool = msgs.last().is_some_and(|m| role(m) == "tool");
    if last_is_tool {
        return Response::json(200, &openai_text(&final_answer(i, kind)));
    }
    let call = |name: &str, args: String| {
        st.tool_calls.fetch_add(1, Ordering::Relaxed);
        Response::json(
            200,
            &openai_tool_call(&format!("call_{i}"), name, &json_str(&args)),
        )
    };
    match kind {
        Kind::Read => call("read_file", r#"{"path":"notes/today.md"}"#.into()),
        Kind::List => call("list_dir", r#"{"path":"."}"#.into()),
        Kind::Store => call(
            "memory_store",
            format!(
                r#"{{"key":"fact-{}","text":"The user mentioned {}","category":"daily"}}"#,
                i % 200,
                search_words(i)
            ),
        ),
        Kind::Search => call(
            "memory_search",
            format!(r#"{{"query":{}}}"#, json_str(search_words(i))),
        ),
        Kind::Error => {
            let first = st.failed.lock().map(|mut f| f.insert(i)).unwrap_or(false);
            if first {
                st.errors.fetch_add(1, Ordering::Relaxed);
                Response::json(
                    500,
                    r#"{"error":{"message":"upstream overloaded","type":"server_error"}}"#,
                )
                .with_header("Retry-After", "0")
            } else {
                Response::json(200, &openai_text(&final_answer(i, kind)))
            }
        }
        Kind::Chat | Kind::Long => Response::json(200, &openai_text(&final_answer(i, kind))),
    }
}
