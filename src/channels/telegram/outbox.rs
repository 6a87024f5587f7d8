//! The executor's handle on the Telegram sender thread: a bounded queue of [`Job`]s
//! (replies, notices, "typing…", deliveries, streamed previews and their end) plus a
//! count of unfinished jobs, so shutdown can wait for the last replies.
//!
//! Why it exists: the executor must never block on Telegram. It queues work here and
//! moves on; the sender thread (`sender`) runs the jobs in order. A reply waits for
//! room in the queue (back-pressure, never dropped); "typing…" and previews are
//! best-effort: dropped when the queue is full or Telegram is failing (the sender's
//! last call failed). Outcomes come back for [`Outbox::deliver`] (heartbeat, cron, the
//! `send_message` tool) and for replies that carry a turn: [`Outbox::delivered`] yields
//! the turns whose answer needs no more sending (docs/DECISIONS.md 74).
//!
//! # Bounds
//! At most `SEND_QUEUE_LEN` jobs wait; [`Outbox::push`] then waits, [`Outbox::try_push`]
//! gives up. At most `DELIVERED_QUEUE_LEN` delivered turns wait for the executor (more
//! are not reported: their answer is sent again after a restart, a duplicate rather
//! than a loss).
//!
//! # Threads
//! Executor side: every method of [`Outbox`] is async or returns at once. The
//! [`OutboxReceiver`] is handed to the sender thread at start-up and read only there
//! (`sender::sender_loop`).

use super::live::LiveReply;
use super::reply::{DeliveryResult, SendError, Undelivered};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Jobs waiting for the sender thread.
pub const SEND_QUEUE_LEN: usize = 32;
/// Delivered turns waiting for the executor to record them.
pub const DELIVERED_QUEUE_LEN: usize = 64;

/// Work for the sender thread.
#[derive(Debug, Clone)]
pub enum Job {
    /// A model answer in markdown (sent as HTML, plain if Telegram refuses it), or a
    /// short fixed text (refusal, busy, command output: `markdown` false, plain).
    /// `turn` (0: none) is reported on [`Outbox::delivered`] once it needs no more
    /// sending.
    Reply {
        chat_id: i64,
        text: String,
        reply_to: Option<i64>,
        markdown: bool,
        turn: i64,
    },
    /// Show "typing…" (best effort).
    Typing { chat_id: i64 },
    /// A heartbeat or cron delivery, sent like a `Reply`; the outcome goes back on
    /// `done` so the scheduler records what really happened.
    Delivery {
        chat_id: i64,
        text: String,
        done: async_channel::Sender<DeliveryResult>,
    },
    /// Show a streamed reply's text so far (one attempt; see `preview`).
    Preview(Arc<LiveReply>),
    /// A streamed reply ended with `text`: make what the chat shows the final answer.
    StreamEnd {
        live: Arc<LiveReply>,
        text: String,
        turn: i64,
    },
}

impl Job {
    /// A plain text to a chat, for no turn.
    pub fn notice(chat_id: i64, text: impl Into<String>, reply_to: Option<i64>) -> Job {
        Job::Reply {
            chat_id,
            text: text.into(),
            reply_to,
            markdown: false,
            turn: 0,
        }
    }
}

/// The executor's handle on the sender thread.
#[derive(Clone)]
pub struct Outbox {
    tx: async_channel::Sender<Job>,
    /// Jobs pushed and not yet finished by the sender thread.
    pending: Arc<AtomicUsize>,
    /// The sender's last Bot API call failed (`Api::down_flag`).
    down: Arc<AtomicBool>,
    delivered: async_channel::Receiver<i64>,
}

impl fmt::Debug for Outbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outbox")
            .field("pending", &self.pending.load(Ordering::SeqCst))
            .finish()
    }
}

/// The sender thread's end of an [`Outbox`].
pub struct OutboxReceiver {
    /// Read only by `sender::sender_loop`, on the sender thread.
    pub(super) rx: async_channel::Receiver<Job>,
    /// Decremented by the sender thread when a job is finished.
    pub(super) pending: Arc<AtomicUsize>,
    /// Where the sender reports the turns whose answer needs no more sending.
    pub(super) delivered: async_channel::Sender<i64>,
}

impl Outbox {
    /// The queue to a sender thread whose Bot API client sets `down` (`Api::down_flag`).
    pub fn new(down: Arc<AtomicBool>) -> (Outbox, OutboxReceiver) {
        let (tx, rx) = async_channel::bounded(SEND_QUEUE_LEN);
        let (delivered_tx, delivered) = async_channel::bounded(DELIVERED_QUEUE_LEN);
        let pending = Arc::new(AtomicUsize::new(0));
        (
            Outbox {
                tx,
                pending: pending.clone(),
                down,
                delivered,
            },
            OutboxReceiver {
                rx,
                pending,
                delivered: delivered_tx,
            },
        )
    }

    /// The turns whose answer was delivered (or can never be), as the sender reports them.
    pub fn delivered(&self) -> &async_channel::Receiver<i64> {
        &self.delivered
    }

    /// Queue a job, waiting while the queue is full. `false` when the sender is gone.
    pub async fn push(&self, job: Job) -> bool {
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.tx.send(job).await.is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// Queue a job unless the queue is full or Telegram is failing (for "typing…",
    /// previews and the notices of a shutdown).
    pub fn try_push(&self, job: Job) -> bool {
        if self.down.load(Ordering::Relaxed) {
            return false;
        }
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.tx.try_send(job).is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// Deliver markdown `text` to a chat like a reply and wait for the outcome.
    pub async fn deliver(&self, chat_id: i64, text: &str) -> DeliveryResult {
        let gone = Undelivered {
            error: SendError::Stopped,
            sent: 0,
        };
        let (done, outcome) = async_channel::bounded(1);
        let job = Job::Delivery {
            chat_id,
            text: text.to_string(),
            done,
        };
        if !self.push(job).await {
            return Err(gone);
        }
        outcome.recv().await.unwrap_or(Err(gone))
    }

    /// Nothing queued and nothing being sent.
    pub fn is_idle(&self) -> bool {
        self.pending.load(Ordering::SeqCst) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outbox_counts_unfinished_jobs() {
        let down = Arc::new(AtomicBool::new(true));
        let (o, r) = Outbox::new(down.clone());
        assert!(!o.try_push(Job::Typing { chat_id: 1 }), "Telegram is failing");
        assert!(o.is_idle());
        down.store(false, Ordering::Relaxed);
        assert!(o.try_push(Job::Typing { chat_id: 1 }));
        assert!(!o.is_idle());
        let job = r.rx.try_recv().unwrap();
        assert!(matches!(job, Job::Typing { chat_id: 1 }));
        r.pending.fetch_sub(1, Ordering::SeqCst);
        assert!(o.is_idle());
        drop(r);
        assert!(!o.try_push(Job::Typing { chat_id: 1 }));
        assert!(o.is_idle());
    }

    #[test]
    fn deliver_reports_what_the_sender_answers_or_that_it_is_gone() {
        let (o, r) = Outbox::new(Arc::default());
        let sender = std::thread::spawn(move || {
            for answer in [Some(Ok(2)), None] {
                let Ok(Job::Delivery {
                    chat_id,
                    text,
                    done,
                }) = r.rx.recv_blocking()
                else {
                    panic!("not a delivery");
                };
                assert_eq!((chat_id, text.as_str()), (5, "hi"));
                // `None`: the job ends without an answer (the sender thread died).
                if let Some(a) = answer {
                    done.try_send(a).unwrap();
                }
                r.pending.fetch_sub(1, Ordering::SeqCst);
            }
        });
        let gone = Err(Undelivered {
            error: SendError::Stopped,
            sent: 0,
        });
        assert_eq!(smol::block_on(o.deliver(5, "hi")), Ok(2));
        assert_eq!(smol::block_on(o.deliver(5, "hi")), gone);
        sender.join().unwrap();
        assert!(o.is_idle());
        // The receiver is dropped: nothing is queued and the delivery says so.
        assert_eq!(smol::block_on(o.deliver(5, "hi")), gone);
        assert!(o.is_idle());
    }
}
