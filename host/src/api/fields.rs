//! Typed reads of JSON body fields; a wrong type or a missing required field is
//! `invalid_<field>` with a message naming the field and what it must be.

use serde_json::{Map, Value};

use super::error::ApiError;

/// A JSON object being read field by field.
pub struct Fields<'a>(pub &'a Map<String, Value>);

impl Fields<'_> {
    /// A required string.
    pub fn string(&self, field: &str) -> Result<String, ApiError> {
        self.opt_string(field)?
            .ok_or_else(|| ApiError::invalid_field(field, format!("{field} is required")))
    }

    /// An optional string (`null` counts as absent).
    pub fn opt_string(&self, field: &str) -> Result<Option<String>, ApiError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ApiError::invalid_field(
                field,
                format!("{field} must be a string"),
            )),
        }
    }

    /// An optional array of strings.
    pub fn strings(&self, field: &str) -> Result<Vec<String>, ApiError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(ApiError::invalid_field(
                        field,
                        format!("{field} must be an array of strings"),
                    )),
                })
                .collect(),
            Some(_) => Err(ApiError::invalid_field(
                field,
                format!("{field} must be an array of strings"),
            )),
        }
    }

    /// An optional number.
    pub fn number(&self, field: &str) -> Result<Option<f64>, ApiError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(_) => Err(ApiError::invalid_field(
                field,
                format!("{field} must be a number"),
            )),
        }
    }

    /// An optional number within `[lo, hi]`.
    pub fn number_in(&self, field: &str, lo: f64, hi: f64) -> Result<Option<f64>, ApiError> {
        match self.number(field)? {
            Some(n) if !(lo..=hi).contains(&n) => Err(ApiError::invalid_field(
                field,
                format!("{field} must be from {lo} to {hi}, got {n}"),
            )),
            n => Ok(n),
        }
    }

    /// An optional whole number ≥ 1, capped at `max`.
    pub fn limit(&self, field: &str, default: usize, max: usize) -> Result<usize, ApiError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) if v >= 1 => Ok((v as usize).min(max)),
                _ => Err(limit_error(field, max)),
            },
            Some(_) => Err(limit_error(field, max)),
        }
    }

    /// An optional whole number ≥ `min` (a number like `3.0` counts as whole).
    pub fn whole_at_least(&self, field: &str, min: u64) -> Result<Option<u64>, ApiError> {
        let refuse = || {
            ApiError::invalid_field(
                field,
                format!("{field} must be a whole number of at least {min}"),
            )
        };
        match self.number(field)? {
            None => Ok(None),
            Some(n) if n.fract() == 0.0 && n >= min as f64 && n <= u64::MAX as f64 => {
                Ok(Some(n as u64))
            }
            Some(_) => Err(refuse()),
        }
    }

    /// An optional boolean.
    pub fn bool(&self, field: &str, default: bool) -> Result<bool, ApiError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(ApiError::invalid_field(
                field,
                format!("{field} must be true or false"),
            )),
        }
    }
}

fn limit_error(field: &str, max: usize) -> ApiError {
    ApiError::invalid_field(
        field,
        format!("{field} must be a whole number of at least 1 (above {max} counts as {max})"),
    )
}
