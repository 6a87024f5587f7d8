//! Streamed answers on the channel side: the [`StreamSink`] a channel hands to
//! `Agent::run_turn_streamed` to see the answer as it is written, and the
//! [`MarkupFilter`] that keeps text-mode tool-call markup (every format `toolcall` reads:
//! `<tool_call>…`, `[TOOL_CALLS]…`, `<|python_tag|>…`, DeepSeek's, tool-call fences, a
//! bare JSON call) and thinking (`<think>…</think>`…) out of what the sink sees.
//!
//! The filter is `toolcall`'s scanner fed delta by delta: text that may start a marker
//! (a `<`, `[` or backtick that could open one; a `{` that opens the answer) is held back
//! until it is resolved; a complete block is shown only if it holds no call. So the text a
//! sink receives over one request, trimmed, is exactly the `extract` text of the final
//! answer: no flicker of markup, nothing shown that the final answer drops. Two exceptions,
//! both on the hidden side: text held past `MAX_MARKUP_HOLD_BYTES` is dropped from the
//! preview (the final answer still has it if it was not a call), and the first answer that
//! starts inside a think block the template opened (a `</think>` with no `<think>`) shows
//! its thinking until the `</think>` arrives; from then on, streams on this thread hold
//! their start back until a `</think>` or the end.
//!
//! # Bounds
//! A filter holds back at most `MAX_MARKUP_HOLD_BYTES` plus one delta (what the provider
//! hands over per read, at most `STREAM_READ_CHUNK_BYTES` of body); everything is released
//! at the end of each request.
//!
//! # Threads
//! Everything here runs on the executor thread.

use super::toolcall::Scanner;

/// Most text a [`MarkupFilter`] holds back (a tool call being written, the answer while
/// it may still be one bare JSON call or start inside thinking). Past it, that text is
/// dropped from the preview; the final answer decides.
pub const MAX_MARKUP_HOLD_BYTES: usize = 64 * 1024;

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

/// Holds back possible tool-call markup and thinking from a stream of text deltas.
pub struct MarkupFilter {
    scan: Scanner,
}

impl Default for MarkupFilter {
    fn default() -> Self {
        MarkupFilter::new()
    }
}

impl std::fmt::Debug for MarkupFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MarkupFilter")
    }
}

impl MarkupFilter {
    pub fn new() -> MarkupFilter {
        let prefix = super::toolcall::starts_in_think();
        MarkupFilter {
            scan: Scanner::new(MAX_MARKUP_HOLD_BYTES, prefix),
        }
    }

    /// Add a delta; returns the text that is now safe to show (may be empty).
    /// `is_tool` names the known tools (fenced JSON and a bare JSON answer are calls only
    /// for those).
    pub fn push(&mut self, delta: &str, is_tool: &dyn Fn(&str) -> bool) -> String {
        let mut out = String::new();
        self.scan.push(delta, is_tool, &mut out);
        out
    }

    /// The request ended: what is still held, resolved as `extract` resolves it (an
    /// unclosed tool-call block is read as a call; thinking stays hidden).
    pub fn finish_with(&mut self, is_tool: &dyn Fn(&str) -> bool) -> String {
        let mut out = String::new();
        self.scan.finish(is_tool, &mut out);
        out
    }

    /// [`MarkupFilter::finish_with`] knowing no tools: a held bare JSON answer or fence
    /// is shown as text. Prefer `finish_with`.
    pub fn finish(&mut self) -> String {
        self.finish_with(&|_| false)
    }
}

#[cfg(test)]
mod tests {
    use super::super::toolcall;
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
        out.push_str(&f.finish_with(&known));
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
        assert_eq!(
            shown.concat() + &f.finish_with(&known),
            "Let me look.\n done"
        );
    }

    #[test]
    fn ordinary_angle_brackets_and_code_pass() {
        assert_eq!(run(&["a <", "b> c < d"]), "a <b> c < d");
        assert_eq!(run(&["x <invokes> y"]), "x <invokes> y");
        assert_eq!(run(&["see [1] and [", "link](u)"]), "see [1] and [link](u)");
        assert_eq!(
            run(&["use `ls` or ``", "`sh\nls\n```"]),
            "use `ls` or ```sh\nls\n```"
        );
        // Text is released as soon as it cannot start a marker.
        let mut f = MarkupFilter::new();
        assert_eq!(f.push("a <b", &known), "a <b");
        assert_eq!(f.push("x <too", &known), "x ");
        assert_eq!(f.push("l> y", &known), "<tool> y");
        assert_eq!(f.push(" [TOOL", &known), " ");
        assert_eq!(f.push("S] {a}", &known), "[TOOLS] {a}");
    }

    #[test]
    fn invalid_or_unknown_blocks_are_text() {
        let bad = "<tool_call>not json</tool_call>";
        assert_eq!(run(&[bad]), bad);
        let example = "```json\n{\"name\":\"Bob\",\"arguments\":{}}\n```";
        assert_eq!(run(&[example]), example);
        let call = "```json\n{\"tool\":\"list_dir\",\"args\":{}}\n```";
        assert_eq!(run(&["a", call, "b"]), "ab");
        // Unclosed, and no call can be read: released at the end, as extract keeps it.
        assert_eq!(run(&["<tool_call>{\"name\":"]), "<tool_call>{\"name\":");
        // A whole JSON answer naming a known tool is a call; otherwise text.
        assert_eq!(
            run(&["{\"name\": \"list_dir\",", " \"parameters\": {}}"]),
            ""
        );
        assert_eq!(run(&["{\"name\": \"Bob\"}"]), "{\"name\": \"Bob\"}");
    }

    #[test]
    fn thinking_is_never_shown() {
        let mut f = MarkupFilter::new();
        let mut shown = String::new();
        for c in [
            "<thi",
            "nk>I'm\nthin",
            "king</th",
            "ink>\n\nHello",
            " there",
        ] {
            let out = f.push(c, &known);
            assert!(!out.contains("think") && !out.contains('<'), "{out:?}");
            shown.push_str(&out);
        }
        shown.push_str(&f.finish_with(&known));
        assert_eq!(shown.trim(), "Hello there");
    }

    #[test]
    fn an_answer_that_starts_inside_thinking_is_learned() {
        // The first time, the thinking shows until its bare `</think>`; the closer never.
        assert_eq!(
            run(&["I'm\nthinking", "</think>", "Hello"]),
            "I'm\nthinkingHello"
        );
        assert!(toolcall::starts_in_think());
        // From then on, the start is held until it is known.
        let mut f = MarkupFilter::new();
        assert_eq!(f.push("I'm\nthinking", &known), "");
        assert_eq!(f.push("</think>Hello", &known), "Hello");
        // An answer without thinking is then shown at its end.
        let mut f = MarkupFilter::new();
        assert_eq!(f.push("Just an answer.", &known), "");
        assert_eq!(f.finish_with(&known), "Just an answer.");
    }

    #[test]
    fn held_text_is_bounded() {
        // A mebibyte of unclosed thinking, then of an unclosed tool call, in 1 KiB deltas.
        for open in [
            "<think>",
            "<tool_call>{\"name\":\"read_file\",\"arguments\":\"",
        ] {
            let mut f = MarkupFilter::new();
            let mut shown = f.push("Hi. ", &known);
            shown.push_str(&f.push(open, &known));
            let piece = "y".repeat(1024);
            for _ in 0..1024 {
                shown.push_str(&f.push(&piece, &known));
                assert!(f.scan.held() <= MAX_MARKUP_HOLD_BYTES + piece.len() + open.len());
            }
            shown.push_str(&f.finish_with(&known));
            assert_eq!(shown, "Hi. ", "{open}");
        }
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
            "<tool_call>list_dir\n<arg_key>path</arg_key>\n<arg_value>.</arg_value>\n</tool_call>",
            "<function=read_file>\n<parameter=path>\na\n</parameter>\n</function>\n</tool_call>",
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>list_dir<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            "<think>hmm <tool_call>{\"name\":\"list_dir\"}</tool_call></think>",
            "[THINK]x[/THINK]",
            "{\"name\": \"list_dir\", \"parameters\": {}}",
            "[see] ",
            "a < b ",
            "`code` ",
            "<toolcall>",
            "</toolcall>",
            "<invoke",
            "é😀\n",
            "``",
            "<",
            ">",
            "[",
        ];
        let tails = [
            "",
            "[TOOL_CALLS]list_dir[ARGS]{}",
            "<|python_tag|>{\"name\": \"x\"}",
            "<tool_call>{\"name\":\"list_dir\"}",
        ];
        let mut x = crate::testkit::XorShift(0xC0FF_EE00_1234_5678);
        for _ in 0..3000 {
            let n = x.index(7);
            let mut text: String = (0..n).map(|_| pieces[x.index(pieces.len())]).collect();
            text.push_str(tails[x.index(tails.len())]);
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
