//! Tool calls written as text, for models that do not use native tool calling.
//!
//! Only structured delimiters are accepted: `<tool_call>{json}</tool_call>`,
//! `<toolcall>…</toolcall>`, `<invoke>…</invoke>` (JSON inside, or
//! `<invoke name="x">` with JSON arguments or `<parameter name="k">v</parameter>` items),
//! and fenced ```` ```json ```` blocks holding `{"tool": …, "args": …}` or
//! `{"name": …, "arguments": …}` where the name is a known tool. JSON is never fished out
//! of free prose.
//!
//! # Bounds
//! At most `MAX_TOOL_CALLS_PER_ANSWER` calls are taken from one answer. Scanning is linear
//! in the text and never recursive.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use crate::chat::ToolCall;
use crate::json;
use crate::limits::MAX_TOOL_CALLS_PER_ANSWER;
use miniserde::json::Value;

/// What was found in a text answer.
#[derive(Debug, Default, PartialEq)]
pub struct Extracted {
    pub calls: Vec<ToolCall>,
    /// The text with every recognised tool-call block removed.
    pub text: String,
}

/// The tag names of text tool calls (`<tool_call>` …); `agent::streaming` hides them too.
pub(crate) const TAGS: &[&str] = &["tool_call", "toolcall", "invoke"];

/// Find tool calls in `text`. `is_tool` says which names exist (used for fenced blocks,
/// so an ordinary JSON example in an answer is not mistaken for a call).
pub fn extract(text: &str, is_tool: &dyn Fn(&str) -> bool) -> Extracted {
    let mut out = Extracted::default();
    let mut rest = text;
    let mut n = 0usize;
    loop {
        let Some((start, kind)) = next_block(rest) else {
            out.text.push_str(rest);
            break;
        };
        out.text.push_str(&rest[..start]);
        let after = &rest[start..];
        match kind {
            Block::Tag(tag) => {
                let close = format!("</{tag}>");
                let Some(open_end) = after.find('>') else {
                    out.text.push_str(after);
                    break;
                };
                let open = &after[..=open_end];
                let body_start = open_end + 1;
                let Some(close_at) = after[body_start..].find(&close) else {
                    // Unclosed: keep as text.
                    out.text.push_str(after);
                    break;
                };
                let body = &after[body_start..body_start + close_at];
                if let Some(call) = parse_tag(open, body, n) {
                    if out.calls.len() < MAX_TOOL_CALLS_PER_ANSWER {
                        out.calls.push(call);
                    }
                    n += 1;
                } else {
                    out.text
                        .push_str(&after[..body_start + close_at + close.len()]);
                }
                rest = &after[body_start + close_at + close.len()..];
            }
            Block::Fence => {
                let body_start = after.find('\n').map(|i| i + 1).unwrap_or(after.len());
                let Some(end) = after[body_start..].find("```") else {
                    out.text.push_str(after);
                    break;
                };
                let body = &after[body_start..body_start + end];
                let consumed = body_start + end + 3;
                match parse_json_call(body, n).filter(|c| is_tool(&c.name)) {
                    Some(call) => {
                        if out.calls.len() < MAX_TOOL_CALLS_PER_ANSWER {
                            out.calls.push(call);
                        }
                        n += 1;
                    }
                    None => out.text.push_str(&after[..consumed]),
                }
                rest = &after[consumed..];
            }
        }
    }
    out.text = out.text.trim().to_string();
    out
}

enum Block {
    Tag(&'static str),
    Fence,
}

/// The earliest opening tag or ```json fence.
fn next_block(s: &str) -> Option<(usize, Block)> {
    let mut best: Option<(usize, Block)> = None;
    for tag in TAGS {
        let mut from = 0;
        while let Some(i) = s[from..].find(&format!("<{tag}")) {
            let at = from + i;
            let next = s[at + 1 + tag.len()..].chars().next();
            if matches!(next, Some('>') | Some(' ') | Some('\n') | Some('\t')) {
                if best.as_ref().is_none_or(|(b, _)| at < *b) {
                    best = Some((at, Block::Tag(tag)));
                }
                break;
            }
            from = at + 1;
        }
    }
    if let Some(i) = s.find("```json")
        && best.as_ref().is_none_or(|(b, _)| i < *b)
    {
        best = Some((i, Block::Fence));
    }
    best
}

fn parse_tag(open: &str, body: &str, n: usize) -> Option<ToolCall> {
    if let Some(name) = attr(open, "name") {
        let body_t = body.trim();
        let arguments = if body_t.starts_with('{') {
            let v = json::parse_value(body_t).ok()?;
            json::to_string(&v)
        } else {
            params_to_json(body_t)
        };
        return Some(ToolCall {
            id: format!("text_call_{n}"),
            name,
            arguments,
        });
    }
    parse_json_call(body, n)
}

/// `{"name": x, "arguments": {...}}` or `{"tool": x, "args": {...}}`.
fn parse_json_call(body: &str, n: usize) -> Option<ToolCall> {
    let v = json::parse_value(body.trim()).ok()?;
    let name = json::str_at(&v, "name").or_else(|| json::str_at(&v, "tool"))?;
    if name.is_empty() {
        return None;
    }
    let args = ["arguments", "args", "parameters", "input"]
        .iter()
        .find_map(|k| json::get(&v, k));
    let arguments = match args {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Object(_)) => json::to_string(v),
        Some(_) => return None,
    };
    Some(ToolCall {
        id: format!("text_call_{n}"),
        name: name.to_string(),
        arguments,
    })
}

/// The value of `key="..."` in an opening tag.
fn attr(open: &str, key: &str) -> Option<String> {
    let pat = format!("{key}=\"");
    let i = open.find(&pat)? + pat.len();
    let end = open[i..].find('"')?;
    let v = open[i..i + end].trim();
    (!v.is_empty()).then(|| v.to_string())
}

/// `<parameter name="k">v</parameter>` items as a JSON object.
fn params_to_json(body: &str) -> String {
    let mut pairs = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.find("<parameter") {
        let after = &rest[i..];
        let Some(gt) = after.find('>') else { break };
        let Some(name) = attr(&after[..gt], "name") else {
            break;
        };
        let Some(end) = after[gt + 1..].find("</parameter>") else {
            break;
        };
        let value = after[gt + 1..gt + 1 + end].trim();
        pairs.push((name, json::string(value)));
        rest = &after[gt + 1 + end + "</parameter>".len()..];
    }
    json::to_string(&json::object(pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(n: &str) -> bool {
        n == "read_file" || n == "list_dir"
    }

    #[test]
    fn tool_call_tags() {
        let e = extract(
            "Let me look.\n<tool_call>{\"name\":\"read_file\",\"arguments\":{\"path\":\"a.md\"}}</tool_call>",
            &known,
        );
        assert_eq!(e.calls.len(), 1);
        assert_eq!(e.calls[0].name, "read_file");
        assert_eq!(e.calls[0].arguments, r#"{"path":"a.md"}"#);
        assert_eq!(e.text, "Let me look.");
        let e = extract(
            "<toolcall>{\"tool\":\"list_dir\",\"args\":\"{\\\"path\\\":\\\".\\\"}\"}</toolcall>",
            &known,
        );
        assert_eq!(e.calls[0].name, "list_dir");
        assert_eq!(e.calls[0].arguments, r#"{"path":"."}"#);
    }

    #[test]
    fn invoke_forms() {
        let e = extract(
            "<invoke name=\"read_file\"><parameter name=\"path\">x.md</parameter></invoke>",
            &known,
        );
        assert_eq!(e.calls[0].arguments, r#"{"path":"x.md"}"#);
        let e = extract(
            "<invoke name=\"list_dir\">{\"path\":\"d\"}</invoke>",
            &known,
        );
        assert_eq!(e.calls[0].arguments, r#"{"path":"d"}"#);
        let e = extract("<invoke>{\"name\":\"list_dir\"}</invoke>", &known);
        assert_eq!(e.calls[0].arguments, "{}");
    }

    #[test]
    fn fenced_json_only_for_known_tools() {
        let e = extract(
            "Here:\n```json\n{\"tool\":\"read_file\",\"args\":{\"path\":\"a\"}}\n```\n",
            &known,
        );
        assert_eq!(e.calls.len(), 1);
        let example = "Example:\n```json\n{\"name\":\"Bob\",\"arguments\":{\"age\":3}}\n```";
        let e = extract(example, &known);
        assert!(e.calls.is_empty());
        assert_eq!(e.text, example);
    }

    #[test]
    fn prose_json_is_never_a_call() {
        for t in [
            "I would call {\"name\":\"read_file\",\"arguments\":{\"path\":\"a\"}} now",
            "use <tool_call> tags like this",
            "<tool_call>{\"name\":\"read_file\"",
            "<tool_call>not json</tool_call>",
            "<tool_callx>{\"name\":\"read_file\"}</tool_callx>",
        ] {
            assert!(extract(t, &known).calls.is_empty(), "{t}");
        }
    }

    #[test]
    fn random_text_never_panics() {
        let alphabet: Vec<char> = "<>/{}\"`:json tool_call invoke name= \n é😀"
            .chars()
            .collect();
        let mut x = crate::testkit::XorShift(88172645463325252);
        for _ in 0..5000 {
            let mut s = String::new();
            for _ in 0..x.below(64) {
                s.push(alphabet[x.index(alphabet.len())]);
            }
            // Properties: never more calls than the cap, only known tools, and the text
            // left for the user is never longer than what the model wrote.
            let e = extract(&s, &known);
            assert!(e.calls.len() <= MAX_TOOL_CALLS_PER_ANSWER);
            assert!(e.calls.iter().all(|c| known(&c.name)), "{s:?}");
            assert!(e.text.len() <= s.len(), "{s:?} -> {:?}", e.text);
        }
    }

    #[test]
    fn calls_are_capped() {
        let one = "<tool_call>{\"name\":\"list_dir\"}</tool_call>";
        let e = extract(&one.repeat(50), &known);
        assert_eq!(e.calls.len(), MAX_TOOL_CALLS_PER_ANSWER);
    }
}
