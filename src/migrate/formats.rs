//! The peers' config formats, read through the JSON reader (`crate::json`) into one value
//! tree, so every peer reader works on one shape and every syntax error has a line:
//!
//! - JSON5 (OpenClaw's `openclaw.json`): one pass drops `//` and `/* */` comments and
//!   trailing commas, quotes unquoted keys and turns single-quoted strings into
//!   double-quoted ones; what else JSON5 allows (hex numbers, `Infinity`) is an error.
//! - TOML (ZeroClaw's `config.toml`): each `key = value` line, `[table]` and
//!   `[[array of tables]]` header becomes one `[[path...], value]` entry of a JSON array,
//!   and [`tree`] builds the tables from them. Values are converted like JSON5 (`=` in
//!   inline tables is `:`, `#` starts a comment); bare words that are not `true`, `false`
//!   or an integer (floats, dates) become strings. Multi-line strings, `\e` and `\U`
//!   escapes are errors.
//! - YAML, the subset of PicoClaw's `.security.yml` (nested mappings, `- item` lists,
//!   quoted or plain scalars): one entry per scalar the same way; every value is a string.
//!
//! Line breaks are kept where they were (comments become nothing, line by line), so the
//! JSON reader's line numbers are the original file's.
//!
//! # Bounds
//! One pass over the input, output at most about twice its size; no recursion (a value's
//! nesting is a counter; [`tree`] walks each entry's path in a loop). The caller bounds
//! the input size.
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O (`yoctoclaw migrate` calls them
//! on the main thread).

use crate::json::{self, SyntaxError, push_escaped};
use miniserde::json::{Object, Value};

/// A peer config file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Json5,
    Toml,
    Yaml,
}

impl Format {
    pub fn name(self) -> &'static str {
        ["JSON", "JSON5", "TOML", "YAML"][self as usize]
    }
}

/// Parse a config file's text into a value tree.
#[inline(never)]
pub fn parse(text: &str, format: Format) -> Result<Value, SyntaxError> {
    let converted;
    let json_text = match format {
        Format::Json => text,
        Format::Json5 => {
            let mut out = String::with_capacity(text.len() + 64);
            value(text, 0, &mut out, false);
            converted = out;
            &converted
        }
        Format::Toml => {
            converted = toml(text);
            &converted
        }
        Format::Yaml => {
            converted = yaml(text);
            &converted
        }
    };
    let v = json::parse_value(json_text)?;
    Ok(match format {
        Format::Toml | Format::Yaml => tree(v),
        _ => v,
    })
}

fn word_byte(c: u8, toml: bool) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || (toml && b"-+.:".contains(&c))
}

/// Convert a JSON5 text, or one TOML value, from `i` on to JSON into `out`. A TOML value
/// ends at the end of its line outside brackets; returns where conversion stopped.
fn value(src: &str, mut i: usize, out: &mut String, toml: bool) -> usize {
    let b = src.as_bytes();
    let mut depth = 0usize;
    let mut comma = false;
    while let Some(&c) = b.get(i) {
        let next = b.get(i + 1).copied();
        if c == b'\n' && toml && depth == 0 {
            break;
        }
        // Whitespace and comments pass before a pending comma.
        if c.is_ascii_whitespace() {
            out.push(c as char);
            i += 1;
            continue;
        }
        if (toml && c == b'#') || (!toml && c == b'/' && next == Some(b'/')) {
            while b.get(i).is_some_and(|&c| c != b'\n') {
                i += 1;
            }
            continue;
        }
        if !toml && c == b'/' && next == Some(b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                if b[i] == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 2;
            continue;
        }
        if comma {
            comma = false;
            if c != b'}' && c != b']' {
                out.push(',');
            }
        }
        match c {
            b',' => {
                comma = true;
                i += 1;
                continue;
            }
            b'"' | b'\'' => {
                i = string(src, i, out, toml);
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'=' if toml => {
                out.push(':');
                i += 1;
                continue;
            }
            _ if word_byte(c, toml) => {
                let start = i;
                while b.get(i).is_some_and(|&c| word_byte(c, toml)) {
                    i += 1;
                }
                let word = &src[start..i];
                let rest = src[i..].trim_start_matches([' ', '\t']);
                let key = rest.starts_with(':') || (toml && rest.starts_with('='));
                let plain = !toml || word == "true" || word == "false";
                match word.parse::<i64>() {
                    _ if key => push_escaped(out, word),
                    _ if plain => out.push_str(word),
                    Ok(n) => out.push_str(&n.to_string()),
                    Err(_) => push_escaped(out, word),
                }
                continue;
            }
            _ => {}
        }
        // Copy one whole character (multi-byte ones included).
        let len = src[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&src[i..i + len]);
        i += len;
    }
    i
}

/// Copy the string starting at `start` (either quote) as a double-quoted JSON string;
/// returns the index after it. TOML's single-quoted strings have no escapes. An
/// unterminated string is copied as is for the JSON reader to report.
fn string(src: &str, start: usize, out: &mut String, toml: bool) -> usize {
    let quote = src.as_bytes()[start] as char;
    let literal = toml && quote == '\'';
    out.push('"');
    let mut chars = src[start + 1..].char_indices();
    while let Some((k, ch)) = chars.next() {
        match ch {
            '\\' if literal => out.push_str("\\\\"),
            '\\' => match chars.next() {
                Some((_, '\'')) => out.push('\''),
                Some((_, '\n')) => {} // line continuation
                Some((_, e)) => {
                    out.push('\\');
                    out.push(e);
                }
                None => out.push('\\'),
            },
            '"' if quote == '\'' => out.push_str("\\\""),
            c if c == quote => {
                out.push('"');
                return start + 1 + k + 1;
            }
            c => out.push(c),
        }
    }
    src.len()
}

/// `a."b.c".d` as JSON strings, each followed by a comma.
fn keys(name: &str, out: &mut String) {
    let mut part = String::new();
    let mut quote = None;
    for c in name.chars().chain(['.']) {
        match (quote, c) {
            (None, '.') => {
                push_escaped(out, part.trim());
                out.push(',');
                part.clear();
            }
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => part.push(c),
        }
    }
}

/// TOML text as a JSON array of `[[path...], value]` entries (see the module doc), ended
/// by `null`.
#[inline(never)]
fn toml(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len() * 2 + 8);
    out.push('[');
    // The current table's path, as `"a","b",`.
    let mut table = String::new();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let end = src[i..].find('\n').map_or(src.len(), |n| i + n);
        let line = &src[i..end];
        match c {
            b'\n' => {
                out.push('\n');
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' => {}
            b'[' => {
                let array = line.starts_with("[[");
                let name = line.trim_start_matches('[').split(']').next().unwrap_or("");
                table.clear();
                keys(name, &mut table);
                out.push_str("[[");
                out.push_str(table.trim_end_matches(','));
                out.push_str(if array { "],[{}]]," } else { "],{}]," });
            }
            _ => {
                let Some(eq) = line.find('=') else {
                    // Not TOML: the JSON reader reports this line.
                    out.push_str(line);
                    i = end;
                    continue;
                };
                out.push_str("[[");
                out.push_str(&table);
                keys(&line[..eq], &mut out);
                out.pop();
                out.push_str("],");
                i = value(src, i + eq + 1, &mut out, true);
                out.push_str("],");
                continue;
            }
        }
        i = end;
    }
    out.push_str("null]");
    out
}

/// A YAML scalar without its quotes (or, plain, without a trailing comment).
fn scalar(s: &str) -> &str {
    let s = s.trim();
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.split(q).next()) {
            return inner;
        }
    }
    s.split(" #").next().unwrap_or(s).trim()
}

/// The YAML subset as a JSON array of entries (see the module doc), ended by `null`: a
/// list item's entry is its list's path with the item in a one-element array.
#[inline(never)]
fn yaml(src: &str) -> String {
    let mut out = String::from("[");
    // (indent, key) of the mappings the current line is in.
    let mut stack: Vec<(usize, &str)> = Vec::new();
    for line in src.lines() {
        let body = line.trim();
        let indent = line.len() - line.trim_start().len();
        let item = body
            .strip_prefix('-')
            .filter(|r| r.is_empty() || r.starts_with(' '));
        let (key, v) = match (item, body.split_once(':')) {
            _ if body.is_empty() || body.starts_with('#') || body == "---" => (None, None),
            (Some(v), _) => (None, Some(v)),
            (None, Some((k, v))) => (Some(scalar(k)), Some(v.trim())),
            (None, None) => (None, None),
        };
        if let Some(v) = v {
            while stack
                .last()
                .is_some_and(|&(i, _)| i > indent || (item.is_none() && i == indent))
            {
                stack.pop();
            }
            match key {
                Some(k) if v.is_empty() => stack.push((indent, k)),
                _ => {
                    out.push_str("[[");
                    for k in stack.iter().map(|s| s.1).chain(key) {
                        push_escaped(&mut out, k);
                        out.push(',');
                    }
                    if out.ends_with(',') {
                        out.pop();
                    }
                    out.push_str(if item.is_some() { "],[" } else { "]," });
                    push_escaped(&mut out, scalar(v));
                    out.push_str(if item.is_some() { "]]," } else { "]," });
                }
            }
        }
        out.push('\n');
    }
    out.push_str("null]");
    out
}

/// The member `k` of `o`, inserted as `null` when missing (so always `Some`).
#[inline(never)]
fn member<'a>(o: &'a mut Object, k: &str) -> Option<&'a mut Value> {
    if !o.contains_key(k) {
        o.insert(k.to_string(), Value::Null);
    }
    o.get_mut(k)
}

/// The object the `[[path...], value]` entries describe. A path step into a list goes to
/// its last element (TOML's array of tables); a list value meeting a list appends to it;
/// an empty object (a table header) keeps what is there.
#[inline(never)]
pub fn tree(entries: Value) -> Value {
    let mut root = Object::new();
    let Value::Array(list) = entries else {
        return Value::Object(root);
    };
    'entries: for e in list {
        let Value::Array(mut e) = e else { continue };
        let (Some(v), Some(Value::Array(path))) = (e.pop(), e.pop()) else {
            continue;
        };
        let Some((Value::String(last), parents)) = path.split_last() else {
            continue;
        };
        let mut cur = &mut root;
        for k in parents {
            let Value::String(k) = k else {
                continue 'entries;
            };
            let Some(s) = member(cur, k) else {
                continue 'entries;
            };
            if !matches!(s, Value::Object(_) | Value::Array(_)) {
                *s = Value::Object(Object::new());
            }
            cur = match s {
                Value::Object(o) => o,
                Value::Array(a) => match a.last_mut() {
                    Some(Value::Object(o)) => o,
                    _ => continue 'entries,
                },
                _ => continue 'entries,
            };
        }
        match (member(cur, last), v) {
            (Some(Value::Array(a)), Value::Array(b)) => a.extend(b),
            (Some(Value::Object(_)), Value::Object(o)) if o.is_empty() => {}
            (Some(s), v) => *s = v,
            (None, _) => {}
        }
    }
    Value::Object(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toml_ok(text: &str) -> Value {
        parse(text, Format::Toml).unwrap_or_else(|e| panic!("{e}\n{}", toml(text)))
    }

    #[test]
    fn openclaw_style_json5_becomes_json() {
        let src = r#"// ~/.openclaw/openclaw.json
{
  agents: {
    defaults: {
      model: { primary: 'anthropic/claude-opus-4-6', fallbacks: ["openai/gpt-5.2",], },
      /* a block
         comment */ workspace: "~/.openclaw/workspace",
    },
  },
  env: { vars: { OPENROUTER_API_KEY: 'sk-or-it\'s', $odd_key: "a//b /* not */" } },
  list: [1, 2, 3,],
  flags: { on: true, off: false, none: null },
}
"#;
        let v = parse(src, Format::Json5).unwrap();
        assert_eq!(
            json::path(&v, &["agents", "defaults", "model", "primary"]).and_then(json::as_str),
            Some("anthropic/claude-opus-4-6")
        );
        assert_eq!(
            json::path(&v, &["env", "vars", "OPENROUTER_API_KEY"]).and_then(json::as_str),
            Some("sk-or-it's")
        );
        assert_eq!(
            json::path(&v, &["env", "vars", "$odd_key"]).and_then(json::as_str),
            Some("a//b /* not */")
        );
        assert_eq!(
            json::get(&v, "list")
                .and_then(json::as_array)
                .map(|a| a.len()),
            Some(3)
        );
        assert_eq!(
            json::path(&v, &["flags", "on"]).and_then(json::as_bool),
            Some(true)
        );
        // Line numbers survive: the block comment's line break is kept.
        let mut out = String::new();
        value(src, 0, &mut out, false);
        assert_eq!(out.lines().count(), src.lines().count());
    }

    #[test]
    fn json5_errors_keep_their_line() {
        let e = parse("{\n  // c\n  a: 1,\n  b: Infinity,\n}", Format::Json5).unwrap_err();
        assert_eq!(e.line, 4);
        // Unterminated strings and comments never panic.
        for s in ["{a: 'x", "/* x", "'", "{\"a\\", "é'\\", "{a:1,,}"] {
            let _ = parse(s, Format::Json5);
        }
    }

    #[test]
    fn toml_as_the_peers_write_it() {
        let v = toml_ok(
            r#"
# comment
api_key = "sk-test-1" # trailing
default_model = 'anthropic/claude-sonnet-4'
default_temperature = 0.7
schema_version = 3
neg = -5
on = true
when = 2026-01-02T03:04:05Z
path = 'C:\dir'

[model_providers."anthropic-custom:https://x.test/a"]
name = "anthropic-custom"

[channels_config.telegram]
bot_token = "123:ABC"
allowed_users = ["@ada", "12345",
  # comment in an array
  "67",
]

[[cron.jobs]]
id = "a"
schedule = { kind = "cron", expr = "0 7 * * *", tz = "UTC", tags = ["x", "y"] }

[[cron.jobs]]
id = "b"
schedule = { kind = "every", every_ms = 60000 }
rules = [{ hint = "fast" }, {}]
esc = "tab\there \"q\" \u00e9"

[cron]
enabled = true
"#,
        );
        assert_eq!(json::str_at(&v, "api_key"), Some("sk-test-1"));
        assert_eq!(
            json::str_at(&v, "default_model"),
            Some("anthropic/claude-sonnet-4")
        );
        assert_eq!(json::str_at(&v, "default_temperature"), Some("0.7"));
        assert_eq!(json::get(&v, "neg").and_then(json::as_i64), Some(-5));
        assert_eq!(json::get(&v, "on").and_then(json::as_bool), Some(true));
        assert_eq!(json::str_at(&v, "when"), Some("2026-01-02T03:04:05Z"));
        assert_eq!(json::str_at(&v, "path"), Some("C:\\dir"));
        let key = "anthropic-custom:https://x.test/a";
        assert!(json::path(&v, &["model_providers", key, "name"]).is_some());
        let users = json::path(&v, &["channels_config", "telegram", "allowed_users"]);
        assert_eq!(users.and_then(json::as_array).map(|a| a.len()), Some(3));
        let jobs = json::path(&v, &["cron", "jobs"])
            .and_then(json::as_array)
            .unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(
            json::path(&jobs[0], &["schedule", "expr"]).and_then(json::as_str),
            Some("0 7 * * *")
        );
        assert_eq!(
            json::path(&jobs[1], &["schedule", "every_ms"]).and_then(json::as_u64),
            Some(60000)
        );
        assert_eq!(json::str_at(&jobs[1], "esc"), Some("tab\there \"q\" é"));
        assert_eq!(
            json::path(&v, &["cron", "enabled"]).and_then(json::as_bool),
            Some(true)
        );
    }

    #[test]
    fn toml_errors_name_their_line() {
        for (text, line) in [
            ("a = 1\nb = \"\"\"x\"\"\"\n", 2),
            ("a = 1\n\nb = inf x\n", 3),
            ("a = \"open\nb = 1", 1),
            ("a = 1\nnot toml\n", 2),
            ("x = [1,\n 2\n", 3),
        ] {
            let e = parse(text, Format::Toml).expect_err(text);
            assert_eq!(e.line, line, "{text:?}: {e}");
        }
    }

    #[test]
    fn garbage_never_panics_and_errors_point_inside_the_text() {
        let mut rng = crate::testkit::XorShift(0x2545_f491_4f6c_dd1d);
        let alphabet = b"ab=\"'[]{},.#\n \\u0123_-+:xtf/*";
        for _ in 0..3000 {
            let len = rng.below(60) as usize;
            let s: Vec<u8> = (0..len)
                .map(|_| alphabet[rng.index(alphabet.len())])
                .collect();
            let text = String::from_utf8_lossy(&s).into_owned();
            for f in [Format::Json5, Format::Toml, Format::Yaml] {
                if let Err(e) = parse(&text, f) {
                    assert!(
                        e.line >= 1 && e.line <= text.lines().count().max(1) + 1,
                        "{f:?} {e} {text:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn security_yml_becomes_a_tree() {
        let y = "# secrets\nmodel_list:\n  gpt-5.4:\n    api_keys:\n      - \"sk-test-1\"\n      - 'sk-test-2'\n  claude.x/y:\n    api_key: sk-test-3 # note\nchannels:\n  telegram:\n    token: \"123:ABC\"\nweb:\n  brave:\n    api_keys:\n    - BSA\n";
        let v = parse(y, Format::Yaml).unwrap();
        let at = |p: &[&str]| crate::migrate::strs(json::path(&v, p));
        assert_eq!(
            at(&["model_list", "gpt-5.4", "api_keys"]),
            ["sk-test-1", "sk-test-2"]
        );
        assert_eq!(at(&["model_list", "claude.x/y", "api_key"]), ["sk-test-3"]);
        assert_eq!(at(&["channels", "telegram", "token"]), ["123:ABC"]);
        assert_eq!(at(&["web", "brave", "api_keys"]), ["BSA"]);
    }
}
