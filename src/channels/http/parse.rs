//! A request's head (request line and headers, read by `httparse`) and how its body is
//! framed (`Content-Length` or chunked), with what a server must refuse: a head without
//! `Host` in HTTP/1.1, both framings at once or a transfer coding other than `chunked`
//! (request smuggling), `Content-Length`s that disagree, an `Expect` other than
//! `100-continue`. [`Chunked`] decodes a chunked body as it arrives and refuses framing
//! that lies (a size that is not hex, data longer or shorter than its size, a missing
//! CRLF).
//!
//! Only the headers the server acts on are kept (owned); the rest are parsed and dropped.
//!
//! # Bounds
//! The caller caps the head at `HTTP_SERVER_MAX_HEAD_BYTES`; at most
//! `HTTP_SERVER_MAX_HEADERS` header lines (more: 431). A chunk-size line is at most
//! `HTTP_SERVER_MAX_CHUNK_LINE_BYTES`, trailers at most `HTTP_SERVER_MAX_HEAD_BYTES`, the
//! decoded body at most the `max` the caller gives.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use crate::limits::{
    HTTP_SERVER_MAX_CHUNK_LINE_BYTES, HTTP_SERVER_MAX_HEAD_BYTES, HTTP_SERVER_MAX_HEADERS,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    /// Any other token (answered 405 or 404 by the routes).
    Other,
}

/// How the request's body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    None,
    Length(u64),
    Chunked,
}

/// What the server keeps of a request's head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: Method,
    /// The path, without its query string.
    pub path: String,
    /// The client keeps the connection open after the answer (HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`).
    pub keep_alive: bool,
    pub body: BodyKind,
    /// `Expect: 100-continue`: the body comes once the server says so.
    pub expect_continue: bool,
    pub authorization: Option<String>,
    /// `X-Session-Id`.
    pub session: Option<String>,
    /// The request line says HTTP/1.0: a streamed answer cannot be chunked (it ends
    /// when the connection closes).
    pub http10: bool,
    /// `X-Telegram-Bot-Api-Secret-Token` (the webhook's secret).
    pub telegram_secret: Option<String>,
    /// What the status page's login and the WebSocket's origin check read: `Host`,
    /// `Cookie`, `Origin`, `Referer` and whether `X-Forwarded-Proto` says `https`.
    pub page: PageHeaders,
    /// What a WebSocket upgrade needs (`ws`); filled whatever the route.
    pub ws: WsHead,
}

/// The headers the status page's login reads (`login`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageHeaders {
    pub host: Option<String>,
    pub cookie: Option<String>,
    pub origin: Option<String>,
    pub referer: Option<String>,
    /// `X-Forwarded-Proto: https` (a TLS proxy in front).
    pub forwarded_https: bool,
}

/// The headers of a WebSocket opening handshake (RFC 6455 §4.2.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WsHead {
    /// `Upgrade` has the token `websocket`.
    pub upgrade: bool,
    /// `Connection` has the token `upgrade`.
    pub connection_upgrade: bool,
    /// The request line says HTTP/1.1.
    pub http11: bool,
    pub version: Option<String>,
    pub key: Option<String>,
    /// `Sec-WebSocket-Protocol` (all lines joined with commas).
    pub protocols: Option<String>,
}

/// Why a head is refused: the status and one sentence for the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadError {
    pub status: u16,
    pub message: &'static str,
}

const fn refuse(status: u16, message: &'static str) -> HeadError {
    HeadError { status, message }
}

/// The answer to a head longer than `HTTP_SERVER_MAX_HEAD_BYTES` or with too many lines.
pub const HEAD_TOO_LARGE: HeadError = refuse(
    431,
    "The request's headers are too large (at most 16 KiB and 48 lines).",
);

/// Parse the head at the start of `buf`: `Ok(None)` while it is incomplete, else the head
/// and its length in bytes (the body, or the next request, follows).
pub fn parse_head(buf: &[u8]) -> Result<Option<(Head, usize)>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; HTTP_SERVER_MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HEAD_TOO_LARGE),
        Err(_) => return Err(refuse(400, "This is not an HTTP/1.1 request.")),
    };
    if len > HTTP_SERVER_MAX_HEAD_BYTES {
        return Err(HEAD_TOO_LARGE);
    }
    let http10 = req.version == Some(0);
    let method = match req.method.unwrap_or("") {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        _ => Method::Other,
    };
    let mut head = Head {
        method,
        path: path_of(req.path.unwrap_or("")),
        keep_alive: !http10,
        http10,
        body: BodyKind::None,
        expect_continue: false,
        authorization: None,
        telegram_secret: None,
        session: None,
        page: PageHeaders::default(),
        ws: WsHead {
            http11: req.version == Some(1),
            ..WsHead::default()
        },
    };
    let (mut host, mut length, mut chunked) = (false, None::<u64>, false);
    for h in req.headers.iter() {
        let value = std::str::from_utf8(h.value).ok().map(str::trim);
        let name = h.name;
        if name.eq_ignore_ascii_case("host") {
            host = true;
            head.page.host = value.map(str::to_string);
        } else if name.eq_ignore_ascii_case("cookie") {
            head.page.cookie = value.map(str::to_string);
        } else if name.eq_ignore_ascii_case("origin") {
            head.page.origin = value.map(str::to_string);
        } else if name.eq_ignore_ascii_case("referer") {
            head.page.referer = value.map(str::to_string);
        } else if name.eq_ignore_ascii_case("x-forwarded-proto") {
            head.page.forwarded_https = value.is_some_and(|v| v.eq_ignore_ascii_case("https"));
        } else if name.eq_ignore_ascii_case("content-length") {
            let n = value
                .filter(|v| !v.is_empty() && v.len() <= 18 && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or(refuse(400, "Content-Length must be a number of bytes."))?;
            if length.is_some_and(|l| l != n) {
                return Err(refuse(
                    400,
                    "The request has two different Content-Lengths.",
                ));
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if !value.is_some_and(|v| v.eq_ignore_ascii_case("chunked")) || chunked {
                return Err(refuse(
                    501,
                    "The only transfer coding taken is a single \"chunked\".",
                ));
            }
            chunked = true;
        } else if name.eq_ignore_ascii_case("connection") {
            for token in value.unwrap_or("").split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("upgrade") {
                    head.ws.connection_upgrade = true;
                } else if token.eq_ignore_ascii_case("close") {
                    head.keep_alive = false;
                } else if token.eq_ignore_ascii_case("keep-alive") && http10 {
                    head.keep_alive = true;
                }
            }
        } else if name.eq_ignore_ascii_case("expect") {
            if !value.is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
                return Err(refuse(417, "The only expectation taken is 100-continue."));
            }
            head.expect_continue = true;
        } else if name.eq_ignore_ascii_case("x-telegram-bot-api-secret-token") {
            head.telegram_secret = value.map(str::to_string);
        } else if name.eq_ignore_ascii_case("authorization") {
            head.authorization = value.map(str::to_string);
        } else if name.eq_ignore_ascii_case("x-session-id") {
            head.session = value.map(str::to_string);
        } else if name.eq_ignore_ascii_case("upgrade") {
            head.ws.upgrade |= value
                .unwrap_or("")
                .split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("websocket"));
        } else if name.eq_ignore_ascii_case("sec-websocket-version") {
            head.ws.version = value.map(str::to_string);
        } else if name.eq_ignore_ascii_case("sec-websocket-key") {
            head.ws.key = value.map(str::to_string);
        } else if name.eq_ignore_ascii_case("sec-websocket-protocol") {
            let v = value.unwrap_or("");
            head.ws.protocols = Some(match head.ws.protocols.take() {
                Some(p) => format!("{p}, {v}"),
                None => v.to_string(),
            });
        }
    }
    if !host && !http10 {
        return Err(refuse(400, "An HTTP/1.1 request needs a Host header."));
    }
    head.body = match (length, chunked) {
        (Some(_), true) => {
            return Err(refuse(
                400,
                "The request has both Content-Length and Transfer-Encoding.",
            ));
        }
        (_, true) => BodyKind::Chunked,
        (Some(0) | None, false) => BodyKind::None,
        (Some(n), false) => BodyKind::Length(n),
    };
    // A body only comes after a 100 Continue the server sends when it wants it.
    head.expect_continue &= head.body != BodyKind::None;
    Ok(Some((head, len)))
}

/// The path of a request target (`/a?b` or `http://host/a?b`), without the query.
fn path_of(target: &str) -> String {
    let rest = match target.find("://") {
        Some(i) => {
            let after = &target[i + 3..];
            &after[after.find('/').unwrap_or(after.len())..]
        }
        None => target,
    };
    let path = rest.split(['?', '#']).next().unwrap_or("");
    if path.is_empty() { "/" } else { path }.to_string()
}

/// Why a chunked body is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkError {
    /// The framing lies or is malformed (400, and the connection is closed).
    Framing,
    /// The decoded body would pass the caller's `max` (413).
    TooLarge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Hex digits of a chunk size: the value so far and how many digits.
    Size(u64, u8),
    /// A chunk extension (or whitespace before it), up to the line's CR.
    Ext(u64),
    /// The LF ending a size line.
    SizeLf(u64),
    /// Bytes of chunk data still to come.
    Data(u64),
    DataCr,
    DataLf,
    /// A trailer line; its length so far.
    Trailer(usize),
    TrailerLf(usize),
    Done,
}

/// A chunked body being decoded.
#[derive(Debug, Clone)]
pub struct Chunked {
    state: State,
    /// Bytes of the current size line.
    line: usize,
    /// Trailer bytes so far.
    trailers: usize,
}

impl Default for Chunked {
    fn default() -> Self {
        Chunked {
            state: State::Size(0, 0),
            line: 0,
            trailers: 0,
        }
    }
}

impl Chunked {
    /// The last chunk and the trailers have been read.
    pub fn done(&self) -> bool {
        self.state == State::Done
    }

    /// Decode `input`, appending chunk data to `out` (which may hold at most `max` bytes).
    /// Returns how many bytes of `input` were used: all of them, or fewer once the body
    /// ended (what follows belongs to the next request).
    pub fn feed(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        max: usize,
    ) -> Result<usize, ChunkError> {
        let mut i = 0;
        while i < input.len() {
            let b = input[i];
            self.state = match self.state {
                State::Done => return Ok(i),
                State::Data(left) => {
                    let take = (input.len() - i).min(usize::try_from(left).unwrap_or(usize::MAX));
                    out.extend_from_slice(&input[i..i + take]);
                    i += take;
                    let left = left - take as u64;
                    self.state = if left == 0 {
                        State::DataCr
                    } else {
                        State::Data(left)
                    };
                    continue;
                }
                State::Size(n, digits) => {
                    self.size_line()?;
                    match (b as char).to_digit(16) {
                        Some(d) if digits < 15 => State::Size(n * 16 + u64::from(d), digits + 1),
                        Some(_) => return Err(ChunkError::Framing),
                        None if digits == 0 => return Err(ChunkError::Framing),
                        None if b == b'\r' => State::SizeLf(n),
                        None if matches!(b, b';' | b' ' | b'\t') => State::Ext(n),
                        None => return Err(ChunkError::Framing),
                    }
                }
                State::Ext(n) => {
                    self.size_line()?;
                    match b {
                        b'\r' => State::SizeLf(n),
                        b'\n' => return Err(ChunkError::Framing),
                        _ => State::Ext(n),
                    }
                }
                State::SizeLf(n) => {
                    if b != b'\n' {
                        return Err(ChunkError::Framing);
                    }
                    self.line = 0;
                    if n == 0 {
                        State::Trailer(0)
                    } else if n > (max.saturating_sub(out.len())) as u64 {
                        return Err(ChunkError::TooLarge);
                    } else {
                        State::Data(n)
                    }
                }
                State::DataCr if b == b'\r' => State::DataLf,
                State::DataLf if b == b'\n' => State::Size(0, 0),
                State::DataCr | State::DataLf => return Err(ChunkError::Framing),
                State::Trailer(len) => {
                    self.trailers += 1;
                    if self.trailers > HTTP_SERVER_MAX_HEAD_BYTES {
                        return Err(ChunkError::Framing);
                    }
                    match b {
                        b'\r' => State::TrailerLf(len),
                        b'\n' => return Err(ChunkError::Framing),
                        _ => State::Trailer(len + 1),
                    }
                }
                State::TrailerLf(len) => match b {
                    b'\n' if len == 0 => State::Done,
                    b'\n' => State::Trailer(0),
                    _ => return Err(ChunkError::Framing),
                },
            };
            i += 1;
        }
        Ok(i)
    }

    /// One more byte of the size line, within its bound.
    fn size_line(&mut self) -> Result<(), ChunkError> {
        self.line += 1;
        if self.line > HTTP_SERVER_MAX_CHUNK_LINE_BYTES {
            Err(ChunkError::Framing)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Result<Option<(Head, usize)>, HeadError> {
        parse_head(text.as_bytes())
    }

    #[test]
    fn a_request_head_is_read_with_what_the_server_needs() {
        let t = "POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: b\r\nContent-Length: 12\r\nAuthorization:  Bearer abc \r\nX-Session-Id: kitchen\r\nExpect: 100-Continue\r\n\r\n{\"a\":1}";
        let (h, len) = head(t).unwrap().unwrap();
        assert_eq!(&t[len..], "{\"a\":1}");
        assert_eq!(h.method, Method::Post);
        assert_eq!(h.path, "/v1/chat/completions");
        assert!(h.keep_alive && h.expect_continue);
        assert_eq!(h.body, BodyKind::Length(12));
        assert_eq!(h.authorization.as_deref(), Some("Bearer abc"));
        assert_eq!(h.session.as_deref(), Some("kitchen"));
        assert_eq!(head("GET /health HTTP/1.1\r\nHost: b\r\n"), Ok(None));
        let (h, _) = head("GET http://b:1/health#x HTTP/1.0\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!((h.path.as_str(), h.keep_alive), ("/health", false));
        let (h, _) = head("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(h.keep_alive);
        let (h, _) = head(
            "GET / HTTP/1.1\r\nHost: b\r\nConnection: x, close\r\nExpect: 100-continue\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        assert!(
            !h.keep_alive && !h.expect_continue,
            "no body, nothing to continue"
        );
        let (h, _) = head("PUT / HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: Chunked\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!((h.method, h.body), (Method::Other, BodyKind::Chunked));
    }

    #[test]
    fn heads_that_lie_or_smuggle_are_refused_with_their_status() {
        let status = |t: &str| head(t).err().map(|e| e.status);
        assert_eq!(status("\x16\x03\x01\x02\x00garbage"), Some(400));
        assert_eq!(status("GET / HTTP/1.1\r\n\r\n"), Some(400), "no Host");
        assert_eq!(
            status("GET / HTTP/1.1\r\nHost: b\r\nContent-Length: -1\r\n\r\n"),
            Some(400)
        );
        assert_eq!(
            status("GET / HTTP/1.1\r\nHost: b\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            Some(400)
        );
        assert_eq!(
            status("GET / HTTP/1.1\r\nHost: b\r\nContent-Length: 99999999999999999999\r\n\r\n"),
            Some(400)
        );
        assert_eq!(
            status(
                "POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
            ),
            Some(400)
        );
        assert_eq!(
            status("POST / HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
            Some(501)
        );
        assert_eq!(
            status(
                "POST / HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
            ),
            Some(501)
        );
        assert_eq!(
            status("POST / HTTP/1.1\r\nHost: b\r\nExpect: tea\r\n\r\n"),
            Some(417)
        );
        let many: String = (0..=HTTP_SERVER_MAX_HEADERS)
            .map(|i| format!("X-{i}: v\r\n"))
            .collect();
        assert_eq!(
            status(&format!("GET / HTTP/1.1\r\nHost: b\r\n{many}\r\n")),
            Some(431)
        );
        // Same lengths twice is one length.
        let (h, _) =
            head("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\n")
                .unwrap()
                .unwrap();
        assert_eq!(h.body, BodyKind::Length(2));
    }

    fn decode(input: &[u8], max: usize) -> Result<(Vec<u8>, usize, bool), ChunkError> {
        let mut c = Chunked::default();
        let mut out = Vec::new();
        let used = c.feed(input, &mut out, max)?;
        Ok((out, used, c.done()))
    }

    #[test]
    fn chunked_bodies_decode_in_any_pieces_and_stop_at_their_end() {
        let body = b"5;name=x\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: t\r\n\r\nGET /next";
        let (out, used, done) = decode(body, 1024).unwrap();
        assert_eq!(out, b"hello world");
        assert!(done);
        assert_eq!(&body[used..], b"GET /next");
        // Byte by byte, the same.
        let mut c = Chunked::default();
        let mut out = Vec::new();
        let mut used = 0;
        for b in body.iter() {
            if c.done() {
                break;
            }
            used += c.feed(std::slice::from_ref(b), &mut out, 1024).unwrap();
        }
        assert_eq!(
            (out.as_slice(), used),
            (&b"hello world"[..], body.len() - 9)
        );
        let (out, _, done) = decode(b"A\r\n0123456789\r\n", 1024).unwrap();
        assert_eq!((out.len(), done), (10, false));
    }

    #[test]
    fn chunked_framing_that_lies_is_refused() {
        for bad in [
            &b"5\r\nhello world\r\n0\r\n\r\n"[..], // longer than its size
            b"5\r\nhel\r\n0\r\n\r\n",              // shorter (the CRLF lands in the data)
            b"zz\r\nhi\r\n",
            b"\r\n",
            b"5\nhello\r\n",
            b"-5\r\nhello\r\n",
            b"5\r\nhelloXY",
            b"11111111111111111\r\n", // 17 hex digits
            b"0\r\nbad\ntrailer\r\n\r\n",
        ] {
            assert_eq!(
                decode(bad, 1 << 20).map(|r| r.0),
                Err(ChunkError::Framing),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let long_ext = format!("1;{}\r\n", "e".repeat(HTTP_SERVER_MAX_CHUNK_LINE_BYTES));
        assert_eq!(
            decode(long_ext.as_bytes(), 10).map(|r| r.0),
            Err(ChunkError::Framing)
        );
        assert_eq!(
            decode(b"b\r\nhello world\r\n", 10).map(|r| r.0),
            Err(ChunkError::TooLarge)
        );
        assert_eq!(
            decode(b"ffffffffffffff\r\n", 10).map(|r| r.0),
            Err(ChunkError::TooLarge)
        );
    }
}
