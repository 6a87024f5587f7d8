//! Deciding what to do with one incoming Telegram message: answer it, refuse the
//! sender, say "text only", or ignore it (groups not addressed to us, service
//! messages, other bots).
//!
//! Why it exists: the rules (deny by default with `allow_from`, groups answered only
//! when mentioned or replied to, captions standing in for text) are the part users test
//! first, so they are pure functions here, apart from any I/O.
//!
//! # Bounds
//! - [`RefusalLimiter`] remembers at most `MAX_REFUSAL_ENTRIES` users; when full, it
//!   forgets expired entries first, then the oldest (that user may get a second
//!   refusal within the hour, which is harmless).
//! - An allow list holds what the config holds (the config file is size-capped).
//!
//! # Threads
//! Any thread: pure functions and a small table the caller owns (`bot` calls them on the
//! executor thread).

use super::api::{BotIdentity, ChatKind, Incoming};
use crate::config::GroupMode;
use std::time::{Duration, Instant};

/// Users remembered by the refusal limiter.
pub const MAX_REFUSAL_ENTRIES: usize = 256;
/// Least time between two refusals to the same user.
pub const REFUSAL_INTERVAL_SECS: u64 = 3600;

/// The reply sent when a message has neither text nor caption.
pub const TEXT_ONLY_REPLY: &str = "I can only read text for now.";

/// The refusal sent to users not in `allow_from`.
pub fn refusal_text(user_id: i64) -> String {
    format!(
        "Sorry, I only talk to people on my allow list. Your Telegram user id is {user_id}: \
         ask my owner to add it to telegram.allow_from."
    )
}

/// `telegram.allow_from`: numeric user ids and usernames.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    ids: Vec<i64>,
    /// Lowercase, without the `@`.
    names: Vec<String>,
}

impl AllowList {
    /// Parse the entries; returns the list and the entries that are neither an id nor a
    /// username (ignored; the caller warns).
    pub fn parse(entries: &[String]) -> (AllowList, Vec<String>) {
        let mut list = AllowList::default();
        let mut bad = Vec::new();
        for e in entries {
            let e = e.trim();
            if let Ok(id) = e.parse::<i64>() {
                list.ids.push(id);
                continue;
            }
            let name = e.strip_prefix('@').unwrap_or(e);
            let valid = !name.is_empty()
                && name.len() <= 64
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if valid {
                list.names.push(name.to_ascii_lowercase());
            } else {
                bad.push(e.to_string());
            }
        }
        (list, bad)
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty() && self.names.is_empty()
    }

    pub fn len(&self) -> usize {
        self.ids.len() + self.names.len()
    }

    /// Whether this user may talk to the bot.
    pub fn allows(&self, user_id: i64, username: Option<&str>) -> bool {
        if self.ids.contains(&user_id) {
            return true;
        }
        let Some(u) = username else {
            return false;
        };
        let u = u.strip_prefix('@').unwrap_or(u);
        self.names.iter().any(|n| n.eq_ignore_ascii_case(u))
    }
}

/// Remembers whom we refused recently, so each user is told at most once an hour.
#[derive(Debug)]
pub struct RefusalLimiter {
    seen: Vec<(i64, Instant)>,
    interval: Duration,
}

impl Default for RefusalLimiter {
    fn default() -> Self {
        RefusalLimiter::new()
    }
}

impl RefusalLimiter {
    pub fn new() -> RefusalLimiter {
        RefusalLimiter {
            seen: Vec::new(),
            interval: Duration::from_secs(REFUSAL_INTERVAL_SECS),
        }
    }

    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// True when `user` should get a refusal now (and records it).
    pub fn should_refuse(&mut self, user: i64, now: Instant) -> bool {
        if let Some(entry) = self.seen.iter_mut().find(|(u, _)| *u == user) {
            if now.saturating_duration_since(entry.1) < self.interval {
                return false;
            }
            entry.1 = now;
            return true;
        }
        if self.seen.len() >= MAX_REFUSAL_ENTRIES {
            let interval = self.interval;
            self.seen
                .retain(|(_, t)| now.saturating_duration_since(*t) < interval);
        }
        if self.seen.len() >= MAX_REFUSAL_ENTRIES
            && let Some(oldest) = self
                .seen
                .iter()
                .enumerate()
                .min_by_key(|(_, (_, t))| *t)
                .map(|(i, _)| i)
        {
            self.seen.swap_remove(oldest);
        }
        self.seen.push((user, now));
        true
    }
}

/// The rules a message is judged by.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    pub bot: &'a BotIdentity,
    pub allow: &'a AllowList,
    pub group_mode: GroupMode,
}

/// A message to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub chat_id: i64,
    /// The text for the agent (caption for media; the bot's mention removed).
    pub text: String,
    /// Reply to this message (groups), so the answer is attached to the question.
    pub reply_to: Option<i64>,
}

/// What to do with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Do nothing; the reason is for a debug log line.
    Ignore(&'static str),
    /// The sender is not on the allow list.
    Refuse {
        chat_id: i64,
        user_id: i64,
        username: Option<String>,
        reply_to: Option<i64>,
    },
    /// A photo, sticker… without a caption.
    TextOnly {
        chat_id: i64,
        reply_to: Option<i64>,
    },
    Answer(Request),
}

/// Judge one message.
pub fn classify(m: &Incoming, rules: &Rules<'_>) -> Action {
    if m.chat == ChatKind::Channel {
        return Action::Ignore("channel post");
    }
    let Some(user_id) = m.from_id else {
        return Action::Ignore("no sender");
    };
    if m.from_is_bot {
        return Action::Ignore("sent by a bot");
    }
    let content = m.text.as_deref().or(m.caption.as_deref());
    let group = m.chat == ChatKind::Group;
    let name = rules.bot.username.as_str();
    let explicit = !group
        || m.reply_to_from_id == Some(rules.bot.id)
        || content.is_some_and(|t| mentions(t, name) || command_for_us(t, name));
    if content.is_some_and(|t| command_for_other_bot(t, name)) {
        return Action::Ignore("a command for another bot");
    }
    let answer = explicit || (rules.group_mode == GroupMode::All && content.is_some());
    if !answer {
        return Action::Ignore("group message not addressed to the bot");
    }
    let reply_to = group.then_some(m.message_id);
    if !rules.allow.allows(user_id, m.from_username.as_deref()) {
        if !explicit {
            return Action::Ignore("unlisted user in a group");
        }
        return Action::Refuse {
            chat_id: m.chat_id,
            user_id,
            username: m.from_username.clone(),
            reply_to,
        };
    }
    if m.media.is_some() {
        // Voice notes, photos, files: the caption (mention removed) goes with them;
        // `bot` fetches the file and makes the text (`media`).
        let caption = content.map_or(String::new(), |c| {
            if group {
                strip_mention(c, name)
            } else {
                c.trim().to_string()
            }
        });
        return Action::Answer(Request {
            chat_id: m.chat_id,
            text: caption,
            reply_to,
        });
    }
    let Some(content) = content else {
        return if m.has_media {
            Action::TextOnly {
                chat_id: m.chat_id,
                reply_to,
            }
        } else {
            Action::Ignore("service message")
        };
    };
    let text = if group {
        let stripped = strip_mention(content, name);
        if stripped.is_empty() {
            content.trim().to_string()
        } else {
            stripped
        }
    } else {
        content.trim().to_string()
    };
    if text.is_empty() {
        return Action::Ignore("empty message");
    }
    Action::Answer(Request {
        chat_id: m.chat_id,
        text,
        reply_to,
    })
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Byte ranges of `@name` in `text` (case-insensitive, whole word).
fn mention_ranges(text: &str, name: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    if name.is_empty() {
        return out;
    }
    let t = text.as_bytes();
    let n = name.as_bytes();
    let mut i = 0;
    while i < t.len() {
        let end = i + 1 + n.len();
        let hit = t[i] == b'@'
            && end <= t.len()
            && t[i + 1..end].eq_ignore_ascii_case(n)
            && t.get(end).is_none_or(|b| !is_name_byte(*b))
            && (i == 0 || !is_name_byte(t[i - 1]));
        if hit {
            out.push((i, end));
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// `text` mentions `@name`.
pub fn mentions(text: &str, name: &str) -> bool {
    !mention_ranges(text, name).is_empty()
}

/// `text` with every `@name` removed, and the separator that followed a leading
/// mention (`@bot, hi` → `hi`).
pub fn strip_mention(text: &str, name: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (s, e) in mention_ranges(text, name) {
        out.push_str(&text[last..s]);
        last = e;
    }
    out.push_str(&text[last..]);
    // "@bot, : hello" -> "hello": the separators after a leading mention, in any order.
    out.trim_start_matches(|c: char| c.is_whitespace() || c == ',' || c == ':')
        .trim_end()
        .to_string()
}

/// The `@target` of a leading `/command@target`, if any.
fn command_target(text: &str) -> Option<Option<&str>> {
    let word = text
        .trim_start()
        .strip_prefix('/')?
        .split_whitespace()
        .next()?;
    Some(word.split_once('@').map(|(_, t)| t))
}

fn command_for_us(text: &str, name: &str) -> bool {
    match command_target(text) {
        Some(None) => true,
        Some(Some(t)) => t.eq_ignore_ascii_case(name),
        None => false,
    }
}

fn command_for_other_bot(text: &str, name: &str) -> bool {
    matches!(command_target(text), Some(Some(t)) if !t.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bot() -> BotIdentity {
        BotIdentity {
            id: 999,
            username: "yc_bot".into(),
        }
    }

    fn msg(chat: ChatKind, from: i64, text: Option<&str>) -> Incoming {
        Incoming {
            message_id: 7,
            chat_id: if chat == ChatKind::Private {
                from
            } else {
                -100
            },
            chat,
            from_id: Some(from),
            from_username: Some("Alice".into()),
            from_is_bot: false,
            text: text.map(str::to_string),
            caption: None,
            has_media: false,
            reply_to_from_id: None,
            media: None,
        }
    }

    fn allow(entries: &[&str]) -> AllowList {
        let e: Vec<String> = entries.iter().map(|s| s.to_string()).collect();
        AllowList::parse(&e).0
    }

    fn judge(m: &Incoming, a: &AllowList, mode: GroupMode) -> Action {
        let b = bot();
        classify(
            m,
            &Rules {
                bot: &b,
                allow: a,
                group_mode: mode,
            },
        )
    }

    #[test]
    fn allow_list_forms() {
        let (a, bad) = AllowList::parse(&[
            "42".into(),
            "@Alice".into(),
            "bob_2".into(),
            " 7 ".into(),
            "no spaces".into(),
            "@".into(),
        ]);
        assert_eq!(bad, vec!["no spaces".to_string(), "@".to_string()]);
        assert!(a.allows(42, None));
        assert!(a.allows(7, None));
        assert!(a.allows(1, Some("alice")));
        assert!(a.allows(1, Some("ALICE")));
        assert!(a.allows(1, Some("@Bob_2")));
        assert!(!a.allows(1, Some("carol")));
        assert!(!a.allows(43, None));
        assert!(AllowList::parse(&[]).0.is_empty());
        assert!(!AllowList::default().allows(42, Some("alice")));
    }

    #[test]
    fn private_messages_from_listed_users_are_answered() {
        let a = allow(&["42"]);
        let m = msg(ChatKind::Private, 42, Some("  hello  "));
        assert_eq!(
            judge(&m, &a, GroupMode::Mention),
            Action::Answer(Request {
                chat_id: 42,
                text: "hello".into(),
                reply_to: None
            })
        );
    }

    #[test]
    fn unlisted_users_are_refused_and_an_empty_list_refuses_everyone() {
        let m = msg(ChatKind::Private, 5, Some("hi"));
        for a in [allow(&["42"]), AllowList::default()] {
            assert!(matches!(
                judge(&m, &a, GroupMode::Mention),
                Action::Refuse { user_id: 5, .. }
            ));
        }
        assert!(refusal_text(5).contains(" 5:"));
    }

    #[test]
    fn groups_need_a_mention_or_a_reply() {
        let a = allow(&["@alice"]);
        let plain = msg(ChatKind::Group, 42, Some("hello all"));
        assert!(matches!(
            judge(&plain, &a, GroupMode::Mention),
            Action::Ignore(_)
        ));
        let mention = msg(ChatKind::Group, 42, Some("@YC_bot, what time is it?"));
        assert_eq!(
            judge(&mention, &a, GroupMode::Mention),
            Action::Answer(Request {
                chat_id: -100,
                text: "what time is it?".into(),
                reply_to: Some(7)
            })
        );
        let not_us = msg(ChatKind::Group, 42, Some("@yc_bot_fan hi"));
        assert!(matches!(
            judge(&not_us, &a, GroupMode::Mention),
            Action::Ignore(_)
        ));
        let mut reply = msg(ChatKind::Group, 42, Some("and tomorrow?"));
        reply.reply_to_from_id = Some(999);
        assert!(matches!(
            judge(&reply, &a, GroupMode::Mention),
            Action::Answer(_)
        ));
        let all = judge(&plain, &a, GroupMode::All);
        assert!(matches!(all, Action::Answer(_)), "{all:?}");
        let cmd = msg(ChatKind::Group, 42, Some("/status@yc_bot"));
        assert!(matches!(
            judge(&cmd, &a, GroupMode::Mention),
            Action::Answer(_)
        ));
        let other = msg(ChatKind::Group, 42, Some("/status@other_bot"));
        assert!(matches!(
            judge(&other, &a, GroupMode::All),
            Action::Ignore(_)
        ));
        let bare = msg(ChatKind::Group, 42, Some("@yc_bot"));
        assert!(matches!(
            judge(&bare, &a, GroupMode::Mention),
            Action::Answer(Request { ref text, .. }) if text == "@yc_bot"
        ));
    }

    #[test]
    fn unlisted_group_members_are_refused_only_when_they_address_the_bot() {
        let a = allow(&["1"]);
        let mut m = msg(ChatKind::Group, 42, Some("chatting"));
        m.from_username = None;
        assert!(matches!(judge(&m, &a, GroupMode::All), Action::Ignore(_)));
        m.text = Some("@yc_bot hi".into());
        assert!(matches!(
            judge(&m, &a, GroupMode::All),
            Action::Refuse {
                chat_id: -100,
                user_id: 42,
                reply_to: Some(7),
                ..
            }
        ));
    }

    #[test]
    fn media_uses_the_caption_or_gets_text_only() {
        let a = allow(&["42"]);
        let mut m = msg(ChatKind::Private, 42, None);
        m.has_media = true;
        assert_eq!(
            judge(&m, &a, GroupMode::Mention),
            Action::TextOnly {
                chat_id: 42,
                reply_to: None
            }
        );
        m.caption = Some("what is this?".into());
        assert!(matches!(
            judge(&m, &a, GroupMode::Mention),
            Action::Answer(Request { ref text, .. }) if text == "what is this?"
        ));
        let service = msg(ChatKind::Private, 42, None);
        assert!(matches!(
            judge(&service, &a, GroupMode::Mention),
            Action::Ignore(_)
        ));
    }

    #[test]
    fn bots_anonymous_senders_and_channels_are_ignored() {
        let a = allow(&["42"]);
        let mut m = msg(ChatKind::Private, 42, Some("hi"));
        m.from_is_bot = true;
        assert!(matches!(
            judge(&m, &a, GroupMode::Mention),
            Action::Ignore(_)
        ));
        let mut m = msg(ChatKind::Group, 42, Some("@yc_bot hi"));
        m.from_id = None;
        assert!(matches!(
            judge(&m, &a, GroupMode::Mention),
            Action::Ignore(_)
        ));
        let m = msg(ChatKind::Channel, 42, Some("@yc_bot hi"));
        assert!(matches!(
            judge(&m, &a, GroupMode::Mention),
            Action::Ignore(_)
        ));
    }

    #[test]
    fn mention_stripping() {
        assert_eq!(strip_mention("@yc_bot hello", "yc_bot"), "hello");
        assert_eq!(strip_mention("hello @Yc_Bot!", "yc_bot"), "hello !");
        assert_eq!(strip_mention("a@yc_bot b", "yc_bot"), "a@yc_bot b");
        assert_eq!(strip_mention("@yc_bot: x @yc_bot", "yc_bot"), "x");
        assert!(!mentions("hi", ""));
        assert!(mentions("é@yc_bot", "yc_bot"));
    }

    #[test]
    fn refusals_are_limited_per_user_and_the_map_is_bounded() {
        let mut l = RefusalLimiter::new();
        let t0 = Instant::now();
        assert!(l.should_refuse(5, t0));
        assert!(!l.should_refuse(5, t0 + Duration::from_secs(60)));
        assert!(l.should_refuse(6, t0));
        assert!(l.should_refuse(5, t0 + Duration::from_secs(3600)));
        for u in 0..10_000 {
            l.should_refuse(1_000 + u, t0 + Duration::from_secs(u as u64));
            assert!(l.len() <= MAX_REFUSAL_ENTRIES);
        }
    }

    #[test]
    fn random_messages_follow_the_allow_list_and_the_mention_rule() {
        let a = allow(&["1", "@x"]);
        let alphabet = [
            "@yc_bot", "@", "/", "help", " ", "é", "😀", ",", ":", "yc_bot", "a",
        ];
        let mut x = crate::testkit::XorShift(0xDEADBEEF);
        for _ in 0..5_000 {
            let mut s = String::new();
            for _ in 0..x.below(12) {
                s.push_str(alphabet[x.index(alphabet.len())]);
            }
            let kind = [ChatKind::Private, ChatKind::Group][x.index(2)];
            let from = x.below(3) as i64;
            let m = msg(kind, from, Some(&s));
            // Properties: only listed users are answered, with a text never longer than
            // what was sent; in a group, only when addressed, and without our mention;
            // without a mention, stripping only trims the ends.
            if let Action::Answer(r) = judge(&m, &a, GroupMode::Mention) {
                assert_eq!(from, 1, "{s:?}");
                assert!(r.text.len() <= s.len(), "{s:?}");
                if kind == ChatKind::Group {
                    assert!(
                        mentions(&s, "yc_bot") || s.trim_start().starts_with('/'),
                        "{s:?}"
                    );
                    // (A bare mention is passed on as is: the model gets something to read.)
                    // Adjacent mentions (`@yc_bot@yc_bot`) leave one: also passed on.
                    let bare = strip_mention(&s, "yc_bot").is_empty() || s.contains("bot@");
                    assert!(
                        bare || !mentions(&r.text, "yc_bot"),
                        "{s:?} -> {:?}",
                        r.text
                    );
                }
            }
            let stripped = strip_mention(&s, "yc_bot");
            assert!(stripped.len() <= s.len(), "{s:?}");
            if !mentions(&s, "yc_bot") {
                assert!(s.trim_end().ends_with(&stripped), "{s:?} -> {stripped:?}");
            }
        }
    }
}
