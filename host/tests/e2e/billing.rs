//! Billing end to end: the real binary paying at localstripe (`common::fake_stripe`) —
//! checkout, completion, the plan changed live, the portal, cancellation back to Free with
//! what is over Free's limits read-only — and its webhook: signatures, replays, events out
//! of order, unknown customers, a failed payment's grace period; the provider down or
//! slow, unknown plans and prices; a server with no billing.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{
    Client, Options, Server, cli,
    fake_stripe::{FakeStripe, WEBHOOK_SECRET, sign},
    poll_until, put, remote_cli, server_with_keys,
};

const CHECKOUT: &str = "/api/v1/billing/checkout";
const PORTAL: &str = "/api/v1/billing/portal";
const STATE: &str = "/api/v1/billing";
const WEBHOOK: &str = "/api/v1/billing/webhook";

/// Free keeps two memories, so what a cancelled plan leaves over it shows.
const SMALL_FREE: &str = "[plans.free]\nspawns_per_minute = 5\nspawns_per_hour = 30\n\
    concurrent_agents = 2\nmemories = 2\nagent_hours_per_month = 1.0\n";

/// A server whose `[billing]` pays at `base_url`, with keys for `accounts` (all free).
fn paying(
    base_url: &str,
    grace_secs: u64,
    timeout_ms: u64,
    accounts: &[&str],
) -> (tempfile::TempDir, Server, Vec<String>) {
    let options = Options {
        config: Some(format!(
            "{SMALL_FREE}{}",
            FakeStripe::billing_section(base_url, grace_secs, timeout_ms)
        )),
        hash_embedder: true,
        ..Default::default()
    };
    let plans: Vec<(&str, &str)> = accounts.iter().map(|a| (*a, "free")).collect();
    server_with_keys(&plans, &options)
}

fn plan_of(c: &Client) -> String {
    let r = c.get(STATE);
    assert_eq!(r.status, 200, "{:#}", r.body);
    r.body["plan"].as_str().unwrap().to_owned()
}

/// Waits until the account's plan is `want` and, with `status`, its subscription's status
/// that (webhooks arrive a second or so after the provider's change; the plan moves an
/// instant before the subscription is recorded).
#[track_caller]
fn wait_for(c: &Client, want: &str, status: Option<&str>) -> Value {
    poll_until(Duration::from_secs(20), &format!("plan {want}"), || {
        let r = c.get(STATE);
        let status_seen = status.is_none_or(|s| r.body["subscription"]["status"] == s);
        match r.body["plan"] == want && status_seen {
            true => Ok(r.body),
            false => Err(format!("{:#}", r.body)),
        }
    })
}

/// Opens a checkout for `plan`; the session id.
fn checkout(c: &Client, stripe: &FakeStripe, plan: &str) -> String {
    let r = c.post(CHECKOUT, &json!({ "plan": plan }));
    assert_eq!(r.status, 200, "{:#}", r.body);
    let url = r.body["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("{}/pay/cs_", stripe.base)),
        "{url}"
    );
    assert_eq!(r.body["plan"], plan);
    r.body["session_id"].as_str().unwrap().to_owned()
}

/// Posts `event` to the webhook signed with `secret` at `t`.
fn deliver(server: &Server, event: &Value, secret: &str, t: u64) -> crate::common::Resp {
    let anon = Client::new(&server.base, None);
    let payload = event.to_string();
    let request = anon
        .request(Method::POST, WEBHOOK)
        .header("stripe-signature", sign(secret, t, &payload))
        .header("content-type", "application/json")
        .body(payload);
    anon.send(request)
}

fn now_secs() -> u64 {
    crate::common::now_ms() / 1_000
}

/// A `customer.subscription.*` event as Stripe sends it.
fn subscription_event(
    id: &str,
    kind: &str,
    created: u64,
    customer: &str,
    sub: (&str, &str, u64, &str),
) -> Value {
    let (sub_id, status, sub_created, price) = sub;
    json!({
        "id": id, "object": "event", "type": format!("customer.subscription.{kind}"),
        "created": created,
        "data": { "object": {
            "id": sub_id, "object": "subscription", "customer": customer, "status": status,
            "created": sub_created, "metadata": {},
            "items": { "object": "list", "data": [ { "price": { "id": price } } ] }
        } }
    })
}

#[test]
fn checkout_pays_the_plan_live_and_cancelling_leaves_free_with_the_rest_read_only() {
    let stripe = FakeStripe::start();
    let (tmp, server, keys) = paying(&stripe.base, 3_600, 10_000, &["acme"]);
    stripe.send_webhooks_to(&format!("{}{WEBHOOK}", server.base));
    let c = server.client(&keys[0]);
    let before = c.get(STATE).body;
    assert_eq!(
        (
            before["plan"].clone(),
            before["billing_enabled"].clone(),
            before["customer"].clone()
        ),
        (json!("free"), json!(true), json!(false))
    );

    // Checkout → the provider's page; the account now has a customer, still on free.
    let session = checkout(&c, &stripe, "lightyear");
    assert_eq!(c.get(STATE).body["customer"], true);
    assert_eq!(plan_of(&c), "free");

    // The user pays: localstripe's own signed events change the plan, live, same key.
    let subscription = stripe.complete_checkout(&session);
    let paid = wait_for(&c, "lightyear", Some("active"));
    assert_eq!(paid["subscription"]["id"], subscription.as_str());
    assert_eq!(paid["subscription"]["status"], "active");
    let metrics = reqwest::blocking::get(format!("{}/metrics", server.base))
        .unwrap()
        .text()
        .unwrap();
    assert!(
        metrics.contains(r#"wasmind_accounts{plan="lightyear",subscription="active"} 1"#),
        "{metrics}"
    );
    for i in 0..3 {
        put(
            &c,
            &json!({ "key": format!("note_{i}"), "value": format!("note {i}") }),
        );
    }

    // The portal, for the same customer.
    let portal = c.post(PORTAL, &json!({}));
    assert_eq!(portal.status, 200, "{:#}", portal.body);
    let url = portal.body["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("{}/portal/bps_", stripe.base)),
        "{url}"
    );

    // Cancelled at the provider → free; the three memories stay, over free's two:
    // readable and deletable, read-only until the account is back within the limit.
    stripe.call(Method::DELETE, &format!("/v1/subscriptions/{subscription}"));
    wait_for(&c, "free", Some("canceled"));
    let list = c.get("/api/v1/memory/list");
    assert_eq!(
        list.body["data"].as_array().unwrap().len(),
        3,
        "nothing deleted"
    );
    assert_eq!(c.get("/api/v1/memory?key=note_0").status, 200);
    let refused = c.post(
        "/api/v1/memory",
        &json!({ "key": "note_3", "value": "one more" }),
    );
    refused.assert_error(402, "memory_quota_exceeded");
    let edit = json!({ "key": "note_0", "value": "changed" });
    c.post("/api/v1/memory", &edit)
        .assert_error(402, "memory_quota_exceeded");
    assert_eq!(
        c.delete("/api/v1/memory?key=note_2&hard=true").status / 100,
        2
    );
    // At the limit again: what it has is editable, a new memory is not.
    put(&c, &edit);
    assert_eq!(
        c.delete("/api/v1/memory?key=note_1&hard=true").status / 100,
        2
    );
    put(
        &c,
        &json!({ "key": "note_3", "value": "under the limit again" }),
    );

    // A second checkout reuses the customer.
    checkout(&c, &stripe, "liftoff");
    assert_eq!(stripe.customers(), 1);
    assert!(server.log().contains("plan changed by billing"));

    // The operator sees who set the plan.
    let dir = tmp.path().join("data");
    let (ok, out, err) = cli(&["accounts", "list", "--data-dir", dir.to_str().unwrap()]);
    assert!(ok, "{err}");
    let acme = out
        .lines()
        .find(|l| l.starts_with("acme"))
        .unwrap_or_default();
    assert!(
        acme.contains(" free ") && acme.trim_end().ends_with("billing"),
        "{out}"
    );
}

#[test]
fn webhooks_are_verified_applied_once_and_ordered_by_their_own_time() {
    let stripe = FakeStripe::start();
    let (_tmp, server, keys) = paying(&stripe.base, 2, 10_000, &["acme"]);
    let c = server.client(&keys[0]);
    checkout(&c, &stripe, "lightyear");
    let customer = stripe.customer_of("acme");
    let now = now_secs();

    // Signatures: missing, wrong secret, stale, tampered → 400, nothing applied.
    let active = subscription_event(
        "evt_a",
        "created",
        now - 50,
        &customer,
        ("sub_1", "active", now - 50, "price_lightyear"),
    );
    let anon = Client::new(&server.base, None);
    let unsigned = anon.send(
        anon.request(Method::POST, WEBHOOK)
            .header("content-type", "application/json")
            .body(active.to_string()),
    );
    unsigned.assert_error(400, "invalid_signature");
    deliver(&server, &active, "whsec_other", now).assert_error(400, "invalid_signature");
    deliver(&server, &active, WEBHOOK_SECRET, now - 3_600).assert_error(400, "invalid_signature");
    let payload = active.to_string();
    let tampered = anon.send(
        anon.request(Method::POST, WEBHOOK)
            .header("stripe-signature", sign(WEBHOOK_SECRET, now, &payload))
            .body(payload.replace("price_lightyear", "price_liftoff")),
    );
    tampered.assert_error(400, "invalid_signature");
    assert_eq!(plan_of(&c), "free");

    // Applied once: the replay after a cancellation changes nothing.
    let r = deliver(&server, &active, WEBHOOK_SECRET, now);
    assert_eq!(
        (r.status, r.body["outcome"].clone()),
        (200, json!("applied")),
        "{:#}",
        r.body
    );
    assert_eq!(plan_of(&c), "lightyear");
    let deleted = subscription_event(
        "evt_b",
        "deleted",
        now - 40,
        &customer,
        ("sub_1", "active", now - 50, "price_lightyear"),
    );
    assert_eq!(
        deliver(&server, &deleted, WEBHOOK_SECRET, now).body["plan"],
        "free"
    );
    let replay = deliver(&server, &active, WEBHOOK_SECRET, now);
    assert_eq!(replay.body["outcome"], "duplicate");
    assert_eq!(plan_of(&c), "free");

    // Out of order: a new subscription's update arrives before its creation, and the old
    // one's stale update after both; the newest state of the newest subscription wins.
    let upgraded = subscription_event(
        "evt_d",
        "updated",
        now - 20,
        &customer,
        ("sub_2", "active", now - 30, "price_lightyear_eur"),
    );
    let created = subscription_event(
        "evt_c",
        "created",
        now - 30,
        &customer,
        ("sub_2", "active", now - 30, "price_liftoff"),
    );
    let stale = subscription_event(
        "evt_e",
        "updated",
        now - 45,
        &customer,
        ("sub_1", "active", now - 50, "price_liftoff"),
    );
    for event in [&upgraded, &created, &stale] {
        assert_eq!(deliver(&server, event, WEBHOOK_SECRET, now).status, 200);
    }
    let state = c.get(STATE).body;
    assert_eq!(
        (state["plan"].clone(), state["subscription"]["id"].clone()),
        (json!("lightyear"), json!("sub_2"))
    );

    // A customer no account has: 404 user_not_found, logged, not recorded.
    let stranger = subscription_event(
        "evt_f",
        "updated",
        now,
        "cus_nobody",
        ("sub_9", "active", now, "price_liftoff"),
    );
    deliver(&server, &stranger, WEBHOOK_SECRET, now).assert_error(404, "user_not_found");
    poll_until(
        Duration::from_secs(5),
        "the unknown customer logged",
        || match server.log().contains("cus_nobody") {
            true => Ok(()),
            false => Err(server.log()),
        },
    );

    // A failed payment keeps the plan for the grace period (2 s here), then free.
    let failed = json!({
        "id": "evt_g", "type": "invoice.payment_failed", "created": now_secs(),
        "data": { "object": { "customer": customer, "subscription": "sub_2" } }
    });
    assert_eq!(
        deliver(&server, &failed, WEBHOOK_SECRET, now_secs()).body["plan"],
        "lightyear"
    );
    assert!(c.get(STATE).body["subscription"]["past_due_since"].is_string());
    wait_for(&c, "free", None);
    assert!(server.log().contains("grace period over"));
}

/// `wasmind billing` as an API client: status, checkout, portal, and a refusal as the
/// server says it.
#[test]
fn the_cli_checks_out_and_shows_the_subscription() {
    let stripe = FakeStripe::start();
    let (_tmp, server, keys) = paying(&stripe.base, 3_600, 10_000, &["acme"]);
    let (code, out, err) = remote_cli(&server, &keys[0], &["billing", "status"]);
    assert_eq!(code, 0, "{err}");
    let status: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (status["plan"].clone(), status["customer"].clone()),
        (json!("free"), json!(false))
    );
    let args = [
        "billing",
        "checkout",
        "--plan",
        "lightyear",
        "--price-id",
        "price_lightyear_eur",
    ];
    let (code, out, err) = remote_cli(&server, &keys[0], &args);
    assert_eq!(code, 0, "{err}");
    let opened: Value = serde_json::from_str(&out).unwrap();
    assert!(
        opened["url"].as_str().unwrap().starts_with(&stripe.base),
        "{out}"
    );
    assert_eq!(opened["currency"], "eur");
    let (code, out, err) = remote_cli(&server, &keys[0], &["billing", "portal"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("/portal/bps_"), "{out}");
    let (code, _, err) = remote_cli(
        &server,
        &keys[0],
        &["billing", "checkout", "--plan", "platinum"],
    );
    assert_eq!(code, 1);
    assert!(err.contains("invalid_plan: "), "{err}");
}

#[test]
fn provider_failures_and_bad_choices_change_nothing() {
    let stripe = FakeStripe::start();
    let (_tmp, server, keys) = paying(&stripe.base, 3_600, 10_000, &["acme"]);
    let c = server.client(&keys[0]);
    for body in [
        json!({ "plan": "platinum" }),
        json!({ "plan": "free" }),
        json!({}),
        json!({ "plan": 3 }),
    ] {
        c.post(CHECKOUT, &body).assert_error(400, "invalid_plan");
    }
    for price in ["price_nope", "price_liftoff"] {
        let r = c.post(CHECKOUT, &json!({ "plan": "lightyear", "price_id": price }));
        r.assert_error(400, "invalid_price_id");
    }
    let eur = c.post(
        CHECKOUT,
        &json!({ "plan": "lightyear", "price_id": "price_lightyear_eur" }),
    );
    assert_eq!(
        (eur.status, eur.body["currency"].clone()),
        (200, json!("eur"))
    );
    let (_tmp2, fresh, fresh_keys) = paying(&stripe.base, 3_600, 10_000, &["bob"]);
    fresh
        .client(&fresh_keys[0])
        .post(PORTAL, &json!({}))
        .assert_error(404, "customer_not_found");

    // The provider down (nothing listens), then slower than the timeout.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let slow = format!("{}/_slow", stripe.base);
    for base in [down, slow] {
        let (_t, server, keys) = paying(&base, 3_600, 500, &["carol"]);
        let c = server.client(&keys[0]);
        let r = c.post(CHECKOUT, &json!({ "plan": "liftoff" }));
        r.assert_error(502, "billing_unavailable");
        assert!(r.retry_after.is_some(), "retryable");
        let state = c.get(STATE).body;
        assert_eq!(
            (state["customer"].clone(), state["plan"].clone()),
            (json!(false), json!("free")),
            "{base}"
        );
    }
    assert_eq!(stripe.customers(), 1, "only acme's");
}

#[test]
fn without_billing_the_routes_say_so_and_nothing_else_changes() {
    let options = Options {
        hash_embedder: true,
        ..Default::default()
    };
    let (_tmp, server, keys) = server_with_keys(&[("acme", "liftoff")], &options);
    let c = server.client(&keys[0]);
    c.post(CHECKOUT, &json!({ "plan": "lightyear" }))
        .assert_error(501, "billing_not_configured");
    c.post(PORTAL, &json!({}))
        .assert_error(501, "billing_not_configured");
    deliver(&server, &json!({}), WEBHOOK_SECRET, now_secs())
        .assert_error(501, "billing_not_configured");
    let state = c.get(STATE).body;
    assert_eq!(
        (state["plan"].clone(), state["billing_enabled"].clone()),
        (json!("liftoff"), json!(false))
    );
    put(&c, &json!({ "key": "still", "value": "works" }));
}
