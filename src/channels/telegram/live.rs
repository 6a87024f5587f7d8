//! The state of one streamed reply, shared by the executor (which adds text and
//! decides when to queue a preview) and the sender thread (which shows it).
//!
//! Why it exists: a streamed reply is written on the executor and shown on the sender
//! thread; this is the one place both touch. Everything else about streaming runs on
//! one side only (`stream` on the executor, `preview` on the sender thread).
//!
//! # Bounds
//! - The kept text is at most `MAX_PREVIEW_BYTES` of the current model request's text
//!   (cut at a char boundary; later deltas are dropped until the next round).
//! - The wake channel holds one signal (extra signals are dropped: one is enough).
//!
//! # Threads
//! Shared: called from the executor and the sender thread; the `Mutex` is never held
//! across I/O or an await (each method takes it, copies or updates, and lets go).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Most bytes of streamed text kept for previews.
pub const MAX_PREVIEW_BYTES: usize = 16 * 1024;

/// Draft ids: non-zero, different for every reply of the process.
static NEXT_DRAFT_ID: AtomicI64 = AtomicI64::new(1);

/// A fresh draft id (any thread).
pub(super) fn next_draft_id() -> i64 {
    let n = NEXT_DRAFT_ID.fetch_add(1, Ordering::Relaxed);
    n.rem_euclid(i64::from(i32::MAX)) + 1
}

/// What the chat shows of a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shown {
    Nothing,
    Draft(i64),
    Message(i64),
    /// The streamed message cannot be edited (deleted, chat gone): no more previews;
    /// the answer goes out as new messages.
    Off,
}

/// What both sides know of one streamed reply (behind [`LiveReply`]'s lock).
#[derive(Debug)]
pub(super) struct State {
    /// Visible text of the current model request (at most `MAX_PREVIEW_BYTES`).
    pub(super) text: String,
    /// `text` reached its cap: later deltas are not kept.
    full: bool,
    /// A tool round ended: the next delta starts a new text.
    new_round: bool,
    /// `text` changed since a preview last took it.
    pub(super) dirty: bool,
    /// A preview is queued or being sent.
    pub(super) pending: bool,
    pub(super) shown: Shown,
    /// Previews as HTML (until Telegram refuses our HTML).
    pub(super) html: bool,
    /// The text and mode the streamed message or draft shows now.
    pub(super) showing: Option<(String, bool)>,
    /// When the last preview call was made.
    pub(super) last_sent: Option<Instant>,
    /// No call before this (a 429's `retry_after`).
    pub(super) not_before: Option<Instant>,
}

/// One streamed reply, shared by the executor and the sender thread.
#[derive(Debug)]
pub struct LiveReply {
    pub chat_id: i64,
    pub reply_to: Option<i64>,
    /// When the turn began (the first preview waits `interval` after it).
    pub(super) started: Instant,
    /// Least time between two previews.
    pub(super) interval: Duration,
    state: Mutex<State>,
    /// Wakes the executor side (new text, a preview done).
    wake: async_channel::Sender<()>,
}

impl LiveReply {
    /// A reply to `chat_id` (answering `reply_to` in groups), previews at most once per
    /// `interval`; the receiver is woken when text arrives or a preview is done.
    pub(super) fn new(
        chat_id: i64,
        reply_to: Option<i64>,
        interval: Duration,
    ) -> (Arc<LiveReply>, async_channel::Receiver<()>) {
        let (wake, woken) = async_channel::bounded(1);
        let live = Arc::new(LiveReply {
            chat_id,
            reply_to,
            started: Instant::now(),
            interval,
            state: Mutex::new(State {
                text: String::new(),
                full: false,
                new_round: false,
                dirty: false,
                pending: false,
                shown: Shown::Nothing,
                html: true,
                showing: None,
                last_sent: None,
                not_before: None,
            }),
            wake,
        });
        (live, woken)
    }

    /// The state, to read or update; never held across I/O or an await.
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a panic elsewhere; the state is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Add streamed text (executor; wakes the executor side when text was kept).
    pub(super) fn push_text(&self, delta: &str) {
        {
            let mut st = self.lock();
            if st.new_round {
                st.text.clear();
                st.full = false;
                st.new_round = false;
            }
            if st.full {
                return;
            }
            let room = MAX_PREVIEW_BYTES.saturating_sub(st.text.len());
            let mut take = delta.len().min(room);
            while !delta.is_char_boundary(take) {
                take -= 1;
            }
            st.text.push_str(&delta[..take]);
            if take < delta.len() {
                st.full = true;
            }
            if take > 0 {
                st.dirty = true;
            }
        }
        self.wake();
    }

    /// When the next preview may be queued; `None` while nothing needs showing.
    pub(super) fn next_preview_at(&self) -> Option<Instant> {
        let st = self.lock();
        if st.pending || !st.dirty || st.shown == Shown::Off {
            return None;
        }
        let mut at = self.started + self.interval;
        if let Some(t) = st.last_sent {
            at = at.max(t + self.interval);
        }
        if let Some(t) = st.not_before {
            at = at.max(t);
        }
        Some(at)
    }

    /// When the final answer may be queued; `None` while a preview is pending.
    pub(super) fn settled_at(&self, now: Instant) -> Option<Instant> {
        let st = self.lock();
        if st.pending {
            return None;
        }
        let mut at = st.not_before.unwrap_or(now);
        if let (Shown::Message(_), Some(t)) = (st.shown, st.last_sent) {
            at = at.max(t + self.interval);
        }
        Some(at)
    }

    /// Mark a preview as queued; `false` when one already is.
    pub(super) fn begin_preview(&self) -> bool {
        let mut st = self.lock();
        if st.pending {
            return false;
        }
        st.pending = true;
        true
    }

    /// The preview marked by `begin_preview` could not be queued after all.
    pub(super) fn cancel_preview(&self) {
        self.lock().pending = false;
    }

    /// A tool round ended: the next delta starts a new text (what the model said before
    /// its tool calls stays shown until then).
    pub(super) fn end_round(&self) {
        self.lock().new_round = true;
    }

    /// Wake the executor side (a full channel already holds a wake-up).
    pub(super) fn wake(&self) {
        let _ = self.wake.try_send(());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_rounds_restart_the_text_and_nothing_is_kept_past_the_cap() {
        let (live, woken) = LiveReply::new(-5, None, Duration::ZERO);
        live.push_text("Let me look.");
        assert!(woken.try_recv().is_ok(), "new text wakes the executor");
        live.end_round();
        assert_eq!(live.lock().text, "Let me look.");
        live.push_text("Found");
        assert_eq!(live.lock().text, "Found");
        // 16,379 bytes of room hold 8,189 two-byte chars: cut at a char boundary.
        live.push_text(&"é".repeat(MAX_PREVIEW_BYTES));
        {
            let st = live.lock();
            assert!(st.full && st.dirty);
            assert_eq!(st.text.len(), MAX_PREVIEW_BYTES - 1);
            assert!(st.text.starts_with("Foundé") && st.text.ends_with('é'));
        }
        live.push_text("more");
        assert!(
            !live.lock().text.ends_with("more"),
            "nothing kept past the cap"
        );
        // A new round starts from nothing again.
        live.end_round();
        live.push_text("next");
        assert_eq!(live.lock().text, "next");
    }

    #[test]
    fn one_preview_at_a_time_and_the_final_answer_waits_for_it() {
        let (live, _woken) = LiveReply::new(-5, None, Duration::from_secs(1));
        assert_eq!(live.next_preview_at(), None, "nothing to show yet");
        live.push_text("x");
        let first = live.next_preview_at().unwrap();
        assert!(first >= live.started + Duration::from_secs(1));
        let now = Instant::now();
        assert_eq!(live.settled_at(now), Some(now));
        assert!(live.begin_preview());
        assert!(!live.begin_preview());
        assert_eq!(live.next_preview_at(), None);
        assert_eq!(
            live.settled_at(now),
            None,
            "a pending preview holds the answer"
        );
        live.cancel_preview();
        assert_eq!(live.next_preview_at(), Some(first));
    }

    #[test]
    fn draft_ids_are_positive_and_never_repeat_in_a_row() {
        let a = next_draft_id();
        let b = next_draft_id();
        assert!(a > 0 && b > 0 && a != b);
        assert!(a <= i64::from(i32::MAX) && b <= i64::from(i32::MAX));
    }
}
