//! Reading tool results: the final answer, or — when forgetting — the delete that follows
//! the search.

use serde_json::{Value, json};

use super::{DELETE, GET, LIST, Offered, PUT, SEARCH, Step, task::Intent};
use crate::mind::{Message, Role};

/// How every memory tool failure begins (§4.4).
const FAILED: &str = "Service Memory failed:";
/// Hits listed in an answer (the search tool's default limit).
const MAX_LISTED: usize = 10;
/// Characters of an unrecognised tool result quoted back.
const EXCERPT_CHARS: usize = 300;

/// One tool call of this turn and its result.
struct Outcome<'a> {
    name: &'a str,
    args: Value,
    result: &'a str,
}

/// One search hit, as much of it as the answer needs.
struct Hit {
    key: String,
    value: String,
    namespace: Option<String>,
    score: f64,
}

/// The step after the tool results that end `turn` (the messages after the task).
pub(super) fn after_results(intent: &Intent, turn: &[Message], tools: &Offered<'_>) -> Step {
    let all = outcomes(turn);
    let trailing = turn
        .iter()
        .rev()
        .take_while(|m| m.role == Role::Tool)
        .count();
    let latest = &all[all.len().saturating_sub(trailing)..];

    if let Some(failed) = latest
        .iter()
        .find(|o| o.result.trim_start().starts_with(FAILED))
    {
        return Step::Say(format!(
            "I couldn't {}. The memory service said: \"{}\"",
            action(failed.name),
            failed.result.trim()
        ));
    }
    if let Intent::Forget(subject) = intent
        && let Some(search) = latest.iter().find(|o| o.name == SEARCH)
        && let Some(found) = hits(search.result)
    {
        let best = found.iter().fold(None::<&Hit>, |best, h| match best {
            Some(b) if b.score >= h.score => Some(b),
            _ => Some(h),
        });
        return match best {
            None => Step::Say(format!(
                "I found nothing in memory matching \"{subject}\", so there is nothing to forget."
            )),
            Some(hit) if tools.has(DELETE) => {
                let mut args = json!({"key": hit.key});
                if let Some(namespace) = &hit.namespace {
                    args["namespace"] = json!(namespace);
                }
                Step::Call(DELETE, args)
            }
            Some(hit) => Step::Say(format!(
                "I found `{}` (\"{}\") but can't forget it: no memory delete tool was offered \
                 to this run.",
                hit.key, hit.value
            )),
        };
    }
    let lines: Vec<String> = latest.iter().map(|o| describe(o, &all)).collect();
    Step::Say(lines.join("\n"))
}

/// Every answered tool call of `turn`, in order, paired with its call by id.
fn outcomes(turn: &[Message]) -> Vec<Outcome<'_>> {
    let calls: Vec<_> = turn.iter().flat_map(|m| &m.tool_calls).collect();
    turn.iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| {
            let call = calls
                .iter()
                .find(|c| m.tool_call_id.as_ref() == Some(&c.id));
            Outcome {
                name: call.map_or("a tool", |c| c.name.as_str()),
                args: call
                    .and_then(|c| serde_json::from_str(&c.arguments).ok())
                    .unwrap_or(Value::Null),
                result: &m.content,
            }
        })
        .collect()
}

/// What the agent tried, for "I couldn't …".
fn action(tool: &str) -> String {
    match tool {
        PUT => "save that to memory".into(),
        SEARCH => "search memory".into(),
        DELETE => "delete that from memory".into(),
        GET => "read that from memory".into(),
        LIST => "list memories".into(),
        other => format!("use {other}"),
    }
}

/// One sentence (or list) about one successful tool result.
fn describe(o: &Outcome<'_>, all: &[Outcome<'_>]) -> String {
    let arg = |name: &str| o.args.get(name).and_then(Value::as_str).unwrap_or_default();
    match o.name {
        PUT => format!(
            "I'll remember that: {} Saved as `{}`.",
            sentence(arg("value")),
            arg("key")
        ),
        SEARCH => match hits(o.result) {
            Some(found) if found.is_empty() => {
                format!("I found nothing in memory about \"{}\".", arg("query"))
            }
            Some(found) => {
                let mut text =
                    format!("Here is what I found in memory about \"{}\":", arg("query"));
                for hit in found.iter().take(MAX_LISTED) {
                    text.push_str(&format!("\n- {} (`{}`)", hit.value, hit.key));
                }
                text
            }
            None => format!(
                "Searching memory for \"{}\" returned: {}",
                arg("query"),
                excerpt(o.result)
            ),
        },
        DELETE => {
            let key = arg("key");
            let value = all
                .iter()
                .filter(|earlier| earlier.name == SEARCH)
                .filter_map(|earlier| hits(earlier.result))
                .flatten()
                .find(|hit| hit.key == key);
            match value {
                Some(hit) => format!("I've forgotten `{key}`: {}", sentence(&hit.value)),
                None => format!("I've forgotten `{key}`."),
            }
        }
        GET => {
            let result: Value = serde_json::from_str(o.result).unwrap_or(Value::Null);
            match result.get("value").and_then(Value::as_str) {
                Some(value) => format!("`{}` holds: {}", arg("key"), sentence(value)),
                None => format!("Nothing is stored under `{}`.", arg("key")),
            }
        }
        name => format!("{name} returned: {}", excerpt(o.result)),
    }
}

/// The hits of a search result (`{ results: [...] }` or a bare array); `None` if it is
/// neither.
fn hits(result: &str) -> Option<Vec<Hit>> {
    let parsed: Value = serde_json::from_str(result).ok()?;
    let items = parsed.get("results").unwrap_or(&parsed).as_array()?;
    let text = |item: &Value, field: &str| match item.get(field) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    };
    Some(
        items
            .iter()
            .filter_map(|item| {
                Some(Hit {
                    key: text(item, "key")?,
                    value: text(item, "value").unwrap_or_default(),
                    namespace: text(item, "namespace"),
                    score: item.get("score").and_then(Value::as_f64).unwrap_or(0.0),
                })
            })
            .collect(),
    )
}

/// `text` ending in a full stop (unless it already ends a sentence).
fn sentence(text: &str) -> String {
    let text = text.trim();
    if text.ends_with(['.', '!', '?']) {
        text.to_owned()
    } else {
        format!("{text}.")
    }
}

fn excerpt(text: &str) -> String {
    let text = text.trim();
    let mut out: String = text.chars().take(EXCERPT_CHARS).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}
