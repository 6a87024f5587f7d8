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
//!    OpenRouter, Groq, GitHub, Slack, AWS, Google, Hugging Face, Telegram bot tokens),
//!    `Bearer`/`Basic` credentials, `key=value` style assignments of secret-named keys (the key
//!    is kept, the value redacted) and PEM private-key blocks.
//!
//! Every match becomes [`REDACTED`]. The scrubber errs on the side of redacting, but it avoids
//! ordinary prose: the word "token" or "password" in a sentence is kept; an assignment with `:`
//! or a spaced ` = ` is only redacted when the value looks like a credential (it has a digit,
//! mixed case or is long), or is quoted.
//!
//! # Bounds
//! - At most [`MAX_SECRET_LITERALS`] literals are stored; later ones are ignored with a warning.
//! - Literals shorter than [`MIN_SECRET_LITERAL_CHARS`] characters are ignored (they would redact
//!   ordinary words), and so are literals longer than [`MAX_SECRET_LITERAL_BYTES`] (a private key
//!   that long is caught by the PEM pattern).
//! - Time is linear in the input length (regex-lite never backtracks exponentially) plus one
//!   substring search per literal; callers cap the size of what they scrub.
//! - When nothing matches, nothing is allocated: [`scrub`] returns `Cow::Borrowed`.

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

/// Installed literal secrets, longest first (so a secret that contains another is replaced whole).
static LITERALS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Adds the values of configured secrets (API keys, bot token, `secrets.env` values) to the
/// literal list. Values are trimmed; empty, too short, too long and duplicate values are skipped.
/// Additive: calling it again adds more (up to [`MAX_SECRET_LITERALS`] in all).
pub fn install_secret_literals(values: impl IntoIterator<Item = String>) {
    let mut dropped = 0usize;
    {
        let mut list = LITERALS
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
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
    }
    // Logged after the lock is released: the logger itself scrubs through the same list.
    if dropped > 0 {
        log::warn!(
            "scrub: {dropped} secret value(s) not registered (limit is {MAX_SECRET_LITERALS})"
        );
    }
}

/// Removes credentials from `s`: installed literals first, then the known shapes.
/// Returns `Cow::Borrowed(s)` when nothing had to be redacted.
pub fn scrub(s: &str) -> Cow<'_, str> {
    let mut cur = Cow::Borrowed(s);
    scrub_literals(&mut cur);
    let p = patterns();
    if cur.contains("-----BEGIN") {
        apply(&mut cur, &p.pem, |_| REDACTED.to_string());
    }
    if TOKEN_TRIGGERS.iter().any(|t| cur.contains(t)) {
        apply(&mut cur, &p.prefixed, |_| REDACTED.to_string());
    }
    if cur.contains(':') {
        apply(&mut cur, &p.telegram, |_| REDACTED.to_string());
    }
    if contains_ascii_ci(&cur, "bearer") || contains_ascii_ci(&cur, "basic") {
        apply(&mut cur, &p.auth_scheme, replace_auth_scheme);
    }
    if ASSIGNMENT_TRIGGERS
        .iter()
        .any(|t| contains_ascii_ci(&cur, t))
    {
        apply(&mut cur, &p.assignment, replace_assignment);
    }
    cur
}

/// Substrings one of which must be present for the prefixed-token pattern to be worth running.
const TOKEN_TRIGGERS: &[&str] = &[
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
    "xox",
    "AKIA",
    "ASIA",
    "AIza",
    "hf_",
];

/// Case-insensitive substrings one of which must be present for the assignment pattern to run.
const ASSIGNMENT_TRIGGERS: &[&str] = &["key", "token", "passw", "secret"];

struct Patterns {
    pem: Regex,
    prefixed: Regex,
    telegram: Regex,
    auth_scheme: Regex,
    assignment: Regex,
}

fn patterns() -> &'static Patterns {
    static CELL: OnceLock<Patterns> = OnceLock::new();
    CELL.get_or_init(|| Patterns {
        pem: compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
        ),
        prefixed: compile(concat!(
            r"\b(?:",
            r"sk-[A-Za-z0-9_-]{20,}",                  // OpenAI, sk-proj-, sk-ant- (Anthropic), sk-or-v1- (OpenRouter)
            r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}", // Stripe-style secret keys
            r"|gsk_[A-Za-z0-9]{20,}",                  // Groq
            r"|gh[pousr]_[A-Za-z0-9]{20,}",            // GitHub classic tokens
            r"|github_pat_[A-Za-z0-9_]{20,}",          // GitHub fine-grained tokens
            r"|xox[abprs]-[A-Za-z0-9-]{10,}",          // Slack
            r"|(?:AKIA|ASIA)[A-Z0-9]{16}\b",           // AWS access key ids
            r"|AIza[A-Za-z0-9_-]{35}",                 // Google API keys
            r"|hf_[A-Za-z0-9]{30,}",                   // Hugging Face
            r")",
        )),
        // No leading \b: the token follows "bot" in Bot API URLs (`/bot123456:AA...`).
        telegram: compile(r"[0-9]{6,12}:[A-Za-z0-9_-]{30,}"),
        auth_scheme: compile(r"(?i)\b(bearer|basic)([ \t]+)([A-Za-z0-9._~+/=-]{8,})"),
        assignment: compile(concat!(
            r"(?i)(\b(?:[a-z0-9]+[_.-])*",
            r"(?:api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|token|password|passwd|secret)",
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

/// Runs `re` over `cur` and keeps the result only when it changed something.
fn apply(cur: &mut Cow<'_, str>, re: &Regex, replacer: impl FnMut(&Captures<'_>) -> String) {
    let replaced = match re.replace_all(cur.as_ref(), replacer) {
        Cow::Owned(o) => Some(o),
        Cow::Borrowed(_) => None,
    };
    if let Some(o) = replaced
        && o != cur.as_ref()
    {
        *cur = Cow::Owned(o);
    }
}

fn replace_auth_scheme(caps: &Captures<'_>) -> String {
    let all = caps.get(0).map_or("", |m| m.as_str());
    let (Some(scheme), Some(gap), Some(value)) = (caps.get(1), caps.get(2), caps.get(3)) else {
        return all.to_string();
    };
    if !looks_like_credential(value.as_str()) {
        return all.to_string();
    }
    format!("{}{}{REDACTED}", scheme.as_str(), gap.as_str())
}

fn replace_assignment(caps: &Captures<'_>) -> String {
    let all = caps.get(0).map_or("", |m| m.as_str());
    let Some(key_and_sep) = caps.get(1).map(|m| m.as_str()) else {
        return all.to_string();
    };
    if let Some(v) = caps.get(5) {
        if v.as_str().is_empty() || v.as_str() == REDACTED {
            return all.to_string();
        }
        return format!("{key_and_sep}\"{REDACTED}\"");
    }
    if let Some(v) = caps.get(6) {
        if v.as_str().is_empty() || v.as_str() == REDACTED {
            return all.to_string();
        }
        return format!("{key_and_sep}'{REDACTED}'");
    }
    let Some(v) = caps.get(7).map(|m| m.as_str()) else {
        return all.to_string();
    };
    if v.starts_with(REDACTED) || v.starts_with('[') && REDACTED.starts_with(v) {
        return all.to_string();
    }
    // `key=value` glued together (env files, query strings) is always a credential; `key: value`
    // and `key = value` are also how prose and code read, so the value must look like one.
    let glued = caps.get(3).is_some_and(|m| m.as_str() == "=")
        && caps.get(2).is_some_and(|m| m.as_str().is_empty())
        && caps.get(4).is_some_and(|m| m.as_str().is_empty());
    if glued || looks_like_credential(v) {
        format!("{key_and_sep}{REDACTED}")
    } else {
        all.to_string()
    }
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

/// ASCII case-insensitive substring test; `needle` must be lowercase ASCII.
fn contains_ascii_ci(hay: &str, needle: &str) -> bool {
    let n = needle.as_bytes();
    !n.is_empty()
        && hay
            .as_bytes()
            .windows(n.len())
            .any(|w| w.eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> String {
        scrub(x).into_owned()
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
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
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
