//! `wasi:random` draws, shadowed: each draw is capped at
//! [`MAX_RANDOM_DRAW`](crate::limits::MAX_RANDOM_DRAW) bytes (a larger one ends the call as
//! `host_memory_limit`, where wasmtime-wasi would allocate up to 64 MiB per call) and
//! charged a unit of fuel per byte generated, so a guest drawing in a loop pays for it.

use wasmtime::StoreContextMut;
use wasmtime::component::Linker;
use wasmtime_wasi::p2::bindings::random::{insecure, random};
use wasmtime_wasi::random::WasiRandomView as _;

use super::HostState;
use crate::limits::MAX_RANDOM_DRAW;

/// The interfaces wasmtime-wasi 48 registers (see `lookup` on the version).
const RANDOM: &str = "wasi:random/random@0.2.12";
const INSECURE: &str = "wasi:random/insecure@0.2.12";

/// Shadows `get-random-bytes` and `get-insecure-random-bytes` in `linker` (which must
/// allow shadowing).
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.instance(RANDOM)?.func_wrap(
        "get-random-bytes",
        |mut store: StoreContextMut<'_, HostState>, (len,): (u64,)| {
            let s = store.data_mut();
            charge(s, len)?;
            Ok((random::Host::get_random_bytes(s.random(), len)?,))
        },
    )?;
    linker.instance(INSECURE)?.func_wrap(
        "get-insecure-random-bytes",
        |mut store: StoreContextMut<'_, HostState>, (len,): (u64,)| {
            let s = store.data_mut();
            charge(s, len)?;
            Ok((insecure::Host::get_insecure_random_bytes(s.random(), len)?,))
        },
    )?;
    Ok(())
}

fn charge(s: &mut HostState, len: u64) -> wasmtime::Result<()> {
    s.meter
        .transient(len, MAX_RANDOM_DRAW, "a wasi:random draw")?;
    s.meter.owe(len);
    Ok(())
}
