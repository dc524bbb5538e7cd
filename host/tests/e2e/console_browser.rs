//! The console in a real browser (headless Chromium over WebDriver): a tenant signs in
//! with the link `wasmind console login` prints, makes a key in the page and uses it over
//! the public API, watches an agent's progress stream in without a reload, finds a memory
//! in the memory browser, reads the usage and the hosts its agents may reach, and revokes the key in the page, after which
//! the public API refuses it; registers, lists again and deletes tools in the page; and
//! upgrades its plan at the payment provider (localstripe) and manages it there.
//! `WASMIND_SCREENSHOTS=docs/console` saves a PNG per page.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{
    Options, Server,
    browser::Browser,
    cli,
    fake_mind::{FakeMind, Reply},
    put, server_with_keys,
};

/// A browser signed in to `account` with the link the real CLI prints (while the server
/// holds the data dir), the token gone from the address bar.
fn signed_in(tmp: &tempfile::TempDir, server: &Server, account: &str) -> Browser {
    let (ok, link, stderr) = cli(&[
        "console",
        "login",
        "--data-dir",
        tmp.path().join("data").to_str().unwrap(),
        "--account",
        account,
        "--url",
        &server.base,
    ]);
    assert!(ok, "console login failed: {stderr}");
    let link = link.trim();
    assert!(
        link.starts_with(&format!("{}/console#token=", server.base)),
        "{link}"
    );
    let browser = Browser::start();
    browser.goto(link);
    assert_eq!(browser.text("#account"), account);
    assert!(!browser.url().contains("token="), "{}", browser.url());
    browser
}

/// What the fake Mind finally answers, once the test lets it.
const ANSWER: &str = "The launch is on Friday at noon.";

#[test]
fn a_tenant_works_in_the_console() {
    // The agent searches memory, then waits at its second Mind call until the test
    // releases it: its later progress can only reach the page live.
    let mind = FakeMind::start([
        Reply::tool_call("service_memory_search", json!({ "query": "launch" })),
        Reply::text(ANSWER).until_released(),
    ]);
    let options = Options::hash_embedder().openai_mind(&mind.base_url());
    let (tmp, server, cli_keys) =
        server_with_keys(&[("acme", "free"), ("globex", "free")], &options);
    // Another tenant's memory that acme's console must never show.
    put(
        &server.client(&cli_keys[1]),
        &json!({ "key": "launch_rumour", "value": "globex launch is on Friday", "namespace": "work" }),
    );

    let browser = signed_in(&tmp, &server, "acme");

    // Keys: a new key is shown once, listed, and works on the public API.
    browser.click("#create-key");
    let key = browser.text("#new-key-secret");
    let key_id = browser.text("#new-key-id");
    assert!(key.starts_with("wm_"), "{key}");
    browser.wait(
        "the new key's row",
        &format!("return document.querySelector('#keys-table tr[data-key-id=\"{key_id}\"] button.revoke')"),
    );
    let public = server.client(&key);
    put(
        &public,
        &json!({ "key": "launch_day", "value": "The launch is on Friday at noon", "namespace": "work" }),
    );
    browser.screenshot("keys");

    // Agents: spawned over the public API, it shows up in the open page; its progress and
    // final status stream into the detail view.
    browser.click("#nav-agents");
    browser.execute("window.sameDocument = true; return null");
    let spawned = public.post(
        "/api/v1/agents",
        &json!({ "task": "When is the launch?", "memory_mode": "explicit" }),
    );
    assert_eq!(spawned.status, 201, "{:#}", spawned.body);
    let agent = spawned.body["agent_id"].as_str().unwrap();
    browser.click(&format!("#agents-table tr[data-agent-id=\"{agent}\"]"));
    let count = "return document.querySelectorAll('#agent-progress li').length";
    browser.wait("a first progress entry", count);
    assert!(
        mind.wait_for_requests(2, Duration::from_secs(30)),
        "the agent never reached its second Mind call"
    );
    let before = browser.execute(count).as_u64().unwrap();
    browser.wait(
        "the running status",
        "return document.getElementById('agent-status').textContent === 'running'",
    );
    mind.release();
    browser.wait(
        "the completed status",
        "return document.getElementById('agent-status').textContent === 'completed'",
    );
    browser.wait(
        "progress entries after the release",
        &format!("return document.querySelectorAll('#agent-progress li').length > {before}"),
    );
    assert_eq!(browser.text("#agent-result"), ANSWER);
    assert!(
        browser
            .text("#agent-logs")
            .contains("service_memory_search")
    );
    browser.wait(
        "the list row's status",
        &format!(
            "return document.querySelector('#agents-table tr[data-agent-id=\"{agent}\"] .status')\
             ?.textContent === 'completed'"
        ),
    );
    assert_eq!(
        browser.execute("return window.sameDocument === true"),
        Value::Bool(true),
        "the page reloaded"
    );
    browser.screenshot("agents");

    // Memory: the namespace with its count, the memory found with its score breakdown,
    // its history; never the other tenant's memory.
    browser.click("#nav-memory");
    assert_eq!(
        browser.text("#namespaces li:has(button[data-namespace=\"work\"]) .count"),
        "1"
    );
    browser.fill("#memory-search-input", "when is the launch");
    browser.click("#memory-search-button");
    let breakdown = browser.text("#memory-results tr[data-key=\"launch_day\"] .breakdown");
    assert!(
        breakdown.contains("semantic") && breakdown.contains("keyword"),
        "{breakdown}"
    );
    assert_eq!(
        browser.execute("return document.querySelectorAll('#memory-results tbody tr').length"),
        json!(1),
        "another tenant's memory showed"
    );
    browser.click("#memory-results tr[data-key=\"launch_day\"] button.history-memory");
    let version = browser.text("#memory-history li");
    assert!(version.contains("Friday at noon"), "{version}");
    // Who wrote it: the REST door and the key (issue 26).
    assert!(version.contains("by rest · key_"), "{version}");
    browser.screenshot("memory");

    // Usage against the free plan, and the hosts acme's agents may reach: one the
    // operator allowed for acme alone.
    let (ok, _, stderr) = cli(&[
        "accounts",
        "allow-host",
        "--data-dir",
        tmp.path().join("data").to_str().unwrap(),
        "--account",
        "acme",
        "--host",
        "status.example.com",
    ]);
    assert!(ok, "allow-host failed: {stderr}");
    browser.click("#nav-usage");
    assert_eq!(browser.text("#usage-memories"), "1 of 1,000 memories");
    assert!(
        browser
            .text("#usage-agent-hours")
            .contains("of 10 agent-hours")
    );
    assert!(browser.text("#usage-windows").contains(&key_id));
    assert!(browser.text("#usage-http-requests").starts_with("0 of "));
    // Its rows, not the header alone: the list comes by a fetch of its own.
    let egress = browser.text("#usage-egress tbody");
    assert!(
        egress.contains("status.example.com") && egress.contains("account"),
        "{egress}"
    );
    browser.screenshot("usage");

    // Revoking in the page: the next public call with the key is refused; acme's other
    // key still works.
    browser.click("#nav-keys");
    browser.click(&format!(
        "#keys-table tr[data-key-id=\"{key_id}\"] button.revoke"
    ));
    browser.accept_dialog();
    browser.wait(
        "the revoked row",
        &format!(
            "return document.querySelector('#keys-table tr.revoked[data-key-id=\"{key_id}\"]')"
        ),
    );
    public
        .get("/api/v1/memory/list")
        .assert_error(401, "invalid_api_key");
    assert_eq!(
        server
            .client(&cli_keys[0])
            .get("/api/v1/memory/list")
            .status,
        200
    );

    // A pasted token that is not one: back to the sign-in box with the server's message.
    browser.click("#signout");
    browser.fill("#token-input", "not-a-token");
    browser.click("#signin-button");
    browser.text("#signin-error");
    assert!(
        browser
            .execute("return document.getElementById('app').hidden")
            .as_bool()
            .unwrap()
    );
}

/// Tools in the page: an HTTP tool registered with a secret header (set, never shown, and
/// there over the public API), a bad registration refused with the server's words, an
/// MCP server the host's egress policy refuses to list (the reason shown in its row), and
/// a delete after which the public API no longer finds the tool.
#[test]
fn a_tenant_registers_tools_in_the_console() {
    let (tmp, server, cli_keys) = server_with_keys(&[("acme", "free")], &Options::hash_embedder());
    let browser = signed_in(&tmp, &server, "acme");
    browser.click("#nav-tools");
    browser.text("#tools-empty");

    // An HTTP tool with its secret header.
    browser.fill("#tool-name", "weather");
    browser.fill("#tool-description", "The weather in a city");
    browser.fill("#tool-url", "https://weather.example/now");
    browser.fill(
        "#tool-parameters",
        r#"{"type": "object", "properties": {"city": {"type": "string"}}}"#,
    );
    browser.fill("#tool-header-name", "X-Api-Key");
    browser.fill("#tool-secret", "s3cr3t-weather");
    browser.click("#tool-register");
    assert_eq!(browser.text("#tool-state"), "Registered weather.");
    let secret = browser.text("#tools-table tr[data-tool=\"weather\"] td:nth-child(4)");
    assert_eq!(secret, "set (X-Api-Key)");
    let public = server.client(&cli_keys[0]);
    let tool = public.get("/api/v1/tools/weather");
    assert_eq!(tool.status, 200, "{:#}", tool.body);
    assert_eq!(tool.body["endpoint"]["url"], "https://weather.example/now");
    assert_eq!(tool.body["has_secret"], true);
    assert!(!tool.body.to_string().contains("s3cr3t"), "{:#}", tool.body);
    let page = browser.execute("return document.body.innerHTML");
    assert!(
        !page.as_str().unwrap().contains("s3cr3t"),
        "the secret is in the page"
    );

    // Arguments that are not an object's schema: the server's message in the notice line.
    browser.fill("#tool-name", "broken");
    browser.fill("#tool-parameters", r#"{"type": "string"}"#);
    browser.click("#tool-register");
    assert!(
        browser.text("#notice").contains("object of arguments"),
        "{}",
        browser.text("#notice")
    );
    assert_eq!(
        browser.execute("return document.getElementById('tool-state').textContent"),
        ""
    );

    // An MCP server the egress policy refuses: listing it again shows why, in the notice
    // and in its row.
    browser.execute(
        "const kind = document.getElementById('tool-kind'); kind.value = 'mcp'; \
         kind.dispatchEvent(new Event('change')); return null",
    );
    assert!(
        browser
            .execute("return document.getElementById('tool-http-fields').hidden")
            .as_bool()
            .unwrap()
    );
    browser.fill("#tool-name", "docs");
    browser.fill("#tool-description", "The product's docs");
    browser.fill("#tool-url", "https://docs.example/mcp");
    browser.click("#tool-register");
    browser.wait(
        "docs registered",
        "return document.getElementById('tool-state').textContent === 'Registered docs.'",
    );
    browser.click("#tools-table tr[data-tool=\"docs\"] button.refresh-tool");
    let row = browser.text("#tools-table tr[data-tool=\"docs\"] .error");
    assert!(row.contains("no allowlist"), "{row}");
    assert!(browser.text("#notice").contains("egress policy"));
    browser.screenshot("tools");

    // Deleting in the page: the public API no longer finds it.
    browser.click("#tools-table tr[data-tool=\"weather\"] button.delete-tool");
    browser.accept_dialog();
    browser.wait(
        "the deleted tool's row gone",
        "return !document.querySelector('#tools-table tr[data-tool=\"weather\"]')",
    );
    public
        .get("/api/v1/tools/weather")
        .assert_error(404, "tool_not_found");
}

/// The usage page's plan: upgrade sends the browser to the provider's checkout; once the
/// provider says it is paid, the page shows the new plan, and "manage billing" sends the
/// browser to the provider's portal.
#[test]
fn a_tenant_upgrades_from_the_console() {
    use crate::common::fake_stripe::FakeStripe;
    let stripe = FakeStripe::start();
    let options = Options {
        config: Some(FakeStripe::billing_section(&stripe.base, 3_600, 10_000)),
        hash_embedder: true,
        ..Default::default()
    };
    let (tmp, server, _) = server_with_keys(&[("acme", "free")], &options);
    stripe.send_webhooks_to(&format!("{}/api/v1/billing/webhook", server.base));
    let browser = signed_in(&tmp, &server, "acme");
    browser.click("#nav-usage");
    browser.wait(
        "the plan",
        "return document.getElementById('billing-state').textContent.startsWith('Plan free')",
    );
    assert!(
        browser
            .execute("return document.getElementById('billing-manage').disabled")
            .as_bool()
            .unwrap(),
        "no customer yet: nothing to manage"
    );
    browser.screenshot("billing");

    // Upgrade: the browser lands on the provider's checkout page.
    browser.click("#billing-upgrade");
    let at_checkout = format!("{}/pay/cs_", stripe.base);
    let script = format!("return window.location.href.startsWith('{at_checkout}')");
    browser.wait("the provider's checkout", &script);
    let session = browser.url().rsplit('/').next().unwrap().to_owned();

    // Paid at the provider: back in the console, the plan is lightyear.
    stripe.complete_checkout(&session);
    let page = format!("{}/console", server.base);
    crate::common::poll_until(Duration::from_secs(20), "the page's new plan", || {
        browser.goto(&page);
        browser.click("#nav-usage");
        let state = browser.text("#billing-state");
        match state.starts_with("Plan lightyear; subscription active") {
            true => Ok(()),
            false => Err(state),
        }
    });
    browser.click("#billing-manage");
    let at_portal = format!("{}/portal/bps_", stripe.base);
    let script = format!("return window.location.href.startsWith('{at_portal}')");
    browser.wait("the provider's portal", &script);
}
