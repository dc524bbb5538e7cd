//! Typed reads of untrusted JSON objects: a request body, an import item, a memory the Mind
//! proposed. A type derives `Deserialize` and lists what each of its fields must be; a
//! serde failure becomes the one field at fault and what to fix, so every reader refuses
//! a bad field with the same words whatever type it lands in.
//!
//! This knows JSON and serde, not HTTP: the API turns a [`FieldError`] into 400
//! `invalid_<field>` or `invalid_query`, the memory domain into `MemoryError::Invalid`.

use serde::{
    Deserialize, Deserializer,
    de::{DeserializeOwned, Error, Unexpected},
};
use serde_json::{Map, Value};

/// A type read from a JSON object, with the field names and what each must be.
pub trait Fields: DeserializeOwned {
    /// Every field with the end of "`<field>` must be …" (e.g. `"a string"`), said when the
    /// field has the wrong JSON type. The names are `'static` so errors can carry them.
    const FIELDS: &'static [(&'static str, &'static str)];
}

/// What went wrong with one field.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Absent or `null`, and required.
    Missing,
    /// The wrong JSON type; what it must be.
    WrongType(&'static str),
    /// Refused by the field's own check; the message names the field and what to fix.
    Refused(String),
}

/// The field at fault and why.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub field: &'static str,
    pub fault: Fault,
}

impl FieldError {
    /// The message for a body field: what to fix, naming the field.
    pub fn message(&self) -> String {
        let field = self.field;
        match &self.fault {
            Fault::Missing => format!("{field} is required"),
            Fault::WrongType(kind) => format!("{field} must be {kind}"),
            Fault::Refused(message) => message.clone(),
        }
    }
}

/// A JSON number that is whole, saturating at `u64::MAX`: `3` and `3.0` alike, as JSON
/// Schema's `integer` admits both (a client's JSON library may print either).
pub fn whole(given: &Value) -> Option<u64> {
    given.as_u64().or_else(|| {
        let f = given.as_f64()?;
        (f.fract() == 0.0 && f >= 0.0).then_some(f as u64)
    })
}

/// `deserialize_with` for an optional [`whole`] number (with `#[serde(default)]`): `null`
/// is absent; anything else not whole is the field's wrong type.
pub fn optional_whole<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None => Ok(None),
        Some(given) => whole(&given).map(Some).ok_or_else(|| {
            D::Error::invalid_value(Unexpected::Other("not a whole number"), &"a whole number")
        }),
    }
}

/// Reads `T` from `object`; unknown fields are ignored, `null` counts as absent.
pub fn read<T: Fields>(object: Map<String, Value>) -> Result<T, FieldError> {
    serde_path_to_error::deserialize::<_, T>(Value::Object(object)).map_err(|e| {
        // Errors of the `Value` deserializer carry no position, so this is serde's message.
        let message = e.inner().to_string();
        let named = match e.path().iter().next() {
            Some(serde_path_to_error::Segment::Map { key }) => Some(key.as_str()),
            _ => message
                .strip_prefix("missing field `")
                .and_then(|rest| rest.strip_suffix('`')),
        };
        let (field, kind) = named
            .and_then(|name| T::FIELDS.iter().find(|(f, _)| *f == name))
            .copied()
            .unwrap_or_else(|| T::FIELDS[0]);
        let fault =
            if message.starts_with("missing field") || message.starts_with("invalid type: null") {
                Fault::Missing
            } else if ["invalid type", "invalid value", "invalid length"]
                .iter()
                .any(|p| message.starts_with(p))
            {
                Fault::WrongType(kind)
            } else {
                Fault::Refused(message)
            };
        FieldError { field, fault }
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    struct Probe {
        #[allow(dead_code)]
        name: String,
        #[allow(dead_code)]
        tags: Option<Vec<String>>,
        #[serde(default, deserialize_with = "refuse_negative")]
        #[allow(dead_code)]
        count: Option<i64>,
        #[serde(default, deserialize_with = "optional_whole")]
        at: Option<u64>,
    }

    fn refuse_negative<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        let n = Option::<i64>::deserialize(d)?;
        match n {
            Some(n) if n < 0 => Err(Error::custom("count must not be negative")),
            n => Ok(n),
        }
    }

    impl Fields for Probe {
        const FIELDS: &'static [(&'static str, &'static str)] = &[
            ("name", "a string"),
            ("tags", "an array of strings"),
            ("count", "a whole number"),
            ("at", "a whole number of epoch milliseconds"),
        ];
    }

    fn fault(v: Value) -> FieldError {
        let Value::Object(map) = v else { panic!() };
        read::<Probe>(map).unwrap_err()
    }

    #[test]
    fn each_fault_names_its_field() {
        let missing = fault(json!({}));
        assert_eq!(
            (missing.field, missing.message().as_str()),
            ("name", "name is required")
        );
        assert_eq!(fault(json!({ "name": null })).fault, Fault::Missing);
        let wrong = fault(json!({ "name": 5 }));
        assert_eq!(wrong.message(), "name must be a string");
        let item = fault(json!({ "name": "n", "tags": ["a", 1] }));
        assert_eq!(item.message(), "tags must be an array of strings");
        let refused = fault(json!({ "name": "n", "count": -1 }));
        assert_eq!(
            (refused.field, refused.message().as_str()),
            ("count", "count must not be negative")
        );
        let Value::Object(ok) = json!({ "name": "n", "tags": null, "other": true }) else {
            panic!()
        };
        read::<Probe>(ok).unwrap();
    }

    #[test]
    fn a_whole_number_is_read_in_either_spelling_and_anything_else_is_the_wrong_type() {
        let at = |given: Value| {
            let Value::Object(map) = json!({ "name": "n", "at": given }) else {
                panic!()
            };
            read::<Probe>(map).map(|p| p.at)
        };
        assert_eq!(at(json!(65724)), Ok(Some(65724)));
        assert_eq!(at(json!(65724.0)), Ok(Some(65724)));
        assert_eq!(at(json!(1e300)), Ok(Some(u64::MAX)));
        assert_eq!(at(Value::Null), Ok(None));
        for bad in [json!(1.5), json!(-1), json!("5"), json!(true)] {
            assert_eq!(
                at(bad).unwrap_err().message(),
                "at must be a whole number of epoch milliseconds"
            );
        }
    }
}
