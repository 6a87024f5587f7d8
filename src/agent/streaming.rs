//! Streamed answers on the channel side: the [`StreamSink`] a channel hands to
//! `Agent::run_turn_streamed` to see the answer as it is written, and the
//! [`MarkupFilter`] that keeps text-mode tool-call markup (`<tool_call>…</tool_call>`,
//! `<invoke …>`, tool-call ```` ```json ```` fences) out of what the sink sees.
//!
//! The filter mirrors `toolcall::extract`: text that may start a tool-call block (a
//! `<` or a backtick that could open one) is held back until it is resolved; a complete
//! block is shown only if `extract` would keep it as text (not a valid call). So the
//! text a sink receives over one request, trimmed, is exactly the `extract` text of the
//! final answer: no flicker of markup, nothing shown that the final answer drops.
//!
//! # Bounds
//! Held-back text is part of the answer being read, which the provider caps at
//! `MAX_PROVIDER_RESPONSE_BYTES`; it is released at the end of each request.
//!
//! # Threads
//! Everything here runs on the executor thread.

use super::toolcall::{self, TAGS};

/// Receives an answer while it is written. Implemented by channels (the terminal's
/// `TerminalSink`; a Telegram draft or edited message later) and by any
/// `FnMut(&str)` closure (text only).
///
/// Called on the executor thread between awaits, so it must not block: a sink that
/// sends over the network records the text (e.g. in an `Rc<RefCell<String>>`) and lets
/// a task of its own send it, debounced. What the sink saw of the last request, trimmed,
/// is the final answer `run_turn_streamed` returns, except when that is empty (the
/// "no answer" placeholder is returned, never streamed): send the returned answer as
/// the final message to be exact.
pub trait StreamSink {
    /// The next piece of visible text, in order; never empty, never tool-call markup.
    fn text(&mut self, delta: &str);
    /// One model request of the turn ended. `more` is true when tools run now and
    /// another request follows (the text so far was the model thinking aloud).
    fn round_end(&mut self, more: bool) {
        let _ = more;
    }
    /// The request's attempt failed after some of its text reached the sink, and will be
    /// tried again: forget that text. `true` when the channel can take it back (it shows
    /// the text where the next attempt's text replaces it, or has not shown it yet);
    /// `false` (the default) ends the turn with the error instead.
    fn retract(&mut self) -> bool {
        false
    }
}

impl<F: FnMut(&str)> StreamSink for F {
    fn text(&mut self, delta: &str) {
        self(delta)
    }
}

/// A sink that ignores everything (turns that nobody watches).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSink;

impl StreamSink for NoSink {
    fn text(&mut self, _delta: &str) {}
}

/// Holds back possible tool-call markup from a stream of text deltas.
#[derive(Debug, Default)]
pub struct MarkupFilter {
    pending: String,
    /// How far `pending` was already searched for the end of an open block, so a long
    /// block arriving in many deltas is scanned once, not once per delta.
    searched: usize,
}

/// What the held text starting at a `<` or a backtick turns out to be.
enum Held {
    /// Could still become an opener: wait for more text.
    Undecided,
    /// Not an opener: its first character is ordinary text.
    Text,
    /// A complete opener of this kind.
    Tag(&'static str),
    Fence,
}

const FENCE: &str = "```json";

impl MarkupFilter {
    pub fn new() -> MarkupFilter {
        MarkupFilter::default()
    }

    /// Add a delta; returns the text that is now safe to show (may be empty).
    /// `is_tool` names the known tools (fenced JSON is a call only for those).
    pub fn push(&mut self, delta: &str, is_tool: &dyn Fn(&str) -> bool) -> String {
        self.pending.push_str(delta);
        let mut out = String::new();
        loop {
            let Some(start) = self.pending.find(['<', '`']) else {
                out.push_str(&self.pending);
                self.pending.clear();
                break;
            };
            if start > 0 {
                out.push_str(&self.pending[..start]);
                self.pending.drain(..start);
                self.searched = 0;
            }
            let end = match classify(&self.pending) {
                Held::Undecided => break,
                Held::Text => {
                    // `<` and a backtick are one byte each.
                    out.push_str(&self.pending[..1]);
                    self.pending.drain(..1);
                    self.searched = 0;
                    continue;
                }
                Held::Tag(tag) => tag_end(&self.pending, tag, self.searched),
                Held::Fence => fence_end(&self.pending, self.searched),
            };
            match end {
                Some(end) => self.resolve(end, is_tool, &mut out),
                None => {
                    self.searched = self.pending.len();
                    break;
                }
            }
        }
        out
    }

    /// The request ended: whatever is still held is text (an unclosed block is kept as
    /// text by `extract` too).
    pub fn finish(&mut self) -> String {
        self.searched = 0;
        std::mem::take(&mut self.pending)
    }

    /// A complete block `pending[..end]`: shown only if it is not a valid call.
    fn resolve(&mut self, end: usize, is_tool: &dyn Fn(&str) -> bool, out: &mut String) {
        let block: String = self.pending.drain(..end).collect();
        self.searched = 0;
        let found = toolcall::extract(&block, is_tool);
        if found.calls.is_empty() {
            out.push_str(&block);
        }
    }
}

fn classify(s: &str) -> Held {
    if s.starts_with('`') {
        return if s.starts_with(FENCE) {
            Held::Fence
        } else if FENCE.starts_with(s) {
            Held::Undecided
        } else {
            Held::Text
        };
    }
    let mut undecided = false;
    for tag in TAGS {
        let rest = &s[1..];
        if rest.len() <= tag.len() {
            if tag.starts_with(rest) {
                undecided = true;
            }
        } else if rest.starts_with(tag)
            && matches!(
                rest[tag.len()..].chars().next(),
                Some('>' | ' ' | '\n' | '\t')
            )
        {
            return Held::Tag(tag);
        }
    }
    if undecided {
        Held::Undecided
    } else {
        Held::Text
    }
}

/// End of a `<tag …>…</tag>` block starting at 0, as `extract` finds it. The close is
/// searched from a little before `searched` (it may straddle the old end).
fn tag_end(s: &str, tag: &str, searched: usize) -> Option<usize> {
    let open_end = s.find('>')?;
    let close = format!("</{tag}>");
    let from = resume_at(s, open_end + 1, searched, close.len());
    let at = s[from..].find(&close)?;
    Some(from + at + close.len())
}

/// End of a ```` ```json\n…``` ```` block starting at 0, as `extract` finds it.
fn fence_end(s: &str, searched: usize) -> Option<usize> {
    let body = s.find('\n')? + 1;
    let from = resume_at(s, body, searched, 3);
    let at = s[from..].find("```")?;
    Some(from + at + 3)
}

/// Where to resume a search for a `needle_len`-byte needle: not before `min`, and at
/// most `needle_len - 1` bytes back from what was searched, on a char boundary.
fn resume_at(s: &str, min: usize, searched: usize, needle_len: usize) -> usize {
    let mut from = searched
        .saturating_sub(needle_len.saturating_sub(1))
        .max(min)
        .min(s.len());
    while !s.is_char_boundary(from) {
        from -= 1;
    }
    from.max(min)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(n: &str) -> bool {
        n == "read_file" || n == "list_dir"
    }

    fn run(chunks: &[&str]) -> String {
        let mut f = MarkupFilter::new();
        let mut out = String::new();
        for c in chunks {
            out.push_str(&f.push(c, &known));
        }
        out.push_str(&f.finish());
        out
    }

    #[test]
    fn closures_are_sinks() {
        let mut seen = String::new();
        {
            let mut sink = |t: &str| seen.push_str(t);
            let s: &mut dyn StreamSink = &mut sink;
            s.text("a");
            s.round_end(true);
            s.text("b");
        }
        assert_eq!(seen, "ab");
    }

    #[test]
    fn tool_call_markup_is_never_shown() {
        let chunks = [
            "Let me look.\n<",
            "tool",
            "_call>{\"name\":\"read_file\",",
            "\"arguments\":{\"path\":\"a\"}}</tool_",
            "call> done",
        ];
        let mut f = MarkupFilter::new();
        let mut shown = Vec::new();
        for c in chunks {
            shown.push(f.push(c, &known));
        }
        assert_eq!(shown[0], "Let me look.\n");
        assert!(shown.iter().all(|s| !s.contains('<')), "{shown:?}");
        assert_eq!(shown.concat() + &f.finish(), "Let me look.\n done");
    }

    #[test]
    fn ordinary_angle_brackets_and_code_pass() {
        assert_eq!(run(&["a <", "b> c < d"]), "a <b> c < d");
        assert_eq!(run(&["x <invokes> y"]), "x <invokes> y");
        assert_eq!(
            run(&["use `ls` or ``", "`sh\nls\n```"]),
            "use `ls` or ```sh\nls\n```"
        );
        // Text is released as soon as it cannot start a block.
        let mut f = MarkupFilter::new();
        assert_eq!(f.push("a <b", &known), "a <b");
        assert_eq!(f.push("x <too", &known), "x ");
        assert_eq!(f.push("l> y", &known), "<tool> y");
    }

    #[test]
    fn invalid_or_unknown_blocks_are_text() {
        let bad = "<tool_call>not json</tool_call>";
        assert_eq!(run(&[bad]), bad);
        let example = "```json\n{\"name\":\"Bob\",\"arguments\":{}}\n```";
        assert_eq!(run(&[example]), example);
        let call = "```json\n{\"tool\":\"list_dir\",\"args\":{}}\n```";
        assert_eq!(run(&["a", call, "b"]), "ab");
        // Unclosed: released at the end, as extract keeps it.
        assert_eq!(run(&["<tool_call>{\"name\":"]), "<tool_call>{\"name\":");
    }

    #[test]
    fn the_shown_text_is_always_the_extracted_text() {
        let pieces = [
            "Hello ",
            "<tool_call>{\"name\":\"read_file\",\"arguments\":{\"path\":\"a\"}}</tool_call>",
            "<tool_call>oops</tool_call>",
            "<invoke name=\"list_dir\"><parameter name=\"path\">.</parameter></invoke>",
            "```json\n{\"tool\":\"read_file\",\"args\":{}}\n```",
            "```json\n{\"x\":1}\n```",
            "a < b ",
            "`code` ",
            "<toolcall>",
            "</toolcall>",
            "<invoke",
            "é😀\n",
            "``",
            "<",
            ">",
        ];
        let mut x = crate::testkit::XorShift(0xC0FF_EE00_1234_5678);
        for _ in 0..3000 {
            let n = x.index(7);
            let text: String = (0..n).map(|_| pieces[x.index(pieces.len())]).collect();
            // Split at random character boundaries.
            let mut chunks = Vec::new();
            let mut rest = text.as_str();
            while !rest.is_empty() {
                let mut cut = 1 + x.index(12);
                while cut < rest.len() && !rest.is_char_boundary(cut) {
                    cut += 1;
                }
                let cut = cut.min(rest.len());
                chunks.push(&rest[..cut]);
                rest = &rest[cut..];
            }
            let shown = run(&chunks);
            let want = toolcall::extract(&text, &known).text;
            assert_eq!(shown.trim(), want, "text {text:?} chunks {chunks:?}");
        }
    }
}
