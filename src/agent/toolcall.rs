//! Tool calls written as text, and thinking, in a model's answer.
//!
//! Models without native tool calling, and servers that do not parse their template's
//! format, leave calls in the text. Only structured delimiters count, in the shapes local
//! chat templates produce (`formats` reads each body):
//! - `<tool_call>{json}</tool_call>` (Hermes, Qwen 2.5/3), `<toolcall>…`, `<invoke …>…`;
//! - Qwen3-Coder / Qwen3.5 `<tool_call><function=NAME><parameter=K>V</parameter>…
//!   </function></tool_call>`, also without the outer tag (Functionary: JSON after `>`);
//! - GLM `<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>`;
//! - Mistral `[TOOL_CALLS][{…}]` and `[TOOL_CALLS]NAME[ARGS]{…}`, Llama `<|python_tag|>{…}`:
//!   these have no closing tag and run to the end of the answer;
//! - DeepSeek `<｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜>` (V3/R1 fenced JSON, V3.1 inline);
//! - a fenced ```` ```json ```` block or a whole answer that is exactly one JSON object,
//!   `{"name": …, "arguments"|"parameters": …}` / `{"tool": …, "args": …}`, naming a
//!   known tool (Llama 3.x answers so).
//!
//! A block whose closing tag never came (the model stopped first) is read to the end of the
//! answer. A block with no readable call stays text, and JSON in the middle of prose is
//! text: JSON is never fished out of free prose. Names are not checked except where said:
//! an unknown name is still a call, which the tools answer with an error and never run.
//! Names are cut to `MAX_TOOL_NAME_CHARS`; arguments that are not JSON are passed on as
//! they are (the tools answer "not valid JSON").
//!
//! Thinking is removed: `<think>…</think>`, `<thinking>…</thinking>`, `[THINK]…[/THINK]`,
//! a block that never closes (the rest is thought), and the start of an answer that began
//! inside a block the template opened (text before a `</think>` with no `<think>`).
//! Markup inside thinking is never a call.
//!
//! One [`Scanner`] reads the whole answer ([`extract`]) and a stream of deltas
//! (`streaming::MarkupFilter`), so a stream shows what the final answer keeps. A scanner
//! told that the answer may start inside thinking (`prefix`) holds the start back until a
//! `</think>` or the end; `extract` always reads so.
//!
//! # Bounds
//! At most `MAX_TOOL_CALLS_PER_ANSWER` calls are taken from one answer. Scanning is linear
//! in the text and never recursive. A scanner holds back at most its `limit` bytes (plus
//! one delta): an undecided marker (at most `MAX_MARKER_BYTES`), a block until it ends, or
//! the answer while it may be one bare JSON call or may start inside a think block; past
//! the limit that text is dropped (only a tail that may hold the closing tag is kept).
//! `extract` has no limit: its text is already in memory (capped by the provider).
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O, no state between answers.

mod formats;

use crate::chat::ToolCall;
use crate::limits::MAX_TOOL_CALLS_PER_ANSWER;

/// Longest tool name kept; longer ones are cut (and can name no tool).
pub const MAX_TOOL_NAME_CHARS: usize = 64;
/// Longest marker (the DeepSeek ones, in bytes): the most held while undecided.
pub const MAX_MARKER_BYTES: usize = 32;

/// What was found in a text answer.
#[derive(Debug, Default, PartialEq)]
pub struct Extracted {
    pub calls: Vec<ToolCall>,
    /// The text with every recognised tool-call block and all thinking removed, trimmed.
    pub text: String,
    /// Thinking was removed.
    pub thought: bool,
}

/// Find tool calls in `text` and remove them and any thinking. `is_tool` says which names
/// exist (used for fenced blocks and whole-answer JSON, so an ordinary JSON example in an
/// answer is not mistaken for a call).
pub fn extract(text: &str, is_tool: &dyn Fn(&str) -> bool) -> Extracted {
    let mut s = Scanner::new(usize::MAX, true);
    let mut out = String::new();
    s.push(text, is_tool, &mut out);
    s.finish(is_tool, &mut out);
    Extracted {
        text: out.trim().to_string(),
        calls: s.calls,
        thought: s.thought,
    }
}

/// `text` without its thinking, tool-call markup kept (what history stores of a reply),
/// trimmed, and whether there was any thinking.
pub fn strip_thinking(text: &str) -> (String, bool) {
    let mut s = Scanner::new(usize::MAX, true);
    s.keep_calls = true;
    let mut out = String::new();
    s.push(text, &|_| false, &mut out);
    s.finish(&|_| false, &mut out);
    (out.trim().to_string(), s.thought)
}

/// The answer began inside a think block its template opened in the prompt: its first
/// `</think>` has no `<think>` before it.
pub fn starts_inside_think(text: &str) -> bool {
    text.find(THINK_END)
        .is_some_and(|i| !text[..i].contains(THINK_OPEN))
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// `<tool_call …>`: the name must be followed by `>` or a space.
    Tag,
    /// Qwen3-Coder `<function=NAME>` without the outer tag.
    Function,
    DeepSeek,
    /// Mistral `[TOOL_CALLS]`, Llama `<|python_tag|>`: to the end of the answer.
    ToEnd,
    /// A ```` ```json ```` fence: a call only when it names a known tool.
    Fence,
    /// An opened think block: dropped up to its closer, or to the end.
    Think,
    /// A think closer with no opener: dropped (the thought before it, when the answer
    /// starts with it).
    ThinkEnd,
    /// A tool-call closer with no opener: dropped.
    CallEnd,
}

struct Marker {
    open: &'static str,
    /// Empty: the block runs to the end of the answer.
    close: &'static str,
    kind: Kind,
}

const fn mk(open: &'static str, close: &'static str, kind: Kind) -> Marker {
    Marker { open, close, kind }
}

const THINK_OPEN: &str = "<think>";
const THINK_END: &str = "</think>";

/// Every marker starts with `<`, `[` or a backtick (the scanner's triggers).
const MARKERS: &[Marker] = &[
    mk("<tool_call", "</tool_call>", Kind::Tag),
    mk("<toolcall", "</toolcall>", Kind::Tag),
    mk("<invoke", "</invoke>", Kind::Tag),
    mk("<function=", "</function>", Kind::Function),
    mk(
        "<｜tool▁calls▁begin｜>",
        "<｜tool▁calls▁end｜>",
        Kind::DeepSeek,
    ),
    mk("<｜tool▁calls｜>", "<｜tool▁calls▁end｜>", Kind::DeepSeek),
    mk(
        "<｜tool▁call▁begin｜>",
        "<｜tool▁call▁end｜>",
        Kind::DeepSeek,
    ),
    mk("[TOOL_CALLS]", "", Kind::ToEnd),
    mk("<|python_tag|>", "", Kind::ToEnd),
    mk("```json", "```", Kind::Fence),
    mk(THINK_OPEN, THINK_END, Kind::Think),
    mk("<thinking>", "</thinking>", Kind::Think),
    mk("[THINK]", "[/THINK]", Kind::Think),
    mk(THINK_END, "", Kind::ThinkEnd),
    mk("</thinking>", "", Kind::ThinkEnd),
    mk("[/THINK]", "", Kind::ThinkEnd),
    mk("</tool_call>", "", Kind::CallEnd),
    mk("<｜tool▁calls▁end｜>", "", Kind::CallEnd),
];

/// What the held text starting at a trigger character turns out to be.
enum Held {
    /// Could still become a marker: wait for more text.
    Wait,
    /// Not a marker: its first character is ordinary text.
    Text,
    Open(&'static Marker),
}

fn classify(s: &str) -> Held {
    let b = s.as_bytes();
    let mut wait = false;
    for m in MARKERS {
        let o = m.open.as_bytes();
        let tag = m.kind == Kind::Tag;
        if b.len() > o.len() || (b.len() == o.len() && !tag) {
            let boundary = !tag || matches!(b.get(o.len()), Some(b'>' | b' ' | b'\n' | b'\t'));
            if b.starts_with(o) && boundary {
                return Held::Open(m);
            }
        } else if o.starts_with(b) {
            wait = true;
        }
    }
    if wait { Held::Wait } else { Held::Text }
}

#[derive(Clone, Copy)]
enum State {
    /// Ordinary text; `buf[pos..]` is unread.
    Text,
    /// A block opened by this marker starts at `pos`; waiting for its end.
    Block(&'static Marker),
    /// Dropping text up to this closer (empty: to the end); only a tail that may hold
    /// the start of the closer is kept.
    Drop(&'static str),
    /// Nothing visible yet and the answer starts with `{`: held until the end, when it is
    /// one call if it is exactly a JSON object naming a known tool.
    Whole,
    /// The answer may start inside a think block: held until a `</think>` or the end.
    Prefix,
}

/// Reads an answer, whole or in deltas, into visible text and tool calls.
pub struct Scanner {
    buf: String,
    /// Bytes of `buf` already read; dropped from `buf` after each push.
    pos: usize,
    state: State,
    /// Where the search for the current block's end resumes (index into `buf`).
    searched: usize,
    /// Visible text other than whitespace was given out.
    shown: bool,
    limit: usize,
    /// Tool-call markup stays in the text (only thinking is removed).
    keep_calls: bool,
    /// Each answer may start inside a think block: its start is held (`State::Prefix`).
    prefix: bool,
    /// At the end, a start still held (no `</think>` came) is thought, not the answer.
    unclosed_prefix_is_thought: bool,
    pub calls: Vec<ToolCall>,
    /// Calls found, including those past the cap (for ids).
    found: usize,
    pub thought: bool,
}

impl Scanner {
    /// A scanner holding back at most `limit` bytes; `prefix`: the answer may start inside
    /// a think block.
    pub fn new(limit: usize, prefix: bool) -> Scanner {
        Scanner {
            buf: String::new(),
            pos: 0,
            state: if prefix { State::Prefix } else { State::Text },
            searched: 0,
            shown: false,
            limit,
            keep_calls: false,
            prefix,
            unclosed_prefix_is_thought: false,
            calls: Vec::new(),
            found: 0,
            thought: false,
        }
    }

    /// Add a delta; the text now known to be visible is appended to `out`.
    pub fn push(&mut self, delta: &str, is_tool: &dyn Fn(&str) -> bool, out: &mut String) {
        self.buf.push_str(delta);
        self.run(is_tool, out, false);
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.searched = self.searched.saturating_sub(self.pos);
            self.pos = 0;
        }
    }

    /// The answer ended inside the think block its template opened (it was cut before its
    /// `</think>`): what is still held of its start is dropped as thought; then as `finish`.
    pub fn finish_in_thought(&mut self, is_tool: &dyn Fn(&str) -> bool, out: &mut String) {
        self.unclosed_prefix_is_thought = true;
        self.finish(is_tool, out);
    }

    /// Bytes held back now (read but not yet given out or dropped).
    pub fn held(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The answer ended: resolve what is held (an unclosed block is read to the end).
    /// The scanner is then ready for a new answer.
    pub fn finish(&mut self, is_tool: &dyn Fn(&str) -> bool, out: &mut String) {
        self.run(is_tool, out, true);
        self.unclosed_prefix_is_thought = false;
        self.buf.clear();
        self.pos = 0;
        self.searched = 0;
        self.state = if self.prefix {
            State::Prefix
        } else {
            State::Text
        };
        self.shown = false;
    }

    fn run(&mut self, is_tool: &dyn Fn(&str) -> bool, out: &mut String, end: bool) {
        loop {
            let rest = self.buf.get(self.pos..).unwrap_or("");
            match self.state {
                State::Text => {
                    if rest.is_empty() {
                        return;
                    }
                    if !self.shown && !self.keep_calls {
                        let t = rest.trim_start();
                        if t.starts_with('{') {
                            self.emit(rest.len() - t.len(), out);
                            self.state = State::Whole;
                            continue;
                        }
                    }
                    let Some(at) = rest.find(['<', '[', '`']) else {
                        self.emit(rest.len(), out);
                        return;
                    };
                    if at > 0 {
                        self.emit(at, out);
                        continue;
                    }
                    match classify(rest) {
                        Held::Wait if !end => return,
                        Held::Open(m) if !(self.keep_calls && m.kind == Kind::CallEnd) => {
                            self.open(m)
                        }
                        // Triggers are one byte.
                        _ => self.emit(1, out),
                    }
                }
                State::Block(m) => {
                    let body = self.pos + m.open.len();
                    let close = if m.close.is_empty() {
                        None
                    } else {
                        let from = resume_at(&self.buf, body, self.searched, m.close.len());
                        rest.get(from - self.pos..)
                            .and_then(|r| r.find(m.close))
                            .map(|i| from + i)
                    };
                    match close {
                        Some(c) => self.resolve(m, c, c + m.close.len(), true, is_tool, out),
                        None if end => {
                            let n = self.buf.len();
                            self.resolve(m, n, n, false, is_tool, out);
                        }
                        None if rest.len() > self.limit => {
                            self.pos = body;
                            self.state = State::Drop(m.close);
                        }
                        None => {
                            self.searched = self.buf.len();
                            return;
                        }
                    }
                }
                State::Drop(close) => {
                    if let Some(i) = rest.find(close).filter(|_| !close.is_empty()) {
                        self.pos += i + close.len();
                        self.state = State::Text;
                        continue;
                    }
                    let keep = if end {
                        0
                    } else {
                        close.len().saturating_sub(1)
                    };
                    let mut cut = rest.len().saturating_sub(keep);
                    while !rest.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    self.pos += cut;
                    return;
                }
                State::Whole => {
                    if end {
                        if let Some((name, args)) = formats::whole(rest.trim(), is_tool) {
                            self.add(&name, args);
                            self.pos = self.buf.len();
                        }
                        // Not a call: read it again as text.
                        self.shown = true;
                        self.state = State::Text;
                    } else if rest.len() > self.limit {
                        self.state = State::Drop("");
                    } else {
                        return;
                    }
                }
                State::Prefix => {
                    let from = resume_at(&self.buf, self.pos, self.searched, THINK_END.len());
                    let close = rest.get(from - self.pos..).and_then(|r| r.find(THINK_END));
                    if let Some(i) = close {
                        let c = from + i;
                        let opened = self
                            .buf
                            .get(self.pos..c)
                            .is_some_and(|t| t.contains(THINK_OPEN));
                        if !opened {
                            self.pos = c + THINK_END.len();
                            self.thought = true;
                        }
                        self.state = State::Text;
                    } else if end && self.unclosed_prefix_is_thought {
                        self.pos = self.buf.len();
                        self.thought = true;
                        return;
                    } else if end {
                        self.state = State::Text;
                    } else if rest.len() > self.limit {
                        self.thought = true;
                        self.state = State::Drop(THINK_END);
                    } else {
                        self.searched = self.buf.len();
                        return;
                    }
                }
            }
        }
    }

    /// A marker starts at `pos`.
    fn open(&mut self, m: &'static Marker) {
        match m.kind {
            Kind::Think => {
                self.pos += m.open.len();
                self.thought = true;
                self.state = State::Drop(m.close);
            }
            Kind::ThinkEnd | Kind::CallEnd => self.pos += m.open.len(),
            _ => {
                self.state = State::Block(m);
                self.searched = self.pos + m.open.len();
            }
        }
    }

    /// The block from `pos` to `stop` (its body ends at `body_end`): calls, or text.
    fn resolve(
        &mut self,
        m: &'static Marker,
        body_end: usize,
        stop: usize,
        closed: bool,
        is_tool: &dyn Fn(&str) -> bool,
        out: &mut String,
    ) {
        let body = self
            .buf
            .get(self.pos + m.open.len()..body_end)
            .unwrap_or("");
        let mut found = Vec::new();
        match m.kind {
            Kind::Tag => formats::tag(body, closed, &mut found),
            Kind::Function => formats::function(body, closed, &mut found),
            Kind::DeepSeek => formats::deepseek(body, &mut found),
            Kind::ToEnd if m.open.starts_with('[') => formats::mistral(body, &mut found),
            Kind::ToEnd => formats::python_tag(body, &mut found),
            Kind::Fence if closed => formats::fence(body, is_tool, &mut found),
            _ => {}
        }
        self.state = State::Text;
        if found.is_empty() || self.keep_calls {
            self.emit(stop - self.pos, out);
            return;
        }
        for (name, args) in found {
            self.add(&name, args);
        }
        self.pos = stop;
    }

    fn add(&mut self, name: &str, arguments: String) {
        if self.calls.len() < MAX_TOOL_CALLS_PER_ANSWER {
            self.calls.push(ToolCall {
                id: format!("text_call_{}", self.found),
                name: clean_name(name),
                arguments,
            });
        }
        self.found += 1;
    }

    /// Give out the next `n` bytes as visible text.
    fn emit(&mut self, n: usize, out: &mut String) {
        let end = (self.pos + n).min(self.buf.len());
        let s = self.buf.get(self.pos..end).unwrap_or("");
        self.shown |= !s.trim().is_empty();
        out.push_str(s);
        self.pos = end;
    }
}

/// A name as the tools will see it: at most `MAX_TOOL_NAME_CHARS` (then `…`), characters
/// that no tool name has replaced by `?` (it stays readable in the error and in the
/// `<tool_result name="…">` sent back).
fn clean_name(name: &str) -> String {
    let name = name.trim();
    let mut out: String = name
        .chars()
        .take(MAX_TOOL_NAME_CHARS)
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':') {
                c
            } else {
                '?'
            }
        })
        .collect();
    if name.chars().nth(MAX_TOOL_NAME_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// Where to resume a search for a `needle_len`-byte needle: not before `min`, and at
/// most `needle_len - 1` bytes back from what was searched, on a char boundary.
fn resume_at(s: &str, min: usize, searched: usize, needle_len: usize) -> usize {
    let mut from = searched
        .saturating_sub(needle_len.saturating_sub(1))
        .max(min)
        .min(s.len());
    while !s.is_char_boundary(from) {
        from -= 1;
    }
    from.max(min).min(s.len())
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
    fn a_whole_json_answer_is_a_call_only_for_a_known_tool() {
        let call = r#"{"name": "read_file", "parameters": {"path": "a"}}"#;
        let e = extract(&format!("\n {call}\n"), &known);
        assert_eq!(e.calls.len(), 1);
        assert_eq!(e.calls[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(e.text, "");
        // Unknown name, or anything beside the object: text.
        let other = r#"{"name": "Bob", "parameters": {}}"#;
        assert_eq!(extract(other, &known).text, other);
        let e = extract(&format!("{call} is how you would call it"), &known);
        assert!(e.calls.is_empty());
    }

    #[test]
    fn prose_json_is_never_a_call() {
        for t in [
            "I would call {\"name\":\"read_file\",\"arguments\":{\"path\":\"a\"}} now",
            "use <tool_call> tags like this",
            "<tool_call>not json</tool_call>",
            "<tool_callx>{\"name\":\"read_file\"}</tool_callx>",
            "a list [TOOL_CALLED] and [TOOL_CALLS] not json at all",
            "Reply: {\"name\":\"read_file\"} and more",
        ] {
            let e = extract(t, &known);
            assert!(e.calls.is_empty(), "{t}");
            assert_eq!(e.text, t, "{t}");
        }
    }

    #[test]
    fn an_unclosed_last_block_is_read_to_the_end() {
        let e = extract(
            "Sure.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}",
            &known,
        );
        assert_eq!(e.calls.len(), 1, "{e:?}");
        assert_eq!(e.text, "Sure.");
        let e = extract(
            "<tool_call>\n<function=list_dir>\n<parameter=path>\n.\n</parameter>\n",
            &known,
        );
        assert_eq!(e.calls[0].arguments, r#"{"path":"."}"#);
        // Half a JSON object cannot be read: it stays text.
        let t = "<tool_call>{\"name\": \"read_file\", \"argu";
        assert_eq!(extract(t, &known).text, t);
    }

    #[test]
    fn a_ten_thousand_character_name_is_one_unknown_call() {
        let name = "x".repeat(10_000);
        for text in [
            format!("<tool_call>{{\"name\":\"{name}\",\"arguments\":{{}}}}</tool_call>"),
            format!(
                "<tool_call>{name}\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>"
            ),
            format!("[TOOL_CALLS]{name}[ARGS]{{}}"),
        ] {
            let e = extract(&text, &known);
            assert_eq!(e.calls.len(), 1);
            let n = &e.calls[0].name;
            assert_eq!(n.chars().count(), MAX_TOOL_NAME_CHARS + 1, "{n}");
            assert!(n.ends_with('…') && !known(n));
            assert_eq!(e.text, "");
        }
        // Characters no name has cannot break the result markup.
        let e = extract("<tool_call>{\"name\":\"a\\\">b\"}</tool_call>", &known);
        assert_eq!(e.calls[0].name, "a??b");
    }

    #[test]
    fn arguments_that_are_not_json_reach_the_tool_as_written() {
        let e = extract("[TOOL_CALLS]read_file[ARGS]path=a.md", &known);
        assert_eq!(e.calls[0].arguments, "path=a.md");
        let e = extract(
            "<tool_call>{\"name\":\"read_file\",\"arguments\":\"{path: a}\"}</tool_call>",
            &known,
        );
        assert_eq!(e.calls[0].arguments, "{path: a}");
        let e = extract(
            "<tool_call>{\"name\":\"read_file\",\"arguments\":5}</tool_call>",
            &known,
        );
        assert_eq!(e.calls[0].arguments, "5");
    }

    #[test]
    fn thinking_is_removed_and_its_markup_is_no_call() {
        let e = extract(
            "<think>maybe <tool_call>{\"name\":\"read_file\"}</tool_call></think>Hi",
            &known,
        );
        assert!(e.calls.is_empty() && e.thought);
        assert_eq!(e.text, "Hi");
        let e = extract("I'm\nthinking</think>Hello, world!", &known);
        assert_eq!(e.text, "Hello, world!");
        assert!(e.thought);
        let e = extract("<think>a</think>b</think>c", &known);
        assert_eq!(e.text, "bc");
        let e = extract("no thinking here", &known);
        assert!(!e.thought);
        let (kept, thought) = strip_thinking("<think>x</think><tool_call>{}</tool_call>");
        assert_eq!(kept, "<tool_call>{}</tool_call>");
        assert!(thought);
    }

    #[test]
    fn calls_are_capped() {
        let one = "<tool_call>{\"name\":\"list_dir\"}</tool_call>";
        let e = extract(&one.repeat(50), &known);
        assert_eq!(e.calls.len(), MAX_TOOL_CALLS_PER_ANSWER);
        assert_eq!(e.text, "");
        let many = format!("[TOOL_CALLS]{}", "list_dir[ARGS]{}[TOOL_CALLS]".repeat(50));
        assert_eq!(
            extract(&many, &known).calls.len(),
            MAX_TOOL_CALLS_PER_ANSWER
        );
    }

    #[test]
    fn markers_start_with_a_trigger_and_fit_the_hold() {
        for m in MARKERS {
            assert!(m.open.starts_with(['<', '[', '`']), "{}", m.open);
            assert!(m.open.len() <= MAX_MARKER_BYTES, "{}", m.open);
            assert!(m.close.len() <= MAX_MARKER_BYTES, "{}", m.close);
        }
    }

    #[test]
    fn a_bare_function_tag_in_prose_is_no_call() {
        let t = "Write <function=name> to call it";
        assert_eq!(extract(t, &known).text, t);
        let e = extract("<function=list_dir>\n<parameter=path>\n.", &known);
        assert_eq!(e.calls[0].arguments, r#"{"path":"."}"#);
    }

    #[test]
    fn random_text_never_panics() {
        let alphabet: Vec<char> =
            "<>/{}[]\"`:json tool_call TOOL_CALLS ARGS think =｜▁ invoke name= \né😀"
                .chars()
                .collect();
        let mut x = crate::testkit::XorShift(88172645463325252);
        for _ in 0..5000 {
            let mut s = String::new();
            for _ in 0..x.below(64) {
                s.push(alphabet[x.index(alphabet.len())]);
            }
            // Properties: never more calls than the cap, names never empty nor long, and
            // the text left for the user is never longer than what the model wrote.
            let e = extract(&s, &known);
            assert!(e.calls.len() <= MAX_TOOL_CALLS_PER_ANSWER);
            assert!(
                e.calls
                    .iter()
                    .all(|c| !c.name.is_empty() && c.name.chars().count() <= 65),
                "{s:?}"
            );
            assert!(e.text.len() <= s.len(), "{s:?} -> {:?}", e.text);
        }
    }
}
