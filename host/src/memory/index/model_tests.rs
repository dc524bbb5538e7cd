//! Property-style test: random op sequences against both indexes, checked after every batch
//! against a reference model, with checkpoints, "crashes" (reopen without checkpoint) and
//! oplog replay after the watermark, as the store does at start-up.

use std::collections::{BTreeMap, BTreeSet};

use super::test_support::{Rng, doc};
use super::{IndexOp, KeywordIndex, LATEST, SearchFilter, VectorIndex};

const DIMS: usize = 8;
const ACCOUNTS: [&str; 3] = ["a", "b", "c"];
const IDS: u64 = 40;

/// Which ids each account holds.
type Model = BTreeMap<&'static str, BTreeSet<u64>>;

struct Harness {
    keyword_dir: tempfile::TempDir,
    vector_dir: tempfile::TempDir,
    keyword: KeywordIndex,
    vector: VectorIndex,
    /// Every batch applied, by seq, like the store's oplog.
    oplog: Vec<(u64, Vec<IndexOp>)>,
}

impl Harness {
    fn new() -> Harness {
        let keyword_dir = tempfile::tempdir().unwrap();
        let vector_dir = tempfile::tempdir().unwrap();
        Harness {
            keyword: KeywordIndex::open(keyword_dir.path()).unwrap(),
            vector: VectorIndex::open(vector_dir.path(), DIMS).unwrap(),
            keyword_dir,
            vector_dir,
            oplog: Vec::new(),
        }
    }

    fn apply(&mut self, batch: Vec<IndexOp>) {
        let seq = self.oplog.len() as u64 + 1;
        self.keyword.apply(&batch, seq).unwrap();
        self.vector.apply(&batch, seq).unwrap();
        self.oplog.push((seq, batch));
    }

    /// Drops the vector index (losing everything after its last checkpoint), reopens it
    /// and replays the oplog tail.
    fn crash_vector(self) -> Harness {
        let Harness {
            keyword_dir,
            vector_dir,
            keyword,
            vector,
            oplog,
        } = self;
        drop(vector);
        let vector = VectorIndex::open(vector_dir.path(), DIMS).unwrap();
        replay(&oplog, vector.watermark(), |ops, seq| {
            vector.apply(ops, seq)
        });
        Harness {
            keyword_dir,
            vector_dir,
            keyword,
            vector,
            oplog,
        }
    }

    /// Drops the keyword index (losing the writes not yet committed), reopens it and
    /// replays the oplog after its watermark.
    fn crash_keyword(self) -> Harness {
        let Harness {
            keyword_dir,
            vector_dir,
            keyword,
            vector,
            oplog,
        } = self;
        drop(keyword);
        let keyword = KeywordIndex::open(keyword_dir.path()).unwrap();
        assert!(keyword.watermark() <= oplog.len() as u64);
        replay(&oplog, keyword.watermark(), |ops, seq| {
            keyword.apply(ops, seq)
        });
        Harness {
            keyword_dir,
            vector_dir,
            keyword,
            vector,
            oplog,
        }
    }

    fn check(&self, model: &Model, rng: &mut Rng) {
        for account in ACCOUNTS {
            let filter = SearchFilter {
                account,
                namespace: None,
                tags: &[],
                now_ms: 0,
                written_by: LATEST,
            };
            let want = model.get(account).cloned().unwrap_or_default();
            let keyword = self.keyword.search(&filter, "common", 1_000).unwrap();
            let keyword: BTreeSet<u64> = keyword.into_iter().map(|h| h.0).collect();
            assert_eq!(keyword, want, "keyword, account {account}");
            let probe = rng.unit_vector(DIMS);
            let vector = self.vector.search(&filter, &probe, 1_000).unwrap();
            let vector: BTreeSet<u64> = vector.into_iter().map(|h| h.0).collect();
            assert_eq!(vector, want, "vector, account {account}");
            for &id in &want {
                assert!(self.vector.vector(account, id).is_some());
            }
        }
    }
}

/// Applies every batch of `oplog` after `watermark`, as the store does at start-up.
fn replay(
    oplog: &[(u64, Vec<IndexOp>)],
    watermark: u64,
    mut apply: impl FnMut(&[IndexOp], u64) -> Result<(), super::IndexError>,
) {
    for (seq, batch) in oplog.iter().filter(|(seq, _)| *seq > watermark) {
        apply(batch, *seq).unwrap();
    }
}

fn account_of(id: u64) -> &'static str {
    ACCOUNTS[(id % ACCOUNTS.len() as u64) as usize]
}

fn run(seed: u64) {
    let mut rng = Rng::new(seed);
    let mut h = Harness::new();
    let mut model = Model::new();
    for _ in 0..60 {
        let batch: Vec<IndexOp> = (0..=rng.below(12))
            .map(|_| {
                let id = rng.below(IDS);
                let account = account_of(id);
                if rng.below(10) < 6 {
                    model.entry(account).or_default().insert(id);
                    IndexOp::Upsert(doc(id, account, "n", rng.unit_vector(DIMS)))
                } else {
                    model.entry(account).or_default().remove(&id);
                    IndexOp::Remove {
                        id,
                        account: account.into(),
                    }
                }
            })
            .collect();
        h.apply(batch);
        match rng.below(12) {
            0 | 1 => {
                h.vector.checkpoint().unwrap();
                h.keyword.checkpoint().unwrap();
                assert_eq!(h.keyword.watermark(), h.oplog.len() as u64);
            }
            2 => h = h.crash_vector(),
            3 => h = h.crash_keyword(),
            _ => {}
        }
        assert!(h.vector.watermark() <= h.oplog.len() as u64);
        h.check(&model, &mut rng);
    }
}

#[test]
fn random_op_sequences_match_the_model() {
    for seed in 0..3 {
        run(seed);
    }
}

#[test]
fn indexes_are_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<KeywordIndex>();
    assert_send_sync::<VectorIndex>();
}
