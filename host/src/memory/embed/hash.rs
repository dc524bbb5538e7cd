//! A lexical feature-hashing embedder: instant and deterministic, for tests. Not semantic.

use super::{EmbedError, Embedder, Role, l2_normalize};

/// Weight of a whole lowercased word.
const WORD_WEIGHT: f32 = 1.0;
/// Weight of each character trigram of a word, so "cat" and "cats" still overlap.
const TRIGRAM_WEIGHT: f32 = 0.5;

/// Hashes lowercased words and their character trigrams into signed buckets.
///
/// Identical texts give identical vectors on every run and machine (FNV-1a, not std's
/// randomized hasher); texts sharing words get a positive cosine. It knows nothing of
/// meaning: "feline" and "cat" are unrelated to it. Use it where speed matters more
/// than quality, e.g. unit tests (~1 µs per sentence).
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dims: usize,
}

impl HashEmbedder {
    /// An embedder producing `dims`-long vectors (at least 1).
    pub fn new(dims: usize) -> Self {
        Self { dims: dims.max(1) }
    }

    /// Embeds one text; a text with no word characters is hashed whole, so it too gets a unit vector.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0; self.dims];
        let mut word = String::new();
        let mut bounds = Vec::new();
        let mut any = false;
        for token in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|t| !t.is_empty())
        {
            any = true;
            word.clear();
            word.push('#');
            word.extend(token.chars().flat_map(char::to_lowercase));
            word.push('#');
            self.add(&mut v, fnv1a(b'w', word.as_bytes()), WORD_WEIGHT);
            bounds.clear();
            bounds.extend(word.char_indices().map(|(i, _)| i));
            bounds.push(word.len());
            for w in bounds.windows(4) {
                self.add(
                    &mut v,
                    fnv1a(b't', &word.as_bytes()[w[0]..w[3]]),
                    TRIGRAM_WEIGHT,
                );
            }
        }
        if !any {
            self.add(&mut v, fnv1a(b'x', text.as_bytes()), WORD_WEIGHT);
        }
        l2_normalize(&mut v);
        v
    }

    /// Adds `weight` to the feature's bucket, signed by a hash bit so collisions cancel on average.
    fn add(&self, v: &mut [f32], hash: u64, weight: f32) {
        // The modulus is below `dims`, so it fits in usize.
        let bucket = usize::try_from(hash % self.dims as u64).unwrap_or_default();
        v[bucket] += if hash >> 63 == 0 { weight } else { -weight };
    }
}

impl Embedder for HashEmbedder {
    fn name(&self) -> &str {
        "lexical-hash"
    }

    fn dims(&self) -> usize {
        self.dims
    }

    /// Symmetric: a query and a stored text embed alike.
    fn embed(&self, _role: Role, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

/// 64-bit FNV-1a over a kind byte (keeping words and trigrams apart) and `bytes`.
fn fnv1a(kind: u8, bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;
    std::iter::once(&kind)
        .chain(bytes)
        .fold(OFFSET, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn vectors_have_unit_length_and_dims() {
        let e = HashEmbedder::new(384);
        let texts = ["The cat sat on the mat", "", "!!!", "Ünïcödé wörds ok"];
        for v in e.embed(Role::Passage, &texts).unwrap() {
            assert_eq!(v.len(), 384);
            assert!((dot(&v, &v) - 1.0).abs() < 1e-5);
        }
    }

    #[test]
    fn identical_texts_give_identical_vectors() {
        let e = HashEmbedder::new(384);
        assert_eq!(e.embed_one("Deploy at noon"), e.embed_one("Deploy at noon"));
        assert_eq!(
            e.embed_one("Deploy at noon"),
            e.embed_one("deploy, AT noon!")
        );
        // Stable across runs and platforms: the published FNV-1a value of "a".
        assert_eq!(fnv1a(b'a', b""), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn shared_words_score_higher_than_unrelated() {
        let e = HashEmbedder::new(384);
        let a = e.embed_one("the deploy key rotates every month");
        let b = e.embed_one("rotate the deploy key monthly");
        let c = e.embed_one("quarterly revenue grew by eight percent");
        let related = dot(&a, &b);
        assert!(related > 0.2, "related cosine {related}");
        assert!(related > dot(&a, &c) + 0.2, "{related} vs {}", dot(&a, &c));
    }
}
