//! The Telegram sender thread: runs the executor's [`Job`]s one at a time, in the
//! order they were queued.
//!
//! Why it exists: one thread owns every Telegram send, so replies to a chat keep their
//! order, a 429 `retry_after` holds back only this thread (never the executor), and
//! shutdown can wait for the queue to drain. Replies and deliveries go to `reply`
//! (HTML, split, retries, plain-text fallback); previews and the end of streamed
//! replies to `preview`; "typing…" is one call, its failure logged and dropped.
//!
//! # Bounds
//! One job at a time; each is bounded by `reply`'s retries (`MAX_SEND_ATTEMPTS` per
//! part, at most `MAX_REPLY_PARTS` parts) or is a single attempt (typing, previews).
//!
//! # Threads
//! Sender thread only: [`sender_loop`] blocks (HTTP, backoff sleeps) until every
//! `Outbox` is dropped. A retried send whose first answer was lost may show twice: a
//! duplicate is preferred to a lost reply.

use super::api::Api;
use super::backoff::{Backoff, Stop};
use super::outbox::{Job, OutboxReceiver};
use super::preview::{self, DraftSupport};
use super::reply::deliver_blocking;
use std::sync::atomic::Ordering;

/// The sender thread: run jobs in order until every `Outbox` is dropped.
pub fn sender_loop(api: Api, rx: OutboxReceiver, backoff: Backoff, stop: Stop) {
    let mut drafts = DraftSupport::new();
    while let Ok(job) = rx.rx.recv_blocking() {
        run_job(&api, job, &backoff, &stop, &mut drafts);
        rx.pending.fetch_sub(1, Ordering::SeqCst);
    }
}

fn run_job(api: &Api, job: Job, backoff: &Backoff, stop: &Stop, drafts: &mut DraftSupport) {
    let (chat_id, result) = match job {
        Job::Typing { chat_id } => {
            if let Err(e) = api.send_chat_action(chat_id) {
                log::debug!("telegram: typing action for chat {chat_id} failed: {e}");
            }
            return;
        }
        Job::Preview(live) => {
            preview::preview(api, &live, backoff, drafts);
            return;
        }
        Job::Reply {
            chat_id,
            text,
            reply_to,
        } => (
            chat_id,
            deliver_blocking(api, chat_id, &text, true, reply_to, backoff, stop),
        ),
        Job::Notice {
            chat_id,
            text,
            reply_to,
        } => (
            chat_id,
            deliver_blocking(api, chat_id, &text, false, reply_to, backoff, stop),
        ),
        Job::Delivery {
            chat_id,
            text,
            done,
        } => {
            let r = deliver_blocking(api, chat_id, &text, true, None, backoff, stop);
            // The waiting side may be gone (shutdown): then the log line below is all.
            let _ = done.try_send(r.clone());
            (chat_id, r)
        }
        Job::StreamEnd { live, text } => (
            live.chat_id,
            preview::finish(api, &live, &text, backoff, stop),
        ),
    };
    match result {
        Ok(parts) => log::debug!("telegram: sent {parts} part(s) to chat {chat_id}"),
        Err(u) => log::error!(
            "telegram: a reply to chat {chat_id} was not delivered ({} part(s) sent before the failure): {}",
            u.sent,
            u.error
        ),
    }
}
