//! Where a guest's request may go: deny by default. The operator's `[egress] allow` lists
//! hosts every account may reach, `[egress.plans.<tier>] allow` those of a plan's accounts,
//! and an account's own entries (`wasmind accounts allow-host`) those of one account;
//! each entry names a host (`api.example.com`, or `*.example.com` for its subdomains), the
//! ports (the scheme's own when none) and the schemes (`https` when none). A request whose
//! scheme, host and port no entry allows is refused before anything is resolved or sent.

use serde::{Deserialize, Serialize};
use url::{Host, Url};

use crate::accounts::Plan;

/// One allowlist entry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Allow {
    /// A host name, an IP address, or `*.` and a domain (any of its subdomains).
    pub host: String,
    /// The ports allowed; none: the scheme's default port (443 for https, 80 for http).
    #[serde(default)]
    pub ports: Vec<u16>,
    /// The schemes allowed: `https` (the default) and/or `http`.
    #[serde(default = "https_only")]
    pub schemes: Vec<String>,
}

fn https_only() -> Vec<String> {
    vec!["https".into()]
}

/// The hosts one plan's accounts may reach beyond everyone's.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PlanAllow {
    pub allow: Vec<Allow>,
}

/// `[egress.plans]`: each tier's own allowlist.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PlansAllow {
    pub free: PlanAllow,
    pub liftoff: PlanAllow,
    pub lightyear: PlanAllow,
}

impl PlansAllow {
    fn of(&self, plan: Plan) -> &[Allow] {
        match plan {
            Plan::Free => &self.free.allow,
            Plan::Liftoff => &self.liftoff.allow,
            Plan::Lightyear => &self.lightyear.allow,
        }
    }
}

impl Allow {
    /// Checks the entry: a host, known schemes.
    pub fn check(&self) -> Result<(), String> {
        let host = self.host.strip_prefix("*.").unwrap_or(&self.host);
        if host.is_empty() || host.contains(['/', ':', '@']) && !host.starts_with('[') {
            return Err(format!("[egress] allow: {:?} is not a host", self.host));
        }
        match self
            .schemes
            .iter()
            .find(|s| !["http", "https"].contains(&s.as_str()))
        {
            Some(s) => Err(format!("[egress] allow: scheme {s:?} is not http or https")),
            None => Ok(()),
        }
    }

    /// Whether the entry allows `url`.
    fn allows(&self, url: &Url) -> bool {
        let (Some(host), Some(port)) = (url.host(), url.port_or_known_default()) else {
            return false;
        };
        let scheme_ok = self.schemes.iter().any(|s| s == url.scheme());
        let port_ok = match self.ports.as_slice() {
            [] => url.port().is_none() || url.port() == default_port(url.scheme()),
            ports => ports.contains(&port),
        };
        scheme_ok && port_ok && self.host_matches(&host)
    }

    fn host_matches(&self, host: &Host<&str>) -> bool {
        let name = match host {
            Host::Domain(d) => d.to_ascii_lowercase(),
            Host::Ipv4(ip) => ip.to_string(),
            Host::Ipv6(ip) => format!("[{ip}]"),
        };
        let pattern = self.host.to_ascii_lowercase();
        match pattern.strip_prefix("*.") {
            Some(domain) => name
                .strip_suffix(domain)
                .is_some_and(|sub| sub.ends_with('.')),
            None => name == pattern || normalized(&pattern).is_some_and(|p| p == name),
        }
    }
}

/// The port a scheme uses when a URL names none.
fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// A pattern's host as a URL parser spells it (an IP address in any spelling).
fn normalized(pattern: &str) -> Option<String> {
    let url = Url::parse(&format!("http://{pattern}/")).ok()?;
    url.host_str().map(str::to_string)
}

/// Which rule refused a request (what the agent's log names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// No allowlist entry names the scheme, host and port.
    Allowlist,
    /// The host resolved only to refused addresses (`[egress] allow_ranges`).
    Address,
    /// The plan's requests or bytes, per run or per month, are spent.
    Budget,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Allowlist => "allowlist",
            Rule::Address => "address",
            Rule::Budget => "budget",
        }
    }
}

/// Which list an entry is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `[egress] allow`: every account's.
    Everyone,
    /// `[egress.plans.<tier>] allow`: the account's plan's.
    Plan,
    /// The account's own (`wasmind accounts allow-host`).
    Account,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Everyone => "everyone",
            Source::Plan => "plan",
            Source::Account => "account",
        }
    }
}

/// The entries that apply to an account on `plan` with entries of its own `own`, each
/// with the list it is on: everyone's, its plan's, then its own.
pub fn effective<'a>(
    everyone: &'a [Allow],
    plans: &'a PlansAllow,
    plan: Plan,
    own: &'a [Allow],
) -> impl Iterator<Item = (Source, &'a Allow)> {
    let tagged = |source, list: &'a [Allow]| list.iter().map(move |a| (source, a));
    tagged(Source::Everyone, everyone)
        .chain(tagged(Source::Plan, plans.of(plan)))
        .chain(tagged(Source::Account, own))
}

/// Whether the account on `plan` with entries of its own `own` may send to `url`.
pub fn allowed(
    everyone: &[Allow],
    plans: &PlansAllow,
    plan: Plan,
    own: &[Allow],
    url: &Url,
) -> bool {
    effective(everyone, plans, plan, own).any(|(_, a)| a.allows(url))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow(host: &str, ports: &[u16], schemes: &[&str]) -> Allow {
        Allow {
            host: host.into(),
            ports: ports.to_vec(),
            schemes: schemes.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn allows(rule: &Allow, url: &str) -> bool {
        rule.allows(&Url::parse(url).unwrap())
    }

    #[test]
    fn an_entry_allows_its_host_scheme_and_ports_only() {
        let api = allow("api.example.com", &[], &["https"]);
        assert!(allows(&api, "https://api.example.com/v1"));
        assert!(allows(&api, "https://API.example.com:443/"));
        assert!(!allows(&api, "http://api.example.com/"), "https only");
        assert!(
            !allows(&api, "https://api.example.com:8443/"),
            "the default port only"
        );
        assert!(!allows(&api, "https://api.example.com.evil.net/"));
        assert!(!allows(&api, "https://example.com/"));
        let sub = allow("*.example.com", &[8443], &["https"]);
        assert!(allows(&sub, "https://a.b.example.com:8443/"));
        assert!(
            !allows(&sub, "https://example.com:8443/"),
            "subdomains only"
        );
        assert!(!allows(&sub, "https://badexample.com:8443/"));
        let loopback = allow("127.0.0.2", &[9000], &["http"]);
        assert!(allows(&loopback, "http://127.0.0.2:9000/"));
        // The URL parser's spellings of 127.0.0.2 are that address, not another host.
        assert!(allows(&loopback, "http://2130706434:9000/"));
        assert!(!allows(&loopback, "http://127.0.0.1:9000/"));
    }

    #[test]
    fn entries_are_checked() {
        assert!(allow("api.example.com", &[], &["https"]).check().is_ok());
        assert!(allow("*.example.com", &[], &["http"]).check().is_ok());
        assert!(allow("[::1]", &[], &["http"]).check().is_ok());
        assert!(allow("", &[], &["https"]).check().is_err());
        assert!(allow("a.com/path", &[], &["https"]).check().is_err());
        assert!(allow("a.com", &[], &["ftp"]).check().is_err());
    }

    #[test]
    fn a_plans_and_an_accounts_entries_add_to_everyones() {
        let everyone = [allow("api.example.com", &[], &["https"])];
        let plans = PlansAllow {
            lightyear: PlanAllow {
                allow: vec![allow("big.example.com", &[], &["https"])],
            },
            ..PlansAllow::default()
        };
        let big = Url::parse("https://big.example.com/").unwrap();
        assert!(allowed(&everyone, &plans, Plan::Lightyear, &[], &big));
        assert!(!allowed(&everyone, &plans, Plan::Free, &[], &big));
        let api = Url::parse("https://api.example.com/").unwrap();
        assert!(allowed(&everyone, &plans, Plan::Free, &[], &api));
        let own = [allow("big.example.com", &[], &["https"])];
        assert!(allowed(&everyone, &plans, Plan::Free, &own, &big));
    }
}
