//! UTC timestamps for records: RFC 3339 with microseconds (`2025-03-01T12:00:00.123456Z`),
//! written and read back through `jiff`'s timestamps.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jiff::Timestamp;

/// `t` as `YYYY-MM-DDTHH:MM:SS.ffffffZ`. Times before 1970 are written as the epoch, times
/// past year 9999 as its last microsecond.
pub fn format(t: SystemTime) -> String {
    format!("{:.6}", timestamp(t))
}

/// The compact form used in run ids: `YYYYMMDDTHHMMSSZ`.
pub fn compact(t: SystemTime) -> String {
    timestamp(t).strftime("%Y%m%dT%H%M%SZ").to_string()
}

/// `t` to the microsecond (what a record keeps), within the range [`format()`] promises.
fn timestamp(t: SystemTime) -> Timestamp {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_micros())
        .ok()
        .and_then(|us| Timestamp::from_microsecond(us).ok())
        .unwrap_or(Timestamp::MAX)
}

/// Reads back what [`format()`] writes; `None` for anything else (another shape, a date
/// that does not exist, a time before 1970).
pub fn parse(s: &str) -> Option<SystemTime> {
    // The one shape `format` writes: RFC 3339 allows others (offsets, other precisions, a
    // lower-case `t`) that no journal holds.
    const SHAPE: &[u8; 27] = b"dddd-dd-ddTdd:dd:dd.ddddddZ";
    let fits = s.len() == SHAPE.len()
        && s.bytes().zip(SHAPE).all(|(c, &want)| match want {
            b'd' => c.is_ascii_digit(),
            _ => c == want,
        });
    let ts: Timestamp = s.parse().ok().filter(|_| fits)?;
    let us = u64::try_from(ts.as_microsecond()).ok()?;
    Some(UNIX_EPOCH + Duration::from_micros(us))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants_format_and_parse_back() {
        let t = UNIX_EPOCH + Duration::from_micros(1_709_294_400_123_456);
        assert_eq!(format(t), "2024-03-01T12:00:00.123456Z");
        assert_eq!(compact(t), "20240301T120000Z");
        assert_eq!(parse("2024-03-01T12:00:00.123456Z"), Some(t));
        assert_eq!(format(UNIX_EPOCH), "1970-01-01T00:00:00.000000Z");
        // A leap day and the turn of a century.
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(format(leap), "2000-02-29T00:00:00.000000Z");
        assert_eq!(parse(&format(leap)), Some(leap));
        // Nanoseconds are cut, not rounded; before 1970 is the epoch.
        let late = UNIX_EPOCH + Duration::from_nanos(1_709_294_400_999_999_999);
        assert_eq!(format(late), "2024-03-01T12:00:00.999999Z");
        assert_eq!(
            format(UNIX_EPOCH - Duration::from_secs(1)),
            format(UNIX_EPOCH)
        );
    }

    #[test]
    fn anything_else_is_not_a_timestamp() {
        for bad in [
            "",
            "2024-03-01",
            "2024-13-01T12:00:00.000000Z",
            "2024-03-01T12:00:00Z",
            "2024-02-30T12:00:00.000000Z",
            "1969-12-31T23:59:59.000000Z",
            "2024-03-01t12:00:00.000000Z",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
