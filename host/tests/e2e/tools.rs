//! Tools a tenant registers (`/api/v1/tools`), on either backend: an HTTP tool and a remote
//! MCP server (rmcp's, inside the test) on 127.0.0.2, which the operator's config allows,
//! called through the egress door; a canary on 127.0.0.1, on the allowlist but at a refused
//! address, that no call may reach. Secrets go in and never come out: not in an answer, the
//! server's log, the data dir's files or the database in plain text. Another account sees
//! none of it.

use std::path::Path;

use serde_json::{Value, json};

use crate::{
    common::{
        Client, Options, Server, database_of, mcp_origin::McpOrigin, on_postgres, origin::Origin,
        postgres::Postgres, server_with_keys,
    },
    console::login,
};

pub const SECRET: &str = "sk-e2e-3f9a7c1d-never-shown";
pub const BEARER: &str = "mcp-e2e-bearer-8b2e";

/// The operator's config: 127.0.0.2's origins allowed (host, ports, range), the canary's
/// host and port on the allowlist so that the address check is what refuses it; free
/// accounts may register `tools` tools.
pub fn config(allowed: &[u16], canary: u16, tools: u32) -> String {
    let ports: Vec<String> = allowed.iter().map(u16::to_string).collect();
    format!(
        "[egress]\nallow_ranges = [\"127.0.0.2/32\"]\nallow = [\n\
         {{ host = \"127.0.0.2\", ports = [{}], schemes = [\"http\"] }},\n\
         {{ host = \"127.0.0.1\", ports = [{canary}], schemes = [\"http\"] }},\n]\n\
         [plans.free]\nspawns_per_minute = 30\nspawns_per_hour = 100\nconcurrent_agents = 10\n\
         memories = 100\nagent_hours_per_month = 10.0\ntools = {tools}\n",
        ports.join(", ")
    )
}

pub fn weather(url: &str) -> Value {
    json!({
        "name": "weather",
        "kind": "http",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": { "city": { "type": "string" } },
            "required": ["city"],
        },
        "endpoint": { "url": url, "method": "POST" },
        "timeout_secs": 5,
        "secret_header": { "name": "X-Api-Key", "value": SECRET },
    })
}

fn call(c: &Client, name: &str, arguments: &Value) -> crate::common::Resp {
    c.post(
        &format!("/api/v1/tools/{name}/call"),
        &json!({ "arguments": arguments }),
    )
}

/// No file under `dir` holds `secret`, nor (on postgres) the server's database.
pub fn nowhere_at_rest(dir: &Path, secrets: &[&str]) {
    let mut files = vec![dir.to_path_buf()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let bytes = std::fs::read(&path).unwrap_or_default();
        for secret in secrets {
            let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
            assert!(!found, "{} holds a secret in plain text", path.display());
        }
    }
    if on_postgres() {
        let dump = Postgres::shared().psql(&database_of(dir), "SELECT record::text FROM tools");
        assert!(dump.contains("\"secret\""), "{dump}");
        for secret in secrets {
            assert!(
                !dump.contains(secret),
                "the database holds a secret: {dump}"
            );
        }
    }
}

#[test]
fn an_http_tool_is_called_through_the_egress_door_and_its_secret_never_shown() {
    let (origin, canary) = (Origin::start("127.0.0.2"), Origin::start("127.0.0.1"));
    let options = Options {
        config: Some(config(&[origin.port()], canary.port(), 3)),
        ..Options::hash_embedder()
    };
    let (tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);

    let r = c.post("/api/v1/tools", &weather(&origin.url("/weather")));
    assert_eq!(r.status, 201, "{:#}", r.body);
    assert_eq!(r.body["name"], "weather");
    assert_eq!(r.body["has_secret"], true);
    assert_eq!(r.body["secret_header_name"], "X-Api-Key");
    assert_eq!(r.body["endpoint"]["method"], "POST");
    c.post("/api/v1/tools", &weather(&origin.url("/weather")))
        .assert_error(409, "tool_exists");

    // Calls go out with the secret and an Idempotency-Key; arguments are checked first.
    let r = call(&c, "weather", &json!({ "city": "Oslo" }));
    assert_eq!(r.status, 200, "{:#}", r.body);
    assert_eq!(r.body["result"], "got: {\"city\":\"Oslo\"}");
    let seen = origin.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("POST", "/weather")
    );
    let header = |name: &str| {
        (seen[0].headers.iter())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("x-api-key").as_deref(), Some(SECRET));
    assert_eq!(header("content-type").as_deref(), Some("application/json"));
    assert!(
        seen[0]
            .idempotency_key
            .as_ref()
            .is_some_and(|k| !k.is_empty())
    );
    call(&c, "weather", &json!({ "town": "Oslo" })).assert_error(400, "invalid_arguments");
    call(&c, "weather", &json!([1])).assert_error(400, "invalid_arguments");
    call(&c, "nothing", &json!({})).assert_error(404, "tool_not_found");
    assert_eq!(origin.requests().len(), 1, "a refused call sent nothing");

    // A tool whose endpoint the egress policy refuses is refused, naming the rule.
    let mut to_canary = weather(&canary.url("/steal"));
    to_canary["name"] = json!("canary");
    assert_eq!(c.post("/api/v1/tools", &to_canary).status, 201);
    let r = call(&c, "canary", &json!({ "city": "Oslo" }));
    r.assert_error(403, "tool_denied");
    assert_eq!(
        r.body["error"]["details"]["rule"], "address",
        "{:#}",
        r.body
    );
    let mut elsewhere = weather("http://127.0.0.2:9/weather");
    elsewhere["name"] = json!("elsewhere");
    assert_eq!(c.post("/api/v1/tools", &elsewhere).status, 201);
    let r = call(&c, "elsewhere", &json!({ "city": "Oslo" }));
    r.assert_error(403, "tool_denied");
    assert_eq!(
        r.body["error"]["details"]["rule"], "allowlist",
        "{:#}",
        r.body
    );
    assert!(canary.requests().is_empty(), "{:?}", canary.requests());

    // The plan's count, then bad fields, each named.
    let mut fourth = weather(&origin.url("/weather"));
    fourth["name"] = json!("fourth");
    let r = c.post("/api/v1/tools", &fourth);
    r.assert_error(402, "tool_quota_exceeded");
    assert_eq!(r.body["error"]["details"]["limit"], 3);
    for (field, value, code) in [
        ("name", json!("Weather"), "invalid_name"),
        ("name", json!("mcp_weather"), "invalid_name"),
        ("kind", json!("grpc"), "invalid_kind"),
        (
            "parameters",
            json!({ "type": "string" }),
            "invalid_parameters",
        ),
        (
            "endpoint",
            json!({ "url": "ftp://x.example/" }),
            "invalid_endpoint",
        ),
        ("timeout_secs", json!(10_000), "invalid_timeout_secs"),
        (
            "secret_header",
            json!({ "name": "Host", "value": "x" }),
            "invalid_secret_header",
        ),
    ] {
        let mut body = weather(&origin.url("/weather"));
        body[field] = value;
        c.post("/api/v1/tools", &body).assert_error(400, code);
    }

    // The secret is in no answer, no log line, and nowhere at rest in plain text.
    let answers = [
        c.get("/api/v1/tools").body,
        c.get("/api/v1/tools/weather").body,
        c.delete("/api/v1/tools/canary").body,
    ];
    assert_eq!(answers[0]["data"].as_array().unwrap().len(), 3);
    for answer in &answers {
        assert!(!answer.to_string().contains(SECRET), "{answer:#}");
    }
    c.get("/api/v1/tools/canary")
        .assert_error(404, "tool_not_found");
    assert!(!server.log().contains(SECRET));
    nowhere_at_rest(&tmp.path().join("data"), &[SECRET]);
}

#[test]
fn an_mcp_server_s_tools_are_listed_and_called_with_its_bearer() {
    let (mcp, canary) = (McpOrigin::start("127.0.0.2"), Origin::start("127.0.0.1"));
    let options = Options {
        config: Some(config(&[mcp.port()], canary.port(), 5)),
        ..Options::hash_embedder()
    };
    let (tmp, server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    let body = json!({ "name": "calc", "kind": "mcp", "url": mcp.url(), "bearer": BEARER });
    let r = c.post("/api/v1/tools", &body);
    assert_eq!(r.status, 201, "{:#}", r.body);
    assert_eq!(r.body["tools"], Value::Null, "listed on first use");

    let r = c.post("/api/v1/tools/calc/refresh", &json!({}));
    assert_eq!(r.status, 200, "{:#}", r.body);
    let names: Vec<&str> = (r.body["tools"].as_array().unwrap().iter())
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mcp_calc_add", "mcp_calc_fail"]);
    assert_eq!(r.body["tools"][0]["description"], "Adds a and b");
    assert!(r.body["listed_at"].is_string() && r.body["list_error"].is_null());

    let r = call(&c, "mcp_calc_add", &json!({ "a": 2, "b": 3 }));
    assert_eq!(r.status, 200, "{:#}", r.body);
    assert_eq!(r.body["result"], "sum: 5");
    call(&c, "mcp_calc_add", &json!({ "a": "two" })).assert_error(400, "invalid_arguments");
    call(&c, "mcp_calc_fail", &json!({})).assert_error(502, "tool_failed");
    call(&c, "calc", &json!({})).assert_error(409, "not_a_tool");

    // Every request carried the bearer; the call's carried an Idempotency-Key.
    let seen = mcp.requests();
    assert!(!seen.is_empty());
    let bearer = format!("Bearer {BEARER}");
    assert!(
        seen.iter()
            .all(|s| s.authorization.as_deref() == Some(bearer.as_str())),
        "{seen:?}"
    );
    assert!(seen.iter().any(|s| s.idempotency_key.is_some()), "{seen:?}");

    // An HTTP tool has no list to refresh.
    let http = json!({
        "name": "ping", "kind": "http", "description": "ping",
        "parameters": { "type": "object" }, "endpoint": { "url": canary.url("/") },
    });
    assert_eq!(c.post("/api/v1/tools", &http).status, 201);
    c.post("/api/v1/tools/ping/refresh", &json!({}))
        .assert_error(409, "not_an_mcp_server");

    // A server the policy refuses is refused at refresh, the tools listed before kept.
    let refused = json!({ "name": "stolen", "kind": "mcp", "url": canary.url("/mcp") });
    assert_eq!(c.post("/api/v1/tools", &refused).status, 201);
    let r = c.post("/api/v1/tools/stolen/refresh", &json!({}));
    r.assert_error(403, "tool_denied");
    assert_eq!(r.body["error"]["details"]["rule"], "address");
    assert!(canary.requests().is_empty());
    let listed = c.get("/api/v1/tools/stolen").body;
    assert!(
        listed["list_error"].as_str().unwrap().contains("refused"),
        "{listed:#}"
    );

    for answer in [
        c.get("/api/v1/tools").body,
        c.get("/api/v1/tools/calc").body,
    ] {
        assert!(!answer.to_string().contains(BEARER), "{answer:#}");
    }
    assert!(!server.log().contains(BEARER));
    nowhere_at_rest(&tmp.path().join("data"), &[BEARER]);
}

#[test]
fn another_account_never_sees_lists_or_calls_a_tenant_s_tools() {
    let origin = Origin::start("127.0.0.2");
    let options = Options {
        config: Some(config(&[origin.port()], 9, 5)),
        ..Options::hash_embedder()
    };
    let (tmp, server, keys) = server_with_keys(&[("acme", "free"), ("globex", "free")], &options);
    let (acme, globex) = (server.client(&keys[0]), server.client(&keys[1]));
    assert_eq!(
        acme.post("/api/v1/tools", &weather(&origin.url("/acme")))
            .status,
        201
    );

    assert_eq!(globex.get("/api/v1/tools").body["data"], json!([]));
    globex
        .get("/api/v1/tools/weather")
        .assert_error(404, "tool_not_found");
    call(&globex, "weather", &json!({ "city": "Oslo" })).assert_error(404, "tool_not_found");
    globex
        .post("/api/v1/tools/weather/refresh", &json!({}))
        .assert_error(404, "tool_not_found");
    globex
        .delete("/api/v1/tools/weather")
        .assert_error(404, "tool_not_found");
    assert!(origin.requests().is_empty());

    // The same name is globex's own; each account calls its own.
    let mut own = weather(&origin.url("/globex"));
    own.as_object_mut().unwrap().remove("secret_header");
    assert_eq!(globex.post("/api/v1/tools", &own).status, 201);
    assert_eq!(
        call(&globex, "weather", &json!({ "city": "Rome" })).status,
        200
    );
    assert_eq!(
        call(&acme, "weather", &json!({ "city": "Oslo" })).status,
        200
    );
    let seen = origin.requests();
    let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, ["/globex", "/acme"]);
    assert!(
        !seen[0].headers.iter().any(|(k, _)| k == "x-api-key"),
        "{seen:?}"
    );
    assert_eq!(acme.get("/api/v1/tools/weather").body["has_secret"], true);
    assert_eq!(
        globex.get("/api/v1/tools/weather").body["has_secret"],
        false
    );

    // The console shows each account its own, secrets left out.
    let dir = tmp.path().join("data");
    let console = |account: &str| {
        let token = login(&dir, account, None).1;
        let r = Client::new(&server.base, Some(&token)).get("/api/v1/tools");
        assert_eq!(r.status, 200, "{:#}", r.body);
        r.body["data"].clone()
    };
    let (a, g) = (console("acme"), console("globex"));
    assert_eq!(a.as_array().unwrap().len(), 1);
    assert_eq!(
        a[0]["endpoint"]["url"].as_str(),
        Some(origin.url("/acme").as_str())
    );
    assert_eq!(
        g[0]["endpoint"]["url"].as_str(),
        Some(origin.url("/globex").as_str())
    );
    assert!(!a.to_string().contains(SECRET), "{a:#}");
}

/// A node given another key than the one that sealed a secret says so at start, and the
/// tool's calls fail saying why, without the secret.
#[test]
fn a_secret_sealed_under_another_key_does_not_open() {
    let origin = Origin::start("127.0.0.2");
    let options = Options {
        config: Some(config(&[origin.port()], 9, 5)),
        ..Options::hash_embedder()
    };
    let (tmp, mut server, keys) = server_with_keys(&[("acme", "free")], &options);
    let c = server.client(&keys[0]);
    assert_eq!(
        c.post("/api/v1/tools", &weather(&origin.url("/w"))).status,
        201
    );
    server.stop();
    let dir = tmp.path().join("data");
    let other = tmp.path().join("other.key");
    let options = Options {
        env: vec![(
            "WASMIND_TOOLS_KEY_FILE".into(),
            other.to_str().unwrap().into(),
        )],
        ..options
    };
    let server = Server::start_with(&dir, &options);
    assert!(
        server.log().contains("sealed under other keys"),
        "{}",
        server.log()
    );
    let c = server.client(&keys[0]);
    let r = call(&c, "weather", &json!({ "city": "Oslo" }));
    r.assert_error(502, "tool_failed");
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("another key"), "{message}");
    assert!(origin.requests().is_empty());
}
