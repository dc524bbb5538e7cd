//! Which embedder made a data dir's vectors, recorded in its database so vectors of two
//! embedders are never mixed: a data dir refuses to start with any other embedder, unless
//! the operator asked for it to be re-embedded with the configured one. That ask is
//! recorded too ([`UPGRADE`]), so a restart midway goes on with it; the re-embedding's
//! last commit records the new identity ([`flip`]).

use redb::{
    Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
    WriteTransaction,
};

use super::{EmbedError, Embedder, EmbedderKind};

/// One row: [`KEY`] → `kind:model:dims`.
const TABLE: TableDefinition<&str, &str> = TableDefinition::new("embedder_identity");
const KEY: &str = "identity";
/// The identity a re-embedding under way moves the data dir to.
const UPGRADE: &str = "upgrade";
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

/// What a data dir's record says of the configured embedder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// Its vectors are the configured embedder's.
    Same {
        /// A re-embedding toward another embedder was under way and is dropped (the
        /// operator went back to the recorded one): its side vectors are to be discarded.
        abandoned: bool,
    },
    /// Its vectors are `recorded`'s, and a re-embedding with the configured one is asked
    /// for: `recorded` serves until it is done.
    Upgrading {
        recorded: String,
        /// The re-embedding starts over: none was under way, or one toward another
        /// embedder was (whose side vectors are to be discarded).
        fresh: bool,
    },
}

/// Records `kind`'s identity on a data dir's first start; afterwards refuses to start
/// with any other ([`EmbedError::Mismatch`] names both), unless `upgrade` asks for the
/// data dir to be re-embedded with it, or an earlier start asked for that already. A data
/// dir that holds vectors but no record predates the record and was made with [`LEGACY`].
pub fn check_identity(
    db: &Database,
    kind: EmbedderKind,
    embedder: &dyn Embedder,
    upgrade: bool,
) -> Result<Recorded, EmbedError> {
    let current = identity(kind, embedder);
    let txn = db.begin_write().map_err(|e| store(&e))?;
    let outcome = {
        let mut table = txn.open_table(TABLE).map_err(|e| store(&e))?;
        let read = |table: &redb::Table<&str, &str>, key| {
            let value = table.get(key).map_err(|e| store(&e))?;
            Ok::<_, EmbedError>(value.map(|v| v.value().to_owned()))
        };
        let recorded = match read(&table, KEY)? {
            Some(recorded) => recorded,
            None => {
                let made = if has_vectors(db)? { LEGACY } else { &current };
                table.insert(KEY, made).map_err(|e| store(&e))?;
                made.to_owned()
            }
        };
        let pending = read(&table, UPGRADE)?;
        if recorded == current {
            if pending.is_some() {
                table.remove(UPGRADE).map_err(|e| store(&e))?;
            }
            Ok(Recorded::Same {
                abandoned: pending.is_some(),
            })
        } else if upgrade || pending.as_deref() == Some(current.as_str()) {
            table
                .insert(UPGRADE, current.as_str())
                .map_err(|e| store(&e))?;
            let fresh = pending.as_deref() != Some(current.as_str());
            Ok(Recorded::Upgrading { recorded, fresh })
        } else {
            let kind = recorded.split(':').next().unwrap_or_default().to_owned();
            Err(EmbedError::Mismatch {
                recorded,
                current,
                kind,
            })
        }
    };
    txn.commit().map_err(|e| store(&e))?;
    outcome
}

/// The re-embedding's last step, in its commit: the identity it moved to becomes the
/// recorded one. Returns it; `None` (nothing changed) when no re-embedding is under way.
pub fn flip(txn: &WriteTransaction) -> Result<Option<String>, redb::Error> {
    let mut table = txn.open_table(TABLE)?;
    let Some(target) = table.remove(UPGRADE)?.map(|v| v.value().to_owned()) else {
        return Ok(None);
    };
    table.insert(KEY, target.as_str())?;
    Ok(Some(target))
}

/// The recorded identity, and the one a re-embedding under way moves to.
pub fn recorded(db: &Database) -> Result<(Option<String>, Option<String>), EmbedError> {
    let txn = db.begin_read().map_err(|e| store(&e))?;
    let table = match txn.open_table(TABLE) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok((None, None)),
        Err(e) => return Err(store(&e)),
    };
    let read = |key| {
        let value = table.get(key).map_err(|e| store(&e))?;
        Ok::<_, EmbedError>(value.map(|v| v.value().to_owned()))
    };
    Ok((read(KEY)?, read(UPGRADE)?))
}

fn store(e: &dyn std::fmt::Display) -> EmbedError {
    EmbedError::Load(format!("embedder identity: {e}"))
}

/// Whether the memory store holds any vector.
fn has_vectors(db: &Database) -> Result<bool, EmbedError> {
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
        let same = Recorded::Same { abandoned: false };
        assert_eq!(check(&db, &hash, false), Ok(same.clone()));
        assert_eq!(check(&db, &hash, false), Ok(same));
        let err = check(&db, &HashEmbedder::new(64), false).unwrap_err();
        for needle in [
            "hash:lexical-hash:384",
            "hash:lexical-hash:64",
            "kind = \"hash\"",
            "WASMIND_EMBEDDER_UPGRADE",
            "wasmind memory reembed",
        ] {
            assert!(err.contains(needle), "{needle:?} not in {err}");
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
        let err = check(&db, &HashEmbedder::new(384), false).unwrap_err();
        assert!(err.contains(LEGACY), "{err}");
    }

    fn check(db: &Database, embedder: &HashEmbedder, upgrade: bool) -> Result<Recorded, String> {
        check_identity(db, EmbedderKind::Hash, embedder, upgrade).map_err(|e| e.to_string())
    }

    /// An upgrade asked once goes on at the next start without the ask; one toward another
    /// embedder starts over; going back to the recorded one abandons it; the flip records
    /// the target.
    #[test]
    fn an_upgrade_asked_for_is_recorded_until_its_flip() {
        let (_dir, db) = db();
        let (old, new, other) = (
            HashEmbedder::new(384),
            HashEmbedder::new(64),
            HashEmbedder::new(32),
        );
        check(&db, &old, false).unwrap();
        let upgrading = |fresh| Recorded::Upgrading {
            recorded: "hash:lexical-hash:384".into(),
            fresh,
        };
        assert_eq!(check(&db, &new, true), Ok(upgrading(true)));
        assert_eq!(check(&db, &new, false), Ok(upgrading(false)));
        assert_eq!(check(&db, &other, true), Ok(upgrading(true)));
        let (recorded, target) = recorded(&db).unwrap();
        assert_eq!(recorded.as_deref(), Some("hash:lexical-hash:384"));
        assert_eq!(target.as_deref(), Some("hash:lexical-hash:32"));
        assert!(check(&db, &new, false).is_err(), "asked toward another");
        let abandoned = Recorded::Same { abandoned: true };
        assert_eq!(check(&db, &old, false), Ok(abandoned));
        check(&db, &new, true).unwrap();
        let txn = db.begin_write().unwrap();
        assert_eq!(flip(&txn).unwrap().as_deref(), Some("hash:lexical-hash:64"));
        txn.commit().unwrap();
        let same = Recorded::Same { abandoned: false };
        assert_eq!(check(&db, &new, false), Ok(same));
        assert!(check(&db, &old, false).is_err());
    }
}
