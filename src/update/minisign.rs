//! minisign signatures, verified: the format of `minisign -S` (and of `rsign`,
//! `signify`-style keys with minisign's framing), checked with ring's Ed25519.
//!
//! A public key is base64 of `"Ed"`, an 8-byte key id and the 32-byte Ed25519 key (the
//! second line of `minisign.pub`, or that line alone). A `.minisig` file is four lines:
//! `untrusted comment: ...`; base64 of the algorithm (`"Ed"`: the signature is over the
//! file itself, minisign's legacy mode, `-l`; `"ED"`: over the file's BLAKE2b-512, the
//! default since minisign 0.10), the key id and the 64-byte signature; `trusted comment:
//! ...`; base64 of the global signature, over the signature bytes followed by the trusted
//! comment's text. Both signatures must verify under the key whose id the signature names;
//! the trusted comment is then returned (minisign puts the file name and time there).
//!
//! # Bounds
//! A signature file is read by the caller up to `MAX_MINISIG_BYTES`; a prehashed check
//! holds no copy of the data.
//!
//! # Threads
//! The caller's (the main thread of `yoctoclaw update`).

use super::blake2b::blake2b_512;
use crate::provider::upload::base64_decode;
use ring::signature::{ED25519, UnparsedPublicKey};

/// Largest `.minisig` file read (minisign's are about 300 bytes; the trusted comment is
/// one line).
pub const MAX_MINISIG_BYTES: u64 = 4096;

/// An Ed25519 public key in minisign's framing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    pub id: [u8; 8],
    key: [u8; 32],
}

/// Why a signature does not verify, each a sentence for the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigError {
    /// The public key is not a minisign public key.
    BadKey,
    /// The signature file is not a minisign signature.
    Malformed,
    /// Signed by a key that is not trusted here.
    UnknownKey,
    /// The signature does not match the data (tampered or truncated).
    Mismatch,
    /// The trusted comment's global signature does not match.
    BadComment,
}

impl std::fmt::Display for SigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SigError::BadKey => {
                "update.public_key is not a minisign public key (the base64 line of minisign.pub)"
            }
            SigError::Malformed => "the signature file is not a minisign signature",
            SigError::UnknownKey => {
                "the archive is signed by a key this binary does not trust (set update.public_key for self-built releases)"
            }
            SigError::Mismatch => {
                "the archive does not match its signature: it is damaged or was changed"
            }
            SigError::BadComment => {
                "the signature's trusted comment does not match its signature: it was changed"
            }
        })
    }
}

impl std::error::Error for SigError {}

impl PublicKey {
    /// A key from its base64 line, or from a whole `minisign.pub` (comment lines skipped).
    pub fn parse(text: &str) -> Result<PublicKey, SigError> {
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("untrusted comment:"))
            .ok_or(SigError::BadKey)?;
        let b = base64_decode(line).ok_or(SigError::BadKey)?;
        if b.len() != 42 || &b[..2] != b"Ed" {
            return Err(SigError::BadKey);
        }
        let mut k = PublicKey {
            id: [0; 8],
            key: [0; 32],
        };
        k.id.copy_from_slice(&b[2..10]);
        k.key.copy_from_slice(&b[10..]);
        Ok(k)
    }

    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        UnparsedPublicKey::new(&ED25519, &self.key)
            .verify(msg, sig)
            .is_ok()
    }
}

/// Check `sig_file` (a `.minisig` file) over `data` against the trusted `keys`; the
/// trusted comment when both signatures verify.
pub fn verify(keys: &[PublicKey], data: &[u8], sig_file: &[u8]) -> Result<String, SigError> {
    let sig_text = std::str::from_utf8(sig_file).map_err(|_| SigError::Malformed)?;
    let mut lines = sig_text.lines();
    let mut next = || lines.next().map(|l| l.trim_end_matches('\r'));
    let (Some(untrusted), Some(sig_line), Some(trusted), Some(global_line)) =
        (next(), next(), next(), next())
    else {
        return Err(SigError::Malformed);
    };
    let comment = trusted
        .strip_prefix("trusted comment: ")
        .ok_or(SigError::Malformed)?;
    if !untrusted.starts_with("untrusted comment:") {
        return Err(SigError::Malformed);
    }
    let sig = base64_decode(sig_line).ok_or(SigError::Malformed)?;
    let global = base64_decode(global_line).ok_or(SigError::Malformed)?;
    if sig.len() != 74 || global.len() != 64 {
        return Err(SigError::Malformed);
    }
    let prehashed = match &sig[..2] {
        b"ED" => true,
        b"Ed" => false,
        _ => return Err(SigError::Malformed),
    };
    let key = keys
        .iter()
        .find(|k| k.id[..] == sig[2..10])
        .ok_or(SigError::UnknownKey)?;
    let signature = &sig[10..];
    let ok = if prehashed {
        key.verify(&blake2b_512(data), signature)
    } else {
        key.verify(data, signature)
    };
    if !ok {
        return Err(SigError::Mismatch);
    }
    let mut signed = Vec::with_capacity(64 + comment.len());
    signed.extend_from_slice(signature);
    signed.extend_from_slice(comment.as_bytes());
    if !key.verify(&signed, &global) {
        return Err(SigError::BadComment);
    }
    Ok(comment.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Made with minisign 0.11: `minisign -G -W` (no password), then `minisign -S` (ED)
    // and `minisign -S -l` (Ed) of the 12 bytes "hello world\n".
    const PUB: &str = "RWRnkSY5EgkJdYK5hw+KeP5vzTZl/C0j/ZF9lpYV9eOs7vOEcSoyW0Uy";
    const DATA: &[u8] = b"hello world\n";
    const SIG_ED: &str = "untrusted comment: signature from minisign secret key\nRURnkSY5EgkJdZB/7g2kYBNTkbLW6mrkp6fKfHBe7KlTJ8AnC3NWyMfOjEq7L3u/HCiZQ8cHiSzjiqTFpPW5yUzLt0YZSJqxzwg=\ntrusted comment: timestamp:1795886797\tfile:d\thashed\nAKJ/vyu2wJDktpoARyUuvuU7UBKlfYV6+mVcjFAV3drdstfB0na/+w7ly/GlymS9qEKIqPbL03HOBT3+p+d9BA==\n";
    const SIG_LEGACY: &str = "untrusted comment: signature from minisign secret key\nRWRnkSY5EgkJddK+vPFcMde4Xd3+1oq1OIfb4nzAcbHu/5b8lY+7a0iI021JN7SwsVmRp4p0AKoEKD7kF1tvVsAZ7K5p12xGwwQ=\ntrusted comment: timestamp:1795886797\tfile:d\ncSTYjf8Jmbe8PaXHjTH0vxxvt46zmSCb0UPUUZL+aZXkfWIztn9qslxYPjnQbXRQwvEfxNlm/xZmg9q0hBnFCw==\n";
    const OTHER_PUB: &str = "RWQfHsHVhipVdgHwq2FIfbB/25fTopfzssxEMtr+tB/HNx4/BBjZ9hZu";

    fn key() -> Vec<PublicKey> {
        vec![PublicKey::parse(PUB).unwrap()]
    }

    #[test]
    fn both_kinds_of_minisign_signature_verify() {
        for sig in [SIG_ED, SIG_LEGACY] {
            let c = verify(&key(), DATA, sig.as_bytes()).unwrap();
            assert!(c.starts_with("timestamp:"), "{c}");
        }
    }

    #[test]
    fn tampered_data_comments_and_signatures_are_refused() {
        for sig in [SIG_ED, SIG_LEGACY] {
            assert_eq!(
                verify(&key(), b"hello world!", sig.as_bytes()),
                Err(SigError::Mismatch)
            );
            assert_eq!(
                verify(&key(), &DATA[..5], sig.as_bytes()),
                Err(SigError::Mismatch)
            );
            let changed = sig.replace("trusted comment: timestamp", "trusted comment: timestamq");
            assert_eq!(
                verify(&key(), DATA, changed.as_bytes()),
                Err(SigError::BadComment)
            );
            let cut: String = sig.lines().take(3).collect::<Vec<_>>().join("\n");
            assert_eq!(
                verify(&key(), DATA, cut.as_bytes()),
                Err(SigError::Malformed)
            );
            // One bit of the signature line flipped.
            let mut lines: Vec<String> = sig.lines().map(String::from).collect();
            let mut b = base64_decode(&lines[1]).unwrap();
            b[40] ^= 1;
            let mut enc = Vec::new();
            crate::provider::upload::base64_into(&b, &mut enc);
            lines[1] = String::from_utf8(enc).unwrap();
            assert_eq!(
                verify(&key(), DATA, lines.join("\n").as_bytes()),
                Err(SigError::Mismatch)
            );
        }
        assert_eq!(verify(&key(), DATA, b"garbage"), Err(SigError::Malformed));
        assert_eq!(verify(&key(), DATA, b""), Err(SigError::Malformed));
    }

    #[test]
    fn another_key_is_refused_and_keys_are_parsed_strictly() {
        let other = vec![PublicKey::parse(OTHER_PUB).unwrap()];
        assert_eq!(
            verify(&other, DATA, SIG_ED.as_bytes()),
            Err(SigError::UnknownKey)
        );
        assert_eq!(
            verify(&[], DATA, SIG_ED.as_bytes()),
            Err(SigError::UnknownKey)
        );
        assert_eq!(PublicKey::parse("not base64!"), Err(SigError::BadKey));
        assert_eq!(PublicKey::parse("RWQ="), Err(SigError::BadKey));
        assert_eq!(PublicKey::parse(""), Err(SigError::BadKey));
        let file = format!("untrusted comment: minisign public key\n{PUB}\n");
        assert_eq!(PublicKey::parse(&file), PublicKey::parse(PUB));
    }
}
