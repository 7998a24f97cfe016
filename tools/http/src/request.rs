//! Checking a WIT `request` and turning it into the first [`Hop`] to send; decoding the
//! body of a response. Pure logic, tested natively.

use std::fmt;

use url::{Position, Url};

use crate::{Method, Request};

/// Response body limit when the caller gives none.
pub const DEFAULT_MAX_BODY_BYTES: u32 = 1 << 20;
/// Largest body limit accepted: the body is held in guest memory (64 MiB by default) while
/// the host copies it out.
pub const MAX_BODY_BYTES: u32 = 16 << 20;
/// Redirects followed when the caller gives no limit.
pub const DEFAULT_MAX_REDIRECTS: u8 = 5;
/// Sent unless the caller gives a `user-agent`: some APIs refuse requests without one.
pub const USER_AGENT: &str = concat!("toolhost-http/", env!("CARGO_PKG_VERSION"));

/// Mirrors the WIT `http-error`; each message names the URL or value and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    Denied(String),
    InvalidRequest(String),
    Connection(String),
    TooManyRedirects(String),
    Other(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (Error::Denied(m)
        | Error::InvalidRequest(m)
        | Error::Connection(m)
        | Error::TooManyRedirects(m)
        | Error::Other(m)) = self;
        f.write_str(m)
    }
}

/// One request to send: the caller's, or the one a redirect leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    pub url: Url,
    pub method: Method,
    /// Name and value of each header, in order; names as the caller wrote them.
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

impl Hop {
    /// `host[:port]`, the port only when it is not the scheme's default.
    pub fn authority(&self) -> &str {
        &self.url[Position::BeforeHost..Position::AfterPort]
    }

    /// The path and query, without the fragment (never sent).
    pub fn path_with_query(&self) -> &str {
        &self.url[Position::BeforePath..Position::AfterQuery]
    }

    pub fn is_https(&self) -> bool {
        self.url.scheme() == "https"
    }

    /// Whether a header named `name` (any case) is present.
    pub fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// Removes every header whose name (any case) is in `names`.
    pub fn remove_headers(&mut self, names: &[&str]) {
        self.headers
            .retain(|(n, _)| !names.iter().any(|r| n.eq_ignore_ascii_case(r)));
    }
}

/// What `fetch` does: the first request and the limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub first: Hop,
    pub max_redirects: u8,
    pub max_body_bytes: u32,
}

/// Checks `req` and builds its first hop.
pub fn plan(req: &Request) -> Result<Plan, Error> {
    let url = Url::parse(req.url.trim())
        .map_err(|e| invalid(format!("`{}` is not a valid URL: {e}", req.url)))?;
    check_url(&url).map_err(|why| invalid(format!("`{}` {why}", req.url)))?;

    let max_body_bytes = req.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
    if max_body_bytes > MAX_BODY_BYTES {
        return Err(invalid(format!(
            "max-body-bytes {max_body_bytes} is above the maximum of {MAX_BODY_BYTES}"
        )));
    }

    let mut headers = Vec::with_capacity(req.headers.len() + 3);
    for h in &req.headers {
        check_header(&h.name, &h.value)?;
        headers.push((h.name.clone(), h.value.clone()));
    }
    let mut first = Hop {
        url,
        method: req.method,
        headers,
        body: None,
    };

    match (&req.body, &req.json) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "both `body` and `json` were given: send one of them and leave the other null"
                    .into(),
            ));
        }
        (Some(body), None) => first.body = Some(body.as_bytes().to_vec()),
        (None, Some(json)) => {
            serde_json::from_str::<serde_json::Value>(json)
                .map_err(|e| invalid(format!("`json` is not valid JSON: {e}")))?;
            if !first.has_header("content-type") {
                first
                    .headers
                    .push(("content-type".into(), "application/json".into()));
            }
            first.body = Some(json.as_bytes().to_vec());
        }
        (None, None) => {}
    }
    // Servers commonly answer 411 to a POST without a length, and without one an empty
    // DELETE goes out with chunked encoding.
    let sends_length = first.body.is_some() || !matches!(first.method, Method::Get | Method::Head);
    if sends_length && !first.has_header("content-length") {
        let len = first.body.as_ref().map_or(0, Vec::len);
        first
            .headers
            .push(("content-length".into(), len.to_string()));
    }
    if !first.has_header("user-agent") {
        first.headers.push(("user-agent".into(), USER_AGENT.into()));
    }

    Ok(Plan {
        first,
        max_redirects: req.max_redirects.unwrap_or(DEFAULT_MAX_REDIRECTS),
        max_body_bytes,
    })
}

fn invalid(message: String) -> Error {
    Error::InvalidRequest(message)
}

/// Why `url` cannot be requested, as the end of a sentence about it; `Ok` if it can.
pub fn check_url(url: &Url) -> Result<(), String> {
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(format!(
                "uses the scheme `{other}`: only `http` and `https` URLs are supported"
            ));
        }
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("has no host".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "contains credentials (`user:password@`), which are not supported: send an \
             `authorization` header instead"
                .into(),
        );
    }
    Ok(())
}

/// Checks a header against RFC 9110: the name a token, the value free of control
/// characters other than tab (so no CR or LF that could smuggle another header).
pub fn check_header(name: &str, value: &str) -> Result<(), Error> {
    const TCHAR: &[u8] = b"!#$%&'*+-.^_`|~";
    if name.is_empty() {
        return Err(invalid(format!(
            "a header has an empty name (its value is `{value}`)"
        )));
    }
    if let Some(c) = name
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || (c.is_ascii() && TCHAR.contains(&(c as u8)))))
    {
        return Err(invalid(format!(
            "the header name `{}` is not valid: it contains {:?}, but names may contain \
             only letters, digits and {}",
            name.escape_debug(),
            c,
            String::from_utf8_lossy(TCHAR)
        )));
    }
    if let Some(c) = value.chars().find(|&c| c.is_control() && c != '\t') {
        return Err(invalid(format!(
            "the value of header `{name}` is not valid: it contains the control character \
             {c:?} (`{}`)",
            value.escape_debug()
        )));
    }
    Ok(())
}

/// Decodes a response body as UTF-8, replacing invalid bytes with U+FFFD. A body cut off
/// at the limit may end inside a character; that partial character is dropped rather
/// than shown as U+FFFD.
pub fn decode_body(mut bytes: Vec<u8>, truncated: bool) -> String {
    if truncated {
        // The last byte that starts a character (or is ASCII), among the last four.
        let lead = (bytes.len().saturating_sub(4)..bytes.len())
            .rev()
            .find(|&i| bytes[i] & 0xC0 != 0x80);
        if let Some(lead) = lead
            && let Err(e) = std::str::from_utf8(&bytes[lead..])
            && e.error_len().is_none()
        {
            bytes.truncate(lead + e.valid_up_to());
        }
    }
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

#[cfg(test)]
mod tests;
