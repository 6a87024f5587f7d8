//! Line assembly for the serial console: bytes in, finished lines and echo bytes out,
//! behaving like a simple terminal line editor.
//!
//! A line ends at CR, LF or CRLF (the LF right after a CR is swallowed, so CRLF is one
//! end of line, not two). With echo on, typed characters are sent back, an end of line
//! echoes CRLF, Backspace/DEL erases the last character (`BS SP BS`), Ctrl-U erases the
//! line, Ctrl-C abandons it. Escape sequences (arrow keys, function keys) are dropped, tab
//! becomes a space, other control characters are ignored. Invalid UTF-8 is replaced.
//!
//! # Bounds
//! A line holds at most `max_bytes` bytes; further bytes are dropped (the line is "cut",
//! a BEL is echoed once) until the end of line. An unterminated escape sequence ends at
//! the first byte that cannot belong to one. Echo output is at most a few bytes per input
//! byte (Ctrl-U: three per erased character).
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

/// A finished line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    /// Bytes were dropped because the line was longer than the bound.
    pub cut: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Esc {
    None,
    /// Just saw ESC.
    Start,
    /// Inside `ESC [ …` or `ESC O …`, waiting for the final byte.
    Seq,
}

/// The line being typed.
#[derive(Debug)]
pub struct LineEditor {
    buf: Vec<u8>,
    max_bytes: usize,
    echo: bool,
    cut: bool,
    after_cr: bool,
    esc: Esc,
}

const ERASE: &[u8] = b"\x08 \x08";

impl LineEditor {
    pub fn new(max_bytes: usize, echo: bool) -> LineEditor {
        LineEditor {
            buf: Vec::new(),
            max_bytes: max_bytes.max(1),
            echo,
            cut: false,
            after_cr: false,
            esc: Esc::None,
        }
    }

    /// Feed one byte. Echo bytes (when echo is on) are appended to `out`; returns the
    /// line this byte finished, if any (possibly empty).
    pub fn feed(&mut self, b: u8, out: &mut Vec<u8>) -> Option<Line> {
        let after_cr = std::mem::take(&mut self.after_cr);
        match self.esc {
            Esc::Start => {
                // ESC [ and ESC O start a sequence; ESC x (Alt-x) drops both bytes.
                self.esc = if b == b'[' || b == b'O' {
                    Esc::Seq
                } else {
                    Esc::None
                };
                return None;
            }
            Esc::Seq => match b {
                0x20..=0x3f => return None,
                0x40..=0x7e => {
                    self.esc = Esc::None;
                    return None;
                }
                // Not part of a sequence: abandon it and treat the byte normally.
                _ => self.esc = Esc::None,
            },
            Esc::None => {}
        }
        match b {
            b'\n' if after_cr => None,
            b'\r' | b'\n' => {
                self.after_cr = b == b'\r';
                self.echo_bytes(out, b"\r\n");
                Some(self.take_line())
            }
            0x08 | 0x7f => {
                if self.pop_char() {
                    self.echo_bytes(out, ERASE);
                }
                None
            }
            0x15 => {
                while self.pop_char() {
                    self.echo_bytes(out, ERASE);
                }
                self.cut = false;
                None
            }
            0x03 => {
                self.buf.clear();
                self.cut = false;
                self.echo_bytes(out, b"^C\r\n");
                None
            }
            0x1b => {
                self.esc = Esc::Start;
                None
            }
            b'\t' => {
                self.push(b' ', out);
                None
            }
            0x00..=0x1f => None,
            _ => {
                self.push(b, out);
                None
            }
        }
    }

    /// Bytes of the line typed so far.
    pub fn pending_len(&self) -> usize {
        self.buf.len()
    }

    fn push(&mut self, b: u8, out: &mut Vec<u8>) {
        if self.buf.len() < self.max_bytes {
            self.buf.push(b);
            self.echo_bytes(out, &[b]);
        } else {
            if !self.cut {
                self.echo_bytes(out, b"\x07");
            }
            self.cut = true;
        }
    }

    fn echo_bytes(&self, out: &mut Vec<u8>, bytes: &[u8]) {
        if self.echo {
            out.extend_from_slice(bytes);
        }
    }

    /// Remove the last character (a UTF-8 lead byte and its continuation bytes).
    fn pop_char(&mut self) -> bool {
        let mut popped = false;
        while let Some(b) = self.buf.pop() {
            popped = true;
            if b & 0xc0 != 0x80 {
                break;
            }
        }
        popped
    }

    fn take_line(&mut self) -> Line {
        let bytes = std::mem::take(&mut self.buf);
        let cut = std::mem::take(&mut self.cut);
        let text = match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => {
                let mut b = e.into_bytes();
                // A cut can split a character: drop the incomplete tail rather than
                // showing a replacement character for it.
                if let Err(e) = std::str::from_utf8(&b)
                    && e.error_len().is_none()
                {
                    b.truncate(e.valid_up_to());
                }
                String::from_utf8_lossy(&b).into_owned()
            }
        };
        Line { text, cut }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ed: &mut LineEditor, input: &[u8]) -> (Vec<Line>, Vec<u8>) {
        let mut out = Vec::new();
        let mut lines = Vec::new();
        for &b in input {
            if let Some(l) = ed.feed(b, &mut out) {
                lines.push(l);
            }
        }
        (lines, out)
    }

    fn texts(lines: &[Line]) -> Vec<&str> {
        lines.iter().map(|l| l.text.as_str()).collect()
    }

    #[test]
    fn cr_lf_and_crlf_each_end_one_line() {
        let mut ed = LineEditor::new(100, false);
        let (lines, out) = run(&mut ed, b"a\r\nb\nc\rd\r\r\ne\n\n");
        assert_eq!(texts(&lines), ["a", "b", "c", "d", "", "e", ""]);
        assert!(out.is_empty(), "no echo when echo is off");
    }

    #[test]
    fn echo_behaves_like_a_terminal() {
        let mut ed = LineEditor::new(100, true);
        let (lines, out) = run(&mut ed, b"hellp\x7fo\r");
        assert_eq!(texts(&lines), ["hello"]);
        assert_eq!(out, b"hellp\x08 \x08o\r\n");
        // Backspace on an empty line echoes nothing.
        let (_, out) = run(&mut ed, b"\x08\x7f");
        assert!(out.is_empty());
        // Ctrl-U erases the line, Ctrl-C abandons it.
        let (lines, out) = run(&mut ed, b"ab\x15cd\x03x\n");
        assert_eq!(texts(&lines), ["x"]);
        assert_eq!(out, b"ab\x08 \x08\x08 \x08cd^C\r\nx\r\n");
    }

    #[test]
    fn backspace_removes_a_whole_utf8_character() {
        let mut ed = LineEditor::new(100, true);
        let (lines, _) = run(&mut ed, "caf\u{e9}\x7fe\r".as_bytes());
        assert_eq!(texts(&lines), ["cafe"]);
        let (lines, _) = run(&mut ed, "\u{1f600}\x7f!\n".as_bytes());
        assert_eq!(texts(&lines), ["!"]);
    }

    #[test]
    fn escape_sequences_and_controls_are_dropped() {
        let mut ed = LineEditor::new(100, true);
        let (lines, out) = run(&mut ed, b"a\x1b[A\x1b[1;5Cb\x1bOPc\x1bxd\x01\x02e\tf\r");
        assert_eq!(texts(&lines), ["abcde f"]);
        assert_eq!(out, b"abcde f\r\n");
        // An escape sequence interrupted by CR still ends the line.
        let (lines, _) = run(&mut ed, b"x\x1b[12\ry\n");
        assert_eq!(texts(&lines), ["x", "y"]);
    }

    #[test]
    fn long_lines_are_cut_not_grown() {
        let mut ed = LineEditor::new(8, true);
        let (lines, out) = run(&mut ed, b"0123456789abcdef\r");
        assert_eq!(
            lines,
            [Line {
                text: "01234567".into(),
                cut: true
            }]
        );
        assert_eq!(
            out, b"01234567\x07\r\n",
            "one bell, then nothing until the end"
        );
        // The next line starts fresh.
        let (lines, _) = run(&mut ed, b"ok\n");
        assert_eq!(
            lines,
            [Line {
                text: "ok".into(),
                cut: false
            }]
        );
        // A cut inside a multi-byte character drops the partial character.
        let mut ed = LineEditor::new(4, false);
        let (lines, _) = run(&mut ed, "ab\u{e9}\u{e9}\n".as_bytes());
        assert_eq!(texts(&lines), ["ab\u{e9}"]);
        let mut ed = LineEditor::new(3, false);
        let (lines, _) = run(&mut ed, "ab\u{e9}\n".as_bytes());
        assert_eq!(texts(&lines), ["ab"]);
    }

    #[test]
    fn random_bytes_never_panic_and_stay_bounded() {
        let mut rng = crate::testkit::XorShift(0x9e37_79b9_7f4a_7c15);
        let mut next = move || rng.next();
        for case in 0..3000 {
            let max = 1 + (next() % 64) as usize;
            let mut ed = LineEditor::new(max, case % 2 == 0);
            let len = (next() % 400) as usize;
            let mut out = Vec::new();
            for _ in 0..len {
                // Bias towards interesting bytes.
                let b = match next() % 8 {
                    0 => b"\r\n\x08\x7f\x15\x03\x1b["[(next() % 8) as usize],
                    1 => 0x80 | (next() % 64) as u8,
                    _ => next() as u8,
                };
                out.clear();
                if let Some(line) = ed.feed(b, &mut out) {
                    // Replacement characters can triple invalid bytes, never more.
                    assert!(line.text.len() <= 3 * max, "{case}");
                }
                // Ctrl-U erases up to the whole line; everything else echoes a few bytes.
                assert!(out.len() <= 4 + 3 * max, "{case}: {out:?}");
                assert!(ed.pending_len() <= max);
            }
        }
    }
}
