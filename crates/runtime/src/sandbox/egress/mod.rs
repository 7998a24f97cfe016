//! The gate for guest HTTP (`wasi:http/outgoing-handler`).
//!
//! [`EgressHooks::send_request`] is the only path by which a guest's request leaves the
//! host (`wasi:sockets` is gated separately, see `net`). Each request goes through:
//!
//! 1. **Origin**: its scheme, host and port (defaulting by scheme) must match a granted
//!    [`Origin`]. Otherwise it is refused with `HTTP-request-denied`, and its host is not
//!    even looked up (a lookup of an attacker's name would leak data by itself).
//! 2. **Resolution on the host**: a name is resolved here, never by the guest; an IP literal
//!    is taken as written.
//! 3. **Special ranges**: every resolved address is checked with
//!    [`special_range`](crate::grants::addr::special_range). Loopback, private, link-local,
//!    metadata and the like are reachable only through an origin that names the address
//!    literally (`http://127.0.0.1:8080`), so a granted *name* that resolves to one is
//!    refused (`http://localhost:8080` does not reach 127.0.0.1).
//! 4. **Pinned connection**: the TCP connection goes to the checked address itself, never
//!    to the name, which could resolve differently a second time (DNS rebinding). `https`
//!    is TLS (rustls, Mozilla's roots) with the request's host as SNI; plain `http` only
//!    reaches origins that say `http`, since matching includes the scheme.
//! 5. **Bounded response**: the body fails with `HTTP-response-body-size` past
//!    `Limits::max_http_response_bytes`; connect, first-byte and between-bytes timeouts
//!    come from the guest's `request-options` or default to 30 s, and the call's own
//!    deadline cuts off everything sooner.
//!
//! Redirects are never followed here: hyper hands a 3xx response to the guest as it is, so
//! a guest that follows one sends a new request, and each hop is checked from step 1.
//!
//! Every request records exactly one [`AuditEvent::Http`]: allowed with the address it
//! connected to, or denied with the reason. A request with a scheme other than `http` or
//! `https`, refused by wasmtime-wasi-http before it reaches the gate, and a header the
//! guest may not set (`host`, `connection`, …) are recorded as denied `Http` events too.
//! Header values are never recorded or logged: they may hold credentials.
//!
//! - `decide`: the decision as pure functions (tested without I/O).
//! - `connect`: lookup, TCP, TLS and the HTTP/1.1 handshake, on the egress runtime.
//! - `body`: the guarded response body, and the request body kept open for the guest.
//! - `held`: what building requests makes the host hold, counted against the call's
//!   host-memory budget.

mod body;
mod connect;
mod decide;
mod held;

pub(crate) use self::held::add_to_linker;

use std::net::SocketAddr;

use http_body_util::BodyExt;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use self::body::{GuardedBody, KeptBody};
use self::connect::{Task, Timeouts};
use self::decide::{DenyReason, Target};
use super::audit::{AuditEvent, AuditLog, Decision};
use crate::grants::Origin;

/// HTTP hooks of one call: requests are checked against `origins`.
pub(crate) struct EgressHooks {
    pub(crate) origins: Vec<Origin>,
    pub(crate) audit: AuditLog,
    pub(crate) max_response_bytes: usize,
}

/// What the hook's future resolves to: the response, and the connection's I/O to drive.
type Sent = (
    http::Response<WasiBody>,
    Box<dyn Future<Output = Result<(), Error>> + Send>,
);

impl WasiHttpHooks for EgressHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        // Would carry errors of the guest's handling of the response; the gate needs none.
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Box<dyn Future<Output = wasmtime_wasi_http::Result<Sent>> + Send> {
        // Fail closed: with the audit budget spent, nothing more leaves (the call is
        // ending with `audit_limit`).
        if self.audit.is_spent() {
            return Box::new(async { Err(Error::HttpRequestDenied) });
        }
        let record = Record {
            audit: self.audit.clone(),
            method: request.method().to_string(),
            url: audit_url(request.uri()),
        };
        let target = match Target::from_uri(request.uri()) {
            Ok(t) => t,
            Err(why) => {
                record.denied(None, &why);
                return Box::new(async { Err(Error::HttpRequestUriInvalid) });
            }
        };
        // Checked before anything is spawned, so an unlisted host costs no lookup.
        let granted: Vec<Origin> = match decide::granted(&self.origins, &target) {
            Ok(g) => g.into_iter().cloned().collect(),
            Err(why) => {
                record.denied(None, &why);
                return Box::new(async { Err(Error::HttpRequestDenied) });
            }
        };
        let limit = self.max_response_bytes;
        Box::new(Task::spawn(send(
            request,
            target,
            granted,
            Timeouts::new(options),
            record,
            limit,
        )))
    }

    /// Called by wasmtime-wasi-http when the guest sends a request, before the gate.
    fn is_supported_scheme(&mut self, scheme: &http::uri::Scheme) -> bool {
        let ok = *scheme == http::uri::Scheme::HTTP || *scheme == http::uri::Scheme::HTTPS;
        if !ok {
            self.audit.record(AuditEvent::Http {
                method: String::new(),
                url: format!("{scheme}:"),
                resolved: None,
                decision: Decision::Denied,
                reason: Some(format!("the scheme `{scheme}` is not http or https")),
            });
        }
        ok
    }

    /// Smaller chunks than wasmtime-wasi-http's 1 MiB, so a body nobody sends holds
    /// little (see `held`).
    fn p2_outgoing_body_chunk_size(&mut self) -> usize {
        held::OUTGOING_BODY_CHUNK
    }

    fn p2_outgoing_body_buffer_chunks(&mut self) -> usize {
        held::OUTGOING_BODY_CHUNKS
    }
}

/// Resolves, checks, connects and sends one request whose origin is granted.
async fn send(
    mut request: http::Request<WasiBody>,
    target: Target,
    granted: Vec<Origin>,
    timeouts: Timeouts,
    record: Record,
    limit: usize,
) -> Result<Sent, Error> {
    let resolved = match target.ip() {
        Some(ip) => vec![ip],
        None => match connect::resolve(&target.host, target.port, timeouts.connect).await {
            Ok(found) => found,
            Err(e) => {
                record.unresolved(&e.to_string());
                return Err(e);
            }
        },
    };
    // `granted` holds only the origins the target matched, so this repeats step 1
    // trivially and adds the address check.
    let addr = match decide::decide(&granted, &target, &resolved) {
        Ok(addr) => addr,
        Err(why @ DenyReason::NoAddress { .. }) => {
            record.unresolved(&why.to_string());
            return Err(Error::DnsError {
                rcode: Some(why.to_string()),
                info_code: None,
            });
        }
        Err(why) => {
            let refused = match &why {
                DenyReason::SpecialRange { ip, .. } => Some(SocketAddr::new(*ip, target.port)),
                _ => None,
            };
            record.denied(refused, &why);
            return Err(Error::HttpRequestDenied);
        }
    };
    record.allowed(addr);

    let (mut sender, conn) = connect::open(addr, &target, timeouts.connect).await?;
    let conn = Task::spawn(async move { conn.await.map_err(Error::Hyper) });
    // The request line carries only the path: scheme and authority are for proxies.
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str());
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(path)
        .build()
        .map_err(|_| Error::HttpRequestUriInvalid)?;
    let (parts, body) = request.into_parts();
    let (body, kept) = KeptBody::new(body);
    let request = http::Request::from_parts(parts, body.boxed_unsync());
    let response = tokio::time::timeout(timeouts.first_byte, sender.send_request(request))
        .await
        .map_err(|_| Error::ConnectionReadTimeout)?
        .map_err(Error::Hyper)?;
    let described = format!("{} {}", record.method, record.url);
    let response = response.map(|incoming| {
        GuardedBody::new(
            incoming,
            limit,
            timeouts.between_bytes,
            record.audit,
            described,
        )
        .holding(kept)
        .boxed_unsync()
    });
    Ok((response, Box::new(conn)))
}

/// The request's URL for the audit, without any `user:password@`.
fn audit_url(uri: &http::Uri) -> String {
    let text = uri.to_string();
    match uri.authority() {
        Some(a) if a.as_str().contains('@') => {
            let host = a.as_str().rsplit('@').next().unwrap_or_default();
            text.replacen(a.as_str(), host, 1)
        }
        _ => text,
    }
}

/// The one audit event of a request.
struct Record {
    audit: AuditLog,
    method: String,
    url: String,
}

impl Record {
    fn event(&self, resolved: Option<SocketAddr>, decision: Decision, reason: Option<String>) {
        self.audit.record(AuditEvent::Http {
            method: self.method.clone(),
            url: self.url.clone(),
            resolved: resolved.map(|a| a.to_string()),
            decision,
            reason,
        });
    }

    fn allowed(&self, addr: SocketAddr) {
        self.event(Some(addr), Decision::Allowed, None);
    }

    fn denied(&self, refused: Option<SocketAddr>, why: &DenyReason) {
        self.event(refused, Decision::Denied, Some(why.to_string()));
    }

    /// The grant let the request through, but its host did not resolve: not a refusal.
    fn unresolved(&self, why: &str) {
        self.event(
            None,
            Decision::Allowed,
            Some(format!("the host name did not resolve: {why}")),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_urls_drop_credentials() {
        let uri: http::Uri = "http://user:secret@example.com:8080/x?y".parse().unwrap();
        assert_eq!(audit_url(&uri), "http://example.com:8080/x?y");
        let plain: http::Uri = "https://example.com/".parse().unwrap();
        assert_eq!(audit_url(&plain), "https://example.com/");
    }
}
