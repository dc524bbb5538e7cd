//! Which embedder made a data dir's vectors, recorded in its database so vectors of two
//! embedders are never mixed: a data dir refuses to start with any other embedder.

use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};

use super::{EmbedError, Embedder, EmbedderKind};

/// One row: [`KEY`] → `kind:model:dims`.
const TABLE: TableDefinition<&str, &str> = TableDefinition::new("embedder_identity");
const KEY: &str = "identity";
/// The memory store's vectors, looked at (never written) to tell a data dir made before
/// identities were recorded from a new one.
const EMBEDDINGS: TableDefinition<u64, &[u8]> = TableDefinition::new("memory_embeddings");
/// What a data dir holding vectors but no record was made with: the only semantic
/// default before identities were recorded.
const LEGACY: &str = "minilm:all-MiniLM-L6-v2:384";

/// `kind:model:dims`, e.g. `onnx:all-MiniLM-L6-v2-onnx-int8:384`.
pub fn identity(kind: EmbedderKind, embedder: &dyn Embedder) -> String {
    format!("{kind}:{}:{}", embedder.name(), embedder.dims())
}

/// Records `kind`'s identity on a data dir's first start; afterwards refuses to start
/// with any other ([`EmbedError::Mismatch`] names both). A data dir that holds vectors but
/// no record predates the record and was made with [`LEGACY`].
pub fn check_identity(
    db: &Database,
    kind: EmbedderKind,
    embedder: &dyn Embedder,
) -> Result<(), EmbedError> {
    let current = identity(kind, embedder);
    let store = |e: &dyn std::fmt::Display| EmbedError::Load(format!("embedder identity: {e}"));
    let txn = db.begin_write().map_err(|e| store(&e))?;
    let recorded = {
        let mut table = txn.open_table(TABLE).map_err(|e| store(&e))?;
        let recorded = table
            .get(KEY)
            .map_err(|e| store(&e))?
            .map(|v| v.value().to_owned());
        match recorded {
            Some(recorded) => recorded,
            None => {
                let made = if has_vectors(db)? { LEGACY } else { &current };
                table.insert(KEY, made).map_err(|e| store(&e))?;
                made.to_owned()
            }
        }
    };
    txn.commit().map_err(|e| store(&e))?;
    if recorded == current {
        Ok(())
    } else {
        let kind = recorded.split(':').next().unwrap_or_default().to_owned();
        Err(EmbedError::Mismatch {
            recorded,
            current,
            kind,
        })
    }
}

/// Whether the memory store holds any vector.
fn has_vectors(db: &Database) -> Result<bool, EmbedError> {
    let store = |e: &dyn std::fmt::Display| EmbedError::Load(format!("embedder identity: {e}"));
    let txn = db.begin_read().map_err(|e| store(&e))?;
    match txn.open_table(EMBEDDINGS) {
        Ok(table) => Ok(!table.is_empty().map_err(|e| store(&e))?),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(false),
        Err(e) => Err(store(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::embed::HashEmbedder;

    fn db() -> (tempfile::TempDir, Database) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path().join("db.redb")).unwrap();
        (dir, db)
    }

    #[test]
    fn first_start_records_and_another_embedder_is_refused() {
        let (_dir, db) = db();
        let hash = HashEmbedder::new(384);
        check_identity(&db, EmbedderKind::Hash, &hash).unwrap();
        check_identity(&db, EmbedderKind::Hash, &hash).unwrap();
        let err = check_identity(&db, EmbedderKind::Hash, &HashEmbedder::new(64)).unwrap_err();
        let msg = err.to_string();
        for needle in [
            "hash:lexical-hash:384",
            "hash:lexical-hash:64",
            "kind = \"hash\"",
        ] {
            assert!(msg.contains(needle), "{needle:?} not in {msg}");
        }
    }

    #[test]
    fn vectors_without_a_record_were_made_by_the_old_default() {
        let (_dir, db) = db();
        let txn = db.begin_write().unwrap();
        txn.open_table(EMBEDDINGS)
            .unwrap()
            .insert(1, [0u8; 8].as_slice())
            .unwrap();
        txn.commit().unwrap();
        let err = check_identity(&db, EmbedderKind::Hash, &HashEmbedder::new(384)).unwrap_err();
        assert!(err.to_string().contains(LEGACY), "{err}");
    }
}
