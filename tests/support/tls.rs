//! TLS for the test fakes: a CA made at test time (rcgen), server certificates for
//! 127.0.0.1 signed by it (valid, expired, for another name, or from another CA), and a
//! TLS front for [`FakeServer`] whose behaviour is switched per connection: serve well,
//! or fail in each way a client must survive (plain HTTP on the TLS port, garbage after
//! the handshake, a cut mid-record, a stall, a TLS 1.0-only server).
//!
//! The server side is rustls with ring (tests and the soak only; the binary links the
//! client side alone). Every connection's behaviour is the mode set when it was accepted.
//!
//! # Bounds
//! A stalling connection is held until the client gives up, at most `STALL_HOLD_SECS`.
#![allow(dead_code)]

use super::fake_http::{Conn, FakeServer, Request, Response, Wrap};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Longest a stalling fake holds a connection.
pub const STALL_HOLD_SECS: u64 = 60;
/// A day, for certificate validity.
pub const DAY_SECS: i64 = 86_400;

/// Seconds since the epoch by the real clock.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn at(secs: i64) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(secs).expect("a valid time")
}

/// A certificate authority made for one test run.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).expect("self-signed CA");
        TestCa {
            issuer: Issuer::new(params, key),
            pem: cert.pem(),
        }
    }

    /// The CA certificate as PEM.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// Write the CA certificate as PEM to `path` (for `tls.ca_file`).
    pub fn write_pem(&self, path: &Path) {
        std::fs::write(path, &self.pem).expect("write the CA file");
    }

    /// A server certificate for `names` (host names or IP addresses), valid between the
    /// two times (seconds since the epoch), as a rustls server config.
    pub fn server_config(
        &self,
        names: &[&str],
        not_before: i64,
        not_after: i64,
    ) -> Arc<ServerConfig> {
        let key = KeyPair::generate().expect("server key");
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .expect("server params");
        params.distinguished_name.push(DnType::CommonName, names[0]);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.not_before = at(not_before);
        params.not_after = at(not_after);
        let cert = params.signed_by(&key, &self.issuer).expect("server cert");
        let chain = vec![CertificateDer::from(cert.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server config");
        Arc::new(config)
    }

    /// A certificate for 127.0.0.1, localhost and `yc-host` (the board VM's name for the
    /// host), valid from a day before `from` to 30 days from now.
    pub fn localhost_config(&self, from: i64) -> Arc<ServerConfig> {
        self.server_config(
            &["127.0.0.1", "localhost", "yc-host"],
            from - DAY_SECS,
            unix_now() + 30 * DAY_SECS,
        )
    }
}

/// What a TLS fake does with a new connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A valid certificate for 127.0.0.1; requests are served.
    Good,
    /// A certificate for `other.invalid` only.
    WrongName,
    /// A certificate that expired before the build (and before now).
    Expired,
    /// A valid certificate from a CA the client was not told about.
    UnknownCa,
    /// A plain HTTP server: answers the ClientHello with `400 Bad Request`.
    PlainHttp,
    /// Handshake, read the request, then bytes that are no TLS record of this connection.
    GarbageAfterHandshake,
    /// Handshake, read the request, then half of the answer's TLS record, then close.
    CutMidRecord,
    /// Accept and never answer the ClientHello.
    StallHandshake,
    /// Handshake, read the request, never answer.
    StallAfterHandshake,
    /// Answer the ClientHello with a TLS 1.0 ServerHello (an old server).
    Tls10,
    /// Answer the ClientHello with a `protocol_version` alert.
    ProtocolVersionAlert,
}

/// Switches a TLS fake's mode for the connections it accepts next.
#[derive(Clone)]
pub struct Switch(Arc<Mutex<Mode>>);

impl Switch {
    pub fn set(&self, m: Mode) {
        *self.0.lock().unwrap() = m;
    }
    pub fn get(&self) -> Mode {
        *self.0.lock().unwrap()
    }
}

/// The server configs of each certificate mode.
struct Certs {
    good: Arc<ServerConfig>,
    wrong_name: Arc<ServerConfig>,
    expired: Arc<ServerConfig>,
    unknown_ca: Arc<ServerConfig>,
}

impl Certs {
    /// `valid_from`: the good certificate's `not_before` (plus a day of margin).
    fn new(ca: &TestCa, valid_from: i64) -> Certs {
        let now = unix_now();
        let build = yoctoclaw::time::build_epoch();
        let other = TestCa::new("yoctoclaw unknown test CA");
        Certs {
            good: ca.localhost_config(valid_from),
            wrong_name: ca.server_config(&["other.invalid"], now - DAY_SECS, now + 30 * DAY_SECS),
            expired: ca.server_config(
                &["127.0.0.1", "localhost"],
                build.min(now) - 60 * DAY_SECS,
                build.min(now) - 2 * DAY_SECS,
            ),
            unknown_ca: other.localhost_config(now),
        }
    }
}

/// Start `handler` behind a TLS front signed by `ca`; the switch picks each new
/// connection's behaviour (`Mode::Good` at first). The good certificate is valid from a
/// day before the build (so a 1970 clock, floored at the build time, accepts it).
pub fn serve<F>(handler: F, keep_alive: bool, ca: &TestCa) -> (FakeServer, Switch)
where
    F: Fn(&Request) -> Response + Send + Sync + 'static,
{
    let from = yoctoclaw::time::build_epoch().min(unix_now());
    let certs = Arc::new(Certs::new(ca, from));
    let switch = Switch(Arc::new(Mutex::new(Mode::Good)));
    let sw = switch.clone();
    let wrap: Box<Wrap> = Box::new(move |tcp| accept(tcp, sw.get(), &certs));
    let server = FakeServer::start_wrapped(handler, keep_alive, wrap, true);
    (server, switch)
}

type TlsStream = StreamOwned<ServerConnection, TcpStream>;

impl Conn for TlsStream {
    fn close(&mut self) {
        self.conn.send_close_notify();
        let _ = self.conn.complete_io(&mut self.sock);
        let _ = self.sock.shutdown(std::net::Shutdown::Both);
    }
}

fn handshake(mut tcp: TcpStream, config: &Arc<ServerConfig>) -> Option<TlsStream> {
    let mut conn = ServerConnection::new(config.clone()).ok()?;
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp).ok()?;
    }
    Some(StreamOwned::new(conn, tcp))
}

/// Read whatever part of the request has arrived (the fakes below answer regardless).
fn read_some(r: &mut impl Read) -> Option<()> {
    let mut buf = [0u8; 4096];
    match r.read(&mut buf) {
        Ok(n) if n > 0 => Some(()),
        _ => None,
    }
}

/// Read one whole HTTP request (its head, then `Content-Length` bytes of body): an
/// answer cut before the client has sent everything would meet the client still writing
/// (a broken pipe), not reading the cut answer.
fn read_request(r: &mut impl Read) -> Option<()> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = r.read(&mut buf).ok().filter(|&n| n > 0)?;
        got.extend_from_slice(&buf[..n]);
        let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let whole = if head.contains("transfer-encoding: chunked") {
            got.ends_with(b"0\r\n\r\n")
        } else {
            got.len() >= end + 4 + len
        };
        if whole {
            return Some(());
        }
    }
}

/// Keep the connection open until the client closes it (or `STALL_HOLD_SECS`).
fn hold(tcp: &mut TcpStream) {
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(STALL_HOLD_SECS)));
    let mut buf = [0u8; 4096];
    while let Ok(n) = tcp.read(&mut buf) {
        if n == 0 {
            break;
        }
    }
}

fn accept(mut tcp: TcpStream, mode: Mode, certs: &Certs) -> Option<Box<dyn Conn>> {
    let served = |s: TlsStream| Some(Box::new(s) as Box<dyn Conn>);
    match mode {
        Mode::Good => served(handshake(tcp, &certs.good)?),
        // The client refuses these during the handshake.
        Mode::WrongName => served(handshake(tcp, &certs.wrong_name)?),
        Mode::Expired => served(handshake(tcp, &certs.expired)?),
        Mode::UnknownCa => served(handshake(tcp, &certs.unknown_ca)?),
        Mode::PlainHttp => {
            read_some(&mut tcp)?;
            let body = "Bad Request";
            let _ = write!(
                tcp,
                "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = tcp.shutdown(std::net::Shutdown::Both);
            None
        }
        Mode::GarbageAfterHandshake => {
            let mut s = handshake(tcp, &certs.good)?;
            read_some(&mut s)?;
            // An application-data record that no key of this connection decrypts.
            let mut junk = vec![0x17, 0x03, 0x03, 0x00, 0x40];
            junk.extend(std::iter::repeat_n(0xA5u8, 0x40));
            let _ = s.sock.write_all(&junk);
            hold(&mut s.sock);
            None
        }
        Mode::CutMidRecord => {
            let mut s = handshake(tcp, &certs.good)?;
            read_request(&mut s)?;
            let body = "x".repeat(2000);
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let _ = s.conn.writer().write_all(answer.as_bytes());
            let mut wire = Vec::new();
            while s.conn.wants_write() {
                if s.conn.write_tls(&mut wire).is_err() {
                    break;
                }
            }
            let _ = s.sock.write_all(&wire[..wire.len() / 2]);
            let _ = s.sock.flush();
            let _ = s.sock.shutdown(std::net::Shutdown::Both);
            None
        }
        Mode::StallHandshake => {
            hold(&mut tcp);
            None
        }
        Mode::StallAfterHandshake => {
            let mut s = handshake(tcp, &certs.good)?;
            read_some(&mut s)?;
            hold(&mut s.sock);
            None
        }
        Mode::Tls10 => {
            read_some(&mut tcp)?;
            let _ = tcp.write_all(&tls10_server_hello());
            hold(&mut tcp);
            None
        }
        Mode::ProtocolVersionAlert => {
            read_some(&mut tcp)?;
            // alert record, TLS 1.0: level fatal (2), protocol_version (70).
            let _ = tcp.write_all(&[0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x46]);
            let _ = tcp.shutdown(std::net::Shutdown::Both);
            None
        }
    }
}

/// A ServerHello choosing TLS 1.0 and TLS_RSA_WITH_AES_128_CBC_SHA, in a TLS 1.0 record.
pub fn tls10_server_hello() -> Vec<u8> {
    let mut body = vec![0x03, 0x01]; // server_version: TLS 1.0
    body.extend([0x5Au8; 32]); // random
    body.push(0); // no session id
    body.extend([0x00, 0x2F]); // cipher suite
    body.push(0); // no compression
    let mut hs = vec![0x02, 0x00, 0x00, body.len() as u8];
    hs.extend(body);
    let mut record = vec![0x16, 0x03, 0x01, 0x00, hs.len() as u8];
    record.extend(hs);
    record
}
