//! Deterministic test data shared by the index tests (no `rand`: seeds must reproduce).

use super::IndexDoc;

/// splitmix64: tiny, seedable, good enough for test data.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in `[-1, 1)`.
    pub(super) fn signed_unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    /// A random unit-length vector.
    pub(super) fn unit_vector(&mut self, dims: usize) -> Vec<f32> {
        let mut v: Vec<f32> = (0..dims).map(|_| self.signed_unit()).collect();
        normalize(&mut v);
        v
    }
}

/// Scales `v` to unit length.
pub(super) fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
}

/// A doc with no tags and no expiry; the value always contains the word "common".
pub(super) fn doc(id: u64, account: &str, namespace: &str, embedding: Vec<f32>) -> IndexDoc {
    IndexDoc {
        id,
        account: account.into(),
        namespace: namespace.into(),
        key: format!("key{id}"),
        value: format!("common memory number {id}"),
        tags: Vec::new(),
        expires_at: None,
        written_at: id,
        embedding,
    }
}
