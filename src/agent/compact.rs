//! History compaction: when a session's current conversation grows past
//! `agent.compact_after_messages` messages (or `agent.history_messages`, if smaller) or
//! about `agent.compact_after_tokens` tokens (bytes / 4), the older messages are
//! summarised by the model into one summary and dropped from what is sent; the newest
//! `agent.keep_recent_messages` stay verbatim.
//!
//! The cut is placed just before a message the user typed, so a tool call and its
//! results are never split (a tool result without its call breaks providers). Only when
//! no such message exists in range does the cut fall before any message that is not a
//! tool result. The summary is stored in `sessions.summary` (see `store::summary`); the
//! summarised messages stay on disk. When the model cannot summarise (provider error,
//! empty answer), the messages are trimmed instead: dropped from the conversation, the
//! previous summary (if any) kept.
//!
//! # Bounds
//! At most `MAX_CUT_SCAN_ROWS` message roles are read to place the cut. The transcript
//! sent for summarising holds the newest `MAX_TRANSCRIPT_BYTES` of the summarised part,
//! each message cut to `MAX_TRANSCRIPT_MESSAGE_BYTES`; the stored summary is cut to
//! `MAX_SUMMARY_BYTES`. One summary request per compaction, no tools offered.
//!
//! # Threads
//! Executor thread: reads and writes history in SQLite; the summarising request awaits a
//! worker thread like any model call.

use super::Agent;
use crate::chat::{Message, Role};
use crate::store::summary::{Kind, Row};
use crate::text::cap_text;

/// Message roles read to place the cut.
pub const MAX_CUT_SCAN_ROWS: usize = 1000;
/// Transcript bytes sent to the model for summarising.
pub const MAX_TRANSCRIPT_BYTES: usize = 48 * 1024;
/// Bytes of one message in the transcript.
pub const MAX_TRANSCRIPT_MESSAGE_BYTES: usize = 2 * 1024;
/// Longest summary stored.
pub const MAX_SUMMARY_BYTES: usize = 4 * 1024;
/// Bytes per token, for the estimate.
const BYTES_PER_TOKEN: u64 = 4;

const SUMMARY_SYSTEM: &str = "You compress conversations so an assistant can continue them. Write a concise summary of the conversation you are given: the user's facts and preferences, decisions, results of tool calls that still matter, open tasks and questions, names, numbers and dates. Plain text, no preamble, at most 250 words. If an earlier summary is included, merge it in.";

/// What a compaction did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Below the thresholds, or no safe place to cut.
    NotNeeded,
    /// This many messages were summarised.
    Summarised(usize),
    /// The model could not summarise: this many messages were dropped.
    Trimmed(usize),
}

/// Compact if needed; failures are logged, never fatal to the turn.
pub async fn maybe_compact(agent: &Agent, session: &str) {
    match compact(agent, session).await {
        Ok(Outcome::NotNeeded) => {}
        Ok(o) => log::info!("session {session} compacted: {o:?}"),
        Err(e) => log::warn!("session {session} could not be compacted: {e}"),
    }
}

/// Compact now, whatever the thresholds (the server said the conversation does not fit
/// its window); failures are logged.
pub async fn compact_now(agent: &Agent, session: &str) {
    match compact_with(agent, session, true).await {
        Ok(o) => log::info!("session {session} compacted: {o:?}"),
        Err(e) => log::warn!("session {session} could not be compacted: {e}"),
    }
}

/// Compact the session's conversation if it passed a threshold.
pub async fn compact(agent: &Agent, session: &str) -> Result<Outcome, crate::store::StoreError> {
    compact_with(agent, session, false).await
}

async fn compact_with(
    agent: &Agent,
    session: &str,
    force: bool,
) -> Result<Outcome, crate::store::StoreError> {
    let a = &agent.cfg().agent;
    let max_messages = a.compact_after_messages.min(a.history_messages).max(2);
    // A known context window lowers the token threshold to half of it, and the
    // transcript sent for summarising to what fits beside the summary's answer.
    let window = agent.cfg().provider.window();
    let token_limit = window.map_or(a.compact_after_tokens, |w| {
        a.compact_after_tokens.min(w / 2)
    });
    let transcript_cap = window.map_or(MAX_TRANSCRIPT_BYTES, |w| {
        MAX_TRANSCRIPT_BYTES.min((w as usize).saturating_mul(BYTES_PER_TOKEN as usize) / 2)
    });
    let (count, bytes) = agent.db.conversation_size(session)?;
    if !force && count <= max_messages && bytes / BYTES_PER_TOKEN <= token_limit {
        return Ok(Outcome::NotNeeded);
    }
    let keep = if force {
        // Keep only the current turn's start when forced by the window.
        1
    } else {
        (a.keep_recent_messages.min(max_messages - 1)) as usize
    };
    let tail = agent.db.conversation_tail(session, MAX_CUT_SCAN_ROWS)?;
    let Some(cut) = choose_cut(&tail, keep) else {
        return Ok(Outcome::NotNeeded);
    };
    let Some(first_kept) = tail.get(cut).map(|r| r.id) else {
        return Ok(Outcome::NotNeeded);
    };
    let dropped = (count as usize).saturating_sub(tail.len() - cut);
    let previous = agent.db.session_summary(session)?;
    let transcript = transcript(
        agent,
        session,
        first_kept,
        previous.as_deref(),
        transcript_cap,
    )?;
    let request = [Message::new(
        Role::User,
        format!("Summarise this conversation:\n\n{transcript}"),
    )];
    let mut quiet = crate::agent::streaming::NoSink;
    match agent.chat(SUMMARY_SYSTEM, &request, &[], &mut quiet).await {
        // A thinking model's reasoning is no part of the summary.
        Ok((reply, index))
            if !crate::agent::toolcall::strip_thinking(&reply.content)
                .0
                .trim()
                .is_empty() =>
        {
            let said = crate::agent::toolcall::strip_thinking(&reply.content).0;
            let summary = cap_text(said.trim(), MAX_SUMMARY_BYTES);
            // One commit, not synced to disk here: the turn's answer syncs it (a turn
            // costs one disk sync; docs/DECISIONS.md 59, 92). Lost to a power cut before
            // that, the history is only compacted again.
            agent.db.deferred_sync(|| {
                agent.db.write_batch(|| {
                    agent.record_usage(session, index, &reply);
                    agent
                        .db
                        .compact_session(session, first_kept, Some(&summary))
                })
            })?;
            Ok(Outcome::Summarised(dropped))
        }
        Ok(_) => {
            log::warn!("the model gave an empty summary; trimming {session} instead");
            agent
                .db
                .deferred_sync(|| agent.db.compact_session(session, first_kept, None))?;
            Ok(Outcome::Trimmed(dropped))
        }
        Err(e) => {
            log::warn!("summarising {session} failed ({e}); trimming instead");
            agent
                .db
                .deferred_sync(|| agent.db.compact_session(session, first_kept, None))?;
            Ok(Outcome::Trimmed(dropped))
        }
    }
}

/// Index into `rows` (oldest first) of the first message to keep so that at least `keep`
/// messages stay and no tool call is split from its results. `None` when there is no
/// such place (then nothing is compacted).
pub fn choose_cut(rows: &[Row], keep: usize) -> Option<usize> {
    let last = rows.len().checked_sub(keep.max(1))?;
    if last == 0 {
        return None;
    }
    let kind = |i: usize| rows.get(i).map(|r| r.kind);
    (1..=last)
        .rev()
        .find(|&i| kind(i) == Some(Kind::User))
        .or_else(|| {
            (1..=last).rev().find(|&i| {
                !matches!(kind(i), Some(Kind::Tool) | None)
                    && kind(i - 1) != Some(Kind::AssistantCalls)
            })
        })
}

/// The summarised part as text: the previous summary, then the newest messages before
/// the cut that fit `MAX_TRANSCRIPT_BYTES`, oldest first.
fn transcript(
    agent: &Agent,
    session: &str,
    first_kept: i64,
    previous: Option<&str>,
    cap: usize,
) -> Result<String, crate::store::StoreError> {
    let mut parts: Vec<String> = Vec::new();
    let mut used = 0usize;
    agent.db.messages_before(session, first_kept, |m| {
        let line = render(&m);
        if used + line.len() > cap {
            return false;
        }
        used += line.len();
        parts.push(line);
        true
    })?;
    parts.reverse();
    let mut out = String::with_capacity(used + 64);
    if let Some(p) = previous {
        out.push_str("Earlier summary: ");
        out.push_str(&cap_text(p, MAX_SUMMARY_BYTES.min(cap / 2).max(256)));
        out.push_str("\n\n");
    }
    for p in parts {
        out.push_str(&p);
    }
    Ok(out)
}

/// One message as a transcript line.
fn render(m: &Message) -> String {
    let body = cap_text(m.content.trim(), MAX_TRANSCRIPT_MESSAGE_BYTES);
    let mut line = match m.role {
        Role::User => format!("User: {body}"),
        Role::Assistant => format!("Assistant: {body}"),
        Role::Tool => format!("Tool result: {body}"),
        Role::System => format!("System: {body}"),
    };
    for c in &m.tool_calls {
        let args = cap_text(&c.arguments, 256);
        line.push_str(&format!("\n(called {} {args})", c.name));
    }
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(kinds: &[Kind]) -> Vec<Row> {
        kinds
            .iter()
            .enumerate()
            .map(|(i, k)| Row {
                id: i as i64 + 1,
                kind: *k,
            })
            .collect()
    }

    use Kind::*;

    #[test]
    fn the_cut_falls_before_a_user_message() {
        let r = rows(&[
            User,
            Assistant,
            User,
            AssistantCalls,
            Tool,
            Tool,
            Assistant,
            User,
            Assistant,
        ]);
        // keep 3 → latest allowed index 6; the latest user message at or before it is 2.
        assert_eq!(choose_cut(&r, 3), Some(2));
        assert_eq!(choose_cut(&r, 2), Some(7));
        assert_eq!(choose_cut(&r, 9), None);
        // keep 8 → only index 1 is allowed: not a user message, but not inside a tool
        // exchange either (the summary message comes before it).
        assert_eq!(choose_cut(&r, 8), Some(1));
        assert_eq!(
            choose_cut(&r[..1], 0),
            None,
            "the first message is never the cut"
        );
        assert_eq!(choose_cut(&[], 2), None);
    }

    #[test]
    fn without_a_user_message_the_cut_still_keeps_tool_pairs() {
        let r = rows(&[
            User,
            AssistantCalls,
            Tool,
            AssistantCalls,
            Tool,
            Tool,
            AssistantCalls,
            Tool,
            Assistant,
        ]);
        // keep 2 → latest allowed index 7 (Tool): back to 6 (AssistantCalls, its result kept).
        assert_eq!(choose_cut(&r, 2), Some(6));
        // keep 4 → index 5 is a Tool, 4 a Tool, 3 the call: cut at 3.
        assert_eq!(choose_cut(&r, 4), Some(3));
        let only_tools = rows(&[User, AssistantCalls, Tool, Tool, Tool]);
        assert_eq!(choose_cut(&only_tools, 1), Some(1));
        let call_first = rows(&[AssistantCalls, Tool, Tool]);
        assert_eq!(choose_cut(&call_first, 1), None);
    }

    fn next(x: &mut crate::testkit::XorShift) -> u64 {
        x.next()
    }

    #[test]
    fn random_histories_are_never_split_inside_a_tool_exchange() {
        let mut x = crate::testkit::XorShift(0x1234_5678_9abc_def1);
        for _ in 0..3000 {
            // Build a valid history: user turns with optional tool rounds.
            let mut k = vec![User];
            let turns = next(&mut x) % 12;
            for _ in 0..turns {
                for _ in 0..next(&mut x) % 3 {
                    k.push(AssistantCalls);
                    for _ in 0..1 + next(&mut x) % 3 {
                        k.push(Tool);
                    }
                }
                if next(&mut x).is_multiple_of(4) {
                    k.push(ToolResultText);
                }
                k.push(Assistant);
                if !next(&mut x).is_multiple_of(3) {
                    k.push(User);
                }
            }
            let r = rows(&k);
            let keep = (next(&mut x) % 12) as usize;
            if let Some(c) = choose_cut(&r, keep) {
                assert!(
                    c >= 1 && r.len() - c >= keep.max(1),
                    "{k:?} keep {keep} cut {c}"
                );
                assert_ne!(r[c].kind, Tool, "{k:?} cut {c}");
                assert_ne!(r[c - 1].kind, AssistantCalls, "{k:?} cut {c}");
            }
        }
    }

    #[test]
    fn transcript_lines_are_bounded() {
        let mut m = Message::new(Role::Assistant, "x".repeat(10_000));
        m.tool_calls.push(crate::chat::ToolCall {
            id: "c".into(),
            name: "read_file".into(),
            arguments: "y".repeat(10_000),
        });
        let line = render(&m);
        assert!(
            line.len() < MAX_TRANSCRIPT_MESSAGE_BYTES + 512,
            "{}",
            line.len()
        );
        assert!(line.starts_with("Assistant: xxx"));
        assert!(line.contains("(called read_file yyy"));
    }
}
