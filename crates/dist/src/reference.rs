//! `oci://REGISTRY/REPOSITORY[:TAG|@sha256:HEX]`: a component in a registry. The registry
//! is always named (no implicit Docker Hub), and a digest is always sha256.

use std::fmt;

use oci_client::Reference;

use crate::DistError;

/// The scheme that marks a reference wherever a tool path is accepted.
pub const SCHEME: &str = "oci://";

/// A parsed `oci://` reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciRef {
    inner: Reference,
}

impl OciRef {
    /// Parses `text` (`oci://REGISTRY/REPOSITORY[:TAG|@sha256:HEX]`); with neither tag
    /// nor digest the tag is `latest`.
    pub fn parse(text: &str) -> Result<OciRef, DistError> {
        let bad = |reason: &str| DistError::BadReference {
            reference: text.to_string(),
            reason: reason.to_string(),
        };
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or_else(|| bad("it does not start with `oci://`"))?;
        let (host, path) = rest
            .split_once('/')
            .ok_or_else(|| bad("it names no repository (oci://REGISTRY/REPOSITORY:TAG)"))?;
        if host.is_empty() || path.is_empty() {
            return Err(bad("it names no registry or no repository"));
        }
        if let Some((_, digest)) = path.split_once('@') {
            let hex = digest
                .strip_prefix("sha256:")
                .ok_or_else(|| bad("its digest is not `sha256:`"))?;
            if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                return Err(bad(
                    "its digest is not `sha256:` and 64 lowercase hex digits",
                ));
            }
        }
        let inner = match host.strip_prefix('[') {
            Some(v6) => ipv6(host, v6, path).map_err(|why| bad(&why))?,
            None => Reference::try_from(rest).map_err(|e| bad(&e.to_string()))?,
        };
        if inner.registry() != host {
            return Err(bad(
                "the registry must be named explicitly (a host with a `.` or a port, or `localhost`)",
            ));
        }
        Ok(OciRef { inner })
    }

    /// Whether `text` is meant as an OCI reference (starts with `oci://`).
    pub fn is_oci(text: &str) -> bool {
        text.starts_with(SCHEME)
    }

    /// The registry (`HOST[:PORT]`).
    pub fn registry(&self) -> &str {
        self.inner.registry()
    }

    /// The repository inside the registry.
    pub fn repository(&self) -> &str {
        self.inner.repository()
    }

    /// The tag, if the reference has one (and no digest).
    pub fn tag(&self) -> Option<&str> {
        match self.inner.digest() {
            Some(_) => None,
            None => Some(self.inner.tag().unwrap_or("latest")),
        }
    }

    /// The digest (`sha256:HEX`), if the reference names one.
    pub fn digest(&self) -> Option<&str> {
        self.inner.digest()
    }

    /// The same repository pinned at `digest`.
    pub fn at_digest(&self, digest: &str) -> OciRef {
        OciRef {
            inner: Reference::with_digest(
                self.registry().to_string(),
                self.repository().to_string(),
                digest.to_string(),
            ),
        }
    }

    /// The same repository at `tag`.
    pub fn at_tag(&self, tag: &str) -> OciRef {
        OciRef {
            inner: Reference::with_tag(
                self.registry().to_string(),
                self.repository().to_string(),
                tag.to_string(),
            ),
        }
    }

    /// Whether the registry's host is this machine: `localhost`, 127.0.0.0/8 or `[::1]`.
    pub fn is_loopback(&self) -> bool {
        let registry = self.registry();
        let host = match registry.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => registry.split(':').next().unwrap_or(""),
        };
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    pub(crate) fn inner(&self) -> &Reference {
        &self.inner
    }
}

impl fmt::Display for OciRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry(), self.repository())?;
        match (self.digest(), self.tag()) {
            (Some(d), _) => write!(f, "@{d}"),
            (None, Some(t)) => write!(f, ":{t}"),
            (None, None) => Ok(()),
        }
    }
}

/// A reference whose registry is an IPv6 literal (`[::1]:5000`), which the distribution
/// grammar `oci_client` parses with has no room for: the address is checked here, the
/// repository, tag and digest by the grammar (under a stand-in registry), and the
/// reference is made with the registry as written.
fn ipv6(host: &str, after_bracket: &str, path: &str) -> Result<Reference, String> {
    let (addr, port) = after_bracket
        .split_once(']')
        .ok_or("its IPv6 registry has no closing `]`")?;
    addr.parse::<std::net::Ipv6Addr>()
        .map_err(|e| format!("`{addr}` is not an IPv6 address: {e}"))?;
    if !port.is_empty()
        && port
            .strip_prefix(':')
            .is_none_or(|p| p.parse::<u16>().is_err())
    {
        return Err(format!("`{port}` after the IPv6 address is not `:PORT`"));
    }
    let parsed = Reference::try_from(format!("localhost/{path}")).map_err(|e| e.to_string())?;
    let repository = parsed.repository().to_string();
    Ok(match (parsed.tag(), parsed.digest()) {
        (Some(tag), Some(digest)) => {
            Reference::with_tag_and_digest(host.into(), repository, tag.into(), digest.into())
        }
        (None, Some(digest)) => Reference::with_digest(host.into(), repository, digest.into()),
        (tag, None) => Reference::with_tag(host.into(), repository, tag.unwrap_or("latest").into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tags_and_digests() {
        let r = OciRef::parse("oci://127.0.0.1:5000/tools/calc:1.0").unwrap();
        assert_eq!(
            (r.registry(), r.repository(), r.tag()),
            ("127.0.0.1:5000", "tools/calc", Some("1.0"))
        );
        assert!(r.is_loopback());
        let d = format!("sha256:{}", "a".repeat(64));
        let r = OciRef::parse(&format!("oci://ghcr.io/o/calc@{d}")).unwrap();
        assert_eq!(
            (r.digest(), r.tag(), r.is_loopback()),
            (Some(d.as_str()), None, false)
        );
        assert_eq!(r.to_string(), format!("oci://ghcr.io/o/calc@{d}"));
        let r = OciRef::parse("oci://localhost:1/calc").unwrap();
        assert_eq!(r.tag(), Some("latest"));
        assert!(
            OciRef::parse("oci://localhost:5000/calc:1")
                .unwrap()
                .is_loopback()
        );
        assert!(
            !OciRef::parse("oci://127.example.com/calc:1")
                .unwrap()
                .is_loopback()
        );
    }

    #[test]
    fn refuses_what_is_not_a_reference() {
        for bad in [
            "calc.wasm",
            "oci://calc",
            "oci://calc:1.0",
            "oci://library/calc:1.0",
            "oci://ghcr.io/o/Calc:1",
            "oci://ghcr.io/o/calc@sha256:abc",
            "oci://ghcr.io/o/calc@md5:0123456789abcdef0123456789abcdef",
        ] {
            assert!(OciRef::parse(bad).is_err(), "{bad}");
        }
    }
}
