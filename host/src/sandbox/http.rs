//! The gate for guest HTTP (`wasi:http/outgoing-handler`).
//!
//! `WasiHttpHooks::send_request` is the only path by which a guest's request leaves the
//! host, so the default hooks refuse every request with the standard
//! `HTTP-request-denied` error code. Nothing else in the linker can open a connection:
//! `wasi:sockets` is denied by the WASI context (no address passes its check, no name
//! lookup).

use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

/// HTTP hooks that deny every outgoing request.
#[derive(Debug, Default)]
pub struct DenyAllHttp {
    /// Requests refused during the call, as `METHOD uri`, for the call's report.
    pub refused: Vec<String>,
}

type Response = wasmtime_wasi_http::Result<(
    http::Response<WasiBody>,
    Box<dyn Future<Output = Result<(), Error>> + Send>,
)>;

impl WasiHttpHooks for DenyAllHttp {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Box<dyn Future<Output = Response> + Send> {
        let what = format!("{} {}", request.method(), request.uri());
        tracing::info!(target: "toolhost::audit", request = %what, decision = "denied", reason = "no network grant");
        self.refused.push(what);
        Box::new(async { Err(Error::HttpRequestDenied) })
    }
}
