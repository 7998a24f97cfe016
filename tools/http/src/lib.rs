//! `http`: makes HTTP requests through `wasi:http/outgoing-handler`, following redirects.
//!
//! Access control is entirely the host's: it checks each request, including every hop of a
//! redirect (each is a new request), against the operator's network grants. This crate
//! checks the request ([`request`]), decides where redirects lead ([`redirect`]) and talks
//! to the host ([`client`]).

// The generated export of `fetch` takes the `request` record flattened into 15 core wasm
// parameters.
#![allow(clippy::too_many_arguments)]

pub mod client;
pub mod redirect;
pub mod request;

toolhost_sdk::tool!();

use request::{DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_REDIRECTS, Error};

/// Characters of the body quoted in `get-text`'s error for a status other than 2xx.
const QUOTED_BODY_CHARS: usize = 300;

struct Http;

impl Guest for Http {
    fn fetch(request: Request) -> Result<Response, HttpError> {
        Ok(fetch(&request)?)
    }

    fn get_text(url: String) -> Result<String, HttpError> {
        let response = fetch(&Request {
            url: url.clone(),
            method: Method::Get,
            headers: Vec::new(),
            body: None,
            json: None,
            max_redirects: Some(DEFAULT_MAX_REDIRECTS),
            max_body_bytes: Some(DEFAULT_MAX_BODY_BYTES),
        })?;
        if (200..300).contains(&response.status) {
            return Ok(response.body);
        }
        let quoted: String = response.body.chars().take(QUOTED_BODY_CHARS).collect();
        let more = if quoted.len() < response.body.len() {
            "…"
        } else {
            ""
        };
        Err(HttpError::Other(format!(
            "GET `{}` returned status {}; the body starts: {quoted:?}{more}",
            response.final_url, response.status
        )))
    }
}

/// Sends `req`, following redirects as `max-redirects` allows.
fn fetch(req: &Request) -> Result<Response, Error> {
    let plan = request::plan(req)?;
    let mut chain = redirect::Chain::new(&plan.first, plan.max_redirects);
    let mut hop = plan.first;
    loop {
        let mut received = client::send(&hop)?;
        if chain.follows()
            && let Some(next) = redirect::next_hop(&hop, received.status, received.location())?
        {
            chain.follow(&next)?;
            hop = next;
            continue;
        }
        let status = received.status;
        let headers = std::mem::take(&mut received.headers)
            .into_iter()
            .map(|(name, value)| Header { name, value })
            .collect();
        let (bytes, truncated) = if hop.method == Method::Head {
            (Vec::new(), false)
        } else {
            received.read_body(plan.max_body_bytes)?
        };
        return Ok(Response {
            status,
            headers,
            body: request::decode_body(bytes, truncated),
            truncated,
            final_url: hop.url.to_string(),
            redirects: chain.redirects(),
        });
    }
}

impl From<Error> for HttpError {
    fn from(e: Error) -> HttpError {
        match e {
            Error::Denied(m) => HttpError::Denied(m),
            Error::InvalidRequest(m) => HttpError::InvalidRequest(m),
            Error::Connection(m) => HttpError::Connection(m),
            Error::TooManyRedirects(m) => HttpError::TooManyRedirects(m),
            Error::Other(m) => HttpError::Other(m),
        }
    }
}

export!(Http);
