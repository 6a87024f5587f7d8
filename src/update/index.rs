//! The release index `update.url` names, and the downloads it points at.
//!
//! The index is a small JSON document (`scripts/package.sh` writes it as
//! `dist/index.json`):
//!
//! ```json
//! {"version": "0.2.0",
//!  "boards": {"aarch64-generic": {"url": "yoctoclaw-0.2.0-aarch64-generic.tar.gz",
//!                                 "sha256": "<64 hex digits>",
//!                                 "minisig": "yoctoclaw-0.2.0-aarch64-generic.tar.gz.minisig"}}}
//! ```
//!
//! One entry per board profile; `url` and `minisig` are absolute (`https://...`) or
//! relative to the index's own URL. Only this board's entry is read; unknown keys are
//! ignored, so later releases can add some.
//!
//! # Bounds
//! The index is read up to `MAX_INDEX_BYTES`; each download has its own limit and
//! `DOWNLOAD_TIMEOUT_SECS`.
//!
//! # Threads
//! The main thread of `yoctoclaw update` (blocked by each download, within its timeout).

use super::{DOWNLOAD_TIMEOUT_SECS, MAX_INDEX_BYTES, UpdateError};
use crate::json;
use crate::provider::http::{HttpError, agent, map_error, note_date};

/// What the index says.
#[derive(Debug, PartialEq)]
pub struct Index {
    pub version: String,
    /// This board's archive, when the release has one.
    pub entry: Option<Entry>,
}

/// One board's archive.
#[derive(Debug, PartialEq)]
pub struct Entry {
    /// Absolute URLs (resolved against the index's).
    pub url: String,
    pub sha256: String,
    pub minisig: String,
}

/// Fetch and read the index at `url`, with the entry of `board`.
pub fn fetch(url: &str, board: &str) -> Result<Index, UpdateError> {
    let body = download(url, MAX_INDEX_BYTES)?;
    let text = std::str::from_utf8(&body).map_err(|_| UpdateError::Index("not JSON"))?;
    parse(text, url, board)
}

/// Read the index `text` fetched from `base`, with the entry of `board`.
pub fn parse(text: &str, base: &str, board: &str) -> Result<Index, UpdateError> {
    let bad = UpdateError::Index;
    let v = json::parse_value(text).map_err(|_| bad("not JSON"))?;
    let version = json::str_at(&v, "version")
        .filter(|s| !s.is_empty() && s.len() <= 64)
        .ok_or(bad("no \"version\""))?
        .to_string();
    let boards = json::get(&v, "boards")
        .and_then(json::as_object)
        .ok_or(bad("no \"boards\" object"))?;
    let entry = match boards.get(board) {
        Some(e) => {
            let field = |k| {
                json::str_at(e, k).ok_or(bad("this board's entry lacks a url, sha256 or minisig"))
            };
            Some(Entry {
                url: resolve(base, field("url")?),
                sha256: field("sha256")?.to_string(),
                minisig: resolve(base, field("minisig")?),
            })
        }
        None => None,
    };
    Ok(Index { version, entry })
}

/// `rel` against the URL `base` (absolute URLs as they are).
fn resolve(base: &str, rel: &str) -> String {
    if rel.contains("://") {
        return rel.to_string();
    }
    let dir = base.rsplit_once('/').map_or(base, |(d, _)| d);
    format!("{dir}/{}", rel.trim_start_matches('/'))
}

/// The numbers of version `v` (`1.2.3`; a leading `v` and a `-suffix` ignored).
fn numbers(v: &str) -> impl Iterator<Item = u64> + '_ {
    v.trim_start_matches('v')
        .split(['-', '+'])
        .next()
        .unwrap_or("")
        .split('.')
        .map(|n| n.parse().unwrap_or(0))
}

/// Whether version `a` is newer than `b` (number by number; a missing one is 0).
pub fn newer(a: &str, b: &str) -> bool {
    let (mut a, mut b) = (numbers(a), numbers(b));
    loop {
        let (x, y) = match (a.next(), b.next()) {
            (None, None) => return false,
            (x, y) => (x.unwrap_or(0), y.unwrap_or(0)),
        };
        if x != y {
            return x > y;
        }
    }
}

/// Whether `digest` is the hex text `hex` (either case).
pub fn hex_eq(digest: &[u8], hex: &str) -> bool {
    let hex = hex.trim().as_bytes();
    let nibble = |c: u8| char::from(c).to_digit(16);
    hex.len() == 2 * digest.len()
        && digest.iter().zip(hex.chunks_exact(2)).all(|(&d, h)| {
            nibble(h[0]).zip(nibble(h[1])) == Some((u32::from(d >> 4), u32::from(d & 15)))
        })
}

/// A download failure as the user reads it (never a host or a path).
fn said(e: ureq::Error) -> UpdateError {
    UpdateError::Download(match map_error(e) {
        HttpError::Timeout => "timed out",
        HttpError::TooLarge => return UpdateError::TooLarge,
        HttpError::Tls(t) => t.short(),
        HttpError::Unreachable(_) => "the server could not be reached",
        HttpError::Malformed(_) => "a malformed answer",
    })
}

/// GET `url`'s body, at most `limit` bytes (more: `TooLarge`).
pub fn download(url: &str, limit: u64) -> Result<Vec<u8>, UpdateError> {
    let mut resp = agent(DOWNLOAD_TIMEOUT_SECS).get(url).call().map_err(said)?;
    note_date(&resp, url);
    match resp.status().as_u16() {
        200 => resp
            .body_mut()
            .with_config()
            .limit(limit)
            .read_to_vec()
            .map_err(said),
        status => Err(UpdateError::Status(status)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_number() {
        assert!(newer("0.2.0", "0.1.9"));
        assert!(newer("0.10.0", "0.9.0"));
        assert!(newer("1.0", "0.99.99"));
        assert!(!newer("0.1.0", "0.1.0"));
        assert!(!newer("0.1.0-rc1", "0.1.0"));
        assert!(!newer("0.0.9", "0.1.0"));
        assert!(!newer("1.0", "1"));
        assert!(!newer("1", "1.0"));
        assert!(newer("v1.0.1", "1.0"));
        assert!(newer("1.0.5", "1"));
    }

    #[test]
    fn the_index_is_read_and_relative_urls_resolved() {
        let text = r#"{"version":"0.2.0","boards":{"aarch64-generic":{"url":"a.tar.gz","sha256":"AB","minisig":"https://x.test/a.minisig","size":5}},"extra":1}"#;
        let i = parse(text, "https://r.test/rel/index.json", "aarch64-generic").unwrap();
        assert_eq!(i.version, "0.2.0");
        let e = i.entry.unwrap();
        assert_eq!(e.url, "https://r.test/rel/a.tar.gz");
        assert_eq!(e.sha256, "AB");
        assert_eq!(e.minisig, "https://x.test/a.minisig");
        let other = parse(text, "https://r.test/rel/index.json", "milkv-duo-64mb").unwrap();
        assert_eq!(other.entry, None);
        for bad in [
            "",
            "[]",
            r#"{"boards":{}}"#,
            r#"{"version":"1","boards":[]}"#,
            r#"{"version":"1","boards":{"x":{"url":"u"}}}"#,
        ] {
            assert!(
                matches!(parse(bad, "https://r/i", "x"), Err(UpdateError::Index(_))),
                "{bad}"
            );
        }
        assert!(hex_eq(&[0xab, 0x01], "AB01"));
        assert!(hex_eq(&[0xab, 0x01], " ab01\n"));
        assert!(!hex_eq(&[0xab, 0x01], "ab02"));
        assert!(!hex_eq(&[0xab, 0x01], "ab0"));
        assert!(!hex_eq(&[0xab, 0x01], "ab01ff"));
        assert!(!hex_eq(&[0xab, 0x01], "+b01"));
        assert!(!hex_eq(&[0xab, 0x01], "xb01"));
    }
}
