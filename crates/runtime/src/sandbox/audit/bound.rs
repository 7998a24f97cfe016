//! Bounded event values: a guest chooses the names and paths it hands the host, so an
//! event keeps at most [`MAX_VALUE_BYTES`] of each, and says what it cut.

use super::AuditEvent;

/// The longest value an event keeps whole. Longer ones keep their start, their length and
/// a digest, so two long paths that share a start can still be told apart.
pub(crate) const MAX_VALUE_BYTES: usize = 512;

/// `s` if short enough, else its first bytes (on a character boundary) followed by
/// `…[N bytes, sha256 PREFIX]`.
pub fn cut(s: &mut String) {
    if s.len() > MAX_VALUE_BYTES {
        *s = cut_str(s);
    }
}

/// [`cut`] of a borrowed value, without copying the whole of a long one first.
pub(crate) fn cut_str(s: &str) -> String {
    cut_to(s, MAX_VALUE_BYTES)
}

/// `s` if at most `max` bytes, else its first bytes, its length and a digest prefix.
pub(crate) fn cut_to(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let digest = crate::cache::sha256_hex(s.as_bytes());
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}…[{} bytes, sha256 {}]",
        &s[..end],
        s.len(),
        &digest[..16]
    )
}

/// `event` with every value cut to [`MAX_VALUE_BYTES`].
pub fn bounded(mut event: AuditEvent) -> AuditEvent {
    match &mut event {
        AuditEvent::File {
            action,
            path,
            reason,
            ..
        } => {
            cut(action);
            cut(path);
            reason.iter_mut().for_each(cut);
        }
        AuditEvent::Http {
            method,
            url,
            resolved,
            reason,
            ..
        } => {
            cut(method);
            cut(url);
            resolved.iter_mut().for_each(cut);
            reason.iter_mut().for_each(cut);
        }
        AuditEvent::Socket {
            action, address, ..
        } => {
            cut(action);
            cut(address);
        }
        AuditEvent::NameLookup { name, .. } => cut(name),
        // Only granted names can appear here: the policy bounds how many.
        AuditEvent::EnvRead { names } => names.iter_mut().for_each(cut),
        AuditEvent::Call {
            operation, reason, ..
        } => {
            cut(operation);
            cut(reason);
        }
        AuditEvent::Limit { limit, detail } => {
            cut(limit);
            cut(detail);
        }
        AuditEvent::Trap { kind, detail } => {
            cut(kind);
            cut(detail);
        }
        AuditEvent::Repeated { action, .. } => cut(action),
        AuditEvent::Written { .. } => {}
    }
    event
}

/// About how many bytes of host memory `event` holds: its values plus a fixed overhead.
pub fn size(event: &AuditEvent) -> usize {
    const OVERHEAD: usize = 96;
    let values = match event {
        AuditEvent::File {
            action,
            path,
            reason,
            ..
        } => action.len() + path.len() + reason.as_ref().map_or(0, String::len),
        AuditEvent::Http {
            method,
            url,
            resolved,
            reason,
            ..
        } => {
            method.len()
                + url.len()
                + resolved.as_ref().map_or(0, String::len)
                + reason.as_ref().map_or(0, String::len)
        }
        AuditEvent::Socket {
            action, address, ..
        } => action.len() + address.len(),
        AuditEvent::NameLookup { name, .. } => name.len(),
        AuditEvent::EnvRead { names } => names.iter().map(|n| n.len() + 24).sum(),
        AuditEvent::Call {
            operation, reason, ..
        } => operation.len() + reason.len(),
        AuditEvent::Limit { limit, detail } => limit.len() + detail.len(),
        AuditEvent::Trap { kind, detail } => kind.len() + detail.len(),
        AuditEvent::Repeated { action, .. } => action.len(),
        AuditEvent::Written { .. } => 0,
    };
    OVERHEAD + values
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Decision;

    #[test]
    fn short_values_stay_whole() {
        let mut s = "/data/a.txt".to_string();
        cut(&mut s);
        assert_eq!(s, "/data/a.txt");
    }

    #[test]
    fn long_values_keep_their_start_length_and_digest() {
        let long = format!("/data/{}", "é".repeat(4 << 20));
        let mut s = long.clone();
        cut(&mut s);
        assert!(s.len() < MAX_VALUE_BYTES + 64, "{}", s.len());
        assert!(s.starts_with("/data/éé"));
        let digest = crate::cache::sha256_hex(long.as_bytes());
        assert!(
            s.ends_with(&format!(
                "…[{} bytes, sha256 {}]",
                long.len(),
                &digest[..16]
            )),
            "{s}"
        );
    }

    #[test]
    fn every_value_of_an_event_is_cut() {
        let e = bounded(AuditEvent::NameLookup {
            name: "a".repeat(1 << 20),
            decision: Decision::Denied,
        });
        assert!(size(&e) < 1024, "{}", size(&e));
        let e = bounded(AuditEvent::File {
            action: "stat".into(),
            path: "p".repeat(100_000),
            decision: Decision::Allowed,
            reason: Some("r".repeat(100_000)),
        });
        assert!(size(&e) < 2 * 1024, "{}", size(&e));
    }
}
