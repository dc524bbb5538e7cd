//! [`BillingStore`] in the data dir's redb: a link per account (JSON), the customer index,
//! and the applied events' ids, written in one transaction each.

use std::sync::Arc;

use async_trait::async_trait;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use super::{BillingStore, Link, Subscription, Turn};
use crate::{blocking::with_store, clock::now_ms, storage::StoreError};

/// account → link (JSON).
const LINKS: TableDefinition<&str, &str> = TableDefinition::new("billing_links");
/// provider customer → account.
const CUSTOMERS: TableDefinition<&str, &str> = TableDefinition::new("billing_customers");
/// applied event id → when (epoch ms).
const EVENTS: TableDefinition<&str, u64> = TableDefinition::new("billing_events");

/// Billing's state in redb.
#[derive(Clone)]
pub struct EmbeddedBilling {
    db: Arc<Database>,
}

impl EmbeddedBilling {
    /// Opens the tables, creating them on first use.
    pub fn new(db: Arc<Database>) -> Result<Self, StoreError> {
        let txn = db.begin_write()?;
        txn.open_table(LINKS)?;
        txn.open_table(CUSTOMERS)?;
        txn.open_table(EVENTS)?;
        txn.commit()?;
        Ok(Self { db })
    }

    fn get(&self, account: &str) -> Result<Option<Link>, StoreError> {
        let txn = self.db.begin_read()?;
        let links = txn.open_table(LINKS)?;
        let found = links.get(account)?;
        Ok(found.map(|v| serde_json::from_str(v.value())).transpose()?)
    }

    fn account_of(&self, customer: &str) -> Result<Option<String>, StoreError> {
        let txn = self.db.begin_read()?;
        let customers = txn.open_table(CUSTOMERS)?;
        let found = customers.get(customer)?;
        Ok(found.map(|v| v.value().to_owned()))
    }

    fn all(&self) -> Result<Vec<Link>, StoreError> {
        let txn = self.db.begin_read()?;
        let links = txn.open_table(LINKS)?;
        let mut out = Vec::new();
        for entry in links.iter()? {
            out.push(serde_json::from_str(entry?.1.value())?);
        }
        Ok(out)
    }

    fn put_link(&self, account: &str, customer: &str) -> Result<Link, StoreError> {
        let txn = self.db.begin_write()?;
        let link = {
            let mut links = txn.open_table(LINKS)?;
            let existing: Option<Link> = (links.get(account)?)
                .map(|v| serde_json::from_str(v.value()))
                .transpose()?;
            match existing {
                Some(link) => link,
                None => {
                    let link = Link {
                        account: account.to_owned(),
                        customer: customer.to_owned(),
                        subscription: None,
                    };
                    links.insert(account, serde_json::to_string(&link)?.as_str())?;
                    txn.open_table(CUSTOMERS)?.insert(customer, account)?;
                    link
                }
            }
        };
        txn.commit()?;
        Ok(link)
    }

    fn put_event(
        &self,
        id: &str,
        account: &str,
        subscription: Option<&Subscription>,
    ) -> Result<bool, StoreError> {
        let txn = self.db.begin_write()?;
        {
            let mut events = txn.open_table(EVENTS)?;
            if events.get(id)?.is_some() {
                return Ok(false);
            }
            events.insert(id, now_ms())?;
            if let Some(subscription) = subscription {
                let mut links = txn.open_table(LINKS)?;
                let mut link: Link = match links.get(account)? {
                    Some(v) => serde_json::from_str(v.value())?,
                    None => {
                        return Err(StoreError::Corrupt(format!(
                            "no billing link of {account:?}"
                        )));
                    }
                };
                link.subscription = Some(subscription.clone());
                links.insert(account, serde_json::to_string(&link)?.as_str())?;
            }
        }
        txn.commit()?;
        Ok(true)
    }
}

#[async_trait]
impl BillingStore for EmbeddedBilling {
    async fn by_account(&self, account: &str) -> Result<Option<Link>, StoreError> {
        let account = account.to_owned();
        with_store(self, move |s| s.get(&account)).await
    }

    async fn by_customer(&self, customer: &str) -> Result<Option<Link>, StoreError> {
        let customer = customer.to_owned();
        with_store(self, move |s| match s.account_of(&customer)? {
            Some(account) => s.get(&account),
            None => Ok(None),
        })
        .await
    }

    async fn links(&self) -> Result<Vec<Link>, StoreError> {
        with_store(self, |s| s.all()).await
    }

    async fn link(&self, account: &str, customer: &str) -> Result<Link, StoreError> {
        let (account, customer) = (account.to_owned(), customer.to_owned());
        with_store(self, move |s| s.put_link(&account, &customer)).await
    }

    /// A data dir is one process's (its lock), whose `Billing` applies one event at a time
    /// already: the turn is that.
    async fn turn(&self) -> Result<Box<dyn Turn>, StoreError> {
        Ok(Box::new(OneProcess))
    }

    async fn seen(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_owned();
        with_store(self, move |s| {
            let txn = s.db.begin_read()?;
            Ok(txn.open_table(EVENTS)?.get(id.as_str())?.is_some())
        })
        .await
    }

    async fn record(
        &self,
        id: &str,
        account: &str,
        subscription: Option<&Subscription>,
    ) -> Result<bool, StoreError> {
        let (id, account, subscription) =
            (id.to_owned(), account.to_owned(), subscription.cloned());
        with_store(self, move |s| {
            s.put_event(&id, &account, subscription.as_ref())
        })
        .await
    }
}

/// The embedded backend's [`Turn`]: nothing to hold beyond the process's own.
struct OneProcess;

#[async_trait]
impl Turn for OneProcess {
    async fn release(self: Box<Self>) -> Result<(), StoreError> {
        Ok(())
    }
}
