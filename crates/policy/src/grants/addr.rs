//! Special-purpose address ranges. A tool's traffic to any of these is refused unless the
//! grant that lets it through names the address literally (`http://127.0.0.1:8080`), so a
//! granted *name* that resolves to, or is rebound to, an internal address reaches nothing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Cloud metadata endpoints outside the link-local range (which is refused anyway).
const METADATA_V4: &[Ipv4Addr] = &[
    Ipv4Addr::new(168, 63, 129, 16),   // Azure WireServer
    Ipv4Addr::new(100, 100, 100, 200), // Alibaba Cloud
];
/// AWS's IPv6 instance metadata endpoint.
const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);

/// An IPv4-mapped or -compatible IPv6 address as the IPv4 address it carries.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// The special range `ip` is in, if any: a phrase for messages ("loopback", …).
pub fn special_range(ip: IpAddr) -> Option<&'static str> {
    match canonical(ip) {
        IpAddr::V4(a) => v4_range(a),
        IpAddr::V6(a) => v6_range(a),
    }
}

fn v4_range(a: Ipv4Addr) -> Option<&'static str> {
    let [b0, b1, ..] = a.octets();
    Some(
        if METADATA_V4.contains(&a) || a == Ipv4Addr::new(169, 254, 169, 254) {
            "cloud metadata"
        } else if a.is_loopback() {
            "loopback"
        } else if a.is_private() {
            "private"
        } else if a.is_link_local() {
            "link-local"
        } else if a.is_unspecified() || b0 == 0 {
            "unspecified (\"this network\")"
        } else if a.is_broadcast() || a.is_multicast() {
            "broadcast or multicast"
        } else if b0 == 100 && (64..128).contains(&b1) {
            "shared address space (carrier-grade NAT)"
        } else if b0 == 198 && (b1 == 18 || b1 == 19) {
            "benchmarking"
        } else if b0 >= 240 {
            "reserved"
        } else {
            return None;
        },
    )
}

fn v6_range(a: Ipv6Addr) -> Option<&'static str> {
    let s0 = a.segments()[0];
    Some(if a == METADATA_V6 {
        "cloud metadata"
    } else if a.is_loopback() {
        "loopback"
    } else if a.is_unspecified() {
        "unspecified"
    } else if (s0 & 0xfe00) == 0xfc00 {
        "unique local (private)"
    } else if (s0 & 0xffc0) == 0xfe80 {
        "link-local"
    } else if a.is_multicast() {
        "multicast"
    } else if s0 == 0x64 && a.segments()[1] == 0xff9b {
        // NAT64 can carry any IPv4 address, internal ones included.
        "NAT64"
    } else if a.to_ipv4().is_some() {
        "IPv4-compatible"
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(s: &str) -> Option<&'static str> {
        special_range(s.parse().unwrap())
    }

    #[test]
    fn classifies_internal_addresses() {
        assert_eq!(range("127.0.0.1"), Some("loopback"));
        assert_eq!(range("10.1.2.3"), Some("private"));
        assert_eq!(range("192.168.0.1"), Some("private"));
        assert_eq!(range("172.16.0.1"), Some("private"));
        assert_eq!(range("169.254.169.254"), Some("cloud metadata"));
        assert_eq!(range("169.254.1.1"), Some("link-local"));
        assert_eq!(range("0.0.0.0"), Some("unspecified (\"this network\")"));
        assert_eq!(
            range("100.64.0.1"),
            Some("shared address space (carrier-grade NAT)")
        );
        assert_eq!(range("::1"), Some("loopback"));
        assert_eq!(range("::ffff:127.0.0.1"), Some("loopback"));
        assert_eq!(range("::ffff:10.0.0.1"), Some("private"));
        assert_eq!(range("fd00:ec2::254"), Some("cloud metadata"));
        assert_eq!(range("fe80::1"), Some("link-local"));
        assert_eq!(range("fc00::1"), Some("unique local (private)"));
        assert_eq!(range("64:ff9b::a00:1"), Some("NAT64"));
        assert_eq!(range("93.184.216.34"), None);
        assert_eq!(range("2606:2800:220:1::"), None);
    }
}
