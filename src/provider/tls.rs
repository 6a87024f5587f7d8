//! TLS for every outgoing HTTPS connection: rustls with the embedded webpki roots, and a
//! certificate clock that never goes below the binary's build time.
//!
//! Boards without a real-time clock boot in 1970; every certificate then looks "not yet
//! valid" and HTTPS (the model, Telegram) is dead until NTP catches up, which itself may
//! need the network. Validating against max(system time, build time) keeps HTTPS working:
//! a certificate that expired before the build would still be refused, and one valid at
//! build time is accepted. ureq builds its own rustls config with no time hook, so this
//! module supplies the TLS step of ureq's connector chain itself.
//!
//! yoctoclaw never presents a client certificate (`with_no_client_auth`), so the crypto
//! provider's key loader is [`NoPrivateKeys`] instead of ring's: nothing ever parses or signs
//! with a private key, and ring's RSA/ECDSA/Ed25519 signing code stays out of the binary.
//!
//! # Bounds
//! One `ClientConfig` for the whole process (built on first use); buffers come from the
//! agent's config (`HTTP_BUFFER_BYTES`).
//!
//! # Threads
//! Worker threads: the handshake and every read and write run inside the HTTP call that
//! owns the connection.

use crate::time::build_epoch;
use rustls::client::ClientConnection;
use rustls::crypto::KeyProvider;
use rustls::pki_types::{PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::SigningKey;
use rustls::time_provider::TimeProvider;
use rustls::{ClientConfig, RootCertStore, StreamOwned};
use std::io::{Read, Write};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, Either, LazyBuffers, NextTimeout, Transport,
    TransportAdapter,
};

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

/// Seconds since the epoch, never below the build time.
pub fn floor_now_secs() -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    now.max(build_epoch().max(0) as u64)
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

fn client_config() -> Result<Arc<ClientConfig>, ureq::Error> {
    static CONFIG: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    if let Some(c) = CONFIG.get() {
        return Ok(c.clone());
    }
    let mut provider = rustls::crypto::ring::default_provider();
    provider.key_provider = &NoPrivateKeys;
    let provider = Arc::new(provider);
    let roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = ClientConfig::builder_with_details(provider, Arc::new(FloorClock))
        .with_safe_default_protocol_versions()
        .map_err(ureq::Error::Rustls)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let config = Arc::new(config);
    let _ = CONFIG.set(config.clone());
    Ok(config)
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
        conn.complete_io(&mut sock).map_err(ureq::Error::Io)?;
        let buffers = LazyBuffers::new(
            details.config.input_buffer_size(),
            details.config.output_buffer_size(),
        );
        Ok(Some(Either::B(TlsTransport {
            buffers,
            stream: StreamOwned { conn, sock },
        })))
    }
}

/// An established TLS connection.
pub struct TlsTransport {
    buffers: LazyBuffers,
    stream: StreamOwned<ClientConnection, TransportAdapter>,
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
        let output = &self.buffers.output()[..amount];
        self.stream.write_all(output).map_err(ureq::Error::Io)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let input = self.buffers.input_append_buf();
        let amount = self.stream.read(input).map_err(ureq::Error::Io)?;
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

    #[test]
    fn no_private_key_is_ever_loaded() {
        use rustls::pki_types::PrivatePkcs8KeyDer;
        for len in [0usize, 1, 48, 4096] {
            let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(vec![0x30u8; len]));
            assert!(NoPrivateKeys.load_private_key(key).is_err());
        }
        assert!(!NoPrivateKeys.fips());
    }
}
