//! Following redirects: where a redirect leads, with which method, body and headers, and
//! when to stop. Pure logic, tested natively.

use crate::Method;
use crate::request::{Error, Hop, check_url};

/// Headers that describe the body; dropped when a redirect turns the request into a GET.
const BODY_HEADERS: &[&str] = &[
    "content-type",
    "content-length",
    "content-encoding",
    "content-language",
    "content-location",
];

/// Headers carrying credentials; not sent to another origin.
const CREDENTIAL_HEADERS: &[&str] = &["authorization", "cookie", "proxy-authorization"];

/// Whether `status` is a redirect this client follows.
pub fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// The request to make after a response with `status` and `location` answered `hop`, or
/// `None` if that response is the final one (not a redirect, or a redirect without a
/// `location`).
///
/// Follows the Fetch standard: a 303, and a 301 or 302 answering a POST, becomes a GET
/// (a HEAD stays a HEAD) without body; 307 and 308 repeat the method and body. Credentials
/// are not carried to another origin.
pub fn next_hop(hop: &Hop, status: u16, location: Option<&str>) -> Result<Option<Hop>, Error> {
    let Some(location) = location.filter(|_| is_redirect(status)) else {
        return Ok(None);
    };
    let from = hop.url.as_str();
    let url = hop.url.join(location.trim()).map_err(|e| {
        Error::Other(format!(
            "`{from}` redirected (status {status}) to `{location}`, which is not a valid URL: {e}"
        ))
    })?;
    check_url(&url).map_err(|why| {
        Error::Other(format!(
            "`{from}` redirected (status {status}) to `{url}`, which {why}"
        ))
    })?;

    let mut next = hop.clone();
    let to_get = match status {
        303 => hop.method != Method::Head,
        301 | 302 => hop.method == Method::Post,
        _ => false,
    };
    if to_get {
        next.method = Method::Get;
        next.body = None;
        next.remove_headers(BODY_HEADERS);
    }
    if url.origin() != hop.url.origin() {
        next.remove_headers(CREDENTIAL_HEADERS);
    }
    next.url = url;
    Ok(Some(next))
}

/// The URLs visited so far, and the limit on redirects.
#[derive(Debug, Clone)]
pub struct Chain {
    max: u8,
    urls: Vec<String>,
}

impl Chain {
    pub fn new(first: &Hop, max: u8) -> Chain {
        Chain {
            max,
            urls: vec![first.url.to_string()],
        }
    }

    /// Whether redirects are followed at all (`max-redirects` 0 returns them as they are).
    pub fn follows(&self) -> bool {
        self.max > 0
    }

    /// Records a redirect to `next`, or fails if the limit is reached.
    pub fn follow(&mut self, next: &Hop) -> Result<(), Error> {
        if self.redirects() >= self.max {
            let max = self.max;
            return Err(Error::TooManyRedirects(format!(
                "more than {max} redirect{} (the max-redirects limit): {} -> {}",
                if max == 1 { "" } else { "s" },
                self.urls.join(" -> "),
                next.url
            )));
        }
        self.urls.push(next.url.to_string());
        Ok(())
    }

    /// How many redirects have been followed.
    pub fn redirects(&self) -> u8 {
        // At most `max` (a u8) redirects are ever recorded.
        u8::try_from(self.urls.len() - 1).unwrap_or(u8::MAX)
    }
}

#[cfg(test)]
mod tests;
