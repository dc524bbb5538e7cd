//! A field of a request that is not valid, and what to fix: what every domain's checks
//! return (a spawn's fields, a tool's registration, a component's name and version), so an
//! adapter renders one error for it (the REST envelope's `field`, an MCP tool error) without
//! parsing text.

/// A field that is not valid: which, and a message that says what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Invalid {
    /// The request's field, as the specification spells it.
    pub field: &'static str,
    pub message: String,
}

impl Invalid {
    pub fn new(field: &'static str, message: impl Into<String>) -> Self {
        Invalid {
            field,
            message: message.into(),
        }
    }
}
