//! An agent that acts: it fetches the page its task names over `wasi:http`
//! (`Context::http`; the host sends the request under the account's egress policy and
//! journals the answer, so a resumed run is answered from its journal and sends nothing),
//! asks the Mind to summarize the page for the task, and remembers the summary in the
//! `web` namespace under a key derived from the URL (fetching the same page again files a
//! new version of the same memory). Its tests run it natively on the SDK's doubles, the
//! page a `FakeHttp`'s, and check that it replays.

use wasmind_sdk::{Context, Message, PutRequest, limits};

/// Where summaries are filed.
pub const NAMESPACE: &str = "web";
/// The tag every summary carries.
pub const TAG: &str = "web_digest";
/// The page's characters the Mind is shown, at most.
pub const MAX_PAGE_CHARS: usize = 20_000;

const SUMMARY_PROMPT: &str = "Summarize the web page the user gives for the task they \
give, in at most five sentences of plain text. Say what the page says, not what you know \
otherwise; if the page is an error or empty, say so.";

/// Fetches the task's URL, then summarizes and remembers the page.
pub fn run(ctx: &Context, task: &str) -> Result<String, String> {
    let url = first_url(task).ok_or("the task names no http:// or https:// URL to fetch")?;
    ctx.progress().report("info", &format!("fetching {url}"));
    let page = fetch(ctx, url)?;
    digest(ctx, task, url, &page)
}

/// Summarizes `page`, fetched from `url`, for `task`, and remembers the summary.
fn digest(ctx: &Context, task: &str, url: &str, page: &str) -> Result<String, String> {
    let excerpt = cut(page, MAX_PAGE_CHARS);
    let asked = format!("Task: {task}\n\nThe page at {url}:\n\n{excerpt}");
    let messages = [Message::system(SUMMARY_PROMPT), Message::user(asked)];
    let completion = (ctx.mind().complete(&messages, &[])).map_err(|e| e.to_string())?;
    let summary = completion.text.unwrap_or_default().trim().to_string();
    if summary.is_empty() {
        return Err("the Mind wrote no summary".into());
    }
    let note = format!("{url}: {summary}");
    let request = PutRequest::new(key_of(url), cut(&note, limits::MAX_VALUE_CHARS))
        .namespace(NAMESPACE)
        .tags([TAG]);
    match ctx.memory().put(&request) {
        Ok(put) => ctx
            .progress()
            .report("info", &format!("remembered as {}", put.key)),
        Err(e) => ctx
            .progress()
            .report("info", &format!("not remembered: {e}")),
    }
    Ok(summary)
}

/// A GET of `url`: the body's text, or why there is none (a status that is not 2xx
/// included: the Mind would summarize an error page as the page).
fn fetch(ctx: &Context, url: &str) -> Result<String, String> {
    let response = (ctx.http().get(url)).map_err(|e| format!("fetching {url} failed: {e}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("fetching {url} answered {status}"));
    }
    Ok(String::from_utf8_lossy(response.body()).into_owned())
}

/// The first `http://` or `https://` URL in `text`, without trailing punctuation.
pub fn first_url(text: &str) -> Option<&str> {
    let url = (text.split_whitespace())
        .map(|w| w.trim_start_matches(['(', '<', '"', '\'']))
        .find(|w| w.starts_with("http://") || w.starts_with("https://"))?;
    Some(url.trim_end_matches(['.', ',', ';', ':', ')', '>', '!', '?', '"', '\'']))
}

/// The memory key of a page: `page_` and the URL's letters and digits, lowercase, the rest
/// as `_`, within the key length.
pub fn key_of(url: &str) -> String {
    let bare = url.split_once("://").map_or(url, |(_, rest)| rest);
    let mut key = String::from("page_");
    for c in bare.chars() {
        let c = match c.is_ascii_alphanumeric() {
            true => c.to_ascii_lowercase(),
            false => '_',
        };
        if !(c == '_' && key.ends_with('_')) {
            key.push(c);
        }
    }
    let key = cut(key.trim_end_matches('_'), limits::MAX_KEY_CHARS);
    key.trim_end_matches('_').to_string()
}

/// The first `max` characters of `text`.
fn cut(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

wasmind_sdk::export_agent!(run);

#[cfg(test)]
mod tests {
    use wasmind_sdk::{
        Completion, MindError,
        testing::{FakeHttp, ScriptedMind, TestContext, check_replay},
    };

    use super::*;

    const URL: &str = "https://status.example.com/";
    const PAGE: &str = "<h1>Status</h1><p>API: degraded. Billing: operational.</p>";

    /// A context whose Mind is `mind` and where `URL` serves `PAGE`.
    fn context(mind: ScriptedMind) -> TestContext {
        TestContext::new(mind).with_http(FakeHttp::new().page(URL, 200, PAGE))
    }

    #[test]
    fn the_summary_is_remembered_under_the_page_s_key() {
        let t = context(ScriptedMind::new([Completion::text(
            " The API is degraded; billing works. ",
        )]));
        let task = format!("Check {URL} and remember if anything is down.");
        let answer = run(t.ctx(), &task);
        assert_eq!(answer.as_deref(), Ok("The API is degraded; billing works."));
        let asked = &t.mind().requests()[0].messages[1].content;
        assert!(asked.starts_with(&format!("Task: {task}")), "{asked}");
        assert!(asked.ends_with(PAGE), "{asked}");
        let saved = t
            .memory()
            .peek(NAMESPACE, "page_status_example_com")
            .unwrap();
        assert_eq!(
            saved.value,
            format!("{URL}: The API is degraded; billing works.")
        );
        assert_eq!(saved.tags, [TAG]);
        let sent = t.http().requests();
        assert_eq!((sent.len(), sent[0].method.as_str()), (1, "GET"));
    }

    /// A server resuming it runs it again on the recorded results (the page among them,
    /// the journal's answer to its request): it must make the same calls.
    #[test]
    fn replays() {
        let t = context(ScriptedMind::new([Completion::text("All up.")]));
        let calls = check_replay(&t, &format!("Is {URL} up?"), run).unwrap();
        let kinds: Vec<&str> = calls.iter().map(|c| c.split('(').next().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "progress.report",
                "http.send",
                "mind.complete",
                "memory.put",
                "progress.report"
            ]
        );
        assert_eq!(t.http().requests().len(), 1, "the replay sent nothing");
    }

    #[test]
    fn a_page_it_cannot_fetch_or_a_mind_failure_fails_the_run_and_nothing_is_remembered() {
        let t = context(ScriptedMind::new([Completion::text("unused")]));
        let refused = run(t.ctx(), "Check https://elsewhere.example/ now").unwrap_err();
        assert!(refused.contains("denied"), "{refused}");
        let missing = run(t.ctx(), "Check nothing").unwrap_err();
        assert!(missing.contains("no http"), "{missing}");
        let t = context(ScriptedMind::default().then_error(MindError::Unavailable("down".into())));
        assert!(run(t.ctx(), URL).unwrap_err().contains("down"));
        assert!(t.memory().is_empty());
    }

    #[test]
    fn the_url_is_found_and_keyed() {
        assert_eq!(
            first_url("check https://a.example/x."),
            Some("https://a.example/x")
        );
        assert_eq!(
            first_url("see (http://b.example)!"),
            Some("http://b.example")
        );
        assert_eq!(first_url("nothing here"), None);
        assert_eq!(
            key_of("https://Status.Example.com/a?b=1"),
            "page_status_example_com_a_b_1"
        );
        let long = format!("https://{}.example/", "x".repeat(300));
        assert!(key_of(&long).len() <= limits::MAX_KEY_CHARS);
    }
}
