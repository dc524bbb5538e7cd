//! [`Provider`] over Stripe's REST API (or anything speaking it at `[billing] base_url`):
//! form-encoded requests, as Stripe takes them, with the secret key as bearer token;
//! every failure — refused, unreachable, slower than `timeout_ms` — is [`Unavailable`],
//! its cause logged here (never the key).

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;

use super::{
    BillingConfig,
    provider::{CheckoutRequest, HostedPage, Provider, Unavailable},
};
use crate::secret::Secret;

/// Stripe at a base URL, with a secret key.
pub struct Stripe {
    http: reqwest::Client,
    base_url: String,
    key: Secret,
}

#[derive(Deserialize)]
struct Created {
    id: String,
    url: Option<String>,
}

impl Stripe {
    /// The client of `config` (whose `secret_key` is set).
    pub fn new(config: &BillingConfig, key: Secret) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(config.timeout_ms))
            .build()?;
        Ok(Self {
            http,
            base_url: config.base_url.trim_end_matches('/').to_owned(),
            key,
        })
    }

    /// POSTs `form` to `path`; the created object's id and URL.
    async fn post(
        &self,
        path: &str,
        form: &[(&str, &str)],
        idempotency: Option<&str>,
    ) -> Result<Created, Unavailable> {
        let body = serde_urlencoded::to_string(form).map_err(|e| Unavailable(e.to_string()))?;
        let mut request = (self.http.post(format!("{}{path}", self.base_url)))
            .bearer_auth(self.key.expose())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        if let Some(key) = idempotency {
            request = request.header("idempotency-key", key);
        }
        let failed = |cause: String| {
            tracing::warn!(path, %cause, "billing provider call failed");
            Unavailable(cause)
        };
        let response = request.send().await.map_err(|e| failed(e.to_string()))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| failed(e.to_string()))?;
        if !status.is_success() {
            return Err(failed(format!(
                "{status}: {}",
                text.chars().take(300).collect::<String>()
            )));
        }
        serde_json::from_str(&text).map_err(|e| failed(format!("unreadable answer: {e}")))
    }
}

/// The URL a hosted page must have.
fn page(created: Created) -> Result<HostedPage, Unavailable> {
    let url = created
        .url
        .ok_or_else(|| Unavailable(format!("{} came without a url", created.id)))?;
    Ok(HostedPage {
        id: created.id,
        url,
    })
}

#[async_trait]
impl Provider for Stripe {
    async fn create_customer(&self, account: &str) -> Result<String, Unavailable> {
        let form = [("metadata[account]", account), ("description", account)];
        let idempotency = format!("wasmind-customer-{account}");
        Ok(self
            .post("/v1/customers", &form, Some(&idempotency))
            .await?
            .id)
    }

    async fn checkout(&self, r: &CheckoutRequest<'_>) -> Result<HostedPage, Unavailable> {
        let success = format!("{}?billing=success", r.return_url);
        let cancel = format!("{}?billing=cancel", r.return_url);
        let form = [
            ("mode", "subscription"),
            ("customer", r.customer),
            ("client_reference_id", r.account),
            ("line_items[0][price]", r.price),
            ("line_items[0][quantity]", "1"),
            ("success_url", &success),
            ("cancel_url", &cancel),
            ("metadata[plan]", r.plan.as_str()),
            ("subscription_data[metadata][plan]", r.plan.as_str()),
            ("subscription_data[metadata][account]", r.account),
        ];
        page(self.post("/v1/checkout/sessions", &form, None).await?)
    }

    async fn portal(&self, customer: &str, return_url: &str) -> Result<HostedPage, Unavailable> {
        let form = [("customer", customer), ("return_url", return_url)];
        page(
            self.post("/v1/billing_portal/sessions", &form, None)
                .await?,
        )
    }
}
