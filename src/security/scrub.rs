//! Credential scrubbing (interim: literal secrets only; the pattern set lands with the
//! security module).

use std::borrow::Cow;
use std::sync::RwLock;

pub const MIN_SECRET_LITERAL_CHARS: usize = 6;
pub const MAX_SECRET_LITERALS: usize = 64;

static LITERALS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Remember configured secret values so they are replaced wherever they appear.
pub fn install_secret_literals(values: impl IntoIterator<Item = String>) {
    if let Ok(mut l) = LITERALS.write() {
        for v in values {
            if v.chars().count() >= MIN_SECRET_LITERAL_CHARS
                && l.len() < MAX_SECRET_LITERALS
                && !l.contains(&v)
            {
                l.push(v);
            }
        }
    }
}

/// Replace secrets in `s` by `[REDACTED]`.
pub fn scrub(s: &str) -> Cow<'_, str> {
    let Ok(l) = LITERALS.read() else {
        return Cow::Borrowed(s);
    };
    let mut out = Cow::Borrowed(s);
    for lit in l.iter() {
        if out.contains(lit.as_str()) {
            out = Cow::Owned(out.replace(lit.as_str(), "[REDACTED]"));
        }
    }
    out
}
