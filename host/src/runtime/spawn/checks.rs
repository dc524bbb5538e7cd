//! The checks of a spawn's own fields, made by the runtime before admission whichever door
//! the spawn came in by (the REST route, the MCP tool): each failure names the field to fix
//! and says how, and the door words it in its own surface (`invalid_<field>` for the API).

use super::super::records::MemoryMode;
use crate::invalid::Invalid;

/// Longest task (§8).
pub const MAX_TASK_CHARS: usize = 4_000;
/// Longest display name.
pub const MAX_NAME_CHARS: usize = 200;
/// The only region (§4.3).
pub const REGION: &str = "iad";
/// Most tools a spawn's `tools` field may name.
pub const MAX_TOOLS: usize = 128;
/// Longest tool name (a registered tool's, or an MCP server's tool's as agents see it).
pub const MAX_TOOL_NAME_CHARS: usize = 64;

/// The spawn's fields as given, before they are checked.
#[derive(Debug, Clone, Default)]
pub struct SpawnFields {
    pub task: String,
    pub name: Option<String>,
    /// `None` is the only region.
    pub region: Option<String>,
    /// `None` is the default mode.
    pub memory_mode: Option<String>,
    /// The account's tools the agent is offered, by name; `None`: all of them.
    pub tools: Option<Vec<String>>,
}

/// What a checked spawn runs: its task, its name if given, its memory mode and the tools
/// it is offered.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Checked {
    pub task: String,
    pub name: Option<String>,
    pub memory_mode: MemoryMode,
    pub tools: Option<Vec<String>>,
}

/// Checks `fields` in the order the specification lists them: task, name, region, memory
/// mode, then the additions (tools); the first that fails is the refusal.
pub(super) fn check(fields: SpawnFields) -> Result<Checked, Invalid> {
    let SpawnFields {
        task,
        name,
        region,
        memory_mode,
        tools,
    } = fields;
    if task.trim().is_empty() {
        return Err(Invalid::new("task", "task must not be empty"));
    }
    let chars = task.chars().count();
    if chars > MAX_TASK_CHARS {
        return Err(Invalid::new(
            "task",
            format!("task is {chars} characters; the limit is {MAX_TASK_CHARS}"),
        ));
    }
    if name
        .as_ref()
        .is_some_and(|n| n.trim().is_empty() || n.chars().count() > MAX_NAME_CHARS)
    {
        return Err(Invalid::new(
            "name",
            format!("name must be 1 to {MAX_NAME_CHARS} characters and not blank"),
        ));
    }
    if let Some(region) = region.filter(|r| r != REGION) {
        return Err(Invalid::new(
            "region",
            format!("region {region:?} is not available; the only region is \"{REGION}\""),
        ));
    }
    let memory_mode = match memory_mode {
        None => MemoryMode::default(),
        Some(m) => MemoryMode::parse(&m).ok_or_else(|| {
            Invalid::new(
                "memory_mode",
                format!(
                    "memory_mode {m:?} is unknown; use \"auto\", \"explicit\", \"both\" or \"off\""
                ),
            )
        })?,
    };
    if let Some(tools) = &tools {
        check_tools(tools)?;
    }
    Ok(Checked {
        task,
        name,
        memory_mode,
        tools,
    })
}

/// A `tools` field names at most [`MAX_TOOLS`] tools, each once, by a name a tool can
/// have (letters, digits, `_` and `-`, at most [`MAX_TOOL_NAME_CHARS`]). A name the
/// account has no tool of is allowed: it offers nothing until such a tool is registered.
fn check_tools(tools: &[String]) -> Result<(), Invalid> {
    if tools.len() > MAX_TOOLS {
        let n = tools.len();
        return Err(Invalid::new(
            "tools",
            format!("tools names {n} tools; the limit is {MAX_TOOLS}"),
        ));
    }
    for (i, name) in tools.iter().enumerate() {
        let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if name.is_empty() || name.len() > MAX_TOOL_NAME_CHARS || !name.chars().all(allowed) {
            return Err(Invalid::new(
                "tools",
                format!(
                    "tools[{i}] {name:?} is not a tool name (1 to {MAX_TOOL_NAME_CHARS} letters, digits, _ or -)"
                ),
            ));
        }
        if tools[..i].contains(name) {
            return Err(Invalid::new("tools", format!("tools names {name:?} twice")));
        }
    }
    Ok(())
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
                tools: None,
            }
        );
    }

    #[test]
    fn tools_are_names_each_given_once_and_not_too_many() {
        let with = |tools: Vec<&str>| SpawnFields {
            tools: Some(tools.into_iter().map(String::from).collect()),
            ..task("t")
        };
        let checked = check(with(vec!["weather", "mcp_docs_search-v2"])).unwrap();
        assert_eq!(
            checked.tools.as_deref(),
            Some(["weather".to_string(), "mcp_docs_search-v2".to_string()].as_slice())
        );
        assert_eq!(check(with(vec![])).unwrap().tools, Some(Vec::new()));
        assert_eq!(
            check(with(vec!["weather", "web page"]))
                .unwrap_err()
                .message,
            "tools[1] \"web page\" is not a tool name (1 to 64 letters, digits, _ or -)"
        );
        let long = "t".repeat(MAX_TOOL_NAME_CHARS + 1);
        for bad in [vec![""], vec![long.as_str()], vec!["a", "a"]] {
            assert_eq!(field_of(with(bad)), "tools");
        }
        let many: Vec<String> = (0..=MAX_TOOLS).map(|i| format!("t{i}")).collect();
        let many = SpawnFields {
            tools: Some(many),
            ..task("t")
        };
        assert_eq!(field_of(many), "tools");
    }

    #[test]
    fn each_bad_field_is_named_with_what_to_fix() {
        assert_eq!(
            check(task("  ")).unwrap_err(),
            Invalid::new("task", "task must not be empty")
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
            tools: Some(vec![String::new()]),
        };
        assert_eq!(field_of(all_bad), "task");
    }
}
