//! OpenAI's Chat Completions shapes: the request the API takes, and the answers it gives
//! (`chat.completion`, the streamed `chat.completion.chunk`s, the model list).
//!
//! What a request means here: the conversation is the board's session, which holds its
//! history, so only the last message of `messages` (the user's) is new input; the
//! earlier ones, a `system` message, `tools`, `temperature` and the like are read past
//! (the board's own prompt and tools answer). `model` is any name (echoed in the
//! answer); `n` must be 1; `stream` and `stream_options.include_usage` are honoured.
//!
//! # Bounds
//! The body is at most `http.max_body_kib` (the caller's cap) and holds at most
//! `HTTP_MAX_JSON_VALUES` values (counted before parsing); nesting is bounded by the JSON
//! reader (`json::MAX_JSON_DEPTH`). The echoed model name is cut to
//! `MAX_MODEL_NAME_BYTES`.
//!
//! # Threads
//! Any thread: pure functions over their arguments.

use crate::json::{self, Writer};
use crate::limits::HTTP_MAX_JSON_VALUES;
use miniserde::json::Value;

/// Longest model name echoed back.
pub const MAX_MODEL_NAME_BYTES: usize = 128;
/// The model the API lists (any name is taken in requests).
pub const MODEL_ID: &str = "yoctoclaw";

/// What the server takes from a completion request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The last user message's text (its text parts joined by blank lines).
    pub text: String,
    pub stream: bool,
    /// `stream_options.include_usage`: a last chunk with the usage.
    pub include_usage: bool,
    /// The model named, echoed in the answer.
    pub model: String,
    /// The `user` field (a session key, unless `X-Session-Id` names one).
    pub user: Option<String>,
}

/// Why a request is refused: 400 or 413, and one sentence.
pub type Refusal = (u16, String);

fn bad(message: impl Into<String>) -> Refusal {
    (400, message.into())
}

/// Read a completion request's body.
pub fn parse_request(body: &[u8]) -> Result<Request, Refusal> {
    let text = std::str::from_utf8(body).map_err(|_| bad("The body is not UTF-8 text."))?;
    if count_values(text) > HTTP_MAX_JSON_VALUES {
        return Err((
            413,
            format!(
                "The body holds more than {HTTP_MAX_JSON_VALUES} JSON values: send the last message only (the board keeps the conversation)."
            ),
        ));
    }
    let v = json::parse_value(text).map_err(|e| {
        bad(format!(
            "The body is not valid JSON (line {}, column {}: {}).",
            e.line, e.column, e.message
        ))
    })?;
    if json::as_object(&v).is_none() {
        return Err(bad("The body must be a JSON object."));
    }
    let messages = json::get(&v, "messages")
        .and_then(json::as_array)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| bad("\"messages\" must be a non-empty list of messages."))?;
    let last = &messages[messages.len() - 1];
    if json::str_at(last, "role") != Some("user") {
        return Err(bad(
            "The last message must be the user's (role \"user\"): the board keeps the rest of the conversation.",
        ));
    }
    let text = content_text(json::get(last, "content")).ok_or_else(|| {
        bad("The last message's content must be text, or a list of parts with text.")
    })?;
    if text.trim().is_empty() {
        return Err(bad("The last message is empty."));
    }
    match json::get(&v, "n") {
        None | Some(Value::Null) => {}
        Some(n) if json::as_u64(n) == Some(1) => {}
        Some(_) => {
            return Err(bad(
                "Only one choice is given: leave \"n\" out or set it to 1.",
            ));
        }
    }
    let flag = |v: Option<&Value>, key: &str| -> Result<bool, Refusal> {
        match v {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(bad(format!("\"{key}\" must be true or false."))),
        }
    };
    let stream = flag(json::get(&v, "stream"), "stream")?;
    let include_usage = flag(
        json::path(&v, &["stream_options", "include_usage"]),
        "stream_options.include_usage",
    )?;
    let mut model = json::str_at(&v, "model").unwrap_or(MODEL_ID).to_string();
    if model.len() > MAX_MODEL_NAME_BYTES {
        let mut end = MAX_MODEL_NAME_BYTES;
        while !model.is_char_boundary(end) {
            end -= 1;
        }
        model.truncate(end);
    }
    Ok(Request {
        text,
        stream,
        include_usage,
        model,
        user: json::str_at(&v, "user").map(str::to_string),
    })
}

/// A message's content as text: a string, or the text of its `text` parts (others, such
/// as images, are left out).
fn content_text(content: Option<&Value>) -> Option<String> {
    match content? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| json::str_at(p, "type") == Some("text"))
                .filter_map(|p| json::str_at(p, "text"))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n\n"))
        }
        _ => None,
    }
}

/// An upper bound of the values in a JSON text: separators and openers outside strings,
/// plus one.
pub(super) fn count_values(text: &str) -> usize {
    let (mut n, mut in_str, mut esc) = (1usize, false, false);
    for b in text.bytes() {
        if in_str {
            match (esc, b) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_str = true,
                b',' | b'[' | b'{' | b':' => n += 1,
                _ => {}
            }
        }
    }
    n
}

/// Tokens of one answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub prompt: u64,
    pub completion: u64,
}

/// What every answer of one completion carries.
#[derive(Debug, Clone)]
pub struct Ids {
    pub id: String,
    pub created: i64,
    pub model: String,
}

fn usage(w: &mut Writer, t: Tokens) {
    w.key("usage");
    w.begin_object();
    w.key("prompt_tokens");
    w.uint(t.prompt);
    w.key("completion_tokens");
    w.uint(t.completion);
    w.key("total_tokens");
    w.uint(t.prompt.saturating_add(t.completion));
    w.end_object();
}

fn begin(w: &mut Writer, ids: &Ids, object: &str) {
    w.begin_object();
    w.field_str("id", &ids.id);
    w.field_str("object", object);
    w.key("created");
    w.uint(ids.created.max(0) as u64);
    w.field_str("model", &ids.model);
}

/// The `chat.completion` of a whole answer.
pub fn completion(ids: &Ids, text: &str, tokens: Tokens) -> String {
    let mut w = Writer::with_capacity(text.len() + 320);
    begin(&mut w, ids, "chat.completion");
    w.key("choices");
    w.begin_array();
    w.begin_object();
    w.key("index");
    w.uint(0);
    w.key("message");
    w.begin_object();
    w.field_str("role", "assistant");
    w.field_str("content", text);
    w.end_object();
    w.field_str("finish_reason", "stop");
    w.end_object();
    w.end_array();
    usage(&mut w, tokens);
    w.end_object();
    w.finish()
}

/// What a streamed chunk carries.
#[derive(Debug, Clone, Copy)]
pub enum Delta<'a> {
    /// The first chunk: the role, no text yet.
    Role,
    Text(&'a str),
    /// The last chunk of the choice: `finish_reason` "stop".
    Stop,
    /// After the last, with `include_usage`: no choice, the usage.
    Usage(Tokens),
}

/// One `chat.completion.chunk`, as JSON (the caller frames it as an SSE event).
pub fn chunk(ids: &Ids, delta: Delta<'_>) -> String {
    let text_len = match delta {
        Delta::Text(t) => t.len(),
        _ => 0,
    };
    let mut w = Writer::with_capacity(text_len + 224);
    begin(&mut w, ids, "chat.completion.chunk");
    w.key("choices");
    w.begin_array();
    if let Delta::Usage(t) = delta {
        w.end_array();
        usage(&mut w, t);
        w.end_object();
        return w.finish();
    }
    w.begin_object();
    w.key("index");
    w.uint(0);
    w.key("delta");
    w.begin_object();
    match delta {
        Delta::Role => {
            w.field_str("role", "assistant");
            w.field_str("content", "");
        }
        Delta::Text(t) => w.field_str("content", t),
        _ => {}
    }
    w.end_object();
    w.key("finish_reason");
    match delta {
        Delta::Stop => w.string("stop"),
        _ => w.null(),
    }
    w.end_object();
    w.end_array();
    w.end_object();
    w.finish()
}

/// `GET /v1/models`: the one model the API is.
pub fn models() -> String {
    let mut w = Writer::with_capacity(128);
    w.begin_object();
    w.field_str("object", "list");
    w.key("data");
    w.begin_array();
    w.begin_object();
    w.field_str("id", MODEL_ID);
    w.field_str("object", "model");
    w.key("created");
    w.uint(0);
    w.field_str("owned_by", MODEL_ID);
    w.end_object();
    w.end_array();
    w.end_object();
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_user_message_is_the_input() {
        let r = parse_request(
            br#"{"model":"gpt-4o","user":"kitchen","stream":true,"stream_options":{"include_usage":true},
                "messages":[{"role":"system","content":"be brief"},{"role":"user","content":"old"},
                {"role":"assistant","content":"x"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:"}},{"type":"text","text":"b"}]}],
                "tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"temperature":0.2,"n":1}"#,
        )
        .unwrap();
        assert_eq!(r.text, "a\n\nb");
        assert!(r.stream && r.include_usage);
        assert_eq!(
            (r.model.as_str(), r.user.as_deref()),
            ("gpt-4o", Some("kitchen"))
        );
        let r = parse_request(br#"{"messages":[{"role":"user","content":"hi"}]}"#).unwrap();
        assert_eq!(
            (r.text.as_str(), r.model.as_str(), r.stream),
            ("hi", MODEL_ID, false)
        );
        let long = format!(
            r#"{{"model":"{}","messages":[{{"role":"user","content":"hi"}}]}}"#,
            "é".repeat(100)
        );
        assert_eq!(parse_request(long.as_bytes()).unwrap().model.len(), 128);
    }

    #[test]
    fn bad_requests_say_what_is_wrong() {
        for (body, status, says) in [
            (&b"\xff\xfe"[..], 400, "UTF-8"),
            (b"{\"messages\": [", 400, "not valid JSON (line 1"),
            (b"[1]", 400, "JSON object"),
            (b"{}", 400, "\"messages\""),
            (br#"{"messages":[]}"#, 400, "non-empty"),
            (
                br#"{"messages":[{"role":"assistant","content":"x"}]}"#,
                400,
                "the user's",
            ),
            (
                br#"{"messages":[{"role":"user","content":7}]}"#,
                400,
                "must be text",
            ),
            (
                br#"{"messages":[{"role":"user","content":"  "}]}"#,
                400,
                "empty",
            ),
            (
                br#"{"messages":[{"role":"user","content":"x"}],"n":2}"#,
                400,
                "\"n\"",
            ),
            (
                br#"{"messages":[{"role":"user","content":"x"}],"stream":"yes"}"#,
                400,
                "\"stream\"",
            ),
        ] {
            let (s, m) = parse_request(body).unwrap_err();
            assert_eq!(s, status, "{m}");
            assert!(m.contains(says), "{m}");
        }
        let many = format!("[{}0]", "0,".repeat(HTTP_MAX_JSON_VALUES));
        assert_eq!(parse_request(many.as_bytes()).unwrap_err().0, 413);
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(parse_request(deep.as_bytes()).unwrap_err().0, 400);
        // Separators inside strings are not values.
        assert_eq!(count_values(r#"{"a":"x,[{:\",y"}"#), 3);
    }

    #[test]
    fn answers_parse_as_openai_shapes() {
        let ids = Ids {
            id: "chatcmpl-1".into(),
            created: 1_700_000_000,
            model: "m".into(),
        };
        let t = Tokens {
            prompt: 3,
            completion: 4,
        };
        let v = json::parse_value(&completion(&ids, "hi \"you\"", t)).unwrap();
        assert_eq!(json::str_at(&v, "object"), Some("chat.completion"));
        assert_eq!(
            json::path(&v, &["usage", "total_tokens"]).and_then(json::as_u64),
            Some(7)
        );
        let c = &json::as_array(json::get(&v, "choices").unwrap()).unwrap()[0];
        assert_eq!(
            json::path(c, &["message", "content"]).and_then(json::as_str),
            Some("hi \"you\"")
        );
        for d in [Delta::Role, Delta::Text("x"), Delta::Stop, Delta::Usage(t)] {
            let v = json::parse_value(&chunk(&ids, d)).unwrap();
            assert_eq!(json::str_at(&v, "object"), Some("chat.completion.chunk"));
        }
        let v = json::parse_value(&chunk(&ids, Delta::Stop)).unwrap();
        let c = &json::as_array(json::get(&v, "choices").unwrap()).unwrap()[0];
        assert_eq!(json::str_at(c, "finish_reason"), Some("stop"));
        let v = json::parse_value(&models()).unwrap();
        assert_eq!(json::str_at(&v, "object"), Some("list"));
    }
}
