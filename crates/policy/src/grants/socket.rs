//! Raw `wasi:sockets` TCP grants: `IP:PORT` or `IP/PREFIX:PORT` (IPv6 in brackets).

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;

/// Addresses a tool may connect to over raw TCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketGrant {
    pub net: IpNet,
    pub port: u16,
}

/// Why a TCP grant string is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{grant}` is not a valid TCP grant: {reason}")]
pub struct SocketGrantError {
    pub grant: String,
    pub reason: String,
}

impl std::str::FromStr for SocketGrant {
    type Err = SocketGrantError;

    fn from_str(text: &str) -> Result<SocketGrant, SocketGrantError> {
        let bad = |reason: String| SocketGrantError {
            grant: text.to_string(),
            reason,
        };
        let (addr, port) = text
            .rsplit_once(':')
            .ok_or_else(|| bad("expected `IP:PORT` or `IP/PREFIX:PORT`".into()))?;
        let port = match port.parse::<u16>() {
            Ok(p) if p > 0 => p,
            _ => return Err(bad(format!("`{port}` is not a port number (1-65535)"))),
        };
        let addr = addr.trim_start_matches('[').trim_end_matches(']');
        let net = if addr.contains('/') {
            addr.parse::<IpNet>()
                .map_err(|e| bad(format!("`{addr}` is not an address range: {e}")))?
        } else {
            IpNet::from(addr.parse::<IpAddr>().map_err(|_| {
                bad(format!(
                    "`{addr}` is not an IP address (raw TCP grants name addresses, not host names)"
                ))
            })?)
        };
        Ok(SocketGrant { net, port })
    }
}

impl fmt::Display for SocketGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let single = self.net.prefix_len() == self.net.max_prefix_len();
        match (self.net, single) {
            (IpNet::V6(n), true) => write!(f, "[{}]:{}", n.addr(), self.port),
            (IpNet::V6(n), false) => write!(f, "[{n}]:{}", self.port),
            (n, true) => write!(f, "{}:{}", n.addr(), self.port),
            (n, false) => write!(f, "{n}:{}", self.port),
        }
    }
}

impl serde::Serialize for SocketGrant {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl SocketGrant {
    pub fn allows(&self, addr: SocketAddr) -> bool {
        addr.port() == self.port && self.net.contains(&super::addr::canonical(addr.ip()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_matches() {
        let g: SocketGrant = "127.0.0.1:5432".parse().unwrap();
        assert!(g.allows("127.0.0.1:5432".parse().unwrap()));
        assert!(g.allows("[::ffff:127.0.0.1]:5432".parse().unwrap()));
        assert!(!g.allows("127.0.0.1:5433".parse().unwrap()));
        let r: SocketGrant = "10.0.0.0/8:443".parse().unwrap();
        assert!(r.allows("10.9.9.9:443".parse().unwrap()));
        assert!(!r.allows("11.0.0.1:443".parse().unwrap()));
        assert_eq!(r.to_string(), "10.0.0.0/8:443");
        assert_eq!(
            "[::1]:80".parse::<SocketGrant>().unwrap().to_string(),
            "[::1]:80"
        );
        for bad in ["localhost:80", "127.0.0.1", "127.0.0.1:0", "10.0.0.0/33:1"] {
            assert!(bad.parse::<SocketGrant>().is_err(), "{bad}");
        }
    }
}
