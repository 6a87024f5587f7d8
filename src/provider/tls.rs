//! TLS for every outgoing HTTPS connection (provider, Telegram, doctor, `web_fetch`):
//! rustls with the embedded webpki roots plus the anchors of `tls.ca_file`, a certificate
//! clock that never goes below the binary's build time, and the sorting of TLS failures
//! into sentences that say what to do.
//!
//! Boards without a real-time clock boot in 1970; every certificate then looks "not yet
//! valid" and HTTPS (the model, Telegram) is dead until NTP catches up, which itself may
//! need the network. Validating against max(wall clock, build time) keeps HTTPS working:
//! a certificate that expired before the build would still be refused, and one valid at
//! build time is accepted. The wall clock is `time::now`, so the `YOCTOCLAW_TEST_NOW`
//! hook moves it too. ureq builds its own rustls config with no time hook, so this module
//! supplies the TLS step of ureq's connector chain itself.
//!
//! `tls.ca_file` names a PEM file of extra trust anchors (a private CA, a local proxy's
//! CA), added to the embedded roots, never replacing them. [`install_ca_file`] reads it
//! once at start (`cli::load`, `doctor`); a missing, unreadable or certificate-less file
//! is a configuration error.
//!
//! yoctoclaw never presents a client certificate (`with_no_client_auth`), so the crypto
//! provider's key loader is [`NoPrivateKeys`] instead of ring's: nothing ever parses or signs
//! with a private key, and ring's RSA/ECDSA/Ed25519 signing code stays out of the binary.
//!
//! Failures: a rustls error (or a connection that closes or turns to garbage) is turned
//! into a [`TlsFailure`] where it happens (the handshake in [`FloorClockTls`], reads in
//! [`TlsTransport`]) and travels inside the `io::Error` with its original kind, so ureq's
//! own handling of closed connections is unchanged; `http::map_error` takes it out again.
//! The log line (debug) carries the host and rustls' own words; the sentence never does.
//!
//! # Bounds
//! One `ClientConfig` for the whole process (built on first use); buffers come from the
//! agent's config (`HTTP_INPUT_BUFFER_BYTES`, `HTTP_OUTPUT_BUFFER_BYTES`). `tls.ca_file` is read up to `MAX_CA_FILE_BYTES`
//! and at most `MAX_CA_FILE_CERTS` certificates are taken from it.
//!
//! # Threads
//! The thread that sends (a worker, the poller, the sender, or the main thread of a
//! one-shot command such as `doctor`): the handshake and every read and write block it,
//! each bounded by ureq's timeouts. [`install_ca_file`] reads a file: call it at start,
//! before the executor runs.

use crate::time::{build_epoch, now as now_secs};
use rustls::client::ClientConnection;
use rustls::crypto::{CryptoProvider, KeyProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, TrustAnchor, UnixTime};
use rustls::sign::SigningKey;
use rustls::time_provider::TimeProvider;
use rustls::{ClientConfig, RootCertStore, StreamOwned};
use std::fmt;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, Transport,
    TransportAdapter,
};

/// Largest `tls.ca_file` read (a whole system bundle is about 220 KB).
pub const MAX_CA_FILE_BYTES: u64 = 1024 * 1024;
/// Most certificates taken from `tls.ca_file` (a system bundle holds about 150).
pub const MAX_CA_FILE_CERTS: usize = 1000;

/// The certificate clock: the wall clock, but never earlier than the build time.
#[derive(Debug)]
pub struct FloorClock;

impl TimeProvider for FloorClock {
    fn current_time(&self) -> Option<UnixTime> {
        Some(UnixTime::since_unix_epoch(Duration::from_secs(
            floor_now_secs(),
        )))
    }
}

/// Seconds since the epoch by `time::now` (test hook included), never below the
/// build time.
pub fn floor_now_secs() -> u64 {
    now_secs().max(build_epoch()).max(0) as u64
}

/// The crypto provider's private-key loader: refuses every key. Only client certificates
/// (never configured) would call it; ring's own loader would link its signing code.
#[derive(Debug)]
pub struct NoPrivateKeys;

impl KeyProvider for NoPrivateKeys {
    fn load_private_key(
        &self,
        _key: PrivateKeyDer<'static>,
    ) -> Result<Arc<dyn SigningKey>, rustls::Error> {
        Err(rustls::Error::General(
            "client certificates are not supported".into(),
        ))
    }
}

/// The system's random source (ring's), for the crypto provider.
/// The crypto provider of every connection: rustls' ring provider as it is (its cipher
/// suites, key-exchange groups X25519, P-256 and P-384, signature algorithms and
/// randomness, in its order), with no private-key loader. Every operation on secret data
/// (the ephemeral key shares, the traffic keys) runs on ring's audited code (DECISIONS 110).
pub fn crypto_provider() -> CryptoProvider {
    CryptoProvider {
        key_provider: &NoPrivateKeys,
        ..rustls::crypto::ring::default_provider()
    }
}

/// The anchors of `tls.ca_file`, set once by [`install_ca_file`].
struct ExtraRoots {
    path: PathBuf,
    anchors: Vec<TrustAnchor<'static>>,
}

static EXTRA_ROOTS: OnceLock<ExtraRoots> = OnceLock::new();

/// Why `tls.ca_file` cannot be used. Display names the file and says what to do.
#[derive(Debug)]
pub enum CaFileError {
    /// Missing, unreadable, or not a file.
    Read(PathBuf, io::Error),
    TooLarge(PathBuf),
    /// Not PEM (a broken `-----BEGIN` block or bad base64).
    BadPem(PathBuf),
    /// PEM without a single `CERTIFICATE` block.
    NoCertificate(PathBuf),
    /// The n-th certificate (1-based) is not a usable X.509 certificate.
    BadCertificate(PathBuf, usize),
    TooMany(PathBuf),
}

impl fmt::Display for CaFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaFileError::Read(p, e) if e.kind() == io::ErrorKind::NotFound => {
                write!(f, "{} does not exist", p.display())
            }
            CaFileError::Read(p, e) => write!(f, "cannot read {}: {e}", p.display()),
            CaFileError::TooLarge(p) => write!(
                f,
                "{} is larger than {} KiB",
                p.display(),
                MAX_CA_FILE_BYTES / 1024
            ),
            CaFileError::BadPem(p) => write!(f, "{} is not valid PEM", p.display()),
            CaFileError::NoCertificate(p) => {
                write!(f, "{} holds no \"BEGIN CERTIFICATE\" block", p.display())
            }
            CaFileError::BadCertificate(p, n) => write!(
                f,
                "certificate {n} in {} is not a valid X.509 certificate",
                p.display()
            ),
            CaFileError::TooMany(p) => write!(
                f,
                "{} holds more than {MAX_CA_FILE_CERTS} certificates",
                p.display()
            ),
        }
    }
}

impl std::error::Error for CaFileError {}

/// Where `tls.ca_file` points: relative paths are taken from the home folder; empty is none.
pub fn ca_file_path(home: &Path, ca_file: &str) -> Option<PathBuf> {
    let t = ca_file.trim();
    (!t.is_empty()).then(|| home.join(t))
}

/// Read a PEM file of CA certificates into trust anchors (at least one).
pub fn load_ca_file(path: &Path) -> Result<Vec<TrustAnchor<'static>>, CaFileError> {
    let p = || path.to_path_buf();
    let file = std::fs::File::open(path).map_err(|e| CaFileError::Read(p(), e))?;
    let mut bytes = Vec::new();
    file.take(MAX_CA_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CaFileError::Read(p(), e))?;
    if bytes.len() as u64 > MAX_CA_FILE_BYTES {
        return Err(CaFileError::TooLarge(p()));
    }
    let mut store = RootCertStore::empty();
    for (i, cert) in CertificateDer::pem_slice_iter(&bytes).enumerate() {
        if i >= MAX_CA_FILE_CERTS {
            return Err(CaFileError::TooMany(p()));
        }
        let cert = cert.map_err(|_| CaFileError::BadPem(p()))?;
        store
            .add(cert)
            .map_err(|_| CaFileError::BadCertificate(p(), i + 1))?;
    }
    if store.roots.is_empty() {
        return Err(CaFileError::NoCertificate(p()));
    }
    Ok(store.roots)
}

/// Load `tls.ca_file` (resolved against `home`) for every later connection. Returns the
/// file and how many anchors it added; `None` when the key is empty. Call once, at start,
/// before any HTTPS request (a second call, or one after the first connection, changes
/// nothing).
pub fn install_ca_file(
    home: &Path,
    ca_file: &str,
) -> Result<Option<(PathBuf, usize)>, CaFileError> {
    let Some(path) = ca_file_path(home, ca_file) else {
        return Ok(None);
    };
    let anchors = load_ca_file(&path)?;
    let n = anchors.len();
    if let Some(old) = EXTRA_ROOTS.get() {
        return Ok(Some((old.path.clone(), old.anchors.len())));
    }
    let _ = EXTRA_ROOTS.set(ExtraRoots {
        path: path.clone(),
        anchors,
    });
    Ok(Some((path, n)))
}

/// How many roots every connection trusts: the embedded ones and those of `tls.ca_file`.
pub fn trusted_roots() -> (usize, usize) {
    let extra = EXTRA_ROOTS.get().map_or(0, |e| e.anchors.len());
    (webpki_roots::TLS_SERVER_ROOTS.len(), extra)
}

fn client_config() -> Result<Arc<ClientConfig>, ureq::Error> {
    static CONFIG: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    if let Some(c) = CONFIG.get() {
        return Ok(c.clone());
    }
    let provider = Arc::new(crypto_provider());
    // `tls.ca_file`'s anchors first: the chain search stops at the first anchor that
    // signs, so a private CA's server never walks (and pages in) the embedded roots.
    let mut roots = RootCertStore {
        roots: EXTRA_ROOTS
            .get()
            .map(|e| e.anchors.clone())
            .unwrap_or_default(),
    };
    roots
        .roots
        .extend_from_slice(webpki_roots::TLS_SERVER_ROOTS);
    let config = ClientConfig::builder_with_details(provider, Arc::new(FloorClock))
        .with_safe_default_protocol_versions()
        .map_err(ureq::Error::Rustls)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let config = Arc::new(config);
    let _ = CONFIG.set(config.clone());
    Ok(config)
}

/// What went wrong with TLS, as the user is told (Display: one clause naming the failure
/// and what to do; never a host, a port or rustls' own words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsFailure {
    /// The certificate chains to no trusted root.
    UnknownCa,
    /// The certificate is for other host names.
    WrongName,
    /// The certificate expired (by the certificate clock: never before the build time).
    Expired,
    /// The certificate is not valid yet (a wrong clock, usually).
    NotYetValid,
    /// Another certificate problem: revoked, bad signature, wrong purpose, bad encoding.
    BadCertificate,
    /// The server speaks only TLS 1.0/1.1 (or SSL).
    OldProtocol,
    /// No cipher suite, key exchange or signature scheme in common.
    Incompatible,
    /// The answer to our hello was not TLS (a plain HTTP server on an `https://` URL).
    NotTls,
    /// The server ended the handshake with an alert.
    Refused,
    /// The connection closed during the handshake.
    HandshakeClosed,
    /// After the handshake: bytes that are not valid TLS records for this connection.
    Corrupt,
    /// After the handshake: the connection closed without TLS's end marker (mid-record).
    Cut,
    /// Anything else rustls refused.
    Other,
}

impl TlsFailure {
    /// Sort a rustls error; `handshaking`: it happened before the handshake finished.
    pub fn of_rustls(e: &rustls::Error, handshaking: bool) -> TlsFailure {
        use rustls::AlertDescription as A;
        use rustls::CertificateError as C;
        use rustls::Error as E;
        use rustls::PeerIncompatible as P;
        match e {
            E::InvalidCertificate(c) => match c {
                C::UnknownIssuer => TlsFailure::UnknownCa,
                C::NotValidForName | C::NotValidForNameContext { .. } => TlsFailure::WrongName,
                C::Expired | C::ExpiredContext { .. } => TlsFailure::Expired,
                C::NotValidYet | C::NotValidYetContext { .. } => TlsFailure::NotYetValid,
                _ => TlsFailure::BadCertificate,
            },
            E::NoCertificatesPresented => TlsFailure::BadCertificate,
            E::PeerIncompatible(
                P::ServerDoesNotSupportTls12Or13
                | P::ServerTlsVersionIsDisabledByOurConfig
                | P::SupportedVersionsExtensionRequired,
            ) => TlsFailure::OldProtocol,
            E::AlertReceived(A::ProtocolVersion) => TlsFailure::OldProtocol,
            E::AlertReceived(A::CloseNotify) if handshaking => TlsFailure::HandshakeClosed,
            E::AlertReceived(_) if handshaking => TlsFailure::Refused,
            E::PeerIncompatible(_) => TlsFailure::Incompatible,
            _ if !handshaking => TlsFailure::Corrupt,
            E::InvalidMessage(_)
            | E::InappropriateMessage { .. }
            | E::InappropriateHandshakeMessage { .. }
            | E::PeerSentOversizedRecord => TlsFailure::NotTls,
            _ => TlsFailure::Other,
        }
    }

    /// Sort an I/O error of a TLS connection. `None`: not a TLS failure (a timeout, or an
    /// error of ureq's own that must keep its meaning).
    pub fn of_io(e: &io::Error, handshaking: bool) -> Option<TlsFailure> {
        use io::ErrorKind as K;
        if let Some(r) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
            return Some(TlsFailure::of_rustls(r, handshaking));
        }
        if e.get_ref()
            .is_some_and(|i| i.is::<ureq::Error>() || i.is::<TlsFailure>())
        {
            return None;
        }
        match (e.kind(), handshaking) {
            (K::UnexpectedEof | K::ConnectionReset | K::ConnectionAborted, true) => {
                Some(TlsFailure::HandshakeClosed)
            }
            (K::UnexpectedEof, false) => Some(TlsFailure::Cut),
            _ => None,
        }
    }

    /// Worth another attempt: the same request may well work next time.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            TlsFailure::HandshakeClosed | TlsFailure::Corrupt | TlsFailure::Cut
        )
    }

    /// A few words for logs and details.
    pub fn short(self) -> &'static str {
        match self {
            TlsFailure::UnknownCa => "certificate from an unknown authority",
            TlsFailure::WrongName => "certificate for another host name",
            TlsFailure::Expired => "expired certificate",
            TlsFailure::NotYetValid => "certificate not valid yet",
            TlsFailure::BadCertificate => "unusable certificate",
            TlsFailure::OldProtocol => "TLS version too old",
            TlsFailure::Incompatible => "no TLS settings in common",
            TlsFailure::NotTls => "the server does not speak TLS",
            TlsFailure::Refused => "TLS handshake refused",
            TlsFailure::HandshakeClosed => "connection closed during the TLS handshake",
            TlsFailure::Corrupt => "corrupt TLS data",
            TlsFailure::Cut => "TLS connection cut mid-record",
            TlsFailure::Other => "TLS failure",
        }
    }
}

impl fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TlsFailure::UnknownCa => {
                "the server's certificate is not signed by a trusted authority: if the server uses a private CA, point tls.ca_file at that CA's certificate (PEM)"
            }
            TlsFailure::WrongName => {
                "the server's certificate is for another host name: check the host name in the URL"
            }
            TlsFailure::Expired => {
                "the server's certificate has expired: the server must renew it (or, if it did, check this device's clock)"
            }
            TlsFailure::NotYetValid => {
                "the server's certificate is not valid yet: check this device's clock (is NTP running?)"
            }
            TlsFailure::BadCertificate => {
                "the server's certificate was refused (revoked, badly signed or not for a server): the server's certificate must be fixed"
            }
            TlsFailure::OldProtocol => {
                "the server speaks only an old TLS version (1.0 or 1.1): it must allow TLS 1.2 or 1.3"
            }
            TlsFailure::Incompatible => {
                "the server shares no TLS cipher suite or key exchange with yoctoclaw: it must allow current TLS 1.2 or 1.3 settings"
            }
            TlsFailure::NotTls => {
                "the server did not answer in TLS: if it is a plain HTTP server, use an http:// URL"
            }
            TlsFailure::Refused => {
                "the server refused the TLS handshake: check the URL and any proxy in between"
            }
            TlsFailure::HandshakeClosed => {
                "the server closed the connection during the TLS handshake: check the URL's port and any proxy in between"
            }
            TlsFailure::Corrupt => {
                "the TLS connection received corrupt data: try again, and if it keeps happening check the network and any proxy"
            }
            TlsFailure::Cut => {
                "the TLS connection was cut in the middle of the answer: try again"
            }
            TlsFailure::Other => {
                "the TLS handshake failed: check the URL, this device's clock and any proxy"
            }
        })
    }
}

impl std::error::Error for TlsFailure {}

/// A ureq error for `e`, carrying its [`TlsFailure`] when it is one (see the module doc).
fn tls_error(e: io::Error, handshaking: bool, host: &str) -> ureq::Error {
    match TlsFailure::of_io(&e, handshaking) {
        Some(f) => {
            log::debug!("tls: {host}: {} ({e})", f.short());
            ureq::Error::Io(io::Error::new(e.kind(), f))
        }
        None => ureq::Error::from(e),
    }
}

/// The TLS step of the connector chain.
#[derive(Debug, Default)]
pub struct FloorClockTls;

impl<In: Transport> Connector<In> for FloorClockTls {
    type Out = Either<In, TlsTransport>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        let Some(transport) = chained else {
            return Err(ureq::Error::ConnectionFailed);
        };
        if !details.needs_tls() || transport.is_tls() {
            return Ok(Some(Either::A(transport)));
        }
        let config = client_config()?;
        let host = details
            .uri
            .authority()
            .map(|a| a.host().trim_start_matches('[').trim_end_matches(']'))
            .ok_or(ureq::Error::Tls("no host name for TLS"))?;
        let name: ServerName<'static> = ServerName::try_from(host.to_string())
            .map_err(|_| ureq::Error::Tls("invalid host name for TLS"))?;
        let mut conn = ClientConnection::new(config, name).map_err(ureq::Error::Rustls)?;
        let mut sock = TransportAdapter::new(transport.boxed(), details.current_time.clone());
        sock.set_timeout(details.timeout);
        conn.complete_io(&mut sock)
            .map_err(|e| tls_error(e, true, host))?;
        let buffers = LazyBuffers::new(
            details.config.input_buffer_size(),
            details.config.output_buffer_size(),
        );
        Ok(Some(Either::B(TlsTransport {
            buffers,
            stream: StreamOwned { conn, sock },
            host: host.into(),
        })))
    }
}

/// An established TLS connection.
pub struct TlsTransport {
    buffers: LazyBuffers,
    stream: StreamOwned<ClientConnection, TransportAdapter>,
    /// For debug log lines only.
    host: Box<str>,
}

impl std::fmt::Debug for TlsTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsTransport")
    }
}

impl Transport for TlsTransport {
    fn buffers(&mut self) -> &mut dyn Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let output = self.buffers.output().get(..amount).unwrap_or_default();
        self.stream
            .write_all(output)
            .map_err(|e| tls_error(e, false, &self.host))
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let amount = self
            .stream
            .read(input)
            .map_err(|e| tls_error(e, false, &self.host))?;
        self.buffers.input_appended(amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        self.stream.get_mut().get_mut().is_open()
    }

    fn is_tls(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_certificate_clock_never_goes_below_the_build_time() {
        let t = FloorClock.current_time().unwrap();
        assert!(t.as_secs() >= build_epoch() as u64);
        assert!(client_config().is_ok());
    }

    /// A fresh file under the temp folder with `content`.
    fn temp_file(tag: &str, content: &[u8]) -> PathBuf {
        let p = std::env::temp_dir().join(format!("yc-tls-{tag}-{}.pem", std::process::id()));
        std::fs::write(&p, content).unwrap();
        p
    }

    fn ca_pem(name: &str) -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.self_signed(&key).unwrap().pem()
    }

    #[test]
    fn a_ca_file_adds_every_certificate_it_holds() {
        let two = format!("# a comment\n{}\n{}", ca_pem("one"), ca_pem("two"));
        let p = temp_file("two", two.as_bytes());
        assert_eq!(load_ca_file(&p).unwrap().len(), 2);
        // CRLF line ends and a private key beside the certificate are fine.
        let crlf = format!(
            "{}-----BEGIN PRIVATE KEY-----\r\nAAAA\r\n-----END PRIVATE KEY-----\r\n",
            ca_pem("three").replace('\n', "\r\n")
        );
        let p2 = temp_file("crlf", crlf.as_bytes());
        assert_eq!(load_ca_file(&p2).unwrap().len(), 1);
        let _ = std::fs::remove_file(p);
        let _ = std::fs::remove_file(p2);
    }

    #[test]
    fn a_ca_file_that_cannot_be_used_says_why() {
        let missing = std::env::temp_dir().join("yc-tls-no-such-file.pem");
        assert!(matches!(load_ca_file(&missing), Err(CaFileError::Read(..))));
        assert!(
            load_ca_file(&missing)
                .unwrap_err()
                .to_string()
                .ends_with("yc-tls-no-such-file.pem does not exist")
        );
        let cert = ca_pem("x");
        type Want = fn(&CaFileError) -> bool;
        let cases: &[(&str, &[u8], Want)] = &[
            ("empty", b"", |e| matches!(e, CaFileError::NoCertificate(_))),
            ("text", b"hello\n", |e| {
                matches!(e, CaFileError::NoCertificate(_))
            }),
            ("cut", &cert.as_bytes()[..cert.len() / 2], |e| {
                matches!(e, CaFileError::BadPem(_))
            }),
            (
                "base64",
                b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
                |e| matches!(e, CaFileError::BadPem(_)),
            ),
            (
                "der",
                b"-----BEGIN CERTIFICATE-----\nAAECAwQF\n-----END CERTIFICATE-----\n",
                |e| matches!(e, CaFileError::BadCertificate(_, 1)),
            ),
        ];
        for (tag, content, want) in cases {
            let p = temp_file(tag, content);
            let e = load_ca_file(&p).unwrap_err();
            assert!(want(&e), "{tag}: {e:?}");
            assert!(e.to_string().contains(&*p.to_string_lossy()), "{tag}: {e}");
            let _ = std::fs::remove_file(p);
        }
        let big = vec![b'a'; MAX_CA_FILE_BYTES as usize + 1];
        let p = temp_file("big", &big);
        assert!(matches!(load_ca_file(&p), Err(CaFileError::TooLarge(_))));
        let _ = std::fs::remove_file(p);
    }

    #[test]
    fn random_ca_files_never_panic_and_never_yield_nothing() {
        let mut rng = crate::testkit::XorShift(0x7153_c0de_0bad_cafe);
        let cert = ca_pem("seed");
        for i in 0..300 {
            let mut bytes = cert.as_bytes().to_vec();
            for _ in 0..rng.below(8) + 1 {
                let at = rng.index(bytes.len());
                bytes[at] = rng.next() as u8;
            }
            bytes.truncate(rng.index(bytes.len() + 1));
            let p = temp_file(&format!("fuzz{}", i % 4), &bytes);
            // Ok means at least one anchor; anything else is an error, never a panic.
            if let Ok(anchors) = load_ca_file(&p) {
                assert!(!anchors.is_empty());
            }
        }
        for i in 0..4 {
            let _ = std::fs::remove_file(temp_file(&format!("fuzz{i}"), b""));
        }
    }

    #[test]
    fn the_ca_path_is_taken_from_the_home_when_relative() {
        let home = Path::new("/home/pi/.yoctoclaw");
        assert_eq!(ca_file_path(home, ""), None);
        assert_eq!(ca_file_path(home, "  "), None);
        assert_eq!(
            ca_file_path(home, "ca.pem"),
            Some(PathBuf::from("/home/pi/.yoctoclaw/ca.pem"))
        );
        assert_eq!(
            ca_file_path(home, "/etc/ssl/my-ca.pem"),
            Some(PathBuf::from("/etc/ssl/my-ca.pem"))
        );
    }

    #[test]
    fn tls_failures_are_sorted_by_what_the_user_must_do() {
        use rustls::{AlertDescription as A, CertificateError as C, Error as E};
        let cases = [
            (
                E::InvalidCertificate(C::UnknownIssuer),
                true,
                TlsFailure::UnknownCa,
            ),
            (
                E::InvalidCertificate(C::NotValidForName),
                true,
                TlsFailure::WrongName,
            ),
            (E::InvalidCertificate(C::Expired), true, TlsFailure::Expired),
            (
                E::InvalidCertificate(C::NotValidYet),
                true,
                TlsFailure::NotYetValid,
            ),
            (
                E::InvalidCertificate(C::Revoked),
                true,
                TlsFailure::BadCertificate,
            ),
            (
                E::InvalidCertificate(C::BadSignature),
                true,
                TlsFailure::BadCertificate,
            ),
            (
                E::AlertReceived(A::ProtocolVersion),
                true,
                TlsFailure::OldProtocol,
            ),
            (
                E::PeerIncompatible(rustls::PeerIncompatible::ServerDoesNotSupportTls12Or13),
                true,
                TlsFailure::OldProtocol,
            ),
            (
                E::PeerIncompatible(rustls::PeerIncompatible::NoCipherSuitesInCommon),
                true,
                TlsFailure::Incompatible,
            ),
            (
                E::AlertReceived(A::HandshakeFailure),
                true,
                TlsFailure::Refused,
            ),
            (
                E::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
                true,
                TlsFailure::NotTls,
            ),
            (
                E::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
                false,
                TlsFailure::Corrupt,
            ),
            (E::DecryptError, false, TlsFailure::Corrupt),
            (E::FailedToGetCurrentTime, true, TlsFailure::Other),
        ];
        for (e, hs, want) in cases {
            assert_eq!(TlsFailure::of_rustls(&e, hs), want, "{e:?}");
        }
        let wrapped = io::Error::new(io::ErrorKind::InvalidData, E::DecryptError);
        assert_eq!(
            TlsFailure::of_io(&wrapped, false),
            Some(TlsFailure::Corrupt)
        );
        let eof = io::Error::from(io::ErrorKind::UnexpectedEof);
        assert_eq!(
            TlsFailure::of_io(&eof, true),
            Some(TlsFailure::HandshakeClosed)
        );
        assert_eq!(TlsFailure::of_io(&eof, false), Some(TlsFailure::Cut));
        // Timeouts keep their own meaning.
        let timeout = io::Error::other(ureq::Error::Timeout(ureq::Timeout::Connect));
        assert_eq!(TlsFailure::of_io(&timeout, true), None);
        assert_eq!(
            TlsFailure::of_io(&io::Error::from(io::ErrorKind::TimedOut), false),
            None
        );
        // The kind survives the wrapping, so ureq still sees a closed connection.
        match tls_error(eof, false, "h") {
            ureq::Error::Io(e) => {
                assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
                assert!(e.get_ref().is_some_and(|i| i.is::<TlsFailure>()));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn tls_sentences_say_what_to_do_and_name_nothing_secret() {
        use TlsFailure::*;
        for f in [
            UnknownCa,
            WrongName,
            Expired,
            NotYetValid,
            BadCertificate,
            OldProtocol,
            Incompatible,
            NotTls,
            Refused,
            HandshakeClosed,
            Corrupt,
            Cut,
            Other,
        ] {
            let s = f.to_string();
            assert!(s.contains(": "), "{f:?} says what to do: {s}");
            assert!(s.len() < 200 && s.is_ascii(), "{s}");
            assert!(!f.short().is_empty());
        }
        assert!(UnknownCa.to_string().contains("tls.ca_file"));
        assert!(Cut.is_transient() && !Expired.is_transient() && !UnknownCa.is_transient());
    }

    #[test]
    fn no_private_key_is_ever_loaded() {
        use rustls::pki_types::PrivatePkcs8KeyDer;
        for len in [0usize, 1, 48, 4096] {
            let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(vec![0x30u8; len]));
            assert!(NoPrivateKeys.load_private_key(key).is_err());
        }
        assert!(!NoPrivateKeys.fips());
    }

    /// The key exchange is ring's own code for every group (the ephemeral secret never goes
    /// through anything else), and so are the certificate checks and the randomness: each
    /// entry is the very object rustls' ring provider hands out, in its order.
    #[test]
    fn every_key_exchange_and_signature_check_is_rings() {
        let ours = crypto_provider();
        let ring = rustls::crypto::ring::default_provider();
        assert_eq!(ours.kx_groups.len(), ring.kx_groups.len());
        for (a, b) in ours.kx_groups.iter().zip(&ring.kx_groups) {
            assert!(std::ptr::addr_eq(*a, *b), "{:?} is not ring's", a.name());
        }
        assert_eq!(
            ours.kx_groups.iter().map(|g| g.name()).collect::<Vec<_>>(),
            [
                rustls::NamedGroup::X25519,
                rustls::NamedGroup::secp256r1,
                rustls::NamedGroup::secp384r1
            ]
        );
        assert_eq!(ours.cipher_suites, ring.cipher_suites);
        assert!(std::ptr::addr_eq(ours.secure_random, ring.secure_random));
        let (sa, sb) = (
            ours.signature_verification_algorithms,
            ring.signature_verification_algorithms,
        );
        assert_eq!(sa.all.len(), sb.all.len());
        for (a, b) in sa.all.iter().zip(sb.all) {
            assert!(std::ptr::addr_eq(*a, *b), "{a:?} is not webpki's ring one");
        }
    }

    /// A CA with a key of `ca_alg` and a certificate for `yc.test` with a key of `leaf_alg`
    /// signed by it: (the CA certificate, the server's chain, the server's key).
    fn chain(
        ca_alg: &'static rcgen::SignatureAlgorithm,
        leaf_alg: &'static rcgen::SignatureAlgorithm,
    ) -> (
        CertificateDer<'static>,
        Vec<CertificateDer<'static>>,
        PrivateKeyDer<'static>,
    ) {
        let ca_key = rcgen::KeyPair::generate_for(ca_alg).unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "yc test CA");
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let key = rcgen::KeyPair::generate_for(leaf_alg).unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["yc.test".to_string()]).unwrap();
        let cert = leaf.signed_by(&key, &issuer).unwrap();
        let key = PrivateKeyDer::try_from(key.serialize_der()).unwrap();
        (ca_cert.der().clone(), vec![cert.der().clone()], key)
    }

    /// A whole handshake in memory: a client on [`crypto_provider`] that trusts `ca`, and a
    /// rustls server (ring) with `chain`, limited to `groups` and `versions`. The group
    /// agreed on, or the client's error.
    fn handshake(
        ca: CertificateDer<'static>,
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        groups: &[&'static dyn rustls::crypto::SupportedKxGroup],
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> Result<rustls::NamedGroup, rustls::Error> {
        let mut roots = RootCertStore::empty();
        roots.add(ca).unwrap();
        let client = ClientConfig::builder_with_provider(Arc::new(crypto_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut server_provider = rustls::crypto::ring::default_provider();
        server_provider.kx_groups = groups.to_vec();
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(server_provider))
            .with_protocol_versions(versions)
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        let name = ServerName::try_from("yc.test").unwrap();
        let mut client = ClientConnection::new(Arc::new(client), name).unwrap();
        let mut server = rustls::ServerConnection::new(Arc::new(server)).unwrap();
        for _ in 0..16 {
            let mut to_server = Vec::new();
            while client.wants_write() {
                client.write_tls(&mut to_server).unwrap();
            }
            let mut rd = &to_server[..];
            let mut server_failed = None;
            while !rd.is_empty() && server_failed.is_none() {
                server.read_tls(&mut rd).unwrap();
                server_failed = server.process_new_packets().err();
            }
            let mut to_client = Vec::new();
            while server.wants_write() {
                server.write_tls(&mut to_client).unwrap();
            }
            let mut rd = &to_client[..];
            while !rd.is_empty() {
                client.read_tls(&mut rd).unwrap();
                client.process_new_packets()?;
            }
            if let Some(e) = server_failed {
                return Err(e);
            }
            if !client.is_handshaking() && !server.is_handshaking() {
                return Ok(client
                    .negotiated_key_exchange_group()
                    .expect("a group")
                    .name());
            }
        }
        panic!("the handshake did not finish");
    }

    #[test]
    fn p256_key_exchange_and_signatures_complete_real_handshakes() {
        use rustls::NamedGroup;
        use rustls::crypto::ring::kx_group;
        use rustls::version::{TLS12, TLS13};
        let p256 = &rcgen::PKCS_ECDSA_P256_SHA256;
        let p384 = &rcgen::PKCS_ECDSA_P384_SHA384;
        let ed = &rcgen::PKCS_ED25519;
        // (what, CA key, server key, server's groups, versions, group expected)
        let cases: &[(&str, _, _, &[_], &[_], NamedGroup)] = &[
            (
                "TLS 1.3, P-256 key share, P-256 chain",
                p256,
                p256,
                &[kx_group::SECP256R1],
                &[&TLS13],
                NamedGroup::secp256r1,
            ),
            (
                "TLS 1.2, P-256 ECDHE, P-256 chain",
                p256,
                p256,
                &[kx_group::SECP256R1],
                &[&TLS12],
                NamedGroup::secp256r1,
            ),
            (
                "a server that offers all: X25519 first",
                p256,
                p256,
                &[kx_group::X25519, kx_group::SECP256R1, kx_group::SECP384R1],
                &[&TLS13],
                NamedGroup::X25519,
            ),
            (
                "P-384 CA signing a P-256 server key",
                p384,
                p256,
                &[kx_group::SECP256R1],
                &[&TLS13],
                NamedGroup::secp256r1,
            ),
            (
                "P-256 CA signing a P-384 server key, P-384 key share",
                p256,
                p384,
                &[kx_group::SECP384R1],
                &[&TLS13],
                NamedGroup::secp384r1,
            ),
            (
                "TLS 1.2, P-256 CA, P-384 server key",
                p256,
                p384,
                &[kx_group::SECP256R1],
                &[&TLS12],
                NamedGroup::secp256r1,
            ),
            (
                "Ed25519 server key under a P-256 CA",
                p256,
                ed,
                &[kx_group::X25519],
                &[&TLS13],
                NamedGroup::X25519,
            ),
        ];
        for (what, ca_alg, leaf_alg, groups, versions, want) in cases {
            let (ca, chain, key) = chain(ca_alg, leaf_alg);
            let got = handshake(ca, chain, key, groups, versions);
            assert_eq!(got.as_ref().ok(), Some(want), "{what}: {got:?}");
        }
    }

    #[test]
    fn a_bad_p256_signature_on_the_certificate_fails_the_handshake() {
        use rustls::crypto::ring::kx_group;
        use rustls::version::{TLS12, TLS13};
        for versions in [&[&TLS13][..], &[&TLS12][..]] {
            let (ca, mut chain, key) = chain(
                &rcgen::PKCS_ECDSA_P256_SHA256,
                &rcgen::PKCS_ECDSA_P256_SHA256,
            );
            // The certificate's signature is its last bytes (the DER INTEGER s of the
            // ECDSA signature): change one.
            let mut der = chain[0].to_vec();
            let last = der.len() - 2;
            der[last] ^= 0x01;
            chain[0] = CertificateDer::from(der);
            let got = handshake(ca, chain, key, &[kx_group::SECP256R1], versions);
            assert_eq!(
                got,
                Err(rustls::Error::InvalidCertificate(
                    rustls::CertificateError::BadSignature
                ))
            );
        }
    }
}
