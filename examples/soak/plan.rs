//! The soak's script: which message does what, the words users type, and the tags that
//! let the fake model and the fake Bot API recognise a turn without shared state.
//!
//! Message `i` carries the tag `[#i]` in its text; the fake model decides from the
//! number what to answer (`kind_of`: a tool call, a long reply, a 500 first), and ends every final
//! answer with `done #i`, which the fake Bot API looks for in `sendMessage` to know the
//! turn is over (a long reply comes in several parts; the marker is in the last).
//!
//! # Bounds
//! Texts are a few hundred bytes, long replies `LONG_REPLY_BYTES`.

/// Bytes of a long reply (Telegram's limit is 4,096 UTF-16 units: this needs 2 parts).
pub const LONG_REPLY_BYTES: usize = 6_000;

/// What a turn exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A plain answer.
    Chat,
    /// A `read_file` call, then the answer.
    Read,
    /// A `list_dir` call, then the answer.
    List,
    /// A `memory_store` call, then the answer.
    Store,
    /// A `memory_search` call, then the answer.
    Search,
    /// A reply longer than Telegram's limit.
    Long,
    /// The model fails with 500 once; the retry succeeds.
    Error,
}

impl Kind {
    #[cfg(test)]
    fn name(self) -> &'static str {
        match self {
            Kind::Chat => "chat",
            Kind::Read => "read",
            Kind::List => "list",
            Kind::Store => "store",
            Kind::Search => "search",
            Kind::Long => "long",
            Kind::Error => "error",
        }
    }
}

/// The kind of message `i`: per 20 messages, 2 read_file, 1 list_dir, 2 memory_store,
/// 2 memory_search (35 % tool turns), 1 long reply, 1 provider error, 11 plain.
pub fn kind_of(i: u64) -> Kind {
    match i % 20 {
        0 | 10 => Kind::Read,
        3 => Kind::List,
        5 | 15 => Kind::Store,
        7 | 17 => Kind::Search,
        12 => Kind::Long,
        19 => Kind::Error,
        _ => Kind::Chat,
    }
}

const OPENINGS: &[&str] = &[
    "Can you remind me what we decided about",
    "Please make a note about",
    "What do you know about",
    "I need a quick summary of",
    "Tell me something useful about",
    "Have I mentioned anything before regarding",
    "Could you check my notes on",
    "Give me three ideas for",
];

const TOPICS: &[&str] = &[
    "the garden watering schedule for the tomatoes",
    "my dentist appointment next Tuesday morning",
    "the birthday present for my sister Anna",
    "our weekend hiking trip to the lake district",
    "the broken heating in the upstairs bathroom",
    "the recipe for the lentil soup we liked",
    "renewing the car insurance before March",
    "the book club reading list for this spring",
    "backing up the photos from the old laptop",
    "the training plan for the half marathon",
    "the noise from the washing machine",
    "calling the bank about the new card",
];

/// The text user message `i` sends (tag included).
pub fn user_text(i: u64) -> String {
    let o = OPENINGS[(i as usize / 3) % OPENINGS.len()];
    let t = TOPICS[(i as usize * 7) % TOPICS.len()];
    format!("{o} {t}? [#{i}]")
}

/// Search words for a `memory_search` call of message `i`.
pub fn search_words(i: u64) -> &'static str {
    TOPICS[(i as usize * 5) % TOPICS.len()]
}

/// The message number of the last tag in `text`.
pub fn parse_tag(text: &str) -> Option<u64> {
    let start = text.rfind("[#")? + 2;
    let rest = text.get(start..)?;
    let end = rest.find(']')?;
    rest.get(..end)?.parse().ok()
}

/// The message number of the `done #N` marker in a reply part.
pub fn parse_done(text: &str) -> Option<u64> {
    let start = text.rfind("done #")? + "done #".len();
    let digits: String = text
        .get(start..)?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The model's final answer to message `i`.
pub fn final_answer(i: u64, kind: Kind) -> String {
    let body = match kind {
        Kind::Long => {
            let mut s = String::with_capacity(LONG_REPLY_BYTES + 200);
            let mut n = 0;
            while s.len() < LONG_REPLY_BYTES {
                n += 1;
                s.push_str(&format!(
                    "**Step {n}.** Check the `schedule` again and write down what changed since last week; \
                     keep the notes short, dated and in one place so they are easy to find later.\n\n"
                ));
                if n % 4 == 0 {
                    s.push_str("- water early\n- check the soil\n- note the weather\n\n");
                }
            }
            s
        }
        Kind::Read => "I read your notes: the plan is to *water the tomatoes* every second day.".into(),
        Kind::List => "Your workspace holds the usual files and a `notes` folder.".into(),
        Kind::Store => "Saved. I will remember that.".into(),
        Kind::Search => "I searched my memory: you mentioned this **twice** before.".into(),
        Kind::Chat | Kind::Error => {
            "Sure: here is a short answer with a little *markdown* and a [link](https://example.com).".into()
        }
    };
    format!("{body}\n\ndone #{i}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip() {
        for i in 0..100 {
            let t = user_text(i);
            assert_eq!(parse_tag(&t), Some(i));
            assert!(!kind_of(i).name().is_empty());
            assert_eq!(parse_done(&final_answer(i, kind_of(i))), Some(i));
        }
    }
}
