//! [`SignError`]: what can go wrong reading a key or checking a signature; each message
//! names the key or file at fault and says why.

/// An error of a key, a signature or a payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignError {
    /// The text is not a PEM block of the kind expected.
    #[error("{what} is not a PEM `{label}` block: {reason}")]
    Pem {
        what: String,
        label: &'static str,
        reason: String,
    },
    /// A public key that is not ECDSA P-256 (cosign's key-based default).
    #[error(
        "{what} is not an ECDSA P-256 public key (SubjectPublicKeyInfo, what `cosign generate-key-pair` and `toolhost tool keygen` write): {reason}"
    )]
    PublicKey { what: String, reason: String },
    /// A private key that cannot be used.
    #[error("{what} is not a usable ECDSA P-256 private key: {reason}")]
    PrivateKey { what: String, reason: String },
    /// An encrypted cosign key that could not be decrypted.
    #[error("cannot decrypt the cosign key {what}: {reason}")]
    Decrypt { what: String, reason: String },
    /// A signature that is not base64 of an ASN.1 DER ECDSA signature.
    #[error("{what} is not a signature: {reason}")]
    BadSignature { what: String, reason: String },
    /// The signature does not verify with the key over the bytes.
    #[error("the signature does not verify with key `{key_id}`")]
    Mismatch { key_id: String },
    /// A simple-signing payload that cannot be read.
    #[error("the signature payload is not cosign's simple-signing JSON: {reason}")]
    Payload { reason: String },
}
