//! Parameter types shared by several routes: page sizes (capped, never refused for being
//! large) and the `hard` flag, each with the words that say what to fix.

use serde::{Deserialize, Deserializer, de::Error};
use serde_json::Value;
use utoipa::openapi::{ObjectBuilder, Schema, Type};

use crate::object::whole;

/// A page size given as a JSON number: at least 1; above `MAX` counts as `MAX`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit<const DEFAULT: usize, const MAX: usize>(pub usize);

/// A page size given in the query string; the same rule, quoting what was given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueryLimit<const DEFAULT: usize, const MAX: usize>(pub usize);

/// `n` as a page size capped at `max`, if it is one.
fn capped(n: Option<u64>, max: usize) -> Option<usize> {
    n.filter(|&n| n >= 1)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX).min(max))
}

/// A whole number given in a query string, saturating: digits beyond `u64` are a very
/// large number (as in a JSON body), not a wrong one.
pub fn whole_text(text: &str) -> Option<u64> {
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    text.parse().ok().or(digits.then_some(u64::MAX))
}

fn limit_rule(max: usize) -> String {
    format!("limit must be a whole number of at least 1 (above {max} counts as {max})")
}

impl<const D: usize, const M: usize> Default for Limit<D, M> {
    fn default() -> Self {
        Self(D)
    }
}

impl<const D: usize, const M: usize> Default for QueryLimit<D, M> {
    fn default() -> Self {
        Self(D)
    }
}

impl<'de, const D: usize, const M: usize> Deserialize<'de> for Limit<D, M> {
    fn deserialize<De: Deserializer<'de>>(d: De) -> Result<Self, De::Error> {
        let given = Value::deserialize(d)?;
        capped(whole(&given), M)
            .map(Self)
            .ok_or_else(|| De::Error::custom(limit_rule(M)))
    }
}

impl<'de, const D: usize, const M: usize> Deserialize<'de> for QueryLimit<D, M> {
    fn deserialize<De: Deserializer<'de>>(d: De) -> Result<Self, De::Error> {
        let text = String::deserialize(d)?;
        capped(whole_text(&text), M)
            .map(Self)
            .ok_or_else(|| De::Error::custom(format!("{}, got {text:?}", limit_rule(M))))
    }
}

/// `hard`: `true`/`false`, or `1`/`0`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Hard(pub bool);

impl<'de> Deserialize<'de> for Hard {
    fn deserialize<De: Deserializer<'de>>(d: De) -> Result<Self, De::Error> {
        match String::deserialize(d)?.as_str() {
            "true" | "1" => Ok(Hard(true)),
            "false" | "0" => Ok(Hard(false)),
            other => Err(De::Error::custom(format!(
                "hard must be true or false, got {other:?}"
            ))),
        }
    }
}

impl Hard {
    /// The schema of `hard`: the four spellings accepted.
    pub fn schema() -> Schema {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(["true", "false", "1", "0"]))
            .default(Some(Value::from("false")))
            .description(Some(
                "true removes every version for good; false (default) keeps history",
            ))
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Page = Limit<10, 50>;

    fn limit(json: &str) -> Result<usize, String> {
        serde_json::from_str::<Page>(json)
            .map(|l| l.0)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_whole_number_in_any_spelling_is_a_limit_capped_at_the_maximum() {
        assert_eq!(limit("3"), Ok(3));
        assert_eq!(limit("3.0"), Ok(3));
        assert_eq!(limit("1e300"), Ok(50));
        assert_eq!(limit("18446744073709551616"), Ok(50));
        // 2^51 − 1: parsed with a fast float algorithm it arrives one ulp off, with a fraction.
        assert_eq!(limit("2251799813685247.0"), Ok(50));
    }

    #[test]
    fn a_fraction_zero_or_negative_is_refused_with_the_rule() {
        for bad in ["0", "-1", "2.5", "\"3\"", "null"] {
            let refused = limit(bad).unwrap_err();
            assert!(
                refused.contains("whole number of at least 1"),
                "{bad}: {refused}"
            );
        }
    }

    #[test]
    fn query_digits_beyond_u64_are_a_large_number_and_anything_else_is_none() {
        assert_eq!(whole_text("65724"), Some(65_724));
        assert_eq!(whole_text("703230364106332569600"), Some(u64::MAX));
        for bad in ["", "-1", "1.0", "1e3", " 1", "x"] {
            assert_eq!(whole_text(bad), None, "{bad:?}");
        }
    }
}
