//! Cosign's signatures beside a component in its registry: the artifact tagged
//! `sha256-HEX.sig` (HEX: the component's manifest digest) in the same repository, an OCI
//! image manifest whose layers are simple-signing payloads, each with its base64 signature
//! in the `dev.cosignproject.cosign/signature` annotation, as `cosign sign --key` writes it
//! and `cosign verify --key` reads it. This module moves them; `toolhost_sign` checks them.

use std::collections::BTreeMap;

use oci_client::RegistryOperation;
use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::{
    IMAGE_CONFIG_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciImageManifest,
};
use toolhost_sign::payload::{ANNOTATION, MEDIA_TYPE, signature_tag};

use crate::registry::{check, classify, client};
use crate::{Connect, DistError, OciRef};

/// One signature of a component's manifest: the payload signed and its signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureLayer {
    /// The simple-signing JSON, as the registry holds it (the signed bytes).
    pub payload: Vec<u8>,
    /// The base64 DER signature of `payload`.
    pub signature: String,
}

/// The signature artifact's reference for `pinned` (a reference with a digest).
pub fn signature_reference(pinned: &OciRef) -> OciRef {
    pinned.at_tag(&signature_tag(pinned.digest().unwrap_or_default()))
}

/// The signatures stored beside `pinned` (a reference with a digest); none when its
/// signature tag does not exist.
pub async fn pull_signatures(
    pinned: &OciRef,
    connect: &Connect,
) -> Result<Vec<SignatureLayer>, DistError> {
    let at = signature_reference(pinned);
    let client = client(&at, connect)?;
    let auth = &connect.credentials.auth;
    let fail = |e| classify(e, &at, "the signature pull", &connect.credentials);
    client
        .auth(at.inner(), auth, RegistryOperation::Pull)
        .await
        .map_err(fail)?;
    let accepted = [OCI_IMAGE_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE];
    let manifest = match client.pull_manifest_raw(at.inner(), auth, &accepted).await {
        Ok((bytes, _)) => bytes,
        Err(e) => match fail(e) {
            DistError::NotFound { .. } => return Ok(Vec::new()),
            e => return Err(e),
        },
    };
    let manifest: OciImageManifest =
        serde_json::from_slice(&manifest).map_err(|e| DistError::NotWasm {
            reference: at.to_string(),
            reason: format!("its manifest is not an OCI image manifest: {e}"),
        })?;
    let mut found = Vec::new();
    for layer in manifest
        .layers
        .iter()
        .filter(|l| l.media_type == MEDIA_TYPE)
    {
        let Some(signature) = layer.annotations.as_ref().and_then(|a| a.get(ANNOTATION)) else {
            continue;
        };
        let mut payload = Vec::new();
        client
            .pull_blob(at.inner(), layer, &mut payload)
            .await
            .map_err(fail)?;
        check(&at, "signature payload", &layer.digest, &payload)?;
        found.push(SignatureLayer {
            payload,
            signature: signature.clone(),
        });
    }
    Ok(found)
}

/// Adds `signature` to the signatures beside `pinned` (kept: those already there), as
/// cosign does; returns the signature artifact's reference.
pub async fn push_signature(
    pinned: &OciRef,
    signature: SignatureLayer,
    connect: &Connect,
) -> Result<OciRef, DistError> {
    let mut all = pull_signatures(pinned, connect).await?;
    if !all.contains(&signature) {
        all.push(signature);
    }
    let at = signature_reference(pinned);
    let client = client(&at, connect)?;
    let auth = &connect.credentials.auth;
    let fail = |e| classify(e, &at, "the signature push", &connect.credentials);
    let layers: Vec<ImageLayer> = all
        .into_iter()
        .map(|s| {
            let annotations = BTreeMap::from([(ANNOTATION.to_string(), s.signature)]);
            ImageLayer::new(s.payload, MEDIA_TYPE.into(), Some(annotations))
        })
        .collect();
    let config = Config::new(
        signature_config(&layers),
        IMAGE_CONFIG_MEDIA_TYPE.into(),
        None,
    );
    let mut manifest = OciImageManifest::build(&layers, &config, None);
    manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.into());
    client
        .auth(at.inner(), auth, RegistryOperation::Push)
        .await
        .map_err(fail)?;
    client
        .push(at.inner(), &layers, config, auth, Some(manifest))
        .await
        .map_err(fail)?;
    Ok(at)
}

/// The config blob cosign writes for a signature artifact: an empty image whose root file
/// system lists the payloads.
fn signature_config(layers: &[ImageLayer]) -> Vec<u8> {
    let diff_ids: Vec<String> = layers.iter().map(|l| l.sha256_digest()).collect();
    serde_json::to_vec(&serde_json::json!({
        "architecture": "",
        "created": "0001-01-01T00:00:00Z",
        "history": [{ "created": "0001-01-01T00:00:00Z" }],
        "os": "",
        "rootfs": { "type": "layers", "diff_ids": diff_ids },
        "config": {},
    }))
    .expect("JSON values serialize")
}
