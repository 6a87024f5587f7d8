//! `POST /v1/chat/completions`: a turn of the board's agent in a session of the API.
//!
//! - The session: `http:<key>`, the key from `X-Session-Id`, else the request's `user`,
//!   else `default` (one conversation for the token). Its history is the board's: only
//!   the request's last user message is new (`openai`).
//! - Order: through the API's `turns` gate (one turn per session, a bound of its own);
//!   past its queue: 429.
//! - A chat command (`/new`, `/status`, `/help`) is answered as on every channel.
//! - The turn runs on channel `http` (`http.deny_tools`; no approval can be asked over
//!   HTTP, so under `supervised` autonomy what needs one is refused, as for cron runs).
//! - `stream: false`: one `chat.completion` with the answer and the tokens the turn used.
//!   `stream: true`: an SSE stream of `chat.completion.chunk`s (the role, the text as the
//!   model writes it, the stop, the usage when `stream_options.include_usage`), ending
//!   with `data: [DONE]`. What the model says before it uses tools is streamed too,
//!   followed by a blank line. A failure after the stream began is an event
//!   `{"error":{…}}` before `[DONE]` (OpenAI's clients raise it).
//! - Shutdown: a turn still running `Deps::grace` after the signal is left; its client
//!   gets 503, or the error event.
//!
//! # Bounds
//! The text not yet written to a stream is the answer's own (the provider's bound); a
//! write waits at most `HTTP_SERVER_WRITE_TIMEOUT_SECS` (then the turn goes on unwatched
//! and its answer stays in the session); a quiet stream gets a comment every
//! `HTTP_SSE_PING_SECS`.
//!
//! # Threads
//! Executor thread.

use super::conn::{Body, Conn};
use super::openai::{self, Delta, Ids, Tokens};
use super::parse::Head;
use super::respond::Response;
use super::routes::Outcome;
use crate::agent::streaming::StreamSink;
use crate::agent::{AgentError, commands};
use crate::chat::ChannelKind;
use crate::limits::{HTTP_MAX_SESSION_KEY_BYTES, HTTP_SSE_PING_SECS};
use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::Duration;

pub(super) const SHUTTING_DOWN: &str = "yoctoclaw is restarting: ask again in a minute.";

/// Answer a completion request whose body was read.
pub async fn completions(c: &mut Conn<'_>, h: &Head, body: Body<'_>, keep: bool) -> Outcome {
    let srv = c.srv;
    let req = match openai::parse_request(&body.data) {
        Ok(r) => r,
        Err((status, m)) => return Outcome::Answer(Response::error(status, &m)),
    };
    drop(body);
    let key = match session_key(h.session.as_deref().or(req.user.as_deref())) {
        Ok(k) => k,
        Err(r) => return Outcome::Answer(r),
    };
    let session = format!("http:{key}");
    crate::metrics::message_in(ChannelKind::Http);
    let entered = smol::future::or(async { Some(srv.gate.enter(&session).await) }, async {
        srv.cut_off().await;
        None
    })
    .await;
    let _slot = match entered {
        Some(Ok(slot)) => slot,
        Some(Err(_)) => {
            return Outcome::Answer(
                Response::error(429, crate::agent::router::BUSY_REPLY)
                    .with_header("Retry-After", "10"),
            );
        }
        None => return Outcome::Answer(Response::error(503, SHUTTING_DOWN).closing()),
    };
    let ids = Ids {
        id: srv.completion_id(),
        created: crate::time::clock::now(),
        model: req.model.clone(),
    };
    let agent = &srv.deps.agent;
    let mut sse = req.stream.then(|| Sse::new(c, &ids, keep, !h.http10));
    let pending = Rc::new(RefCell::new(Pending::default()));
    let result = match commands::handle(agent, &session, &req.text) {
        Some(answer) => Ok((answer, Tokens::default())),
        None => turn(srv, &session, &req.text, &mut sse, &pending).await,
    };
    let Some(mut s) = sse else {
        return Outcome::Answer(match result {
            Ok((text, tokens)) => {
                crate::metrics::message_out(ChannelKind::Http);
                Response::json(200, openai::completion(&ids, &text, tokens))
            }
            Err(r) => r,
        });
    };
    let end = result.map(|(answer, tokens)| {
        // Nothing was streamed (a command's answer, or the "no answer" line, which is
        // returned, never streamed).
        if !pending.borrow().any {
            s.event(&openai::chunk(&ids, Delta::Text(&answer)));
        }
        tokens
    });
    let answered = end.is_ok();
    s.end(end, req.include_usage);
    let sent = s.flush().await;
    if sent && answered {
        crate::metrics::message_out(ChannelKind::Http);
    }
    Outcome::Streamed(sent)
}

/// Run the turn, its text written to `sse` as it comes (when streamed); its answer and
/// tokens, or the error's answer.
async fn turn(
    srv: &super::Server,
    session: &str,
    text: &str,
    sse: &mut Option<Sse<'_, '_>>,
    pending: &Rc<RefCell<Pending>>,
) -> Result<(String, Tokens), Response> {
    log::info!("http: turn in {session}");
    let db = &srv.deps.db;
    let mark = db.usage_mark().unwrap_or(i64::MAX);
    if let Some(s) = sse {
        s.flush().await;
    }
    let mut sink = SseSink(pending.clone());
    let mut turn = pin!(srv.deps.agent.run_turn_streamed(
        session,
        ChannelKind::Http,
        text,
        &mut sink
    ));
    let mut cut_off = pin!(srv.cut_off());
    let result = loop {
        let step = std::future::poll_fn(|cx| match turn.as_mut().poll(cx) {
            Poll::Ready(r) => Poll::Ready(Step::Done(r)),
            Poll::Pending if !pending.borrow().text.is_empty() => Poll::Ready(Step::Text),
            Poll::Pending => Poll::Pending,
        });
        let ping = async {
            smol::Timer::after(Duration::from_secs(HTTP_SSE_PING_SECS)).await;
            Step::Ping
        };
        let cut = async {
            cut_off.as_mut().await;
            Step::Cut
        };
        let step = smol::future::or(step, smol::future::or(ping, cut)).await;
        let Some(s) = sse.as_mut() else {
            // A whole answer: the text as it comes is not needed (nothing is sent, so
            // a failed attempt can always be asked again).
            match step {
                Step::Done(r) => break Some(r),
                Step::Cut => break None,
                _ => pending.borrow_mut().text.clear(),
            }
            continue;
        };
        match step {
            Step::Done(r) => break Some(r),
            Step::Cut => break None,
            Step::Text => {
                let text = pending.borrow_mut().take();
                s.event(&openai::chunk(s.ids, Delta::Text(&text)));
            }
            Step::Ping => s.chunk(b": ping\n\n"),
        }
        s.flush().await;
    };
    if let Some(s) = sse {
        let rest = pending.borrow_mut().take();
        if !rest.is_empty() {
            s.event(&openai::chunk(s.ids, Delta::Text(&rest)));
        }
    }
    match result {
        Some(Ok(answer)) => {
            let (prompt, completion) = db.usage_since(session, mark).unwrap_or_default();
            Ok((answer, Tokens { prompt, completion }))
        }
        Some(Err(e)) => Err(failed(session, &e)),
        None => Err(Response::error(503, SHUTTING_DOWN).closing()),
    }
}

/// The session key: `given` (trimmed) when it is a fit name, `default` when absent.
pub(super) fn session_key(given: Option<&str>) -> Result<String, Response> {
    let Some(k) = given.map(str::trim).filter(|k| !k.is_empty()) else {
        return Ok("default".into());
    };
    let fit = k.len() <= HTTP_MAX_SESSION_KEY_BYTES
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:@+=-/".contains(&b));
    if fit {
        Ok(k.to_string())
    } else {
        Err(Response::error(
            400,
            "The session (X-Session-Id, else the request's user) must be 1 to 64 letters, digits or . _ : @ + = - /.",
        ))
    }
}

/// The answer to a turn that failed.
pub(super) fn failed(session: &str, e: &AgentError) -> Response {
    log::warn!("http: the turn in {session} failed: {e}");
    let status = match e {
        AgentError::Budget(_) => 429,
        AgentError::Provider(_) | AgentError::Providers(_) => 502,
        AgentError::Store(_) => 500,
        AgentError::Stopped => 503,
    };
    Response::error(status, &format!("Sorry, I could not answer that: {e}"))
}

/// One step of a streamed turn.
enum Step {
    Done(Result<String, AgentError>),
    /// The sink has text to write.
    Text,
    Ping,
    /// The shutdown's grace is over.
    Cut,
}

/// The text a streamed turn has written and the stream has not sent yet.
#[derive(Default)]
pub(super) struct Pending {
    pub text: String,
    /// Some of the current attempt's text was sent (it cannot be taken back).
    sent: bool,
    /// This request's answer had text (a separator follows it when tools run next).
    round_text: bool,
    /// Any text was sent.
    any: bool,
}

impl Pending {
    pub fn take(&mut self) -> String {
        if !self.text.is_empty() {
            self.sent = true;
            self.any = true;
        }
        std::mem::take(&mut self.text)
    }
}

/// The turn's view of the stream.
pub(super) struct SseSink(pub Rc<RefCell<Pending>>);

impl StreamSink for SseSink {
    fn text(&mut self, delta: &str) {
        let mut p = self.0.borrow_mut();
        p.text.push_str(delta);
        p.round_text = true;
    }

    fn round_end(&mut self, more: bool) {
        let mut p = self.0.borrow_mut();
        if more && p.round_text {
            p.text.push_str("\n\n");
        }
        p.round_text = false;
        p.sent = false;
    }

    /// A failed attempt's text can be taken back while none of it was sent.
    fn retract(&mut self) -> bool {
        let mut p = self.0.borrow_mut();
        if p.sent {
            return false;
        }
        p.text.clear();
        p.round_text = false;
        true
    }
}

/// A streamed answer on a connection: SSE events, each one HTTP chunk (an HTTP/1.0
/// client has no chunked coding: the events go as they are and the connection's close
/// ends them), gathered and written by [`Sse::flush`].
struct Sse<'c, 'a> {
    c: &'c mut Conn<'a>,
    ids: &'c Ids,
    chunked: bool,
    /// Written at the next flush.
    out: Vec<u8>,
    /// No write failed yet (after one, nothing more is written).
    alive: bool,
}

impl<'c, 'a> Sse<'c, 'a> {
    /// The answer's head and the role's chunk, to be flushed.
    fn new(c: &'c mut Conn<'a>, ids: &'c Ids, keep: bool, chunked: bool) -> Sse<'c, 'a> {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n{}{}\r\n",
            if chunked {
                "Transfer-Encoding: chunked\r\n"
            } else {
                ""
            },
            if keep && chunked {
                ""
            } else {
                "Connection: close\r\n"
            }
        );
        let mut s = Sse {
            c,
            ids,
            chunked,
            out: head.into_bytes(),
            alive: true,
        };
        s.event(&openai::chunk(ids, Delta::Role));
        s
    }

    /// One HTTP chunk (or the bytes alone, unchunked).
    fn chunk(&mut self, data: &[u8]) {
        if !self.chunked {
            self.out.extend_from_slice(data);
            return;
        }
        self.out
            .extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
        self.out.extend_from_slice(data);
        self.out.extend_from_slice(b"\r\n");
    }

    /// `data: <json>` and a blank line.
    fn event(&mut self, json: &str) {
        self.chunk(format!("data: {json}\n\n").as_bytes());
    }

    /// The stop and the usage (or the error's JSON, as the answer's body would have
    /// been), `[DONE]`, the last chunk.
    fn end(&mut self, result: Result<Tokens, Response>, include_usage: bool) {
        match result {
            Ok(tokens) => {
                self.event(&openai::chunk(self.ids, Delta::Stop));
                if include_usage {
                    self.event(&openai::chunk(self.ids, Delta::Usage(tokens)));
                }
            }
            Err(r) => self.event(&r.body),
        }
        self.event("[DONE]");
        if self.chunked {
            self.out.extend_from_slice(b"0\r\n\r\n");
        }
    }

    /// Write what was gathered; whether the connection is still good.
    async fn flush(&mut self) -> bool {
        if self.alive && !self.out.is_empty() {
            self.alive = self.c.write_all(&self.out).await;
        }
        self.out.clear();
        self.alive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_keys_are_checked() {
        assert_eq!(session_key(None).unwrap(), "default");
        assert_eq!(session_key(Some("  ")).unwrap(), "default");
        assert_eq!(session_key(Some("01HX4Y2K3ZV")).unwrap(), "01HX4Y2K3ZV");
        assert_eq!(
            session_key(Some("a@b.c/d:e+f=g-h_i")).unwrap(),
            "a@b.c/d:e+f=g-h_i"
        );
        for bad in ["two words", "é", "a\nb", &"k".repeat(65)] {
            assert_eq!(session_key(Some(bad)).unwrap_err().status, 400, "{bad:?}");
        }
    }

    #[test]
    fn the_sink_takes_text_back_only_before_any_was_sent() {
        let p = Rc::new(RefCell::new(Pending::default()));
        let mut sink = SseSink(p.clone());
        sink.text("Let me look");
        assert!(sink.retract(), "nothing sent yet");
        assert!(p.borrow().text.is_empty());
        sink.text("Let me look.");
        assert_eq!(p.borrow_mut().take(), "Let me look.");
        sink.round_end(true);
        sink.text("Found");
        assert_eq!(p.borrow_mut().take(), "\n\nFound");
        sink.text(" it");
        assert!(!sink.retract(), "part of this answer was sent");
        assert!(p.borrow().any);
    }
}
