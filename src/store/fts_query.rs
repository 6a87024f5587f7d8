//! Turning any user text into a safe FTS5 MATCH expression.
//!
//! FTS5 gives meaning to `"`, `*`, `:`, `^`, `(`, `)`, `-`, `+` and the bare words `AND`,
//! `OR`, `NOT`, `NEAR`; handing it user text as is raises syntax errors. Here the text is
//! split into terms (runs of letters and digits, the same characters the `unicode61`
//! tokenizer keeps), each term is put in double quotes (inner quotes doubled, though a
//! term never holds one), and the terms are joined with `OR` so that any matching word
//! finds a memory and bm25 ranks memories that match more (and rarer) words first.
//! Terms of `PREFIX_MIN_CHARS` characters or more get a prefix `*` so that `garden`
//! also finds `gardening`. Stop words (`the`, `what`, `is` …) and one-letter words are
//! left out when the text has other words: they match most memories, which costs time
//! (bm25 scores every matching row) and adds no ranking signal. Operators the user typed are just words; emoji and
//! punctuation separate terms; non-Latin scripts are terms like any other (note:
//! `unicode61` does not segment scripts written without spaces, so a Chinese query finds
//! only memories holding the same run of characters).
//!
//! # Bounds
//! Only the first `MAX_QUERY_INPUT_BYTES` of the text are read; at most `MAX_QUERY_TERMS`
//! distinct terms are kept, each cut to `MAX_TERM_BYTES`. No term means no query (`None`).
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

/// Bytes of user text scanned for terms.
pub const MAX_QUERY_INPUT_BYTES: usize = 4096;
/// Distinct terms in one query.
pub const MAX_QUERY_TERMS: usize = 16;
/// Longest term kept (longer words are cut at a character boundary).
pub const MAX_TERM_BYTES: usize = 64;
/// Terms with at least this many characters match as prefixes.
pub const PREFIX_MIN_CHARS: usize = 4;

/// Words that say nothing about what a memory is about (dropped by [`FtsQuery::keywords`]).
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "been", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has",
    "have", "he", "her", "here", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "just", "know", "me", "my", "no", "not", "now", "of", "on", "or", "our", "please", "remember",
    "she", "should", "so", "some", "tell", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "to", "up", "us", "was", "we", "were", "what", "when", "where",
    "which", "who", "why", "will", "with", "would", "you", "your",
];

/// A MATCH expression built only by this module, so it is always valid FTS5 syntax,
/// with the terms it was built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FtsQuery {
    expr: String,
    /// Lower-case terms and whether each matches as a prefix.
    terms: Vec<(String, bool)>,
}

impl FtsQuery {
    /// The words of `text` for an explicit search: stop words and one-letter words are
    /// left out unless there is nothing else. `None` when it holds no word.
    pub fn from_text(text: &str) -> Option<FtsQuery> {
        build(text, false)
    }

    /// The words of `text` that carry meaning: stop words and one-letter words dropped
    /// (for finding memories relevant to a chat message). `None` when none is left.
    pub fn keywords(text: &str) -> Option<FtsQuery> {
        build(text, true)
    }

    /// The MATCH expression.
    pub fn as_str(&self) -> &str {
        &self.expr
    }

    /// The terms (lower case) and whether each matches as a prefix (for snippets).
    pub fn terms(&self) -> &[(String, bool)] {
        &self.terms
    }
}

/// Split `text` into terms: maximal runs of alphanumeric characters (of the first
/// `MAX_QUERY_INPUT_BYTES`, never keeping a word cut in half by that limit).
pub fn terms(text: &str) -> impl Iterator<Item = &str> {
    let mut end = text.len().min(MAX_QUERY_INPUT_BYTES);
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut head = text.get(..end).unwrap_or("");
    if end < text.len()
        && let Some((i, _)) = head
            .char_indices()
            .rev()
            .find(|(_, c)| !c.is_alphanumeric())
    {
        head = head.get(..i).unwrap_or(head);
    }
    head.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
}

fn cut(term: &str, max: usize) -> &str {
    if term.len() <= max {
        return term;
    }
    let mut end = max;
    while end > 0 && !term.is_char_boundary(end) {
        end -= 1;
    }
    term.get(..end).unwrap_or("")
}

fn is_stopword(lower: &str) -> bool {
    STOPWORDS.binary_search(&lower).is_ok()
}

fn build(text: &str, keywords_only: bool) -> Option<FtsQuery> {
    // Meaningful terms, and the weak ones (stop words, single letters) as a fallback.
    let mut strong: Vec<String> = Vec::new();
    let mut weak: Vec<String> = Vec::new();
    for t in terms(text) {
        if strong.len() >= MAX_QUERY_TERMS {
            break;
        }
        let lower = cut(t, MAX_TERM_BYTES).to_lowercase();
        if lower.is_empty() {
            continue;
        }
        let list = if lower.chars().count() < 2 || is_stopword(&lower) {
            &mut weak
        } else {
            &mut strong
        };
        if list.len() < MAX_QUERY_TERMS && !list.contains(&lower) {
            list.push(lower);
        }
    }
    let kept = if !strong.is_empty() {
        strong
    } else if keywords_only || weak.is_empty() {
        return None;
    } else {
        weak
    };
    let terms = kept
        .into_iter()
        .map(|t| {
            let prefix = t.chars().count() >= PREFIX_MIN_CHARS;
            (t, prefix)
        })
        .collect();
    Some(FtsQuery::of_terms(terms))
}

/// `"term"` or `"term"*`, inner quotes doubled.
fn push_term(q: &mut String, term: &str, prefix: bool) {
    q.push('"');
    q.push_str(&term.replace('"', "\"\""));
    q.push('"');
    if prefix {
        q.push('*');
    }
}

impl FtsQuery {
    /// The OR of `terms` (lower case, is-prefix), in order.
    fn of_terms(terms: Vec<(String, bool)>) -> FtsQuery {
        let mut expr = String::with_capacity(terms.iter().map(|(t, _)| t.len() + 8).sum());
        for (i, (t, prefix)) in terms.iter().enumerate() {
            if i > 0 {
                expr.push_str(" OR ");
            }
            push_term(&mut expr, t, *prefix);
        }
        FtsQuery { expr, terms }
    }

    /// A query for term `i` alone, as a prefix or exactly; `None` past the last term.
    pub fn single(&self, i: usize, prefix: bool) -> Option<FtsQuery> {
        let (t, _) = self.terms.get(i)?;
        Some(FtsQuery::of_terms(vec![(t.clone(), prefix)]))
    }

    /// The query narrowed to the terms whose index `keep` accepts; `None` when none is.
    pub fn subset(&self, keep: impl Fn(usize) -> bool) -> Option<FtsQuery> {
        let terms: Vec<(String, bool)> = self
            .terms
            .iter()
            .enumerate()
            .filter(|(i, _)| keep(*i))
            .map(|(_, t)| t.clone())
            .collect();
        if terms.is_empty() {
            None
        } else {
            Some(FtsQuery::of_terms(terms))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Db;

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        let mut sorted = STOPWORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOPWORDS);
    }

    #[test]
    fn operators_and_punctuation_become_quoted_terms() {
        let q =
            FtsQuery::from_text("cats AND dogs OR NOT \"birds\" NEAR(x y) key:val -e*").unwrap();
        assert_eq!(
            q.as_str(),
            r#""cats"* OR "dogs"* OR "birds"* OR "near"* OR "key" OR "val""#
        );
        assert!(FtsQuery::from_text("  ?!* () \"\" 🎉 ").is_none());
        assert!(FtsQuery::from_text("").is_none());
        // Only weak words: an explicit search still looks for them.
        assert_eq!(
            FtsQuery::from_text("what is it").unwrap().as_str(),
            r#""what"* OR "is" OR "it""#
        );
        assert!(FtsQuery::keywords("what is it").is_none());
    }

    #[test]
    fn keywords_drop_stopwords_and_duplicates() {
        let q = FtsQuery::keywords("What is my dog's name? My DOG!").unwrap();
        assert_eq!(q.as_str(), r#""dog" OR "name"*"#);
        assert!(FtsQuery::keywords("what is it?").is_none());
        assert!(FtsQuery::keywords("a b c").is_none());
    }

    #[test]
    fn single_terms_and_subsets_keep_the_syntax() {
        let q = FtsQuery::from_text("garden tea \"quoted\"").unwrap();
        assert_eq!(q.as_str(), r#""garden"* OR "tea" OR "quoted"*"#);
        assert_eq!(q.single(0, false).unwrap().as_str(), r#""garden""#);
        assert_eq!(q.single(0, true).unwrap().as_str(), r#""garden"*"#);
        assert!(q.single(3, true).is_none());
        assert_eq!(
            q.subset(|i| i != 1).unwrap().as_str(),
            r#""garden"* OR "quoted"*"#
        );
        assert_eq!(q.subset(|i| i != 1).unwrap().terms().len(), 2);
        assert!(q.subset(|_| false).is_none());
        assert_eq!(q.terms()[1], ("tea".to_string(), false));
    }

    #[test]
    fn long_input_is_bounded() {
        let text = "word ".repeat(10_000) + &"é".repeat(1000);
        let q = FtsQuery::from_text(&text).unwrap();
        assert_eq!(q.as_str(), r#""word"*"#);
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        let q = FtsQuery::from_text(&many).unwrap();
        assert_eq!(q.as_str().matches(" OR ").count(), MAX_QUERY_TERMS - 1);
        let huge = "é".repeat(200);
        let q = FtsQuery::from_text(&huge).unwrap();
        assert!(q.as_str().len() <= MAX_TERM_BYTES + 4);
    }

    fn next(x: &mut crate::testkit::XorShift) -> u64 {
        x.next()
    }

    #[test]
    fn any_text_is_a_valid_query() {
        let db = Db::open_in_memory().unwrap();
        for (i, t) in [
            "the quick brown fox",
            "Grüße aus Köln",
            "東京に住んでいます",
            "Привет мир",
            "emoji 🎉 party",
            "key: value (with) \"quotes\"",
        ]
        .iter()
        .enumerate()
        {
            db.memory_store(&format!("k{i}"), t, crate::store::memory::Category::Core, 1)
                .unwrap();
        }
        let pieces: &[&str] = &[
            "\"",
            "\"\"",
            "'",
            "*",
            ":",
            "^",
            "(",
            ")",
            "-",
            "+",
            "AND",
            "OR",
            "NOT",
            "NEAR",
            "NEAR(",
            ",",
            " ",
            "  ",
            "\t",
            "\n",
            "\0",
            "{",
            "}",
            "[",
            "]",
            ".",
            "\\",
            "%",
            "_",
            "a",
            "fox",
            "quick",
            "köln",
            "東京",
            "мир",
            "🎉",
            "\u{200b}",
            "\u{301}",
            "e\u{301}",
            "ß",
            "İ",
            "x*",
            "\"fox",
            "fox\"",
            "a-b",
            "key:",
            "col:fox",
            "^fox",
            "+",
            "*\"",
            "\u{feff}",
            "\u{fffd}",
            "\u{1F1E9}\u{1F1EA}",
            "ـ",
            "ّ",
            "क्ष",
            "٣",
            "Ⅻ",
        ];
        // Letters Rust calls alphabetic that the tokenizer may drop (combining marks,
        // letter numbers, tatweel), long enough to get a prefix `*`.
        for s in [
            "\u{651}\u{651}\u{651}\u{651}",
            "\u{93e}\u{93f}\u{940}\u{941}",
            "ⅫⅫⅫⅫ",
            "ــــ",
            "\u{345}\u{345}\u{345}\u{345}",
            "ǅǅǅǅ",
            "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
        ] {
            let q = FtsQuery::from_text(s).unwrap();
            let r = db.memory_search(&q, None, 5);
            assert!(r.is_ok(), "{s:?} gave {:?}: {r:?}", q.as_str());
        }
        let mut x = crate::testkit::XorShift(0x9E37_79B9_7F4A_7C15);
        let mut ran = 0;
        for _ in 0..3000 {
            let n = (next(&mut x) % 12) as usize;
            let mut s = String::new();
            for _ in 0..n {
                let r = next(&mut x);
                if r.is_multiple_of(5) {
                    // A random scalar value, anywhere in Unicode.
                    if let Some(c) = char::from_u32((r >> 8) as u32 % 0x11_0000) {
                        s.push(c);
                    }
                } else {
                    s.push_str(pieces[(r >> 8) as usize % pieces.len()]);
                }
            }
            for q in [FtsQuery::from_text(&s), FtsQuery::keywords(&s)]
                .into_iter()
                .flatten()
            {
                let r = db.memory_search(&q, None, 5);
                assert!(r.is_ok(), "text {s:?} gave query {:?}: {r:?}", q.as_str());
                ran += 1;
            }
        }
        assert!(ran > 2000, "only {ran} queries ran");
    }
}
