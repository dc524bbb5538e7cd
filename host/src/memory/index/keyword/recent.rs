//! Writes since the last tantivy commit, searchable from memory.
//!
//! A tantivy commit costs ~5 ms of CPU whatever it holds (a new segment writer, its term
//! table, an FST per field, a dozen files created and soon merged away), which was most of
//! a put. So writes are staged in tantivy's writer and committed every
//! [`COMMIT_INTERVAL`](super::COMMIT_INTERVAL) or [`MAX_RECENT`](super::MAX_RECENT) docs,
//! and meanwhile [`Recent`] answers for them: a search scores the account's recent docs
//! here, hides the committed versions of the ids they replace or remove, and merges both.
//!
//! Scores are the ones the docs will have once committed: the account's statistics count
//! recent docs as tantivy will (every added doc counts, even one replaced before the
//! commit, until a merge drops it — tantivy's rule for deleted docs), lengths are quantized
//! to tantivy's fieldnorms, and each term's weight is tantivy's own [`Bm25Weight`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight};
use tantivy::tokenizer::Token;
use tantivy::{Score, Term};

use super::NEVER;
use super::stats::Totals;
use crate::memory::index::{IndexDoc, SearchFilter};

/// One analyzed field of a recent doc: its distinct terms with their frequencies.
struct Terms {
    freqs: HashMap<String, u32>,
    /// tantivy's fieldnorm id of the field's token count.
    norm_id: u8,
}

impl Terms {
    fn new(tokens: &[Token]) -> Self {
        let mut freqs = HashMap::with_capacity(tokens.len());
        for token in tokens {
            *freqs.entry(token.text.clone()).or_insert(0) += 1;
        }
        let count = u32::try_from(tokens.len()).unwrap_or(u32::MAX);
        Self {
            freqs,
            norm_id: FieldNormReader::fieldnorm_to_id(count),
        }
    }

    /// The token count as tantivy stores it (quantized), which is what its totals sum.
    fn norm(&self) -> u64 {
        u64::from(FieldNormReader::id_to_fieldnorm(self.norm_id))
    }
}

/// A live recent doc: what a search filters on, its analyzed text, and the doc itself so a
/// failed commit can stage it again.
struct RecentDoc {
    doc: IndexDoc,
    key: Terms,
    value: Terms,
}

impl RecentDoc {
    fn admitted(&self, filter: &SearchFilter<'_>) -> bool {
        self.doc.expires_at.unwrap_or(NEVER) > filter.now_ms
            && self.doc.written_at <= filter.written_by
            && filter.namespace.is_none_or(|ns| self.doc.namespace == ns)
            && filter.tags.iter().all(|t| self.doc.tags.contains(t))
    }
}

/// One account's writes since the commit.
#[derive(Default)]
struct AccountRecent {
    live: HashMap<u64, RecentDoc>,
    /// Ids upserted or removed since the commit: their committed versions are stale.
    /// Shared with the searches under way (copied only when a write meets one).
    touched: Arc<HashSet<u64>>,
    /// Every doc added since the commit, as tantivy will count it.
    totals: Totals,
    key_freq: HashMap<String, u64>,
    value_freq: HashMap<String, u64>,
}

/// Every account's writes since the last tantivy commit.
#[derive(Default)]
pub(super) struct Recent {
    accounts: HashMap<String, AccountRecent>,
    /// Docs added since the commit (replaced ones included).
    added: usize,
}

impl Recent {
    /// Records `doc` (analyzed into `key` and `value` tokens), replacing any doc with its id.
    pub(super) fn upsert(&mut self, doc: &IndexDoc, key: &[Token], value: &[Token]) {
        let account = self.accounts.entry(doc.account.clone()).or_default();
        let recent = RecentDoc {
            doc: IndexDoc {
                embedding: Vec::new(),
                ..doc.clone()
            },
            key: Terms::new(key),
            value: Terms::new(value),
        };
        account.totals.add(&Totals {
            docs: 1,
            key_tokens: recent.key.norm(),
            value_tokens: recent.value.norm(),
        });
        for (field, freq) in [
            (&recent.key, &mut account.key_freq),
            (&recent.value, &mut account.value_freq),
        ] {
            for term in field.freqs.keys() {
                *freq.entry(term.clone()).or_insert(0) += 1;
            }
        }
        Arc::make_mut(&mut account.touched).insert(doc.id);
        account.live.insert(doc.id, recent);
        self.added += 1;
    }

    /// Records that `id` of `account` is gone.
    pub(super) fn remove(&mut self, id: u64, account: &str) {
        let account = self.accounts.entry(account.to_owned()).or_default();
        account.live.remove(&id);
        Arc::make_mut(&mut account.touched).insert(id);
    }

    /// Docs added since the commit.
    pub(super) fn added(&self) -> usize {
        self.added
    }

    /// Ids touched since the commit and the live docs among them, for staging again.
    pub(super) fn pending(&self) -> impl Iterator<Item = (u64, Option<&IndexDoc>)> {
        self.accounts.values().flat_map(|account| {
            account
                .touched
                .iter()
                .map(|id| (*id, account.live.get(id).map(|r| &r.doc)))
        })
    }

    /// What a search under `filter` for `terms` (analyzed, unscoped) needs from here.
    pub(super) fn snapshot(&self, filter: &SearchFilter<'_>, terms: &[String]) -> Seen {
        let Some(account) = self.accounts.get(filter.account) else {
            return Seen::default();
        };
        let freqs = |map: &HashMap<String, u64>| -> Vec<u64> {
            terms
                .iter()
                .map(|t| map.get(t).copied().unwrap_or(0))
                .collect()
        };
        let candidates = account
            .live
            .iter()
            .filter(|(_, r)| r.admitted(filter))
            .filter_map(|(id, r)| {
                let matches: Vec<Match> = terms
                    .iter()
                    .enumerate()
                    .flat_map(|(i, t)| {
                        [(true, &r.key), (false, &r.value)].into_iter().filter_map(
                            move |(in_key, field)| {
                                let tf = *field.freqs.get(t)?;
                                Some(Match {
                                    term: i,
                                    in_key,
                                    tf,
                                    norm_id: field.norm_id,
                                })
                            },
                        )
                    })
                    .collect();
                (!matches.is_empty()).then_some((*id, matches))
            })
            .collect();
        Seen {
            totals: account.totals,
            key_freq: freqs(&account.key_freq),
            value_freq: freqs(&account.value_freq),
            touched: Arc::clone(&account.touched),
            candidates,
        }
    }
}

/// One query term found in one field of a recent doc.
struct Match {
    /// Index into the query's terms.
    term: usize,
    in_key: bool,
    tf: u32,
    norm_id: u8,
}

/// An account's recent writes as one search sees them, copied out so the search runs
/// without holding the lock writers take.
#[derive(Default)]
pub(super) struct Seen {
    /// Added to the committed statistics.
    pub(super) totals: Totals,
    /// Recent document frequency of each query term, in the key and value fields.
    key_freq: Vec<u64>,
    value_freq: Vec<u64>,
    /// Ids whose committed versions the search must skip.
    pub(super) touched: Arc<HashSet<u64>>,
    candidates: Vec<(u64, Vec<Match>)>,
}

impl Seen {
    /// The recent document frequency of each query term, by its tantivy term
    /// (`key_terms[i]`/`value_terms[i]` for query term `i`).
    pub(super) fn freqs(&self, key_terms: &[Term], value_terms: &[Term]) -> HashMap<Term, u64> {
        let key = key_terms.iter().zip(&self.key_freq);
        let value = value_terms.iter().zip(&self.value_freq);
        key.chain(value)
            .filter(|(_, n)| **n > 0)
            .map(|(t, n)| (t.clone(), *n))
            .collect()
    }

    /// BM25 of every recent doc matching a term, against `stats` (the account's committed
    /// statistics plus these), with `key_terms[i]`/`value_terms[i]` the tantivy terms of
    /// query term `i`.
    pub(super) fn score(
        &self,
        stats: &dyn Bm25StatisticsProvider,
        key_terms: &[Term],
        value_terms: &[Term],
    ) -> tantivy::Result<Vec<(u64, Score)>> {
        if self.candidates.is_empty() {
            return Ok(Vec::new());
        }
        let weights = |terms: &[Term]| -> tantivy::Result<Vec<Bm25Weight>> {
            terms
                .iter()
                .map(|t| Bm25Weight::for_terms(stats, std::slice::from_ref(t)))
                .collect()
        };
        let (key, value) = (weights(key_terms)?, weights(value_terms)?);
        Ok(self
            .candidates
            .iter()
            .map(|(id, matches)| {
                let score = matches
                    .iter()
                    .map(|m| {
                        let weight = if m.in_key { &key } else { &value };
                        weight[m.term].score(m.norm_id, m.tf)
                    })
                    .sum();
                (*id, score)
            })
            .collect())
    }
}
