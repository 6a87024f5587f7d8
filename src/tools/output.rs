//! Tool output made safe to show: cut to a size cap and scrubbed of credentials, in that
//! order, without letting a secret that the cut splits in two slip past the scrubber.
//!
//! Why: scrubbing costs time linear in the text, so a big tool result is cut to its cap
//! before it is scrubbed (`security::scrub` asks for that). But a cut through the middle
//! of a secret leaves a piece that neither the literal list nor the patterns recognise.
//! So every cut keeps [`SCRUB_MARGIN_BYTES`] more than it needs, scrubs, and then drops
//! that margin: a secret up to the margin long that crossed the first cut is either
//! redacted whole or dropped with the margin, never shown in part.
//!
//! [`scrub_capped`] keeps the head of a text (tool results); [`HeadTail`] collects a
//! stream (command output) keeping its head and its tail with a marker in the middle.
//! A tail that starts inside a PEM private key (its `BEGIN` line was cut away) is
//! redacted up to the key's `END` line.
//!
//! # Bounds
//! [`scrub_capped`] returns at most `max` bytes plus a one-line marker; [`HeadTail`] holds
//! at most `max + 2 × SCRUB_MARGIN_BYTES` bytes (plus amortised slack of the same size) and
//! returns at most `max` bytes plus a marker, whatever it was fed.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use crate::limits::SCRUB_MARGIN_BYTES;
use crate::security::scrub::{REDACTED, scrub};

/// The first `max` bytes of `text`, scrubbed, with a marker when something was cut.
pub fn scrub_capped(text: &str, max: usize) -> String {
    if text.len() <= max {
        return scrub(text).into_owned();
    }
    let window = floor_boundary(text, max.saturating_add(SCRUB_MARGIN_BYTES));
    let scrubbed = scrub(&text[..window]);
    let shown = cut_end(&scrubbed, SCRUB_MARGIN_BYTES);
    let shown = &shown[..floor_boundary(shown, max.saturating_sub(64))];
    format!(
        "{shown}\n[… truncated: the first {} of {} bytes are shown]",
        shown.len(),
        text.len()
    )
}

/// Collects a byte stream, keeping its first and last bytes.
#[derive(Debug)]
pub struct HeadTail {
    max: usize,
    head: Vec<u8>,
    head_cap: usize,
    tail: Vec<u8>,
    tail_cap: usize,
    total: u64,
}

impl HeadTail {
    /// Keep about `max` bytes of output in all (half head, half tail).
    pub fn new(max: usize) -> HeadTail {
        let half = max / 2;
        HeadTail {
            max,
            head: Vec::new(),
            head_cap: half + SCRUB_MARGIN_BYTES,
            tail: Vec::new(),
            tail_cap: half + SCRUB_MARGIN_BYTES,
            total: 0,
        }
    }

    /// Bytes fed so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total = self.total.saturating_add(bytes.len() as u64);
        let room = self.head_cap.saturating_sub(self.head.len());
        let n = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..n]);
        bytes = &bytes[n..];
        if bytes.is_empty() {
            return;
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail
                .extend_from_slice(&bytes[bytes.len() - self.tail_cap..]);
            return;
        }
        self.tail.extend_from_slice(bytes);
        // Compact once the buffer holds twice what is kept: amortised O(1) per byte.
        if self.tail.len() >= 2 * self.tail_cap {
            let drop = self.tail.len() - self.tail_cap;
            self.tail.drain(..drop);
        }
    }

    /// The kept output as text (invalid UTF-8 replaced), scrubbed, with a marker saying
    /// how much of the middle was left out.
    pub fn finish(mut self) -> String {
        if self.tail.len() > self.tail_cap {
            let drop = self.tail.len() - self.tail_cap;
            self.tail.drain(..drop);
        }
        let kept = (self.head.len() + self.tail.len()) as u64;
        let half = self.max / 2;
        if kept == self.total {
            // Nothing was dropped: scrub it all at once, then cut the clean text.
            let mut all = self.head;
            all.extend_from_slice(&self.tail);
            let text = String::from_utf8_lossy(&all);
            let clean = scrub(&text);
            if clean.len() <= self.max {
                return clean.into_owned();
            }
            let head = &clean[..floor_boundary(&clean, half)];
            let tail = &clean[ceil_boundary(&clean, clean.len() - half)..];
            return middle_marker(head, tail, self.total);
        }
        let head_text = String::from_utf8_lossy(&self.head);
        let head_clean = scrub(&head_text);
        let head = cut_end(&head_clean, SCRUB_MARGIN_BYTES);
        let head = &head[..floor_boundary(head, half)];
        let tail_text = String::from_utf8_lossy(&self.tail);
        let (tail_text, starts_clean) = match redact_orphan_pem(&tail_text) {
            Some(t) => (std::borrow::Cow::Owned(t), true),
            None => (tail_text, false),
        };
        let tail_clean = scrub(&tail_text);
        // The margin hides a secret cut at the start, unless the start is a redaction.
        let tail = if starts_clean {
            &tail_clean[..]
        } else {
            cut_start(&tail_clean, SCRUB_MARGIN_BYTES)
        };
        let tail = &tail[ceil_boundary(tail, tail.len().saturating_sub(half))..];
        middle_marker(head, tail, self.total)
    }
}

fn middle_marker(head: &str, tail: &str, total: u64) -> String {
    let shown = (head.len() + tail.len()) as u64;
    format!(
        "{head}\n[… {} bytes of output left out; {total} in all …]\n{tail}",
        total.saturating_sub(shown)
    )
}

/// A text whose start was cut away may begin inside a PEM private key: its body and `END`
/// line are there, its `BEGIN` line is not, so the scrubber's PEM rule cannot see it.
/// Redact from the start to the end of that `END` line. `None` when there is none.
fn redact_orphan_pem(text: &str) -> Option<String> {
    let end_at = text.find("-----END")?;
    if text[..end_at].contains("-----BEGIN") {
        return None;
    }
    let line_end = text[end_at..]
        .find('\n')
        .map(|i| end_at + i)
        .unwrap_or(text.len());
    if !text[end_at..line_end].contains("PRIVATE KEY") {
        return None;
    }
    Some(format!("{REDACTED}{}", &text[line_end..]))
}

/// Drop the last `n` bytes (at a char boundary).
fn cut_end(s: &str, n: usize) -> &str {
    &s[..floor_boundary(s, s.len().saturating_sub(n))]
}

/// Drop the first `n` bytes (at a char boundary).
fn cut_start(s: &str, n: usize) -> &str {
    &s[ceil_boundary(s, n.min(s.len()))..]
}

/// The largest char boundary `<= i` (clamped to the length).
pub fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary `>= i` (clamped to the length).
fn ceil_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd";

    #[test]
    fn short_text_is_scrubbed_whole() {
        let t = format!("key {KEY} here");
        assert_eq!(scrub_capped(&t, 1000), "key [REDACTED] here");
        assert_eq!(scrub_capped("plain", 10), "plain");
    }

    #[test]
    fn a_secret_across_the_cap_never_shows_in_part() {
        for cut in 0..KEY.len() + 4 {
            let prefix = "x".repeat(2000 - cut);
            let t = format!("{prefix} {KEY} {}", "y".repeat(5000));
            let out = scrub_capped(&t, 2000);
            assert!(!out.contains("sk-proj"), "cut {cut}: {out}");
            assert!(!out.contains("AbCdEfGh"), "cut {cut}");
            assert!(out.len() <= 2000 + 80, "{}", out.len());
            assert!(out.contains("truncated"));
        }
    }

    #[test]
    fn head_and_tail_are_kept_with_a_marker() {
        let mut h = HeadTail::new(4096);
        for i in 0..100_000u32 {
            h.push(format!("line {i}\n").as_bytes());
        }
        let total = h.total();
        let out = h.finish();
        assert!(out.starts_with("line 0\nline 1\n"), "{}", &out[..40]);
        assert!(out.ends_with("line 99999\n"));
        assert!(out.contains("bytes of output left out"));
        assert!(out.contains(&format!("{total} in all")));
        assert!(out.len() <= 4096 + 100, "{}", out.len());
    }

    #[test]
    fn small_output_is_returned_whole() {
        let mut h = HeadTail::new(4096);
        h.push(b"hello ");
        h.push(b"world");
        assert_eq!(h.finish(), "hello world");
    }

    #[test]
    fn output_just_above_the_cap_is_cut_after_scrubbing() {
        let mut h = HeadTail::new(1024);
        let text = format!("{}{KEY}{}", "a".repeat(600), "b".repeat(600));
        h.push(text.as_bytes());
        let out = h.finish();
        assert!(!out.contains("AbCdEf"), "{out}");
        assert!(out.contains("left out"));
    }

    #[test]
    fn secrets_at_every_cut_of_head_and_tail_are_redacted() {
        // Slide a key across both cut points of a stream; feed in odd chunk sizes.
        for shift in (0..3000).step_by(37) {
            let mut h = HeadTail::new(2048);
            let text = format!(
                "{} {KEY} {} {KEY} {}",
                "a".repeat(shift),
                "m".repeat(20_000),
                "z".repeat(shift)
            );
            for chunk in text.as_bytes().chunks(333) {
                h.push(chunk);
            }
            let out = h.finish();
            assert!(!out.contains("sk-proj"), "shift {shift}");
            assert!(!out.contains("AbCdEf"), "shift {shift}");
            assert!(!out.contains("0123456789abcd"), "shift {shift}");
        }
    }

    #[test]
    fn a_tail_starting_inside_a_private_key_is_redacted() {
        let body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n".repeat(200);
        let text = format!(
            "{}-----BEGIN PRIVATE KEY-----\n{body}-----END PRIVATE KEY-----\nafter\n",
            "x".repeat(3000)
        );
        let mut h = HeadTail::new(2048);
        h.push(text.as_bytes());
        let out = h.finish();
        assert!(!out.contains("MIIEvQ"), "{out}");
        assert!(out.ends_with("after\n"));
    }

    #[test]
    fn random_bytes_never_panic_and_stay_bounded() {
        let mut x = crate::testkit::XorShift(0x9E37_79B9_7F4A_7C15);
        let mut next = move || x.next();
        for _ in 0..300 {
            let max = 1024 + (next() % 4096) as usize;
            let mut h = HeadTail::new(max);
            let chunks = next() % 40;
            for _ in 0..chunks {
                let len = (next() % 2000) as usize;
                let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                h.push(&bytes);
            }
            let out = h.finish();
            assert!(out.len() <= max + 200, "{} > {max}", out.len());
            let s: String = (0..(next() % 9000))
                .map(|_| char::from_u32((next() % 0x800) as u32).unwrap_or('x'))
                .collect();
            let c = scrub_capped(&s, max);
            assert!(c.len() <= max + 100);
        }
    }
}
