//! Scrubbing for streamed answers: a [`StreamSink`] wrapper that passes text on only
//! after the credential scrubber has seen it whole.
//!
//! Why: the final answer is scrubbed in `Agent::finish`, but a streamed answer reaches
//! the user piece by piece, and a secret can arrive split over several deltas. Every
//! secret shape the scrubber knows fits on one line (tokens, `key=value`, `Bearer …`,
//! literals) except PEM private keys, so text is released a whole line at a time,
//! scrubbed; a `BEGIN … PRIVATE KEY` line switches to swallowing lines until its `END`
//! line (one `[REDACTED]` stands for the block).
//!
//! A long line is not held to its end: once [`HOLD_BYTES`] are waiting, the text up to a
//! space at least [`KEEP_BYTES`] before the end is released, but only if scrubbing the
//! two sides apart gives the same result as scrubbing them together (so the cut does not
//! split anything the scrubber would redact, as long as it is shorter than `KEEP_BYTES`).
//! Past [`MAX_HOLD_BYTES`] everything waiting is released, scrubbed.
//!
//! # Bounds
//! At most `MAX_HOLD_BYTES` (plus one delta) are held; at most `MAX_CUT_TRIES` places are
//! tried per release. Held text is released at the end of each model request and when the
//! wrapper is dropped.

use super::streaming::StreamSink;
use crate::security::scrub::{REDACTED, scrub};

/// A line longer than this is released in parts.
pub const HOLD_BYTES: usize = 1024;
/// A part is cut at least this far before the end of what is held.
pub const KEEP_BYTES: usize = 512;
/// Held text beyond this is released whatever it is.
pub const MAX_HOLD_BYTES: usize = 16 * 1024;
/// Cut places tried per release.
const MAX_CUT_TRIES: usize = 8;

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

    /// Release everything held.
    pub fn flush(&mut self) {
        let rest = std::mem::take(&mut self.held);
        if !rest.is_empty() {
            self.release_line(&rest);
        }
    }

    fn release(&mut self) {
        while let Some(nl) = self.held.find('\n') {
            let line: String = self.held.drain(..=nl).collect();
            self.release_line(&line);
        }
        if self.held.len() >= MAX_HOLD_BYTES {
            self.flush();
        } else if self.held.len() >= HOLD_BYTES
            && !self.in_pem
            && !self.held.contains("-----")
            && let Some(cut) = self.safe_cut()
        {
            let part: String = self.held.drain(..cut).collect();
            self.emit(&scrub(&part));
        }
    }

    /// A cut place in `held` that splits nothing the scrubber would redact.
    fn safe_cut(&self) -> Option<usize> {
        let h = &self.held;
        let whole = scrub(h);
        let limit = h.len().saturating_sub(KEEP_BYTES);
        let mut end = limit;
        for _ in 0..MAX_CUT_TRIES {
            let cut = h[..crate::tools::output::floor_boundary(h, end)].rfind([' ', '\t'])?;
            let (a, b) = h.split_at(cut);
            let (sa, sb) = (scrub(a), scrub(b));
            if whole.len() == sa.len() + sb.len()
                && whole.starts_with(&*sa)
                && whole.ends_with(&*sb)
            {
                return (cut > 0).then_some(cut);
            }
            end = cut;
        }
        None
    }

    /// One line (or the last piece of text), PEM blocks swallowed.
    fn release_line(&mut self, line: &str) {
        if self.in_pem {
            if let Some(at) = line.find("-----END")
                && line[at..].contains("PRIVATE KEY")
            {
                self.in_pem = false;
                let after = line[at..].find("-----\n").map(|i| at + i + 5);
                if let Some(after) = after {
                    let rest = &line[after..];
                    self.emit(&scrub(rest));
                } else if line.ends_with('\n') {
                    self.emit("\n");
                }
            }
            return;
        }
        let clean = scrub(line);
        if let Some(at) = line.find("-----BEGIN")
            && line[at..].contains("PRIVATE KEY")
            && !line[at..].contains("-----END")
        {
            // The scrubber redacts an unterminated block to the end: the rest of the
            // block arrives on later lines and is swallowed.
            self.in_pem = true;
            let shown = clean.trim_end_matches('\n');
            self.emit(shown);
            if !shown.ends_with(REDACTED) {
                self.emit(REDACTED);
            }
            return;
        }
        self.emit(&clean);
    }

    fn emit(&mut self, s: &str) {
        if !s.is_empty() {
            self.inner.text(s);
        }
    }
}

impl StreamSink for ScrubSink<'_> {
    fn text(&mut self, delta: &str) {
        self.held.push_str(delta);
        self.release();
    }

    fn round_end(&mut self, more: bool) {
        self.flush();
        self.in_pem = false;
        self.inner.round_end(more);
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
        assert!(parts > 1, "a long line is not held to its end");
        assert!(!out.contains("AbCdEf"));
        assert_eq!(out, scrub(&text));
    }

    #[test]
    fn random_streams_never_leak_the_key_or_panic() {
        let mut x: u64 = 0xDEAD_BEEF_1234_5678;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
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
        for _ in 0..500 {
            let mut text = String::new();
            for _ in 0..(next() % 300) {
                text.push_str(words[(next() % words.len() as u64) as usize]);
            }
            let out = stream(&text, 1 + (next() % 30) as usize);
            assert!(!out.contains("AbCdEf"), "{text:?} -> {out:?}");
        }
    }
}
