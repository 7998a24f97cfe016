//! HTTP origins in grants: `scheme://host[:port]`, where host is a name, a `*.` wildcard
//! over a name's subdomains, or an IP literal (`127.0.0.1`, `[::1]`).

use std::fmt;
use std::net::IpAddr;

/// `http` or `https`. Plain `http` is reachable only through an origin that says `http`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    /// The port a URL of this scheme means when it names none.
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// The host part of an origin.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HostPattern {
    /// Exactly this name (lower case, no trailing dot).
    Name(String),
    /// Any name ending in `.SUFFIX` (not `SUFFIX` itself): `*.example.com`.
    Subdomains(String),
    /// Exactly this address. The only way to reach loopback, private, link-local or
    /// metadata addresses.
    Ip(IpAddr),
}

/// An origin a tool may send HTTP requests to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    pub scheme: Scheme,
    pub host: HostPattern,
    pub port: u16,
}

/// Why an origin string is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{origin}` is not a valid origin: {reason}")]
pub struct OriginError {
    pub origin: String,
    pub reason: String,
}

impl serde::Serialize for Origin {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme.as_str())?;
        match &self.host {
            HostPattern::Name(n) => write!(f, "{n}")?,
            HostPattern::Subdomains(s) => write!(f, "*.{s}")?,
            HostPattern::Ip(IpAddr::V4(a)) => write!(f, "{a}")?,
            HostPattern::Ip(IpAddr::V6(a)) => write!(f, "[{a}]")?,
        }
        write!(f, ":{}", self.port)
    }
}

impl std::str::FromStr for Origin {
    type Err = OriginError;

    fn from_str(text: &str) -> Result<Origin, OriginError> {
        let bad = |reason: &str| OriginError {
            origin: text.to_string(),
            reason: reason.to_string(),
        };
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| bad("expected `http://HOST[:PORT]` or `https://HOST[:PORT]`"))?;
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            _ => return Err(bad("the scheme must be `http` or `https`")),
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#']) {
            return Err(bad(
                "an origin has no path, query or fragment: grant `scheme://host[:port]`",
            ));
        }
        if rest.contains('@') {
            return Err(bad("an origin has no user or password"));
        }
        let (host, port) = split_host_port(rest).map_err(|r| bad(&r))?;
        let port = match port {
            None => scheme.default_port(),
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(bad(&format!("`{p}` is not a port number (1-65535)"))),
            },
        };
        Ok(Origin {
            scheme,
            host: parse_host(host).map_err(|r| bad(&r))?,
            port,
        })
    }
}

/// Splits `host[:port]` or `[v6][:port]`.
fn split_host_port(s: &str) -> Result<(&str, Option<&str>), String> {
    if let Some(v6) = s.strip_prefix('[') {
        let (addr, after) = v6
            .split_once(']')
            .ok_or("an IPv6 address must be closed with `]`")?;
        return match after {
            "" => Ok((addr, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((addr, Some(port))),
                None => Err(format!("unexpected `{after}` after the IPv6 address")),
            },
        };
    }
    Ok(match s.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    })
}

fn parse_host(host: &str) -> Result<HostPattern, String> {
    if host.is_empty() {
        return Err("the host is empty".into());
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(HostPattern::Ip(ip));
    }
    let lower = host.to_ascii_lowercase();
    let lower = lower.strip_suffix('.').unwrap_or(&lower);
    let (pattern, name) = match lower.strip_prefix("*.") {
        Some(suffix) => (true, suffix),
        None => (false, lower),
    };
    if name.contains('*') {
        return Err(
            "a wildcard is allowed only as the whole first label, as in `*.example.com`".into(),
        );
    }
    check_dns_name(name)?;
    if pattern && !name.contains('.') {
        return Err(format!(
            "`*.{name}` would match every name under a top-level domain; name a registered domain"
        ));
    }
    Ok(if pattern {
        HostPattern::Subdomains(name.to_string())
    } else {
        HostPattern::Name(name.to_string())
    })
}

fn check_dns_name(name: &str) -> Result<(), String> {
    if name.len() > 253 {
        return Err("the host name is longer than 253 characters".into());
    }
    for label in name.split('.') {
        let ok = !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !ok {
            return Err(format!(
                "`{label}` is not a valid host name label (letters, digits and inner `-`, 1-63 characters)"
            ));
        }
    }
    Ok(())
}

impl Origin {
    /// Whether a request to `scheme://host:port` matches this origin. `host` is the
    /// request's host as written (a name or an IP literal, IPv6 without brackets).
    pub fn matches(&self, scheme: Scheme, host: &str, port: u16) -> bool {
        if scheme != self.scheme || port != self.port {
            return false;
        }
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = host.parse::<IpAddr>() {
            return self.host == HostPattern::Ip(ip);
        }
        let lower = host.to_ascii_lowercase();
        let lower = lower.strip_suffix('.').unwrap_or(&lower);
        match &self.host {
            HostPattern::Name(n) => n == lower,
            HostPattern::Subdomains(s) => lower
                .strip_suffix(s.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            HostPattern::Ip(_) => false,
        }
    }

    /// Whether this origin names `ip` literally (the only way to reach special ranges).
    pub fn names_ip(&self, ip: IpAddr) -> bool {
        matches!(self.host, HostPattern::Ip(a) if addr::canonical(a) == addr::canonical(ip))
    }
}

use super::addr;

#[cfg(test)]
mod tests {
    use super::*;

    fn o(s: &str) -> Origin {
        s.parse().unwrap()
    }

    #[test]
    fn parses_and_prints() {
        assert_eq!(
            o("https://API.example.com").to_string(),
            "https://api.example.com:443"
        );
        assert_eq!(
            o("http://127.0.0.1:8080/").to_string(),
            "http://127.0.0.1:8080"
        );
        assert_eq!(o("https://[::1]:8443").to_string(), "https://[::1]:8443");
        assert_eq!(
            o("https://*.example.com:8443").to_string(),
            "https://*.example.com:8443"
        );
    }

    #[test]
    fn rejects_what_is_not_an_origin() {
        for bad in [
            "example.com",
            "ftp://example.com",
            "https://example.com/path",
            "https://user@example.com",
            "https://example.com:0",
            "https://example.com:99999",
            "https://*.com",
            "https://a*.example.com",
            "https://exa_mple.com",
            "https://",
            "https://[::1",
        ] {
            assert!(bad.parse::<Origin>().is_err(), "{bad}");
        }
    }

    #[test]
    fn matching_checks_scheme_host_and_port() {
        let g = o("https://*.example.com:8443");
        assert!(g.matches(Scheme::Https, "a.example.com", 8443));
        assert!(g.matches(Scheme::Https, "A.B.Example.COM.", 8443));
        assert!(!g.matches(Scheme::Https, "example.com", 8443));
        assert!(!g.matches(Scheme::Https, "badexample.com", 8443));
        assert!(!g.matches(Scheme::Http, "a.example.com", 8443));
        assert!(!g.matches(Scheme::Https, "a.example.com", 443));
        let ip = o("http://127.0.0.1:9000");
        assert!(ip.matches(Scheme::Http, "127.0.0.1", 9000));
        assert!(!ip.matches(Scheme::Http, "localhost", 9000));
        assert!(o("http://[::1]:80").matches(Scheme::Http, "[::1]", 80));
    }
}
