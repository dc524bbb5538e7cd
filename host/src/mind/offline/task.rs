//! Reading the task: which of the phrasings the offline Mind knows it is, and its first
//! step.

use serde_json::json;
use wasmind_rules::limits::MAX_KEY_CHARS;

use super::{DELETE, Offered, PUT, SEARCH, Step};

/// What the task asks for, with its subject.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Intent {
    /// "remember that X", "remember: X", "note that X".
    Remember(String),
    /// "what do you remember about X", "what do you know about X", "recall X".
    Recall(String),
    /// "forget X".
    Forget(String),
    /// Anything else: the whole task.
    Other(String),
}

/// Courtesies before the request itself.
const POLITE: [&str; 5] = [
    "please, ",
    "please ",
    "can you ",
    "could you ",
    "would you ",
];
const RECALL: [&str; 4] = [
    "what do you remember about ",
    "what do you know about ",
    "what do you recall about ",
    "recall ",
];
const REMEMBER: [&str; 4] = ["remember that ", "remember:", "note that ", "note:"];
const FORGET: [&str; 3] = ["forget about ", "forget that ", "forget "];

/// Words of the subject a derived key keeps.
const KEY_WORDS: usize = 5;

impl Intent {
    /// Reads `task` (case-insensitively; the subject keeps its case).
    pub(super) fn of(task: &str) -> Self {
        let mut rest = task.trim();
        while let Some(r) = POLITE.iter().find_map(|p| strip_prefix(rest, p)) {
            rest = r.trim_start();
        }
        let subject = |prefixes: &[&str]| {
            let found = prefixes.iter().find_map(|p| strip_prefix(rest, p))?;
            let subject = found.trim().trim_end_matches(['.', '!', '?']).trim_end();
            (!subject.is_empty()).then(|| subject.to_owned())
        };
        if let Some(s) = subject(&RECALL) {
            Intent::Recall(s)
        } else if let Some(s) = subject(&REMEMBER) {
            Intent::Remember(s)
        } else if let Some(s) = subject(&FORGET) {
            Intent::Forget(s)
        } else {
            Intent::Other(task.trim().to_owned())
        }
    }

    /// The first step, before any tool has answered.
    pub(super) fn first_step(&self, tools: &Offered<'_>) -> Step {
        match self {
            Intent::Remember(x) if tools.has(PUT) => {
                Step::Call(PUT, json!({"key": key_for(x), "value": x}))
            }
            Intent::Recall(x) | Intent::Forget(x) if tools.has(SEARCH) => {
                Step::Call(SEARCH, json!({"query": x}))
            }
            Intent::Forget(x) if tools.has(DELETE) => {
                Step::Call(DELETE, json!({"key": key_for(x)}))
            }
            Intent::Other(task) if !task.is_empty() && tools.has(SEARCH) => {
                Step::Call(SEARCH, json!({"query": task}))
            }
            Intent::Remember(x) => Step::Say(format!(
                "I can't remember \"{x}\": no memory write tool was offered to this run."
            )),
            Intent::Recall(x) => Step::Say(format!(
                "I can't look up \"{x}\": no memory search tool was offered to this run."
            )),
            Intent::Forget(x) => Step::Say(format!(
                "I can't forget \"{x}\": no memory tool was offered to this run."
            )),
            Intent::Other(task) if task.is_empty() => {
                Step::Say("There is no task to work on.".into())
            }
            Intent::Other(task) => Step::Say(format!(
                "I can only remember, recall and forget things with memory tools, and none \
                 were offered, so I can't work on \"{task}\"."
            )),
        }
    }
}

/// `text` without `prefix`, compared ignoring ASCII case.
fn strip_prefix<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// A memory key for `text`: its first few words in snake_case, always a valid key
/// (`^[a-z][a-z0-9_]*$`, at most 128 characters). Apostrophes join (`user's` → `users`);
/// other non-ASCII-alphanumerics separate words and are dropped.
pub(super) fn key_for(text: &str) -> String {
    let words: Vec<String> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '\u{2019}'))
        .map(|w| {
            w.chars()
                .filter(char::is_ascii_alphanumeric)
                .map(|c| c.to_ascii_lowercase())
                .collect::<String>()
        })
        .filter(|w| !w.is_empty())
        .take(KEY_WORDS)
        .collect();
    let mut key = words.join("_");
    if !key.starts_with(|c: char| c.is_ascii_lowercase()) {
        key = if key.is_empty() {
            "note".into()
        } else {
            format!("note_{key}")
        };
    }
    key.truncate(MAX_KEY_CHARS);
    key
}
