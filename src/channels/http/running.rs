//! A turn running for an HTTP client, shared by `POST /v1/chat/completions` (streamed or
//! not) and `/ws`: the agent's turn, boxed (one copy of its state machine for both
//! routes), and the text it has written that the client has not been sent yet. The route
//! waits on [`Running::step`] beside its own events (pings, reads, the shutdown) and
//! writes what it gets in its own framing.
//!
//! # Bounds
//! The text not yet sent is the answer's own (the provider's bound); a turn not streamed
//! keeps none of it.
//!
//! # Threads
//! Executor thread (`Rc`, `RefCell`).

use super::Server;
use super::complete::{busy, failed};
use super::respond::Response;
use crate::agent::streaming::StreamSink;
use crate::chat::ChannelKind;
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;

/// What a running turn has for its client next.
pub(super) enum Step {
    /// Text the model wrote, to send now.
    Text(String),
    /// The answer, or the error's answer (the text before it was given as [`Step::Text`]).
    Done(Result<String, Response>),
}

/// The agent's turn, boxed: its answer, or the error's answer.
type Turn<'t> = Pin<Box<dyn Future<Output = Result<String, Response>> + 't>>;

/// The agent's turn in a session, with the text it has written and not yet sent.
pub(super) struct Running<'t> {
    /// `None` once it ended (its result is in `result` until taken).
    turn: Option<Turn<'t>>,
    result: Option<Result<String, Response>>,
    pending: Rc<RefCell<Pending>>,
    streamed: bool,
}

impl<'t> Running<'t> {
    /// Start the turn of `text` in `session` on channel `http`. `gate`: pass the API's
    /// turns gate first (a request past its queue gets the busy answer); else the caller
    /// holds its slot. `streamed`: the text is wanted as it comes (else only the answer).
    pub fn start(
        srv: &'t Server,
        session: String,
        text: String,
        gate: bool,
        streamed: bool,
    ) -> Running<'t> {
        let pending = Rc::new(RefCell::new(Pending::default()));
        let mut sink = SseSink(pending.clone());
        let turn = Box::pin(async move {
            let _slot = match gate {
                true => Some(srv.gate.enter(&session).await.map_err(|_| busy())?),
                false => None,
            };
            log::info!("http: turn in {session}");
            srv.deps
                .agent
                .run_turn_streamed(&session, ChannelKind::Http, &text, &mut sink)
                .await
                .map_err(|e| failed(&session, &e))
        });
        Running {
            turn: Some(turn),
            result: None,
            pending,
            streamed,
        }
    }

    /// Wait for text to send or the end. Any text written before the end comes first.
    pub async fn step(&mut self) -> Step {
        std::future::poll_fn(|cx| {
            if let Some(t) = &mut self.turn
                && let Poll::Ready(r) = t.as_mut().poll(cx)
            {
                self.turn = None;
                self.result = Some(r);
            }
            let mut p = self.pending.borrow_mut();
            if !self.streamed {
                // Nothing is sent, so a failed attempt can always be asked again.
                p.text.clear();
            } else if !p.text.is_empty() {
                return Poll::Ready(Step::Text(p.take()));
            }
            match self.result.take() {
                Some(r) => Poll::Ready(Step::Done(r)),
                None => Poll::Pending,
            }
        })
        .await
    }

    /// Some text was sent (a command's answer, or the "no answer" line, is never
    /// streamed: the caller sends it whole when none was).
    pub fn sent_any(&self) -> bool {
        self.pending.borrow().any
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
