//! Signatures a policy requires (`[trust]`): a tool whose section has a
//! [`SignatureRule`] is checked here, from the bytes that will be compiled, before it is
//! compiled; a component without a valid signature from a key its section allows is
//! refused, naming the tool, the component's digest and why.
//!
//! - A file `NAME.wasm` is signed by `NAME.wasm.sig` beside it: base64 DER ECDSA-SHA256 of
//!   its bytes (`cosign sign-blob`, `toolhost tool sign`).
//! - An `oci://` component is signed by cosign's artifact `sha256-HEX.sig` beside its
//!   manifest: a simple-signing payload naming the manifest digest, signed; the manifest
//!   names the component's digest, which the store has checked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};
use toolhost_dist::{OciRef, Resolver};
use toolhost_runtime::policy::{SignatureRule, TrustedKey};
use toolhost_sign::{decode_signature, payload};

use crate::error::{AppError, usage};

/// Who signed a component: a key of the policy's `[trust.keys]`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Signer {
    /// The key's name in the policy.
    pub key: String,
    /// The key's id (hex SHA-256 of its SubjectPublicKeyInfo).
    pub key_id: String,
}

/// A component whose signature was checked: the local file to compile, the hex SHA-256
/// its bytes had when checked (the compiled tool must have the same), and its signer.
#[derive(Debug, Clone)]
pub struct Checked {
    pub file: PathBuf,
    pub digest: String,
    pub signer: Signer,
}

/// Checks the component of tool `tool` at `path` (a file or an `oci://` reference) against
/// `rule`; `keys` are all the policy's keys (to say so when a known key may not sign this
/// tool). A registry is reached as [`Resolver::from_env`] says, over plain HTTP also when
/// `insecure` (loopback only).
pub fn check(
    tool: &str,
    path: &Path,
    rule: &SignatureRule,
    keys: &BTreeMap<String, TrustedKey>,
    insecure: bool,
) -> Result<Checked, AppError> {
    match path.to_str().filter(|p| OciRef::is_oci(p)) {
        Some(reference) => check_oci(tool, reference, rule, keys, insecure),
        None => check_file(tool, path, rule, keys),
    }
}

fn read(path: &Path) -> Result<(Vec<u8>, String), AppError> {
    let bytes = std::fs::read(path)
        .map_err(|e| AppError::Load(format!("cannot read `{}`: {e}", path.display())))?;
    let digest = hex::encode(Sha256::digest(&bytes));
    Ok((bytes, digest))
}

fn denied(tool: &str, source: &str, digest: &str, why: &str) -> AppError {
    AppError::Denied(format!(
        "[denied] tool `{tool}` (`{source}`, sha256:{digest}): {why}"
    ))
}

fn check_file(
    tool: &str,
    path: &Path,
    rule: &SignatureRule,
    keys: &BTreeMap<String, TrustedKey>,
) -> Result<Checked, AppError> {
    let (bytes, digest) = read(path)?;
    let source = path.display().to_string();
    let deny = |why: &str| denied(tool, &source, &digest, why);
    let mut sig_path = path.as_os_str().to_owned();
    sig_path.push(".sig");
    let sig_path = PathBuf::from(sig_path);
    let text = match std::fs::read_to_string(&sig_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(deny(&format!(
                "it is not signed: the policy requires a signature and `{}` does not exist (sign it with `toolhost tool sign` or `cosign sign-blob`)",
                sig_path.display()
            )));
        }
        Err(e) => return Err(deny(&format!("cannot read `{}`: {e}", sig_path.display()))),
    };
    let sig = decode_signature(&text, &format!("`{}`", sig_path.display()))
        .map_err(|e| deny(&e.to_string()))?;
    let signer = signer(&bytes, &sig, rule, keys).map_err(|why| deny(&why))?;
    Ok(Checked {
        file: path.to_path_buf(),
        digest,
        signer,
    })
}

fn check_oci(
    tool: &str,
    reference: &str,
    rule: &SignatureRule,
    keys: &BTreeMap<String, TrustedKey>,
    insecure: bool,
) -> Result<Checked, AppError> {
    let mut resolver = Resolver::from_env().map_err(AppError::Load)?;
    if insecure {
        resolver = Resolver::new(resolver.store().clone(), true);
    }
    let resolved = resolver.resolve(reference).map_err(|e| match e {
        toolhost_dist::DistError::BadReference { .. }
        | toolhost_dist::DistError::InsecureNotLoopback { .. } => usage(e.to_string()),
        e => AppError::Load(e.to_string()),
    })?;
    let (_, digest) = read(&resolved.path)?;
    let source = resolved.pinned.to_string();
    let deny = |why: &str| denied(tool, &source, &digest, why);
    if format!("sha256:{digest}") != resolved.component_digest {
        return Err(deny(&format!(
            "the stored component does not hash to `{}`",
            resolved.component_digest
        )));
    }
    let manifest = resolved.pinned.digest().unwrap_or_default().to_string();
    let layers = resolver
        .signatures(&resolved.pinned)
        .map_err(|e| deny(&format!("its signatures cannot be read: {e}")))?;
    if layers.is_empty() {
        return Err(deny(&format!(
            "it is not signed: the policy requires a signature and the registry has no `{}` (sign it with `toolhost tool sign` or `cosign sign --key`)",
            toolhost_dist::signature::signature_reference(&resolved.pinned)
        )));
    }
    let mut why = String::new();
    for layer in &layers {
        let attempt = payload::signed_digest(&layer.payload)
            .map_err(|e| e.to_string())
            .and_then(|signed| match signed == manifest {
                true => Ok(()),
                false => Err(format!(
                    "its signature is for manifest `{signed}`, not this component's manifest `{manifest}`"
                )),
            })
            .and_then(|()| decode_signature(&layer.signature, "the signature annotation").map_err(|e| e.to_string()))
            .and_then(|sig| signer(&layer.payload, &sig, rule, keys));
        match attempt {
            Ok(signer) => {
                return Ok(Checked {
                    file: resolved.path.clone(),
                    digest,
                    signer,
                });
            }
            Err(e) => why = e,
        }
    }
    Err(deny(&why))
}

/// The allowed key whose signature `sig` is of `message`, or why there is none.
fn signer(
    message: &[u8],
    sig: &[u8],
    rule: &SignatureRule,
    keys: &BTreeMap<String, TrustedKey>,
) -> Result<Signer, String> {
    if let Some(k) = rule
        .signers
        .iter()
        .find(|k| k.key.verify(message, sig).is_ok())
    {
        return Ok(Signer {
            key: k.name.clone(),
            key_id: k.key_id.clone(),
        });
    }
    let allowed: Vec<&str> = rule.signers.iter().map(|k| k.name.as_str()).collect();
    let allowed = match allowed.is_empty() {
        true => "none: the policy trusts no key for it, so no component is accepted".to_string(),
        false => allowed.join(", "),
    };
    if let Some(other) = keys.values().find(|k| k.key.verify(message, sig).is_ok()) {
        return Err(format!(
            "it is signed by key `{}` ({}), which may not sign this tool (its signers: {allowed})",
            other.name, other.key_id
        ));
    }
    Err(format!(
        "its signature does not verify with any key allowed to sign it ({allowed}): the component was changed after it was signed, or a key the policy does not trust signed it"
    ))
}
