//! JSON5 to JSON, for OpenClaw's `openclaw.json`: a single pass that drops `//` and
//! `/* */` comments and trailing commas, quotes unquoted keys and turns single-quoted
//! strings into double-quoted ones. The result goes to the ordinary JSON reader, which
//! reports anything else (hex numbers, `Infinity`) with its position.
//!
//! Line breaks are kept where they were (comments become spaces), so the reader's line
//! numbers are the original file's.
//!
//! # Bounds
//! One pass over the input, output at most about twice its size (quotes added around
//! keys, escapes); no recursion. The caller bounds the input size.

/// Rewrite JSON5 text as JSON text.
pub fn to_json(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len() + 64);
    let mut i = 0;
    let mut comma = false;
    while i < b.len() {
        let c = b[i];
        // Whitespace and comments pass (comments as spaces) before a pending comma.
        if c.is_ascii_whitespace() {
            out.push(c as char);
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
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
            }
            b'"' | b'\'' => i = string(src, i, &mut out),
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$')
                {
                    i += 1;
                }
                let word = &src[start..i];
                let mut j = i;
                while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                    j += 1;
                }
                if b.get(j) == Some(&b':') {
                    out.push('"');
                    out.push_str(word);
                    out.push('"');
                } else {
                    out.push_str(word);
                }
            }
            _ => {
                // Copy one whole character (multi-byte ones included).
                let len = src[i..].chars().next().map_or(1, char::len_utf8);
                out.push_str(&src[i..i + len]);
                i += len;
            }
        }
    }
    out
}

/// Copy the string starting at `start` (either quote) as a double-quoted JSON string;
/// returns the index after it. An unterminated string is copied as is for the JSON
/// reader to report.
fn string(src: &str, start: usize, out: &mut String) -> usize {
    let quote = src.as_bytes()[start] as char;
    out.push('"');
    let mut chars = src[start + 1..].char_indices();
    while let Some((k, ch)) = chars.next() {
        match ch {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

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
        let out = to_json(src);
        let v = json::parse_value(&out).unwrap_or_else(|e| panic!("{e}\n{out}"));
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
        assert_eq!(out.lines().count(), src.lines().count());
    }

    #[test]
    fn errors_keep_their_line() {
        let out = to_json("{\n  // c\n  a: 1,\n  b: Infinity,\n}");
        let e = json::parse_value(&out).unwrap_err();
        assert_eq!(e.line, 4);
        // Unterminated strings and comments never panic.
        for s in ["{a: 'x", "/* x", "'", "{\"a\\", "é'\\", "{a:1,,}"] {
            let _ = json::parse_value(&to_json(s));
        }
    }
}
