//! Fitting a request into the model's context window (`provider.context_window`).
//!
//! A local model on a board has a window of 1k–8k tokens; a request that does not fit is
//! answered 400 ("context_length_exceeded", "exceeds the available context size") and,
//! without fitting, every later message fails the same way. Before each request the
//! agent measures the request body it built and estimates its tokens (bytes times a
//! per-provider ratio, calibrated from each answer's `usage.prompt_tokens`); while the
//! estimate is over the budget (the window minus `max_tokens` for the answer, minus a
//! margin), it takes, in order:
//! 1. the oldest messages (whole exchanges: a cut falls before a message the user typed,
//!    never between a tool call and its results; the current turn always stays);
//! 2. the largest tool results, halved each time down to `MIN_TOOL_RESULT_BYTES`;
//! 3. the MCP servers' tools, when the built-in ones are offered too (the request goes
//!    with the built-in tools only, and the history is fitted again): a server's tools
//!    never cost the model the built-in ones;
//! 4. the tools (the request goes without them, and the history is fitted again).
//!
//! History on disk is untouched: compaction (`compact`) summarises what fitting leaves
//! out, and a window of `SMALL_WINDOW_TOKENS` or less gets a shorter system prompt and
//! short tool descriptions (`small_specs`).
//!
//! # Bounds
//! At most `MAX_FIT_STEPS` rebuilds of the body per request.
//!
//! # Threads
//! Executor thread; pure functions over the messages, plus the ratio cells the agent
//! keeps.

use crate::chat::{Message, Role, ToolSpec};
use std::borrow::Cow;
use std::sync::OnceLock;

/// Tokens left free besides the answer's `max_tokens` (templates add tokens the body
/// does not show: role markers, the tool-call format).
pub const MARGIN_TOKENS: u64 = 64;
/// Windows this small get the short system prompt and tool descriptions.
pub const SMALL_WINDOW_TOKENS: u64 = 2048;
/// Tool results are not cut below this.
pub const MIN_TOOL_RESULT_BYTES: usize = 256;
/// Rebuilds of a request body while fitting it (the history fitted up to three times:
/// with every tool, with the built-in ones, without tools).
pub const MAX_FIT_STEPS: usize = 192;
/// Tokens per byte of a request body before any answer calibrated it (JSON text with
/// English: about 4 bytes a token, and the JSON's own punctuation costs fewer).
pub const INITIAL_TOKENS_PER_KIB: u32 = 256;
/// The lowest calibrated ratio: below 160 tokens a KiB (6.4 bytes a token) a server's
/// count is not believed (some report only the tokens their cache did not hold, and an
/// estimate too low overflows).
pub const MIN_TOKENS_PER_KIB: u32 = 160;

/// The token budget of a request's prompt: the window minus the answer and a margin.
pub fn budget(window: u64, max_tokens: u64) -> u64 {
    window
        .saturating_sub(max_tokens.min(window / 2))
        .saturating_sub(MARGIN_TOKENS)
        .max(64)
}

/// Estimated tokens of a body of `bytes` at `tokens_per_kib`.
pub fn estimate(bytes: usize, tokens_per_kib: u32) -> u64 {
    (bytes as u64).saturating_mul(u64::from(tokens_per_kib)) / 1024
}

/// The ratio after an answer that says the prompt of a `bytes` body took `tokens`:
/// halfway to the measured one, kept within sane bounds (`MIN_TOKENS_PER_KIB`..1024).
pub fn calibrate(old: u32, bytes: usize, tokens: u64) -> u32 {
    if bytes == 0 || tokens == 0 {
        return old;
    }
    let measured = (tokens.saturating_mul(1024) / bytes as u64)
        .clamp(u64::from(MIN_TOKENS_PER_KIB), 1024) as u32;
    (old + measured).div_ceil(2)
}

/// One step of fitting `msgs` (the newest messages of a conversation, the current turn
/// last): the oldest exchange left out, else the largest tool result halved. `false`
/// when nothing is left to take.
pub fn shrink(msgs: &mut Cow<'_, [Message]>) -> bool {
    if let Some(cut) = next_cut(msgs) {
        *msgs = Cow::Owned(msgs[cut..].to_vec());
        return true;
    }
    let largest = msgs
        .iter()
        .enumerate()
        .filter(|(_, m)| is_tool_result(m) && m.content.len() > MIN_TOOL_RESULT_BYTES)
        .max_by_key(|(_, m)| m.content.len())
        .map(|(i, _)| i);
    let Some(i) = largest else {
        return false;
    };
    let owned = msgs.to_mut();
    let m = &mut owned[i];
    let keep = (m.content.len() / 2).max(MIN_TOOL_RESULT_BYTES);
    m.content = crate::text::cap_text(&m.content, keep);
    true
}

/// The first message of the second exchange: the next message the user typed after the
/// first one (so the current turn, which starts at the last such message, stays).
fn next_cut(msgs: &[Message]) -> Option<usize> {
    let typed = |m: &Message| m.role == Role::User && !m.content.starts_with("<tool_result");
    let last_typed = msgs.iter().rposition(typed)?;
    (1..=last_typed).find(|&i| typed(&msgs[i]))
}

fn is_tool_result(m: &Message) -> bool {
    m.role == Role::Tool || (m.role == Role::User && m.content.starts_with("<tool_result"))
}

/// The tools `specs` holds fewer of at step 3 or 4 of fitting: the built-in ones when MCP
/// tools follow them (`Tools::specs` offers the MCP tools last), else none.
pub fn fewer_tools(specs: &[ToolSpec]) -> &[ToolSpec] {
    let builtin = specs
        .iter()
        .take_while(|t| crate::config::tool_rules::TOOL_NAMES.contains(&&*t.name))
        .count();
    if builtin > 0 && builtin < specs.len() {
        &specs[..builtin]
    } else {
        &[]
    }
}

/// `specs` with short descriptions and parameter schemas without their descriptions, for
/// small windows (the tools' own descriptions are a thousand tokens or more). The
/// built-in tools' short specs are made once per process and reused; an MCP tool's are
/// made for each request.
pub fn small_specs(specs: &[ToolSpec]) -> Vec<ToolSpec> {
    static SMALL: OnceLock<Vec<ToolSpec>> = OnceLock::new();
    let table = SMALL.get_or_init(|| {
        crate::tools::all_specs()
            .iter()
            .map(|t| {
                // Leaked once per built-in tool and process (bounded by the tool list), so
                // each request borrows them rather than copying.
                let s = shorten(t);
                let leak = |c: Cow<'static, str>| match c {
                    Cow::Owned(o) => Cow::Borrowed(&*Box::leak(o.into_boxed_str())),
                    b => b,
                };
                ToolSpec {
                    name: s.name,
                    description: leak(s.description),
                    parameters: leak(s.parameters),
                }
            })
            .collect()
    });
    specs
        .iter()
        .map(|t| {
            table
                .iter()
                .find(|s| s.name == t.name)
                .cloned()
                .unwrap_or_else(|| shorten(t))
        })
        .collect()
}

/// One spec made short: its description's first sentence, its schema without
/// descriptions.
fn shorten(t: &ToolSpec) -> ToolSpec {
    let description = first_sentence(&t.description).to_string();
    let parameters = match crate::json::parse_value(&t.parameters) {
        Ok(mut v) => {
            strip_descriptions(&mut v, 0);
            Cow::Owned(crate::json::to_string(&v))
        }
        Err(_) => t.parameters.clone(),
    };
    ToolSpec {
        name: t.name.clone(),
        description: Cow::Owned(description),
        parameters,
    }
}

fn first_sentence(s: &str) -> &str {
    match s.find(". ") {
        Some(i) => &s[..=i],
        None => s,
    }
}

/// Remove `description` members from a schema (to a bounded depth: deeper ones stay).
fn strip_descriptions(v: &mut miniserde::json::Value, depth: usize) {
    use miniserde::json::Value;
    if depth > 8 {
        return;
    }
    match v {
        Value::Object(o) => {
            o.remove("description");
            for (_, child) in o.iter_mut() {
                strip_descriptions(child, depth + 1);
            }
        }
        Value::Array(a) => {
            for child in a.iter_mut() {
                strip_descriptions(child, depth + 1);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::ToolCall;

    fn user(t: &str) -> Message {
        Message::new(Role::User, t)
    }
    fn said(t: &str) -> Message {
        Message::new(Role::Assistant, t)
    }
    fn call() -> Message {
        let mut m = Message::new(Role::Assistant, "");
        m.tool_calls = vec![ToolCall {
            id: "c".into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        }];
        m
    }
    fn result(n: usize) -> Message {
        let mut m = Message::new(Role::Tool, "r".repeat(n));
        m.tool_call_id = Some("c".into());
        m
    }

    #[test]
    fn the_budget_leaves_room_for_the_answer_and_a_margin() {
        assert_eq!(budget(2048, 96), 2048 - 96 - MARGIN_TOKENS);
        // A max_tokens larger than half the window takes half.
        assert_eq!(budget(512, 1024), 512 - 256 - MARGIN_TOKENS);
        assert_eq!(budget(100, 1000), 64);
    }

    #[test]
    fn calibration_moves_halfway_and_stays_bounded() {
        assert_eq!(calibrate(256, 4096, 2048), (256 + 512) / 2);
        assert_eq!(calibrate(256, 0, 10), 256);
        assert_eq!(calibrate(256, 10, 1_000_000), (256 + 1024) / 2);
        // A server that claims 10 tokens for 4 KiB is not believed below the floor.
        assert_eq!(
            calibrate(256, 4096, 10),
            (256 + MIN_TOKENS_PER_KIB).div_ceil(2)
        );
        assert_eq!(estimate(4096, 256), 1024);
    }

    #[test]
    fn old_exchanges_go_first_whole_and_the_current_turn_stays() {
        let h = vec![
            user("one"),
            call(),
            result(10),
            said("a"),
            user("two"),
            said("b"),
            user("now"),
            call(),
            result(5000),
        ];
        let mut m: Cow<[Message]> = Cow::Borrowed(&h);
        assert!(shrink(&mut m));
        assert_eq!(m[0].content, "two");
        assert!(shrink(&mut m));
        assert_eq!(m[0].content, "now");
        // Now the largest tool result is halved, down to the floor, then nothing.
        let mut steps = 0;
        while shrink(&mut m) {
            steps += 1;
            assert!(steps < MAX_FIT_STEPS);
        }
        assert_eq!(m.len(), 3, "the current turn stays whole");
        assert!(m[2].content.len() <= MIN_TOOL_RESULT_BYTES + 64);
        assert_eq!(m[1].tool_calls.len(), 1);
    }

    #[test]
    fn small_specs_are_short_and_still_valid_schemas() {
        let all = crate::tools::all_specs();
        let small = small_specs(all);
        assert_eq!(small.len(), all.len());
        let (big, little): (usize, usize) = all
            .iter()
            .zip(&small)
            .map(|(a, b)| {
                (
                    a.description.len() + a.parameters.len(),
                    b.description.len() + b.parameters.len(),
                )
            })
            .fold((0, 0), |(x, y), (a, b)| (x + a, y + b));
        // Measured: 5,196 bytes against 9,128 (the schemas keep their names, types and
        // enums, which a model needs); at least a third shorter.
        assert!(little * 3 < big * 2, "{little} vs {big}");
        for s in &small {
            let v = crate::json::parse_value(&s.parameters).unwrap();
            assert_eq!(
                crate::json::str_at(&v, "type"),
                Some("object"),
                "{}",
                s.name
            );
            assert!(!s.parameters.contains("\"description\""), "{}", s.name);
        }
    }

    #[test]
    fn mcp_tools_go_before_the_built_in_ones() {
        let builtin = crate::tools::all_specs();
        let mcp = ToolSpec {
            name: Cow::Owned("home__turn_on".into()),
            description: Cow::Borrowed("Turns a light on."),
            parameters: Cow::Borrowed(r#"{"type":"object"}"#),
        };
        let mut both = builtin.to_vec();
        both.push(mcp.clone());
        both.push(mcp.clone());
        let fewer = fewer_tools(&both);
        assert_eq!(fewer.len(), builtin.len());
        assert!(fewer.iter().all(|t| t.name != "home__turn_on"));
        assert!(fewer_tools(fewer).is_empty(), "then none");
        assert!(fewer_tools(&[mcp]).is_empty(), "MCP tools alone: none");
        assert!(fewer_tools(&[]).is_empty());
    }
}
