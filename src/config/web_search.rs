//! `tools.web_search`: which search backends the `web_search` tool asks, in what order,
//! where each one is, and what it is asked for (result count, language, safe search).
//!
//! Every backend's endpoint has its own key (`duckduckgo_url`, `searxng_url`, `brave_url`,
//! `tavily_url`); `base_url` is the same thing for the backend named by `backend`, so the
//! one-backend setup is one key. SearXNG has no public endpoint: a chain that holds it
//! without a URL is a configuration error. The API keys of Brave and Tavily are read from
//! the variables `brave_key_env` and `tavily_key_env` name (environment or `secrets.env`).
//!
//! # Bounds
//! `max_results` 1..=`MAX_SEARCH_RESULTS`; `timeout_secs` 1..=60; at most the four
//! backends in the chain (duplicates dropped).
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

use super::ConfigError;
use super::fields::Fields;
use crate::limits::MAX_SEARCH_RESULTS;

/// A search service `web_search` can ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchBackend {
    /// DuckDuckGo's HTML page (no key).
    DuckDuckGo,
    /// A SearXNG instance's JSON API (no key; the user's own instance).
    SearXng,
    /// Brave's Web Search API (a key).
    Brave,
    /// Tavily's search API (a key).
    Tavily,
}

impl SearchBackend {
    pub const ALL: [SearchBackend; 4] = [
        SearchBackend::DuckDuckGo,
        SearchBackend::SearXng,
        SearchBackend::Brave,
        SearchBackend::Tavily,
    ];

    pub fn name(self) -> &'static str {
        NAMES[self as usize]
    }

    pub fn parse(s: &str) -> Option<SearchBackend> {
        SearchBackend::ALL
            .into_iter()
            .find(|b| b.name() == s.trim())
    }

    /// The public endpoint's root (SearXNG: none, it is the user's own).
    pub fn public_url(self) -> &'static str {
        [
            "https://html.duckduckgo.com",
            "",
            "https://api.search.brave.com",
            "https://api.tavily.com",
        ][self as usize]
    }
}

/// `tools.web_search.safe_search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SafeSearch {
    Off,
    Moderate,
    Strict,
}

impl SafeSearch {
    pub fn as_str(self) -> &'static str {
        ["off", "moderate", "strict"][self as usize]
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct WebSearchConfig {
    /// `backend`, then `fallback`, without repeats: the order backends are tried in.
    pub chain: Vec<SearchBackend>,
    /// Each backend's endpoint root as configured (by `SearchBackend as usize`, no
    /// trailing slash); empty: its public endpoint.
    pub urls: [String; 4],
    /// Results per search, 1..=`MAX_SEARCH_RESULTS`; defaults to 5.
    pub max_results: u64,
    /// `de` or `de-DE` (language, optionally its region); empty: each backend's default.
    pub language: String,
    /// Defaults to moderate.
    pub safe_search: SafeSearch,
    /// One backend's whole exchange, 1..=60 s; defaults to 10.
    pub timeout_secs: u64,
    /// Defaults to `BRAVE_API_KEY`.
    pub brave_key_env: String,
    /// Defaults to `TAVILY_API_KEY`.
    pub tavily_key_env: String,
}

impl Default for WebSearchConfig {
    fn default() -> Self {
        WebSearchConfig {
            chain: vec![SearchBackend::DuckDuckGo],
            urls: Default::default(),
            max_results: 5,
            language: String::new(),
            safe_search: SafeSearch::Moderate,
            timeout_secs: 10,
            brave_key_env: "BRAVE_API_KEY".into(),
            tavily_key_env: "TAVILY_API_KEY".into(),
        }
    }
}

impl WebSearchConfig {
    /// `b`'s endpoint root and whether the user configured it (a configured host may be on
    /// the LAN; a public endpoint must resolve to a public address).
    pub fn endpoint(&self, b: SearchBackend) -> (&str, bool) {
        match self.urls[b as usize].as_str() {
            "" => (b.public_url(), false),
            u => (u, true),
        }
    }

    /// The variable holding `b`'s API key, for the backends that take one.
    pub fn key_env(&self, b: SearchBackend) -> Option<&str> {
        match b {
            SearchBackend::Brave => Some(&self.brave_key_env),
            SearchBackend::Tavily => Some(&self.tavily_key_env),
            _ => None,
        }
    }

    /// The section as `config.json` holds it (what `migrate` writes and compares).
    pub fn to_json(&self) -> String {
        let q = crate::json::quote;
        let names: Vec<String> = self.chain[1..].iter().map(|b| q(b.name())).collect();
        let mut s = [
            "{ \"backend\": ",
            &q(self.chain[0].name()),
            ", \"fallback\": [",
            &names.join(", "),
            "]",
        ]
        .concat();
        for b in SearchBackend::ALL {
            let u = &self.urls[b as usize];
            if !u.is_empty() {
                s.push_str(&[", \"", b.name(), "_url\": ", &q(u)].concat());
            }
        }
        for (k, v) in [
            ("max_results", self.max_results.to_string()),
            ("language", q(&self.language)),
            ("safe_search", q(self.safe_search.as_str())),
            ("timeout_secs", self.timeout_secs.to_string()),
            ("brave_key_env", q(&self.brave_key_env)),
            ("tavily_key_env", q(&self.tavily_key_env)),
        ] {
            s.push_str(&[", \"", k, "\": ", &v].concat());
        }
        s.push_str(" }");
        s
    }
}

/// The backends' names, by `SearchBackend as usize`.
const NAMES: [&str; 4] = ["duckduckgo", "searxng", "brave", "tavily"];

const URL_KEYS: [&str; 4] = ["duckduckgo_url", "searxng_url", "brave_url", "tavily_url"];

fn bad(key: &str, expected: &str) -> ConfigError {
    ConfigError::BadValue {
        key: ["tools.web_search.", key].concat(),
        expected: expected.into(),
    }
}

/// Reads `tools.web_search`.
pub(super) fn read(s: &mut Fields<'_>) -> Result<WebSearchConfig, ConfigError> {
    let d = WebSearchConfig::default();
    let backend = s.choice("backend", "duckduckgo", &NAMES)?;
    let mut chain = vec![SearchBackend::parse(&backend).unwrap_or(SearchBackend::DuckDuckGo)];
    for f in s.string_list("fallback")? {
        let b = SearchBackend::parse(&f)
            .ok_or_else(|| bad("fallback", "a list of duckduckgo, searxng, brave, tavily"))?;
        if !chain.contains(&b) {
            chain.push(b);
        }
    }
    let mut urls: [String; 4] = Default::default();
    for (i, k) in URL_KEYS.into_iter().enumerate() {
        urls[i] = super::types::trim_slash(s.string(k, "")?);
    }
    let base = super::types::trim_slash(s.string("base_url", "")?);
    let primary = &mut urls[chain[0] as usize];
    if !base.is_empty() {
        if !primary.is_empty() && *primary != base {
            return Err(bad(
                "base_url",
                &[
                    "the same as ",
                    URL_KEYS[chain[0] as usize],
                    " (or left out)",
                ]
                .concat(),
            ));
        }
        *primary = base;
    }
    for (i, u) in urls.iter().enumerate() {
        if !u.is_empty() {
            super::types::check_url(u, &["tools.web_search.", URL_KEYS[i]].concat())?;
        }
    }
    if chain.contains(&SearchBackend::SearXng) && urls[SearchBackend::SearXng as usize].is_empty() {
        return Err(bad(
            "searxng_url",
            "the URL of your SearXNG instance (http://host:port) when searxng is the backend or a fallback",
        ));
    }
    let language = language(&s.string("language", "")?).ok_or_else(|| {
        bad(
            "language",
            "a language code like \"de\" or \"de-DE\", or empty",
        )
    })?;
    let safe_search = match s
        .choice("safe_search", "moderate", &["off", "moderate", "strict"])?
        .as_str()
    {
        "off" => SafeSearch::Off,
        "strict" => SafeSearch::Strict,
        _ => SafeSearch::Moderate,
    };
    Ok(WebSearchConfig {
        chain,
        urls,
        max_results: s.uint("max_results", d.max_results, 1, MAX_SEARCH_RESULTS as u64)?,
        language,
        safe_search,
        timeout_secs: s.uint("timeout_secs", d.timeout_secs, 1, 60)?,
        brave_key_env: s.string("brave_key_env", &d.brave_key_env)?,
        tavily_key_env: s.string("tavily_key_env", &d.tavily_key_env)?,
    })
}

/// `de`, `DE-de` or `de_DE` as `de-DE`; empty stays empty; anything else is `None`.
fn language(v: &str) -> Option<String> {
    let v = v.trim();
    if v.is_empty() {
        return Some(String::new());
    }
    let (lang, region) = match v.split_once(['-', '_']) {
        Some((l, r)) => (l, Some(r)),
        None => (v, None),
    };
    let alpha = |s: &str, n: std::ops::RangeInclusive<usize>| {
        n.contains(&s.len()) && s.bytes().all(|c| c.is_ascii_alphabetic())
    };
    if !alpha(lang, 2..=3) || region.is_some_and(|r| !alpha(r, 2..=2)) {
        return None;
    }
    let mut out = lang.to_ascii_lowercase();
    if let Some(r) = region {
        out.push('-');
        out.push_str(&r.to_ascii_uppercase());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<WebSearchConfig, ConfigError> {
        let env = crate::config::Env::isolated(&[]);
        let t = ["{\"tools\":{\"web_search\":", text, "}}"].concat();
        crate::config::parse(Some(&t), std::path::Path::new("c.json"), &env)
            .map(|c| c.tools.web_search)
    }

    #[test]
    fn defaults_and_the_chain() {
        let d = parse("{}").unwrap();
        assert_eq!(d, WebSearchConfig::default());
        assert_eq!(
            d.endpoint(SearchBackend::DuckDuckGo),
            ("https://html.duckduckgo.com", false)
        );
        let c = parse(
            r#"{"backend":"brave","fallback":["duckduckgo","brave","searxng"],"base_url":"http://127.0.0.1:9/","searxng_url":"http://192.168.1.5:8888","language":"de_de","safe_search":"strict","max_results":50}"#,
        )
        .unwrap();
        use SearchBackend::*;
        assert_eq!(c.chain, [Brave, DuckDuckGo, SearXng]);
        assert_eq!(c.endpoint(Brave), ("http://127.0.0.1:9", true));
        assert_eq!(c.endpoint(SearXng), ("http://192.168.1.5:8888", true));
        assert_eq!(c.language, "de-DE");
        assert_eq!(c.safe_search, SafeSearch::Strict);
        assert_eq!(c.max_results, MAX_SEARCH_RESULTS as u64);
        assert_eq!(c.key_env(Brave), Some("BRAVE_API_KEY"));
        assert_eq!(c.key_env(DuckDuckGo), None);
        // What migrate writes reads back the same.
        assert_eq!(parse(&c.to_json()).unwrap(), c);
        assert_eq!(parse(&d.to_json()).unwrap(), d);
    }

    #[test]
    fn mistakes_name_the_key() {
        for (text, key) in [
            (r#"{"backend":"google"}"#, "backend"),
            (r#"{"fallback":["bing"]}"#, "fallback"),
            (r#"{"backend":"searxng"}"#, "searxng_url"),
            (r#"{"fallback":["searxng"]}"#, "searxng_url"),
            (r#"{"brave_url":"ftp://x"}"#, "brave_url"),
            (
                r#"{"backend":"tavily","base_url":"http://a","tavily_url":"http://b"}"#,
                "base_url",
            ),
            (r#"{"language":"english"}"#, "language"),
            (r#"{"language":"de-DEU"}"#, "language"),
            (r#"{"safe_search":"on"}"#, "safe_search"),
            (r#"{"brave_key":"x"}"#, "brave_key"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(
                e.contains(&["tools.web_search.", key].concat()),
                "{text}: {e}"
            );
        }
    }
}
