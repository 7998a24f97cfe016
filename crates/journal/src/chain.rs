//! The journal chain's hash: SHA-256 as 64 lower-case hex digits. A record's `prev` is
//! this digest of the line before it, the head hash covers the last line, and a stored
//! blob is named by the digest of its text. `verify` recomputes it over journals written
//! long ago, so its output may never change: same bytes in, same 64 characters out.

use sha2::{Digest, Sha256};

/// The hex SHA-256 of `bytes`, as the chain, the head hash and blob names write it.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_digest_is_lower_case_hex_sha256() {
        // FIPS 180-2's "abc" example.
        assert_eq!(
            super::sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
