//! Naive datetimes as the travel suite's Python sees them: parsed by
//! `datetime.fromisoformat` (Python 3.11's grammar, naive or with a UTC offset), written
//! to the state as pydantic dumps them (`2024-05-13T10:00:00`), and shown to the planner
//! as `str(datetime)` prints them (`2024-05-13 10:00:00`).

use office::py::repr;
use office::{Date, DateTime as Naive};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DateTime {
    naive: Naive,
    /// The UTC offset in seconds, for an aware datetime.
    offset: Option<i32>,
}

/// A datetime's fields as written, before Python's range checks.
struct Fields {
    year: i32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    micro: u32,
    offset: Option<i32>,
}

/// Digits only, exactly `n` of them.
fn num(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
}

/// `HH[:MM[:SS[.f+]]]` or its compact form `HH[MM[SS[.f+]]]`; fractions of 1 to 6 digits,
/// as Python 3.11 reads them (more than 6 are cut, as it does).
fn time(s: &str) -> Option<(u32, u32, u32, u32)> {
    let (hms, frac) = match s.find(['.', ',']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let parts: Vec<&str> = if hms.contains(':') {
        hms.split(':').collect()
    } else {
        (0..hms.len().div_ceil(2))
            .map(|i| hms.get(2 * i..(2 * i + 2).min(hms.len())).unwrap_or(""))
            .collect()
    };
    if parts.is_empty() || parts.len() > 3 || (frac.is_some() && parts.len() != 3) {
        return None;
    }
    let mut hms = [0u32; 3];
    for (slot, p) in hms.iter_mut().zip(&parts) {
        *slot = num(p, 2)?;
    }
    let micro = match frac {
        None => 0,
        Some(f) if !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) => {
            let f = &f[..f.len().min(6)];
            f.parse::<u32>().ok()? * 10u32.pow(6 - f.len() as u32)
        }
        Some(_) => return None,
    };
    Some((hms[0], hms[1], hms[2], micro))
}

/// `Z` or `±HH[:MM[:SS]]`, in seconds; `None` when there is no offset, `Err` when malformed.
fn split_offset(s: &str) -> Result<(&str, Option<i32>), ()> {
    if let Some(t) = s.strip_suffix('Z') {
        return Ok((t, Some(0)));
    }
    let Some(i) = s.rfind(['+', '-']) else {
        return Ok((s, None));
    };
    let sign = if s.as_bytes()[i] == b'-' { -1 } else { 1 };
    let (h, m, sec, _) = time(&s[i + 1..]).ok_or(())?;
    Ok((&s[..i], Some(sign * (h * 3600 + m * 60 + sec) as i32)))
}

impl DateTime {
    /// Python's `datetime.fromisoformat`, with its error message.
    pub fn from_iso(s: &str) -> Result<DateTime, String> {
        let invalid = || format!("Invalid isoformat string: {}", repr(s));
        let f = Fields::parse(s).ok_or_else(invalid)?;
        let date = Date::new(f.year, f.month, f.day)?;
        f.check_time()?;
        Ok(DateTime {
            naive: date
                .at(f.hour, f.minute, f.second, f.micro)
                .ok_or_else(invalid)?,
            offset: f.offset,
        })
    }

    /// The state's form: `YYYY-MM-DDTHH:MM:SS[.ffffff][Z|±HH:MM]`, as pydantic writes it.
    pub fn to_json(&self) -> String {
        let offset = match self.offset {
            None => String::new(),
            Some(0) => "Z".into(),
            Some(o) => offset_text(o),
        };
        format!("{}{offset}", self.naive)
    }

    /// `str(datetime)`: a space between date and time, `+00:00` for UTC.
    pub fn to_py_str(&self) -> String {
        let offset = self.offset.map(offset_text).unwrap_or_default();
        format!("{} {}{offset}", self.date_iso(), self.naive.time_iso())
    }

    pub fn date_iso(&self) -> String {
        self.naive.date().to_string()
    }

    /// `strftime("%H:%M")`.
    pub fn hh_mm(&self) -> String {
        let t = self.naive.civil();
        format!("{:02}:{:02}", t.hour(), t.minute())
    }

    /// This datetime `hours` later, across days, months and years; past year 9999 is
    /// Python's `OverflowError`.
    pub fn plus_hours(&self, hours: u32) -> Result<DateTime, String> {
        Ok(DateTime {
            naive: self.naive.plus(i64::from(hours) * 3_600_000_000)?,
            offset: self.offset,
        })
    }
}

impl Fields {
    fn parse(s: &str) -> Option<Fields> {
        if !s.is_ascii() {
            return None;
        }
        let (date, rest) = if s.len() >= 10 && s.as_bytes()[4] == b'-' {
            (&s[..10], &s[10..])
        } else {
            (s.get(..8)?, &s[8..])
        };
        let (year, month, day) = if date.len() == 10 {
            (
                num(&date[..4], 4)?,
                num(&date[5..7], 2)?,
                num(&date[8..], 2)?,
            )
        } else {
            (
                num(&date[..4], 4)?,
                num(&date[4..6], 2)?,
                num(&date[6..], 2)?,
            )
        };
        if date.len() == 10 && date.as_bytes()[7] != b'-' {
            return None;
        }
        let year = year as i32;
        let mut f = Fields {
            year,
            month,
            day,
            hour: 0,
            minute: 0,
            second: 0,
            micro: 0,
            offset: None,
        };
        if rest.is_empty() {
            return Some(f);
        }
        // Any one character separates the date from the time.
        let mut chars = rest.chars();
        chars.next();
        let (t, offset) = split_offset(chars.as_str()).ok()?;
        (f.hour, f.minute, f.second, f.micro) = time(t)?;
        f.offset = offset;
        Some(f)
    }

    /// Python's range checks, in its order and words: syntax first, then the fields (the
    /// date's, then these).
    fn check_time(&self) -> Result<(), String> {
        for (v, name) in [
            (self.hour, "hour"),
            (self.minute, "minute"),
            (self.second, "second"),
        ] {
            let max = if name == "hour" { 23 } else { 59 };
            if v > max {
                return Err(format!("{name} must be in 0..{max}"));
            }
        }
        Ok(())
    }
}

fn offset_text(seconds: i32) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let s = seconds.unsigned_abs();
    let hm = format!("{sign}{:02}:{:02}", s / 3600, s / 60 % 60);
    match s % 60 {
        0 => hm,
        sec => format!("{hm}:{sec:02}"),
    }
}

impl Serialize for DateTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_json())
    }
}

impl<'de> Deserialize<'de> for DateTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<DateTime, D::Error> {
        let s = String::deserialize(d)?;
        DateTime::from_iso(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fromisoformat_reads_what_python_reads() {
        let dt = DateTime::from_iso("2024-05-13").unwrap();
        assert_eq!(dt.to_json(), "2024-05-13T00:00:00");
        let dt = DateTime::from_iso("2024-05-13 18:30").unwrap();
        assert_eq!(dt.to_py_str(), "2024-05-13 18:30:00");
        let dt = DateTime::from_iso("20240513T1830").unwrap();
        assert_eq!(dt.to_json(), "2024-05-13T18:30:00");
        let dt = DateTime::from_iso("2024-05-13T18:30:05.5+01:00").unwrap();
        assert_eq!(dt.to_json(), "2024-05-13T18:30:05.500000+01:00");
        assert_eq!(
            DateTime::from_iso("2024-05-13T18:30Z").unwrap().to_json(),
            "2024-05-13T18:30:00Z"
        );
        assert_eq!(
            DateTime::from_iso("2024-02-30").unwrap_err(),
            "day is out of range for month"
        );
        assert_eq!(
            DateTime::from_iso("2024-05-13 25:00").unwrap_err(),
            "hour must be in 0..23"
        );
        for bad in [
            "2024-5-13",
            "13/05/2024",
            "",
            "2024-05-13T",
            "2024-05-13 18:3",
        ] {
            assert_eq!(
                DateTime::from_iso(bad).unwrap_err(),
                format!("Invalid isoformat string: '{bad}'"),
                "{bad}"
            );
        }
    }

    #[test]
    fn hours_roll_over_days_months_and_years() {
        let at = |s: &str| DateTime::from_iso(s).unwrap();
        assert_eq!(
            at("2024-12-31 23:00").plus_hours(2).unwrap().to_json(),
            "2025-01-01T01:00:00"
        );
        let leap = at("2024-02-28 23:00").plus_hours(2).unwrap();
        assert_eq!(leap.date_iso(), "2024-02-29");
        let end = at("9999-12-31 23:00").plus_hours(2);
        assert_eq!(end.unwrap_err(), "date value out of range");
    }
}
