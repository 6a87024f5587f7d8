//! yoctoclaw: a personal AI assistant in one small binary for $10 Linux boards.
//!
//! # Thousand-mile view
//! `cli` parses the command line (`args`) and calls the composition root, `app`, which
//! loads `config`, opens the `store`, builds the providers, the `tools`, the
//! `agent::Agent` and the one outbound seam (`chat::Outbound`, implemented by
//! `channels::deliver`), and feeds the agent messages from a channel (`channels`:
//! terminal, Telegram, serial) or from the `scheduler` (heartbeat, cron). The modules form
//! layers with no cycles: ARCHITECTURE.md has the picture, `tests/architecture.rs` checks it.
//!
//! # Threads
//! One thread runs the smol executor: sessions, the agent loop, timers, and SQLite.
//! Blocking network calls and child processes run on the fixed worker pool of
//! `runtime::Workers`; each channel that reads a blocking source (stdin, Telegram
//! long-poll, serial) has one dedicated thread that feeds the executor over a bounded
//! async-channel; Telegram's outgoing messages go out on one sender thread fed the same
//! way (so replies never wait behind a provider call). One thread comes from the
//! dependencies: smol's reactor (`async-io`, one, started with the first timer or async
//! source); host names are resolved on the thread that sends the request
//! (`provider::resolve`), never on a thread of ureq's. `doctor` resolves host names on
//! short-lived threads of its own. ARCHITECTURE.md
//! ("Threads") lists every thread with its stack.
//!
//! # Memory
//! One heap (`heap`: dlmalloc, SQLite's allocations included), trimmed when the gateway
//! is idle; every queue, buffer, cache and table is bounded by a constant in `limits` or
//! a module, or by a config key.

pub mod agent;
#[cfg(feature = "bench-alloc")]
pub mod alloc_count;
pub mod app;
pub mod args;
pub mod channels;
pub mod chat;
pub mod cli;
pub mod config;
pub mod doctor;
pub mod files;
pub mod heap;
pub mod hw;
pub mod jobs;
pub mod json;
pub mod limits;
pub mod logging;
pub mod mcp;
pub mod memory;
pub mod metrics;
pub mod migrate;
pub mod onboard;
pub mod provider;
pub mod runtime;
pub mod sandbox;
pub mod scheduler;
pub mod security;
pub mod service;
pub mod signals;
pub mod status;
pub mod store;
#[cfg(test)]
pub mod testkit;
pub mod text;
pub mod time;
pub mod tools;
pub mod update;
pub mod watchdog;
