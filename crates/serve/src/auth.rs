//! Bearer tokens and roles. Tokens are configured by their SHA-256 only; a presented token
//! is hashed and compared with every configured hash in constant time, so neither the
//! configuration nor the timing of a refusal gives a token away.
//!
//! What each role allows:
//!
//! | role | allows |
//! |---|---|
//! | `submit` | `POST /v1/runs`; reading and cancelling the runs its token submitted |
//! | `read` | reading every run (list, get, events, report, journal) and `/metrics` |
//! | `approve` | deciding pending approvals of every run (reading them needs `read`) |
//! | `admin` | everything |
//!
//! A server without tokens (loopback only) lets every caller do everything.

use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Submit,
    Approve,
    Read,
    Admin,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Submit => "submit",
            Role::Approve => "approve",
            Role::Read => "read",
            Role::Admin => "admin",
        }
    }
}

/// A configured token: its name (the submitter of the runs it submits), the hex SHA-256
/// of the token, and its roles.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenSpec {
    pub name: String,
    pub sha256: String,
    pub roles: Vec<Role>,
}

impl TokenSpec {
    /// Why the token cannot be used, if it cannot.
    pub(crate) fn check(&self) -> Result<(), String> {
        let bad = |reason: &str| reason.to_string();
        if self.name.is_empty() {
            return Err(bad("the name is empty"));
        }
        if decode_hex(&self.sha256).is_none() {
            return Err(bad(
                "`sha256` must be 64 hex digits: the SHA-256 of the token (e.g. `printf %s TOKEN | sha256sum`)",
            ));
        }
        if self.roles.is_empty() {
            return Err(bad(
                "no roles: give at least one of submit, approve, read, admin",
            ));
        }
        Ok(())
    }
}

/// The 32 bytes that 64 hex digits (either case) spell.
fn decode_hex(s: &str) -> Option<[u8; 32]> {
    hex::FromHex::from_hex(s).ok()
}

/// Who is calling, once the token is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// No tokens are configured: everything is allowed.
    Open,
    Token {
        name: String,
        roles: Vec<Role>,
    },
}

impl Caller {
    /// Whether the caller has `role` (admin has every role).
    pub fn has(&self, role: Role) -> bool {
        match self {
            Caller::Open => true,
            Caller::Token { roles, .. } => roles.contains(&role) || roles.contains(&Role::Admin),
        }
    }

    /// The name runs submitted by this caller are recorded under.
    pub fn name(&self) -> Option<&str> {
        match self {
            Caller::Open => None,
            Caller::Token { name, .. } => Some(name),
        }
    }

    /// Whether the caller may read a run submitted by `submitter`: with `read`, or as its
    /// submitter.
    pub fn may_read(&self, submitter: Option<&str>) -> bool {
        self.has(Role::Read) || self.is_submitter(submitter)
    }

    /// Whether the caller may see a run (its view and what it waits for, not its journal
    /// or report): one it may read, or, with `approve`, one `waiting` for a person, so an
    /// approver without `read` sees what it decides on.
    pub fn may_see(&self, submitter: Option<&str>, waiting: bool) -> bool {
        self.may_read(submitter) || (waiting && self.has(Role::Approve))
    }

    /// Whether the caller may list runs: with `read`, `submit` (its own) or `approve`
    /// (those waiting for a person).
    pub fn may_list(&self) -> bool {
        [Role::Read, Role::Submit, Role::Approve]
            .into_iter()
            .any(|r| self.has(r))
    }

    /// Whether the caller may cancel a run submitted by `submitter`: as an admin, or as
    /// its submitter.
    pub fn may_cancel(&self, submitter: Option<&str>) -> bool {
        self.has(Role::Admin) || self.is_submitter(submitter)
    }

    fn is_submitter(&self, submitter: Option<&str>) -> bool {
        match (self, submitter) {
            (Caller::Open, _) => true,
            (Caller::Token { name, roles }, Some(s)) => roles.contains(&Role::Submit) && name == s,
            (Caller::Token { .. }, None) => false,
        }
    }
}

/// The configured tokens.
#[derive(Debug, Clone)]
pub struct Tokens {
    tokens: Vec<(String, [u8; 32], Vec<Role>)>,
}

/// Why a request is not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No `Authorization: Bearer` header.
    Missing,
    /// A token that matches none configured.
    Unknown,
}

impl Tokens {
    /// The tokens of a checked configuration (see [`crate::ServeConfig::check`]).
    pub fn new(specs: &[TokenSpec]) -> Tokens {
        Tokens {
            tokens: specs
                .iter()
                .filter_map(|t| Some((t.name.clone(), decode_hex(&t.sha256)?, t.roles.clone())))
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The caller an `Authorization` header value makes.
    pub fn caller(&self, authorization: Option<&str>) -> Result<Caller, Refused> {
        if self.tokens.is_empty() {
            return Ok(Caller::Open);
        }
        let token = authorization
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or(Refused::Missing)?;
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        // Every configured hash is compared, whichever matches.
        let mut found = None;
        for (name, hash, roles) in &self.tokens {
            if bool::from(hash.ct_eq(&presented)) {
                found = Some((name, roles));
            }
        }
        found
            .map(|(name, roles)| Caller::Token {
                name: name.clone(),
                roles: roles.clone(),
            })
            .ok_or(Refused::Unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, token: &str, roles: &[Role]) -> TokenSpec {
        let hash = Sha256::digest(token.as_bytes());
        TokenSpec {
            name: name.into(),
            sha256: hex::encode(hash),
            roles: roles.to_vec(),
        }
    }

    #[test]
    fn tokens_match_by_hash_and_roles_limit() {
        let t = Tokens::new(&[
            spec("ci", "tok-ci", &[Role::Submit]),
            spec("ops", "tok-ops", &[Role::Admin]),
        ]);
        assert_eq!(t.caller(None), Err(Refused::Missing));
        assert_eq!(t.caller(Some("Basic eA==")), Err(Refused::Missing));
        assert_eq!(t.caller(Some("Bearer nope")), Err(Refused::Unknown));
        let ci = t.caller(Some("Bearer tok-ci")).unwrap();
        assert!(ci.has(Role::Submit) && !ci.has(Role::Read) && !ci.has(Role::Approve));
        assert!(ci.may_read(Some("ci")) && !ci.may_read(Some("other")) && !ci.may_read(None));
        let ops = t.caller(Some("Bearer tok-ops")).unwrap();
        assert!(ops.has(Role::Approve) && ops.may_cancel(Some("ci")));
        assert!(Tokens::new(&[]).caller(None).unwrap().has(Role::Admin));
        // An approver without `read` sees a run only while it waits for a person.
        let a = Tokens::new(&[spec("a", "tok-a", &[Role::Approve])])
            .caller(Some("Bearer tok-a"))
            .unwrap();
        assert!(a.may_list() && a.may_see(Some("ci"), true));
        assert!(!a.may_see(Some("ci"), false) && !a.may_read(Some("ci")));
        assert!(!ci.may_see(Some("other"), true) && ci.may_list());
    }

    #[test]
    fn a_malformed_hash_is_refused() {
        let mut s = spec("x", "t", &[Role::Read]);
        s.sha256 = "abc".into();
        assert!(s.check().unwrap_err().contains("64 hex digits"));
    }
}
