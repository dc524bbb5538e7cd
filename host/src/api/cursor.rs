//! Opaque page cursors: a kind tag and a position, base64url-encoded, so a cursor from one
//! list is refused by another and clients never depend on what is inside.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};

use super::error::{ApiError, ApiResult};

/// The cursor for position `n` of a list of `kind`.
pub fn encode(kind: &str, n: u64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{kind}:{n}"))
}

/// The position inside a cursor of `kind`; `invalid_query` for anything else.
pub fn decode(kind: &str, cursor: &str) -> ApiResult<u64> {
    URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| s.strip_prefix(kind)?.strip_prefix(':')?.parse().ok())
        .ok_or_else(|| {
            ApiError::invalid_query(
                "cursor",
                "cursor is not one this server issued; pass next_cursor back unchanged",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_foreign_cursors() {
        assert_eq!(decode("a1", &encode("a1", 42)).unwrap(), 42);
        assert!(decode("l1", &encode("a1", 42)).is_err());
        assert!(decode("a1", "junk").is_err());
    }
}
