//! Secrets from configuration (provider API keys). [`Secret`]'s `Debug` never shows the
//! value, so a config section, or a client holding one, can be printed or logged whole;
//! code that must send the key asks for it by name ([`Secret::expose`]).

use std::fmt;

use serde::Deserialize;

/// A secret string, read from TOML or the environment like a plain one.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// The value, to put on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::Secret;

    #[test]
    fn debug_hides_the_value() {
        let key = Secret::from("sk-live-123");
        assert_eq!(format!("{key:?}"), "<redacted>");
        assert_eq!(format!("{:?}", Some(key.clone())), "Some(<redacted>)");
        assert_eq!(key.expose(), "sk-live-123");
    }
}
