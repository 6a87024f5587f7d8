//! BLAKE2b-512 (RFC 7693), unkeyed, one shot: what minisign's default ("ED", prehashed)
//! signatures sign. ring has no BLAKE2; this is the RFC's reference algorithm in safe
//! code (docs/DECISIONS.md: "update: minisign verification").
//!
//! # Bounds
//! No allocation: 16 words of state and one 128-byte block at a time.
//!
//! # Threads
//! The caller's (the main thread of `yoctoclaw update`).

const IV: [u64; 8] = [
    0x6a09_e667_f3bc_c908,
    0xbb67_ae85_84ca_a73b,
    0x3c6e_f372_fe94_f82b,
    0xa54f_f53a_5f1d_36f1,
    0x510e_527f_ade6_82d1,
    0x9b05_688c_2b3e_6c1f,
    0x1f83_d9ab_fb41_bd6b,
    0x5be0_cd19_137e_2179,
];

const SIGMA: [[u8; 16]; 10] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
    [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
    [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
    [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
    [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
    [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
    [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
    [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
];

/// The words G mixes in each round: the four columns, then the four diagonals.
const LANES: [[usize; 4]; 8] = [
    [0, 4, 8, 12],
    [1, 5, 9, 13],
    [2, 6, 10, 14],
    [3, 7, 11, 15],
    [0, 5, 10, 15],
    [1, 6, 11, 12],
    [2, 7, 8, 13],
    [3, 4, 9, 14],
];

/// The mixing function G on four words of `v`.
fn g(v: &mut [u64; 16], [a, b, c, d]: [usize; 4], x: u64, y: u64) {
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(x);
    v[d] = (v[d] ^ v[a]).rotate_right(32);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(24);
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(y);
    v[d] = (v[d] ^ v[a]).rotate_right(16);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(63);
}

/// The compression function F: the 128 bytes of `block` after `t` bytes in all, `last`
/// for the final one. (The counter's high word stays 0: no slice holds 2^64 bytes.)
fn compress(h: &mut [u64; 8], block: &[u8], t: u64, last: bool) {
    let mut m = [0u64; 16];
    for (w, c) in m.iter_mut().zip(block.chunks_exact(8)) {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        *w = u64::from_le_bytes(b);
    }
    let mut v = [0u64; 16];
    v[..8].copy_from_slice(h);
    v[8..].copy_from_slice(&IV);
    v[12] ^= t;
    if last {
        v[14] = !v[14];
    }
    for i in 0..12 {
        let s = &SIGMA[i % 10];
        for (j, lane) in LANES.into_iter().enumerate() {
            g(
                &mut v,
                lane,
                m[usize::from(s[2 * j])],
                m[usize::from(s[2 * j + 1])],
            );
        }
    }
    for i in 0..8 {
        h[i] ^= v[i] ^ v[i + 8];
    }
}

/// BLAKE2b-512 of `data`.
pub fn blake2b_512(data: &[u8]) -> [u8; 64] {
    let mut h = IV;
    // Parameter block: digest length 64, no key, fanout 1, depth 1.
    h[0] ^= 0x0101_0040;
    let mut t = 0;
    // Every full block but the last one (an empty input is one empty final block).
    let mut rest = data;
    while rest.len() > 128 {
        let (block, r) = rest.split_at(128);
        t += 128;
        compress(&mut h, block, t, false);
        rest = r;
    }
    let mut last = [0u8; 128];
    last[..rest.len()].copy_from_slice(rest);
    compress(&mut h, &last, t + rest.len() as u64, true);
    let mut out = [0u8; 64];
    for (o, w) in out.chunks_exact_mut(8).zip(h) {
        o.copy_from_slice(&w.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn rfc_7693_appendix_a_abc() {
        assert_eq!(
            hex(&blake2b_512(b"abc")),
            "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1\
             7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"
        );
    }

    #[test]
    fn empty_and_block_boundaries_match_the_reference() {
        // Python's hashlib.blake2b (the reference implementation) on the same inputs.
        let cases: [(usize, &str); 5] = [
            (
                0,
                "786a02f742015903c6c6fd852552d272912f4740e15847618a86e217f71f5419d25e1031afee585313896444934eb04b903a685b1448b755d56f701afe9be2ce",
            ),
            (
                127,
                "b6292669ccd38d5f01caae96ba272c76a879a45743afa0725d83b9ebb26665b731f1848c52f11972b6644f554c064fa90780dbbbf3a89d4fc31f67df3e5857ef",
            ),
            (
                128,
                "2319e3789c47e2daa5fe807f61bec2a1a6537fa03f19ff32e87eecbfd64b7e0e8ccff439ac333b040f19b0c4ddd11a61e24ac1fe0f10a039806c5dcc0da3d115",
            ),
            (
                129,
                "f59711d44a031d5f97a9413c065d1e614c417ede998590325f49bad2fd444d3e4418be19aec4e11449ac1a57207898bc57d76a1bcf3566292c20c683a5c4648f",
            ),
            (
                1000,
                "c11e1c0340bd7e5a1b275f1230c962fad215ecb1391486e74e31b960a2f2996381a5fad092da06841d5f26e38f6ecfeaf441acbcd1c2de61aef121e7927175f5",
            ),
        ];
        for (n, want) in cases {
            let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
            assert_eq!(hex(&blake2b_512(&data)), want, "{n} bytes");
        }
    }
}
