//! Doctor's checks of the HTTP server (`http.enabled` only): its token, whether its
//! address can be listened on (or a running gateway answers there), and a warning when
//! it listens beyond this machine.
//!
//! # Bounds
//! The probe of a running gateway connects, writes and reads within `PROBE_TIMEOUT_SECS`
//! each, and reads at most `PROBE_MAX_BYTES`.
//!
//! # Threads
//! Main thread (doctor).
//!
//! # Blocking
//! A bind, and at most one connection to this machine with its timeouts.

use super::{Check, Verdict};
use crate::config::{Config, Env};
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// Timeout of each step of the probe of a running gateway.
pub const PROBE_TIMEOUT_SECS: u64 = 3;
/// Bytes of the probe's answer read.
pub const PROBE_MAX_BYTES: u64 = 4096;
/// A token shorter than this is a warning.
pub const MIN_TOKEN_CHARS: usize = 16;

const NAME: &str = "http";

/// The HTTP server's checks, handed to `emit` (nothing when it is off).
pub fn checks(cfg: &Config, env: &Env, emit: &mut dyn FnMut(Check)) {
    let h = &cfg.http;
    if !h.enabled {
        return;
    }
    emit(match env.get(&h.token_env) {
        None => Check::new(
            Verdict::Warn,
            NAME,
            format!(
                "http.enabled is true but {} is not set: every route but /health answers 503; put a long random token in secrets.env (openssl rand -hex 24)",
                h.token_env
            ),
        ),
        Some(t) if t.trim().chars().count() < MIN_TOKEN_CHARS => Check::new(
            Verdict::Warn,
            NAME,
            format!(
                "{} is only {} characters: use at least {MIN_TOKEN_CHARS} random ones (openssl rand -hex 24)",
                h.token_env,
                t.trim().chars().count()
            ),
        ),
        Some(_) => Check::new(Verdict::Ok, NAME, format!("{} is set", h.token_env)),
    });
    emit(listener(h.listen));
    if !h.listen.ip().is_loopback() {
        emit(Check::new(
            Verdict::Warn,
            NAME,
            format!(
                "http.listen {} is reachable beyond this machine, in plain HTTP: keep it on a network you trust, or listen on 127.0.0.1 behind a TLS proxy or tunnel (README, HTTP API)",
                h.listen
            ),
        ));
    }
}

/// Whether `addr` can be listened on, or a gateway answers there.
fn listener(addr: SocketAddr) -> Check {
    let e = match TcpListener::bind(addr) {
        Ok(_) => {
            return Check::new(
                Verdict::Ok,
                NAME,
                format!("{addr} is free: the gateway listens there when it runs"),
            );
        }
        Err(e) => e,
    };
    if e.kind() != ErrorKind::AddrInUse {
        let hint = match e.kind() {
            ErrorKind::PermissionDenied => ": a port below 1024 needs root; choose a higher one",
            ErrorKind::AddrNotAvailable => ": this machine has no such address",
            _ => "",
        };
        return Check::new(
            Verdict::Fail,
            NAME,
            format!("cannot listen on {addr} (http.listen): {e}{hint}"),
        );
    }
    match probe(addr) {
        Some(status) => Check::new(
            Verdict::Ok,
            NAME,
            format!("the gateway answers on {addr} (/health: {status})"),
        ),
        None => Check::new(
            Verdict::Fail,
            NAME,
            format!(
                "{addr} is in use by another program: choose another http.listen, or stop that program"
            ),
        ),
    }
}

/// `GET /health` at `addr` (its loopback for an address of every interface): the health
/// status when yoctoclaw answers.
fn probe(addr: SocketAddr) -> Option<&'static str> {
    let mut to = addr;
    if to.ip().is_unspecified() {
        to.set_ip(match to.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        });
    }
    let t = Duration::from_secs(PROBE_TIMEOUT_SECS);
    let mut s = TcpStream::connect_timeout(&to, t).ok()?;
    s.set_read_timeout(Some(t)).ok()?;
    s.set_write_timeout(Some(t)).ok()?;
    s.write_all(b"GET /health HTTP/1.1\r\nHost: doctor\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut got = Vec::new();
    let _ = s.take(PROBE_MAX_BYTES).read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got);
    if !text.starts_with("HTTP/1.1 ") || !text.contains("\"uptime_secs\":") {
        return None;
    }
    Some(if text.contains("\"status\":\"ok\"") {
        "ok"
    } else {
        "degraded"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cfg: &Config, env: &Env) -> Vec<Check> {
        let mut out = Vec::new();
        checks(cfg, env, &mut |c| out.push(c));
        out
    }

    #[test]
    fn nothing_while_off_then_token_listener_and_exposure() {
        let mut cfg = Config::default();
        let env = Env::isolated(&[]);
        assert!(run(&cfg, &env).is_empty());
        cfg.http.enabled = true;
        // A port nothing listens on: bind one, read its number, let it go.
        let free = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        cfg.http.listen = free;
        let c = run(&cfg, &env);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(c[0].verdict, Verdict::Warn);
        assert!(
            c[0].text.contains("YOCTOCLAW_HTTP_TOKEN is not set"),
            "{}",
            c[0].text
        );
        assert_eq!(c[1].verdict, Verdict::Ok, "{}", c[1].text);
        let env = Env::isolated(&[("YOCTOCLAW_HTTP_TOKEN", "short")]);
        assert!(run(&cfg, &env)[0].text.contains("only 5 characters"));
        let env = Env::isolated(&[("YOCTOCLAW_HTTP_TOKEN", "0123456789abcdef0123")]);
        assert_eq!(run(&cfg, &env)[0].verdict, Verdict::Ok);
        // Taken by something that is not yoctoclaw (it greets and hangs up).
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        cfg.http.listen = taken.local_addr().unwrap();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = taken.accept() {
                let _ = s.write_all(b"SSH-2.0-OpenSSH_9.6\r\n");
            }
        });
        let c = run(&cfg, &env);
        assert_eq!(c[1].verdict, Verdict::Fail, "{}", c[1].text);
        assert!(
            c[1].text.contains("in use by another program"),
            "{}",
            c[1].text
        );
        // Every interface: a warning.
        cfg.http.listen = SocketAddr::from(([0, 0, 0, 0], free.port()));
        let c = run(&cfg, &env);
        assert_eq!(c.len(), 3, "{c:?}");
        assert_eq!(c[2].verdict, Verdict::Warn);
        assert!(c[2].text.contains("beyond this machine"), "{}", c[2].text);
    }
}
