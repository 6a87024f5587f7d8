//! A small TOML reader for the peers' config files (ZeroClaw's `config.toml`), building
//! the same `json::Value` tree the JSON peers produce, so every peer reader works on one
//! shape.
//!
//! It reads the subset those files use: `[tables]` and `[[arrays of tables]]`, bare,
//! quoted and dotted keys, basic and literal strings on one line, integers, booleans,
//! arrays of scalars or of one-level inline tables (over several lines, with comments and
//! a trailing comma), and inline tables whose values are scalars or arrays of scalars.
//! Floats and dates are kept as their text (no peer setting migrate reads is one).
//! Anything else (multi-line strings, nested arrays, bare words) is refused with its line
//! and column, never guessed at.
//!
//! # Bounds
//! No unbounded recursion: values nest at most three calls deep (array → inline table →
//! array of scalars), held by a flag. Keys have at most `MAX_TOML_KEY_PARTS` parts. The
//! caller bounds the input size.

use miniserde::json::{Array, Number, Object, Value};
use std::fmt;

/// Most dotted parts in one key or table header.
pub const MAX_TOML_KEY_PARTS: usize = 16;

/// Why a file was refused, with a 1-based line and column (bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TomlError {
    pub line: usize,
    pub column: usize,
    pub message: &'static str,
}

impl fmt::Display for TomlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for TomlError {}

struct Cur<'a> {
    b: &'a [u8],
    i: usize,
    line: usize,
    line_start: usize,
}

type R<T> = Result<T, TomlError>;

/// Parse TOML text into an object value.
pub fn parse(text: &str) -> R<Value> {
    let mut c = Cur {
        b: text.as_bytes(),
        i: 0,
        line: 1,
        line_start: 0,
    };
    let mut root = Object::new();
    let mut table: Vec<String> = Vec::new();
    loop {
        c.skip_blank_lines();
        let Some(ch) = c.peek() else { break };
        if ch == b'[' {
            c.i += 1;
            let array = c.eat(b'[');
            let path = c.key()?;
            if !c.eat(b']') || (array && !c.eat(b']')) {
                return c.err("expected `]` after the table name");
            }
            let (last, parents) = path.split_last().ok_or_else(|| c.fail("empty key"))?;
            let parent = table_mut(&mut root, parents).map_err(|m| c.fail(m))?;
            if array {
                if !parent.contains_key(last) {
                    parent.insert(last.clone(), Value::Array(Array::new()));
                }
                match parent.get_mut(last) {
                    Some(Value::Array(a)) => a.push(Value::Object(Object::new())),
                    _ => return c.err("key already holds a value"),
                }
            } else {
                table_mut(parent, std::slice::from_ref(last)).map_err(|m| c.fail(m))?;
            }
            table = path;
        } else {
            let key = c.key()?;
            if !c.eat(b'=') {
                return c.err("expected `=` after the key");
            }
            c.skip_ws();
            let v = c.value()?;
            let t = table_mut(&mut root, &table).map_err(|m| c.fail(m))?;
            insert(t, &key, v).map_err(|m| c.fail(m))?;
        }
        c.end_of_line()?;
    }
    Ok(Value::Object(root))
}

/// The table at `path` below `root`, created as needed; an array of tables stands for
/// its last element.
fn table_mut<'a>(root: &'a mut Object, path: &[String]) -> Result<&'a mut Object, &'static str> {
    let mut cur = root;
    for k in path {
        if !cur.contains_key(k) {
            cur.insert(k.clone(), Value::Object(Object::new()));
        }
        cur = match cur.get_mut(k) {
            Some(Value::Object(o)) => o,
            Some(Value::Array(a)) => match a.last_mut() {
                Some(Value::Object(o)) => o,
                _ => return Err("key is not a table"),
            },
            _ => return Err("key already holds a value"),
        };
    }
    Ok(cur)
}

fn insert(t: &mut Object, key: &[String], v: Value) -> Result<(), &'static str> {
    let (last, parents) = key.split_last().ok_or("empty key")?;
    let t = table_mut(t, parents)?;
    if t.contains_key(last) {
        return Err("duplicate key");
    }
    t.insert(last.clone(), v);
    Ok(())
}

impl Cur<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn fail(&self, message: &'static str) -> TomlError {
        TomlError {
            line: self.line,
            column: self.i.saturating_sub(self.line_start) + 1,
            message,
        }
    }

    fn err<T>(&self, message: &'static str) -> R<T> {
        Err(self.fail(message))
    }

    fn eat(&mut self, ch: u8) -> bool {
        self.skip_ws();
        if self.peek() == Some(ch) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn newline(&mut self) {
        self.i += 1;
        self.line += 1;
        self.line_start = self.i;
    }

    /// Spaces, comments and line ends (inside arrays and between lines).
    fn skip_blank_lines(&mut self) {
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b'#') => {
                    while !matches!(self.peek(), None | Some(b'\n')) {
                        self.i += 1;
                    }
                }
                Some(b'\n') => self.newline(),
                Some(b'\r') if self.b.get(self.i + 1) == Some(&b'\n') => self.i += 1,
                _ => return,
            }
        }
    }

    fn end_of_line(&mut self) -> R<()> {
        self.skip_ws();
        match self.peek() {
            None | Some(b'\n' | b'\r' | b'#') => Ok(()),
            _ => self.err("expected the end of the line"),
        }
    }

    /// `a.b."c d".'e'`
    fn key(&mut self) -> R<Vec<String>> {
        let mut parts = Vec::new();
        loop {
            self.skip_ws();
            let part = match self.peek() {
                Some(b'"' | b'\'') => self.string()?,
                _ => {
                    let start = self.i;
                    while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
                    {
                        self.i += 1;
                    }
                    if start == self.i {
                        return self.err("expected a key");
                    }
                    String::from_utf8_lossy(&self.b[start..self.i]).into_owned()
                }
            };
            parts.push(part);
            if parts.len() > MAX_TOML_KEY_PARTS {
                return self.err("key has too many dotted parts");
            }
            if !self.eat(b'.') {
                return Ok(parts);
            }
        }
    }

    /// A value; arrays and inline tables nest at most three calls deep (array → inline
    /// table → array of scalars), by the `tables` flag, never further.
    fn value(&mut self) -> R<Value> {
        match self.peek() {
            Some(b'[') => self.array(true),
            Some(b'{') => self.inline_table(),
            _ => self.scalar(),
        }
    }

    /// An array of scalars, or (`tables`) of scalars and inline tables.
    fn array(&mut self, tables: bool) -> R<Value> {
        self.i += 1; // `[`
        let mut out = Array::new();
        loop {
            self.skip_blank_lines();
            let v = match self.peek() {
                Some(b']') => {
                    self.i += 1;
                    return Ok(Value::Array(out));
                }
                Some(b'{') if tables => self.inline_table()?,
                Some(b'[' | b'{') => return self.err("nested arrays are not supported"),
                _ => self.scalar()?,
            };
            out.push(v);
            self.skip_blank_lines();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {}
                _ => return self.err("expected `,` or `]` in the array"),
            }
        }
    }

    /// `{ a = 1, b.c = "x", d = [1, 2] }` on one line.
    fn inline_table(&mut self) -> R<Value> {
        self.i += 1; // `{`
        let mut t = Object::new();
        if self.eat(b'}') {
            return Ok(Value::Object(t));
        }
        loop {
            let key = self.key()?;
            if !self.eat(b'=') {
                return self.err("expected `=` after the key");
            }
            self.skip_ws();
            let v = match self.peek() {
                Some(b'[') => self.array(false)?,
                Some(b'{') => return self.err("nested inline tables are not supported"),
                _ => self.scalar()?,
            };
            insert(&mut t, &key, v).map_err(|m| self.fail(m))?;
            if self.eat(b'}') {
                return Ok(Value::Object(t));
            }
            if !self.eat(b',') {
                return self.err("expected `,` or `}` in the inline table");
            }
        }
    }

    fn scalar(&mut self) -> R<Value> {
        match self.peek() {
            Some(b'"' | b'\'') => self.string().map(Value::String),
            _ => self.bare(),
        }
    }

    /// A basic (`"`, with escapes) or literal (`'`) string on one line.
    fn string(&mut self) -> R<String> {
        let q = self.b[self.i];
        if self.b[self.i..].starts_with(&[q, q, q]) {
            return self.err("multi-line strings are not supported");
        }
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return self.err("unterminated string");
            };
            self.i += 1;
            let c = match c {
                _ if c == q => break,
                b'\n' | b'\r' => return self.err("unterminated string"),
                b'\\' if q == b'"' => {
                    let e = self.peek().unwrap_or(0);
                    self.i += 1;
                    match e {
                        b'n' => b'\n',
                        b't' => b'\t',
                        b'r' => b'\r',
                        b'b' => 8,
                        b'f' => 12,
                        b'"' | b'\\' => e,
                        b'u' => {
                            let hex = self.b.get(self.i..self.i + 4).unwrap_or(b"");
                            let c = std::str::from_utf8(hex)
                                .ok()
                                .and_then(|h| u32::from_str_radix(h, 16).ok())
                                .and_then(char::from_u32);
                            let Some(c) = c.filter(|_| hex.len() == 4) else {
                                return self.err("invalid escape in string");
                            };
                            self.i += 4;
                            out.extend_from_slice(c.encode_utf8(&mut [0u8; 4]).as_bytes());
                            continue;
                        }
                        _ => return self.err("invalid escape in string"),
                    }
                }
                c if c < 0x20 && c != b'\t' => return self.err("control character in string"),
                c => c,
            };
            out.push(c);
        }
        String::from_utf8(out).map_err(|_| self.fail("string is not UTF-8"))
    }

    /// Booleans, integers, and numbers of other forms and dates kept as text.
    fn bare(&mut self) -> R<Value> {
        let start = self.i;
        while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || b"+-._:".contains(&c)) {
            self.i += 1;
        }
        let tok = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("");
        match tok {
            "true" => return Ok(Value::Bool(true)),
            "false" => return Ok(Value::Bool(false)),
            _ => {}
        }
        if !tok.starts_with(|c: char| c.is_ascii_digit() || c == '+' || c == '-') {
            self.i = start;
            return self.err("expected a value (string, number, true or false)");
        }
        Ok(match tok.replace('_', "").parse::<i64>() {
            Ok(n) => Value::Number(Number::I64(n)),
            Err(_) => Value::String(tok.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    fn p(text: &str) -> Value {
        parse(text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    fn err(text: &str) -> TomlError {
        parse(text).expect_err(text)
    }

    #[test]
    fn reads_what_the_peers_write() {
        let v = p(r#"
# comment
api_key = "sk-test-1" # trailing
default_model = 'anthropic/claude-sonnet-4'
default_temperature = 0.7
schema_version = 3
big = 1_000
neg = -5
on = true
when = 2026-01-02T03:04:05Z

[model_providers."anthropic-custom:https://x.test/a"]
name = "anthropic-custom"

[channels_config.telegram]
bot_token = "123:ABC"
allowed_users = ["@ada", "12345",
  # comment in an array
  "67",
]

[[cron.jobs]]
id = "a"
schedule = { kind = "cron", expr = "0 7 * * *", tz = "UTC", tags = ["x", "y"] }

[[cron.jobs]]
id = "b"
schedule.kind = "every"
schedule.every_ms = 60000
rules = [{ hint = "fast" }, {}]
esc = "tab\there \"q\" \u00e9"
"#);
        assert_eq!(json::str_at(&v, "api_key"), Some("sk-test-1"));
        assert_eq!(
            json::str_at(&v, "default_model"),
            Some("anthropic/claude-sonnet-4")
        );
        assert_eq!(json::str_at(&v, "default_temperature"), Some("0.7"));
        assert_eq!(json::get(&v, "big").and_then(json::as_u64), Some(1000));
        assert_eq!(json::get(&v, "neg").and_then(json::as_i64), Some(-5));
        assert_eq!(json::get(&v, "on").and_then(json::as_bool), Some(true));
        assert_eq!(json::str_at(&v, "when"), Some("2026-01-02T03:04:05Z"));
        let key = "anthropic-custom:https://x.test/a";
        assert!(json::path(&v, &["model_providers", key, "name"]).is_some());
        let users = json::path(&v, &["channels_config", "telegram", "allowed_users"]);
        assert_eq!(users.and_then(json::as_array).map(|a| a.len()), Some(3));
        let jobs = json::path(&v, &["cron", "jobs"])
            .and_then(json::as_array)
            .unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(
            json::path(&jobs[0], &["schedule", "expr"]).and_then(json::as_str),
            Some("0 7 * * *")
        );
        assert_eq!(
            json::path(&jobs[1], &["schedule", "every_ms"]).and_then(json::as_u64),
            Some(60000)
        );
        assert_eq!(json::str_at(&jobs[1], "esc"), Some("tab\there \"q\" é"));
    }

    #[test]
    fn refuses_the_rest_with_a_position() {
        assert_eq!(
            err("a = 1\nb = \"\"\"x\"\"\"\n"),
            TomlError {
                line: 2,
                column: 5,
                message: "multi-line strings are not supported"
            }
        );
        assert_eq!(
            err("a = [[1], [2]]").message,
            "nested arrays are not supported"
        );
        assert_eq!(
            err("a = inf").message,
            "expected a value (string, number, true or false)"
        );
        assert_eq!(err("a = inf").column, 5);
        assert_eq!(err("a = \"\\x\"").message, "invalid escape in string");
        assert_eq!(err("a = 1\na = 2").message, "duplicate key");
        assert_eq!(err("a = 1 b = 2").message, "expected the end of the line");
        assert_eq!(err("a = \"open").message, "unterminated string");
        assert_eq!(
            err("[a\nb = 1").message,
            "expected `]` after the table name"
        );
        assert_eq!(err("a = 1\n[a]").message, "key already holds a value");
        assert_eq!(
            err("x = { y = { z = 1 } }").message,
            "nested inline tables are not supported"
        );
        assert_eq!(err("= 1").message, "expected a key");
        let deep = format!("{} = 1", vec!["k"; 40].join("."));
        assert_eq!(err(&deep).message, "key has too many dotted parts");
    }

    #[test]
    fn garbage_never_panics_and_errors_point_inside_the_text() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let alphabet = b"ab=\"'[]{},.#\n \\u0123_-+:xtf";
        for _ in 0..2000 {
            let mut s = Vec::new();
            for _ in 0..(seed % 60) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                s.push(alphabet[(seed % alphabet.len() as u64) as usize]);
            }
            let text = String::from_utf8_lossy(&s).into_owned();
            if let Err(e) = parse(&text) {
                assert!(
                    e.line >= 1 && e.line <= text.lines().count().max(1) + 1,
                    "{e} {text:?}"
                );
                assert!(e.column >= 1 && e.column <= text.len() + 1, "{e} {text:?}");
            }
        }
    }
}
