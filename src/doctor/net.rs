//! The network checks of `doctor`: reaching a host (DNS, TCP, TLS), the bot token
//! (`getMe`), the model (a one-token request; with `--deep`, a tool call) and, for a
//! local server, its context window.
//!
//! Every text that reaches a check line names hosts, never URLs (a Bot API URL holds the
//! token), and is scrubbed by `Check::new` as a last guard.
//!
//! The model check: one chat request with `max_tokens` 1 (OpenAI-compatible or Anthropic),
//! which proves the key, the model's name and the server at once for a few tokens. A
//! models listing proves little: llama-cpp-python serves any name with one model loaded,
//! OpenRouter's list is public. `doctor --deep` also asks the model to call a harmless
//! tool (never run) and says which `provider.tool_mode` fits it.
//!
//! # Bounds
//! DNS, TCP and TLS each get `NET_TIMEOUT_SECS`; at most `MAX_ADDRS_TRIED` addresses are
//! tried. The model check has `MODEL_TIMEOUT_SECS`; answers are read up to
//! `MAX_SMALL_REPLY_BYTES`. Error excerpts shown are cut to `MAX_EXCERPT_CHARS`.
//!
//! # Threads
//! Main thread; [`resolve`] starts one `yc-dns` thread (`THREAD_STACK_BYTES` stack) per
//! lookup and waits for it at most the check's timeout; a lookup that hangs leaves its
//! thread until the system resolver gives up or doctor exits.
//!
//! # Blocking
//! Everything here blocks the calling thread. A DNS lookup runs on a short-lived thread so
//! it can be abandoned after its timeout (the lookup itself cannot be cancelled).

use super::{Check, Verdict};
use crate::config::{ProviderConfig, ProviderKind};
use crate::provider::http::{self, HttpError, map_error};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Timeout of each network step (DNS, TCP connect, TLS handshake).
pub const NET_TIMEOUT_SECS: u64 = 5;
/// Overall timeout of the model check and of `getMe`.
pub const MODEL_TIMEOUT_SECS: u64 = 20;
/// Addresses of one host tried before giving up.
pub const MAX_ADDRS_TRIED: usize = 3;
/// Most bytes read of any other answer.
pub const MAX_SMALL_REPLY_BYTES: u64 = 64 * 1024;
/// Longest excerpt of a server's error shown.
pub const MAX_EXCERPT_CHARS: usize = 160;

/// Scheme, host and port of a base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub https: bool,
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    pub fn parse(url: &str) -> Option<Endpoint> {
        let (https, default_port) = if url.starts_with("https://") {
            (true, 443)
        } else if url.starts_with("http://") {
            (false, 80)
        } else {
            return None;
        };
        let authority = http::host_of(url);
        let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
            let (h, after) = rest.split_once(']')?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().ok()?,
                None if after.is_empty() => default_port,
                None => return None,
            };
            (h.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p.parse().ok()?),
                None => (authority.clone(), default_port),
            }
        };
        if host.is_empty() {
            return None;
        }
        Some(Endpoint { https, host, port })
    }

    fn display(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// DNS, TCP connect, and for https a TLS handshake to the host of `url`.
pub fn reach(name: &'static str, url: &str) -> Check {
    let Some(ep) = Endpoint::parse(url) else {
        return Check::new(
            Verdict::Fail,
            name,
            format!(
                "{} is not an http(s) URL: fix it in config.json",
                http::host_of(url)
            ),
        );
    };
    let target = ep.display();
    let timeout = Duration::from_secs(NET_TIMEOUT_SECS);
    let addrs = match resolve(&ep.host, ep.port, timeout) {
        Ok(a) => a,
        Err(e) => {
            return Check::new(
                Verdict::Fail,
                name,
                format!(
                    "cannot resolve {}: {e}: check the network and the DNS servers in /etc/resolv.conf",
                    ep.host
                ),
            );
        }
    };
    let first = addrs
        .first()
        .map(|a| a.ip().to_string())
        .unwrap_or_default();
    let mut last_err = String::from("no address");
    let mut connected = false;
    for a in addrs.iter().take(MAX_ADDRS_TRIED) {
        match TcpStream::connect_timeout(a, timeout) {
            Ok(_) => {
                connected = true;
                break;
            }
            Err(e) => last_err = connect_error_text(&e),
        }
    }
    if !connected {
        return Check::new(
            Verdict::Fail,
            name,
            format!(
                "cannot connect to {target} ({last_err}): check the network, a firewall, or the URL"
            ),
        );
    }
    if !ep.https {
        return Check::new(
            Verdict::Ok,
            name,
            format!("{target}: DNS {first}, TCP connect ok (plain http, no TLS)"),
        );
    }
    // A HEAD through our HTTP client: any HTTP status means the TLS handshake (with
    // certificate checks) worked.
    let agent = http::agent(NET_TIMEOUT_SECS);
    let url = format!("https://{target}/");
    match agent.head(&url).call() {
        Ok(resp) => {
            http::note_date(&resp, &url);
            Check::new(
                Verdict::Ok,
                name,
                format!("{target}: DNS {first}, TCP connect and TLS handshake ok"),
            )
        }
        Err(e) => {
            let text = match map_error(e) {
                // The failure's own sentence says what to do.
                HttpError::Tls(t) => format!("TLS to {target} failed: {t}"),
                e => format!("TLS to {target} failed ({e}): check the network and any proxy"),
            };
            Check::new(Verdict::Fail, name, text)
        }
    }
}

/// `tls.ca_file`: load it for the checks that follow, and say how many anchors it adds.
pub fn ca_file(home: &std::path::Path, ca_file: &str) -> Check {
    use crate::provider::tls;
    match tls::install_ca_file(home, ca_file) {
        Ok(Some((path, n))) => Check::new(
            Verdict::Ok,
            "tls",
            format!(
                "{n} extra trust anchor(s) from {} (tls.ca_file), besides the {} built-in roots",
                path.display(),
                tls::trusted_roots().0
            ),
        ),
        Ok(None) => Check::new(Verdict::Ok, "tls", "built-in roots only"),
        Err(e) => Check::new(
            Verdict::Fail,
            "tls",
            format!("tls.ca_file: {e}: point it at a PEM file of CA certificates"),
        ),
    }
}

fn connect_error_text(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".into(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => "timed out".into(),
        _ => e.to_string(),
    }
}

/// Resolve on a helper thread so a hung resolver cannot hold doctor past `timeout`.
fn resolve(host: &str, port: u16, timeout: Duration) -> Result<Vec<SocketAddr>, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = host.to_string();
    crate::runtime::spawn_thread("yc-dns", move || {
        let r = (h.as_str(), port)
            .to_socket_addrs()
            .map(|a| a.take(MAX_ADDRS_TRIED).collect::<Vec<_>>());
        let _ = tx.send(r);
    })
    .map_err(|e| e.to_string())?;
    match rx.recv_timeout(timeout) {
        Ok(Ok(v)) if !v.is_empty() => Ok(v),
        Ok(Ok(_)) => Err("no addresses".into()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {} s", timeout.as_secs())),
    }
}

/// `getMe` with the bot token.
pub fn bot_token(api_base: &str, token: &str, token_env: &str) -> Check {
    const NAME: &str = "bot token";
    let agent = http::agent(MODEL_TIMEOUT_SECS);
    let url = format!("{api_base}/bot{token}/getMe");
    let (status, body, _) = match http::get(&agent, &url, MAX_SMALL_REPLY_BYTES, None) {
        Ok(r) => r,
        Err(HttpError::Tls(t)) => {
            return Check::new(Verdict::Fail, NAME, format!("getMe failed: {t}"));
        }
        Err(e) => {
            return Check::new(
                Verdict::Fail,
                NAME,
                format!("getMe failed ({e}): check the network"),
            );
        }
    };
    match status {
        200 => {
            let v = crate::json::parse_value(&body).ok();
            let ok = v
                .as_ref()
                .and_then(|v| crate::json::get(v, "ok"))
                .and_then(crate::json::as_bool)
                == Some(true);
            let user = v
                .as_ref()
                .and_then(|v| crate::json::path(v, &["result", "username"]))
                .and_then(crate::json::as_str)
                .map(|u| format!(" (@{})", excerpt(u)))
                .unwrap_or_default();
            if ok {
                Check::new(Verdict::Ok, NAME, format!("valid{user}"))
            } else {
                Check::new(
                    Verdict::Fail,
                    NAME,
                    "getMe answered 200 without ok=true: is telegram.api_base a Bot API server?",
                )
            }
        }
        401 | 404 => Check::new(
            Verdict::Fail,
            NAME,
            format!(
                "Telegram refused the token in {token_env} (HTTP {status}): copy it again from @BotFather"
            ),
        ),
        s => Check::new(
            Verdict::Fail,
            NAME,
            format!("getMe answered HTTP {s}: {}", error_excerpt(&body)),
        ),
    }
}

/// Is the configured model reachable with the configured key? A one-token request: a
/// models listing says nothing reliable (llama-cpp-python serves any name with one model
/// loaded; OpenRouter's list is public), a request proves the key, the name and the
/// server at the cost of one token.
pub fn model(p: &ProviderConfig, key: Option<&str>) -> Check {
    tiny_request(p, key)
}

/// `doctor --deep`: asks the model to call a harmless tool (`get_time`, never run) and
/// says whether native calls, calls written as text, or none work with it, and which
/// `provider.tool_mode` to set.
pub fn tool_calls(p: &ProviderConfig, env: &crate::config::Env) -> Check {
    use crate::chat::{Message, Role, ToolSpec};
    use crate::provider::{ChatRequest, Provider};
    use std::borrow::Cow;
    const GET_TIME: ToolSpec = ToolSpec {
        name: Cow::Borrowed("get_time"),
        description: Cow::Borrowed(
            "Get the current time. Call it whenever the user asks for the time.",
        ),
        parameters: Cow::Borrowed(r#"{"type":"object","properties":{}}"#),
    };
    const NAME: &str = "tool calls";
    let mut cfg = p.clone();
    cfg.stream = false;
    cfg.max_tokens = cfg.max_tokens.min(256);
    let provider = match Provider::new(&cfg, env) {
        Ok(pr) => pr,
        Err(e) => return Check::new(Verdict::Fail, NAME, e.to_string()),
    };
    let messages = [Message::new(
        Role::User,
        "What time is it? Call the get_time tool to find out.",
    )];
    let req = ChatRequest {
        system: "You are a helpful assistant with tools.",
        messages: &messages,
        tools: &[GET_TIME],
        media_root: None,
    };
    let reply = provider
        .build_body(&req)
        .and_then(|body| provider.chat_blocking(&body));
    let is_get_time = |n: &str| n == GET_TIME.name;
    match reply {
        Ok(r) if r.tool_calls.iter().any(|c| c.name == GET_TIME.name) => Check::new(
            Verdict::Ok,
            NAME,
            "native tool calls work with this model: provider.tool_mode native (the default)",
        ),
        Ok(r)
            if !crate::agent::toolcall::extract(&r.content, &is_get_time)
                .calls
                .is_empty() =>
        {
            Check::new(
                Verdict::Warn,
                NAME,
                "the model writes tool calls as text (they work): set provider.tool_mode to text to describe the tools in the prompt instead",
            )
        }
        Ok(_) => Check::new(
            Verdict::Warn,
            NAME,
            "the model called no tool when asked to: try provider.tool_mode text, or none to stop offering tools",
        ),
        Err(e) => Check::new(Verdict::Fail, NAME, e.to_string()),
    }
}

/// Where a local server says its context window: llama.cpp's `/props`, LM Studio's
/// `/api/v0/models/NAME`, Ollama's `/api/show` (`num_ctx` in the model's parameters,
/// else Ollama's own default). `None` for a server that says nothing (or a remote one).
fn server_window(p: &ProviderConfig) -> Option<(u64, &'static str)> {
    use crate::json;
    let root = p.base_url.trim_end_matches('/');
    let root = root.strip_suffix("/v1").unwrap_or(root);
    let agent = http::agent(NET_TIMEOUT_SECS);
    let get = |path: &str| {
        http::get(
            &agent,
            &format!("{root}{path}"),
            MAX_SMALL_REPLY_BYTES,
            None,
        )
        .ok()
        .filter(|(s, _, _)| *s == 200)
        .and_then(|(_, body, _)| json::parse_value(&body).ok())
    };
    if let Some(v) = get("/props") {
        let n = json::path(&v, &["default_generation_settings", "n_ctx"])
            .or_else(|| json::get(&v, "n_ctx"))
            .and_then(json::as_u64);
        if let Some(n) = n.filter(|n| *n > 0) {
            return Some((n, "llama.cpp's /props"));
        }
    }
    if let Some(v) = get(&format!("/api/v0/models/{}", p.model)) {
        let n = json::get(&v, "loaded_context_length")
            .or_else(|| json::get(&v, "max_context_length"))
            .and_then(json::as_u64);
        if let Some(n) = n.filter(|n| *n > 0) {
            return Some((n, "LM Studio's /api/v0/models"));
        }
    }
    let body = format!(r#"{{"model":{}}}"#, json::quote(&p.model));
    let headers = [("Content-Type", "application/json".to_string())];
    let (status, text, _) =
        http::post(&agent, &format!("{root}/api/show"), &headers, &body).ok()?;
    let v = json::parse_value(&text).ok().filter(|_| status == 200)?;
    json::get(&v, "model_info")?;
    let set = json::str_at(&v, "parameters").and_then(|params| {
        params.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some("num_ctx"))
                .then(|| w.next()?.parse().ok())
                .flatten()
        })
    });
    Some(match set {
        Some(n) => (n, "num_ctx in Ollama's /api/show"),
        None => (OLLAMA_DEFAULT_NUM_CTX, "Ollama's default num_ctx"),
    })
}

/// Ollama's context window for a model whose parameters do not set `num_ctx` (since
/// 0.6.4; `OLLAMA_CONTEXT_LENGTH` on the server changes it, which doctor cannot see).
pub const OLLAMA_DEFAULT_NUM_CTX: u64 = 4096;

/// The context window yoctoclaw fits requests into, against the one a local server says
/// it has. `None` for a remote provider without `provider.context_window`.
pub fn context_window(p: &ProviderConfig) -> Option<Check> {
    const NAME: &str = "context window";
    let assumed = p.window()?;
    let server = if p.kind == ProviderKind::OpenAi {
        server_window(p)
    } else {
        None
    };
    let set = p.context_window > 0;
    Some(match server {
        Some((n, from)) if n == assumed => {
            Check::new(Verdict::Ok, NAME, format!("{n} tokens, as {from} says"))
        }
        Some((n, from)) if !set => Check::new(
            Verdict::Warn,
            NAME,
            format!(
                "{from} says {n} tokens, {assumed} are assumed: set provider.context_window to {n}"
            ),
        ),
        Some((n, from)) => Check::new(
            Verdict::Warn,
            NAME,
            format!(
                "provider.context_window is {assumed} but {from} says {n} tokens: set it to {n}"
            ),
        ),
        None if set => Check::new(
            Verdict::Ok,
            NAME,
            format!("{assumed} tokens (provider.context_window)"),
        ),
        None => Check::new(
            Verdict::Ok,
            NAME,
            format!(
                "{assumed} tokens assumed for a local server (it does not say): set provider.context_window to the server's context size"
            ),
        ),
    })
}

/// A one-token request: checks the key and the model in one go.
fn tiny_request(p: &ProviderConfig, key: Option<&str>) -> Check {
    let agent = http::agent(MODEL_TIMEOUT_SECS);
    let model = crate::json::quote(&p.model);
    let body = format!(
        r#"{{"model":{model},"max_tokens":1,"messages":[{{"role":"user","content":"ping"}}]}}"#
    );
    let mut headers: Vec<(&str, String)> = vec![("Content-Type", "application/json".into())];
    let url = match p.kind {
        ProviderKind::OpenAi => {
            if let Some(k) = key {
                headers.push(("Authorization", format!("Bearer {k}")));
            }
            format!("{}/chat/completions", p.base_url)
        }
        ProviderKind::Anthropic => {
            if let Some(k) = key {
                headers.push(("x-api-key", k.to_string()));
            }
            headers.push(("anthropic-version", "2023-06-01".into()));
            format!("{}/v1/messages", p.base_url)
        }
    };
    match http::post(&agent, &url, &headers, &body) {
        Ok((200, _, _)) => Check::new(
            Verdict::Ok,
            "model",
            format!("a one-token request to {} worked", p.model),
        ),
        Ok((s, body, _)) => status_check(s, &body, p),
        Err(e) => unreachable_check(e, &url),
    }
}

fn status_check(status: u16, body: &str, p: &ProviderConfig) -> Check {
    let detail = error_excerpt(body);
    match status {
        401 | 403 => Check::new(
            Verdict::Fail,
            "model",
            format!(
                "the provider refused the key in {} (HTTP {status}: {detail}): check it",
                p.api_key_env
            ),
        ),
        404 => Check::new(
            Verdict::Fail,
            "model",
            format!(
                "model {} not found (HTTP 404: {detail}): check provider.model and provider.base_url",
                p.model
            ),
        ),
        429 => Check::new(
            Verdict::Warn,
            "model",
            format!("rate limited or out of credit (HTTP 429: {detail}): the key works, try later"),
        ),
        s => Check::new(
            Verdict::Fail,
            "model",
            format!("the provider answered HTTP {s}: {detail}"),
        ),
    }
}

fn unreachable_check(e: HttpError, url: &str) -> Check {
    Check::new(
        Verdict::Fail,
        "model",
        format!(
            "{}: check provider.base_url and the network",
            e.into_provider(url)
        ),
    )
}

/// `error.message` (or `description`, or the start of the body), short and scrubbed.
fn error_excerpt(body: &str) -> String {
    let v = crate::json::parse_value(body).ok();
    let msg = v.as_ref().and_then(|v| {
        crate::json::path(v, &["error", "message"])
            .or_else(|| crate::json::get(v, "description"))
            .or_else(|| crate::json::get(v, "error"))
            .and_then(crate::json::as_str)
            .map(str::to_string)
    });
    let text = msg.unwrap_or_else(|| body.trim().to_string());
    if text.is_empty() {
        "no details".into()
    } else {
        excerpt(&text)
    }
}

fn excerpt(s: &str) -> String {
    let one: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_EXCERPT_CHARS)
        .collect();
    if s.chars().count() > MAX_EXCERPT_CHARS {
        format!("{one}…")
    } else {
        one
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse() {
        let e = Endpoint::parse("https://openrouter.ai/api/v1").unwrap();
        assert_eq!(
            (e.https, e.host.as_str(), e.port),
            (true, "openrouter.ai", 443)
        );
        let e = Endpoint::parse("http://127.0.0.1:11434/v1").unwrap();
        assert_eq!(
            (e.https, e.host.as_str(), e.port),
            (false, "127.0.0.1", 11434)
        );
        let e = Endpoint::parse("http://[::1]:8080/v1").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 8080));
        assert_eq!(e.display(), "[::1]:8080");
        let e = Endpoint::parse("https://[fe80::1]/x").unwrap();
        assert_eq!(e.port, 443);
        assert!(Endpoint::parse("ftp://x").is_none());
        assert!(Endpoint::parse("http://host:notaport/").is_none());
        assert!(Endpoint::parse("http://").is_none());
        assert!(Endpoint::parse("http://[::1/").is_none());
    }

    #[test]
    fn endpoint_parsing_survives_random_urls() {
        let mut rng = crate::testkit::XorShift(0xdead_beef_cafe_f00d);
        let alphabet = b"htps:/[]@?#.:0123456789abc\xc3\xa9";
        for _ in 0..5000 {
            let mut s = b"http://".to_vec();
            for _ in 0..rng.below(40) {
                s.push(alphabet[rng.index(alphabet.len())]);
            }
            let _ = Endpoint::parse(&String::from_utf8_lossy(&s));
        }
    }

    #[test]
    fn error_excerpts_are_short_single_lines() {
        assert_eq!(
            error_excerpt(r#"{"error":{"message":"bad key"}}"#),
            "bad key"
        );
        assert_eq!(
            error_excerpt(r#"{"ok":false,"description":"Unauthorized"}"#),
            "Unauthorized"
        );
        assert_eq!(error_excerpt("plain\ntext"), "plain text");
        assert_eq!(error_excerpt(""), "no details");
        let long = error_excerpt(&"x".repeat(1000));
        assert_eq!(long.chars().count(), MAX_EXCERPT_CHARS + 1);
    }
}
