//! Who may address the server: a `Host` allow-list and a same-origin rule, checked before
//! any route (both backends share the router).
//!
//! A web page cannot send a bearer token it does not know, but on a tokenless loopback
//! server it needs none: a page at `attacker.example` whose name is rebound to 127.0.0.1
//! (DNS rebinding) calls the API as "same origin", and any page may send a form `POST`.
//! So a request is served only when
//! - its `Host` is an IP address (rebinding needs a name), `localhost`, or a name the
//!   operator configured (`allowed_hosts`, for a server reached through a proxy or a DNS
//!   name), and
//! - it carries no `Origin`, or the `Origin` of a page served by this same host (the
//!   console): a foreign page's request is refused whatever it asks for.

use std::net::IpAddr;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ApiError;

/// The names the operator allows in `Host` besides IP addresses and `localhost`: each is
/// `NAME` (any port) or `NAME:PORT`, compared without case.
#[derive(Debug, Clone, Default)]
pub(crate) struct AllowedHosts(Vec<String>);

impl AllowedHosts {
    pub(crate) fn new(names: &[String]) -> AllowedHosts {
        AllowedHosts(names.iter().map(|n| n.to_ascii_lowercase()).collect())
    }

    /// Whether `authority` (a `Host` value, `NAME[:PORT]`) may be served.
    fn allows(&self, authority: &str) -> bool {
        let authority = authority.to_ascii_lowercase();
        let (host, _) = split(&authority);
        if host.parse::<IpAddr>().is_ok() || host == "localhost" {
            return true;
        }
        self.0.iter().any(|a| *a == authority || a == host)
    }
}

/// `NAME[:PORT]` or `[V6][:PORT]` → (name or address, port).
fn split(authority: &str) -> (&str, Option<&str>) {
    if let Some(rest) = authority.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((v6, tail)) => (v6, tail.strip_prefix(':')),
            None => (authority, None),
        };
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => (h, Some(p)),
        _ => (authority, None),
    }
}

/// `authority` without the port its scheme implies.
fn without_default_port<'a>(authority: &'a str, scheme: &str) -> &'a str {
    let default = if scheme == "https" { ":443" } else { ":80" };
    authority.strip_suffix(default).unwrap_or(authority)
}

/// Whether `origin` (an `Origin` value) is a page of `host` (the request's `Host`).
fn same_origin(origin: &str, host: &str) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    if !matches!(scheme, "http" | "https") {
        return false;
    }
    let origin = without_default_port(authority, scheme).to_ascii_lowercase();
    let host = host.to_ascii_lowercase();
    origin == without_default_port(&host, scheme)
}

/// The middleware: 403 for a `Host` that is not allowed or a foreign `Origin`.
pub(crate) async fn check(
    State(allowed): State<std::sync::Arc<AllowedHosts>>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| request.uri().authority().map(|a| a.to_string()));
    if let Some(host) = &host
        && !allowed.allows(host)
    {
        return refuse(format!(
            "the Host `{}` is not one this server answers to (a page whose name was rebound to this address sends it); if clients reach the server by that name, add it to `allowed_hosts` (--allowed-host)",
            host.escape_debug()
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = String::from_utf8_lossy(origin.as_bytes());
        let ours = host.as_deref().is_some_and(|h| same_origin(&origin, h));
        if !ours {
            return refuse(format!(
                "a request from the page `{}` is refused: only pages served by this server itself may call it",
                origin.escape_debug()
            ));
        }
    }
    next.run(request).await
}

fn refuse(message: String) -> Response {
    ApiError::new(StatusCode::FORBIDDEN, message).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_ip_addresses_localhost_or_configured_names() {
        let a = AllowedHosts::new(&["Toolhost.example".into(), "api.example:8443".into()]);
        for ok in [
            "127.0.0.1:8080",
            "[::1]:8080",
            "10.0.0.7",
            "localhost:1",
            "LOCALHOST",
            "toolhost.example",
            "toolhost.example:9",
            "api.example:8443",
        ] {
            assert!(a.allows(ok), "{ok}");
        }
        for refused in [
            "attacker.example:8080",
            "localhost.attacker.example",
            "api.example:8444",
            "api.example",
            "127.0.0.1.nip.io",
            "",
        ] {
            assert!(!a.allows(refused), "{refused}");
        }
    }

    #[test]
    fn an_origin_is_ours_only_with_our_host_and_port() {
        assert!(same_origin("http://127.0.0.1:8080", "127.0.0.1:8080"));
        assert!(same_origin("https://toolhost.example", "toolhost.example"));
        assert!(same_origin(
            "https://toolhost.example",
            "toolhost.example:443"
        ));
        assert!(same_origin("http://[::1]:80", "[::1]"));
        assert!(!same_origin("http://127.0.0.1:3000", "127.0.0.1:8080"));
        assert!(!same_origin("http://attacker.example", "127.0.0.1:8080"));
        assert!(!same_origin("null", "127.0.0.1:8080"));
        assert!(!same_origin("file://", "127.0.0.1:8080"));
    }
}
