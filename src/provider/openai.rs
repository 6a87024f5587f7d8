//! The OpenAI-compatible Chat Completions protocol: request bodies and reply parsing.
//! Tolerant of the variations of real servers (OpenRouter, Ollama, llama.cpp, vLLM…):
//! `content` as a string, null or a list of parts; tool `arguments` as a JSON string or an
//! object; missing ids, missing `usage`, extra fields such as `reasoning`.
//!
//! # Bounds
//! Error details quoted from a provider are cut to `MAX_ERROR_DETAIL_CHARS`.
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

/// The JSON body for `POST {base_url}/chat/completions`, written straight into one
/// buffer (the history is not copied into a JSON tree first).
pub fn request_body(cfg: &ProviderConfig, req: &ChatRequest<'_>) -> String {
    let mut w = req.body_writer(cfg);
    if !req.system.is_empty() {
        w.begin_object();
        w.field_str("role", "system");
        w.field_str("content", req.system);
        w.end_object();
    }
    for m in req.messages {
        w.begin_object();
        w.field_str("role", m.role.as_str());
        match m.role {
            Role::Assistant if !m.tool_calls.is_empty() => {
                w.key("content");
                if m.content.is_empty() {
                    w.null();
                } else {
                    w.string(&m.content);
                }
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
            _ => w.field_str("content", &m.content),
        }
        w.end_object();
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
            w.field_str("name", t.name);
            w.field_str("description", t.description);
            w.key("parameters");
            // A constant JSON Schema object (tools::tests checks every one parses).
            w.raw(t.parameters);
            w.end_object();
            w.end_object();
        }
        w.end_array();
    }
    w.end_object();
    w.finish()
}

/// Parse a successful (2xx) Chat Completions body. An empty `choices` is an error (the
/// provider answered nothing: retrying or a fallback may help), not an empty answer.
pub fn parse_reply(text: &str, cfg: &ProviderConfig) -> Result<ChatReply, ProviderError> {
    let not_json = || ProviderError::BadResponse {
        detail: "not valid Chat Completions JSON".into(),
    };
    let v = json::parse_value(text).map_err(|_| not_json())?;
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
        })
    });
    Ok(ChatReply {
        content,
        tool_calls,
        finish_reason,
        usage,
    })
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
    let code = json::get(e, "code")
        .and_then(json::as_u64)
        .filter(|c| (400..=599).contains(c));
    Some(match code {
        Some(c) => error_for_status(c as u16, detail, None, cfg),
        None => ProviderError::Status {
            status: 200,
            detail,
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
    Some(cut_chars(scrubbed.trim(), MAX_ERROR_DETAIL_CHARS))
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
    let detail = json::parse_value(body)
        .ok()
        .and_then(|v| error_detail(&v))
        .unwrap_or_default();
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
        _ => ProviderError::Status { status, detail },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{Message, ToolSpec};

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
            name: "read_file",
            description: "d",
            parameters: r#"{"type":"object","properties":{}}"#,
        }];
        let body = request_body(
            &cfg,
            &ChatRequest {
                system: "sys",
                messages: &msgs,
                tools: &tools,
            },
        );
        let v = json::parse_value(&body).unwrap();
        let m = json::get(&v, "messages").and_then(json::as_array).unwrap();
        assert_eq!(m.len(), 4);
        assert!(matches!(json::get(&m[2], "content"), Some(Value::Null)));
        assert_eq!(json::str_at(&m[3], "tool_call_id"), Some("c1"));
        let tools = json::get(&v, "tools").and_then(json::as_array).unwrap();
        assert_eq!(
            json::path(&tools[0], &["function", "parameters", "type"]).and_then(json::as_str),
            Some("object")
        );
    }
}
