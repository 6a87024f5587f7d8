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
use super::running::{Running, Step};
use crate::agent::{AgentError, commands};
use crate::chat::ChannelKind;
use crate::limits::{HTTP_MAX_SESSION_KEY_BYTES, HTTP_SSE_PING_SECS};
use std::pin::pin;
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
            return Outcome::Answer(busy());
        }
        None => return Outcome::Answer(Response::error(503, SHUTTING_DOWN).closing()),
    };
    let ids = Ids {
        id: srv.completion_id(),
        created: crate::time::clock::now(),
        model: req.model.clone(),
    };
    let mut sse = req.stream.then(|| Sse::new(c, &ids, keep, !h.http10));
    let (result, streamed) = match commands::handle(&srv.deps.agent, &session, &req.text) {
        Some(answer) => (Ok((answer, Tokens::default())), false),
        None => turn(srv, session, req.text, &mut sse).await,
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
        if !streamed {
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

/// What woke a turn's client up.
enum Wake {
    Step(Step),
    Ping,
    /// The shutdown's grace is over.
    Cut,
}

/// Run the turn, its text written to `sse` as it comes (when streamed); its answer and
/// tokens, or the error's answer; and whether any text was streamed.
async fn turn(
    srv: &super::Server,
    session: String,
    text: String,
    sse: &mut Option<Sse<'_, '_>>,
) -> (Result<(String, Tokens), Response>, bool) {
    let db = &srv.deps.db;
    let mark = db.usage_mark().unwrap_or(i64::MAX);
    let mut run = Running::start(srv, session.clone(), text, false, sse.is_some());
    let mut cut_off = pin!(srv.cut_off());
    let result = loop {
        if let Some(s) = sse {
            s.flush().await;
        }
        let step = async { Wake::Step(run.step().await) };
        let ping = async {
            smol::Timer::after(Duration::from_secs(HTTP_SSE_PING_SECS)).await;
            Wake::Ping
        };
        let cut = async {
            cut_off.as_mut().await;
            Wake::Cut
        };
        match (
            smol::future::or(step, smol::future::or(ping, cut)).await,
            sse.as_mut(),
        ) {
            (Wake::Step(Step::Done(r)), _) => break r,
            (Wake::Cut, _) => break Err(Response::error(503, SHUTTING_DOWN).closing()),
            (Wake::Step(Step::Text(text)), Some(s)) => {
                s.event(&openai::chunk(s.ids, Delta::Text(&text)));
            }
            (Wake::Ping, Some(s)) => s.chunk(b": ping\n\n"),
            // A whole answer: nothing is sent before it.
            (_, None) => {}
        }
    };
    let result = result.map(|answer| {
        let (prompt, completion) = db.usage_since(&session, mark).unwrap_or_default();
        (answer, Tokens { prompt, completion })
    });
    (result, run.sent_any())
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

/// The answer to a request past the turns gate's queue.
pub(super) fn busy() -> Response {
    Response::error(429, crate::agent::router::BUSY_REPLY).with_header("Retry-After", "10")
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
}
