//! The `[billing]` section: the payment provider (Stripe's API, or anything speaking it at
//! `base_url`), its secrets, the price of each paid plan, and how long a failed payment
//! keeps the plan. Absent secrets mean no billing: the billing routes answer 501
//! `billing_not_configured` and nothing else changes.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::{accounts::Plan, secret::Secret};

/// The `[billing]` section of the config file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BillingConfig {
    /// The provider's API root; tests and on-premises operators point it elsewhere.
    pub base_url: String,
    /// The provider's secret API key (env `WASMIND_BILLING_SECRET_KEY`; never shown).
    pub secret_key: Option<Secret>,
    /// The webhook endpoint's signing secret (env `WASMIND_BILLING_WEBHOOK_SECRET`).
    pub webhook_secret: Option<Secret>,
    /// Where the provider sends the user back after a checkout or the portal (the console).
    pub return_url: String,
    /// The prices of the paid plans; a plan's first is the one a checkout without a price
    /// id uses.
    pub prices: Vec<PriceConfig>,
    /// How far a webhook's signed timestamp may be from now, in seconds (replay bound).
    pub tolerance_secs: u64,
    /// How long a subscription whose payment failed keeps its plan, in seconds, before the
    /// account moves to Free (7 days by default).
    pub grace_secs: u64,
    /// How long one call to the provider may take, in milliseconds, before the caller gets
    /// 502 `billing_unavailable`.
    pub timeout_ms: u64,
}

/// One `[[billing.prices]]` entry: a provider price id and the plan it buys.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PriceConfig {
    /// The provider's price id (`price_…`).
    pub id: String,
    /// The plan it buys: `liftoff` or `lightyear`.
    pub plan: Plan,
    /// Its currency (ISO 4217, lower case), shown to the user choosing.
    pub currency: String,
}

impl Default for BillingConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.stripe.com".into(),
            secret_key: None,
            webhook_secret: None,
            return_url: "http://localhost:8080/console/".into(),
            prices: Vec::new(),
            tolerance_secs: 300,
            grace_secs: 7 * 24 * 3_600,
            timeout_ms: 10_000,
        }
    }
}

impl BillingConfig {
    /// Whether billing is on: both secrets given.
    pub fn enabled(&self) -> bool {
        self.secret_key.is_some() && self.webhook_secret.is_some()
    }

    /// Takes the secrets from `WASMIND_BILLING_SECRET_KEY` / `WASMIND_BILLING_WEBHOOK_SECRET`.
    pub fn apply_env(&mut self, env: &BTreeMap<String, String>) {
        if let Some(key) = env.get("WASMIND_BILLING_SECRET_KEY") {
            self.secret_key = Some(key.as_str().into());
        }
        if let Some(secret) = env.get("WASMIND_BILLING_WEBHOOK_SECRET") {
            self.webhook_secret = Some(secret.as_str().into());
        }
    }

    /// Refuses, at start-up, one secret without the other, a price for Free, a price id
    /// given twice, and a zero timeout.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.secret_key.is_some() != self.webhook_secret.is_some() {
            anyhow::bail!(
                "[billing] needs both secret_key (WASMIND_BILLING_SECRET_KEY) and \
                 webhook_secret (WASMIND_BILLING_WEBHOOK_SECRET), or neither"
            );
        }
        for (i, price) in self.prices.iter().enumerate() {
            if price.plan == Plan::Free {
                anyhow::bail!(
                    "[[billing.prices]] {:?}: the free plan has no price",
                    price.id
                );
            }
            if self.prices[..i].iter().any(|p| p.id == price.id) {
                anyhow::bail!("[[billing.prices]] {:?} is given twice", price.id);
            }
        }
        if self.timeout_ms == 0 {
            anyhow::bail!("[billing] timeout_ms must be at least 1");
        }
        Ok(())
    }

    /// The price a checkout for `plan` uses: `id` if it is one of the plan's, else the
    /// plan's first; `None` when `id` is not the plan's or the plan has none.
    pub fn price(&self, plan: Plan, id: Option<&str>) -> Option<&PriceConfig> {
        let mut of_plan = self.prices.iter().filter(|p| p.plan == plan);
        match id {
            Some(id) => of_plan.find(|p| p.id == id),
            None => of_plan.next(),
        }
    }

    /// The plan a provider price buys, if it is one of ours.
    pub fn plan_of_price(&self, id: &str) -> Option<Plan> {
        self.prices.iter().find(|p| p.id == id).map(|p| p.plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn priced() -> BillingConfig {
        let text = "secret_key = \"sk\"\nwebhook_secret = \"wh\"\n\
                    [[prices]]\nid = \"price_l\"\nplan = \"liftoff\"\ncurrency = \"usd\"\n\
                    [[prices]]\nid = \"price_y\"\nplan = \"lightyear\"\ncurrency = \"usd\"\n\
                    [[prices]]\nid = \"price_ye\"\nplan = \"lightyear\"\ncurrency = \"eur\"\n";
        toml::from_str(text).unwrap()
    }

    #[test]
    fn prices_belong_to_their_plan() {
        let c = priced();
        c.check().unwrap();
        assert!(c.enabled());
        assert_eq!(c.price(Plan::Lightyear, None).unwrap().id, "price_y");
        assert_eq!(
            c.price(Plan::Lightyear, Some("price_ye")).unwrap().currency,
            "eur"
        );
        assert_eq!(
            c.price(Plan::Lightyear, Some("price_l")),
            None,
            "another plan's"
        );
        assert_eq!(c.price(Plan::Free, None), None);
        assert_eq!(c.plan_of_price("price_l"), Some(Plan::Liftoff));
        assert_eq!(c.plan_of_price("price_x"), None);
        assert!(format!("{c:?}").contains("<redacted>") && !format!("{c:?}").contains("\"sk\""));
    }

    #[test]
    fn half_a_configuration_is_refused() {
        let mut c = BillingConfig {
            secret_key: Some("sk".into()),
            ..BillingConfig::default()
        };
        assert!(
            c.check()
                .unwrap_err()
                .to_string()
                .contains("webhook_secret")
        );
        c.apply_env(&BTreeMap::from([(
            "WASMIND_BILLING_WEBHOOK_SECRET".into(),
            "wh".into(),
        )]));
        c.check().unwrap();
        assert!(!BillingConfig::default().enabled());
        let err = toml::from_str::<BillingConfig>("price = 1").unwrap_err();
        assert!(err.to_string().contains("price"), "{err}");
    }
}
