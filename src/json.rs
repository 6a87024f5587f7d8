//! JSON for the whole program: a one-pass reader that builds miniserde's `json::Value`
//! while it checks the syntax (miniserde's own reader says nothing about where a text
//! is wrong), typed accessors over `Value`, string escaping and a writer for request
//! bodies.
//!
//! The reader is RFC 8259 with two choices of ours: a lone UTF-16 surrogate escape
//! (`\ud800` without its pair) becomes U+FFFD instead of failing the whole text (RFC 8259
//! leaves its meaning undefined; one in a Telegram message made a whole `getUpdates`
//! answer unreadable, DECISIONS 74), and a duplicate key keeps its last value (as
//! miniserde did). Numbers read as miniserde read them: an integer that fits is `U64`
//! (`I64` when negative), anything else `F64`, and a number too large for `f64` is an
//! error. An error names the byte offset, the line and the column where it was found.
//!
//! # Bounds
//! The reader is iterative (open containers on a stack on the heap), so deep nesting
//! cannot overflow the thread's stack; nesting deeper than `MAX_JSON_DEPTH` is an error,
//! which also bounds every recursive walk over a `Value` the reader built (its `Clone`
//! and `Debug` are recursive). Callers bound the input size before calling anything here.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use miniserde::json::{self, Array, Number, Object, Value};
use std::fmt;

/// Deepest nesting accepted by [`parse_value`].
pub const MAX_JSON_DEPTH: usize = 128;

/// A JSON syntax error: where (a byte offset into the text, and the 1-based line and
/// column a person reads) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub offset: usize,
    pub line: usize,
    pub column: usize,
    pub message: &'static str,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for SyntaxError {}

/// Where and why a text failed, for a log line about a body from elsewhere: the byte
/// offset, the text's length and the reason; never the text itself.
pub struct AtByte<'a>(pub &'a SyntaxError, pub usize);

impl fmt::Display for AtByte<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "byte {} of {}: {}",
            self.0.offset, self.1, self.0.message
        )
    }
}

/// Read `text` as one JSON value, in one pass. An error names where the text stopped
/// being JSON.
pub fn parse_value(text: &str) -> Result<Value, SyntaxError> {
    Reader { text, i: 0 }
        .document()
        .map_err(|(pos, message)| mk(text, pos, message))
}

/// A reader's failure before it is placed: the byte offset and the reason.
type Failure = (usize, &'static str);

/// An array or object whose closing bracket has not been read yet.
enum Open {
    Array(Array),
    /// The members so far and the key whose value is being read.
    Object(Object, String),
}

struct Reader<'a> {
    text: &'a str,
    /// The next byte to read.
    i: usize,
}

impl Reader<'_> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.i).copied()
    }

    fn end(&self, message: &'static str) -> Failure {
        (self.text.len(), message)
    }

    #[inline]
    fn skip_ws(&mut self) {
        let b = self.text.as_bytes();
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(self.i) {
            self.i += 1;
        }
    }

    /// The whole text: one value, then nothing but whitespace.
    fn document(&mut self) -> Result<Value, Failure> {
        let mut stack: Vec<Open> = Vec::new();
        loop {
            // A value starts here (or a container opens and its first value follows).
            self.skip_ws();
            let Some(c) = self.peek() else {
                return Err(self.end("unexpected end of input, expected a value"));
            };
            let mut v = match c {
                b'{' | b'[' => {
                    if stack.len() >= MAX_JSON_DEPTH {
                        return Err((self.i, "nesting too deep"));
                    }
                    self.i += 1;
                    self.skip_ws();
                    match (c, self.peek()) {
                        (b'[', Some(b']')) => {
                            self.i += 1;
                            Value::Array(Array::new())
                        }
                        (b'[', _) => {
                            stack.push(Open::Array(Array::new()));
                            continue;
                        }
                        (_, Some(b'}')) => {
                            self.i += 1;
                            Value::Object(Object::new())
                        }
                        (_, Some(b'"')) => {
                            let key = self.key()?;
                            stack.push(Open::Object(Object::new(), key));
                            continue;
                        }
                        (_, Some(_)) => return Err((self.i, "expected a string key or '}'")),
                        (_, None) => {
                            return Err(self.end("unexpected end of input inside an object"));
                        }
                    }
                }
                b'"' => Value::String(self.string()?),
                b't' => self.literal("true", Value::Bool(true))?,
                b'f' => self.literal("false", Value::Bool(false))?,
                b'n' => self.literal("null", Value::Null)?,
                b'-' | b'0'..=b'9' => Value::Number(self.number()?),
                _ => return Err((self.i, "expected a value")),
            };
            // A value is complete: it goes into its container, and each container its
            // bracket closes goes into the one around it, until a comma asks for the
            // next value.
            loop {
                self.skip_ws();
                let Some(open) = stack.pop() else {
                    if self.i < self.text.len() {
                        return Err((self.i, "unexpected text after the end of the JSON value"));
                    }
                    return Ok(v);
                };
                let c = self.peek();
                if c.is_some() {
                    self.i += 1;
                }
                match (open, c) {
                    (Open::Array(mut a), Some(b',')) => {
                        a.push(v);
                        stack.push(Open::Array(a));
                        break;
                    }
                    (Open::Object(mut o, k), Some(b',')) => {
                        o.insert(k, v);
                        self.skip_ws();
                        match self.peek() {
                            Some(b'"') => {}
                            Some(_) => return Err((self.i, "expected a string key after ','")),
                            None => {
                                return Err(self.end("unexpected end of input inside an object"));
                            }
                        }
                        let key = self.key()?;
                        stack.push(Open::Object(o, key));
                        break;
                    }
                    (Open::Array(mut a), Some(b']')) => {
                        a.push(v);
                        v = Value::Array(a);
                    }
                    (Open::Object(mut o, k), Some(b'}')) => {
                        o.insert(k, v);
                        v = Value::Object(o);
                    }
                    (Open::Array(_), Some(_)) => return Err((self.i - 1, "expected ',' or ']'")),
                    (Open::Object(..), Some(_)) => return Err((self.i - 1, "expected ',' or '}'")),
                    (_, None) => return Err(self.end("unexpected end of input")),
                }
            }
        }
    }

    /// `true`, `false` or `null`.
    fn literal(&mut self, word: &str, v: Value) -> Result<Value, Failure> {
        let rest = self.text.as_bytes().get(self.i..).unwrap_or_default();
        if rest.starts_with(word.as_bytes()) {
            self.i += word.len();
            return Ok(v);
        }
        if word.as_bytes().starts_with(rest) {
            return Err(self.end("unexpected end of input inside true, false or null"));
        }
        Err((self.i, "invalid literal (expected true, false or null)"))
    }

    /// A member's key at the quote under `self.i`, then its colon.
    fn key(&mut self) -> Result<String, Failure> {
        let key = self.string()?;
        self.skip_ws();
        match self.peek() {
            Some(b':') => {
                self.i += 1;
                Ok(key)
            }
            Some(_) => Err((self.i, "expected ':' after the key")),
            None => Err(self.end("unexpected end of input after a key")),
        }
    }

    /// The string whose opening quote is under `self.i`, decoded; `self.i` ends after
    /// the closing quote. A string without escapes (nearly all of them) is one copy of
    /// its bytes, found 8 bytes at a time.
    fn string(&mut self) -> Result<String, Failure> {
        let b = self.text.as_bytes();
        let start = self.i + 1;
        let mut out: Option<String> = None;
        // Bytes from `copied` on are not in `out` yet.
        let mut copied = start;
        let mut j = start;
        loop {
            // Whole words with nothing to look at, then byte by byte up to the byte the
            // word test saw (it is exact: a word it flags holds such a byte).
            while let Some(word) = b.get(j..j + 8) {
                let mut w = [0u8; 8];
                w.copy_from_slice(word);
                if needs_escape(u64::from_le_bytes(w)) {
                    break;
                }
                j += 8;
            }
            while let Some(&c) = b.get(j)
                && c >= 0x20
                && c != b'"'
                && c != b'\\'
            {
                j += 1;
            }
            match b.get(j) {
                None => return Err(self.end("unexpected end of input inside a string")),
                Some(b'"') => {
                    // `start`, `copied` and `j` sit next to ASCII bytes (a quote or an
                    // escape), so the slices below are on character boundaries.
                    let rest = self.text.get(copied..j).unwrap_or_default();
                    self.i = j + 1;
                    return Ok(match out {
                        None => rest.to_owned(),
                        Some(mut o) => {
                            o.push_str(rest);
                            o
                        }
                    });
                }
                Some(b'\\') => {
                    let o = out.get_or_insert_with(|| String::with_capacity(j - start + 16));
                    o.push_str(self.text.get(copied..j).unwrap_or_default());
                    j = self.escape(j, o)?;
                    copied = j;
                }
                Some(_) => return Err((j, "control character in string (escape it)")),
            }
        }
    }

    /// The escape whose backslash is at `j`, decoded onto `out`; returns the index after
    /// it. A lone surrogate becomes U+FFFD; a pair becomes its one character.
    fn escape(&self, j: usize, out: &mut String) -> Result<usize, Failure> {
        let b = self.text.as_bytes();
        let (c, len) = match b.get(j + 1) {
            None => return Err(self.end("unexpected end of input inside a string")),
            Some(b'"') => ('"', 2),
            Some(b'\\') => ('\\', 2),
            Some(b'/') => ('/', 2),
            Some(b'b') => ('\u{8}', 2),
            Some(b'f') => ('\u{c}', 2),
            Some(b'n') => ('\n', 2),
            Some(b'r') => ('\r', 2),
            Some(b't') => ('\t', 2),
            Some(b'u') => match hex4(b, j + 2) {
                Err(true) => return Err(self.end("unexpected end of input inside a string")),
                Err(false) => return Err((j, "invalid \\u escape")),
                Ok(u) => match (u, low_surrogate_escape(b, j + 6)) {
                    (0xD800..0xDC00, Some(low)) => {
                        let c = 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00);
                        // Always a character: a pair spells U+10000 to U+10FFFF.
                        (char::from_u32(c).unwrap_or('\u{fffd}'), 12)
                    }
                    // A lone surrogate is the only code unit `from_u32` refuses.
                    _ => (char::from_u32(u).unwrap_or('\u{fffd}'), 6),
                },
            },
            Some(_) => return Err((j, "invalid escape in string")),
        };
        out.push(c);
        Ok(j + len)
    }

    /// The number starting under `self.i`; `self.i` ends after it.
    fn number(&mut self) -> Result<Number, Failure> {
        let b = self.text.as_bytes();
        let start = self.i;
        let mut j = start;
        let negative = b.get(j) == Some(&b'-');
        if negative {
            j += 1;
        }
        let digit = |j: usize| b.get(j).filter(|c| c.is_ascii_digit()).copied();
        // The integer part, accumulated while it fits in a u64.
        let mut n: Option<u64> = Some(0);
        match b.get(j) {
            Some(b'0') => j += 1,
            Some(b'1'..=b'9') => {
                while let Some(d) = digit(j) {
                    n = n
                        .and_then(|n| n.checked_mul(10))
                        .and_then(|n| n.checked_add(u64::from(d - b'0')));
                    j += 1;
                }
            }
            None => return Err(self.end("unexpected end of input inside a number")),
            Some(_) => return Err((j, "invalid number")),
        }
        let mut integer = true;
        if b.get(j) == Some(&b'.') {
            integer = false;
            j += 1;
            if digit(j).is_none() {
                return Err(self.number_stop(j, "invalid number: digit expected after '.'"));
            }
            while digit(j).is_some() {
                j += 1;
            }
        }
        if let Some(b'e' | b'E') = b.get(j) {
            integer = false;
            j += 1;
            if let Some(b'+' | b'-') = b.get(j) {
                j += 1;
            }
            if digit(j).is_none() {
                return Err(self.number_stop(j, "invalid number: digit expected in exponent"));
            }
            while digit(j).is_some() {
                j += 1;
            }
        }
        self.i = j;
        match (integer, n) {
            (true, Some(n)) if !negative => return Ok(Number::U64(n)),
            (true, Some(n)) => {
                if let Some(neg) = 0i64.checked_sub_unsigned(n) {
                    return Ok(Number::I64(neg));
                }
            }
            _ => {}
        }
        // A fraction, an exponent, or an integer too large for 64 bits.
        match self.text.get(start..j).map(str::parse::<f64>) {
            Some(Ok(f)) if f.is_finite() => Ok(Number::F64(f)),
            _ => Err((start, "number too large")),
        }
    }

    /// A number that stops where a digit must come: at the end of the text, or at `j`.
    fn number_stop(&self, j: usize, message: &'static str) -> Failure {
        if j >= self.text.len() {
            self.end("unexpected end of input inside a number")
        } else {
            (j, message)
        }
    }
}

/// The code unit of a `\uDC00`–`\uDFFF` escape at `at`, if one is there.
fn low_surrogate_escape(b: &[u8], at: usize) -> Option<u32> {
    if b.get(at..at + 2) != Some(b"\\u") {
        return None;
    }
    hex4(b, at + 2)
        .ok()
        .filter(|u| (0xDC00..0xE000).contains(u))
}

/// The 4 hex digits at `at` as a number; `Err(true)` when the text ends first,
/// `Err(false)` when a byte is not a hex digit.
fn hex4(b: &[u8], at: usize) -> Result<u32, bool> {
    let mut n = 0;
    for k in at..at + 4 {
        let d = match b.get(k) {
            None => return Err(true),
            Some(&c @ b'0'..=b'9') => c - b'0',
            Some(&c @ b'a'..=b'f') => c - b'a' + 10,
            Some(&c @ b'A'..=b'F') => c - b'A' + 10,
            Some(_) => return Err(false),
        };
        n = n * 16 + u32::from(d);
    }
    Ok(n)
}

fn mk(text: &str, pos: usize, message: &'static str) -> SyntaxError {
    let (line, column) = line_col(text, pos);
    SyntaxError {
        offset: pos,
        line,
        column,
        message,
    }
}

/// 1-based line and column (in characters) of byte offset `pos`.
pub fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let pos = pos.min(text.len());
    let mut line = 1;
    let mut col = 1;
    for (idx, ch) in text.char_indices() {
        if idx >= pos {
            break;
        }
        if ch == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    (line, col)
}

/// Encode `s` as a JSON string literal.
pub fn quote(s: &str) -> String {
    json::to_string(&s)
}

/// Member `key` of an object value.
pub fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Object(o) => o.get(key),
        _ => None,
    }
}

/// Follow a path of object keys.
pub fn path<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for k in keys {
        cur = get(cur, k)?;
    }
    Some(cur)
}

pub fn as_str(v: &Value) -> Option<&str> {
    match v {
        Value::String(s) => Some(s),
        _ => None,
    }
}

pub fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    get(v, key).and_then(as_str)
}

pub fn as_array(v: &Value) -> Option<&Array> {
    match v {
        Value::Array(a) => Some(a),
        _ => None,
    }
}

pub fn as_object(v: &Value) -> Option<&Object> {
    match v {
        Value::Object(o) => Some(o),
        _ => None,
    }
}

pub fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Number(Number::U64(n)) => i64::try_from(*n).ok(),
        Value::Number(Number::I64(n)) => Some(*n),
        Value::Number(Number::F64(f)) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(*f as i64),
        _ => None,
    }
}

pub fn as_u64(v: &Value) -> Option<u64> {
    as_i64(v).and_then(|n| u64::try_from(n).ok())
}

pub fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(Number::U64(n)) => Some(*n as f64),
        Value::Number(Number::I64(n)) => Some(*n as f64),
        Value::Number(Number::F64(f)) => Some(*f),
        _ => None,
    }
}

pub fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        _ => None,
    }
}

/// Build an object from pairs.
pub fn object<I, K>(pairs: I) -> Value
where
    I: IntoIterator<Item = (K, Value)>,
    K: Into<String>,
{
    let mut o = Object::new();
    for (k, v) in pairs {
        o.insert(k.into(), v);
    }
    Value::Object(o)
}

pub fn string(s: impl Into<String>) -> Value {
    Value::String(s.into())
}

pub fn number(n: u64) -> Value {
    Value::Number(Number::U64(n))
}

pub fn array(items: Vec<Value>) -> Value {
    let mut a = Array::new();
    a.extend(items);
    Value::Array(a)
}

/// Serialize a value.
pub fn to_string(v: &Value) -> String {
    json::to_string(v)
}

/// Writes JSON text straight into one buffer, for request bodies: no `Value` tree (which
/// copied every history message once more and was dropped right after serialising).
/// Commas are placed by the writer; nesting is the caller's to balance (`begin_*` /
/// `end_*` pairs in straight-line code).
pub struct Writer {
    buf: String,
    need_comma: bool,
}

impl Writer {
    pub fn with_capacity(bytes: usize) -> Writer {
        Writer {
            buf: String::with_capacity(bytes),
            need_comma: false,
        }
    }

    fn sep(&mut self) {
        if self.need_comma {
            self.buf.push(',');
        }
    }

    pub fn begin_object(&mut self) {
        self.sep();
        self.buf.push('{');
        self.need_comma = false;
    }

    pub fn end_object(&mut self) {
        self.buf.push('}');
        self.need_comma = true;
    }

    pub fn begin_array(&mut self) {
        self.sep();
        self.buf.push('[');
        self.need_comma = false;
    }

    pub fn end_array(&mut self) {
        self.buf.push(']');
        self.need_comma = true;
    }

    /// An object member's key; its value comes next.
    pub fn key(&mut self, k: &str) {
        self.sep();
        push_escaped(&mut self.buf, k);
        self.buf.push(':');
        self.need_comma = false;
    }

    pub fn string(&mut self, s: &str) {
        self.sep();
        push_escaped(&mut self.buf, s);
        self.need_comma = true;
    }

    pub fn uint(&mut self, n: u64) {
        self.sep();
        use std::fmt::Write as _;
        let _ = write!(self.buf, "{n}");
        self.need_comma = true;
    }

    pub fn bool(&mut self, b: bool) {
        self.sep();
        self.buf.push_str(if b { "true" } else { "false" });
        self.need_comma = true;
    }

    pub fn null(&mut self) {
        self.sep();
        self.buf.push_str("null");
        self.need_comma = true;
    }

    /// A value already serialised as JSON (a constant schema, or `to_string` of a
    /// `Value`). The caller guarantees it is valid JSON.
    pub fn raw(&mut self, json_text: &str) {
        self.sep();
        self.buf.push_str(json_text);
        self.need_comma = true;
    }

    pub fn field_str(&mut self, k: &str, v: &str) {
        self.key(k);
        self.string(v);
    }

    pub fn finish(self) -> String {
        self.buf
    }
}

/// `s` as a JSON string literal, appended to `out` (RFC 8259: quote, backslash and control
/// characters escaped; everything else, non-ASCII included, as is).
///
/// Request bodies (the whole history, each model call) go through here: runs of 8 bytes
/// with nothing to escape are skipped with one word test ([`needs_escape`]) instead of a
/// call per byte (the profile of DECISIONS 103 had the per-byte iterator at 2.4 %).
pub fn push_escaped(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(word) = bytes.get(i..i + 8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            if !needs_escape(u64::from_le_bytes(w)) {
                i += 8;
                continue;
            }
        }
        let b = bytes[i];
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => {
                i += 1;
                continue;
            }
        };
        // `i` is at an ASCII byte, so both slices end on character boundaries.
        out.push_str(s.get(start..i).unwrap_or(""));
        if esc.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 0xf)] as char);
        } else {
            out.push_str(esc);
        }
        i += 1;
        start = i;
    }
    out.push_str(s.get(start..).unwrap_or(""));
    out.push('"');
}

/// Whether any of the 8 bytes of `w` may need escaping: below 0x20, `"` or `\`. Exact
/// when it says no; a yes is checked byte by byte (the classic "has a zero byte" /
/// "has a byte less than n" word tests).
fn needs_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
    let q = w ^ (ONES * u64::from(b'"'));
    let quote = q.wrapping_sub(ONES) & !q & HIGHS;
    let b = w ^ (ONES * u64::from(b'\\'));
    let backslash = b.wrapping_sub(ONES) & !b & HIGHS;
    below_space | quote | backslash != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_that_needs_escaping_is_escaped_at_every_offset_of_a_word() {
        for c in (0u8..0x20).chain([b'"', b'\\']) {
            for offset in 0..24 {
                let mut text = "x".repeat(offset);
                text.push(c as char);
                text.push_str(&"é".repeat(9));
                let mut out = String::new();
                push_escaped(&mut out, &text);
                let inner = &out[1..out.len() - 1];
                assert!(
                    !inner.bytes().any(|b| b < 0x20),
                    "{c:#x} at {offset}: {out}"
                );
                let slashes = if c == b'\\' { 2 } else { 1 };
                assert_eq!(
                    inner.matches('\\').count(),
                    slashes,
                    "{c:#x} at {offset}: {out}"
                );
                let back: String = miniserde::json::from_str(&out).unwrap();
                assert_eq!(back, text);
            }
        }
        // Bytes that look like them in other positions of a word are left alone.
        for w in [
            0x2121_2121_2121_2121u64,
            0x7f7f_7f7f_7f7f_7f7f,
            0xc3a9_c3a9_c3a9_c3a9,
        ] {
            assert!(!needs_escape(w), "{w:#x}");
        }
        assert!(needs_escape(u64::from_le_bytes(*b"abcdefg\\")));
        assert!(needs_escape(u64::from_le_bytes(*b"\x00bcdefgh")));
    }

    #[test]
    fn escaped_strings_parse_back_to_themselves() {
        let alphabet: Vec<char> = "ab\"\\/\n\r\t\u{0}\u{1}\u{1f}\u{7f} é€😀\u{2028}{}[]:,"
            .chars()
            .collect();
        let mut rng = crate::testkit::XorShift(0x5eed_cafe);
        for _ in 0..3000 {
            let len = rng.index(24);
            let s: String = (0..len)
                .map(|_| alphabet[rng.index(alphabet.len())])
                .collect();
            let mut out = String::new();
            push_escaped(&mut out, &s);
            let back: String = miniserde::json::from_str(&out).unwrap();
            assert_eq!(back, s, "{out}");
            assert_eq!(out, json::to_string(&s), "same text as miniserde writes");
        }
    }

    #[test]
    fn writer_places_commas_and_nests() {
        let mut w = Writer::with_capacity(64);
        w.begin_object();
        w.field_str("a", "x\"y");
        w.key("n");
        w.uint(42);
        w.key("list");
        w.begin_array();
        w.begin_object();
        w.end_object();
        w.null();
        w.bool(true);
        w.raw(r#"{"type":"object"}"#);
        w.end_array();
        w.key("empty");
        w.begin_array();
        w.end_array();
        w.end_object();
        let text = w.finish();
        assert_eq!(
            text,
            r#"{"a":"x\"y","n":42,"list":[{},null,true,{"type":"object"}],"empty":[]}"#
        );
        assert!(parse_value(&text).is_ok());
    }

    /// The bodies in `tests/fixtures/json/` (recorded shapes of the provider and Telegram
    /// answers), each SSE event on its own.
    fn real_bodies() -> Vec<(&'static str, &'static str)> {
        let files = [
            (
                "openai reply",
                include_str!("../tests/fixtures/json/openai-reply.json"),
            ),
            (
                "openai tool call",
                include_str!("../tests/fixtures/json/openai-tool-call.json"),
            ),
            (
                "anthropic reply",
                include_str!("../tests/fixtures/json/anthropic-reply.json"),
            ),
            (
                "telegram updates",
                include_str!("../tests/fixtures/json/telegram-updates.json"),
            ),
            (
                "telegram sent",
                include_str!("../tests/fixtures/json/telegram-sent.json"),
            ),
            ("telegram empty", r#"{"ok":true,"result":[]}"#),
        ];
        let streams = [
            (
                "openai event",
                include_str!("../tests/fixtures/json/openai-stream.sse"),
            ),
            (
                "anthropic event",
                include_str!("../tests/fixtures/json/anthropic-stream.sse"),
            ),
        ];
        let mut out: Vec<_> = files.into_iter().map(|(n, b)| (n, b.trim_end())).collect();
        for (name, sse) in streams {
            let events = sse.lines().filter_map(|l| l.strip_prefix("data: "));
            out.extend(events.filter(|d| *d != "[DONE]").map(|d| (name, d)));
        }
        assert!(out.len() > 20, "the fixtures are read");
        out
    }

    /// Whether two values are the same tree: same kinds, same number variants, strings
    /// and keys equal; floats equal or, with `close`, within 1e-15 of each other
    /// (miniserde multiplies by a power of ten, `str::parse` rounds once).
    fn same(a: &Value, b: &Value, close: bool) -> bool {
        match (a, b) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(x), Value::Bool(y)) => x == y,
            (Value::String(x), Value::String(y)) => x == y,
            (Value::Number(Number::U64(x)), Value::Number(Number::U64(y))) => x == y,
            (Value::Number(Number::I64(x)), Value::Number(Number::I64(y))) => x == y,
            (Value::Number(Number::F64(x)), Value::Number(Number::F64(y))) => {
                x == y || (close && (x - y).abs() <= 1e-15 * x.abs().max(y.abs()))
            }
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y.iter()).all(|(x, y)| same(x, y, close))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .zip(y.iter())
                        .all(|((kx, x), (ky, y))| kx == ky && same(x, y, close))
            }
            _ => false,
        }
    }

    /// What the program did before reading JSON in one pass: every lone surrogate escape
    /// replaced by `\ufffd` in the text (escapes found by pairing backslashes), then the
    /// text read by miniserde. The model the reader is checked against.
    fn repaired_then_miniserde(text: &str) -> miniserde::Result<Value> {
        let b = text.as_bytes();
        let hex4 = |at: usize| -> Option<u32> {
            let h = b.get(at..at + 4)?;
            h.iter().all(u8::is_ascii_hexdigit).then_some(())?;
            u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
        };
        let mut out = String::new();
        let (mut copied, mut i) = (0, 0);
        while i < b.len() {
            if b[i] != b'\\' {
                i += 1;
                continue;
            }
            if b.get(i + 1) != Some(&b'u') {
                i += 2;
                continue;
            }
            let Some(u) = hex4(i + 2) else {
                i += 2;
                continue;
            };
            let high = (0xD800..0xDC00).contains(&u);
            if high
                && b.get(i + 6..i + 8) == Some(b"\\u")
                && hex4(i + 8).is_some_and(|l| (0xDC00..0xE000).contains(&l))
            {
                i += 12;
                continue;
            }
            if high || (0xDC00..0xE000).contains(&u) {
                out.push_str(&text[copied..i]);
                out.push_str("\\ufffd");
                copied = i + 6;
            }
            i += 6;
        }
        out.push_str(&text[copied..]);
        json::from_str::<Value>(&out)
    }

    #[test]
    fn valid_documents_pass() {
        for ok in [
            "{}",
            "[]",
            " {\"a\": [1, -2.5e3, true, false, null, \"x\\u00e9\\n\"], \"b\": {}} ",
            "0",
            "\"s\"",
            "[[[]]]",
            "{\"a\":{\"b\":{\"c\":[]}}}",
            " [ ] ",
            "{ \"a\" : { } }",
            "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
        ] {
            let ours = parse_value(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
            assert!(same(&ours, &json::from_str(ok).unwrap(), false), "{ok}");
        }
    }

    #[test]
    fn errors_carry_offset_line_and_column() {
        let e = parse_value("{\n  \"a\": 1,\n  \"b\": tru\n}").unwrap_err();
        assert_eq!((e.offset, e.line, e.column), (19, 3, 8));
        let e = parse_value("{\"a\": 1,}").unwrap_err();
        assert_eq!((e.offset, e.line, e.column), (8, 1, 9));
        assert_eq!(e.message, "expected a string key after ','");
        let e = parse_value("{\"a\" 1}").unwrap_err();
        assert_eq!((e.offset, e.message), (5, "expected ':' after the key"));
        let e = parse_value("[1 2]").unwrap_err();
        assert_eq!((e.offset, e.line, e.column), (3, 1, 4));
        let e = parse_value("{\"é€\": x}").unwrap_err();
        assert_eq!(
            (e.offset, e.column),
            (10, 8),
            "the column counts characters"
        );
        let e = parse_value("{\"a\":1} x").unwrap_err();
        assert_eq!(
            (e.offset, e.message),
            (8, "unexpected text after the end of the JSON value")
        );
        let e = parse_value("{\"a\":\"\n\"}").unwrap_err();
        assert_eq!((e.offset, e.line), (6, 1));
        assert_eq!(e.message, "control character in string (escape it)");
        let e = parse_value("[\"\\x\"]").unwrap_err();
        assert_eq!((e.offset, e.message), (2, "invalid escape in string"));
        let e = parse_value("[\"\\u12g4\"]").unwrap_err();
        assert_eq!((e.offset, e.message), (2, "invalid \\u escape"));
        for (bad, at) in [
            ("01", 1),
            ("[,]", 1),
            ("[1,]", 3),
            ("-x", 1),
            ("1.e5", 2),
            ("1e+", 3),
        ] {
            assert_eq!(parse_value(bad).err().map(|e| e.offset), Some(at), "{bad}");
        }
        let e = parse_value("").unwrap_err();
        assert_eq!((e.offset, e.line, e.column), (0, 1, 1));
        assert_eq!(
            AtByte(&parse_value("[1,").unwrap_err(), 3).to_string(),
            "byte 3 of 3: unexpected end of input, expected a value"
        );
    }

    #[test]
    fn real_payloads_read_exactly_as_miniserde_reads_them() {
        for (name, body) in real_bodies() {
            let ours = parse_value(body).unwrap_or_else(|e| panic!("{name}: {e}: {body}"));
            let theirs: Value = json::from_str(body).unwrap();
            assert!(same(&ours, &theirs, false), "{name}: {body}");
            assert_eq!(to_string(&ours), to_string(&theirs), "{name}");
        }
        let v = parse_value(real_bodies()[0].1).unwrap();
        let text = path(&v, &["choices"])
            .and_then(as_array)
            .and_then(|c| c.first())
            .and_then(|c| path(c, &["message", "content"]))
            .and_then(as_str)
            .unwrap();
        assert!(
            text.contains("\u{2014} water") && text.ends_with("\u{1f345}"),
            "{text}"
        );
    }

    #[test]
    fn every_prefix_of_a_real_payload_fails_at_its_end() {
        for (name, body) in real_bodies() {
            for (cut, _) in body.char_indices() {
                let e = parse_value(&body[..cut]).unwrap_err();
                assert_eq!(e.offset, cut, "{name}, cut at {cut}: {e}");
                assert!(
                    e.message.starts_with("unexpected end of input"),
                    "{name}: {e}"
                );
            }
        }
    }

    #[test]
    fn a_byte_that_is_never_json_is_found_where_it_is() {
        // A control byte is JSON nowhere: the error is at it, or at the start of the
        // token it broke (a literal or an escape, at most 5 bytes before it).
        for (name, body) in real_bodies() {
            for (at, c) in body.char_indices().filter(|(_, c)| c.is_ascii()) {
                let mut broken = body.to_string();
                broken.replace_range(at..at + c.len_utf8(), "\u{1}");
                let e = parse_value(&broken).unwrap_err();
                assert!(
                    (at.saturating_sub(5)..=at).contains(&e.offset),
                    "{name}: byte {at} broken, error at {}: {e}",
                    e.offset
                );
            }
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        for (open, close) in [("[", "]"), ("{\"a\":", "}"), ("[{\"a\":", "}]")] {
            let deep = open.repeat(100_000) + &close.repeat(100_000);
            let e = parse_value(&deep).unwrap_err();
            assert_eq!(e.message, "nesting too deep");
            let levels = open.matches(['[', '{']).count();
            assert_eq!(e.offset, MAX_JSON_DEPTH / levels * open.len(), "{open}");
            // The deepest text accepted: read, walked (a recursive clone, the iterative
            // writer, a loop down its spine) and dropped.
            let reps = MAX_JSON_DEPTH / levels;
            let limit = open.repeat(reps) + "1" + &close.repeat(reps);
            let v = parse_value(&limit).unwrap();
            let copy = v.clone();
            assert_eq!(to_string(&copy), limit);
            let (mut cur, mut depth) = (&v, 0);
            loop {
                cur = match cur {
                    Value::Array(a) => &a[0],
                    Value::Object(o) => &o["a"],
                    _ => break,
                };
                depth += 1;
            }
            assert_eq!(depth, MAX_JSON_DEPTH);
            drop((v, copy));
            let over = open.repeat(reps + 1) + "1" + &close.repeat(reps + 1);
            assert!(parse_value(&over).is_err(), "{open}");
        }
        // The values are miniserde's, whose drop and writer do not recurse: a value
        // deeper than the reader builds (made by hand) is written and dropped safely.
        let mut v = Value::Null;
        for _ in 0..100_000 {
            v = array(vec![v]);
        }
        assert_eq!(to_string(&v).len(), 200_004);
        drop(v);
    }

    #[test]
    fn numbers_read_as_miniserde_reads_them() {
        let long_int = "9".repeat(300);
        let tiny = format!("0.{}1", "0".repeat(100_000));
        let long_fraction = format!("1.{}", "3".repeat(100_000));
        let ok = [
            "0",
            "-0",
            "1",
            "-1",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "-18446744073709551615",
            "1.5",
            "-2.5e3",
            "1E2",
            "1e+2",
            "0.1",
            "3.14159",
            "1e308",
            "-1e308",
            "1e-400",
            "0e99999999999",
            "1e-99999999999",
            "123456789012345678901234567890",
            &long_int,
            &tiny,
            &long_fraction,
        ];
        for text in ok {
            let ours = parse_value(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let theirs: Value = json::from_str(text).unwrap();
            assert!(same(&ours, &theirs, true), "{text}: {ours:?} vs {theirs:?}");
        }
        let huge = format!("1{}", "0".repeat(100_000));
        for (text, at) in [
            ("1e400", 0),
            ("-1e400", 0),
            ("1e99999999999", 0),
            ("[1, 2e999]", 4),
            (&huge, 0),
        ] {
            let e = parse_value(text).unwrap_err();
            assert_eq!((e.offset, e.message), (at, "number too large"), "{text}");
            assert!(json::from_str::<Value>(text).is_err(), "{text}");
        }
    }

    #[test]
    fn a_duplicate_key_keeps_its_last_value_as_before() {
        for text in [
            r#"{"a":1,"b":2,"a":3}"#,
            r#"{"a":{"x":1},"a":[true]}"#,
            r#"[{"k":"v","k":"w","k":null}]"#,
        ] {
            let ours = parse_value(text).unwrap();
            assert!(same(&ours, &json::from_str(text).unwrap(), false), "{text}");
        }
        let v = parse_value(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(as_object(&v).map(|o| o.len()), Some(2));
        assert_eq!(get(&v, "a").and_then(as_u64), Some(3));
    }

    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        let cases = [
            (r#""a\ud800b""#, "a\u{fffd}b"),
            (r#""\udc00""#, "\u{fffd}"),
            (r#""\ud83d\ude00""#, "\u{1f600}"),
            (r#""\uD83D\uDE00 \uDBFF""#, "\u{1f600} \u{fffd}"),
            (r#""\\ud800""#, "\\ud800"),
            (r#""\\\ud800""#, "\\\u{fffd}"),
            (r#""\ud800\u0041""#, "\u{fffd}A"),
            (r#""\ud800\ud800\udc00""#, "\u{fffd}\u{10000}"),
            (r#""\udfff\ud800""#, "\u{fffd}\u{fffd}"),
        ];
        for (input, want) in cases {
            let v = parse_value(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(as_str(&v), Some(want), "{input}");
        }
        let v = parse_value(r#"{"t\udc00":"hi \ud800 there"}"#).unwrap();
        assert_eq!(str_at(&v, "t\u{fffd}"), Some("hi \u{fffd} there"));
        for truncated in [r#""\ud8""#, r#""\ud800\u12""#] {
            assert!(parse_value(truncated).is_err(), "{truncated}");
        }
    }

    #[test]
    fn random_escapes_read_as_repairing_then_miniserde_read_them() {
        let pieces = [
            r"\ud800", r"\udfff", r"\ud83d", r"\ude00", r"\u0041", r"\\", r"\n", "a", "é", r"\u12",
            r"\uDBFF", r"\uDC00",
        ];
        let mut x = crate::testkit::XorShift(0x5EED);
        for _ in 0..5000 {
            let mut body = String::from("{\"t\":\"");
            for _ in 0..x.below(12) {
                body.push_str(pieces[x.index(pieces.len())]);
            }
            body.push_str("\"}");
            let ours = parse_value(&body);
            match repaired_then_miniserde(&body) {
                Ok(want) => {
                    let got = ours.unwrap_or_else(|e| panic!("{body}: {e}"));
                    assert!(same(&got, &want, false), "{body}");
                }
                Err(_) => assert!(ours.is_err(), "{body}"),
            }
            // Property: without a truncated \u escape, the text always reads.
            if !body.contains(r"\u12") {
                assert!(parse_value(&body).is_ok(), "{body}");
            }
        }
    }

    #[test]
    fn random_bytes_never_panic_and_agree_with_miniserde() {
        let alphabet = b"{}[]\",:0123456789-+.eEtrufalsnd \n\\u";
        let mut x = crate::testkit::XorShift(0x2545F4914F6CDD1D);
        let mut accepted = 0;
        for _ in 0..50_000 {
            let len = x.index(24);
            let mut s = String::new();
            for _ in 0..len {
                s.push(alphabet[x.index(alphabet.len())] as char);
            }
            match (parse_value(&s), repaired_then_miniserde(&s)) {
                (Ok(ours), Ok(theirs)) => {
                    accepted += 1;
                    assert!(same(&ours, &theirs, true), "{s:?}: {ours:?} vs {theirs:?}");
                }
                (Err(e), Err(_)) => assert!(e.offset <= s.len(), "{s:?}"),
                (ours, theirs) => {
                    panic!(
                        "{s:?}: ours {:?}, miniserde {:?}",
                        ours.is_ok(),
                        theirs.is_ok()
                    )
                }
            }
        }
        assert!(
            accepted > 500,
            "the alphabet makes valid JSON too ({accepted})"
        );
    }

    #[test]
    fn accessors() {
        let v = parse_value(r#"{"a":{"b":"c","n":5,"f":1.0,"neg":-3}}"#).unwrap();
        assert_eq!(path(&v, &["a", "b"]).and_then(as_str), Some("c"));
        assert_eq!(path(&v, &["a", "n"]).and_then(as_u64), Some(5));
        assert_eq!(path(&v, &["a", "f"]).and_then(as_u64), Some(1));
        assert_eq!(path(&v, &["a", "neg"]).and_then(as_u64), None);
        assert_eq!(quote("a\"b\n"), "\"a\\\"b\\n\"");
    }
}
