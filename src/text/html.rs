//! HTML to readable text, for `web_fetch` results (and `web_search`'s titles and
//! snippets); [`start_tag_at`] reads one start tag's `class` and `href` for a reader that
//! picks elements by class (`web_search` on DuckDuckGo's result page).
//!
//! Why: a fetched page is mostly markup, scripts and styles; the model needs the words, and the
//! board's memory and the model's context need them small. [`html_to_text`] keeps the text,
//! turns block elements into line breaks and list items into `- ` lines, keeps link targets
//! after the link text, and decodes character references.
//!
//! What it will not do: build a DOM, run the HTML5 tree-construction algorithm, render tables as
//! grids or understand CSS (`display:none` text is kept). It is a single forward pass over the
//! input with no recursion and no per-element stack, so broken markup (unclosed tags, `<` in
//! text, `>` inside quoted attributes, unterminated comments) cannot make it panic or loop.
//!
//! Dropped with their contents: `script`, `style`, `noscript`, `template`, `svg`, `head`,
//! `iframe`, `object`, `canvas`, and comments. An unclosed `script`/`style`/… drops the rest of
//! the page, as a browser would; an unclosed `head` ends at `<body`, or is not dropped at all.
//!
//! # Bounds
//! - The output holds at most `max_out_bytes` bytes of text, cut at a character boundary; when
//!   text was cut, [`TRUNCATION_MARKER`] is appended (so the result is at most
//!   `max_out_bytes + TRUNCATION_MARKER.len()` bytes). Work stops as soon as the output is full.
//! - Tag names longer than [`MAX_TAG_NAME_BYTES`] are treated as unknown tags; link targets
//!   longer than [`MAX_HREF_BYTES`] are not shown; character references longer than
//!   [`MAX_ENTITY_BYTES`] are left as text.
//! - Time is linear in the input, except that searching for the end of a dropped element is
//!   linear in the rest of the input once per such element.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

/// Appended when the output was cut to `max_out_bytes`.
pub const TRUNCATION_MARKER: &str = "\n[truncated]";

/// Longer tag names are treated as unknown tags.
pub const MAX_TAG_NAME_BYTES: usize = 16;

/// Longer link targets are not appended after the link text.
pub const MAX_HREF_BYTES: usize = 2048;

/// Longer `&…;` sequences are not character references.
pub const MAX_ENTITY_BYTES: usize = 32;

/// Elements dropped with everything inside them.
const DROPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "head", "iframe", "object", "canvas",
];

/// Elements that end the current line.
const LINE_BREAKS: &[&str] = &[
    "div",
    "li",
    "tr",
    "dt",
    "dd",
    "nav",
    "aside",
    "main",
    "form",
    "fieldset",
    "details",
    "summary",
    "figcaption",
    "caption",
    "address",
    "center",
    "option",
    "legend",
];

/// Elements separated from their neighbours by a blank line.
const PARAGRAPHS: &[&str] = &[
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "section",
    "article",
    "header",
    "footer",
    "pre",
    "blockquote",
    "table",
    "ul",
    "ol",
    "dl",
    "hr",
    "figure",
];

/// Reduces `html` to readable text of at most `max_out_bytes` bytes (plus the truncation
/// marker). See the module documentation.
pub fn html_to_text(html: &str, max_out_bytes: usize) -> String {
    let b = html.as_bytes();
    let mut w = Writer::new(max_out_bytes);
    let mut st = State::default();
    let mut i = 0;
    while i < b.len() && !w.full {
        let pre = st.pre_depth > 0;
        match b.get(i) {
            Some(b'<') => i = markup(html, i, &mut w, &mut st),
            Some(b'&') => {
                let rest = html.get(i..).unwrap_or("");
                match decode_entity(rest) {
                    Some((c, len)) => {
                        w.ch(c, pre);
                        i += len;
                    }
                    None => {
                        w.ch('&', pre);
                        i += 1;
                    }
                }
            }
            _ => {
                let end = b
                    .get(i..)
                    .and_then(|r| r.iter().position(|&c| c == b'<' || c == b'&'))
                    .map_or(b.len(), |p| p + i);
                w.text(html.get(i..end).unwrap_or(""), pre);
                i = end;
            }
        }
    }
    w.finish()
}

struct Link {
    href: Option<String>,
    start: usize,
}

/// What the single pass carries from one piece of markup to the next.
#[derive(Default)]
struct State {
    pre_depth: usize,
    link: Option<Link>,
    /// Last results of the searches for `</head` and `<body`, so that many unclosed `<head>`
    /// tags do not search the rest of the page again each time.
    head_close: Memo,
    body_open: Memo,
}

/// A remembered forward search: where the needle was found at or after `from`, if anywhere.
#[derive(Default, Clone, Copy)]
struct Memo {
    searched_from: Option<usize>,
    found: Option<usize>,
}

impl Memo {
    fn find_ci(&mut self, hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
        if let Some(prev) = self.searched_from
            && prev <= from
        {
            match self.found {
                None => return None,
                Some(p) if p >= from => return Some(p),
                Some(_) => {}
            }
        }
        let found = find_ci(hay, from, needle);
        *self = Memo {
            searched_from: Some(from),
            found,
        };
        found
    }
}

/// Handles the markup starting with `<` at `i`; returns where to continue.
fn markup(html: &str, i: usize, w: &mut Writer, st: &mut State) -> usize {
    let b = html.as_bytes();
    let at = |k: usize| b.get(k).copied();
    match at(i + 1) {
        Some(b'!') if b.get(i + 2..i + 4) == Some(b"--") => {
            find(b, i + 4, b"-->").map_or(b.len(), |p| p + 3)
        }
        Some(b'!') if b.get(i + 2..i + 9) == Some(b"[CDATA[") => {
            find(b, i + 9, b"]]>").map_or(b.len(), |p| p + 3)
        }
        Some(b'!' | b'?') => find(b, i + 2, b">").map_or(b.len(), |p| p + 1),
        Some(b'/') if at(i + 2).is_some_and(|c| c.is_ascii_alphabetic()) => {
            let (name, after) = tag_name(b, i + 2);
            let end = find(b, after, b">").map_or(b.len(), |p| p + 1);
            end_tag(&name, w, st);
            end
        }
        Some(c) if c.is_ascii_alphabetic() => {
            let (name, after) = tag_name(b, i + 1);
            let tag = attributes(html, after, name == "a");
            start_tag(html, &name, tag, w, st)
        }
        _ => {
            w.ch('<', st.pre_depth > 0);
            i + 1
        }
    }
}

/// Reads a tag name (lowercased; empty when longer than [`MAX_TAG_NAME_BYTES`]).
fn tag_name(b: &[u8], from: usize) -> (String, usize) {
    let mut j = from;
    while b
        .get(j)
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b':')
    {
        j += 1;
    }
    let raw = b.get(from..j).unwrap_or(&[]);
    let name = if raw.len() > MAX_TAG_NAME_BYTES {
        String::new()
    } else {
        raw.iter().map(|c| c.to_ascii_lowercase() as char).collect()
    };
    (name, j)
}

struct StartTag {
    end: usize,
    self_closing: bool,
    href: Option<String>,
    class: String,
}

/// A start tag found by [`start_tag_at`], for readers that pick elements by class
/// (`tools::search` on a search engine's result page).
#[derive(Debug)]
pub struct Element {
    /// Lowercase; empty when longer than [`MAX_TAG_NAME_BYTES`].
    pub name: String,
    /// The `class` attribute, entity-decoded (empty when absent or longer than
    /// [`MAX_HREF_BYTES`]).
    pub class: String,
    /// The `href` attribute, entity-decoded and trimmed (none when longer than
    /// [`MAX_HREF_BYTES`]).
    pub href: Option<String>,
    /// Just past the tag's `>`.
    pub end: usize,
}

/// The start tag at byte `i` of `html` (a `<` followed by a letter), else `None` (text,
/// an end tag, a comment, a `<` that starts nothing).
pub fn start_tag_at(html: &str, i: usize) -> Option<Element> {
    let b = html.as_bytes();
    if b.get(i) != Some(&b'<') || !b.get(i + 1)?.is_ascii_alphabetic() {
        return None;
    }
    let (name, after) = tag_name(b, i + 1);
    let t = attributes(html, after, true);
    Some(Element {
        name,
        class: t.class,
        href: t.href,
        end: t.end,
    })
}

/// Skips the attributes of a start tag (quoted values may hold `>`), keeping `href` and
/// `class` if asked.
fn attributes(html: &str, mut j: usize, want: bool) -> StartTag {
    let b = html.as_bytes();
    let mut href = None;
    let mut class = String::new();
    let mut self_closing = false;
    loop {
        while b.get(j).is_some_and(|c| c.is_ascii_whitespace()) {
            j += 1;
        }
        match b.get(j) {
            None => break,
            Some(b'>') => {
                j += 1;
                break;
            }
            Some(b'/') => {
                self_closing = b.get(j + 1) == Some(&b'>');
                j += 1;
                continue;
            }
            Some(_) => {}
        }
        self_closing = false;
        let name_start = j;
        j += 1; // at least one byte, so a stray quote or `=` cannot stall the loop
        while b
            .get(j)
            .is_some_and(|c| !c.is_ascii_whitespace() && !matches!(c, b'=' | b'>' | b'/'))
        {
            j += 1;
        }
        let attr = b.get(name_start..j).unwrap_or(&[]);
        let is_href = attr.eq_ignore_ascii_case(b"href");
        let is_class = attr.eq_ignore_ascii_case(b"class");
        let mut k = j;
        while b.get(k).is_some_and(|c| c.is_ascii_whitespace()) {
            k += 1;
        }
        if b.get(k) != Some(&b'=') {
            continue;
        }
        k += 1;
        while b.get(k).is_some_and(|c| c.is_ascii_whitespace()) {
            k += 1;
        }
        let (value_start, value_end, next) = match b.get(k) {
            Some(&q @ (b'"' | b'\'')) => match find(b, k + 1, &[q]) {
                Some(p) => (k + 1, p, p + 1),
                None => (k + 1, b.len(), b.len()),
            },
            _ => {
                let mut e = k;
                while b
                    .get(e)
                    .is_some_and(|c| !c.is_ascii_whitespace() && *c != b'>')
                {
                    e += 1;
                }
                (k, e, e)
            }
        };
        let raw = html.get(value_start..value_end).unwrap_or("");
        if want && (is_href || is_class) && raw.len() <= MAX_HREF_BYTES {
            let mut v = String::with_capacity(raw.len());
            decode_entities_into(raw, &mut v);
            if is_href {
                href = Some(v.trim().to_string());
            } else {
                class = v;
            }
        }
        j = next;
    }
    StartTag {
        end: j,
        self_closing,
        href,
        class,
    }
}

fn start_tag(html: &str, name: &str, tag: StartTag, w: &mut Writer, st: &mut State) -> usize {
    let b = html.as_bytes();
    if DROPPED.contains(&name) && !tag.self_closing {
        let mut close = Vec::with_capacity(name.len() + 2);
        close.extend_from_slice(b"</");
        close.extend_from_slice(name.as_bytes());
        if name == "head" {
            let found = st.head_close.find_ci(b, tag.end, b"</head");
            let body = st.body_open.find_ci(b, tag.end, b"<body");
            return match (found, body) {
                (Some(c), Some(d)) if d < c => d,
                (Some(c), _) => find(b, c, b">").map_or(b.len(), |p| p + 1),
                (None, Some(d)) => d,
                (None, None) => tag.end,
            };
        }
        return match find_ci(b, tag.end, &close) {
            Some(c) => find(b, c, b">").map_or(b.len(), |p| p + 1),
            None => b.len(),
        };
    }
    match name {
        "br" => w.line_break(),
        "li" => {
            w.block(1);
            w.marker("- ");
        }
        "td" | "th" => w.space(),
        "a" => {
            st.link = Some(Link {
                href: tag.href,
                start: w.out.len(),
            })
        }
        "pre" => {
            w.block(2);
            if !tag.self_closing {
                st.pre_depth += 1;
            }
        }
        n if PARAGRAPHS.contains(&n) => w.block(2),
        n if LINE_BREAKS.contains(&n) => w.block(1),
        _ => {}
    }
    tag.end
}

fn end_tag(name: &str, w: &mut Writer, st: &mut State) {
    match name {
        "a" => {
            if let Some(Link {
                href: Some(href),
                start,
            }) = st.link.take()
            {
                let lower = href.to_ascii_lowercase();
                let absolute = lower.starts_with("http://") || lower.starts_with("https://");
                let text = w.out.get(start..).unwrap_or("").trim();
                let same = text == href || text.trim_end_matches('/') == href.trim_end_matches('/');
                if absolute && !same {
                    w.space();
                    w.text("(", false);
                    w.text(&href, false);
                    w.text(")", false);
                }
            }
        }
        "pre" => {
            st.pre_depth = st.pre_depth.saturating_sub(1);
            w.block(2);
        }
        "td" | "th" => w.space(),
        n if PARAGRAPHS.contains(&n) => w.block(2),
        n if LINE_BREAKS.contains(&n) => w.block(1),
        _ => {}
    }
}

/// Builds the output: collapses blanks, caps blank lines, stops at the byte budget.
struct Writer {
    out: String,
    max: usize,
    full: bool,
    /// 1: end the line before the next text; 2: leave a blank line.
    pending_newlines: u8,
    pending_space: bool,
}

impl Writer {
    fn new(max: usize) -> Self {
        Writer {
            out: String::with_capacity(max.min(16 * 1024)),
            max,
            full: false,
            pending_newlines: 0,
            pending_space: false,
        }
    }

    fn text(&mut self, s: &str, pre: bool) {
        for c in s.chars() {
            if self.full {
                return;
            }
            self.ch(c, pre);
        }
    }

    fn ch(&mut self, c: char, pre: bool) {
        if pre {
            match c {
                '\n' => {
                    if !self.out.is_empty() {
                        self.pending_newlines = (self.pending_newlines + 1).min(2);
                    }
                    return;
                }
                '\r' => return,
                '\t' | ' ' => {
                    self.flush_pending();
                    self.push(c);
                    return;
                }
                _ => {}
            }
        }
        if c.is_whitespace() {
            if !self.out.is_empty() {
                self.pending_space = true;
            }
            return;
        }
        if c.is_control() {
            return;
        }
        self.flush_pending();
        self.push(c);
    }

    /// Text that starts a line and must not be preceded by a space (`- ` of a list item).
    fn marker(&mut self, s: &str) {
        self.flush_pending();
        for c in s.chars() {
            self.push(c);
        }
        self.pending_space = false;
    }

    fn space(&mut self) {
        if !self.out.is_empty() {
            self.pending_space = true;
        }
    }

    fn block(&mut self, newlines: u8) {
        if !self.out.is_empty() {
            self.pending_newlines = self.pending_newlines.max(newlines);
        }
    }

    fn line_break(&mut self) {
        if !self.out.is_empty() {
            self.pending_newlines = (self.pending_newlines + 1).min(2);
        }
    }

    fn flush_pending(&mut self) {
        if self.out.is_empty() {
            self.pending_newlines = 0;
            self.pending_space = false;
            return;
        }
        if self.pending_newlines > 0 {
            let trailing = self.out.bytes().rev().take_while(|&c| c == b'\n').count();
            let want = usize::from(self.pending_newlines);
            // Lines end without trailing blanks.
            let trimmed = self.out.trim_end_matches([' ', '\t']).len();
            if trailing == 0 {
                self.out.truncate(trimmed);
            }
            for _ in trailing..want {
                self.push('\n');
            }
            self.pending_newlines = 0;
            self.pending_space = false;
        } else if self.pending_space {
            self.pending_space = false;
            if !self.out.ends_with([' ', '\n']) {
                self.push(' ');
            }
        }
    }

    fn push(&mut self, c: char) {
        if self.full {
            return;
        }
        if self.out.len() + c.len_utf8() > self.max {
            self.full = true;
            return;
        }
        self.out.push(c);
    }

    fn finish(mut self) -> String {
        let keep = self.out.trim_end().len();
        self.out.truncate(keep);
        if self.full {
            self.out.push_str(TRUNCATION_MARKER);
        }
        self.out
    }
}

/// Decodes the character reference at the start of `s` (which starts with `&`).
/// Returns the character and the bytes consumed, or `None` when it is not a reference.
fn decode_entity(s: &str) -> Option<(char, usize)> {
    let b = s.as_bytes();
    if b.get(1) == Some(&b'#') {
        let (radix, start) = match b.get(2) {
            Some(b'x' | b'X') => (16, 3),
            _ => (10, 2),
        };
        let mut j = start;
        let mut value: u32 = 0;
        while let Some(d) = b.get(j).and_then(|&c| (c as char).to_digit(radix)) {
            value = value.saturating_mul(radix).saturating_add(d);
            j += 1;
            if j > MAX_ENTITY_BYTES {
                return None;
            }
        }
        if j == start {
            return None;
        }
        if b.get(j) == Some(&b';') {
            j += 1;
        }
        let c = match char::from_u32(value) {
            Some(c) if value != 0 && (!c.is_control() || matches!(c, '\t' | '\n' | '\r')) => c,
            _ => '\u{FFFD}',
        };
        return Some((c, j));
    }
    let end = b
        .iter()
        .take(MAX_ENTITY_BYTES)
        .skip(1)
        .position(|c| !c.is_ascii_alphanumeric())
        .map(|p| p + 1)?;
    if b.get(end) != Some(&b';') {
        return None;
    }
    let name = s.get(1..end)?;
    named_entity(name).map(|c| (c, end + 1))
}

fn named_entity(name: &str) -> Option<char> {
    Some(match name {
        "nbsp" | "ensp" | "emsp" | "thinsp" => ' ',
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "rsquo" => '’',
        "lsquo" => '‘',
        "ldquo" => '“',
        "rdquo" => '”',
        "sbquo" => '‚',
        "bdquo" => '„',
        "laquo" => '«',
        "raquo" => '»',
        "bull" => '•',
        "middot" => '·',
        "deg" => '°',
        "euro" => '€',
        "pound" => '£',
        "yen" => '¥',
        "cent" => '¢',
        "sect" => '§',
        "para" => '¶',
        "times" => '×',
        "divide" => '÷',
        "plusmn" => '±',
        "minus" => '−',
        "frac12" => '½',
        "frac14" => '¼',
        "frac34" => '¾',
        "larr" => '←',
        "rarr" => '→',
        "uarr" => '↑',
        "darr" => '↓',
        "dagger" => '†',
        "prime" => '′',
        "iexcl" => '¡',
        "iquest" => '¿',
        "shy" | "zwj" | "zwnj" | "lrm" | "rlm" => '\u{200B}',
        "aacute" => 'á',
        "eacute" => 'é',
        "iacute" => 'í',
        "oacute" => 'ó',
        "uacute" => 'ú',
        "agrave" => 'à',
        "egrave" => 'è',
        "igrave" => 'ì',
        "ograve" => 'ò',
        "ugrave" => 'ù',
        "acirc" => 'â',
        "ecirc" => 'ê',
        "icirc" => 'î',
        "ocirc" => 'ô',
        "ucirc" => 'û',
        "auml" => 'ä',
        "euml" => 'ë',
        "iuml" => 'ï',
        "ouml" => 'ö',
        "uuml" => 'ü',
        "yuml" => 'ÿ',
        "Auml" => 'Ä',
        "Ouml" => 'Ö',
        "Uuml" => 'Ü',
        "Eacute" => 'É',
        "szlig" => 'ß',
        "ntilde" => 'ñ',
        "Ntilde" => 'Ñ',
        "ccedil" => 'ç',
        "Ccedil" => 'Ç',
        "aring" => 'å',
        "Aring" => 'Å',
        "oslash" => 'ø',
        "Oslash" => 'Ø',
        "aelig" => 'æ',
        "AElig" => 'Æ',
        "atilde" => 'ã',
        "otilde" => 'õ',
        _ => return None,
    })
}

/// Decodes every character reference in `s` into `out` (for attribute values).
fn decode_entities_into(s: &str, out: &mut String) {
    let mut rest = s;
    while let Some(p) = rest.find('&') {
        out.push_str(rest.get(..p).unwrap_or(""));
        let tail = rest.get(p..).unwrap_or("");
        match decode_entity(tail) {
            Some((c, len)) => {
                out.push(c);
                rest = tail.get(len..).unwrap_or("");
            }
            None => {
                out.push('&');
                rest = tail.get(1..).unwrap_or("");
            }
        }
    }
    out.push_str(rest);
}

/// First position of `needle` in `hay` at or after `from`.
fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(from);
    }
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Like [`find`], ASCII case-insensitive.
pub fn find_ci(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(from);
    }
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
        .map(|p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(html: &str) -> String {
        html_to_text(html, 100_000)
    }

    #[test]
    fn realistic_page() {
        let page = r#"<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Weather &amp; Co</title>
  <style>body { color: red; } p > a { x: y }</style>
  <script>var x = "<p>not text</p>"; if (a < b && c > d) {}</script>
</head>
<body>
  <!-- navigation -->
  <nav><a href="/">Home</a> | <a href="https://example.com/about">About us</a></nav>
  <h1>Today&rsquo;s   forecast</h1>
  <p>Sunny,
     23&deg;C &mdash; light wind.</p>
  <ul>
    <li>Morning: fog</li>
    <li>Afternoon: <b>sun</b></li>
  </ul>
  <script type="text/javascript">
    document.write("<div>nope</div>");
  </script>
  <noscript>Enable JS</noscript>
  <svg viewBox="0 0 10 10"><text>icon</text></svg>
  <p>See <a href="https://example.com/more?a=1&amp;b=2">details</a> or
     <a href="https://example.com/">https://example.com/</a>.</p>
  <table><tr><td>Mon</td><td>20</td></tr><tr><td>Tue</td><td>22</td></tr></table>
  <footer>&copy; 2026 Example &hellip;</footer>
</body>
</html>"#;
        let want = "Home | About us (https://example.com/about)\n\
            \n\
            Today’s forecast\n\
            \n\
            Sunny, 23°C — light wind.\n\
            \n\
            - Morning: fog\n\
            - Afternoon: sun\n\
            \n\
            See details (https://example.com/more?a=1&b=2) or https://example.com/.\n\
            \n\
            Mon 20\n\
            Tue 22\n\
            \n\
            © 2026 Example …";
        assert_eq!(t(page), want);
    }

    #[test]
    fn entities() {
        assert_eq!(
            t(
                "a&nbsp;b &amp; &lt;c&gt; &quot;d&quot; &apos;e&#39; &ndash; &lsquo;f&rsquo; &ldquo;g&rdquo;"
            ),
            "a b & <c> \"d\" 'e' – ‘f’ “g”"
        );
        assert_eq!(t("&#65;&#x42;&#X43;&#x1F600;"), "ABC😀");
        assert_eq!(
            t("&#0;|&#xD800;|&#x110000;|&#99999999999999;"),
            "\u{FFFD}|\u{FFFD}|\u{FFFD}|\u{FFFD}"
        );
        assert_eq!(
            t("&unknown; &amp &#; &#x; & x"),
            "&unknown; &amp &#; &#x; & x"
        );
        assert_eq!(t("&#65 then"), "A then");
    }

    #[test]
    fn broken_markup() {
        assert_eq!(t("a < b and c > d"), "a < b and c > d");
        assert_eq!(t("1<2"), "1<2");
        assert_eq!(t("<p>unclosed <b>bold"), "unclosed bold");
        assert_eq!(
            t(r#"<a title="x > y" href='https://a.org/'>A</a> tail"#),
            "A (https://a.org/) tail"
        );
        assert_eq!(t("<div data-x=\"unterminated>text"), "");
        assert_eq!(t("before<!-- never closed"), "before");
        assert_eq!(t("x<script>alert(1)"), "x");
        assert_eq!(t("<head><title>T</title><body>B"), "B");
        assert_eq!(t("<head><title>T</title>"), "T");
        assert_eq!(t("a</p>b</div>c"), "a\n\nb\nc");
        assert_eq!(t("<SCRIPT>x</ScRiPt>after"), "after");
        assert_eq!(t("<svg/>ok"), "ok");
        assert_eq!(t("<![CDATA[ x ]]>y"), "y");
        assert_eq!(t("<?xml version=\"1.0\"?>z"), "z");
        assert_eq!(
            t("<a href=https://u.org/x>link</a>"),
            "link (https://u.org/x)"
        );
        assert_eq!(t("<a href=\"/rel\">rel</a>"), "rel");
        assert_eq!(
            t("<a href=\"https://i.org/\"><img src=x></a>"),
            "(https://i.org/)"
        );
    }

    #[test]
    fn whitespace_and_blank_lines() {
        assert_eq!(t("  a   b \n\t c  "), "a b c");
        assert_eq!(t("<p>a</p><p></p><p></p><p>b</p>"), "a\n\nb");
        assert_eq!(t("a<br>b<br><br><br><br>c"), "a\nb\n\nc");
        assert_eq!(
            t("<pre>x  y\n  z\n\n\n\nw</pre>after"),
            "x  y\n  z\n\nw\n\nafter"
        );
        assert_eq!(t("<div> a </div><div> b </div>"), "a\nb");
        assert_eq!(t("<li>one<li>two"), "- one\n- two");
    }

    #[test]
    fn truncation_at_char_boundary() {
        let html = "<p>".to_string() + &"é".repeat(100);
        let out = html_to_text(&html, 11);
        assert_eq!(out, format!("{}{TRUNCATION_MARKER}", "é".repeat(5)));
        let out = html_to_text("😀😀", 5);
        assert_eq!(out, format!("😀{TRUNCATION_MARKER}"));
        assert_eq!(html_to_text("abc", 3), "abc");
        assert_eq!(html_to_text("abc   <p></p>  ", 3), "abc");
        assert_eq!(html_to_text("abcd", 0), TRUNCATION_MARKER);
    }

    #[test]
    fn random_input_never_panics_and_respects_the_cap() {
        let mut rng = crate::testkit::XorShift(0x1234_5678_9ABC_DEF1u64);
        let mut next = move || rng.next();
        let pieces = [
            "<",
            ">",
            "</",
            "/>",
            "p",
            "a",
            "li",
            "br",
            "script",
            "style",
            "head",
            "body",
            "pre",
            "href=",
            "\"",
            "'",
            "=",
            " ",
            "\n",
            "&",
            "&amp;",
            "&#",
            "&#x",
            "1F",
            ";",
            "<!--",
            "-->",
            "<!",
            "?",
            "é",
            "😀",
            "text",
            "https://x.org/",
            "[CDATA[",
            "]]>",
            "\u{0}",
        ];
        for _ in 0..4000 {
            let n = (next() % 40) as usize;
            let mut s = String::new();
            for _ in 0..n {
                s.push_str(pieces[(next() % pieces.len() as u64) as usize]);
            }
            let max = (next() % 64) as usize;
            let out = html_to_text(&s, max);
            assert!(out.len() <= max + TRUNCATION_MARKER.len(), "{s:?}");
        }
        for _ in 0..300 {
            let len = (next() % 500) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let _ = html_to_text(&String::from_utf8_lossy(&bytes), 200);
        }
        // Many unclosed heads: each must not search the rest of the page again.
        let heads = "<head>x".repeat(50_000);
        assert_eq!(html_to_text(&heads, 1_000_000), "x".repeat(50_000));
        let deep = "<div>".repeat(100_000);
        assert_eq!(html_to_text(&deep, 1000), "");
        let many = "<a href='https://x.org/'>x</a>".repeat(10_000);
        assert!(html_to_text(&many, 100).ends_with(TRUNCATION_MARKER));
    }
}
