//! Code mode's interpreter, carried inside the host: the `tools/python` component (monty,
//! built for `wasm32-wasip2` by this crate's build script), compressed with zstd, so that
//! an installed `toolhost` runs programs with nothing beside it.
//!
//! [`component`] gives its bytes back (checked to be [`LEN`] long); the host loads them as
//! it loads any component, through the compiled cache keyed by [`DIGEST`], the SHA-256
//! computed when they were built (not computed again).

include!(concat!(env!("OUT_DIR"), "/python.rs"));

static PACKED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/python.wasm.zst"));

/// The label the built-in interpreter is shown and journaled under.
pub const LABEL: &str = "<built-in>/python.wasm";

/// The interpreter component's bytes: [`LEN`] bytes whose SHA-256 is [`DIGEST`].
pub fn component() -> Result<Vec<u8>, String> {
    let bytes = zstd::bulk::decompress(PACKED, LEN)
        .map_err(|e| format!("the built-in interpreter does not unpack: {e}"))?;
    if bytes.len() != LEN {
        return Err(format!(
            "the built-in interpreter unpacks to {} bytes, not {LEN}",
            bytes.len()
        ));
    }
    Ok(bytes)
}
