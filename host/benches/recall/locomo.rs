//! The LoCoMo data set as the recall bench needs it: each conversation's turns (the
//! memories) and its questions of categories 1–4 with their evidence turns.
//!
//! The file is read at run time from the shared data folder, never from the repository
//! (CC BY-NC 4.0: fine for measuring, not for shipping).

use std::collections::HashSet;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

/// The data file: `WASMIND_LOCOMO`, else `../shared/data/locomo-dev.json` beside the
/// repository root.
pub fn path() -> PathBuf {
    std::env::var_os("WASMIND_LOCOMO").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/data/locomo-dev.json"
            ))
        },
        PathBuf::from,
    )
}

/// Category names, as the LoCoMo paper numbers them (5, adversarial, has no evidence to
/// find and is left out).
pub const CATEGORIES: [(u8, &str); 4] = [
    (1, "multi-hop"),
    (2, "temporal"),
    (3, "open-domain"),
    (4, "single-hop"),
];

/// One turn: `dia_id` like `D1:3`, stored as `"Speaker: text"` under [`key`].
pub struct Turn {
    pub dia_id: String,
    pub value: String,
}

pub struct Question {
    pub text: String,
    pub category: u8,
    /// Normalised evidence ids that name a turn of this conversation (never empty).
    pub evidence: Vec<String>,
}

pub struct Conversation {
    pub id: String,
    pub turns: Vec<Turn>,
    pub questions: Vec<Question>,
    /// Questions of categories 1–4 left out because none of their evidence names a turn.
    pub without_evidence: usize,
}

#[derive(Deserialize)]
struct RawSample {
    sample_id: String,
    conversation: serde_json::Map<String, Value>,
    qa: Vec<RawQa>,
}

#[derive(Deserialize)]
struct RawTurn {
    speaker: String,
    dia_id: String,
    text: String,
}

#[derive(Deserialize)]
struct RawQa {
    question: String,
    category: u8,
    #[serde(default)]
    evidence: Vec<String>,
}

/// Reads and normalises the data set; panics with the path when it cannot.
pub fn load() -> Vec<Conversation> {
    let path = path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (set WASMIND_LOCOMO to the LoCoMo file)",
            path.display()
        )
    });
    let samples: Vec<RawSample> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    samples.into_iter().map(conversation).collect()
}

fn conversation(sample: RawSample) -> Conversation {
    let mut turns = Vec::new();
    // `session_N` holds a list of turns; `session_N_date_time` and the speakers are strings.
    for (name, value) in &sample.conversation {
        if !name.starts_with("session_") || !value.is_array() {
            continue;
        }
        let raw: Vec<RawTurn> = serde_json::from_value(value.clone())
            .unwrap_or_else(|e| panic!("{} {name}: {e}", sample.sample_id));
        turns.extend(raw.into_iter().map(|t| Turn {
            dia_id: normalise(&t.dia_id).unwrap_or_else(|| panic!("turn id {:?}", t.dia_id)),
            value: format!("{}: {}", t.speaker, t.text),
        }));
    }
    let ids: HashSet<&str> = turns.iter().map(|t| t.dia_id.as_str()).collect();
    let mut questions = Vec::new();
    let mut without_evidence = 0;
    for qa in sample
        .qa
        .into_iter()
        .filter(|q| (1..=4).contains(&q.category))
    {
        let mut evidence: Vec<String> = qa
            .evidence
            .iter()
            .flat_map(|e| e.split([';', ',', ' ']))
            .filter_map(normalise)
            .filter(|id| ids.contains(id.as_str()))
            .collect();
        evidence.sort();
        evidence.dedup();
        if evidence.is_empty() {
            without_evidence += 1;
            continue;
        }
        questions.push(Question {
            text: qa.question,
            category: qa.category,
            evidence,
        });
    }
    Conversation {
        id: sample.sample_id,
        turns,
        questions,
        without_evidence,
    }
}

/// `D1:3`, `D:11:26` and `D30:05` to `D1:3`, `D11:26` and `D30:5`; `None` for anything
/// that is not a session and a turn number (such as a lone `D`).
fn normalise(id: &str) -> Option<String> {
    let rest = id.trim().strip_prefix('D')?.trim_start_matches(':');
    let (session, turn) = rest.split_once(':')?;
    let session: u32 = session.parse().ok()?;
    let turn: u32 = turn.parse().ok()?;
    Some(format!("D{session}:{turn}"))
}

/// The memory key of a turn: `D1:3` → `d1_3` (keys are snake_case).
pub fn key(dia_id: &str) -> String {
    dia_id.to_ascii_lowercase().replace(':', "_")
}
