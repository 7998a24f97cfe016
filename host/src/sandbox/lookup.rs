//! The audit of `wasi:sockets/ip-name-lookup`.
//!
//! wasmtime-wasi enforces the grant (`allow_ip_name_lookup`, set from
//! `NetworkGrants::name_lookup`) but has no hook to observe lookups, so `resolve-addresses`
//! is shadowed in the linker by a wrapper that calls wasmtime-wasi's own implementation and
//! records an [`AuditEvent::NameLookup`] for every call.

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{Host as _, ResolveAddressStream};
use wasmtime_wasi::p2::bindings::sockets::network::{ErrorCode, Network};
use wasmtime_wasi::sockets::WasiSocketsView as _;

use super::HostState;
use super::audit::{AuditEvent, Decision};

/// The interface as wasmtime-wasi 48 registers it. A guest importing any `0.2.x` is linked
/// to it by semver, so this one definition covers them all. If an upgrade changes the
/// version, this would define a separate, unused instance: the `hostile::net` tests that
/// expect a `NameLookup` event catch that.
const INTERFACE: &str = "wasi:sockets/ip-name-lookup@0.2.12";

/// Shadows `resolve-addresses`; the linker must allow shadowing.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker
        .instance(INTERFACE)?
        .func_wrap("resolve-addresses", resolve_addresses)
}

type Resolved = Result<Resource<ResolveAddressStream>, ErrorCode>;

fn resolve_addresses(
    mut store: StoreContextMut<'_, HostState>,
    (network, name): (Resource<Network>, String),
) -> wasmtime::Result<(Resolved,)> {
    let state = store.data_mut();
    let audit = state.audit.clone();
    // Fail closed: with the audit budget spent, nothing more may happen.
    audit.check()?;
    let result = match state.sockets().resolve_addresses(network, name.clone()) {
        Ok(stream) => Ok(stream),
        // A trap (e.g. a bad resource handle) stays a trap.
        Err(e) => Err(e.downcast()?),
    };
    audit.record(AuditEvent::NameLookup {
        name,
        decision: decision(&result),
    });
    Ok((result,))
}

/// wasmtime-wasi refuses a lookup without the grant with `permanent-resolver-failure`,
/// at once and before looking at the name; a granted lookup never fails that way at once
/// (a bad name is `invalid-argument`, a failed lookup surfaces later, from the stream).
fn decision<T>(result: &Result<T, ErrorCode>) -> Decision {
    match result {
        Err(ErrorCode::PermanentResolverFailure) => Decision::Denied,
        _ => Decision::Allowed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_refusal_code_is_a_denial() {
        assert_eq!(decision(&Ok(())), Decision::Allowed);
        assert_eq!(
            decision::<()>(&Err(ErrorCode::InvalidArgument)),
            Decision::Allowed
        );
        assert_eq!(
            decision::<()>(&Err(ErrorCode::PermanentResolverFailure)),
            Decision::Denied
        );
    }
}
