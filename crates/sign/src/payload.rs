//! Cosign's OCI signatures: a signature artifact tagged `sha256-HEX.sig` beside the image
//! (here, the component's manifest) in the same repository; each layer is a
//! simple-signing payload ([`MEDIA_TYPE`]), JSON naming the manifest digest it vouches
//! for, with the base64 signature of the payload's bytes in the layer's [`ANNOTATION`].
//! Spec: sigstore/cosign `specs/SIGNATURE_SPEC.md`.

use serde_json::{Value, json};

use crate::SignError;

/// The media type of a signature layer.
pub const MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation that holds the base64 signature of the payload.
pub const ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// `critical.type` of an image signature.
pub const TYPE: &str = "cosign container image signature";

/// The tag of the signatures of the manifest `digest` (`sha256:HEX` → `sha256-HEX.sig`).
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// The payload that signs manifest `digest` of `docker_reference` (`REGISTRY/REPOSITORY`).
pub fn payload(docker_reference: &str, digest: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "critical": {
            "identity": { "docker-reference": docker_reference },
            "image": { "docker-manifest-digest": digest },
            "type": TYPE,
        },
        "optional": null,
    }))
    .expect("JSON values serialize")
}

/// The manifest digest a payload vouches for (`critical.image.docker-manifest-digest`),
/// once its `critical.type` is an image signature's.
pub fn signed_digest(payload: &[u8]) -> Result<String, SignError> {
    let bad = |reason: &str| SignError::Payload {
        reason: reason.to_string(),
    };
    let v: Value = serde_json::from_slice(payload).map_err(|e| bad(&e.to_string()))?;
    let critical = &v["critical"];
    if critical["type"] != TYPE {
        return Err(bad(&format!("its `critical.type` is not `{TYPE}`")));
    }
    critical["image"]["docker-manifest-digest"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| bad("it has no `critical.image.docker-manifest-digest`"))
}
