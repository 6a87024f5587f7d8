//! Search snippets made in Rust from a memory's text and the query's terms: the window of
//! `max_tokens` words holding the most matches, matched words in `[` `]`, `…` where the
//! text was cut.
//!
//! Why it exists: FTS5's `snippet()` needs the MATCH expression evaluated again for every
//! returned row (a second query per hit, each expanding every prefix term over the whole
//! index); at 100k memories that cost more than the ranking itself. The rules here follow
//! FTS5's: words are runs of letters and digits (as `unicode61` splits them), a word
//! matches a term when they are equal ignoring case, or when it starts with a prefix term.
//! Unlike `unicode61 remove_diacritics 2`, accents are not folded: a match that differs
//! only in accents is found by the search but not bracketed.
//!
//! # Bounds
//! Texts are at most `MAX_MEMORY_TEXT_BYTES` (the store refuses longer); at most
//! `MAX_SNIPPET_SCAN_BYTES` of a text are scanned, so the work per hit is bounded.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

/// Bytes of a text scanned for words.
pub const MAX_SNIPPET_SCAN_BYTES: usize = 8 * 1024;

/// One word of the text: byte range and whether it matches a term.
#[derive(Debug, Clone, Copy)]
struct Word {
    start: usize,
    end: usize,
    hit: bool,
}

/// True when `word` matches `term` (already lower case): equal ignoring case, or, for a
/// prefix term, starting with it ignoring case.
fn matches(word: &str, term: &str, prefix: bool) -> bool {
    let mut w = word.chars().flat_map(char::to_lowercase);
    let mut t = term.chars();
    loop {
        match (t.next(), w.next()) {
            (None, None) => return true,
            (None, Some(_)) => return prefix,
            (Some(_), None) => return false,
            (Some(a), Some(b)) if a != b => return false,
            _ => {}
        }
    }
}

/// True when a word of the scanned head of `text` matches `term` (lower case; `prefix`: a
/// word starting with it matches too), the way the FTS index matched it.
pub fn holds(text: &str, term: &str, prefix: bool) -> bool {
    let terms = [(term.to_string(), prefix)];
    words(text, &terms).0.iter().any(|w| w.hit)
}

/// The words of the scanned head of `text`, and the length of that head.
fn words(text: &str, terms: &[(String, bool)]) -> (Vec<Word>, usize) {
    let mut end = text.len().min(MAX_SNIPPET_SCAN_BYTES);
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    let text = text.get(..end).unwrap_or("");
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let push = |s: usize, e: usize, out: &mut Vec<Word>| {
        let w = text.get(s..e).unwrap_or("");
        let hit = terms.iter().any(|(t, p)| matches(w, t, *p));
        out.push(Word {
            start: s,
            end: e,
            hit,
        });
    };
    for (i, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                push(s, i, &mut out);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        push(s, text.len(), &mut out);
    }
    (out, text.len())
}

/// The first word of the best window of `max` words: the one holding the most matches,
/// with its matches centred in it.
fn window_start(ws: &[Word], max: usize) -> usize {
    if ws.len() <= max {
        return 0;
    }
    let hits: Vec<usize> = (0..ws.len()).filter(|&i| ws[i].hit).collect();
    // Best run of hits that fits in one window (two pointers over the hit positions).
    let (mut best, mut best_n, mut j) = (None, 0usize, 0usize);
    for i in 0..hits.len() {
        if j < i {
            j = i;
        }
        while j + 1 < hits.len() && hits[j + 1] - hits[i] < max {
            j += 1;
        }
        if j + 1 - i > best_n {
            best_n = j + 1 - i;
            best = Some((hits[i], hits[j]));
        }
    }
    let Some((first, last)) = best else {
        return 0;
    };
    let spare = max - (last - first + 1);
    first.saturating_sub(spare / 2).min(ws.len() - max)
}

/// The snippet of `text` for `terms` (lower-case term, is-prefix), at most `max_tokens`
/// words, matched words in `[` `]`, `…` where words were left out.
pub fn snippet(text: &str, terms: &[(String, bool)], max_tokens: usize) -> String {
    let (ws, scanned) = words(text, terms);
    let max = max_tokens.max(1);
    if ws.is_empty() {
        return String::new();
    }
    let start = window_start(&ws, max);
    let end = (start + max).min(ws.len());
    let mut out = String::with_capacity(text.len().min(max * 12) + 16);
    let mut pos = if start == 0 { 0 } else { ws[start].start };
    if start > 0 {
        out.push('…');
    }
    for w in &ws[start..end] {
        out.push_str(text.get(pos..w.start).unwrap_or(""));
        let word = text.get(w.start..w.end).unwrap_or("");
        if w.hit {
            out.push('[');
            out.push_str(word);
            out.push(']');
        } else {
            out.push_str(word);
        }
        pos = w.end;
    }
    if end < ws.len() {
        out.push('…');
    } else {
        // The last word is in: keep what follows it (punctuation) up to the scanned end.
        out.push_str(text.get(pos..scanned).unwrap_or(""));
        if scanned < text.len() {
            out.push('…');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(list: &[(&str, bool)]) -> Vec<(String, bool)> {
        list.iter().map(|(s, p)| (s.to_string(), *p)).collect()
    }

    #[test]
    fn short_texts_are_whole_with_matches_bracketed() {
        assert_eq!(
            snippet(
                "The car is a blue Volvo",
                &t(&[("blue", true), ("volvo", true)]),
                16
            ),
            "The car is a [blue] [Volvo]"
        );
        assert_eq!(
            snippet("Owner's cat is called Miso.", &t(&[("cat", false)]), 16),
            "Owner's [cat] is called Miso."
        );
        // Prefix terms match longer words; exact terms do not.
        assert_eq!(
            snippet("gardening garden gar", &t(&[("garden", true)]), 16),
            "[gardening] [garden] gar"
        );
        assert_eq!(snippet("cats cat", &t(&[("cat", false)]), 16), "cats [cat]");
        assert_eq!(
            snippet("ÄPFEL äpfel", &t(&[("äpfel", false)]), 16),
            "[ÄPFEL] [äpfel]"
        );
    }

    #[test]
    fn long_texts_are_cut_around_the_matches() {
        let text: String = (0..100).map(|i| format!("w{i} ")).collect::<String>() + "needle end";
        let s = snippet(&text, &t(&[("needle", false)]), 8);
        assert!(s.starts_with('…'), "{s}");
        assert!(s.contains("[needle] end"), "{s}");
        assert_eq!(s.matches(' ').count(), 7, "{s}");
        let s = snippet(&text, &t(&[("w3", false)]), 8);
        assert!(s.starts_with("w0 w1 w2 [w3]"), "{s}");
        assert!(s.ends_with('…'), "{s}");
        // No match (found through the key): the start of the text.
        let s = snippet(&text, &t(&[("zzz", false)]), 4);
        assert_eq!(s, "w0 w1 w2 w3…");
        // The window with the most matches wins.
        let text = "a x b c d e f g h x x x i j k l m n o p";
        let s = snippet(text, &t(&[("x", false)]), 5);
        assert!(s.contains("[x] [x] [x]"), "{s}");
    }

    fn next(x: &mut crate::testkit::XorShift) -> u64 {
        x.next()
    }

    #[test]
    fn any_text_gives_a_bounded_snippet_without_panicking() {
        let pieces = [
            "é", "a", " ", "word", "[", "…", "\u{301}", "東京", "🎉", "\n", "WORD", "ß",
        ];
        let mut x = crate::testkit::XorShift(0x1234_5678_9ABC_DEF1);
        for _ in 0..3000 {
            let n = (next(&mut x) % 200) as usize;
            let mut s = String::new();
            for _ in 0..n {
                let r = next(&mut x);
                if r.is_multiple_of(7) {
                    if let Some(c) = char::from_u32((r >> 8) as u32 % 0x11_0000) {
                        s.push(c);
                    }
                } else {
                    s.push_str(pieces[(r >> 8) as usize % pieces.len()]);
                }
            }
            let max = (next(&mut x) % 20) as usize;
            let out = snippet(&s, &t(&[("word", true), ("a", false), ("é", false)]), max);
            assert!(out.len() <= s.len() + 2 * s.len() + 8, "{s:?} -> {out:?}");
        }
        let huge = "word ".repeat(10_000);
        let out = snippet(&huge, &t(&[("word", false)]), 16);
        assert_eq!(out.matches("[word]").count(), 16);
    }
}
