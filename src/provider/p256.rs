//! NIST P-256 for TLS through the RustCrypto `p256` crate, in place of ring's: the key
//! exchange group `secp256r1` and ECDSA P-256 signature verification (certificates and
//! TLS 1.3 `CertificateVerify`).
//!
//! Why: on aarch64 and x86_64 ring computes P-256 with a 151,552-byte table of precomputed
//! base-point multiples, the largest single object in the binary. `p256` does the same
//! arithmetic without it (DECISIONS 98). Every other algorithm (X25519, P-384, RSA,
//! Ed25519, AES-GCM, ChaCha20-Poly1305, hashes, randomness) stays ring's.
//!
//! What is ours here is only the glue, the way rustls' own ring provider does it: hash the
//! message with ring, parse the key and the DER signature, verify the prehash
//! (`ecdsa::hazmat`); for the key exchange, a private scalar from the system's random
//! source, the public point, and the peer's share checked (uncompressed, on the curve,
//! not the identity) before the shared secret is its x-coordinate.
//!
//! # Threads
//! Whatever thread runs the TLS handshake (a worker, the poller or the sender); no state.

use p256::ecdsa::signature::hazmat::PrehashVerifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::elliptic_curve::point::AffineCoordinates;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use p256::{NonZeroScalar, ProjectivePoint, PublicKey};
use ring::digest;
use ring::rand::{SecureRandom, SystemRandom};
use rustls::crypto::{ActiveKeyExchange, GetRandomFailed, SharedSecret, SupportedKxGroup};
use rustls::pki_types::{
    AlgorithmIdentifier, InvalidSignature, SignatureVerificationAlgorithm, alg_id,
};
use rustls::{Error, NamedGroup, PeerMisbehaved};

/// Bytes of an uncompressed P-256 point: 0x04, X, Y.
const POINT_BYTES: usize = 65;
/// Tries to draw a private scalar in [1, n-1]; a 32-byte draw falls outside with
/// probability about 2^-32, so a second try is already beyond reason.
const SCALAR_TRIES: usize = 8;

/// ECDSA with a P-256 key over a message hashed with `hash`.
struct EcdsaP256 {
    hash: &'static digest::Algorithm,
    signature_alg: AlgorithmIdentifier,
}

impl std::fmt::Debug for EcdsaP256 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ECDSA P-256 with {:?}", self.hash)
    }
}

impl SignatureVerificationAlgorithm for EcdsaP256 {
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        // The subjectPublicKey of a P-256 certificate: an uncompressed point only, as ring
        // (and webpki's other providers) require.
        if public_key.len() != POINT_BYTES || public_key[0] != 0x04 {
            return Err(InvalidSignature);
        }
        let key = VerifyingKey::from_sec1_bytes(public_key).map_err(|_| InvalidSignature)?;
        let signature = Signature::from_der(signature).map_err(|_| InvalidSignature)?;
        let digest = digest::digest(self.hash, message);
        key.verify_prehash(digest.as_ref(), &signature)
            .map_err(|_| InvalidSignature)
    }

    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::ECDSA_P256
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        self.signature_alg
    }
}

/// ECDSA, P-256 key, SHA-256 (webpki's `ECDSA_P256_SHA256`).
pub static ECDSA_P256_SHA256: &dyn SignatureVerificationAlgorithm = &EcdsaP256 {
    hash: &digest::SHA256,
    signature_alg: alg_id::ECDSA_SHA256,
};

/// ECDSA, P-256 key, SHA-384 (webpki's `ECDSA_P256_SHA384`).
pub static ECDSA_P256_SHA384: &dyn SignatureVerificationAlgorithm = &EcdsaP256 {
    hash: &digest::SHA384,
    signature_alg: alg_id::ECDSA_SHA384,
};

/// The `secp256r1` key-exchange group (TLS 1.3 key shares, TLS 1.2 ECDHE).
#[derive(Debug)]
struct Secp256r1;

/// rustls' `secp256r1` group, computed by `p256`.
pub static SECP256R1: &dyn SupportedKxGroup = &Secp256r1;

impl SupportedKxGroup for Secp256r1 {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, Error> {
        let secret = random_scalar().ok_or(GetRandomFailed)?;
        let public = (ProjectivePoint::GENERATOR * *secret).to_affine();
        let encoded = public.to_encoded_point(false);
        let mut pub_key = [0u8; POINT_BYTES];
        pub_key.copy_from_slice(encoded.as_bytes());
        Ok(Box::new(KeyExchange { secret, pub_key }))
    }

    fn name(&self) -> NamedGroup {
        NamedGroup::secp256r1
    }
}

/// A private scalar in [1, n-1] from the system's random source.
fn random_scalar() -> Option<NonZeroScalar> {
    let rng = SystemRandom::new();
    for _ in 0..SCALAR_TRIES {
        let mut bytes = [0u8; 32];
        rng.fill(&mut bytes).ok()?;
        let scalar = NonZeroScalar::from_repr(bytes.into());
        bytes.fill(0);
        if let Some(s) = Option::<NonZeroScalar>::from(scalar) {
            return Some(s);
        }
    }
    None
}

struct KeyExchange {
    secret: NonZeroScalar,
    pub_key: [u8; POINT_BYTES],
}

impl ActiveKeyExchange for KeyExchange {
    fn complete(self: Box<Self>, peer: &[u8]) -> Result<SharedSecret, Error> {
        // TLS allows only the uncompressed form (RFC 8446 4.2.8.2, RFC 8422 5.4.1);
        // `from_sec1_bytes` refuses points off the curve and the identity.
        if peer.len() != POINT_BYTES || peer[0] != 0x04 {
            return Err(PeerMisbehaved::InvalidKeyShare.into());
        }
        let peer = PublicKey::from_sec1_bytes(peer).map_err(|_| PeerMisbehaved::InvalidKeyShare)?;
        // A valid peer point has prime order (the cofactor is 1) and the scalar is not
        // zero, so the product is never the identity.
        let shared = (peer.to_projective() * *self.secret).to_affine();
        Ok(SharedSecret::from(&shared.x()[..]))
    }

    fn pub_key(&self) -> &[u8] {
        &self.pub_key
    }

    fn group(&self) -> NamedGroup {
        NamedGroup::secp256r1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::agreement;
    use ring::signature::{self as rsig, EcdsaKeyPair, KeyPair as _, UnparsedPublicKey};

    /// The order n of P-256's base point, big-endian.
    const N: [u8; 32] = [
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63,
        0x25, 0x51,
    ];

    fn key_pair(alg: &'static rsig::EcdsaSigningAlgorithm) -> EcdsaKeyPair {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap()
    }

    /// DER `SEQUENCE { INTEGER r, INTEGER s }` from big-endian unsigned integers.
    fn der_signature(r: &[u8], s: &[u8]) -> Vec<u8> {
        fn int(v: &[u8]) -> Vec<u8> {
            let mut v: Vec<u8> = v.iter().copied().skip_while(|b| *b == 0).collect();
            if v.is_empty() || v[0] & 0x80 != 0 {
                v.insert(0, 0);
            }
            let mut out = vec![0x02, v.len() as u8];
            out.extend(v);
            out
        }
        let body = [int(r), int(s)].concat();
        let mut out = vec![0x30, body.len() as u8];
        out.extend(body);
        out
    }

    /// (r, s) of a DER signature as 32-byte big-endian integers.
    fn split_signature(der: &[u8]) -> ([u8; 32], [u8; 32]) {
        let mut at = 2;
        let mut take = || {
            let len = der[at + 1] as usize;
            let v = &der[at + 2..at + 2 + len];
            at += 2 + len;
            let mut out = [0u8; 32];
            let v = if v.len() > 32 { &v[v.len() - 32..] } else { v };
            out[32 - v.len()..].copy_from_slice(v);
            out
        };
        (take(), take())
    }

    /// n - s, big-endian.
    fn negate(s: &[u8; 32]) -> [u8; 32] {
        let mut out = [0u8; 32];
        let mut borrow = 0i16;
        for i in (0..32).rev() {
            let d = N[i] as i16 - s[i] as i16 - borrow;
            borrow = i16::from(d < 0);
            out[i] = (d + 256 * borrow) as u8;
        }
        out
    }

    /// A key that signs: ring's signer for SHA-256; for SHA-384 (which ring signs only
    /// with P-384 keys) `p256`'s own signer over the SHA-384 digest. Either way ring's
    /// verifier is the reference.
    struct Signer {
        public: Vec<u8>,
        sign: Box<SignFn>,
    }

    type SignFn = dyn Fn(&[u8]) -> Vec<u8>;

    fn signer(sha384: bool) -> Signer {
        let rng = SystemRandom::new();
        if sha384 {
            let mut seed = [0u8; 32];
            rng.fill(&mut seed).unwrap();
            let key = p256::ecdsa::SigningKey::from_slice(&seed).unwrap();
            let public = key
                .verifying_key()
                .to_encoded_point(false)
                .as_bytes()
                .to_vec();
            let sign = move |msg: &[u8]| {
                use p256::ecdsa::signature::hazmat::PrehashSigner;
                let digest = digest::digest(&digest::SHA384, msg);
                let sig: Signature = key.sign_prehash(digest.as_ref()).unwrap();
                sig.to_der().as_bytes().to_vec()
            };
            Signer {
                public,
                sign: Box::new(sign),
            }
        } else {
            let key = key_pair(&rsig::ECDSA_P256_SHA256_ASN1_SIGNING);
            let public = key.public_key().as_ref().to_vec();
            let sign = move |msg: &[u8]| {
                key.sign(&SystemRandom::new(), msg)
                    .unwrap()
                    .as_ref()
                    .to_vec()
            };
            Signer {
                public,
                sign: Box::new(sign),
            }
        }
    }

    fn cases() -> [(
        &'static dyn SignatureVerificationAlgorithm,
        bool,
        &'static rsig::EcdsaVerificationAlgorithm,
    ); 2] {
        [
            (ECDSA_P256_SHA256, false, &rsig::ECDSA_P256_SHA256_ASN1),
            (ECDSA_P256_SHA384, true, &rsig::ECDSA_P256_SHA384_ASN1),
        ]
    }

    #[test]
    fn accepts_what_ring_signs_and_agrees_with_ring_on_every_corrupted_signature() {
        for (ours, sha384, verifying) in cases() {
            let key = signer(sha384);
            let public = &key.public[..];
            let other = signer(sha384);
            for msg in [&b""[..], b"hello", &[0x5a; 1000][..]] {
                let sig = (key.sign)(msg);
                let sig = &sig[..];
                assert!(
                    UnparsedPublicKey::new(verifying, public)
                        .verify(msg, sig)
                        .is_ok()
                );
                assert!(ours.verify_signature(public, msg, sig).is_ok());
                assert!(ours.verify_signature(public, b"hellO", sig).is_err());
                assert!(ours.verify_signature(&other.public, msg, sig).is_err());
                // A one-bit change in every byte of the DER signature (a different bit
                // each byte): the same verdict as ring's, a refusal.
                for byte in 0..sig.len() {
                    let bit = byte * 8 + byte % 8;
                    let mut bad = sig.to_vec();
                    bad[byte] ^= 1 << (byte % 8);
                    let ring_ok = UnparsedPublicKey::new(verifying, public)
                        .verify(msg, &bad)
                        .is_ok();
                    let ours_ok = ours.verify_signature(public, msg, &bad).is_ok();
                    assert_eq!(ours_ok, ring_ok, "bit {bit} of {sig:02x?}");
                    assert!(!ours_ok, "bit {bit}");
                }
                // The other s that verifies (n - s): the same verdict as ring's (both accept).
                let (r, s) = split_signature(sig);
                let flipped = der_signature(&r, &negate(&s));
                let ring_ok = UnparsedPublicKey::new(verifying, public)
                    .verify(msg, &flipped)
                    .is_ok();
                assert_eq!(
                    ours.verify_signature(public, msg, &flipped).is_ok(),
                    ring_ok
                );
                // r or s out of range: zero, n.
                for (r2, s2) in [([0u8; 32], s), (r, [0u8; 32]), (N, s), (r, N)] {
                    let bad = der_signature(&r2, &s2);
                    assert!(ours.verify_signature(public, msg, &bad).is_err());
                }
                // Trailing bytes after the DER sequence, or a truncated one.
                let mut long = sig.to_vec();
                long.push(0);
                assert!(ours.verify_signature(public, msg, &long).is_err());
                assert!(
                    ours.verify_signature(public, msg, &sig[..sig.len() - 1])
                        .is_err()
                );
            }
        }
    }

    #[test]
    fn refuses_keys_that_are_not_an_uncompressed_point_on_the_curve() {
        let (ours, sha384, _) = cases()[0];
        let key = signer(sha384);
        let public = &key.public[..];
        let sig = (key.sign)(b"m");
        // Compressed form of the same key (0x02/0x03 by the parity of Y).
        let mut compressed = vec![2 + (public[64] & 1)];
        compressed.extend_from_slice(&public[1..33]);
        assert!(ours.verify_signature(&compressed, b"m", &sig).is_err());
        // Y changed: not on the curve.
        let mut off_curve = public.to_vec();
        off_curve[64] ^= 1;
        assert!(ours.verify_signature(&off_curve, b"m", &sig).is_err());
        // All zeros, empty, too long.
        assert!(ours.verify_signature(&[0u8; 65], b"m", &sig).is_err());
        assert!(ours.verify_signature(&[], b"m", &sig).is_err());
        let mut long = public.to_vec();
        long.push(0);
        assert!(ours.verify_signature(&long, b"m", &sig).is_err());
    }

    #[test]
    fn algorithm_identifiers_are_webpkis() {
        for (ours, theirs) in [
            (ECDSA_P256_SHA256, webpki::ring::ECDSA_P256_SHA256),
            (ECDSA_P256_SHA384, webpki::ring::ECDSA_P256_SHA384),
        ] {
            assert_eq!(ours.public_key_alg_id(), theirs.public_key_alg_id());
            assert_eq!(ours.signature_alg_id(), theirs.signature_alg_id());
        }
    }

    #[test]
    fn key_exchange_agrees_with_rings_ecdh() {
        let rng = SystemRandom::new();
        for _ in 0..8 {
            let ours = SECP256R1.start().unwrap();
            assert_eq!(ours.group(), NamedGroup::secp256r1);
            let our_public = ours.pub_key().to_vec();
            assert_eq!((our_public.len(), our_public[0]), (65, 0x04));
            let theirs =
                agreement::EphemeralPrivateKey::generate(&agreement::ECDH_P256, &rng).unwrap();
            let their_public = theirs.compute_public_key().unwrap();
            let expected = agreement::agree_ephemeral(
                theirs,
                &agreement::UnparsedPublicKey::new(&agreement::ECDH_P256, &our_public),
                |s| s.to_vec(),
            )
            .unwrap();
            let got = ours.complete(their_public.as_ref()).unwrap();
            assert_eq!(got.secret_bytes(), &expected[..]);
        }
    }

    #[test]
    fn key_exchange_refuses_bad_peer_shares() {
        let good = SECP256R1.start().unwrap().pub_key().to_vec();
        let mut compressed = vec![2 + (good[64] & 1)];
        compressed.extend_from_slice(&good[1..33]);
        let mut off_curve = good.clone();
        off_curve[64] ^= 1;
        let mut long = good.clone();
        long.push(0);
        let mut no_prefix = good.clone();
        no_prefix[0] = 0x06;
        for (what, share) in [
            ("empty", vec![]),
            ("compressed", compressed),
            ("off the curve", off_curve),
            ("zeros", vec![0u8; 65]),
            ("0x04 and zeros", [&[4u8][..], &[0u8; 64][..]].concat()),
            ("too long", long),
            ("hybrid prefix", no_prefix),
        ] {
            let ours = SECP256R1.start().unwrap();
            match ours.complete(&share) {
                Err(Error::PeerMisbehaved(PeerMisbehaved::InvalidKeyShare)) => {}
                other => panic!("{what}: {:?}", other.map(|s| s.secret_bytes().to_vec())),
            }
        }
    }
}
