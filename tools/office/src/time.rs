//! Naive dates and datetimes as AgentDojo's pydantic models hold them: read from and written
//! to the state as pydantic dumps them (`2024-05-15T10:00:00`, microseconds only when not
//! zero), parsed from tool arguments as Python's `strptime` does, and `now()` as the naive
//! local (here: UTC) time `datetime.datetime.now()` gives.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::py::repr;

/// A calendar day (`datetime.date`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    pub year: i32,
    pub month: u32,
    pub day: u32,
}

/// A naive datetime (`datetime.datetime` without a time zone), to the microsecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime {
    pub date: Date,
    /// Microseconds since midnight.
    pub micros: i64,
}

const DAY_MICROS: i64 = 86_400_000_000;

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

impl Date {
    /// The day, if it exists: Python's own check and message.
    pub fn new(year: i32, month: u32, day: u32) -> Result<Date, String> {
        if !(1..=9999).contains(&year) {
            return Err(format!("year {year} is out of range"));
        }
        if !(1..=12).contains(&month) {
            return Err("month must be in 1..12".into());
        }
        if day < 1 || day > days_in_month(year, month) {
            return Err("day is out of range for month".into());
        }
        Ok(Date { year, month, day })
    }

    /// Days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
    fn days(self) -> i64 {
        let y = i64::from(self.year) - i64::from(self.month <= 2);
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(self.month);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(self.day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    fn from_days(z: i64) -> Date {
        let z = z + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
        Date { year, month, day }
    }

    /// `date.fromisoformat` of the `YYYY-MM-DD` form pydantic dumps.
    pub fn parse_iso(s: &str) -> Result<Date, String> {
        strptime(s, "%Y-%m-%d").map(|t| t.date)
    }
}

impl fmt::Display for Date {
    /// `date.isoformat()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

impl DateTime {
    /// Microseconds since 1970-01-01T00:00:00.
    fn total(self) -> i64 {
        self.date.days() * DAY_MICROS + self.micros
    }

    fn from_total(t: i64) -> DateTime {
        DateTime {
            date: Date::from_days(t.div_euclid(DAY_MICROS)),
            micros: t.rem_euclid(DAY_MICROS),
        }
    }

    /// `datetime.datetime.now()`: the machine's clock, naive (the sandbox's clock is UTC).
    pub fn now() -> DateTime {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        DateTime::from_total(since)
    }

    /// `self - other`, in microseconds (a `timedelta`).
    pub fn minus(self, other: DateTime) -> i64 {
        self.total() - other.total()
    }

    /// `self + timedelta(microseconds=delta)`.
    pub fn plus(self, delta: i64) -> DateTime {
        DateTime::from_total(self.total() + delta)
    }

    /// `time().isoformat()`: `HH:MM:SS`, with `.ffffff` when there are microseconds.
    pub fn time_iso(self) -> String {
        let s = self.micros / 1_000_000;
        let us = self.micros % 1_000_000;
        let hms = format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
        if us == 0 {
            hms
        } else {
            format!("{hms}.{us:06}")
        }
    }

    /// What pydantic accepts for a datetime in JSON: `YYYY-MM-DD`, then `T` or a space and
    /// `HH:MM`, optionally `:SS` and a fraction (a date alone is midnight).
    pub fn parse_iso(s: &str) -> Result<DateTime, String> {
        let bad = || format!("invalid datetime {}", repr(s));
        let (day, rest) = match s.get(..10) {
            Some(d) => (d, &s[10..]),
            None => return Err(bad()),
        };
        let date = Date::parse_iso(day).map_err(|_| bad())?;
        if rest.is_empty() {
            return Ok(DateTime { date, micros: 0 });
        }
        let rest = rest
            .strip_prefix('T')
            .or_else(|| rest.strip_prefix(' '))
            .ok_or_else(bad)?;
        let (hms, frac) = rest.split_once('.').unwrap_or((rest, ""));
        let parts: Vec<&str> = hms.split(':').collect();
        let num = |p: &str, max: i64| {
            (p.len() == 2 && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse::<i64>().ok())
                .flatten()
                .filter(|v| *v <= max)
        };
        let (h, m, sec) = match parts[..] {
            [h, m] => (num(h, 23), num(m, 59), Some(0)),
            [h, m, s] => (num(h, 23), num(m, 59), num(s, 59)),
            _ => (None, None, None),
        };
        let (Some(h), Some(m), Some(sec)) = (h, m, sec) else {
            return Err(bad());
        };
        let us = if frac.is_empty() {
            0
        } else if frac.len() <= 6 && frac.bytes().all(|b| b.is_ascii_digit()) {
            format!("{frac:0<6}").parse::<i64>().map_err(|_| bad())?
        } else {
            return Err(bad());
        };
        Ok(DateTime {
            date,
            micros: ((h * 60 + m) * 60 + sec) * 1_000_000 + us,
        })
    }
}

impl fmt::Display for DateTime {
    /// As pydantic dumps a naive datetime: `YYYY-MM-DDTHH:MM:SS[.ffffff]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}T{}", self.date, self.time_iso())
    }
}

/// Python's `datetime.strptime(s, fmt)` for the directives the suites use (`%Y %m %d %H %M`)
/// and literal characters (whitespace in `fmt` matches any run of whitespace): the same
/// lenient widths (`2024-5-1` is a date), the same messages.
pub fn strptime(s: &str, fmt: &str) -> Result<DateTime, String> {
    let mut f = [0i64; 5]; // year, month, day, hour, minute
    let end = matches(s.as_bytes(), 0, fmt.as_bytes(), &mut f)
        .ok_or_else(|| format!("time data {} does not match format {}", repr(s), repr(fmt)))?;
    if end < s.len() {
        return Err(format!("unconverted data remains: {}", &s[end..]));
    }
    let date = Date::new(f[0] as i32, f[1] as u32, f[2] as u32)?;
    Ok(DateTime {
        date,
        micros: (f[3] * 60 + f[4]) * 60_000_000,
    })
}

/// Matches `fmt[j..]` against `s[i..]` as the regex `strptime` builds would (its
/// alternatives, longest first, with backtracking); where the match ends.
fn matches(s: &[u8], i: usize, fmt: &[u8], f: &mut [i64; 5]) -> Option<usize> {
    let Some(&c) = fmt.first() else {
        return Some(i);
    };
    if c == b'%' && fmt.len() > 1 {
        let (slot, widths, lo, hi): (usize, &[usize], i64, i64) = match fmt[1] {
            b'Y' => (0, &[4], 0, 9999),
            b'm' => (1, &[2, 1], 1, 12),
            b'd' => (2, &[2, 1], 1, 31),
            b'H' => (3, &[2, 1], 0, 23),
            b'M' => (4, &[2, 1], 0, 59),
            _ => return None,
        };
        for &w in widths {
            let Some(digits) = s.get(i..i + w) else {
                continue;
            };
            if !digits.iter().all(u8::is_ascii_digit) {
                continue;
            }
            let v: i64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
            // The regex for `%d` lets a single digit `0` through nowhere, nor `00`.
            if v < lo || v > hi || (w == 2 && slot != 0 && slot < 3 && v == 0) {
                continue;
            }
            f[slot] = v;
            if let Some(end) = matches(s, i + w, &fmt[2..], f) {
                return Some(end);
            }
        }
        return None;
    }
    if c.is_ascii_whitespace() {
        let n = s[i..]
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count();
        return (n > 0)
            .then_some(())
            .and_then(|_| matches(s, i + n, &fmt[1..], f));
    }
    (s.get(i) == Some(&c))
        .then_some(())
        .and_then(|_| matches(s, i + 1, &fmt[1..], f))
}

impl Serialize for Date {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Date {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Date, D::Error> {
        Date::parse_iso(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl Serialize for DateTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for DateTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<DateTime, D::Error> {
        DateTime::parse_iso(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strptime_is_as_lenient_and_as_strict_as_pythons() {
        let t = strptime("2024-5-1 9:05", "%Y-%m-%d %H:%M").unwrap();
        assert_eq!(t.to_string(), "2024-05-01T09:05:00");
        assert_eq!(
            strptime("2024-05-15T10:00", "%Y-%m-%d %H:%M").unwrap_err(),
            "time data '2024-05-15T10:00' does not match format '%Y-%m-%d %H:%M'"
        );
        assert_eq!(
            strptime("2024-05-15 10:00:00", "%Y-%m-%d %H:%M").unwrap_err(),
            "unconverted data remains: :00"
        );
        assert_eq!(
            strptime("2024-02-30", "%Y-%m-%d").unwrap_err(),
            "day is out of range for month"
        );
        assert!(strptime("2024-13-01", "%Y-%m-%d").is_err());
    }

    #[test]
    fn datetimes_round_trip_as_pydantic_dumps_them() {
        for s in ["2024-05-15T10:00:00", "2024-01-02T03:04:05.120000"] {
            assert_eq!(DateTime::parse_iso(s).unwrap().to_string(), s);
        }
        let a = DateTime::parse_iso("2024-02-28T23:30:00").unwrap();
        let b = a.plus(3_600_000_000);
        assert_eq!(b.to_string(), "2024-02-29T00:30:00");
        assert_eq!(b.minus(a), 3_600_000_000);
        assert_eq!(b.time_iso(), "00:30:00");
        assert!(DateTime::parse_iso("2024-05-15X").is_err());
    }
}
