//! What a guest makes the host hold through `wasi:http/types`, counted against the call's
//! `Limits::max_host_bytes`.
//!
//! Building a request needs no grant, and every piece of it lives on the host until the
//! call ends or the guest drops it: header fields (up to wasmtime-wasi-http's 128 KiB per
//! field set), the buffers of an outgoing body, the request target. These functions are
//! shadowed by wrappers that charge what they take in before calling wasmtime-wasi-http's
//! own implementation; a charge over the budget ends the call as `host_memory_limit`.

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, LinkerInstance, Resource};
use wasmtime_wasi_http::WasiHttpView as _;
use wasmtime_wasi_http::p2::bindings::http::types::{
    Fields, HeaderError, HostFields, HostOutgoingRequest, HostOutgoingResponse, OutgoingBody,
    OutgoingRequest, OutgoingResponse,
};

use crate::sandbox::HostState;
use crate::sandbox::audit::{AuditEvent, AuditLog, Decision};

/// The interface wasmtime-wasi-http 48 registers (see `lookup` on the version).
const TYPES: &str = "wasi:http/types@0.2.12";

/// Bytes an outgoing body's stream hands to hyper at once; with
/// [`OUTGOING_BODY_CHUNKS`] this bounds what an unsent body holds.
pub(super) const OUTGOING_BODY_CHUNK: usize = 64 << 10;

/// Chunks an outgoing body buffers beyond the one being sent.
pub(super) const OUTGOING_BODY_CHUNKS: usize = 1;

/// What an outgoing body may hold while nobody sends it: its buffered chunks, plus the
/// one empty slot wasmtime-wasi-http's channel keeps.
const OUTGOING_BODY_BYTES: usize = (OUTGOING_BODY_CHUNKS + 1) * OUTGOING_BODY_CHUNK;

/// Bytes a header map spends per entry beyond its name and value (the figure
/// wasmtime-wasi-http's own size estimate uses).
const FIELD_OVERHEAD: usize = 32;

type Header<T> = Result<T, HeaderError>;

/// Shadows the functions of `wasi:http/types` that take in data the host keeps: header
/// fields, outgoing bodies, request targets.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    let mut types = linker.instance(TYPES)?;
    add_fields(&mut types)?;
    add_bodies(&mut types)?;
    add_targets(&mut types)
}

/// `fields.from-list`, `set`, `append` and `clone`: each charges the names and values it
/// takes in (a clone all of its map's), and records a forbidden header's refusal.
fn add_fields(types: &mut LinkerInstance<'_, HostState>) -> wasmtime::Result<()> {
    types.func_wrap(
        "[static]fields.from-list",
        |mut store: StoreContextMut<'_, HostState>, (entries,): (Vec<(String, Vec<u8>)>,)| {
            let s = store.data_mut();
            let bytes = entries
                .iter()
                .map(|(n, v)| field_bytes(n.len(), v.len()))
                .sum();
            s.meter.hold(bytes, "HTTP fields")?;
            let names: Vec<String> = entries.iter().map(|(n, _)| n.clone()).collect();
            let made: Header<Resource<Fields>> = match HostFields::from_list(&mut s.http(), entries)
            {
                Ok(f) => Ok(f),
                Err(e) => Err(e.downcast()?),
            };
            if let Err(HeaderError::Forbidden) = made
                && let Some(name) = names.iter().find(|n| forbidden(n))
            {
                refused(&s.audit, name);
            }
            Ok((made,))
        },
    )?;
    types.func_wrap(
        "[method]fields.set",
        |mut store: StoreContextMut<'_, HostState>,
         (fields, name, values): (Resource<Fields>, String, Vec<Vec<u8>>)| {
            let s = store.data_mut();
            let bytes = values
                .iter()
                .map(|v| field_bytes(name.len(), v.len()))
                .sum();
            let done = change_field(s, bytes, name, |s, name| {
                HostFields::set(&mut s.http(), fields, name, values)
            })?;
            Ok((done,))
        },
    )?;
    types.func_wrap(
        "[method]fields.append",
        |mut store: StoreContextMut<'_, HostState>,
         (fields, name, value): (Resource<Fields>, String, Vec<u8>)| {
            let s = store.data_mut();
            let bytes = field_bytes(name.len(), value.len());
            let done = change_field(s, bytes, name, |s, name| {
                HostFields::append(&mut s.http(), fields, name, value)
            })?;
            Ok((done,))
        },
    )?;
    types.func_wrap(
        "[method]fields.clone",
        |mut store: StoreContextMut<'_, HostState>, (fields,): (Resource<Fields>,)| {
            let s = store.data_mut();
            // A clone shares the map until either side changes, then copies all of it:
            // counted as a copy from the start.
            let bytes = s
                .table
                .get(&fields)?
                .iter()
                .map(|(n, v)| field_bytes(n.as_str().len(), v.len()))
                .sum();
            s.meter.hold(bytes, "HTTP fields")?;
            Ok((HostFields::clone(&mut s.http(), fields)?,))
        },
    )?;
    Ok(())
}

/// `outgoing-request.body` and `outgoing-response.body`: each charges what an unsent body
/// may hold.
fn add_bodies(types: &mut LinkerInstance<'_, HostState>) -> wasmtime::Result<()> {
    types.func_wrap(
        "[method]outgoing-request.body",
        |mut store: StoreContextMut<'_, HostState>, (request,): (Resource<OutgoingRequest>,)| {
            let s = store.data_mut();
            s.meter.hold(OUTGOING_BODY_BYTES, "outgoing HTTP bodies")?;
            let body: Result<Resource<OutgoingBody>, ()> =
                HostOutgoingRequest::body(&mut s.http(), request)?;
            Ok((body,))
        },
    )?;
    types.func_wrap(
        "[method]outgoing-response.body",
        |mut store: StoreContextMut<'_, HostState>, (response,): (Resource<OutgoingResponse>,)| {
            let s = store.data_mut();
            s.meter.hold(OUTGOING_BODY_BYTES, "outgoing HTTP bodies")?;
            let body: Result<Resource<OutgoingBody>, ()> =
                HostOutgoingResponse::body(&mut s.http(), response)?;
            Ok((body,))
        },
    )?;
    Ok(())
}

/// `outgoing-request.set-path-with-query` and `set-authority`: each charges the text it
/// sets.
fn add_targets(types: &mut LinkerInstance<'_, HostState>) -> wasmtime::Result<()> {
    types.func_wrap(
        "[method]outgoing-request.set-path-with-query",
        |mut store: StoreContextMut<'_, HostState>,
         (request, path): (Resource<OutgoingRequest>, Option<String>)| {
            let s = store.data_mut();
            s.meter
                .hold(path.as_ref().map_or(0, String::len), "HTTP request targets")?;
            let set: Result<(), ()> =
                HostOutgoingRequest::set_path_with_query(&mut s.http(), request, path)?;
            Ok((set,))
        },
    )?;
    types.func_wrap(
        "[method]outgoing-request.set-authority",
        |mut store: StoreContextMut<'_, HostState>,
         (request, authority): (Resource<OutgoingRequest>, Option<String>)| {
            let s = store.data_mut();
            s.meter.hold(
                authority.as_ref().map_or(0, String::len),
                "HTTP request targets",
            )?;
            let set: Result<(), ()> =
                HostOutgoingRequest::set_authority(&mut s.http(), request, authority)?;
            Ok((set,))
        },
    )?;
    Ok(())
}

/// Whether `name` is a header wasmtime-wasi-http refuses to let a guest set.
fn forbidden(name: &str) -> bool {
    http::HeaderName::from_bytes(name.as_bytes())
        .is_ok_and(|h| wasmtime_wasi_http::DEFAULT_FORBIDDEN_HEADERS.contains(&h))
}

/// Records the refusal of header `name` (its value is never recorded).
fn refused(audit: &AuditLog, name: &str) {
    audit.record(AuditEvent::Http {
        method: String::new(),
        url: String::new(),
        resolved: None,
        decision: Decision::Denied,
        reason: Some(format!("a tool may not set the header `{name}`")),
    });
}

/// `fields.set` and `fields.append`: charges `bytes`, makes the change, and records a
/// forbidden name's refusal; a trap stays a trap.
fn change_field(
    s: &mut HostState,
    bytes: usize,
    name: String,
    change: impl FnOnce(&mut HostState, String) -> Result<(), wasmtime_wasi_http::p2::HeaderError>,
) -> wasmtime::Result<Header<()>> {
    s.meter.hold(bytes, "HTTP fields")?;
    let shown = name.clone();
    let done: Header<()> = match change(s, name) {
        Ok(()) => Ok(()),
        Err(e) => Err(e.downcast()?),
    };
    if let Err(HeaderError::Forbidden) = done {
        refused(&s.audit, &shown);
    }
    Ok(done)
}

fn field_bytes(name: usize, value: usize) -> usize {
    name.saturating_add(value).saturating_add(FIELD_OVERHEAD)
}
