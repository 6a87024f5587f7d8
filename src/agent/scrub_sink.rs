//! Scrubbing for streamed answers: a [`StreamSink`] wrapper that passes text on only
//! once the credential scrubber can judge it.
//!
//! Why: the final answer is scrubbed in `Agent::finish`, but a streamed answer reaches
//! the user piece by piece, and a secret can arrive split over several deltas. So text is
//! held back while it could still turn into something the scrubber redacts
//! ([`may_continue_secret`]): a word that could be the start of a token, a key name, a
//! scheme (`Bearer`) or an installed secret; a key or scheme waiting for its value; a line
//! that could be a PEM `BEGIN` line. Everything else goes out at once, scrubbed, so plain
//! words still stream word by word (usually as they arrive).
//!
//! When the end of the held text is such a case, the text before it is released if it can
//! be cut at a space without splitting anything the scrubber would redact (scrubbing the
//! two parts apart gives the same text as scrubbing them together). A complete
//! `BEGIN … PRIVATE KEY` line switches to swallowing lines until the matching `END` line:
//! one `[REDACTED]` stands for the block.
//!
//! # Bounds
//! At most `MAX_HOLD_BYTES` (plus one delta) are held, then released scrubbed (or
//! swallowed inside a key block); at most `MAX_CUT_TRIES` cut places are tried per delta.
//! Held text is released at the end of each model request and when the wrapper is dropped.
//!
//! # Threads
//! Executor thread (a streaming sink is fed by the turn that owns it); no I/O.

use super::streaming::StreamSink;
use crate::security::scrub::{REDACTED, TOKEN_PREFIXES, ends_inside_literal, scrub};

/// Held text beyond this is released whatever it is.
pub const MAX_HOLD_BYTES: usize = 16 * 1024;
/// Cut places tried per delta.
const MAX_CUT_TRIES: usize = 16;

/// Key names an assignment's value is redacted after (lowercase; the scrubber's list,
/// spelled out).
const SECRET_KEYS: &[&str] = &[
    "api_key",
    "api-key",
    "apikey",
    "access_key",
    "access-key",
    "accesskey",
    "secret_key",
    "secret-key",
    "secretkey",
    "private_key",
    "private-key",
    "privatekey",
    "token",
    "password",
    "passwd",
    "passphrase",
    "pass_phrase",
    "pass-phrase",
    "secret",
];

/// Authorization schemes whose next word is a credential (lowercase).
const SCHEMES: &[&str] = &["bearer", "basic"];

/// Could text that follows `text` turn its end into something the scrubber redacts?
pub fn may_continue_secret(text: &str) -> bool {
    if text.is_empty() {
        return false;
    }
    if ends_inside_literal(text) {
        return true;
    }
    let line = &text[text.rfind('\n').map_or(0, |i| i + 1)..];
    if line.contains("-----") {
        // A PEM BEGIN line in the making: wait for the whole line.
        return true;
    }
    let trimmed = text.trim_end();
    let (before, word) = split_last_word(trimmed);
    if trimmed.len() < text.len() {
        return waiting_for_value(word);
    }
    // A word being written: it may itself be the start of a secret, or the value the
    // word before it is waiting for.
    partial_word_hazard(word) || waiting_for_value(split_last_word(before.trim_end()).1)
}

/// `text` without its last word, and that word (after the last whitespace).
fn split_last_word(text: &str) -> (&str, &str) {
    let at = text.rfind(char::is_whitespace).map_or(0, |i| {
        i + text[i..].chars().next().map_or(1, char::len_utf8)
    });
    text.split_at(at)
}

/// The last complete word is a scheme, a secret key or a separator: its value may follow.
fn waiting_for_value(word: &str) -> bool {
    let w = word.trim_matches(['"', '\'', '`']).to_ascii_lowercase();
    if w.ends_with(':') || w.ends_with('=') {
        return true;
    }
    let key = w.trim_end_matches([':', '=', '"', '\'']);
    SCHEMES.contains(&key) || SECRET_KEYS.iter().any(|k| key.ends_with(k))
}

/// The word still being written could become (part of) a secret.
fn partial_word_hazard(word: &str) -> bool {
    if word.contains([':', '=']) || word.ends_with('-') || word.bytes().any(|b| b.is_ascii_digit())
    {
        return true;
    }
    // Where a token or key name could start: the word's start and after any separator.
    let starts = std::iter::once(0).chain(
        word.char_indices()
            .filter(|(_, c)| !c.is_alphanumeric())
            .map(|(i, c)| i + c.len_utf8()),
    );
    for s in starts {
        let t = &word[s..];
        if t.is_empty() {
            continue;
        }
        let lower = t.to_ascii_lowercase();
        let near = |known: &str, cand: &str| known.starts_with(cand) || cand.starts_with(known);
        if SECRET_KEYS.iter().chain(SCHEMES).any(|k| near(k, &lower))
            || TOKEN_PREFIXES.iter().any(|p| near(p, t))
        {
            return true;
        }
    }
    false
}

/// Wraps a sink; see the module documentation.
pub struct ScrubSink<'a> {
    inner: &'a mut dyn StreamSink,
    held: String,
    in_pem: bool,
}

impl<'a> ScrubSink<'a> {
    pub fn new(inner: &'a mut dyn StreamSink) -> ScrubSink<'a> {
        ScrubSink {
            inner,
            held: String::new(),
            in_pem: false,
        }
    }

    /// Release everything held (swallowed inside a key block).
    pub fn flush(&mut self) {
        let rest = std::mem::take(&mut self.held);
        if !self.in_pem && !rest.is_empty() {
            self.emit(&scrub(&rest));
        }
        self.in_pem = false;
    }

    fn release(&mut self) {
        loop {
            if self.in_pem {
                if !self.skip_key_line() {
                    return;
                }
                continue;
            }
            let Some((start, after)) = pem_begin_line(&self.held) else {
                break;
            };
            let before: String = self.held.drain(..start).collect();
            self.emit(&scrub(&before));
            self.held.drain(..after - start);
            self.emit(REDACTED);
            self.in_pem = true;
        }
        if self.held.len() >= MAX_HOLD_BYTES {
            self.flush();
        } else if let Some(cut) = self.safe_cut() {
            let part: String = self.held.drain(..cut).collect();
            self.emit(&scrub(&part));
        }
    }

    /// Inside a key block: drop one held line; `true` when the block ended or another
    /// line was dropped (look again), `false` to wait for more text.
    fn skip_key_line(&mut self) -> bool {
        let Some(nl) = self.held.find('\n') else {
            if self.held.len() >= MAX_HOLD_BYTES {
                self.held.clear();
            }
            return false;
        };
        let line: String = self.held.drain(..=nl).collect();
        if let Some(at) = line.find("-----END")
            && line[at..].contains("PRIVATE KEY")
        {
            self.in_pem = false;
            self.emit("\n");
        }
        true
    }

    /// How much of `held` can go out now.
    fn safe_cut(&self) -> Option<usize> {
        let h = &self.held;
        if h.is_empty() {
            return None;
        }
        if !may_continue_secret(h) {
            return Some(h.len());
        }
        // No cut inside a line that could become a PEM BEGIN line.
        let line_start = h.rfind('\n').map_or(0, |i| i + 1);
        let mut end = if h[line_start..].contains("-----") {
            line_start
        } else {
            h.len()
        };
        let mut whole = None;
        for _ in 0..MAX_CUT_TRIES {
            let ws = h[..end].rfind(char::is_whitespace)?;
            let cut = ws + h[ws..].chars().next().map_or(1, char::len_utf8);
            let (a, b) = h.split_at(cut);
            if !may_continue_secret(a) {
                let whole = whole.get_or_insert_with(|| scrub(h));
                let (sa, sb) = (scrub(a), scrub(b));
                if whole.len() == sa.len() + sb.len()
                    && whole.starts_with(&*sa)
                    && whole.ends_with(&*sb)
                {
                    return Some(cut);
                }
            }
            end = ws;
        }
        None
    }

    fn emit(&mut self, s: &str) {
        if !s.is_empty() {
            self.inner.text(s);
        }
    }
}

/// A complete `-----BEGIN … PRIVATE KEY-----` line in `text` (without its `END` on the
/// same line): where it starts and where the next line starts.
fn pem_begin_line(text: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(off) = text[from..].find("-----BEGIN") {
        let start = from + off;
        let nl = start + text[start..].find('\n')?;
        let line = &text[start..nl];
        if line.contains("PRIVATE KEY") && !line.contains("-----END") {
            return Some((start, nl + 1));
        }
        from = nl;
    }
    None
}

impl StreamSink for ScrubSink<'_> {
    fn text(&mut self, delta: &str) {
        self.held.push_str(delta);
        self.release();
    }

    fn round_end(&mut self, more: bool) {
        self.flush();
        self.inner.round_end(more);
    }

    fn retract(&mut self) -> bool {
        self.held.clear();
        self.in_pem = false;
        self.inner.retract()
    }
}

impl Drop for ScrubSink<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd";

    /// Stream `text` in pieces of `size` bytes (at char boundaries) through the wrapper.
    fn stream(text: &str, size: usize) -> String {
        let mut out = String::new();
        {
            let mut collect = |d: &str| out.push_str(d);
            let mut s = ScrubSink::new(&mut collect);
            let mut i = 0;
            while i < text.len() {
                let mut j = (i + size).min(text.len());
                while !text.is_char_boundary(j) {
                    j += 1;
                }
                s.text(&text[i..j]);
                i = j;
            }
            s.round_end(false);
        }
        out
    }

    #[test]
    fn split_secrets_never_pass() {
        let text = format!(
            "Here is the key: {KEY} and\nAuthorization: Bearer abcdefghijklmnop123\npassword = hunter2XY9\nbye"
        );
        for size in 1..40 {
            let out = stream(&text, size);
            assert!(!out.contains("AbCdEf"), "size {size}: {out}");
            assert!(!out.contains("abcdefghijklmnop"), "size {size}: {out}");
            assert!(!out.contains("hunter2"), "size {size}: {out}");
            assert!(out.ends_with("bye"), "{out}");
            assert_eq!(out, scrub(&text), "size {size}");
        }
    }

    #[test]
    fn private_keys_are_swallowed_whole() {
        let text = "before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\nafter\n";
        for size in [1, 3, 7, 50, 1000] {
            let out = stream(text, size);
            assert!(
                !out.contains("b3BlbnNz") && !out.contains("AAAAMw"),
                "{out}"
            );
            assert!(
                out.starts_with("before\n") && out.ends_with("after\n"),
                "{out}"
            );
            assert!(out.contains(REDACTED), "{out}");
        }
    }

    #[test]
    fn long_lines_stream_in_parts_and_stay_clean() {
        let mut text = String::new();
        for i in 0..400 {
            text.push_str(&format!("word{i} "));
            if i == 200 {
                text.push_str(&format!("{KEY} "));
            }
        }
        let mut parts = 0;
        let mut out = String::new();
        {
            let mut collect = |d: &str| {
                parts += 1;
                out.push_str(d);
            };
            let mut s = ScrubSink::new(&mut collect);
            for w in text.split_inclusive(' ') {
                s.text(w);
            }
            s.round_end(false);
        }
        assert!(parts > 100, "words stream as they come: {parts} parts");
        assert!(!out.contains("AbCdEf"));
        assert_eq!(out, scrub(&text));
    }

    #[test]
    fn plain_words_go_out_at_once_and_risky_ones_wait() {
        let mut out: Vec<String> = Vec::new();
        {
            let mut collect = |d: &str| out.push(d.to_string());
            let mut s = ScrubSink::new(&mut collect);
            s.text("Hello");
            s.text(" there,");
            s.text(" your");
            s.text(" token");
            s.text(" is");
            s.text(" ghp_AbCdEfGhIjKlMn");
            s.text("OpQrStUvWxYz0123456789");
            s.text(" ok");
            s.round_end(false);
        }
        assert_eq!(out[0], "Hello");
        assert_eq!(out[1], " there,");
        assert_eq!(out[2], " your");
        assert_eq!(out.concat(), "Hello there, your token is [REDACTED] ok");
        assert!(out.iter().all(|p| !p.contains("ghp_")), "{out:?}");
    }

    #[test]
    fn hazards_are_recognised() {
        for risky in [
            "a Bearer ",
            "password = ",
            "password",
            "pass",
            "the api",
            "x sk",
            "x sk-pr",
            "AKIA",
            "bot 123456",
            "x token:",
            "\"api_key\": ",
            "-----BEGIN RSA",
            "db.pass",
        ] {
            assert!(may_continue_secret(risky), "{risky:?}");
        }
        for safe in [
            "Hello",
            "Hello there",
            "café ",
            "well done. ",
            "the end\n",
            "friend.",
        ] {
            assert!(!may_continue_secret(safe), "{safe:?}");
        }
    }

    #[test]
    fn random_streams_never_leak_the_key_or_panic() {
        let mut x = crate::testkit::XorShift(0xDEAD_BEEF_1234_5678);
        let mut next = move || x.next();
        let key = format!(" {KEY}");
        let words = [
            "a",
            "é",
            "\n",
            " ",
            "token",
            "=",
            &key,
            "-----BEGIN",
            "-----",
        ];
        for _ in 0..300 {
            let mut text = String::new();
            for _ in 0..(next() % 200) {
                text.push_str(words[(next() % words.len() as u64) as usize]);
            }
            let out = stream(&text, 1 + (next() % 30) as usize);
            assert!(!out.contains("AbCdEf"), "{text:?} -> {out:?}");
        }
    }
}
