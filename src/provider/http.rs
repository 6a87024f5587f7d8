//! The HTTP client settings every outgoing request shares (small buffers, timeouts,
//! status codes as values) and a bounded POST/GET helper with typed errors.
//!
//! # Bounds
//! `HTTP_INPUT_BUFFER_BYTES` in and `HTTP_OUTPUT_BUFFER_BYTES` out per connection and
//! layer (ureq's default is 128 KiB each), response headers
//! up to `HTTP_MAX_HEADER_BYTES`, bodies up to the limit the caller passes,
//! `HTTP_MAX_IDLE_CONNECTIONS` pooled connections.
//!
//! # Threads
//! The thread that sends: a worker (model calls, media, uploads), the poller, the sender,
//! or the main thread of a one-shot command (`doctor`, [`learn_time`]). Name lookups may
//! start a thread of ureq's (see `resolve`).
//!
//! # Blocking
//! Every function that sends blocks until the exchange ends or times out;
//! [`post_streaming`] returns after the response headers and leaves the body to the caller.

use super::tls::TlsFailure;
use crate::limits::{
    HTTP_CONNECT_TIMEOUT_SECS, HTTP_INPUT_BUFFER_BYTES, HTTP_MAX_HEADER_BYTES,
    HTTP_MAX_IDLE_CONNECTIONS, HTTP_OUTPUT_BUFFER_BYTES, MAX_PROVIDER_RESPONSE_BYTES,
};
use std::fmt;
use std::time::Duration;

/// An HTTP agent with our bounds and an overall timeout.
pub fn agent(timeout_secs: u64) -> ureq::Agent {
    with_config(config(timeout_secs))
}

/// An HTTP agent with our bounds, no overall timeout and no redirect followed (a 3xx is
/// returned as it is), for a caller that gives each request its own deadline and checks
/// every URL it is sent to itself (MCP over HTTP).
pub fn agent_per_request() -> ureq::Agent {
    // Its URLs and header values come from the configuration or from the server (an
    // endpoint URL, a session id), not bounded like `web_fetch`'s, and ureq writes a line
    // of the request head whole or fails: the output buffer stays as large as the input
    // one. Only a configured MCP server over HTTP has such an agent.
    with_config(
        builder()
            .timeout_global(None)
            .max_redirects(0)
            .output_buffer_size(HTTP_INPUT_BUFFER_BYTES)
            .build(),
    )
}

/// Our bounds and an overall timeout.
fn config(timeout_secs: u64) -> ureq::config::Config {
    builder()
        .timeout_global(Some(Duration::from_secs(timeout_secs.max(1))))
        .build()
}

/// Our bounds: small buffers, bounded headers, a small pool, status codes as values.
fn builder() -> ureq::config::ConfigBuilder<ureq::typestate::AgentScope> {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(HTTP_CONNECT_TIMEOUT_SECS)))
        .input_buffer_size(HTTP_INPUT_BUFFER_BYTES)
        .output_buffer_size(HTTP_OUTPUT_BUFFER_BYTES)
        .max_response_header_size(HTTP_MAX_HEADER_BYTES)
        .max_idle_connections(HTTP_MAX_IDLE_CONNECTIONS)
        // As many as requests can run at once (`WORKER_THREADS`): with fewer, the second
        // of two concurrent model calls loses its connection and the next one pays a new
        // TLS handshake (13 per 200 soak messages with 1; none with 2).
        .max_idle_connections_per_host(HTTP_MAX_IDLE_CONNECTIONS)
        .user_agent(concat!("yoctoclaw/", env!("CARGO_PKG_VERSION")))
}

/// An agent with our connector chain: proxy CONNECT, TCP, then TLS with the build-time
/// clock floor (`provider::tls`), and our resolver (`provider::resolve`: no lookup, and no
/// thread, per request).
pub fn with_config(config: ureq::config::Config) -> ureq::Agent {
    with_resolver(config, super::resolve::CachingResolver::default())
}

/// [`with_config`] with another name resolver (`web_fetch` resolves through the
/// network guard, so it connects only to addresses it checked).
pub fn with_resolver(
    config: ureq::config::Config,
    resolver: impl ureq::unversioned::resolver::Resolver,
) -> ureq::Agent {
    use ureq::unversioned::transport::{ConnectProxyConnector, Connector, TcpConnector};
    let connector =
        ().chain(ConnectProxyConnector::default())
            .chain(TcpConnector::default())
            .chain(super::tls::FloorClockTls);
    ureq::Agent::with_parts(config, connector, resolver)
}

/// A transport failure (no HTTP status to look at).
#[derive(Debug, Clone, PartialEq)]
pub enum HttpError {
    /// DNS, connect, TLS, or the connection broke.
    Unreachable(String),
    Timeout,
    /// The body was larger than allowed.
    TooLarge,
    /// The body is not UTF-8 or the exchange was malformed.
    Malformed(String),
    /// TLS failed: the certificate, the protocol, or the connection (`provider::tls`).
    Tls(TlsFailure),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Unreachable(d) => write!(f, "unreachable: {d}"),
            HttpError::Timeout => f.write_str("timed out"),
            HttpError::TooLarge => f.write_str("response too large"),
            HttpError::Malformed(d) => write!(f, "malformed response: {d}"),
            HttpError::Tls(t) => t.fmt(f),
        }
    }
}

impl std::error::Error for HttpError {}

impl HttpError {
    /// Map to a provider error that keeps the host of `url` for logs (never the path: it
    /// may hold a token); its Display, the user's sentence, names no host.
    pub fn into_provider(self, url: &str) -> super::ProviderError {
        let host = host_of(url);
        match self {
            HttpError::Unreachable(detail) => super::ProviderError::Unreachable { host, detail },
            HttpError::Timeout => super::ProviderError::Timeout { host },
            HttpError::TooLarge => super::ProviderError::TooLarge,
            HttpError::Malformed(detail) => super::ProviderError::BadResponse { detail },
            HttpError::Tls(failure) => super::ProviderError::Tls(failure),
        }
    }
}

/// `host:port` of a URL, for messages.
pub fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    authority
        .rsplit_once('@')
        .map(|(_, h)| h)
        .unwrap_or(authority)
        .to_string()
}

/// Map a ureq error to ours, with a short secret-free detail.
pub fn map_error(e: ureq::Error) -> HttpError {
    use ureq::Error as E;
    match e {
        E::Timeout(_) => HttpError::Timeout,
        E::HostNotFound => HttpError::Unreachable("host not found".into()),
        E::ConnectionFailed => HttpError::Unreachable("connection failed".into()),
        E::BodyExceedsLimit(_) => HttpError::TooLarge,
        E::Io(io) if io.get_ref().is_some_and(|e| e.is::<rustls::Error>()) => {
            let detail = io
                .get_ref()
                .and_then(|e| e.downcast_ref::<rustls::Error>())
                .map(|e| e.to_string())
                .unwrap_or_default();
            HttpError::Unreachable(format!("TLS: {detail}"))
        }
        // Sorted by `provider::tls` where it happened.
        E::Io(io) => match io.get_ref().and_then(|e| e.downcast_ref::<TlsFailure>()) {
            Some(t) => HttpError::Tls(*t),
            None => io_error(io),
        },
        E::Tls(t) => HttpError::Unreachable(format!("TLS: {t}")),
        E::Rustls(r) => HttpError::Unreachable(format!("TLS: {r}")),
        E::BadUri(_) => HttpError::Unreachable("bad URL".into()),
        other => {
            HttpError::Malformed(crate::security::scrub::scrub(&other.to_string()).into_owned())
        }
    }
}

fn io_error(io: std::io::Error) -> HttpError {
    match io.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => HttpError::Timeout,
        std::io::ErrorKind::InvalidData => HttpError::Malformed("body is not UTF-8".into()),
        kind => HttpError::Unreachable(io_kind_text(kind, &io)),
    }
}

fn io_kind_text(kind: std::io::ErrorKind, e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    match kind {
        K::ConnectionRefused => "connection refused".into(),
        K::ConnectionReset => "connection reset".into(),
        K::ConnectionAborted => "connection aborted".into(),
        K::UnexpectedEof => "connection closed early".into(),
        K::BrokenPipe => "connection broken".into(),
        _ => crate::security::scrub::scrub(&e.to_string()).into_owned(),
    }
}

/// Status, body text, and `Retry-After` seconds when present.
pub type HttpReply = (u16, String, Option<u64>);

/// POST a body; read the answer up to `MAX_PROVIDER_RESPONSE_BYTES`.
pub fn post(
    agent: &ureq::Agent,
    url: &str,
    headers: &[(&str, String)],
    body: &str,
) -> Result<HttpReply, HttpError> {
    let mut req = agent.post(url);
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let resp = req.send(body).map_err(map_error)?;
    note_date(&resp, url);
    read_reply(resp, MAX_PROVIDER_RESPONSE_BYTES)
}

/// POST a body (the caller sets its `Content-Length` header) and return the response with
/// its body unread, for streaming: the overall
/// timeout is `total` instead of the agent's, and `per_read` guards every read (a stalled
/// stream times out, a long healthy one does not).
pub fn post_streaming(
    agent: &ureq::Agent,
    url: &str,
    headers: &[(&str, String)],
    body: &mut dyn std::io::Read,
    per_read: Duration,
    total: Duration,
) -> Result<ureq::http::Response<ureq::Body>, HttpError> {
    let mut req = agent.post(url);
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    req.config()
        .timeout_global(Some(total))
        .timeout_recv_response(Some(per_read))
        .timeout_per_read(Some(per_read))
        .build()
        .send(ureq::SendBody::from_reader(body))
        .map_err(map_error)
        .inspect(|resp| note_date(resp, url))
}

/// Map an error from a body reader (`std::io::Read` over a ureq body).
pub fn map_io_error(e: std::io::Error) -> HttpError {
    if e.get_ref().is_some_and(|inner| inner.is::<ureq::Error>()) {
        return match e.into_inner().map(|inner| inner.downcast::<ureq::Error>()) {
            Some(Ok(u)) => map_error(*u),
            _ => HttpError::Unreachable("connection broken".into()),
        };
    }
    map_error(ureq::Error::Io(e))
}

/// Hand the `Date` of an answer to the clock when it came over verified TLS (`https://`:
/// our TLS step checks every certificate): a board without an RTC takes its time from it
/// (`time::clock::observe_https_date`). Costs nothing once the system clock is set.
pub fn note_date<B>(resp: &ureq::http::Response<B>, url: &str) {
    if url.starts_with("https://")
        && let Some(date) = resp.headers().get("date").and_then(|v| v.to_str().ok())
    {
        crate::time::clock::observe_https_date(date);
    }
}

/// Seconds a [`learn_time`] request may take.
pub const LEARN_TIME_TIMEOUT_SECS: u64 = 10;

/// On a board whose clock is before the build time and that has had no HTTPS answer yet:
/// one `HEAD` to `url` (`https://` only) to learn the time from its `Date`
/// (`time::clock`). For one-shot commands (`heartbeat` from a crontab) that must judge
/// the clock before their first real request. Blocks up to `LEARN_TIME_TIMEOUT_SECS`.
pub fn learn_time(url: &str) {
    use crate::time::clock::{Source, source};
    if source() != Source::Unset || !url.starts_with("https://") {
        return;
    }
    if let Ok(resp) = agent(LEARN_TIME_TIMEOUT_SECS).head(url).call() {
        note_date(&resp, url);
    }
}

/// The `Retry-After` header in seconds, when it is a plain number.
pub fn retry_after<B>(resp: &ureq::http::Response<B>) -> Option<u64> {
    resp.headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}

/// GET with a body limit and an optional per-request overall timeout.
pub fn get(
    agent: &ureq::Agent,
    url: &str,
    limit: u64,
    timeout: Option<Duration>,
) -> Result<HttpReply, HttpError> {
    let req = agent.get(url);
    let resp = match timeout {
        Some(t) => req.config().timeout_global(Some(t)).build().call(),
        None => req.call(),
    }
    .map_err(map_error)?;
    note_date(&resp, url);
    read_reply(resp, limit)
}

/// Read status, `Retry-After` and a bounded body.
pub fn read_reply(
    mut resp: ureq::http::Response<ureq::Body>,
    limit: u64,
) -> Result<HttpReply, HttpError> {
    let status = resp.status().as_u16();
    let retry_after = retry_after(&resp);
    let text = resp
        .body_mut()
        .with_config()
        .limit(limit)
        .read_to_string()
        .map_err(map_error)?;
    Ok((status, text, retry_after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_of_never_includes_the_path() {
        assert_eq!(
            host_of("https://api.telegram.org/bot123:SECRET/getUpdates"),
            "api.telegram.org"
        );
        assert_eq!(host_of("http://127.0.0.1:8080/v1"), "127.0.0.1:8080");
        assert_eq!(host_of("http://user:pw@h:1/x"), "h:1");
    }
}
