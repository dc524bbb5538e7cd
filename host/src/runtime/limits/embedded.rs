//! Limits counted in this process's memory: the live agents per account (with their run
//! time so far) in the host's admission, each key's spawn times in a rate limiter, the
//! finished months in the usage ledger. Exact while one process holds every agent; a
//! restart forgets the rate windows (documented).

use std::{sync::Arc, time::Instant};

use async_trait::async_trait;

use super::{Admitted, Asked, Place, SpawnLimits};
use crate::{
    accounts::{Ledger, RateLimiter},
    runtime::{
        admission::Admission,
        records::{AgentRecord, AgentStore},
        spawn::{SpawnRefusal, SpawnStorageError},
    },
};

/// Limits of one process's spawns.
pub struct LocalLimits {
    admission: Arc<Admission>,
    rate: RateLimiter,
    usage: Ledger,
    records: AgentStore,
}

impl LocalLimits {
    pub fn new(admission: Arc<Admission>, usage: Ledger, records: AgentStore) -> Self {
        Self {
            admission,
            rate: RateLimiter::default(),
            usage,
            records,
        }
    }
}

#[async_trait]
impl SpawnLimits for LocalLimits {
    async fn admit(&self, record: AgentRecord, asked: Asked<'_>) -> Result<Admitted, SpawnRefusal> {
        let month = self.usage.month(&record.account, asked.now).await?;
        let used_ms = month.run_ms + self.admission.running_ms(&record.account);
        asked.month(used_ms, month.tokens())?;
        let limits = asked.limits;
        let slot = (self.admission)
            .reserve(&record.account, limits.concurrent_agents)
            .map_err(|refusal| asked.place(refusal))?;
        self.rate
            .try_acquire(
                &record.key_id,
                limits.spawns_per_minute,
                limits.spawns_per_hour,
                Instant::now(),
            )
            .map_err(|refused| asked.rate(refused))?;
        let record = self.records.create(record).await?;
        let place = Place::Here { slot, fence: None };
        Ok(Admitted { record, place })
    }

    async fn month_run_ms(&self, account: &str, now: u64) -> Result<u64, SpawnStorageError> {
        let finished_ms = self.usage.month(account, now).await?.run_ms;
        Ok(finished_ms + self.admission.running_ms(account))
    }

    async fn concurrent(&self, account: &str) -> Result<u32, SpawnStorageError> {
        Ok(self.admission.concurrent(account))
    }

    async fn spawns_in_windows(
        &self,
        _account: &str,
        key_id: &str,
    ) -> Result<(u32, u32), SpawnStorageError> {
        Ok(self.rate.used(key_id, Instant::now()))
    }
}
