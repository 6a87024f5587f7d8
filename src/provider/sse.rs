//! An incremental Server-Sent Events parser: bytes in (in chunks of any size, split
//! anywhere), events out.
//!
//! Follows the WHATWG event-stream rules that real LLM servers rely on: lines end in
//! CRLF, LF or CR (a CRLF split across two reads counts once); a line starting with `:`
//! is a comment (keep-alives, OpenRouter's `: OPENROUTER PROCESSING`); `event:` sets
//! the event name, `data:` lines are joined with `\n`; an empty line dispatches the
//! event; an event without data is dropped; one space after the colon is removed; other
//! fields (`id:`, `retry:`) are ignored. Bytes are buffered and only complete lines are
//! decoded, so a multi-byte UTF-8 character split across reads arrives whole; invalid
//! UTF-8 is replaced (U+FFFD), as the standard says. A UTF-8 byte order mark at the very
//! start is skipped.
//!
//! # Bounds
//! One line, and one event's joined data, may hold at most `MAX_SSE_LINE_BYTES` (or the
//! limit given to [`SseParser::with_limit`]); more is [`SseError::LineTooLong`], never
//! unbounded growth. Events produced by one `push` are
//! bounded by the bytes pushed.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use crate::limits::MAX_SSE_LINE_BYTES;
use std::fmt;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` name, empty when the server sent none (the default `message`).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Why a stream cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseError {
    /// A line or an event's data exceeded the parser's limit (`MAX_SSE_LINE_BYTES` by
    /// default).
    LineTooLong,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The default limit: the providers' parsers (the only ones whose error is shown).
            SseError::LineTooLong => write!(
                f,
                "event-stream line longer than {} KiB",
                MAX_SSE_LINE_BYTES / 1024
            ),
        }
    }
}

impl std::error::Error for SseError {}

/// The parser state between reads.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the current, unfinished line.
    line: Vec<u8>,
    /// The previous chunk ended in CR: a LF at the start of the next one is part of it.
    after_cr: bool,
    /// Still at the very start of the stream (a BOM may follow).
    at_start: bool,
    event: String,
    data: String,
    has_data: bool,
    /// Longest line, and longest event data, accepted.
    limit: usize,
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::with_limit(MAX_SSE_LINE_BYTES)
    }

    /// A parser whose lines and events' data may hold up to `limit` bytes (MCP carries a
    /// whole JSON-RPC message in one event).
    pub fn with_limit(limit: usize) -> SseParser {
        SseParser {
            at_start: true,
            limit,
            ..SseParser::default()
        }
    }

    /// Feed the next bytes; complete events are appended to `out`.
    pub fn push(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while !bytes.is_empty() {
            match bytes.iter().position(|b| *b == b'\n' || *b == b'\r') {
                None => {
                    self.extend_line(bytes)?;
                    break;
                }
                Some(i) => {
                    self.extend_line(&bytes[..i])?;
                    let cr = bytes[i] == b'\r';
                    bytes = &bytes[i + 1..];
                    if cr {
                        match bytes.first() {
                            Some(b'\n') => bytes = &bytes[1..],
                            Some(_) => {}
                            None => self.after_cr = true,
                        }
                    }
                    self.end_line(out)?;
                }
            }
        }
        Ok(())
    }

    /// Bytes of an unfinished line or event are pending (the stream stopped mid-event).
    pub fn has_partial(&self) -> bool {
        !self.line.is_empty() || self.has_data
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len() + bytes.len() > self.limit {
            return Err(SseError::LineTooLong);
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut raw: &[u8] = &self.line;
        if self.at_start {
            self.at_start = false;
            raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
        }
        if raw.is_empty() {
            self.line.clear();
            if self.has_data {
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                });
            } else {
                self.event.clear();
            }
            self.has_data = false;
            return Ok(());
        }
        if raw.first() == Some(&b':') {
            self.line.clear();
            return Ok(());
        }
        let text = String::from_utf8_lossy(raw);
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (text.as_ref(), ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.data.len() + value.len() + 1 > self.limit {
                    return Err(SseError::LineTooLong);
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
        self.line.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Result<Vec<SseEvent>, SseError> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.push(c, &mut out)?;
        }
        Ok(out)
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn fields_comments_and_dispatch() {
        let s = b": OPENROUTER PROCESSING\n\nevent: message_start\ndata: {\"a\":1}\n\ndata:x\ndata: y\nid: 7\nretry: 10\n\n:keep-alive\n\nevent: ping\n\ndata: [DONE]\n\n";
        let evs = parse_all(&[s]).unwrap();
        assert_eq!(
            evs,
            vec![
                ev("message_start", "{\"a\":1}"),
                ev("", "x\ny"),
                ev("", "[DONE]")
            ]
        );
    }

    #[test]
    fn crlf_cr_and_lf_all_end_lines() {
        let want = vec![ev("e", "1"), ev("", "2"), ev("", "3")];
        let s = b"event: e\r\ndata: 1\r\n\r\ndata: 2\r\rdata: 3\n\n";
        assert_eq!(parse_all(&[s]).unwrap(), want);
        // A CRLF split across reads is one line end, not two (which would dispatch early).
        let evs = parse_all(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]).unwrap();
        assert_eq!(evs, vec![ev("", "a\nb")]);
    }

    #[test]
    fn split_utf8_arrives_whole() {
        let s = "data: héllo → 世界\n\n".as_bytes();
        for cut in 0..s.len() {
            let evs = parse_all(&[&s[..cut], &s[cut..]]).unwrap();
            assert_eq!(evs, vec![ev("", "héllo → 世界")], "cut at {cut}");
        }
    }

    #[test]
    fn invalid_utf8_is_replaced_and_bom_skipped() {
        let evs = parse_all(&[b"\xEF\xBB\xBFdata: a\xFFb\n\n"]).unwrap();
        assert_eq!(evs, vec![ev("", "a\u{FFFD}b")]);
    }

    #[test]
    fn over_long_lines_are_errors() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        let big = vec![b'x'; 64 * 1024];
        let mut r = Ok(());
        for _ in 0..(MAX_SSE_LINE_BYTES / big.len() + 2) {
            r = p.push(&big, &mut out);
            if r.is_err() {
                break;
            }
        }
        assert_eq!(r, Err(SseError::LineTooLong));
        // Many data lines that add up past the bound are refused too.
        let mut p = SseParser::new();
        let line = format!("data: {}\n", "y".repeat(60 * 1024));
        let mut r = Ok(());
        for _ in 0..20 {
            r = p.push(line.as_bytes(), &mut out);
            if r.is_err() {
                break;
            }
        }
        assert_eq!(r, Err(SseError::LineTooLong));
        assert!(out.is_empty());
    }

    #[test]
    fn a_parser_takes_its_own_limit() {
        let mut out = Vec::new();
        let mut p = SseParser::with_limit(16);
        p.push(
            b"data: 0123456789

",
            &mut out,
        )
        .unwrap();
        assert_eq!(out, vec![ev("", "0123456789")]);
        assert_eq!(
            p.push(
                b"data: 0123456789abcdef
",
                &mut out
            ),
            Err(SseError::LineTooLong)
        );
        // Lines longer than the default bound pass a parser given a larger one.
        let mut p = SseParser::with_limit(2 * MAX_SSE_LINE_BYTES);
        let big = format!(
            "data: {}

",
            "z".repeat(MAX_SSE_LINE_BYTES + 1)
        );
        p.push(big.as_bytes(), &mut out).unwrap();
        assert_eq!(out[1].data.len(), MAX_SSE_LINE_BYTES + 1);
    }

    #[test]
    fn partial_state_is_visible() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.push(b"data: x\n", &mut out).unwrap();
        assert!(p.has_partial());
        p.push(b"\n", &mut out).unwrap();
        assert!(!p.has_partial());
        p.push(b"data", &mut out).unwrap();
        assert!(p.has_partial());
    }

    #[test]
    fn random_chunking_gives_the_same_events() {
        let stream = "\u{FEFF}: comment\r\nevent: a\r\ndata: ünïcödé 🎉\r\n\r\ndata: {\"x\":\"y\"}\n\n:ka\r\rdata: 1\rdata: 2\r\r\nevent: b\ndata\n\ndata: [DONE]\n\n";
        let bytes = stream.as_bytes();
        let want = parse_all(&[bytes]).unwrap();
        assert_eq!(want.len(), 5);
        let mut x = crate::testkit::XorShift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..3000 {
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut i = 0;
            while i < bytes.len() {
                let n = 1 + x.index(9);
                let j = (i + n).min(bytes.len());
                chunks.push(&bytes[i..j]);
                i = j;
            }
            assert_eq!(parse_all(&chunks).unwrap(), want);
        }
    }

    #[test]
    fn random_bytes_give_the_same_events_however_they_are_cut() {
        let mut x = crate::testkit::XorShift(0x2545_F491_4F6C_DD1D);
        let alphabet = b"data:event \r\n:\xC3\xA9\xFF[]{}";
        for _ in 0..3000 {
            let len = x.index(64);
            let s: Vec<u8> = (0..len)
                .map(|_| alphabet[x.index(alphabet.len())])
                .collect();
            // Property: cutting the bytes anywhere changes nothing, and no event holds
            // more data than the input.
            let whole = parse_all(&[&s]);
            let cut = if s.is_empty() { 0 } else { x.index(s.len()) };
            let halves = parse_all(&[&s[..cut], &s[cut..]]);
            assert_eq!(whole.is_ok(), halves.is_ok(), "{s:?}");
            if let (Ok(a), Ok(b)) = (whole, halves) {
                assert_eq!(a, b, "{s:?} cut at {cut}");
                assert!(a.iter().all(|e| e.data.len() <= s.len()), "{s:?}");
            }
        }
    }
}
