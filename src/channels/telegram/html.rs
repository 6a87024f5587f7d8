//! Telegram reply formatting: model markdown to Bot API HTML, and long replies
//! cut into messages Telegram accepts.
//!
//! Why it exists: models answer in markdown, Telegram renders only a small HTML
//! subset (`parse_mode=HTML`) and refuses a message over 4096 UTF-16 code units.
//! This module is pure text in, text out (no networking), so the sender stays
//! simple and everything here can be fuzzed.
//!
//! What it will not do: tables, nested quotes, images, numbered-list
//! renumbering, raw HTML passthrough (a `<` in the markdown is shown as a `<`),
//! emphasis spanning several lines, and intraword emphasis (`2*3*4`,
//! `snake_case_name` stay as written). An unclosed fenced code block runs to the
//! end of the reply, as in CommonMark; every other unclosed marker stays literal.
//!
//! # Bounds
//! - `split_html` / `split_plain`: every chunk is at most the limit in UTF-16
//!   code units; a limit below [`MIN_SPLIT_LIMIT_UTF16`] is raised to it.
//!   `split_html` counts tags too (Telegram counts only the text), so it errs
//!   on the short side.
//! - `split_html` drops (keeping the text they wrap) an open tag longer than a
//!   quarter of the limit, and one that would make the tags reopened at a chunk
//!   start plus their closings exceed half the limit; so a chunk always has room
//!   for text and the loop always advances. It also drops tags Telegram would
//!   refuse to nest (anything in `code`, a link in a link, …) and escapes
//!   unknown tags and stray `<`, `>`, `&`.
//! - A code block's language name is cut to [`MAX_CODE_LANG_BYTES`].
//! - Time is linear in the input (no backtracking, no recursion on input);
//!   memory is proportional to the input.

use std::collections::HashMap;

/// Telegram's limit for one message's text, in UTF-16 code units.
pub const TELEGRAM_MAX_MESSAGE_UTF16: usize = 4096;

/// Smallest limit the splitters accept; smaller limits are raised to this.
pub const MIN_SPLIT_LIMIT_UTF16: usize = 64;

/// Longest language name kept from a code fence's info string.
pub const MAX_CODE_LANG_BYTES: usize = 32;

/// Longest HTML entity `split_html` recognises (`&#x10FFFF;`); a longer one is
/// treated as a stray `&` and escaped.
const MAX_ENTITY_BYTES: usize = 10;

/// What a thematic break (`---`, `***`) renders as.
const RULE_TEXT: &str = "──────────";

/// Length of `s` in UTF-16 code units, the unit Telegram counts in.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// Pushes `s` with `<`, `>` and `&` escaped (all Telegram HTML needs in text).
fn push_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        push_escaped_char(out, c);
    }
}

fn push_escaped_char(out: &mut String, c: char) {
    match c {
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '&' => out.push_str("&amp;"),
        _ => out.push(c),
    }
}

/// Pushes `s` escaped for a double-quoted attribute value.
fn push_attr_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("&quot;"),
            _ => push_escaped_char(out, c),
        }
    }
}

// ---------------------------------------------------------------------------
// Markdown to HTML: blocks
// ---------------------------------------------------------------------------

/// An open fenced code block.
struct Fence<'a> {
    /// The opening line, shown as text if the fence never closes and is empty.
    opening: &'a str,
    ch: u8,
    len: usize,
    indent: usize,
    lang: String,
    body: String,
    lines: usize,
}

/// Converts the markdown models write into Telegram Bot API HTML.
///
/// Handles `**bold**`, `__bold__`, `*italic*`, `_italic_`, `~~strike~~`,
/// `` `code` ``, fenced code blocks (with a language), `[text](url)` links
/// (http, https, tg and mailto only), `#` headings (as bold lines), `-`/`*`/`+`
/// bullets (as "• "), `>` quotes (as `<blockquote>`) and thematic breaks. The
/// output is always valid Telegram HTML: only allowed tags, all closed and
/// properly nested, `<`, `>` and `&` escaped everywhere else.
pub fn markdown_to_html(md: &str) -> String {
    let mut out = String::with_capacity(md.len() + md.len() / 8 + 16);
    let mut fence: Option<Fence> = None;
    let mut in_quote = false;
    let mut first_line = true;
    for raw in md.split('\n') {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(f) = fence.as_mut() {
            if is_closing_fence(line, f.ch, f.len) {
                if let Some(done) = fence.take() {
                    emit_code_block(&mut out, &mut first_line, done);
                }
            } else {
                if f.lines > 0 {
                    f.body.push('\n');
                }
                f.lines += 1;
                push_escaped(&mut f.body, strip_indent(line, f.indent));
            }
            continue;
        }
        if let Some(open) = opening_fence(line) {
            if in_quote {
                out.push_str("</blockquote>");
                in_quote = false;
            }
            fence = Some(open);
            continue;
        }
        if let Some(content) = quote_content(line) {
            if in_quote {
                out.push('\n');
            } else {
                if !first_line {
                    out.push('\n');
                }
                first_line = false;
                out.push_str("<blockquote>");
                in_quote = true;
            }
            render_line(content, &mut out);
            continue;
        }
        if in_quote {
            out.push_str("</blockquote>");
            in_quote = false;
        }
        if !first_line {
            out.push('\n');
        }
        first_line = false;
        render_line(line, &mut out);
    }
    if in_quote {
        out.push_str("</blockquote>");
    }
    if let Some(done) = fence.take() {
        if done.body.trim().is_empty() {
            // "~~~x~~~" or a stray fence at the very end: not code, just text.
            if !first_line {
                out.push('\n');
            }
            render_line(done.opening, &mut out);
        } else {
            emit_code_block(&mut out, &mut first_line, done);
        }
    }
    out
}

fn emit_code_block(out: &mut String, first_line: &mut bool, fence: Fence<'_>) {
    if fence.body.trim().is_empty() {
        return; // an empty entity helps nobody
    }
    if !*first_line {
        out.push('\n');
    }
    *first_line = false;
    if fence.lang.is_empty() {
        out.push_str("<pre>");
        out.push_str(&fence.body);
        out.push_str("</pre>");
    } else {
        out.push_str("<pre><code class=\"language-");
        out.push_str(&fence.lang);
        out.push_str("\">");
        out.push_str(&fence.body);
        out.push_str("</code></pre>");
    }
}

fn leading_blanks(line: &str) -> usize {
    line.bytes()
        .take_while(|&b| b == b' ' || b == b'\t')
        .count()
}

fn strip_indent(line: &str, indent: usize) -> &str {
    let n = line.bytes().take(indent).take_while(|&b| b == b' ').count();
    line.get(n..).unwrap_or(line)
}

fn opening_fence(line: &str) -> Option<Fence<'_>> {
    let indent = leading_blanks(line);
    let rest = line.get(indent..)?;
    let ch = *rest.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = rest.bytes().take_while(|&b| b == ch).count();
    if len < 3 {
        return None;
    }
    let info = rest.get(len..)?.trim();
    if ch == b'`' && info.contains('`') {
        return None; // "```x```" on one line is inline code, not a fence
    }
    let word = info.split_whitespace().next().unwrap_or("");
    let lang: String = word
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '_' | '.' | '#'))
        .take(MAX_CODE_LANG_BYTES)
        .collect();
    Some(Fence {
        opening: line,
        ch,
        len,
        indent,
        lang,
        body: String::new(),
        lines: 0,
    })
}

fn is_closing_fence(line: &str, ch: u8, len: usize) -> bool {
    let rest = line.get(leading_blanks(line)..).unwrap_or("");
    let n = rest.bytes().take_while(|&b| b == ch).count();
    n >= len && rest.get(n..).is_some_and(|r| r.trim().is_empty())
}

/// The text of a `>` quote line, or None.
fn quote_content(line: &str) -> Option<&str> {
    let indent = leading_blanks(line);
    let rest = line.get(indent..)?.strip_prefix('>')?;
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

fn is_thematic_break(trimmed: &str) -> bool {
    let Some(&first) = trimmed.as_bytes().first() else {
        return false;
    };
    if !matches!(first, b'-' | b'*' | b'_') {
        return false;
    }
    let mut count = 0;
    for b in trimmed.bytes() {
        if b == first {
            count += 1;
        } else if b != b' ' && b != b'\t' {
            return false;
        }
    }
    count >= 3
}

fn heading_text(trimmed: &str) -> Option<&str> {
    let hashes = trimmed.bytes().take_while(|&b| b == b'#').count();
    if hashes == 0 || hashes > 6 {
        return None;
    }
    let rest = trimmed.get(hashes..)?;
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None; // "#hashtag"
    }
    let mut text = rest.trim();
    // Closing hashes ("## Title ##") go, when set off by a space.
    let without = text.trim_end_matches('#');
    if without.len() < text.len() && (without.is_empty() || without.ends_with([' ', '\t'])) {
        text = without.trim_end();
    }
    if text.is_empty() { None } else { Some(text) }
}

fn bullet_rest(trimmed: &str) -> Option<&str> {
    let b = *trimmed.as_bytes().first()?;
    if !matches!(b, b'-' | b'*' | b'+') {
        return None;
    }
    let rest = trimmed.get(1..)?;
    if rest.starts_with(' ') || rest.starts_with('\t') {
        Some(rest.trim_start())
    } else {
        None
    }
}

/// Renders one non-code line: heading, bullet, rule or plain text.
fn render_line(line: &str, out: &mut String) {
    let indent = leading_blanks(line);
    let trimmed = line.get(indent..).unwrap_or(line);
    if is_thematic_break(trimmed) {
        out.push_str(RULE_TEXT);
    } else if let Some(text) = heading_text(trimmed) {
        out.push_str("<b>");
        render_inline(text, out, InlineMode::InBold);
        out.push_str("</b>");
    } else if let Some(rest) = bullet_rest(trimmed) {
        out.push_str(line.get(..indent).unwrap_or(""));
        out.push_str("• ");
        render_inline(rest, out, InlineMode::Normal);
    } else {
        render_inline(line, out, InlineMode::Normal);
    }
}

// ---------------------------------------------------------------------------
// Markdown to HTML: inline spans
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum InlineMode {
    /// Ordinary text.
    Normal,
    /// Inside a heading, already bold: `**` markers are consumed but add no tag.
    InBold,
    /// Inside a link's text: no nested links, code spans lose their `<code>`
    /// (Telegram forbids code inside a link).
    LinkText,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Emph {
    StrongStar,
    StrongUnder,
    EmStar,
    EmUnder,
    Strike,
}

impl Emph {
    const ALL: [Emph; 5] = [
        Emph::StrongStar,
        Emph::StrongUnder,
        Emph::EmStar,
        Emph::EmUnder,
        Emph::Strike,
    ];

    fn ch(self) -> u8 {
        match self {
            Emph::StrongStar | Emph::EmStar => b'*',
            Emph::StrongUnder | Emph::EmUnder => b'_',
            Emph::Strike => b'~',
        }
    }

    fn marker(self) -> &'static str {
        match self {
            Emph::StrongStar => "**",
            Emph::StrongUnder => "__",
            Emph::EmStar => "*",
            Emph::EmUnder => "_",
            Emph::Strike => "~~",
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Emph::StrongStar | Emph::StrongUnder => "b",
            Emph::EmStar | Emph::EmUnder => "i",
            Emph::Strike => "s",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Literal,
    Open,
    Close,
}

/// An emphasis marker placed at byte `at` of the inline buffer.
struct Delim {
    at: usize,
    kind: Emph,
    role: Role,
}

/// Delimiter-stack state for one line: escaped text in `buf`, markers in
/// `delims`, unmatched openers (indices into `delims`) in `stack`.
struct Inline {
    buf: String,
    delims: Vec<Delim>,
    stack: Vec<usize>,
    open_counts: [usize; 5],
}

impl Inline {
    fn push_opener(&mut self, kind: Emph) {
        self.stack.push(self.delims.len());
        self.delims.push(Delim {
            at: self.buf.len(),
            kind,
            role: Role::Literal,
        });
        if let Some(n) = self.open_counts.get_mut(kind.index()) {
            *n += 1;
        }
    }

    /// Closes the nearest opener of marker char `ch` at most `max_len` long.
    /// Openers above it become literal text. Returns the closed marker length.
    fn try_close(&mut self, ch: u8, max_len: usize) -> Option<usize> {
        let eligible = |k: Emph| k.ch() == ch && k.marker().len() <= max_len;
        let available: usize = Emph::ALL
            .iter()
            .filter(|k| eligible(**k))
            .map(|k| self.open_counts.get(k.index()).copied().unwrap_or(0))
            .sum();
        if available == 0 {
            return None;
        }
        while let Some(idx) = self.stack.pop() {
            let Some(d) = self.delims.get_mut(idx) else {
                continue;
            };
            let kind = d.kind;
            if let Some(n) = self.open_counts.get_mut(kind.index()) {
                *n = n.saturating_sub(1);
            }
            if eligible(kind) {
                d.role = Role::Open;
                self.delims.push(Delim {
                    at: self.buf.len(),
                    kind,
                    role: Role::Close,
                });
                return Some(kind.marker().len());
            }
        }
        None
    }

    fn finish(self, out: &mut String, mode: InlineMode) {
        let mut last = 0;
        for d in &self.delims {
            out.push_str(self.buf.get(last..d.at).unwrap_or(""));
            last = d.at;
            let silent = mode == InlineMode::InBold && d.kind.tag() == "b";
            match d.role {
                Role::Literal => out.push_str(d.kind.marker()),
                Role::Open if !silent => {
                    out.push('<');
                    out.push_str(d.kind.tag());
                    out.push('>');
                }
                Role::Close if !silent => {
                    out.push_str("</");
                    out.push_str(d.kind.tag());
                    out.push('>');
                }
                _ => {}
            }
        }
        out.push_str(self.buf.get(last..).unwrap_or(""));
    }
}

fn is_word_char(c: Option<char>) -> bool {
    c.is_some_and(char::is_alphanumeric)
}

fn is_blank(c: Option<char>) -> bool {
    c.is_none_or(char::is_whitespace)
}

/// Backtick runs of a line as (start byte, length), and for each run the index
/// of the next run of the same length (its possible closer).
fn backtick_runs(text: &str) -> (Vec<(usize, usize)>, Vec<Option<usize>>) {
    let bytes = text.as_bytes();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes.get(i) == Some(&b'`') {
            let n = bytes
                .get(i..)
                .unwrap_or(&[])
                .iter()
                .take_while(|&&b| b == b'`')
                .count();
            runs.push((i, n));
            i += n;
        } else {
            i += 1;
        }
    }
    let mut next_same = vec![None; runs.len()];
    let mut seen: HashMap<usize, usize> = HashMap::new();
    for (k, &(_, n)) in runs.iter().enumerate().rev() {
        if let Some(slot) = next_same.get_mut(k) {
            *slot = seen.get(&n).copied();
        }
        seen.insert(n, k);
    }
    (runs, next_same)
}

/// For `rest` starting with `http://` or `https://`: the scheme's length and
/// where the URL-ish run ends (whitespace, `<`, `>`, backtick or quote);
/// (0, 0) otherwise.
fn url_run(rest: &str) -> (usize, usize) {
    let scheme = if rest.starts_with("https://") {
        8
    } else if rest.starts_with("http://") {
        7
    } else {
        return (0, 0);
    };
    let end = rest
        .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '`' | '"'))
        .unwrap_or(rest.len());
    (scheme, end)
}

/// Byte length of a bare `http(s)://` URL starting `rest`, trailing
/// punctuation excluded; 0 when `rest` does not start with one.
fn bare_url_len(rest: &str) -> usize {
    let (scheme, end) = url_run(rest);
    let mut url = rest.get(..end).unwrap_or("");
    let mut parens: isize = url.bytes().fold(0, |n, b| match b {
        b'(' => n + 1,
        b')' => n - 1,
        _ => n,
    });
    while let Some(last) = url.chars().next_back() {
        let drop = match last {
            '.' | ',' | ';' | ':' | '!' | '?' | '*' | '_' | '~' | '\'' | ']' => true,
            ')' if parens < 0 => {
                parens += 1;
                true
            }
            _ => false,
        };
        if !drop {
            break;
        }
        url = url.get(..url.len() - last.len_utf8()).unwrap_or("");
    }
    if url.len() > scheme { url.len() } else { 0 }
}

fn link_scheme_allowed(url: &str) -> bool {
    let lower: String = url.chars().take(8).flat_map(char::to_lowercase).collect();
    ["http://", "https://", "tg://", "mailto:"]
        .iter()
        .any(|s| lower.starts_with(s) && url.len() > s.len())
}

/// Parses `[text](url)` at byte `i` (a `[`). Returns (text, url, end byte).
fn parse_link(text: &str, i: usize) -> Option<(&str, &str, usize)> {
    let bytes = text.as_bytes();
    let mut j = i + 1;
    loop {
        match bytes.get(j)? {
            b']' => break,
            b'[' => return None,
            _ => j += 1,
        }
    }
    if bytes.get(j + 1) != Some(&b'(') {
        return None;
    }
    let url_start = j + 2;
    let mut k = url_start;
    let mut depth = 0usize;
    loop {
        let b = *bytes.get(k)?;
        match b {
            b'(' => depth += 1,
            b')' if depth == 0 => break,
            b')' => depth -= 1,
            // Stopping at '[' keeps each link scan to its own stretch of text.
            b'[' | b']' | b'<' | b'>' => return None,
            b if b.is_ascii_whitespace() => return None,
            _ => {}
        }
        k += 1;
    }
    let label = text.get(i + 1..j)?;
    let url = text.get(url_start..k)?;
    if label.trim().is_empty() || !link_scheme_allowed(url) {
        return None;
    }
    Some((label, url, k + 1))
}

/// Renders one line's inline markdown into `out`. Linear time: backtick
/// closers are precomputed, link scans cover disjoint ranges, and each
/// emphasis closer pops the openers it passes.
fn render_inline(text: &str, out: &mut String, mode: InlineMode) {
    let bytes = text.as_bytes();
    let (runs, next_same) = backtick_runs(text);
    let mut run_cursor = 0;
    let mut st = Inline {
        buf: String::with_capacity(text.len() + 8),
        delims: Vec::new(),
        stack: Vec::new(),
        open_counts: [0; 5],
    };
    let mut prev: Option<char> = None;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let rest = text.get(i..).unwrap_or("");
        match b {
            b'`' => {
                while runs.get(run_cursor).is_some_and(|r| r.0 < i) {
                    run_cursor += 1;
                }
                let n = rest.bytes().take_while(|&c| c == b'`').count();
                let closer = match runs.get(run_cursor) {
                    Some(&(start, _)) if start == i => next_same.get(run_cursor).copied().flatten(),
                    _ => None,
                };
                let span = closer.and_then(|m| runs.get(m).map(|&(s, _)| (m, s)));
                if let Some((m, close_start)) = span {
                    let mut code = text.get(i + n..close_start).unwrap_or("");
                    if code.len() >= 2
                        && code.starts_with(' ')
                        && code.ends_with(' ')
                        && !code.trim().is_empty()
                    {
                        code = code.get(1..code.len() - 1).unwrap_or(code);
                    }
                    if mode == InlineMode::LinkText {
                        push_escaped(&mut st.buf, code);
                    } else {
                        st.buf.push_str("<code>");
                        push_escaped(&mut st.buf, code);
                        st.buf.push_str("</code>");
                    }
                    i = close_start + n;
                    run_cursor = m + 1;
                } else {
                    st.buf.push_str(rest.get(..n).unwrap_or(""));
                    i += n.max(1);
                }
                prev = Some('`');
            }
            b'*' | b'_' | b'~' => {
                let n = rest.bytes().take_while(|&c| c == b).count();
                let next = rest.get(n..).and_then(|r| r.chars().next());
                let can_open = !is_blank(next) && !is_word_char(prev);
                let can_close = !is_blank(prev) && !is_word_char(next);
                let usable = if b == b'~' { n == 2 } else { n <= 3 };
                let mut left = if usable { n } else { 0 };
                if can_close {
                    while left > 0 {
                        match st.try_close(b, left) {
                            Some(closed) => left -= closed,
                            None => break,
                        }
                    }
                }
                if left > 0 && can_open {
                    match (b, left) {
                        (b'~', _) => st.push_opener(Emph::Strike),
                        (b'*', 1) => st.push_opener(Emph::EmStar),
                        (b'*', 2) => st.push_opener(Emph::StrongStar),
                        (b'*', _) => {
                            st.push_opener(Emph::StrongStar);
                            st.push_opener(Emph::EmStar);
                        }
                        (_, 1) => st.push_opener(Emph::EmUnder),
                        (_, 2) => st.push_opener(Emph::StrongUnder),
                        _ => {
                            st.push_opener(Emph::StrongUnder);
                            st.push_opener(Emph::EmUnder);
                        }
                    }
                    left = 0;
                }
                let literal = if usable { left } else { n };
                st.buf.push_str(rest.get(..literal).unwrap_or(""));
                prev = Some(b as char);
                i += n.max(1);
            }
            b'[' if mode != InlineMode::LinkText => {
                if let Some((label, url, end)) = parse_link(text, i) {
                    st.buf.push_str("<a href=\"");
                    push_attr_escaped(&mut st.buf, url);
                    st.buf.push_str("\">");
                    // One level only: LinkText mode parses no links.
                    render_inline(label, &mut st.buf, InlineMode::LinkText);
                    st.buf.push_str("</a>");
                    i = end;
                    prev = Some(')');
                } else {
                    st.buf.push('[');
                    i += 1;
                    prev = Some('[');
                }
            }
            b'\\' => {
                let next = rest.as_bytes().get(1).copied();
                match next {
                    Some(c) if c.is_ascii_punctuation() && c != b'`' => {
                        push_escaped_char(&mut st.buf, c as char);
                        prev = Some(c as char);
                        i += 2;
                    }
                    _ => {
                        st.buf.push('\\');
                        prev = Some('\\');
                        i += 1;
                    }
                }
            }
            b'h' if !is_word_char(prev) && bare_url_len(rest) > 0 => {
                let n = bare_url_len(rest);
                let url = rest.get(..n).unwrap_or("");
                push_escaped(&mut st.buf, url);
                prev = url.chars().next_back();
                i += n.max(1);
            }
            b'<' => {
                // <https://…> autolink: show the bare URL, Telegram links it.
                let inner = rest.get(1..).unwrap_or("");
                let (scheme, n) = url_run(inner);
                if n > scheme && inner.as_bytes().get(n) == Some(&b'>') {
                    push_escaped(&mut st.buf, inner.get(..n).unwrap_or(""));
                    prev = Some('>');
                    i += n + 2;
                } else {
                    st.buf.push_str("&lt;");
                    prev = Some('<');
                    i += 1;
                }
            }
            _ => {
                let c = rest.chars().next().unwrap_or('\u{fffd}');
                push_escaped_char(&mut st.buf, c);
                prev = Some(c);
                i += c.len_utf8().max(1);
            }
        }
    }
    st.finish(out, mode);
}

// ---------------------------------------------------------------------------
// Splitting
// ---------------------------------------------------------------------------

/// Boundary classes, best first.
#[derive(Clone, Copy)]
enum Boundary {
    Paragraph = 0,
    Line = 1,
    Word = 2,
}

/// Classifies the whitespace char `c`; `newlines` counts newlines since the
/// last visible char.
fn boundary_after(c: char, newlines: &mut usize) -> Option<Boundary> {
    match c {
        '\n' => {
            *newlines += 1;
            Some(if *newlines >= 2 {
                Boundary::Paragraph
            } else {
                Boundary::Line
            })
        }
        ' ' | '\t' => Some(Boundary::Word),
        _ => None,
    }
}

/// Splits plain text into chunks of at most `limit_utf16` UTF-16 code units,
/// cutting after a blank line, else after a newline, else after a space, and
/// inside a word (at a char boundary) only when nothing else fits.
///
/// The chunks concatenate to `text` exactly, except that chunks holding only
/// whitespace are dropped.
pub fn split_plain(text: &str, limit_utf16: usize) -> Vec<String> {
    let limit = limit_utf16.max(MIN_SPLIT_LIMIT_UTF16);
    let mut chunks = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut used = 0;
        let mut best: [Option<usize>; 3] = [None; 3];
        let mut visible = false;
        let mut newlines = 0;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            let w = c.len_utf16();
            if used + w > limit {
                end = best.iter().flatten().next().copied().unwrap_or(i);
                break;
            }
            used += w;
            if !c.is_whitespace() {
                visible = true;
                newlines = 0;
            } else if visible
                && let Some(class) = boundary_after(c, &mut newlines)
                && let Some(slot) = best.get_mut(class as usize)
            {
                *slot = Some(i + c.len_utf8());
            }
        }
        if end == 0 {
            // Unreachable with the limit clamp; keeps the loop advancing.
            end = rest.chars().next().map_or(rest.len(), char::len_utf8);
        }
        let (piece, tail) = rest.split_at_checked(end).unwrap_or((rest, ""));
        if !piece.trim().is_empty() {
            chunks.push(piece.to_string());
        }
        rest = tail;
    }
    chunks
}

/// Tags Telegram accepts; anything else in `split_html`'s input is escaped.
const ALLOWED_TAGS: [&str; 16] = [
    "b",
    "strong",
    "i",
    "em",
    "u",
    "ins",
    "s",
    "strike",
    "del",
    "span",
    "tg-spoiler",
    "a",
    "code",
    "pre",
    "blockquote",
    "tg-emoji",
];

const NO_NODE: usize = usize::MAX;

/// One open tag in the persistent stack arena; a stack is the index of its
/// top node, so remembering a stack at a candidate cut costs O(1).
struct Node {
    parent: usize,
    open_start: usize,
    open_end: usize,
    tag: usize,
    /// Cost of reopening every tag from the root to here.
    open_cost: usize,
    /// Cost of closing every tag from here to the root.
    close_cost: usize,
    /// Bit per `ALLOWED_TAGS` entry open from the root to here.
    mask: u32,
}

enum Tok {
    /// Text to copy: a char, a valid entity, or an escaped stray `<>&`.
    Text {
        out: TextOut,
        visible: bool,
        ch: char,
    },
    Open {
        tag: usize,
    },
    Close {
        tag: usize,
    },
    /// A tag that adds nothing (self-closing).
    Skip,
}

enum TextOut {
    /// Copy the input bytes of the token.
    Source,
    Escaped(&'static str),
}

fn tag_index(name: &str) -> Option<usize> {
    ALLOWED_TAGS
        .iter()
        .position(|t| t.eq_ignore_ascii_case(name))
}

fn close_tag_cost(tag: usize) -> usize {
    ALLOWED_TAGS.get(tag).map_or(0, |t| t.len() + 3)
}

fn push_close_tag(out: &mut String, tag: usize) {
    out.push_str("</");
    out.push_str(ALLOWED_TAGS.get(tag).copied().unwrap_or("b"));
    out.push('>');
}

/// Whether Telegram lets `tag` open inside the open tags in `mask` (`top` the
/// innermost): nothing inside `code`, only `code` directly inside `pre`, no
/// link in a link or quote in a quote, no `code`/`pre` in a link.
fn may_nest(tag: usize, top: Option<usize>, mask: u32) -> bool {
    let name = |t: usize| ALLOWED_TAGS.get(t).copied().unwrap_or("");
    let has = |n: &str| tag_index(n).is_some_and(|t| mask & (1u32 << t) != 0);
    let me = name(tag);
    if has("code") {
        return false;
    }
    if has("pre") {
        return me == "code" && top.map(name) == Some("pre");
    }
    match me {
        "a" => !has("a"),
        "blockquote" => !has("blockquote"),
        "code" | "pre" => !has("a"),
        _ => true,
    }
}

fn valid_entity(e: &str) -> bool {
    let Some(body) = e.strip_prefix('&').and_then(|r| r.strip_suffix(';')) else {
        return false;
    };
    if matches!(body, "lt" | "gt" | "amp" | "quot") {
        return true;
    }
    if let Some(hex) = body.strip_prefix("#x").or_else(|| body.strip_prefix("#X")) {
        return !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    body.strip_prefix('#')
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Reads the token at byte `pos`; returns it and its end byte.
fn next_token(html: &str, pos: usize) -> (Tok, usize) {
    let rest = html.get(pos..).unwrap_or("");
    let stray = |s: &'static str, ch: char| Tok::Text {
        out: TextOut::Escaped(s),
        visible: true,
        ch,
    };
    match rest.as_bytes().first() {
        None => (Tok::Skip, html.len().max(pos + 1)),
        Some(b'<') => {
            // A tag runs to the next '>' unless another '<' comes first, so
            // scans never overlap.
            let body = rest.get(1..).unwrap_or("");
            let Some(close) = body.find(['<', '>']) else {
                return (stray("&lt;", '<'), pos + 1);
            };
            if body.as_bytes().get(close) != Some(&b'>') {
                return (stray("&lt;", '<'), pos + 1);
            }
            let inner = body.get(..close).unwrap_or("");
            let end = pos + 1 + close + 1;
            let (closing, name_part) = match inner.strip_prefix('/') {
                Some(r) => (true, r),
                None => (false, inner),
            };
            let name_len = name_part
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'-')
                .count();
            let name = name_part.get(..name_len).unwrap_or("");
            let after = name_part.get(name_len..).unwrap_or("");
            let well_formed =
                after.is_empty() || after.starts_with(char::is_whitespace) || after == "/";
            match tag_index(name) {
                Some(tag) if well_formed && closing => (Tok::Close { tag }, end),
                Some(_) if well_formed && inner.ends_with('/') => (Tok::Skip, end),
                Some(tag) if well_formed => (Tok::Open { tag }, end),
                _ => (stray("&lt;", '<'), pos + 1),
            }
        }
        Some(b'&') => {
            let n = rest
                .bytes()
                .take(MAX_ENTITY_BYTES)
                .take_while(u8::is_ascii)
                .count();
            let window = rest.get(..n).unwrap_or("");
            match window.find(';') {
                Some(semi) if valid_entity(window.get(..=semi).unwrap_or("")) => (
                    Tok::Text {
                        out: TextOut::Source,
                        visible: true,
                        ch: '&',
                    },
                    pos + semi + 1,
                ),
                _ => (stray("&amp;", '&'), pos + 1),
            }
        }
        Some(b'>') => (stray("&gt;", '>'), pos + 1),
        Some(_) => {
            let c = rest.chars().next().unwrap_or(' ');
            (
                Tok::Text {
                    out: TextOut::Source,
                    visible: !c.is_whitespace(),
                    ch: c,
                },
                pos + c.len_utf8(),
            )
        }
    }
}

/// A place a chunk may end: input byte, chunk byte length, stack there.
#[derive(Clone, Copy)]
struct Cut {
    pos: usize,
    buf_len: usize,
    stack: usize,
}

/// Splits Telegram HTML into chunks of at most `limit_utf16` UTF-16 code units
/// each, cutting after a blank line, else a newline, else a space, and inside a
/// word only when nothing else fits; never inside a tag or an entity.
///
/// Tags open at a cut are closed at the end of the chunk and reopened (same
/// attributes) at the start of the next; the limit counts them. Every chunk is
/// valid on its own: unknown tags and stray `<`, `>`, `&` are escaped,
/// unmatched closing tags dropped, misnested ones closed in order. Chunks with
/// no visible text are dropped.
pub fn split_html(html: &str, limit_utf16: usize) -> Vec<String> {
    let limit = limit_utf16.max(MIN_SPLIT_LIMIT_UTF16);
    let max_tag_cost = limit / 4;
    let max_nest_cost = limit / 2;
    let mut nodes: Vec<Node> = Vec::new();
    let mut chunks = Vec::new();
    let mut pos = 0;
    let mut stack = NO_NODE;

    while pos < html.len() {
        let mut buf = String::new();
        let mut chain = Vec::new();
        let mut at = stack;
        while let Some(n) = nodes.get(at) {
            chain.push(n);
            at = n.parent;
        }
        for n in chain.iter().rev() {
            buf.push_str(html.get(n.open_start..n.open_end).unwrap_or(""));
        }
        let start_pos = pos;
        let mut cost = nodes.get(stack).map_or(0, |n| n.open_cost);
        let mut visible = false;
        let mut newlines = 0;
        let mut best: [Option<Cut>; 3] = [None; 3];
        let mut cut: Option<Cut> = None;

        while pos < html.len() {
            let (tok, end) = next_token(html, pos);
            let close_now = nodes.get(stack).map_or(0, |n| n.close_cost);
            match tok {
                Tok::Skip => pos = end,
                Tok::Text {
                    out,
                    visible: v,
                    ch,
                } => {
                    let piece = match out {
                        TextOut::Source => html.get(pos..end).unwrap_or(""),
                        TextOut::Escaped(s) => s,
                    };
                    let w = utf16_len(piece);
                    if cost + w + close_now > limit {
                        if pos == start_pos {
                            pos = end; // cannot happen with the clamp; never stall
                            continue;
                        }
                        cut = best.iter().flatten().next().copied();
                        break;
                    }
                    buf.push_str(piece);
                    cost += w;
                    pos = end;
                    if v {
                        visible = true;
                        newlines = 0;
                    } else if visible
                        && let Some(class) = boundary_after(ch, &mut newlines)
                        && let Some(slot) = best.get_mut(class as usize)
                    {
                        *slot = Some(Cut {
                            pos,
                            buf_len: buf.len(),
                            stack,
                        });
                    }
                }
                Tok::Open { tag } => {
                    let text = html.get(pos..end).unwrap_or("");
                    let w = utf16_len(text);
                    let (parent_open, parent_mask) =
                        nodes.get(stack).map_or((0, 0), |n| (n.open_cost, n.mask));
                    let open_cost = parent_open + w;
                    let close_cost = close_now + close_tag_cost(tag);
                    let top = nodes.get(stack).map(|n| n.tag);
                    if w > max_tag_cost
                        || open_cost + close_cost > max_nest_cost
                        || !may_nest(tag, top, parent_mask)
                    {
                        pos = end; // dropped: too long, too deep or not allowed here
                        continue;
                    }
                    if cost + w + close_cost > limit {
                        if pos == start_pos {
                            pos = end;
                            continue;
                        }
                        cut = best.iter().flatten().next().copied();
                        break;
                    }
                    nodes.push(Node {
                        parent: stack,
                        open_start: pos,
                        open_end: end,
                        tag,
                        open_cost,
                        close_cost,
                        mask: parent_mask | (1u32 << tag),
                    });
                    stack = nodes.len() - 1;
                    buf.push_str(text);
                    cost += w;
                    pos = end;
                }
                Tok::Close { tag } => {
                    pos = end;
                    let open = nodes
                        .get(stack)
                        .is_some_and(|n| n.mask & (1u32 << tag) != 0);
                    if !open {
                        continue; // unmatched: dropped
                    }
                    // Close everything down to the matching tag; the total
                    // cost is unchanged (those closings were already counted).
                    while let Some(n) = nodes.get(stack) {
                        push_close_tag(&mut buf, n.tag);
                        cost += close_tag_cost(n.tag);
                        stack = n.parent;
                        if n.tag == tag {
                            break;
                        }
                    }
                }
            }
        }

        let (end_pos, end_len, end_stack, keep) = match cut {
            Some(c) => (c.pos, c.buf_len, c.stack, true),
            None => (pos, buf.len(), stack, visible),
        };
        buf.truncate(end_len);
        let mut at = end_stack;
        while let Some(n) = nodes.get(at) {
            push_close_tag(&mut buf, n.tag);
            at = n.parent;
        }
        if keep {
            chunks.push(buf);
        }
        pos = end_pos;
        stack = end_stack;
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(s: &str) -> String {
        markdown_to_html(s)
    }

    /// Checks `s` is valid Telegram HTML: allowed tags only, every tag closed
    /// and properly nested, nothing inside `code`, `pre` holding at most one
    /// `code`, no nested links or quotes, no stray `<`, `>` or `&`.
    fn check_html(s: &str) -> Result<(), String> {
        const NAMES: [&str; 16] = ALLOWED_TAGS;
        let mut stack: Vec<String> = Vec::new();
        let mut i = 0;
        let b = s.as_bytes();
        while i < b.len() {
            match b[i] {
                b'<' => {
                    let end = i + s[i..].find('>').ok_or(format!("unclosed tag at {i}"))?;
                    let inner = &s[i + 1..end];
                    if inner.contains('<') {
                        return Err(format!("'<' inside tag at {i}: {inner:?}"));
                    }
                    if let Some(name) = inner.strip_prefix('/') {
                        let top = stack.pop().ok_or(format!("close without open: {inner}"))?;
                        if top != name {
                            return Err(format!("</{name}> closes <{top}>"));
                        }
                    } else {
                        let name = inner.split_whitespace().next().unwrap_or("").to_string();
                        if !NAMES.contains(&name.as_str()) {
                            return Err(format!("unknown tag <{inner}>"));
                        }
                        match stack.last().map(String::as_str) {
                            Some("code") => return Err("tag inside code".into()),
                            Some("pre") if name != "code" => return Err("tag inside pre".into()),
                            _ => {}
                        }
                        if (name == "a" || name == "blockquote") && stack.contains(&name) {
                            return Err(format!("nested {name}"));
                        }
                        stack.push(name);
                    }
                    i = end + 1;
                }
                b'>' => return Err(format!("stray '>' at {i}")),
                b'&' => {
                    let semi = s[i..].find(';').ok_or(format!("stray '&' at {i}"))?;
                    if semi > MAX_ENTITY_BYTES || !valid_entity(&s[i..=i + semi]) {
                        return Err(format!("bad entity at {i}"));
                    }
                    i += semi + 1;
                }
                _ => i += 1,
            }
        }
        if stack.is_empty() {
            Ok(())
        } else {
            Err(format!("unclosed: {stack:?}"))
        }
    }

    fn assert_html(s: &str) {
        if let Err(e) = check_html(s) {
            panic!("invalid html ({e}): {s:?}");
        }
    }

    /// Text without tags and whitespace: what a reader sees, minus layout.
    fn content(html: &str) -> String {
        let mut out = String::new();
        let mut in_tag = false;
        for c in html.chars() {
            match c {
                '<' => in_tag = true,
                '>' if in_tag => in_tag = false,
                c if !in_tag && !c.is_whitespace() => out.push(c),
                _ => {}
            }
        }
        out
    }

    /// `chunks` are `input` in order with only whitespace between them.
    fn assert_reassembles(input: &str, chunks: &[String]) {
        let mut pos = 0;
        for c in chunks {
            while !input[pos..].starts_with(c.as_str()) {
                let ch = input[pos..]
                    .chars()
                    .next()
                    .expect("chunk not found in input");
                assert!(ch.is_whitespace(), "non-whitespace skipped before {c:?}");
                pos += ch.len_utf8();
            }
            pos += c.len();
        }
        assert!(input[pos..].trim().is_empty(), "input tail lost");
    }

    fn check_split_html(input: &str, limit: usize) -> Vec<String> {
        let chunks = split_html(input, limit);
        let eff = limit.max(MIN_SPLIT_LIMIT_UTF16);
        for c in &chunks {
            assert!(utf16_len(c) <= eff, "chunk over {eff}: {}", utf16_len(c));
            assert!(!content(c).is_empty(), "empty chunk {c:?}");
            assert_html(c);
        }
        chunks
    }

    fn check_split_plain(input: &str, limit: usize) -> Vec<String> {
        let chunks = split_plain(input, limit);
        let eff = limit.max(MIN_SPLIT_LIMIT_UTF16);
        for c in &chunks {
            assert!(utf16_len(c) <= eff, "chunk over {eff}");
            assert!(!c.trim().is_empty(), "whitespace-only chunk");
        }
        assert_reassembles(input, &chunks);
        chunks
    }

    use crate::testkit::XorShift;

    // --- markdown_to_html -------------------------------------------------

    #[test]
    fn bold_both_markers() {
        assert_eq!(md("**a** and __b__"), "<b>a</b> and <b>b</b>");
    }

    #[test]
    fn italic_both_markers() {
        assert_eq!(md("*a* and _b_"), "<i>a</i> and <i>b</i>");
    }

    #[test]
    fn bold_italic_nesting() {
        assert_eq!(md("***x***"), "<b><i>x</i></b>");
        assert_eq!(md("**a *b* c**"), "<b>a <i>b</i> c</b>");
        assert_eq!(md("*a **b** c*"), "<i>a <b>b</b> c</i>");
    }

    #[test]
    fn intraword_markers_stay_literal() {
        assert_eq!(md("snake_case_words"), "snake_case_words");
        assert_eq!(md("call my_func_name() now"), "call my_func_name() now");
        assert_eq!(md("2*3*4 = 24"), "2*3*4 = 24");
        assert_eq!(md("a * b * c"), "a * b * c");
        assert_eq!(md("x**2 + y**2"), "x**2 + y**2");
    }

    #[test]
    fn strikethrough() {
        assert_eq!(md("~~gone~~ here"), "<s>gone</s> here");
        assert_eq!(md("~5 minutes"), "~5 minutes");
        assert_eq!(md("~~~x~~~"), "~~~x~~~");
    }

    #[test]
    fn inline_code_is_escaped_and_not_formatted() {
        assert_eq!(
            md("run `a<b && **c**`"),
            "run <code>a&lt;b &amp;&amp; **c**</code>"
        );
        assert_eq!(md("`` a`b ``"), "<code>a`b</code>");
        assert_eq!(md("**see `x`**"), "<b>see <code>x</code></b>");
    }

    #[test]
    fn fenced_code_block_with_language() {
        let out = md("Code:\n```rust\nfn f() { a < b && **c** }\n```\nafter");
        assert_eq!(
            out,
            "Code:\n<pre><code class=\"language-rust\">fn f() { a &lt; b &amp;&amp; **c** }</code></pre>\nafter"
        );
    }

    #[test]
    fn fenced_code_block_without_language_and_blank_lines() {
        assert_eq!(md("```\na\n\n_b_\n```"), "<pre>a\n\n_b_</pre>");
        assert_eq!(md("~~~\nx\n~~~"), "<pre>x</pre>");
    }

    #[test]
    fn unclosed_fence_runs_to_end() {
        assert_eq!(
            md("```py\nprint(1)\n# c"),
            "<pre><code class=\"language-py\">print(1)\n# c</code></pre>"
        );
        assert_eq!(md("a\n```"), "a\n```");
        assert_eq!(md("```\n\n```\nb"), "b");
    }

    #[test]
    fn indented_fence_strips_indent() {
        assert_eq!(md("- x\n  ```\n  code\n  ```"), "• x\n<pre>code</pre>");
    }

    #[test]
    fn fence_language_is_sanitised() {
        let out = md("```c\"><b>x\ny\n```");
        assert_eq!(out, "<pre><code class=\"language-cbx\">y</code></pre>");
        assert_html(&out);
    }

    #[test]
    fn links() {
        assert_eq!(
            md("[site](https://e.com/a)"),
            "<a href=\"https://e.com/a\">site</a>"
        );
        assert_eq!(
            md("[q](http://e.com/?a=1&b=\"2\")"),
            "<a href=\"http://e.com/?a=1&amp;b=&quot;2&quot;\">q</a>"
        );
        assert_eq!(
            md("[me](tg://user?id=1)"),
            "<a href=\"tg://user?id=1\">me</a>"
        );
        assert_eq!(
            md("[mail](mailto:a@b.c)"),
            "<a href=\"mailto:a@b.c\">mail</a>"
        );
        assert_eq!(
            md("[Rust](https://en.wikipedia.org/wiki/Rust_(language))"),
            "<a href=\"https://en.wikipedia.org/wiki/Rust_(language)\">Rust</a>"
        );
        assert_eq!(
            md("[**b** `c`](https://x.y)"),
            "<a href=\"https://x.y\"><b>b</b> c</a>"
        );
    }

    #[test]
    fn links_with_other_schemes_stay_literal() {
        assert_eq!(md("[x](javascript:alert(1))"), "[x](javascript:alert(1))");
        assert_eq!(md("[f](./file.md)"), "[f](./file.md)");
        assert_eq!(md("[](https://x.y)"), "[](https://x.y)");
        assert_eq!(md("[a] (b)"), "[a] (b)");
    }

    #[test]
    fn bare_urls_are_not_formatted() {
        assert_eq!(
            md("see https://e.com/_a_/b_c*d*"),
            "see https://e.com/_a_/b_c*d*"
        );
        assert_eq!(md("<https://e.com/x_y_>"), "https://e.com/x_y_");
        assert_eq!(md("(https://e.com/a_b_c)."), "(https://e.com/a_b_c).");
    }

    #[test]
    fn headings_are_bold_lines() {
        assert_eq!(md("# Title\ntext"), "<b>Title</b>\ntext");
        assert_eq!(md("### **Bold** & _it_ ###"), "<b>Bold &amp; <i>it</i></b>");
        assert_eq!(md("#hashtag"), "#hashtag");
        assert_eq!(md("#"), "#");
        assert_eq!(md("####### seven"), "####### seven");
    }

    #[test]
    fn bullets() {
        assert_eq!(md("- a\n* b\n+ c"), "• a\n• b\n• c");
        assert_eq!(md("  - nested *it*"), "  • nested <i>it</i>");
        assert_eq!(md("-notabullet"), "-notabullet");
        assert_eq!(md("1. one"), "1. one");
    }

    #[test]
    fn thematic_break() {
        assert_eq!(md("a\n---\nb"), format!("a\n{RULE_TEXT}\nb"));
        assert_eq!(md("* * *"), RULE_TEXT);
    }

    #[test]
    fn quotes_become_one_blockquote() {
        assert_eq!(
            md("> a\n> **b**\nc"),
            "<blockquote>a\n<b>b</b></blockquote>\nc"
        );
        assert_eq!(md("x\n>q"), "x\n<blockquote>q</blockquote>");
        assert_eq!(md("> - item"), "<blockquote>• item</blockquote>");
        assert_eq!(
            md("> a\n```\nc\n```"),
            "<blockquote>a</blockquote>\n<pre>c</pre>"
        );
    }

    #[test]
    fn escapes_everywhere() {
        assert_eq!(md("a < b > c & d"), "a &lt; b &gt; c &amp; d");
        assert_eq!(md("# <T> & co"), "<b>&lt;T&gt; &amp; co</b>");
        assert_eq!(md("- <li>"), "• &lt;li&gt;");
        assert_eq!(md("<b>not html</b>"), "&lt;b&gt;not html&lt;/b&gt;");
        assert_eq!(md("&amp;"), "&amp;amp;");
    }

    #[test]
    fn backslash_escapes() {
        assert_eq!(md(r"\*not italic\*"), "*not italic*");
        assert_eq!(md(r"a\\b \q"), r"a\b \q");
        assert_eq!(md(r"\<x"), "&lt;x");
    }

    #[test]
    fn unclosed_markers_stay_literal() {
        assert_eq!(md("**bold"), "**bold");
        assert_eq!(md("*a **b*"), "<i>a **b</i>");
        assert_eq!(md("`lone backtick"), "`lone backtick");
        assert_eq!(md("``` not a fence ```"), "<code>not a fence</code>");
        assert_eq!(md("~~x"), "~~x");
        assert_eq!(md("** spaced **"), "** spaced **");
        assert_eq!(md("a **** b"), "a **** b");
        assert_eq!(md("[link](http://x"), "[link](http://x");
    }

    #[test]
    fn crlf_and_empty_input() {
        assert_eq!(md(""), "");
        assert_eq!(md("**a**\r\nb\r\n"), "<b>a</b>\nb\n");
    }

    #[test]
    fn deep_markers_do_not_recurse() {
        let s = "**a *".repeat(50_000) + &"* b**".repeat(50_000);
        assert_html(&md(&s));
        let s = "> ".repeat(100_000);
        assert_html(&md(&s));
        let s = "[".repeat(100_000) + &"](http://x)".repeat(10);
        assert_html(&md(&s));
    }

    // --- splitting ----------------------------------------------------------

    fn long_reply() -> String {
        let words = [
            "hello",
            "世界",
            "😀",
            "naïve",
            "🦀🦀",
            "código",
            "テスト",
            "ok.",
        ];
        let mut rng = XorShift(7);
        let mut s = String::new();
        while utf16_len(&s) < 10_000 {
            for _ in 0..rng.index(40) + 5 {
                s.push_str(words[rng.index(words.len())]);
                s.push(' ');
            }
            s.push_str(match rng.index(4) {
                0 => "\n\n",
                1 => "\n",
                _ => "",
            });
        }
        s
    }

    #[test]
    fn ten_thousand_char_reply_splits_plain() {
        let s = long_reply();
        let chunks = check_split_plain(&s, TELEGRAM_MAX_MESSAGE_UTF16);
        assert!(chunks.len() >= 3);
        assert_eq!(chunks.concat(), s);
    }

    #[test]
    fn ten_thousand_char_reply_splits_html() {
        let s = long_reply()
            .replace("hello", "**hello** <&>")
            .replace("ok.", "[ok](https://e.com/?a&b)");
        let html = md(&s);
        assert_html(&html);
        let chunks = check_split_html(&html, TELEGRAM_MAX_MESSAGE_UTF16);
        assert!(chunks.len() >= 3);
        assert_eq!(content(&chunks.concat()), content(&html));
    }

    #[test]
    fn astral_chars_count_two_and_are_never_cut() {
        let s = "😀".repeat(3000);
        let chunks = check_split_plain(&s, TELEGRAM_MAX_MESSAGE_UTF16);
        assert_eq!(chunks.len(), 2);
        assert_eq!(utf16_len(&chunks[0]), 4096);
        assert_eq!(chunks.concat(), s);
        let chunks = check_split_html(&s, 101);
        assert!(
            chunks
                .iter()
                .all(|c| utf16_len(c) == 100 || c == chunks.last().unwrap())
        );
    }

    #[test]
    fn split_prefers_paragraph_then_line_then_word() {
        let para = format!(
            "{}\n\n{}\n{}",
            "a".repeat(3000),
            "b".repeat(500),
            "c ".repeat(600)
        );
        assert_eq!(
            split_plain(&para, 4096)[0],
            format!("{}\n\n", "a".repeat(3000))
        );
        let line = format!(
            "{}\n{} {}",
            "a".repeat(3000),
            "b".repeat(500),
            "c".repeat(1000)
        );
        assert_eq!(
            split_plain(&line, 4096)[0],
            format!("{}\n", "a".repeat(3000))
        );
        let word = format!("{} {}", "a".repeat(3000), "b".repeat(2000));
        assert_eq!(
            split_plain(&word, 4096)[0],
            format!("{} ", "a".repeat(3000))
        );
        let hard = "x".repeat(10_000);
        let chunks = check_split_plain(&hard, 4096);
        assert_eq!(
            chunks.iter().map(String::len).collect::<Vec<_>>(),
            [4096, 4096, 1808]
        );
    }

    #[test]
    fn split_plain_small_inputs() {
        assert!(split_plain("", 4096).is_empty());
        assert!(split_plain(" \n\n ", 4096).is_empty());
        assert_eq!(split_plain("hi", 4096), ["hi"]);
        // A blank run longer than the limit loses its whitespace-only chunk.
        let s = format!("{}word", "\n".repeat(100));
        let chunks = check_split_plain(&s, 64);
        assert_eq!(chunks, [format!("{}word", "\n".repeat(36))]);
    }

    #[test]
    fn split_html_reopens_tags_with_attributes() {
        let html = format!(
            "<a href=\"https://e.com\"><b>{}</b></a>",
            "word ".repeat(100)
        );
        let chunks = check_split_html(&html, 100);
        assert!(chunks.len() > 5);
        for c in &chunks {
            assert!(c.starts_with("<a href=\"https://e.com\"><b>"), "{c}");
            assert!(c.ends_with("</b></a>"), "{c}");
        }
        assert_eq!(content(&chunks.concat()), content(&html));
    }

    #[test]
    fn split_html_keeps_code_language() {
        let html = md(&format!("```rust\n{}```", "let x = 1;\n".repeat(50)));
        for c in check_split_html(&html, 120) {
            assert!(c.starts_with("<pre><code class=\"language-rust\">"), "{c}");
            assert!(c.ends_with("</code></pre>"));
        }
    }

    #[test]
    fn split_html_never_cuts_entities() {
        let html = "&amp;&lt;&#128512;&#x1F600;".repeat(500);
        let chunks = check_split_html(&html, 100);
        assert_eq!(chunks.concat(), html);
    }

    #[test]
    fn split_html_sanitises_input() {
        assert_eq!(
            split_html("a < b & c <foo> </b> &bogus; x", 4096),
            ["a &lt; b &amp; c &lt;foo&gt;  &amp;bogus; x"]
        );
        assert_eq!(split_html("<b><i>x</b></i>", 4096), ["<b><i>x</i></b>"]);
        assert_eq!(split_html("<b>open", 4096), ["<b>open</b>"]);
        assert_eq!(split_html("<B>x</B>", 4096), ["<B>x</b>"]);
        assert!(split_html("<b> \n </b>", 4096).is_empty());
    }

    #[test]
    fn split_html_drops_overlong_and_too_deep_tags() {
        let long = format!("<a href=\"https://e.com/{}\">x</a>", "p".repeat(5000));
        assert_eq!(check_split_html(&long, 4096), ["x"]);
        let deep = format!("{}x{}", "<b><i>".repeat(5000), "</i></b>".repeat(5000));
        let chunks = check_split_html(&deep, 4096);
        assert_eq!(content(&chunks.concat()), "x");
    }

    #[test]
    fn degenerate_limits_terminate() {
        let s = md(&long_reply());
        for limit in [0, 1, 2, 15, 63, 64, 65] {
            check_split_html(&s, limit);
            check_split_plain(&s, limit);
        }
    }

    #[test]
    fn fuzz_markdown_and_splitting() {
        const ALPHABET: [&str; 44] = [
            "*",
            "**",
            "_",
            "__",
            "~",
            "~~",
            "`",
            "```",
            "```rust\n",
            "[",
            "]",
            "(",
            ")",
            "](",
            "](https://e.com/",
            "#",
            "# ",
            "- ",
            "+ ",
            "> ",
            "<",
            ">",
            "&",
            "&amp;",
            "\\",
            "|",
            " ",
            " ",
            "\n",
            "\n\n",
            "\t",
            "\r",
            "a",
            "word",
            "snake_case",
            "2*3",
            "😀",
            "中文",
            "é",
            "https://x.y/a_b",
            "<b>",
            "</i>",
            "<a href=\"https://q\">",
            "&#x1F600;",
        ];
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..3000 {
            let mut s = String::new();
            for _ in 0..rng.index(200) {
                s.push_str(ALPHABET[rng.index(ALPHABET.len())]);
            }
            let limit = if rng.index(4) == 0 {
                rng.index(20)
            } else {
                rng.index(300)
            };

            let html = md(&s);
            assert_html(&html);
            let chunks = check_split_html(&html, limit);
            assert_eq!(content(&chunks.concat()), content(&html), "input {s:?}");

            // Raw, possibly broken HTML must still come out valid.
            check_split_html(&s, limit);
            check_split_plain(&s, limit);
        }
    }

    #[test]
    fn one_megabyte_inputs_complete() {
        let mut rng = XorShift(42);
        let pieces = [
            "**b** ",
            "_i_ ",
            "`c` ",
            "snake_case ",
            "😀",
            "中",
            "<&> ",
            "\n",
            "\n\n",
            "[l](https://e.com) ",
        ];
        let mut s = String::new();
        while s.len() < 1_000_000 {
            s.push_str(pieces[rng.index(pieces.len())]);
        }
        let html = md(&s);
        check_split_html(&html, TELEGRAM_MAX_MESSAGE_UTF16);
        check_split_plain(&s, TELEGRAM_MAX_MESSAGE_UTF16);
        // Pathological single lines.
        for unit in ["` `` ``` ", "[a](b", "*a _b ~~c ", "<", "&", "<b>", "x"] {
            let line = unit.repeat(1_000_000 / unit.len());
            assert_html(&md(&line));
            check_split_html(&line, TELEGRAM_MAX_MESSAGE_UTF16);
            check_split_plain(&line, TELEGRAM_MAX_MESSAGE_UTF16);
        }
    }
}
