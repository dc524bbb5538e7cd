//! How a completion fails. Policy: a provider's single attempt fails with a [`Failure`],
//! which says whether retrying may help; the retry wrapper turns what is left after its
//! retries into the [`MindError`] agents see. Messages name the provider's URL and status
//! and quote its error text, never the API key.

use std::time::Duration;

/// Why a completion failed, after retries; what the guest's `mind-error` carries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MindError {
    /// The provider failed transiently and kept failing through the retries.
    #[error("the Mind is unavailable: {0}")]
    Unavailable(String),
    /// The provider refused the request (a 4xx other than 408 and 429); retrying the same
    /// request cannot help.
    #[error("the Mind refused the request: {0}")]
    InvalidRequest(String),
}

/// One attempt's failure, before the retry policy decides.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// Worth retrying: a connect error, a timeout, 408, 429, 5xx, or an unreadable reply.
    Transient {
        message: String,
        /// The provider's `Retry-After`, when it sent one.
        retry_after: Option<Duration>,
    },
    /// The provider refused the request.
    Refused(String),
}

impl Failure {
    /// A transient failure without a `Retry-After` hint.
    pub fn transient(message: impl Into<String>) -> Self {
        Failure::Transient {
            message: message.into(),
            retry_after: None,
        }
    }
}
