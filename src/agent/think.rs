//! Thinking in a model's reply, for the turn: what is kept of a reply that thought, and
//! the one sentence the user gets when a reply thought (or was cut off) and said nothing.
//!
//! Why: reasoning models write `<think>…</think>` (or put their reasoning in a separate
//! field, which the provider reads and never passes on). Thinking must reach neither the
//! user nor history, and a turn that ends in an empty answer after thinking must not look
//! like silence. `toolcall` recognises the thinking (the same scanner hides it from
//! streamed previews); this module applies it to a whole reply.
//!
//! # Bounds
//! Linear in the reply (which the provider caps at `MAX_PROVIDER_RESPONSE_BYTES`); no state.
//!
//! # Threads
//! Any thread: pure functions (the agent calls them on the executor).

use super::toolcall;
use crate::provider::ChatReply;

/// Said when a reply had thinking and nothing else.
pub const THOUGHT_WITHOUT_ANSWER: &str =
    "(The model thought about this but wrote no answer; please ask again.)";
/// Said when a reply was cut at the length limit before any answer.
pub const CUT_WITHOUT_ANSWER: &str =
    "(The model ran out of room before it answered; ask again, or raise provider.max_tokens.)";

/// Make a model reply ready for the turn: its thinking is removed (tool-call markup stays,
/// for the text fallback and history). When no visible text and no call is left and the
/// model thought or was cut off, the text becomes one sentence that says so.
pub fn clean_reply(reply: &mut ChatReply, is_tool: &dyn Fn(&str) -> bool) {
    let (text, thought) = toolcall::strip_thinking(&reply.content);
    if thought {
        reply.content = text;
    }
    let cut = matches!(reply.finish_reason.as_str(), "length" | "max_tokens");
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
        clean_reply(&mut r, &known);
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
        clean_reply(&mut r, &known);
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
