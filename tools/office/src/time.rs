//! Naive dates and datetimes as AgentDojo's pydantic models hold them: read from and written
//! to the state as pydantic dumps them (`2024-05-15T10:00:00`, microseconds only when not
//! zero), parsed from tool arguments as Python's `strptime` does, and `now()` as the naive
//! local (here: UTC) time `datetime.datetime.now()` gives.

use std::fmt;

use jiff::SignedDuration;
use jiff::civil;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::py::repr;

/// A calendar day (`datetime.date`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date(civil::Date);

/// A naive datetime (`datetime.datetime` without a time zone), to the microsecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime(civil::DateTime);

/// Python's `OverflowError` text for a datetime pushed outside years 1 to 9999.
const OUT_OF_RANGE: &str = "date value out of range";

const DAY_MICROS: i64 = 86_400_000_000;

/// 1970-01-01T00:00:00, where the clock counts from.
const EPOCH: civil::DateTime = civil::DateTime::constant(1970, 1, 1, 0, 0, 0, 0);

impl Date {
    /// The day, if it exists: Python's own checks, in its order, with its messages.
    pub fn new(year: i32, month: u32, day: u32) -> Result<Date, String> {
        if !(1..=9999).contains(&year) {
            return Err(format!("year {year} is out of range"));
        }
        if !(1..=12).contains(&month) {
            return Err("month must be in 1..12".into());
        }
        // With the year and month in range, only the day can make this fail.
        let (year, month) = (year as i16, month as i8);
        i8::try_from(day)
            .ok()
            .and_then(|day| civil::Date::new(year, month, day).ok())
            .map(Date)
            .ok_or_else(|| "day is out of range for month".into())
    }

    /// This day at `hour:minute:second.micro`; `None` when a field is out of range.
    pub fn at(self, hour: u32, minute: u32, second: u32, micro: u32) -> Option<DateTime> {
        let field = |v: u32| i8::try_from(v).ok();
        let nanos = i32::try_from(micro).ok()?.checked_mul(1000)?;
        let time = civil::Time::new(field(hour)?, field(minute)?, field(second)?, nanos).ok()?;
        Some(DateTime(self.0.to_datetime(time)))
    }

    /// `date.fromisoformat` of the `YYYY-MM-DD` form pydantic dumps.
    pub fn parse_iso(s: &str) -> Result<Date, String> {
        strptime(s, "%Y-%m-%d").map(|t| t.date())
    }
}

impl fmt::Display for Date {
    /// `date.isoformat()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        write!(f, "{:04}-{:02}-{:02}", d.year(), d.month(), d.day())
    }
}

impl DateTime {
    /// `datetime.datetime.now()`: the machine's clock, naive (the sandbox's clock is UTC),
    /// to the microsecond as Python keeps it.
    pub fn now() -> DateTime {
        // From the epoch by hand rather than through `jiff::Timestamp::now`, which would
        // bring its time zone and error-printing code into every tool that uses this.
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
        DateTime(EPOCH).plus(since).unwrap_or(DateTime(EPOCH))
    }

    /// The day (`datetime.date()`).
    pub fn date(self) -> Date {
        Date(self.0.date())
    }

    /// The same instant as `jiff` sees it, for what Python's `strftime` would print.
    pub fn civil(self) -> civil::DateTime {
        self.0
    }

    /// `self - other`, in microseconds (a `timedelta`).
    pub fn minus(self, other: DateTime) -> i64 {
        // Ten thousand years are 3.2e17 microseconds: always within an i64.
        self.0.duration_since(other.0).as_micros() as i64
    }

    /// `self + timedelta(microseconds=delta)`; past year 9999 (or before year 1) is
    /// Python's `OverflowError`.
    pub fn plus(self, delta: i64) -> Result<DateTime, String> {
        // Whole days on the date, the rest on the time of day: `jiff`'s own datetime
        // arithmetic would bring its span and error-printing code into every tool.
        let t = self.0;
        let of_day = (i64::from(t.hour()) * 3600 + i64::from(t.minute()) * 60) * 1_000_000
            + i64::from(t.second()) * 1_000_000
            + i64::from(t.subsec_nanosecond() / 1000);
        let total = of_day.checked_add(delta).ok_or(OUT_OF_RANGE)?;
        let (days, micros) = (total.div_euclid(DAY_MICROS), total.rem_euclid(DAY_MICROS));
        let date = t
            .date()
            .checked_add(SignedDuration::from_hours(days * 24))
            .ok()
            .filter(|d| d.year() >= 1)
            .ok_or(OUT_OF_RANGE)?;
        let secs = micros / 1_000_000;
        let at = |v: i64| u32::try_from(v).unwrap_or(u32::MAX);
        Date(date)
            .at(
                at(secs / 3600),
                at(secs / 60 % 60),
                at(secs % 60),
                at(micros % 1_000_000),
            )
            .ok_or_else(|| OUT_OF_RANGE.into())
    }

    /// `time().isoformat()`: `HH:MM:SS`, with `.ffffff` when there are microseconds.
    pub fn time_iso(self) -> String {
        let t = self.0;
        let hms = format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second());
        match t.subsec_nanosecond() / 1000 {
            0 => hms,
            us => format!("{hms}.{us:06}"),
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
            return date.at(0, 0, 0, 0).ok_or_else(bad);
        }
        let rest = rest
            .strip_prefix('T')
            .or_else(|| rest.strip_prefix(' '))
            .ok_or_else(bad)?;
        let (hms, frac) = rest.split_once('.').unwrap_or((rest, ""));
        let parts: Vec<&str> = hms.split(':').collect();
        let num = |p: &str, max: u32| {
            (p.len() == 2 && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse::<u32>().ok())
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
            format!("{frac:0<6}").parse::<u32>().map_err(|_| bad())?
        } else {
            return Err(bad());
        };
        date.at(h, m, sec, us).ok_or_else(bad)
    }
}

impl fmt::Display for DateTime {
    /// As pydantic dumps a naive datetime: `YYYY-MM-DDTHH:MM:SS[.ffffff]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}T{}", self.date(), self.time_iso())
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
    // The matcher keeps the hour within 0..=23 and the minute within 0..=59.
    date.at(f[3] as u32, f[4] as u32, 0, 0)
        .ok_or_else(|| format!("time data {} does not match format {}", repr(s), repr(fmt)))
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
        let b = a.plus(3_600_000_000).unwrap();
        assert_eq!(b.to_string(), "2024-02-29T00:30:00");
        assert_eq!(b.minus(a), 3_600_000_000);
        assert_eq!(b.time_iso(), "00:30:00");
        assert!(DateTime::parse_iso("2024-05-15X").is_err());
        let end = DateTime::parse_iso("9999-12-31T23:00:00").unwrap();
        assert_eq!(
            end.plus(3_600_000_000).unwrap_err(),
            "date value out of range"
        );
        let start = DateTime::parse_iso("0001-01-01T00:00:00").unwrap();
        assert_eq!(start.plus(-1).unwrap_err(), "date value out of range");
    }

    #[test]
    fn now_is_to_the_microsecond() {
        assert_eq!(DateTime::now().civil().subsec_nanosecond() % 1000, 0);
    }
}
