//! The rule every channel that serves many chats follows: a session runs one turn at a
//! time; what arrives meanwhile waits (Telegram keeps it in SQLite, `store::inbox`, the
//! terminal and the serial console read it after the turn), and what cannot wait gets
//! [`BUSY_REPLY`], never a silent drop.
//!
//! # Threads
//! Constants only.

/// The polite answer to a message that cannot wait for its turn.
pub const BUSY_REPLY: &str = "I'm still working on your earlier messages. Please send this one again once I've answered them.";
