//! Export and import formats: JSON lines (`{"category","created","key","text","updated"}`,
//! one memory per line) and plain markdown (one memory per bullet or paragraph, headings
//! skipped) for owners migrating a `MEMORY.md`.
//!
//! Both readers work one line at a time, so an import never holds the whole file.
//!
//! # Bounds
//! Lines are read up to `MAX_IMPORT_LINE_BYTES` (the rest of a longer line is dropped and
//! the line reported as too long). A markdown memory stops growing one byte past
//! `MAX_MEMORY_TEXT_BYTES`, so the store refuses it instead of RAM filling up.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use crate::json;
use crate::store::memory::{Category, MAX_MEMORY_TEXT_BYTES, Memory};
use std::io::BufRead;

/// Longest import line read.
pub const MAX_IMPORT_LINE_BYTES: usize = 64 * 1024;

/// One JSON line of an export.
pub fn to_json_line(m: &Memory) -> String {
    json::to_string(&json::object([
        ("key", json::string(m.key.clone())),
        ("text", json::string(m.text.clone())),
        ("category", json::string(m.category.as_str())),
        ("created", int(m.created)),
        ("updated", int(m.updated)),
    ]))
}

fn int(n: i64) -> miniserde::json::Value {
    miniserde::json::Value::Number(miniserde::json::Number::I64(n))
}

/// A memory read from an import file; missing parts are filled in by the importer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: Option<String>,
    pub text: String,
    pub category: Category,
    pub created: Option<i64>,
    pub updated: Option<i64>,
}

impl Entry {
    pub fn text(text: String) -> Entry {
        Entry {
            key: None,
            text,
            category: Category::Core,
            created: None,
            updated: None,
        }
    }
}

/// Parse one JSON line. Only `text` is required; `category` defaults to `core`.
pub fn parse_json_line(line: &str) -> Result<Entry, String> {
    let v = json::parse_value(line).map_err(|e| format!("not valid JSON ({e})"))?;
    if json::as_object(&v).is_none() {
        return Err("not a JSON object".into());
    }
    let text = json::str_at(&v, "text")
        .ok_or("no \"text\" string")?
        .to_string();
    let key = match json::get(&v, "key") {
        None | Some(miniserde::json::Value::Null) => None,
        Some(k) => Some(
            json::as_str(k)
                .ok_or("\"key\" is not a string")?
                .to_string(),
        ),
    };
    let category = match json::get(&v, "category") {
        None | Some(miniserde::json::Value::Null) => Category::Core,
        Some(c) => {
            let name = json::as_str(c).ok_or("\"category\" is not a string")?;
            Category::parse(name).ok_or_else(|| format!("unknown category {name:?}"))?
        }
    };
    let time = |k: &str| -> Result<Option<i64>, String> {
        match json::get(&v, k) {
            None | Some(miniserde::json::Value::Null) => Ok(None),
            Some(t) => json::as_i64(t)
                .map(Some)
                .ok_or_else(|| format!("\"{k}\" is not a whole number of seconds")),
        }
    };
    Ok(Entry {
        key,
        text,
        category,
        created: time("created")?,
        updated: time("updated")?,
    })
}

/// Read one line (without its end) into `buf`, at most `max` bytes of it. Returns
/// `None` at end of input, else whether the line was longer than `max`.
pub fn read_line_bounded(
    r: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<bool>> {
    buf.clear();
    let mut too_long = false;
    let mut any = false;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        let room = max.saturating_sub(buf.len());
        if part.len() > room {
            too_long = true;
        }
        buf.extend_from_slice(&part[..part.len().min(room)]);
        let used = done.unwrap_or(chunk.len());
        r.consume(used);
        if done.is_some() {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(Some(too_long))
}

/// Markdown to memories, one line at a time: every bullet (`-`, `*`, `+`, `1.`, `1)`)
/// and every paragraph becomes one memory; headings, rules, HTML comments, fence markers
/// and blank lines end the current one and are skipped.
#[derive(Default)]
pub struct Markdown {
    cur: String,
    /// Line number where `cur` started.
    start: usize,
    /// Lines fed so far.
    line_no: usize,
    in_comment: bool,
}

impl Markdown {
    /// Feed the next line; returns the memory it completed, if any, with the number
    /// (from 1) of the line where that memory started.
    pub fn line(&mut self, line: &str) -> Option<(usize, String)> {
        self.line_no += 1;
        let t = line.trim();
        if self.in_comment {
            if t.contains("-->") {
                self.in_comment = false;
            }
            return None;
        }
        if t.starts_with("<!--") {
            if !t.contains("-->") {
                self.in_comment = true;
            }
            return self.finish();
        }
        if t.is_empty() || t.starts_with('#') || is_rule(t) || t.starts_with("```") {
            return self.finish();
        }
        if let Some(rest) = bullet(t) {
            let done = self.finish();
            self.push(rest);
            return done;
        }
        self.push(t);
        None
    }

    /// The memory in progress at end of input (and its first line's number).
    pub fn finish(&mut self) -> Option<(usize, String)> {
        let t = std::mem::take(&mut self.cur);
        let t = t.trim();
        if t.is_empty() {
            None
        } else {
            Some((self.start, t.to_string()))
        }
    }

    fn push(&mut self, text: &str) {
        if self.cur.is_empty() {
            self.start = self.line_no;
        }
        if self.cur.len() > MAX_MEMORY_TEXT_BYTES {
            return;
        }
        if !self.cur.is_empty() {
            self.cur.push(' ');
        }
        let room = MAX_MEMORY_TEXT_BYTES + 1 - self.cur.len().min(MAX_MEMORY_TEXT_BYTES);
        let mut end = text.len().min(room);
        while end > 0 && !text.is_char_boundary(end) {
            end -= 1;
        }
        if end < text.len() {
            // Keep it one byte over so the store refuses it as too long.
            self.cur.push_str(text.get(..end).unwrap_or(""));
            while self.cur.len() <= MAX_MEMORY_TEXT_BYTES {
                self.cur.push('…');
            }
        } else {
            self.cur.push_str(text);
        }
    }
}

fn is_rule(t: &str) -> bool {
    t.len() >= 3
        && (t.chars().all(|c| c == '-' || c == ' ')
            || t.chars().all(|c| c == '*' || c == ' ')
            || t.chars().all(|c| c == '_' || c == ' '))
}

/// The text after a list marker (and an optional `[ ]`/`[x]` checkbox).
fn bullet(t: &str) -> Option<&str> {
    let rest = if let Some(r) = t
        .strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .or_else(|| t.strip_prefix("+ "))
    {
        r
    } else {
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        let r = t.get(digits..)?;
        r.strip_prefix(". ").or_else(|| r.strip_prefix(") "))?
    };
    let rest = rest.trim_start();
    let rest = ["[ ] ", "[x] ", "[X] "]
        .iter()
        .find_map(|b| rest.strip_prefix(b))
        .unwrap_or(rest);
    Some(rest.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(text: &str) -> Vec<String> {
        let mut m = Markdown::default();
        let mut out: Vec<(usize, String)> = text.lines().filter_map(|l| m.line(l)).collect();
        out.extend(m.finish());
        out.into_iter().map(|(_, t)| t).collect()
    }

    #[test]
    fn markdown_memories_know_their_first_line() {
        let mut m = Markdown::default();
        let text = "# T

para one
continued
- bullet
";
        let mut out: Vec<(usize, String)> = text.lines().filter_map(|l| m.line(l)).collect();
        out.extend(m.finish());
        assert_eq!(
            out,
            [
                (3, "para one continued".to_string()),
                (5, "bullet".to_string())
            ]
        );
    }

    #[test]
    fn markdown_bullets_and_paragraphs_become_memories() {
        let text = "# MEMORY\n\n## Owner\n- Name is Ada\n- Likes green tea,\n  no sugar\n* [x] Has a cat\n1. First item\n2) Second item\n\nA paragraph that goes\non two lines.\n\n---\n<!-- a comment\nspanning lines -->\n<!-- one line -->\nLast words";
        assert_eq!(
            md(text),
            [
                "Name is Ada",
                "Likes green tea, no sugar",
                "Has a cat",
                "First item",
                "Second item",
                "A paragraph that goes on two lines.",
                "Last words"
            ]
        );
        assert!(md("").is_empty());
        assert!(md("# only\n## headings\n\n").is_empty());
    }

    #[test]
    fn a_huge_paragraph_stays_bounded() {
        let text = "word ".repeat(100_000);
        let mut m = Markdown::default();
        for _ in 0..1000 {
            assert!(m.line(&text).is_none());
        }
        let (_, t) = m.finish().unwrap();
        assert!(t.len() > MAX_MEMORY_TEXT_BYTES && t.len() < MAX_MEMORY_TEXT_BYTES + 8);
    }

    #[test]
    fn json_lines_round_trip() {
        let m = Memory {
            key: "k \"q\"".into(),
            text: "line\nbreak é 🎉".into(),
            category: Category::Conversation,
            created: -5,
            updated: 1_800_000_000,
        };
        let line = to_json_line(&m);
        assert!(!line.contains('\n'));
        let e = parse_json_line(&line).unwrap();
        assert_eq!(e.key.as_deref(), Some("k \"q\""));
        assert_eq!(e.text, m.text);
        assert_eq!(e.category, Category::Conversation);
        assert_eq!((e.created, e.updated), (Some(-5), Some(1_800_000_000)));
        let e = parse_json_line(r#"{"text":"only text"}"#).unwrap();
        assert_eq!(e, Entry::text("only text".into()));
        for bad in [
            "{",
            "[]",
            r#"{"key":"k"}"#,
            r#"{"text":"t","category":"weekly"}"#,
            r#"{"text":"t","created":"yesterday"}"#,
            r#"{"text":5}"#,
        ] {
            assert!(parse_json_line(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bounded_line_reader() {
        let data = b"short\r\nsecond line\n\nxxxxxxxxxxxxxxxxxxxx\nlast";
        let mut r = std::io::BufReader::with_capacity(4, &data[..]);
        let mut buf = Vec::new();
        let mut got = Vec::new();
        while let Some(long) = read_line_bounded(&mut r, &mut buf, 10).unwrap() {
            got.push((String::from_utf8_lossy(&buf).into_owned(), long));
        }
        assert_eq!(
            got,
            [
                ("short".to_string(), false),
                ("second lin".to_string(), true),
                (String::new(), false),
                ("xxxxxxxxxx".to_string(), true),
                ("last".to_string(), false),
            ]
        );
    }
}
