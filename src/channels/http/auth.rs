//! The bearer token check: `Authorization: Bearer <token>` compared with the configured
//! token in constant time (the time taken depends on the configured token's length only,
//! never on how much of a guess is right).
//!
//! # Threads
//! Any thread: pure functions over their arguments.

/// Whether `given` equals `expected`, in time that depends on `expected.len()` only.
pub fn ct_eq(given: &[u8], expected: &[u8]) -> bool {
    // Every byte of `expected` is compared, with the given byte at the same place (or 0
    // past its end); a difference in length is one more difference. No early return.
    let mut diff = u8::from(given.len() != expected.len());
    for (i, e) in expected.iter().enumerate() {
        let g = given.get(i).copied().unwrap_or(0);
        diff |= std::hint::black_box(g ^ e);
    }
    std::hint::black_box(diff) == 0
}

/// The token of an `Authorization` value of the Bearer scheme (the scheme's name in any
/// case, RFC 9110), else `None`.
pub fn bearer(authorization: Option<&str>) -> Option<&str> {
    let v = authorization?.trim();
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Whether a request's `Authorization` value carries `token`.
pub fn authorized(authorization: Option<&str>, token: &str) -> bool {
    bearer(authorization).is_some_and(|t| ct_eq(t.as_bytes(), token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_compare_is_equality() {
        let t = b"s3cret-token-0123456789";
        assert!(ct_eq(t, t));
        assert!(!ct_eq(b"s3cret-token-012345678X", t), "last byte");
        assert!(!ct_eq(b"X3cret-token-0123456789", t), "first byte");
        assert!(!ct_eq(b"s3cret-token-012345678", t), "a prefix");
        assert!(!ct_eq(b"s3cret-token-01234567890", t), "longer");
        assert!(!ct_eq(b"", t));
        assert!(!ct_eq(t, b""));
        assert!(ct_eq(b"", b""));
        // A given token padded with the zeros the comparison reads past its end.
        assert!(!ct_eq(b"ab", b"ab\0"));
        assert!(!ct_eq(b"ab\0", b"ab"));
    }

    #[test]
    fn bearer_tokens_are_taken_from_the_header() {
        assert_eq!(bearer(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer(Some("bearer   abc ")), Some("abc"));
        assert_eq!(bearer(Some("Basic YWJj")), None);
        assert_eq!(bearer(Some("Bearer")), None);
        assert_eq!(bearer(Some("Bearer  ")), None);
        assert_eq!(bearer(None), None);
        assert!(authorized(Some("Bearer abc"), "abc"));
        assert!(!authorized(Some("Bearer abd"), "abc"));
        assert!(!authorized(Some("abc"), "abc"));
    }
}
