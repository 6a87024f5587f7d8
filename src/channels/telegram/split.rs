//! Long replies cut into messages Telegram accepts: plain text or Telegram HTML, cut at
//! the best boundary under a limit counted in UTF-16 code units.
//!
//! Why it exists: Telegram refuses a message over 4096 UTF-16 code units, and refuses a
//! whole message whose HTML was cut inside a tag or an entity. Pure text in, text out,
//! so `reply` and `preview` stay simple and everything here can be fuzzed.
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
//! - Time is linear in the input (no backtracking, no recursion on input);
//!   memory is proportional to the input.
//!
//! # Threads
//! Pure: no I/O, no shared state. Runs wherever it is called (the sender thread, a
//! worker, tests).

/// Telegram's limit for one message's text, in UTF-16 code units.
pub const TELEGRAM_MAX_MESSAGE_UTF16: usize = 4096;

/// Smallest limit the splitters accept; smaller limits are raised to this.
pub const MIN_SPLIT_LIMIT_UTF16: usize = 64;

/// Longest HTML entity `split_html` recognises (`&#x10FFFF;`); a longer one is
/// treated as a stray `&` and escaped.
const MAX_ENTITY_BYTES: usize = 10;

/// Length of `s` in UTF-16 code units, the unit Telegram counts in.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

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

/// Checks of the splitters' contract (valid Telegram HTML, limits, reassembly), shared
/// with the tests of `html` and `reply`.
#[cfg(test)]
pub(super) mod check {
    use super::*;
    use crate::testkit::XorShift;

    /// Checks `s` is valid Telegram HTML: allowed tags only, every tag closed
    /// and properly nested, nothing inside `code`, `pre` holding at most one
    /// `code`, no nested links or quotes, no stray `<`, `>` or `&`.
    pub fn check_html(s: &str) -> Result<(), String> {
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

    pub fn assert_html(s: &str) {
        if let Err(e) = check_html(s) {
            panic!("invalid html ({e}): {s:?}");
        }
    }

    /// Text without tags and whitespace: what a reader sees, minus layout.
    pub fn content(html: &str) -> String {
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
    pub fn assert_reassembles(input: &str, chunks: &[String]) {
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

    /// `split_html`, with every chunk checked: within the limit, visible text, valid
    /// HTML, and a fixed point (split again, a chunk comes back whole).
    pub fn check_split_html(input: &str, limit: usize) -> Vec<String> {
        let chunks = split_html(input, limit);
        let eff = limit.max(MIN_SPLIT_LIMIT_UTF16);
        for c in &chunks {
            assert!(utf16_len(c) <= eff, "chunk over {eff}: {}", utf16_len(c));
            assert!(!content(c).is_empty(), "empty chunk {c:?}");
            assert_html(c);
            assert_eq!(
                split_html(c, limit),
                [c.as_str()],
                "chunk not a fixed point"
            );
        }
        chunks
    }

    /// `split_plain`, with every chunk checked: within the limit, not blank, a fixed
    /// point; and the chunks are the input in order with only whitespace left out.
    pub fn check_split_plain(input: &str, limit: usize) -> Vec<String> {
        let chunks = split_plain(input, limit);
        let eff = limit.max(MIN_SPLIT_LIMIT_UTF16);
        for c in &chunks {
            assert!(utf16_len(c) <= eff, "chunk over {eff}");
            assert!(!c.trim().is_empty(), "whitespace-only chunk");
            assert_eq!(
                split_plain(c, limit),
                [c.as_str()],
                "chunk not a fixed point"
            );
        }
        assert_reassembles(input, &chunks);
        chunks
    }

    /// About 10,000 UTF-16 units of words (many astral), spaces and line breaks.
    pub fn long_reply() -> String {
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
}

#[cfg(test)]
mod tests {
    use super::check::*;
    use super::*;
    use crate::testkit::XorShift;

    /// `long_reply` as HTML: bold words, escaped specials and links.
    fn long_html() -> String {
        long_reply()
            .replace("hello", "<b>hello</b> &lt;&amp;&gt;")
            .replace("ok.", "<a href=\"https://e.com/?a&amp;b\">ok</a>")
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
        let html = long_html();
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
        let html = format!(
            "<pre><code class=\"language-rust\">{}</code></pre>",
            ["let x = 1;"; 50].join("\n")
        );
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
        let s = long_html();
        for limit in [0, 1, 2, 15, 63, 64, 65] {
            check_split_html(&s, limit);
            check_split_plain(&s, limit);
        }
    }

    #[test]
    fn fuzz_splitting() {
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
            // Raw, possibly broken HTML comes out valid, within the limit, as chunks
            // that split again into themselves; a valid input keeps all its text.
            let chunks = check_split_html(&s, limit);
            if check_html(&s).is_ok() {
                assert_eq!(content(&chunks.concat()), content(&s), "input {s:?}");
            }
            // Plain text chunks reassemble into the input (checked inside).
            check_split_plain(&s, limit);
        }
    }

    #[test]
    fn one_megabyte_inputs_complete() {
        let mut rng = XorShift(42);
        let pieces = [
            "<b>b</b> ",
            "<i>i</i> ",
            "<code>c</code> ",
            "snake_case ",
            "😀",
            "中",
            "&lt;&amp;&gt; ",
            "\n",
            "\n\n",
            "<a href=\"https://e.com\">l</a> ",
        ];
        let mut s = String::new();
        while s.len() < 1_000_000 {
            s.push_str(pieces[rng.index(pieces.len())]);
        }
        let chunks = check_split_html(&s, TELEGRAM_MAX_MESSAGE_UTF16);
        assert_eq!(content(&chunks.concat()), content(&s));
        check_split_plain(&s, TELEGRAM_MAX_MESSAGE_UTF16);
        // Pathological single lines.
        for unit in ["` `` ``` ", "[a](b", "*a _b ~~c ", "<", "&", "<b>", "x"] {
            let line = unit.repeat(1_000_000 / unit.len());
            check_split_html(&line, TELEGRAM_MAX_MESSAGE_UTF16);
            check_split_plain(&line, TELEGRAM_MAX_MESSAGE_UTF16);
        }
    }
}
