//! The gate for guest HTTP (`wasi:http/outgoing-handler`).
//!
//! `WasiHttpHooks::send_request` is the only path by which a guest's request leaves the
//! host (`wasi:sockets` is gated separately, see `net`).

use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::audit::{AuditEvent, AuditLog, Decision};
use crate::grants::Origin;

/// HTTP hooks of one call: requests are checked against `origins`.
pub struct EgressHooks {
    pub(crate) origins: Vec<Origin>,
    pub(crate) audit: AuditLog,
    pub(crate) max_response_bytes: usize,
}

type Response = wasmtime_wasi_http::Result<(
    http::Response<WasiBody>,
    Box<dyn Future<Output = Result<(), Error>> + Send>,
)>;

impl WasiHttpHooks for EgressHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Box<dyn Future<Output = Response> + Send> {
        self.audit.record(AuditEvent::Http {
            method: request.method().to_string(),
            url: request.uri().to_string(),
            resolved: None,
            decision: Decision::Denied,
            reason: Some("no network grant".into()),
        });
        Box::new(async { Err(Error::HttpRequestDenied) })
    }
}
