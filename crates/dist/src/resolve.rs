//! The one place where a tool path that is an `oci://` reference becomes a file: every
//! loader (task files, `toolhost mcp`, `serve`, resume, replay) calls [`Resolver::resolve`].
//!
//! - A digest reference is served from the store when it is there, else pulled.
//! - A tag is resolved at the registry, once, at load; when the registry cannot be reached,
//!   the digest the tag had when last pulled is used from the store (runs work offline).
//! - What comes back is pinned by digest: that is what the caller records and reloads.

use std::path::PathBuf;

use crate::registry::{self, Connect, Fetched};
use crate::signature::{self, SignatureLayer};
use crate::{Credentials, DistError, OciRef, Store};

/// The environment variable that asks for plain HTTP (allowed, and implied, for loopback
/// registries only) for loaders
/// (`1`); the commands' `--insecure` flag is the same for one command.
pub const INSECURE_ENV: &str = "TOOLHOST_REGISTRY_INSECURE";

/// How loaders reach registries and where they keep what they pull.
#[derive(Debug, Clone)]
pub struct Resolver {
    store: Store,
    insecure: bool,
}

/// A reference resolved to a stored, verified component.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Resolved {
    /// The reference pinned at the manifest digest.
    pub pinned: OciRef,
    /// The component's file in the store.
    pub path: PathBuf,
    /// The component's own sha256 (`sha256:HEX`).
    pub component_digest: String,
    /// Whether the registry was unreachable and the store answered for a tag.
    pub offline: bool,
}

impl Resolver {
    /// Resolves into `store`; plain HTTP (loopback only) when `insecure`.
    pub fn new(store: Store, insecure: bool) -> Resolver {
        Resolver { store, insecure }
    }

    /// The store of [`Store::locate`] (`$TOOLHOST_STORE_DIR`, else the user's data
    /// directory) and `$TOOLHOST_REGISTRY_INSECURE`.
    pub fn from_env() -> Result<Resolver, String> {
        let store = Store::locate(None).ok_or_else(|| {
            "no component store: set TOOLHOST_STORE_DIR (or HOME) to pull `oci://` tools"
                .to_string()
        })?;
        let insecure = std::env::var(INSECURE_ENV).is_ok_and(|v| v == "1");
        Ok(Resolver::new(store, insecure))
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Resolves `text` (an `oci://` reference) to a verified component in the store,
    /// blocking (on a thread of its own, so it may be called inside an async runtime).
    pub fn resolve(&self, text: &str) -> Result<Resolved, DistError> {
        let reference = OciRef::parse(text)?;
        if reference.digest().is_some() {
            match registry::stored(&reference, &self.store) {
                Ok(f) => return Ok(self.resolved(f, false)),
                Err(DistError::NotStored { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let connect =
            Connect::new(Credentials::find(reference.registry())?).insecure(self.insecure);
        let pulled = block_on(registry::pull(&reference, &connect, &self.store));
        match pulled {
            Ok(f) => Ok(self.resolved(f, false)),
            Err(DistError::Unreachable { .. }) if reference.tag().is_some() => {
                match registry::stored(&reference, &self.store) {
                    Ok(f) => Ok(self.resolved(f, true)),
                    Err(DistError::NotStored { .. }) => pulled.map(|f| self.resolved(f, false)),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// The cosign signatures stored beside `pinned` in its registry (none when it has
    /// none), blocking like [`Resolver::resolve`]. What the registry answers is kept in the
    /// store; when the registry cannot be reached, the signatures kept last answer.
    pub fn signatures(&self, pinned: &OciRef) -> Result<Vec<SignatureLayer>, DistError> {
        let digest = pinned.digest().unwrap_or_default().to_string();
        let connect = Connect::new(Credentials::find(pinned.registry())?).insecure(self.insecure);
        match block_on(signature::pull_signatures(pinned, &connect)) {
            Ok(layers) => {
                // Kept for offline loads only: a store that cannot keep them (full, read
                // only) costs the next offline load its signatures, never this load.
                if !layers.is_empty() {
                    let _ = self.store.put_signatures(&digest, &kept(&layers));
                }
                Ok(layers)
            }
            Err(e @ DistError::Unreachable { .. }) => match self.store.signatures(&digest)? {
                Some(bytes) => read_kept(&bytes).map_err(|why| {
                    DistError::io(
                        "cannot read store entry",
                        self.store.root().join("signatures"),
                        std::io::Error::other(why),
                    )
                }),
                None => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    fn resolved(&self, f: Fetched, offline: bool) -> Resolved {
        Resolved {
            path: self.store.blob_path(&f.component_digest),
            pinned: f.pinned,
            component_digest: f.component_digest,
            offline,
        }
    }
}

/// Runs `future` to completion on a thread of its own with a current-thread runtime
/// (callable from sync code inside or outside an async runtime).
pub fn block_on<F>(future: F) -> F::Output
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    std::thread::scope(|s| {
        s.spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a current-thread runtime")
                .block_on(future)
        })
        .join()
        .expect("the registry thread does not panic")
    })
}

/// Signature layers as the store keeps them: a JSON array of `{payload (base64), signature}`.
fn kept(layers: &[SignatureLayer]) -> Vec<u8> {
    use base64::Engine as _;
    let kept: Vec<serde_json::Value> = layers
        .iter()
        .map(|l| {
            serde_json::json!({
                "payload": base64::engine::general_purpose::STANDARD.encode(&l.payload),
                "signature": l.signature,
            })
        })
        .collect();
    serde_json::to_vec(&kept).expect("JSON values serialize")
}

/// The layers [`kept`] wrote.
fn read_kept(bytes: &[u8]) -> Result<Vec<SignatureLayer>, String> {
    use base64::Engine as _;
    let kept: Vec<serde_json::Value> = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    kept.iter()
        .map(|k| {
            let payload = base64::engine::general_purpose::STANDARD
                .decode(k["payload"].as_str().unwrap_or_default())
                .map_err(|e| format!("a kept payload is not base64: {e}"))?;
            Ok(SignatureLayer {
                payload,
                signature: k["signature"].as_str().unwrap_or_default().to_string(),
            })
        })
        .collect()
}
