//! The Telegram Bot API channel, split by the thread each file runs on.
//!
//! ```text
//!  poller thread            executor thread                    sender thread
//!  ─────────────            ───────────────                    ─────────────
//!  poller ──Update──▶ bot (rules: inbound, waiting: store::inbox)
//!   (getUpdates)       │ replies, notices, "typing…"
//!                      ├──────────── Job ─▶ outbox ─▶ sender ─┬─▶ reply (send, retry,
//!                      │                                      │    plain fallback)
//!                      └─ stream (Streamer, LiveSink)         └─▶ preview (drafts,
//!                           │  pump: Preview job ─▶ outbox          edits, finish)
//!                           └──────────── live (LiveReply) ◀────────┘
//! ```
//!
//! - Poller thread: `poller` long-polls `getUpdates` and hands updates to the executor
//!   over a bounded channel.
//! - Executor: `bot` applies `inbound`'s rules, keeps messages in SQLite until their
//!   turn (`store::inbox`), runs turns through the agent, and at start does what
//!   `recover` decides about what a crash left unanswered; everything it sends becomes
//!   an `outbox::Job` on the `Outbox` (never an HTTP call). A streamed reply's
//!   `stream::Streamer` collects the text and queues `Preview` jobs.
//! - Sender thread: `sender` runs the jobs in order: replies, notices and deliveries
//!   through `reply` (markdown to `html`, `split` to the length limit, retries,
//!   plain-text fallback), previews and the end of streamed replies through `preview`.
//!   Outside the gateway, `reply::deliver_blocking` runs on a worker instead
//!   (`channels::deliver`).
//! - Shared: `live` (one streamed reply's state: written by `stream`, shown by
//!   `preview`; its `Mutex` is never held across I/O).
//! - Workers: `media` (a message's voice note, photo or file downloaded, transcribed
//!   or saved, for `bot`).
//! - Pure, any thread: `html`, `split`, `inbound`, `recover`, `backoff` (its
//!   `Stop::sleep` blocks the calling thread), and `api`'s request and answer parsing
//!   (its calls block). The sender reports delivered turns back over the `Outbox`.
//!
//! No file here imports a file that imports it back.
//!
//! # Threads
//! As drawn above: the poller thread (`yc-tg-poll`), the executor thread and the sender
//! thread (`yc-tg-send`), with `media` on the worker threads; each file's own `# Threads`
//! says which of them runs it.

pub mod api;
pub mod backoff;
pub mod bot;
pub mod html;
pub mod inbound;
pub mod live;
pub mod media;
pub mod outbox;
pub mod poller;
pub mod preview;
pub mod recover;
pub mod reply;
pub mod sender;
pub mod split;
pub mod stream;
