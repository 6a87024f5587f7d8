//! Channels: where messages come from and where replies go (terminal, Telegram, serial,
//! the gateway's HTTP API),
//! and `deliver`, the implementation of the outbound seam (`chat::Outbound`).
//!
//! # Threads
//! Each submodule says which thread it runs on.

pub mod deliver;
pub mod http;
pub mod serial;
pub mod telegram;
pub mod terminal;
