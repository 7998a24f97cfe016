//! Embedding a [`DocMap`] into a component as a top-level custom section.
//!
//! Custom sections may appear anywhere in a component binary, so packing appends one; the
//! host reads the last top-level `toolhost:docs` section, so re-packing replaces the docs.

use toolhost_wit_docs::DocMap;

/// Returns `component` with `docs` appended as a `toolhost:docs` custom section.
pub fn pack(component: &[u8], docs: &DocMap) -> Vec<u8> {
    docs.pack(component)
}
