//! Opaque page cursors: a kind tag and a position, base64url-encoded, so a cursor from one
//! list is refused by another and clients never depend on what is inside. Each list pages
//! through its [`Pager`]: the one reading of a request's cursor and writing of the next.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};

use super::error::{AppError, AppResult};

/// The cursors of one list, tagged with its kind.
#[derive(Debug, Clone, Copy)]
pub struct Pager(&'static str);

impl Pager {
    /// The list whose cursors carry `kind`.
    pub const fn new(kind: &'static str) -> Self {
        Self(kind)
    }

    /// The position a previous page's `next_cursor` names, when one is given;
    /// `invalid_query` for a cursor this server did not issue for this list.
    pub fn position(self, cursor: Option<&str>) -> AppResult<Option<u64>> {
        cursor.map(|c| decode(self.0, c)).transpose()
    }

    /// The cursor of the page after `position`, when there is one.
    pub fn next(self, position: Option<u64>) -> Option<String> {
        position.map(|n| encode(self.0, n))
    }

    /// A regex of exactly this list's cursors, for the OpenAPI document.
    pub fn pattern(self) -> String {
        pattern(self.0)
    }
}

/// The cursor for position `n` of a list of `kind`.
fn encode(kind: &str, n: u64) -> String {
    URL_SAFE_NO_PAD.encode(format!("{kind}:{n}"))
}

/// The position inside a cursor of `kind`; `invalid_query` for anything else.
fn decode(kind: &str, cursor: &str) -> AppResult<u64> {
    URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| s.strip_prefix(kind)?.strip_prefix(':')?.parse().ok())
        .ok_or_else(|| {
            AppError::invalid_query(
                "cursor",
                "cursor is not one this server issued; pass next_cursor back unchanged",
            )
        })
}

/// A regex matching exactly the cursors of `kind` this server accepts (every issued
/// position up to 17 digits; nothing that would not decode), for the OpenAPI document.
/// A cursor is `base64url("<kind>:<digits>")`: after the 4 characters of `"<kind>:"`, each
/// group of 4 characters is 3 digits, and a last group of 2 or 3 characters 1 or 2 digits.
fn pattern(kind: &str) -> String {
    const THREE: &str = "(?:[MN][DTjz]|O[DT])[AEIMQUYcgk][w-z0-5]";
    const ONE: &str = "(?:[MN][AQgw]|O[AQ])";
    const TWO: &str = "(?:[MN][DTjz]|O[DT])[AEIMQUYcgk]";
    let prefix = URL_SAFE_NO_PAD.encode(format!("{kind}:"));
    format!("^{prefix}(?:(?:{THREE}){{0,5}}(?:{ONE}|{TWO})|(?:{THREE}){{1,5}})$")
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

    #[test]
    fn the_pattern_is_exactly_the_issued_cursors() {
        // The pattern is checked with the document's own regex engine in the e2e tests;
        // here, that every issued cursor has the documented prefix and shape.
        let p = pattern("a1");
        assert!(p.starts_with("^YTE6"), "{p}");
        for n in [0, 7, 42, 999, 1_000, 123_456_789, 99_999_999_999_999_999] {
            let c = encode("a1", n);
            assert!(c.starts_with("YTE6") && c.len() > 4, "{c}");
        }
    }
}
