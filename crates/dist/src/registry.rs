//! Pushing and pulling components with a registry (the OCI distribution protocol, through
//! `oci-client`), in the CNCF Wasm OCI artifact layout: an OCI image manifest whose config
//! has media type [`WASM_CONFIG`] and whose one layer is the component ([`WASM_LAYER`]),
//! what wkg (wasm-pkg-tools), Wassette and Spin push and pull.
//!
//! Nothing a registry sends is trusted: the manifest and the component are hashed here and
//! refused unless they match the digests that name them.

use std::time::Duration;

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::errors::DigestError;
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciImageManifest};
use oci_client::{Client, RegistryOperation};

use crate::store::sha256_digest;
use crate::{Credentials, DistError, OciRef, Store};

/// The media type of a Wasm artifact's config (CNCF TAG Runtime, Wasm OCI artifact layout).
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
/// The media type of the component layer.
pub const WASM_LAYER: &str = "application/wasm";

/// How to reach a registry.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Connect {
    /// Plain HTTP instead of TLS; allowed for loopback registries only, which get plain
    /// HTTP without it.
    pub insecure: bool,
    /// The credentials to present.
    pub credentials: Credentials,
}

impl Connect {
    /// TLS, with `credentials`.
    pub fn new(credentials: Credentials) -> Connect {
        Connect {
            insecure: false,
            credentials,
        }
    }

    /// Plain HTTP when `insecure` (checked against the registry when used).
    pub fn insecure(mut self, insecure: bool) -> Connect {
        self.insecure = insecure;
        self
    }
}

/// A component pushed or pulled: where it is, and the digests that name it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Fetched {
    /// The reference pinned at the manifest's digest.
    pub pinned: OciRef,
    /// The manifest's digest (what `@sha256:` names).
    pub digest: String,
    /// The component's own digest (the sha256 of its bytes, what a policy's `sha256` pins).
    pub component_digest: String,
    /// The component's bytes.
    pub component: Vec<u8>,
}

pub(crate) fn client(reference: &OciRef, connect: &Connect) -> Result<Client, DistError> {
    if connect.insecure && !reference.is_loopback() {
        return Err(DistError::InsecureNotLoopback {
            registry: reference.registry().to_string(),
        });
    }
    // A registry on this machine is spoken to in plain HTTP without asking, as Docker does
    // for localhost: nothing leaves the machine, and a local registry rarely has a
    // certificate. Every other registry gets TLS.
    Ok(Client::new(ClientConfig {
        protocol: if connect.insecure || reference.is_loopback() {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        },
        connect_timeout: Some(Duration::from_secs(10)),
        read_timeout: Some(Duration::from_secs(60)),
        ..ClientConfig::default()
    }))
}

/// The config blob of a component whose layer is `layer_digest` (the fields wkg's
/// `oci-wasm` reads).
fn wasm_config(layer_digest: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "created": jiff::Timestamp::now().to_string(),
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer_digest],
    }))
    .expect("JSON values serialize")
}

/// Pushes `component` to `reference` (a tag); returns the pinned reference.
pub async fn push(
    component: &[u8],
    reference: &OciRef,
    connect: &Connect,
) -> Result<Fetched, DistError> {
    let client = client(reference, connect)?;
    let auth = &connect.credentials.auth;
    let component_digest = sha256_digest(component);
    let layers = [ImageLayer::new(component.to_vec(), WASM_LAYER.into(), None)];
    let config = Config::new(wasm_config(&component_digest), WASM_CONFIG.into(), None);
    let mut manifest = OciImageManifest::build(&layers, &config, None);
    manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.into());
    let fail = |e| classify(e, reference, "the push", &connect.credentials);
    client
        .auth(reference.inner(), auth, RegistryOperation::Push)
        .await
        .map_err(fail)?;
    client
        .push(reference.inner(), &layers, config, auth, Some(manifest))
        .await
        .map_err(fail)?;
    let digest = client
        .fetch_manifest_digest(reference.inner(), auth)
        .await
        .map_err(fail)?;
    Ok(Fetched {
        pinned: reference.at_digest(&digest),
        digest,
        component_digest,
        component: component.to_vec(),
    })
}

/// Pulls `reference` from its registry into `store` (checking every digest) and records
/// its tag there.
pub async fn pull(
    reference: &OciRef,
    connect: &Connect,
    store: &Store,
) -> Result<Fetched, DistError> {
    let client = client(reference, connect)?;
    let auth = &connect.credentials.auth;
    let fail = |e| classify(e, reference, "the pull", &connect.credentials);
    client
        .auth(reference.inner(), auth, RegistryOperation::Pull)
        .await
        .map_err(fail)?;
    let (manifest, _) = client
        .pull_manifest_raw(reference.inner(), auth, &[OCI_IMAGE_MEDIA_TYPE])
        .await
        .map_err(fail)?;
    let digest = sha256_digest(&manifest);
    if let Some(expected) = reference.digest().filter(|d| *d != digest) {
        return Err(DistError::DigestMismatch {
            reference: reference.to_string(),
            what: "manifest",
            expected: expected.to_string(),
            actual: digest,
        });
    }
    let layer = component_layer(reference, &manifest)?;
    let component = match store.get(&layer.digest) {
        Ok(Some(bytes)) => bytes,
        // A missing or corrupted entry is fetched again (and rewritten).
        Ok(None) | Err(DistError::Corrupted { .. }) => {
            let mut bytes = Vec::new();
            client
                .pull_blob(reference.inner(), &layer, &mut bytes)
                .await
                .map_err(|e| match e {
                    // oci-client hashes the blob as it streams it in.
                    OciDistributionError::DigestError(DigestError::VerificationError {
                        actual,
                        ..
                    }) => DistError::DigestMismatch {
                        reference: reference.to_string(),
                        what: "component",
                        expected: layer.digest.clone(),
                        actual,
                    },
                    e => fail(e),
                })?;
            check(reference, "component", &layer.digest, &bytes)?;
            store.put(&bytes)?;
            bytes
        }
        Err(e) => return Err(e),
    };
    store.put(&manifest)?;
    store.set_tag(reference, &digest)?;
    Ok(Fetched {
        pinned: reference.at_digest(&digest),
        digest,
        component_digest: layer.digest,
        component,
    })
}

/// `reference` from `store` alone: by its digest, or by the digest its tag had when last
/// pulled.
pub fn stored(reference: &OciRef, store: &Store) -> Result<Fetched, DistError> {
    let not_stored = || DistError::NotStored {
        reference: reference.to_string(),
        store: store.root().to_path_buf(),
    };
    let digest = match reference.digest() {
        Some(d) => d.to_string(),
        None => store.tag(reference)?.ok_or_else(not_stored)?,
    };
    let manifest = store.get(&digest)?.ok_or_else(not_stored)?;
    let layer = component_layer(reference, &manifest)?;
    let component = store.get(&layer.digest)?.ok_or_else(not_stored)?;
    Ok(Fetched {
        pinned: reference.at_digest(&digest),
        digest,
        component_digest: layer.digest,
        component,
    })
}

pub(crate) fn check(
    reference: &OciRef,
    what: &'static str,
    expected: &str,
    bytes: &[u8],
) -> Result<(), DistError> {
    let actual = sha256_digest(bytes);
    if actual == expected {
        return Ok(());
    }
    Err(DistError::DigestMismatch {
        reference: reference.to_string(),
        what,
        expected: expected.to_string(),
        actual,
    })
}

/// The one `application/wasm` layer of a manifest in the Wasm OCI layout.
fn component_layer(
    reference: &OciRef,
    manifest: &[u8],
) -> Result<oci_client::manifest::OciDescriptor, DistError> {
    let not_wasm = |reason: String| DistError::NotWasm {
        reference: reference.to_string(),
        reason,
    };
    let manifest: OciImageManifest = serde_json::from_slice(manifest)
        .map_err(|e| not_wasm(format!("its manifest is not an OCI image manifest: {e}")))?;
    if manifest.config.media_type != WASM_CONFIG {
        return Err(not_wasm(format!(
            "its config's media type is `{}`, not `{WASM_CONFIG}`",
            manifest.config.media_type
        )));
    }
    match manifest.layers.as_slice() {
        [layer] if layer.media_type == WASM_LAYER && layer.digest.starts_with("sha256:") => {
            Ok(layer.clone())
        }
        [layer] => Err(not_wasm(format!(
            "its layer is `{}` ({}), not one `{WASM_LAYER}` layer with a sha256 digest",
            layer.media_type, layer.digest
        ))),
        layers => Err(not_wasm(format!(
            "it has {} layers, not one `{WASM_LAYER}` layer",
            layers.len()
        ))),
    }
}

/// A registry's answer as an error that says what to do.
pub(crate) fn classify(
    e: OciDistributionError,
    reference: &OciRef,
    what: &'static str,
    credentials: &Credentials,
) -> DistError {
    let registry = reference.registry().to_string();
    let unauthorized = || DistError::Unauthorized {
        registry: registry.clone(),
        reference: reference.to_string(),
        what,
        credentials: credentials.source.clone(),
    };
    let not_found = || DistError::NotFound {
        registry: registry.clone(),
        reference: reference.to_string(),
    };
    match e {
        OciDistributionError::AuthenticationFailure(_)
        | OciDistributionError::UnauthorizedError { .. } => unauthorized(),
        OciDistributionError::ImageManifestNotFoundError(_) => not_found(),
        OciDistributionError::ServerError {
            code: 401 | 403, ..
        } => unauthorized(),
        OciDistributionError::ServerError { code: 404, .. } => not_found(),
        OciDistributionError::RegistryError { ref envelope, .. } => {
            let codes: Vec<&OciErrorCode> = envelope.errors.iter().map(|e| &e.code).collect();
            if codes
                .iter()
                .any(|c| matches!(c, OciErrorCode::Unauthorized | OciErrorCode::Denied))
            {
                unauthorized()
            } else if codes.iter().any(|c| {
                matches!(
                    c,
                    OciErrorCode::ManifestUnknown
                        | OciErrorCode::NameUnknown
                        | OciErrorCode::NotFound
                )
            }) {
                not_found()
            } else {
                registry_error(e, reference, what)
            }
        }
        OciDistributionError::RequestError(ref r) if r.is_connect() || r.is_timeout() => {
            DistError::Unreachable {
                registry,
                reference: reference.to_string(),
                reason: source_chain(r),
            }
        }
        e => registry_error(e, reference, what),
    }
}

fn registry_error(e: OciDistributionError, reference: &OciRef, what: &'static str) -> DistError {
    DistError::Registry {
        registry: reference.registry().to_string(),
        reference: reference.to_string(),
        what,
        reason: source_chain(&e),
    }
}

/// An error and its causes, `: `-separated (reqwest's own message omits the cause).
fn source_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
