//! The Telegram Bot API channel.

pub mod format;
