//! The offline Mind's host jobs, deterministic and extractive: extraction keeps the run's
//! task and answer as one memory, a summary keeps every distinct sentence of a cluster,
//! and a title is the task's first words.

use std::collections::HashSet;

use serde_json::{Map, Value, json};
use wasmind_rules::limits::{MAX_KEY_CHARS, MAX_VALUE_CHARS};

use super::{SIGNATURE, approx_tokens, usage};

use crate::{
    mind::{Note, Proposals, RunReport, Summary, Title, jobs::MAX_TITLE_CHARS},
    text::shorten,
};

/// Words of the task that name an extracted memory.
const KEY_WORDS: usize = 6;
/// Where extracted run memories go.
pub const RUNS_NAMESPACE: &str = "agent_runs";

/// `text` in snake_case: its alphanumeric words, lowercased, joined by `_`.
fn snake(text: &str, words: usize) -> String {
    let words: Vec<String> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(words)
        .map(str::to_ascii_lowercase)
        .collect();
    words.join("_")
}

/// A key from `stem`: snake_case, starting with a letter, at most 128 characters.
fn key(prefix: &str, stem: &str) -> String {
    let mut k = format!("{prefix}{stem}");
    k.truncate(MAX_KEY_CHARS);
    k.trim_end_matches('_').to_string()
}

/// One memory of what the run was asked and what it answered.
pub fn extract(run: &RunReport) -> Proposals {
    let answer = run.answer.trim().trim_end_matches(SIGNATURE).trim();
    let value = shorten(
        &format!("Task: {} Result: {answer}", run.task.trim()),
        MAX_VALUE_CHARS,
    );
    let stem = snake(&run.task, KEY_WORDS);
    let mut memory = Map::new();
    memory.insert("key".into(), json!(key("run_", &stem)));
    memory.insert("value".into(), Value::String(value.clone()));
    memory.insert("namespace".into(), json!(RUNS_NAMESPACE));
    memory.insert("tags".into(), json!(["agent_run"]));
    memory.insert("importance".into(), json!(5));
    Proposals {
        memories: vec![memory],
        usage: usage(
            approx_tokens([run.task.as_str(), run.answer.as_str()]),
            approx_tokens([value.as_str()]),
        ),
    }
}

/// The keys' common `_`-separated prefix (or the first key) plus `_summary`; the values'
/// distinct sentences in order.
pub fn summarize(notes: &[Note]) -> Summary {
    let mut keys: Vec<&str> = notes.iter().map(|n| n.key.as_str()).collect();
    keys.sort_unstable();
    let first: Vec<&str> = keys.first().map_or(vec![], |k| k.split('_').collect());
    let shared = (0..first.len())
        .take_while(|&i| keys.iter().all(|k| k.split('_').nth(i) == Some(first[i])))
        .count();
    let stem = match shared {
        0 => first.join("_"),
        n => first[..n].join("_"),
    };
    let mut seen = HashSet::new();
    let sentences: Vec<&str> = notes
        .iter()
        .flat_map(|n| n.value.split_inclusive(['.', '!', '?', '\n']))
        .map(str::trim)
        .filter(|s| !s.is_empty() && seen.insert(s.to_lowercase()))
        .collect();
    let value = shorten(&sentences.join(" "), MAX_VALUE_CHARS);
    let input = approx_tokens(notes.iter().map(|n| n.value.as_str()));
    Summary {
        key: key(
            "",
            &format!("{}_summary", if stem.is_empty() { "memory" } else { &stem }),
        ),
        usage: usage(input, approx_tokens([value.as_str()])),
        value,
    }
}

/// The task's first sentence, shortened, with a capital first letter.
pub fn title(task: &str) -> Title {
    let sentence = task
        .split_inclusive(['.', '!', '?', '\n'])
        .map(|s| s.trim().trim_end_matches(['.', '!', '?']))
        .find(|s| !s.is_empty())
        .unwrap_or(task);
    let short = shorten(sentence, MAX_TITLE_CHARS);
    let mut chars = short.chars();
    let text = match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => short,
    };
    Title {
        usage: usage(approx_tokens([task]), approx_tokens([text.as_str()])),
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(key: &str, value: &str) -> Note {
        Note {
            key: key.into(),
            value: value.into(),
        }
    }

    #[test]
    fn extraction_keeps_task_and_answer_under_a_valid_key() {
        let run = RunReport {
            task: "What's the capital of France? Answer briefly.".into(),
            conversation: vec![],
            answer: format!("Paris. {SIGNATURE}"),
        };
        let p = extract(&run);
        assert_eq!(p.memories.len(), 1);
        let m = &p.memories[0];
        assert_eq!(m["key"], "run_what_s_the_capital_of_france");
        assert_eq!(
            m["value"],
            "Task: What's the capital of France? Answer briefly. Result: Paris."
        );
        assert!(crate::memory::validate_key(m["key"].as_str().unwrap()).is_ok());
    }

    #[test]
    fn summaries_merge_keys_and_distinct_sentences() {
        let s = summarize(&[
            note("user_diet_vegan", "The user is vegan. They cook at home."),
            note("user_diet", "The user is vegan."),
            note("user_diet_pref", "They cook at home! Tofu is a favourite."),
        ]);
        assert_eq!(s.key, "user_diet_summary");
        assert_eq!(
            s.value,
            "The user is vegan. They cook at home. They cook at home! Tofu is a favourite."
        );
        assert_eq!(
            summarize(&[note("a_b", "x"), note("c_d", "y")]).key,
            "a_b_summary"
        );
    }

    #[test]
    fn titles_are_the_first_sentence_capitalized() {
        assert_eq!(
            title("summarize the report. Then mail it.").text,
            "Summarize the report"
        );
        assert!(title(&"long ".repeat(50)).text.chars().count() <= MAX_TITLE_CHARS);
    }
}
