//! One request through `wasi:http/outgoing-handler`. The host checks every request against
//! the operator's network grants and refuses the rest with `HTTP-request-denied`.

use std::io::Write;

use wasi::http::outgoing_handler;
use wasi::http::types::{
    ErrorCode, Fields, HeaderError, IncomingResponse, Method as WasiMethod, OutgoingBody,
    OutgoingRequest, Scheme, http_error_code,
};
use wasi::io::streams::StreamError;

use crate::Method;
use crate::request::{Error, Hop};

/// Bytes asked of the body stream at a time.
const CHUNK: usize = 64 << 10;

/// A response whose status and headers have arrived; the body is still unread.
pub struct Received {
    pub status: u16,
    /// Name (lower case) and value of each header, in order.
    pub headers: Vec<(String, String)>,
    url: String,
    response: IncomingResponse,
}

impl Received {
    /// The first `location` header, if any.
    pub fn location(&self) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("location"))
            .map(|(_, v)| v.as_str())
    }

    /// Reads the body, keeping at most `limit` bytes; true if there was more.
    pub fn read_body(self, limit: u32) -> Result<(Vec<u8>, bool), Error> {
        let url = self.url;
        let other = |what: &str| Error::Other(format!("cannot read the body of `{url}`: {what}"));
        let body = self
            .response
            .consume()
            .map_err(|()| other("it was already taken"))?;
        let stream = body
            .stream()
            .map_err(|()| other("its stream was already taken"))?;
        let cap = usize::try_from(limit).unwrap_or(usize::MAX);
        let mut bytes = Vec::new();
        let mut truncated = false;
        loop {
            // One byte past the limit tells a body that fits from one that does not.
            let want = (cap - bytes.len()).saturating_add(1).min(CHUNK);
            match stream.blocking_read(want as u64) {
                Ok(chunk) => bytes.extend_from_slice(&chunk),
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => {
                    return Err(match http_error_code(&e) {
                        Some(code) => classify(&code, &url),
                        None => Error::Connection(format!(
                            "reading the body of `{url}` failed: {}",
                            e.to_debug_string()
                        )),
                    });
                }
            }
            if bytes.len() > cap {
                bytes.truncate(cap);
                truncated = true;
                break;
            }
        }
        // A child resource must go before its parent.
        drop(stream);
        drop(body);
        drop(self.response);
        Ok((bytes, truncated))
    }
}

/// Sends `hop` and waits for the status and headers of the response.
pub fn send(hop: &Hop) -> Result<Received, Error> {
    let url = hop.url.as_str();
    let fields = Fields::new();
    for (name, value) in &hop.headers {
        fields
            .append(name, value.as_bytes())
            .map_err(|e| header_error(name, &e))?;
    }
    let request = OutgoingRequest::new(fields);
    let refused = |what: &str| {
        Error::InvalidRequest(format!("the host does not accept the {what} of `{url}`"))
    };
    request
        .set_method(&wasi_method(hop.method))
        .map_err(|()| refused("method"))?;
    let scheme = if hop.is_https() {
        Scheme::Https
    } else {
        Scheme::Http
    };
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| refused("scheme"))?;
    request
        .set_authority(Some(hop.authority()))
        .map_err(|()| refused("host and port"))?;
    request
        .set_path_with_query(Some(hop.path_with_query()))
        .map_err(|()| refused("path and query"))?;
    let body = request
        .body()
        .map_err(|()| Error::Other(format!("cannot open the request body for `{url}`")))?;

    let future = outgoing_handler::handle(request, None).map_err(|c| classify(&c, url))?;
    // Written after `handle`, so the host streams it out while it is written. A host that
    // refuses the request closes the body: its error code, from the response, says more
    // than the failed write.
    let sent = write_body(body, hop.body.as_deref());

    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(classify(&code, url)),
        Some(Err(())) | None => {
            return Err(Error::Other(format!(
                "the response to `{url}` could not be retrieved"
            )));
        }
    };
    drop(future);
    sent.map_err(|e| Error::Connection(format!("sending the body to `{url}` failed: {e}")))?;

    let headers = response.headers();
    let entries = headers
        .entries()
        .into_iter()
        .map(|(n, v)| {
            (
                n.to_ascii_lowercase(),
                String::from_utf8_lossy(&v).into_owned(),
            )
        })
        .collect();
    drop(headers);
    Ok(Received {
        status: response.status(),
        headers: entries,
        url: url.to_owned(),
        response,
    })
}

fn write_body(body: OutgoingBody, bytes: Option<&[u8]>) -> Result<(), String> {
    if let Some(bytes) = bytes {
        let mut stream = body
            .write()
            .map_err(|()| "the body stream was already taken")?;
        stream
            .write_all(bytes)
            .and_then(|()| Write::flush(&mut stream))
            .map_err(|e| e.to_string())?;
    }
    OutgoingBody::finish(body, None).map_err(|code| format!("{code:?}"))
}

fn wasi_method(m: Method) -> WasiMethod {
    match m {
        Method::Get => WasiMethod::Get,
        Method::Post => WasiMethod::Post,
        Method::Put => WasiMethod::Put,
        Method::Patch => WasiMethod::Patch,
        Method::Delete => WasiMethod::Delete,
        Method::Head => WasiMethod::Head,
    }
}

fn header_error(name: &str, e: &HeaderError) -> Error {
    Error::InvalidRequest(match e {
        HeaderError::Forbidden => format!("the host does not allow setting the header `{name}`"),
        HeaderError::InvalidSyntax => format!("the header `{name}` is not valid"),
        HeaderError::Immutable => format!("the header `{name}` cannot be set"),
    })
}

/// Turns a wasi-http error code for a request to `url` into an `Error`.
pub fn classify(code: &ErrorCode, url: &str) -> Error {
    use ErrorCode as C;
    match code {
        C::HttpRequestDenied => Error::Denied(format!(
            "the request to `{url}` was denied: the operator's network policy does not grant \
             access to it"
        )),
        C::DnsTimeout
        | C::DnsError(_)
        | C::DestinationNotFound
        | C::DestinationUnavailable
        | C::DestinationIpProhibited
        | C::DestinationIpUnroutable
        | C::ConnectionRefused
        | C::ConnectionTerminated
        | C::ConnectionTimeout
        | C::ConnectionReadTimeout
        | C::ConnectionWriteTimeout
        | C::ConnectionLimitReached
        | C::TlsProtocolError
        | C::TlsCertificateError
        | C::TlsAlertReceived(_)
        | C::HttpResponseTimeout => Error::Connection(format!("could not reach `{url}`: {code:?}")),
        C::HttpRequestMethodInvalid
        | C::HttpRequestUriInvalid
        | C::HttpRequestUriTooLong
        | C::HttpRequestHeaderSectionSize(_)
        | C::HttpRequestHeaderSize(_)
        | C::HttpRequestBodySize(_)
        | C::HttpRequestLengthRequired => {
            Error::InvalidRequest(format!("the request to `{url}` was rejected: {code:?}"))
        }
        _ => Error::Other(format!("the request to `{url}` failed: {code:?}")),
    }
}
