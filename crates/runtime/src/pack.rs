//! Embedding a [`DocMap`] into a component as a top-level custom section.
//!
//! Custom sections may appear anywhere in a component binary, so packing appends one; the
//! host reads the last top-level `toolhost:docs` section, so re-packing replaces the docs.

use toolhost_wit_docs::{DocMap, SECTION};

/// Returns `component` with `docs` appended as a `toolhost:docs` custom section.
pub fn pack(component: &[u8], docs: &DocMap) -> Vec<u8> {
    let data = docs.to_json();
    let mut body = Vec::with_capacity(data.len() + SECTION.len() + 8);
    leb128(&mut body, SECTION.len());
    body.extend_from_slice(SECTION.as_bytes());
    body.extend_from_slice(&data);
    let mut out = Vec::with_capacity(component.len() + body.len() + 6);
    out.extend_from_slice(component);
    out.push(0); // custom section id
    leb128(&mut out, body.len());
    out.extend_from_slice(&body);
    out
}

fn leb128(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leb128_encodes_multi_byte_lengths() {
        let mut v = Vec::new();
        leb128(&mut v, 624_485);
        assert_eq!(v, [0xE5, 0x8E, 0x26]);
    }
}
