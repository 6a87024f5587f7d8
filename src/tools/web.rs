//! The `web_fetch` tool: GET an http(s) page and return it as readable text, without
//! letting the model reach the board itself, the LAN or a cloud metadata address.
//!
//! How the address check holds:
//! 1. The URL is parsed by `netguard::parse_http_url` (http/https only, one spelling).
//! 2. ureq resolves names through [`GuardedResolver`], which calls
//!    `netguard::resolve_checked`: every address of the host is checked and ureq connects
//!    only to those addresses. There is no second lookup to race (no DNS rebinding between
//!    the check and the connection).
//! 3. ureq's own redirects are off; each `Location` is joined to the current URL, parsed
//!    and checked again like the first URL, at most `MAX_FETCH_REDIRECTS` times.
//! 4. Proxies from the environment are not used (a proxy would do its own lookup).
//!
//! HTML is reduced by `text::html::html_to_text`; other text types come back as they are;
//! anything else (images, archives, PDFs) is refused.
//!
//! # Bounds
//! Body: `tools.web_fetch.max_bytes` (the rest is not read; the result says it was cut).
//! Time: `tools.web_fetch.timeout_secs` for the whole chain of requests. Text handed back:
//! the agent's tool-result cap. Redirects: `MAX_FETCH_REDIRECTS`.
//!
//! # Threads
//! Executor thread for the tool call; [`fetch_blocking`] and its name lookups
//! ([`GuardedResolver`], no thread of ureq's) on a worker thread.
//!
//! # Blocking
//! [`fetch_blocking`] does DNS and HTTP: it runs on a worker thread.

use super::{Args, ToolError, Tools};
use crate::chat::ToolSpec;
use crate::limits::{
    HTTP_CONNECT_TIMEOUT_SECS, HTTP_INPUT_BUFFER_BYTES, HTTP_MAX_HEADER_BYTES,
    HTTP_OUTPUT_BUFFER_BYTES, MAX_FETCH_REDIRECTS,
};
use crate::security::netguard::{self, HttpUrl, UrlError};
use std::borrow::Cow;
use std::io::Read;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

pub const WEB_FETCH: ToolSpec = ToolSpec {
    name: Cow::Borrowed("web_fetch"),
    description: Cow::Borrowed(
        "Fetch a web page or text document by http(s) URL and return its text (HTML reduced to readable text with link targets kept). Addresses on this device or the local network are not reachable. Binary files (images, PDFs, archives) are refused.",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"url":{"type":"string","description":"The full URL, starting with https:// or http://"}},"required":["url"]}"#,
    ),
};

/// How names are resolved and checked (a seam for tests).
pub type Lookup = fn(&HttpUrl, bool) -> Result<Vec<SocketAddr>, UrlError>;

/// A ureq resolver that resolves through the network guard: ureq connects only to
/// addresses that passed the check.
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver {
    pub allow_private: bool,
    pub lookup: Lookup,
}

impl Resolver for GuardedResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        _config: &ureq::config::Config,
        _timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let url = netguard::parse_http_url(&uri.to_string()).map_err(guard_error)?;
        let addrs = (self.lookup)(&url, self.allow_private).map_err(guard_error)?;
        let mut out = self.empty();
        for a in addrs.into_iter().take(netguard::MAX_RESOLVED_ADDRS) {
            out.push(a);
        }
        if out.is_empty() {
            return Err(guard_error(UrlError::NoAddress));
        }
        Ok(out)
    }
}

/// Carry a guard refusal through ureq's error type (recovered by [`FetchError::from_ureq`]).
fn guard_error(e: UrlError) -> ureq::Error {
    ureq::Error::Io(std::io::Error::other(e))
}

/// Why a fetch failed.
#[derive(Debug, Clone, PartialEq)]
pub enum FetchError {
    /// The URL (or a redirect's) is refused by the guard.
    Url(UrlError),
    /// More than `MAX_FETCH_REDIRECTS` redirects.
    TooManyRedirects,
    /// A redirect without a usable `Location`.
    BadRedirect,
    /// Timed out.
    Timeout,
    /// Connection, TLS or protocol failure (short, secret-free).
    Http(String),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Url(e) => e.fmt(f),
            FetchError::TooManyRedirects => {
                write!(f, "more than {MAX_FETCH_REDIRECTS} redirects")
            }
            FetchError::BadRedirect => f.write_str("a redirect without a usable location"),
            FetchError::Timeout => f.write_str("timed out"),
            FetchError::Http(d) => f.write_str(d),
        }
    }
}

impl std::error::Error for FetchError {}

impl FetchError {
    pub fn from_ureq(e: ureq::Error) -> FetchError {
        if let ureq::Error::Io(io) = &e
            && let Some(u) = io.get_ref().and_then(|i| i.downcast_ref::<UrlError>())
        {
            return FetchError::Url(u.clone());
        }
        match crate::provider::http::map_error(e) {
            crate::provider::http::HttpError::Timeout => FetchError::Timeout,
            other => FetchError::Http(other.to_string()),
        }
    }
}

/// One fetched document.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Where the body came from, after redirects.
    pub url: String,
    pub status: u16,
    /// Lowercase media type without parameters (`text/html`), empty when absent.
    pub media_type: String,
    /// The `charset` parameter, lowercase, when given.
    pub charset: String,
    pub body: Vec<u8>,
    /// The body was longer than the limit and was cut.
    pub cut: bool,
}

/// Limits of one fetch.
#[derive(Debug, Clone, Copy)]
pub struct FetchLimits {
    pub allow_private: bool,
    pub max_bytes: u64,
    pub timeout: Duration,
}

/// An HTTP agent that resolves through the network guard ([`GuardedResolver`]), follows
/// no redirect (a 3xx is returned as it is), uses no proxy and keeps one idle connection.
pub fn guarded_agent(allow_private: bool, lookup: Lookup) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .timeout_connect(Some(Duration::from_secs(HTTP_CONNECT_TIMEOUT_SECS)))
        .input_buffer_size(HTTP_INPUT_BUFFER_BYTES)
        // The request line holds the URL's path and query (up to `MAX_URL_BYTES`), and ureq
        // writes a line whole or fails; the agent lives for one call.
        .output_buffer_size(netguard::MAX_URL_BYTES + HTTP_OUTPUT_BUFFER_BYTES)
        .max_response_header_size(HTTP_MAX_HEADER_BYTES)
        .max_idle_connections(1)
        .max_idle_connections_per_host(1)
        .user_agent(concat!("yoctoclaw/", env!("CARGO_PKG_VERSION")))
        .build();
    crate::provider::http::with_resolver(
        config,
        GuardedResolver {
            allow_private,
            lookup,
        },
    )
}

/// One request through `agent` (a guarded one: [`guarded_agent`]): a POST of `body` or a
/// GET, with `headers`, within `timeout`; the response with its body unread. What
/// `web_fetch` and `web_search` both send with.
pub fn exchange(
    agent: &ureq::Agent,
    post: bool,
    url: &str,
    headers: &[(&str, String)],
    body: &str,
    timeout: Duration,
) -> Result<ureq::http::Response<ureq::Body>, FetchError> {
    let sent = if post {
        let mut r = agent.post(url);
        for (k, v) in headers {
            r = r.header(*k, v);
        }
        r.config().timeout_global(Some(timeout)).build().send(body)
    } else {
        let mut r = agent.get(url);
        for (k, v) in headers {
            r = r.header(*k, v);
        }
        r.config().timeout_global(Some(timeout)).build().call()
    };
    sent.map_err(FetchError::from_ureq)
}

/// At most `max` bytes of a response's body, and whether there was more.
pub fn read_body(
    resp: &mut ureq::http::Response<ureq::Body>,
    max: u64,
) -> Result<(Vec<u8>, bool), FetchError> {
    let mut body = Vec::new();
    resp.body_mut()
        .as_reader()
        .take(max.saturating_add(1))
        .read_to_end(&mut body)
        .map_err(|e| FetchError::from_ureq(ureq::Error::Io(e)))?;
    let cut = body.len() as u64 > max;
    body.truncate(max as usize);
    Ok((body, cut))
}

/// GET `url`, following up to `MAX_FETCH_REDIRECTS` redirects, each checked again.
pub fn fetch_blocking(url: &str, lim: FetchLimits, lookup: Lookup) -> Result<Fetched, FetchError> {
    let mut current = netguard::parse_http_url(url).map_err(FetchError::Url)?;
    let deadline = Instant::now() + lim.timeout;
    let agent = guarded_agent(lim.allow_private, lookup);
    for hop in 0..=MAX_FETCH_REDIRECTS {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(FetchError::Timeout);
        }
        let accept = "text/html, text/*;q=0.9, application/json;q=0.8, */*;q=0.1";
        let mut resp = exchange(
            &agent,
            false,
            &current.to_string(),
            &[("Accept", accept.to_string())],
            "",
            left,
        )?;
        let status = resp.status().as_u16();
        if (300..400).contains(&status) && status != 304 {
            let Some(loc) = resp.headers().get("location").and_then(|v| v.to_str().ok()) else {
                return Err(FetchError::BadRedirect);
            };
            if hop == MAX_FETCH_REDIRECTS {
                return Err(FetchError::TooManyRedirects);
            }
            let next = join_location(&current, loc.trim()).ok_or(FetchError::BadRedirect)?;
            current = netguard::parse_http_url(&next).map_err(FetchError::Url)?;
            continue;
        }
        let (media_type, charset) = content_type(
            resp.headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or(""),
        );
        let (body, cut) = read_body(&mut resp, lim.max_bytes)?;
        return Ok(Fetched {
            url: current.to_string(),
            status,
            media_type,
            charset,
            body,
            cut,
        });
    }
    Err(FetchError::TooManyRedirects)
}

/// Resolve a `Location` value against the URL it came from (absolute, scheme-relative,
/// absolute path, query-only or relative path).
pub fn join_location(base: &HttpUrl, loc: &str) -> Option<String> {
    if loc.is_empty() {
        return None;
    }
    let lower = loc.get(..8).unwrap_or(loc).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || loc.contains("://") {
        return Some(loc.to_string());
    }
    let origin = {
        let mut o = base.to_string();
        let cut = o.len() - base.path_and_query.len();
        o.truncate(cut);
        o
    };
    if let Some(rest) = loc.strip_prefix("//") {
        let scheme = if base.to_string().starts_with("https:") {
            "https:"
        } else {
            "http:"
        };
        return Some(format!("{scheme}//{rest}"));
    }
    if loc.starts_with('/') {
        return Some(format!("{origin}{loc}"));
    }
    let path = base.path_and_query.split(['?', '#']).next().unwrap_or("/");
    if loc.starts_with('?') {
        return Some(format!("{origin}{path}{loc}"));
    }
    // A scheme other than http(s) ("ftp:", "file:", "javascript:"): let the parser refuse it.
    if let Some(colon) = loc.find(':')
        && loc[..colon]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
        && !loc[..colon].contains('/')
    {
        return Some(loc.to_string());
    }
    let dir = &path[..path.rfind('/').map(|i| i + 1).unwrap_or(1).min(path.len())];
    Some(format!("{origin}{dir}{loc}"))
}

/// Media type (lowercase, without parameters) and charset of a `Content-Type` value.
fn content_type(v: &str) -> (String, String) {
    let mut parts = v.split(';');
    let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let charset = parts
        .filter_map(|p| p.trim().split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("charset"))
        .map(|(_, v)| v.trim().trim_matches('"').to_ascii_lowercase())
        .unwrap_or_default();
    (media, charset)
}

/// How a body is turned into text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Binary,
}

fn kind_of(f: &Fetched) -> Kind {
    let m = f.media_type.as_str();
    if m == "text/html" || m == "application/xhtml+xml" {
        return Kind::Html;
    }
    let texty = m.starts_with("text/")
        || m.ends_with("+json")
        || m.ends_with("+xml")
        || matches!(
            m,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
                | "application/x-yaml"
                | "application/yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/x-ndjson"
        );
    if texty {
        return Kind::Text;
    }
    if !m.is_empty() && m != "application/octet-stream" {
        return Kind::Binary;
    }
    // No useful type: look at the bytes.
    let head = &f.body[..f.body.len().min(1024)];
    if head.contains(&0) {
        return Kind::Binary;
    }
    let start = String::from_utf8_lossy(head)
        .trim_start()
        .to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Kind::Html
    } else if std::str::from_utf8(head).is_ok() || head.len() == 1024 {
        Kind::Text
    } else {
        Kind::Binary
    }
}

/// Bytes as text: Latin-1 when the server says so, else UTF-8 (invalid bytes replaced).
fn decode(body: &[u8], charset: &str) -> String {
    if matches!(charset, "iso-8859-1" | "latin1" | "latin-1" | "us-ascii") {
        return body.iter().map(|&b| b as char).collect();
    }
    String::from_utf8_lossy(body).into_owned()
}

/// The tool result for a fetched document, text at most `max_text` bytes (HTML).
pub fn render(f: &Fetched, max_text: usize) -> Result<String, ToolError> {
    let kind = kind_of(f);
    if kind == Kind::Binary {
        return Err(ToolError::Failed(format!(
            "{} is not text ({}): web_fetch only returns text and HTML",
            f.url,
            if f.media_type.is_empty() {
                "binary data"
            } else {
                &f.media_type
            }
        )));
    }
    let raw = decode(&f.body, &f.charset);
    let text = match kind {
        Kind::Html => crate::text::html::html_to_text(&raw, max_text),
        _ => raw,
    };
    if !(200..300).contains(&f.status) {
        let snippet = super::output::floor_boundary(&text, 1000);
        return Err(ToolError::Failed(format!(
            "{} answered HTTP {}: {}",
            f.url,
            f.status,
            &text[..snippet]
        )));
    }
    let cut = if f.cut {
        format!(
            "\n[… the document is longer; only its first {} bytes were read]",
            f.body.len()
        )
    } else {
        String::new()
    };
    Ok(format!("URL: {}\n\n{}{cut}", f.url, text.trim()))
}

pub fn url_arg(args: &Args) -> Result<&str, ToolError> {
    let url = args.str("url")?.trim();
    if url.is_empty() {
        return Err(ToolError::BadArgs("\"url\" is empty".into()));
    }
    if url.len() > netguard::MAX_URL_BYTES {
        return Err(ToolError::BadArgs(format!(
            "\"url\" is longer than {} bytes",
            netguard::MAX_URL_BYTES
        )));
    }
    Ok(url)
}

/// The tool: check the URL, fetch on a worker thread, render.
pub async fn web_fetch(tools: &Tools, args: &Args) -> Result<String, ToolError> {
    let url = url_arg(args)?;
    netguard::parse_http_url(url).map_err(|e| ToolError::Denied(e.to_string()))?;
    let c = tools.cfg();
    let w = &c.tools.web_fetch;
    let lim = FetchLimits {
        allow_private: w.allow_private,
        max_bytes: w.max_bytes,
        timeout: Duration::from_secs(w.timeout_secs.max(1)),
    };
    let url = url.to_string();
    let fetched = tools
        .workers
        .run(move || fetch_blocking(&url, lim, netguard::resolve_checked))
        .await
        .map_err(|_| ToolError::Failed("yoctoclaw is shutting down".into()))?
        .map_err(|e| match e {
            FetchError::Url(u) => ToolError::Denied(u.to_string()),
            other => ToolError::Failed(other.to_string()),
        })?;
    render(&fetched, tools.cfg().agent.max_tool_result_bytes as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    /// A loopback server answering `(path) -> raw response` and recording the paths asked.
    struct Server {
        port: u16,
        seen: Arc<Mutex<Vec<String>>>,
    }

    fn serve(handler: fn(&str, u16) -> String) -> Server {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        std::thread::spawn(move || {
            for c in l.incoming() {
                let Ok(mut c) = c else { continue };
                let mut r = BufReader::new(c.try_clone().unwrap());
                let mut line = String::new();
                let _ = r.read_line(&mut line);
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                        break;
                    }
                }
                let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                s2.lock().unwrap().push(path.clone());
                let _ = c.write_all(handler(&path, port).as_bytes());
            }
        });
        Server { port, seen }
    }

    fn resp(status: &str, headers: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    }

    fn lim(allow_private: bool) -> FetchLimits {
        FetchLimits {
            allow_private,
            max_bytes: 64 * 1024,
            timeout: Duration::from_secs(20),
        }
    }

    /// `public.test` is the loopback server, treated as a public host; every other name
    /// goes through the real guard.
    fn pretend_public(url: &HttpUrl, allow_private: bool) -> Result<Vec<SocketAddr>, UrlError> {
        if url.host == "public.test" {
            return Ok(vec![SocketAddr::from(([127, 0, 0, 1], url.port))]);
        }
        netguard::resolve_checked(url, allow_private)
    }

    fn pages(path: &str, port: u16) -> String {
        match path {
            "/page" => resp(
                "200 OK",
                "Content-Type: text/html; charset=utf-8\r\n",
                "<html><head><title>t</title><script>var x=1;</script></head><body><h1>Hello</h1><p>caf&eacute; &amp; more</p></body></html>",
            ),
            "/plain" => resp("200 OK", "Content-Type: text/plain\r\n", "just text"),
            "/png" => resp("200 OK", "Content-Type: image/png\r\n", "\u{1}PNG"),
            "/to-private" => resp(
                "302 Found",
                &format!("Location: http://127.0.0.1:{port}/secret\r\n"),
                "",
            ),
            "/to-public" => resp("301 Moved", "Location: /plain\r\n", ""),
            "/to-doc" => resp(
                "302 Found",
                &format!("Location: http://198.51.100.7:{port}/secret\r\n"),
                "",
            ),
            "/to-doc6" => resp(
                "302 Found",
                &format!("Location: http://[64:ff9b::c000:201]:{port}/secret\r\n"),
                "",
            ),
            "/to-file" => resp("302 Found", "Location: file:///etc/passwd\r\n", ""),
            "/loop" => resp("302 Found", "Location: loop\r\n", ""),
            "/big" => resp(
                "200 OK",
                "Content-Type: text/plain\r\n",
                &"z".repeat(100_000),
            ),
            "/missing" => resp("404 Not Found", "Content-Type: text/plain\r\n", "nope"),
            _ => resp(
                "200 OK",
                "Content-Type: text/plain\r\n",
                "SECRET INTERNAL PAGE",
            ),
        }
    }

    #[test]
    fn a_url_of_the_longest_length_allowed_is_fetched() {
        let s = serve(pages);
        let head = format!("http://127.0.0.1:{}/long?q=", s.port);
        let url = format!("{head}{}", "a".repeat(netguard::MAX_URL_BYTES - head.len()));
        assert!(url_arg(&Args::parse(&format!(r#"{{"url":"{url}"}}"#)).unwrap()).is_ok());
        let f = fetch_blocking(&url, lim(true), netguard::resolve_checked).unwrap();
        assert!(render(&f, 4096).unwrap().contains("SECRET INTERNAL PAGE"));
    }

    #[test]
    fn loopback_is_refused_unless_allowed() {
        let s = serve(pages);
        let url = format!("http://127.0.0.1:{}/page", s.port);
        let e = fetch_blocking(&url, lim(false), netguard::resolve_checked).unwrap_err();
        assert!(matches!(e, FetchError::Url(UrlError::Forbidden(_))), "{e}");
        assert!(s.seen.lock().unwrap().is_empty(), "nothing was sent");
        let f = fetch_blocking(&url, lim(true), netguard::resolve_checked).unwrap();
        let out = render(&f, 4096).unwrap();
        assert!(
            out.contains("Hello") && out.contains("café & more"),
            "{out}"
        );
        assert!(!out.contains("var x"), "{out}");
    }

    #[test]
    fn a_redirect_to_a_private_address_is_refused_before_connecting() {
        let s = serve(pages);
        let url = format!("http://public.test:{}/to-private", s.port);
        let e = fetch_blocking(&url, lim(false), pretend_public).unwrap_err();
        assert!(matches!(e, FetchError::Url(UrlError::Forbidden(_))), "{e}");
        assert_eq!(*s.seen.lock().unwrap(), vec!["/to-private".to_string()]);
        // Documentation ranges too, IPv4 and embedded in NAT64 (issue 16).
        for path in ["/to-doc", "/to-doc6"] {
            let url = format!("http://public.test:{}{path}", s.port);
            let e = fetch_blocking(&url, lim(false), pretend_public).unwrap_err();
            assert!(matches!(e, FetchError::Url(UrlError::Forbidden(_))), "{e}");
        }
        assert_eq!(
            s.seen.lock().unwrap().len(),
            3,
            "only the redirecting pages"
        );
        // A redirect that stays on the allowed host is followed.
        let url = format!("http://public.test:{}/to-public", s.port);
        let f = fetch_blocking(&url, lim(false), pretend_public).unwrap();
        assert_eq!(f.body, b"just text");
        assert!(f.url.ends_with("/plain"), "{}", f.url);
    }

    #[test]
    fn redirects_to_other_schemes_and_loops_are_refused() {
        let s = serve(pages);
        let url = format!("http://127.0.0.1:{}/to-file", s.port);
        let e = fetch_blocking(&url, lim(true), netguard::resolve_checked).unwrap_err();
        assert_eq!(e, FetchError::Url(UrlError::Scheme));
        let url = format!("http://127.0.0.1:{}/loop", s.port);
        let e = fetch_blocking(&url, lim(true), netguard::resolve_checked).unwrap_err();
        assert_eq!(e, FetchError::TooManyRedirects);
        assert_eq!(s.seen.lock().unwrap().len(), 1 + 1 + MAX_FETCH_REDIRECTS);
    }

    #[test]
    fn binary_is_refused_big_is_cut_errors_are_errors() {
        let s = serve(pages);
        let base = format!("http://127.0.0.1:{}", s.port);
        let f =
            fetch_blocking(&format!("{base}/png"), lim(true), netguard::resolve_checked).unwrap();
        assert!(
            render(&f, 4096)
                .unwrap_err()
                .to_string()
                .contains("not text")
        );
        let mut l = lim(true);
        l.max_bytes = 1000;
        let f = fetch_blocking(&format!("{base}/big"), l, netguard::resolve_checked).unwrap();
        assert!(f.cut && f.body.len() == 1000);
        assert!(
            render(&f, 4096)
                .unwrap()
                .contains("only its first 1000 bytes")
        );
        let f = fetch_blocking(
            &format!("{base}/missing"),
            lim(true),
            netguard::resolve_checked,
        )
        .unwrap();
        assert!(
            render(&f, 4096)
                .unwrap_err()
                .to_string()
                .contains("HTTP 404")
        );
    }

    #[test]
    fn other_schemes_and_odd_hosts_are_refused_without_a_lookup() {
        for u in [
            "file:///etc/passwd",
            "ftp://example.com/",
            "http://2130706433/",
            "http://user@example.com/",
            "gopher://x",
        ] {
            assert!(
                matches!(
                    fetch_blocking(u, lim(false), netguard::resolve_checked),
                    Err(FetchError::Url(_))
                ),
                "{u}"
            );
        }
    }

    #[test]
    fn locations_join_like_a_browser() {
        let base = netguard::parse_http_url("https://example.com:8443/a/b/c?q=1").unwrap();
        let j = |l: &str| join_location(&base, l).unwrap();
        assert_eq!(j("https://other.org/x"), "https://other.org/x");
        assert_eq!(j("//cdn.org/y"), "https://cdn.org/y");
        assert_eq!(j("/root"), "https://example.com:8443/root");
        assert_eq!(j("?z=2"), "https://example.com:8443/a/b/c?z=2");
        assert_eq!(j("d"), "https://example.com:8443/a/b/d");
        assert_eq!(j("file:///etc/passwd"), "file:///etc/passwd");
        assert_eq!(j("javascript:alert(1)"), "javascript:alert(1)");
        assert!(join_location(&base, "").is_none());
    }

    #[test]
    fn content_types_are_read() {
        assert_eq!(
            content_type("Text/HTML; Charset=\"ISO-8859-1\""),
            ("text/html".to_string(), "iso-8859-1".to_string())
        );
        assert_eq!(decode(&[0x63, 0x61, 0x66, 0xE9], "iso-8859-1"), "café");
    }
}
