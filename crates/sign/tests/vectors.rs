//! Interoperability with cosign, on vectors cosign made (`tests/cosign/README.md` says
//! where each comes from): its public key verifies its signature of its simple-signing
//! payload, another key and another message do not, and its encrypted private key opens
//! with its password and signs what its public half verifies.

use std::path::PathBuf;

use toolhost_sign::{PublicKey, SecretKey, SignError, decode_signature, payload};

fn vector(name: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cosign");
    std::fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn cosigns_signature_of_its_payload_verifies() {
    let key = PublicKey::from_pem(&vector("cosign.pub"), "cosign.pub").unwrap();
    let message = vector("payload.json");
    let sig = decode_signature(&vector("payload.json.sig"), "payload.json.sig").unwrap();
    key.verify(message.as_bytes(), &sig).unwrap();
    assert_eq!(
        payload::signed_digest(message.as_bytes()).unwrap(),
        "sha256:f3cfc9d0dbf931d3db4685ec659b7ac68e2a578219da4aae65427886e649b06b"
    );
    // The key id is the SHA-256 of the key's DER SubjectPublicKeyInfo.
    assert_eq!(key.key_id().len(), 64);
    assert_eq!(PublicKey::from_pem(&key.to_pem(), "again").unwrap(), key);
}

#[test]
fn another_key_or_another_message_does_not() {
    let sig = decode_signature(&vector("payload.json.sig"), "payload.json.sig").unwrap();
    let other = PublicKey::from_pem(&vector("other.pub"), "other.pub").unwrap();
    let message = vector("payload.json");
    assert_eq!(
        other.verify(message.as_bytes(), &sig),
        Err(SignError::Mismatch {
            key_id: other.key_id()
        })
    );
    let key = PublicKey::from_pem(&vector("cosign.pub"), "cosign.pub").unwrap();
    let changed = message.replace("busybox", "busybax");
    assert!(key.verify(changed.as_bytes(), &sig).is_err());
}

#[test]
fn cosigns_encrypted_key_opens_and_signs() {
    let text = vector("cosign_generated_encrypted_empty_private.key");
    let key = SecretKey::from_pem(&text, b"", "cosign.key").unwrap();
    let sig = key.sign(b"component bytes").unwrap();
    key.public().verify(b"component bytes", &sig).unwrap();
    let wrong = SecretKey::from_pem(&text, b"guess", "cosign.key").unwrap_err();
    assert_eq!(
        wrong.to_string(),
        "cannot decrypt the cosign key cosign.key: wrong password (set COSIGN_PASSWORD to the key's password), or the key was changed"
    );
}

#[test]
fn a_generated_key_round_trips_through_pem() {
    let key = SecretKey::generate().unwrap();
    let again = SecretKey::from_pem(&key.to_pem(), b"", "k").unwrap();
    assert_eq!(again.public(), key.public());
    let sig = again.sign(b"x").unwrap();
    key.public().verify(b"x", &sig).unwrap();
    let public = PublicKey::from_pem(&key.public().to_pem(), "k.pub").unwrap();
    assert_eq!(public.key_id(), key.public().key_id());
}

/// A key sealed as cosign seals one opens with its password only; the sealed block is
/// cosign's format (the same reader opens cosign's own vector above).
#[test]
fn a_generated_key_sealed_with_a_password_opens_with_it_only() {
    let key = SecretKey::generate().unwrap();
    let sealed = key.to_encrypted_pem(b"correct horse").unwrap();
    assert!(sealed.starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n"));
    assert!(!sealed.contains(&key.to_pem()));
    let opened = SecretKey::from_pem(&sealed, b"correct horse", "k.key").unwrap();
    assert_eq!(opened.public(), key.public());
    let wrong = SecretKey::from_pem(&sealed, b"battery staple", "k.key").unwrap_err();
    assert!(wrong.to_string().contains("wrong password"), "{wrong}");
    // Each sealing draws its own salt and nonce.
    assert_ne!(sealed, key.to_encrypted_pem(b"correct horse").unwrap());
}

#[test]
fn what_is_not_a_p256_key_is_named() {
    let rsa = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAvM/dHoi6nSy7hbKHLYUr\n-----END PUBLIC KEY-----\n";
    let e = PublicKey::from_pem(rsa, "key `rsa`").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("key `rsa` is not an ECDSA P-256 public key"),
        "{e}"
    );
    let e = decode_signature("not base64!", "calc.wasm.sig").unwrap_err();
    assert_eq!(
        e.to_string(),
        "calc.wasm.sig is not a signature: not base64 (Invalid symbol 33, offset 9.)"
    );
}
