//! localstripe with the Checkout and Billing Portal sessions it lacks (`billing/stripe.py`),
//! on a loopback port, for as long as the handle lives: the payment provider of the
//! billing tests. Its venv is `scripts/setup-tests.d/80-localstripe`'s; a test fails when it is
//! missing.

use std::{
    net::{TcpListener, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use serde_json::Value;

use super::poll_until;

/// The secret key the servers under test are given (localstripe takes any `sk_…`).
pub const SECRET_KEY: &str = "sk_test_wasmind";
/// Stripe's request bodies' type.
const FORM: &str = "application/x-www-form-urlencoded";
/// The webhook endpoint's signing secret.
pub const WEBHOOK_SECRET: &str = "whsec_wasmind_e2e";

/// The venv's python, as `scripts/setup-tests.d/80-localstripe` made it.
fn python() -> PathBuf {
    let venv = std::env::var_os("WASMIND_LOCALSTRIPE_VENV").map_or_else(
        || {
            let cache = std::env::var_os("XDG_CACHE_HOME").map_or_else(
                || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"),
                PathBuf::from,
            );
            cache.join("wasmind/localstripe-venv")
        },
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup --tests (step 80-localstripe installs localstripe)",
        python.display()
    );
    python
}

/// A running fake Stripe.
pub struct FakeStripe {
    child: Child,
    pub base: String,
    http: reqwest::blocking::Client,
}

impl FakeStripe {
    /// Starts it, with the prices `[billing]` of [`FakeStripe::billing_section`] names.
    pub fn start() -> FakeStripe {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/billing/stripe.py");
        let child = Command::new(python())
            .arg(script)
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting localstripe");
        let stripe = FakeStripe {
            child,
            base: format!("http://127.0.0.1:{port}"),
            http: reqwest::blocking::Client::new(),
        };
        poll_until(Duration::from_secs(30), "localstripe listening", || {
            TcpStream::connect(("127.0.0.1", port))
                .map(drop)
                .map_err(|e| e.to_string())
        });
        for (id, amount, currency) in [
            ("price_liftoff", "900", "usd"),
            ("price_lightyear", "4900", "usd"),
            ("price_lightyear_eur", "4500", "eur"),
        ] {
            stripe.post(
                "/v1/plans",
                &[
                    ("id", id),
                    ("amount", amount),
                    ("currency", currency),
                    ("interval", "month"),
                    ("product[name]", id),
                ],
            );
        }
        stripe
    }

    /// The `[billing]` section of a server paying here (`base_url` may be another's, to
    /// fail), with the prices made at the start and a `grace_secs` grace period.
    pub fn billing_section(base_url: &str, grace_secs: u64, timeout_ms: u64) -> String {
        format!(
            "\n[billing]\nbase_url = \"{base_url}\"\nsecret_key = \"{SECRET_KEY}\"\n\
             webhook_secret = \"{WEBHOOK_SECRET}\"\nreturn_url = \"http://127.0.0.1/console/\"\n\
             grace_secs = {grace_secs}\ntimeout_ms = {timeout_ms}\n\
             [[billing.prices]]\nid = \"price_liftoff\"\nplan = \"liftoff\"\ncurrency = \"usd\"\n\
             [[billing.prices]]\nid = \"price_lightyear\"\nplan = \"lightyear\"\ncurrency = \"usd\"\n\
             [[billing.prices]]\nid = \"price_lightyear_eur\"\nplan = \"lightyear\"\ncurrency = \"eur\"\n"
        )
    }

    /// A form POST with the secret key; the JSON answer (asserting success).
    pub fn post(&self, path: &str, form: &[(&str, &str)]) -> Value {
        let r = (self.http.post(format!("{}{path}", self.base)))
            .bearer_auth(SECRET_KEY)
            .header("content-type", FORM)
            .body(serde_urlencoded::to_string(form).unwrap())
            .send()
            .expect("localstripe");
        assert!(r.status().is_success(), "{path}: {}", r.status());
        r.json().unwrap()
    }

    /// A request with the secret key; the JSON answer.
    pub fn call(&self, method: reqwest::Method, path: &str) -> Value {
        let r = (self.http.request(method, format!("{}{path}", self.base)))
            .bearer_auth(SECRET_KEY)
            .send()
            .expect("localstripe");
        assert!(r.status().is_success(), "{path}: {}", r.status());
        r.json().unwrap()
    }

    /// Has localstripe send its events, signed, to `url`.
    pub fn send_webhooks_to(&self, url: &str) {
        let r = (self
            .http
            .post(format!("{}/_config/webhooks/wasmind", self.base)))
        .header("content-type", FORM)
        .body(serde_urlencoded::to_string([("url", url), ("secret", WEBHOOK_SECRET)]).unwrap())
        .send()
        .expect("localstripe");
        assert!(r.status().is_success());
    }

    /// The user pays checkout session `id`: localstripe makes the subscription and sends
    /// its events. The subscription's id.
    pub fn complete_checkout(&self, id: &str) -> String {
        let session = self.post(&format!("/_config/checkout/{id}/complete"), &[]);
        session["subscription"].as_str().unwrap().to_owned()
    }

    /// The customer localstripe made for `account`.
    pub fn customer_of(&self, account: &str) -> String {
        let customers = self.call(reqwest::Method::GET, "/v1/customers?limit=99");
        let found = (customers["data"].as_array().unwrap().iter())
            .find(|c| c["metadata"]["account"] == account)
            .unwrap_or_else(|| panic!("no customer of {account}: {customers:#}"));
        found["id"].as_str().unwrap().to_owned()
    }

    /// How many customers localstripe has.
    pub fn customers(&self) -> usize {
        let customers = self.call(reqwest::Method::GET, "/v1/customers?limit=99");
        customers["data"].as_array().unwrap().len()
    }
}

impl Drop for FakeStripe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `payload` signed at `t` (unix seconds) with `secret`, exactly as Stripe (and
/// localstripe) sign: `t=<t>,v1=<hex HMAC-SHA256 of "<t>.<payload>">`.
pub fn sign(secret: &str, t: u64, payload: &str) -> String {
    use aws_lc_rs::hmac;
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let tag = hmac::sign(&key, format!("{t}.{payload}").as_bytes());
    format!("t={t},v1={}", hex::encode(tag.as_ref()))
}
