//! One account's HNSW graph plus the per-doc metadata its filtered searches consult.

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use super::hotpath::{IdMap, IdSet, dot_and_norm2, f16_to_f32};
use crate::memory::index::{IndexDoc, IndexError, LATEST, SearchFilter};

/// A namespace/tag filter admitting at most this many docs, and at most a
/// [`SELECTIVE_FRACTION`] of the account, is answered by scanning those docs exactly instead
/// of walking the graph: HNSW under a very selective predicate visits nearly every node
/// (and may still miss matches), while scoring a few hundred stored vectors is cheap and
/// exact. Unselective filters keep the graph, which is faster for them.
const EXACT_SCAN_LIMIT: usize = 1024;
/// See [`EXACT_SCAN_LIMIT`]: a filter is selective when it admits at most 1/4 of the docs.
const SELECTIVE_FRACTION: usize = 4;
/// First reservation of a new graph; capacity then doubles, so tiny accounts stay tiny.
const MIN_CAPACITY: usize = 64;
/// HNSW parameters: usearch's defaults; recall@10 measured 0.99 on 100k clustered 384-d
/// vectors (see `perf_tests`).
const CONNECTIVITY: usize = 16;
const EXPANSION_ADD: usize = 128;
const EXPANSION_SEARCH: usize = 64;
/// `expires_at` of docs that never expire.
const NEVER: u64 = u64::MAX;
/// Start of every shard file; the last byte is the format version.
const MAGIC: &[u8; 8] = b"WMVEC\0\0\x02";

/// Wraps a usearch (C++) error.
pub(super) fn usearch_err(e: impl std::fmt::Display) -> IndexError {
    IndexError::Vector(e.to_string())
}

/// What filters look at, with strings interned so the per-node predicate is cheap.
struct DocMeta {
    namespace: u32,
    /// Sorted, deduplicated.
    tags: Box<[u32]>,
    expires_at: u64,
    written_at: u64,
}

/// Namespace and tag strings of one account, interned to small ids. Never shrinks while
/// running; the shard file stores strings, so a reload drops unused ones.
#[derive(Default)]
struct Symbols {
    ids: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
}

impl Symbols {
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = u32::try_from(self.names.len()).expect("fewer than 2^32 distinct names");
        self.names.push(name.into());
        self.ids.insert(name.into(), id);
        id
    }

    fn get(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

/// A search restriction resolved against one shard's symbols.
pub(super) struct Want {
    namespace: Option<u32>,
    tags: Vec<u32>,
    now_ms: u64,
    written_by: u64,
    exclude: Option<u64>,
}

impl Want {
    fn admits(&self, id: u64, doc: &DocMeta) -> bool {
        doc.expires_at > self.now_ms
            && doc.written_at <= self.written_by
            && self.exclude != Some(id)
            && self.namespace.is_none_or(|ns| ns == doc.namespace)
            && self.tags.iter().all(|t| doc.tags.binary_search(t).is_ok())
    }
}

/// Shard file metadata; strings borrow from the file buffer when they can.
#[derive(Serialize, Deserialize)]
struct SavedShard<'a> {
    #[serde(borrow)]
    account: Cow<'a, str>,
    #[serde(borrow)]
    docs: Vec<SavedDoc<'a>>,
}

/// (id, namespace, tags, expires_at, written_at) — a tuple keeps 100k-doc files compact.
#[derive(Serialize, Deserialize)]
struct SavedDoc<'a>(
    u64,
    #[serde(borrow)] Cow<'a, str>,
    #[serde(borrow)] Vec<Cow<'a, str>>,
    Option<u64>,
    u64,
);

/// One account's vectors (usearch HNSW, cosine, f16 storage) and the metadata beside them.
pub(super) struct Shard {
    index: Index,
    /// usearch thread contexts to keep reserved; see `VectorIndex`'s search permits.
    threads: usize,
    docs: IdMap<DocMeta>,
    symbols: Symbols,
    /// Live doc ids per namespace / tag (no empty sets): a filter admits only docs in the
    /// smallest of its postings, which sizes and feeds the exact scan.
    namespace_docs: HashMap<u32, IdSet>,
    tag_docs: HashMap<u32, IdSet>,
    /// Changed since it was last encoded for a checkpoint.
    dirty: AtomicBool,
}

fn new_index(dims: usize) -> Result<Index, IndexError> {
    let options = IndexOptions {
        dimensions: dims,
        metric: MetricKind::Cos,
        // Half the memory of f32; similarity error ~1e-3, far below ranking noise.
        quantization: ScalarKind::F16,
        connectivity: CONNECTIVITY,
        expansion_add: EXPANSION_ADD,
        expansion_search: EXPANSION_SEARCH,
        multi: false,
    };
    Index::new(&options).map_err(usearch_err)
}

impl Shard {
    /// An empty shard with room for [`MIN_CAPACITY`] docs.
    pub(super) fn new(dims: usize, threads: usize) -> Result<Shard, IndexError> {
        let index = new_index(dims)?;
        index
            .reserve_capacity_and_threads(MIN_CAPACITY, threads)
            .map_err(usearch_err)?;
        Ok(Shard::wrap(index, threads))
    }

    fn wrap(index: Index, threads: usize) -> Shard {
        Shard {
            index,
            threads,
            docs: IdMap::default(),
            symbols: Symbols::default(),
            namespace_docs: HashMap::new(),
            tag_docs: HashMap::new(),
            dirty: AtomicBool::new(false),
        }
    }

    /// Adds or replaces the doc's vector and metadata. The caller checked the dimensions.
    pub(super) fn upsert(&mut self, doc: &IndexDoc) -> Result<(), IndexError> {
        self.remove(doc.id)?;
        if self.index.size() >= self.index.capacity() {
            let capacity = (self.index.capacity() * 2).max(MIN_CAPACITY);
            self.index
                .reserve_capacity_and_threads(capacity, self.threads)
                .map_err(usearch_err)?;
        }
        self.index
            .add(doc.id, doc.embedding.as_slice())
            .map_err(usearch_err)?;
        let tags = doc.tags.iter().map(String::as_str);
        self.insert_meta(doc.id, &doc.namespace, tags, doc.expires_at, doc.written_at);
        self.dirty.store(true, Ordering::Release);
        Ok(())
    }

    fn insert_meta<'t>(
        &mut self,
        id: u64,
        namespace: &str,
        tags: impl Iterator<Item = &'t str>,
        expires_at: Option<u64>,
        written_at: u64,
    ) {
        let namespace = self.symbols.intern(namespace);
        let mut tags: Vec<u32> = tags.map(|t| self.symbols.intern(t)).collect();
        tags.sort_unstable();
        tags.dedup();
        self.namespace_docs.entry(namespace).or_default().insert(id);
        for &tag in &tags {
            self.tag_docs.entry(tag).or_default().insert(id);
        }
        let meta = DocMeta {
            namespace,
            tags: tags.into(),
            expires_at: expires_at.unwrap_or(NEVER),
            written_at,
        };
        self.docs.insert(id, meta);
    }

    /// Removes the doc if present.
    pub(super) fn remove(&mut self, id: u64) -> Result<(), IndexError> {
        let removed = self.index.remove(id).map_err(usearch_err)?;
        if let Some(meta) = self.docs.remove(&id) {
            unpost(&mut self.namespace_docs, meta.namespace, id);
            for &tag in &meta.tags {
                unpost(&mut self.tag_docs, tag, id);
            }
        } else if removed == 0 {
            return Ok(());
        }
        self.dirty.store(true, Ordering::Release);
        Ok(())
    }

    /// Resolves a filter's strings; `None` when it names a namespace or tag no doc has.
    pub(super) fn resolve(&self, filter: &SearchFilter) -> Option<Want> {
        let namespace = match filter.namespace {
            Some(ns) => Some(self.symbols.get(ns)?),
            None => None,
        };
        let tags = filter.tags.iter().map(|t| self.symbols.get(t));
        Some(Want {
            namespace,
            tags: tags.collect::<Option<_>>()?,
            now_ms: filter.now_ms,
            written_by: filter.written_by,
            exclude: None,
        })
    }

    /// Restriction for neighbours of `id`: same namespace, not itself, expiry ignored.
    pub(super) fn neighbours_of(&self, id: u64) -> Option<Want> {
        let meta = self.docs.get(&id)?;
        Some(Want {
            namespace: Some(meta.namespace),
            tags: Vec::new(),
            now_ms: 0,
            written_by: LATEST,
            exclude: Some(id),
        })
    }

    /// Top `k` (id, cosine similarity) among docs `want` admits, best first.
    pub(super) fn search(
        &self,
        query: &[f32],
        k: usize,
        want: &Want,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        let namespace = want.namespace.iter().map(|ns| self.namespace_docs.get(ns));
        let tags = want.tags.iter().map(|t| self.tag_docs.get(t));
        let mut smallest: Option<&IdSet> = None;
        for posting in namespace.chain(tags) {
            let Some(posting) = posting else {
                return Ok(Vec::new());
            };
            if smallest.is_none_or(|s| posting.len() < s.len()) {
                smallest = Some(posting);
            }
        }
        if k == 0 || self.docs.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(ids) = smallest
            && ids.len() <= EXACT_SCAN_LIMIT
            && ids.len() * SELECTIVE_FRACTION <= self.docs.len()
        {
            return self.scan(query, k, want, ids);
        }
        let admits = |id: u64| self.docs.get(&id).is_some_and(|m| want.admits(id, m));
        let found = self
            .index
            .filtered_search(query, k, admits)
            .map_err(usearch_err)?;
        let hits = found.keys.into_iter().zip(found.distances);
        Ok(hits.map(|(id, distance)| (id, 1.0 - distance)).collect())
    }

    /// Exact top `k` over the admitted docs among `ids`.
    fn scan(
        &self,
        query: &[f32],
        k: usize,
        want: &Want,
        ids: &IdSet,
    ) -> Result<Vec<(u64, f32)>, IndexError> {
        let query_norm = norm(query);
        let mut bits = vec![0; query.len()];
        let mut hits = Vec::new();
        for &id in ids {
            let admitted = self.docs.get(&id).is_some_and(|m| want.admits(id, m));
            if !admitted || !self.stored_bits(id, &mut bits)? {
                continue;
            }
            let (dot, norm2) = dot_and_norm2(query, &bits);
            let norms = query_norm * norm2.sqrt();
            hits.push((id, if norms > 0.0 { dot / norms } else { 0.0 }));
        }
        let best_first = |a: &(u64, f32), b: &(u64, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if hits.len() > k {
            hits.select_nth_unstable_by(k, best_first);
            hits.truncate(k);
        }
        hits.sort_unstable_by(best_first);
        Ok(hits)
    }

    /// The stored (f16-rounded) vector of a doc.
    pub(super) fn vector(&self, id: u64) -> Option<Vec<f32>> {
        if !self.docs.contains_key(&id) {
            return None;
        }
        let mut bits = vec![0; self.index.dimensions()];
        match self.stored_bits(id, &mut bits) {
            Ok(true) => Some(bits.into_iter().map(f16_to_f32).collect()),
            _ => None,
        }
    }

    /// Copies a doc's stored f16 vector, undecoded, into `bits`; false if absent.
    fn stored_bits(&self, id: u64, bits: &mut [i16]) -> Result<bool, IndexError> {
        let found = self.index.get(id, usearch::f16::from_mut_i16s(bits));
        Ok(found.map_err(usearch_err)? > 0)
    }

    /// Clears the dirty flag, returning whether it was set.
    pub(super) fn take_dirty(&self) -> bool {
        self.dirty.swap(false, Ordering::AcqRel)
    }

    /// Sets the dirty flag again after a failed checkpoint.
    pub(super) fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Release);
    }

    /// Serializes the shard: magic, metadata length (u64 LE), metadata JSON, usearch graph.
    pub(super) fn encode(&self, account: &str) -> Result<Vec<u8>, IndexError> {
        let name = |id: u32| Cow::Borrowed(self.symbols.name(id));
        let docs = self.docs.iter().map(|(&id, m)| {
            let tags = m.tags.iter().map(|&t| name(t)).collect();
            let expires_at = (m.expires_at != NEVER).then_some(m.expires_at);
            SavedDoc(id, name(m.namespace), tags, expires_at, m.written_at)
        });
        let saved = SavedShard {
            account: Cow::Borrowed(account),
            docs: docs.collect(),
        };
        let meta = serde_json::to_vec(&saved).map_err(std::io::Error::other)?;
        let graph_len = self.index.serialized_length();
        let mut out = Vec::with_capacity(MAGIC.len() + 8 + meta.len() + graph_len);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(meta.len() as u64).to_le_bytes());
        out.extend_from_slice(&meta);
        let graph_start = out.len();
        out.resize(graph_start + graph_len, 0);
        self.index
            .save_to_buffer(&mut out[graph_start..])
            .map_err(usearch_err)?;
        Ok(out)
    }

    /// Inverse of [`Shard::encode`]: the account name and its shard, or why the bytes are
    /// not a valid shard of `dims` dimensions.
    pub(super) fn decode(
        bytes: &[u8],
        dims: usize,
        threads: usize,
    ) -> Result<(String, Shard), String> {
        let rest = bytes.strip_prefix(MAGIC).ok_or("not a shard file")?;
        let (len, rest) = rest.split_first_chunk::<8>().ok_or("truncated")?;
        let len = usize::try_from(u64::from_le_bytes(*len)).map_err(|e| e.to_string())?;
        let (meta, graph) = rest.split_at_checked(len).ok_or("truncated metadata")?;
        let saved: SavedShard = serde_json::from_slice(meta).map_err(|e| e.to_string())?;
        let index = new_index(dims).map_err(|e| e.to_string())?;
        index.load_from_buffer(graph).map_err(|e| e.to_string())?;
        if index.dimensions() != dims {
            return Err(format!(
                "has {} dimensions, expected {dims}",
                index.dimensions()
            ));
        }
        let capacity = index.capacity().max(MIN_CAPACITY);
        index
            .reserve_capacity_and_threads(capacity, threads)
            .map_err(|e| e.to_string())?;
        let mut shard = Shard::wrap(index, threads);
        for SavedDoc(id, namespace, tags, expires_at, written_at) in saved.docs {
            if !shard.index.contains(id) {
                return Err(format!("doc {id} has metadata but no vector"));
            }
            let tags = tags.iter().map(|t| &**t);
            shard.insert_meta(id, &namespace, tags, expires_at, written_at);
        }
        if shard.docs.len() != shard.index.size() {
            return Err("vectors without metadata".into());
        }
        Ok((saved.account.into_owned(), shard))
    }
}

fn unpost(postings: &mut HashMap<u32, IdSet>, key: u32, id: u64) {
    if let Entry::Occupied(mut e) = postings.entry(key) {
        e.get_mut().remove(&id);
        if e.get().is_empty() {
            e.remove();
        }
    }
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}
