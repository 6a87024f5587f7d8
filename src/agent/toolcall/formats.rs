//! The bodies of the text tool-call formats, read into `(name, arguments)` pairs.
//!
//! `toolcall`'s scanner finds where a block starts and ends; these functions read what is
//! inside (the opening marker already removed, the closing one too when it came).
//! Arguments are a JSON object's text; arguments written as `KEY`/`VALUE` items (Qwen3-Coder
//! `<parameter=K>`, `<invoke>`'s `<parameter name="K">`, GLM `<arg_key>`) become an
//! object of strings (the tools accept numbers and booleans written as strings).
//! Arguments that are not JSON are passed on as written, for the tools to refuse.
//!
//! # Bounds
//! Linear in the body; no recursion (`json_end` counts brackets, miniserde parses with a
//! heap stack). At most `MAX_TOOL_CALLS_PER_ANSWER` pairs are kept from one body.
//!
//! # Threads
//! Any thread: pure functions.

use crate::json;
use crate::limits::MAX_TOOL_CALLS_PER_ANSWER;
use miniserde::json::Value;

/// Calls read from a body: name and arguments text.
pub(super) type Found = Vec<(String, String)>;

const DS_CALL_BEGIN: &str = "<｜tool▁call▁begin｜>";
const DS_CALL_END: &str = "<｜tool▁call▁end｜>";
const DS_SEP: &str = "<｜tool▁sep｜>";

fn push(out: &mut Found, name: &str, arguments: String) {
    let name = name.trim();
    if !name.is_empty() && out.len() < MAX_TOOL_CALLS_PER_ANSWER {
        out.push((name.to_string(), arguments));
    }
}

/// After `<tool_call` / `<toolcall` / `<invoke`: attributes, `>`, body. `<invoke
/// name="x">` takes JSON or `<parameter name="k">` items; otherwise the body is a JSON
/// call (or a list of them), a Qwen3-Coder `<function=…>`, or GLM `NAME<arg_key>…`
/// (a bare GLM name only in a closed block: `<tool_call>word` in prose is no call).
pub(super) fn tag(after_name: &str, closed: bool, out: &mut Found) {
    let Some((attrs, body)) = after_name.split_once('>') else {
        return;
    };
    let t = body.trim();
    if let Some(name) = name_attr(attrs) {
        let args = if t.starts_with('{') {
            t.to_string()
        } else {
            params(t)
        };
        return push(out, &name, args);
    }
    if t.starts_with(['{', '[']) {
        return json_calls(t, out);
    }
    if let Some((_, f)) = t.split_once("<function=") {
        return function(f, closed || f.contains("</function>"), out);
    }
    glm(t, closed, out);
}

/// After `<function=`: `NAME>` then `<parameter=K>` items or a JSON object, up to
/// `</function>` (unclosed: only with items or JSON, so `<function=x>` in prose is none).
pub(super) fn function(s: &str, closed: bool, out: &mut Found) {
    let Some((name, rest)) = s.split_once('>') else {
        return;
    };
    let body = rest.split("</function>").next().unwrap_or(rest);
    let t = body.trim();
    if !closed && !t.starts_with('{') && !t.contains("<parameter") {
        return;
    }
    let args = if t.starts_with('{') {
        t.to_string()
    } else {
        params(body)
    };
    push(out, name, args);
}

/// GLM-4.5: `NAME` then `<arg_key>K</arg_key><arg_value>V</arg_value>` pairs.
fn glm(t: &str, closed: bool, out: &mut Found) {
    let (name, mut rest) = match t.split_once("<arg_key>") {
        Some((n, r)) => (n.trim(), Some(r)),
        None => (t, None),
    };
    if !is_name(name) || (rest.is_none() && !closed) {
        return;
    }
    let mut pairs = Vec::new();
    while let Some(r) = rest {
        let Some((key, after)) = r.split_once("</arg_key>") else {
            break;
        };
        let Some((_, v)) = after.split_once("<arg_value>") else {
            break;
        };
        let (value, next) = v.split_once("</arg_value>").unwrap_or((v, ""));
        pairs.push((key.trim().to_string(), json::string(value)));
        rest = next.split_once("<arg_key>").map(|(_, r)| r);
    }
    push(out, name, json::to_string(&json::object(pairs)));
}

/// DeepSeek: `<｜tool▁call▁begin｜>` items, each `function<｜tool▁sep｜>NAME\n```json\n{…}\n```
/// ` (V3, R1) or `NAME<｜tool▁sep｜>{…}` (V3.1), up to `<｜tool▁call▁end｜>`.
pub(super) fn deepseek(body: &str, out: &mut Found) {
    if !body.contains(DS_CALL_BEGIN) {
        return deepseek_call(body, out);
    }
    for p in body.split(DS_CALL_BEGIN).skip(1) {
        deepseek_call(p, out);
    }
}

fn deepseek_call(p: &str, out: &mut Found) {
    let p = p.split(DS_CALL_END).next().unwrap_or(p);
    let Some((a, b)) = p.split_once(DS_SEP) else {
        return;
    };
    let a = a.trim();
    let (name, args) = if a.is_empty() || a == "function" {
        let b = b.trim_start();
        b.split_once('\n').unwrap_or((b, ""))
    } else {
        (a, b)
    };
    let mut args = args.trim();
    if let Some(fenced) = args.strip_prefix("```") {
        let inner = fenced.split_once('\n').map_or("", |(_, r)| r).trim_end();
        args = inner.strip_suffix("```").unwrap_or(inner).trim();
    }
    push(out, name, args.to_string());
}

/// Mistral, after `[TOOL_CALLS]`: a JSON list of calls (v3, v7), or `NAME[ARGS]{…}`,
/// maybe with `[CALL_ID]id` (v11+), repeated after further `[TOOL_CALLS]`.
pub(super) fn mistral(body: &str, out: &mut Found) {
    for part in body.split("[TOOL_CALLS]") {
        let p = part.trim();
        if p.starts_with(['[', '{']) {
            if let Some(json) = json_end(p).and_then(|e| p.get(..e)) {
                json_calls(json, out);
            }
            continue;
        }
        let Some((head, args)) = p.split_once("[ARGS]") else {
            continue;
        };
        let name = head.split("[CALL_ID]").next().unwrap_or(head);
        let args = args.trim();
        let args = json_end(args).and_then(|e| args.get(..e)).unwrap_or(args);
        push(out, name, args.to_string());
    }
}

/// Llama, after `<|python_tag|>`: JSON calls, separated by `;` when there are several.
pub(super) fn python_tag(body: &str, out: &mut Found) {
    let mut r = body.trim_start();
    while r.starts_with('{') {
        let Some(e) = json_end(r) else {
            break;
        };
        json_calls(r.get(..e).unwrap_or(""), out);
        r = r.get(e..).unwrap_or("").trim_start();
        r = r.strip_prefix([';', ',']).unwrap_or(r).trim_start();
    }
}

/// A ```` ```json ```` fence's body: one call naming a known tool.
pub(super) fn fence(body: &str, is_tool: &dyn Fn(&str) -> bool, out: &mut Found) {
    if let Some((name, args)) = whole(body.trim(), is_tool) {
        out.push((name, args));
    }
}

/// A text that is exactly one JSON object naming a known tool.
pub(super) fn whole(t: &str, is_tool: &dyn Fn(&str) -> bool) -> Option<(String, String)> {
    if !t.starts_with('{') {
        return None;
    }
    let v = json::parse_value(t).ok()?;
    let mut one = Vec::new();
    object_call(&v, &mut one);
    one.pop().filter(|(name, _)| is_tool(name))
}

/// A JSON call object, or a list of them.
fn json_calls(t: &str, out: &mut Found) {
    match json::parse_value(t) {
        Ok(Value::Array(items)) => items.iter().for_each(|v| object_call(v, out)),
        Ok(v) => object_call(&v, out),
        Err(_) => {}
    }
}

/// `{"name": x, "arguments"|"parameters"|"args"|"input": …}` or `{"tool": x, …}`, also
/// wrapped as `{"type": "function", "function": {…}}`.
fn object_call(v: &Value, out: &mut Found) {
    let v = match json::get(v, "function") {
        Some(f @ Value::Object(_)) => f,
        _ => v,
    };
    let Some(name) = json::str_at(v, "name").or_else(|| json::str_at(v, "tool")) else {
        return;
    };
    let args = ["arguments", "parameters", "args", "input"]
        .iter()
        .find_map(|k| json::get(v, k));
    let arguments = match args {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(a) => json::to_string(a),
    };
    push(out, name, arguments);
}

/// `<parameter=K>V</parameter>` (Qwen3-Coder) or `<parameter name="K">V</parameter>` items
/// as a JSON object of strings. A value loses one newline on each side (the template adds
/// them); the last one may be unclosed.
fn params(mut body: &str) -> String {
    let mut pairs = Vec::new();
    while let Some(i) = body.find("<parameter") {
        let after = body.get(i + "<parameter".len()..).unwrap_or("");
        let Some((head, rest)) = after.split_once('>') else {
            break;
        };
        let key = match head.strip_prefix('=') {
            Some(k) => k.trim().to_string(),
            None => match name_attr(head) {
                Some(k) => k,
                None => break,
            },
        };
        let (value, next) = rest.split_once("</parameter>").unwrap_or((rest, ""));
        let value = value.strip_prefix('\n').unwrap_or(value);
        let value = value.strip_suffix('\n').unwrap_or(value);
        pairs.push((key, json::string(value)));
        body = next;
    }
    json::to_string(&json::object(pairs))
}

/// The value of ` name="..."` in an opening tag.
fn name_attr(open: &str) -> Option<String> {
    let (_, after) = open.split_once(" name=\"")?;
    let v = after.split('"').next()?.trim();
    (!v.is_empty()).then(|| v.to_string())
}

/// A bare tool name (GLM): letters, digits, `_ - . :`.
fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
}

/// Where the JSON object or array at the start of `s` ends (brackets counted outside
/// strings); `None` when it does not end.
fn json_end(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, b) in s.bytes().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ if depth == 0 => return None,
            _ => {}
        }
    }
    None
}
