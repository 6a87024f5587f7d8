//! The OpenAI-compatible Chat Completions protocol: request bodies and reply parsing.
//! Tolerant of the variations of real servers (OpenRouter, Ollama, llama.cpp, vLLM…):
//! `content` as a string, null or a list of parts; tool `arguments` as a JSON string or an
//! object; missing ids, missing `usage`, extra fields.
//!
//! Images (a vision model): the photos of the last user message as its `image_url`
//! parts; a `tool` message takes text only, so the images of a round's tool results
//! follow its tool messages as one `user` message, a line naming each call before its
//! images (llama.cpp's server takes that as any user image; one without a projector
//! refuses it, and the agent asks again without images).
//!
//! Reasoning (`reasoning_content`, llama.cpp, vLLM; `reasoning`, Ollama, OpenRouter, LM
//! Studio) is never shown. Only when a server put the whole answer there (the content is
//! empty, no tool call, not cut at the length limit) the reply's text becomes the
//! reasoning's last paragraph, and a warning is logged once per provider
//! ([`answer_from_reasoning`]).
//!
//! # Bounds
//! Error details quoted from a provider are cut to `MAX_ERROR_DETAIL_CHARS`. Of reasoning,
//! only the last paragraph is kept, at most `MAX_REASONING_ANSWER_BYTES`; at most
//! `MAX_WARNED_PROVIDERS` providers are remembered as warned.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use super::{ChatReply, ChatRequest, ProviderError};
use crate::chat::{Role, ToolCall, Usage};
use crate::config::ProviderConfig;
use crate::json;
use miniserde::json::Value;

/// Longest provider error text quoted to the user.
pub const MAX_ERROR_DETAIL_CHARS: usize = 200;
/// Most of the reasoning's last paragraph kept as a fallback answer (its start).
pub const MAX_REASONING_ANSWER_BYTES: usize = 16 * 1024;
/// Providers remembered as warned about answers in the reasoning field.
pub const MAX_WARNED_PROVIDERS: usize = 16;

/// The JSON body for `POST {base_url}/chat/completions`, written straight into one
/// buffer (the history is not copied into a JSON tree first).
pub fn request_body(cfg: &ProviderConfig, req: &ChatRequest<'_>) -> String {
    let mut w = req.body_writer(cfg);
    let (with_images, images) = req.images(cfg);
    if !req.system.is_empty() {
        w.begin_object();
        w.field_str("role", "system");
        w.field_str("content", req.system);
        w.end_object();
    }
    for (i, m) in req.messages.iter().enumerate() {
        w.begin_object();
        w.field_str("role", m.role.as_str());
        match m.role {
            Role::Assistant if !m.tool_calls.is_empty() => {
                // Never `null`: llama-cpp-python answers 500 to it and other local
                // servers refuse it; an empty string means the same to every server.
                w.field_str("content", &m.content);
                w.key("tool_calls");
                w.begin_array();
                for c in &m.tool_calls {
                    w.begin_object();
                    w.field_str("id", &c.id);
                    w.field_str("type", "function");
                    w.key("function");
                    w.begin_object();
                    w.field_str("name", &c.name);
                    w.field_str("arguments", &c.arguments);
                    w.end_object();
                    w.end_object();
                }
                w.end_array();
            }
            Role::Tool => {
                w.field_str("tool_call_id", m.tool_call_id.as_deref().unwrap_or(""));
                w.field_str("content", &m.content);
            }
            Role::User => {
                // Content parts when the message has images: the text, then each
                // photo (of the last user message) and each image it carries (tool
                // results given as text) as a data URL whose base64 is streamed from
                // the file when the body is sent (`upload::spliced`).
                let mut shown = if i == with_images {
                    images.clone()
                } else {
                    Vec::new()
                };
                shown.extend(req.shown(cfg, m));
                if shown.is_empty() {
                    w.field_str("content", &m.content);
                } else {
                    w.key("content");
                    w.begin_array();
                    text_part(&mut w, &m.content);
                    shown.iter().for_each(|img| image_part(&mut w, img));
                    w.end_array();
                }
            }
            _ => w.field_str("content", &m.content),
        }
        w.end_object();
        let run_ends = req.messages.get(i + 1).is_none_or(|n| n.role != Role::Tool);
        if m.role == Role::Tool && run_ends {
            tool_images(&mut w, cfg, req, i);
        }
    }
    w.end_array();
    w.key("stream");
    w.bool(cfg.stream);
    if cfg.stream {
        // Usage arrives in a last chunk only when asked for.
        w.key("stream_options");
        w.raw(r#"{"include_usage":true}"#);
    }
    if !req.tools.is_empty() {
        w.key("tools");
        w.begin_array();
        for t in req.tools {
            w.begin_object();
            w.field_str("type", "function");
            w.key("function");
            w.begin_object();
            w.field_str("name", &t.name);
            w.field_str("description", &t.description);
            w.key("parameters");
            // A constant JSON Schema object (tools::tests checks every one parses).
            w.raw(&t.parameters);
            w.end_object();
            w.end_object();
        }
        w.end_array();
        // Said explicitly: some servers (llama-cpp-python's function-calling formats)
        // offer no tool unless asked to choose, and "auto" is every server's default
        // meaning. Never sent without tools (a forced final answer has none).
        w.field_str("tool_choice", "auto");
    }
    w.end_object();
    w.finish()
}

/// A `{"type":"text"}` content part.
fn text_part(w: &mut json::Writer, text: &str) {
    w.begin_object();
    w.field_str("type", "text");
    w.field_str("text", text);
    w.end_object();
}

/// An `image_url` content part with a `data:` URL (its base64 a file mark).
fn image_part(w: &mut json::Writer, img: &super::Image) {
    w.begin_object();
    w.field_str("type", "image_url");
    w.key("image_url");
    w.raw(&format!(
        "{{\"url\":\"data:{};base64,{}\"}}",
        img.mime, img.mark
    ));
    w.end_object();
}

/// After the tool messages that end at `last`: their images as one user message (a
/// `tool` message takes text only), each tool call's introduced by a line naming it.
/// Nothing when none of them carries an image the request shows.
fn tool_images(w: &mut json::Writer, cfg: &ProviderConfig, req: &ChatRequest<'_>, last: usize) {
    let msgs = req.messages;
    let first = msgs[..=last]
        .iter()
        .rposition(|m| m.role != Role::Tool)
        .map_or(0, |i| i + 1);
    let run: Vec<_> = msgs[first..=last]
        .iter()
        .map(|m| (m, req.shown(cfg, m)))
        .filter(|(_, shown)| !shown.is_empty())
        .collect();
    if run.is_empty() {
        return;
    }
    // The calls' names, from the assistant message the results answer.
    let calls = first
        .checked_sub(1)
        .map_or(&[][..], |i| msgs[i].tool_calls.as_slice());
    w.begin_object();
    w.field_str("role", "user");
    w.key("content");
    w.begin_array();
    for (m, shown) in run {
        let id = m.tool_call_id.as_deref().unwrap_or("");
        let line = match calls.iter().find(|c| c.id == id) {
            Some(c) => format!("The images returned by tool call {id} ({}):", c.name),
            None => format!("The images returned by tool call {id}:"),
        };
        text_part(w, &line);
        shown.iter().for_each(|img| image_part(w, img));
    }
    w.end_array();
    w.end_object();
}

/// Parse a successful (2xx) Chat Completions body. An empty `choices` is an error (the
/// provider answered nothing: retrying or a fallback may help), not an empty answer.
pub fn parse_reply(text: &str, cfg: &ProviderConfig) -> Result<ChatReply, ProviderError> {
    let not_json = || ProviderError::BadResponse {
        detail: "not valid Chat Completions JSON".into(),
    };
    let v = super::read_json(text, "not valid Chat Completions JSON")?;
    if json::as_object(&v).is_none() {
        return Err(not_json());
    }
    let choices = json::get(&v, "choices").and_then(json::as_array);
    let Some(choice) = choices.and_then(|c| c.first()) else {
        if let Some(e) = body_error(&v, cfg) {
            return Err(e);
        }
        return Err(ProviderError::BadResponse {
            detail: "no choices in the answer".into(),
        });
    };
    let msg = json::get(choice, "message").ok_or_else(|| ProviderError::BadResponse {
        detail: "choice without a message".into(),
    })?;
    let content = json::get(msg, "content")
        .map(content_text)
        .unwrap_or_default();
    let mut tool_calls = Vec::new();
    if let Some(calls) = json::get(msg, "tool_calls").and_then(json::as_array) {
        for (i, c) in calls.iter().enumerate() {
            let Some(f) = json::get(c, "function") else {
                continue;
            };
            let Some(name) = json::str_at(f, "name").filter(|n| !n.is_empty()) else {
                continue;
            };
            let id = json::str_at(c, "id")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .unwrap_or_else(|| format!("call_{i}"));
            tool_calls.push(ToolCall {
                id,
                name: name.to_string(),
                arguments: arguments_text(json::get(f, "arguments")),
            });
        }
    }
    // The legacy functions API (`function_call`), still spoken by some local servers.
    if tool_calls.is_empty()
        && let Some(f) = json::get(msg, "function_call")
        && let Some(name) = json::str_at(f, "name").filter(|n| !n.is_empty())
    {
        tool_calls.push(ToolCall {
            id: "call_0".into(),
            name: name.to_string(),
            arguments: arguments_text(json::get(f, "arguments")),
        });
    }
    let finish_reason = json::str_at(choice, "finish_reason")
        .unwrap_or("")
        .to_string();
    let usage = json::get(&v, "usage").and_then(|u| {
        Some(Usage {
            prompt_tokens: json::get(u, "prompt_tokens").and_then(json::as_u64)?,
            completion_tokens: json::get(u, "completion_tokens")
                .and_then(json::as_u64)
                .unwrap_or(0),
            estimated: false,
        })
    });
    let mut reply = ChatReply {
        content,
        tool_calls,
        finish_reason,
        usage,
    };
    if let Some(r) = reasoning_text(msg) {
        let mut tail = ReasoningTail::default();
        tail.push(r);
        answer_from_reasoning(&mut reply, &tail, cfg);
    }
    Ok(reply)
}

/// A message's (or a delta's) reasoning text: `reasoning_content`, else `reasoning`.
pub fn reasoning_text(msg: &Value) -> Option<&str> {
    json::str_at(msg, "reasoning_content").or_else(|| json::str_at(msg, "reasoning"))
}

/// The last paragraph of a reasoning text read in pieces: paragraphs end at a blank line;
/// at most `MAX_REASONING_ANSWER_BYTES` of it are kept (its start).
#[derive(Debug, Default)]
pub struct ReasoningTail {
    para: String,
    /// The last line ended.
    newline: bool,
    /// A blank line ended `para`: the next text starts a new paragraph.
    blank: bool,
}

impl ReasoningTail {
    pub fn push(&mut self, text: &str) {
        for c in text.chars() {
            if c == '\n' {
                self.blank |= self.newline;
                self.newline = true;
            } else if !c.is_whitespace() {
                if self.blank {
                    self.para.clear();
                    self.blank = false;
                }
                self.newline = false;
            }
            if !self.blank && self.para.len() + c.len_utf8() <= MAX_REASONING_ANSWER_BYTES {
                self.para.push(c);
            }
        }
    }

    pub fn last_paragraph(&self) -> &str {
        self.para.trim()
    }
}

/// When the server put the whole answer in the reasoning field (the content is empty, no
/// tool call, not cut at the length limit), make the reasoning's last paragraph the
/// reply's text and warn once per provider. Returns whether it did.
pub fn answer_from_reasoning(
    reply: &mut ChatReply,
    tail: &ReasoningTail,
    cfg: &ProviderConfig,
) -> bool {
    let last = tail.last_paragraph();
    let cut = matches!(reply.finish_reason.as_str(), "length" | "max_tokens");
    if last.is_empty() || cut || !reply.content.trim().is_empty() || !reply.tool_calls.is_empty() {
        return false;
    }
    reply.content = last.to_string();
    if first_warning(cfg) {
        log::warn!(
            "model {} put its answer only in the reasoning field; showing the last paragraph of it (check the server's reasoning settings)",
            cfg.model
        );
    }
    true
}

/// True the first time for a provider (its URL and model), at most `MAX_WARNED_PROVIDERS`.
fn first_warning(cfg: &ProviderConfig) -> bool {
    static WARNED: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());
    let h = super::provider_id(cfg);
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if warned.contains(&h) || warned.len() >= MAX_WARNED_PROVIDERS {
        return false;
    }
    warned.push(h);
    true
}

/// `content` may be a string, null, or a list of `{type: text, text}` parts.
pub fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| json::str_at(p, "text"))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Tool arguments arrive as a JSON string (OpenAI) or an object (Ollama, llama.cpp).
pub fn arguments_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(v @ Value::Object(_)) => json::to_string(v),
        _ => "{}".to_string(),
    }
}

/// An `error` object inside a 2xx body or a stream chunk (OpenRouter reports upstream
/// failures that way, with the upstream HTTP status as a numeric `code`).
pub fn body_error(v: &Value, cfg: &ProviderConfig) -> Option<ProviderError> {
    let e = json::get(v, "error").filter(|e| !matches!(e, Value::Null))?;
    let detail = error_detail(v).unwrap_or_default();
    // An overflow inside a stream (llama.cpp, vLLM) is an overflow, not a cut stream.
    if is_context_overflow(json::str_at(e, "code").or(json::str_at(e, "type")), &detail) {
        return Some(ProviderError::ContextOverflow {
            window: window_in(&detail),
            detail,
        });
    }
    let code = json::get(e, "code")
        .and_then(json::as_u64)
        .filter(|c| (400..=599).contains(c));
    Some(match code {
        Some(c) => error_for_status(c as u16, detail, None, cfg),
        None => ProviderError::Status {
            status: 200,
            detail,
            retry_after_secs: None,
        },
    })
}

/// The provider's own error message, if the body has one (scrubbed and cut).
pub fn error_detail(v: &Value) -> Option<String> {
    let raw = match json::get(v, "error") {
        Some(Value::String(s)) => Some(s.as_str()),
        Some(e) => json::str_at(e, "message"),
        None => json::str_at(v, "message"),
    }?;
    let scrubbed = crate::security::scrub::scrub(raw);
    Some(cut_chars(&one_line(&scrubbed), MAX_ERROR_DETAIL_CHARS))
}

/// A server's message as one line: whitespace collapsed, and a Python dictionary dump
/// (`{'error': {'message': '…', …}}`, as some local servers put in `message`) reduced to
/// its own message.
pub fn one_line(msg: &str) -> String {
    let mut msg = msg.trim();
    for key in ["'message': '", "\"message\": \""] {
        if msg.starts_with('{')
            && let Some(at) = msg.find(key)
        {
            let rest = &msg[at + key.len()..];
            let quote = key.as_bytes()[key.len() - 1] as char;
            msg = rest.split(quote).next().unwrap_or(rest);
            break;
        }
    }
    let mut out = String::with_capacity(msg.len());
    for word in msg.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The context window named in an overflow message, when it says one ("maximum context
/// length is 2048 tokens", llama.cpp's "n_ctx = 512", "context size (4096)").
fn window_in(msg: &str) -> Option<u64> {
    let lower = msg.to_ascii_lowercase();
    for marker in [
        "context length is ",
        "n_ctx = ",
        "n_ctx=",
        "context size (",
        "context size of ",
        "context window of ",
    ] {
        if let Some(at) = lower.find(marker) {
            let digits: String = lower[at + marker.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(n) = digits.parse() {
                return Some(n);
            }
        }
    }
    None
}

/// True when a 4xx says the server will not take tools for this model, in the words of
/// Ollama ("… does not support tools"), llama.cpp ("tools param requires --jinja flag"),
/// vLLM ("\"auto\" tool choice requires --enable-auto-tool-choice"), LM Studio and others.
pub fn refuses_tools(msg: &str) -> bool {
    let m = msg.to_ascii_lowercase();
    [
        "does not support tools",
        "tools param requires",
        "tool choice requires",
        "tool_choice\" requires",
        "tools are not supported",
        "tool use is not supported",
        "does not support function calling",
        "function calling is not supported",
        "enable-auto-tool-choice",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// True when a 400 (or an error event in a stream) says the request does not fit the
/// model's context window, in the words of OpenAI, llama.cpp, vLLM, Ollama, LM Studio.
pub fn is_context_overflow(code: Option<&str>, msg: &str) -> bool {
    if code == Some("context_length_exceeded") {
        return true;
    }
    let m = msg.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "maximum context length",
        "exceeds the available context size",
        "context length exceeded",
        "exceeds the context window",
        "longer than the context",
        "prompt is too long",
        "too many tokens",
        "context window",
    ]
    .iter()
    .any(|p| m.contains(p))
}

pub fn cut_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// A non-2xx answer as a typed error (the provider's message quoted when the body has one).
pub fn status_error(
    status: u16,
    body: &str,
    retry_after: Option<u64>,
    cfg: &ProviderConfig,
) -> ProviderError {
    let v = json::parse_value(body).ok();
    let detail = v.as_ref().and_then(error_detail).unwrap_or_default();
    let code = v
        .as_ref()
        .and_then(|v| json::get(v, "error"))
        .and_then(|e| json::str_at(e, "code"));
    // A plain-text body (some servers) is read for the same words.
    let words = if detail.is_empty() && v.is_none() {
        one_line(&crate::text::cap_text(body, 1024))
    } else {
        detail.clone()
    };
    if (400..600).contains(&status) && refuses_tools(&words) {
        return ProviderError::ToolsRefused {
            detail: cut_chars(&words, MAX_ERROR_DETAIL_CHARS),
        };
    }
    if (400..500).contains(&status) && is_context_overflow(code, &words) {
        // llama.cpp's server names the window in a field of its own.
        let n_ctx = v
            .as_ref()
            .and_then(|v| json::get(v, "error"))
            .and_then(|e| json::get(e, "n_ctx"))
            .and_then(json::as_u64);
        return ProviderError::ContextOverflow {
            window: n_ctx.or_else(|| window_in(&words)),
            detail: cut_chars(&words, MAX_ERROR_DETAIL_CHARS),
        };
    }
    error_for_status(status, detail, retry_after, cfg)
}

/// The typed error for an HTTP status (or a status implied by an error inside a body).
pub fn error_for_status(
    status: u16,
    detail: String,
    retry_after: Option<u64>,
    cfg: &ProviderConfig,
) -> ProviderError {
    match status {
        401 | 403 => ProviderError::Unauthorized {
            status,
            detail,
            env: cfg.api_key_env.clone(),
        },
        404 => ProviderError::NotFound {
            model: cfg.model.clone(),
            detail,
        },
        429 => ProviderError::RateLimited {
            retry_after_secs: retry_after,
            detail,
        },
        400..=499 => ProviderError::BadRequest { status, detail },
        _ => ProviderError::Status {
            status,
            detail,
            retry_after_secs: retry_after,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_overflows_are_recognised_in_every_servers_words() {
        let cfg = ProviderConfig::default();
        let cases = [
            (
                400,
                r#"{"error":{"message":"This model's maximum context length is 2048 tokens. However, you requested 2120 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
                Some(2048),
            ),
            (
                400,
                r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":600,"n_ctx":512}}"#,
                Some(512),
            ),
            (
                400,
                r#"{"error":{"message":"Requested tokens (1491) exceed context window of 1024","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
                Some(1024),
            ),
            (
                400,
                r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens.","type":"BadRequestError","code":400}"#,
                Some(4096),
            ),
            (
                400,
                r#"{"error":"prompt is too long: the context window (n_ctx = 1024) is full"}"#,
                Some(1024),
            ),
        ];
        for (status, body, window) in cases {
            match status_error(status, body, None, &cfg) {
                ProviderError::ContextOverflow { window: w, detail } => {
                    assert_eq!(w, window, "{body}");
                    assert!(!detail.contains('\n'));
                }
                other => panic!("{body}: {other:?}"),
            }
        }
        // In a stream.
        let v = json::parse_value(
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
        )
        .unwrap();
        assert!(matches!(
            body_error(&v, &cfg),
            Some(ProviderError::ContextOverflow { .. })
        ));
        // Other 400s are not.
        assert!(matches!(
            status_error(
                400,
                r#"{"error":{"message":"max_tokens is too large"}}"#,
                None,
                &cfg
            ),
            ProviderError::BadRequest { .. }
        ));
    }

    #[test]
    fn servers_that_refuse_tools_are_recognised() {
        let cfg = ProviderConfig::default();
        for body in [
            r#"{"error":"registry.ollama.ai/library/gemma:2b does not support tools"}"#,
            r#"{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}"#,
            r#"{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","code":400}"#,
        ] {
            assert!(
                matches!(
                    status_error(400, body, None, &cfg),
                    ProviderError::ToolsRefused { .. }
                ),
                "{body}"
            );
        }
    }

    #[test]
    fn error_details_are_one_line_and_dictionary_dumps_are_reduced() {
        assert_eq!(one_line("a\n  b\tc "), "a b c");
        assert_eq!(
            one_line("{'error': {'message': 'Model not loaded', 'type': 'x'}}"),
            "Model not loaded"
        );
        let v = json::parse_value(
            r#"{"error":{"message":"{'detail': {'message': 'bad\n thing', 'code': 500},\n 'other': 1}"}}"#,
        )
        .unwrap();
        let d = error_detail(&v).unwrap();
        assert!(!d.contains('\n') && !d.contains('{'), "{d}");
        assert_eq!(d, "bad thing");
    }
    use crate::chat::{Message, ToolSpec};
    use std::borrow::Cow;

    #[test]
    fn a_tool_results_images_follow_the_tool_messages_as_one_user_message() {
        let dir = std::env::temp_dir().join(format!("yc-oai-img-{}", std::process::id()));
        let msgs = crate::provider::tests::tool_round_with_image(&dir);
        let cfg = ProviderConfig::default();
        let req = |media_root| ChatRequest {
            system: "",
            messages: &msgs,
            tools: &[],
            media_root,
        };
        let body = request_body(&cfg, &req(Some(&dir)));
        assert_eq!(
            crate::provider::tests::sent_messages(&body),
            concat!(
                r#"[{"role":"user","content":"look"},"#,
                r#"{"role":"assistant","content":"","tool_calls":["#,
                r#"{"id":"call_1","type":"function","function":{"name":"cam__shot","arguments":"{}"}},"#,
                r#"{"id":"call_2","type":"function","function":{"name":"cam__info","arguments":"{}"}}]},"#,
                r#"{"role":"tool","tool_call_id":"call_1","content":"[image: image/png, 8 bytes]"},"#,
                r#"{"role":"tool","tool_call_id":"call_2","content":"ok"},"#,
                r#"{"role":"user","content":["#,
                r#"{"type":"text","text":"The images returned by tool call call_1 (cam__shot):"},"#,
                r#"{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]"#
            )
        );
        // A model that cannot see, or a request that is text only: the text alone.
        let text_only = concat!(
            r#"{"role":"tool","tool_call_id":"call_1","content":"[image: image/png, 8 bytes]"},"#,
            r#"{"role":"tool","tool_call_id":"call_2","content":"ok"}]"#
        );
        let blind = ProviderConfig {
            vision: false,
            ..cfg.clone()
        };
        for body in [
            request_body(&blind, &req(Some(&dir))),
            request_body(&cfg, &req(None)),
        ] {
            assert!(
                body.ends_with(&format!("{text_only},\"stream\":false}}")),
                "{body}"
            );
            assert!(!body.contains(crate::provider::upload::FILE_MARK));
        }
        // Given as text (`provider.tool_mode: text`), the results' user message takes
        // the images as its parts.
        let mut results = Message::new(Role::User, "<tool_result name=\"cam__shot\">…");
        results.images = msgs[2].images.clone();
        let two = [msgs[0].clone(), results];
        let body = request_body(
            &cfg,
            &ChatRequest {
                messages: &two,
                ..req(Some(&dir))
            },
        );
        assert!(
            crate::provider::tests::sent_messages(&body).ends_with(concat!(
                r#"{"role":"user","content":[{"type":"text","text":"<tool_result name=\"cam__shot\">…"},"#,
                r#"{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]"#
            )),
            "{body}"
        );
        drop((msgs, two));
        assert!(
            !dir.join("shot.png").exists(),
            "the file goes with the image"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn parses_plain_and_tool_replies() {
        let cfg = ProviderConfig::default();
        let r = parse_reply(
            r#"{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
            &cfg,
        )
        .unwrap();
        assert_eq!(r.content, "hi");
        assert_eq!(r.usage.unwrap().prompt_tokens, 3);

        let r = parse_reply(
            r#"{"choices":[{"message":{"content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}},{"function":{"name":"list_dir","arguments":{"path":"."}}}]},"finish_reason":"tool_calls"}]}"#,
            &cfg,
        )
        .unwrap();
        assert_eq!(r.content, "");
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].arguments, r#"{"path":"x"}"#);
        assert_eq!(r.tool_calls[1].id, "call_1");
        assert_eq!(r.tool_calls[1].arguments, r#"{"path":"."}"#);
        assert!(r.usage.is_none());
    }

    fn cfg_for(model: &str) -> ProviderConfig {
        ProviderConfig {
            model: model.into(),
            ..ProviderConfig::default()
        }
    }

    #[test]
    fn an_answer_only_in_the_reasoning_field_is_its_last_paragraph() {
        let cfg = cfg_for("reasoning-only-test");
        for field in ["reasoning_content", "reasoning"] {
            let body = format!(
                r#"{{"choices":[{{"message":{{"content":"","{field}":"Okay, 2+2.\n\n  \nThe answer is 4.\n"}},"finish_reason":"stop"}}]}}"#
            );
            assert_eq!(
                parse_reply(&body, &cfg).unwrap().content,
                "The answer is 4."
            );
        }
        // An answer of its own wins; a cut reply or one with calls keeps its own text.
        let own = r#"{"choices":[{"message":{"content":"4","reasoning_content":"secret plan"}}]}"#;
        assert_eq!(parse_reply(own, &cfg).unwrap().content, "4");
        let cut = r#"{"choices":[{"message":{"content":null,"reasoning_content":"still think"},"finish_reason":"length"}]}"#;
        assert_eq!(parse_reply(cut, &cfg).unwrap().content, "");
        let calls = r#"{"choices":[{"message":{"content":null,"reasoning":"x","tool_calls":[{"function":{"name":"list_dir","arguments":"{}"}}]}}]}"#;
        assert_eq!(parse_reply(calls, &cfg).unwrap().content, "");
    }

    #[test]
    fn the_reasoning_fallback_warns_once_per_provider() {
        let a = cfg_for("warn-once-a");
        let b = cfg_for("warn-once-b");
        assert!(first_warning(&a));
        assert!(!first_warning(&a));
        assert!(first_warning(&b));
        assert!(!first_warning(&b));
    }

    #[test]
    fn the_reasoning_tail_keeps_the_last_paragraph_in_any_pieces() {
        let text = "First idea.\n\nSecond\nline.\n \n\nLast: 42.\n\n";
        let mut x = crate::testkit::XorShift(0x0123_4567_89AB_CDEF);
        for _ in 0..200 {
            let mut t = ReasoningTail::default();
            let mut rest = text;
            while !rest.is_empty() {
                let mut cut = 1 + x.index(5);
                while cut < rest.len() && !rest.is_char_boundary(cut) {
                    cut += 1;
                }
                let (a, b) = rest.split_at(cut.min(rest.len()));
                t.push(a);
                rest = b;
            }
            assert_eq!(t.last_paragraph(), "Last: 42.");
        }
        // Bounded: a long last paragraph keeps its start.
        let mut t = ReasoningTail::default();
        t.push("a\n\n");
        t.push(&"é".repeat(MAX_REASONING_ANSWER_BYTES));
        assert!(t.last_paragraph().len() <= MAX_REASONING_ANSWER_BYTES);
        assert!(t.last_paragraph().starts_with('é'));
    }

    #[test]
    fn content_parts_and_reasoning_are_tolerated() {
        let r = parse_reply(
            r#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"reasoning":"hmm"}}]}"#,
            &ProviderConfig::default(),
        )
        .unwrap();
        assert_eq!(r.content, "ab");
    }

    #[test]
    fn bad_bodies_are_typed_errors() {
        let cfg = ProviderConfig::default();
        assert!(matches!(
            parse_reply("<html>oops</html>", &cfg),
            Err(ProviderError::BadResponse { .. })
        ));
        assert!(matches!(
            parse_reply(r#"{"choices":[]}"#, &cfg),
            Err(ProviderError::BadResponse { .. })
        ));
        assert!(matches!(
            parse_reply(r#"{"error":{"message":"overloaded"}}"#, &cfg),
            Err(ProviderError::Status { status: 200, .. })
        ));
        // OpenRouter: the upstream status as `code` makes it retryable.
        let e = parse_reply(r#"{"error":{"message":"busy","code":503}}"#, &cfg).unwrap_err();
        assert!(e.is_retryable(), "{e:?}");
        let e = parse_reply(r#"{"error":{"message":"slow down","code":429}}"#, &cfg).unwrap_err();
        assert!(matches!(e, ProviderError::RateLimited { .. }));
        assert!(parse_reply("[]", &cfg).is_err());
    }

    #[test]
    fn finish_reason_variations_and_legacy_function_calls() {
        let cfg = ProviderConfig::default();
        for (reason, want) in [
            ("\"stop\"", "stop"),
            ("\"length\"", "length"),
            ("\"tool_calls\"", "tool_calls"),
            ("null", ""),
        ] {
            let body = format!(
                r#"{{"choices":[{{"message":{{"content":"x"}},"finish_reason":{reason}}}]}}"#
            );
            assert_eq!(parse_reply(&body, &cfg).unwrap().finish_reason, want);
        }
        let r = parse_reply(
            r#"{"choices":[{"message":{"content":null,"function_call":{"name":"list_dir","arguments":"{\"path\":\".\"}"}},"finish_reason":"function_call"}]}"#,
            &cfg,
        )
        .unwrap();
        assert_eq!(r.finish_reason, "function_call");
        assert_eq!(r.tool_calls[0].name, "list_dir");
        assert_eq!(r.tool_calls[0].arguments, r#"{"path":"."}"#);
    }

    #[test]
    fn streaming_requests_ask_for_usage() {
        let cfg = ProviderConfig {
            stream: true,
            ..ProviderConfig::default()
        };
        let body = request_body(
            &cfg,
            &ChatRequest {
                system: "",
                messages: &[Message::new(Role::User, "hi")],
                tools: &[],
                media_root: None,
            },
        );
        assert!(body.contains(r#""stream":true"#), "{body}");
        assert!(
            body.contains(r#""stream_options":{"include_usage":true}"#),
            "{body}"
        );
    }

    #[test]
    fn status_errors_quote_the_provider() {
        let cfg = ProviderConfig::default();
        let e = status_error(401, r#"{"error":{"message":"Invalid key"}}"#, None, &cfg);
        assert!(e.to_string().contains("Invalid key"));
        assert!(e.to_string().contains("YOCTOCLAW_API_KEY"));
        let e = status_error(404, "not json", None, &cfg);
        assert!(e.to_string().contains(&cfg.model));
        assert!(matches!(
            status_error(429, "", Some(7), &cfg),
            ProviderError::RateLimited {
                retry_after_secs: Some(7),
                ..
            }
        ));
    }

    #[test]
    fn request_body_shapes_tool_history() {
        let cfg = ProviderConfig::default();
        let mut a = Message::new(Role::Assistant, "");
        a.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"x"}"#.into(),
        });
        let mut t = Message::new(Role::Tool, "data");
        t.tool_call_id = Some("c1".into());
        let msgs = [Message::new(Role::User, "q"), a, t];
        let tools = [ToolSpec {
            name: Cow::Borrowed("read_file"),
            description: Cow::Borrowed("d"),
            parameters: Cow::Borrowed(r#"{"type":"object","properties":{}}"#),
        }];
        let body = request_body(
            &cfg,
            &ChatRequest {
                system: "sys",
                messages: &msgs,
                tools: &tools,
                media_root: None,
            },
        );
        let v = json::parse_value(&body).unwrap();
        let m = json::get(&v, "messages").and_then(json::as_array).unwrap();
        assert_eq!(m.len(), 4);
        // Never null (llama-cpp-python answers 500 to it): an empty string.
        assert_eq!(json::str_at(&m[2], "content"), Some(""));
        assert_eq!(json::str_at(&m[3], "tool_call_id"), Some("c1"));
        // Tools offered: tool_choice "auto" (llama-cpp-python offers none without it).
        assert_eq!(json::str_at(&v, "tool_choice"), Some("auto"));
        let no_tools = request_body(
            &cfg,
            &ChatRequest {
                system: "sys",
                messages: &msgs,
                tools: &[],
                media_root: None,
            },
        );
        let nv = json::parse_value(&no_tools).unwrap();
        assert!(json::get(&nv, "tool_choice").is_none() && json::get(&nv, "tools").is_none());
        let tools = json::get(&v, "tools").and_then(json::as_array).unwrap();
        assert_eq!(
            json::path(&tools[0], &["function", "parameters", "type"]).and_then(json::as_str),
            Some("object")
        );
    }
}
