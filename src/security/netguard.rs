//! URL and address guard for `web_fetch`: strict http(s) URL parsing and SSRF checks.
//!
//! Why: the model chooses what `web_fetch` fetches. Without a guard it can be talked into
//! reading the board's own services (`http://127.0.0.1:…`), the router's admin page, a cloud
//! metadata endpoint (`169.254.169.254`) or anything else on the LAN. [`parse_http_url`] accepts
//! only plain `http`/`https` URLs in one unambiguous spelling, and [`resolve_checked`] refuses a
//! host when **any** of its addresses is loopback, private, link-local, documentation or
//! otherwise not globally reachable by the IANA special-purpose registries (unless the
//! configuration allows private addresses). The caller then connects to exactly the
//! addresses returned, so a second DNS answer cannot swap in a private one.
//!
//! Refused spellings, because resolvers and browsers read them differently: userinfo
//! (`http://user@host/`), backslashes in the authority, numeric hosts other than a plain dotted
//! quad (`http://2130706433/`, `http://0x7f.1/`, `http://0177.0.0.1/`, `http://127.1/`), IPv6
//! zone ids, whitespace and control characters anywhere, and non-ASCII host names.
//!
//! # Bounds
//! - URLs longer than [`MAX_URL_BYTES`] are refused.
//! - Host names longer than [`MAX_HOST_BYTES`] (or a label over 63 bytes) are refused.
//! - At most [`MAX_RESOLVED_ADDRS`] resolved addresses are kept (and all of those are checked).
//!
//! # Threads
//! Any thread for parsing and checks; [`resolve_checked`] on a worker thread (inside
//! `web_fetch`'s ureq client).
//!
//! # Blocking
//! [`resolve_checked`] calls the system resolver and blocks until it answers; call it from a
//! blocking thread, never from the async executor.

use std::error::Error;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

/// URLs longer than this are refused.
pub const MAX_URL_BYTES: usize = 4096;

/// Host names longer than this are refused (the DNS limit).
pub const MAX_HOST_BYTES: usize = 253;

/// Resolved addresses beyond this many are dropped.
pub const MAX_RESOLVED_ADDRS: usize = 16;

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    /// The port used when the URL names none.
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// A parsed `http`/`https` URL. `host` is lowercase; an IPv6 literal is stored without its
/// brackets (`::1`). `path_and_query` always starts with `/`; the fragment is dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
    pub path_and_query: String,
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme.as_str())?;
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            f.write_str(&self.host)?;
        }
        if self.port != self.scheme.default_port() {
            write!(f, ":{}", self.port)?;
        }
        f.write_str(&self.path_and_query)
    }
}

/// Why a URL was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlError {
    /// Longer than [`MAX_URL_BYTES`].
    TooLong,
    /// Whitespace or a control character somewhere in the URL.
    BadChar,
    /// Not `http://` or `https://`.
    Scheme,
    /// `user@host` or `user:pass@host`.
    Userinfo,
    /// Nothing between `//` and the path.
    EmptyHost,
    /// A host name with characters, labels or a length that DNS does not allow.
    BadHost,
    /// A numeric host that is not a plain dotted quad (`2130706433`, `0x7f.1`, `127.1`).
    NumericHost,
    /// A port that is empty, not a number, zero or above 65535.
    BadPort,
    /// The resolver failed.
    Resolve(std::io::ErrorKind),
    /// The resolver returned no address.
    NoAddress,
    /// The host resolves to an address that is not public.
    Forbidden(IpAddr),
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlError::TooLong => write!(f, "url longer than {MAX_URL_BYTES} bytes"),
            UrlError::BadChar => f.write_str("url contains whitespace or a control character"),
            UrlError::Scheme => f.write_str("only http:// and https:// urls can be fetched"),
            UrlError::Userinfo => f.write_str("urls with a user name (user@host) are not allowed"),
            UrlError::EmptyHost => f.write_str("url has no host"),
            UrlError::BadHost => f.write_str("url host is not a valid host name"),
            UrlError::NumericHost => {
                f.write_str("numeric hosts must be written as a dotted quad (a.b.c.d)")
            }
            UrlError::BadPort => f.write_str("url port is not a number from 1 to 65535"),
            UrlError::Resolve(kind) => write!(f, "cannot resolve host ({kind})"),
            UrlError::NoAddress => f.write_str("host resolves to no address"),
            UrlError::Forbidden(ip) => write!(
                f,
                "host resolves to {ip}, a local, private or reserved address, which is not allowed"
            ),
        }
    }
}

impl Error for UrlError {}

/// True for every address `web_fetch` must not reach by default: every block of the IANA
/// IPv4 and IPv6 special-purpose address registries that is not globally reachable
/// (loopback, unspecified, private, shared (CGNAT), link-local, unique-local,
/// documentation, benchmarking, reserved, discard-only, protocol assignments…), multicast,
/// broadcast and deprecated site-local, and IPv6 forms that embed a forbidden IPv4
/// address (mapped, compatible, NAT64, 6to4). See [`forbidden_v4`] and [`forbidden_v6`].
pub fn is_forbidden_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

/// The IPv4 special-purpose registry (iana-ipv4-special-registry), minus its globally
/// reachable entries (192.0.0.9 and 192.0.0.10, 192.31.196/24, 192.52.193/24,
/// 192.175.48/24), plus multicast.
fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, d] = ip.octets();
    a == 0                                   // 0.0.0.0/8 "this network"
        || a == 10                           // 10/8 private
        || a == 127                          // loopback
        || (a == 100 && (b & 0xC0) == 64)    // 100.64/10 shared address space (CGNAT)
        || (a == 169 && b == 254)            // link-local
        || (a == 172 && (b & 0xF0) == 16)    // 172.16/12 private
        || (a == 192 && b == 168)            // 192.168/16 private
        // 192.0.0/24 IETF protocol assignments, but for the two anycast /32s (PCP, TURN).
        || (a == 192 && b == 0 && c == 0 && d != 9 && d != 10)
        || (a == 192 && b == 0 && c == 2)    // 192.0.2/24 documentation (TEST-NET-1)
        || (a == 192 && b == 88 && c == 99)  // 192.88.99/24 6to4 relay anycast (deprecated)
        || (a == 198 && (b & 0xFE) == 18)    // 198.18/15 benchmarking
        || (a == 198 && b == 51 && c == 100) // 198.51.100/24 documentation (TEST-NET-2)
        || (a == 203 && b == 0 && c == 113)  // 203.0.113/24 documentation (TEST-NET-3)
        || a >= 224 // multicast 224/4, reserved 240/4, broadcast 255.255.255.255
}

/// The IPv6 special-purpose registry (iana-ipv6-special-registry), minus its globally
/// reachable entries, plus multicast and site-local; addresses that carry an IPv4 address
/// get that address's verdict.
fn forbidden_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        forbidden_v4(Ipv4Addr::new(a, b, c, d))
    };
    match s {
        // ::, ::1 and ::a.b.c.d (IPv4-compatible, deprecated): all embed a v4 address.
        [0, 0, 0, 0, 0, 0, hi, lo] => (hi == 0 && lo <= 1) || embedded(hi, lo),
        // ::ffff:a.b.c.d (mapped) and ::ffff:0:a.b.c.d (SIIT).
        [0, 0, 0, 0, 0, 0xffff, hi, lo] | [0, 0, 0, 0, 0xffff, 0, hi, lo] => embedded(hi, lo),
        // 64:ff9b::/96 NAT64 well-known prefix: reachable, so the v4 address decides.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => embedded(hi, lo),
        // 64:ff9b:1::/48 local-use NAT64.
        [0x64, 0xff9b, 1, ..] => true,
        // 100::/64 discard-only, 100:0:0:1::/64 dummy prefix.
        [0x100, 0, 0, 0 | 1, ..] => true,
        // 2001::/23 IETF protocol assignments (Teredo 2001::/32 and benchmarking
        // 2001:2::/48 among them), but for its globally reachable entries.
        [0x2001, b, ..] if b < 0x200 => !global_in_2001_23(&s),
        // 2001:db8::/32 documentation.
        [0x2001, 0x0db8, ..] => true,
        // 2002:AABB:CCDD::/48 6to4 embeds AA.BB.CC.DD.
        [0x2002, hi, lo, ..] => embedded(hi, lo),
        // 3fff::/20 documentation.
        [0x3fff, b, ..] if b < 0x1000 => true,
        // 5f00::/16 segment routing (SRv6) SIDs.
        [0x5f00, ..] => true,
        [first, ..] => {
            (first & 0xfe00) == 0xfc00         // fc00::/7 unique local
                || (first & 0xffc0) == 0xfe80  // fe80::/10 link-local
                || (first & 0xffc0) == 0xfec0  // fec0::/10 site-local (deprecated)
                || (first & 0xff00) == 0xff00 // ff00::/8 multicast
        }
    }
}

/// The globally reachable entries inside 2001::/23: 2001:1::1, ::2 and ::3 (PCP, TURN
/// and DNS-SD SRP anycast), 2001:3::/32 (AMT), 2001:4:112::/48 (AS112-v6),
/// 2001:20::/28 (ORCHIDv2) and 2001:30::/28 (DRIP).
fn global_in_2001_23(s: &[u16; 8]) -> bool {
    match *s {
        [0x2001, 1, 0, 0, 0, 0, 0, 1..=3] => true,
        [0x2001, 3, ..] => true,
        [0x2001, 4, 0x112, ..] => true,
        [0x2001, b, ..] => (0x20..=0x3f).contains(&b),
        _ => false,
    }
}

/// Parses an `http`/`https` URL strictly (see the module documentation for what is refused).
pub fn parse_http_url(s: &str) -> Result<HttpUrl, UrlError> {
    if s.len() > MAX_URL_BYTES {
        return Err(UrlError::TooLong);
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(UrlError::BadChar);
    }
    let (scheme_str, rest) = s.split_once("://").ok_or(UrlError::Scheme)?;
    let scheme = if scheme_str.eq_ignore_ascii_case("http") {
        Scheme::Http
    } else if scheme_str.eq_ignore_ascii_case("https") {
        Scheme::Https
    } else {
        return Err(UrlError::Scheme);
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    if authority.contains('@') {
        return Err(UrlError::Userinfo);
    }
    if authority.contains('\\') || authority.contains('%') {
        return Err(UrlError::BadHost);
    }
    let (host, port_str) = split_host_port(authority)?;
    let host = validate_host(host)?;
    let port = match port_str {
        None => scheme.default_port(),
        Some(p) => parse_port(p)?,
    };
    let without_fragment = tail.split('#').next().unwrap_or("");
    let mut path_and_query = String::with_capacity(without_fragment.len() + 1);
    if !without_fragment.starts_with('/') {
        path_and_query.push('/');
    }
    for c in without_fragment.chars() {
        if c.is_ascii() && !matches!(c, '"' | '<' | '>' | '`' | '{' | '}' | '|' | '^' | '\\') {
            path_and_query.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                path_and_query.push_str(&format!("%{b:02X}"));
            }
        }
    }
    Ok(HttpUrl {
        scheme,
        host,
        port,
        path_and_query,
    })
}

/// Splits `host[:port]` or `[v6][:port]`.
fn split_host_port(authority: &str) -> Result<(&str, Option<&str>), UrlError> {
    if authority.is_empty() {
        return Err(UrlError::EmptyHost);
    }
    if let Some(after) = authority.strip_prefix('[') {
        let (inside, after) = after.split_once(']').ok_or(UrlError::BadHost)?;
        return match after {
            "" => Ok((inside, None)),
            _ => match after.strip_prefix(':') {
                Some(p) => Ok((inside, Some(p))),
                None => Err(UrlError::BadHost),
            },
        };
    }
    match authority.split_once(':') {
        Some((h, p)) => Ok((h, Some(p))),
        None => Ok((authority, None)),
    }
}

fn parse_port(p: &str) -> Result<u16, UrlError> {
    if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(UrlError::BadPort);
    }
    match p.parse::<u16>() {
        Ok(0) | Err(_) => Err(UrlError::BadPort),
        Ok(n) => Ok(n),
    }
}

/// Checks a host (without brackets) and returns it lowercased.
fn validate_host(host: &str) -> Result<String, UrlError> {
    if host.is_empty() {
        return Err(UrlError::EmptyHost);
    }
    if host.len() > MAX_HOST_BYTES {
        return Err(UrlError::BadHost);
    }
    if host.contains(':') {
        // Only an IPv6 literal may hold a colon (the brackets were removed by the caller).
        return match host.parse::<Ipv6Addr>() {
            Ok(v6) => Ok(v6.to_string()),
            Err(_) => Err(UrlError::BadHost),
        };
    }
    let lower = host.to_ascii_lowercase();
    if !lower
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'_'))
    {
        return Err(UrlError::BadHost);
    }
    let trimmed = lower.strip_suffix('.').unwrap_or(&lower);
    let labels: Vec<&str> = trimmed.split('.').collect();
    if labels
        .iter()
        .any(|l| l.is_empty() || l.len() > 63 || l.starts_with('-') || l.ends_with('-'))
    {
        return Err(UrlError::BadHost);
    }
    // A host whose last label is a number is an IPv4 address to browsers and to some
    // resolvers (`127.1`, `2130706433`, `0x7f.1`): only the plain dotted quad is accepted.
    if labels.last().is_some_and(|l| is_numeric_label(l)) {
        return match strict_dotted_quad(trimmed) {
            Some(_) if trimmed.len() == lower.len() => Ok(lower),
            _ => Err(UrlError::NumericHost),
        };
    }
    Ok(lower)
}

/// Decimal digits, or `0x` followed by hex digits (empty allowed, as WHATWG does).
fn is_numeric_label(l: &str) -> bool {
    if let Some(hex) = l.strip_prefix("0x") {
        return hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit())
}

/// `a.b.c.d`, each 0–255 in decimal without leading zeros.
fn strict_dotted_quad(h: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut n = 0;
    for part in h.split('.') {
        let slot = octets.get_mut(n)?;
        if part.is_empty()
            || part.len() > 3
            || !part.bytes().all(|b| b.is_ascii_digit())
            || (part.len() > 1 && part.starts_with('0'))
        {
            return None;
        }
        *slot = part.parse().ok()?;
        n += 1;
    }
    (n == 4).then(|| Ipv4Addr::from(octets))
}

/// Resolves the URL's host and refuses it when **any** address is forbidden (see
/// [`is_forbidden_ip`]), unless `allow_private`. IP literals are checked without a lookup.
/// Connect to the returned addresses only, so the check cannot be raced by a second lookup.
///
/// # Blocking
/// Calls the system resolver (`getaddrinfo`) through `std::net::ToSocketAddrs` and blocks until
/// it answers or gives up; run it on a blocking thread.
pub fn resolve_checked(url: &HttpUrl, allow_private: bool) -> Result<Vec<SocketAddr>, UrlError> {
    // The fields are public: validate again rather than trust a hand-built value.
    let host = validate_host(&url.host)?;
    if url.port == 0 {
        return Err(UrlError::BadPort);
    }
    let addrs: Vec<SocketAddr> = if let Ok(ip) = host.parse::<IpAddr>() {
        vec![SocketAddr::new(ip, url.port)]
    } else {
        (host.as_str(), url.port)
            .to_socket_addrs()
            .map_err(|e| UrlError::Resolve(e.kind()))?
            .take(MAX_RESOLVED_ADDRS)
            .collect()
    };
    if addrs.is_empty() {
        return Err(UrlError::NoAddress);
    }
    if !allow_private && let Some(bad) = addrs.iter().find(|a| is_forbidden_ip(a.ip())) {
        return Err(UrlError::Forbidden(bad.ip()));
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn forbidden_ranges() {
        for s in [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "10.255.255.255",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "127.255.0.9",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "192.0.0.8",
            "198.18.0.1",
            "198.19.255.255",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:192.168.0.1",
            "::ffff:169.254.169.254",
            "::ffff:0:127.0.0.1",
            "::127.0.0.1",
            "::10.0.0.1",
            "64:ff9b::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:1::1",
            "2002:c0a8:101::1",
            "2001:0:4136:e378:8000:63bf:80ff:fffe", // Teredo, client 127.0.0.1
            "2001:db8::1",
            "100::1",
            // The rest of the special-purpose registries (issue 16).
            "192.0.0.1",
            "192.0.0.170",
            "192.0.0.171",
            "192.0.0.255",
            "192.0.2.1",
            "192.0.2.255",
            "192.88.99.1",
            "198.51.100.7",
            "203.0.113.9",
            "::ffff:192.0.2.1",
            "::ffff:203.0.113.1",
            "64:ff9b::c000:201",                    // NAT64 of 192.0.2.1
            "64:ff9b::cb00:7101",                   // NAT64 of 203.0.113.1
            "2002:c000:201::1",                     // 6to4 of 192.0.2.1
            "2002:c633:6407::1",                    // 6to4 of 198.51.100.7
            "100:0:0:1::1",                         // dummy prefix
            "2001::1",                              // Teredo
            "2001:0:4136:e378:8000:63bf:3fff:fdd2", // Teredo, public client: still refused
            "2001:2::1",                            // benchmarking
            "2001:10::1",                           // ORCHID (deprecated)
            "2001:1::4",
            "2001:1ff:ffff::1",
            "2001:db8:ffff::1",
            "3fff::1",
            "3fff:fff:ffff::1",
            "5f00::1",
        ] {
            assert!(is_forbidden_ip(ip(s)), "{s} should be forbidden");
        }
    }

    #[test]
    fn public_addresses() {
        for s in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "169.253.0.1",
            "192.169.0.1",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "fe00::1",
            // Globally reachable entries of the registries.
            "192.0.0.9",
            "192.0.0.10",
            "192.31.196.1",
            "192.52.193.1",
            "192.175.48.1",
            "192.0.3.1",
            "198.51.101.1",
            "203.0.114.1",
            "2001:1::1",
            "2001:1::2",
            "2001:1::3",
            "2001:3::1",
            "2001:4:112::1",
            "2001:20::1",
            "2001:3f::1",
            "2001:200::1",
            "2620:4f:8000::1",
            "3ffe::1",
            "3fff:1000::1",
            "4000::1",
            "5f01::1",
        ] {
            assert!(!is_forbidden_ip(ip(s)), "{s} should be allowed");
        }
    }

    #[test]
    fn parses_good_urls() {
        let cases: &[(&str, Scheme, &str, u16, &str)] = &[
            ("http://example.com", Scheme::Http, "example.com", 80, "/"),
            (
                "https://Example.COM/",
                Scheme::Https,
                "example.com",
                443,
                "/",
            ),
            (
                "HTTPS://a.b.c:8443/x/y?q=1#frag",
                Scheme::Https,
                "a.b.c",
                8443,
                "/x/y?q=1",
            ),
            (
                "http://example.com?q=1",
                Scheme::Http,
                "example.com",
                80,
                "/?q=1",
            ),
            (
                "http://example.com#top",
                Scheme::Http,
                "example.com",
                80,
                "/",
            ),
            ("http://[::1]/", Scheme::Http, "::1", 80, "/"),
            (
                "http://[2001:DB8::1]:8080/p",
                Scheme::Http,
                "2001:db8::1",
                8080,
                "/p",
            ),
            (
                "http://127.0.0.1:3000/v1",
                Scheme::Http,
                "127.0.0.1",
                3000,
                "/v1",
            ),
            (
                "http://example.com./",
                Scheme::Http,
                "example.com.",
                80,
                "/",
            ),
            ("http://my_host.lan/", Scheme::Http, "my_host.lan", 80, "/"),
            (
                "http://x.org/caf\u{e9}",
                Scheme::Http,
                "x.org",
                80,
                "/caf%C3%A9",
            ),
            ("http://x.org/a|b", Scheme::Http, "x.org", 80, "/a%7Cb"),
            ("http://8.8.8.8/", Scheme::Http, "8.8.8.8", 80, "/"),
        ];
        for (input, scheme, host, port, path) in cases {
            let u = parse_http_url(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(u.scheme, *scheme, "{input}");
            assert_eq!(u.host, *host, "{input}");
            assert_eq!(u.port, *port, "{input}");
            assert_eq!(u.path_and_query, *path, "{input}");
        }
        assert_eq!(
            parse_http_url("http://[::1]:8080/x").unwrap().to_string(),
            "http://[::1]:8080/x"
        );
        assert_eq!(
            parse_http_url("https://a.org:443").unwrap().to_string(),
            "https://a.org/"
        );
    }

    #[test]
    fn rejects_bad_urls() {
        let cases: &[(&str, UrlError)] = &[
            ("ftp://example.com/", UrlError::Scheme),
            ("file:///etc/passwd", UrlError::Scheme),
            ("javascript:alert(1)", UrlError::Scheme),
            ("example.com/path", UrlError::Scheme),
            ("http:/example.com", UrlError::Scheme),
            ("http://user@example.com/", UrlError::Userinfo),
            ("http://user:pw@example.com/", UrlError::Userinfo),
            ("http://example.com@127.0.0.1/", UrlError::Userinfo),
            ("http://evil.com\\@127.0.0.1/", UrlError::Userinfo),
            ("http://evil.com\\x/", UrlError::BadHost),
            ("http:///path", UrlError::EmptyHost),
            ("http://", UrlError::EmptyHost),
            ("http://:80/", UrlError::EmptyHost),
            ("http://example.com:/", UrlError::BadPort),
            ("http://example.com:0/", UrlError::BadPort),
            ("http://example.com:65536/", UrlError::BadPort),
            ("http://example.com:80a/", UrlError::BadPort),
            ("http://example.com:+80/", UrlError::BadPort),
            ("http://example.com:1:2/", UrlError::BadPort),
            ("http://exa mple.com/", UrlError::BadChar),
            (" http://example.com/", UrlError::BadChar),
            ("http://example.com/\n", UrlError::BadChar),
            ("http://example.com/\u{7f}", UrlError::BadChar),
            ("http://ex\tample.com/", UrlError::BadChar),
            ("http://2130706433/", UrlError::NumericHost),
            ("http://0x7f.1/", UrlError::NumericHost),
            ("http://0x7f000001/", UrlError::NumericHost),
            ("http://0177.0.0.1/", UrlError::NumericHost),
            ("http://127.1/", UrlError::NumericHost),
            ("http://127.0.1/", UrlError::NumericHost),
            ("http://1.2.3.4.5/", UrlError::NumericHost),
            ("http://256.1.1.1/", UrlError::NumericHost),
            ("http://example.0x1/", UrlError::NumericHost),
            ("http://1.2.3.4./", UrlError::NumericHost),
            ("http://a..b/", UrlError::BadHost),
            ("http://-a.com/", UrlError::BadHost),
            ("http://b\u{fc}cher.de/", UrlError::BadHost),
            ("http://ex%61mple.com/", UrlError::BadHost),
            ("http://[::1/", UrlError::BadHost),
            ("http://[::1]x/", UrlError::BadHost),
            ("http://[fe80::1%25eth0]/", UrlError::BadHost),
            ("http://[zz::1]/", UrlError::BadHost),
            ("http://::1/", UrlError::EmptyHost),
            ("http://fe80::1/", UrlError::BadPort),
        ];
        for (input, want) in cases {
            assert_eq!(parse_http_url(input).as_ref(), Err(want), "{input}");
        }
        let long = format!("http://example.com/{}", "a".repeat(MAX_URL_BYTES));
        assert_eq!(parse_http_url(&long), Err(UrlError::TooLong));
        let long_host = format!("http://{}.com/", "a.".repeat(130));
        assert_eq!(parse_http_url(&long_host), Err(UrlError::BadHost));
    }

    #[test]
    fn resolve_refuses_local_literals_without_dns() {
        for u in [
            "http://127.0.0.1/",
            "http://[::1]:8080/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::ffff:127.0.0.1]/",
            "http://10.0.0.5/",
            "http://0.0.0.0/",
        ] {
            let url = parse_http_url(u).unwrap();
            assert!(
                matches!(resolve_checked(&url, false), Err(UrlError::Forbidden(_))),
                "{u}"
            );
            let ok = resolve_checked(&url, true).unwrap();
            assert_eq!(ok.len(), 1);
            assert_eq!(ok[0].port(), url.port);
        }
        let public = parse_http_url("https://1.1.1.1/").unwrap();
        assert_eq!(
            resolve_checked(&public, false).unwrap(),
            vec!["1.1.1.1:443".parse::<SocketAddr>().unwrap()]
        );
    }

    #[test]
    fn resolve_localhost_is_refused() {
        // Resolved from /etc/hosts (no network). The refusal must be the guard's, naming a
        // loopback address: a resolver failure would be an error too, and prove nothing.
        let url = parse_http_url("http://localhost:8080/").unwrap();
        let found = resolve_checked(&url, true).expect("localhost resolves (/etc/hosts)");
        assert!(found.iter().all(|a| a.ip().is_loopback()), "{found:?}");
        match resolve_checked(&url, false) {
            Err(UrlError::Forbidden(ip)) => assert!(ip.is_loopback(), "{ip}"),
            other => panic!("not refused by the guard: {other:?}"),
        }
    }

    #[test]
    fn resolve_revalidates_hand_built_urls() {
        let url = HttpUrl {
            scheme: Scheme::Http,
            host: "2130706433".to_string(),
            port: 80,
            path_and_query: "/".to_string(),
        };
        assert_eq!(resolve_checked(&url, true), Err(UrlError::NumericHost));
        let url = HttpUrl {
            host: "a b".to_string(),
            ..url
        };
        assert_eq!(resolve_checked(&url, true), Err(UrlError::BadHost));
    }

    #[test]
    fn random_input_never_panics() {
        let mut rng = crate::testkit::XorShift(0xDEAD_BEEF_CAFE_F00Du64);
        let mut next = move || rng.next();
        let pieces = [
            "http", "https", "://", ":", "/", "[", "]", "@", "?", "#", ".", "0x", "7f", "1", "255",
            "::", "a", "-", "%", "\\", "é", "65535", "99999", "ffff", " ",
        ];
        for _ in 0..5000 {
            let n = (next() % 16) as usize;
            let mut s = String::new();
            for _ in 0..n {
                s.push_str(pieces[(next() % pieces.len() as u64) as usize]);
            }
            if let Ok(u) = parse_http_url(&s) {
                assert!(u.path_and_query.starts_with('/'));
                assert!(!u.host.is_empty());
                // Round trip through Display parses to the same value.
                assert_eq!(parse_http_url(&u.to_string()).as_ref(), Ok(&u), "{s}");
            }
            let v6 = Ipv6Addr::from(((next() as u128) << 64) | next() as u128);
            let _ = is_forbidden_ip(IpAddr::V6(v6));
            // An IPv4 address and its IPv4-mapped IPv6 form get the same verdict (a
            // mapped address must not smuggle a private one past the guard).
            let v4 = Ipv4Addr::from(next() as u32);
            assert_eq!(
                is_forbidden_ip(IpAddr::V4(v4)),
                is_forbidden_ip(IpAddr::V6(v4.to_ipv6_mapped())),
                "{v4}"
            );
        }
        for _ in 0..500 {
            let len = (next() % 200) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if let Ok(u) = parse_http_url(&String::from_utf8_lossy(&bytes)) {
                assert_eq!(parse_http_url(&u.to_string()).as_ref(), Ok(&u));
            }
        }
    }
}
