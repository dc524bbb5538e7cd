//! [`Tools`]: what the API registers, lists and deletes, and what agents' runs call (the
//! runtime, through each run's journal): an account's tools as the Mind sees them, and one
//! call of one of them through the egress door.

use std::{sync::Arc, time::Duration};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    config::ToolsConfig,
    define::{Definition, Registration},
    http::HttpCall,
    mcp::Remote,
    seal::Sealer,
    store::{CreateError, Listing, StoreError, ToolBackend, ToolKind, ToolRecord},
};
use crate::{
    accounts::{AccountError, Accounts, Ledger, MonthUsage, Plan},
    clock::now_ms,
    egress::{Egress, Moved, policy::Allow},
    id::new_id,
    invalid::Invalid,
    secret::Secret,
    text::cut,
};

/// The prefix of tools' ids.
const ID_PREFIX: &str = "tool_";
/// The prefix of the `Idempotency-Key` of a call a tenant tries ([`Tools::try_call`]).
const TRY_PREFIX: &str = "try_";
/// Schema errors quoted when arguments do not fit.
const QUOTED_ERRORS: usize = 3;

/// One tool as the Mind sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// The JSON Schema of its arguments, as JSON text.
    pub parameters: String,
}

/// A call of a tool found and its arguments checked ([`Tools::resolve`]), to be sent.
#[derive(Debug)]
pub struct Resolved {
    target: Target,
    arguments: Map<String, Value>,
}

#[derive(Debug)]
enum Target {
    Http(ToolRecord),
    /// The MCP server, and its own name of the tool.
    Mcp(ToolRecord, String),
}

/// Why a call gave no result (each maps to the WIT `tool-error` case of its name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ToolError {
    /// The account has no tool of that name.
    #[error("{0}")]
    Unknown(String),
    /// The name is one of the account's MCP servers, which is not a tool: its tools are
    /// called as `mcp_<server>_<tool>`.
    #[error("{0} is an MCP server; its tools are called as mcp_{0}_<tool>")]
    Server(String),
    /// The arguments are not a JSON object, or do not fit the tool's schema.
    #[error("{0}")]
    InvalidArguments(String),
    /// The egress door refused the request before anything was sent; `rule` is
    /// `allowlist` or `address`.
    #[error("{message} (egress rule: {rule})")]
    Denied { rule: String, message: String },
    /// The request was made and failed: a status, a timeout, the connection, the protocol.
    #[error("{0}")]
    Failed(String),
}

/// Why an account's tools could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ToolsError {
    #[error(transparent)]
    Storage(#[from] StoreError),
    #[error(transparent)]
    Accounts(#[from] AccountError),
}

/// Why a registration was not stored.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error("a tool with that name exists")]
    Exists,
    #[error("the account has its {max} tools")]
    Quota { max: u32 },
    #[error(transparent)]
    Storage(#[from] StoreError),
}

/// Why an MCP server's tools were not listed again.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    #[error("no tool of that name")]
    NotFound,
    #[error("{0} is an HTTP tool; only an MCP server's tools are listed")]
    NotMcp(String),
    #[error(transparent)]
    Tool(#[from] ToolError),
    #[error(transparent)]
    Storage(#[from] StoreError),
}

/// Tenants' tools: stored, sealed, listed and called.
pub struct Tools {
    store: Arc<dyn ToolBackend>,
    sealer: Sealer,
    egress: Arc<Egress>,
    accounts: Accounts,
    usage: Ledger,
    max_result_chars: usize,
}

/// Where a tools service's parts are.
pub struct ToolsParts {
    pub store: Arc<dyn ToolBackend>,
    pub egress: Arc<Egress>,
    pub accounts: Accounts,
    pub usage: Ledger,
}

impl Tools {
    /// Tools kept in `store`, their secrets sealed under the key of `config` (made if
    /// missing; never in `data_dir`), called through `egress`. Secrets sealed under another
    /// key than this one are reported (their tools' calls fail until the key is given).
    pub async fn open(
        parts: ToolsParts,
        config: &ToolsConfig,
        data_dir: &std::path::Path,
    ) -> anyhow::Result<Self> {
        let ToolsParts {
            store,
            egress,
            accounts,
            usage,
        } = parts;
        config.check()?;
        let key_file = config.secret_key_file.as_deref().ok_or_else(|| {
            anyhow::anyhow!(
                "no key file for tools' secrets: set [tools] secret_key_file (or \
                 WASMIND_TOOLS_KEY_FILE), or HOME so the default can be made"
            )
        })?;
        let sealer = Sealer::open(key_file, data_dir)?;
        let others: Vec<String> = (store.sealing_keys().await?.into_iter())
            .filter(|k| k != sealer.key_id())
            .collect();
        if !others.is_empty() {
            tracing::error!(
                key = sealer.key_id(),
                file = %key_file.display(),
                others = ?others,
                "tools' secrets were sealed under other keys than [tools] secret_key_file's: \
                 their calls fail until this node is given the key file that sealed them"
            );
        }
        Ok(Self {
            store,
            sealer,
            egress,
            accounts,
            usage,
            max_result_chars: config.max_result_chars,
        })
    }

    /// Stores `registration` for `account`, which may keep `max` tools; its secret sealed.
    pub async fn register(
        &self,
        account: &str,
        registration: Registration,
        max: u32,
    ) -> Result<ToolRecord, RegisterError> {
        let max_timeout = self.egress.total_timeout().as_secs_f64();
        let Definition {
            name,
            description,
            timeout_secs,
            kind,
            secret,
        } = registration.check(max_timeout)?;
        let secret = secret.map(|s| self.sealer.seal(account, &name, &s));
        let record = ToolRecord {
            id: new_id(ID_PREFIX),
            account: account.to_string(),
            name,
            description,
            timeout_secs,
            created_at: now_ms(),
            kind,
            secret,
        };
        match self.store.create(record.clone(), max).await {
            Ok(()) => Ok(record),
            Err(CreateError::Exists) => Err(RegisterError::Exists),
            Err(CreateError::Quota { max }) => Err(RegisterError::Quota { max }),
            Err(CreateError::Storage(e)) => Err(e.into()),
        }
    }

    /// The account's tools, by name.
    pub async fn list(&self, account: &str) -> Result<Vec<ToolRecord>, StoreError> {
        self.store.list(account).await
    }

    /// The account's tool `name`.
    pub async fn get(&self, account: &str, name: &str) -> Result<Option<ToolRecord>, StoreError> {
        self.store.get(account, name).await
    }

    /// Removes the account's tool `name`; agents stop seeing it at their next listing.
    pub async fn delete(
        &self,
        account: &str,
        name: &str,
    ) -> Result<Option<ToolRecord>, StoreError> {
        self.store.delete(account, name).await
    }

    /// Lists the account's MCP server `name` again. A failure keeps the tools listed
    /// before (a server never listed keeps the failure, as a first use would).
    pub async fn refresh(
        &self,
        account: &str,
        plan: Plan,
        name: &str,
    ) -> Result<ToolRecord, RefreshError> {
        let record = self
            .store
            .get(account, name)
            .await?
            .ok_or(RefreshError::NotFound)?;
        let ToolKind::Mcp(server) = &record.kind else {
            return Err(RefreshError::NotMcp(name.to_string()));
        };
        let listing = match self.list_server(plan, &record).await {
            Ok(listing) => listing,
            Err(e) => {
                if server.listing.is_none() {
                    let failed = failed_listing(&e);
                    (self.store.set_listing(account, name, &record.id, failed)).await?;
                }
                return Err(e.into());
            }
        };
        let kept = self
            .store
            .set_listing(account, name, &record.id, listing)
            .await?;
        kept.ok_or(RefreshError::NotFound)
    }

    /// Every tool of the account as the Mind sees it, by name: its HTTP tools and its MCP
    /// servers' tools as last listed (a server never listed is listed now; one that cannot
    /// be offers none, and says why in its record until refreshed).
    pub async fn specs(&self, account: &str) -> Result<Vec<ToolSpec>, ToolsError> {
        let mut specs = Vec::new();
        for record in self.store.list(account).await? {
            match &record.kind {
                ToolKind::Http(tool) => specs.push(ToolSpec {
                    name: record.name.clone(),
                    description: record.description.clone(),
                    parameters: tool.parameters.to_string(),
                }),
                ToolKind::Mcp(_) => {
                    let listing = self.listing(account, &record).await?;
                    specs.extend(listing.tools.into_iter().map(|t| ToolSpec {
                        name: t.name,
                        description: t.description,
                        parameters: t.parameters.to_string(),
                    }));
                }
            }
        }
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(specs)
    }

    /// Calls the account's tool `name` as a tenant tries it: what [`Tools::resolve`] and [`Tools::send`] do,
    /// within the plan's HTTP budgets for the month (the ledger's count; a try is no run's),
    /// and counted in them once sent: one request, and the arguments' and result's bytes.
    pub async fn try_call(
        &self,
        account: &str,
        plan: Plan,
        name: &str,
        arguments_json: &str,
    ) -> Result<String, ToolError> {
        let call = self.resolve(account, name, arguments_json).await?;
        let now = now_ms();
        let month = self
            .usage
            .month(account, now)
            .await
            .map_err(|e| unreadable(&e))?;
        let month = Moved {
            requests: month.http_requests,
            bytes: month.http_bytes,
        };
        let sent = arguments_json.len() as u64;
        let max =
            (self.egress.budget(plan, sent, Moved::default(), month)).map_err(ToolError::denied)?;
        let key = new_id(TRY_PREFIX);
        let outcome = self.send(plan, call, &key, max).await;
        let bytes = match &outcome {
            Ok(text) => sent + text.len() as u64,
            Err(ToolError::Failed(_)) => sent,
            Err(_) => return outcome,
        };
        let moved = MonthUsage {
            http_requests: 1,
            http_bytes: bytes,
            ..MonthUsage::default()
        };
        if let Err(e) = self.usage.add(account, now, moved).await {
            tracing::error!(account, error = %e, "a tool call could not be counted in the usage ledger");
        }
        outcome
    }

    /// Finds the account's tool `name` and checks `arguments_json` (a JSON object) against
    /// its schema: what is known before anything is sent, so that an unknown tool or bad
    /// arguments are told as such before any budget is looked at.
    pub async fn resolve(
        &self,
        account: &str,
        name: &str,
        arguments_json: &str,
    ) -> Result<Resolved, ToolError> {
        let arguments = match serde_json::from_str::<Value>(arguments_json) {
            Ok(Value::Object(arguments)) => arguments,
            Ok(_) => {
                return Err(ToolError::InvalidArguments(
                    "the arguments must be a JSON object".into(),
                ));
            }
            Err(e) => {
                return Err(ToolError::InvalidArguments(format!(
                    "the arguments are not JSON: {e}"
                )));
            }
        };
        let unknown = || ToolError::Unknown(format!("this account has no tool named {name:?}"));
        let record = self
            .store
            .get(account, name)
            .await
            .map_err(|e| unreadable(&e))?;
        let target = match record {
            Some(record) => {
                let ToolKind::Http(tool) = &record.kind else {
                    return Err(ToolError::Server(name.to_owned()));
                };
                fits(&tool.parameters, &arguments, true)?;
                Target::Http(record)
            }
            None => {
                let (server, tool) = self.mcp_tool(account, name).await?.ok_or_else(unknown)?;
                fits(&tool.parameters, &arguments, false)?;
                Target::Mcp(server, tool.remote)
            }
        };
        Ok(Resolved { target, arguments })
    }

    /// Sends the [`resolved`](Self::resolve) call through the egress door, with
    /// `idempotency_key` sent along and at most `max_response_bytes` of response kept (what
    /// the caller's budget check, `Egress::budget`, left): the result's text, cut at
    /// `[tools] max_result_chars`.
    ///
    /// A request went out when the outcome is a result or [`ToolError::Failed`]; the caller
    /// counts it in the plan's budgets (the arguments' and result's bytes), as it journals it.
    pub async fn send(
        &self,
        plan: Plan,
        call: Resolved,
        idempotency_key: &str,
        max_response_bytes: u64,
    ) -> Result<String, ToolError> {
        let Resolved { target, arguments } = call;
        let (Target::Http(record) | Target::Mcp(record, _)) = &target;
        let own = (self.own(&record.account).await).map_err(|e| unreadable(&e))?;
        let text = match &target {
            Target::Http(record) => {
                let ToolKind::Http(tool) = &record.kind else {
                    unreachable!("resolved as an HTTP tool")
                };
                let call = HttpCall {
                    account: &record.account,
                    plan,
                    own: &own,
                    tool,
                    secret: self.secret(record)?,
                    timeout: Duration::from_secs_f64(record.timeout_secs),
                    idempotency_key,
                    max_response_bytes,
                };
                call.send(&self.egress, arguments).await?
            }
            Target::Mcp(server, tool) => {
                let remote = self.remote(plan, &own, server, max_response_bytes)?;
                (remote.call(&self.egress, tool, arguments, idempotency_key)).await?
            }
        };
        Ok(cut(&text, self.max_result_chars))
    }

    /// The account's MCP server whose listed tool `name` is, and that tool.
    async fn mcp_tool(
        &self,
        account: &str,
        name: &str,
    ) -> Result<Option<(ToolRecord, super::store::ListedTool)>, ToolError> {
        if !name.starts_with("mcp_") {
            return Ok(None);
        }
        for record in self.store.list(account).await.map_err(|e| unreadable(&e))? {
            let ToolKind::Mcp(_) = &record.kind else {
                continue;
            };
            if !name.starts_with(&format!("mcp_{}_", record.name)) {
                continue;
            }
            let listing = self
                .listing(account, &record)
                .await
                .map_err(|e| unreadable(&e))?;
            if let Some(tool) = listing.tools.into_iter().find(|t| t.name == name) {
                return Ok(Some((record, tool)));
            }
        }
        Ok(None)
    }

    /// The MCP server's listing: the one kept, else a new one (kept, failed or not).
    async fn listing(&self, account: &str, record: &ToolRecord) -> Result<Listing, StoreError> {
        if let ToolKind::Mcp(server) = &record.kind
            && let Some(listing) = &server.listing
        {
            return Ok(listing.clone());
        }
        let plan = self.plan(account).await?;
        let listing = (self.list_server(plan, record).await).unwrap_or_else(|e| failed_listing(&e));
        if listing.error.is_some() {
            tracing::warn!(account, server = %record.name, error = ?listing.error, "an MCP server could not be listed");
        }
        let name = &record.name;
        self.store
            .set_listing(account, name, &record.id, listing.clone())
            .await?;
        Ok(listing)
    }

    /// Lists the MCP server of `record` now.
    async fn list_server(&self, plan: Plan, record: &ToolRecord) -> Result<Listing, ToolError> {
        let own = (self.own(&record.account).await).map_err(|e| unreadable(&e))?;
        let remote = self.remote(plan, &own, record, self.egress.max_response_bytes())?;
        let tools = remote.list(&self.egress, &record.name).await?;
        Ok(Listing {
            listed_at: now_ms(),
            tools,
            error: None,
        })
    }

    /// How a session reaches the MCP server of `record`.
    fn remote<'a>(
        &self,
        plan: Plan,
        own: &'a [Allow],
        record: &'a ToolRecord,
        max_response_bytes: u64,
    ) -> Result<Remote<'a>, ToolError> {
        let ToolKind::Mcp(server) = &record.kind else {
            unreachable!("only an MCP server's record is reached as one")
        };
        Ok(Remote {
            account: &record.account,
            plan,
            own,
            url: &server.url,
            bearer: self.secret(record)?,
            timeout: Duration::from_secs_f64(record.timeout_secs),
            max_response_bytes,
        })
    }

    /// The tool's secret, opened.
    fn secret(&self, record: &ToolRecord) -> Result<Option<Secret>, ToolError> {
        let Some(sealed) = &record.secret else {
            return Ok(None);
        };
        (self
            .sealer
            .open_secret(&record.account, &record.name, sealed))
        .map(Some)
        .map_err(|e| ToolError::Failed(format!("the host cannot open the tool's secret: {e}")))
    }

    async fn plan(&self, account: &str) -> Result<Plan, StoreError> {
        let plan = self.accounts.plan(account).await.map_err(account_error)?;
        Ok(plan.unwrap_or_default())
    }

    /// The account's own egress entries (the operator's, beside everyone's and the plan's).
    async fn own(&self, account: &str) -> Result<Vec<Allow>, StoreError> {
        self.accounts.egress(account).await.map_err(account_error)
    }
}

fn account_error(e: AccountError) -> StoreError {
    match e {
        AccountError::Storage(e) => e,
        other => StoreError::Corrupt(other.to_string()),
    }
}

/// A listing that failed: no tools, and why.
fn failed_listing(e: &ToolError) -> Listing {
    Listing {
        listed_at: now_ms(),
        tools: Vec::new(),
        error: Some(e.to_string()),
    }
}

/// A store failure in a call: logged, and the call fails without saying more.
fn unreadable(e: &StoreError) -> ToolError {
    tracing::error!(error = %e, "reading tools failed");
    ToolError::Failed("the host could not read the account's tools; try again".into())
}

/// Whether `arguments` fit `schema`; the first few mismatches say where. A schema that
/// does not compile (an MCP server's, which the server checks itself) is passed unless
/// `strict`.
fn fits(schema: &Value, arguments: &Map<String, Value>, strict: bool) -> Result<(), ToolError> {
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(_) if !strict => return Ok(()),
        Err(e) => {
            return Err(ToolError::Failed(format!(
                "the tool's schema does not compile: {e}"
            )));
        }
    };
    let arguments = Value::Object(arguments.clone());
    let errors: Vec<String> = (validator.iter_errors(&arguments))
        .take(QUOTED_ERRORS)
        .map(|e| match e.instance_path.to_string() {
            path if path.is_empty() => e.to_string(),
            path => format!("{path}: {e}"),
        })
        .collect();
    match errors.is_empty() {
        true => Ok(()),
        false => Err(ToolError::InvalidArguments(format!(
            "the arguments do not fit the tool's schema: {}",
            errors.join("; ")
        ))),
    }
}
