//! The checks of a spawn's own fields, made by the runtime before admission whichever door
//! the spawn came in by (the REST route, the MCP tool): each failure names the field to fix
//! and says how, and the door words it in its own surface (`invalid_<field>` for the API).

use super::super::records::MemoryMode;

/// Longest task (§8).
pub const MAX_TASK_CHARS: usize = 4_000;
/// Longest display name.
pub const MAX_NAME_CHARS: usize = 200;
/// The only region (§4.3).
pub const REGION: &str = "iad";

/// A spawn field that is not valid: which, and what to fix.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{message}")]
pub struct InvalidField {
    /// The request's field, as the specification spells it.
    pub field: &'static str,
    pub message: String,
}

fn invalid(field: &'static str, message: impl Into<String>) -> InvalidField {
    InvalidField {
        field,
        message: message.into(),
    }
}

/// The spawn's fields as given, before they are checked.
#[derive(Debug, Clone, Default)]
pub struct SpawnFields {
    pub task: String,
    pub name: Option<String>,
    /// `None` is the only region.
    pub region: Option<String>,
    /// `None` is the default mode.
    pub memory_mode: Option<String>,
}

/// What a checked spawn runs: its task, its name if given, and its memory mode.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Checked {
    pub task: String,
    pub name: Option<String>,
    pub memory_mode: MemoryMode,
}

/// Checks `fields` in the order the specification lists them: task, name, region, memory
/// mode; the first that fails is the refusal.
pub(super) fn check(fields: SpawnFields) -> Result<Checked, InvalidField> {
    let SpawnFields {
        task,
        name,
        region,
        memory_mode,
    } = fields;
    if task.trim().is_empty() {
        return Err(invalid("task", "task must not be empty"));
    }
    let chars = task.chars().count();
    if chars > MAX_TASK_CHARS {
        return Err(invalid(
            "task",
            format!("task is {chars} characters; the limit is {MAX_TASK_CHARS}"),
        ));
    }
    if name
        .as_ref()
        .is_some_and(|n| n.trim().is_empty() || n.chars().count() > MAX_NAME_CHARS)
    {
        return Err(invalid(
            "name",
            format!("name must be 1 to {MAX_NAME_CHARS} characters and not blank"),
        ));
    }
    if let Some(region) = region.filter(|r| r != REGION) {
        return Err(invalid(
            "region",
            format!("region {region:?} is not available; the only region is \"{REGION}\""),
        ));
    }
    let memory_mode = match memory_mode {
        None => MemoryMode::default(),
        Some(m) => MemoryMode::parse(&m).ok_or_else(|| {
            invalid(
                "memory_mode",
                format!(
                    "memory_mode {m:?} is unknown; use \"auto\", \"explicit\", \"both\" or \"off\""
                ),
            )
        })?,
    };
    Ok(Checked {
        task,
        name,
        memory_mode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(task: &str) -> SpawnFields {
        SpawnFields {
            task: task.into(),
            ..SpawnFields::default()
        }
    }

    fn field_of(fields: SpawnFields) -> &'static str {
        check(fields).unwrap_err().field
    }

    #[test]
    fn a_plain_task_runs_in_the_default_mode() {
        let checked = check(SpawnFields {
            region: Some(REGION.into()),
            ..task("Summarize the report")
        })
        .unwrap();
        assert_eq!(
            checked,
            Checked {
                task: "Summarize the report".into(),
                name: None,
                memory_mode: MemoryMode::default(),
            }
        );
    }

    #[test]
    fn each_bad_field_is_named_with_what_to_fix() {
        assert_eq!(
            check(task("  ")).unwrap_err(),
            invalid("task", "task must not be empty")
        );
        assert_eq!(
            check(task(&"x".repeat(MAX_TASK_CHARS + 1)))
                .unwrap_err()
                .message,
            "task is 4001 characters; the limit is 4000"
        );
        check(task(&"x".repeat(MAX_TASK_CHARS))).unwrap();
        for name in [" ", &"n".repeat(MAX_NAME_CHARS + 1)] {
            let fields = SpawnFields {
                name: Some(name.into()),
                ..task("t")
            };
            assert_eq!(field_of(fields), "name");
        }
        let region = SpawnFields {
            region: Some("fra".into()),
            ..task("t")
        };
        assert_eq!(
            check(region).unwrap_err().message,
            "region \"fra\" is not available; the only region is \"iad\""
        );
        let mode = SpawnFields {
            memory_mode: Some("sometimes".into()),
            ..task("t")
        };
        assert_eq!(field_of(mode), "memory_mode");
    }

    #[test]
    fn the_first_bad_field_in_the_specification_s_order_is_the_refusal() {
        let all_bad = SpawnFields {
            task: String::new(),
            name: Some(String::new()),
            region: Some("fra".into()),
            memory_mode: Some("never".into()),
        };
        assert_eq!(field_of(all_bad), "task");
    }
}
