//! The peers' web search settings as `tools.web_search`:
//!
//! - PicoClaw: `tools.web.{brave, tavily, searxng, duckduckgo}` that are `enabled`, in
//!   PicoClaw's order (or `tools.web.provider` first), each one's key (`api_key`,
//!   `api_keys`, or `.security.yml`'s `web.<name>.api_keys`), Tavily's and SearXNG's
//!   `base_url`, the first one's `max_results`.
//! - ZeroClaw: `[web_search]` `search_provider` with its key (`brave_api_key`,
//!   `tavily_api_key`) or `searxng_instance_url`, and `max_results`.
//! - NullClaw: `http_request.search_provider` and `search_fallback_providers` (`auto`:
//!   its SearXNG `search_base_url` when set); its keys were the same `BRAVE_API_KEY` /
//!   `TAVILY_API_KEY` variables yoctoclaw reads, so they stay where they are.
//!
//! Backends yoctoclaw does not have (Perplexity, Exa, Jina, Kagi ...) are skip lines; a
//! keyed backend without its key, or SearXNG without its URL, is left out with one.
//!
//! # Threads
//! Main thread (`yoctoclaw migrate`).

use super::{Plan, at, strs};
use crate::config::{SearchBackend, WebSearchConfig};
use crate::json::{as_array, as_bool, as_str, as_u64, get, str_at};
use miniserde::json::Value;

/// A backend as the peer configured it: its endpoint if set, its key if the config holds
/// it.
type Found<'a> = (SearchBackend, Option<&'a str>, Option<&'a str>);

impl Plan {
    /// `tools.web_search` from the peer's backends in its order; `env_keys`: the peer
    /// read the keys from the variables yoctoclaw reads too (none is in its config).
    fn web_search(&mut self, found: &[Found<'_>], max: Option<u64>, env_keys: bool, from: &str) {
        let mut ws = WebSearchConfig::default();
        ws.chain.clear();
        for &(b, url, key) in found {
            if ws.chain.contains(&b) {
                continue;
            }
            if let Some(var) = ws.key_env(b).map(str::to_string) {
                match key.filter(|k| !k.trim().is_empty()) {
                    Some(k) if !self.secret(&var, k) => continue,
                    None if !env_keys => {
                        self.skip(
                            "search",
                            b.name(),
                            "no API key in the peer's config: not brought",
                        );
                        continue;
                    }
                    _ => {}
                }
            }
            let url = url.map(|u| u.trim().trim_end_matches('/')).unwrap_or("");
            let url = url.strip_suffix("/search").unwrap_or(url);
            if b == SearchBackend::SearXng && url.is_empty() {
                self.skip("search", "searxng", "no instance URL: not brought");
                continue;
            }
            if url != b.public_url() {
                ws.urls[b as usize] = url.to_string();
            }
            ws.chain.push(b);
        }
        if ws.chain.is_empty() {
            return;
        }
        if let Some(n) = max.filter(|&n| n > 0) {
            ws.max_results = n;
        }
        self.setting("tools.web_search", &ws.to_json(), from);
    }

    fn no_backend(&mut self, name: &str) {
        self.skip(
            "search",
            name,
            "yoctoclaw has no such search backend: not brought",
        );
    }
}

/// The first of a peer's `api_keys` list.
fn first_key(v: &Value) -> Option<&str> {
    strs(get(v, "api_keys")).first().copied()
}

/// A peer's name for a backend (`ddg` included).
fn backend(name: &str) -> Option<SearchBackend> {
    match name.trim().to_ascii_lowercase().as_str() {
        "ddg" => Some(SearchBackend::DuckDuckGo),
        n => SearchBackend::parse(n),
    }
}

/// PicoClaw's `tools.web` (`sec`: its `.security.yml`).
pub fn picoclaw(plan: &mut Plan, cfg: &Value, sec: &Value) {
    let Some(web) = at(cfg, "tools web") else {
        return;
    };
    let first = str_at(web, "provider").and_then(backend);
    let mut order = vec![
        SearchBackend::Brave,
        SearchBackend::Tavily,
        SearchBackend::SearXng,
        SearchBackend::DuckDuckGo,
    ];
    if let Some(f) = first {
        order.retain(|&b| b != f);
        order.insert(0, f);
    }
    let mut found = Vec::new();
    let mut max = None;
    for b in order {
        let c = get(web, b.name()).unwrap_or(&Value::Null);
        if get(c, "enabled").and_then(as_bool) != Some(true) && first != Some(b) {
            continue;
        }
        let key = str_at(c, "api_key")
            .filter(|k| !k.trim().is_empty())
            .or_else(|| first_key(c))
            .or_else(|| at(sec, &["web ", b.name()].concat()).and_then(first_key));
        max = max.or_else(|| get(c, "max_results").and_then(as_u64));
        found.push((b, str_at(c, "base_url"), key));
    }
    for other in [
        "perplexity",
        "kagi",
        "gemini",
        "glm_search",
        "baidu_search",
        "sogou",
    ] {
        if at(web, &[other, " enabled"].concat()).and_then(as_bool) == Some(true) {
            plan.no_backend(&["tools.web.", other].concat());
        }
    }
    plan.web_search(&found, max, false, "tools.web");
}

/// ZeroClaw's `[web_search]`.
pub fn zeroclaw(plan: &mut Plan, cfg: &Value) {
    let Some(ws) = get(cfg, "web_search") else {
        return;
    };
    if get(ws, "enabled").and_then(as_bool) == Some(false) {
        plan.skip(
            "search",
            "web_search.enabled false",
            "not brought: deny web_search in tools.deny by hand",
        );
        return;
    }
    let name = str_at(ws, "search_provider").unwrap_or("duckduckgo");
    let Some(b) = backend(name) else {
        return plan.no_backend(&["web_search.search_provider ", name].concat());
    };
    let key = str_at(ws, ["", "", "brave_api_key", "tavily_api_key"][b as usize]);
    let found = [(b, str_at(ws, "searxng_instance_url"), key)];
    let max = get(ws, "max_results").and_then(as_u64);
    plan.web_search(&found, max, false, "[web_search]");
}

/// NullClaw's `http_request` search settings.
pub fn nullclaw(plan: &mut Plan, cfg: &Value) {
    let Some(h) = get(cfg, "http_request") else {
        return;
    };
    let url = str_at(h, "search_base_url");
    let mut found = Vec::new();
    let first = str_at(h, "search_provider").unwrap_or("auto");
    let rest = get(h, "search_fallback_providers").and_then(as_array);
    let names = std::iter::once(first).chain(rest.into_iter().flatten().filter_map(as_str));
    for name in names {
        match backend(name) {
            Some(b) => found.push((b, url.filter(|_| b == SearchBackend::SearXng), None)),
            None if name.trim() == "auto" => {
                if url.is_some() {
                    found.push((SearchBackend::SearXng, url, None));
                    found.push((SearchBackend::DuckDuckGo, None, None));
                }
            }
            None => plan.no_backend(&["http_request search provider ", name].concat()),
        }
    }
    plan.web_search(&found, None, true, "http_request.search_provider");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::Peer;

    fn value(text: &str) -> Value {
        crate::json::parse_value(text).unwrap()
    }

    fn setting(p: &Plan) -> Option<WebSearchConfig> {
        let s = p.settings.iter().find(|s| s.key == "tools.web_search")?;
        let text = ["{\"tools\":{\"web_search\":", &s.value, "}}"].concat();
        let env = crate::config::Env::isolated(&[]);
        let c = crate::config::parse(Some(&text), std::path::Path::new("c"), &env).unwrap();
        Some(c.tools.web_search)
    }

    #[test]
    fn picoclaw_web_tools_become_the_chain_with_keys_in_secrets() {
        use SearchBackend::*;
        let mut p = Plan::new(Peer::PicoClaw);
        let cfg = value(
            r#"{"tools":{"web":{"brave":{"enabled":true,"api_key":"BSA-real-key","max_results":8},"tavily":{"enabled":false,"api_key":"tvly-x"},"duckduckgo":{"enabled":true,"max_results":5},"searxng":{"enabled":true,"base_url":"http://192.168.1.5:8888/"},"perplexity":{"enabled":true}}}}"#,
        );
        picoclaw(&mut p, &cfg, &Value::Null);
        let ws = setting(&p).unwrap();
        assert_eq!(ws.chain, [Brave, SearXng, DuckDuckGo]);
        assert_eq!(ws.endpoint(SearXng), ("http://192.168.1.5:8888", true));
        assert_eq!(ws.max_results, 8);
        assert!(p.secrets.iter().any(|s| s.name == "BRAVE_API_KEY"));
        assert!(
            p.skipped
                .iter()
                .any(|s| s.1.contains("tools.web.perplexity"))
        );
        // Written into the onboard template's line, which then loads as the same.
        let text = crate::migrate::apply::config_text(&p, None);
        let env = crate::config::Env::isolated(&[]);
        let c = crate::config::parse(Some(&text), std::path::Path::new("c"), &env).unwrap();
        assert_eq!(c.tools.web_search, ws);
        // PicoClaw's defaults (DuckDuckGo alone, 5 results) are yoctoclaw's: nothing to set.
        let mut p = Plan::new(Peer::PicoClaw);
        let cfg = value(r#"{"tools":{"web":{"duckduckgo":{"enabled":true,"max_results":5}}}}"#);
        picoclaw(&mut p, &cfg, &Value::Null);
        assert!(p.settings.is_empty());
        // A key in .security.yml; a keyed backend without one is left out.
        let mut p = Plan::new(Peer::PicoClaw);
        let cfg = value(
            r#"{"tools":{"web":{"provider":"tavily","brave":{"enabled":true},"duckduckgo":{"enabled":true}}}}"#,
        );
        let sec = value(r#"{"web":{"tavily":{"api_keys":["tvly-abc123"]}}}"#);
        picoclaw(&mut p, &cfg, &sec);
        assert_eq!(setting(&p).unwrap().chain, [Tavily, DuckDuckGo]);
        assert!(p.secrets.iter().any(|s| s.name == "TAVILY_API_KEY"));
        assert!(
            p.skipped
                .iter()
                .any(|s| s.1.starts_with("brave: no API key"))
        );
    }

    #[test]
    fn zeroclaw_and_nullclaw_search_settings() {
        use SearchBackend::*;
        let mut p = Plan::new(Peer::ZeroClaw);
        let cfg = value(
            r#"{"web_search":{"enabled":true,"search_provider":"searxng","searxng_instance_url":"https://searx.example.com","max_results":3}}"#,
        );
        zeroclaw(&mut p, &cfg);
        let ws = setting(&p).unwrap();
        assert_eq!(ws.chain, [SearXng]);
        assert_eq!(ws.max_results, 3);
        let mut p = Plan::new(Peer::ZeroClaw);
        zeroclaw(
            &mut p,
            &value(r#"{"web_search":{"search_provider":"jina"}}"#),
        );
        assert!(p.settings.is_empty() && p.skipped.len() == 1);
        let mut p = Plan::new(Peer::NullClaw);
        let cfg = value(
            r#"{"http_request":{"search_provider":"brave","search_fallback_providers":["ddg","exa"],"search_base_url":"https://searx.lan/search"}}"#,
        );
        nullclaw(&mut p, &cfg);
        let ws = setting(&p).unwrap();
        assert_eq!(ws.chain, [Brave, DuckDuckGo]);
        assert!(p.secrets.is_empty());
        assert!(p.skipped.iter().any(|s| s.1.contains("exa")));
        let mut p = Plan::new(Peer::NullClaw);
        nullclaw(
            &mut p,
            &value(r#"{"http_request":{"search_base_url":"https://searx.lan/search"}}"#),
        );
        assert_eq!(setting(&p).unwrap().chain, [SearXng, DuckDuckGo]);
        assert_eq!(
            setting(&p).unwrap().endpoint(SearXng).0,
            "https://searx.lan"
        );
    }
}
