//! Credential scrubber: the one place that removes secrets from text.
//!
//! Why: tool results (file contents, command output, fetched pages), outbound messages and log
//! lines can carry API keys, bot tokens, passwords or private keys. Every such text goes through
//! [`scrub`] before it enters history, reaches the model, a chat or a log. Two layers:
//!
//! 1. **Literals**: the values of the configured secrets (API key, bot token, every value from
//!    `secrets.env`), installed once at start with [`install_secret_literals`]. Exact and cheap;
//!    they catch secrets of any shape, including the bot token inside Bot API URLs.
//! 2. **Patterns** (regex-lite, compiled once): well-known key shapes (OpenAI, Anthropic,
//!    OpenRouter, Groq, GitHub, Slack, AWS, Google, Hugging Face, Stripe, Telegram bot tokens),
//!    `Bearer`/`Basic` credentials (the scheme word is kept), `key=value` style assignments of
//!    secret-named keys (the key is kept, the value redacted, JSON `"api_key": "…"` included) and
//!    PEM private-key blocks (an unterminated block is redacted to the end).
//!
//! Every match becomes [`REDACTED`]. The scrubber errs on the side of redacting, but it avoids
//! ordinary prose: the word "token" or "password" in a sentence is kept; a key must *end* in a
//! secret word (`api_key`, `OPENAI_API_KEY`, `db.password`, not `token_env` or `max_tokens`);
//! an assignment written `key: value` or `key = value` is only redacted when the value looks
//! like a credential (a digit, mixed case, or 24+ characters) or is quoted, while a glued
//! `key=value` (env files, query strings) is always redacted.
//!
//! Speed: regex-lite has no literal prefilter, so running its patterns over a whole text costs
//! about a microsecond per 4 bytes. Instead each pattern is anchored (`^…`) and run only at the
//! places a cheap substring search points to (a token prefix, a `:` after digits, the words
//! `bearer`/`basic`, or a secret word), on a window of at most [`MAX_MATCH_WINDOW_BYTES`].
//!
//! # Bounds
//! - At most [`MAX_SECRET_LITERALS`] literals are stored; later ones are ignored with a warning.
//! - Literals shorter than [`MIN_SECRET_LITERAL_CHARS`] characters are ignored (they would redact
//!   ordinary words), and so are literals longer than [`MAX_SECRET_LITERAL_BYTES`] (a private key
//!   that long is caught by the PEM pattern).
//! - An assignment is looked for within [`MAX_MATCH_WINDOW_BYTES`] of where its key starts: a
//!   quoted value longer than that is not recognised. Tokens are matched on a short window and
//!   then redacted to their last token character, however long.
//! - Key names longer than [`MAX_KEY_NAME_BYTES`] before the secret word are not recognised.
//! - Time is linear in the input length plus the work at each anchor (bounded by its window).
//!   Each call makes one lowercase copy of the text (for the case-insensitive anchors); when
//!   nothing matches, that is the only allocation and [`scrub`] returns `Cow::Borrowed`.
//!   Callers should cut a text to its size cap *before* scrubbing it.
//!
//! # Threads
//! Any thread: pure, over a process-wide list of secret values installed at start (a lock
//! held only to read it).

use std::borrow::Cow;
use std::sync::{OnceLock, RwLock};

use regex_lite::{Captures, Regex};

/// What every secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Literal secrets shorter than this (in characters) are ignored: they would match words.
pub const MIN_SECRET_LITERAL_CHARS: usize = 6;

/// At most this many literal secrets are kept.
pub const MAX_SECRET_LITERALS: usize = 64;

/// Literal secrets longer than this (in bytes) are ignored.
pub const MAX_SECRET_LITERAL_BYTES: usize = 4096;

/// An assignment (key, separator and value) must fit within this many bytes.
pub const MAX_MATCH_WINDOW_BYTES: usize = 8 * 1024;

/// Token shapes are matched on a window this long, then extended over the rest of the token.
const TOKEN_WINDOW_BYTES: usize = 512;

/// PEM BEGIN/END lines are looked for within this many bytes.
const PEM_LINE_BYTES: usize = 128;

/// Key names (`OPENAI_API_KEY`) longer than this are not recognised.
pub const MAX_KEY_NAME_BYTES: usize = 64;

/// Installed literal secrets, longest first (so a secret that contains another is replaced whole).
static LITERALS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Adds the values of configured secrets (API keys, bot token, `secrets.env` values) to the
/// literal list. Values are trimmed; empty, too short, too long and duplicate values are skipped.
/// Additive: calling it again adds more (up to [`MAX_SECRET_LITERALS`] in all).
pub fn install_secret_literals(values: impl IntoIterator<Item = String>) {
    let dropped = {
        let mut list = LITERALS
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        add_literals(&mut list, values)
    };
    // Logged after the lock is released: the logger itself scrubs through the same list.
    if dropped > 0 {
        log::warn!(
            "scrub: {dropped} secret value(s) not registered (limit is {MAX_SECRET_LITERALS})"
        );
    }
}

/// Adds acceptable values to `list` (kept longest first); returns how many were dropped for
/// lack of room.
fn add_literals(list: &mut Vec<String>, values: impl IntoIterator<Item = String>) -> usize {
    let mut dropped = 0;
    for value in values {
        let value = value.trim();
        if value.chars().count() < MIN_SECRET_LITERAL_CHARS
            || value.len() > MAX_SECRET_LITERAL_BYTES
            || list.iter().any(|known| known == value)
        {
            continue;
        }
        if list.len() >= MAX_SECRET_LITERALS {
            dropped += 1;
            continue;
        }
        list.push(value.to_string());
    }
    list.sort_by_key(|s| std::cmp::Reverse(s.len()));
    dropped
}

/// Removes credentials from `s`: installed literals first, then the known shapes.
/// Returns `Cow::Borrowed(s)` when nothing had to be redacted.
pub fn scrub(s: &str) -> Cow<'_, str> {
    let mut cur = Cow::Borrowed(s);
    scrub_literals(&mut cur);
    let p = patterns();
    let hits = pem_hits(&cur, p);
    splice(&mut cur, hits);
    let hits = token_hits(&cur, p);
    splice(&mut cur, hits);
    let hits = telegram_hits(&cur, p);
    splice(&mut cur, hits);
    let mut lower = cur.to_ascii_lowercase();
    let hits = auth_scheme_hits(&cur, &lower, p);
    if !hits.is_empty() {
        splice(&mut cur, hits);
        lower = cur.to_ascii_lowercase();
    }
    let hits = assignment_hits(&cur, &lower, p);
    splice(&mut cur, hits);
    cur
}

/// Prefixes of the well-known token shapes (case-sensitive).
pub(crate) const TOKEN_PREFIXES: &[&str] = &[
    "sk-",
    "sk_",
    "rk_",
    "gsk_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "xoxa-",
    "xoxb-",
    "xoxp-",
    "xoxr-",
    "xoxs-",
    "AKIA",
    "ASIA",
    "AIza",
    "hf_",
];

/// Lowercase stems of the secret words an assignment key ends in.
const KEY_STEMS: &[&str] = &["key", "token", "pass", "secret"];

struct Patterns {
    pem_begin: Regex,
    pem_end: Regex,
    prefixed: Regex,
    telegram: Regex,
    auth_scheme: Regex,
    assignment: Regex,
}

fn patterns() -> &'static Patterns {
    static CELL: OnceLock<Patterns> = OnceLock::new();
    CELL.get_or_init(|| Patterns {
        pem_begin: compile(r"^-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"),
        pem_end: compile(r"^-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"),
        prefixed: compile(concat!(
            r"^(?:",
            r"sk-[A-Za-z0-9_-]{20,}", // OpenAI, sk-proj-, sk-ant- (Anthropic), sk-or-v1- (OpenRouter)
            r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", // Stripe-style secret keys
            r"|gsk_[A-Za-z0-9]{20,}", // Groq
            r"|gh[pousr]_[A-Za-z0-9]{20,}", // GitHub classic tokens
            r"|github_pat_[A-Za-z0-9_]{20,}", // GitHub fine-grained tokens
            r"|xox[abprs]-[A-Za-z0-9-]{10,}", // Slack
            r"|(?:AKIA|ASIA)[A-Z0-9]{16}\b", // AWS access key ids
            r"|AIza[A-Za-z0-9_-]{35}", // Google API keys
            r"|hf_[A-Za-z0-9]{30,}",  // Hugging Face
            r")",
        )),
        telegram: compile(r"^[0-9]{6,12}:[A-Za-z0-9_-]{30,}"),
        auth_scheme: compile(r"^(?i)(bearer|basic)([ \t]+)([A-Za-z0-9._~+/=-]{6,})"),
        assignment: compile(concat!(
            r"^(?i)((?:[a-z0-9]+[_.-])*",
            r"(?:api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|token|password|passwd|pass[_-]?phrase|secret)",
            r#"["']?([ \t]*)([:=])([ \t]*))"#,
            r#"(?:"((?:[^"\\\r\n]|\\.)*)"|'([^'\r\n]*)'|([^\s"'&,;<>)\]}]+))"#,
        )),
    })
}

/// Compiles one of the constant patterns above.
fn compile(pattern: &str) -> Regex {
    // The patterns are constants covered by `patterns_compile` in the tests: this cannot fail.
    Regex::new(pattern).expect("constant scrub pattern compiles")
}

fn scrub_literals(cur: &mut Cow<'_, str>) {
    let list = LITERALS
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for lit in list.iter() {
        if cur.contains(lit.as_str()) {
            *cur = Cow::Owned(cur.replace(lit.as_str(), REDACTED));
        }
    }
}

/// True when `text` ends with the beginning (not the whole) of an installed literal, so
/// text still to come could complete it. For scrubbing a stream piece by piece
/// (`agent::scrub_sink`).
pub fn ends_inside_literal(text: &str) -> bool {
    let list = LITERALS
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    list.iter().any(|lit| {
        let longest = lit.len().saturating_sub(1).min(text.len());
        (1..=longest)
            .filter(|&k| lit.is_char_boundary(k))
            .any(|k| text.ends_with(&lit[..k]))
    })
}

/// One redaction: the byte range to replace and what replaces it.
struct Hit {
    start: usize,
    end: usize,
    with: String,
}

/// Applies `hits` (in increasing order; overlapping ones are skipped).
fn splice(cur: &mut Cow<'_, str>, hits: Vec<Hit>) {
    if hits.is_empty() {
        return;
    }
    let text = cur.as_ref();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for h in hits {
        let (Some(before), true) = (text.get(last..h.start), h.end <= text.len()) else {
            continue;
        };
        out.push_str(before);
        out.push_str(&h.with);
        last = h.end;
    }
    out.push_str(text.get(last..).unwrap_or(""));
    if out != text {
        *cur = Cow::Owned(out);
    }
}

/// The text from `start`, at most `max` bytes long, ending on a char boundary.
fn window(text: &str, start: usize, max: usize) -> &str {
    let mut end = text.len().min(start.saturating_add(max));
    while end > start && !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(start..end).unwrap_or("")
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// At least `n` token characters (`[A-Za-z0-9_-]`) start at `at` (looks at `n` bytes at most).
fn token_run_at_least(b: &[u8], at: usize, n: usize) -> bool {
    b.get(at..at.saturating_add(n)).is_some_and(|run| {
        run.len() == n
            && run
                .iter()
                .all(|&x| x.is_ascii_alphanumeric() || x == b'_' || x == b'-')
    })
}

/// Where a token that reached the end of its match window really ends.
fn extend_token(b: &[u8], mut end: usize) -> usize {
    while b
        .get(end)
        .is_some_and(|&x| x.is_ascii_alphanumeric() || x == b'_' || x == b'-')
    {
        end += 1;
    }
    end
}

/// The shortest token shape (`xoxb-` and ten characters).
const MIN_TOKEN_BYTES: usize = 15;

/// Starts where `needles` occur in `hay`, sorted, without duplicates.
fn anchors(hay: &str, needles: &[&str]) -> Vec<usize> {
    // `contains` has a SIMD fast path that `match_indices` lacks: most texts hold none of the
    // needles, and then this costs a few fast scans.
    let mut at: Vec<usize> = needles
        .iter()
        .filter(|n| hay.contains(**n))
        .flat_map(|n| hay.match_indices(n).map(|(i, _)| i))
        .collect();
    at.sort_unstable();
    at.dedup();
    at
}

/// `-----BEGIN … PRIVATE KEY-----` up to its END line, or to the end of the text.
fn pem_hits(text: &str, p: &Patterns) -> Vec<Hit> {
    let mut hits = Vec::new();
    let mut from = 0;
    while let Some(off) = text.get(from..).and_then(|t| t.find("-----BEGIN")) {
        let start = from + off;
        let header_line = window(text, start, PEM_LINE_BYTES)
            .lines()
            .next()
            .unwrap_or("");
        if !header_line.contains("PRIVATE KEY") {
            from = start + 1;
            continue;
        }
        let Some(header) = p.pem_begin.find(header_line) else {
            from = start + 1;
            continue;
        };
        let end = pem_end(text, start + header.end(), p).unwrap_or(text.len());
        hits.push(Hit {
            start,
            end,
            with: REDACTED.to_string(),
        });
        from = end;
    }
    hits
}

fn pem_end(text: &str, from: usize, p: &Patterns) -> Option<usize> {
    let mut at = from;
    while let Some(off) = text.get(at..)?.find("-----END") {
        let s = at + off;
        let line = window(text, s, PEM_LINE_BYTES).lines().next().unwrap_or("");
        if line.contains("PRIVATE KEY")
            && let Some(m) = p.pem_end.find(line)
        {
            return Some(s + m.end());
        }
        at = s + 1;
    }
    None
}

/// Well-known token shapes, starting at a word boundary.
fn token_hits(text: &str, p: &Patterns) -> Vec<Hit> {
    let b = text.as_bytes();
    let mut hits = Vec::new();
    let mut last = 0;
    for c in anchors(text, TOKEN_PREFIXES) {
        let boundary = c == 0 || b.get(c - 1).is_some_and(|&x| !is_word_byte(x));
        if c < last || !boundary || !token_run_at_least(b, c, MIN_TOKEN_BYTES) {
            continue;
        }
        if let Some(m) = p.prefixed.find(window(text, c, TOKEN_WINDOW_BYTES)) {
            last = extend_token(b, c + m.end());
            hits.push(Hit {
                start: c,
                end: last,
                with: REDACTED.to_string(),
            });
        }
    }
    hits
}

/// Telegram bot tokens: 6–12 digits, `:`, 30+ token characters. No word boundary is needed
/// before the digits: in Bot API URLs they follow `bot`.
fn telegram_hits(text: &str, p: &Patterns) -> Vec<Hit> {
    let b = text.as_bytes();
    let mut hits = Vec::new();
    let mut last = 0;
    for (colon, _) in text.match_indices(':') {
        let mut start = colon;
        while start > 0
            && colon - start < 12
            && b.get(start - 1).is_some_and(|x| x.is_ascii_digit())
        {
            start -= 1;
        }
        if colon - start < 6 || start < last || !token_run_at_least(b, colon + 1, 30) {
            continue;
        }
        if let Some(m) = p.telegram.find(window(text, start, TOKEN_WINDOW_BYTES)) {
            last = extend_token(b, start + m.end());
            hits.push(Hit {
                start,
                end: last,
                with: REDACTED.to_string(),
            });
        }
    }
    hits
}

/// `Bearer <token>` / `Basic <credentials>`: the scheme word is kept.
fn auth_scheme_hits(text: &str, lower: &str, p: &Patterns) -> Vec<Hit> {
    let b = text.as_bytes();
    let mut hits = Vec::new();
    let mut last = 0;
    for c in anchors(lower, &["bearer", "basic"]) {
        let boundary = c == 0 || b.get(c - 1).is_some_and(|&x| !is_word_byte(x));
        if c < last || !boundary || !auth_value_is_credential(b, c) {
            continue;
        }
        let Some(caps) = p.auth_scheme.captures(window(text, c, TOKEN_WINDOW_BYTES)) else {
            continue;
        };
        let (Some(all), Some(scheme), Some(gap), Some(value)) =
            (caps.get(0), caps.get(1), caps.get(2), caps.get(3))
        else {
            continue;
        };
        let v = value.as_str();
        if looks_like_credential(v) || v.contains(['.', '_', '~', '+', '/', '=', '-']) {
            last = c + all.end();
            while b
                .get(last)
                .is_some_and(|&x| x.is_ascii_alphanumeric() || b"._~+/=-".contains(&x))
            {
                last += 1;
            }
            hits.push(Hit {
                start: c,
                end: last,
                with: format!("{}{}{REDACTED}", scheme.as_str(), gap.as_str()),
            });
        }
    }
    hits
}

/// Cheap pre-check for [`auth_scheme_hits`]: after the scheme word at `c` come blanks and a
/// value that looks like a credential.
fn auth_value_is_credential(b: &[u8], c: usize) -> bool {
    let mut i = c;
    while b.get(i).is_some_and(|x| x.is_ascii_alphabetic()) && i - c < 8 {
        i += 1;
    }
    let gap = i;
    while b.get(i).is_some_and(|&x| x == b' ' || x == b'\t') && i - gap < MAX_KEY_NAME_BYTES {
        i += 1;
    }
    let start = i;
    while b
        .get(i)
        .is_some_and(|&x| x.is_ascii_alphanumeric() || b"._~+/=-".contains(&x))
        && i - start < MAX_KEY_NAME_BYTES
    {
        i += 1;
    }
    let value = b.get(start..i).unwrap_or(&[]);
    i > gap
        && start > gap
        && value.len() >= 6
        && (value.iter().any(|x| b"._~+/=-".contains(x))
            || std::str::from_utf8(value).is_ok_and(looks_like_credential))
}

/// Cheap pre-check for [`assignment_hits`]: from the secret word at `a`, the key goes on with
/// key characters, then an optional quote, blanks, and `:` or `=`.
fn assignment_follows(b: &[u8], a: usize) -> bool {
    let mut i = a;
    while b
        .get(i)
        .is_some_and(|&x| x.is_ascii_alphanumeric() || matches!(x, b'_' | b'.' | b'-'))
    {
        if i - a >= MAX_KEY_NAME_BYTES {
            return false;
        }
        i += 1;
    }
    if matches!(b.get(i), Some(b'"' | b'\'')) {
        i += 1;
    }
    let blanks = i;
    while matches!(b.get(i), Some(b' ' | b'\t')) {
        if i - blanks >= MAX_KEY_NAME_BYTES {
            return false;
        }
        i += 1;
    }
    matches!(b.get(i), Some(b':' | b'='))
}

/// `key=value`, `key: value`, `"key": "value"` where the key ends in a secret word.
fn assignment_hits(text: &str, lower: &str, p: &Patterns) -> Vec<Hit> {
    let b = text.as_bytes();
    let is_key_byte = |x: u8| x.is_ascii_alphanumeric() || matches!(x, b'_' | b'.' | b'-');
    let mut hits = Vec::new();
    let mut last = 0;
    let mut tried = usize::MAX;
    for a in anchors(lower, KEY_STEMS) {
        if a < last || !assignment_follows(b, a) {
            continue;
        }
        // Walk back to where the key name starts (`OPENAI_API_` before `KEY`).
        let mut ks = a;
        while ks > 0
            && a - ks <= MAX_KEY_NAME_BYTES
            && b.get(ks - 1).is_some_and(|&x| is_key_byte(x))
        {
            ks -= 1;
        }
        if ks > 0 && b.get(ks - 1).is_some_and(|&x| is_key_byte(x)) {
            continue; // longer than MAX_KEY_NAME_BYTES
        }
        while ks < a && b.get(ks).is_some_and(|x| matches!(x, b'_' | b'.' | b'-')) {
            ks += 1;
        }
        if ks < last || ks == tried {
            continue;
        }
        tried = ks;
        let Some(caps) = p
            .assignment
            .captures(window(text, ks, MAX_MATCH_WINDOW_BYTES))
        else {
            continue;
        };
        let Some(all) = caps.get(0) else { continue };
        if let Some(with) = assignment_replacement(&caps) {
            last = ks + all.end();
            hits.push(Hit {
                start: ks,
                end: last,
                with,
            });
        }
    }
    hits
}

/// The redacted form of an assignment match, or `None` to keep it.
fn assignment_replacement(caps: &Captures<'_>) -> Option<String> {
    let key_and_sep = caps.get(1)?.as_str();
    if let Some(v) = caps.get(5) {
        let v = v.as_str();
        return (!v.is_empty() && v != REDACTED).then(|| format!("{key_and_sep}\"{REDACTED}\""));
    }
    if let Some(v) = caps.get(6) {
        let v = v.as_str();
        return (!v.is_empty() && v != REDACTED).then(|| format!("{key_and_sep}'{REDACTED}'"));
    }
    let v = caps.get(7)?.as_str();
    if v.starts_with(REDACTED) || (v.starts_with('[') && REDACTED.starts_with(v)) {
        return None;
    }
    // A placeholder such as `KEY=...` (help texts) holds no secret.
    if v.chars().all(|c| matches!(c, '.' | '…' | '*')) {
        return None;
    }
    // `key=value` glued together (env files, query strings) is always a credential; `key: value`
    // and `key = value` are also how prose and code read, so the value must look like one.
    let glued = caps.get(3).is_some_and(|m| m.as_str() == "=")
        && caps.get(2).is_some_and(|m| m.as_str().is_empty())
        && caps.get(4).is_some_and(|m| m.as_str().is_empty());
    (glued || looks_like_credential(v)).then(|| format!("{key_and_sep}{REDACTED}"))
}

/// A credential-looking word: has a digit, upper and lower case past its first letter, or is
/// long enough that it is no ordinary word.
fn looks_like_credential(v: &str) -> bool {
    let len = v.chars().count();
    if len < 4 {
        return false;
    }
    let digit = v.bytes().any(|b| b.is_ascii_digit());
    let lower = v.bytes().any(|b| b.is_ascii_lowercase());
    let upper_inside = v.bytes().skip(1).any(|b| b.is_ascii_uppercase());
    digit || (lower && upper_inside && len >= 8) || len >= 24
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> String {
        scrub(x).into_owned()
    }

    #[test]
    fn placeholders_in_help_texts_are_kept() {
        let help = "put YOCTOCLAW_API_KEY=... in secrets.env";
        assert_eq!(s(help), help);
        assert_eq!(s("TELEGRAM_BOT_TOKEN=…"), "TELEGRAM_BOT_TOKEN=…");
        assert_eq!(s("api_key=sk9secretvalue"), "api_key=[REDACTED]");
    }

    #[test]
    fn patterns_compile() {
        let _ = patterns();
    }

    #[test]
    fn provider_keys_are_redacted_and_context_kept() {
        let cases = [
            "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKL",
            "sk-proj-Ab3dEfGh1jKlMn0pQrStUvWxYz_0123456789-abcdefghij",
            "sk-ant-api03-AbCdEf0123456789abcdefghijklmnopqrstuvwxyz-ABCDEFGH_ijkl",
            "sk-or-v1-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "gsk_ABCdef0123456789ghijklmnopqrstuvwxyzABCDEFGHIJ0123",
            "ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "gho_0123456789abcdefghijABCDEFGHIJ012345",
            "ghu_0123456789abcdefghijABCDEFGHIJ012345",
            "ghs_0123456789abcdefghijABCDEFGHIJ012345",
            "ghr_0123456789abcdefghijABCDEFGHIJ012345",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH",
            "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            "xoxp-1234-5678-abcdefabcdef",
            "AKIAIOSFODNN7EXAMPLE",
            "ASIAY34FZKBOKMUTVV7A",
            "AIzaSyA-1234567890abcdefghijklmnopqrstu",
            "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
            "sk_live_0123456789abcdefABCDEF",
            "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
        ];
        for key in cases {
            let input = format!("before {key} after");
            let out = s(&input);
            assert_eq!(out, format!("before {REDACTED} after"), "for {key}");
            // Also at the very start and end, and inside JSON.
            assert_eq!(s(key), REDACTED, "bare {key}");
            let json = format!("{{\"k\":\"{key}\"}}");
            assert!(!s(&json).contains(key), "json {key}");
        }
    }

    #[test]
    fn telegram_token_inside_bot_api_url() {
        let url = "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getUpdates?offset=3";
        assert_eq!(
            s(url),
            format!("https://api.telegram.org/bot{REDACTED}/getUpdates?offset=3")
        );
    }

    #[test]
    fn bearer_keeps_the_word() {
        assert_eq!(
            s("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc-DEF_123"),
            format!("Authorization: Bearer {REDACTED}")
        );
        assert_eq!(
            s("authorization: bearer abcd1234efgh"),
            format!("authorization: bearer {REDACTED}")
        );
        assert_eq!(
            s("Authorization: Basic dXNlcjpwYXNzd29yZA=="),
            format!("Authorization: Basic {REDACTED}")
        );
        assert_eq!(
            s("curl -H 'Authorization: Bearer sk-abc' x"),
            format!("curl -H 'Authorization: Bearer {REDACTED}' x")
        );
        assert_eq!(
            s("Authorization: Bearer abc.def.ghi"),
            format!("Authorization: Bearer {REDACTED}")
        );
        // Prose.
        let prose = "The bearer instrument was signed; basic arithmetic suffices.";
        assert!(matches!(scrub(prose), Cow::Borrowed(_)));
    }

    #[test]
    fn assignments_keep_the_key() {
        let cases = [
            ("api_key=abc", "api_key=[REDACTED]"),
            ("apikey: abc123def", "apikey: [REDACTED]"),
            ("API-KEY=xyz", "API-KEY=[REDACTED]"),
            ("token=abcdef", "token=[REDACTED]"),
            ("password=hunter", "password=[REDACTED]"),
            ("passwd=hunter", "passwd=[REDACTED]"),
            ("secret=shh", "secret=[REDACTED]"),
            ("OPENAI_API_KEY=whatever", "OPENAI_API_KEY=[REDACTED]"),
            ("TELEGRAM_BOT_TOKEN=abcdef", "TELEGRAM_BOT_TOKEN=[REDACTED]"),
            (
                "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI",
                "AWS_SECRET_ACCESS_KEY=[REDACTED]",
            ),
            ("client_secret: Zx9yW8", "client_secret: [REDACTED]"),
            (r#"{"api_key": "abc def"}"#, r#"{"api_key": "[REDACTED]"}"#),
            (r#"{"password":"p\"q"}"#, r#"{"password":"[REDACTED]"}"#),
            ("password = 'hunter2'", "password = '[REDACTED]'"),
            ("password: hunter2", "password: [REDACTED]"),
            (
                "GET /x?user=a&token=abc123&page=2",
                "GET /x?user=a&token=[REDACTED]&page=2",
            ),
            ("db.password=letmein\nnext", "db.password=[REDACTED]\nnext"),
            (
                "cmd --token=abc --verbose",
                "cmd --token=[REDACTED] --verbose",
            ),
            ("passphrase=hello world", "passphrase=[REDACTED] world"),
            (
                "export GITHUB_TOKEN=ghp_short",
                "export GITHUB_TOKEN=[REDACTED]",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(s(input), want, "for {input}");
        }
    }

    #[test]
    fn config_key_names_are_not_values() {
        for text in [
            r#"{"api_key_env": "YOCTOCLAW_API_KEY", "token_env": "TELEGRAM_BOT_TOKEN"}"#,
            r#"{"max_tokens": 1024, "prompt_tokens": 12, "completion_tokens": 30}"#,
            "usage: tokens=1500 total",
        ] {
            assert!(
                matches!(scrub(text), Cow::Borrowed(_)),
                "{text} -> {}",
                s(text)
            );
        }
    }

    #[test]
    fn ordinary_prose_is_untouched() {
        let prose = "Please reset your password using the link we sent. The token expires \
            in an hour, so keep the secret key somewhere safe. A password: is not shown here. \
            The secret to good bread is time; the key is patience. Token-based login uses a \
            short-lived token: it is refreshed automatically. Tasks: ask-me-anything, \
            desk-organising, risk-assessment-for-the-whole-team-2025. Meet at 10:30:00 today. \
            Secret: patience. My passwords are managed by a password manager.";
        let out = scrub(prose);
        assert!(matches!(out, Cow::Borrowed(_)), "changed: {out}");
    }

    #[test]
    fn code_with_secret_named_variables_is_mostly_kept() {
        for code in [
            "let token = parse(input);",
            "password = input(\"Password: \")",
            "if token == nil { return }",
        ] {
            assert!(
                matches!(scrub(code), Cow::Borrowed(_)),
                "{code} -> {}",
                s(code)
            );
        }
    }

    #[test]
    fn literals_are_redacted() {
        install_secret_literals([
            "  my-very-own-secret-value  ".to_string(),
            "short".to_string(), // too short: ignored
            String::new(),
        ]);
        assert_eq!(
            s("echo my-very-own-secret-value done"),
            format!("echo {REDACTED} done")
        );
        assert_eq!(s("a short word"), "a short word");
        // A literal inside a longer literal: the longer one wins.
        install_secret_literals(["zq-lit-AAAA".to_string(), "zq-lit-AAAA-BBBB".to_string()]);
        assert_eq!(s("x zq-lit-AAAA-BBBB y"), format!("x {REDACTED} y"));
        assert_eq!(s("x zq-lit-AAAA y"), format!("x {REDACTED} y"));
    }

    #[test]
    fn literal_list_is_bounded_and_filtered() {
        let mut list = Vec::new();
        let values = (0..MAX_SECRET_LITERALS + 10).map(|i| format!("secret-value-{i:04}"));
        assert_eq!(add_literals(&mut list, values), 10);
        assert_eq!(list.len(), MAX_SECRET_LITERALS);
        // Duplicates, blanks, short and huge values are skipped, not counted as dropped.
        let mut list = Vec::new();
        let dropped = add_literals(
            &mut list,
            [
                "abcdef".to_string(),
                " abcdef ".to_string(),
                "abcde".to_string(),
                "ééééé".to_string(),
                "x".repeat(MAX_SECRET_LITERAL_BYTES + 1),
                "abcdefgh".to_string(),
            ],
        );
        assert_eq!(dropped, 0);
        assert_eq!(list, vec!["abcdefgh".to_string(), "abcdef".to_string()]);
    }

    #[test]
    fn long_tokens_are_redacted_whole() {
        let token = format!("sk-{}", "a1B2".repeat(1000));
        assert_eq!(s(&format!("k {token} end")), format!("k {REDACTED} end"));
        let tg = format!("123456789:{}", "A".repeat(3000));
        assert_eq!(s(&format!("bot{tg}/x")), format!("bot{REDACTED}/x"));
        let bearer = format!("Bearer {}", "ab.CD".repeat(500));
        assert_eq!(s(&bearer), format!("Bearer {REDACTED}"));
    }

    #[test]
    fn pem_blocks() {
        let pem = "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----\ntail";
        assert_eq!(s(pem), format!("key:\n{REDACTED}\ntail"));
        let open = "x -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAA";
        assert_eq!(s(open), format!("x {REDACTED}"));
        let plain = "-----BEGIN PRIVATE KEY-----\nAAA\n-----END PRIVATE KEY-----";
        assert_eq!(s(plain), REDACTED);
        let two = format!("{plain} mid {plain}");
        assert_eq!(s(&two), format!("{REDACTED} mid {REDACTED}"));
        // Public material stays.
        let cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
        assert_eq!(s(cert), cert);
    }

    #[test]
    fn scrub_is_idempotent_and_never_panics() {
        let mut rng = crate::testkit::XorShift(0x9E37_79B9_7F4A_7C15u64);
        let mut next = move || rng.next();
        let pieces = [
            "sk-",
            "ghp_",
            "token",
            "=",
            ":",
            " ",
            "\n",
            "\"",
            "'",
            "password",
            "Bearer ",
            "-----BEGIN PRIVATE KEY-----",
            "-----END PRIVATE KEY-----",
            "AKIA",
            "1234567",
            "abcdefghijklmnopqrstuvwxyz",
            "ABCDEF0123",
            "é",
            "💩",
            "\\",
            "&",
            "[REDACTED]",
            "api_key",
            "xoxb-",
            ";",
            "}",
        ];
        for _ in 0..3000 {
            let n = (next() % 24) as usize;
            let mut input = String::new();
            for _ in 0..n {
                let p = pieces[(next() % pieces.len() as u64) as usize];
                input.push_str(p);
            }
            let once = s(&input);
            let twice = s(&once);
            assert_eq!(once, twice, "not idempotent for {input:?}");
        }
        // Random bytes, lossily decoded.
        for _ in 0..500 {
            let len = (next() % 300) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            let text = String::from_utf8_lossy(&bytes);
            let _ = scrub(&text);
        }
    }

    #[test]
    fn huge_input_is_fine() {
        let big = "word token password ".repeat(20_000);
        assert!(matches!(scrub(&big), Cow::Borrowed(_)));
        let unterminated = format!("-----BEGIN PRIVATE KEY-----{}", "A".repeat(100_000));
        assert_eq!(s(&unterminated), REDACTED);
    }
}
