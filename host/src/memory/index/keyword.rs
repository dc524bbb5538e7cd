//! BM25 keyword search over memory keys and values, backed by a tantivy index on disk.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use tantivy::collector::TopDocs;
use tantivy::columnar::Column;
use tantivy::directory::MmapDirectory;
use tantivy::query::{BooleanQuery, ConstScoreQuery, Occur, Query, RangeQuery, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
    TokenStream,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use super::{IndexDoc, IndexError, IndexOp, SearchFilter};

/// Name the English analyzer is registered under; baked into the schema of `key`/`value`.
const ANALYZER: &str = "memory_en";
/// Indexing memory budget: enough for large rebuild batches, small next to the process.
const WRITER_BUDGET_BYTES: usize = 50_000_000;
/// Caps the clauses built from one query so a pasted essay cannot make a search slow.
const MAX_QUERY_TERMS: usize = 64;
/// Stored for docs that never expire, so the expiry filter is one range query for all docs.
const NEVER: u64 = u64::MAX;

/// The schema's fields, resolved once at open.
struct Fields {
    id: Field,
    account: Field,
    namespace: Field,
    tags: Field,
    key: Field,
    value: Field,
    expires_at: Field,
}

impl Fields {
    fn schema() -> (Schema, Fields) {
        let text = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqs),
        );
        let mut b = Schema::builder();
        let fields = Fields {
            id: b.add_u64_field("id", INDEXED | FAST | STORED),
            account: b.add_text_field("account", STRING),
            namespace: b.add_text_field("namespace", STRING),
            tags: b.add_text_field("tags", STRING),
            key: b.add_text_field("key", text.clone()),
            value: b.add_text_field("value", text),
            expires_at: b.add_u64_field("expires_at", INDEXED | FAST),
        };
        (b.build(), fields)
    }

    fn document(&self, doc: &IndexDoc) -> TantivyDocument {
        let mut d = TantivyDocument::default();
        d.add_u64(self.id, doc.id);
        d.add_text(self.account, &doc.account);
        d.add_text(self.namespace, &doc.namespace);
        for tag in &doc.tags {
            d.add_text(self.tags, tag);
        }
        d.add_text(self.key, &doc.key);
        d.add_text(self.value, &doc.value);
        d.add_u64(self.expires_at, doc.expires_at.unwrap_or(NEVER));
        d
    }
}

/// English analysis shared by indexing and querying, so "running" finds "runs".
fn english_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(
            StopWordFilter::new(Language::English)
                .expect("tantivy's `stopwords` feature ships an English list"),
        )
        .filter(Stemmer::new(Language::English))
        .build()
}

/// Exact-match filter clause; `search` wraps all filters so they add nothing to the score.
fn exact(field: Field, text: &str) -> (Occur, Box<dyn Query>) {
    let term = Term::from_field_text(field, text);
    (
        Occur::Must,
        Box::new(TermQuery::new(term, IndexRecordOption::Basic)),
    )
}

/// Full-text BM25 index of live memories (key + value), filtered by account inside the query.
///
/// One writer (the store's index thread) and many concurrent searchers: searches read an
/// immutable searcher snapshot and never wait for a commit in progress.
pub struct KeywordIndex {
    fields: Fields,
    analyzer: TextAnalyzer,
    reader: IndexReader,
    /// tantivy allows one writer per index; the mutex serializes `apply`/`clear`.
    writer: Mutex<IndexWriter>,
    /// Mirror of the last committed payload, so `watermark` needs no disk read.
    watermark: AtomicU64,
}

impl KeywordIndex {
    /// Opens or creates the index in `dir`.
    ///
    /// The watermark is read from the last commit's payload, so the caller replays only the
    /// oplog after it. Fails if `dir` holds an index with a different schema (delete the
    /// directory and rebuild from the store).
    pub fn open(dir: &Path) -> Result<Self, IndexError> {
        std::fs::create_dir_all(dir)?;
        let (schema, fields) = Fields::schema();
        let directory = MmapDirectory::open(dir).map_err(tantivy::TantivyError::from)?;
        let index = Index::open_or_create(directory, schema)?;
        let analyzer = english_analyzer();
        index.tokenizers().register(ANALYZER, analyzer.clone());
        let watermark = match index.load_metas()?.payload {
            None => 0,
            Some(p) => p.parse().unwrap_or_else(|_| {
                tracing::warn!(payload = %p, "unreadable keyword index watermark; replaying everything");
                0
            }),
        };
        let writer = index.writer_with_num_threads(1, WRITER_BUDGET_BYTES)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        Ok(KeywordIndex {
            fields,
            analyzer,
            reader,
            writer: Mutex::new(writer),
            watermark: AtomicU64::new(watermark),
        })
    }

    /// Highest oplog seq durably in the index (0 when new), stored in tantivy's commit payload.
    pub fn watermark(&self) -> u64 {
        self.watermark.load(Ordering::Acquire)
    }

    /// Applies ops, commits with `seq` as the new watermark, and reloads the reader so the next
    /// search sees them (read-your-writes). Upsert replaces any doc with the same id.
    ///
    /// The watermark never moves backwards: `max(seq, watermark())` is recorded. On error
    /// nothing of this batch is committed and the watermark is unchanged.
    pub fn apply(&self, ops: &[IndexOp], seq: u64) -> Result<(), IndexError> {
        let mut writer = self.writer.lock();
        let seq = seq.max(self.watermark());
        let result = self.stage(&writer, ops).and_then(|()| {
            let mut commit = writer.prepare_commit()?;
            commit.set_payload(&seq.to_string());
            commit.commit()?;
            Ok(())
        });
        if let Err(e) = result {
            if let Err(rollback) = writer.rollback() {
                tracing::error!(error = %rollback, "keyword index rollback failed");
            }
            return Err(e.into());
        }
        self.watermark.store(seq, Ordering::Release);
        drop(writer);
        self.reader.reload()?;
        Ok(())
    }

    fn stage(&self, writer: &IndexWriter, ops: &[IndexOp]) -> tantivy::Result<()> {
        for op in ops {
            match op {
                IndexOp::Upsert(doc) => {
                    writer.delete_term(Term::from_field_u64(self.fields.id, doc.id));
                    writer.add_document(self.fields.document(doc))?;
                }
                IndexOp::Remove { id, .. } => {
                    writer.delete_term(Term::from_field_u64(self.fields.id, *id));
                }
            }
        }
        Ok(())
    }

    /// Top `k` (id, bm25 score) for a natural-language query, best first.
    ///
    /// The query is never parsed as syntax: it is run through the same English analyzer as
    /// the documents and each resulting term becomes an optional clause over `key` and
    /// `value` (OR semantics; a doc must match at least one). A query with no indexable terms
    /// (empty, only stop words or punctuation) matches nothing.
    pub fn search(
        &self,
        filter: &SearchFilter,
        query: &str,
        k: usize,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        let terms = self.query_terms(query);
        if k == 0 || terms.is_empty() {
            return Ok(Vec::new());
        }
        let f = &self.fields;
        let text: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .flat_map(|t| [f.key, f.value].map(|field| (field, t)))
            .map(|(field, t)| {
                let term = Term::from_field_text(field, t);
                let q: Box<dyn Query> =
                    Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs));
                (Occur::Should, q)
            })
            .collect();
        let mut filters = vec![exact(f.account, filter.account)];
        filters.extend(filter.namespace.map(|ns| exact(f.namespace, ns)));
        filters.extend(filter.tags.iter().map(|tag| exact(f.tags, tag)));
        let alive = RangeQuery::new(
            Bound::Excluded(Term::from_field_u64(f.expires_at, filter.now_ms)),
            Bound::Unbounded,
        );
        filters.push((Occur::Must, Box::new(alive)));
        let filter_query = ConstScoreQuery::new(Box::new(BooleanQuery::new(filters)), 0.0);
        let query = BooleanQuery::new(vec![
            (Occur::Must, Box::new(filter_query) as Box<dyn Query>),
            (Occur::Must, Box::new(BooleanQuery::new(text))),
        ]);

        let searcher = self.reader.searcher();
        let top = searcher.search(&query, &TopDocs::with_limit(k).order_by_score())?;
        let mut ids: HashMap<u32, Column<u64>> = HashMap::new();
        let mut hits = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let column = match ids.entry(addr.segment_ord) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    let reader = searcher.segment_reader(addr.segment_ord);
                    e.insert(reader.fast_fields().u64("id")?)
                }
            };
            if let Some(id) = column.first(addr.doc_id) {
                hits.push((id, score));
            }
        }
        Ok(hits)
    }

    /// Distinct analyzed terms of `query`, at most [`MAX_QUERY_TERMS`].
    fn query_terms(&self, query: &str) -> BTreeSet<String> {
        let mut analyzer = self.analyzer.clone();
        let mut stream = analyzer.token_stream(query);
        let mut terms = BTreeSet::new();
        while terms.len() < MAX_QUERY_TERMS && stream.advance() {
            terms.insert(stream.token().text.clone());
        }
        terms
    }

    /// Removes every doc (used before a full rebuild) and resets the watermark to 0, in one
    /// commit, so a crash before the rebuild finishes forces a full replay.
    pub fn clear(&self) -> Result<(), IndexError> {
        let mut writer = self.writer.lock();
        writer.delete_all_documents()?;
        let mut commit = writer.prepare_commit()?;
        commit.set_payload("0");
        commit.commit()?;
        self.watermark.store(0, Ordering::Release);
        drop(writer);
        self.reader.reload()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
