//! The Anthropic Messages API (`POST {base_url}/v1/messages`): request bodies built
//! from our history, replies parsed, errors typed, and the streamed events assembled.
//!
//! Our history is OpenAI-shaped (assistant messages carrying tool calls, one `tool`
//! message per result). The Messages API wants content blocks and strict alternation, so
//! the mapping: an assistant's tool calls become `tool_use` blocks (`input` an object);
//! each tool result becomes a `tool_result` block in a user message; consecutive
//! messages of the same side are merged into one (results first, as the API requires);
//! blank text blocks are dropped (the API rejects them). History cut by the window is
//! repaired rather than sent broken: a result whose call is not in the assistant message
//! just before it becomes plain text, a call without a result gets a placeholder
//! result, and a conversation that starts with the assistant gets a short user opener.
//! When a request offers no tools (the forced final round), tool blocks are written as
//! plain text: the API refuses tool blocks in a request that defines no tools.
//! Images a tool's result shows a model that can see go in its `tool_result` block,
//! whose `content` is then a list of a text block and image blocks (as text, they
//! follow the text as image blocks of the user turn).
//!
//! # Bounds
//! Error details are cut to `openai::MAX_ERROR_DETAIL_CHARS`; a streamed answer keeps
//! at most `MAX_STREAM_TOOL_CALLS` tool calls. Everything else is bounded by the body
//! size caps of `provider`.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use super::openai::{error_detail, error_for_status};
use super::{ChatReply, ChatRequest, Image, ProviderError};
use crate::chat::{Message, Role, ToolCall, Usage};
use crate::config::ProviderConfig;
use crate::json;
use crate::limits::MAX_STREAM_TOOL_CALLS;
use miniserde::json::Value;

/// The API version header value this module speaks.
pub const API_VERSION: &str = "2023-06-01";

/// Said in place of a tool result that never came (an interrupted turn).
const MISSING_RESULT: &str = "(no result: the turn was interrupted)";
/// Opens a history window that starts with an assistant message.
const WINDOW_OPENER: &str = "(earlier messages omitted)";

/// `{base_url}/v1/messages`; a base URL that already ends in `/v1` is accepted too.
pub fn messages_url(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}

/// One content block before it is written as JSON.
#[derive(Debug, Clone)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// A tool's result: its text, and the images it shows a model that can see.
    ToolResult {
        id: String,
        content: String,
        images: Vec<Image>,
    },
    /// A photo or a tool's image: its mime type and the file mark its base64 is
    /// streamed in place of.
    Image {
        mime: &'static str,
        mark: String,
    },
}

/// One message of the request: the user side (users and tool results) or the assistant.
#[derive(Debug)]
struct Turn {
    user: bool,
    blocks: Vec<Block>,
}

/// The JSON body for `POST {base_url}/v1/messages`.
pub fn request_body(cfg: &ProviderConfig, req: &ChatRequest<'_>) -> String {
    let mut system = req.system.to_string();
    for m in req.messages.iter().filter(|m| m.role == Role::System) {
        if !m.content.trim().is_empty() {
            if !system.is_empty() {
                system.push_str("\n\n");
            }
            system.push_str(&m.content);
        }
    }
    let mut turns = map_history(req.messages, !req.tools.is_empty(), &|m| req.shown(cfg, m));
    let (_, images) = req.images(cfg);
    if !images.is_empty() {
        // The photos of the last user message go first in the last user turn (the one
        // that holds it: nothing after it is the user's but tool results).
        let holds_photo = |t: &Turn| {
            t.user
                && t.blocks.iter().any(
                    |b| matches!(b, Block::Text(x) if x.contains(crate::chat::media::PHOTO_PREFIX)),
                )
        };
        if let Some(t) = turns.iter_mut().rev().find(|t| holds_photo(t)) {
            t.blocks.splice(0..0, images.into_iter().map(image_block));
        }
    }
    let mut w = req.body_writer(cfg);
    for t in &turns {
        write_turn(&mut w, t);
    }
    w.end_array();
    w.key("stream");
    w.bool(cfg.stream);
    if !system.is_empty() {
        w.field_str("system", &system);
    }
    if !req.tools.is_empty() {
        w.key("tools");
        w.begin_array();
        for t in req.tools {
            w.begin_object();
            w.field_str("name", &t.name);
            w.field_str("description", &t.description);
            w.key("input_schema");
            // A constant JSON Schema object (tools::tests checks every one parses).
            w.raw(&t.parameters);
            w.end_object();
        }
        w.end_array();
    }
    w.end_object();
    w.finish()
}

/// Tool ids must match `[a-zA-Z0-9_-]+`: ids from other providers are made to fit.
fn clean_id(id: &str, n: usize) -> String {
    let cleaned: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        format!("toolu_{n}")
    } else {
        cleaned
    }
}

/// Our history as alternating, well-paired Messages API turns; `shown(m)`: the images
/// message `m` carries that the request shows (inside a tool's `tool_result`, else after
/// the message's text).
fn map_history(
    messages: &[Message],
    with_tools: bool,
    shown: &dyn Fn(&Message) -> Vec<Image>,
) -> Vec<Turn> {
    // 1. Each message as blocks, blank text dropped.
    let mut raw: Vec<Turn> = Vec::with_capacity(messages.len());
    for (n, m) in messages.iter().enumerate() {
        let mut blocks = Vec::new();
        let user = match m.role {
            Role::System => continue,
            Role::User => {
                push_text(&mut blocks, &m.content);
                blocks.extend(shown(m).into_iter().map(image_block));
                true
            }
            Role::Assistant => {
                push_text(&mut blocks, &m.content);
                for (k, c) in m.tool_calls.iter().enumerate() {
                    if with_tools {
                        let input = json::parse_value(&c.arguments)
                            .ok()
                            .filter(|v| json::as_object(v).is_some())
                            .unwrap_or_else(|| json::object::<_, &str>([]));
                        blocks.push(Block::ToolUse {
                            id: clean_id(&c.id, n * 100 + k),
                            name: c.name.clone(),
                            input,
                        });
                    } else {
                        blocks.push(Block::Text(format!(
                            "[called tool {} with {}]",
                            c.name, c.arguments
                        )));
                    }
                }
                false
            }
            Role::Tool => {
                let content = if m.content.trim().is_empty() {
                    "(empty)".to_string()
                } else {
                    m.content.clone()
                };
                let images = shown(m);
                if with_tools {
                    blocks.push(Block::ToolResult {
                        id: clean_id(m.tool_call_id.as_deref().unwrap_or(""), n),
                        content,
                        images,
                    });
                } else {
                    blocks.push(Block::Text(format!("[tool result]\n{content}")));
                    blocks.extend(images.into_iter().map(image_block));
                }
                true
            }
        };
        if !blocks.is_empty() {
            raw.push(Turn { user, blocks });
        }
    }
    // 2. Merge consecutive turns of the same side.
    let mut turns: Vec<Turn> = Vec::with_capacity(raw.len());
    for t in raw {
        match turns.last_mut() {
            Some(last) if last.user == t.user => last.blocks.extend(t.blocks),
            _ => turns.push(t),
        }
    }
    // 3. Pair every tool_use with a tool_result in the next user turn, and turn results
    //    without a call just before them into text.
    let mut i = 0;
    while i < turns.len() {
        if turns[i].user {
            // Not right after an assistant turn with calls (those are fixed below).
            fix_results(&mut turns[i], &[], &[]);
        } else {
            let calls = tool_use_ids(&turns[i]);
            if !calls.is_empty() {
                match turns.get_mut(i + 1) {
                    Some(next) => fix_results(next, &calls, &calls),
                    None => {
                        let mut t = Turn {
                            user: true,
                            blocks: Vec::new(),
                        };
                        fix_results(&mut t, &calls, &calls);
                        turns.push(t);
                    }
                }
                i += 1; // the next user turn is already fixed
            }
        }
        i += 1;
    }
    // 4. The first turn must be the user's.
    if turns.first().is_some_and(|t| !t.user) {
        turns.insert(
            0,
            Turn {
                user: true,
                blocks: vec![Block::Text(WINDOW_OPENER.into())],
            },
        );
    }
    turns
}

fn image_block(i: Image) -> Block {
    Block::Image {
        mime: i.mime,
        mark: i.mark,
    }
}

fn push_text(blocks: &mut Vec<Block>, text: &str) {
    if !text.trim().is_empty() {
        blocks.push(Block::Text(text.to_string()));
    }
}

fn tool_use_ids(t: &Turn) -> Vec<String> {
    t.blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect()
}

/// In a user turn: keep results whose call is in `known`, turn the others into text, add
/// a placeholder result for each id of `required` that has none, results first.
fn fix_results(turn: &mut Turn, known: &[String], required: &[String]) {
    let mut results = Vec::new();
    let mut others = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for b in std::mem::take(&mut turn.blocks) {
        match b {
            Block::ToolResult {
                id,
                content,
                images,
            } if known.contains(&id) && !seen.contains(&id) => {
                seen.push(id.clone());
                results.push(Block::ToolResult {
                    id,
                    content,
                    images,
                });
            }
            Block::ToolResult {
                content, images, ..
            } => {
                others.push(Block::Text(format!("[tool result]\n{content}")));
                others.extend(images.into_iter().map(image_block));
            }
            other => others.push(other),
        }
    }
    for id in required {
        if !seen.contains(id) {
            seen.push(id.clone());
            results.push(Block::ToolResult {
                id: id.clone(),
                content: MISSING_RESULT.into(),
                images: Vec::new(),
            });
        }
    }
    results.extend(others);
    turn.blocks = results;
}

fn write_turn(w: &mut json::Writer, t: &Turn) {
    w.begin_object();
    w.field_str("role", if t.user { "user" } else { "assistant" });
    w.key("content");
    w.begin_array();
    for b in &t.blocks {
        w.begin_object();
        match b {
            Block::Text(text) => write_text(w, text),
            Block::ToolUse { id, name, input } => {
                w.field_str("type", "tool_use");
                w.field_str("id", id);
                w.field_str("name", name);
                w.key("input");
                w.raw(&json::to_string(input));
            }
            Block::ToolResult {
                id,
                content,
                images,
            } => {
                w.field_str("type", "tool_result");
                w.field_str("tool_use_id", id);
                if images.is_empty() {
                    w.field_str("content", content);
                } else {
                    // Text and image blocks (the API's documented `content` list).
                    w.key("content");
                    w.begin_array();
                    w.begin_object();
                    write_text(w, content);
                    w.end_object();
                    for i in images {
                        w.begin_object();
                        write_image(w, i.mime, &i.mark);
                        w.end_object();
                    }
                    w.end_array();
                }
            }
            Block::Image { mime, mark } => write_image(w, mime, mark),
        }
        w.end_object();
    }
    w.end_array();
    w.end_object();
}

/// A text block's members.
fn write_text(w: &mut json::Writer, text: &str) {
    w.field_str("type", "text");
    w.field_str("text", text);
}

/// An image block's members, its base64 a file mark.
fn write_image(w: &mut json::Writer, mime: &str, mark: &str) {
    w.field_str("type", "image");
    w.key("source");
    w.raw(&format!(
        "{{\"type\":\"base64\",\"media_type\":\"{mime}\",\"data\":\"{mark}\"}}"
    ));
}

fn bad(detail: &str) -> ProviderError {
    ProviderError::BadResponse {
        detail: detail.into(),
    }
}

/// Parse a successful (2xx) Messages API body.
pub fn parse_reply(text: &str, cfg: &ProviderConfig) -> Result<ChatReply, ProviderError> {
    let v = super::read_json(text, "not valid Messages API JSON")?;
    if json::str_at(&v, "type") == Some("error") {
        return Err(error_from_value(&v, cfg));
    }
    let blocks = json::get(&v, "content")
        .and_then(json::as_array)
        .ok_or_else(|| bad("not valid Messages API JSON: no content"))?;
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        match json::str_at(b, "type") {
            Some("text") => content.push_str(json::str_at(b, "text").unwrap_or("")),
            Some("tool_use") => {
                let Some(name) = json::str_at(b, "name").filter(|n| !n.is_empty()) else {
                    continue;
                };
                let arguments = match json::get(b, "input") {
                    Some(v @ Value::Object(_)) => json::to_string(v),
                    _ => "{}".to_string(),
                };
                tool_calls.push(ToolCall {
                    id: json::str_at(b, "id")
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("toolu_{i}")),
                    name: name.to_string(),
                    arguments,
                });
            }
            // thinking, redacted_thinking, server tool blocks: not for the user.
            _ => {}
        }
    }
    let usage = json::get(&v, "usage").and_then(|u| {
        Some(Usage {
            prompt_tokens: input_tokens(u)?,
            completion_tokens: json::get(u, "output_tokens")
                .and_then(json::as_u64)
                .unwrap_or(0),
            estimated: false,
        })
    });
    Ok(ChatReply {
        content,
        tool_calls,
        finish_reason: json::str_at(&v, "stop_reason").unwrap_or("").to_string(),
        usage,
    })
}

/// Input tokens including prompt-cache reads and writes (all are billed input).
fn input_tokens(u: &Value) -> Option<u64> {
    let base = json::get(u, "input_tokens").and_then(json::as_u64)?;
    let extra = ["cache_creation_input_tokens", "cache_read_input_tokens"]
        .iter()
        .filter_map(|k| json::get(u, k).and_then(json::as_u64))
        .fold(0u64, u64::saturating_add);
    Some(base.saturating_add(extra))
}

/// An `{"type":"error","error":{"type","message"}}` body or stream event as a typed error.
pub fn error_from_value(v: &Value, cfg: &ProviderConfig) -> ProviderError {
    let status = match json::path(v, &["error", "type"]).and_then(json::as_str) {
        Some("invalid_request_error") => 400,
        Some("authentication_error") => 401,
        Some("billing_error") => 402,
        Some("permission_error") => 403,
        Some("not_found_error") => 404,
        Some("request_too_large") => 413,
        Some("rate_limit_error") => 429,
        Some("timeout_error") => 504,
        Some("overloaded_error") => 529,
        _ => 500,
    };
    error_for_status(status, error_detail(v).unwrap_or_default(), None, cfg)
}

/// A tool call being assembled from stream events.
#[derive(Debug)]
struct StreamTool {
    index: u64,
    id: String,
    name: String,
    /// `input` given whole in `content_block_start` (proxies do that), as JSON text.
    start_input: String,
    /// `input_json_delta` fragments.
    json: String,
}

/// Assembles a streamed Messages API answer from its events.
#[derive(Debug, Default)]
pub struct AnthropicStream {
    content: String,
    tools: Vec<StreamTool>,
    stop_reason: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    done: bool,
}

impl AnthropicStream {
    /// One event's data (its JSON `type` names the event; the `event:` line is not needed).
    /// Visible text is appended to `text`.
    pub fn event(
        &mut self,
        data: &str,
        text: &mut String,
        cfg: &ProviderConfig,
    ) -> Result<(), ProviderError> {
        let v = super::read_json(data, "a stream event is not JSON")?;
        match json::str_at(&v, "type").unwrap_or("") {
            "message_start" => {
                if let Some(u) = json::path(&v, &["message", "usage"]) {
                    self.usage_from(u);
                }
            }
            "content_block_start" => {
                let index = json::get(&v, "index").and_then(json::as_u64).unwrap_or(0);
                let Some(block) = json::get(&v, "content_block") else {
                    return Ok(());
                };
                match json::str_at(block, "type") {
                    Some("text") => {
                        let t = json::str_at(block, "text").unwrap_or("");
                        self.content.push_str(t);
                        text.push_str(t);
                    }
                    Some("tool_use") if self.tools.len() < MAX_STREAM_TOOL_CALLS => {
                        let start_input = match json::get(block, "input") {
                            Some(v @ Value::Object(o)) if !o.is_empty() => json::to_string(v),
                            _ => String::new(),
                        };
                        self.tools.push(StreamTool {
                            index,
                            id: json::str_at(block, "id").unwrap_or("").to_string(),
                            name: json::str_at(block, "name").unwrap_or("").to_string(),
                            start_input,
                            json: String::new(),
                        });
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = json::get(&v, "index").and_then(json::as_u64).unwrap_or(0);
                let Some(delta) = json::get(&v, "delta") else {
                    return Ok(());
                };
                match json::str_at(delta, "type") {
                    Some("text_delta") => {
                        let t = json::str_at(delta, "text").unwrap_or("");
                        self.content.push_str(t);
                        text.push_str(t);
                    }
                    Some("input_json_delta") => {
                        if let Some(tool) = self.tools.iter_mut().find(|t| t.index == index) {
                            tool.json
                                .push_str(json::str_at(delta, "partial_json").unwrap_or(""));
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = json::path(&v, &["delta", "stop_reason"]).and_then(json::as_str) {
                    self.stop_reason = Some(r.to_string());
                }
                if let Some(u) = json::get(&v, "usage") {
                    self.usage_from(u);
                }
            }
            "message_stop" => self.done = true,
            "error" => return Err(error_from_value(&v, cfg)),
            // ping, content_block_stop, and event types added later.
            _ => {}
        }
        Ok(())
    }

    fn usage_from(&mut self, u: &Value) {
        if let Some(n) = input_tokens(u) {
            self.input_tokens = Some(n);
        }
        if let Some(n) = json::get(u, "output_tokens").and_then(json::as_u64) {
            self.output_tokens = Some(n);
        }
    }

    /// `message_stop` was seen: nothing more will come.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The body ended: the reply, or an error when it ended before `message_stop` (a
    /// stream that already carried its `stop_reason` is complete enough).
    pub fn finish(self) -> Result<ChatReply, ProviderError> {
        if !self.done && self.stop_reason.is_none() {
            return Err(ProviderError::StreamCut {
                detail: "no message_stop".into(),
            });
        }
        let tool_calls = self
            .tools
            .into_iter()
            .enumerate()
            .filter(|(_, t)| !t.name.is_empty())
            .map(|(i, t)| {
                let raw = if !t.json.trim().is_empty() {
                    t.json
                } else if !t.start_input.is_empty() {
                    t.start_input
                } else {
                    "{}".to_string()
                };
                // The same text the non-streamed path gives (miniserde's compact form).
                let arguments = match json::parse_value(&raw) {
                    Ok(v @ Value::Object(_)) => json::to_string(&v),
                    _ => raw,
                };
                ToolCall {
                    id: if t.id.is_empty() {
                        format!("toolu_{i}")
                    } else {
                        t.id
                    },
                    name: t.name,
                    arguments,
                }
            })
            .collect();
        Ok(ChatReply {
            content: self.content,
            tool_calls,
            finish_reason: self.stop_reason.unwrap_or_default(),
            usage: self.input_tokens.map(|p| Usage {
                prompt_tokens: p,
                completion_tokens: self.output_tokens.unwrap_or(0),
                estimated: false,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::ToolSpec;
    use std::borrow::Cow;

    fn call(id: &str, name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    fn tool_msg(id: &str, content: &str) -> Message {
        let mut m = Message::new(Role::Tool, content);
        m.tool_call_id = Some(id.into());
        m
    }

    const TOOLS: &[ToolSpec] = &[ToolSpec {
        name: Cow::Borrowed("read_file"),
        description: Cow::Borrowed("Read a file"),
        parameters: Cow::Borrowed(
            r#"{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}"#,
        ),
    }];

    fn body_of(msgs: &[Message], tools: &[ToolSpec]) -> Value {
        let cfg = ProviderConfig {
            model: "claude-x".into(),
            ..ProviderConfig::default()
        };
        let body = request_body(
            &cfg,
            &ChatRequest {
                system: "be brief",
                messages: msgs,
                tools,
                media_root: None,
            },
        );
        json::parse_value(&body).unwrap()
    }

    fn messages(v: &Value) -> Vec<Value> {
        json::get(v, "messages")
            .and_then(json::as_array)
            .unwrap()
            .iter()
            .cloned()
            .collect()
    }

    fn role(m: &Value) -> &str {
        json::str_at(m, "role").unwrap()
    }

    fn blocks(m: &Value) -> Vec<Value> {
        json::get(m, "content")
            .and_then(json::as_array)
            .unwrap()
            .iter()
            .cloned()
            .collect()
    }

    #[test]
    fn a_tool_results_images_go_inside_its_tool_result_block() {
        let dir = std::env::temp_dir().join(format!("yc-ant-img-{}", std::process::id()));
        let msgs = crate::provider::tests::tool_round_with_image(&dir);
        let cfg = ProviderConfig::default();
        let req = |tools, media_root| ChatRequest {
            system: "",
            messages: &msgs,
            tools,
            media_root,
        };
        let image = r#"{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}"#;
        let body = request_body(&cfg, &req(TOOLS, Some(&dir)));
        assert_eq!(
            crate::provider::tests::sent_messages(&body),
            format!(
                concat!(
                    r#"[{{"role":"user","content":[{{"type":"text","text":"look"}}]}},"#,
                    r#"{{"role":"assistant","content":["#,
                    r#"{{"type":"tool_use","id":"call_1","name":"cam__shot","input":{{}}}},"#,
                    r#"{{"type":"tool_use","id":"call_2","name":"cam__info","input":{{}}}}]}},"#,
                    r#"{{"role":"user","content":["#,
                    r#"{{"type":"tool_result","tool_use_id":"call_1","content":["#,
                    r#"{{"type":"text","text":"[image: image/png, 8 bytes]"}},{image}]}},"#,
                    r#"{{"type":"tool_result","tool_use_id":"call_2","content":"ok"}}]}}]"#
                ),
                image = image
            )
        );
        // The forced final round (no tools): the result as text, its image after it.
        let body = request_body(&cfg, &req(&[], Some(&dir)));
        assert!(
            crate::provider::tests::sent_messages(&body).ends_with(&format!(
                concat!(
                    r#"{{"role":"user","content":["#,
                    r#"{{"type":"text","text":"[tool result]\n[image: image/png, 8 bytes]"}},{image},"#,
                    r#"{{"type":"text","text":"[tool result]\nok"}}]}}]"#
                ),
                image = image
            )),
            "{body}"
        );
        // A model that cannot see: the text alone, as a string.
        let blind = ProviderConfig {
            vision: false,
            ..cfg.clone()
        };
        for body in [
            request_body(&blind, &req(TOOLS, Some(&dir))),
            request_body(&cfg, &req(TOOLS, None)),
        ] {
            assert!(
                body.contains(
                    r#"{"type":"tool_result","tool_use_id":"call_1","content":"[image: image/png, 8 bytes]"}"#
                ),
                "{body}"
            );
            assert!(!body.contains(crate::provider::upload::FILE_MARK));
        }
        drop(msgs);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn urls() {
        assert_eq!(
            messages_url("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            messages_url("http://127.0.0.1:9/v1/"),
            "http://127.0.0.1:9/v1/messages"
        );
    }

    #[test]
    fn tool_round_trip_history_maps_to_blocks() {
        let mut a = Message::new(Role::Assistant, "Let me look.");
        a.tool_calls = vec![
            call("toolu_1", "read_file", r#"{"path":"a"}"#),
            call("call.2", "read_file", "not json"),
        ];
        let msgs = [
            Message::new(Role::User, "read a and b"),
            a,
            tool_msg("toolu_1", "A"),
            tool_msg("call.2", ""),
        ];
        let v = body_of(&msgs, TOOLS);
        assert_eq!(json::str_at(&v, "system"), Some("be brief"));
        assert_eq!(json::str_at(&v, "model"), Some("claude-x"));
        let tools = json::get(&v, "tools").and_then(json::as_array).unwrap();
        assert_eq!(
            json::path(&tools[0], &["input_schema", "type"]).and_then(json::as_str),
            Some("object")
        );
        let m = messages(&v);
        assert_eq!(m.len(), 3, "two tool results merged into one user turn");
        assert_eq!(
            m.iter().map(role).collect::<Vec<_>>(),
            ["user", "assistant", "user"]
        );
        let b = blocks(&m[1]);
        assert_eq!(json::str_at(&b[0], "type"), Some("text"));
        assert_eq!(json::str_at(&b[1], "type"), Some("tool_use"));
        assert_eq!(
            json::path(&b[1], &["input", "path"]).and_then(json::as_str),
            Some("a")
        );
        assert_eq!(json::str_at(&b[2], "id"), Some("call_2"), "id made to fit");
        assert!(json::as_object(json::get(&b[2], "input").unwrap()).is_some());
        let r = blocks(&m[2]);
        assert_eq!(r.len(), 2);
        assert_eq!(json::str_at(&r[0], "tool_use_id"), Some("toolu_1"));
        assert_eq!(json::str_at(&r[0], "content"), Some("A"));
        assert_eq!(json::str_at(&r[1], "tool_use_id"), Some("call_2"));
        assert_eq!(json::str_at(&r[1], "content"), Some("(empty)"));
    }

    #[test]
    fn same_role_messages_merge_and_blank_text_is_dropped() {
        let msgs = [
            Message::new(Role::User, "one"),
            Message::new(Role::User, "two"),
            Message::new(Role::Assistant, "  "),
            Message::new(Role::User, "three"),
        ];
        let m = messages(&body_of(&msgs, &[]));
        assert_eq!(m.len(), 1);
        assert_eq!(blocks(&m[0]).len(), 3);
    }

    #[test]
    fn broken_windows_are_repaired() {
        // The window starts with a result and an assistant answer; a call lacks its result.
        let mut a = Message::new(Role::Assistant, "");
        a.tool_calls = vec![call("c1", "read_file", "{}")];
        let msgs = [
            tool_msg("gone", "old result"),
            Message::new(Role::Assistant, "earlier answer"),
            Message::new(Role::User, "again"),
            a,
        ];
        let m = messages(&body_of(&msgs, TOOLS));
        assert_eq!(
            m.iter().map(role).collect::<Vec<_>>(),
            ["user", "assistant", "user", "assistant", "user"]
        );
        assert_eq!(json::str_at(&blocks(&m[0])[0], "type"), Some("text"));
        let last = blocks(&m[4]);
        assert_eq!(json::str_at(&last[0], "tool_use_id"), Some("c1"));
        assert_eq!(json::str_at(&last[0], "content"), Some(MISSING_RESULT));

        let msgs = [
            Message::new(Role::Assistant, "hi"),
            Message::new(Role::User, "x"),
        ];
        let m = messages(&body_of(&msgs, &[]));
        assert_eq!(json::str_at(&blocks(&m[0])[0], "text"), Some(WINDOW_OPENER));
    }

    #[test]
    fn without_tools_tool_blocks_become_text() {
        let mut a = Message::new(Role::Assistant, "");
        a.tool_calls = vec![call("c1", "read_file", r#"{"path":"a"}"#)];
        let msgs = [Message::new(Role::User, "q"), a, tool_msg("c1", "A")];
        let v = body_of(&msgs, &[]);
        assert!(json::get(&v, "tools").is_none());
        let text = json::to_string(&v);
        assert!(!text.contains("tool_use"), "{text}");
        assert!(text.contains("[called tool read_file"), "{text}");
        assert!(text.contains("[tool result]\\nA"), "{text}");
    }

    #[test]
    fn random_histories_always_alternate_and_pair() {
        let mut x = crate::testkit::XorShift(0x1234_5678_9ABC_DEF1);
        let mut next = move || x.next();
        for _ in 0..2000 {
            let n = (next() % 8) as usize;
            let mut msgs = Vec::new();
            for _ in 0..n {
                let m = match next() % 4 {
                    0 => Message::new(Role::User, if next() % 3 == 0 { " " } else { "u" }),
                    1 => Message::new(Role::Assistant, if next() % 2 == 0 { "" } else { "a" }),
                    2 => {
                        let mut a = Message::new(Role::Assistant, "");
                        a.tool_calls = vec![call(&format!("c{}", next() % 3), "read_file", "{}")];
                        a
                    }
                    _ => tool_msg(&format!("c{}", next() % 3), "r"),
                };
                msgs.push(m);
            }
            let tools: &[ToolSpec] = if next() % 2 == 0 { TOOLS } else { &[] };
            let turns = map_history(&msgs, !tools.is_empty(), &|_| Vec::new());
            for (i, t) in turns.iter().enumerate() {
                assert!(!t.blocks.is_empty());
                assert_eq!(t.user, i % 2 == 0, "{msgs:?}");
                let calls = tool_use_ids(t);
                if !calls.is_empty() {
                    let next = &turns[i + 1];
                    for c in &calls {
                        assert!(
                            next.blocks
                                .iter()
                                .any(|b| matches!(b, Block::ToolResult { id, .. } if id == c))
                        );
                    }
                }
                for b in &t.blocks {
                    if let Block::ToolResult { id, .. } = b {
                        assert!(tool_use_ids(&turns[i - 1]).contains(id));
                    }
                }
            }
        }
    }

    #[test]
    fn replies_parse() {
        let cfg = ProviderConfig::default();
        let r = parse_reply(
            r#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"Let me read it."},{"type":"tool_use","id":"toolu_9","name":"read_file","input":{"path":"notes.md"}}],"stop_reason":"tool_use","usage":{"input_tokens":12,"cache_read_input_tokens":3,"output_tokens":7}}"#,
            &cfg,
        )
        .unwrap();
        assert_eq!(r.content, "Let me read it.");
        assert_eq!(r.finish_reason, "tool_use");
        assert_eq!(
            r.tool_calls,
            vec![call("toolu_9", "read_file", r#"{"path":"notes.md"}"#)]
        );
        assert_eq!(
            r.usage,
            Some(Usage {
                prompt_tokens: 15,
                completion_tokens: 7,
                estimated: false,
            })
        );
        let r = parse_reply(
            r#"{"type":"message","content":[{"type":"text","text":"cut"}],"stop_reason":"max_tokens"}"#,
            &cfg,
        )
        .unwrap();
        assert_eq!((r.finish_reason.as_str(), r.usage), ("max_tokens", None));
        assert!(matches!(
            parse_reply("<html>", &cfg),
            Err(ProviderError::BadResponse { .. })
        ));
        assert!(matches!(
            parse_reply(r#"{"choices":[]}"#, &cfg),
            Err(ProviderError::BadResponse { .. })
        ));
    }

    #[test]
    fn error_bodies_are_typed() {
        let cfg = ProviderConfig::default();
        let e = |t: &str| {
            let body = format!(r#"{{"type":"error","error":{{"type":"{t}","message":"m"}}}}"#);
            parse_reply(&body, &cfg).unwrap_err()
        };
        assert!(matches!(
            e("overloaded_error"),
            ProviderError::Status { status: 529, .. }
        ));
        assert!(e("overloaded_error").is_retryable());
        assert!(matches!(
            e("rate_limit_error"),
            ProviderError::RateLimited { .. }
        ));
        assert!(matches!(
            e("authentication_error"),
            ProviderError::Unauthorized { .. }
        ));
        assert!(matches!(
            e("not_found_error"),
            ProviderError::NotFound { .. }
        ));
        assert!(matches!(
            e("invalid_request_error"),
            ProviderError::BadRequest { status: 400, .. }
        ));
        assert!(!e("invalid_request_error").is_retryable());
        assert!(e("api_error").is_retryable());
    }

    /// The same answer as a stream, split into events.
    fn stream_events() -> Vec<&'static str> {
        vec![
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"stop_reason":null,"usage":{"input_tokens":12,"cache_read_input_tokens":3,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Let me "}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"read it."}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_9","name":"read_file","input":{}}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"no"}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"tes.md\"}"}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":7}}"#,
            r#"{"type":"message_stop"}"#,
        ]
    }

    #[test]
    fn a_stream_assembles_the_same_reply_as_the_body() {
        let cfg = ProviderConfig::default();
        let mut s = AnthropicStream::default();
        let mut text = String::new();
        for e in stream_events() {
            s.event(e, &mut text, &cfg).unwrap();
        }
        assert!(s.is_done());
        assert_eq!(text, "Let me read it.");
        let streamed = s.finish().unwrap();
        let whole = parse_reply(
            r#"{"type":"message","content":[{"type":"text","text":"Let me read it."},{"type":"tool_use","id":"toolu_9","name":"read_file","input":{"path":"notes.md"}}],"stop_reason":"tool_use","usage":{"input_tokens":12,"cache_read_input_tokens":3,"output_tokens":7}}"#,
            &cfg,
        )
        .unwrap();
        assert_eq!(streamed, whole);
    }

    #[test]
    fn cut_and_failing_streams_are_errors() {
        let cfg = ProviderConfig::default();
        let events = stream_events();
        let mut s = AnthropicStream::default();
        let mut text = String::new();
        for e in &events[..8] {
            s.event(e, &mut text, &cfg).unwrap();
        }
        assert!(matches!(s.finish(), Err(ProviderError::StreamCut { .. })));

        let mut s = AnthropicStream::default();
        let e = s
            .event(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                &mut text,
                &cfg,
            )
            .unwrap_err();
        assert!(e.is_retryable());
        assert!(e.to_string().contains("Overloaded"), "{e}");
        assert!(s.event("{", &mut text, &cfg).is_err());
    }
}
