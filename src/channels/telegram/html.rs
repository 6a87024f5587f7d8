//! Telegram HTML both ways: model markdown to Bot API HTML ([`markdown_to_html`]), and
//! that HTML back to the text Telegram shows for it ([`html_to_plain`]).
//!
//! Why it exists: models answer in markdown, Telegram renders only a small HTML
//! subset (`parse_mode=HTML`). When Telegram refuses our HTML anyway, the plain-text
//! fallback (`reply`) and plain previews (`preview`) send what the HTML would have
//! shown. Pure text in, text out, so everything here can be fuzzed.
//!
//! What it will not do: tables, nested quotes, images, numbered-list
//! renumbering, raw HTML passthrough (a `<` in the markdown is shown as a `<`),
//! emphasis spanning several lines, and intraword emphasis (`2*3*4`,
//! `snake_case_name` stay as written). An unclosed fenced code block runs to the
//! end of the reply, as in CommonMark; every other unclosed marker stays literal.
//! [`html_to_plain`] reads our own subset, not HTML at large.
//!
//! # Bounds
//! - A code block's language name is cut to [`MAX_CODE_LANG_BYTES`].
//! - [`html_to_plain`]'s output is never longer than its input (tags are dropped,
//!   entities only shrink, a link's address replaces the tag it came from).
//! - Time is linear in the input (no backtracking, no recursion on input);
//!   memory is proportional to the input.
//!
//! # Threads
//! Pure: no I/O, no shared state. Runs wherever it is called (the sender thread, a
//! worker, tests).

use std::collections::HashMap;

/// Longest language name kept from a code fence's info string.
pub const MAX_CODE_LANG_BYTES: usize = 32;

/// What a thematic break (`---`, `***`) renders as.
const RULE_TEXT: &str = "──────────";

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
// Telegram HTML back to what Telegram shows
// ---------------------------------------------------------------------------

/// The text Telegram would show for `html` (our own subset): tags dropped, entities
/// decoded, a link's address kept after its text.
pub fn html_to_plain(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    let mut href: Option<String> = None;
    let mut link_start = 0;
    while let Some(c) = rest.chars().next() {
        match c {
            '<' => {
                let end = rest.find('>').map_or(rest.len(), |i| i + 1);
                let tag = &rest[..end];
                if let Some(attrs) = tag.strip_prefix("<a ") {
                    href = attrs
                        .split_once("href=\"")
                        .and_then(|(_, v)| v.split_once('"'))
                        .map(|(v, _)| decode_entities(v));
                    link_start = out.len();
                } else if tag == "</a>"
                    && let Some(h) = href.take()
                    && out.get(link_start..) != Some(h.as_str())
                {
                    out.push_str(" (");
                    out.push_str(&h);
                    out.push(')');
                }
                rest = &rest[end..];
            }
            '&' => {
                let end = rest
                    .char_indices()
                    .take(12)
                    .find(|(_, c)| *c == ';')
                    .map(|(i, _)| i + 1);
                match end.and_then(|e| entity(&rest[..e]).map(|ch| (e, ch))) {
                    Some((e, ch)) => {
                        out.push(ch);
                        rest = &rest[e..];
                    }
                    None => {
                        out.push('&');
                        rest = &rest[1..];
                    }
                }
            }
            c => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

fn decode_entities(s: &str) -> String {
    html_to_plain(&s.replace('<', "&lt;"))
}

/// The character of one `&…;` entity.
fn entity(e: &str) -> Option<char> {
    let body = e.strip_prefix('&')?.strip_suffix(';')?;
    match body {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => {
            let num = body.strip_prefix('#')?;
            let n = match num.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => num.parse::<u32>().ok()?,
            };
            char::from_u32(n)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channels::telegram::split::check::{
        assert_html, check_split_html, check_split_plain, content, long_reply,
    };
    use crate::channels::telegram::split::{TELEGRAM_MAX_MESSAGE_UTF16, utf16_len};
    use crate::testkit::XorShift;

    fn md(s: &str) -> String {
        markdown_to_html(s)
    }

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

    // --- markdown_to_html and the splitters ----------------------------------

    #[test]
    fn long_markdown_replies_split_into_valid_messages() {
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
    fn fuzz_markdown_output_is_valid_and_splits() {
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
            // What Telegram shows: no tag left, never longer than the HTML.
            let plain = html_to_plain(&html);
            assert!(plain.len() <= html.len(), "input {s:?}");
            if !s.contains(['<', '&']) {
                assert!(!plain.contains('<'), "a tag survived: {plain:?}");
            }
        }
    }

    #[test]
    fn plain_text_survives_markdown_and_back() {
        // Text without markdown syntax: escaped on the way in, decoded on the way out.
        let alphabet = [
            "a", "word", " ", "\n", "<", "&", "\"", "'", "é", "😀", "x>y", "&amp;", "&lt;", ";",
        ];
        let mut rng = XorShift(0x5eed);
        for _ in 0..3000 {
            let mut s = String::new();
            for _ in 0..rng.index(60) {
                s.push_str(alphabet[rng.index(alphabet.len())]);
            }
            assert_eq!(html_to_plain(&md(&s)), s);
        }
    }

    #[test]
    fn one_megabyte_markdown_completes() {
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
        assert_html(&html);
        let chunks = check_split_html(&html, TELEGRAM_MAX_MESSAGE_UTF16);
        assert_eq!(content(&chunks.concat()), content(&html));
        // Pathological single lines.
        for unit in ["` `` ``` ", "[a](b", "*a _b ~~c ", "<", "&", "<b>", "x"] {
            let line = unit.repeat(1_000_000 / unit.len());
            assert_html(&md(&line));
        }
    }

    // --- html_to_plain --------------------------------------------------------

    #[test]
    fn html_to_plain_decodes_what_the_formatter_writes() {
        assert_eq!(
            html_to_plain("a &lt;b&gt; &amp;&quot;&#39;&#x41;"),
            "a <b> &\"'A"
        );
        assert_eq!(
            html_to_plain("<pre><code class=\"x\">1 &lt; 2</code></pre>"),
            "1 < 2"
        );
        assert_eq!(
            html_to_plain("<a href=\"https://a.b/?x=1&amp;y\">https://a.b/?x=1&amp;y</a>"),
            "https://a.b/?x=1&y"
        );
        assert_eq!(
            html_to_plain("&bogus; & &#xZZ; <unterminated"),
            "&bogus; & &#xZZ; "
        );
    }

    /// Generated HTML of our subset and the text Telegram shows for it.
    fn generated_html(rng: &mut XorShift) -> (String, String) {
        // Text pieces as written in HTML, and as shown.
        const TEXT: [(&str, &str); 12] = [
            ("a", "a"),
            ("word", "word"),
            (" ", " "),
            ("\n", "\n"),
            ("&lt;", "<"),
            ("&gt;", ">"),
            ("&amp;", "&"),
            ("&quot;", "\""),
            ("&#39;", "'"),
            ("&#x1F600;", "😀"),
            ("é;", "é;"),
            ("\"", "\""),
        ];
        const TAGS: [&str; 10] = [
            "<b>",
            "</b>",
            "<i>",
            "</i>",
            "<code>",
            "</code>",
            "<pre>",
            "<pre><code class=\"language-rust\">",
            "</code></pre>",
            "<blockquote>",
        ];
        const URLS: [&str; 3] = ["https://e.com/?a=1&b=\"2\"", "tg://user?id=1", "a<b"];
        let mut html = String::new();
        let mut shown = String::new();
        let text = |rng: &mut XorShift, html: &mut String, shown: &mut String| {
            let (h, s) = TEXT[rng.index(TEXT.len())];
            html.push_str(h);
            shown.push_str(s);
        };
        for _ in 0..rng.index(40) {
            match rng.index(4) {
                0 => html.push_str(TAGS[rng.index(TAGS.len())]),
                1 => {
                    let url = URLS[rng.index(URLS.len())];
                    html.push_str("<a href=\"");
                    push_attr_escaped(&mut html, url);
                    html.push_str("\">");
                    let start = shown.len();
                    if rng.index(3) == 0 {
                        push_escaped(&mut html, url);
                        shown.push_str(url);
                    } else {
                        for _ in 0..rng.index(4) {
                            text(rng, &mut html, &mut shown);
                        }
                    }
                    html.push_str("</a>");
                    if shown.get(start..) != Some(url) {
                        shown.push_str(" (");
                        shown.push_str(url);
                        shown.push(')');
                    }
                }
                _ => text(rng, &mut html, &mut shown),
            }
        }
        (html, shown)
    }

    #[test]
    fn html_to_plain_shows_exactly_the_text_of_generated_html() {
        let mut rng = XorShift(0xA5A5_1234_0F0F_9876);
        for _ in 0..5_000 {
            let (html, shown) = generated_html(&mut rng);
            let plain = html_to_plain(&html);
            assert_eq!(plain, shown, "html {html:?}");
            assert!(plain.len() <= html.len());
            // Escaped again, the text reads back the same (a fixed point).
            let mut again = String::new();
            push_escaped(&mut again, &plain);
            assert_eq!(html_to_plain(&again), plain);
            // Split for sending, the HTML keeps its text and each part its limit.
            let limit = 64 + rng.index(200);
            let chunks = check_split_html(&html, limit);
            assert_eq!(content(&chunks.concat()), content(&html), "html {html:?}");
            check_split_plain(&plain, limit);
        }
    }

    #[test]
    fn random_html_to_plain_is_bounded_and_splits() {
        let alphabet = [
            "<",
            ">",
            "&",
            ";",
            "#",
            "x",
            "a",
            "<a href=\"",
            "\"",
            "</a>",
            "é",
            "😀",
            "&lt;",
            "&#",
        ];
        let mut rng = XorShift(77);
        for _ in 0..5_000 {
            let mut s = String::new();
            for _ in 0..rng.index(16) {
                s.push_str(alphabet[rng.index(alphabet.len())]);
            }
            let plain = html_to_plain(&s);
            // Tags dropped and entities decoded only shrink; a link's address is
            // shorter than the tag it came from.
            assert!(plain.len() <= s.len(), "{s:?} -> {plain:?}");
            assert!(utf16_len(&plain) <= utf16_len(&s), "{s:?} -> {plain:?}");
            // No tag survives: every '<' shown was written as `&lt;` or sat inside
            // a link's address.
            let in_addresses: usize = s
                .split("href=\"")
                .skip(1)
                .map(|v| {
                    v.split(['"', '>'])
                        .next()
                        .unwrap_or("")
                        .matches('<')
                        .count()
                })
                .sum();
            assert!(
                plain.matches('<').count() <= s.matches("&lt;").count() + in_addresses,
                "{s:?} -> {plain:?}"
            );
            if !s.contains(['&', '"']) {
                assert!(!plain.contains('<'), "{s:?} -> {plain:?}");
            }
            // Both ways of sending it respect the limit and keep the text.
            let limit = rng.index(100);
            check_split_plain(&plain, limit);
            check_split_html(&s, limit);
        }
    }
}
