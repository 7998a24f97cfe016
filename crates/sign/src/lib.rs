//! Signatures on components in cosign's key-based format, so that a key made with `cosign
//! generate-key-pair` signs what toolhost checks and the other way round. No sandbox, no
//! registry: bytes and keys in, a verdict out.
//!
//! # Layout
//!
//! - [`key`]: [`PublicKey`] (PEM SubjectPublicKeyInfo, its key id, verification) and
//!   [`SecretKey`] (PKCS#8 or cosign's encrypted key, key generation, signing); signatures
//!   as base64 DER ECDSA-SHA256 over the bytes (`cosign sign-blob`).
//! - `cosign`: opening cosign's `ENCRYPTED SIGSTORE PRIVATE KEY` (scrypt, NaCl secretbox).
//! - [`payload`]: the OCI side: the `sha256-HEX.sig` tag, the simple-signing payload that
//!   names a manifest digest, its media type and signature annotation.
//! - `pem`: PEM blocks in and out.
//! - `error`: [`SignError`], each message naming the key or file.
//!
//! Data flows: key text → [`PublicKey`] / [`SecretKey`] → a signature over the component's
//! bytes (a file's `.sig`) or over a payload naming its manifest digest (a registry's
//! `sha256-HEX.sig` artifact) → verified against the keys a policy allows.

mod cosign;
mod error;
pub mod key;
pub mod payload;
mod pem;

pub use error::SignError;
pub use key::{PublicKey, SecretKey, decode_signature, encode_signature};
