//! The audit of `wasi:sockets/ip-name-lookup`.
//!
//! wasmtime-wasi enforces the grant (`allow_ip_name_lookup`, set from
//! `NetworkGrants::name_lookup`) but has no hook to observe lookups, so `resolve-addresses`
//! is shadowed in the linker by a wrapper that calls wasmtime-wasi's own implementation and
//! records an [`AuditEvent::NameLookup`] for every call.
//!
//! A name longer than [`MAX_NAME`] bytes cannot be a DNS name (RFC 1035 §2.3.4); it is
//! refused with `invalid-argument` before anything else looks at it, and only its first
//! bytes and its length are recorded.

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

/// The longest DNS name, in bytes, in its text form (RFC 1035 §2.3.4: 255 octets on the
/// wire, two of them the first length byte and the root label).
pub(crate) const MAX_NAME: usize = 253;

fn resolve_addresses(
    mut store: StoreContextMut<'_, HostState>,
    (network, name): (Resource<Network>, String),
) -> wasmtime::Result<(Resolved,)> {
    let state = store.data_mut();
    let audit = state.audit.clone();
    // Fail closed: with the audit budget spent, nothing more may happen.
    audit.check()?;
    state
        .meter
        .owe(u64::try_from(name.len()).unwrap_or(u64::MAX));
    if name.len() > MAX_NAME {
        let shown = cut(&name);
        state.meter.hold(shown.len(), "looked-up names")?;
        audit.record(AuditEvent::NameLookup {
            name: shown,
            decision: Decision::Denied,
        });
        // `network` is borrowed: nothing to release.
        let _ = network;
        return Ok((Err(ErrorCode::InvalidArgument),));
    }
    // The audit event keeps the name for the rest of the call.
    state.meter.hold(name.len(), "looked-up names")?;
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

/// The first 64 bytes of an over-long name, its length and a digest, for the audit.
fn cut(name: &str) -> String {
    super::audit::cut_to(name, 64)
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
    fn long_names_are_cut_at_a_character_boundary() {
        let name = "é".repeat(100);
        let shown = cut(&name);
        assert!(shown.starts_with(&"é".repeat(32)), "{shown}");
        assert!(shown.contains("…[200 bytes, sha256 "), "{shown}");
    }

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
