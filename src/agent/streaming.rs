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
//! answer: no flicker of markup, nothing shown that the final answer drops.
//!
//! Thinking its template opened in the prompt (the answer starts mid-thought and holds
//! only a `</think>`): unless the model's answers are known to start outside thinking
//! (`think::ThinkStart`), the start of each answer is held until a `</think>` (what comes
//! before it is dropped, what follows is shown) or the end of the answer (then all of it
//! is the answer, shown at once). So no thinking is shown, the first time too; a model that
//! does not think shows its first answer whole at its end, and streams from then on.
//!
//! One exception, on the hidden side: text held past `MAX_MARKUP_HOLD_BYTES` is dropped
//! from the preview (a start held that long is treated as thought up to its `</think>`);
//! the final answer still has it if it was not a call or thought.
//!
//! # Bounds
//! A filter holds back at most `MAX_MARKUP_HOLD_BYTES` plus one delta (what the provider
//! hands over per read, at most `STREAM_READ_CHUNK_BYTES` of body); everything is released
//! at the end of each request.
//!
//! # Threads
//! Everything here runs on the executor thread.

use super::think::ThinkStart;
use super::toolcall::Scanner;

/// Most text a [`MarkupFilter`] holds back (a tool call being written, the answer while
/// it may still be one bare JSON call or start inside thinking). Past it, that text is
/// dropped from the preview (a held start: up to its `</think>`); the final answer
/// decides.
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
    /// For a model not known yet: the start is held.
    fn default() -> Self {
        MarkupFilter::new(ThinkStart::Unknown)
    }
}

impl std::fmt::Debug for MarkupFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MarkupFilter")
    }
}

impl MarkupFilter {
    /// A filter for one answer of a model whose answers start as `start` says: unless
    /// they are known to start outside thinking, the answer's start is held until a
    /// `</think>` or the end.
    pub fn new(start: ThinkStart) -> MarkupFilter {
        MarkupFilter {
            scan: Scanner::new(MAX_MARKUP_HOLD_BYTES, start.holds()),
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

    /// The request ended inside the think block the template opened (`think::cut_in_thought`):
    /// a start still held is thought and dropped; the rest as [`MarkupFilter::finish_with`].
    pub fn finish_in_thought(&mut self, is_tool: &dyn Fn(&str) -> bool) -> String {
        let mut out = String::new();
        self.scan.finish_in_thought(is_tool, &mut out);
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

    /// A filter for a model known to answer outside thinking (nothing held for it).
    fn plain() -> MarkupFilter {
        MarkupFilter::new(ThinkStart::Outside)
    }

    fn run(chunks: &[&str]) -> String {
        run_as(ThinkStart::Outside, chunks)
    }

    fn run_as(start: ThinkStart, chunks: &[&str]) -> String {
        let mut f = MarkupFilter::new(start);
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
        let mut f = plain();
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
        let mut f = plain();
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
        let mut f = plain();
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

    /// Streams as servers send them when the template opened `<think>` in the prompt (or
    /// not), each with the text the user must see; the thinking always says "SECRET".
    const STREAMS: &[(&str, &str)] = &[
        // Qwen3 "Thinking" (template ends with `<think>\n`) on llama.cpp, no parser.
        (
            "Okay, the user asks for the SECRET capital.\nShort answer.\n</think>\n\nThe capital of France is **Paris**.",
            "The capital of France is **Paris**.",
        ),
        // DeepSeek-R1 distill: closer, blank lines, an answer with a later think block.
        (
            "SECRET: 2+2</think>\n\nIt is 4. <think>SECRET again</think>Done.",
            "It is 4. Done.",
        ),
        // Thinking, then a call in text (Qwen3.5 `<function=…>` format).
        (
            "I should look, SECRET.\n</think>\n\nLet me look.\n<tool_call>\n<function=list_dir>\n<parameter=path>\n.\n</parameter>\n</function>\n</tool_call>",
            "Let me look.",
        ),
        // Opened in the answer itself.
        ("<think>\nSECRET plan\n</think>\n\nHello é😀", "Hello é😀"),
        // No thinking at all: held, then all of it is the answer.
        (
            "Just an answer, with <b> and [1].",
            "Just an answer, with <b> and [1].",
        ),
        // Only thinking, closed: nothing.
        ("SECRET only</think>\n", ""),
    ];

    /// Feed `pieces`; at every moment nothing thought is shown and what is shown is the
    /// start of the final text; returns everything shown.
    fn stream_checked(start: ThinkStart, pieces: &[&str], want: &str) -> String {
        let mut f = MarkupFilter::new(start);
        let mut shown = String::new();
        for p in pieces {
            shown.push_str(&f.push(p, &known));
            assert!(!shown.contains("SECRET"), "{pieces:?} showed {shown:?}");
            assert!(
                want.starts_with(shown.trim_start()) || want.starts_with(shown.trim()),
                "{pieces:?} showed {shown:?}"
            );
        }
        shown.push_str(&f.finish_with(&known));
        shown
    }

    #[test]
    fn thinking_opened_in_the_prompt_is_never_shown_at_any_split() {
        for start in [ThinkStart::Unknown, ThinkStart::Inside] {
            for (text, want) in STREAMS {
                assert_eq!(toolcall::extract(text, &known).text, *want, "{text:?}");
                let cuts: Vec<usize> = (1..text.len())
                    .filter(|&i| text.is_char_boundary(i))
                    .collect();
                // Whole, every single cut, every pair of cuts, and one character at a time.
                let mut splits: Vec<Vec<&str>> = vec![vec![text]];
                for &i in &cuts {
                    splits.push(vec![&text[..i], &text[i..]]);
                    for &j in cuts.iter().filter(|&&j| j > i) {
                        splits.push(vec![&text[..i], &text[i..j], &text[j..]]);
                    }
                }
                let mut chars = Vec::new();
                let mut rest = *text;
                while let Some(c) = rest.chars().next() {
                    chars.push(&rest[..c.len_utf8()]);
                    rest = &rest[c.len_utf8()..];
                }
                splits.push(chars);
                for pieces in &splits {
                    let shown = stream_checked(start, pieces, want);
                    assert_eq!(shown.trim(), *want, "{start:?} {pieces:?}");
                }
            }
        }
    }

    #[test]
    fn only_a_model_known_to_answer_outside_thinking_streams_at_once() {
        // Known: text goes out as it comes.
        let mut f = plain();
        assert_eq!(f.push("Hello", &known), "Hello");
        assert_eq!(f.push(" there", &known), " there");
        // Not known yet, or known to start inside thinking: held until `</think>`...
        for start in [ThinkStart::Unknown, ThinkStart::Inside] {
            let mut f = MarkupFilter::new(start);
            assert_eq!(f.push("I'm\nthinking", &known), "");
            assert_eq!(f.push("</thi", &known), "");
            assert_eq!(f.push("nk>\n\nHello", &known), "\n\nHello");
            assert_eq!(f.push(" there", &known), " there");
            assert_eq!(f.finish_with(&known), "");
            // ...or the end, when all of it is the answer.
            assert_eq!(f.push("Just an answer.", &known), "");
            assert_eq!(f.finish_with(&known), "Just an answer.");
        }
        // A known model that starts thinking after all (another model under the same name):
        // what came before the closer was shown, the closer never.
        assert_eq!(
            run(&["I'm\nthinking", "</think>", "Hello"]),
            "I'm\nthinkingHello"
        );
    }

    #[test]
    fn an_answer_cut_inside_thinking_shows_nothing() {
        let mut f = MarkupFilter::new(ThinkStart::Inside);
        assert_eq!(f.push("Let me think about SECRET", &known), "");
        assert_eq!(f.finish_in_thought(&known), "");
        // Past the bound too, and the next answer starts fresh.
        let piece = "y".repeat(1024);
        for _ in 0..(2 * MAX_MARKUP_HOLD_BYTES / 1024) {
            assert_eq!(f.push(&piece, &known), "");
        }
        assert_eq!(f.finish_in_thought(&known), "");
        assert_eq!(f.push("a</think>b", &known), "b");
        assert_eq!(f.finish_with(&known), "");
        // An answer after its `</think>` is kept even when cut.
        let mut f = MarkupFilter::new(ThinkStart::Inside);
        assert_eq!(f.push("x</think>Part", &known), "Part");
        assert_eq!(f.finish_in_thought(&known), "");
    }

    #[test]
    fn a_held_start_is_bounded() {
        // A mebibyte with no `</think>`: at most the bound is held; past it, the preview
        // treats it as thought (the final answer decides).
        let mut f = MarkupFilter::new(ThinkStart::Unknown);
        let piece = "why? ".repeat(200);
        let mut shown = String::new();
        for _ in 0..1024 {
            shown.push_str(&f.push(&piece, &known));
            assert!(f.scan.held() <= MAX_MARKUP_HOLD_BYTES + piece.len());
        }
        shown.push_str(&f.push("</think>Answer.", &known));
        shown.push_str(&f.finish_with(&known));
        assert_eq!(shown, "Answer.");
    }

    #[test]
    fn held_text_is_bounded() {
        // A mebibyte of unclosed thinking, then of an unclosed tool call, in 1 KiB deltas.
        for open in [
            "<think>",
            "<tool_call>{\"name\":\"read_file\",\"arguments\":\"",
        ] {
            let mut f = plain();
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
            "I think.</think>",
            "</th",
            "ink>",
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
            let want = toolcall::extract(&text, &known).text;
            for start in [ThinkStart::Unknown, ThinkStart::Inside, ThinkStart::Outside] {
                if start == ThinkStart::Outside && toolcall::starts_inside_think(&text) {
                    continue; // shown until its closer: see the test above
                }
                let shown = run_as(start, &chunks);
                assert_eq!(
                    shown.trim(),
                    want,
                    "{start:?} text {text:?} chunks {chunks:?}"
                );
            }
        }
    }
}
