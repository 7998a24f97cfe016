//! The gate for raw `wasi:sockets`: every address a guest connects or binds to is checked
//! against the call's TCP grants and recorded. Listening, accepting and UDP are refused
//! outright: tools are clients.

use std::net::SocketAddr;
use std::sync::Arc;

use wasmtime_wasi::sockets::SocketAddrUse;

use super::audit::{AuditEvent, AuditLog, Decision};
use crate::grants::SocketGrant;

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
