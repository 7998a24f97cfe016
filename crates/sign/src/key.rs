//! ECDSA P-256 keys as cosign writes them: the public key a PEM `PUBLIC KEY`
//! (SubjectPublicKeyInfo, DER), the private key PKCS#8 (`PRIVATE KEY`, what `toolhost tool
//! keygen` writes) or cosign's encrypted form (`cosign.rs`). Signatures are ASN.1 DER
//! ECDSA over SHA-256 of the bytes, written base64 (what `cosign sign-blob` prints).

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_ASN1, ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _,
    UnparsedPublicKey,
};
use sha2::{Digest as _, Sha256};

use crate::{SignError, cosign, pem};

/// The DER prefix of every P-256 SubjectPublicKeyInfo (RFC 5480): the algorithm
/// `id-ecPublicKey` with the curve `prime256v1`, then a 66-byte BIT STRING holding the
/// uncompressed point (`04 || X || Y`).
const SPKI_P256_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];
const SPKI_LEN: usize = SPKI_P256_PREFIX.len() + 65;

/// A P-256 public key that signatures are checked against.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    spki: Vec<u8>,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.key_id())
    }
}

impl PublicKey {
    /// Reads a PEM `PUBLIC KEY` block; `what` names it in errors (`key \`release\``).
    pub fn from_pem(text: &str, what: &str) -> Result<PublicKey, SignError> {
        let der = pem::decode(text, "PUBLIC KEY", what)?;
        PublicKey::from_spki(der, what)
    }

    fn from_spki(spki: Vec<u8>, what: &str) -> Result<PublicKey, SignError> {
        let bad = |reason: &str| SignError::PublicKey {
            what: what.to_string(),
            reason: reason.to_string(),
        };
        if !spki.starts_with(&SPKI_P256_PREFIX[..23]) {
            return Err(bad(
                "its algorithm is not id-ecPublicKey on curve P-256 (prime256v1)",
            ));
        }
        if spki.len() != SPKI_LEN || !spki.starts_with(&SPKI_P256_PREFIX) || spki[26] != 4 {
            return Err(bad("its point is not an uncompressed P-256 point"));
        }
        Ok(PublicKey { spki })
    }

    /// The key as a PEM `PUBLIC KEY` block (what `cosign.pub` holds).
    pub fn to_pem(&self) -> String {
        pem::encode(&self.spki, "PUBLIC KEY")
    }

    /// The key id: the hex SHA-256 of the key's DER SubjectPublicKeyInfo (as Rekor and
    /// TUF name a key), what the journal records beside the key's name.
    pub fn key_id(&self) -> String {
        hex::encode(Sha256::digest(&self.spki))
    }

    /// Whether `signature` (DER) is this key's ECDSA-SHA256 signature of `message`.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> Result<(), SignError> {
        UnparsedPublicKey::new(
            &ECDSA_P256_SHA256_ASN1,
            &self.spki[SPKI_P256_PREFIX.len()..],
        )
        .verify(message, signature)
        .map_err(|_| SignError::Mismatch {
            key_id: self.key_id(),
        })
    }
}

/// A P-256 private key that signs.
pub struct SecretKey {
    pair: EcdsaKeyPair,
    pkcs8: Vec<u8>,
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey(public {})", self.public().key_id())
    }
}

impl SecretKey {
    /// A new key from the system's random source.
    pub fn generate() -> Result<SecretKey, SignError> {
        let rng = SystemRandom::new();
        let doc =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).map_err(|_| {
                SignError::PrivateKey {
                    what: "a new key".into(),
                    reason: "the system's random source failed".into(),
                }
            })?;
        SecretKey::from_pkcs8(doc.as_ref().to_vec(), "a new key")
    }

    /// Reads a private key: PEM `PRIVATE KEY` (PKCS#8), or cosign's `ENCRYPTED SIGSTORE
    /// PRIVATE KEY` (also its older `ENCRYPTED COSIGN PRIVATE KEY`), decrypted with
    /// `password`. `what` names the key in errors.
    pub fn from_pem(text: &str, password: &[u8], what: &str) -> Result<SecretKey, SignError> {
        let der = match pem::label(text) {
            Some(label @ ("ENCRYPTED SIGSTORE PRIVATE KEY" | "ENCRYPTED COSIGN PRIVATE KEY")) => {
                let label = if label.contains("SIGSTORE") {
                    "ENCRYPTED SIGSTORE PRIVATE KEY"
                } else {
                    "ENCRYPTED COSIGN PRIVATE KEY"
                };
                let sealed = pem::decode(text, label, what)?;
                cosign::decrypt(&sealed, password, what)?
            }
            _ => pem::decode(text, "PRIVATE KEY", what)?,
        };
        SecretKey::from_pkcs8(der, what)
    }

    fn from_pkcs8(pkcs8: Vec<u8>, what: &str) -> Result<SecretKey, SignError> {
        let pair = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_ASN1_SIGNING,
            &pkcs8,
            &SystemRandom::new(),
        )
        .map_err(|e| SignError::PrivateKey {
            what: what.to_string(),
            reason: format!("PKCS#8 of an ECDSA P-256 key expected ({e})"),
        })?;
        Ok(SecretKey { pair, pkcs8 })
    }

    /// The key as an unencrypted PEM `PRIVATE KEY` block (PKCS#8).
    pub fn to_pem(&self) -> String {
        pem::encode(&self.pkcs8, "PRIVATE KEY")
    }

    /// The key sealed with `password` as cosign seals it: an `ENCRYPTED SIGSTORE PRIVATE
    /// KEY` block that `cosign sign --key` (with `COSIGN_PASSWORD`) and [`SecretKey::from_pem`]
    /// open.
    pub fn to_encrypted_pem(&self, password: &[u8]) -> Result<String, SignError> {
        let sealed = cosign::encrypt(&self.pkcs8, password)?;
        Ok(pem::encode(&sealed, "ENCRYPTED SIGSTORE PRIVATE KEY"))
    }

    /// The matching public key.
    pub fn public(&self) -> PublicKey {
        let mut spki = SPKI_P256_PREFIX.to_vec();
        spki.extend_from_slice(self.pair.public_key().as_ref());
        PublicKey { spki }
    }

    /// The ASN.1 DER ECDSA-SHA256 signature of `message`.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, SignError> {
        self.pair
            .sign(&SystemRandom::new(), message)
            .map(|s| s.as_ref().to_vec())
            .map_err(|_| SignError::PrivateKey {
                what: "the signing key".into(),
                reason: "the system's random source failed".into(),
            })
    }
}

/// A signature as `cosign sign-blob` writes it: base64 of the DER signature.
pub fn encode_signature(der: &[u8]) -> String {
    STANDARD.encode(der)
}

/// The DER signature in `text` (base64, surrounding whitespace and line breaks
/// allowed); `what` names it in errors.
pub fn decode_signature(text: &str, what: &str) -> Result<Vec<u8>, SignError> {
    let body: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let der = STANDARD.decode(body).map_err(|e| SignError::BadSignature {
        what: what.to_string(),
        reason: format!("not base64 ({e})"),
    })?;
    if der.first() != Some(&0x30) || !(8..=72).contains(&der.len()) {
        return Err(SignError::BadSignature {
            what: what.to_string(),
            reason: "not an ASN.1 DER ECDSA signature".into(),
        });
    }
    Ok(der)
}
