//! Base64 (RFC 4648), here beside its first user, the injection screen (layer-0 modules
//! do not import one another): the encoder the upload bodies and the WebSocket handshake use, and
//! one decoder with an alphabet switch — the standard alphabet alone (what a protocol
//! sends: MCP images, WebSocket keys) or either alphabet (the injection screen, which
//! decodes whatever a page holds, URL-safe runs included).
//!
//! # Bounds
//! The output is at most 3/4 of the input (decoding) or 4/3 of it, padded (encoding);
//! the caller bounds the input.
//!
//! # Threads
//! Any thread; pure functions.

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Which symbols [`decode`] takes for 62 and 63.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alphabet {
    /// `+` and `/` only.
    Standard,
    /// `+` or `-`, `/` or `_` (standard and URL-safe, even mixed).
    Either,
}

/// Length of the base64 (padded) of `n` bytes.
pub fn encoded_len(n: u64) -> u64 {
    n.div_ceil(3) * 4
}

/// Append the base64 (standard alphabet, padded) of `input` to `out`; `input.len()` must
/// be a multiple of 3 except for the last piece.
pub fn encode_into(input: &[u8], out: &mut Vec<u8>) {
    for c in input.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        let sym = |i: u32| STANDARD[(n >> (18 - 6 * i) & 63) as usize];
        out.push(sym(0));
        out.push(sym(1));
        out.push(if c.len() > 1 { sym(2) } else { b'=' });
        out.push(if c.len() > 2 { sym(3) } else { b'=' });
    }
}

/// The bytes of a base64 text in `alphabet` (padding optional, ASCII whitespace between
/// symbols skipped); `None` when it is not base64 (another character, or one symbol
/// left over at the end).
pub fn decode(text: &str, alphabet: Alphabet) -> Option<Vec<u8>> {
    let data = text.trim_end_matches(|c: char| c == '=' || c.is_ascii_whitespace());
    let either = alphabet == Alphabet::Either;
    let mut out = Vec::with_capacity(data.len() / 4 * 3 + 2);
    let (mut acc, mut bits) = (0u32, 0u32);
    for b in data.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'-' if either => 62,
            b'_' if either => 63,
            b' ' | b'\t' | b'\r' | b'\n' => continue,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Symbols left over: 0, 2 or 4 bits; 6 (one symbol alone) cannot be.
    (bits < 6).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alphabet_switch_takes_url_safe_symbols_only_when_asked() {
        // 0xfb 0xff: `+/8` in the standard alphabet, `-_8` in the URL-safe one.
        let mut enc = Vec::new();
        encode_into(&[0xfb, 0xff], &mut enc);
        assert_eq!(enc, b"+/8=");
        for alphabet in [Alphabet::Standard, Alphabet::Either] {
            assert_eq!(decode("+/8=", alphabet), Some(vec![0xfb, 0xff]));
            assert_eq!(
                decode("Zm9vYmFy", alphabet).as_deref(),
                Some(&b"foobar"[..])
            );
            assert_eq!(decode("Zm9vY", alphabet), None);
        }
        assert_eq!(decode("-_8", Alphabet::Standard), None);
        assert_eq!(decode("-_8", Alphabet::Either), Some(vec![0xfb, 0xff]));
        assert_eq!(decode("+_8", Alphabet::Either), Some(vec![0xfb, 0xff]));
    }
}
