//! The cap on connections open at once from one client address, beside the global one, so
//! that one address cannot hold every place (`max_connections`) and lock the others out.
//!
//! Past its cap, a new connection from that address is answered at once — 429
//! `connection_limit_reached`, `Retry-After: 1`, `connection: close` — and closed, before
//! its request is read. It does not wait: the global cap's waiting happens in the kernel's
//! listen backlog, which is one queue for all addresses (waiters of one address would hold
//! up everyone's), and a queue of our own would hold a descriptor and a place per waiter,
//! which is what the cap bounds. The answer is written without waiting for the client
//! (one small write into a fresh socket's empty buffer), so a flood of refused connections
//! costs the door a few system calls each and holds nothing.

use std::{
    io::ErrorKind,
    net::{IpAddr, Ipv4Addr, Shutdown},
};

use serde_json::json;
use tokio::net::TcpStream;

/// A client as the cap counts it: an IPv4 address, or an IPv6 address's /64 prefix — one
/// host is usually given a whole /64, so counting its addresses apart would give it 2^64
/// caps. An IPv4-mapped IPv6 address (a dual-stack listener's IPv4 client) is its IPv4
/// address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Client {
    V4(Ipv4Addr),
    V6Prefix(u64),
}

impl From<IpAddr> for Client {
    fn from(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Self::V4(v4),
            IpAddr::V6(v6) => Self::V6Prefix((v6.to_bits() >> 64) as u64),
        }
    }
}

/// Most request bytes read (and dropped) before answering: what has already arrived, so
/// that closing with it unread does not reset the connection under the answer.
const DRAINED: usize = 64 * 1024;

/// The answer to a connection past its address's cap of `max`.
pub(super) fn refusal(max: u32) -> Vec<u8> {
    let body = json!({ "error": {
        "code": "connection_limit_reached",
        "message": format!(
            "this address has {max} connections open, the most the server takes from one \
             address; reuse kept-alive connections, or close some and retry"
        ),
        "details": { "maxConnectionsPerAddress": max },
    }})
    .to_string();
    format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Answers `stream` with `answer` and closes it, waiting for nothing: what the client sent
/// so far is read first, the answer is one write, then the write side is shut.
pub(super) fn refuse(stream: TcpStream, answer: &[u8]) {
    let mut buf = [0u8; 4096];
    let mut drained = 0;
    while drained < DRAINED {
        match stream.try_read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
    match stream.try_write(answer) {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Err(e) => {
            tracing::debug!(error = %e, "answering a connection past its address's cap failed");
            return;
        }
    }
    if let Ok(stream) = stream.into_std() {
        let _ = stream.shutdown(Shutdown::Write);
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv6Addr;

    use super::*;

    #[test]
    fn ipv4_counts_per_address_and_ipv6_per_64() {
        let ip = |s: &str| Client::from(s.parse::<IpAddr>().unwrap());
        assert_ne!(ip("127.0.0.1"), ip("127.0.0.2"));
        assert_eq!(ip("::ffff:10.0.0.7"), ip("10.0.0.7"));
        assert_eq!(ip("2001:db8:1:2::1"), ip("2001:db8:1:2:ffff::9"));
        assert_ne!(ip("2001:db8:1:2::1"), ip("2001:db8:1:3::1"));
        assert_eq!(
            Client::from(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            Client::V6Prefix(0)
        );
    }

    #[test]
    fn the_refusal_is_a_whole_http_answer_with_the_error_envelope() {
        let answer = String::from_utf8(refusal(20)).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 429 "), "{head}");
        assert!(head.contains("retry-after: 1\r\n"), "{head}");
        assert!(head.contains(&format!("content-length: {}\r\n", body.len())));
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["error"]["code"], "connection_limit_reached");
        assert_eq!(body["error"]["details"]["maxConnectionsPerAddress"], 20);
    }
}
