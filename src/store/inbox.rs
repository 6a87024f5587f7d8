//! Messages waiting for a turn (`inbox`) and turns owed a delivered answer (`replies`):
//! what a channel that serves many chats keeps on disk so that a crash, a restart or a
//! burst loses no message and no answer (docs/DECISIONS.md 88).
//!
//! - A message is stored in `inbox` when it arrives (with the update offset, one commit).
//! - [`Db::inbox_next`] starts a chat's next turn in one commit: everything waiting up to
//!   the first command becomes one user message in the session's history, its `inbox`
//!   rows are deleted and a `replies` row says the turn is owed an answer. A command
//!   waiting first is taken alone, so commands keep their place in order.
//! - The row is deleted once the turn's answer was delivered. Until then
//!   [`Db::owed_replies`] finds the answer, if one was written, in the session's history.
//!
//! # Bounds
//! - `MAX_INBOX_ROWS` messages wait in all; [`Db::inbox_push`] refuses more.
//! - A turn's text is at most the `max_bytes` its caller passes (newest messages kept):
//!   reading holds at most that much plus one message; older ones are cut and counted.
//! - `MAX_OWED_REPLIES` rows in `replies`: past it the oldest is dropped, with a log line.
//!
//! # Threads
//! Executor thread (it owns the SQLite connection); each call is a few short statements.

use super::{Db, StoreError};
use crate::chat::{Message, Role};
use rusqlite::{OptionalExtension, params};

/// Messages waiting for a turn, in all chats.
pub const MAX_INBOX_ROWS: usize = 1024;
/// Turns owed a delivered answer, in all sessions.
pub const MAX_OWED_REPLIES: usize = 64;
/// Between two collected messages in one user message.
pub const JOIN: &str = "\n\n";
/// Most messages of one turn read to find its answer (a turn has at most
/// `agent.max_tool_iterations` rounds of a call and 8 results).
pub const MAX_TURN_MESSAGES: i64 = 1024;

/// What a chat's next turn is.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// A command that waited first, taken alone.
    Command { text: String, reply_to: Option<i64> },
    /// Collected texts, now one user message in history.
    Turn(Turn),
}

/// A turn owed an answer (a `replies` row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// The row id: the id of the turn's user message.
    pub id: i64,
    /// Answer this message (groups).
    pub reply_to: Option<i64>,
    /// When its oldest message arrived.
    pub at: i64,
    /// Older messages cut to keep the text within the bound, and when the first arrived.
    pub cut: usize,
    pub cut_at: i64,
    /// The final answer's message id, when it was written but not delivered.
    pub answer: Option<i64>,
}

/// A `replies` row as recovery sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owed {
    pub id: i64,
    pub session: String,
    pub reply_to: Option<i64>,
    pub at: i64,
    /// The final answer's message id, once written.
    pub answer: Option<i64>,
}

impl Db {
    /// Store a message for `chat_id`; `false` when `MAX_INBOX_ROWS` already wait.
    pub fn inbox_push(
        &self,
        chat_id: i64,
        reply_to: Option<i64>,
        cmd: bool,
        text: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        // Counted apart: an INSERT … SELECT reading its own table, or a RETURNING, goes
        // through a temporary table, which costs SQLite a fresh page cache each time.
        if self.count("SELECT count(*) FROM inbox")? >= MAX_INBOX_ROWS {
            return Ok(false);
        }
        self.conn
            .prepare_cached(
                "INSERT INTO inbox(chat_id, reply_to, cmd, at, text) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![chat_id, reply_to, cmd, now, text])?;
        Ok(true)
    }

    /// Start the next turn of `chat_id` (see the module doc), in one transaction;
    /// `None` when nothing waits.
    pub fn inbox_next(
        &self,
        chat_id: i64,
        session: &str,
        max_bytes: usize,
        now: i64,
    ) -> Result<Option<Next>, StoreError> {
        self.write_batch(|| {
            // The texts read so far from `first` on (older ones were cut and freed).
            let mut kept: Vec<(i64, String)> = Vec::new();
            let (mut first, mut bytes, mut last, mut reply) = (0, 0, 0, None);
            let mut command = None;
            {
                let mut stmt = self.conn.prepare_cached(
                    "SELECT id, cmd, reply_to, at, text FROM inbox WHERE chat_id = ?1 ORDER BY id",
                )?;
                let mut rows = stmt.query(params![chat_id])?;
                while let Some(r) = rows.next()? {
                    let (id, reply_to, text) = (r.get(0)?, r.get(2)?, r.get::<_, String>(4)?);
                    if r.get::<_, bool>(1)? {
                        if kept.is_empty() {
                            command = Some(Next::Command { text, reply_to });
                            last = id;
                        }
                        break;
                    }
                    bytes += text.len() + JOIN.len();
                    kept.push((r.get(3)?, text));
                    while bytes > max_bytes && first + 1 < kept.len() {
                        bytes -= std::mem::take(&mut kept[first].1).len() + JOIN.len();
                        first += 1;
                    }
                    (last, reply) = (id, reply_to);
                }
            }
            if last == 0 {
                return Ok(None);
            }
            self.conn
                .prepare_cached("DELETE FROM inbox WHERE chat_id = ?1 AND id <= ?2")?
                .execute(params![chat_id, last])?;
            if command.is_some() {
                return Ok(command);
            }
            let (cut_at, at) = (kept[0].0, kept[first].0);
            let texts: Vec<&str> = kept[first..].iter().map(|k| k.1.as_str()).collect();
            let mut t = self.start_turn(session, &texts.join(JOIN), reply, at, now)?;
            (t.cut, t.cut_at) = (first, if first > 0 { cut_at } else { 0 });
            Ok(Some(Next::Turn(t)))
        })
    }

    /// Append `text` (a message that arrived at `at`) to the session's history as the
    /// user's and owe it an answer: the turn's `replies` row, in the caller's transaction.
    pub fn start_turn(
        &self,
        session: &str,
        text: &str,
        reply_to: Option<i64>,
        at: i64,
        now: i64,
    ) -> Result<Turn, StoreError> {
        self.append_message(session, &Message::new(Role::User, text), now)?;
        let id = self.conn.last_insert_rowid();
        self.conn
            .prepare_cached(
                "INSERT INTO replies(id, session, reply_to, at) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![id, session, reply_to, at])?;
        // One row in, at most one out: the oldest, past the bound.
        if self.count("SELECT count(*) FROM replies")? > MAX_OWED_REPLIES {
            let (old, s): (i64, String) = self
                .conn
                .prepare_cached("SELECT id, session FROM replies ORDER BY id LIMIT 1")?
                .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            self.replies_done(&[old])?;
            log::warn!(
                "dropped the oldest undelivered answer, of {s}: more than {MAX_OWED_REPLIES} wait"
            );
        }
        Ok(Turn {
            id,
            reply_to,
            at,
            cut: 0,
            cut_at: 0,
            answer: None,
        })
    }

    /// Messages waiting for their turn, in all chats (`/metrics`' queue depth).
    pub fn inbox_len(&self) -> Result<usize, StoreError> {
        self.count("SELECT count(*) FROM inbox")
    }

    /// Messages waiting for their turn plus turns started and not yet answered: what a
    /// restart now would interrupt (`yoctoclaw update` waits for none).
    pub fn turns_unfinished(&self) -> Result<usize, StoreError> {
        self.count("SELECT (SELECT count(*) FROM inbox) + (SELECT count(*) FROM replies)")
    }

    /// Chats with messages waiting, the longest waiting first, but those in `skip` (at
    /// most `limit`). Steps through the rows in id order: no sort (a sort would allocate
    /// SQLite's sorter buffer on every call).
    pub fn inbox_chats(&self, skip: &[i64], limit: usize) -> Result<Vec<i64>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT chat_id FROM inbox ORDER BY id")?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while out.len() < limit
            && let Some(r) = rows.next()?
        {
            let c: i64 = r.get(0)?;
            if !skip.contains(&c) && !out.contains(&c) {
                out.push(c);
            }
        }
        Ok(out)
    }

    /// Delete the messages that arrived before `before` (those stored before `since`, by
    /// a clock that was not set yet, are kept); returns each one's chat and time.
    pub fn inbox_drop_before(
        &self,
        before: i64,
        since: i64,
    ) -> Result<Vec<(i64, i64)>, StoreError> {
        let sql = "DELETE FROM inbox WHERE at < ?1 AND at >= ?2 RETURNING chat_id, at";
        self.pairs(sql, before, since)
    }

    /// The one number `sql` (no parameters) counts.
    fn count(&self, sql: &str) -> Result<usize, StoreError> {
        let n: i64 = self.conn.prepare_cached(sql)?.query_row([], |r| r.get(0))?;
        Ok(n.max(0) as usize)
    }

    /// The rows of `sql` (two parameters, two integer columns).
    fn pairs(&self, sql: &str, a: i64, b: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let mut rows = stmt.query(params![a, b])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.push((r.get(0)?, r.get(1)?));
        }
        Ok(out)
    }

    /// Every turn owed an answer, oldest first (at most `MAX_OWED_REPLIES`), with its
    /// final answer when one was written.
    pub fn owed_replies(&self) -> Result<Vec<Owed>, StoreError> {
        let mut out = Vec::new();
        {
            let mut stmt = self.conn.prepare_cached(
                "SELECT id, session, reply_to, at FROM replies ORDER BY id LIMIT ?1",
            )?;
            let mut rows = stmt.query(params![MAX_OWED_REPLIES as i64])?;
            while let Some(r) = rows.next()? {
                out.push(Owed {
                    id: r.get(0)?,
                    session: r.get(1)?,
                    reply_to: r.get(2)?,
                    at: r.get(3)?,
                    answer: None,
                });
            }
        }
        for o in &mut out {
            o.answer = self.answer_of(&o.session, o.id)?;
        }
        Ok(out)
    }

    /// The final answer of the turn that starts with message `turn`: the last assistant
    /// message without tool calls that no tool result follows, before the next message
    /// the user typed. (A round, call and results, is stored in one commit, so a call
    /// written as text is never the last message of an interrupted turn.)
    fn answer_of(&self, session: &str, turn: i64) -> Result<Option<i64>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, role, tool_calls IS NULL, substr(content, 1, 12) = '<tool_result'
             FROM messages WHERE session = ?1 AND id > ?2 ORDER BY id LIMIT ?3",
        )?;
        let mut rows = stmt.query(params![session, turn, MAX_TURN_MESSAGES])?;
        let mut answer = None;
        while let Some(r) = rows.next()? {
            let (id, role): (i64, String) = (r.get(0)?, r.get(1)?);
            answer = match (role.as_str(), r.get::<_, bool>(3)?) {
                ("assistant", _) if r.get::<_, bool>(2)? => Some(id),
                ("user", false) => break,
                _ => None,
            };
        }
        Ok(answer)
    }

    /// The stored text of message `id` (an answer to send again).
    pub fn message_text(&self, id: i64) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .prepare_cached("SELECT content FROM messages WHERE id = ?1")?
            .query_row(params![id], |r| r.get(0))
            .optional()?)
    }

    /// The turns in `ids` need no more delivery (answered, or their answer cannot be).
    pub fn replies_done(&self, ids: &[i64]) -> Result<(), StoreError> {
        self.write_batch(|| {
            let mut stmt = self
                .conn
                .prepare_cached("DELETE FROM replies WHERE id = ?1")?;
            for id in ids {
                stmt.execute(params![id])?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(n: Option<Next>) -> Turn {
        match n {
            Some(Next::Turn(t)) => t,
            other => panic!("not a turn: {other:?}"),
        }
    }

    fn last_user(db: &Db, session: &str) -> String {
        let h = db.recent_messages(session, 1).unwrap();
        h.last().map(|m| m.content.clone()).unwrap_or_default()
    }

    #[test]
    fn waiting_texts_become_one_turn_and_commands_keep_their_place() {
        let db = Db::open_in_memory().unwrap();
        for (t, cmd) in [("a", false), ("b", false), ("/new", true), ("c", false)] {
            assert!(db.inbox_push(7, Some(1), cmd, t, 100).unwrap());
        }
        assert!(db.inbox_push(8, None, false, "other chat", 101).unwrap());
        assert_eq!(db.inbox_chats(&[], 10).unwrap(), vec![7, 8]);
        assert_eq!(db.inbox_chats(&[7], 10).unwrap(), vec![8]);
        let t = turn(db.inbox_next(7, "telegram:7", 1000, 200).unwrap());
        assert_eq!((t.cut, t.at, t.reply_to), (0, 100, Some(1)));
        assert_eq!(last_user(&db, "telegram:7"), "a\n\nb");
        assert_eq!(
            db.inbox_next(7, "telegram:7", 1000, 200).unwrap(),
            Some(Next::Command {
                text: "/new".into(),
                reply_to: Some(1)
            })
        );
        let t2 = turn(db.inbox_next(7, "telegram:7", 1000, 200).unwrap());
        assert!(t2.id > t.id);
        assert_eq!(last_user(&db, "telegram:7"), "c");
        assert_eq!(db.inbox_next(7, "telegram:7", 1000, 200).unwrap(), None);
        assert_eq!(db.inbox_chats(&[], 10).unwrap(), vec![8]);
        let owed = db.owed_replies().unwrap();
        assert_eq!(owed.len(), 2);
        assert_eq!((owed[0].id, owed[0].answer), (t.id, None));
    }

    #[test]
    fn a_turn_keeps_the_newest_texts_within_the_bound_and_counts_the_rest() {
        let db = Db::open_in_memory().unwrap();
        for i in 0..100 {
            let text = format!("{i:03}{}", "x".repeat(397));
            assert!(db.inbox_push(5, None, false, &text, 1000 + i).unwrap());
        }
        let t = turn(db.inbox_next(5, "s", 16 * 1024, 2000).unwrap());
        let text = last_user(&db, "s");
        assert!(text.len() <= 16 * 1024, "{}", text.len());
        let kept = text.split(JOIN).count();
        assert_eq!(kept + t.cut, 100);
        assert_eq!(t.cut_at, 1000, "the oldest was cut");
        assert!(text.ends_with(&format!("099{}", "x".repeat(397))));
        assert_eq!(t.at, 1000 + t.cut as i64);
        assert!(
            db.inbox_chats(&[], 10).unwrap().is_empty(),
            "cut ones are gone too"
        );
        // One message longer than the bound is still taken whole.
        db.inbox_push(5, None, false, &"y".repeat(500), 1).unwrap();
        let t = turn(db.inbox_next(5, "s", 100, 2).unwrap());
        assert_eq!((t.cut, last_user(&db, "s").len()), (0, 500));
    }

    #[test]
    fn the_inbox_and_the_owed_replies_are_bounded() {
        let db = Db::open_in_memory().unwrap();
        for i in 0..MAX_INBOX_ROWS {
            assert!(db.inbox_push(i as i64 % 3, None, false, "m", 1).unwrap());
        }
        assert!(!db.inbox_push(9, None, false, "one too many", 1).unwrap());
        assert_eq!(db.inbox_drop_before(2, 1).unwrap().len(), MAX_INBOX_ROWS);
        let mut first = 0;
        for i in 0..MAX_OWED_REPLIES + 5 {
            db.inbox_push(1, None, false, "q", 1).unwrap();
            let t = turn(db.inbox_next(1, "telegram:1", 100, i as i64).unwrap());
            if i == 0 {
                first = t.id;
            }
        }
        let owed = db.owed_replies().unwrap();
        assert_eq!(owed.len(), MAX_OWED_REPLIES);
        assert!(owed.iter().all(|o| o.id != first), "the oldest went first");
    }

    #[test]
    fn an_owed_turn_finds_its_own_answer_and_no_later_one() {
        let db = Db::open_in_memory().unwrap();
        let say = |role, text: &str| {
            db.append_message("telegram:1", &Message::new(role, text), 1)
                .unwrap()
        };
        db.inbox_push(1, None, false, "q1", 1).unwrap();
        let t1 = turn(db.inbox_next(1, "telegram:1", 100, 1).unwrap());
        // A text-mode tool round, then the answer.
        say(Role::Assistant, "<tool_call>{\"name\":\"x\"}</tool_call>");
        say(Role::User, "<tool_result name=\"x\">\nok\n</tool_result>");
        assert_eq!(
            db.owed_replies().unwrap()[0].answer,
            None,
            "a call is no answer"
        );
        say(Role::Assistant, "a1");
        db.inbox_push(1, None, false, "q2", 2).unwrap();
        let t2 = turn(db.inbox_next(1, "telegram:1", 100, 2).unwrap());
        let mut call = Message::new(Role::Assistant, "");
        call.tool_calls.push(crate::chat::ToolCall {
            id: "c".into(),
            name: "list_dir".into(),
            arguments: "{}".into(),
        });
        db.append_message("telegram:1", &call, 3).unwrap();
        let owed = db.owed_replies().unwrap();
        assert_eq!((owed[0].id, owed[1].id), (t1.id, t2.id));
        let a1 = owed[0].answer.unwrap();
        assert_eq!(db.message_text(a1).unwrap().as_deref(), Some("a1"));
        assert_eq!(owed[1].answer, None, "cut after its tool call");
        db.replies_done(&[t1.id, t2.id]).unwrap();
        assert!(db.owed_replies().unwrap().is_empty());
    }
}
