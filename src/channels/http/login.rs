//! The status page's logins: `POST /login` with the API token (form-encoded, compared in
//! constant time) starts one, a random 128-bit id sent as the `yc_session` cookie
//! (`HttpOnly; SameSite=Strict; Path=/`, `Secure` behind a TLS proxy that says
//! `X-Forwarded-Proto: https`); the cookie opens `GET /` only, never the API. The token
//! itself is never put in a cookie.
//!
//! A login form posted from another origin (`Origin`, else `Referer`, not this `Host`)
//! is refused: no other site can log a browser in or out.
//!
//! # Bounds
//! At most `HTTP_PAGE_LOGINS` logins, each for `HTTP_PAGE_LOGIN_SECS`; a login past the
//! bound replaces the one that expires first. Expired ones are dropped on every look-up.
//!
//! # Threads
//! Executor thread (owned by the HTTP server); pure over the times it is given.

use super::auth::ct_eq;
use super::parse::PageHeaders;
use crate::limits::{HTTP_PAGE_LOGIN_SECS, HTTP_PAGE_LOGINS};
use std::time::{Duration, Instant};

/// The cookie's name.
pub const COOKIE: &str = "yc_session";

/// The logins held: their ids (32 hex digits) and when they expire.
#[derive(Debug, Default)]
pub struct Logins {
    entries: Vec<(String, Instant)>,
}

impl Logins {
    /// Start a login at `now`: its id, or `None` when the system has no randomness.
    pub fn start(&mut self, now: Instant) -> Option<String> {
        let mut bytes = [0u8; 16];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).ok()?;
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        self.prune(now);
        if self.entries.len() >= HTTP_PAGE_LOGINS
            && let Some(first) = (0..self.entries.len()).min_by_key(|&i| self.entries[i].1)
        {
            self.entries.swap_remove(first);
        }
        let until = now + Duration::from_secs(HTTP_PAGE_LOGIN_SECS);
        self.entries.push((id.clone(), until));
        Some(id)
    }

    /// Whether the `Cookie` header carries a login alive at `now`.
    pub fn valid(&mut self, cookie: Option<&str>, now: Instant) -> bool {
        self.prune(now);
        self.find(cookie).is_some()
    }

    /// End the login the `Cookie` header carries, if any.
    pub fn end(&mut self, cookie: Option<&str>) {
        if let Some(i) = self.find(cookie) {
            self.entries.swap_remove(i);
        }
    }

    /// Logins held now.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn prune(&mut self, now: Instant) {
        self.entries.retain(|(_, until)| *until > now);
    }

    /// The entry of the cookie's id; every entry is compared whole, in constant time.
    fn find(&self, cookie: Option<&str>) -> Option<usize> {
        let given = cookie_value(cookie?, COOKIE)?;
        let mut found = None;
        for (i, (id, _)) in self.entries.iter().enumerate() {
            if ct_eq(given.as_bytes(), id.as_bytes()) {
                found = Some(i);
            }
        }
        found
    }
}

/// The value of cookie `name` in a `Cookie` header (`a=1; b=2`).
pub fn cookie_value<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k.trim() == name).then(|| v.trim().trim_matches('"'))
    })
}

/// The `Set-Cookie` value of a new login (`Secure` when `https`).
pub fn set_cookie(id: &str, https: bool) -> String {
    format!(
        "{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={HTTP_PAGE_LOGIN_SECS}{}",
        if https { "; Secure" } else { "" }
    )
}

/// The `Set-Cookie` value that ends a login in the browser.
pub fn clear_cookie(https: bool) -> String {
    format!(
        "{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{}",
        if https { "; Secure" } else { "" }
    )
}

/// Whether a form post comes from this server's own page: its `Origin` (else its
/// `Referer`) is `http://` or `https://` and this `Host`. A request with neither (not
/// from a browser) is let through; `Origin: null` is not.
pub fn same_origin(p: &PageHeaders) -> bool {
    let Some(host) = p.host.as_deref() else {
        return false;
    };
    let from = match (&p.origin, &p.referer) {
        (Some(o), _) => o.as_str(),
        (None, Some(r)) => r.as_str(),
        (None, None) => return true,
    };
    let (rest, default) = if let Some(r) = from.strip_prefix("http://") {
        (r, ":80")
    } else if let Some(r) = from.strip_prefix("https://") {
        (r, ":443")
    } else {
        return false;
    };
    // The scheme's own port may be written or left out on either side.
    let strip = |h: &str| h.strip_suffix(default).unwrap_or(h).to_ascii_lowercase();
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    strip(authority) == strip(host)
}

/// The `token` field of an `application/x-www-form-urlencoded` body.
pub fn form_token(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    text.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == "token").then(|| url_decode(v)).flatten()
    })
}

/// Form decoding: `+` is a space, `%XX` a byte; `None` when not UTF-8 or malformed.
fn url_decode(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        out.push(match b {
            b'+' => b' ',
            b'%' => {
                let hi = (bytes.next()? as char).to_digit(16)?;
                let lo = (bytes.next()? as char).to_digit(16)?;
                (hi * 16 + lo) as u8
            }
            b => b,
        });
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logins_are_random_bounded_and_expire() {
        let mut l = Logins::default();
        let t0 = Instant::now();
        let a = l.start(t0).unwrap();
        let b = l.start(t0).unwrap();
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        let cookie = format!("x=1; {COOKIE}={a}; y=2");
        assert!(l.valid(Some(&cookie), t0));
        assert!(!l.valid(Some(&format!("{COOKIE}={}", &a[..31])), t0));
        assert!(!l.valid(Some("yc_session="), t0));
        assert!(!l.valid(None, t0));
        let later = t0 + Duration::from_secs(HTTP_PAGE_LOGIN_SECS + 1);
        assert!(!l.valid(Some(&cookie), later));
        assert!(l.is_empty());
        for _ in 0..3 * HTTP_PAGE_LOGINS {
            l.start(t0).unwrap();
            assert!(l.len() <= HTTP_PAGE_LOGINS);
        }
        let c = l.start(t0).unwrap();
        l.end(Some(&format!("{COOKIE}={c}")));
        assert!(!l.valid(Some(&format!("{COOKIE}={c}")), t0));
    }

    #[test]
    fn forms_and_origins_are_read() {
        assert_eq!(form_token(b"token=a%2Bb+c%25").as_deref(), Some("a+b c%"));
        assert_eq!(form_token(b"x=1&token=abc").as_deref(), Some("abc"));
        assert_eq!(form_token(b"token=%zz"), None);
        assert_eq!(form_token(b"tok=abc"), None);
        let p = |origin: Option<&str>, referer: Option<&str>| PageHeaders {
            host: Some("board:18790".into()),
            origin: origin.map(str::to_string),
            referer: referer.map(str::to_string),
            ..PageHeaders::default()
        };
        assert!(same_origin(&p(None, None)));
        assert!(same_origin(&p(Some("http://board:18790"), None)));
        assert!(same_origin(&p(Some("https://BOARD:18790"), None)));
        assert!(same_origin(&p(None, Some("http://board:18790/?x"))));
        assert!(!same_origin(&p(Some("null"), None)));
        assert!(!same_origin(&p(Some("http://evil.example"), None)));
        assert!(!same_origin(&p(Some("http://board:18790.evil"), None)));
        assert!(!same_origin(&p(
            Some("http://evil.example"),
            Some("http://board:18790/")
        )));
        assert!(!same_origin(&p(None, Some("http://board:1879/"))));
        // The scheme's own port, written on one side only; no Host at all.
        let q = |origin: &str, host: Option<&str>| PageHeaders {
            host: host.map(str::to_string),
            origin: Some(origin.to_string()),
            ..PageHeaders::default()
        };
        assert!(same_origin(&q(
            "https://Board.local",
            Some("board.local:443")
        )));
        assert!(same_origin(&q(
            "http://board.local:80",
            Some("board.local")
        )));
        assert!(!same_origin(&q(
            "https://board.local",
            Some("board.local:80")
        )));
        assert!(!same_origin(&q("http://board.local", None)));
        assert!(set_cookie("ab", true).ends_with("; Secure"));
        assert!(!set_cookie("ab", false).contains("Secure"));
    }
}
