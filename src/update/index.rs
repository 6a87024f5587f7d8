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
//! relative to the index's own URL. Unknown keys are ignored, so later releases can add
//! some.
//!
//! # Bounds
//! The index is read up to `MAX_INDEX_BYTES`, at most `MAX_INDEX_BOARDS` entries are
//! taken; each download has its own limit and `DOWNLOAD_TIMEOUT_SECS`.
//!
//! # Threads
//! The main thread of `yoctoclaw update` (blocked by each download, within its timeout).

use super::{DOWNLOAD_TIMEOUT_SECS, MAX_INDEX_BYTES, UpdateError};
use crate::json;
use crate::provider::http::{HttpError, agent, get, map_error};

/// Most board entries taken from an index.
const MAX_INDEX_BOARDS: usize = 32;

/// What the index says.
#[derive(Debug, PartialEq)]
pub struct Index {
    pub version: String,
    pub boards: Vec<Entry>,
}

/// One board's archive.
#[derive(Debug, PartialEq)]
pub struct Entry {
    pub board: String,
    /// Absolute URLs (resolved against the index's).
    pub url: String,
    pub sha256: String,
    pub minisig: String,
}

/// A download failure as the user reads it (never a host or a path).
fn said(e: &HttpError) -> UpdateError {
    UpdateError::Download(match e {
        HttpError::Timeout => "timed out".into(),
        HttpError::TooLarge => return UpdateError::TooLarge,
        HttpError::Tls(t) => t.short().into(),
        HttpError::Unreachable(_) => "the server could not be reached".into(),
        HttpError::Malformed(_) => "a malformed answer".into(),
    })
}

/// Fetch and read the index at `url`.
pub fn fetch(url: &str) -> Result<Index, UpdateError> {
    let a = agent(DOWNLOAD_TIMEOUT_SECS);
    let (status, text, _) = get(&a, url, MAX_INDEX_BYTES, None).map_err(|e| match e {
        HttpError::TooLarge => UpdateError::Index("larger than 64 KiB".into()),
        other => said(&other),
    })?;
    if status != 200 {
        return Err(UpdateError::Download(format!("HTTP status {status}")));
    }
    parse(&text, url)
}

/// Read the index `text` fetched from `base`.
pub fn parse(text: &str, base: &str) -> Result<Index, UpdateError> {
    let bad = |m: &str| UpdateError::Index(m.into());
    let v = json::parse_value(text).map_err(|_| bad("not JSON"))?;
    let version = json::str_at(&v, "version")
        .filter(|s| !s.is_empty() && s.len() <= 64)
        .ok_or_else(|| bad("no \"version\""))?
        .to_string();
    let boards = json::get(&v, "boards")
        .and_then(json::as_object)
        .ok_or_else(|| bad("no \"boards\" object"))?;
    let mut out = Vec::with_capacity(boards.len().min(MAX_INDEX_BOARDS));
    for (name, e) in boards.iter().take(MAX_INDEX_BOARDS) {
        let field = |k: &str| json::str_at(e, k).map(|s| s.to_string());
        let (Some(url), Some(sha256), Some(minisig)) =
            (field("url"), field("sha256"), field("minisig"))
        else {
            return Err(bad("a board without url, sha256 and minisig"));
        };
        out.push(Entry {
            board: name.clone(),
            url: resolve(base, &url),
            sha256,
            minisig: resolve(base, &minisig),
        });
    }
    Ok(Index {
        version,
        boards: out,
    })
}

/// `rel` against the URL `base` (absolute URLs as they are).
fn resolve(base: &str, rel: &str) -> String {
    if rel.contains("://") {
        return rel.to_string();
    }
    let dir = base.rsplit_once('/').map_or(base, |(d, _)| d);
    format!("{dir}/{}", rel.trim_start_matches('/'))
}

/// The numbers of a version `1.2.3` (a `-suffix` ignored).
fn numbers(v: &str) -> Vec<u64> {
    v.trim_start_matches('v')
        .split(['-', '+'])
        .next()
        .unwrap_or("")
        .split('.')
        .map(|n| n.parse().unwrap_or(0))
        .collect()
}

/// Whether version `a` is newer than `b`.
pub fn newer(a: &str, b: &str) -> bool {
    numbers(a) > numbers(b)
}

/// Whether `digest` is the hex text `hex` (either case).
pub fn hex_eq(digest: &[u8], hex: &str) -> bool {
    let ours: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    ours.eq_ignore_ascii_case(hex.trim())
}

/// GET `url`'s body, at most `limit` bytes (more: `TooLarge`).
pub fn download(url: &str, limit: u64) -> Result<Vec<u8>, UpdateError> {
    let a = agent(DOWNLOAD_TIMEOUT_SECS);
    let mut resp = a.get(url).call().map_err(|e| said(&map_error(e)))?;
    let status = resp.status().as_u16();
    if status != 200 {
        return Err(UpdateError::Download(format!("HTTP status {status}")));
    }
    resp.body_mut()
        .with_config()
        .limit(limit)
        .read_to_vec()
        .map_err(|e| said(&map_error(e)))
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
    }

    #[test]
    fn the_index_is_read_and_relative_urls_resolved() {
        let text = r#"{"version":"0.2.0","boards":{"aarch64-generic":{"url":"a.tar.gz","sha256":"AB","minisig":"https://x.test/a.minisig","size":5}},"extra":1}"#;
        let i = parse(text, "https://r.test/rel/index.json").unwrap();
        assert_eq!(i.version, "0.2.0");
        assert_eq!(i.boards[0].board, "aarch64-generic");
        assert_eq!(i.boards[0].url, "https://r.test/rel/a.tar.gz");
        assert_eq!(i.boards[0].minisig, "https://x.test/a.minisig");
        for bad in [
            "",
            "[]",
            r#"{"boards":{}}"#,
            r#"{"version":"1","boards":{"x":{"url":"u"}}}"#,
        ] {
            assert!(
                matches!(parse(bad, "https://r/i"), Err(UpdateError::Index(_))),
                "{bad}"
            );
        }
        assert!(hex_eq(&[0xab, 0x01], "AB01"));
        assert!(!hex_eq(&[0xab, 0x01], "ab02"));
    }
}
