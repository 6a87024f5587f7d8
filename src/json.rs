//! Small JSON helpers around miniserde: a position-reporting syntax check (miniserde's
//! errors carry no position), typed accessors over `json::Value`, and string escaping.
//!
//! # Bounds
//! The checker is iterative (an explicit stack on the heap), so deep nesting cannot
//! overflow the stack; nesting deeper than `MAX_JSON_DEPTH` is reported as an error.
//! Callers bound the input size before calling anything here.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use miniserde::json::{self, Array, Number, Object, Value};
use std::fmt;

/// Deepest nesting accepted by [`check_syntax`].
pub const MAX_JSON_DEPTH: usize = 128;

/// A JSON syntax error with a 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
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

/// Parse `text` into a `Value`, reporting the position of the first syntax error.
pub fn parse_value(text: &str) -> Result<Value, SyntaxError> {
    check_syntax(text)?;
    json::from_str::<Value>(text).map_err(|_| SyntaxError {
        line: 1,
        column: 1,
        message: "invalid JSON",
    })
}

/// `text` with every lone UTF-16 surrogate escape (`\ud800` not followed by a low
/// surrogate escape, or a low one alone) replaced by `\ufffd`. Such escapes are invalid
/// JSON text (RFC 8259 leaves them undefined; miniserde refuses the whole document), yet
/// some senders pass them through: one in a Telegram message would make the whole
/// `getUpdates` answer unreadable. Escapes are found by pairing backslashes, so `\\ud800`
/// (an escaped backslash, then letters) is left alone. Borrowed when there is nothing to
/// repair (the common case: one scan, no copy).
pub fn repair_surrogates(text: &str) -> std::borrow::Cow<'_, str> {
    let b = text.as_bytes();
    let hex4 = |at: usize| -> Option<u32> {
        let h = b.get(at..at + 4)?;
        let s = std::str::from_utf8(h).ok()?;
        u32::from_str_radix(s, 16).ok()
    };
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
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
        let low = (0xDC00..0xE000).contains(&u);
        if high
            && b.get(i + 6) == Some(&b'\\')
            && b.get(i + 7) == Some(&b'u')
            && hex4(i + 8).is_some_and(|l| (0xDC00..0xE000).contains(&l))
        {
            i += 12; // a proper pair
            continue;
        }
        if high || low {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(text.get(copied..i).unwrap_or(""));
            o.push_str("\\ufffd");
            copied = i + 6;
        }
        i += 6;
    }
    match out {
        None => std::borrow::Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(text.get(copied..).unwrap_or(""));
            std::borrow::Cow::Owned(o)
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Frame {
    Object,
    Array,
}

/// Validate JSON syntax (RFC 8259) without building anything.
pub fn check_syntax(text: &str) -> Result<(), SyntaxError> {
    let b = text.as_bytes();
    let mut i = 0usize;
    let mut stack: Vec<Frame> = Vec::new();
    let err = |pos: usize, message: &'static str| Err(mk(text, pos, message));
    // State: expecting a value (possibly closing an empty container).
    let mut expect_value = true;
    let mut allow_close = false; // `]`/`}` allowed right after open
    loop {
        i = skip_ws(b, i);
        if expect_value {
            let Some(&c) = b.get(i) else {
                return err(i, "unexpected end of input, expected a value");
            };
            match c {
                b'{' => {
                    if stack.len() >= MAX_JSON_DEPTH {
                        return err(i, "nesting too deep");
                    }
                    stack.push(Frame::Object);
                    i += 1;
                    i = skip_ws(b, i);
                    match b.get(i) {
                        Some(b'}') => {
                            stack.pop();
                            i += 1;
                            expect_value = false;
                            continue;
                        }
                        Some(b'"') => {
                            i = scan_key(b, i).map_err(|(p, m)| mk(text, p, m))?;
                        }
                        Some(_) => return err(i, "expected a string key or '}'"),
                        None => return err(i, "unexpected end of input inside an object"),
                    }
                    continue;
                }
                b'[' => {
                    if stack.len() >= MAX_JSON_DEPTH {
                        return err(i, "nesting too deep");
                    }
                    stack.push(Frame::Array);
                    i += 1;
                    allow_close = true;
                    continue;
                }
                b']' if allow_close => {
                    stack.pop();
                    i += 1;
                    expect_value = false;
                }
                b'"' => {
                    i = scan_string(b, i).map_err(|(p, m)| mk(text, p, m))?;
                    expect_value = false;
                }
                b't' | b'f' | b'n' => {
                    let word: &[u8] = match c {
                        b't' => b"true",
                        b'f' => b"false",
                        _ => b"null",
                    };
                    if b.get(i..i + word.len()) != Some(word) {
                        return err(i, "invalid literal (expected true, false or null)");
                    }
                    i += word.len();
                    expect_value = false;
                }
                b'-' | b'0'..=b'9' => {
                    i = scan_number(b, i).map_err(|(p, m)| mk(text, p, m))?;
                    expect_value = false;
                }
                _ => return err(i, "expected a value"),
            }
            allow_close = false;
            continue;
        }
        // After a value.
        let Some(top) = stack.last().copied() else {
            if i < b.len() {
                return err(i, "unexpected text after the end of the JSON value");
            }
            return Ok(());
        };
        match (top, b.get(i)) {
            (Frame::Array, Some(b',')) => {
                i += 1;
                expect_value = true;
            }
            (Frame::Array, Some(b']')) | (Frame::Object, Some(b'}')) => {
                stack.pop();
                i += 1;
            }
            (Frame::Object, Some(b',')) => {
                i += 1;
                i = skip_ws(b, i);
                if b.get(i) != Some(&b'"') {
                    return err(i, "expected a string key after ','");
                }
                i = scan_key(b, i).map_err(|(p, m)| mk(text, p, m))?;
                expect_value = true;
            }
            (Frame::Array, Some(_)) => return err(i, "expected ',' or ']'"),
            (Frame::Object, Some(_)) => return err(i, "expected ',' or '}'"),
            (_, None) => return err(i, "unexpected end of input"),
        }
    }
}

fn mk(text: &str, pos: usize, message: &'static str) -> SyntaxError {
    let (line, column) = line_col(text, pos);
    SyntaxError {
        line,
        column,
        message,
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(c) = b.get(i) {
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// Scan `"key"` then `:`; returns the index after the colon. The caller resumes
/// expecting a value.
fn scan_key(b: &[u8], i: usize) -> Result<usize, (usize, &'static str)> {
    let mut j = scan_string(b, i)?;
    j = skip_ws(b, j);
    if b.get(j) != Some(&b':') {
        return Err((j, "expected ':' after the key"));
    }
    Ok(j + 1)
}

fn scan_string(b: &[u8], i: usize) -> Result<usize, (usize, &'static str)> {
    let mut j = i + 1;
    loop {
        match b.get(j) {
            None => return Err((i, "unterminated string")),
            Some(b'"') => return Ok(j + 1),
            Some(b'\\') => match b.get(j + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => j += 2,
                Some(b'u') => {
                    let hex = b.get(j + 2..j + 6).ok_or((j, "truncated \\u escape"))?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return Err((j, "invalid \\u escape"));
                    }
                    j += 6;
                }
                _ => return Err((j, "invalid escape in string")),
            },
            Some(c) if *c < 0x20 => return Err((j, "control character in string (escape it)")),
            Some(_) => j += 1,
        }
    }
}

fn scan_number(b: &[u8], i: usize) -> Result<usize, (usize, &'static str)> {
    let mut j = i;
    if b.get(j) == Some(&b'-') {
        j += 1;
    }
    match b.get(j) {
        Some(b'0') => j += 1,
        Some(b'1'..=b'9') => {
            while matches!(b.get(j), Some(b'0'..=b'9')) {
                j += 1;
            }
        }
        _ => return Err((j, "invalid number")),
    }
    if b.get(j) == Some(&b'.') {
        j += 1;
        if !matches!(b.get(j), Some(b'0'..=b'9')) {
            return Err((j, "invalid number: digit expected after '.'"));
        }
        while matches!(b.get(j), Some(b'0'..=b'9')) {
            j += 1;
        }
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        j += 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if !matches!(b.get(j), Some(b'0'..=b'9')) {
            return Err((j, "invalid number: digit expected in exponent"));
        }
        while matches!(b.get(j), Some(b'0'..=b'9')) {
            j += 1;
        }
    }
    Ok(j)
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
        ] {
            assert_eq!(check_syntax(ok), Ok(()), "{ok}");
            assert!(parse_value(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn errors_carry_line_and_column() {
        let e = check_syntax("{\n  \"a\": 1,\n  \"b\": tru\n}").unwrap_err();
        assert_eq!((e.line, e.column), (3, 8));
        let e = check_syntax("{\"a\": 1,}").unwrap_err();
        assert_eq!((e.line, e.column), (1, 9));
        let e = check_syntax("{\"a\" 1}").unwrap_err();
        assert_eq!(e.message, "expected ':' after the key");
        let e = check_syntax("[1 2]").unwrap_err();
        assert_eq!((e.line, e.column), (1, 4));
        assert!(check_syntax("{\"a\":1} x").is_err());
        assert!(check_syntax("").is_err());
        assert!(check_syntax("[").is_err());
        assert!(check_syntax("{\"a\":\"\n\"}").is_err());
        assert!(check_syntax("01").is_err());
        assert!(check_syntax("[,]").is_err());
        assert!(check_syntax("[1,]").is_err());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        assert_eq!(check_syntax(&deep).unwrap_err().message, "nesting too deep");
    }

    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        let cases = [
            (r#""a\ud800b""#, r#""a\ufffdb""#),
            (r#""\udc00""#, r#""\ufffd""#),
            (r#""\ud83d\ude00""#, r#""\ud83d\ude00""#),
            (r#""\uD83D\uDE00 \uDBFF""#, r#""\uD83D\uDE00 \ufffd""#),
            (r#""\\ud800""#, r#""\\ud800""#),
            (r#""\\\ud800""#, r#""\\\ufffd""#),
            (r#""\ud800\u0041""#, r#""\ufffd\u0041""#),
            (r#""\ud8""#, r#""\ud8""#),
            ("no escapes at all", "no escapes at all"),
        ];
        for (input, want) in cases {
            assert_eq!(repair_surrogates(input), want, "{input}");
        }
        assert!(matches!(
            repair_surrogates("plain"),
            std::borrow::Cow::Borrowed(_)
        ));
        let v = parse_value(&repair_surrogates(r#"{"t":"hi \ud800 there"}"#)).unwrap();
        assert_eq!(str_at(&v, "t"), Some("hi \u{fffd} there"));
    }

    #[test]
    fn repaired_text_of_random_escapes_parses_when_the_rest_is_valid() {
        let pieces = [
            r"\ud800", r"\udfff", r"\ud83d", r"\ude00", r"\u0041", r"\\", r"\n", "a", "é", r"\u12",
        ];
        let mut x = crate::testkit::XorShift(0x5EED);
        for _ in 0..5000 {
            let mut body = String::from("{\"t\":\"");
            for _ in 0..x.below(12) {
                body.push_str(pieces[x.index(pieces.len())]);
            }
            body.push_str("\"}");
            let repaired = repair_surrogates(&body);
            // Property: without a truncated \u escape, the repaired text always parses.
            if !body.contains(r"\u12") {
                assert!(parse_value(&repaired).is_ok(), "{body} -> {repaired}");
            }
            assert!(repaired.len() <= body.len() + 4, "{body}");
        }
    }

    #[test]
    fn random_bytes_never_panic_and_agree_with_miniserde() {
        let alphabet = b"{}[]\",:0123456789-+.eEtrufalsn \n\\u";
        let mut x = crate::testkit::XorShift(0x2545F4914F6CDD1D);
        for _ in 0..20_000 {
            let len = x.index(24);
            let mut s = String::new();
            for _ in 0..len {
                s.push(alphabet[x.index(alphabet.len())] as char);
            }
            let ours = check_syntax(&s).is_ok();
            let theirs = json::from_str::<Value>(&s).is_ok();
            if ours {
                assert!(theirs, "we accepted what miniserde rejects: {s:?}");
            }
        }
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
