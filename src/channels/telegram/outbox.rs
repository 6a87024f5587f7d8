//! The executor's handle on the Telegram sender thread: a bounded queue of [`Job`]s
//! (replies, notices, "typing…", streamed previews and their end) plus a count of
//! unfinished jobs, so shutdown can wait for the last replies.
//!
//! Why it exists: the executor must never block on Telegram. It queues work here and
//! moves on; the sender thread (`sender`) runs the jobs in order. A reply waits for
//! room in the queue (back-pressure, never dropped); "typing…" and previews are
//! best-effort: dropped when the queue is full or Telegram is failing (the sender's
//! last call failed). A reply may carry a [`Done`] for its outcome: [`Outbox::wait`]
//! queues it and waits (heartbeat, cron and the `send_message` tool through
//! [`Outbox::deliver`]; a chat's answer, owed until delivered: docs/DECISIONS.md 89).
//!
//! # Bounds
//! At most `SEND_QUEUE_LEN` jobs wait; [`Outbox::push`] then waits, [`Outbox::try_push`]
//! gives up. An outcome channel holds the one outcome of its job.
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

/// Where the sender thread reports a job's outcome ([`Outbox::wait`] sets it).
pub type Done = async_channel::Sender<DeliveryResult>;

/// Work for the sender thread.
#[derive(Debug, Clone)]
pub enum Job {
    /// A model answer, heartbeat or cron text in markdown (sent as HTML, plain if
    /// Telegram refuses it), or a short fixed text (refusal, busy, command output:
    /// `markdown` false, plain). The outcome goes to `done` when there is one.
    Reply {
        chat_id: i64,
        text: String,
        reply_to: Option<i64>,
        markdown: bool,
        done: Option<Done>,
    },
    /// Show "typing…" (best effort).
    Typing { chat_id: i64 },
    /// Show a streamed reply's text so far (one attempt; see `preview`).
    Preview(Arc<LiveReply>),
    /// A streamed reply ended with `text`: make what the chat shows the final answer.
    StreamEnd {
        live: Arc<LiveReply>,
        text: String,
        done: Option<Done>,
    },
}

impl Job {
    /// A plain text to a chat, no outcome wanted.
    pub fn notice(chat_id: i64, text: impl Into<String>, reply_to: Option<i64>) -> Job {
        Job::Reply {
            chat_id,
            text: text.into(),
            reply_to,
            markdown: false,
            done: None,
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
}

impl Outbox {
    /// The queue to a sender thread whose Bot API client sets `down` (`Api::down_flag`).
    pub fn new(down: Arc<AtomicBool>) -> (Outbox, OutboxReceiver) {
        let (tx, rx) = async_channel::bounded(SEND_QUEUE_LEN);
        let pending = Arc::new(AtomicUsize::new(0));
        (
            Outbox {
                tx,
                pending: pending.clone(),
                down,
            },
            OutboxReceiver { rx, pending },
        )
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

    /// Queue a reply or the end of a streamed one and wait for what the sender reports
    /// (other jobs report nothing: `Stopped`).
    pub async fn wait(&self, mut job: Job) -> DeliveryResult {
        let gone = Undelivered {
            error: SendError::Stopped,
            sent: 0,
        };
        let (tx, outcome) = async_channel::bounded(1);
        if let Job::Reply { done, .. } | Job::StreamEnd { done, .. } = &mut job {
            *done = Some(tx);
        }
        if !self.push(job).await {
            return Err(gone);
        }
        outcome.recv().await.unwrap_or(Err(gone))
    }

    /// Deliver markdown `text` to a chat like a reply and wait for the outcome.
    pub async fn deliver(&self, chat_id: i64, text: &str) -> DeliveryResult {
        let job = Job::Reply {
            chat_id,
            text: text.to_string(),
            reply_to: None,
            markdown: true,
            done: None,
        };
        self.wait(job).await
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
        assert!(
            !o.try_push(Job::Typing { chat_id: 1 }),
            "Telegram is failing"
        );
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
                let Ok(Job::Reply {
                    chat_id,
                    text,
                    done: Some(done),
                    ..
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
