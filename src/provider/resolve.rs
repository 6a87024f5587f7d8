//! Host name resolution for every HTTP agent: IP literals without a lookup, and a small
//! cache of resolved names.
//!
//! Why it exists: ureq 3.5 resolves the host before it looks in its connection pool, so
//! every request (each `getUpdates`, `sendMessage`, `sendChatAction` and model call) did
//! a `getaddrinfo`, and, because our agents have timeouts, did it on a freshly spawned
//! thread. The footprint soak measured about one thread start per request (1,500 in 6 s)
//! and a DNS round trip per request on a real network. Here an IP literal (a LAN or
//! loopback model server) becomes its address directly, and a name is looked up once per
//! `DNS_CACHE_SECS`, by ureq's own resolver on the calling thread (no thread of its own).
//!
//! # Bounds
//! At most `DNS_CACHE_ENTRIES` names per agent (the oldest is replaced); an entry is used
//! for `DNS_CACHE_SECS`, so a moved server is found again within that time.
//!
//! # Threads
//! The thread that sends the request (a worker, the poller, the sender, or the main thread
//! of a one-shot command), which is a thread made to block. A name missing from the cache
//! is looked up there, with no timeout of ureq's: given one, ureq starts a thread for each
//! lookup (std's default stack, 2 MiB of address space) that outlives a timed-out request
//! until the system resolver gives up. Without it no thread is ever started on demand; a
//! lookup that hangs holds the calling thread until the system resolver gives up (its
//! `timeout` × `attempts` from resolv.conf: 5 s × 2 by default on musl and glibc), and
//! the request's own timeouts count from the connection on.

use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// How long a resolved name is reused.
pub const DNS_CACHE_SECS: u64 = 60;
/// Names remembered per agent.
pub const DNS_CACHE_ENTRIES: usize = 8;

/// ureq's resolver behind an IP-literal shortcut and a bounded time-limited cache.
#[derive(Debug, Default)]
pub struct CachingResolver {
    inner: DefaultResolver,
    cache: Mutex<Vec<(String, Instant, ResolvedSocketAddrs)>>,
}

/// The port of `uri`: explicit, or the scheme's default.
fn port_of(uri: &Uri) -> Option<u16> {
    uri.port_u16().or(match uri.scheme_str() {
        Some("http") => Some(80),
        Some("https") => Some(443),
        _ => None,
    })
}

/// The address of a URI whose host is an IP literal (`127.0.0.1`, `[::1]`).
fn literal(uri: &Uri) -> Option<SocketAddr> {
    let host = uri.host()?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let ip: IpAddr = host.parse().ok()?;
    Some(SocketAddr::new(ip, port_of(uri)?))
}

impl Resolver for CachingResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        if let Some(addr) = literal(uri) {
            let mut out = self.empty();
            out.push(addr);
            return Ok(out);
        }
        let key = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or(""),
            uri.authority().map_or("", |a| a.as_str())
        );
        let ttl = Duration::from_secs(DNS_CACHE_SECS);
        if let Ok(cache) = self.cache.lock()
            && let Some((_, _, addrs)) = cache
                .iter()
                .find(|(k, at, _)| *k == key && at.elapsed() < ttl)
        {
            return Ok(addrs.clone());
        }
        // No timeout: ureq would resolve on a thread of its own (see # Threads).
        let on_this_thread = NextTimeout {
            after: ureq::unversioned::transport::time::Duration::NotHappening,
            ..timeout
        };
        let addrs = self.inner.resolve(uri, config, on_this_thread)?;
        if let Ok(mut cache) = self.cache.lock() {
            cache.retain(|(k, at, _)| *k != key && at.elapsed() < ttl);
            if cache.len() >= DNS_CACHE_ENTRIES {
                cache.remove(0);
            }
            cache.push((key, Instant::now(), addrs.clone()));
        }
        Ok(addrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(s: &str) -> Uri {
        s.parse().unwrap()
    }

    #[test]
    fn ip_literals_need_no_lookup() {
        assert_eq!(
            literal(&uri("http://127.0.0.1:8080/v1")),
            Some("127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(
            literal(&uri("https://[::1]/v1")),
            Some("[::1]:443".parse().unwrap())
        );
        assert_eq!(
            literal(&uri("http://10.0.0.2/x")),
            Some("10.0.0.2:80".parse().unwrap())
        );
        assert_eq!(literal(&uri("https://api.telegram.org/bot")), None);
        assert_eq!(literal(&uri("ftp://127.0.0.1/x")), None);
    }

    #[test]
    fn names_are_resolved_once_and_cached() {
        let r = CachingResolver::default();
        let config = Config::default();
        let u = uri("http://localhost:9/x");
        let first = r.resolve(&u, &config, NextTimeout::default()).unwrap();
        assert!(!first.is_empty());
        assert_eq!(r.cache.lock().unwrap().len(), 1);
        let again = r.resolve(&u, &config, NextTimeout::default()).unwrap();
        assert_eq!(first, again);
        assert_eq!(r.cache.lock().unwrap().len(), 1);
        let lit = r
            .resolve(&uri("http://127.0.0.1:9/"), &config, NextTimeout::default())
            .unwrap();
        assert_eq!(lit.len(), 1);
        assert_eq!(r.cache.lock().unwrap().len(), 1, "literals are not cached");
    }

    /// A lookup runs on the calling thread, never on one ureq starts for it: given a
    /// request whose time is already up, ureq's own path (a thread, then a wait bounded
    /// by that time) fails with a timeout; on the calling thread the lookup completes.
    #[test]
    fn a_lookup_starts_no_thread() {
        use ureq::unversioned::transport::time::Duration as UreqDuration;
        let r = CachingResolver::default();
        let expired = NextTimeout {
            after: UreqDuration::Exact(Duration::ZERO),
            reason: ureq::Timeout::Resolve,
            ..NextTimeout::default()
        };
        let got = r.resolve(&uri("http://localhost:9/x"), &Config::default(), expired);
        assert!(got.is_ok_and(|a| !a.is_empty()));
    }
}
