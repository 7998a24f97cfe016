//! The environment audit: `wasi:cli/environment.get-environment` shadowed to record an
//! [`AuditEvent::EnvRead`] with the names the guest saw, never their values.
//!
//! Guests built on wasi-libc fetch the environment once, the first time they look at a
//! variable, so this records whether a call read its environment at all, not each
//! lookup.

use wasmtime::StoreContextMut;
use wasmtime::component::Linker;
use wasmtime_wasi::cli::WasiCliView;
use wasmtime_wasi::p2::bindings::cli::environment;

use super::{AuditEvent, HostState};

/// The interface wasmtime-wasi 48 registers (see `fs_gate` on the version).
const ENVIRONMENT: &str = "wasi:cli/environment@0.2.12";

/// Shadows `get-environment` in `linker` (which must allow shadowing).
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.instance(ENVIRONMENT)?.func_wrap(
        "get-environment",
        |mut store: StoreContextMut<'_, HostState>, (): ()| {
            let s = store.data_mut();
            s.audit.check()?;
            let env = environment::Host::get_environment(&mut s.cli())?;
            s.audit.record(AuditEvent::EnvRead {
                names: env.iter().map(|(name, _)| name.clone()).collect(),
            });
            Ok((env,))
        },
    )?;
    Ok(())
}
