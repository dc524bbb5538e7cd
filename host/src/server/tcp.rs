//! The options of each accepted socket, so the kernel finds a client that vanished (powered
//! off, unplugged, a NAT entry dropped) instead of keeping its connection for good:
//!
//! - **Keepalive**: after `tcp_keepalive_secs` of silence, probes every quarter of that,
//!   four unanswered ones ending the connection — a silent connection to a vanished peer
//!   ends about twice `tcp_keepalive_secs` after its last word.
//! - **`TCP_USER_TIMEOUT`**: sent data unacknowledged for `tcp_user_timeout_secs` ends the
//!   connection (the kernel's own retries would otherwise take ~15 minutes), and so does a
//!   receive window held shut that long (Linux counts zero-window probes against it too).
//!
//! What the server does with a live client that reads nothing is `write_idle_timeout_secs`
//! (`super::write_idle`); these are the kernel's view of the peer.

use std::{io, os::fd::AsFd, time::Duration};

use rustix::net::sockopt;

/// Keepalive probes before the peer is taken for gone.
const PROBES: u32 = 4;

/// What each accepted socket is set to.
#[derive(Debug, Clone, Copy)]
pub(super) struct TcpOptions {
    pub(super) keepalive: Duration,
    pub(super) user_timeout: Duration,
}

impl TcpOptions {
    /// Sets keepalive and `TCP_USER_TIMEOUT` on `socket`.
    pub(super) fn apply(&self, socket: impl AsFd) -> io::Result<()> {
        let fd = socket.as_fd();
        sockopt::set_socket_keepalive(fd, true)?;
        sockopt::set_tcp_keepidle(fd, self.keepalive)?;
        sockopt::set_tcp_keepintvl(fd, self.keepalive / PROBES)?;
        sockopt::set_tcp_keepcnt(fd, PROBES)?;
        let ms = u32::try_from(self.user_timeout.as_millis()).unwrap_or(u32::MAX);
        sockopt::set_tcp_user_timeout(fd, ms.max(1))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};

    use super::*;

    #[test]
    fn an_accepted_socket_gets_keepalive_and_the_user_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        let options = TcpOptions {
            keepalive: Duration::from_secs(40),
            user_timeout: Duration::from_millis(2_500),
        };
        options.apply(&accepted).unwrap();
        let fd = accepted.as_fd();
        assert!(sockopt::socket_keepalive(fd).unwrap());
        assert_eq!(sockopt::tcp_keepidle(fd).unwrap(), Duration::from_secs(40));
        assert_eq!(sockopt::tcp_keepintvl(fd).unwrap(), Duration::from_secs(10));
        assert_eq!(sockopt::tcp_keepcnt(fd).unwrap(), PROBES);
        assert_eq!(sockopt::tcp_user_timeout(fd).unwrap(), 2_500);
    }
}
