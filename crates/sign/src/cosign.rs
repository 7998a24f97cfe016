//! Cosign's encrypted private keys (`cosign generate-key-pair`): a PEM block whose body is
//! JSON naming the key derivation (scrypt, N = 2^15 or 2^16, r = 8, p = 1, a salt) and the
//! cipher (NaCl secretbox, XSalsa20-Poly1305, a nonce) and holding the sealed PKCS#8 key.
//! The format is sigstore's `pkg/cryptoutils` (`EncryptedSigstorePrivateKey`); other
//! parameters are refused, as cosign refuses them (an attacker's N would cost minutes).
//! [`encrypt`] seals a key the same way (N = 2^15, as `cosign generate-key-pair`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use poly1305::Poly1305;
use poly1305::universal_hash::KeyInit;
use ring::rand::{SecureRandom, SystemRandom};
use salsa20::XSalsa20;
use salsa20::cipher::{KeyIvInit, StreamCipher};
use serde::Deserialize;

use crate::SignError;

#[derive(Deserialize)]
struct Sealed {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(Deserialize)]
struct Kdf {
    name: String,
    params: KdfParams,
    salt: String,
}

#[derive(Deserialize)]
struct KdfParams {
    #[serde(rename = "N")]
    n: u64,
    r: u32,
    p: u32,
}

#[derive(Deserialize)]
struct Cipher {
    name: String,
    nonce: String,
}

/// The PKCS#8 DER sealed in `sealed` (the PEM block's bytes), opened with `password`.
pub(crate) fn decrypt(sealed: &[u8], password: &[u8], what: &str) -> Result<Vec<u8>, SignError> {
    let bad = |reason: String| SignError::Decrypt {
        what: what.to_string(),
        reason,
    };
    let s: Sealed = serde_json::from_slice(sealed)
        .map_err(|e| bad(format!("its body is not cosign's key JSON: {e}")))?;
    if s.kdf.name != "scrypt" || s.cipher.name != "nacl/secretbox" {
        return Err(bad(format!(
            "it uses `{}` and `{}`, not scrypt and nacl/secretbox",
            s.kdf.name, s.cipher.name
        )));
    }
    let log_n = match (s.kdf.params.n, s.kdf.params.r, s.kdf.params.p) {
        (32768, 8, 1) => 15,
        (65536, 8, 1) => 16,
        (n, r, p) => {
            return Err(bad(format!(
                "its scrypt parameters N={n} r={r} p={p} are not cosign's (N=32768 or 65536, r=8, p=1)"
            )));
        }
    };
    let b64 = |field: &str, text: &str| {
        STANDARD
            .decode(text)
            .map_err(|e| bad(format!("its {field} is not base64: {e}")))
    };
    let salt = b64("salt", &s.kdf.salt)?;
    let nonce: [u8; 24] = b64("nonce", &s.cipher.nonce)?
        .try_into()
        .map_err(|_| bad("its nonce is not 24 bytes".into()))?;
    let ciphertext = b64("ciphertext", &s.ciphertext)?;
    let params = scrypt::Params::new(log_n, 8, 1, 32).expect("cosign's parameters are valid");
    let mut key = [0u8; 32];
    scrypt::scrypt(password, &salt, &params, &mut key).expect("32 bytes is a valid length");
    secretbox_open(&key, &nonce, &ciphertext).ok_or_else(|| {
        bad(
            "wrong password (set COSIGN_PASSWORD to the key's password), or the key was changed"
                .into(),
        )
    })
}

/// NaCl's `crypto_secretbox_open` (XSalsa20-Poly1305): `sealed` is the 16-byte Poly1305 tag,
/// then the ciphertext. The first 32 bytes of the key stream are the Poly1305 key; the
/// rest encrypt the message.
fn secretbox_open(key: &[u8; 32], nonce: &[u8; 24], sealed: &[u8]) -> Option<Vec<u8>> {
    if sealed.len() < 16 {
        return None;
    }
    let (tag, ciphertext) = sealed.split_at(16);
    let mut stream = XSalsa20::new(key.into(), nonce.into());
    let mut mac_key = [0u8; 32];
    stream.apply_keystream(&mut mac_key);
    let expected = Poly1305::new(&mac_key.into()).compute_unpadded(ciphertext);
    // Constant time: every byte is compared whatever the first difference.
    let differ = expected
        .iter()
        .zip(tag)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    if differ != 0 {
        return None;
    }
    let mut message = ciphertext.to_vec();
    stream.apply_keystream(&mut message);
    Some(message)
}

/// `pkcs8` sealed as cosign seals a private key: scrypt (N = 2^15, r = 8, p = 1, a random
/// 32-byte salt) derives the key of a NaCl secretbox (a random 24-byte nonce); the JSON
/// is the PEM block's body.
pub(crate) fn encrypt(pkcs8: &[u8], password: &[u8]) -> Result<Vec<u8>, SignError> {
    let rng = SystemRandom::new();
    let mut salt = [0u8; 32];
    let mut nonce = [0u8; 24];
    rng.fill(&mut salt)
        .and_then(|()| rng.fill(&mut nonce))
        .map_err(|_| SignError::PrivateKey {
            what: "a new key".into(),
            reason: "the system's random source failed".into(),
        })?;
    let params = scrypt::Params::new(15, 8, 1, 32).expect("cosign's parameters are valid");
    let mut key = [0u8; 32];
    scrypt::scrypt(password, &salt, &params, &mut key).expect("32 bytes is a valid length");
    let sealed = secretbox_seal(&key, &nonce, pkcs8);
    Ok(serde_json::to_vec(&serde_json::json!({
        "kdf": {
            "name": "scrypt",
            "params": {"N": 32768, "r": 8, "p": 1},
            "salt": STANDARD.encode(salt),
        },
        "cipher": {"name": "nacl/secretbox", "nonce": STANDARD.encode(nonce)},
        "ciphertext": STANDARD.encode(sealed),
    }))
    .expect("JSON values serialize"))
}

/// NaCl's `crypto_secretbox` (XSalsa20-Poly1305): the 16-byte Poly1305 tag, then the
/// ciphertext ([`secretbox_open`] reverses it).
fn secretbox_seal(key: &[u8; 32], nonce: &[u8; 24], message: &[u8]) -> Vec<u8> {
    let mut stream = XSalsa20::new(key.into(), nonce.into());
    let mut mac_key = [0u8; 32];
    stream.apply_keystream(&mut mac_key);
    let mut ciphertext = message.to_vec();
    stream.apply_keystream(&mut ciphertext);
    let tag = Poly1305::new(&mac_key.into()).compute_unpadded(&ciphertext);
    let mut sealed = tag.to_vec();
    sealed.extend_from_slice(&ciphertext);
    sealed
}
