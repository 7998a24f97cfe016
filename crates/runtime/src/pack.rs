//! Embedding a [`DocMap`] (`toolhost:docs`) or a policy (`toolhost:policy`) into a
//! component as a top-level custom section.
//!
//! Custom sections may appear anywhere in a component binary, so packing appends one; the
//! host reads the last top-level `toolhost:docs` section, so re-packing replaces the docs.

use toolhost_wit_docs::DocMap;

/// Returns `component` with `docs` appended as a `toolhost:docs` custom section.
pub fn pack(component: &[u8], docs: &DocMap) -> Vec<u8> {
    docs.pack(component)
}

/// Returns `component` with `policy` (the TOML of a [`Declared`](toolhost_policy::Declared)
/// policy, already checked) appended as a top-level `toolhost:policy` custom section; the
/// host reads the last one, so re-packing replaces it. The section is part of the
/// component's bytes: its digest and signature cover it.
pub fn pack_policy(component: &[u8], policy: &str) -> Vec<u8> {
    use wasm_encoder::{ComponentSection, CustomSection};
    let section = CustomSection {
        name: toolhost_policy::DECLARED_SECTION.into(),
        data: policy.as_bytes().into(),
    };
    let mut out = Vec::with_capacity(component.len() + policy.len() + 32);
    out.extend_from_slice(component);
    section.append_to_component(&mut out);
    out
}
