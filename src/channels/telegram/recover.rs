//! What the gateway does at start with what a crash or a restart left behind: turns that
//! were never answered, answers that were never delivered, messages that waited.
//!
//! Why it exists: after a power cut, the OOM killer or a watchdog reset, the messages a
//! user sent are in SQLite (`store::inbox`) but nobody answered them. Each is answered
//! now, or the chat is told in one line that it was not, never both and never twice
//! (docs/DECISIONS.md 88). This file decides; `bot` does it (before polling starts).
//! - An undelivered answer is sent again; an unanswered turn is answered (the newest of
//!   its session only: an older one is part of the history the newer one answers). Both
//!   go to the chat's worker, in order, before the messages that wait for it.
//! - Only what is younger than `RECOVER_MAX_AGE_SECS`, at most `RECOVER_PER_CHAT` per
//!   chat, oldest first; the rest is told in one line per chat and forgotten. With the
//!   clock unset (a board without an RTC, before NTP) ages are unknown: all is fresh.
//!
//! # Bounds
//! Works on at most `MAX_OWED_REPLIES` rows; one told line per chat.
//!
//! # Threads
//! Pure: any thread, no I/O.

use crate::store::inbox::{Owed, Turn};

/// Older messages and answers are not answered or sent after a restart (the chat is told).
pub const RECOVER_MAX_AGE_SECS: i64 = 24 * 3600;
/// Most turns answered or answers sent again per chat after a restart.
pub const RECOVER_PER_CHAT: usize = 8;

/// A chat to tell that some of its messages were not answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Told {
    pub chat_id: i64,
    pub count: usize,
    /// When the oldest of them arrived.
    pub since: i64,
}

/// What to do with the owed turns found at start.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Rows that need nothing more once the plan is carried out.
    pub done: Vec<i64>,
    /// Turns to answer, or whose written answer (`Turn::answer`) to send again, with
    /// their chat, oldest first.
    pub resume: Vec<(i64, Turn)>,
    pub tell: Vec<Told>,
}

/// The chat of a Telegram session (`telegram:<chat_id>`).
pub fn chat_of(session: &str) -> Option<i64> {
    session.strip_prefix("telegram:")?.parse().ok()
}

/// Whether something that arrived at `at` may still be answered at `now` (`epoch`: the
/// build time, below which the clock is taken as unset).
pub fn fresh(at: i64, now: i64, epoch: i64) -> bool {
    now < epoch || at < epoch || now.saturating_sub(at) <= RECOVER_MAX_AGE_SECS
}

/// Count `at` into the chat's told line.
pub fn tell(list: &mut Vec<Told>, chat_id: i64, at: i64) {
    match list.iter_mut().find(|t| t.chat_id == chat_id) {
        Some(t) => {
            t.count += 1;
            t.since = t.since.min(at);
        }
        None => list.push(Told {
            chat_id,
            count: 1,
            since: at,
        }),
    }
}

/// Decide what to do with `owed` (oldest first, as `Db::owed_replies` gives them).
pub fn plan(owed: &[Owed], now: i64, epoch: i64) -> Plan {
    let mut p = Plan::default();
    let mut per_chat: Vec<(i64, usize)> = Vec::new();
    for (i, o) in owed.iter().enumerate() {
        let Some(chat_id) = chat_of(&o.session) else {
            p.done.push(o.id);
            continue;
        };
        let newest = !owed
            .get(i + 1..)
            .unwrap_or(&[])
            .iter()
            .any(|l| l.session == o.session);
        if o.answer.is_none() && !newest {
            // Answered as part of the newer turn's history.
            p.done.push(o.id);
            continue;
        }
        let n = match per_chat.iter_mut().find(|(c, _)| *c == chat_id) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                per_chat.push((chat_id, 1));
                1
            }
        };
        if n > RECOVER_PER_CHAT || !fresh(o.at, now, epoch) {
            tell(&mut p.tell, chat_id, o.at);
            p.done.push(o.id);
            continue;
        }
        let turn = Turn {
            id: o.id,
            reply_to: o.reply_to,
            at: o.at,
            cut: 0,
            cut_at: 0,
            answer: o.answer,
        };
        p.resume.push((chat_id, turn));
    }
    p
}

/// The one line a told chat gets; `when` is the oldest message's local time.
pub fn told_text(t: &Told, when: &str) -> String {
    if t.count == 1 {
        format!(
            "Your message from {when} was not answered because the device restarted; please send it again if it still matters."
        )
    } else {
        format!(
            "Your {} messages from {when} on were not answered because the device restarted; please send again what still matters.",
            t.count
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPOCH: i64 = 1_700_000_000;
    const NOW: i64 = EPOCH + 10 * 86_400;

    fn owed(id: i64, chat: i64, at: i64, answer: Option<i64>) -> Owed {
        Owed {
            id,
            session: format!("telegram:{chat}"),
            reply_to: None,
            at,
            answer,
        }
    }

    #[test]
    fn answers_are_resent_the_newest_open_turn_resumed_and_old_ones_told() {
        let day = RECOVER_MAX_AGE_SECS;
        let mut rows = vec![
            owed(1, 5, NOW - 2 * day, Some(2)), // too old: told
            owed(3, 5, NOW - 60, None),         // covered by turn 7
            owed(5, 5, NOW - 50, Some(6)),      // resent
            owed(7, 5, NOW - 40, None),         // resumed
            owed(9, -8, NOW - 30, None),        // another chat: resumed
            owed(11, 0, NOW, None),             // not Telegram's (below): dropped
        ];
        rows[5].session = "stdio:x".into();
        let p = plan(&rows, NOW, EPOCH);
        assert_eq!(p.done, vec![1, 3, 11]);
        let resumed: Vec<(i64, i64, Option<i64>)> =
            p.resume.iter().map(|(c, t)| (*c, t.id, t.answer)).collect();
        assert_eq!(resumed, vec![(5, 5, Some(6)), (5, 7, None), (-8, 9, None)]);
        assert_eq!(
            p.tell,
            vec![Told {
                chat_id: 5,
                count: 1,
                since: NOW - 2 * day
            }]
        );
    }

    #[test]
    fn at_most_eight_per_chat_oldest_first_and_an_unset_clock_keeps_everything() {
        let rows: Vec<Owed> = (0..12)
            .map(|i| owed(i + 1, 4, NOW - 100 + i, Some(100 + i)))
            .collect();
        let p = plan(&rows, NOW, EPOCH);
        assert_eq!(p.resume.len(), RECOVER_PER_CHAT);
        assert_eq!(p.resume[0].1.id, 1, "oldest first");
        assert_eq!(p.tell[0].count, 12 - RECOVER_PER_CHAT);
        assert_eq!(p.done.len(), 12 - RECOVER_PER_CHAT);
        // Every row is either acted on or done, never both.
        for r in &rows {
            let acted = p.resume.iter().any(|(_, t)| t.id == r.id);
            assert!(acted != p.done.contains(&r.id), "row {}", r.id);
        }
        // A 1970 clock (no RTC yet), or a message stored under one: age unknown, fresh.
        assert!(fresh(NOW - 30 * 86_400, 5, EPOCH));
        assert!(fresh(5, NOW, EPOCH));
        assert!(!fresh(NOW - RECOVER_MAX_AGE_SECS - 1, NOW, EPOCH));
        assert_eq!(chat_of("telegram:-100"), Some(-100));
        assert_eq!(chat_of("serial:x"), None);
    }

    #[test]
    fn one_told_line_per_chat() {
        let mut l = Vec::new();
        tell(&mut l, 1, 50);
        tell(&mut l, 1, 40);
        tell(&mut l, 2, 60);
        assert_eq!(l.len(), 2);
        assert_eq!((l[0].count, l[0].since), (2, 40));
        let t = told_text(&l[0], "2026-01-01 09:30");
        assert!(
            t.starts_with("Your 2 messages from 2026-01-01 09:30 on"),
            "{t}"
        );
        assert!(told_text(&l[1], "x").contains("device restarted"));
    }
}
