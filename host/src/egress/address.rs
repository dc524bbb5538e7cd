//! Which addresses a guest's request may connect to: every address that is not a public
//! unicast one is refused — loopback, RFC 1918, link-local (the cloud metadata service at
//! 169.254.169.254 among them), CGNAT, multicast, broadcast, unspecified, reserved and
//! documentation ranges, IPv6 unique-local and link-local — and so is an IPv6 address that
//! carries a refused IPv4 one (IPv4-mapped `::ffff:127.0.0.1`, IPv4-compatible, NAT64,
//! 6to4), unless the operator lists its range (`[egress] allow_ranges`).
//!
//! The check is made on addresses, never on spellings: a host is parsed as a URL parser
//! does (`2130706433`, `0177.0.0.1` and `0x7f.1` are 127.0.0.1), and a name is resolved by
//! the host, each address checked, and only checked addresses connected to
//! ([`super::client`]).

use std::{
    net::{IpAddr, Ipv4Addr},
    sync::LazyLock,
};

use ipnet::IpNet;

/// The ranges refused unless allowed, and what each is (for the refusal's message).
const REFUSED: &[(&str, &str)] = &[
    ("0.0.0.0/8", "this network"),
    ("10.0.0.0/8", "private (RFC 1918)"),
    ("100.64.0.0/10", "carrier-grade NAT"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private (RFC 1918)"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private (RFC 1918)"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    // Before 240.0.0.0/4, which holds it: the first range that holds an address names it.
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("100::/64", "discard"),
    ("2001:db8::/32", "documentation"),
    ("fc00::/7", "unique local"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
];

/// Why an address is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{address} is {kind}")]
pub struct Refused {
    pub address: IpAddr,
    pub kind: &'static str,
}

/// The address check: the refused ranges, less those the operator allows.
#[derive(Debug, Clone, Default)]
pub struct Addresses {
    allowed: Vec<IpNet>,
}

impl Addresses {
    /// Allowing `ranges` (CIDR, e.g. `127.0.0.2/32`): an error names one that is not one.
    pub fn new(ranges: &[String]) -> Result<Self, String> {
        let allowed = (ranges.iter())
            .map(|r| {
                r.parse::<IpNet>()
                    .map_err(|e| format!("[egress] allow_ranges: {r:?} is not a CIDR range ({e})"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { allowed })
    }

    /// Whether a connection to `address` may be made.
    pub fn check(&self, address: IpAddr) -> Result<(), Refused> {
        if self.allowed.iter().any(|net| net.contains(&address)) {
            return Ok(());
        }
        let address = canonical(address);
        if self.allowed.iter().any(|net| net.contains(&address)) {
            return Ok(());
        }
        match refused_kind(address) {
            Some(kind) => Err(Refused { address, kind }),
            None => Ok(()),
        }
    }
}

/// The IPv4 address an IPv6 one carries (mapped, compatible, NAT64, 6to4), else itself.
fn canonical(address: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = address else {
        return address;
    };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return IpAddr::V4(v4);
    }
    let s = v6.segments();
    let v4 = |hi: u16, lo: u16| IpAddr::V4(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo)));
    match s {
        // IPv4-compatible (deprecated), but not :: and ::1.
        [0, 0, 0, 0, 0, 0, hi, lo] if (hi, lo) > (0, 1) => v4(hi, lo),
        // NAT64 (RFC 6052's well-known prefix).
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => v4(hi, lo),
        // 6to4: the IPv4 address follows 2002::/16.
        [0x2002, hi, lo, ..] => v4(hi, lo),
        _ => address,
    }
}

/// [`REFUSED`], parsed once.
static RANGES: LazyLock<Vec<(IpNet, &'static str)>> = LazyLock::new(|| {
    (REFUSED.iter())
        .map(|(range, kind)| (range.parse().expect("a valid range"), *kind))
        .collect()
});

fn refused_kind(address: IpAddr) -> Option<&'static str> {
    (RANGES.iter()).find_map(|(net, kind)| net.contains(&address).then_some(*kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(address: &str) -> Option<&'static str> {
        let address: IpAddr = address.parse().unwrap();
        Addresses::default().check(address).err().map(|r| r.kind)
    }

    #[test]
    fn every_address_that_is_not_public_unicast_is_refused() {
        for (address, kind) in [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("::1", "loopback"),
            ("10.0.0.1", "private (RFC 1918)"),
            ("172.31.255.255", "private (RFC 1918)"),
            ("192.168.1.1", "private (RFC 1918)"),
            ("169.254.169.254", "link-local"),
            ("fe80::1", "link-local"),
            ("100.64.0.1", "carrier-grade NAT"),
            ("224.0.0.1", "multicast"),
            ("ff02::1", "multicast"),
            ("0.0.0.0", "this network"),
            ("::", "unspecified"),
            ("255.255.255.255", "broadcast"),
            ("fd00::1", "unique local"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "link-local"),
            ("::127.0.0.1", "loopback"),
            ("64:ff9b::a00:1", "private (RFC 1918)"),
            ("2002:a9fe:a9fe::", "link-local"),
        ] {
            assert_eq!(refused(address), Some(kind), "{address}");
        }
        for public in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(refused(public), None, "{public}");
        }
    }

    #[test]
    fn an_allowed_range_is_allowed_whatever_its_spelling_and_no_more() {
        let addresses = Addresses::new(&["127.0.0.2/32".into()]).unwrap();
        let check = |a: &str| addresses.check(a.parse().unwrap());
        assert!(check("127.0.0.2").is_ok());
        assert!(check("::ffff:127.0.0.2").is_ok());
        assert!(check("127.0.0.1").is_err());
        assert!(Addresses::new(&["localhost".into()]).is_err());
    }
}
