//! The start-up check of the Mind's provider: one `GET {base_url}/models` (OpenAI,
//! vLLM, Ollama and Anthropic all list their models there), which spends no tokens, and a
//! plain verdict — the key was refused, the model is not listed, the provider cannot be
//! reached, or all is well. The verdict is reported (`/readyz`'s `mind` field and the log),
//! never enforced: a provider outage must not take memory traffic out of a load balancer.

use std::time::Duration;

use reqwest::StatusCode;
use serde::{Deserialize, Serialize};

use super::{MindConfig, anthropic, remote};

/// Longest wait for the models listing.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// Models named in a "not listed" message.
const MODELS_SHOWN: usize = 8;

/// What the check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MindStatus {
    /// The built-in Mind: nothing to reach.
    Offline,
    /// The check has not answered yet.
    Checking,
    /// The provider accepted the key and lists the model.
    Ok,
    /// The provider refused the key (401 or 403).
    KeyRejected,
    /// The provider does not list the configured model.
    ModelNotFound,
    /// No answer: connection refused, DNS, TLS or timeout.
    Unreachable,
    /// The provider answered something else (an error status, or no listing it can read).
    Unverified,
}

/// The verdict on the configured Mind, as `/readyz` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MindCheck {
    pub provider: String,
    pub model: String,
    pub status: MindStatus,
    /// What was found, in words an operator can act on.
    pub message: String,
}

impl MindCheck {
    /// The state before the check answers.
    pub fn checking(cfg: &MindConfig) -> Self {
        Self::of(
            cfg,
            MindStatus::Checking,
            "checking the provider's models listing".into(),
        )
    }

    fn of(cfg: &MindConfig, status: MindStatus, message: String) -> Self {
        Self {
            provider: cfg.provider.clone(),
            model: cfg.model.clone(),
            status,
            message,
        }
    }
}

/// Checks `cfg`'s provider, key and model by listing the provider's models.
pub async fn probe(cfg: &MindConfig) -> MindCheck {
    let (status, message) = match cfg.provider.as_str() {
        "offline" => (
            MindStatus::Offline,
            "the built-in rule-based Mind: nothing to check".into(),
        ),
        _ => listing(cfg).await,
    };
    MindCheck::of(cfg, status, message)
}

#[derive(Deserialize)]
struct Listing {
    data: Vec<Listed>,
}

#[derive(Deserialize)]
struct Listed {
    id: String,
}

async fn listing(cfg: &MindConfig) -> (MindStatus, String) {
    let base = cfg.base_url().trim_end_matches('/');
    let client = match reqwest::Client::builder()
        .connect_timeout(remote::CONNECT_TIMEOUT)
        .timeout(PROBE_TIMEOUT)
        .build()
    {
        Ok(client) => client,
        Err(e) => return (MindStatus::Unverified, format!("no HTTP client: {e}")),
    };
    let key = cfg.api_key.as_ref().map(|k| k.expose());
    let (url, request) = if cfg.provider == "anthropic" {
        let url = format!("{base}/models?limit=1000");
        let mut request = client
            .get(&url)
            .header("anthropic-version", anthropic::API_VERSION);
        if let Some(key) = key {
            request = request.header("x-api-key", key);
        }
        (url, request)
    } else {
        let url = format!("{base}/models");
        let mut request = client.get(&url);
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        (url, request)
    };
    let response = match request.send().await {
        Ok(response) => response,
        Err(e) => {
            let mut why = format!("GET {url}: no answer");
            let mut source: Option<&dyn std::error::Error> = Some(&e);
            while let Some(err) = source {
                why.push_str(&format!(": {err}"));
                source = err.source();
            }
            return (MindStatus::Unreachable, why);
        }
    };
    let status = response.status();
    let body = response.bytes().await.unwrap_or_default();
    if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
        let said = remote::error_text(&body);
        return (
            MindStatus::KeyRejected,
            format!(
                "GET {url}: {status}: {said}: the provider refused the API key; set {}",
                cfg.key_settings()
            ),
        );
    }
    if !status.is_success() {
        let said = remote::error_text(&body);
        return (
            MindStatus::Unverified,
            format!("GET {url}: {status}: {said}: the key and model could not be checked"),
        );
    }
    let Ok(listing) = serde_json::from_slice::<Listing>(&body) else {
        return (
            MindStatus::Unverified,
            format!("GET {url}: no models listing in the reply; the model could not be checked"),
        );
    };
    let model = cfg.model.as_str();
    if listing.data.iter().any(|m| names(&m.id, model)) {
        return (
            MindStatus::Ok,
            format!("the provider accepted the key and lists model {model:?}"),
        );
    }
    let shown: Vec<&str> = listing
        .data
        .iter()
        .take(MODELS_SHOWN)
        .map(|m| m.id.as_str())
        .collect();
    (
        MindStatus::ModelNotFound,
        format!(
            "model {model:?} is not among the {} models {url} lists ({}); set [mind] model or \
             WASMIND_MIND_MODEL",
            listing.data.len(),
            shown.join(", ")
        ),
    )
}

/// Whether the listed `id` is `model`: the same name, Ollama's `model:latest`, or a dated
/// snapshot `model-YYYYMMDD` (Anthropic lists snapshots, not the aliases that name them).
fn names(id: &str, model: &str) -> bool {
    let Some(rest) = id.strip_prefix(model) else {
        return false;
    };
    let dated = |d: &str| d.len() == 8 && d.bytes().all(|b| b.is_ascii_digit());
    rest.is_empty() || rest == ":latest" || rest.strip_prefix('-').is_some_and(dated)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::mind::remote::fake::{self, Reply};

    fn models(ids: &[&str]) -> Reply {
        let data: Vec<_> = ids
            .iter()
            .map(|id| json!({"id": id, "object": "model"}))
            .collect();
        fake::ok(&json!({"object": "list", "data": data}))
    }

    #[tokio::test]
    async fn openai_listing_says_ok_or_model_not_found() {
        let (mut cfg, fake) = fake::serve(
            "openai",
            "models",
            vec![models(&["gpt-a", "test-model"]), models(&["gpt-a"])],
        )
        .await;
        cfg.api_key = Some("sk-probe".into());
        let check = probe(&cfg).await;
        assert_eq!(check.status, MindStatus::Ok, "{}", check.message);
        assert_eq!(
            fake.header(0, "authorization").as_deref(),
            Some("Bearer sk-probe")
        );
        let check = probe(&cfg).await;
        assert_eq!(check.status, MindStatus::ModelNotFound);
        assert!(check.message.contains("\"test-model\"") && check.message.contains("gpt-a"));
        assert!(
            check.message.contains("WASMIND_MIND_MODEL"),
            "{}",
            check.message
        );
    }

    #[test]
    fn a_listed_name_is_the_model_its_latest_tag_or_a_dated_snapshot() {
        assert!(names("gpt-4o", "gpt-4o"));
        assert!(names("llama3.2:latest", "llama3.2"));
        assert!(names("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"));
        assert!(!names("gpt-4o-mini", "gpt-4o"));
        assert!(!names("llama3.2:1b", "llama3.2"));
        assert!(!names("claude-sonnet-4", "claude-sonnet-4-5"));
    }

    #[tokio::test]
    async fn a_refused_key_is_named_with_its_settings() {
        let (mut cfg, fake) = fake::serve("anthropic", "models", vec![fake::status(401)]).await;
        cfg.api_key = Some("sk-ant-wrong".into());
        let check = probe(&cfg).await;
        assert_eq!(check.status, MindStatus::KeyRejected);
        assert!(
            check.message.contains("ANTHROPIC_API_KEY"),
            "{}",
            check.message
        );
        assert!(!check.message.contains("sk-ant-wrong"), "{}", check.message);
        assert_eq!(fake.header(0, "x-api-key").as_deref(), Some("sk-ant-wrong"));
        assert_eq!(
            fake.header(0, "anthropic-version").as_deref(),
            Some(anthropic::API_VERSION)
        );
    }

    #[tokio::test]
    async fn other_answers_are_unverified_or_unreachable() {
        let (cfg, _fake) = fake::serve(
            "openai",
            "models",
            vec![fake::status(404), fake::ok(&json!({"models": []}))],
        )
        .await;
        assert_eq!(probe(&cfg).await.status, MindStatus::Unverified);
        assert_eq!(probe(&cfg).await.status, MindStatus::Unverified);
        let closed = MindConfig {
            base_url: Some(fake::closed_base_url()),
            ..cfg
        };
        assert_eq!(probe(&closed).await.status, MindStatus::Unreachable);
        assert_eq!(
            probe(&MindConfig::default()).await.status,
            MindStatus::Offline
        );
    }
}
