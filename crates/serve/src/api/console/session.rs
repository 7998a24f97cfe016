//! Who is looking at the console, and the CSRF token their forms carry.
//!
//! With tokens configured, the sign-in page takes a token and the server keeps it in the
//! `toolhost_console` cookie: HttpOnly (no script reads it), SameSite=Strict (no other
//! site's page sends it), Path=/. Without tokens (a loopback-only server) everyone is the
//! open caller, as on the API.
//!
//! Every state-changing request carries a `csrf` field: the SHA-256 of a key drawn at
//! start and the session's token, so it differs per session and per server start, and a
//! page elsewhere can neither read nor compute it. It is compared in constant time.

use axum::http::{HeaderMap, HeaderValue, header};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::AppState;
use crate::auth::Caller;

const COOKIE: &str = "toolhost_console";

/// The secret the CSRF tokens are derived from, drawn once per server start.
pub(crate) struct CsrfKey([u8; 32]);

impl CsrfKey {
    /// A fresh key from the operating system's generator.
    pub(crate) fn new() -> Result<CsrfKey, getrandom::Error> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key)?;
        Ok(CsrfKey(key))
    }

    fn token(&self, session: &str) -> String {
        let mut h = Sha256::new();
        h.update(self.0);
        h.update(session.as_bytes());
        hex::encode(h.finalize())
    }
}

impl std::fmt::Debug for CsrfKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CsrfKey(…)")
    }
}

/// A signed-in console user.
pub(crate) struct Session {
    pub caller: Caller,
    /// The CSRF token of this session, for the page's forms.
    pub csrf: String,
}

impl Session {
    /// The session a request's cookie makes: none when tokens are configured and the
    /// cookie is missing or holds a token this server does not know.
    pub(crate) fn of(state: &AppState, headers: &HeaderMap) -> Option<Session> {
        if state.tokens.is_empty() {
            return Some(Session {
                caller: Caller::Open,
                csrf: state.csrf.token(""),
            });
        }
        let token = cookie_value(headers)?;
        let caller = state.tokens.caller(Some(&format!("Bearer {token}"))).ok()?;
        Some(Session {
            caller,
            csrf: state.csrf.token(&token),
        })
    }

    /// Whether `presented` is this session's CSRF token.
    pub(crate) fn csrf_matches(&self, presented: Option<&str>) -> bool {
        presented.is_some_and(|p| bool::from(p.as_bytes().ct_eq(self.csrf.as_bytes())))
    }
}

/// The console cookie's token, from every `Cookie` header.
fn cookie_value(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_string())
        .filter(|v| !v.is_empty())
}

/// `Set-Cookie` keeping `token` for the console. A token is printable ASCII without `;`
/// (anything else is refused by the caller's check before this).
pub(crate) fn cookie(token: &str) -> HeaderValue {
    HeaderValue::from_str(&format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
    ))
    .unwrap_or_else(|_| cleared())
}

/// `Set-Cookie` forgetting the session.
pub(crate) fn cleared() -> HeaderValue {
    HeaderValue::from_static("toolhost_console=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")
}

/// An `application/x-www-form-urlencoded` body.
pub(crate) struct Form(Vec<(String, String)>);

impl Form {
    pub(crate) fn parse(body: &[u8]) -> Form {
        Form(serde_urlencoded::from_bytes(body).unwrap_or_default())
    }

    /// The first value of `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csrf_tokens_differ_per_session_and_per_key() {
        let (a, b) = (CsrfKey::new().unwrap(), CsrfKey::new().unwrap());
        assert_ne!(a.token("t1"), a.token("t2"));
        assert_ne!(a.token("t1"), b.token("t1"));
        assert_eq!(a.token("t1"), a.token("t1"));
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; toolhost_console=tok-x"),
        );
        assert_eq!(cookie_value(&h).as_deref(), Some("tok-x"));
        h = HeaderMap::new();
        h.append(
            header::COOKIE,
            HeaderValue::from_static("toolhost_console="),
        );
        assert_eq!(cookie_value(&h), None);
    }
}
