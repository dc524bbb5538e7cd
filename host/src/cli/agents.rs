//! `wasmind agents spawn`: starts an agent through the public API and, with `--follow`,
//! prints its progress as it comes, then its final result or its error.

use std::{fmt, thread, time::Duration};

use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Value, json};

use super::remote::{Remote, RemoteArgs};

/// How often a followed agent's record is read.
const POLL: Duration = Duration::from_millis(200);

/// `wasmind agents` subcommands.
#[derive(Subcommand)]
pub enum AgentsCommand {
    /// Spawns an agent on a task (`POST /api/v1/agents`) and prints its record; with
    /// `--follow`, prints its progress entries as they arrive, then its final result (exit
    /// 0) or its error (`code: message` on stderr, exit 1; a stopped agent exits 2).
    /// Ctrl-C ends the following only: the agent keeps running.
    Spawn(SpawnArgs),
}

/// `wasmind agents spawn`.
#[derive(Debug, Args)]
pub struct SpawnArgs {
    /// What the agent is to do.
    #[arg(long)]
    task: String,
    /// An uploaded component to run: its id, its name (the newest version) or name@version;
    /// default: the built-in agent.
    #[arg(long)]
    agent: Option<String>,
    /// A display name; default: the task's first words, then a title the Mind writes.
    #[arg(long)]
    name: Option<String>,
    /// auto, explicit, both or off.
    #[arg(long)]
    memory_mode: Option<String>,
    /// Offer the agent only these of the account's tools (repeat or comma-separate the
    /// names; `--tools ''` offers none); default: all of them.
    #[arg(long, value_delimiter = ',')]
    tools: Option<Vec<String>>,
    /// Print progress until the agent ends; the exit status says how it ended.
    #[arg(long)]
    follow: bool,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// A followed agent that did not complete; its error is already printed. The exit status:
/// 1 failed, 2 stopped.
#[derive(Debug)]
pub struct Unsuccessful(pub u8);

impl fmt::Display for Unsuccessful {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the agent did not complete")
    }
}

impl std::error::Error for Unsuccessful {}

/// Runs one `agents` subcommand.
pub fn run(command: AgentsCommand) -> anyhow::Result<()> {
    match command {
        AgentsCommand::Spawn(args) => spawn(&args),
    }
}

fn spawn(args: &SpawnArgs) -> anyhow::Result<()> {
    let remote = Remote::new(&args.remote);
    let body = json!({
        "task": args.task,
        "agent": args.agent,
        "name": args.name,
        "memory_mode": args.memory_mode,
        "tools": args.tools.as_ref().map(|t| t.iter().filter(|n| !n.is_empty()).collect::<Vec<_>>()),
    });
    let spawned = remote.send(remote.request(Method::POST, "/api/v1/agents").json(&body))?;
    if !args.follow {
        println!("{}", serde_json::to_string_pretty(&spawned)?);
        return Ok(());
    }
    let id = spawned["agent_id"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("the spawn answered no agent_id: {spawned}"))?;
    follow(&remote, id)
}

/// Prints the agent's new progress entries at each read until it ends, then how it ended.
fn follow(remote: &Remote, id: &str) -> anyhow::Result<()> {
    let path = format!("/api/v1/agents/{id}");
    let mut last: Option<Value> = None;
    loop {
        let record = remote.send(remote.request(Method::GET, &path))?;
        let progress = record["progress"].as_array().cloned().unwrap_or_default();
        for entry in unseen(&progress, last.as_ref()) {
            println!(
                "[{}] {}",
                entry["kind"].as_str().unwrap_or(""),
                entry["message"].as_str().unwrap_or("")
            );
        }
        if let Some(entry) = progress.last() {
            last = Some(entry.clone());
        }
        match record["status"].as_str() {
            Some("completed") => {
                println!("{}", record["final_result"].as_str().unwrap_or(""));
                return Ok(());
            }
            Some("failed") => {
                let error = &record["error"];
                eprintln!(
                    "{}: {}",
                    error["code"].as_str().unwrap_or("failed"),
                    error["message"].as_str().unwrap_or("")
                );
                return Err(Unsuccessful(1).into());
            }
            Some("stopped") => {
                eprintln!("stopped: the agent was stopped before it finished");
                return Err(Unsuccessful(2).into());
            }
            _ => thread::sleep(POLL),
        }
    }
}

/// The entries after the last one printed. The record keeps only its latest entries, so
/// when the last printed one has scrolled out, every entry is new.
fn unseen<'a>(progress: &'a [Value], last: Option<&Value>) -> &'a [Value] {
    let Some(last) = last else {
        return progress;
    };
    match progress.iter().rposition(|e| e == last) {
        Some(i) => &progress[i + 1..],
        None => progress,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::unseen;

    #[test]
    fn only_entries_after_the_last_printed_are_new() {
        let e = |ts: u64| json!({ "ts": ts, "kind": "info", "message": ts.to_string() });
        let all = [e(1), e(2), e(3)];
        assert_eq!(unseen(&all, None), &all[..]);
        assert_eq!(unseen(&all, Some(&e(2))), &all[2..]);
        assert!(unseen(&all, Some(&e(3))).is_empty());
        assert_eq!(unseen(&all[1..], Some(&e(0))), &all[1..], "scrolled out");
    }
}
