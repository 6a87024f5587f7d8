//! `GET /ws`: a chat over a WebSocket (RFC 6455), for a browser page or a script that
//! wants the answer as it is written without one HTTP request per message.
//!
//! - Handshake: HTTP/1.1 GET with `Upgrade: websocket`, `Connection: upgrade`,
//!   `Sec-WebSocket-Version: 13` (another version: 426 naming 13) and a
//!   `Sec-WebSocket-Key` of 16 bytes in base64; answered 101 with its
//!   `Sec-WebSocket-Accept`. The token as for the API (`routes::authorize`: `Authorization:
//!   Bearer`, or, since a browser cannot set that header, the subprotocols `bearer` and
//!   `bearer.<token>` offered together; `bearer` is echoed). An `Origin` (sent by every
//!   browser) must name the `Host` the request was sent to, else 403: a page of another
//!   site must not drive the board with a token it has seen (cross-site hijacking).
//! - Messages: text frames holding `{"type":"message","content":"…","session":"…"}`
//!   (`session` optional; else the upgrade's `X-Session-Id`, else `default`; the board's
//!   session `http:<key>`, shared with the completions API). Answers: `{"type":"delta",
//!   "content":"…"}` as the reply is written, then `{"type":"done","content":"<the whole
//!   reply>","session":"<key>"}`, or `{"type":"error","message":"…"}`. One turn at a time
//!   per connection: a message while one runs gets an error (the turn goes on). Turns
//!   pass the API's `turns` gate and run on channel `http`.
//! - Frames: a client frame must be masked, have no reserved bit or opcode, a control
//!   frame at most 125 bytes and unfragmented (else close 1002); a binary message: 1003;
//!   text that is not UTF-8: 1007; a message past `WS_MAX_MESSAGE_BYTES`: 1009. A ping is
//!   answered with a pong, a close with a close of the same code. Server frames are never
//!   masked.
//! - Quiet for `WS_IDLE_SECS`: the server pings; nothing back within `WS_PONG_SECS`: the
//!   connection is dropped. Shutdown: an idle connection is closed with 1001 at once, a
//!   turn running gets `Deps::grace`, then an error and 1001.
//!
//! # Bounds
//! A message of `WS_MAX_MESSAGE_BYTES`, its fragments together (a frame's declared length
//! is checked before its payload is read): per connection the message being joined and
//! one frame being read, each at most that, plus one read; one turn per connection; every
//! write within `HTTP_SERVER_WRITE_TIMEOUT_SECS`; the connection counts against
//! `http.max_connections` while it lives.
//!
//! # Threads
//! Executor thread.

use super::Server;
use super::complete::{SHUTTING_DOWN, session_key};
use super::conn::Conn;
use super::parse::Head;
use super::respond::Response;
use super::routes::Outcome;
use super::running::{Running, Step};
use crate::agent::commands;
use crate::chat::ChannelKind;
use crate::json::Writer;
use crate::limits::{WS_IDLE_SECS, WS_MAX_MESSAGE_BYTES, WS_PONG_SECS};
use smol::io::AsyncReadExt;
use std::net::Shutdown;
use std::pin::pin;
use std::time::{Duration, Instant};

/// RFC 6455's GUID appended to the key for the accept value.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// The subprotocol echoed when the token came as `bearer.<token>`.
pub const BEARER_PROTOCOL: &str = "bearer";
/// Bytes asked of the socket per read.
const READ_BYTES: usize = 4096;

const OP_CONT: u8 = 0;
const OP_TEXT: u8 = 1;
const OP_BINARY: u8 = 2;
const OP_CLOSE: u8 = 8;
const OP_PING: u8 = 9;
const OP_PONG: u8 = 10;

/// Close codes (RFC 6455 §7.4.1).
const GOING_AWAY: u16 = 1001;
const PROTOCOL: u16 = 1002;
const UNSUPPORTED: u16 = 1003;
const NOT_UTF8: u16 = 1007;
const TOO_BIG: u16 = 1009;

/// The token offered as a subprotocol `bearer.<token>`, if any.
pub fn protocol_token(protocols: Option<&str>) -> Option<&str> {
    protocols?
        .split(',')
        .map(str::trim)
        .find_map(|p| p.strip_prefix("bearer."))
}

/// `Sec-WebSocket-Accept` for `key`.
pub fn accept(key: &str) -> String {
    let d = ring::digest::digest(
        &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
        format!("{key}{GUID}").as_bytes(),
    );
    let mut out = Vec::with_capacity(28);
    crate::provider::upload::base64_into(d.as_ref(), &mut out);
    // base64 is ASCII.
    String::from_utf8(out).unwrap_or_default()
}

/// The 101 for `h`, or the refusal.
fn handshake(h: &Head) -> Result<String, Response> {
    let ws = &h.ws;
    if !ws.http11 || !ws.upgrade || !ws.connection_upgrade {
        return Err(Response::error(
            400,
            "This route is a WebSocket: send an HTTP/1.1 GET with Upgrade: websocket and Connection: Upgrade.",
        ));
    }
    if ws.version.as_deref() != Some("13") {
        return Err(Response::error(426, "Only WebSocket version 13 is spoken.")
            .with_header("Sec-WebSocket-Version", "13"));
    }
    let key = ws
        .key
        .as_deref()
        .filter(|k| k.len() == 24)
        .filter(|k| crate::provider::upload::base64_decode(k).is_some_and(|b| b.len() == 16))
        .ok_or_else(|| Response::error(400, "Sec-WebSocket-Key must be 16 bytes in base64."))?;
    // Browsers always send Origin on a WebSocket; a script may send none.
    if h.page.origin.is_some() && !super::login::same_origin(&h.page) {
        return Err(Response::error(
            403,
            "This page's origin is not the board's: open the page the board serves, or connect from a script without an Origin.",
        ));
    }
    let offered = ws
        .protocols
        .as_deref()
        .is_some_and(|p| p.split(',').any(|p| p.trim() == BEARER_PROTOCOL));
    Ok(format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n{}\r\n",
        accept(key),
        if offered {
            "Sec-WebSocket-Protocol: bearer\r\n"
        } else {
            ""
        }
    ))
}

/// One frame read from a client.
#[derive(Debug, PartialEq, Eq)]
pub struct Frame {
    pub fin: bool,
    pub opcode: u8,
    pub payload: Vec<u8>,
}

/// Parse the frame at the start of `buf`: `Ok(None)` while incomplete, else the frame
/// (unmasked) and its length; `Err` the close code. `max`: the largest payload taken.
pub fn parse_frame(buf: &[u8], max: usize) -> Result<Option<(Frame, usize)>, u16> {
    if buf.len() < 2 {
        return Ok(None);
    }
    let (b0, b1) = (buf[0], buf[1]);
    let fin = b0 & 0x80 != 0;
    let opcode = b0 & 0x0f;
    if b0 & 0x70 != 0 || !matches!(opcode, 0 | 1 | 2 | 8 | 9 | 10) || b1 & 0x80 == 0 {
        return Err(PROTOCOL);
    }
    let control = opcode >= 8;
    let (len, at) = match b1 & 0x7f {
        126 if buf.len() < 4 => return Ok(None),
        126 => (u16::from_be_bytes([buf[2], buf[3]]) as u64, 4),
        127 if buf.len() < 10 => return Ok(None),
        127 => {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[2..10]);
            (u64::from_be_bytes(b), 10)
        }
        n => (n as u64, 2),
    };
    if control && (!fin || len > 125) || len >> 63 != 0 {
        return Err(PROTOCOL);
    }
    if len > max as u64 {
        return Err(TOO_BIG);
    }
    let len = len as usize;
    let end = at + 4 + len;
    if buf.len() < end {
        return Ok(None);
    }
    let mask = [buf[at], buf[at + 1], buf[at + 2], buf[at + 3]];
    let payload = buf[at + 4..end]
        .iter()
        .enumerate()
        .map(|(i, b)| b ^ mask[i % 4])
        .collect();
    Ok(Some((
        Frame {
            fin,
            opcode,
            payload,
        },
        end,
    )))
}

/// A server frame (final, unmasked).
pub fn frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 10);
    out.push(0x80 | opcode);
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n if n <= 0xffff => {
            out.push(126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
    out
}

/// A close code a peer may send (RFC 6455 §7.4).
fn valid_close_code(code: u16) -> bool {
    matches!(code, 1000..=1003 | 1007..=1011 | 3000..=4999)
}

/// A JSON message to the client.
fn out(kind: &str, key: &str, text: &str, session: Option<&str>) -> Vec<u8> {
    let mut w = Writer::with_capacity(text.len() + 48);
    w.begin_object();
    w.field_str("type", kind);
    w.field_str(key, text);
    if let Some(s) = session {
        w.field_str("session", s);
    }
    w.end_object();
    frame(OP_TEXT, w.finish().as_bytes())
}

/// The sentence of an error answer.
fn message_of(r: &Response) -> String {
    crate::json::parse_value(&r.body)
        .ok()
        .and_then(|v| {
            crate::json::path(&v, &["error", "message"])
                .and_then(crate::json::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| "The message was refused.".into())
}

fn error(message: &str) -> Vec<u8> {
    out("error", "message", message, None)
}

/// A message the client sent: its text and session key (`Err`: the error to send).
fn parse_message(text: &str) -> Result<(String, Option<String>), &'static str> {
    let v = crate::json::parse_value(text)
        .map_err(|_| "The message is not JSON: send {\"type\":\"message\",\"content\":\"…\"}.")?;
    if crate::json::str_at(&v, "type") != Some("message") {
        return Err("Only {\"type\":\"message\",\"content\":\"…\"} is taken.");
    }
    let content = crate::json::str_at(&v, "content")
        .filter(|c| !c.trim().is_empty())
        .ok_or("The message's \"content\" must be non-empty text.")?;
    let session = match crate::json::get(&v, "session") {
        None | Some(miniserde::json::Value::Null) => None,
        Some(s) => Some(
            crate::json::as_str(s)
                .ok_or("\"session\" must be text.")?
                .to_string(),
        ),
    };
    Ok((content.to_string(), session))
}

/// What the connection waits for next.
enum Event {
    /// Bytes arrived.
    Data,
    Closed,
    Quiet,
    Stopping,
    /// The turn has text to send, or ended.
    Turn(Step),
    /// The shutdown's grace is over.
    Cut,
}

/// Serve `GET /ws` (authorized): the handshake, then the chat until it closes.
pub(super) async fn serve(c: &mut Conn<'_>, h: &Head) -> Outcome {
    let ok = match handshake(h) {
        Ok(ok) => ok,
        Err(r) => return Outcome::Answer(r.closing()),
    };
    let upgrade_key = h.session.clone();
    if let Err(r) = session_key(upgrade_key.as_deref()) {
        return Outcome::Answer(r.closing());
    }
    if !c.write_all(ok.as_bytes()).await {
        return Outcome::Streamed(false);
    }
    log::debug!("http: WebSocket open from {}", c.ip);
    let mut tail = Vec::new();
    let code = chat(c, upgrade_key.as_deref(), &mut tail).await;
    if let Some(code) = code {
        tail.extend(frame(OP_CLOSE, &code.to_be_bytes()));
    }
    if !tail.is_empty() {
        let _ = c.write_all(&tail).await;
    }
    if code.is_some() {
        c.linger(Duration::from_millis(crate::limits::HTTP_SERVER_LINGER_MS))
            .await;
    } else {
        let _ = c.stream.get_ref().shutdown(Shutdown::Both);
    }
    Outcome::Streamed(false)
}

/// The chat after the handshake; the close code to send (`None`: just drop the
/// connection, the close handshake done or impossible). What it answers is gathered in
/// `send` and written before it waits (one write per wake-up); what is left there when it
/// returns is written before the close.
async fn chat(c: &mut Conn<'_>, upgrade_key: Option<&str>, send: &mut Vec<u8>) -> Option<u16> {
    let srv: &Server = c.srv;
    let mut scratch = vec![0u8; READ_BYTES];
    // The message being assembled from fragments: its opcode and bytes.
    let mut message: Option<(u8, Vec<u8>)> = None;
    let mut quiet_since = Instant::now();
    let mut pinged = false;
    // The turn running and its session key.
    let mut turn: Option<(Running<'_>, String)> = None;
    let mut cut_off = pin!(srv.cut_off());
    loop {
        // Frames already read.
        loop {
            let parsed = match parse_frame(&c.buf, WS_MAX_MESSAGE_BYTES) {
                Ok(Some(p)) => p,
                Ok(None) => break,
                Err(code) => return Some(code),
            };
            let (f, used) = parsed;
            c.buf.drain(..used);
            quiet_since = Instant::now();
            pinged = false;
            match f.opcode {
                OP_PING => send.extend(frame(OP_PONG, &f.payload)),
                OP_PONG => {}
                OP_CLOSE => {
                    let code = match f.payload.len() {
                        0 => None,
                        1 => return Some(PROTOCOL),
                        _ => Some(u16::from_be_bytes([f.payload[0], f.payload[1]])),
                    };
                    if code.is_some_and(|c| !valid_close_code(c)) {
                        return Some(PROTOCOL);
                    }
                    if std::str::from_utf8(f.payload.get(2..).unwrap_or(&[])).is_err() {
                        return Some(NOT_UTF8);
                    }
                    let echo = code.map(u16::to_be_bytes);
                    send.extend(frame(OP_CLOSE, echo.as_ref().map_or(&[][..], |e| &e[..])));
                    return None;
                }
                op => {
                    let data = match (&mut message, op) {
                        (None, OP_CONT) | (Some(_), OP_TEXT | OP_BINARY) => {
                            return Some(PROTOCOL);
                        }
                        (None, OP_BINARY) => return Some(UNSUPPORTED),
                        (None, _) => message.insert((op, f.payload)),
                        (Some(m), _) => {
                            if m.1.len() + f.payload.len() > WS_MAX_MESSAGE_BYTES {
                                return Some(TOO_BIG);
                            }
                            m.1.extend_from_slice(&f.payload);
                            m
                        }
                    };
                    let _ = data;
                    if !f.fin {
                        continue;
                    }
                    let Some((_, bytes)) = message.take() else {
                        continue;
                    };
                    let Ok(text) = String::from_utf8(bytes) else {
                        return Some(NOT_UTF8);
                    };
                    let reply = if turn.is_some() {
                        Err(error(
                            "A reply is being written: send the next message after its \"done\".",
                        ))
                    } else {
                        start(srv, &text, upgrade_key)
                    };
                    match reply {
                        Ok(t) => turn = Some(t),
                        Err(now) => send.extend(now),
                    }
                }
            }
        }
        if c.buf.len() > WS_MAX_MESSAGE_BYTES + 14 {
            return Some(TOO_BIG);
        }
        if srv.stopping() && turn.is_none() {
            return Some(GOING_AWAY);
        }
        if !send.is_empty() {
            if !c.write_all(send).await {
                send.clear();
                return None;
            }
            send.clear();
        }
        // Wait for bytes, the turn, the quiet timer or the shutdown.
        let wait = if pinged { WS_PONG_SECS } else { WS_IDLE_SECS };
        let deadline = quiet_since + Duration::from_secs(wait);
        let stream = &c.stream;
        let read = async {
            match (&*stream).read(&mut scratch).await {
                Ok(0) | Err(_) => (Event::Closed, 0),
                Ok(n) => (Event::Data, n),
            }
        };
        let quiet = async {
            smol::Timer::at(deadline).await;
            (Event::Quiet, 0)
        };
        let running = turn.as_mut();
        let busy = running.is_some();
        let step = async {
            match running {
                Some((run, _)) => (Event::Turn(run.step().await), 0),
                None => std::future::pending().await,
            }
        };
        let stop = async {
            if busy {
                cut_off.as_mut().await;
                (Event::Cut, 0)
            } else {
                let _ = srv.stopping.recv().await;
                (Event::Stopping, 0)
            }
        };
        let (event, n) =
            smol::future::or(step, smol::future::or(read, smol::future::or(quiet, stop))).await;
        match event {
            Event::Data => c.buf.extend_from_slice(&scratch[..n]),
            Event::Closed => return None,
            Event::Quiet if pinged => return None,
            Event::Quiet => {
                send.extend(frame(OP_PING, b""));
                pinged = true;
                quiet_since = Instant::now();
            }
            Event::Stopping => return Some(GOING_AWAY),
            Event::Turn(Step::Text(text)) => send.extend(out("delta", "content", &text, None)),
            Event::Turn(Step::Done(result)) => {
                let Some((_, key)) = turn.take() else {
                    continue;
                };
                send.extend(match result {
                    Ok(answer) => {
                        crate::metrics::message_out(ChannelKind::Http);
                        out("done", "content", &answer, Some(&key))
                    }
                    Err(r) => error(&message_of(&r)),
                });
            }
            Event::Cut => {
                send.extend(error(SHUTTING_DOWN));
                return Some(GOING_AWAY);
            }
        }
    }
}

/// A started turn (with its session key), or what to send now (a command's answer, or
/// an error).
type Started<'t> = Result<(Running<'t>, String), Vec<u8>>;

/// Start the turn of the message `text`; it passes the API's gate first.
fn start<'t>(srv: &'t Server, text: &str, upgrade_key: Option<&str>) -> Started<'t> {
    let (content, session) = parse_message(text).map_err(error)?;
    let key =
        session_key(session.as_deref().or(upgrade_key)).map_err(|r| error(&message_of(&r)))?;
    let session = format!("http:{key}");
    crate::metrics::message_in(ChannelKind::Http);
    if let Some(answer) = commands::handle(&srv.deps.agent, &session, &content) {
        return Err(out("done", "content", &answer, Some(&key)));
    }
    Ok((Running::start(srv, session, content, true, true), key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(b0: u8, payload: &[u8]) -> Vec<u8> {
        let mask = [1u8, 2, 3, 4];
        let mut v = vec![b0];
        match payload.len() {
            n if n < 126 => v.push(0x80 | n as u8),
            n => {
                v.push(0x80 | 126);
                v.extend_from_slice(&(n as u16).to_be_bytes());
            }
        }
        v.extend_from_slice(&mask);
        v.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        v
    }

    #[test]
    fn the_accept_value_is_the_rfc_example() {
        // RFC 6455 §1.3.
        assert_eq!(
            accept("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn frames_are_read_and_refused_as_the_rfc_says() {
        let f = masked(0x81, b"hi");
        assert_eq!(parse_frame(&f[..3], 100), Ok(None));
        let (fr, used) = parse_frame(&f, 100).unwrap().unwrap();
        assert_eq!(
            (fr.fin, fr.opcode, &fr.payload[..], used),
            (true, 1, &b"hi"[..], 8)
        );
        let long = masked(0x81, &[b'a'; 300]);
        assert_eq!(
            parse_frame(&long, 1000).unwrap().unwrap().0.payload.len(),
            300
        );
        assert_eq!(parse_frame(&long, 299), Err(TOO_BIG));
        assert_eq!(
            parse_frame(&[0x81, 0x02, b'h', b'i'], 100),
            Err(PROTOCOL),
            "unmasked"
        );
        assert_eq!(parse_frame(&masked(0xc1, b"x"), 100), Err(PROTOCOL), "rsv1");
        assert_eq!(
            parse_frame(&masked(0x83, b"x"), 100),
            Err(PROTOCOL),
            "opcode 3"
        );
        assert_eq!(
            parse_frame(&masked(0x09, b"x"), 100),
            Err(PROTOCOL),
            "fragmented ping"
        );
        assert_eq!(
            parse_frame(&masked(0x89, &[0; 126]), 1000),
            Err(PROTOCOL),
            "long ping"
        );
    }

    #[test]
    fn server_frames_are_unmasked_with_the_right_length() {
        assert_eq!(frame(OP_TEXT, b"ok"), vec![0x81, 2, b'o', b'k']);
        assert_eq!(&frame(OP_TEXT, &[0; 200])[..4], &[0x81, 126, 0, 200]);
        assert_eq!(&frame(OP_TEXT, &[0; 70_000])[..2], &[0x81, 127]);
    }

    #[test]
    fn the_token_comes_from_the_protocols() {
        assert_eq!(
            protocol_token(Some("bearer, bearer.s3cret")),
            Some("s3cret")
        );
        assert_eq!(protocol_token(Some("chat")), None);
        assert_eq!(protocol_token(None), None);
    }
}
