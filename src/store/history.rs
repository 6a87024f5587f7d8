//! Session history: every message appended as it happens, read back newest-N.
//!
//! # Bounds
//! Reads return at most the `limit` asked for; the caller passes a config bound.
//!
//! # Threads
//! Executor thread (it owns the SQLite connection); each call is one short statement or
//! read, nothing here awaits I/O of its own.

use super::{Db, StoreError};
use crate::chat::{Message, Role, ToolCall};
use crate::json;
use rusqlite::{OptionalExtension, params};

impl Db {
    /// Create the session row, or set its `updated` time.
    fn touch_session(&self, session: &str, now: i64) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO sessions(id, created, updated) VALUES (?1, ?2, ?2)
                 ON CONFLICT(id) DO UPDATE SET updated = excluded.updated",
            )?
            .execute(params![session, now])?;
        Ok(())
    }

    /// Append one message to a session's history (one transaction: one commit).
    pub fn append_message(&self, session: &str, msg: &Message, now: i64) -> Result<(), StoreError> {
        self.write_batch(|| self.insert_message(session, msg, now))
    }

    pub(super) fn insert_message(
        &self,
        session: &str,
        msg: &Message,
        now: i64,
    ) -> Result<(), StoreError> {
        self.touch_session(session, now)?;
        let calls = if msg.tool_calls.is_empty() {
            None
        } else {
            Some(encode_calls(&msg.tool_calls))
        };
        self.conn
            .prepare_cached(
                "INSERT INTO messages(session, role, content, tool_calls, tool_call_id, created)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                session,
                msg.role.as_str(),
                msg.content,
                calls,
                msg.tool_call_id,
                now
            ])?;
        Ok(())
    }

    /// The newest `limit` messages of the session's current conversation, oldest first,
    /// starting at a clean boundary (never with a tool result whose call was cut off).
    pub fn recent_messages(&self, session: &str, limit: usize) -> Result<Vec<Message>, StoreError> {
        let (start, summary): (i64, Option<String>) = self
            .conn
            .prepare_cached("SELECT start_id, summary FROM sessions WHERE id = ?1")?
            .query_row(params![session], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
            .unwrap_or((0, None));
        let mut stmt = self.conn.prepare_cached(
            "SELECT role, content, tool_calls, tool_call_id FROM messages
             WHERE session = ?1 AND id > ?2 ORDER BY id DESC LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![session, start, limit as i64], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (role, content, calls, call_id) = row?;
            let Some(role) = Role::parse(&role) else {
                log::warn!("skipping a stored message with unknown role {role:?}");
                continue;
            };
            out.push(Message {
                role,
                content,
                tool_calls: calls.as_deref().map(decode_calls).unwrap_or_default(),
                tool_call_id: call_id,
                images: Vec::new(),
            });
        }
        out.reverse();
        Ok(match summary {
            Some(text) => super::summary::with_summary(&text, out),
            None => trim_to_clean_start(out),
        })
    }

    /// Start a fresh conversation: earlier messages stay stored but are no longer sent.
    pub fn reset_session(&self, session: &str, now: i64) -> Result<(), StoreError> {
        self.touch_session(session, now)?;
        self.conn
            .prepare_cached(
                "UPDATE sessions SET start_id = (SELECT IFNULL(MAX(id), 0) FROM messages), summary = NULL
                 WHERE id = ?1",
            )?
            .execute(params![session])?;
        Ok(())
    }

    /// Messages in the session's current conversation.
    pub fn message_count(&self, session: &str) -> Result<u64, StoreError> {
        let n: i64 = self
            .conn
            .prepare_cached(
                "SELECT COUNT(*) FROM messages m WHERE m.session = ?1
                 AND m.id > IFNULL((SELECT start_id FROM sessions WHERE id = ?1), 0)",
            )?
            .query_row(params![session], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    }

    /// Number of sessions stored.
    pub fn session_count(&self) -> Result<u64, StoreError> {
        let n: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    }
}

/// Drop leading messages until the history starts with a user message, so that no tool
/// result or assistant tool call is left without its partner.
fn trim_to_clean_start(mut msgs: Vec<Message>) -> Vec<Message> {
    let first_user = msgs.iter().position(|m| m.role == Role::User);
    match first_user {
        Some(i) => {
            msgs.drain(..i);
            msgs
        }
        None => Vec::new(),
    }
}

fn encode_calls(calls: &[ToolCall]) -> String {
    json::to_string(&json::array(
        calls
            .iter()
            .map(|c| {
                json::object([
                    ("id", json::string(c.id.clone())),
                    ("name", json::string(c.name.clone())),
                    ("arguments", json::string(c.arguments.clone())),
                ])
            })
            .collect(),
    ))
}

pub(super) fn decode_calls(text: &str) -> Vec<ToolCall> {
    let Ok(v) = json::parse_value(text) else {
        return Vec::new();
    };
    json::as_array(&v)
        .map(|a| {
            a.iter()
                .filter_map(|c| {
                    Some(ToolCall {
                        id: json::str_at(c, "id")?.to_string(),
                        name: json::str_at(c, "name")?.to_string(),
                        arguments: json::str_at(c, "arguments").unwrap_or("{}").to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Messages looked back through for [`Db::recent_tool_calls`] (a bounded read however
/// long the history).
pub const TOOL_CALL_SCAN_MESSAGES: i64 = 2_000;

impl Db {
    /// The sessions most recently active, newest first: `(id, updated)`, at most `limit`.
    pub fn recent_sessions(&self, limit: usize) -> Result<Vec<(String, i64)>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, updated FROM sessions ORDER BY updated DESC, id LIMIT ?1",
        )?;
        let rows = stmt.query_map(params![limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The last tool calls the model made, newest first: `(session, tool, at)`, at most
    /// `limit`, from the last `TOOL_CALL_SCAN_MESSAGES` messages.
    pub fn recent_tool_calls(
        &self,
        limit: usize,
    ) -> Result<Vec<(String, String, i64)>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT session, tool_calls, created FROM messages
             WHERE tool_calls IS NOT NULL
               AND id > (SELECT IFNULL(MAX(id), 0) FROM messages) - ?1
             ORDER BY id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![TOOL_CALL_SCAN_MESSAGES, limit as i64], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (session, calls, at) = row?;
            // A message's calls in the order made: the newest (last) first.
            for c in decode_calls(&calls).into_iter().rev() {
                if out.len() < limit {
                    out.push((session.clone(), c.name, at));
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: Role, text: &str) -> Message {
        Message {
            role,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            images: Vec::new(),
        }
    }

    #[test]
    fn append_and_read_back_in_order() {
        let db = Db::open_in_memory().unwrap();
        db.append_message("s", &msg(Role::User, "one"), 1).unwrap();
        let mut a = msg(Role::Assistant, "");
        a.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        });
        db.append_message("s", &a, 2).unwrap();
        let mut t = msg(Role::Tool, "content");
        t.tool_call_id = Some("c1".into());
        db.append_message("s", &t, 3).unwrap();
        db.append_message("s", &msg(Role::Assistant, "done"), 4)
            .unwrap();
        db.append_message("other", &msg(Role::User, "x"), 5)
            .unwrap();
        let h = db.recent_messages("s", 10).unwrap();
        assert_eq!(h.len(), 4);
        assert_eq!(h[1].tool_calls[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(h[2].tool_call_id.as_deref(), Some("c1"));
        assert_eq!(db.session_count().unwrap(), 2);
    }

    #[test]
    fn a_cut_never_starts_with_a_tool_result() {
        let db = Db::open_in_memory().unwrap();
        db.append_message("s", &msg(Role::User, "q"), 1).unwrap();
        let mut a = msg(Role::Assistant, "");
        a.tool_calls.push(ToolCall {
            id: "c".into(),
            name: "list_dir".into(),
            arguments: "{}".into(),
        });
        db.append_message("s", &a, 2).unwrap();
        let mut t = msg(Role::Tool, "r");
        t.tool_call_id = Some("c".into());
        db.append_message("s", &t, 3).unwrap();
        db.append_message("s", &msg(Role::Assistant, "ok"), 4)
            .unwrap();
        db.append_message("s", &msg(Role::User, "q2"), 5).unwrap();
        // The newest 3 would start with the tool result: trimmed to the user message.
        let h = db.recent_messages("s", 3).unwrap();
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].content, "q2");
    }

    #[test]
    fn reset_starts_a_fresh_conversation() {
        let db = Db::open_in_memory().unwrap();
        db.append_message("s", &msg(Role::User, "old"), 1).unwrap();
        db.reset_session("s", 2).unwrap();
        assert!(db.recent_messages("s", 10).unwrap().is_empty());
        db.append_message("s", &msg(Role::User, "new"), 3).unwrap();
        let h = db.recent_messages("s", 10).unwrap();
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].content, "new");
        assert_eq!(db.message_count("s").unwrap(), 1);
    }
}
