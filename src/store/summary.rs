//! Compaction's side of session history: the size of the current conversation, the
//! shape of its newest messages (to choose where to cut), a walk over the messages
//! before a cut, and moving a session's start past the cut with a summary.
//!
//! A compacted session keeps its summary in `sessions.summary`; its `start_id` moves so
//! the summarised messages stay on disk but are no longer sent. `recent_messages` then
//! sends the summary first, as a user message starting with `SUMMARY_PREFIX`. `/new`
//! clears the summary.
//!
//! # Bounds
//! `conversation_tail` reads at most the `limit` asked for (id and role only);
//! `messages_before` hands messages over one at a time until the caller stops.
//!
//! # Threads
//! Executor thread (it owns the SQLite connection); each call is one short statement or
//! read, nothing here awaits I/O of its own.

use super::{Db, StoreError};
use crate::chat::{Message, Role};
use rusqlite::{OptionalExtension, params};

/// The first line of the summary message the model sees.
pub const SUMMARY_PREFIX: &str = "[Summary of earlier conversation]";

/// What a stored message is, as far as cutting is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A message the user typed.
    User,
    /// A user-role message carrying text-mode `<tool_result>` blocks.
    ToolResultText,
    /// An assistant message without tool calls.
    Assistant,
    /// An assistant message with native tool calls (its results follow it).
    AssistantCalls,
    /// A native tool result (must follow its call).
    Tool,
    /// Anything else (system, unknown role).
    Other,
}

/// One message of a conversation's tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub id: i64,
    pub kind: Kind,
}

/// The history sent after a compaction: the summary, then the messages, never starting
/// with a tool result whose call was cut off.
pub(super) fn with_summary(summary: &str, mut msgs: Vec<Message>) -> Vec<Message> {
    let first_ok = msgs
        .iter()
        .position(|m| m.role != Role::Tool)
        .unwrap_or(msgs.len());
    msgs.drain(..first_ok);
    let mut out = Vec::with_capacity(msgs.len() + 1);
    out.push(Message::new(
        Role::User,
        format!("{SUMMARY_PREFIX}\n{}", summary.trim()),
    ));
    out.extend(msgs);
    out
}

impl Db {
    fn start_of(&self, session: &str) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .prepare_cached("SELECT start_id FROM sessions WHERE id = ?1")?
            .query_row(params![session], |r| r.get(0))
            .optional()?
            .unwrap_or(0))
    }

    /// Messages in the current conversation and their bytes (content and tool calls,
    /// plus the summary's).
    pub fn conversation_size(&self, session: &str) -> Result<(u64, u64), StoreError> {
        let (n, bytes): (i64, i64) = self
            .conn
            .prepare_cached(
                "SELECT COUNT(*), IFNULL(SUM(LENGTH(CAST(content AS BLOB))
                        + IFNULL(LENGTH(CAST(tool_calls AS BLOB)), 0)), 0)
                   + IFNULL((SELECT LENGTH(CAST(summary AS BLOB)) FROM sessions WHERE id = ?1), 0)
                 FROM messages m WHERE m.session = ?1
                 AND m.id > IFNULL((SELECT start_id FROM sessions WHERE id = ?1), 0)",
            )?
            .query_row(params![session], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok((n.max(0) as u64, bytes.max(0) as u64))
    }

    /// The newest `limit` messages of the current conversation, oldest first, as rows.
    pub fn conversation_tail(&self, session: &str, limit: usize) -> Result<Vec<Row>, StoreError> {
        let start = self.start_of(session)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, role, tool_calls IS NOT NULL, substr(content, 1, 12) = '<tool_result'
             FROM messages WHERE session = ?1 AND id > ?2 ORDER BY id DESC LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![session, start, limit as i64], |r| {
            let role: String = r.get(1)?;
            let calls: bool = r.get(2)?;
            let tool_text: bool = r.get(3)?;
            let kind = match Role::parse(&role) {
                Some(Role::User) if tool_text => Kind::ToolResultText,
                Some(Role::User) => Kind::User,
                Some(Role::Assistant) if calls => Kind::AssistantCalls,
                Some(Role::Assistant) => Kind::Assistant,
                Some(Role::Tool) => Kind::Tool,
                _ => Kind::Other,
            };
            Ok(Row {
                id: r.get(0)?,
                kind,
            })
        })?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row?);
        }
        out.reverse();
        Ok(out)
    }

    /// The summary of the session's compacted messages.
    pub fn session_summary(&self, session: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .prepare_cached("SELECT summary FROM sessions WHERE id = ?1")?
            .query_row(params![session], |r| r.get::<_, Option<String>>(0))
            .optional()?
            .flatten())
    }

    /// The current conversation's messages before `before_id`, newest first, handed to
    /// `each` one at a time until it returns false.
    pub fn messages_before(
        &self,
        session: &str,
        before_id: i64,
        mut each: impl FnMut(Message) -> bool,
    ) -> Result<(), StoreError> {
        let start = self.start_of(session)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT role, content, tool_calls, tool_call_id FROM messages
             WHERE session = ?1 AND id > ?2 AND id < ?3 ORDER BY id DESC",
        )?;
        let mut rows = stmt.query(params![session, start, before_id])?;
        while let Some(r) = rows.next()? {
            let role: String = r.get(0)?;
            let Some(role) = Role::parse(&role) else {
                continue;
            };
            let calls: Option<String> = r.get(2)?;
            let m = Message {
                role,
                content: r.get(1)?,
                tool_calls: calls
                    .as_deref()
                    .map(super::history::decode_calls)
                    .unwrap_or_default(),
                tool_call_id: r.get(3)?,
                images: Vec::new(),
            };
            if !each(m) {
                break;
            }
        }
        Ok(())
    }

    /// Drop the messages before `first_kept_id` from the conversation. With `Some`
    /// summary it replaces the stored one; with `None` the old summary (if any) stays.
    /// The start only ever moves forward.
    pub fn compact_session(
        &self,
        session: &str,
        first_kept_id: i64,
        summary: Option<&str>,
    ) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "UPDATE sessions SET start_id = MAX(start_id, ?2 - 1),
                     summary = IFNULL(?3, summary)
                 WHERE id = ?1",
            )?
            .execute(params![session, first_kept_id, summary])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::ToolCall;

    fn add(db: &Db, s: &str, role: Role, text: &str) {
        db.append_message(s, &Message::new(role, text), 1).unwrap();
    }

    #[test]
    fn compacted_history_starts_with_the_summary() {
        let db = Db::open_in_memory().unwrap();
        add(&db, "s", Role::User, "one");
        add(&db, "s", Role::Assistant, "two");
        add(&db, "other", Role::User, "elsewhere");
        add(
            &db,
            "s",
            Role::User,
            "<tool_result name=\"x\">r</tool_result>",
        );
        let mut a = Message::new(Role::Assistant, "");
        a.tool_calls.push(ToolCall {
            id: "c".into(),
            name: "list_dir".into(),
            arguments: "{}".into(),
        });
        db.append_message("s", &a, 1).unwrap();
        let mut t = Message::new(Role::Tool, "r");
        t.tool_call_id = Some("c".into());
        db.append_message("s", &t, 1).unwrap();
        add(&db, "s", Role::User, "three");
        let tail = db.conversation_tail("s", 10).unwrap();
        let kinds: Vec<Kind> = tail.iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::User,
                Kind::Assistant,
                Kind::ToolResultText,
                Kind::AssistantCalls,
                Kind::Tool,
                Kind::User
            ]
        );
        assert_eq!(db.conversation_size("s").unwrap().0, 6);
        let mut seen = Vec::new();
        db.messages_before("s", tail[3].id, |m| {
            seen.push(m.content);
            true
        })
        .unwrap();
        assert_eq!(seen[0], "<tool_result name=\"x\">r</tool_result>");
        assert_eq!(seen.len(), 3);
        // Cut at the tool result: the history must not start with it.
        db.compact_session("s", tail[4].id, Some("they said one and two"))
            .unwrap();
        let h = db.recent_messages("s", 40).unwrap();
        assert_eq!(h.len(), 2);
        assert!(h[0].content.starts_with(SUMMARY_PREFIX));
        assert!(h[0].content.ends_with("they said one and two"));
        assert_eq!(h[1].content, "three");
        assert_eq!(db.conversation_size("s").unwrap().0, 2);
        // A trim keeps the summary; the start never moves back.
        db.compact_session("s", tail[0].id, None).unwrap();
        assert_eq!(db.conversation_size("s").unwrap().0, 2);
        assert!(db.session_summary("s").unwrap().is_some());
        // /new clears it.
        db.reset_session("s", 2).unwrap();
        assert!(db.session_summary("s").unwrap().is_none());
        assert!(db.recent_messages("s", 40).unwrap().is_empty());
    }
}
