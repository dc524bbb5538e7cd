//! Per-doc work of filtered vector searches: id hashing and f16 scoring.
//!
//! The HNSW predicate looks a doc up by id for every node the search touches, and the exact
//! scan decodes every candidate's stored vector, so both sit on the search hot path.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// Map keyed by doc id.
pub(super) type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;
/// Set of doc ids.
pub(super) type IdSet = HashSet<u64, BuildHasherDefault<IdHasher>>;

/// Multiplicative (Fibonacci) hash of a u64: ids are internal, sequential and not chosen
/// by users, so SipHash's flooding resistance buys nothing here.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Decodes an IEEE 754 half-precision value (Rust's `f16` is not stable yet). Branch-free
/// (one select) so that loops over it vectorize; usearch's own f16 to f32 cast is scalar and
/// several times slower.
pub(super) fn f16_to_f32(bits: i16) -> f32 {
    let bits = u32::from(bits.cast_unsigned());
    let sign = (bits & 0x8000) << 16;
    let magnitude = bits & 0x7fff;
    // As f32 bits the half's exponent is 112 too small (127 - 15 bias); scaling by 2^112
    // fixes it exactly, subnormal halves included.
    let finite = f32::from_bits(magnitude << 13) * f32::from_bits(0x7780_0000);
    let value = if magnitude >= 0x7c00 {
        f32::from_bits(0x7f80_0000 | magnitude << 13)
    } else {
        finite
    };
    f32::from_bits(value.to_bits() | sign)
}

/// (dot product, squared norm of the stored vector) for a query and a stored f16 vector.
/// Eight independent accumulators let the compiler use SIMD lanes.
pub(super) fn dot_and_norm2(query: &[f32], stored: &[i16]) -> (f32, f32) {
    let mut dot = [0.0f32; 8];
    let mut norm2 = [0.0f32; 8];
    let (queries, storeds) = (query.chunks_exact(8), stored.chunks_exact(8));
    let (query_rest, stored_rest) = (queries.remainder(), storeds.remainder());
    for (q, s) in queries.zip(storeds) {
        for i in 0..8 {
            let v = f16_to_f32(s[i]);
            dot[i] += q[i] * v;
            norm2[i] += v * v;
        }
    }
    let (mut dot, mut norm2) = (dot.iter().sum::<f32>(), norm2.iter().sum::<f32>());
    for (q, &s) in query_rest.iter().zip(stored_rest) {
        let v = f16_to_f32(s);
        dot += q * v;
        norm2 += v * v;
    }
    (dot, norm2)
}

#[cfg(test)]
mod tests {
    use super::{dot_and_norm2, f16_to_f32};

    #[test]
    fn decodes_half_precision() {
        let cases: [(u16, f32); 8] = [
            (0x0000, 0.0),
            (0x3c00, 1.0),
            (0xbc00, -1.0),
            (0x3555, 0.333_251_95),
            (0x0001, 5.960_464_5e-8),
            (0x7bff, 65504.0),
            (0x7c00, f32::INFINITY),
            (0x8000, -0.0),
        ];
        for (bits, want) in cases {
            let got = f16_to_f32(bits.cast_signed());
            assert_eq!(got.to_bits(), want.to_bits(), "{bits:#06x}");
        }
        assert!(f16_to_f32(0x7e00u16.cast_signed()).is_nan());
    }

    #[test]
    fn scores_match_a_plain_loop() {
        // 0x3c00 = 1.0, 0xc000 = -2.0; 19 dims exercise the 8-lane body and the remainder.
        let stored: Vec<i16> = (0..19)
            .map(|i| if i % 2 == 0 { 0x3c00u16 } else { 0xc000u16 }.cast_signed())
            .collect();
        let query: Vec<f32> = (0..19).map(|i| i as f32).collect();
        let decoded: Vec<f32> = stored.iter().map(|&b| f16_to_f32(b)).collect();
        let dot: f32 = query.iter().zip(&decoded).map(|(a, b)| a * b).sum();
        let norm2: f32 = decoded.iter().map(|v| v * v).sum();
        assert_eq!(dot_and_norm2(&query, &stored), (dot, norm2));
    }
}
