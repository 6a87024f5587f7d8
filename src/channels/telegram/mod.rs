//! The Telegram Bot API channel: long-poll `poller` (own thread) → `bot` (executor:
//! rules in `inbound`, turns through the agent's router) → `send` (own thread), over
//! the typed calls of `api`, with the waits of `backoff` and the reply text shaped by
//! `format`; streamed replies (a draft or one edited message) in `stream`.

pub mod api;
pub mod backoff;
pub mod bot;
pub mod format;
pub mod inbound;
pub mod poller;
pub mod send;
pub mod stream;
