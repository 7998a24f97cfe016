//! The egress decision, without I/O: which granted origins a request matches, and whether
//! the addresses its host resolved to may be reached.
//!
//! The two steps are separate because the host name of a request that matches no origin
//! must not even be looked up: a lookup of an attacker's name is itself a way to leak data.

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use crate::grants::{Origin, Scheme, addr};

/// Where a request goes, from its URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub scheme: Scheme,
    /// The host as the request wrote it (an IPv6 literal without brackets).
    pub host: String,
    /// The request's port, or the scheme's default.
    pub port: u16,
}

impl Target {
    /// The target of `uri`, which must be absolute `http` or `https` with a host.
    pub(crate) fn from_uri(uri: &http::Uri) -> Result<Target, DenyReason> {
        let bad = || DenyReason::NotHttp {
            url: uri.to_string(),
        };
        let scheme = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("http") => Scheme::Http,
            Some(s) if s.eq_ignore_ascii_case("https") => Scheme::Https,
            _ => return Err(bad()),
        };
        if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
            return Err(DenyReason::Credentials);
        }
        let host = uri
            .host()
            .map(|h| h.trim_start_matches('[').trim_end_matches(']'))
            .filter(|h| !h.is_empty())
            .ok_or_else(bad)?;
        Ok(Target {
            scheme,
            host: host.to_string(),
            port: uri.port_u16().unwrap_or(scheme.default_port()),
        })
    }

    /// The host as an address, if the request named one literally.
    pub fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = self.scheme.as_str();
        match self.ip() {
            Some(IpAddr::V6(a)) => write!(f, "{scheme}://[{a}]:{}", self.port),
            _ => write!(f, "{scheme}://{}:{}", self.host, self.port),
        }
    }
}

/// Why a request was refused. The message goes into the audit event, never to the guest
/// (which sees only `HTTP-request-denied`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DenyReason {
    #[error("`{url}` is not an absolute http or https URL with a host")]
    NotHttp { url: String },
    #[error("the URL carries a user name or password; credentials go in a header")]
    Credentials,
    #[error("no granted origin matches `{target}`{}", range_note(.range))]
    NoOrigin {
        target: String,
        /// The special range of an IP literal host, if it is in one.
        range: Option<&'static str>,
    },
    #[error(
        "`{host}` resolves to {ip}, a {range} address; only an origin naming that address \
         literally reaches it"
    )]
    SpecialRange {
        host: String,
        ip: IpAddr,
        range: &'static str,
    },
    #[error("`{host}` resolved to no address")]
    NoAddress { host: String },
}

fn range_note(range: &Option<&'static str>) -> String {
    range.map_or_else(String::new, |r| format!(" (a {r} address)"))
}

/// The origins in `origins` that `target` matches; an error if there are none.
pub(crate) fn granted<'a>(
    origins: &'a [Origin],
    target: &Target,
) -> Result<Vec<&'a Origin>, DenyReason> {
    let matching: Vec<&Origin> = origins
        .iter()
        .filter(|o| o.matches(target.scheme, &target.host, target.port))
        .collect();
    if matching.is_empty() {
        return Err(DenyReason::NoOrigin {
            target: target.to_string(),
            range: target.ip().and_then(addr::special_range),
        });
    }
    Ok(matching)
}

/// The address to connect to, given the addresses `target`'s host resolved to (in the
/// resolver's order) and the origins it matched.
///
/// Every address is checked, not just the one used: a name that resolves to a public
/// address and an internal one is refused, since which of them a later connection would
/// reach is up to whoever controls the name.
fn check_resolved(
    granted: &[&Origin],
    target: &Target,
    resolved: &[IpAddr],
) -> Result<SocketAddr, DenyReason> {
    for &ip in resolved {
        if let Some(range) = addr::special_range(ip)
            && !granted.iter().any(|o| o.names_ip(ip))
        {
            return Err(DenyReason::SpecialRange {
                host: target.host.clone(),
                ip,
                range,
            });
        }
    }
    resolved
        .first()
        .map(|&ip| SocketAddr::new(ip, target.port))
        .ok_or_else(|| DenyReason::NoAddress {
            host: target.host.clone(),
        })
}

/// The whole decision for a request to `target` whose host resolved to `resolved`.
pub(crate) fn decide(
    origins: &[Origin],
    target: &Target,
    resolved: &[IpAddr],
) -> Result<SocketAddr, DenyReason> {
    check_resolved(&granted(origins, target)?, target, resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins(list: &[&str]) -> Vec<Origin> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    fn target(url: &str) -> Target {
        Target::from_uri(&url.parse().unwrap()).unwrap()
    }

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn targets_come_from_the_uri_with_default_ports() {
        let t = target("https://API.example.com/x?y");
        assert_eq!(
            (t.scheme, t.host.as_str(), t.port),
            (Scheme::Https, "API.example.com", 443)
        );
        assert_eq!(target("http://example.com/").port, 80);
        let v6 = target("http://[::1]:8080/");
        assert_eq!(
            (v6.host.as_str(), v6.ip()),
            ("::1", Some("::1".parse().unwrap()))
        );
        assert_eq!(v6.to_string(), "http://[::1]:8080");
        let err = Target::from_uri(&"http://u:p@example.com/".parse().unwrap()).unwrap_err();
        assert_eq!(err, DenyReason::Credentials);
        for bad in ["/relative", "ftp://example.com/"] {
            let err = Target::from_uri(&bad.parse().unwrap()).unwrap_err();
            assert!(matches!(err, DenyReason::NotHttp { .. }), "{bad}: {err}");
        }
    }

    #[test]
    fn a_public_name_under_a_granted_origin_is_reached() {
        let o = origins(&["https://api.example.com"]);
        let got = decide(
            &o,
            &target("https://api.example.com/v1"),
            &ips(&["93.184.216.34"]),
        );
        assert_eq!(got, Ok("93.184.216.34:443".parse().unwrap()));
    }

    #[test]
    fn the_first_resolved_address_is_used() {
        let o = origins(&["https://api.example.com"]);
        let resolved = ips(&["2606:2800:220:1::", "93.184.216.34"]);
        let got = decide(&o, &target("https://api.example.com/"), &resolved);
        assert_eq!(got, Ok("[2606:2800:220:1::]:443".parse().unwrap()));
    }

    #[test]
    fn no_matching_origin_is_refused_whatever_the_address() {
        let o = origins(&["https://api.example.com"]);
        for url in [
            "https://evil.example.net/",
            "http://api.example.com/",
            "https://api.example.com:8443/",
        ] {
            let err = decide(&o, &target(url), &ips(&["93.184.216.34"])).unwrap_err();
            assert!(
                matches!(err, DenyReason::NoOrigin { range: None, .. }),
                "{url}: {err}"
            );
            assert!(
                err.to_string().contains("no granted origin matches"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_private_literal_without_its_own_grant_is_refused_and_named() {
        let o = origins(&["http://127.0.0.1:8080"]);
        let t = target("http://10.255.255.1/");
        let err = granted(&o, &t).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no granted origin matches `http://10.255.255.1:80` (a private address)"
        );
    }

    #[test]
    fn a_name_resolving_to_loopback_is_refused_even_when_granted() {
        let o = origins(&["http://localhost:8080", "http://127.0.0.1:9999"]);
        let err = decide(&o, &target("http://localhost:8080/"), &ips(&["127.0.0.1"])).unwrap_err();
        assert_eq!(
            err,
            DenyReason::SpecialRange {
                host: "localhost".into(),
                ip: "127.0.0.1".parse().unwrap(),
                range: "loopback"
            }
        );
        assert!(err.to_string().contains("loopback"), "{err}");
    }

    #[test]
    fn one_internal_address_among_public_ones_refuses_the_name() {
        let o = origins(&["https://*.example.com"]);
        let resolved = ips(&["93.184.216.34", "169.254.169.254"]);
        let err = decide(&o, &target("https://a.example.com/"), &resolved).unwrap_err();
        assert!(
            matches!(
                err,
                DenyReason::SpecialRange {
                    range: "cloud metadata",
                    ..
                }
            ),
            "{err}"
        );
        let mapped = ips(&["::ffff:10.0.0.1"]);
        let err = decide(&o, &target("https://a.example.com/"), &mapped).unwrap_err();
        assert!(
            matches!(
                err,
                DenyReason::SpecialRange {
                    range: "private",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn an_origin_naming_the_address_literally_reaches_it() {
        let o = origins(&["http://127.0.0.1:8080", "http://[::1]:8080"]);
        let got = decide(&o, &target("http://127.0.0.1:8080/x"), &ips(&["127.0.0.1"]));
        assert_eq!(got, Ok("127.0.0.1:8080".parse().unwrap()));
        let got = decide(&o, &target("http://[::1]:8080/"), &ips(&["::1"]));
        assert_eq!(got, Ok("[::1]:8080".parse().unwrap()));
    }

    #[test]
    fn nothing_resolved_is_no_address() {
        let o = origins(&["https://api.example.com"]);
        let err = decide(&o, &target("https://api.example.com/"), &[]).unwrap_err();
        assert!(matches!(err, DenyReason::NoAddress { .. }), "{err}");
    }
}
