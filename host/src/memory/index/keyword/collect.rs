//! Top-k collector that applies the search filter to each candidate *inside* tantivy's
//! scoring loop, so the text query stays a pure term union and keeps Block-WAND pruning.
//!
//! A rejected doc never enters the top-k heap and does not raise the pruning threshold, so
//! filtering here loses no results (unlike filtering a finished top-k list).

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashSet};
use std::sync::Arc;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::query::Weight;
use tantivy::{DocId, Score, SegmentOrdinal, SegmentReader};

use super::NEVER;

/// A search filter spelled as the values stored in the fast fields.
pub(super) struct Wanted {
    pub(super) account: String,
    /// Account-scoped, like the stored namespace.
    pub(super) namespace: Option<String>,
    /// Account-scoped, like the stored tags.
    pub(super) tags: Vec<String>,
    pub(super) now_ms: u64,
    pub(super) written_by: u64,
    /// Ids whose committed docs are stale: replaced or removed since the commit.
    pub(super) stale: Arc<HashSet<u64>>,
}

/// The `k` best-scoring docs passing `wanted`, as (id, score), best first.
pub(super) struct TopMatching<'a> {
    pub(super) k: usize,
    pub(super) wanted: &'a Wanted,
}

impl Collector for TopMatching<'_> {
    type Fruit = Vec<(u64, Score)>;
    type Child = SegmentTop;

    fn for_segment(
        &self,
        _: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<SegmentTop> {
        Ok(SegmentTop {
            admit: Admit::for_segment(reader, self.wanted)?,
            ids: reader.fast_fields().u64("id")?,
            stale: Arc::clone(&self.wanted.stale),
            k: self.k,
            heap: BinaryHeap::with_capacity(self.k + 1),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<Vec<(u64, Score)>>) -> tantivy::Result<Self::Fruit> {
        Ok(best(fruits.into_iter().flatten().collect(), self.k))
    }

    fn collect_segment(
        &self,
        weight: &dyn Weight,
        ord: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<Vec<(u64, Score)>> {
        let mut top = self.for_segment(ord, reader)?;
        if top.admit.is_none() {
            return Ok(Vec::new());
        }
        let alive = reader.alive_bitset();
        weight.for_each_pruning(Score::MIN, reader, &mut |doc, score| {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                top.collect(doc, score);
            }
            top.threshold()
        })?;
        Ok(top.harvest())
    }
}

/// The `k` best of `hits` (id, score), best first; equal scores by lower id.
pub(super) fn best(mut hits: Vec<(u64, Score)>, k: usize) -> Vec<(u64, Score)> {
    hits.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    hits.truncate(k);
    hits
}

/// The filter resolved against one segment's fast-field dictionaries.
struct Admit {
    account: (Column<u64>, u64),
    namespace: Option<(Column<u64>, u64)>,
    tags: Option<(Column<u64>, Vec<u64>)>,
    expires_at: Column<u64>,
    now_ms: u64,
    written_at: Column<u64>,
    written_by: u64,
}

impl Admit {
    /// `None` when no doc of the segment can pass (a filter string it has never seen).
    fn for_segment(reader: &SegmentReader, wanted: &Wanted) -> tantivy::Result<Option<Admit>> {
        let Some(account) = ords_of(reader, "account", &[&wanted.account])? else {
            return Ok(None);
        };
        let namespace = match &wanted.namespace {
            Some(ns) => match ords_of(reader, "namespace", &[ns])? {
                Some(found) => Some(found),
                None => return Ok(None),
            },
            None => None,
        };
        let tags = match wanted.tags.as_slice() {
            [] => None,
            tags => match ords_of(reader, "tags", tags)? {
                Some(found) => Some(found),
                None => return Ok(None),
            },
        };
        Ok(Some(Admit {
            account: (account.0, account.1[0]),
            namespace: namespace.map(|(column, ords)| (column, ords[0])),
            tags,
            expires_at: reader.fast_fields().u64("expires_at")?,
            now_ms: wanted.now_ms,
            written_at: reader.fast_fields().u64("written_at")?,
            written_by: wanted.written_by,
        }))
    }

    fn admits(&self, doc: DocId) -> bool {
        let has = |column: &Column<u64>, ord: u64| column.values_for_doc(doc).any(|o| o == ord);
        self.expires_at.first(doc).unwrap_or(NEVER) > self.now_ms
            && self.written_at.first(doc).unwrap_or(0) <= self.written_by
            && has(&self.account.0, self.account.1)
            && self.namespace.as_ref().is_none_or(|(c, ord)| has(c, *ord))
            && self
                .tags
                .as_ref()
                .is_none_or(|(c, ords)| ords.iter().all(|&ord| has(c, ord)))
    }
}

/// The ords column of a string fast field and the ords of `values` in this segment's
/// dictionary; `None` if the segment lacks the field or any of the values.
fn ords_of(
    reader: &SegmentReader,
    field: &str,
    values: &[impl AsRef<str>],
) -> tantivy::Result<Option<(Column<u64>, Vec<u64>)>> {
    let Some(column) = reader.fast_fields().str(field)? else {
        return Ok(None);
    };
    let (dictionary, ords) = column.into_parts();
    let mut found = Vec::with_capacity(values.len());
    for value in values {
        match dictionary.term_ord(value.as_ref())? {
            Some(ord) => found.push(ord),
            None => return Ok(None),
        }
    }
    Ok(Some((ords, found)))
}

/// A scored doc ordered by score, then lower doc id first (tantivy's tie-break).
#[derive(PartialEq)]
struct Hit {
    score: Score,
    doc: DocId,
}

impl Eq for Hit {}

impl Ord for Hit {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then(other.doc.cmp(&self.doc))
    }
}

impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Per-segment top-k: a min-heap whose root is the current pruning threshold.
pub(super) struct SegmentTop {
    admit: Option<Admit>,
    ids: Column<u64>,
    stale: Arc<HashSet<u64>>,
    k: usize,
    heap: BinaryHeap<Reverse<Hit>>,
}

impl SegmentTop {
    /// Score a doc must beat to matter; exact once the heap is full, so Block-WAND prunes well.
    fn threshold(&self) -> Score {
        match self.heap.peek() {
            Some(Reverse(worst)) if self.heap.len() >= self.k => worst.score,
            _ => Score::MIN,
        }
    }
}

impl SegmentCollector for SegmentTop {
    type Fruit = Vec<(u64, Score)>;

    fn collect(&mut self, doc: DocId, score: Score) {
        if !self.admit.as_ref().is_some_and(|a| a.admits(doc)) {
            return;
        }
        if !self.stale.is_empty()
            && self
                .ids
                .first(doc)
                .is_some_and(|id| self.stale.contains(&id))
        {
            return;
        }
        let hit = Hit { score, doc };
        if self.heap.len() < self.k {
            self.heap.push(Reverse(hit));
        } else if self.heap.peek().is_some_and(|Reverse(worst)| hit > *worst) {
            self.heap.pop();
            self.heap.push(Reverse(hit));
        }
    }

    fn harvest(self) -> Self::Fruit {
        let ids = self.ids;
        self.heap
            .into_iter()
            .filter_map(|Reverse(hit)| Some((ids.first(hit.doc)?, hit.score)))
            .collect()
    }
}
