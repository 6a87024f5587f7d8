//! The Telegram sender thread: runs the executor's [`Job`]s one at a time, in the
//! order they were queued.
//!
//! Why it exists: one thread owns every Telegram send, so replies to a chat keep their
//! order, a 429 `retry_after` holds back only this thread (never the executor), and
//! shutdown can wait for the queue to drain. Replies and deliveries go to `reply`
//! (HTML, split, retries, plain-text fallback); previews and the end of streamed
//! replies to `preview`; "typing…" is one call, its failure logged and dropped.
//!
//! While Telegram is failing (the last call met the network, a 5xx or a 429), queued
//! "typing…" and previews are skipped: they are stale once it works again, and each
//! failing call could cost a timeout. A reply or streamed answer with a `Done` reports
//! its outcome there (the bot records a chat's answer as delivered, or leaves it owed).
//! A reply or streamed answer delivered whole is counted in `/metrics` (`metrics`).
//!
//! # Bounds
//! One job at a time; each is bounded by `reply`'s retries (`Backoff::reply_window` per
//! part, at most `MAX_REPLY_PARTS` parts) or is a single attempt (typing, previews).
//! Jobs behind a reply that is being retried wait in the queue, in order.
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
use crate::chat::ChannelKind;
use std::sync::atomic::Ordering;

/// The sender thread: run jobs in order until every `Outbox` is dropped.
pub fn sender_loop(api: Api, rx: OutboxReceiver, backoff: Backoff, stop: Stop) {
    let mut drafts = DraftSupport::new();
    let down = api.down_flag();
    while let Ok(job) = rx.rx.recv_blocking() {
        let failing = down.load(Ordering::Relaxed);
        run_job(&api, job, &backoff, &stop, &mut drafts, failing);
        rx.pending.fetch_sub(1, Ordering::SeqCst);
    }
}

fn run_job(
    api: &Api,
    job: Job,
    backoff: &Backoff,
    stop: &Stop,
    drafts: &mut DraftSupport,
    failing: bool,
) {
    let (chat_id, done, result) = match job {
        Job::Typing { chat_id } => {
            if !failing && let Err(e) = api.send_chat_action(chat_id) {
                log::debug!("telegram: typing action for chat {chat_id} failed: {e}");
            }
            return;
        }
        Job::Preview(live) => {
            if failing {
                live.cancel_preview();
                live.wake();
            } else {
                preview::preview(api, &live, backoff, drafts);
            }
            return;
        }
        Job::Reply {
            chat_id,
            text,
            reply_to,
            markdown,
            done,
        } => (
            chat_id,
            done,
            deliver_blocking(api, chat_id, &text, markdown, reply_to, backoff, stop),
        ),
        Job::StreamEnd { live, text, done } => (
            live.chat_id,
            done,
            preview::finish(api, &live, &text, backoff, stop),
        ),
    };
    match &result {
        Ok(parts) => {
            crate::metrics::message_out(ChannelKind::Telegram);
            log::debug!("telegram: sent {parts} part(s) to chat {chat_id}");
        }
        Err(u) => log::error!(
            "telegram: a reply to chat {chat_id} was not delivered ({} part(s) sent before the failure): {}",
            u.sent,
            u.error
        ),
    }
    // The waiting side may be gone (shutdown): then the log line above is all.
    if let Some(done) = done {
        let _ = done.try_send(result);
    }
}
