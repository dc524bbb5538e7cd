//! Tools in the data dir's database (redb): one table keyed by (account, name), so an
//! account's range holds its tools in name order and nothing of anyone else's. Every
//! operation runs on the blocking pool.

use std::sync::Arc;

use async_trait::async_trait;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use super::{
    seal::key_id_of,
    store::{CreateError, Listing, Result, ToolBackend, ToolKind, ToolRecord},
};
use crate::blocking::with_store;

/// (account, name) → record (JSON).
const TOOLS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("tools");

/// Tools in redb.
#[derive(Clone)]
pub struct EmbeddedTools {
    db: Arc<Database>,
}

impl EmbeddedTools {
    /// The tools kept in `db`, their table made on first use.
    pub fn open(db: Arc<Database>) -> Result<Self> {
        let txn = db.begin_write()?;
        txn.open_table(TOOLS)?;
        txn.commit()?;
        Ok(Self { db })
    }

    fn read(bytes: &[u8]) -> Result<ToolRecord> {
        Ok(serde_json::from_slice(bytes)?)
    }

    fn create_now(&self, record: &ToolRecord, max: u32) -> std::result::Result<(), CreateError> {
        let txn = self.db.begin_write()?;
        {
            let mut tools = txn.open_table(TOOLS)?;
            let account = record.account.as_str();
            if tools.get((account, record.name.as_str()))?.is_some() {
                return Err(CreateError::Exists);
            }
            if tools
                .range((account, "")..=(account, "\u{10ffff}"))?
                .count()
                >= max as usize
            {
                return Err(CreateError::Quota { max });
            }
            let json = serde_json::to_vec(record)?;
            tools.insert((account, record.name.as_str()), json.as_slice())?;
        }
        txn.commit()?;
        Ok(())
    }

    fn get_now(&self, account: &str, name: &str) -> Result<Option<ToolRecord>> {
        let txn = self.db.begin_read()?;
        let tools = txn.open_table(TOOLS)?;
        let found = tools.get((account, name))?;
        found.map(|v| Self::read(v.value())).transpose()
    }

    fn list_now(&self, account: &str) -> Result<Vec<ToolRecord>> {
        let txn = self.db.begin_read()?;
        let tools = txn.open_table(TOOLS)?;
        let range = tools.range((account, "")..=(account, "\u{10ffff}"))?;
        range.map(|entry| Self::read(entry?.1.value())).collect()
    }

    fn delete_now(&self, account: &str, name: &str) -> Result<Option<ToolRecord>> {
        let txn = self.db.begin_write()?;
        let removed = {
            let mut tools = txn.open_table(TOOLS)?;
            let removed = tools.remove((account, name))?;
            removed.map(|v| Self::read(v.value())).transpose()?
        };
        txn.commit()?;
        Ok(removed)
    }

    fn set_listing_now(
        &self,
        account: &str,
        name: &str,
        id: &str,
        listing: Listing,
    ) -> Result<Option<ToolRecord>> {
        let txn = self.db.begin_write()?;
        let updated = {
            let mut tools = txn.open_table(TOOLS)?;
            let found = tools.get((account, name))?;
            let mut record = match found.map(|v| Self::read(v.value())).transpose()? {
                Some(record) if record.id == id => record,
                _ => return Ok(None),
            };
            let ToolKind::Mcp(server) = &mut record.kind else {
                return Ok(None);
            };
            server.listing = Some(listing);
            let json = serde_json::to_vec(&record)?;
            tools.insert((account, name), json.as_slice())?;
            record
        };
        txn.commit()?;
        Ok(Some(updated))
    }

    fn sealing_keys_now(&self) -> Result<Vec<String>> {
        let txn = self.db.begin_read()?;
        let tools = txn.open_table(TOOLS)?;
        let mut keys = Vec::new();
        for entry in tools.iter()? {
            let record = Self::read(entry?.1.value())?;
            if let Some(id) = record.secret.as_deref().and_then(key_id_of)
                && !keys.iter().any(|k| k == id)
            {
                keys.push(id.to_string());
            }
        }
        Ok(keys)
    }
}

#[async_trait]
impl ToolBackend for EmbeddedTools {
    async fn create(&self, record: ToolRecord, max: u32) -> std::result::Result<(), CreateError> {
        with_store(self, move |s| s.create_now(&record, max)).await
    }

    async fn get(&self, account: &str, name: &str) -> Result<Option<ToolRecord>> {
        let (account, name) = (account.to_owned(), name.to_owned());
        with_store(self, move |s| s.get_now(&account, &name)).await
    }

    async fn list(&self, account: &str) -> Result<Vec<ToolRecord>> {
        let account = account.to_owned();
        with_store(self, move |s| s.list_now(&account)).await
    }

    async fn delete(&self, account: &str, name: &str) -> Result<Option<ToolRecord>> {
        let (account, name) = (account.to_owned(), name.to_owned());
        with_store(self, move |s| s.delete_now(&account, &name)).await
    }

    async fn set_listing(
        &self,
        account: &str,
        name: &str,
        id: &str,
        listing: Listing,
    ) -> Result<Option<ToolRecord>> {
        let (account, name, id) = (account.to_owned(), name.to_owned(), id.to_owned());
        with_store(self, move |s| {
            s.set_listing_now(&account, &name, &id, listing)
        })
        .await
    }

    async fn sealing_keys(&self) -> Result<Vec<String>> {
        with_store(self, Self::sealing_keys_now).await
    }
}
