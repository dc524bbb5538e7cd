//! What a tenant registers, and the checks it passes before anything is stored: an HTTP
//! tool (a description, a JSON Schema of its arguments, an endpoint, a timeout, an
//! optional secret header) or a remote MCP server (a URL, an optional bearer secret).
//! Every bad field is named, with what to fix; the secrets come out of the check as
//! [`Secret`]s, to be sealed and never shown.

use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;
use url::Url;

use super::store::{HttpTool, McpServer, ToolKind};
use crate::{invalid::Invalid, object::Fields, secret::Secret, text::check_snake_case};

/// Longest tool (or MCP server) name.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 1_024;
/// Largest argument schema, as compact JSON.
pub const MAX_PARAMETERS_BYTES: usize = 16_384;
/// Longest endpoint or server URL.
pub const MAX_URL_CHARS: usize = 2_048;
/// Longest secret (a header value, a bearer token).
pub const MAX_SECRET_CHARS: usize = 4_096;
/// Longest secret header name.
pub const MAX_HEADER_NAME_CHARS: usize = 128;
/// What an endpoint or server URL must look like, in the OpenAPI document and here alike
/// (so what a client checks is what the server checks): `http` or `https`; a host that is
/// a DNS name (labels of letters, digits and single hyphens, the last one starting with a
/// letter), a dotted IPv4 address or a bracketed IPv6 one; a port up to 65535; and a
/// path, query or fragment of printable ASCII (anything else percent-encoded). No user
/// or password can fit before the host. Every string it matches is one `url` parses.
pub const URL_PATTERN: &str = concat!(
    "^[Hh][Tt][Tt][Pp][Ss]?://(",
    // A DNS name; its last label cannot be read as a number (WHATWG would parse it as IPv4).
    "([A-Za-z0-9]+(-[A-Za-z0-9]+)*\\.)*[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*",
    "|((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])",
    "|\\[(",
    "([0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}",
    "|([0-9A-Fa-f]{1,4}:){1,7}:",
    "|([0-9A-Fa-f]{1,4}:){1,6}:[0-9A-Fa-f]{1,4}",
    "|([0-9A-Fa-f]{1,4}:){1,5}(:[0-9A-Fa-f]{1,4}){1,2}",
    "|([0-9A-Fa-f]{1,4}:){1,4}(:[0-9A-Fa-f]{1,4}){1,3}",
    "|([0-9A-Fa-f]{1,4}:){1,3}(:[0-9A-Fa-f]{1,4}){1,4}",
    "|([0-9A-Fa-f]{1,4}:){1,2}(:[0-9A-Fa-f]{1,4}){1,5}",
    "|[0-9A-Fa-f]{1,4}:(:[0-9A-Fa-f]{1,4}){1,6}",
    "|:((:[0-9A-Fa-f]{1,4}){1,7}|:)",
    ")\\])",
    "(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?",
    "([/?#][\\x21-\\x7e]*)?$",
);
static URL_SHAPE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(URL_PATTERN).expect("URL_PATTERN is a regex"));
/// The methods an HTTP tool's endpoint may use.
pub const METHODS: [&str; 5] = ["POST", "PUT", "PATCH", "GET", "DELETE"];
/// The two kinds.
pub const KINDS: [&str; 2] = ["http", "mcp"];
/// Name prefixes kept for the names agents see beside the tenant's: an MCP server's tools
/// (`mcp_<server>_<tool>`) and the host's own (`service_memory_put`, …).
pub const RESERVED_PREFIXES: [&str; 2] = ["mcp_", "service_"];
/// Headers the host sets on a tool's request itself, which a secret header may not be.
const HOST_HEADERS: [&str; 6] = [
    "host",
    "content-length",
    "content-type",
    "idempotency-key",
    "transfer-encoding",
    "connection",
];

/// A registration as a tenant sends it (a REST body, an MCP tool's arguments). Fields of
/// the other kind are ignored, as any unknown field is. No `Debug`: it holds secrets.
#[derive(Deserialize)]
pub struct Registration {
    pub name: String,
    pub kind: String,
    pub description: Option<String>,
    pub parameters: Option<Value>,
    pub endpoint: Option<Value>,
    pub timeout_secs: Option<f64>,
    pub secret_header: Option<Value>,
    pub url: Option<String>,
    pub bearer: Option<String>,
}

impl Fields for Registration {
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("name", "a string"),
        ("kind", "a string"),
        ("description", "a string"),
        ("parameters", "a JSON Schema object"),
        ("endpoint", "an object { url, method }"),
        ("timeout_secs", "a number"),
        ("secret_header", "an object { name, value }"),
        ("url", "a string"),
        ("bearer", "a string"),
    ];
}

/// A registration that passed its checks: what is stored, and the secret to seal.
pub struct Definition {
    pub name: String,
    pub description: String,
    pub timeout_secs: f64,
    pub kind: ToolKind,
    pub secret: Option<Secret>,
}

impl Registration {
    /// Checks every field; `max_timeout_secs` is the egress door's own bound of a whole
    /// exchange (`[egress] total_timeout_secs`), also the default timeout.
    pub fn check(self, max_timeout_secs: f64) -> Result<Definition, Invalid> {
        check_name(&self.name)?;
        let timeout_secs = match self.timeout_secs {
            None => max_timeout_secs,
            Some(t) if t.is_finite() && t > 0.0 && t <= max_timeout_secs => t,
            Some(t) => {
                return Err(Invalid::new(
                    "timeout_secs",
                    format!(
                        "timeout_secs must be above 0 and at most {max_timeout_secs} (this \
                         host's [egress] total_timeout_secs), not {t}"
                    ),
                ));
            }
        };
        let description = match self.description {
            Some(d) => Some(check_description(d)?),
            None => None,
        };
        match self.kind.as_str() {
            "http" => {
                let description = description.ok_or_else(|| {
                    Invalid::new(
                        "description",
                        "description is required: say what the tool does, for the Mind",
                    )
                })?;
                let parameters = self.parameters.ok_or_else(|| {
                    Invalid::new("parameters", "parameters is required: a JSON Schema of the arguments, e.g. {\"type\": \"object\", \"properties\": {}}")
                })?;
                check_parameters(&parameters)?;
                let (url, method) = check_endpoint(self.endpoint)?;
                let (secret_header, secret) = match self.secret_header {
                    Some(header) => {
                        let (name, value) = check_secret_header(header)?;
                        (Some(name), Some(value))
                    }
                    None => (None, None),
                };
                Ok(Definition {
                    name: self.name,
                    description,
                    timeout_secs,
                    kind: ToolKind::Http(HttpTool {
                        parameters,
                        url,
                        method,
                        secret_header,
                    }),
                    secret,
                })
            }
            "mcp" => {
                let url = self.url.ok_or_else(|| {
                    Invalid::new(
                        "url",
                        "url is required: the MCP server's streamable HTTP endpoint",
                    )
                })?;
                let url = check_url("url", &url)?;
                let secret = match self.bearer {
                    Some(bearer) => Some(check_secret("bearer", bearer)?),
                    None => None,
                };
                Ok(Definition {
                    name: self.name,
                    description: description.unwrap_or_default(),
                    timeout_secs,
                    kind: ToolKind::Mcp(McpServer { url, listing: None }),
                    secret,
                })
            }
            other => Err(Invalid::new(
                "kind",
                format!("kind {other:?} is not a kind of tool: use \"http\" or \"mcp\""),
            )),
        }
    }
}

/// snake_case, at most [`MAX_NAME_CHARS`], no reserved prefix.
pub fn check_name(name: &str) -> Result<(), Invalid> {
    check_snake_case(name, MAX_NAME_CHARS)?;
    match RESERVED_PREFIXES.iter().find(|p| name.starts_with(*p)) {
        Some(prefix) => Err(Invalid::new(
            "name",
            format!(
                "names starting with {prefix:?} are kept for the host's own tools; choose another"
            ),
        )),
        None => Ok(()),
    }
}

fn check_description(description: String) -> Result<String, Invalid> {
    let chars = description.chars().count();
    if description.trim().is_empty() {
        return Err(Invalid::new("description", "description must not be blank"));
    }
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(Invalid::new(
            "description",
            format!("description is {chars} characters; the limit is {MAX_DESCRIPTION_CHARS}"),
        ));
    }
    Ok(description)
}

/// An object schema ([`MAX_PARAMETERS_BYTES`] at most) that compiles as a JSON Schema.
fn check_parameters(parameters: &Value) -> Result<(), Invalid> {
    let field = "parameters";
    if !parameters.is_object() {
        return Err(Invalid::new(
            field,
            "parameters must be a JSON Schema object",
        ));
    }
    let size = parameters.to_string().len();
    if size > MAX_PARAMETERS_BYTES {
        return Err(Invalid::new(
            field,
            format!("parameters is {size} bytes of JSON; the limit is {MAX_PARAMETERS_BYTES}"),
        ));
    }
    if parameters.get("type") != Some(&Value::from("object")) {
        return Err(Invalid::new(
            field,
            "parameters must describe an object of arguments: {\"type\": \"object\", \"properties\": …}",
        ));
    }
    jsonschema::validator_for(parameters)
        .map(drop)
        .map_err(|e| Invalid::new(field, format!("parameters is not a valid JSON Schema: {e}")))
}

/// `{ url, method }`: the URL checked, the method one of [`METHODS`] (default POST).
fn check_endpoint(endpoint: Option<Value>) -> Result<(String, String), Invalid> {
    let field = "endpoint";
    let shape = "endpoint must be an object { url, method }";
    let Some(Value::Object(mut endpoint)) = endpoint else {
        return Err(Invalid::new(
            field,
            format!("{shape}; it is required for an http tool"),
        ));
    };
    let Some(Value::String(url)) = endpoint.remove("url") else {
        return Err(Invalid::new(
            field,
            "endpoint.url is required: the URL the tool's requests go to",
        ));
    };
    let url = check_url(field, &url)?;
    let method = match endpoint.remove("method") {
        None | Some(Value::Null) => "POST".to_string(),
        Some(Value::String(m)) if METHODS.contains(&m.as_str()) => m,
        Some(other) => {
            return Err(Invalid::new(
                field,
                format!(
                    "endpoint.method {other} is not one of {} (in capitals)",
                    METHODS.join(", ")
                ),
            ));
        }
    };
    Ok((url, method))
}

/// An absolute http(s) URL with a host and no credentials.
fn check_url(field: &'static str, url: &str) -> Result<String, Invalid> {
    let named = if field == "url" {
        "url"
    } else {
        "endpoint.url"
    };
    if url.chars().count() > MAX_URL_CHARS {
        return Err(Invalid::new(
            field,
            format!("{named} is over {MAX_URL_CHARS} characters"),
        ));
    }
    if url.contains('@')
        && Url::parse(url).is_ok_and(|u| !u.username().is_empty() || u.password().is_some())
    {
        return Err(Invalid::new(
            field,
            format!(
                "{named} must not hold credentials (they would be shown); send them as the tool's secret"
            ),
        ));
    }
    let parsed = (URL_SHAPE.is_match(url).then(|| Url::parse(url).ok()).flatten()).ok_or_else(|| {
        Invalid::new(
            field,
            format!(
                "{named} {url:?} must be an http or https URL with a DNS name, an IPv4 address or a \
                 bracketed IPv6 address as its host, a port up to 65535, and a printable-ASCII \
                 path (percent-encode the rest)"
            ),
        )
    })?;
    Ok(parsed.to_string())
}

/// `{ name, value }`: a header name the host does not set itself, and a secret value.
fn check_secret_header(header: Value) -> Result<(String, Secret), Invalid> {
    let field = "secret_header";
    let Value::Object(mut header) = header else {
        return Err(Invalid::new(
            field,
            "secret_header must be an object { name, value }",
        ));
    };
    let Some(Value::String(name)) = header.remove("name") else {
        return Err(Invalid::new(
            field,
            "secret_header.name is required: the header's name, e.g. \"Authorization\"",
        ));
    };
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || name.len() > MAX_HEADER_NAME_CHARS || !name.chars().all(token) {
        return Err(Invalid::new(
            field,
            format!(
                "secret_header.name {name:?} is not a header name (1 to {MAX_HEADER_NAME_CHARS} letters, digits or !#$%&'*+-.^_`|~)"
            ),
        ));
    }
    if HOST_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(Invalid::new(
            field,
            format!("secret_header.name {name:?} is a header the host sets itself"),
        ));
    }
    let Some(Value::String(value)) = header.remove("value") else {
        return Err(Invalid::new(
            field,
            "secret_header.value is required: the secret the header carries",
        ));
    };
    Ok((name, check_secret(field, value)?))
}

/// 1 to [`MAX_SECRET_CHARS`] characters a header may carry (visible ASCII and spaces).
fn check_secret(field: &'static str, value: String) -> Result<Secret, Invalid> {
    let named = if field == "bearer" {
        "bearer"
    } else {
        "secret_header.value"
    };
    let fits = |c: char| c == ' ' || c == '\t' || c.is_ascii_graphic();
    if value.is_empty() || value.len() > MAX_SECRET_CHARS || !value.chars().all(fits) {
        return Err(Invalid::new(
            field,
            format!(
                "{named} must be 1 to {MAX_SECRET_CHARS} visible ASCII characters (a header's value)"
            ),
        ));
    }
    Ok(Secret::from(value))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::object;

    fn check(body: Value) -> Result<Definition, Invalid> {
        let Value::Object(map) = body else { panic!() };
        let registration: Registration = object::read(map).unwrap();
        registration.check(30.0)
    }

    fn http() -> Value {
        json!({
            "name": "weather", "kind": "http", "description": "The weather in a city",
            "parameters": { "type": "object", "properties": { "city": { "type": "string" } } },
            "endpoint": { "url": "https://api.example.com/weather" },
        })
    }

    fn field_of(body: Value) -> (&'static str, String) {
        let e = check(body).err().unwrap();
        (e.field, e.message)
    }

    #[test]
    fn an_http_tool_gets_its_defaults_and_keeps_its_secret_apart() {
        let mut body = http();
        body["secret_header"] = json!({ "name": "X-Api-Key", "value": "sk-1" });
        let d = check(body).unwrap();
        assert_eq!(d.timeout_secs, 30.0);
        let ToolKind::Http(tool) = &d.kind else {
            panic!()
        };
        assert_eq!(tool.method, "POST");
        assert_eq!(tool.secret_header.as_deref(), Some("X-Api-Key"));
        assert_eq!(d.secret.unwrap().expose(), "sk-1");
        assert!(!serde_json::to_string(&d.kind).unwrap().contains("sk-1"));
    }

    #[test]
    fn every_bad_field_is_named_with_what_to_fix() {
        let with = |field: &str, value: Value| {
            let mut body = http();
            body[field] = value;
            field_of(body)
        };
        for (field, value, says) in [
            ("name", json!("Weather"), "snake_case"),
            ("name", json!("a".repeat(65)), "limit is 64"),
            ("name", json!("mcp_weather"), "kept for the host"),
            ("name", json!("service_memory_put"), "kept for the host"),
            ("kind", json!("grpc"), "use \"http\" or \"mcp\""),
            ("description", json!(" "), "blank"),
            ("description", json!("d".repeat(1025)), "limit is 1024"),
            ("parameters", json!("object"), "JSON Schema object"),
            (
                "parameters",
                json!({ "type": "string" }),
                "object of arguments",
            ),
            (
                "parameters",
                json!({ "type": "object", "properties": 5 }),
                "not a valid JSON Schema",
            ),
            (
                "parameters",
                json!({ "type": "object", "$ref": "https://evil.example/s.json" }),
                "not a valid JSON Schema",
            ),
            (
                "endpoint",
                json!("https://x.example"),
                "object { url, method }",
            ),
            (
                "endpoint",
                json!({ "url": "ftp://x.example/" }),
                "http or https",
            ),
            (
                "endpoint",
                json!({ "url": "https://u:p@x.example/" }),
                "credentials",
            ),
            ("endpoint", json!({ "url": "/relative" }), "http or https"),
            (
                "endpoint",
                json!({ "url": "https://x.example/", "method": "TRACE" }),
                "not one of",
            ),
            ("timeout_secs", json!(0), "above 0"),
            ("timeout_secs", json!(31), "at most 30"),
            (
                "secret_header",
                json!({ "name": "Content-Type", "value": "x" }),
                "sets itself",
            ),
            (
                "secret_header",
                json!({ "name": "X Key", "value": "x" }),
                "not a header name",
            ),
            (
                "secret_header",
                json!({ "name": "X-Key", "value": "a\nb" }),
                "visible ASCII",
            ),
            (
                "secret_header",
                json!({ "name": "X-Key" }),
                "value is required",
            ),
        ] {
            let (named, message) = with(field, value);
            assert_eq!(named, field, "{message}");
            assert!(message.contains(says), "{field}: {message}");
        }
        let mut body = http();
        body.as_object_mut().unwrap().remove("parameters");
        assert_eq!(field_of(body).0, "parameters");
    }

    #[test]
    fn an_mcp_server_needs_a_url_and_may_have_a_bearer() {
        let d = check(json!({ "name": "docs", "kind": "mcp", "url": "http://127.0.0.2:9/mcp", "bearer": "tok" }))
            .unwrap();
        assert_eq!(d.description, "");
        assert!(matches!(
            d.kind,
            ToolKind::Mcp(McpServer { listing: None, .. })
        ));
        assert_eq!(d.secret.unwrap().expose(), "tok");
        let (field, _) = field_of(json!({ "name": "docs", "kind": "mcp" }));
        assert_eq!(field, "url");
        let (field, _) = field_of(
            json!({ "name": "docs", "kind": "mcp", "url": "https://x.example/", "bearer": "" }),
        );
        assert_eq!(field, "bearer");
    }
    /// The documented pattern is the server's rule: what it matches parses (as what a
    /// fuzzer drew from it did not, before: `http://0000…` is no host), and what it
    /// refuses is refused with the pattern's words.
    #[test]
    fn the_url_pattern_is_the_rule() {
        for good in [
            "http://localhost",
            "https://a-b.example.com:443/p?q=1#f",
            "HTTP://x.example/%zz@~",
            "http://10.0.0.1:65535",
            "http://[::1]:8080/",
            "http://[2001:db8::8a2e:370:7334]",
            "http://[1:2:3:4:5:6:7::]",
            "http://1.example?x",
        ] {
            assert!(URL_SHAPE.is_match(good), "{good}");
            assert!(check_url("url", good).is_ok(), "{good}");
        }
        for bad in [
            "http://0000000000",
            "http://1.2.3.4.5",
            "http://a.5",
            "http://xn--a.example",
            "http://256.1.1.1",
            "http://a:65536",
            "http://[:::1]",
            "http://[1:2:3:4:5:6:7:8:9]",
            "http://u@a.example",
            "http://a.example/ b",
            "https://",
            "ftp://a.example",
        ] {
            assert!(!URL_SHAPE.is_match(bad), "{bad}");
            assert!(check_url("url", bad).is_err(), "{bad}");
        }
    }
}
