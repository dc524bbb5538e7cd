//! The operator's requests, their answers, and the one implementation of each.

use std::sync::{Arc, OnceLock};

use redb::Database;
use serde::{Deserialize, Serialize};
use sqlx::PgPool;

use crate::{
    accounts::{
        AccountInfo, Accounts, KeyInfo, KeyStore, Ledger, MonthUsage, PgAccounts, PgUsage, Plan,
        PlanSource, Plans, UsageStore,
    },
    billing::{BillingStore, EmbeddedBilling, PgBilling},
    egress::policy::Allow,
};

/// What the operator asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Creates a key (and the account, if new); an explicit plan also moves the account.
    CreateKey { account: String, plan: Option<Plan> },
    /// Revokes a key given the key itself or its `key_…` id.
    RevokeKey { key: String },
    /// Every key, oldest first, never a secret.
    ListKeys,
    /// Every account by name.
    ListAccounts,
    /// Moves an existing account to another plan.
    SetPlan { account: String, plan: Plan },
    /// Usage rows by account then month, narrowed to one month and/or account.
    Usage {
        month: Option<String>,
        account: Option<String>,
    },
    /// The hosts an account's agents may reach beyond everyone's and its plan's.
    Egress { account: String },
    /// Replaces them.
    SetEgress { account: String, allow: Vec<Allow> },
}

impl Request {
    /// The request's name for the log; never its arguments, as a key to revoke may be the
    /// secret itself.
    pub fn op(&self) -> &'static str {
        match self {
            Request::CreateKey { .. } => "create_key",
            Request::RevokeKey { .. } => "revoke_key",
            Request::ListKeys => "list_keys",
            Request::ListAccounts => "list_accounts",
            Request::SetPlan { .. } => "set_plan",
            Request::Usage { .. } => "usage",
            Request::Egress { .. } => "egress",
            Request::SetEgress { .. } => "set_egress",
        }
    }
}

/// The answer to each [`Request`], in the same order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Response {
    /// The secret is shown once, here, and stored nowhere.
    KeyCreated {
        secret: String,
        key: KeyInfo,
    },
    KeyRevoked {
        key: KeyInfo,
    },
    Keys {
        keys: Vec<KeyInfo>,
    },
    Accounts {
        accounts: Vec<AccountInfo>,
    },
    PlanSet {
        account: AccountInfo,
    },
    Usage {
        rows: Vec<UsageRow>,
    },
    Egress {
        account: String,
        allow: Vec<Allow>,
    },
}

/// One account's usage in one calendar month (UTC), with its plan's budgets of what is
/// counted (`None` for usage of an account no longer known).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageRow {
    pub account: String,
    /// `YYYY-MM`.
    pub month: String,
    pub usage: MonthUsage,
    /// The account's plan's `tokens_per_month`.
    #[serde(default)]
    pub tokens_limit: Option<u64>,
    /// The account's plan's `http_requests_per_month` and `http_bytes_per_month`.
    #[serde(default)]
    pub http_limits: Option<(u64, u64)>,
    /// The account's unrevoked keys now (not per month), and its plan's `keys`.
    #[serde(default)]
    pub keys: Option<(u32, u32)>,
    /// Its component uploads in the last hour, and its plan's `component_uploads_per_hour`:
    /// counted by the running server (none when the files or the database answer).
    #[serde(default)]
    pub uploads: Option<(u32, u32)>,
    /// Its event streams open now (the console's and MCP's), and its plan's
    /// `event_streams`: likewise.
    #[serde(default)]
    pub streams: Option<(u32, u32)>,
    /// Its MCP sessions open now, and its plan's `mcp_sessions`: likewise.
    #[serde(default)]
    pub mcp_sessions: Option<(u32, u32)>,
    /// Its plan now (not per month; `None` for an account no longer known).
    #[serde(default)]
    pub plan: Option<Plan>,
    /// Its subscription's status at the payment provider now, if it has one.
    #[serde(default)]
    pub subscription: Option<String>,
}

/// Figures only a running server has, in its memory and for this node: what usage shows
/// of them when the server answers.
pub trait LiveCounts: Send + Sync {
    /// Component uploads of `account` counted in the last hour.
    fn uploads_in_hour(&self, account: &str) -> u32;
    /// Event streams of `account` open now (the console's and MCP's).
    fn streams_open(&self, account: &str) -> u32;
    /// MCP sessions of `account` open now.
    fn mcp_sessions_open(&self, account: &str) -> u32;
}

/// The stores the operator's requests act on, and the plans their bounds come from.
#[derive(Clone)]
pub struct Admin {
    keys: Accounts,
    usage: Ledger,
    /// Each account's subscription, for usage.
    billing: Arc<dyn BillingStore>,
    plans: Plans,
    /// The running server's counts, once its state is loaded (shared by the clones, as the
    /// socket answers from the moment it is bound).
    live: Arc<OnceLock<Arc<dyn LiveCounts>>>,
}

impl Admin {
    /// Opens the stores on the data dir's `db` (creating their tables on first use).
    pub fn open(db: &Arc<Database>, plans: Plans) -> anyhow::Result<Self> {
        Ok(Self {
            keys: Arc::new(KeyStore::new(db.clone())?),
            usage: Arc::new(UsageStore::new(db.clone())?),
            billing: Arc::new(EmbeddedBilling::new(db.clone())?),
            plans,
            live: Arc::default(),
        })
    }

    /// The stores of the postgres backend, on a pool whose migrations have run.
    pub fn postgres(pool: PgPool, plans: Plans) -> Self {
        Self {
            keys: Arc::new(PgAccounts::new(pool.clone())),
            usage: Arc::new(PgUsage::new(pool.clone())),
            billing: Arc::new(PgBilling::new(pool)),
            plans,
            live: Arc::default(),
        }
    }

    /// From now on, usage shows `live`'s counts too (the first one given stays).
    pub fn show_live(&self, live: Arc<dyn LiveCounts>) {
        let _ = self.live.set(live);
    }

    /// Does what `request` asks.
    pub async fn execute(&self, request: Request) -> anyhow::Result<Response> {
        Ok(match request {
            Request::CreateKey { account, plan } => {
                let (secret, key) = self.keys.create(&account, plan, &self.plans).await?;
                Response::KeyCreated { secret, key }
            }
            Request::RevokeKey { key } => Response::KeyRevoked {
                key: self.keys.revoke(&key).await?,
            },
            Request::ListKeys => Response::Keys {
                keys: self.keys.list().await?,
            },
            Request::ListAccounts => Response::Accounts {
                accounts: self.keys.accounts().await?,
            },
            Request::SetPlan { account, plan } => Response::PlanSet {
                account: self
                    .keys
                    .set_plan(&account, plan, PlanSource::Operator)
                    .await?,
            },
            Request::Egress { account } => Response::Egress {
                allow: self.keys.egress(&account).await?,
                account,
            },
            Request::SetEgress { account, allow } => {
                for entry in &allow {
                    entry.check().map_err(anyhow::Error::msg)?;
                }
                Response::Egress {
                    allow: self.keys.set_egress(&account, allow).await?,
                    account,
                }
            }
            Request::Usage { month, account } => {
                let known: std::collections::HashMap<String, AccountInfo> = (self.keys)
                    .accounts()
                    .await?
                    .into_iter()
                    .map(|a| (a.name.clone(), a))
                    .collect();
                let subscriptions: std::collections::HashMap<String, String> = (self.billing)
                    .links()
                    .await?
                    .into_iter()
                    .filter_map(|l| Some((l.account, l.subscription?.status)))
                    .collect();
                let rows = self.usage.all().await?.into_iter();
                let rows = rows
                    .filter(|(a, m, _)| {
                        account.as_ref().is_none_or(|want| want == a)
                            && month.as_ref().is_none_or(|want| want == m)
                    })
                    .map(|(account, month, usage)| {
                        let info = known.get(&account);
                        let limits = info.map(|a| self.plans.limits(a.plan));
                        let live = self.live.get().zip(limits);
                        UsageRow {
                            plan: info.map(|a| a.plan),
                            subscription: subscriptions.get(&account).cloned(),
                            tokens_limit: limits.map(|l| l.tokens_per_month),
                            http_limits: limits
                                .map(|l| (l.http_requests_per_month, l.http_bytes_per_month)),
                            keys: info.zip(limits).map(|(a, l)| (a.active_keys, l.keys)),
                            uploads: live.map(|(live, l)| {
                                let used = live.uploads_in_hour(&account);
                                (used, l.component_uploads_per_hour)
                            }),
                            streams: live
                                .map(|(live, l)| (live.streams_open(&account), l.event_streams)),
                            mcp_sessions: live.map(|(live, l)| {
                                (live.mcp_sessions_open(&account), l.mcp_sessions)
                            }),
                            account,
                            month,
                            usage,
                        }
                    });
                Response::Usage {
                    rows: rows.collect(),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn requests_act_on_the_stores() {
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(Database::create(dir.path().join("db")).unwrap());
        let admin = Admin::open(&db, Plans::default()).unwrap();
        let create = Request::CreateKey {
            account: "acme".into(),
            plan: None,
        };
        let Response::KeyCreated { secret, key } = admin.execute(create).await.unwrap() else {
            panic!("not a created key")
        };
        assert_eq!(key.plan, Plan::Free);
        let set = Request::SetPlan {
            account: "acme".into(),
            plan: Plan::Liftoff,
        };
        let Response::PlanSet { account } = admin.execute(set).await.unwrap() else {
            panic!("not a plan change")
        };
        assert_eq!((account.plan, account.active_keys), (Plan::Liftoff, 1));
        let keys = KeyStore::new(db.clone()).unwrap();
        assert_eq!(
            keys.authenticate(&secret).unwrap().unwrap().plan,
            Plan::Liftoff
        );
        let revoke = Request::RevokeKey { key: key.id };
        assert!(matches!(
            admin.execute(revoke).await.unwrap(),
            Response::KeyRevoked { key } if key.revoked_at.is_some()
        ));
        assert!(keys.authenticate(&secret).unwrap().is_none());

        let usage = UsageStore::new(db).unwrap();
        let nov = 1_795_233_312_005;
        let delta = MonthUsage {
            run_ms: 5,
            ..MonthUsage::default()
        };
        usage.add("acme", nov, delta).unwrap();
        usage.add("zeta", nov, delta).unwrap();
        let only_zeta = Request::Usage {
            month: None,
            account: Some("zeta".into()),
        };
        let Response::Usage { rows } = admin.execute(only_zeta).await.unwrap() else {
            panic!("not usage")
        };
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].account.as_str(), rows[0].usage), ("zeta", delta));
        assert_eq!((rows[0].tokens_limit, rows[0].keys), (None, None));
        let only_acme = Request::Usage {
            month: None,
            account: Some("acme".into()),
        };
        let Response::Usage { rows } = admin.execute(only_acme).await.unwrap() else {
            panic!("not usage")
        };
        let liftoff = Plans::default().liftoff;
        assert_eq!(
            (rows[0].tokens_limit, rows[0].keys),
            (Some(liftoff.tokens_per_month), Some((0, liftoff.keys)))
        );
        let other_month = Request::Usage {
            month: Some("1999-01".into()),
            account: None,
        };
        assert_eq!(
            admin.execute(other_month).await.unwrap(),
            Response::Usage { rows: vec![] }
        );
    }

    #[test]
    fn requests_travel_as_tagged_json() {
        let request = Request::SetPlan {
            account: "acme".into(),
            plan: Plan::Lightyear,
        };
        let text = serde_json::to_string(&request).unwrap();
        assert_eq!(
            text,
            r#"{"op":"set_plan","account":"acme","plan":"lightyear"}"#
        );
        assert_eq!(serde_json::from_str::<Request>(&text).unwrap(), request);
        assert_eq!(request.op(), "set_plan", "the log's name is the wire's");
    }
}
