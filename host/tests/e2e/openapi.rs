//! The OpenAPI document (`GET /api/v1/openapi.json`) kept true.
//!
//! The document is fetched from the real server (no key) and every documented operation is
//! driven: successes and errors. Each response is checked against the document — the
//! operation exists, its status is documented, the JSON body validates against the
//! documented schema (JSON Schema 2020-12 by the `jsonschema` crate, `$ref`s resolved
//! against the served document), documented headers are sent — and each request is checked against the
//! documented parameters and request body (what the server accepted must be valid per the
//! document; what it refused with 400 must be invalid per the document). Conversely every
//! documented operation, status and error code must have been seen, every documented path
//! must refuse the methods it does not document with 405, and the routes of the
//! specification that are not documented must be 404: so a route served but undocumented,
//! or documented but not served, fails this test.
//!
//! The reference page (`/api/v1/docs`) is HTML and its assets, not JSON: it is driven on
//! its own (redirect, page, an asset, a missing asset) rather than by the JSON checks.
//!
//! Agents are driven with the offline Mind (its agents finish by themselves), and the
//! admission refusals (402, both 429s, 503 at host capacity) on a second server whose
//! plans are tiny and whose agents spin until stopped.

use std::{
    cell::RefCell,
    collections::{BTreeMap, BTreeSet, HashMap},
    time::{Duration, Instant},
};

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{
    Client, Options, Resp, Server, create_key,
    fake_mind::{FakeMind, Reply},
    mcp_origin::McpOrigin,
    origin::Origin,
    server_with_keys,
};

/// The operation keys of an OpenAPI path item.
const HTTP_METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Methods probed on every documented path: those not documented there must be 405.
const PROBED_METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// Paths of the specification (and near misses) that must answer 404 unless documented.
const UNSERVED_PATHS: [&str; 8] = [
    "/",
    "/api/v1",
    "/api/v1/nope",
    "/api/v1/memory/",
    "/api/v1/agents/",
    "/api/v1/agents/ag_0000/stop",
    "/api/v1/agents/ag_0000/logs/1",
    "/api/v2/memory",
];

/// A free plan holding two memories and no agent component (of at most 1 KiB), uploading
/// one an hour, for the quota errors.
const TINY_FREE_PLAN: &str = "[plans.free]\nspawns_per_minute = 5\nspawns_per_hour = 30\n\
    concurrent_agents = 2\nmemories = 2\nagent_hours_per_month = 1.0\n\
    component_max_bytes = 1024\ncomponents = 0\ncomponent_uploads_per_hour = 1\n";

/// A remote embedder that cannot be reached, for the 503s.
const UNREACHABLE_EMBEDDER: &str = "[embedder]\nkind = \"openai\"\n\n[embedder.openai]\n\
    base_url = \"http://127.0.0.1:9/v1\"\nmodel = \"none\"\ndims = 384\n";

const MEMORY: &str = "/api/v1/memory";
const SEARCH: &str = "/api/v1/memory/search";
const DEDUPE: &str = "/api/v1/memory/dedupe";
const CONSOLIDATE: &str = "/api/v1/memory/consolidate";
const NAMESPACES: &str = "/api/v1/memory/namespaces";
const EXPORT: &str = "/api/v1/memory/export";
const IMPORT: &str = "/api/v1/memory/import";
const OPENAPI: &str = "/api/v1/openapi.json";
const DOCS: &str = "/api/v1/docs";
const AGENTS: &str = "/api/v1/agents";
const CONSOLE: &str = "/api/v1/console";
const EVENTS: &str = "/api/v1/console/agents/{id}/events";

/// Tiny plans for the admission refusals: free has no agent-hours nor Mind tokens (402 at
/// once, for a spawn and a consolidation), liftoff
/// admits one spawn per minute per key (429 `rate_limited`), lightyear one live agent (429
/// `concurrent_limit_reached`); the host admits two live agents (503 at capacity).
const TINY_AGENT_PLANS: &str = "[plans.free]\nspawns_per_minute = 5\nspawns_per_hour = 30\n\
    concurrent_agents = 2\nmemories = 100\nagent_hours_per_month = 0.0\ntokens_per_month = 0\n\n\
    [plans.liftoff]\nspawns_per_minute = 1\nspawns_per_hour = 30\nconcurrent_agents = 5\n\
    memories = 100\nagent_hours_per_month = 10.0\n\n\
    [plans.lightyear]\nspawns_per_minute = 30\nspawns_per_hour = 500\nconcurrent_agents = 1\n\
    memories = 100\nagent_hours_per_month = 10.0\nevent_streams = 1\n\n\
    [runtime]\nmax_agents = 2\nstop_grace_secs = 1.0\n";

/// A free plan whose accounts may have one request in flight.
const ONE_IN_FLIGHT: &str = "[plans.free]\nspawns_per_minute = 5\nspawns_per_hour = 30\n\
    concurrent_agents = 2\nmemories = 100\nagent_hours_per_month = 1.0\nrequests_in_flight = 1\n";

const JSON: &str = "application/json";
/// The body of a component upload; the one request body that is not JSON.
const WASM: &str = "application/wasm";

/// A request body and its Content-Type.
struct Payload<'a> {
    content_type: Option<&'a str>,
    bytes: &'a [u8],
}

/// How the request side of an exchange is held to the document.
#[derive(Clone, Copy, PartialEq)]
enum Conformance {
    /// Accepted (2xx) ⇒ valid per the document; refused with 400 ⇒ invalid per the document.
    Strict,
    /// No request-side check: the request's validity is not a matter of shape (an opaque
    /// cursor, an import whose invalid items are reported item by item).
    Opaque,
}

/// The document, and what the test has seen of it.
struct Spec {
    doc: Value,
    /// (METHOD, path) → statuses seen.
    seen: BTreeMap<(String, String), BTreeSet<u16>>,
    /// (METHOD, path, status, error code) seen.
    codes: BTreeSet<(String, String, u16, String)>,
    /// Compiled schemas, by their text.
    validators: RefCell<HashMap<String, jsonschema::Validator>>,
    /// A header the next exchange sends (a webhook's signature).
    header: Option<(&'static str, String)>,
}

impl Spec {
    fn new(doc: Value) -> Spec {
        Spec {
            doc,
            seen: BTreeMap::new(),
            codes: BTreeSet::new(),
            validators: RefCell::new(HashMap::new()),
            header: None,
        }
    }

    /// The value a local `$ref` points at.
    fn pointer(&self, reference: &str) -> &Value {
        let pointer = reference
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("only local $refs are supported: {reference}"));
        self.doc
            .pointer(pointer)
            .unwrap_or_else(|| panic!("$ref {reference} resolves to nothing"))
    }

    /// Follows a chain of pure `$ref` objects (responses, parameters, headers).
    fn resolve<'a>(&'a self, mut value: &'a Value) -> &'a Value {
        for _ in 0..16 {
            match value.get("$ref").and_then(Value::as_str) {
                Some(reference) => value = self.pointer(reference),
                None => return value,
            }
        }
        panic!("$ref chain too long (a cycle?)")
    }

    /// Every (METHOD, path) the document lists.
    fn operations(&self) -> BTreeSet<(String, String)> {
        let mut ops = BTreeSet::new();
        for (path, item) in self.doc["paths"].as_object().expect("paths is an object") {
            for method in item.as_object().expect("path item is an object").keys() {
                if HTTP_METHODS.contains(&method.as_str()) {
                    ops.insert((method.to_uppercase(), path.clone()));
                }
            }
        }
        ops
    }

    fn operation(&self, method: &str, path: &str) -> Option<&Value> {
        self.doc["paths"].get(path)?.get(method.to_lowercase())
    }

    /// The documented path a concrete one matches — itself, or a template whose `{name}`
    /// segments stand for any non-empty segment — with the values of those parameters.
    fn route(&self, path: &str) -> Option<(String, Vec<(String, String)>)> {
        let paths = self.doc["paths"].as_object()?;
        if paths.contains_key(path) {
            return Some((path.to_string(), Vec::new()));
        }
        let segments: Vec<&str> = path.split('/').collect();
        paths.keys().find_map(|template| {
            let parts: Vec<&str> = template.split('/').collect();
            if parts.len() != segments.len() {
                return None;
            }
            let mut params = Vec::new();
            for (part, segment) in parts.iter().zip(&segments) {
                match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                    Some(name) if !segment.is_empty() => {
                        params.push((name.to_string(), percent_decode(segment)));
                    }
                    _ if part == segment => {}
                    _ => return None,
                }
            }
            Some((template.clone(), params))
        })
    }

    /// The security requirements in force for an operation.
    fn security<'a>(&'a self, op: &'a Value) -> &'a Value {
        op.get("security").unwrap_or(&self.doc["security"])
    }

    /// Whether an operation needs a key: no requirement in force may be the empty one.
    fn secured(&self, op: &Value) -> bool {
        let requirements = self.security(op).as_array().expect("security is an array");
        !requirements.is_empty()
            && requirements
                .iter()
                .all(|r| !r.as_object().expect("a requirement").is_empty())
    }

    /// The documented statuses of an operation, as numbers.
    fn statuses(op: &Value) -> BTreeSet<u16> {
        op["responses"]
            .as_object()
            .expect("responses is an object")
            .keys()
            .map(|s| {
                s.parse().unwrap_or_else(|_| {
                    panic!("status {s:?} is not a number (ranges and default are not used)")
                })
            })
            .collect()
    }

    /// The error codes a response documents (the `enum` of `error.code`), if it lists them.
    fn documented_codes(&self, schema: &Value) -> Option<BTreeSet<String>> {
        let mut out: Option<BTreeSet<String>> = None;
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str)
            && let Some(codes) = self.documented_codes(self.pointer(reference))
        {
            out.get_or_insert_with(BTreeSet::new).extend(codes);
        }
        for sub in ["allOf", "anyOf", "oneOf"]
            .iter()
            .filter_map(|k| schema.get(k).and_then(Value::as_array))
            .flatten()
        {
            if let Some(codes) = self.documented_codes(sub) {
                out.get_or_insert_with(BTreeSet::new).extend(codes);
            }
        }
        if let Some(list) = schema
            .pointer("/properties/error/properties/code/enum")
            .and_then(Value::as_array)
        {
            out.get_or_insert_with(BTreeSet::new).extend(
                list.iter()
                    .map(|c| c.as_str().expect("codes are strings").to_string()),
            );
        }
        out
    }

    // ----- The document on its own -----

    /// Structural checks that need no server.
    fn check_document(&self) {
        let doc = &self.doc;
        let version = doc["openapi"].as_str().expect("openapi member");
        assert!(version.starts_with("3.1."), "not OpenAPI 3.1: {version}");
        assert!(doc["info"]["title"].is_string(), "info.title");
        assert_eq!(doc["info"]["version"], "0.1.0", "info.version");
        check_refs(self, doc, "#");

        // Bearer security (API keys), applied globally; the console's routes take an ID
        // token (a JWT bearer scheme) instead.
        let schemes = doc["components"]["securitySchemes"]
            .as_object()
            .expect("securitySchemes");
        let bearer = |jwt: bool| -> Vec<&String> {
            schemes
                .iter()
                .filter(|(_, s)| {
                    s["type"] == "http"
                        && s["scheme"]
                            .as_str()
                            .is_some_and(|x| x.eq_ignore_ascii_case("bearer"))
                        && (s["bearerFormat"] == "JWT") == jwt
                })
                .map(|(name, _)| name)
                .collect()
        };
        let (key, id_token) = (bearer(false), bearer(true));
        assert_eq!(key.len(), 1, "one http bearer scheme for keys: {schemes:?}");
        assert_eq!(id_token.len(), 1, "one for ID tokens: {schemes:?}");
        assert_eq!(
            doc["security"],
            json!([{ key[0].clone(): [] }]),
            "global bearer security"
        );
        // The account's reads and management take either; which ones is driven below.
        let either = json!([{ key[0].clone(): [] }, { id_token[0].clone(): [] }]);
        for (method, path) in self.operations() {
            let op = self.operation(&method, &path).unwrap();
            assert_eq!(
                path.starts_with(CONSOLE),
                self.security(op) == &json!([{ id_token[0].clone(): [] }]),
                "{method} {path}: the console's routes, and only they, take an ID token alone"
            );
            let security = self.security(op);
            assert!(
                path.starts_with(CONSOLE)
                    || !self.secured(op)
                    || *security == doc["security"]
                    || *security == either,
                "{method} {path}: a key, or either credential: {security}"
            );
        }

        let unmatched = &doc["x-unmatched-requests"];
        for status in ["404", "405"] {
            let response = self.resolve(&unmatched[status]);
            assert!(
                response["content"]["application/json"]["schema"].is_object(),
                "x-unmatched-requests.{status}"
            );
        }

        let mut ids = BTreeSet::new();
        for (method, path) in self.operations() {
            if is_page(&path) {
                assert!(
                    !self.secured(self.operation(&method, &path).unwrap()),
                    "{method} {path}: the reference page needs no key"
                );
                continue;
            }
            let what = format!("{method} {path}");
            let op = self.operation(&method, &path).unwrap();
            if let Some(id) = op["operationId"].as_str() {
                assert!(
                    ids.insert(id.to_string()),
                    "{what}: operationId {id} used twice"
                );
            }
            let params: Vec<&Value> = op["parameters"]
                .as_array()
                .map(|ps| ps.iter().map(|p| self.resolve(p)).collect())
                .unwrap_or_default();
            let templated: BTreeSet<&str> = path
                .split('/')
                .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
                .collect();
            let documented: BTreeSet<&str> = params
                .iter()
                .filter(|p| p["in"] == "path")
                .map(|p| {
                    assert_eq!(p["required"], true, "{what}: path parameters are required");
                    p["name"].as_str().expect("parameter name")
                })
                .collect();
            assert_eq!(templated, documented, "{what}: path parameters");
            let statuses = Self::statuses(op);
            assert!(
                statuses.iter().any(|s| (200..300).contains(s)),
                "{what}: no success response"
            );
            for (status, response) in op["responses"].as_object().unwrap() {
                let response = self.resolve(response);
                assert!(
                    response["description"].is_string(),
                    "{what} {status}: description"
                );
                if path == EVENTS && status == "200" {
                    assert!(
                        response["content"]["text/event-stream"].is_object(),
                        "{what} 200: the event stream"
                    );
                    continue;
                }
                assert!(
                    response["content"]["application/json"]["schema"].is_object(),
                    "{what} {status}: every response is JSON with a schema"
                );
                let documents_retry_after = response["headers"]
                    .as_object()
                    .is_some_and(|h| h.keys().any(|k| k.eq_ignore_ascii_case("retry-after")));
                if status == "503" {
                    assert!(documents_retry_after, "{what} 503: Retry-After header");
                }
                if status.starts_with('4') || status.starts_with('5') {
                    let schema = &response["content"]["application/json"]["schema"];
                    assert!(
                        self.documented_codes(schema).is_some(),
                        "{what} {status}: list the error codes"
                    );
                }
            }
            if self.secured(op) {
                assert!(
                    statuses.contains(&401),
                    "{what}: a secured operation documents 401"
                );
                assert!(statuses.contains(&500), "{what}: 500");
            }
            if let Some(body) = op.get("requestBody") {
                let body = self.resolve(body);
                let json = body["content"][JSON]["schema"].is_object();
                let wasm = body["content"][WASM]["schema"]["format"] == "binary";
                assert!(
                    json || wasm,
                    "{what}: request schema (JSON, or a component's bytes)"
                );
                assert!(
                    statuses.contains(&400) && statuses.contains(&413),
                    "{what}: a body route documents 400 and 413"
                );
            }
        }
        let openapi = self
            .operation("GET", OPENAPI)
            .expect("the document documents itself");
        assert!(!self.secured(openapi), "the document needs no key");
    }

    // ----- Exchanges -----

    fn get(&mut self, c: &Client, url: &str) -> Resp {
        self.exchange(c, &Method::GET, url, None, Conformance::Strict)
    }

    fn delete(&mut self, c: &Client, url: &str) -> Resp {
        self.exchange(c, &Method::DELETE, url, None, Conformance::Strict)
    }

    fn post(&mut self, c: &Client, url: &str, body: &Value) -> Resp {
        self.exchange(
            c,
            &Method::POST,
            url,
            Some(&body.to_string()),
            Conformance::Strict,
        )
    }

    fn post_raw(&mut self, c: &Client, url: &str, body: &str) -> Resp {
        self.exchange(c, &Method::POST, url, Some(body), Conformance::Strict)
    }

    /// Posts a component's bytes with `content_type` (`None`: no header).
    fn post_bytes(
        &mut self,
        c: &Client,
        url: &str,
        bytes: &[u8],
        content_type: Option<&str>,
        conformance: Conformance,
    ) -> Resp {
        let payload = Payload {
            content_type,
            bytes,
        };
        self.exchange_payload(c, &Method::POST, url, Some(&payload), conformance)
    }

    /// Sends a request with a JSON body (or none); see [`Spec::exchange_payload`].
    fn exchange(
        &mut self,
        c: &Client,
        method: &Method,
        url: &str,
        body: Option<&str>,
        conformance: Conformance,
    ) -> Resp {
        let payload = body.map(|text| Payload {
            content_type: Some(JSON),
            bytes: text.as_bytes(),
        });
        self.exchange_payload(c, method, url, payload.as_ref(), conformance)
    }

    /// Sends a request, checks request and response against the document, records it.
    fn exchange_payload(
        &mut self,
        c: &Client,
        method: &Method,
        url: &str,
        body: Option<&Payload<'_>>,
        conformance: Conformance,
    ) -> Resp {
        let mut request = c.request(method.clone(), url);
        if let Some((name, value)) = self.header.take() {
            request = request.header(name, value);
        }
        if let Some(payload) = body {
            if let Some(content_type) = payload.content_type {
                request = request.header("content-type", content_type);
            }
            request = request.body(payload.bytes.to_vec());
        }
        let r = c.send(request);
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        let what = format!(
            "{method} {}{} → {}",
            path,
            if query.is_empty() {
                String::new()
            } else {
                format!("?{}", abbreviate(query))
            },
            r.status
        );
        let (route, path_params) = self.route(path).unwrap_or_else(|| {
            panic!(
                "{what}: no path of the OpenAPI document matches {path}\n{:#}",
                r.body
            )
        });
        let op = self
            .operation(method.as_str(), &route)
            .unwrap_or_else(|| {
                panic!(
                    "{what}: {method} {route} is not in the OpenAPI document\n{:#}",
                    r.body
                )
            })
            .clone();
        let response = op["responses"]
            .get(r.status.to_string())
            .unwrap_or_else(|| {
                panic!(
                    "{what}: status {} is not documented for {method} {route}\n{:#}",
                    r.status, r.body
                )
            });
        let response = self.resolve(response).clone();
        self.check_response(&response, &r, &what);

        if conformance == Conformance::Strict {
            let violations = self.request_violations(&op, &path_params, query, body);
            if (200..300).contains(&r.status) {
                assert!(
                    violations.is_empty(),
                    "{what}: the server accepted a request the document calls invalid: {violations:#?}"
                );
            }
            if r.status == 400 {
                assert!(
                    !violations.is_empty(),
                    "{what}: the server refused ({}) a request the document calls valid — document the bound\n{:#}",
                    r.code(),
                    r.body
                );
            }
        }

        let key = (method.as_str().to_string(), route.clone());
        self.seen.entry(key).or_default().insert(r.status);
        if r.status >= 400 {
            self.codes.insert((
                method.as_str().to_string(),
                route,
                r.status,
                r.code().to_string(),
            ));
        }
        r
    }

    /// A request no operation matches: checks it against `x-unmatched-requests`.
    fn unmatched(&self, c: &Client, method: &str, url: &str, status: u16) {
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = c.request(method.clone(), url);
        if method == Method::POST || method == Method::PUT || method == Method::PATCH {
            request = request
                .header("content-type", "application/json")
                .body("{}");
        }
        let r = c.send(request);
        let what = format!("{method} {url} → {}", r.status);
        assert_eq!(r.status, status, "{what}: expected {status}\n{:#}", r.body);
        let response = self
            .resolve(&self.doc["x-unmatched-requests"][status.to_string()])
            .clone();
        self.check_response(&response, &r, &what);
    }

    /// A response against its documented content and headers.
    fn check_response(&self, response: &Value, r: &Resp, what: &str) {
        assert!(
            r.content_type.starts_with("application/json"),
            "{what}: Content-Type {:?}",
            r.content_type
        );
        let schema = response["content"]["application/json"]
            .get("schema")
            .unwrap_or_else(|| {
                panic!("{what}: the documented response has no application/json schema")
            });
        let mut errors = Vec::new();
        self.validate(schema, &r.body, "$", &mut errors);
        assert!(
            errors.is_empty(),
            "{what}: the body does not match the documented schema:\n{}\n{:#}",
            errors.join("\n"),
            r.body
        );

        let headers = response["headers"].as_object().cloned().unwrap_or_default();
        let mut documents_retry_after = false;
        for (name, header) in &headers {
            assert!(
                name.eq_ignore_ascii_case("retry-after"),
                "{what}: this test can only check Retry-After, not {name}"
            );
            documents_retry_after = true;
            let header = self.resolve(header);
            match &r.retry_after {
                None => assert!(
                    header["required"] != true,
                    "{what}: documented header {name} is missing"
                ),
                Some(text) => {
                    let value = coerce(text, header["schema"]["type"].as_str().unwrap_or("string"))
                        .unwrap_or_else(|e| panic!("{what}: {name}: {e}"));
                    let mut errors = Vec::new();
                    self.validate(&header["schema"], &value, name, &mut errors);
                    assert!(errors.is_empty(), "{what}: {errors:?}");
                }
            }
        }
        if r.retry_after.is_some() {
            assert!(
                documents_retry_after,
                "{what}: Retry-After sent but not documented"
            );
        }
    }

    /// Where a request departs from the documented parameters and body (empty: valid).
    fn request_violations(
        &self,
        op: &Value,
        path_params: &[(String, String)],
        query: &str,
        body: Option<&Payload<'_>>,
    ) -> Vec<String> {
        let mut out = Vec::new();
        let params: Vec<&Value> = op["parameters"]
            .as_array()
            .map(|ps| ps.iter().map(|p| self.resolve(p)).collect())
            .unwrap_or_default();
        let mut given: BTreeMap<String, String> = BTreeMap::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let (name, value) = (percent_decode(name), percent_decode(value));
            if given.insert(name.clone(), value).is_some() {
                out.push(format!("query parameter {name} given twice"));
            }
        }
        for (name, value) in &given {
            match params
                .iter()
                .find(|p| p["in"] == "query" && p["name"] == name.as_str())
            {
                None => out.push(format!("query parameter {name} is not documented")),
                Some(p) => match coerce(value, p["schema"]["type"].as_str().unwrap_or("string")) {
                    Err(e) => out.push(format!("query parameter {name}: {e}")),
                    Ok(v) => self.validate(&p["schema"], &v, &format!("?{name}"), &mut out),
                },
            }
        }
        for (name, value) in path_params {
            match params
                .iter()
                .find(|p| p["in"] == "path" && p["name"] == name.as_str())
            {
                None => out.push(format!("path parameter {name} is not documented")),
                Some(p) => match coerce(value, p["schema"]["type"].as_str().unwrap_or("string")) {
                    Err(e) => out.push(format!("path parameter {name}: {e}")),
                    Ok(v) => self.validate(&p["schema"], &v, &format!("{{{name}}}"), &mut out),
                },
            }
        }
        for p in &params {
            let name = p["name"].as_str().unwrap();
            let present = match p["in"].as_str() {
                Some("path") => path_params.iter().any(|(n, _)| n == name),
                _ => given.contains_key(name),
            };
            if p["required"] == true && !present {
                out.push(format!("required {} parameter {name} is missing", p["in"]));
            }
        }
        match (op.get("requestBody").map(|b| self.resolve(b)), body) {
            (None, None) => {}
            (None, Some(_)) => {
                out.push("a body was sent to an operation that documents none".into());
            }
            (Some(doc), None) => {
                if doc["required"] == true {
                    out.push("the request body is required".into());
                }
            }
            (Some(doc), Some(payload)) => {
                let content_type = payload.content_type.unwrap_or(WASM);
                let schema = &doc["content"][content_type]["schema"];
                if !schema.is_object() {
                    out.push(format!("Content-Type {content_type} is not documented"));
                } else if content_type == WASM {
                    // Bytes: their validity is the server's to judge (Opaque exchanges).
                    assert_eq!(schema["format"], "binary", "a component's bytes");
                } else {
                    match serde_json::from_slice::<Value>(payload.bytes) {
                        Err(e) => out.push(format!("the request body is not JSON: {e}")),
                        Ok(v) => self.validate(schema, &v, "body", &mut out),
                    }
                }
            }
        }
        out
    }

    // ----- Schemas -----

    /// Validates `value` against `schema` (a part of the document), pushing one message per
    /// departure.
    fn validate(&self, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
        let key = schema.to_string();
        let mut cache = self.validators.borrow_mut();
        let validator = cache.entry(key).or_insert_with(|| {
            // The schema is placed inside a copy of the document so that its local `$ref`s
            // (`#/components/...`) resolve against the document itself.
            let mut root = self.doc.clone();
            root["x-under-test"] = schema.clone();
            root["$ref"] = json!("#/x-under-test");
            jsonschema::draft202012::new(&root)
                .unwrap_or_else(|e| panic!("{at}: schema {schema} does not compile: {e}"))
        });
        for e in validator.iter_errors(value) {
            errors.push(format!("{at}{}: {e}", e.instance_path));
        }
    }
}

/// The reference page and its assets: HTML, CSS and scripts, not JSON.
fn is_page(path: &str) -> bool {
    path.starts_with(DOCS)
}

/// `path` with `x` for each of its parameters (`/api/v1/agents/{id}` → `/api/v1/agents/x`),
/// for requests a route refuses, or answers alike, whatever the value.
fn any_parameters(path: &str) -> String {
    path.split('/')
        .map(|part| if part.starts_with('{') { "x" } else { part })
        .collect::<Vec<_>>()
        .join("/")
}

/// Every `$ref` in the document resolves.
fn check_refs(spec: &Spec, value: &Value, at: &str) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref" {
                    let reference = v
                        .as_str()
                        .unwrap_or_else(|| panic!("{at}: $ref is not a string"));
                    let _ = spec.pointer(reference);
                } else {
                    check_refs(spec, v, &format!("{at}/{k}"));
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                check_refs(spec, v, &format!("{at}/{i}"));
            }
        }
        _ => {}
    }
}

/// A query-string or header value as the JSON value its schema type means.
fn coerce(text: &str, t: &str) -> Result<Value, String> {
    match t {
        "integer" => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("{text:?} is not an integer")),
        "number" => text
            .parse::<f64>()
            .ok()
            .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
            .ok_or_else(|| format!("{text:?} is not a number")),
        "boolean" => match text {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(format!("{text:?} is not a boolean")),
        },
        _ => Ok(Value::String(text.to_string())),
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => match text
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
            {
                Some(b) => {
                    out.push(b);
                    i += 2;
                }
                None => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn abbreviate(text: &str) -> String {
    if text.chars().count() > 80 {
        format!("{}…", text.chars().take(80).collect::<String>())
    } else {
        text.to_string()
    }
}

#[track_caller]
fn expect(r: Resp, status: u16) -> Resp {
    assert_eq!(r.status, status, "{:#}", r.body);
    r
}

#[track_caller]
fn expect_error(r: &Resp, status: u16, code: &str) {
    r.assert_error(status, code);
}

/// The checker's wiring: schemas inside the document resolve its `$ref`s, a failure names
/// where, and concrete paths find their templates.
#[test]
fn schema_checker_sanity() {
    let spec = Spec::new(json!({ "components": { "schemas": {
        "Thing": { "type": "object", "required": ["id", "n"], "properties": {
            "id": { "type": "string", "pattern": "^[a-z][a-z0-9_]*$" },
            "n": { "type": ["integer", "null"], "minimum": 1, "maximum": 10 },
            "tags": { "type": "array", "maxItems": 2, "items": { "type": "string", "maxLength": 3 } },
            "ns": { "type": "string", "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*$" },
        } },
    } } }));
    let schema = json!({ "allOf": [{ "$ref": "#/components/schemas/Thing" }] });
    let check = |v: Value| {
        let mut errors = Vec::new();
        spec.validate(&schema, &v, "$", &mut errors);
        errors
    };
    assert!(check(json!({ "id": "mem_1", "n": 3, "tags": ["a"], "extra": true })).is_empty());
    assert!(check(json!({ "id": "mem_1", "n": null, "ns": "a b" })).is_empty());
    for bad in [
        json!({ "id": "mem_1" }),
        json!({ "id": "Mem_1", "n": 1 }),
        json!({ "id": "mem_1", "n": 1.5 }),
        json!({ "id": "mem_1", "n": 11 }),
        json!({ "id": "mem_1", "n": 1, "tags": ["abcd"] }),
        json!({ "id": "mem_1", "n": 1, "ns": "a\u{7}b" }),
        json!({ "id": "mem_1", "n": 1, "ns": "a\u{85}b" }),
        json!([]),
    ] {
        assert!(!check(bad.clone()).is_empty(), "{bad} passed");
    }
    let errors = check(json!({ "id": "mem_1", "n": 1, "tags": ["abcd"] }));
    assert!(errors[0].starts_with("$/tags/0"), "{errors:?}");
    assert_eq!(percent_decode("a%2Cb+c"), "a,b c");

    let routes = Spec::new(json!({ "paths": {
        "/a": {}, "/a/{id}": {}, "/a/{id}/logs": {}, "/a/x": {},
    } }));
    assert_eq!(routes.route("/a/x"), Some(("/a/x".into(), vec![])));
    assert_eq!(
        routes.route("/a/ag_1/logs"),
        Some(("/a/{id}/logs".into(), vec![("id".into(), "ag_1".into())]))
    );
    assert_eq!(routes.route("/a/"), None);
    assert_eq!(routes.route("/a/1/2"), None);
}

#[test]
fn the_document_is_true() {
    // Tools' endpoints on 127.0.0.2, allowed for the plans of the accounts that call them
    // (ada's, lightyear, keeps the default's empty list); the free plan keeps one tool and
    // sends one request a month.
    let (origin, mcp) = (Origin::start("127.0.0.2"), McpOrigin::start("127.0.0.2"));
    let allow = format!(
        "allow = [{{ host = \"127.0.0.2\", ports = [{}, {}], schemes = [\"http\"] }}]\n",
        origin.port(),
        mcp.port()
    );
    let config = format!(
        "{TINY_FREE_PLAN}tools = 1\nhttp_requests_per_month = 1\n\n\
         [egress]\nallow_ranges = [\"127.0.0.2/32\"]\n\
         [egress.plans.free]\n{allow}[egress.plans.liftoff]\n{allow}"
    );
    let options = Options {
        config: Some(config),
        hash_embedder: true,
        ..Default::default()
    };
    let (tmp, server, keys) = server_with_keys(
        &[
            ("acme", "liftoff"),
            ("bob", "liftoff"),
            ("small", "free"),
            ("ada", "lightyear"),
        ],
        &options,
    );
    let anon = Client::new(&server.base, None);
    let (c, bob, small, ada) = (
        server.client(&keys[0]),
        server.client(&keys[1]),
        server.client(&keys[2]),
        server.client(&keys[3]),
    );

    // The document: served verbatim, without a key, as JSON; OpenAPI 3.1.
    let raw = anon
        .request(Method::GET, OPENAPI)
        .send()
        .expect("fetching the document");
    assert_eq!(raw.status().as_u16(), 200);
    let content_type = raw
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let text = raw.text().unwrap();
    let mut spec = Spec::new(serde_json::from_str(&text).expect("the document is JSON"));
    spec.check_document();
    let r = expect(spec.get(&anon, OPENAPI), 200);
    assert_eq!(r.body["openapi"], spec.doc["openapi"]);
    expect(spec.get(&c, OPENAPI), 200); // a key does no harm

    // Security as documented: secured operations refuse a missing or bad key with 401;
    // open ones answer without one.
    for (method, path) in spec.operations() {
        if is_page(&path) {
            continue; // driven by `drive_page`, as HTML
        }
        let op = spec.operation(&method, &path).unwrap().clone();
        let secured = spec.secured(&op);
        let body = op.get("requestBody").map(|_| "{}");
        let clients = [
            &anon,
            &server.client("wm_0000000000000000000000000000000000000000000000000000000000000000"),
        ];
        for client in clients {
            let m = Method::from_bytes(method.as_bytes()).unwrap();
            let r = spec.exchange(client, &m, &path, body, Conformance::Opaque);
            if path == BILLING_WEBHOOK {
                // Keyless, its signature its authentication: none is refused first.
                expect_error(&r, 400, "invalid_signature");
            } else if secured && path.starts_with(CONSOLE) {
                // No token at all, or an API key where an ID token belongs.
                let code = if std::ptr::eq(client, &anon) {
                    "missing_id_token"
                } else {
                    "invalid_id_token"
                };
                expect_error(&r, 401, code);
            } else if secured {
                expect_error(&r, 401, "invalid_api_key");
            } else {
                assert!(
                    (200..300).contains(&r.status),
                    "{method} {path} without a key: {}",
                    r.status
                );
            }
        }
    }
    let r = spec.exchange(
        &anon,
        &Method::POST,
        MEMORY,
        Some("{not json"),
        Conformance::Opaque,
    );
    expect_error(&r, 401, "invalid_api_key"); // the key is checked before the body

    // An ID token where the document names it, and only there: a valid one is let in, one
    // shaped as a token but not valid is `invalid_id_token`; a route of keys alone reads
    // either as a bad key.
    let (_, token) = crate::console::login(&tmp.path().join("data"), "acme", None);
    let (signed_in, forged) = (
        Client::new(&server.base, Some(&token)),
        Client::new(&server.base, Some("eyJhbGciOiJSUzI1NiJ9.e30.c2lnbmF0dXJl")),
    );
    for (method, path) in spec.operations() {
        let op = spec.operation(&method, &path).unwrap().clone();
        if is_page(&path) || !spec.secured(&op) || path == BILLING_WEBHOOK {
            continue;
        }
        let takes_token = spec.security(&op).to_string().contains("idToken");
        // An empty object stands for a body.
        let url = any_parameters(&path);
        let m = Method::from_bytes(method.as_bytes()).unwrap();
        let body = op.get("requestBody").map(|_| "{}");
        let r = spec.exchange(&forged, &m, &url, body, Conformance::Opaque);
        let code = if takes_token {
            "invalid_id_token"
        } else {
            "invalid_api_key"
        };
        expect_error(&r, 401, code);
        if op["requestBody"]["content"].get(WASM).is_some() {
            continue; // a key's own upload: refused above, before its body is read
        }
        let r = spec.exchange(&signed_in, &m, &url, body, Conformance::Opaque);
        if takes_token {
            assert_ne!(
                r.status, 401,
                "{method} {url}: a valid ID token was refused"
            );
        } else {
            expect_error(&r, 401, "invalid_api_key");
        }
    }

    // Every documented path refuses the methods it does not document with 405; the
    // specification's other routes, not served, are 404 (with or without a key).
    let paths: BTreeSet<String> = spec.operations().into_iter().map(|(_, p)| p).collect();
    for path in &paths {
        for method in PROBED_METHODS {
            if spec.operation(method, path).is_none() {
                spec.unmatched(&c, method, path, 405);
            }
        }
    }
    for path in UNSERVED_PATHS {
        assert!(
            !paths.contains(path),
            "{path} is documented: drive it in this test and drop it from UNSERVED_PATHS"
        );
        for method in ["GET", "POST", "DELETE"] {
            spec.unmatched(&c, method, path, 404);
        }
        spec.unmatched(&anon, "GET", path, 404);
        let r = c.get(path);
        r.assert_error(404, "route_not_found");
    }

    // ----- POST /api/v1/memory -----
    let first = expect(spec.post(&c, MEMORY, &json!({ "key": "favourite_food", "value": "pizza with mushrooms", "tags": ["food", "prefs"], "importance": 8 })), 201);
    let same = expect(
        spec.post(
            &c,
            MEMORY,
            &json!({ "key": "favourite_food", "value": "pizza with mushrooms" }),
        ),
        200,
    );
    assert_eq!(same.body["memory_id"], first.body["memory_id"]);
    let second = expect(spec.post(&c, MEMORY, &json!({ "key": "favourite_food", "value": "pizza with olives", "tags": ["food"], "importance": 7.5, "namespace": null })), 201);
    assert_eq!(second.body["version"], 2);
    let trip = expect(spec.post(&c, MEMORY, &json!({ "key": "trip", "value": "flight to Lisbon on Friday", "namespace": "travel", "expires_in_days": 2.5 })), 201);
    assert!(trip.body["expires_at"].is_u64());
    expect(spec.post(&c, MEMORY, &json!({ "key": "dup_a", "value": "the sky is blue today", "namespace": "notes", "importance": 3 })), 201);
    expect(spec.post(&c, MEMORY, &json!({ "key": "dup_b", "value": "the sky is blue today", "namespace": "notes", "importance": 9 })), 201);
    expect(
        spec.post(
            &c,
            MEMORY,
            &json!({ "key": "temp", "value": "to be deleted" }),
        ),
        201,
    );
    for (body, code) in [
        (json!({ "value": "v" }), "invalid_key"),
        (json!({ "key": "Not-Snake", "value": "v" }), "invalid_key"),
        (
            json!({ "key": "k".repeat(129), "value": "v" }),
            "invalid_key",
        ),
        (json!({ "key": "k" }), "invalid_value"),
        (json!({ "key": "k", "value": "" }), "invalid_value"),
        (
            json!({ "key": "k", "value": "x".repeat(5_001) }),
            "invalid_value",
        ),
        (
            json!({ "key": "k", "value": "v", "namespace": "" }),
            "invalid_namespace",
        ),
        (
            json!({ "key": "k", "value": "v", "tags": (0..21).map(|i| format!("t{i}")).collect::<Vec<_>>() }),
            "invalid_tags",
        ),
        (
            json!({ "key": "k", "value": "v", "tags": ["t".repeat(51)] }),
            "invalid_tags",
        ),
        (
            json!({ "key": "k", "value": "v", "importance": 11 }),
            "invalid_importance",
        ),
        (
            json!({ "key": "k", "value": "v", "importance": 0.5 }),
            "invalid_importance",
        ),
        (
            json!({ "key": "k", "value": "v", "expires_in_days": 0 }),
            "invalid_expires_in_days",
        ),
        (
            json!({ "key": "k", "value": "v", "observed_at": -1 }),
            "invalid_observed_at",
        ),
    ] {
        let r = spec.post(&c, MEMORY, &body);
        expect_error(&r, 400, code);
        assert_eq!(
            r.body["error"]["details"]["field"],
            code.trim_start_matches("invalid_")
        );
    }
    expect_error(&spec.post_raw(&c, MEMORY, "{not json"), 400, "invalid_body");
    expect_error(&spec.post_raw(&c, MEMORY, "[1, 2]"), 400, "invalid_body");
    let big = "x".repeat(1_100_000);
    expect_error(
        &spec.post(&c, MEMORY, &json!({ "key": "k", "value": big })),
        413,
        "payload_too_large",
    );

    // ----- GET /api/v1/memory -----
    let got = expect(spec.get(&c, "/api/v1/memory?key=favourite_food"), 200);
    assert_eq!(
        (got.body["value"].clone(), got.body["accessCount"].clone()),
        (json!("pizza with olives"), json!(1))
    );
    expect(
        spec.get(&c, "/api/v1/memory?key=trip&namespace=travel"),
        200,
    );
    expect_error(
        &spec.get(&c, "/api/v1/memory?key=never_written"),
        404,
        "not_found",
    );
    expect_error(
        &spec.get(&c, "/api/v1/memory?key=trip&namespace=default"),
        404,
        "not_found",
    );
    expect_error(&spec.get(&c, MEMORY), 400, "invalid_query");
    expect_error(
        &spec.get(&c, "/api/v1/memory?key=Bad-Key"),
        400,
        "invalid_query",
    );
    expect_error(
        &spec.get(&c, "/api/v1/memory?key=trip&key=temp"),
        400,
        "invalid_query",
    );
    expect_error(
        &spec.get(&c, "/api/v1/memory?key=trip&namespace="),
        400,
        "invalid_query",
    );

    // ----- GET /api/v1/memory/history -----
    let history = expect(
        spec.get(&c, "/api/v1/memory/history?key=favourite_food"),
        200,
    );
    assert_eq!(history.body["data"].as_array().unwrap().len(), 2);
    assert_eq!(history.body["data"][1]["isLatestVersion"], false);
    expect_error(
        &spec.get(&c, "/api/v1/memory/history?key=never_written"),
        404,
        "not_found",
    );
    expect_error(
        &spec.get(&c, "/api/v1/memory/history?namespace=default"),
        400,
        "invalid_query",
    );

    // ----- POST /api/v1/memory/search -----
    let found = expect(
        spec.post(&c, SEARCH, &json!({ "query": "pizza with olives" })),
        200,
    );
    assert_eq!(
        found.body["results"][0]["key"], "favourite_food",
        "{:#}",
        found.body
    );
    expect(spec.post(&c, SEARCH, &json!({ "query": "pizza", "mode": "keyword", "limit": 5, "min_score": 0.1, "tags": ["food"], "namespace": "default" })), 200);
    let now = crate::common::now_ms();
    expect(spec.post(&c, SEARCH, &json!({ "query": "pizza", "as_of": now, "observed_after": 0, "observed_before": now + 1 })), 200);
    expect(
        spec.get(
            &c,
            &format!(
                "/api/v1/memory/list?as_of={now}&observed_after=0&observed_before={}",
                now + 1
            ),
        ),
        200,
    );
    expect(
        spec.get(
            &c,
            &format!("/api/v1/memory?key=favourite_food&as_of={now}"),
        ),
        200,
    );
    expect(
        spec.post(
            &c,
            SEARCH,
            &json!({ "query": "blue sky", "mode": "semantic", "limit": null, "tags": null }),
        ),
        200,
    );
    expect(
        spec.post(
            &c,
            SEARCH,
            &json!({ "query": "nothing like it", "mode": "hybrid", "min_score": 1 }),
        ),
        200,
    );
    expect(
        spec.post(&c, SEARCH, &json!({ "query": "pizza", "mode": null })),
        200,
    );
    for (body, code) in search_refusals() {
        expect_error(&spec.post(&c, SEARCH, &body), 400, code);
    }
    expect_error(&spec.post_raw(&c, SEARCH, "\"text\""), 400, "invalid_body");
    expect_error(
        &spec.post(&c, SEARCH, &json!({ "query": "x".repeat(1_100_000) })),
        413,
        "payload_too_large",
    );

    // ----- GET /api/v1/memory/list -----
    let page = expect(spec.get(&c, "/api/v1/memory/list?limit=2"), 200);
    assert_eq!(page.body["data"].as_array().unwrap().len(), 2);
    let cursor = page.body["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_string();
    let next = expect(
        spec.get(&c, &format!("/api/v1/memory/list?limit=2&cursor={cursor}")),
        200,
    );
    assert_ne!(
        next.body["data"][0]["memory_id"],
        page.body["data"][0]["memory_id"]
    );
    let last = expect(spec.get(&c, "/api/v1/memory/list"), 200);
    assert_eq!(last.body["next_cursor"], Value::Null);
    let tagged = expect(
        spec.get(&c, "/api/v1/memory/list?namespace=default&tags=food"),
        200,
    );
    assert_eq!(tagged.body["data"].as_array().unwrap().len(), 1);
    expect_error(
        &spec.get(&c, "/api/v1/memory/list?limit=0"),
        400,
        "invalid_query",
    );
    expect_error(
        &spec.get(&c, "/api/v1/memory/list?limit=abc"),
        400,
        "invalid_query",
    );
    let r = spec.exchange(
        &c,
        &Method::GET,
        "/api/v1/memory/list?cursor=garbage",
        None,
        Conformance::Opaque,
    );
    expect_error(&r, 400, "invalid_query");

    // ----- POST /api/v1/memory/dedupe -----
    let dry = expect(
        spec.post(
            &c,
            DEDUPE,
            &json!({ "namespace": "notes", "threshold": 0.9, "dry_run": true }),
        ),
        200,
    );
    assert_eq!(dry.body["removed"], 1, "{:#}", dry.body);
    assert_eq!(dry.body["pairs"].as_array().unwrap().len(), 1);
    let done = expect(spec.post(&c, DEDUPE, &json!({})), 200);
    assert_eq!(
        (done.body["removed"].clone(), done.body["dry_run"].clone()),
        (json!(1), json!(false))
    );
    for (body, code) in [
        (json!({ "threshold": 1.2 }), "invalid_threshold"),
        (json!({ "threshold": "high" }), "invalid_threshold"),
        (json!({ "dry_run": "yes" }), "invalid_dry_run"),
        (json!({ "namespace": "" }), "invalid_namespace"),
    ] {
        expect_error(&spec.post(&c, DEDUPE, &body), 400, code);
    }
    expect_error(&spec.post_raw(&c, DEDUPE, ""), 400, "invalid_body");
    expect_error(
        &spec.post(&c, DEDUPE, &json!({ "namespace": "x".repeat(1_100_000) })),
        413,
        "payload_too_large",
    );

    // ----- POST /api/v1/memory/consolidate -----
    let cluster = put_cluster(&mut spec, &c, "cluster");
    let dry = expect(
        spec.post(
            &c,
            CONSOLIDATE,
            &json!({ "namespace": "cluster", "threshold": 0.9, "min_cluster_size": 3, "dry_run": true }),
        ),
        200,
    );
    assert_eq!(dry.body["consolidated"][0]["memory_id"], Value::Null);
    let done = expect(
        spec.post(&c, CONSOLIDATE, &json!({ "namespace": "cluster" })),
        200,
    );
    assert_eq!(done.body["clusters"], 1, "{:#}", done.body);
    let replaced = &done.body["consolidated"][0]["replaced"];
    assert!(
        cluster
            .iter()
            .all(|id| replaced.as_array().unwrap().contains(id))
    );
    let original = expect(
        spec.get(&c, "/api/v1/memory/history?key=cluster_0&namespace=cluster"),
        200,
    );
    assert_eq!(
        original.body["data"][0]["consolidated_into"],
        done.body["consolidated"][0]["memory_id"]
    );
    let r = spec.post(&c, CONSOLIDATE, &json!({ "namespace": "cluster" }));
    expect_error(&r, 429, "rate_limited"); // the cooldown after a consolidation that wrote
    assert!(r.retry_after.is_some());
    for (body, code) in [
        (json!({ "threshold": 1.5 }), "invalid_threshold"),
        (json!({ "threshold": "low" }), "invalid_threshold"),
        (json!({ "min_cluster_size": 1 }), "invalid_min_cluster_size"),
        (
            json!({ "min_cluster_size": 2.5 }),
            "invalid_min_cluster_size",
        ),
        (
            json!({ "min_cluster_size": "3" }),
            "invalid_min_cluster_size",
        ),
        (json!({ "dry_run": 1 }), "invalid_dry_run"),
        (json!({ "namespace": 7 }), "invalid_namespace"),
    ] {
        expect_error(&spec.post(&c, CONSOLIDATE, &body), 400, code);
    }
    expect_error(&spec.post_raw(&c, CONSOLIDATE, "[]"), 400, "invalid_body");
    expect_error(
        &spec.post(
            &c,
            CONSOLIDATE,
            &json!({ "namespace": "x".repeat(1_100_000) }),
        ),
        413,
        "payload_too_large",
    );

    // ----- GET /api/v1/memory/namespaces -----
    let namespaces = expect(spec.get(&c, NAMESPACES), 200);
    let names: BTreeSet<&str> = namespaces.body["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["namespace"].as_str())
        .collect();
    assert!(
        names.is_superset(&BTreeSet::from(["default", "notes", "travel"])),
        "{names:?}"
    );

    // ----- GET /api/v1/memory/export -----
    let export = expect(spec.get(&c, EXPORT), 200);
    let memories = export.body["memories"].as_array().unwrap();
    assert_eq!(export.body["count"], memories.len());
    assert!(
        memories.iter().any(|m| m["expires_in_days"].is_number()),
        "{:#}",
        export.body
    );

    // ----- POST /api/v1/memory/import -----
    let imported = expect(spec.post(&bob, IMPORT, &export.body), 200);
    assert_eq!(
        imported.body,
        json!({ "imported": memories.len(), "failed": 0, "errors": [] })
    );
    let mixed = json!({ "memories": [{ "key": "fine", "value": "ok" }, { "key": "Bad Key", "value": "x" }, 42] });
    let partial = expect(
        spec.exchange(
            &bob,
            &Method::POST,
            IMPORT,
            Some(&mixed.to_string()),
            Conformance::Opaque,
        ),
        200,
    );
    assert_eq!(
        (
            partial.body["imported"].clone(),
            partial.body["failed"].clone()
        ),
        (json!(1), json!(2))
    );
    assert_eq!(partial.body["errors"][0]["code"], "invalid_key");
    assert_eq!(partial.body["errors"][1]["code"], "invalid_memory");
    for body in [
        json!({ "memories": "no" }),
        json!({}),
        json!({ "memories": { "key": "k" } }),
    ] {
        let r = spec.post(&bob, IMPORT, &body);
        expect_error(&r, 400, "invalid_memories");
        assert_eq!(r.body["error"]["details"]["field"], "memories");
    }
    expect_error(&spec.post_raw(&bob, IMPORT, "[]"), 400, "invalid_body");

    // ----- DELETE /api/v1/memory -----
    let soft = expect(spec.delete(&c, "/api/v1/memory?key=temp"), 200);
    assert_eq!(
        (
            soft.body["hard"].clone(),
            soft.body["memory"]["isLatestVersion"].clone()
        ),
        (json!(false), json!(false))
    );
    let stamped = expect(spec.get(&c, "/api/v1/memory/history?key=temp"), 200);
    assert!(stamped.body["data"][0]["deletedAt"].is_u64());
    let hard = expect(
        spec.delete(&c, "/api/v1/memory?key=favourite_food&hard=true"),
        200,
    );
    assert_eq!(
        (
            hard.body["hard"].clone(),
            hard.body["versions_removed"].clone()
        ),
        (json!(true), json!(2))
    );
    assert!(hard.body.get("memory").is_none());
    expect(
        spec.delete(&c, "/api/v1/memory?key=trip&namespace=travel&hard=1"),
        200,
    );
    expect(
        spec.delete(&c, "/api/v1/memory?key=dup_b&namespace=notes&hard=false"),
        200,
    );
    expect_error(
        &spec.delete(&c, "/api/v1/memory?key=temp"),
        404,
        "not_found",
    );
    expect_error(
        &spec.delete(&c, "/api/v1/memory?key=favourite_food&hard=true"),
        404,
        "not_found",
    );
    expect_error(
        &spec.delete(&c, "/api/v1/memory?key=temp&hard=maybe"),
        400,
        "invalid_query",
    );
    expect_error(
        &spec.delete(&c, "/api/v1/memory?hard=true"),
        400,
        "invalid_query",
    );

    // ----- The quota (402) -----
    expect(
        spec.post(&small, MEMORY, &json!({ "key": "a", "value": "1" })),
        201,
    );
    expect(
        spec.post(&small, MEMORY, &json!({ "key": "b", "value": "2" })),
        201,
    );
    let full = spec.post(&small, MEMORY, &json!({ "key": "c", "value": "3" }));
    expect_error(&full, 402, "memory_quota_exceeded");
    assert_eq!(
        full.body["error"]["details"],
        json!({ "limit": 2, "used": 2 })
    );
    let halted = spec.post(
        &small,
        IMPORT,
        &json!({ "memories": [{ "key": "d", "value": "4" }] }),
    );
    expect_error(&halted, 402, "memory_quota_exceeded");
    assert_eq!(halted.body["error"]["details"]["imported"], 0);

    // ----- Agents (the offline Mind: they finish by themselves) -----
    drive_agents(&mut spec, &ada, &bob);

    // ----- Agent admission refused: 402, 429 (both), 503 at host capacity -----
    drive_agent_limits(&mut spec);

    // ----- Every keyed route past the account's requests in flight -----
    drive_in_flight_limit(&mut spec);

    // ----- The embedding provider down (503 with Retry-After) -----
    let unavailable_seen = drive_unavailable_embedder(&mut spec);

    // ----- The Mind failing a consolidation (503 with Retry-After) -----
    drive_unavailable_mind(&mut spec);

    // ----- Agent components -----
    drive_components(&mut spec, &c, &bob, &small);

    // ----- Tools a tenant registers -----
    drive_tools(&mut spec, &c, &small, &origin, &mcp);

    // ----- Billing, at localstripe and at a provider that is down -----
    drive_billing(&mut spec, &c, &server.base, &tmp.path().join("data"));

    // ----- The console's API -----
    drive_console(&mut spec, &server.base, &tmp.path().join("data"), &c);
    drive_console_tools(&mut spec, &server.base, &tmp.path().join("data"), &mcp);

    // ----- The reference page -----
    drive_page(&spec, &server.base);

    // ----- Everything documented was seen -----
    let mut missing = Vec::new();
    for (method, path) in spec.operations() {
        if is_page(&path) {
            continue; // driven by `drive_page`, as HTML
        }
        let op = spec.operation(&method, &path).unwrap().clone();
        let Some(seen) = spec.seen.get(&(method.clone(), path.clone())) else {
            missing.push(format!("{method} {path}: never exercised"));
            continue;
        };
        let documented = Spec::statuses(&op);
        if !seen.iter().any(|s| (200..300).contains(s)) {
            missing.push(format!("{method} {path}: no success seen"));
        }
        if documented.iter().any(|s| *s >= 400) && !seen.iter().any(|s| *s >= 400) {
            missing.push(format!("{method} {path}: no error seen"));
        }
        for status in documented {
            let exempt = status == 500 // can't be provoked from outside
                || (status == 503 && path != AGENTS && !unavailable_seen)
                || (status == 413 && path == IMPORT); // 64 MiB: too slow to send here
            if exempt {
                continue;
            }
            if !seen.contains(&status) {
                missing.push(format!(
                    "{method} {path}: documented status {status} never seen"
                ));
                continue;
            }
            let response = spec.resolve(&op["responses"][status.to_string()]);
            let schema = &response["content"]["application/json"]["schema"];
            for code in spec.documented_codes(schema).unwrap_or_default() {
                if !spec
                    .codes
                    .contains(&(method.clone(), path.clone(), status, code.clone()))
                {
                    missing.push(format!(
                        "{method} {path}: documented {status} code {code} never seen"
                    ));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "documented but not exercised (drive it here, or fix the document):\n{}",
        missing.join("\n")
    );
}

/// An HTTP tool's registration, with a secret header.
fn http_tool(name: &str, url: &str) -> Value {
    json!({
        "name": name, "kind": "http", "description": "The weather in a city",
        "parameters": { "type": "object", "properties": { "city": { "type": "string" } } },
        "endpoint": { "url": url, "method": "POST" }, "timeout_secs": 5,
        "secret_header": { "name": "X-Api-Key", "value": "sk-openapi" },
    })
}

/// Every bad field of a registration at `route` (with an API key or the console's ID token), each
/// refused with its code; a body that is no object, and one over the size limit.
fn refuse_registrations(
    spec: &mut Spec,
    c: &Client,
    route: &str,
    weather: &Value,
    mcp: &McpOrigin,
) {
    let with = |field: &str, value: Value| {
        let mut body = weather.clone();
        body[field] = value;
        body
    };
    for (body, code) in [
        (with("name", json!("Weather")), "invalid_name"),
        (with("kind", json!("grpc")), "invalid_kind"),
        (with("description", json!(" ")), "invalid_description"),
        (
            with("parameters", json!({ "type": "string" })),
            "invalid_parameters",
        ),
        (
            with("endpoint", json!("https://x.example/")),
            "invalid_endpoint",
        ),
        (with("timeout_secs", json!(10_000)), "invalid_timeout_secs"),
        (
            with("secret_header", json!({ "name": "X Key", "value": "x" })),
            "invalid_secret_header",
        ),
        (json!({ "name": "docs", "kind": "mcp" }), "invalid_url"),
        (
            json!({ "name": "docs", "kind": "mcp", "url": mcp.url(), "bearer": "" }),
            "invalid_bearer",
        ),
    ] {
        expect_error(&spec.post(c, route, &body), 400, code);
    }
    expect_error(&spec.post_raw(c, route, "[]"), 400, "invalid_body");
    let huge = with("description", json!("x".repeat(1_100_000)));
    expect_error(&spec.post(c, route, &huge), 413, "payload_too_large");
}

const BILLING_WEBHOOK: &str = "/api/v1/billing/webhook";

/// `/api/v1/billing…`: this server takes no payments (501); one paying at localstripe
/// (checkout, portal, state, webhook and their refusals) and one whose provider is down (502).
fn drive_billing(spec: &mut Spec, c: &Client, base: &str, data_dir: &std::path::Path) {
    use crate::common::fake_stripe::{FakeStripe, WEBHOOK_SECRET, sign};
    const CHECKOUT: &str = "/api/v1/billing/checkout";
    const PORTAL: &str = "/api/v1/billing/portal";
    let lightyear = json!({ "plan": "lightyear" });
    expect_error(
        &spec.post(c, CHECKOUT, &lightyear),
        501,
        "billing_not_configured",
    );
    expect_error(
        &spec.exchange(c, &Method::POST, PORTAL, None, Conformance::Strict),
        501,
        "billing_not_configured",
    );
    let off = expect(spec.get(c, "/api/v1/billing"), 200);
    assert_eq!(off.body["billing_enabled"], false);
    let (_, token) = crate::console::login(data_dir, "acme", None);
    let t = Client::new(base, Some(&token));
    let refused = spec.post(&t, CHECKOUT, &lightyear);
    expect_error(&refused, 501, "billing_not_configured");
    let refused = spec.exchange(&t, &Method::POST, PORTAL, None, Conformance::Strict);
    expect_error(&refused, 501, "billing_not_configured");

    let anon_here = Client::new(base, None);
    let secs = crate::common::now_ms() / 1_000;
    spec.header = Some(("stripe-signature", sign(WEBHOOK_SECRET, secs, "{}")));
    let r = spec.exchange(
        &anon_here,
        &Method::POST,
        BILLING_WEBHOOK,
        Some("{}"),
        Conformance::Opaque,
    );
    expect_error(&r, 501, "billing_not_configured");

    let stripe = FakeStripe::start();
    let paying = |base: &str| {
        let options = Options {
            config: Some(FakeStripe::billing_section(base, 3_600, 2_000)),
            hash_embedder: true,
            ..Default::default()
        };
        server_with_keys(&[("acme", "free")], &options)
    };
    let (_tmp, server, keys) = paying(&stripe.base);
    let p = server.client(&keys[0]);
    expect_error(
        &spec.exchange(&p, &Method::POST, PORTAL, None, Conformance::Strict),
        404,
        "customer_not_found",
    );
    let opened = expect(spec.post(&p, CHECKOUT, &lightyear), 200);
    assert!(
        opened.body["url"]
            .as_str()
            .unwrap()
            .starts_with(&stripe.base)
    );
    expect(
        spec.exchange(&p, &Method::POST, PORTAL, None, Conformance::Strict),
        200,
    );
    expect(spec.get(&p, "/api/v1/billing"), 200);
    expect_error(
        &spec.post(&p, CHECKOUT, &json!({ "plan": "platinum" })),
        400,
        "invalid_plan",
    );
    let other = json!({ "plan": "lightyear", "price_id": "price_liftoff" });
    let r = spec.exchange(
        &p,
        &Method::POST,
        CHECKOUT,
        Some(&other.to_string()),
        Conformance::Opaque,
    );
    expect_error(&r, 400, "invalid_price_id");
    expect_error(&spec.post_raw(&p, CHECKOUT, "[1]"), 400, "invalid_body");

    // The webhook: signed as the provider signs; unsigned; not an event; a stranger.
    let customer = stripe.customer_of("acme");
    let now = crate::common::now_ms() / 1_000;
    let event = |id: &str, customer: &str| {
        json!({ "id": id, "type": "customer.subscription.updated", "created": now,
            "data": { "object": { "id": "sub_1", "customer": customer, "status": "active",
                "created": now, "items": { "data": [ { "price": { "id": "price_lightyear" } } ] } } } })
        .to_string()
    };
    let anon = Client::new(&server.base, None);
    let signed = |spec: &mut Spec, body: &str| {
        spec.header = Some(("stripe-signature", sign(WEBHOOK_SECRET, now, body)));
        spec.exchange(
            &anon,
            &Method::POST,
            BILLING_WEBHOOK,
            Some(body),
            Conformance::Opaque,
        )
    };
    let applied = expect(signed(spec, &event("evt_1", &customer)), 200);
    assert_eq!(applied.body["plan"], "lightyear");
    expect_error(&signed(spec, "{}"), 400, "invalid_body");
    expect_error(
        &signed(spec, &event("evt_2", "cus_nobody")),
        404,
        "user_not_found",
    );
    let unsigned = spec.exchange(
        &anon,
        &Method::POST,
        BILLING_WEBHOOK,
        Some("{}"),
        Conformance::Opaque,
    );
    expect_error(&unsigned, 400, "invalid_signature");
    let huge = "x".repeat(1_100_000);
    let too_big = json!({ "plan": "lightyear", "price_id": huge });
    expect_error(&spec.post(&p, CHECKOUT, &too_big), 413, "payload_too_large");
    expect_error(&spec.post(&t, CHECKOUT, &too_big), 413, "payload_too_large");
    let r = spec.exchange(
        &anon,
        &Method::POST,
        BILLING_WEBHOOK,
        Some(&huge),
        Conformance::Opaque,
    );
    expect_error(&r, 413, "payload_too_large");

    // The provider down: 502 with Retry-After.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (_tmp2, server, keys) = paying(&down);
    let d = server.client(&keys[0]);
    expect_error(
        &spec.post(&d, CHECKOUT, &lightyear),
        502,
        "billing_unavailable",
    );
    // With the console's ID token: the same answers.
    let (tmp3, linked, keys) = paying(&stripe.base);
    let l = linked.client(&keys[0]);
    let (_, token) = crate::console::login(&tmp3.path().join("data"), "acme", None);
    let t = Client::new(&linked.base, Some(&token));
    expect(spec.get(&t, "/api/v1/billing"), 200);
    expect_error(
        &spec.exchange(&t, &Method::POST, PORTAL, None, Conformance::Strict),
        404,
        "customer_not_found",
    );
    let platinum = json!({ "plan": "platinum" });
    expect_error(&spec.post(&t, CHECKOUT, &platinum), 400, "invalid_plan");
    let r = spec.exchange(
        &t,
        &Method::POST,
        CHECKOUT,
        Some(&other.to_string()),
        Conformance::Opaque,
    );
    expect_error(&r, 400, "invalid_price_id");
    expect_error(&spec.post_raw(&t, CHECKOUT, "[1]"), 400, "invalid_body");
    expect(spec.post(&t, CHECKOUT, &lightyear), 200);
    expect(
        spec.exchange(&t, &Method::POST, PORTAL, None, Conformance::Strict),
        200,
    );
    drop(stripe);
    expect_error(
        &spec.exchange(&l, &Method::POST, PORTAL, None, Conformance::Strict),
        502,
        "billing_unavailable",
    );
    expect_error(
        &spec.exchange(&t, &Method::POST, PORTAL, None, Conformance::Strict),
        502,
        "billing_unavailable",
    );
    expect_error(
        &spec.post(&t, CHECKOUT, &lightyear),
        502,
        "billing_unavailable",
    );
}

/// `/api/v1/tools…`: registration (every bad field, the quota, a name taken), reads,
/// deletion, an MCP server listed, and calls answered, refused by the policy, failed and
/// past the month's HTTP budget.
fn drive_tools(spec: &mut Spec, c: &Client, small: &Client, origin: &Origin, mcp: &McpOrigin) {
    const TOOLS: &str = "/api/v1/tools";
    let weather = http_tool("weather", &origin.url("/weather"));
    let made = expect(spec.post(c, TOOLS, &weather), 201);
    assert_eq!(made.body["has_secret"], true);
    expect_error(&spec.post(c, TOOLS, &weather), 409, "tool_exists");
    refuse_registrations(spec, c, TOOLS, &weather, mcp);

    // Reads.
    let listed = expect(spec.get(c, TOOLS), 200);
    assert_eq!(listed.body["data"][0]["name"], "weather");
    expect(spec.get(c, &format!("{TOOLS}/weather")), 200);
    expect_error(
        &spec.get(c, &format!("{TOOLS}/nothing")),
        404,
        "tool_not_found",
    );

    // An MCP server, listed; one the policy refuses; one that does not speak MCP.
    let refresh = |spec: &mut Spec, name: &str| {
        let url = format!("{TOOLS}/{name}/refresh");
        spec.exchange(c, &Method::POST, &url, None, Conformance::Strict)
    };
    let server = json!({ "name": "calc", "kind": "mcp", "url": mcp.url(), "bearer": "tok" });
    expect(spec.post(c, TOOLS, &server), 201);
    let refreshed = expect(refresh(spec, "calc"), 200);
    assert_eq!(refreshed.body["tools"][0]["name"], "mcp_calc_add");
    let denied = json!({ "name": "denied", "kind": "mcp", "url": "http://127.0.0.1:9/mcp" });
    expect(spec.post(c, TOOLS, &denied), 201);
    let r = refresh(spec, "denied");
    expect_error(&r, 403, "tool_denied");
    let mute = json!({ "name": "mute", "kind": "mcp", "url": origin.url("/mcp") });
    expect(spec.post(c, TOOLS, &mute), 201);
    let r = refresh(spec, "mute");
    expect_error(&r, 502, "tool_failed");
    let r = refresh(spec, "weather");
    expect_error(&r, 409, "not_an_mcp_server");
    let r = refresh(spec, "nothing");
    expect_error(&r, 404, "tool_not_found");

    // Calls.
    let call = |name: &str| format!("{TOOLS}/{name}/call");
    let arguments = json!({ "arguments": { "city": "Oslo" } });
    let r = expect(spec.post(c, &call("weather"), &arguments), 200);
    assert_eq!(r.body["result"], "got: {\"city\":\"Oslo\"}");
    let sum = json!({ "arguments": { "a": 1, "b": 2 } });
    expect(spec.post(c, &call("mcp_calc_add"), &sum), 200);
    expect_error(
        &spec.post(c, &call("weather"), &json!({})),
        400,
        "invalid_arguments",
    );
    expect_error(
        &spec.post_raw(c, &call("weather"), "[]"),
        400,
        "invalid_body",
    );
    let big = json!({ "arguments": { "city": "x".repeat(1_100_000) } });
    expect_error(
        &spec.post(c, &call("weather"), &big),
        413,
        "payload_too_large",
    );
    expect_error(
        &spec.post(c, &call("nothing"), &arguments),
        404,
        "tool_not_found",
    );
    expect_error(&spec.post(c, &call("calc"), &sum), 409, "not_a_tool");
    let canary = http_tool("canary", "http://127.0.0.1:9/steal");
    expect(spec.post(c, TOOLS, &canary), 201);
    expect_error(
        &spec.post(c, &call("canary"), &arguments),
        403,
        "tool_denied",
    );
    let fail = json!({ "arguments": {} });
    expect_error(
        &spec.post(c, &call("mcp_calc_fail"), &fail),
        502,
        "tool_failed",
    );

    // The free plan: one tool, one request a month.
    let own = http_tool("weather", &origin.url("/small"));
    expect(spec.post(small, TOOLS, &own), 201);
    let second = http_tool("second", &origin.url("/small"));
    let r = spec.post(small, TOOLS, &second);
    expect_error(&r, 402, "tool_quota_exceeded");
    assert_eq!(r.body["error"]["details"]["limit"], 1);
    expect(spec.post(small, &call("weather"), &arguments), 200);
    let r = spec.post(small, &call("weather"), &arguments);
    expect_error(&r, 402, "http_budget_exceeded");
    assert_eq!(r.body["error"]["details"]["rule"], "budget");

    // Deletion.
    expect(spec.delete(c, &format!("{TOOLS}/canary")), 200);
    expect_error(
        &spec.delete(c, &format!("{TOOLS}/canary")),
        404,
        "tool_not_found",
    );
}

/// The reference page, without a key: `/api/v1/docs` redirects to `/api/v1/docs/`, which is
/// the HTML page; its assets are served beside it, and a missing one is `route_not_found`.
/// Exactly these operations are the page's in the document.
fn drive_page(spec: &Spec, base: &str) {
    let documented: BTreeSet<String> = spec
        .operations()
        .into_iter()
        .filter(|(_, path)| is_page(path))
        .map(|(method, path)| format!("{method} {path}"))
        .collect();
    let expected = [
        "GET /api/v1/docs",
        "GET /api/v1/docs/",
        "GET /api/v1/docs/{file}",
    ];
    assert_eq!(
        documented,
        expected.map(String::from).into(),
        "the page's operations"
    );
    let http = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let get = |path: &str| http.get(format!("{base}{path}")).send().unwrap();
    let r = get(DOCS);
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(r.headers()["location"], "/api/v1/docs/");
    let page = get("/api/v1/docs/");
    assert_eq!(page.status().as_u16(), 200);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = page.text().unwrap();
    assert!(html.contains("swagger-ui"), "{html}");
    let init = get("/api/v1/docs/swagger-initializer.js");
    assert_eq!(init.status().as_u16(), 200);
    let script = init.text().unwrap();
    assert!(
        script.contains(OPENAPI),
        "the page loads this server's document: {script}"
    );
    for text in [&html, &script] {
        assert!(
            !text.contains("http://") && !text.contains("https://"),
            "the page loads nothing from another host: {text}"
        );
    }
    let missing = get("/api/v1/docs/nope.js");
    assert_eq!(missing.status().as_u16(), 404);
    let body: Value = missing.json().unwrap();
    assert_eq!(body["error"]["code"], "route_not_found");
}

/// Search bodies refused with 400, and their codes (with an API key and with the console's
/// ID token).
fn search_refusals() -> Vec<(Value, &'static str)> {
    vec![
        (json!({}), "invalid_query"),
        (json!({ "query": "" }), "invalid_query"),
        (json!({ "query": 5 }), "invalid_query"),
        (
            json!({ "query": "q", "namespace": "" }),
            "invalid_namespace",
        ),
        (json!({ "query": "q", "tags": [1] }), "invalid_tags"),
        (
            json!({ "query": "q", "tags": (0..21).map(|i| format!("t{i}")).collect::<Vec<_>>() }),
            "invalid_tags",
        ),
        (json!({ "query": "q", "limit": 0 }), "invalid_limit"),
        (json!({ "query": "q", "limit": 2.5 }), "invalid_limit"),
        (json!({ "query": "q", "mode": "fuzzy" }), "invalid_mode"),
        (
            json!({ "query": "q", "min_score": 1.5 }),
            "invalid_min_score",
        ),
        (
            json!({ "query": "q", "min_score": -0.1 }),
            "invalid_min_score",
        ),
        (json!({ "query": "q", "as_of": 1.5 }), "invalid_as_of"),
        (
            json!({ "query": "q", "observed_after": "yesterday" }),
            "invalid_observed_after",
        ),
        (
            json!({ "query": "q", "observed_before": -1 }),
            "invalid_observed_before",
        ),
        (json!({ "query": "q", "rerank": "yes" }), "invalid_rerank"),
    ]
}

/// The console's writes of tools: the public routes with ID tokens of `acme` (whose tools
/// `drive_tools` made) and of `small` (at its plan's one tool).
fn drive_console_tools(spec: &mut Spec, base: &str, data_dir: &std::path::Path, mcp: &McpOrigin) {
    const TOOLS: &str = "/api/v1/tools";
    let (_, token) = crate::console::login(data_dir, "acme", None);
    let t = Client::new(base, Some(&token));
    let server = json!({ "name": "console_calc", "kind": "mcp", "url": mcp.url() });
    expect(spec.post(&t, TOOLS, &server), 201);
    expect_error(&spec.post(&t, TOOLS, &server), 409, "tool_exists");
    let weather = http_tool("console_weather", "https://weather.example/now");
    refuse_registrations(spec, &t, TOOLS, &weather, mcp);

    let refresh = |spec: &mut Spec, name: &str| {
        let url = format!("{TOOLS}/{name}/refresh");
        spec.exchange(&t, &Method::POST, &url, None, Conformance::Strict)
    };
    let listed = expect(refresh(spec, "console_calc"), 200);
    assert_eq!(listed.body["tools"][0]["name"], "mcp_console_calc_add");
    expect_error(&refresh(spec, "denied"), 403, "tool_denied");
    expect_error(&refresh(spec, "mute"), 502, "tool_failed");
    expect_error(&refresh(spec, "weather"), 409, "not_an_mcp_server");
    expect_error(&refresh(spec, "nothing"), 404, "tool_not_found");

    expect(spec.delete(&t, &format!("{TOOLS}/console_calc")), 200);
    expect_error(
        &spec.delete(&t, &format!("{TOOLS}/console_calc")),
        404,
        "tool_not_found",
    );

    let (_, token) = crate::console::login(data_dir, "small", None);
    let small = Client::new(base, Some(&token));
    let r = spec.post(&small, TOOLS, &server);
    expect_error(&r, 402, "tool_quota_exceeded");
}

/// The console's routes, and the public routes the console calls, with an ID token of
/// `acme` (`wasmind console login` on the server's data dir); `c` is acme's API key.
fn drive_console(spec: &mut Spec, base: &str, data_dir: &std::path::Path, c: &Client) {
    let (_, token) = crate::console::login(data_dir, "acme", None);
    let t = Client::new(base, Some(&token));
    let me = expect(spec.get(&t, "/api/v1/console/me"), 200);
    assert_eq!(me.body["account"], "acme");
    expect(spec.get(&t, "/api/v1/console/usage"), 200);
    expect(spec.get(&t, "/api/v1/egress"), 200);
    let tools = expect(spec.get(&t, "/api/v1/tools"), 200);
    assert!(tools.body["data"].as_array().is_some(), "{:#}", tools.body);

    // Keys: create, list, revoke; another account's key is not found.
    let created = expect(
        spec.exchange(
            &t,
            &Method::POST,
            "/api/v1/console/keys",
            None,
            Conformance::Strict,
        ),
        201,
    );
    let key_id = created.body["key_id"].as_str().unwrap().to_string();
    // Up to the plan's bound (liftoff: 20 active keys), then 402.
    let refused = (0..25)
        .map(|_| {
            let post = Method::POST;
            spec.exchange(&t, &post, "/api/v1/console/keys", None, Conformance::Strict)
        })
        .find(|r| r.status != 201)
        .expect("the plan bounds the keys");
    expect_error(&refused, 402, "key_quota_exceeded");
    assert_eq!(refused.body["error"]["details"]["maxKeys"], 20);
    expect(spec.get(&t, "/api/v1/console/keys"), 200);
    expect(
        spec.delete(&t, &format!("/api/v1/console/keys/{key_id}")),
        200,
    );
    expect_error(
        &spec.delete(&t, "/api/v1/console/keys/key_not_acmes"),
        404,
        "key_not_found",
    );

    // Agents: list, one, its event stream (text/event-stream, checked here).
    let r = c.post(
        AGENTS,
        &json!({ "task": "Remember that the console works" }),
    );
    assert_eq!(r.status, 201, "{:#}", r.body);
    let id = r.body["agent_id"].as_str().unwrap().to_string();
    expect(spec.get(&t, "/api/v1/agents"), 200);
    expect_error(
        &spec.get(&t, "/api/v1/agents?limit=0"),
        400,
        "invalid_query",
    );
    expect(spec.get(&t, &format!("/api/v1/agents/{id}")), 200);
    expect_error(
        &spec.get(&t, "/api/v1/agents/ag_nope"),
        404,
        "agent_not_found",
    );
    expect_error(
        &spec.get(&t, "/api/v1/console/agents/ag_nope/events"),
        404,
        "agent_not_found",
    );
    let stream = reqwest::blocking::Client::new()
        .get(format!("{base}/api/v1/console/agents/{id}/events"))
        .bearer_auth(&token)
        .send()
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let content_type = stream.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let text = stream.text().unwrap(); // the stream closes once the agent is over
    assert!(text.contains("event: end"), "{text}");
    spec.seen
        .entry(("GET".into(), EVENTS.into()))
        .or_default()
        .insert(200);

    // Memory: namespaces, list, search, history, delete.
    put_cluster(spec, c, "console");
    expect(spec.get(&t, "/api/v1/memory/namespaces"), 200);
    expect(spec.get(&t, "/api/v1/memory/list?namespace=console"), 200);
    expect_error(
        &spec.get(&t, "/api/v1/memory/list?limit=0"),
        400,
        "invalid_query",
    );
    expect(
        spec.post(
            &t,
            SEARCH,
            &json!({ "query": "cluster", "mode": "keyword" }),
        ),
        200,
    );
    for (body, code) in search_refusals() {
        expect_error(&spec.post(&t, SEARCH, &body), 400, code);
    }
    expect_error(&spec.post_raw(&t, SEARCH, "[]"), 400, "invalid_body");
    expect_error(
        &spec.post(&t, SEARCH, &json!({ "query": "x".repeat(1_100_000) })),
        413,
        "payload_too_large",
    );
    let history = "/api/v1/memory/history";
    expect(
        spec.get(&t, &format!("{history}?key=cluster_0&namespace=console")),
        200,
    );
    expect_error(
        &spec.get(&t, &format!("{history}?key=nope")),
        404,
        "not_found",
    );
    expect_error(&spec.get(&t, history), 400, "invalid_query");
    let memory = "/api/v1/memory";
    expect(
        spec.delete(&t, &format!("{memory}?key=cluster_0&namespace=console")),
        200,
    );
    expect_error(
        &spec.delete(&t, &format!("{memory}?key=nope")),
        404,
        "not_found",
    );
    expect_error(
        &spec.delete(&t, &format!("{memory}?key=Bad-Key")),
        400,
        "invalid_query",
    );
}

/// Polls an agent through the document until `done` holds.
#[track_caller]
fn wait_agent(spec: &mut Spec, c: &Client, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let r = expect(spec.get(c, &format!("{AGENTS}/{id}")), 200);
        if done(&r.body) {
            return r.body;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the agent never got there: {:#}",
            r.body
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn is_terminal(agent: &Value) -> bool {
    matches!(
        agent["status"].as_str(),
        Some("completed" | "stopped" | "failed")
    )
}

/// The agent routes on the main server: `ada` spawns (the offline Mind completes her
/// agents by themselves), `bob` is another account.
fn drive_agents(spec: &mut Spec, ada: &Client, bob: &Client) {
    // ----- POST /api/v1/agents -----
    let task = "Remember that the design review is on Tuesday at ten";
    let spawned = expect(spec.post(ada, AGENTS, &json!({ "task": task })), 201);
    let mut members: Vec<&str> = spawned
        .body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    members.sort_unstable();
    assert_eq!(
        members,
        [
            "agent",
            "agent_id",
            "container",
            "created_at",
            "model",
            "name",
            "status",
            "task"
        ],
        "the spawn answer has exactly these members"
    );
    assert_eq!(
        (spawned.body["task"].clone(), spawned.body["name"].clone()),
        (json!(task), json!(task)),
        "the name defaults to the task's first words"
    );
    let remember = spawned.body["agent_id"].as_str().unwrap().to_string();
    let named = expect(
        spec.post(
            ada,
            AGENTS,
            &json!({ "task": "What do you remember about the design review?", "name": "Recall", "region": "iad" }),
        ),
        201,
    );
    assert_eq!(named.body["name"], "Recall");
    let recall = named.body["agent_id"].as_str().unwrap().to_string();
    let third = expect(
        spec.post(
            ada,
            AGENTS,
            &json!({ "task": "Say hello", "name": null, "region": null, "unknown": 1 }),
        ),
        201,
    );
    let hello = third.body["agent_id"].as_str().unwrap().to_string();
    for (body, code) in [
        (json!({}), "invalid_task"),
        (json!({ "task": "" }), "invalid_task"),
        (json!({ "task": 7 }), "invalid_task"),
        (json!({ "task": null }), "invalid_task"),
        (json!({ "task": "x".repeat(4_001) }), "invalid_task"),
        (json!({ "task": "t", "name": "" }), "invalid_name"),
        (
            json!({ "task": "t", "name": "n".repeat(201) }),
            "invalid_name",
        ),
        (json!({ "task": "t", "name": 5 }), "invalid_name"),
        (json!({ "task": "t", "region": "fra" }), "invalid_region"),
        (json!({ "task": "t", "region": ["iad"] }), "invalid_region"),
        (
            json!({ "task": "t", "memory_mode": "sometimes" }),
            "invalid_memory_mode",
        ),
        (
            json!({ "task": "t", "memory_mode": 3 }),
            "invalid_memory_mode",
        ),
        (json!({ "task": "t", "tools": ["a b"] }), "invalid_tools"),
        (json!({ "task": "t", "tools": "weather" }), "invalid_tools"),
    ] {
        let r = spec.post(ada, AGENTS, &body);
        expect_error(&r, 400, code);
        assert_eq!(
            r.body["error"]["details"]["field"],
            code.trim_start_matches("invalid_")
        );
    }
    expect_error(
        &spec.post_raw(ada, AGENTS, "{not json"),
        400,
        "invalid_body",
    );
    expect_error(&spec.post_raw(ada, AGENTS, "[]"), 400, "invalid_body");
    expect_error(
        &spec.post(ada, AGENTS, &json!({ "task": "x".repeat(1_100_000) })),
        413,
        "payload_too_large",
    );

    // ----- GET /api/v1/agents/{id} -----
    let done = wait_agent(spec, ada, &remember, is_terminal);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert!(done["final_result"].is_string(), "{done:#}");
    assert_eq!(done["error"], Value::Null);
    assert!(!done["progress"].as_array().unwrap().is_empty(), "{done:#}");
    for id in [&recall, &hello] {
        wait_agent(spec, ada, id, is_terminal);
    }
    expect_error(
        &spec.get(ada, &format!("{AGENTS}/ag_0000")),
        404,
        "agent_not_found",
    );
    expect_error(
        &spec.get(bob, &format!("{AGENTS}/{remember}")),
        404,
        "agent_not_found",
    );

    // ----- GET /api/v1/agents -----
    let page = expect(spec.get(ada, "/api/v1/agents?limit=2"), 200);
    let ids = |body: &Value| -> Vec<String> {
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["agent_id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        ids(&page.body),
        [hello.clone(), recall.clone()],
        "newest first"
    );
    let cursor = page.body["next_cursor"].as_str().expect("a next page");
    let rest = expect(
        spec.get(ada, &format!("/api/v1/agents?limit=2&cursor={cursor}")),
        200,
    );
    assert_eq!(ids(&rest.body), std::slice::from_ref(&remember));
    assert_eq!(rest.body["next_cursor"], Value::Null);
    let all = expect(spec.get(ada, AGENTS), 200);
    assert_eq!(ids(&all.body).len(), 3);
    assert_eq!(all.body["next_cursor"], Value::Null);
    assert_eq!(
        expect(spec.get(bob, "/api/v1/agents?limit=100"), 200).body["data"],
        json!([]),
        "another account's agents are not listed"
    );
    // Above the documented maximum: capped, not refused.
    let capped = spec.exchange(
        ada,
        &Method::GET,
        "/api/v1/agents?limit=1000",
        None,
        Conformance::Opaque,
    );
    assert_eq!(
        expect(capped, 200).body["data"].as_array().unwrap().len(),
        3
    );
    for query in ["limit=0", "limit=abc", "limit=1&limit=2"] {
        expect_error(
            &spec.get(ada, &format!("/api/v1/agents?{query}")),
            400,
            "invalid_query",
        );
    }
    let r = spec.exchange(
        ada,
        &Method::GET,
        "/api/v1/agents?cursor=garbage",
        None,
        Conformance::Opaque,
    );
    expect_error(&r, 400, "invalid_query");

    // ----- GET /api/v1/egress -----
    let listed = expect(spec.get(ada, "/api/v1/egress"), 200);
    assert_eq!(listed.body["entries"], json!([]), "deny by default");

    // ----- GET /api/v1/agents/{id}/logs -----
    // The host writes the terminal event just after the terminal status.
    let logs_url = format!("{AGENTS}/{remember}/logs");
    let start = Instant::now();
    let logs = loop {
        let r = expect(spec.get(ada, &logs_url), 200);
        let last = r.body["data"].as_array().unwrap().last().cloned();
        if last.is_some_and(|e| e["kind"] == "terminal") {
            break r;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no terminal event: {:#}",
            r.body
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let events = logs.body["data"].as_array().unwrap().clone();
    assert!(events.len() >= 2, "{:#}", logs.body);
    assert_eq!(logs.body["next_cursor"], Value::Null);
    assert_eq!(events.last().unwrap()["data"]["status"], "completed");
    let first = expect(spec.get(ada, &format!("{logs_url}?limit=1")), 200);
    assert_eq!(first.body["data"], json!([events[0]]));
    let cursor = first.body["next_cursor"].as_str().expect("a next page");
    let rest = expect(
        spec.get(ada, &format!("{logs_url}?limit=1000&cursor={cursor}")),
        200,
    );
    assert_eq!(rest.body["data"], json!(events[1..]));
    let capped = spec.exchange(
        ada,
        &Method::GET,
        &format!("{logs_url}?limit=5000"),
        None,
        Conformance::Opaque,
    );
    assert_eq!(expect(capped, 200).body["data"], json!(events));
    for query in ["limit=0", "limit=-1", "cursor=a&cursor=b"] {
        expect_error(
            &spec.get(ada, &format!("{logs_url}?{query}")),
            400,
            "invalid_query",
        );
    }
    let r = spec.exchange(
        ada,
        &Method::GET,
        &format!("{logs_url}?cursor=garbage"),
        None,
        Conformance::Opaque,
    );
    expect_error(&r, 400, "invalid_query");
    expect_error(
        &spec.get(ada, &format!("{AGENTS}/ag_0000/logs")),
        404,
        "agent_not_found",
    );
    expect_error(&spec.get(bob, &logs_url), 404, "agent_not_found");

    // ----- DELETE /api/v1/agents/{id} (live agents: in drive_agent_limits) -----
    let r = expect(spec.delete(ada, &format!("{AGENTS}/{remember}")), 200);
    assert_eq!(
        r.body,
        json!({ "agent_id": remember, "status": "completed" }),
        "a terminal agent is returned unchanged"
    );
    expect_error(
        &spec.delete(ada, &format!("{AGENTS}/ag_0000")),
        404,
        "agent_not_found",
    );
    expect_error(
        &spec.delete(bob, &format!("{AGENTS}/{remember}")),
        404,
        "agent_not_found",
    );
}

/// Admission refusals, on a server with tiny plans whose agents spin until stopped:
/// a liftoff key (one spawn a minute), a lightyear account (one live agent), a free
/// account (no agent-hours), and a host that admits two live agents.
fn drive_agent_limits(spec: &mut Spec) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let lift = create_key(&dir, "lift", "liftoff");
    let solo = create_key(&dir, "solo", "lightyear");
    let frugal = create_key(&dir, "frugal", "free");
    let options = Options {
        config: Some(format!(
            "{TINY_AGENT_PLANS}component = {:?}\n",
            crate::guests::SPIN
        )),
        hash_embedder: true,
        ..Default::default()
    };
    let server = Server::start_with(&dir, &options);
    let (lift, solo, frugal) = (
        server.client(&lift),
        server.client(&solo),
        server.client(&frugal),
    );
    let spin = json!({ "task": "spin until stopped" });

    // The key's spawn rate: the first spawn of the minute is admitted, the second not.
    let first = expect(spec.post(&lift, AGENTS, &spin), 201);
    let lifted = first.body["agent_id"].as_str().unwrap().to_string();
    let r = spec.post(&lift, AGENTS, &spin);
    expect_error(&r, 429, "rate_limited");
    assert_eq!(
        r.body["error"]["details"],
        json!({ "plan": "liftoff", "window": "minute", "limitPerMinute": 1, "limitPerHour": 30 })
    );
    let retry: u64 = r.retry_after.as_deref().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");

    // The account's concurrency cap: one live agent.
    let solo_first = expect(spec.post(&solo, AGENTS, &spin), 201);
    let spinning = solo_first.body["agent_id"].as_str().unwrap().to_string();
    let running = wait_agent(spec, &solo, &spinning, |a| a["status"] == "running");
    assert_eq!(running["final_result"], Value::Null);
    let r = spec.post(&solo, AGENTS, &spin);
    expect_error(&r, 429, "concurrent_limit_reached");
    assert_eq!(
        r.body["error"]["details"],
        json!({ "plan": "lightyear", "currentConcurrent": 1, "maxConcurrent": 1 })
    );
    assert_eq!(r.retry_after.as_deref(), Some("5"));

    // The account's open event streams: lightyear's one, held by a stream of its agent.
    let (_, token) = crate::console::login(&dir, "solo", None);
    let events = format!("/api/v1/console/agents/{spinning}/events");
    let held = reqwest::blocking::Client::new()
        .get(format!("{}{events}", server.base))
        .bearer_auth(&token)
        .send()
        .unwrap();
    assert_eq!(held.status().as_u16(), 200);
    let r = spec.get(&Client::new(&server.base, Some(&token)), &events);
    expect_error(&r, 429, "stream_limit_reached");
    assert_eq!(r.retry_after.as_deref(), Some("5"));
    drop(held);

    // The host's capacity: two live agents; liftoff's plan would admit a second one.
    let r = spec.post(&lift, AGENTS, &spin);
    expect_error(&r, 503, "temporarily_unavailable");
    assert_eq!(r.retry_after.as_deref(), Some("5"));

    // The monthly agent-hour budget: none on this free plan.
    let r = spec.post(&frugal, AGENTS, &spin);
    expect_error(&r, 402, "monthly_quota_exceeded");
    let details = &r.body["error"]["details"];
    assert_eq!(
        (
            details["plan"].clone(),
            details["usedHours"].as_f64(),
            details["limitHours"].as_f64()
        ),
        (json!("free"), Some(0.0), Some(0.0)),
        "{details:#}"
    );
    assert!(
        details["resetsAt"]
            .as_str()
            .unwrap()
            .ends_with("-01T00:00:00.000Z"),
        "{details:#}"
    );
    // The month's Mind tokens (none either) refuse a consolidation, a Mind job.
    let r = spec.post(&frugal, CONSOLIDATE, &json!({}));
    expect_error(&r, 402, "monthly_quota_exceeded");
    assert_eq!(r.body["error"]["details"]["budget"], "tokens");

    // Stopping live agents: stopped at once, and a second stop changes nothing.
    for (c, id) in [(&solo, &spinning), (&lift, &lifted)] {
        let r = expect(spec.delete(c, &format!("{AGENTS}/{id}")), 200);
        assert_eq!(r.body, json!({ "agent_id": id, "status": "stopped" }));
        let after = expect(spec.get(c, &format!("{AGENTS}/{id}")), 200);
        assert_eq!(
            (
                after.body["status"].clone(),
                after.body["final_result"].clone()
            ),
            (json!("stopped"), Value::Null)
        );
        let again = expect(spec.delete(c, &format!("{AGENTS}/{id}")), 200);
        assert_eq!(again.body["status"], "stopped");
    }
}

/// Every keyed operation (API key or ID token) of an account with its plan's one request
/// in flight — a body announced and stalled — is 429 `request_limit_reached`, before the
/// route looks at its parameters or body.
fn drive_in_flight_limit(spec: &mut Spec) {
    use std::io::Write;

    use crate::http::{assert_unanswered, put_head};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let key = create_key(&dir, "busy", "free");
    let options = Options {
        config: Some(ONE_IN_FLIGHT.into()),
        hash_embedder: true,
        ..Default::default()
    };
    let server = Server::start_with(&dir, &options);
    let (_, token) = crate::console::login(&dir, "busy", None);
    let (keyed, signed_in) = (server.client(&key), Client::new(&server.base, Some(&token)));
    let mut held = std::net::TcpStream::connect(server.base.trim_start_matches("http://")).unwrap();
    held.write_all((put_head(&key, 100) + "{").as_bytes())
        .unwrap();
    // Nothing else of the account's is in flight, so it is admitted; it waits for its body.
    let wait = Duration::from_millis(500);
    assert_unanswered(&mut held, wait, "the stalled body was answered");
    for (method, path) in spec.operations() {
        let op = spec.operation(&method, &path).unwrap().clone();
        if is_page(&path) || !spec.secured(&op) {
            continue;
        }
        let console = spec.security(&op).to_string().contains("idToken");
        let client = if console { &signed_in } else { &keyed };
        // The route refuses before it reads a parameter.
        let url = any_parameters(&path);
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let content = &op["requestBody"]["content"];
        let opaque = Conformance::Opaque;
        let r = if content.get(WASM).is_some() {
            spec.post_bytes(client, &url, b"\0asm", Some(WASM), opaque)
        } else if content.get(JSON).is_some() {
            spec.exchange(client, &method, &url, Some("{}"), opaque)
        } else {
            spec.exchange(client, &method, &url, None, opaque)
        };
        expect_error(&r, 429, "request_limit_reached");
        assert_eq!(r.retry_after.as_deref(), Some("1"), "{method} {path}");
        assert_eq!(
            r.body["error"]["details"],
            json!({ "plan": "free", "currentRequests": 1, "maxRequests": 1 }),
            "{method} {path}"
        );
    }
    drop(held);
}

/// The component routes: `c` and `bob` on liftoff, `small` on a free plan that keeps no
/// component of over 1 KiB.
fn drive_components(spec: &mut Spec, c: &Client, bob: &Client, small: &Client) {
    const COMPONENTS: &str = "/api/v1/agents/components";
    let notes = std::fs::read(crate::guests::NOTES_AGENT).unwrap();
    let upload = |name: &str, version: &str| {
        let query = serde_urlencoded::to_string([("name", name), ("version", version)]).unwrap();
        format!("{COMPONENTS}?{query}")
    };
    let strict = Conformance::Strict;
    let stored = expect(
        spec.post_bytes(
            c,
            &upload("notes_agent", "1.0.0"),
            &notes,
            Some(WASM),
            strict,
        ),
        201,
    );
    let id = stored.body["component_id"].as_str().unwrap().to_string();
    expect(
        spec.post_bytes(
            c,
            &upload("notes_agent", "1.1.0-rc.1+b5"),
            &notes,
            None,
            strict,
        ),
        201,
    );
    let r = spec.post_bytes(
        c,
        &upload("notes_agent", "1.0.0"),
        &notes,
        Some(WASM),
        strict,
    );
    expect_error(&r, 409, "component_exists");
    let r = spec.post_bytes(c, &upload("Notes", "1.0.0"), &notes, Some(WASM), strict);
    expect_error(&r, 400, "invalid_name");
    let r = spec.post_bytes(c, &upload("notes", "1.0"), &notes, Some(WASM), strict);
    expect_error(&r, 400, "invalid_version");
    let twice = format!("{}&version=1.0.1", upload("notes", "1.0.0"));
    let r = spec.post_bytes(c, &twice, &notes, Some(WASM), strict);
    expect_error(&r, 400, "invalid_query");
    // Bytes that cannot run: the document cannot tell, the server can.
    for bytes in [&b"\0asm\x01\0\0\0"[..], b"garbage"] {
        let r = spec.post_bytes(
            c,
            &upload("bad", "1.0.0"),
            bytes,
            Some(WASM),
            Conformance::Opaque,
        );
        expect_error(&r, 400, "invalid_component");
    }
    let r = spec.post_bytes(
        c,
        &upload("notes", "1.0.0"),
        &notes,
        Some("text/plain"),
        strict,
    );
    expect_error(&r, 415, "unsupported_media_type");
    let r = spec.post_bytes(
        small,
        &upload("notes", "1.0.0"),
        &[0; 1025],
        Some(WASM),
        strict,
    );
    expect_error(&r, 413, "payload_too_large");
    let r = spec.post_bytes(
        small,
        &upload("notes", "1.0.0"),
        b"tiny",
        Some(WASM),
        strict,
    );
    expect_error(&r, 402, "component_quota_exceeded");
    assert_eq!(r.body["error"]["details"], json!({ "limit": 0 }));
    // That refused upload was this hour's one.
    let r = spec.post_bytes(
        small,
        &upload("notes", "1.0.0"),
        b"tiny",
        Some(WASM),
        strict,
    );
    expect_error(&r, 429, "rate_limited");
    assert_eq!(
        r.body["error"]["details"],
        json!({ "plan": "free", "window": "hour", "limitPerHour": 1 })
    );

    let page = expect(spec.get(c, &format!("{COMPONENTS}?limit=1")), 200);
    assert_eq!(page.body["data"][0]["version"], "1.1.0-rc.1+b5");
    let cursor = page.body["next_cursor"].as_str().unwrap();
    let rest = spec.exchange(
        c,
        &Method::GET,
        &format!("{COMPONENTS}?limit=1&cursor={cursor}"),
        None,
        Conformance::Opaque,
    );
    assert_eq!(expect(rest, 200).body["data"][0], stored.body);
    expect_error(
        &spec.get(c, &format!("{COMPONENTS}?limit=0")),
        400,
        "invalid_query",
    );
    assert_eq!(
        expect(spec.get(c, &format!("{COMPONENTS}/{id}")), 200).body,
        stored.body
    );
    expect_error(
        &spec.get(bob, &format!("{COMPONENTS}/{id}")),
        404,
        "component_not_found",
    );

    // Spawning one: by name, the newest version (a pre-release of 1.1.0 beats 1.0.0).
    let spawned = expect(
        spec.post(
            c,
            AGENTS,
            &json!({ "task": "note this", "agent": "notes_agent" }),
        ),
        201,
    );
    assert_eq!(spawned.body["agent"]["version"], "1.1.0-rc.1+b5");
    let agent = spawned.body["agent_id"].as_str().unwrap().to_string();
    let done = wait_agent(spec, c, &agent, is_terminal);
    assert_eq!(done["agent"], spawned.body["agent"]);
    let r = spec.post(bob, AGENTS, &json!({ "task": "t", "agent": id }));
    expect_error(&r, 404, "component_not_found");
    let r = spec.post(c, AGENTS, &json!({ "task": "t", "agent": 7 }));
    expect_error(&r, 400, "invalid_agent");

    expect_error(
        &spec.delete(bob, &format!("{COMPONENTS}/{id}")),
        404,
        "component_not_found",
    );
    assert_eq!(
        expect(spec.delete(c, &format!("{COMPONENTS}/{id}")), 200).body,
        stored.body
    );
}

/// Puts three copies of one fact into `namespace` (a cluster under any embedder); returns
/// their memory_ids.
fn put_cluster(spec: &mut Spec, c: &Client, namespace: &str) -> Vec<Value> {
    (0..3)
        .map(|i| {
            let body = json!({ "key": format!("cluster_{i}"), "value": format!("The user's favourite colour is blue{}", ".".repeat(i)), "namespace": namespace });
            expect(spec.post(c, MEMORY, &body), 201).body["memory_id"].clone()
        })
        .collect()
}

/// A consolidation whose Mind refuses (a 400 from the provider: not retried) is 503
/// `mind_unavailable`.
fn drive_unavailable_mind(spec: &mut Spec) {
    let mind = FakeMind::start([Reply::status(400)]);
    let options = Options::hash_embedder().openai_mind(&mind.base_url());
    let (_tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    put_cluster(spec, &c, "default");
    let r = spec.post(&c, CONSOLIDATE, &json!({}));
    expect_error(&r, 503, "mind_unavailable");
    assert!(r.retry_after.is_some(), "503 without Retry-After");
}

/// Drives the routes that embed against a server whose remote embedder is unreachable;
/// returns whether that server could be started (it needs no model on disk). The data dir
/// is first filled by a server with the hash embedder (same dimensions), so that a
/// consolidation finds a cluster and fails only when it embeds the summary.
fn drive_unavailable_embedder(spec: &mut Spec) -> bool {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let key = create_key(&dir, "acme", "free");
    {
        let mut server = Server::start_with(&dir, &Options::hash_embedder());
        put_cluster(spec, &server.client(&key), "default");
        server.stop();
    }
    let options = Options {
        config: Some(UNREACHABLE_EMBEDDER.into()),
        hash_embedder: false,
        ..Default::default()
    };
    let server = match Server::try_start(&dir, &options) {
        Ok(server) => server,
        Err(log) => {
            eprintln!(
                "note: a server with an unreachable openai embedder did not start; 503s not driven:\n{log}"
            );
            return false;
        }
    };
    let c = server.client(&key);
    let responses = [
        spec.post(
            &c,
            MEMORY,
            &json!({ "key": "k", "value": "needs an embedding" }),
        ),
        spec.post(&c, SEARCH, &json!({ "query": "needs an embedding" })),
        spec.post(
            &Client::new(
                &server.base,
                Some(&crate::console::login(&dir, "acme", None).1),
            ),
            SEARCH,
            &json!({ "query": "needs an embedding" }),
        ),
        spec.post(
            &c,
            IMPORT,
            &json!({ "memories": [{ "key": "k", "value": "needs an embedding" }] }),
        ),
    ];
    let consolidated = spec.post(&c, CONSOLIDATE, &json!({}));
    for r in responses.iter().chain([&consolidated]) {
        expect_error(r, 503, "temporarily_unavailable");
        assert!(r.retry_after.is_some(), "503 without Retry-After");
    }
    // Keyword search embeds nothing: it still works.
    expect(
        spec.post(
            &c,
            SEARCH,
            &json!({ "query": "anything", "mode": "keyword" }),
        ),
        200,
    );
    true
}
