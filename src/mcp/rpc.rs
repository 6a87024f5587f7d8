//! JSON-RPC 2.0 as MCP uses it: the messages we write (requests with our integer ids,
//! notifications, responses to the server's requests) and the ones we read (responses
//! matched by id, notifications, the server's own requests; a batch array accepted).
//! Pure functions: the session (`session`) owns the ids and what to do with a message.
//!
//! A message we cannot read (not JSON, not JSON-RPC 2.0, over the size bound, a response
//! whose id is not one of ours) is a [`Fault`]: the server broke the protocol, and the
//! manager stops it and restarts it under the backoff.
//!
//! # Bounds
//! One message at most `MCP_MAX_MESSAGE_BYTES` (checked before parsing); a batch at most
//! `MCP_MAX_BATCH` messages; a method name kept up to `MAX_METHOD_BYTES`.
//!
//! # Threads
//! Any thread (pure); the session calls it on the executor thread.

use crate::json;
use crate::limits::MCP_MAX_MESSAGE_BYTES;
use miniserde::json::{Number, Value};
use std::fmt;

/// Most messages in one batch array read from a server.
pub const MCP_MAX_BATCH: usize = 64;
/// Longest method name kept (a longer one is cut; it is only logged or refused).
pub const MAX_METHOD_BYTES: usize = 128;
/// JSON-RPC's "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;

/// One message read from a server.
#[derive(Debug, Clone)]
pub enum Incoming {
    /// The answer to our request `id`: its `result`, or its error object.
    Response {
        id: u64,
        result: Result<Value, RpcError>,
    },
    /// A request of the server's (`ping`, `roots/list`, ...): it expects an answer with
    /// `id` (kept as the server wrote it).
    Request { id: Value, method: String },
    /// A notification (`notifications/...`).
    Notification {
        method: String,
        params: Option<Value>,
    },
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

/// Why a server's message cannot be taken: the server broke the protocol.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Over `MCP_MAX_MESSAGE_BYTES`.
    TooLarge,
    /// Not JSON.
    NotJson,
    /// JSON, but not a JSON-RPC 2.0 message (or an empty or too long batch).
    NotJsonRpc,
    /// A response to an id we never used or no longer wait for.
    UnknownId,
    /// The server answered with an error that belongs to no request (`id: null`).
    Orphan(String),
    /// More notifications than the rate bound allows.
    Flood,
    /// An output line that never ends (over the size bound without a newline).
    EndlessLine,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::TooLarge => write!(
                f,
                "it sent a message over {} MiB",
                MCP_MAX_MESSAGE_BYTES >> 20
            ),
            Fault::NotJson => write!(f, "it wrote something that is not JSON on its output"),
            Fault::NotJsonRpc => write!(f, "it sent JSON that is not a JSON-RPC 2.0 message"),
            Fault::UnknownId => write!(f, "it answered a request that was never sent"),
            Fault::Orphan(m) => write!(f, "it reported an error for no request: {m}"),
            Fault::Flood => write!(f, "it flooded yoctoclaw with notifications"),
            Fault::EndlessLine => write!(
                f,
                "it wrote a line over {} MiB without an end",
                MCP_MAX_MESSAGE_BYTES >> 20
            ),
        }
    }
}

/// A request with our id `id`.
pub fn request(id: u64, method: &str, params: Option<&Value>) -> String {
    let mut s = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":{}"#,
        json::quote(method)
    );
    if let Some(p) = params {
        s.push_str(",\"params\":");
        s.push_str(&json::to_string(p));
    }
    s.push('}');
    s
}

/// A notification.
pub fn notification(method: &str, params: Option<&Value>) -> String {
    let mut s = format!(r#"{{"jsonrpc":"2.0","method":{}"#, json::quote(method));
    if let Some(p) = params {
        s.push_str(",\"params\":");
        s.push_str(&json::to_string(p));
    }
    s.push('}');
    s
}

/// The answer to the server's request `id`: `result`.
pub fn response(id: &Value, result: &Value) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{}}}"#,
        json::to_string(id),
        json::to_string(result)
    )
}

/// The answer to the server's request `id`: an error.
pub fn error_response(id: &Value, code: i64, message: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{code},"message":{}}}}}"#,
        json::to_string(id),
        json::quote(message)
    )
}

/// The text of one message (or batch) read from a server, as messages.
pub fn parse(text: &str) -> Result<Vec<Incoming>, Fault> {
    if text.len() > MCP_MAX_MESSAGE_BYTES {
        return Err(Fault::TooLarge);
    }
    let v = json::parse_value(text).map_err(|_| Fault::NotJson)?;
    match v {
        Value::Array(items) => {
            if items.is_empty() || items.len() > MCP_MAX_BATCH {
                return Err(Fault::NotJsonRpc);
            }
            items.into_iter().map(one).collect()
        }
        v => Ok(vec![one(v)?]),
    }
}

fn cut(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// One message object.
fn one(v: Value) -> Result<Incoming, Fault> {
    let Value::Object(mut o) = v else {
        return Err(Fault::NotJsonRpc);
    };
    if o.get("jsonrpc").and_then(json::as_str) != Some("2.0") {
        return Err(Fault::NotJsonRpc);
    }
    let id = o.remove("id");
    if let Some(m) = o.get("method").and_then(json::as_str) {
        let method = cut(m, MAX_METHOD_BYTES);
        return Ok(match id {
            Some(id @ (Value::String(_) | Value::Number(_))) => Incoming::Request { id, method },
            None => Incoming::Notification {
                method,
                params: o.remove("params"),
            },
            Some(_) => return Err(Fault::NotJsonRpc),
        });
    }
    let error = o.remove("error");
    let result = o.remove("result");
    let rpc_error = |e: &Value| RpcError {
        code: json::get(e, "code").and_then(json::as_i64).unwrap_or(0),
        message: cut(json::str_at(e, "message").unwrap_or(""), 300),
    };
    let id = match id {
        Some(Value::Number(Number::U64(n))) => n,
        Some(Value::Null) | None => {
            return Err(match &error {
                Some(e) => Fault::Orphan(rpc_error(e).message),
                None => Fault::NotJsonRpc,
            });
        }
        // Our ids are integers: any other id answers nothing we sent.
        Some(_) => return Err(Fault::UnknownId),
    };
    match (result, error) {
        (Some(r), None) => Ok(Incoming::Response { id, result: Ok(r) }),
        (None, Some(e)) if matches!(e, Value::Object(_)) => Ok(Incoming::Response {
            id,
            result: Err(rpc_error(&e)),
        }),
        _ => Err(Fault::NotJsonRpc),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_written_as_json_rpc() {
        let p = json::object([("a", json::number(1))]);
        assert_eq!(
            request(7, "tools/list", Some(&p)),
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"a":1}}"#
        );
        assert_eq!(
            notification("notifications/initialized", None),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        );
        assert_eq!(
            response(
                &json::string("x"),
                &json::object::<[(&str, Value); 0], _>([])
            ),
            r#"{"jsonrpc":"2.0","id":"x","result":{}}"#
        );
        assert_eq!(
            error_response(&json::number(3), METHOD_NOT_FOUND, "no \"such\""),
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no \"such\""}}"#
        );
    }

    #[test]
    fn responses_requests_notifications_and_batches_are_read() {
        let m = parse(r#"{"jsonrpc":"2.0","id":4,"result":{"ok":true}}"#).unwrap();
        assert!(matches!(
            &m[..],
            [Incoming::Response {
                id: 4,
                result: Ok(_)
            }]
        ));
        let m =
            parse(r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"bad"}}"#).unwrap();
        assert!(
            matches!(&m[..], [Incoming::Response { id: 5, result: Err(e) }]
            if *e == RpcError { code: -32602, message: "bad".into() })
        );
        let m = parse(
            r#"[{"jsonrpc":"2.0","id":"p1","method":"ping"},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}]"#,
        )
        .unwrap();
        assert!(matches!(&m[0], Incoming::Request { method, .. } if method == "ping"));
        assert!(
            matches!(&m[1], Incoming::Notification { method, params: Some(_) } if method == "notifications/progress")
        );
    }

    #[test]
    fn broken_messages_are_faults_not_panics() {
        assert_eq!(parse("hello").err(), Some(Fault::NotJson));
        assert_eq!(parse("[]").err(), Some(Fault::NotJsonRpc));
        assert_eq!(
            parse(r#"{"id":1,"result":{}}"#).err(),
            Some(Fault::NotJsonRpc)
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":"abc","result":{}}"#).err(),
            Some(Fault::UnknownId)
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#)
                .err(),
            Some(Fault::Orphan("Parse error".into()))
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":1}"#).err(),
            Some(Fault::NotJsonRpc)
        );
        let big = format!(r#"{{"x":"{}"}}"#, "a".repeat(MCP_MAX_MESSAGE_BYTES));
        assert_eq!(parse(&big).err(), Some(Fault::TooLarge));
        // Fuzz-style: no input panics.
        let mut rng = crate::testkit::XorShift(0x5eed);
        let alphabet = br#"{}[]":,0123456789-.eE truenfalsjsonrpc2idmethodresulterror\"#;
        for _ in 0..2000 {
            let n = rng.index(60);
            let s: String = (0..n)
                .map(|_| alphabet[rng.index(alphabet.len())] as char)
                .collect();
            let _ = parse(&s);
        }
    }
}
