//! BM25 statistics per account, so one tenant's writes never move another's keyword scores.
//!
//! tantivy's BM25 takes the document count and the average field length from the whole
//! index. Text terms here are already account-scoped, so document frequencies are per
//! account, but the count and the length were not: account B adding memories changed
//! account A's IDF and length normalisation, and so leaked through A's scores what B
//! stores. [`AccountStats`] computes both per account instead and hands them to tantivy as
//! a [`Bm25StatisticsProvider`]; the scorer itself (Block-WAND and all) is tantivy's.
//!
//! Per segment (immutable once written) the totals of every account are counted once from
//! the `account` fast field and the fieldnorms, and cached by segment id; a search sums
//! its account's entry over the searcher's segments (a few hash lookups). Like tantivy's
//! own statistics, counts include deleted docs until a merge drops them — the same rule
//! tantivy applies to document frequencies, so numerator and denominator stay consistent.
//! Chosen over an index per account (open files, writers and merges multiply with the
//! tenants) and per-account segments (tantivy's merge policy mixes segments freely): this
//! keeps one index and costs one pass over a segment's fast field when it first appears.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tantivy::index::SegmentId;
use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::Field;
use tantivy::{Searcher, SegmentReader, Term};

/// One account's share of a segment (or of a whole searcher, or of recent writes).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct Totals {
    pub(super) docs: u64,
    pub(super) key_tokens: u64,
    pub(super) value_tokens: u64,
}

impl Totals {
    pub(super) fn add(&mut self, other: &Totals) {
        self.docs += other.docs;
        self.key_tokens += other.key_tokens;
        self.value_tokens += other.value_tokens;
    }
}

/// Cache of per-segment, per-account totals.
pub(super) struct AccountStats {
    key: Field,
    value: Field,
    segments: Mutex<HashMap<SegmentId, Arc<HashMap<String, Totals>>>>,
}

impl AccountStats {
    pub(super) fn new(key: Field, value: Field) -> Self {
        Self {
            key,
            value,
            segments: Mutex::new(HashMap::new()),
        }
    }

    /// The statistics `account` sees in `searcher`'s snapshot plus its writes since
    /// (`recent` totals and `recent_freq` document frequencies, see `recent`).
    pub(super) fn scoped<'a>(
        &self,
        searcher: &'a Searcher,
        account: &str,
        recent: Totals,
        recent_freq: HashMap<Term, u64>,
    ) -> tantivy::Result<Scoped<'a>> {
        let mut totals = recent;
        let mut segments = self.segments.lock();
        for reader in searcher.segment_readers() {
            let id = reader.segment_id();
            let counted = match segments.get(&id) {
                Some(counted) => Arc::clone(counted),
                None => {
                    let counted = Arc::new(self.count(reader)?);
                    segments.insert(id, Arc::clone(&counted));
                    counted
                }
            };
            if let Some(t) = counted.get(account) {
                totals.add(t);
            }
        }
        Ok(Scoped {
            searcher,
            totals,
            recent_freq,
            key: self.key,
            value: self.value,
        })
    }

    /// Forgets segments that `searcher` (the newest snapshot) no longer holds.
    pub(super) fn retain(&self, searcher: &Searcher) {
        let live: Vec<SegmentId> = searcher
            .segment_readers()
            .iter()
            .map(SegmentReader::segment_id)
            .collect();
        self.segments.lock().retain(|id, _| live.contains(id));
    }

    /// Every account's totals in one segment, in one pass over its docs.
    fn count(&self, reader: &SegmentReader) -> tantivy::Result<HashMap<String, Totals>> {
        let Some(accounts) = reader.fast_fields().str("account")? else {
            return Ok(HashMap::new());
        };
        let keys = reader.get_fieldnorms_reader(self.key)?;
        let values = reader.get_fieldnorms_reader(self.value)?;
        let mut by_ord = vec![Totals::default(); accounts.num_terms()];
        for doc in 0..reader.max_doc() {
            for ord in accounts.term_ords(doc) {
                let t = &mut by_ord[ord as usize];
                t.docs += 1;
                t.key_tokens += u64::from(keys.fieldnorm(doc));
                t.value_tokens += u64::from(values.fieldnorm(doc));
            }
        }
        let mut named = HashMap::with_capacity(by_ord.len());
        let mut name = String::new();
        for (ord, totals) in by_ord.into_iter().enumerate() {
            if totals.docs > 0 && accounts.ord_to_str(ord as u64, &mut name)? {
                named.insert(name.clone(), totals);
            }
        }
        Ok(named)
    }
}

/// BM25 statistics of one account. Terms are account-scoped, so document frequencies come
/// from the index as they are (plus recent writes'); counts never drop to 0, so an average
/// is always defined.
pub(super) struct Scoped<'a> {
    searcher: &'a Searcher,
    totals: Totals,
    recent_freq: HashMap<Term, u64>,
    key: Field,
    value: Field,
}

impl Bm25StatisticsProvider for Scoped<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        Ok(match field {
            f if f == self.key => self.totals.key_tokens.max(1),
            f if f == self.value => self.totals.value_tokens.max(1),
            other => self.searcher.total_num_tokens(other)?,
        })
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.totals.docs.max(1))
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let recent = self.recent_freq.get(term).copied().unwrap_or(0);
        Ok(self.searcher.doc_freq(term)? + recent)
    }
}
