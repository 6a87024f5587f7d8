//! The `web_search` tool: a query to the configured search backends (`tools.web_search`,
//! `config::web_search`), in order, until one answers; the model gets numbered results
//! (title, URL, snippet).
//!
//! Backends and what is read from them:
//! - DuckDuckGo: its no-JavaScript page, `POST {root}/html/` with the form `q`, `b`, `kl`
//!   (region), `kp` (safe search). Results are the `<a class="result__a">` links (the
//!   `//duckduckgo.com/l/?uddg=<target>` redirect decoded to its target) and the
//!   `result__snippet` after each; `result--ad` blocks are skipped. The bot check (a
//!   `202`, or a page with `anomaly-modal`/`challenge-form`) is a CAPTCHA, a page with the
//!   `no-results` notice is zero results, any other page without result links is a page
//!   that could not be read.
//! - SearXNG: `GET {root}/search?q=..&format=json&safesearch=0|1|2&language=..`;
//!   `results[].title/url/content`.
//! - Brave: `GET {root}/res/v1/web/search?q=..&count=..&safesearch=..&search_lang=..&
//!   country=..&result_filter=web` with `X-Subscription-Token`; `web.results[].title/url/
//!   description`.
//! - Tavily: `POST {root}/search` with `Authorization: Bearer` and a JSON body;
//!   `results[].title/url/content`.
//!
//! Every field is reduced to one line of plain text (`text::html`: tags dropped, entities
//! decoded, control and direction-changing characters dropped) and cut; a result whose URL
//! is not a plain `http(s)` URL (`javascript:`, `data:`, a `user@host`) is dropped.
//!
//! What fails (a CAPTCHA, a page or JSON that cannot be read, 429, 5xx, a redirect, a
//! timeout, an empty body, no key) is one line naming the backend, and the next backend
//! is asked; zero results is an answer, not a failure.
//!
//! Network: the same guard as `web_fetch` (`web::GuardedResolver`): a public endpoint must
//! resolve to public addresses; a configured endpoint (`*_url`, `base_url`) may be on this
//! device or the LAN, because the user put it there. No redirect is followed (a backend's
//! answer is its page or JSON), so no answer can send a request anywhere else.
//!
//! # Bounds
//! Query: `MAX_SEARCH_QUERY_BYTES`. Answer: `MAX_SEARCH_RESPONSE_BYTES` read. Results:
//! `MAX_SEARCH_RESULTS`, each title `MAX_TITLE_BYTES`, URL `MAX_RESULT_URL_BYTES`, snippet
//! `MAX_SNIPPET_BYTES`, and whole results only up to the agent's tool-result cap. Time:
//! `tools.web_search.timeout_secs` per backend.
//!
//! # Threads
//! Executor thread for the tool call; each backend's exchange and parsing ([`attempt`])
//! on a worker thread, one job per backend.
//!
//! # Blocking
//! [`attempt`] does DNS and HTTP: it runs on a worker thread.

use super::web::{FetchError, Lookup, exchange, guarded_agent, read_body};
use super::{Args, ToolError, Tools};
use crate::chat::ToolSpec;
use crate::config::{Env, SearchBackend, WebSearchConfig};
use crate::json;
use crate::limits::{MAX_SEARCH_QUERY_BYTES, MAX_SEARCH_RESPONSE_BYTES, MAX_SEARCH_RESULTS};
use crate::security::netguard;
use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

pub const WEB_SEARCH: ToolSpec = ToolSpec {
    name: Cow::Borrowed("web_search"),
    description: Cow::Borrowed(
        "Search the web. Returns numbered results with title, URL and a short snippet; read a page with web_fetch.",
    ),
    parameters: Cow::Borrowed(
        r#"{"type":"object","properties":{"query":{"type":"string","description":"What to search for"},"max_results":{"type":"integer","description":"How many results, 1 to 10"}},"required":["query"]}"#,
    ),
};

/// Longest title handed to the model.
const MAX_TITLE_BYTES: usize = 200;
/// Longest snippet handed to the model.
const MAX_SNIPPET_BYTES: usize = 400;
/// Results with a longer URL are dropped (a URL cut short leads nowhere).
const MAX_RESULT_URL_BYTES: usize = 512;
/// Markup of one title or snippet read on a DuckDuckGo page.
const MAX_FRAGMENT_BYTES: usize = 8 * 1024;

/// DuckDuckGo's no-JavaScript page is made for browsers, and its bot check refuses
/// clients that do not look like one (docs/DECISIONS.md, "web_search").
const DDG_USER_AGENT: &str =
    "Mozilla/5.0 (X11; Linux aarch64; rv:128.0) Gecko/20100101 Firefox/128.0";

/// The API keys of the backends that take one. `Debug` shows none.
#[derive(Clone, Default)]
pub struct SearchKeys {
    brave: Option<String>,
    tavily: Option<String>,
}

impl fmt::Debug for SearchKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SearchKeys")
    }
}

impl SearchKeys {
    /// The keys `tools.web_search` names, from the environment or `secrets.env`.
    pub fn from_env(cfg: &WebSearchConfig, env: &Env) -> SearchKeys {
        SearchKeys {
            brave: env.get(&cfg.brave_key_env),
            tavily: env.get(&cfg.tavily_key_env),
        }
    }

    fn get(&self, b: SearchBackend) -> Option<&str> {
        match b {
            SearchBackend::Brave => self.brave.as_deref(),
            SearchBackend::Tavily => self.tavily.as_deref(),
            _ => None,
        }
    }
}

/// One search result, each field one line of plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// Why a backend gave no results: one line to the model, then the next backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The variable holding the key is not set.
    NoKey(String),
    /// DuckDuckGo's bot check.
    Captcha,
    /// A page or JSON without the results it should hold.
    Unreadable,
    /// SearXNG had no results because its own engines failed (their names and reasons).
    Upstream(String),
    RateLimited,
    /// 401/403 from a backend with a key.
    KeyRefused(u16),
    /// SearXNG's 403: JSON output is off in its settings.
    JsonOff,
    /// Tavily's 432/433: the plan's credits are used up.
    Quota(u16),
    Status(u16),
    Redirect(u16),
    Timeout(u64),
    Empty,
    Unreachable(String),
    /// The network guard refused the address.
    Refused(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::NoKey(v) => write!(f, "no API key: set {v} in secrets.env"),
            Failure::Captcha => f.write_str(
                "answered with a CAPTCHA page instead of results (its bot check is blocking searches from this address for now)",
            ),
            Failure::Unreadable => f.write_str(
                "answered with something that is not a result page (no results and no \"no results\" notice)",
            ),
            Failure::Upstream(e) => write!(f, "its search engines did not answer ({e})"),
            Failure::RateLimited => f.write_str("is rate limiting these searches (HTTP 429)"),
            Failure::KeyRefused(s) => write!(f, "refused the API key (HTTP {s})"),
            Failure::JsonOff => f.write_str(
                "refused JSON output (HTTP 403): add json to search.formats in its settings.yml",
            ),
            Failure::Quota(s) => write!(f, "has no search credits left (HTTP {s})"),
            Failure::Status(s) => write!(f, "answered HTTP {s}"),
            Failure::Redirect(s) => write!(
                f,
                "answered with a redirect (HTTP {s}), which is not followed: check its URL"
            ),
            Failure::Timeout(t) => write!(f, "did not answer within {t} s"),
            Failure::Empty => f.write_str("answered with an empty body"),
            Failure::Unreachable(d) => write!(f, "cannot be reached ({d})"),
            Failure::Refused(d) => write!(f, "refused: {d}"),
        }
    }
}

/// One backend's request, built on the executor and sent on a worker.
#[derive(Debug)]
pub struct Request {
    pub post: bool,
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
}

/// The request for `query` (`n` results) to backend `b`; `key` for Brave and Tavily.
pub fn request(
    b: SearchBackend,
    cfg: &WebSearchConfig,
    query: &str,
    n: usize,
    key: Option<&str>,
) -> Request {
    let root = cfg.endpoint(b).0;
    let lang = cfg.language.as_str();
    let (l, region) = lang.split_once('-').unwrap_or((lang, ""));
    let safe = cfg.safe_search as usize;
    let mut q = String::new();
    encode(query, &mut q);
    let mut headers = vec![("Accept", "application/json".to_string())];
    let key = key.unwrap_or("").to_string();
    let (post, url, body) = match b {
        SearchBackend::DuckDuckGo => {
            headers = vec![
                ("Accept", "text/html".into()),
                ("Content-Type", "application/x-www-form-urlencoded".into()),
                ("User-Agent", DDG_USER_AGENT.into()),
                ("Referer", "https://html.duckduckgo.com/".into()),
            ];
            let kp = ["-2", "-1", "1"][safe];
            let body = ["q=", &q, "&b=&kl=", &ddg_region(l, region), "&kp=", kp].concat();
            (true, [root, "/html/"].concat(), body)
        }
        SearchBackend::SearXng => {
            let path = if root.ends_with("/search") {
                ""
            } else {
                "/search"
            };
            let mut u = [root, path, "?q=", &q, "&format=json&safesearch="].concat();
            u.push(char::from(b'0' + safe as u8));
            if !lang.is_empty() {
                u.push_str(&["&language=", lang].concat());
            }
            (false, u, String::new())
        }
        SearchBackend::Brave => {
            headers.push(("X-Subscription-Token", key));
            let mut u = [
                root,
                "/res/v1/web/search?q=",
                &q,
                "&count=",
                &n.to_string(),
                "&safesearch=",
                cfg.safe_search.as_str(),
                "&result_filter=web",
            ]
            .concat();
            if !l.is_empty() {
                u.push_str(&["&search_lang=", &brave_lang(l, region)].concat());
            }
            if !region.is_empty() {
                u.push_str(&["&country=", region].concat());
            }
            (false, u, String::new())
        }
        SearchBackend::Tavily => {
            headers.push(("Content-Type", "application/json".into()));
            headers.push(("Authorization", ["Bearer ", &key].concat()));
            let body = [
                "{\"query\":",
                &json::quote(query),
                ",\"max_results\":",
                &n.to_string(),
                ",\"search_depth\":\"basic\",\"topic\":\"general\",\"include_answer\":false,\"include_raw_content\":false,\"include_images\":false}",
            ]
            .concat();
            (true, [root, "/search"].concat(), body)
        }
    };
    Request {
        post,
        url,
        headers,
        body,
    }
}

/// `s` percent-encoded for a query string or a form (letters, digits and `-._~` kept).
fn encode(s: &str, out: &mut String) {
    for &c in s.as_bytes() {
        if c.is_ascii_alphanumeric() || b"-._~".contains(&c) {
            out.push(char::from(c));
        } else {
            out.push('%');
            for d in [c >> 4, c & 15] {
                out.push(char::from(b"0123456789ABCDEF"[d as usize]));
            }
        }
    }
}

/// DuckDuckGo's region (`kl`, country first): `de`+`DE` is `de-de`, `en`+`GB` is `uk-en`,
/// a bare language picks its country (`en` is `us-en`, `fr` is `fr-fr`); none is every
/// region (`wt-wt`).
fn ddg_region(l: &str, region: &str) -> String {
    if l.is_empty() {
        return "wt-wt".into();
    }
    let region = region.to_ascii_lowercase();
    let country = match (region.as_str(), l) {
        ("gb", _) => "uk",
        ("", "en") => "us",
        ("", "ja") => "jp",
        ("", "ko") => "kr",
        ("", "zh") => "cn",
        ("", "sv") => "se",
        ("", "da") => "dk",
        ("", "cs") => "cz",
        ("", "el") => "gr",
        ("", "uk") => "ua",
        ("", l) => l,
        (r, _) => r,
    };
    let l = match (l, country) {
        ("ja", _) => "jp",
        ("ko", _) => "kr",
        ("zh", "tw" | "hk") => "tzh",
        (l, _) => l,
    };
    [country, "-", l].concat()
}

/// Brave's `search_lang`: the language, except its own codes for Japanese, Chinese
/// scripts, Brazilian Portuguese and British English.
fn brave_lang(l: &str, region: &str) -> String {
    match (l, region) {
        ("ja", _) => "jp".into(),
        ("zh", "TW" | "HK") => "zh-hant".into(),
        ("zh", _) => "zh-hans".into(),
        ("pt", "BR") | ("en", "GB") => [l, "-", &region.to_ascii_lowercase()].concat(),
        _ => l.into(),
    }
}

/// Send `req` (on the calling thread) and read the status and at most
/// `MAX_SEARCH_RESPONSE_BYTES` of the body.
fn send(
    req: &Request,
    allow_private: bool,
    timeout: Duration,
    lookup: Lookup,
) -> Result<(u16, Vec<u8>), FetchError> {
    netguard::parse_http_url(&req.url).map_err(FetchError::Url)?;
    let agent = guarded_agent(allow_private, lookup);
    let mut resp = exchange(&agent, req.post, &req.url, &req.headers, &req.body, timeout)?;
    let status = resp.status().as_u16();
    let (body, _) = read_body(&mut resp, MAX_SEARCH_RESPONSE_BYTES)?;
    Ok((status, body))
}

/// One backend: send its request and read its answer (a worker's job). `allow_private`:
/// the endpoint is the user's own (`config::WebSearchConfig::endpoint`).
pub fn attempt(
    b: SearchBackend,
    req: &Request,
    allow_private: bool,
    timeout_secs: u64,
    n: usize,
    lookup: Lookup,
) -> Result<Vec<Hit>, Failure> {
    match send(
        req,
        allow_private,
        Duration::from_secs(timeout_secs),
        lookup,
    ) {
        Ok((status, body)) => interpret(b, status, &body, n),
        Err(FetchError::Timeout) => Err(Failure::Timeout(timeout_secs)),
        Err(FetchError::Url(e)) => Err(Failure::Refused(e.to_string())),
        Err(e) => Err(Failure::Unreachable(e.to_string())),
    }
}

/// The results in backend `b`'s answer (at most `n`), or why there are none to give.
pub fn interpret(
    b: SearchBackend,
    status: u16,
    body: &[u8],
    n: usize,
) -> Result<Vec<Hit>, Failure> {
    let text = String::from_utf8_lossy(body);
    let ddg = b == SearchBackend::DuckDuckGo;
    if ddg
        && (status == 202
            || ["anomaly-modal", "challenge-form", "bots use DuckDuckGo"]
                .iter()
                .any(|m| text.contains(m)))
    {
        return Err(Failure::Captcha);
    }
    let keyed = matches!(b, SearchBackend::Brave | SearchBackend::Tavily);
    match status {
        200..=299 => {}
        300..=399 => return Err(Failure::Redirect(status)),
        429 => return Err(Failure::RateLimited),
        403 if b == SearchBackend::SearXng => return Err(Failure::JsonOff),
        401 | 403 if keyed => return Err(Failure::KeyRefused(status)),
        432 | 433 if b == SearchBackend::Tavily => return Err(Failure::Quota(status)),
        _ => return Err(Failure::Status(status)),
    }
    if text.trim().is_empty() {
        return Err(Failure::Empty);
    }
    if ddg {
        return parse_ddg(&text, n);
    }
    let v = json::parse_value(&text).map_err(|_| Failure::Unreadable)?;
    let (list, snippet) = match b {
        SearchBackend::Brave => {
            if json::str_at(&v, "type") != Some("search") {
                return Err(Failure::Unreadable);
            }
            // No `web` section: Brave found nothing.
            (json::path(&v, &["web", "results"]), "description")
        }
        _ => match json::get(&v, "results") {
            None => return Err(Failure::Unreadable),
            list => (list, "content"),
        },
    };
    let mut hits = Vec::new();
    for item in list.and_then(json::as_array).into_iter().flatten() {
        if hits.len() == n {
            break;
        }
        let s = |k| json::str_at(item, k).unwrap_or("");
        hits.extend(hit(s("title"), s("url"), s(snippet)));
    }
    if hits.is_empty()
        && b == SearchBackend::SearXng
        && let Some(down) = json::get(&v, "unresponsive_engines").and_then(json::as_array)
        && !down.is_empty()
    {
        let mut names = String::new();
        for e in &down[..down.len().min(3)] {
            let part = |i: usize| {
                let v = json::as_array(e).and_then(|a| a.get(i));
                v.and_then(json::as_str).unwrap_or("")
            };
            if !names.is_empty() {
                names.push_str("; ");
            }
            names.push_str(&clean(&[part(0), ": ", part(1)].concat(), 80));
        }
        return Err(Failure::Upstream(names));
    }
    Ok(hits)
}

/// A result from raw fields (HTML allowed in the title and snippet), if its URL is usable.
fn hit(title: &str, url: &str, snippet: &str) -> Option<Hit> {
    let url = clean_url(url)?;
    let mut title = clean(title, MAX_TITLE_BYTES);
    if title.is_empty() {
        title = url.clone();
    }
    Some(Hit {
        title,
        url,
        snippet: clean(snippet, MAX_SNIPPET_BYTES),
    })
}

/// The results on a DuckDuckGo HTML page (no CAPTCHA on it: `interpret` checked).
pub fn parse_ddg(page: &str, n: usize) -> Result<Vec<Hit>, Failure> {
    use crate::text::html::{find_ci, start_tag_at};
    let b = page.as_bytes();
    // (title markup, target URL, snippet markup) of the result being read; results
    // without a usable target are not read at all, so they do not count against `n`.
    let mut cur: Option<(&str, String, &str)> = None;
    let mut found: Vec<(&str, String, &str)> = Vec::new();
    let (mut ad, mut no_results, mut i) = (false, false, 0);
    while found.len() < n {
        let Some(p) = b.get(i..).and_then(|r| r.iter().position(|&c| c == b'<')) else {
            break;
        };
        let Some(el) = start_tag_at(page, i + p) else {
            i += p + 1;
            continue;
        };
        i = el.end;
        let has = |c: &str| el.class.split_ascii_whitespace().any(|x| x == c);
        // The markup inside this element, up to its end tag (bounded).
        let inner = || {
            let close = ["</", &el.name].concat();
            let limit = (el.end + MAX_FRAGMENT_BYTES).min(b.len());
            let end = find_ci(&b[..limit], el.end, close.as_bytes()).unwrap_or(limit);
            page.get(el.end..end).unwrap_or("")
        };
        if has("no-results") || has("result--no-result") {
            no_results = true;
        }
        if el.name == "div" && has("result") {
            found.extend(cur.take());
            ad = has("result--ad");
        } else if el.name == "a" && (has("result__a") || has("result-link")) {
            found.extend(cur.take());
            let url = el
                .href
                .as_deref()
                .and_then(ddg_target)
                .and_then(|u| clean_url(&u));
            if let (false, Some(url)) = (ad, url) {
                cur = Some((inner(), url, ""));
            }
        } else if (has("result__snippet") || has("result-snippet"))
            && let Some(c) = cur.as_mut().filter(|c| c.2.is_empty())
        {
            c.2 = inner();
        }
    }
    found.extend(cur);
    found.truncate(n);
    let mut hits = Vec::with_capacity(found.len());
    for (t, u, s) in found {
        hits.extend(hit(t, &u, s));
    }
    if hits.is_empty() && !no_results && !page.contains("result__a") {
        return Err(Failure::Unreadable);
    }
    Ok(hits)
}

/// Where a DuckDuckGo result link leads: its `/l/?uddg=` redirect decoded, the link itself
/// when it is direct; `None` for an ad (`/y.js`) or a redirect without a target.
fn ddg_target(href: &str) -> Option<String> {
    if href.contains("duckduckgo.com/y.js") {
        return None;
    }
    if !(href.contains("duckduckgo.com/l/?") || href.starts_with("/l/?")) {
        return Some(href.to_string());
    }
    let q = href.split_once('?')?.1;
    let v = q.split('&').find_map(|p| p.strip_prefix("uddg="))?;
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |k: usize| b.get(k).and_then(|&c| char::from(c).to_digit(16));
        match (b[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// Control characters and those that change how text reads without being seen
/// (zero-width, direction overrides, the byte-order mark, soft hyphens: the injection
/// screen's list).
fn invisible(c: char) -> bool {
    c.is_control() || crate::security::injection::invisible(c)
}

/// A plain `http(s)` URL as given (after `ddg_target`), at most `MAX_RESULT_URL_BYTES`,
/// without blanks, invisible characters or a user name; else `None`.
fn clean_url(u: &str) -> Option<String> {
    let u = u.trim();
    let lower = u.get(..8)?.to_ascii_lowercase();
    let rest = if lower.starts_with("https://") {
        &u[8..]
    } else if lower.starts_with("http://") {
        &u[7..]
    } else {
        return None;
    };
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let bad = authority.is_empty()
        || authority.contains('@')
        || u.len() > MAX_RESULT_URL_BYTES
        || u.chars().any(|c| c.is_whitespace() || invisible(c));
    (!bad).then(|| u.to_string())
}

/// `html` (markup or plain text) as one line of plain text of at most `max` bytes (and an
/// ellipsis when cut).
fn clean(html: &str, max: usize) -> String {
    use crate::text::html::{TRUNCATION_MARKER, html_to_text};
    let text = html_to_text(html, max + 8);
    let (text, mut cut) = match text.strip_suffix(TRUNCATION_MARKER) {
        Some(t) => (t, true),
        None => (text.as_str(), false),
    };
    let mut out = String::with_capacity(text.len().min(max));
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if invisible(c) {
            continue;
        }
        if out.len() + c.len_utf8() + usize::from(space) > max {
            cut = true;
            break;
        }
        if std::mem::take(&mut space) {
            out.push(' ');
        }
        out.push(c);
    }
    if cut {
        out.push('…');
    }
    out
}

/// The tool result: the failed backends' lines, then the results numbered, whole results
/// only, within `cap` bytes.
pub fn render(query: &str, b: SearchBackend, hits: &[Hit], notes: &[String], cap: usize) -> String {
    let mut out = String::new();
    for n in notes {
        out.push_str(n);
        out.push('\n');
    }
    let q = json::quote(query);
    if hits.is_empty() {
        out.push_str(&["No results for ", &q, " (", b.name(), ")."].concat());
        return out;
    }
    out.push_str(&["Results for ", &q, " (", b.name(), "):"].concat());
    for (i, h) in hits.iter().enumerate() {
        let mut entry = ["\n", &(i + 1).to_string(), ". ", &h.title, "\n   ", &h.url].concat();
        if !h.snippet.is_empty() {
            entry.push_str(&["\n   ", &h.snippet].concat());
        }
        if out.len() + entry.len() > cap {
            let left = (hits.len() - i).to_string();
            out.push_str(&["\n[", &left, " more left out: over the tool result cap]"].concat());
            break;
        }
        out.push_str(&entry);
    }
    out
}

/// The tool: check the query, then each backend in turn on a worker until one answers.
pub async fn web_search(tools: &Tools, args: &Args) -> Result<String, ToolError> {
    // One line of words: models send newlines and tabs, and control characters mean
    // nothing to a search engine.
    let mut query = String::new();
    for w in args
        .str("query")?
        .split(|c: char| c.is_whitespace() || invisible(c))
    {
        if !w.is_empty() {
            if !query.is_empty() {
                query.push(' ');
            }
            query.push_str(w);
        }
    }
    if query.is_empty() {
        return Err(ToolError::BadArgs("\"query\" is empty".into()));
    }
    if query.len() > MAX_SEARCH_QUERY_BYTES {
        return Err(ToolError::BadArgs(format!(
            "\"query\" is longer than {MAX_SEARCH_QUERY_BYTES} bytes: search with fewer words"
        )));
    }
    let c = tools.cfg();
    let cfg = &c.tools.web_search;
    let n = args
        .opt_u64("max_results")?
        .unwrap_or(cfg.max_results)
        .clamp(1, MAX_SEARCH_RESULTS as u64) as usize;
    let mut notes = Vec::new();
    for &b in &cfg.chain {
        let key = tools.search_keys.borrow().get(b).map(str::to_string);
        let key = key.as_deref();
        let outcome = match (cfg.key_env(b), key) {
            (Some(var), None) => Err(Failure::NoKey(var.to_string())),
            _ => {
                let req = request(b, cfg, &query, n, key);
                let private = cfg.endpoint(b).1;
                let secs = cfg.timeout_secs;
                let lookup = netguard::resolve_checked;
                tools
                    .workers
                    .run(move || attempt(b, &req, private, secs, n, lookup))
                    .await
                    .map_err(|_| ToolError::Failed("yoctoclaw is shutting down".into()))?
            }
        };
        match outcome {
            Ok(hits) => {
                let cap = tools.cfg().agent.max_tool_result_bytes as usize;
                return Ok(render(&query, b, &hits, &notes, cap));
            }
            Err(f) => {
                log::warn!("web_search: {}: {f}", b.name());
                notes.push([b.name(), ": ", &f.to_string()].concat());
            }
        }
    }
    Err(ToolError::Failed(
        ["no search backend answered\n", &notes.join("\n")].concat(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DDG: &str = include_str!("../../tests/fixtures/web_search/ddg_results.html");
    const DDG_CHALLENGE: &str = include_str!("../../tests/fixtures/web_search/ddg_challenge.html");
    const DDG_NONE: &str = include_str!("../../tests/fixtures/web_search/ddg_no_results.html");
    const SEARXNG: &str = include_str!("../../tests/fixtures/web_search/searxng.json");
    const BRAVE: &str = include_str!("../../tests/fixtures/web_search/brave.json");
    const TAVILY: &str = include_str!("../../tests/fixtures/web_search/tavily.json");
    use crate::config::SafeSearch;
    use SearchBackend::*;

    fn ok(b: SearchBackend, body: &str, n: usize) -> Vec<Hit> {
        interpret(b, 200, body.as_bytes(), n).unwrap()
    }

    #[test]
    fn a_real_duckduckgo_page_reads_without_its_ad() {
        let hits = ok(DuckDuckGo, DDG, 10);
        assert_eq!(hits.len(), 6, "{hits:#?}");
        assert_eq!(
            hits[0],
            Hit {
                title: "Buy a Raspberry Pi Zero 2 W – Raspberry Pi".into(),
                url: "https://www.raspberrypi.com/products/raspberry-pi-zero-2-w/".into(),
                snippet: "Your tiny, tiny $15 computer. Raspberry Pi Zero 2 W is powered by RP3A0, a custom-built system-in-package designed by Raspberry Pi in the UK.".into(),
            }
        );
        assert_eq!(
            hits[1].title,
            "Raspberry Pi Zero 2 W benchmarks & power consumption - CNX Software"
        );
        assert!(hits[1].snippet.contains("about 100 mA at idle"), "{hits:?}");
        // An encoded `&` and `?` inside the target survive the decoding.
        assert_eq!(
            hits[2].url,
            "https://forums.raspberrypi.com/viewtopic.php?t=323574&start=25"
        );
        assert_eq!(
            hits[2].title,
            "Zero 2 W \"idle current\" measurements - Raspberry Pi Forums"
        );
        assert!(hits[2].snippet.contains("It's the lowest"), "{hits:?}");
        // A direct link (no redirect) as it is.
        assert_eq!(
            hits[3].url,
            "https://www.jeffgeerling.com/blog/2021/raspberry-pi-zero-2-w-power-consumption"
        );
        assert!(hits.iter().all(|h| !h.title.contains("Power Banks")));
        assert_eq!(ok(DuckDuckGo, DDG, 2).len(), 2);
    }

    #[test]
    fn duckduckgo_captcha_no_results_and_unreadable_pages_are_told_apart() {
        for status in [200, 202] {
            assert_eq!(
                interpret(DuckDuckGo, status, DDG_CHALLENGE.as_bytes(), 5),
                Err(Failure::Captcha)
            );
        }
        // The bot check's status alone.
        assert_eq!(
            interpret(DuckDuckGo, 202, b"<html><body></body></html>", 5),
            Err(Failure::Captcha)
        );
        assert_eq!(ok(DuckDuckGo, DDG_NONE, 5), vec![]);
        for page in [
            "<html><body><p>Our new search experience</p></body></html>",
            "{\"results\":[]}",
            "<div class=\"result\"><h2><a href=\"https://x.org/\">no class</a></h2></div>",
        ] {
            assert_eq!(
                interpret(DuckDuckGo, 200, page.as_bytes(), 5),
                Err(Failure::Unreadable),
                "{page}"
            );
        }
        assert_eq!(interpret(DuckDuckGo, 200, b"  \n", 5), Err(Failure::Empty));
    }

    #[test]
    fn json_backends_read_their_real_shapes() {
        let s = ok(SearXng, SEARXNG, 10);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].title, "Buy a Raspberry Pi Zero 2 W – Raspberry Pi");
        assert_eq!(
            s[2].url,
            "https://forums.raspberrypi.com/viewtopic.php?t=323574&start=25"
        );
        let b = ok(Brave, BRAVE, 10);
        assert_eq!(b.len(), 3);
        assert_eq!(
            b[0].title,
            "Raspberry Pi Zero 2 W benchmarks & power consumption - CNX Software"
        );
        assert!(b[0].snippet.starts_with("The Raspberry Pi Zero 2 W draws"));
        assert!(b[2].snippet.contains("It's the lowest"), "{b:?}");
        let t = ok(Tavily, TAVILY, 1);
        assert_eq!(t.len(), 1);
        assert!(t[0].snippet.contains("about 0.6 W"));
        // Zero results.
        assert_eq!(
            ok(Brave, r#"{"type":"search","query":{"original":"x"}}"#, 5),
            vec![]
        );
        assert_eq!(ok(Tavily, r#"{"query":"x","results":[]}"#, 5), vec![]);
        assert_eq!(
            ok(
                SearXng,
                r#"{"query":"x","results":[],"unresponsive_engines":[]}"#,
                5
            ),
            vec![]
        );
        // A SearXNG whose engines all failed is not "no results".
        let down = r#"{"query":"x","results":[],"unresponsive_engines":[["google","Suspended: CAPTCHA"],["brave","too many requests"]]}"#;
        assert_eq!(
            interpret(SearXng, 200, down.as_bytes(), 5),
            Err(Failure::Upstream(
                "google: Suspended: CAPTCHA; brave: too many requests".into()
            ))
        );
        for (b, body) in [
            (Brave, r#"{"type":"ErrorResponse","error":{"code":"x"}}"#),
            (Brave, "<html>"),
            (SearXng, r#"{"query":"x"}"#),
            (Tavily, "[1,2]"),
            (Tavily, "{\"results\":"),
        ] {
            assert_eq!(
                interpret(b, 200, body.as_bytes(), 5),
                Err(Failure::Unreadable),
                "{body}"
            );
        }
    }

    #[test]
    fn statuses_become_failures() {
        let f = |b, s| interpret(b, s, b"{}", 5).unwrap_err();
        assert_eq!(f(Brave, 429), Failure::RateLimited);
        assert_eq!(f(DuckDuckGo, 429), Failure::RateLimited);
        assert_eq!(f(Brave, 401), Failure::KeyRefused(401));
        assert_eq!(f(Tavily, 432), Failure::Quota(432));
        assert_eq!(f(SearXng, 403), Failure::JsonOff);
        assert_eq!(f(SearXng, 502), Failure::Status(502));
        assert_eq!(f(DuckDuckGo, 301), Failure::Redirect(301));
        assert_eq!(f(DuckDuckGo, 403), Failure::Status(403));
    }

    #[test]
    fn hostile_results_are_cleaned_cut_or_dropped() {
        let huge = "A".repeat(100_000);
        let bomb = "&amp;".repeat(50_000);
        let page = format!(
            r#"<div id="links">
<div class="result web-result"><a class="result__a" href="javascript:alert(1)">js</a><a class="result__snippet">x</a></div>
<div class="result web-result"><a class="result__a" href="data:text/html,hi">data</a></div>
<div class="result web-result"><a class="result__a" href="https://user:pw@evil.example/">creds</a></div>
<div class="result web-result"><a class="result__a" href="//duckduckgo.com/l/?rut=abc">no target</a></div>
<div class="result web-result"><a class="result__a" href="//duckduckgo.com/l/?uddg=javascript%3Aalert(1)">wrapped js</a></div>
<div class="result web-result"><a class="result__a" href="https://ok.example/{huge}">long url</a></div>
<div class="result web-result"><a class="result__a" href="https://ok.example/a">{huge}</a><a class="result__snippet">{bomb}</a></div>
<div class="result web-result"><a class="result__a" href="https://ok.example/b">x&#8238;evil&#x202E; <script>alert(1)</script>&lt;b&gt;</a><a class="result__snippet">one<br>two &#0; &#xD800;</a></div>
</div>"#
        );
        let hits = ok(DuckDuckGo, &page, 10);
        assert_eq!(hits.len(), 2, "{hits:?}");
        // Dropped results do not take the places of good ones.
        assert_eq!(ok(DuckDuckGo, &page, 2), hits);
        assert_eq!(hits[0].url, "https://ok.example/a");
        assert!(hits[0].title.len() <= MAX_TITLE_BYTES + 3);
        assert!(hits[0].title.ends_with('…'));
        assert!(hits[0].snippet.len() <= MAX_SNIPPET_BYTES + 3);
        assert!(hits[0].snippet.starts_with("&&&"));
        assert_eq!(hits[1].title, "xevil <b>");
        assert_eq!(hits[1].snippet, "one two \u{FFFD} \u{FFFD}");
        // The same in JSON.
        let json = format!(
            r#"{{"type":"search","web":{{"results":[{{"title":"t","url":"javascript:x"}},{{"title":"{huge}","url":"HTTPS://OK.example/c","description":"<b>{bomb}</b>"}}]}}}}"#
        );
        let b = ok(Brave, &json, 10);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].url, "HTTPS://OK.example/c");
        let out = render("q", Brave, &b, &[], 16 * 1024);
        assert!(out.len() < 1024, "{out}");
    }

    #[test]
    fn the_result_is_numbered_and_stays_under_the_cap() {
        let hits = ok(DuckDuckGo, DDG, 10);
        let notes = vec!["duckduckgo: answered HTTP 502".to_string()];
        let out = render("pi \"zero\"", SearXng, &hits, &notes, 16 * 1024);
        assert!(out.starts_with("duckduckgo: answered HTTP 502\nResults for \"pi \\\"zero\\\"\" (searxng):\n1. Buy a Raspberry Pi Zero 2 W – Raspberry Pi\n   https://www.raspberrypi.com/products/raspberry-pi-zero-2-w/\n   Your tiny"), "{out}");
        assert!(out.contains("\n6. Raspberry Pi Zero 2 W Review"));
        let small = render("q", SearXng, &hits, &[], 700);
        assert!(small.len() <= 700 + 60, "{small}");
        assert!(small.contains("more left out"), "{small}");
        assert!(!small.contains("\n4. "), "{small}");
        assert_eq!(
            render("q", Brave, &[], &[], 100),
            "No results for \"q\" (brave)."
        );
    }

    #[test]
    fn requests_carry_the_query_language_and_safe_search() {
        let mut cfg = WebSearchConfig {
            language: "de-DE".into(),
            safe_search: SafeSearch::Strict,
            ..Default::default()
        };
        cfg.urls[SearXng as usize] = "http://192.168.1.5:8888".into();
        let q = "café & \"tea\"/?";
        let d = request(DuckDuckGo, &cfg, q, 5, None);
        assert!(d.post);
        assert_eq!(d.url, "https://html.duckduckgo.com/html/");
        assert_eq!(
            d.body,
            "q=caf%C3%A9%20%26%20%22tea%22%2F%3F&b=&kl=de-de&kp=1"
        );
        let s = request(SearXng, &cfg, q, 5, None);
        assert_eq!(
            s.url,
            "http://192.168.1.5:8888/search?q=caf%C3%A9%20%26%20%22tea%22%2F%3F&format=json&safesearch=2&language=de-DE"
        );
        let b = request(Brave, &cfg, "x", 7, Some("BSAkey"));
        assert_eq!(
            b.url,
            "https://api.search.brave.com/res/v1/web/search?q=x&count=7&safesearch=strict&result_filter=web&search_lang=de&country=DE"
        );
        assert!(
            b.headers
                .contains(&("X-Subscription-Token", "BSAkey".into()))
        );
        let t = request(Tavily, &cfg, "x\"y", 3, Some("tvly-k"));
        assert_eq!(t.url, "https://api.tavily.com/search");
        assert!(
            t.headers
                .contains(&("Authorization", "Bearer tvly-k".into()))
        );
        assert!(
            t.body.starts_with(r#"{"query":"x\"y","max_results":3,"#),
            "{}",
            t.body
        );
        assert!(!t.body.contains("tvly-k") && !b.url.contains("BSAkey"));
        assert_eq!(ddg_region("", ""), "wt-wt");
        assert_eq!(ddg_region("en", ""), "us-en");
        assert_eq!(ddg_region("en", "GB"), "uk-en");
        assert_eq!(ddg_region("fr", "CH"), "ch-fr");
        assert_eq!(ddg_region("ja", ""), "jp-jp");
        assert_eq!(ddg_region("zh", "TW"), "tw-tzh");
        assert_eq!(brave_lang("pt", "BR"), "pt-br");
        assert_eq!(brave_lang("zh", ""), "zh-hans");
    }

    #[test]
    fn only_a_configured_endpoint_may_be_a_local_address() {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let mut cfg = WebSearchConfig::default();
        cfg.urls[DuckDuckGo as usize] = format!("http://127.0.0.1:{port}");
        let req = request(DuckDuckGo, &cfg, "pi", 5, None);
        // As a public endpoint (what a name that resolves to 127.0.0.1 would be): refused
        // before connecting.
        let e = attempt(DuckDuckGo, &req, false, 5, 5, netguard::resolve_checked).unwrap_err();
        assert!(matches!(e, Failure::Refused(_)), "{e}");
        l.set_nonblocking(true).unwrap();
        assert!(l.accept().is_err(), "a connection was made");
        l.set_nonblocking(false).unwrap();
        // Configured by the user: asked.
        let server = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            // The whole request (its form ends with `kp=-1`) before the answer.
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            while !String::from_utf8_lossy(&buf).ends_with("kp=-1") {
                match c.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                DDG.len()
            );
            let _ = c.write_all(head.as_bytes());
            let _ = c.write_all(DDG.as_bytes());
            String::from_utf8_lossy(&buf).into_owned()
        });
        let hits = attempt(DuckDuckGo, &req, true, 5, 5, netguard::resolve_checked).unwrap();
        assert_eq!(hits.len(), 5);
        assert!(server.join().unwrap().starts_with("POST /html/ HTTP/1.1"));
    }

    #[test]
    fn random_pages_never_panic_and_stay_bounded() {
        let parts = [
            "<div class=\"result\">",
            "<a class=\"result__a\" href=\"",
            "//duckduckgo.com/l/?uddg=",
            "https%3A%2F%2Fx.org%2F",
            "%",
            "%E",
            "\">",
            "</a>",
            "<a class=\"result__snippet\">",
            "&amp;",
            "&#x",
            "<",
            "é",
            "\u{202E}",
            "no-results",
            " ",
            "result--ad",
        ];
        let mut x = crate::testkit::XorShift(0x5EA2_C4ED_0000_0001);
        for _ in 0..2000 {
            let mut page = String::new();
            for _ in 0..x.next() % 40 {
                page.push_str(parts[(x.next() % parts.len() as u64) as usize]);
            }
            if let Ok(hits) = interpret(DuckDuckGo, 200, page.as_bytes(), 10) {
                for h in hits {
                    assert!(h.url.len() <= MAX_RESULT_URL_BYTES);
                    assert!(h.title.len() <= MAX_TITLE_BYTES + 3);
                    assert!(h.url.starts_with("http"), "{h:?}");
                }
            }
        }
    }
}
