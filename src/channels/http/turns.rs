//! The HTTP API's turns, ordered like every channel's (`agent::router`): a session runs
//! one turn at a time, and what arrives for it meanwhile waits its turn, in order. The
//! API has its own bound of turns running at once, beside Telegram's: a flood of
//! requests waits here (or is refused), it never takes a turn Telegram's chats would run.
//!
//! # Bounds
//! At most `HTTP_MAX_RUNNING_TURNS` turns run at once, each of a different session; at
//! most `HTTP_MAX_WAITING_TURNS` requests wait (first come, first served, a request
//! skipping only those whose session is busy); more are refused ([`Busy`]).
//!
//! # Threads
//! Executor thread only (`RefCell`s, no locks).

use crate::limits::{HTTP_MAX_RUNNING_TURNS, HTTP_MAX_WAITING_TURNS};
use std::cell::{Cell, RefCell};

/// Too many requests wait already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

struct Waiter {
    id: u64,
    session: String,
    go: async_channel::Sender<()>,
}

/// Who runs and who waits.
pub struct Gate {
    running: RefCell<Vec<String>>,
    waiting: RefCell<Vec<Waiter>>,
    next_id: Cell<u64>,
    capacity: usize,
    max_waiting: usize,
}

impl Default for Gate {
    fn default() -> Self {
        Gate::new(HTTP_MAX_RUNNING_TURNS, HTTP_MAX_WAITING_TURNS)
    }
}

impl Gate {
    pub fn new(capacity: usize, max_waiting: usize) -> Gate {
        Gate {
            running: RefCell::new(Vec::new()),
            waiting: RefCell::new(Vec::new()),
            next_id: Cell::new(0),
            capacity: capacity.max(1),
            max_waiting,
        }
    }

    /// Turns running now.
    pub fn running(&self) -> usize {
        self.running.borrow().len()
    }

    /// Requests waiting now.
    pub fn waiting(&self) -> usize {
        self.waiting.borrow().len()
    }

    /// Wait for `session`'s turn; the turn lasts as long as the returned [`Slot`].
    /// Dropping the future while it waits leaves the queue as if it never came.
    pub async fn enter(&self, session: &str) -> Result<Slot<'_>, Busy> {
        let rx = {
            let mut running = self.running.borrow_mut();
            let mut waiting = self.waiting.borrow_mut();
            let queued_before = waiting.iter().any(|w| w.session == session);
            if running.len() < self.capacity
                && !running.iter().any(|s| s == session)
                && !queued_before
            {
                running.push(session.to_string());
                return Ok(self.slot(session));
            }
            if waiting.len() >= self.max_waiting {
                return Err(Busy);
            }
            let id = self.next_id.get();
            self.next_id.set(id + 1);
            let (go, rx) = async_channel::bounded(1);
            waiting.push(Waiter {
                id,
                session: session.to_string(),
                go,
            });
            (id, rx)
        };
        let mut guard = Queued {
            gate: self,
            id: rx.0,
            session,
            rx: rx.1,
            taken: false,
        };
        // The granting side moved the session to `running` before sending: once this
        // returns, the turn is ours.
        let _ = guard.rx.recv().await;
        guard.taken = true;
        Ok(self.slot(session))
    }

    fn slot<'a>(&'a self, session: &str) -> Slot<'a> {
        Slot {
            gate: self,
            session: session.to_string(),
        }
    }

    /// `session`'s turn ended: start the waiting ones that can run now, in order.
    fn release(&self, session: &str) {
        let mut running = self.running.borrow_mut();
        if let Some(i) = running.iter().position(|s| s == session) {
            running.swap_remove(i);
        }
        let mut waiting = self.waiting.borrow_mut();
        let mut i = 0;
        while running.len() < self.capacity && i < waiting.len() {
            let w = &waiting[i];
            // A session waiting behind its own earlier request is not overtaken by it.
            let busy = running.contains(&w.session)
                || waiting.iter().take(i).any(|e| e.session == w.session);
            if busy {
                i += 1;
                continue;
            }
            let w = waiting.remove(i);
            running.push(w.session.clone());
            // The receiver lives while the waiter is queued (its guard removes it).
            let _ = w.go.try_send(());
        }
    }
}

/// A running turn of a session; ends when dropped.
pub struct Slot<'a> {
    gate: &'a Gate,
    session: String,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.gate.release(&self.session);
    }
}

/// A request waiting in the queue; dropped before its turn came, it leaves the queue, and
/// if its turn came meanwhile (a waiter leaves the queue only so), passes it on.
struct Queued<'a> {
    gate: &'a Gate,
    id: u64,
    session: &'a str,
    rx: async_channel::Receiver<()>,
    /// The turn came and the slot was made: nothing to undo.
    taken: bool,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if self.taken {
            return;
        }
        let mut waiting = self.gate.waiting.borrow_mut();
        match waiting.iter().position(|w| w.id == self.id) {
            Some(i) => {
                waiting.remove(i);
            }
            None => {
                drop(waiting);
                self.gate.release(self.session);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    fn poll<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        f.poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn one_turn_per_session_and_at_most_the_capacity() {
        let g = Gate::new(2, 3);
        let a1 = smol::block_on(g.enter("a")).unwrap();
        let b1 = smol::block_on(g.enter("b")).unwrap();
        assert_eq!(g.running(), 2);
        let mut c1 = pin!(g.enter("c"));
        assert!(poll(c1.as_mut()).is_pending());
        let mut a2 = pin!(g.enter("a"));
        assert!(poll(a2.as_mut()).is_pending());
        let mut c2 = pin!(g.enter("c"));
        assert!(poll(c2.as_mut()).is_pending());
        assert_eq!(g.waiting(), 3);
        assert_eq!(smol::block_on(g.enter("d")).err(), Some(Busy));
        // b ends: c1 runs (first in line), not c2 (its own session's earlier request).
        drop(b1);
        let Poll::Ready(Ok(c1)) = poll(c1.as_mut()) else {
            panic!("c1 runs");
        };
        assert!(poll(c2.as_mut()).is_pending());
        // a ends: a2 runs.
        drop(a1);
        let Poll::Ready(Ok(a2)) = poll(a2.as_mut()) else {
            panic!("a2 runs");
        };
        drop(c1);
        assert!(poll(c2.as_mut()).is_ready());
        drop(a2);
    }

    #[test]
    fn a_waiter_that_goes_away_leaves_no_trace() {
        let g = Gate::new(1, 4);
        let a = smol::block_on(g.enter("a")).unwrap();
        {
            let mut b = pin!(g.enter("b"));
            assert!(poll(b.as_mut()).is_pending());
            assert_eq!(g.waiting(), 1);
        }
        assert_eq!(g.waiting(), 0);
        {
            // Granted, then dropped before it ran: the turn passes on.
            let mut b = pin!(g.enter("b"));
            assert!(poll(b.as_mut()).is_pending());
            drop(a);
            assert_eq!(g.running(), 1);
        }
        assert_eq!((g.running(), g.waiting()), (0, 0));
        let _c = smol::block_on(g.enter("c")).unwrap();
        assert_eq!(g.running(), 1);
    }
}
