//! Thinking in a model's reply, for the turn: what is kept of a reply that thought, the
//! one sentence the user gets when a reply thought (or was cut off) and said nothing, and
//! where a model's answers start ([`ThinkStart`]: inside a think block its chat template
//! opened in the prompt, or not), which decides whether a stream holds its start back.
//!
//! Why: reasoning models write `<think>…</think>` (or put their reasoning in a separate
//! field, which the provider reads and never passes on). Thinking must reach neither the
//! user nor history, and a turn that ends in an empty answer after thinking must not look
//! like silence. `toolcall` recognises the thinking (the same scanner hides it from
//! streamed previews); this module applies it to a whole reply.
//!
//! When a template opens `<think>` in the prompt (QwQ, DeepSeek-R1 distills, Qwen3
//! "Thinking" models) and the server does not separate the reasoning, the answer starts
//! mid-thought and holds only the closing `</think>`. A stream cannot tell at its start
//! whether one will come, so the rule (docs/DECISIONS.md, "A streamed answer's start is
//! held…") is: a stream shows text at once only from a provider whose last complete
//! answer did not start inside thinking ([`ThinkStart::Outside`]); otherwise
//! (`Unknown`, `Inside`) its start is held until a `</think>` (then what follows shows)
//! or the end of the answer (then all of it is the answer). What was learned is kept
//! in the store's `state` table under [`state_key`], so a one-shot `agent -m` learns too.
//!
//! # Bounds
//! Linear in the reply (which the provider caps at `MAX_PROVIDER_RESPONSE_BYTES`). One
//! `state` row per provider (URL and model).
//!
//! # Threads
//! Any thread: pure functions (the agent calls them on the executor), except
//! [`recall`] and [`remember`], which use the store (the executor's connection).

use super::toolcall;
use crate::config::ProviderConfig;
use crate::provider::ChatReply;
use crate::store::{Db, StoreError};

/// Said when a reply had thinking and nothing else.
pub const THOUGHT_WITHOUT_ANSWER: &str =
    "(The model thought about this but wrote no answer; please ask again.)";
/// Said when a reply was cut at the length limit before any answer.
pub const CUT_WITHOUT_ANSWER: &str =
    "(The model ran out of room before it answered; ask again, or raise provider.max_tokens.)";

/// Where a provider's answers start, as its answers have shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkStart {
    /// No complete answer seen yet: streams hold their start back.
    Unknown,
    /// The last answer that said started inside a think block the template opened (a
    /// `</think>` with no `<think>`): streams hold their start back, and an answer cut
    /// at the length limit before any `</think>` is all thought.
    Inside,
    /// The last complete answer did not: streams show text as it comes.
    Outside,
}

impl ThinkStart {
    /// Streams hold back their start until a `</think>` or the end.
    pub fn holds(self) -> bool {
        self != ThinkStart::Outside
    }

    /// As kept in the `state` table.
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkStart::Unknown => "unknown",
            ThinkStart::Inside => "inside",
            ThinkStart::Outside => "outside",
        }
    }

    /// From the `state` table (anything else: `Unknown`).
    pub fn parse(s: &str) -> ThinkStart {
        match s {
            "inside" => ThinkStart::Inside,
            "outside" => ThinkStart::Outside,
            _ => ThinkStart::Unknown,
        }
    }
}

/// The `state` key of what a provider's answers showed: a number from its URL and model
/// (no URL is kept).
pub fn state_key(cfg: &ProviderConfig) -> String {
    format!(
        "provider.think_start.{:016x}",
        crate::provider::provider_id(cfg)
    )
}

/// Where `cfg`'s answers start, as kept in the store (`Unknown` when never seen).
pub fn recall(db: &Db, cfg: &ProviderConfig) -> Result<ThinkStart, StoreError> {
    Ok(db
        .get_state(&state_key(cfg))?
        .map_or(ThinkStart::Unknown, |v| ThinkStart::parse(&v)))
}

/// Keep where `cfg`'s answers start (a commit that does not wait for the disk: losing it
/// to a power cut costs one held answer).
pub fn remember(db: &Db, cfg: &ProviderConfig, start: ThinkStart) -> Result<(), StoreError> {
    db.deferred_sync(|| db.set_state(&state_key(cfg), start.as_str()))
}

/// Cut at the length limit.
fn cut(reply: &ChatReply) -> bool {
    matches!(reply.finish_reason.as_str(), "length" | "max_tokens")
}

/// What `reply` (complete, as the provider returned it) teaches about where its
/// provider's answers start; `None`: nothing (a cut answer, or no text at all).
pub fn learned(reply: &ChatReply) -> Option<ThinkStart> {
    if toolcall::starts_inside_think(&reply.content) {
        Some(ThinkStart::Inside)
    } else if cut(reply) || reply.content.trim().is_empty() {
        None
    } else {
        Some(ThinkStart::Outside)
    }
}

/// The reply never left the think block its template opened: its provider's answers
/// start inside one, and it was cut at the length limit before any `</think>`.
pub fn cut_in_thought(reply: &ChatReply, start: ThinkStart) -> bool {
    start == ThinkStart::Inside && cut(reply) && !reply.content.contains("</think>")
}

/// Make a model reply ready for the turn: its thinking is removed (tool-call markup stays,
/// for the text fallback and history). When no visible text and no call is left and the
/// model thought or was cut off, the text becomes one sentence that says so. `start`:
/// where its provider's answers start (a cut answer of a model that starts inside
/// thinking and never closed it is all thought).
pub fn clean_reply(reply: &mut ChatReply, is_tool: &dyn Fn(&str) -> bool, start: ThinkStart) {
    let (text, thought) = if cut_in_thought(reply, start) {
        (String::new(), true)
    } else {
        toolcall::strip_thinking(&reply.content)
    };
    if thought {
        reply.content = text;
    }
    let cut = cut(reply);
    if !(thought || cut) || !reply.tool_calls.is_empty() {
        return;
    }
    let found = toolcall::extract(&reply.content, is_tool);
    if found.calls.is_empty() && found.text.is_empty() {
        let sentence = if cut {
            CUT_WITHOUT_ANSWER
        } else {
            THOUGHT_WITHOUT_ANSWER
        };
        reply.content = sentence.to_string();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(content: &str, finish: &str) -> ChatReply {
        ChatReply {
            content: content.to_string(),
            tool_calls: Vec::new(),
            finish_reason: finish.to_string(),
            usage: None,
        }
    }

    fn known(n: &str) -> bool {
        n == "read_file"
    }

    fn cleaned(content: &str, finish: &str) -> String {
        let mut r = reply(content, finish);
        clean_reply(&mut r, &known, ThinkStart::Unknown);
        r.content
    }

    #[test]
    fn thinking_never_reaches_the_text() {
        assert_eq!(cleaned("<think>hmm</think>\n\nParis.", "stop"), "Paris.");
        assert_eq!(cleaned("<thinking>a</thinking>b", "stop"), "b");
        assert_eq!(cleaned("[THINK]a[/THINK]b", "stop"), "b");
        // The template opened the block: the reply starts inside it.
        assert_eq!(cleaned("I'm\nthinking</think>Hello", "stop"), "Hello");
        // Tool-call markup stays for the text fallback and history.
        let call = "<tool_call>{\"name\":\"read_file\"}</tool_call>";
        assert_eq!(cleaned(&format!("<think>x</think>{call}"), "stop"), call);
        // No thinking: the reply is untouched, whitespace included.
        assert_eq!(cleaned(" plain ", "stop"), " plain ");
    }

    #[test]
    fn an_empty_answer_after_thinking_is_one_clear_sentence() {
        assert_eq!(
            cleaned("<think>long thought</think>", "stop"),
            THOUGHT_WITHOUT_ANSWER
        );
        assert_eq!(
            cleaned("<think>never closed", "stop"),
            THOUGHT_WITHOUT_ANSWER
        );
        assert_eq!(
            cleaned("<think>cut</think>\n", "length"),
            CUT_WITHOUT_ANSWER
        );
        assert_eq!(cleaned("", "length"), CUT_WITHOUT_ANSWER);
        // Empty without thinking: left to the agent's own placeholder.
        assert_eq!(cleaned("", "stop"), "");
        // A call after thinking is an answer.
        let call = "<tool_call>{\"name\":\"nope\"}</tool_call>";
        assert_eq!(cleaned(&format!("<think>x</think>{call}"), "stop"), call);
        // Native calls too.
        let mut r = reply("<think>x</think>", "tool_calls");
        r.tool_calls.push(crate::chat::ToolCall {
            id: "c".into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        });
        clean_reply(&mut r, &known, ThinkStart::Unknown);
        assert_eq!(r.content, "");
    }

    #[test]
    fn an_unclosed_think_block_of_a_mebibyte_is_one_sentence() {
        let text = format!("<think>{}", "why? ".repeat(1 << 18));
        assert!(text.len() > 1 << 20);
        assert_eq!(cleaned(&text, "stop"), THOUGHT_WITHOUT_ANSWER);
        let found = toolcall::extract(&text, &known);
        assert!(found.thought && found.text.is_empty() && found.calls.is_empty());
    }
}
