//! The conversation types every layer shares: messages, roles, tool calls, tool schemas,
//! token usage (this file), and where messages come from and go to (`outbound`: channel
//! kinds, delivery targets and the one outbound seam).
//!
//! Why it exists: the store keeps these, the providers send them, the agent and tools
//! produce them; defining them at the bottom lets each of those import them without
//! importing each other.
//!
//! # Bounds
//! Plain data: the bounds are where messages are made (`limits`: user text, tool results,
//! tool calls per answer).
//!
//! # Threads
//! Any thread; nothing here blocks.

pub mod media;
pub mod outbound;

pub use outbound::{ChannelKind, DeliverError, Delivering, Outbound, Target};

use std::borrow::Cow;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
    pub fn parse(s: &str) -> Option<Role> {
        Some(match s {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => return None,
        })
    }
}

/// One tool call requested by the model. `arguments` is JSON text (an object).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub tool_call_id: Option<String>,
    /// Images shown with this message to a model that can see (a tool's result), for
    /// the requests of the round that made them; never stored (`content` holds their
    /// placeholder lines).
    pub images: Vec<media::ToolImage>,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            images: Vec::new(),
        }
    }
}

/// A tool as the model sees it. `parameters` is a JSON Schema object as text. Built-in
/// tools' specs are constants (borrowed, nothing allocated); an MCP server's tools carry
/// the names, descriptions and schemas the server declared (owned).
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: Cow<'static, str>,
    pub description: Cow<'static, str>,
    pub parameters: Cow<'static, str>,
}

/// Token counts reported by the provider (or estimated, when it reported none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The server sent no counts (a streamed answer without a usage chunk): these are
    /// estimated from the bytes sent and received (`Usage::estimate`).
    pub estimated: bool,
}

impl Usage {
    /// Bytes per token assumed by estimates: about right for English and code with the
    /// tokenizers of current models (other scripts take more tokens per byte... and fewer
    /// bytes per token: an estimate errs high there).
    pub const BYTES_PER_TOKEN: u64 = 4;

    /// Counts estimated from a request of `sent` bytes and an answer of `received` bytes.
    pub fn estimate(sent: usize, received: usize) -> Usage {
        let t = |b: usize| (b as u64).div_ceil(Usage::BYTES_PER_TOKEN);
        Usage {
            prompt_tokens: t(sent),
            completion_tokens: t(received),
            estimated: true,
        }
    }
}
