//! UTC timestamps for records: RFC 3339 with microseconds (`2025-03-01T12:00:00.123456Z`),
//! written and read back without a date-time dependency.
//!
//! Civil-date conversion after Howard Hinnant's `days_from_civil` / `civil_from_days`
//! (<https://howardhinnant.github.io/date_algorithms.html>).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `t` as `YYYY-MM-DDTHH:MM:SS.ffffffZ`. Times before 1970 are written as the epoch.
pub fn format(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(i64::try_from(days).unwrap_or(i64::MAX));
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_micros()
    )
}

/// The compact form used in run ids: `YYYYMMDDTHHMMSSZ`.
pub fn compact(t: SystemTime) -> String {
    let full = format(t);
    let digits: String = full[..19]
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect();
    format!("{digits}Z")
}

/// Reads back what [`format`] writes; `None` for anything else.
pub fn parse(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 27 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[26] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u64> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se, us) = (num(11..13)?, num(14..16)?, num(17..19)?, num(20..26)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let days = u64::try_from(days_from_civil(i64::try_from(y).ok()?, mo, d)).ok()?;
    let secs = days * 86_400 + h * 3600 + mi * 60 + se;
    Some(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(us))
}

fn civil_from_days(z: i64) -> (i64, u64, u64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m.unsigned_abs(), d.unsigned_abs())
}

fn days_from_civil(y: i64, m: u64, d: u64) -> i64 {
    let (m, d) = (i64::try_from(m).unwrap_or(1), i64::try_from(d).unwrap_or(1));
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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
    }

    #[test]
    fn anything_else_is_not_a_timestamp() {
        for bad in [
            "",
            "2024-03-01",
            "2024-13-01T12:00:00.000000Z",
            "2024-03-01T12:00:00Z",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
