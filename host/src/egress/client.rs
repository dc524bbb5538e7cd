//! Sending a request the policy allowed, to checked addresses only.
//!
//! One HTTP client for every account (its connections pooled by host, its TLS roots loaded
//! once), whose resolver is ours: a name is resolved here, every address checked
//! ([`Addresses`]), and the client connects only to the addresses that passed, so a second
//! resolution cannot rebind the name to a refused one. An IP address in the URL is checked
//! before the request is made (a client does not resolve it). Redirects are never followed
//! (the guest sees the 3xx and makes its own request, which passes the same checks), no
//! proxy from the environment is used, and nothing is retried.
//!
//! The response is read whole, within the byte cap and the timeouts: connecting, the first
//! byte (the response head), the whole exchange.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

use super::address::{Addresses, Refused};

/// A response as the journal keeps it and the guest reads it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body, base64.
    pub body: String,
}

impl Response {
    /// The body's length in bytes.
    pub fn body_len(&self) -> u64 {
        // Base64: 4 characters per 3 bytes, padded.
        let padding = self.body.bytes().rev().take_while(|&b| b == b'=').count();
        (self.body.len() / 4 * 3).saturating_sub(padding) as u64
    }
}

/// Why a request got no response.
#[derive(Debug, Clone, PartialEq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum Failure {
    /// No allowlist allows the request's scheme, host and port.
    #[error("{0}")]
    Denied(String),
    /// Every address of the host is refused.
    #[error("{0}")]
    Refused(String),
    #[error("the host name did not resolve: {0}")]
    Dns(String),
    #[error("connecting failed: {0}")]
    Connect(String),
    #[error("the connection timed out")]
    ConnectTimeout,
    #[error("no response within {0} s")]
    Timeout(f64),
    #[error("the response is over {0} bytes")]
    TooLarge(u64),
    #[error("the exchange failed: {0}")]
    Protocol(String),
}

/// The limits of one exchange.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub first_byte: Duration,
    pub total: Duration,
    pub max_response_bytes: u64,
}

/// The shared client and its address check.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    addresses: Arc<Addresses>,
}

impl Client {
    pub fn new(addresses: Addresses, connect_timeout: Duration) -> Result<Self, String> {
        let addresses = Arc::new(addresses);
        let http = reqwest::Client::builder()
            .dns_resolver(Arc::new(Checked(addresses.clone())))
            .redirect(reqwest::redirect::Policy::none())
            .retry(reqwest::retry::never())
            .no_proxy()
            .connect_timeout(connect_timeout)
            .build()
            .map_err(|e| format!("building the egress client: {e}"))?;
        Ok(Self { http, addresses })
    }

    /// The client itself (a handle on the same pool and resolver).
    pub fn http(&self) -> reqwest::Client {
        self.http.clone()
    }

    /// Resolves `url`'s host as the client would and checks its addresses: why it would
    /// be refused, before a protocol's client (whose errors hide the resolver's reason)
    /// connects. That client's own resolution is checked again all the same.
    pub async fn check_resolved(&self, url: &Url) -> Result<(), Failure> {
        self.check_literal(url)
            .map_err(|r| Failure::Refused(format!("{r}, which is refused")))?;
        let Some(Host::Domain(host)) = url.host() else {
            return Ok(());
        };
        match passed(&self.addresses, host).await {
            Ok(_) => Ok(()),
            Err(NoAddress::Refused(r)) => Err(Failure::Refused(r)),
            Err(NoAddress::Dns(d)) => Err(Failure::Dns(d)),
        }
    }

    /// Checks the address of a URL that names one, as a client would not resolve it.
    pub fn check_literal(&self, url: &Url) -> Result<(), Refused> {
        match url.host() {
            Some(Host::Ipv4(ip)) => self.addresses.check(ip.into()),
            Some(Host::Ipv6(ip)) => self.addresses.check(ip.into()),
            _ => Ok(()),
        }
    }

    /// Sends `request` and reads its response whole within `limits`.
    pub async fn send(
        &self,
        method: reqwest::Method,
        url: Url,
        headers: reqwest::header::HeaderMap,
        body: Vec<u8>,
        limits: Limits,
    ) -> Result<Response, Failure> {
        let request = self.http.request(method, url).headers(headers).body(body);
        let exchange = async {
            let head = tokio::time::timeout(limits.first_byte, request.send()).await;
            let mut response = head
                .map_err(|_| Failure::Timeout(limits.first_byte.as_secs_f64()))?
                .map_err(|e| failure(&e))?;
            let status = response.status().as_u16();
            let headers = (response.headers().iter())
                .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
                .collect();
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| failure(&e))? {
                if (body.len() + chunk.len()) as u64 > limits.max_response_bytes {
                    return Err(Failure::TooLarge(limits.max_response_bytes));
                }
                body.extend_from_slice(&chunk);
            }
            use base64::Engine as _;
            let body = base64::engine::general_purpose::STANDARD.encode(body);
            Ok(Response {
                status,
                headers,
                body,
            })
        };
        match tokio::time::timeout(limits.total, exchange).await {
            Ok(done) => done,
            Err(_) => Err(Failure::Timeout(limits.total.as_secs_f64())),
        }
    }
}

/// What a client error was, our resolver's refusal found in its causes.
fn failure(e: &reqwest::Error) -> Failure {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(refused) = s.downcast_ref::<NoAddress>() {
            return match refused {
                NoAddress::Refused(r) => Failure::Refused(r.clone()),
                NoAddress::Dns(d) => Failure::Dns(d.clone()),
            };
        }
        source = s.source();
    }
    if e.is_connect() {
        return match e.is_timeout() {
            true => Failure::ConnectTimeout,
            false => Failure::Connect(e.to_string()),
        };
    }
    Failure::Protocol(e.to_string())
}

/// The resolver: the name's addresses that pass the check, or why none does.
struct Checked(Arc<Addresses>);

#[derive(Debug, thiserror::Error)]
enum NoAddress {
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Dns(String),
}

impl Resolve for Checked {
    fn resolve(&self, name: Name) -> Resolving {
        let addresses = self.0.clone();
        Box::pin(async move {
            let passed = passed(&addresses, name.as_str()).await?;
            Ok(Box::new(passed.into_iter()) as Addrs)
        })
    }
}

/// The addresses of `host` that pass the check, or why none does.
async fn passed(addresses: &Addresses, host: &str) -> Result<Vec<SocketAddr>, NoAddress> {
    let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host, 0))
        .await
        .map_err(|e| NoAddress::Dns(format!("{host}: {e}")))?
        .collect();
    let mut refusals = Vec::new();
    let passed: Vec<SocketAddr> = (resolved.into_iter())
        .filter(|a| match addresses.check(a.ip()) {
            Ok(()) => true,
            Err(r) => {
                refusals.push(r.to_string());
                false
            }
        })
        .collect();
    if passed.is_empty() {
        return Err(match refusals.is_empty() {
            true => NoAddress::Dns(format!("{host} has no address")),
            false => NoAddress::Refused(format!(
                "{host} resolves only to refused addresses ({})",
                refusals.join(", ")
            )),
        });
    }
    Ok(passed)
}
