//! Per-session turn queues: one turn at a time per session, a short bounded queue
//! behind it, and a "busy" answer (never a silent drop) beyond that.
//!
//! Why it exists: every channel that serves many chats (Telegram now, serial later)
//! needs the same rule, and it is easiest to get right as plain data with no I/O. The
//! channel offers each message; [`Offer::Run`] means "start a turn now", after which it
//! calls [`Router::next`] each time a turn ends, until it returns `None`.
//!
//! # Bounds
//! - Sessions: the table's capacity (`agent.max_sessions`). Idle sessions are evicted
//!   least recently used first; when every slot holds a running session, new sessions
//!   get [`Offer::Busy`].
//! - Queued messages: `MAX_QUEUED_PER_SESSION` per session; more get [`Offer::Busy`].
//! - So at most `capacity × (1 + MAX_QUEUED_PER_SESSION)` messages are held.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use super::session::SessionTable;
use crate::limits::MAX_QUEUED_PER_SESSION;
use std::collections::VecDeque;

/// The polite answer to a message that cannot be queued.
pub const BUSY_REPLY: &str = "I'm still working on your earlier messages. Please send this one again once I've answered them.";

/// What the channel should do with an offered message.
#[derive(Debug, PartialEq, Eq)]
pub enum Offer<M> {
    /// The session was idle: run this message now.
    Run(M),
    /// Queued behind the running turn.
    Queued,
    /// No room: answer with [`BUSY_REPLY`].
    Busy(M),
}

struct Slot<M> {
    running: bool,
    queue: VecDeque<M>,
}

impl<M> Slot<M> {
    fn idle(&self) -> bool {
        !self.running && self.queue.is_empty()
    }
}

/// The sessions' running flags and queues.
pub struct Router<M> {
    table: SessionTable<Slot<M>>,
}

impl<M> Router<M> {
    /// At most `capacity` sessions in RAM.
    pub fn new(capacity: usize) -> Router<M> {
        Router {
            table: SessionTable::new(capacity),
        }
    }

    /// Offer a message for `session`.
    pub fn offer(&mut self, session: &str, msg: M) -> Offer<M> {
        let Some(slot) = self.table.get_or_insert(
            session,
            || Slot {
                running: false,
                queue: VecDeque::new(),
            },
            Slot::idle,
        ) else {
            return Offer::Busy(msg);
        };
        if !slot.running {
            slot.running = true;
            return Offer::Run(msg);
        }
        if slot.queue.len() < MAX_QUEUED_PER_SESSION {
            slot.queue.push_back(msg);
            return Offer::Queued;
        }
        Offer::Busy(msg)
    }

    /// A turn of `session` ended: the next queued message to run, or `None` (the
    /// session is idle again).
    pub fn next(&mut self, session: &str) -> Option<M> {
        let slot = self.table.get_mut(session)?;
        let m = slot.queue.pop_front();
        if m.is_none() {
            slot.running = false;
        }
        m
    }

    /// Sessions in RAM.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Take every queued message (shutdown), with its session.
    pub fn drain_queued(&mut self) -> Vec<(String, M)> {
        let ids: Vec<String> = self.table.ids().map(str::to_string).collect();
        let mut out = Vec::new();
        for id in ids {
            if let Some(slot) = self.table.get_mut(&id) {
                out.extend(slot.queue.drain(..).map(|m| (id.clone(), m)));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_turn_at_a_time_then_the_queue_in_order() {
        let mut r: Router<u32> = Router::new(4);
        assert_eq!(r.offer("a", 1), Offer::Run(1));
        assert_eq!(r.offer("b", 10), Offer::Run(10));
        for i in 2..2 + MAX_QUEUED_PER_SESSION as u32 {
            assert_eq!(r.offer("a", i), Offer::Queued);
        }
        assert_eq!(r.offer("a", 99), Offer::Busy(99));
        for i in 2..2 + MAX_QUEUED_PER_SESSION as u32 {
            assert_eq!(r.next("a"), Some(i));
        }
        assert_eq!(r.next("a"), None);
        assert_eq!(r.offer("a", 7), Offer::Run(7));
    }

    #[test]
    fn a_table_full_of_running_sessions_answers_busy() {
        let mut r: Router<u32> = Router::new(2);
        assert_eq!(r.offer("a", 1), Offer::Run(1));
        assert_eq!(r.offer("b", 2), Offer::Run(2));
        assert_eq!(r.offer("c", 3), Offer::Busy(3));
        assert_eq!(r.next("b"), None);
        assert_eq!(r.offer("c", 3), Offer::Run(3), "idle b was evicted");
        assert_eq!(r.len(), 2);
        assert_eq!(r.next("gone"), None);
    }

    #[test]
    fn many_chats_never_grow_past_the_bound() {
        let mut r: Router<String> = Router::new(16);
        let mut rng = crate::testkit::XorShift(0x1234_5678);
        let mut held = 0usize;
        for _ in 0..20_000 {
            let x = rng.next();
            let s = format!("telegram:{}", x % 64);
            if x.is_multiple_of(3) {
                let _ = r.next(&s);
            } else if let Offer::Queued = r.offer(&s, "m".repeat(10)) {
                held += 1;
            }
            assert!(r.len() <= 16);
        }
        let drained = r.drain_queued();
        assert!(drained.len() <= 16 * MAX_QUEUED_PER_SESSION);
        assert!(held >= drained.len());
        assert!(r.drain_queued().is_empty());
    }
}
