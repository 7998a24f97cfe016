//! `[trust]`: the public keys a policy trusts ([`TrustedKey`], cosign's key-based format,
//! read and checked with the policy) and, per tool, whether its component must be signed
//! and by which of them ([`SignatureRule`]). Deny by default: a tool that needs a signature
//! and has no key to check it with refuses every component.
//!
//! ```toml
//! [trust]
//! require_signature = true              # every tool (else per tool, below)
//! keys = { release = "keys/release.pub", ci = "-----BEGIN PUBLIC KEY-----\n…" }
//!
//! [tools.calc]
//! signers = ["release"]                 # optional: default every key above
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use toml::Spanned;
use toolhost_sign::PublicKey;

use crate::error::{At, Problems};
use crate::raw::{RawTool, RawTrust};

/// A public key of `[trust.keys]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrustedKey {
    /// Its name in the policy (what the journal calls the signer).
    pub name: String,
    /// [`PublicKey::key_id`]: the hex SHA-256 of its SubjectPublicKeyInfo.
    pub key_id: String,
    #[serde(skip)]
    pub key: PublicKey,
}

/// A tool whose component must carry a valid signature before it is compiled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignatureRule {
    /// The keys whose signature is accepted. Empty: no component is accepted (a policy that
    /// requires signatures and trusts no key refuses everything).
    pub signers: Vec<TrustedKey>,
}

/// The keys of `[trust.keys]`, each read (a path is relative to `base`) and checked.
pub(crate) fn keys(
    raw: &RawTrust,
    base: &Path,
    at: &At<'_>,
    problems: &mut Problems,
) -> BTreeMap<String, TrustedKey> {
    let mut keys = BTreeMap::new();
    for (name, value) in &raw.keys {
        let n = name.get_ref();
        if n.is_empty()
            || !n
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            problems.push(at(
                name.span(),
                format!("`{n}` is not a key name: use letters, digits, `-`, `_` and `.`"),
            ));
            continue;
        }
        let text = value.get_ref();
        let pem = if text.trim_start().starts_with("-----BEGIN") {
            Ok(text.clone())
        } else {
            std::fs::read_to_string(base.join(text))
                .map_err(|e| format!("key `{n}`: cannot read `{text}`: {e}"))
        };
        let key = pem.and_then(|pem| {
            PublicKey::from_pem(&pem, &format!("key `{n}`")).map_err(|e| e.to_string())
        });
        if let Some(key) = problems.take(key.map_err(|why| at(value.span(), why))) {
            let key_id = key.key_id();
            keys.insert(
                n.clone(),
                TrustedKey {
                    name: n.clone(),
                    key_id,
                    key,
                },
            );
        }
    }
    keys
}

/// The signature rule of tool section `raw`: required when `[trust] require_signature`,
/// its own `require_signature = true`, or its `signers` say so; `None` otherwise.
pub(crate) fn rule(
    raw: &RawTool,
    trust: &RawTrust,
    keys: &BTreeMap<String, TrustedKey>,
    at: &At<'_>,
    problems: &mut Problems,
) -> Option<SignatureRule> {
    if let Some(own) = &raw.require_signature
        && !own.get_ref()
        && trust.require_signature
    {
        problems.push(at(
            own.span(),
            "`require_signature = false` cannot lift `[trust] require_signature = true` for one tool: a signature is required of every tool".into(),
        ));
    }
    let required = trust.require_signature
        || raw.require_signature.as_ref().is_some_and(|r| *r.get_ref())
        || raw.signers.is_some();
    if !required {
        return None;
    }
    let signers = match &raw.signers {
        None => keys.values().cloned().collect(),
        Some(listed) => signers(listed, keys, at, problems),
    };
    Some(SignatureRule { signers })
}

/// The keys a section's `signers` names, each one of `[trust.keys]`.
fn signers(
    listed: &Spanned<Vec<Spanned<String>>>,
    keys: &BTreeMap<String, TrustedKey>,
    at: &At<'_>,
    problems: &mut Problems,
) -> Vec<TrustedKey> {
    if listed.get_ref().is_empty() {
        problems.push(at(
            listed.span(),
            "`signers = []` would accept no signature: name keys of `[trust.keys]`, or leave `signers` out to accept any of them".into(),
        ));
    }
    let mut out: Vec<TrustedKey> = Vec::new();
    for s in listed.get_ref() {
        match keys.get(s.get_ref()) {
            Some(k) if out.contains(k) => problems.push(at(
                s.span(),
                format!("signer `{}` is listed twice", s.get_ref()),
            )),
            Some(k) => out.push(k.clone()),
            None => {
                let known: Vec<&str> = keys.keys().map(String::as_str).collect();
                let known = match known.is_empty() {
                    true => "it has none".to_string(),
                    false => format!("it has {}", known.join(", ")),
                };
                problems.push(at(
                    s.span(),
                    format!(
                        "signer `{}` is not a key of `[trust.keys]` ({known})",
                        s.get_ref()
                    ),
                ));
            }
        }
    }
    out
}
