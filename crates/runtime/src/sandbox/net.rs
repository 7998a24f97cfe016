//! The gate for raw `wasi:sockets`: every address a guest connects or binds to is checked
//! against the call's TCP grants and recorded. Listening, accepting and UDP are refused
//! outright: tools are clients.
//!
//! Creating a socket is a decision too, recorded by shadowing `create-tcp-socket` and
//! `create-udp-socket`: a socket holds a host descriptor, so a call without a TCP grant
//! gets none (`access-denied`, as wasmtime-wasi answers with TCP not allowed), and UDP is
//! refused to every call.

use std::net::SocketAddr;
use std::sync::Arc;

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::p2::UdpSocket;
use wasmtime_wasi::p2::bindings::sockets::network::{ErrorCode, IpAddressFamily};
use wasmtime_wasi::p2::bindings::sockets::tcp_create_socket::Host as _;
use wasmtime_wasi::sockets::{SocketAddrUse, WasiSocketsView as _};

use super::HostState;
use super::audit::{AuditEvent, AuditLog, Decision};
use crate::grants::SocketGrant;

/// The interfaces wasmtime-wasi 48 registers (see `lookup` on the version).
const TCP_CREATE: &str = "wasi:sockets/tcp-create-socket@0.2.12";
const UDP_CREATE: &str = "wasi:sockets/udp-create-socket@0.2.12";

/// Shadows the socket constructors in `linker` (which must allow shadowing).
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.instance(TCP_CREATE)?.func_wrap(
        "create-tcp-socket",
        |mut store: StoreContextMut<'_, HostState>, (family,): (IpAddressFamily,)| {
            let s = store.data_mut();
            let result = match s.sockets().create_tcp_socket(family) {
                Ok(socket) => Ok(socket),
                // A trap (e.g. the resource table is full) stays a trap.
                Err(e) => Err(e.downcast()?),
            };
            let decision = match &result {
                Err(ErrorCode::AccessDenied) => Decision::Denied,
                _ => Decision::Allowed,
            };
            created(&s.audit, "tcp-create", family, decision);
            Ok((result,))
        },
    )?;
    linker.instance(UDP_CREATE)?.func_wrap(
        "create-udp-socket",
        |store: StoreContextMut<'_, HostState>, (family,): (IpAddressFamily,)| {
            created(&store.data().audit, "udp-create", family, Decision::Denied);
            let refused: Result<Resource<UdpSocket>, ErrorCode> = Err(ErrorCode::AccessDenied);
            Ok((refused,))
        },
    )?;
    Ok(())
}

fn created(audit: &AuditLog, action: &str, family: IpAddressFamily, decision: Decision) {
    audit.record(AuditEvent::Socket {
        action: action.into(),
        address: match family {
            IpAddressFamily::Ipv4 => "ipv4",
            IpAddressFamily::Ipv6 => "ipv6",
        }
        .into(),
        decision,
    });
}

/// Whether `use_` of `addr` is allowed under `grants`.
pub(crate) fn allowed(grants: &[SocketGrant], addr: SocketAddr, use_: SocketAddrUse) -> bool {
    match use_ {
        SocketAddrUse::TcpConnect => grants.iter().any(|g| g.allows(addr)),
        // The implicit bind before a connect asks for the wildcard address and port 0;
        // binding anything else would make the tool a server.
        SocketAddrUse::TcpBind => addr.ip().is_unspecified() && addr.port() == 0,
        _ => false,
    }
}

fn action(use_: SocketAddrUse) -> &'static str {
    match use_ {
        SocketAddrUse::TcpBind => "tcp-bind",
        SocketAddrUse::TcpListen => "tcp-listen",
        SocketAddrUse::TcpAccept => "tcp-accept",
        SocketAddrUse::TcpConnect => "tcp-connect",
        SocketAddrUse::UdpBind => "udp-bind",
        SocketAddrUse::UdpSend => "udp-send",
        SocketAddrUse::UdpReceive => "udp-receive",
    }
}

/// The check installed with `WasiCtxBuilder::socket_addr_check`.
pub(crate) fn socket_check(
    grants: Vec<SocketGrant>,
    audit: AuditLog,
) -> impl Fn(SocketAddr, SocketAddrUse) -> std::pin::Pin<Box<dyn Future<Output = bool> + Send + Sync>>
+ Send
+ Sync
+ 'static {
    let grants: Arc<[SocketGrant]> = grants.into();
    move |addr, use_| {
        // Fail closed: with the audit budget spent, nothing more connects.
        let ok = allowed(&grants, addr, use_) && !audit.is_spent();
        // The implicit wildcard bind is bookkeeping, not a decision worth a record.
        if !(ok && matches!(use_, SocketAddrUse::TcpBind)) {
            audit.record(AuditEvent::Socket {
                action: action(use_).into(),
                address: addr.to_string(),
                decision: if ok {
                    Decision::Allowed
                } else {
                    Decision::Denied
                },
            });
        }
        Box::pin(async move { ok })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connects_only_to_granted_addresses_and_never_listens() {
        let g: Vec<SocketGrant> = vec!["127.0.0.1:5432".parse().unwrap()];
        let a: SocketAddr = "127.0.0.1:5432".parse().unwrap();
        assert!(allowed(&g, a, SocketAddrUse::TcpConnect));
        assert!(!allowed(
            &g,
            "127.0.0.1:22".parse().unwrap(),
            SocketAddrUse::TcpConnect
        ));
        assert!(allowed(
            &g,
            "0.0.0.0:0".parse().unwrap(),
            SocketAddrUse::TcpBind
        ));
        assert!(!allowed(
            &g,
            "0.0.0.0:8080".parse().unwrap(),
            SocketAddrUse::TcpBind
        ));
        assert!(!allowed(&g, a, SocketAddrUse::TcpListen));
        assert!(!allowed(&g, a, SocketAddrUse::UdpSend));
    }
}
