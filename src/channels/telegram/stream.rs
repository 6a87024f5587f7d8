//! Streamed replies on Telegram (`provider.stream = true`), the executor's side: the
//! answer appears and grows while the model writes it, then becomes exactly the message
//! a non-streamed reply would have been.
//!
//! How: the turn's [`LiveSink`] collects the visible text (the agent's `MarkupFilter`
//! has already held back tool-call markup) into a `LiveReply` (`live`) shared with the
//! sender thread. [`Streamer::pump`] queues a `Preview` job on the `Outbox` when there
//! is new text, no preview is queued, and the debounce allows it; the sender thread
//! shows it (`preview`). When the turn ends, [`Streamer::settle`] waits until the final
//! answer may go out, and the bot queues a `StreamEnd` job with it.
//!
//! # Bounds
//! - At most one preview per reply is queued or being sent; newer text replaces older
//!   (the sender reads the latest text when it reaches the job). When the sender's
//!   queue is full the preview is skipped and tried again after the debounce.
//! - Previews of a reply are at least `STREAM_EDIT_INTERVAL_MS` apart, the first one
//!   that long after the turn began (a quick answer goes out as one message), and none
//!   before a 429's `retry_after` has passed. The final answer waits the same way, for
//!   at most `MAX_SETTLE_SECS` (then the sender's own 429 handling applies).
//!
//! # Threads
//! Executor only: [`Streamer`] and [`LiveSink`] never block; they wait on timers and on
//! the `LiveReply`'s wake-ups.

use super::live::LiveReply;
use super::outbox::{Job, Outbox};
use crate::agent::streaming::StreamSink;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Least time between two previews (drafts or edits) of one reply, and before the first.
pub const STREAM_EDIT_INTERVAL_MS: u64 = 1_000;
/// Longest wait before the final answer is queued (for a pending preview, the debounce
/// or a 429).
pub const MAX_SETTLE_SECS: u64 = 10;

/// The executor's side of one streamed reply: the sink for the turn, the pump that
/// queues previews, and the wait before the final answer.
pub struct Streamer {
    live: Arc<LiveReply>,
    woken: async_channel::Receiver<()>,
}

impl Streamer {
    /// A reply to `chat_id` (answering `reply_to` in groups), previews at most once per
    /// `STREAM_EDIT_INTERVAL_MS`.
    pub fn new(chat_id: i64, reply_to: Option<i64>) -> Streamer {
        Streamer::with_interval(
            chat_id,
            reply_to,
            Duration::from_millis(STREAM_EDIT_INTERVAL_MS),
        )
    }

    pub fn with_interval(chat_id: i64, reply_to: Option<i64>, interval: Duration) -> Streamer {
        let (live, woken) = LiveReply::new(chat_id, reply_to, interval);
        Streamer { live, woken }
    }

    /// The sink to hand to `Agent::run_turn_streamed`.
    pub fn sink(&self) -> LiveSink {
        LiveSink {
            live: self.live.clone(),
        }
    }

    /// The shared reply, for the `StreamEnd` job.
    pub fn live(&self) -> Arc<LiveReply> {
        self.live.clone()
    }

    /// Queue previews as text arrives, debounced. Never returns: race it with the turn.
    pub async fn pump(&self, outbox: &Outbox) {
        loop {
            match self.live.next_preview_at() {
                Some(at) if at <= Instant::now() => {
                    if self.live.begin_preview()
                        && !outbox.try_push(Job::Preview(self.live.clone()))
                    {
                        // The sender's queue is full: this preview is skipped, try later.
                        self.live.cancel_preview();
                        smol::Timer::after(self.live.interval).await;
                    }
                }
                Some(at) => {
                    smol::future::or(
                        async {
                            let _ = self.woken.recv().await;
                        },
                        async {
                            smol::Timer::at(at).await;
                        },
                    )
                    .await;
                }
                None => {
                    if self.woken.recv().await.is_err() {
                        // Cannot happen (the sender lives in `live`); never spin.
                        std::future::pending::<()>().await;
                    }
                }
            }
        }
    }

    /// Wait until the final answer may go out: no preview pending, the debounce after
    /// the last edit passed, no 429 in force; at most `MAX_SETTLE_SECS`.
    pub async fn settle(&self) {
        let limit = Instant::now() + Duration::from_secs(MAX_SETTLE_SECS);
        loop {
            let now = Instant::now();
            if now >= limit {
                return;
            }
            match self.live.settled_at(now) {
                Some(at) if at <= now => return,
                Some(at) => {
                    smol::Timer::at(at.min(limit)).await;
                }
                None => {
                    smol::future::or(
                        async {
                            let _ = self.woken.recv().await;
                        },
                        async {
                            smol::Timer::at(limit).await;
                        },
                    )
                    .await;
                }
            }
        }
    }
}

/// The turn's view of a streamed reply: keeps the current request's visible text.
pub struct LiveSink {
    live: Arc<LiveReply>,
}

impl StreamSink for LiveSink {
    fn text(&mut self, delta: &str) {
        self.live.push_text(delta);
    }

    fn round_end(&mut self, more: bool) {
        if more {
            // What the model said before its tool calls stays shown until the next
            // request writes something.
            self.live.end_round();
        }
    }

    /// A failed attempt's text is replaced by the next attempt's, in the same draft or
    /// message (and the final answer replaces whatever is shown): always possible.
    fn retract(&mut self) -> bool {
        self.live.end_round();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sink_keeps_the_text_of_the_current_request() {
        let s = Streamer::with_interval(-5, None, Duration::ZERO);
        let mut sink = s.sink();
        sink.text("Let me look.");
        sink.round_end(true);
        assert_eq!(s.live().lock().text, "Let me look.", "kept until new text");
        sink.text("Found");
        sink.round_end(false);
        sink.text(" it");
        assert_eq!(s.live().lock().text, "Found it");
        assert!(sink.retract(), "a cut attempt's text can be replaced");
        sink.text("Again");
        assert_eq!(s.live().lock().text, "Again");
    }

    #[test]
    fn the_pump_queues_one_preview_per_new_text() {
        let s = Streamer::with_interval(-5, None, Duration::ZERO);
        let (outbox, rx) = Outbox::new(Default::default());
        let mut sink = s.sink();
        sink.text("hello");
        let job = smol::block_on(smol::future::or(
            async {
                s.pump(&outbox).await;
                None
            },
            async { rx.rx.recv().await.ok() },
        ));
        let Some(Job::Preview(live)) = job else {
            panic!("{job:?}");
        };
        assert!(Arc::ptr_eq(&live, &s.live()));
        assert!(
            live.lock().pending,
            "marked queued until the sender is done"
        );
        // While it is pending, more text queues nothing more.
        sink.text(" you");
        assert_eq!(live.next_preview_at(), None);
        assert!(rx.rx.try_recv().is_err());
    }

    #[test]
    fn settle_returns_at_once_when_nothing_is_pending() {
        let s = Streamer::with_interval(-5, None, Duration::ZERO);
        s.sink().text("x");
        smol::block_on(s.settle());
        assert!(!s.live().lock().pending);
    }
}
