//! A component upload within the account's plan (its size, count and uploads per hour),
//! and an upload's refusals.

use serde_json::json;

use super::components::{ComponentView, UploadQuery, UploadRateDetails};
use crate::{
    accounts::Principal,
    app::{AppError, AppResult, AppState, Kind},
    invalid::Invalid,
    runtime::{Upload, UploadError},
};

/// The largest component `who`'s plan takes, in bytes: what an upload's body is read up to.
pub fn max_bytes(state: &AppState, who: &Principal) -> u64 {
    state.limits(who.plan).component_max_bytes
}

/// Validates, precompiles and stores `bytes` as the component `q` names, of `who`'s account,
/// within its plan's components and uploads per hour.
pub async fn upload(
    state: &AppState,
    who: &Principal,
    q: UploadQuery,
    bytes: Vec<u8>,
) -> AppResult<ComponentView> {
    let limits = state.limits(who.plan);
    let record = state
        .runtime
        .upload_component(Upload {
            account: who.account.to_string(),
            name: q.name,
            version: q.version,
            bytes,
            max_components: limits.components,
            plan: who.plan,
            uploads_per_hour: limits.component_uploads_per_hour,
        })
        .await?;
    Ok(ComponentView::from(record))
}

/// 400 `invalid_<parameter>` for an upload's name or version.
fn invalid_parameter(parameter: &str, message: impl Into<String>) -> AppError {
    AppError::new(Kind::BadRequest, format!("invalid_{parameter}"), message)
        .with_details(json!({ "parameter": parameter }))
}

impl From<UploadError> for AppError {
    fn from(e: UploadError) -> Self {
        match e {
            UploadError::Invalid(Invalid { field, message }) => invalid_parameter(field, message),
            UploadError::InvalidComponent(m) => AppError::new(
                Kind::BadRequest,
                "invalid_component",
                format!("the upload cannot run as an agent: {m}"),
            ),
            UploadError::Exists => AppError::new(
                Kind::Conflict,
                "component_exists",
                "this account has a component of that name and version; upload a new version",
            ),
            UploadError::Quota { max } => AppError::new(
                Kind::PaymentRequired,
                "component_quota_exceeded",
                format!(
                    "this account has its plan's {max} components; delete one or upgrade the plan"
                ),
            )
            .with_details(json!({ "limit": max })),
            UploadError::RateLimited {
                plan,
                per_hour,
                retry_after_secs,
            } => {
                let mut e = AppError::new(
                    Kind::TooManyRequests,
                    "rate_limited",
                    format!(
                        "this account uploaded its {per_hour} components per hour; retry in {retry_after_secs} s"
                    ),
                )
                .with_details(UploadRateDetails {
                    plan: plan.as_str(),
                    window: "hour",
                    limit_per_hour: per_hour,
                });
                e.retry_after = Some(retry_after_secs);
                e
            }
            UploadError::Storage(e) => AppError::internal(&e),
        }
    }
}
