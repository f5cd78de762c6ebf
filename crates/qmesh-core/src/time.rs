//! Wall-clock durations as users write them (`[[H:]M:]S`, the PBS and NQS
//! form) and as qstat prints them (`HH:MM:SS`, hours may pass 24).

use std::fmt;

use chrono::NaiveTime;
use serde::{Deserialize, Serialize};

use crate::error::CoreError;

/// Instants are UTC; the calendar (time zones, prime time) converts at its edge.
pub type Time = chrono::DateTime<chrono::Utc>;

/// A time of day (local), `HH:MM`: when a queue is reordered, when a
/// calendar's span starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TimeOfDay {
    hour: u8,
    minute: u8,
}

impl TimeOfDay {
    pub fn new(hour: u8, minute: u8) -> Option<TimeOfDay> {
        (hour < 24 && minute < 60).then_some(TimeOfDay { hour, minute })
    }

    /// Reads `HH:MM` (also `H:MM` and PBS's `HHMM`).
    pub fn parse(text: &str) -> Result<TimeOfDay, String> {
        let text = text.trim();
        let bad = || format!("\"{text}\" is not a time of day; write HH:MM, e.g. 08:00");
        let (h, m) = match text.split_once(':') {
            Some(parts) => parts,
            None if text.len() == 4 && text.bytes().all(|b| b.is_ascii_digit()) => text.split_at(2),
            None => return Err(bad()),
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(h) || h.len() > 2 || !digits(m) || m.len() != 2 {
            return Err(bad());
        }
        let (Ok(hour), Ok(minute)) = (h.parse::<u8>(), m.parse::<u8>()) else {
            return Err(bad());
        };
        TimeOfDay::new(hour, minute).ok_or_else(bad)
    }

    pub(crate) fn naive(self) -> NaiveTime {
        NaiveTime::from_hms_opt(self.hour.into(), self.minute.into(), 0).unwrap_or_default()
    }
}

impl fmt::Display for TimeOfDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}:{:02}", self.hour, self.minute)
    }
}

impl TryFrom<String> for TimeOfDay {
    type Error = String;
    fn try_from(text: String) -> Result<TimeOfDay, String> {
        TimeOfDay::parse(&text)
    }
}

impl From<TimeOfDay> for String {
    fn from(t: TimeOfDay) -> String {
        t.to_string()
    }
}

/// Parses `[[H:]M:]S`, or Moab's and Torque's `D:HH:MM:SS`. The leading
/// field may be any size (`90` is 90 seconds, `48:00:00` two days); the
/// fields after it must be below 60, the hours after days below 24.
pub fn parse_duration(text: &str) -> Result<u64, CoreError> {
    let bad = |why: &str| CoreError::BadDuration {
        text: text.to_string(),
        why: why.to_string(),
    };
    let text_trim = text.trim();
    if text_trim.is_empty() {
        return Err(bad("it is empty"));
    }
    let fields: Vec<&str> = text_trim.split(':').collect();
    if fields.len() > 4 {
        return Err(bad(
            "it has more than four fields (days:hours:minutes:seconds)",
        ));
    }
    let mut total: u64 = 0;
    for (i, field) in fields.iter().enumerate() {
        // Days first: the hours after them count 24 to a day.
        let base = if fields.len() == 4 && i == 1 { 24 } else { 60 };
        if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(&format!("\"{field}\" is not a whole number")));
        }
        let value: u64 = field
            .parse()
            .map_err(|_| bad(&format!("\"{field}\" is too large")))?;
        if i > 0 && value >= base {
            return Err(bad(&format!("\"{field}\" must be below {base}")));
        }
        total = total
            .checked_mul(base)
            .and_then(|t| t.checked_add(value))
            .ok_or_else(|| bad("it is too large"))?;
    }
    Ok(total)
}

/// `HH:MM:SS`, hours unbounded: 93784 s is `26:03:04`.
pub fn format_hms(secs: u64) -> String {
    format!(
        "{:02}:{:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_forms() {
        assert_eq!(parse_duration("90").unwrap(), 90);
        assert_eq!(parse_duration("2:30").unwrap(), 150);
        assert_eq!(parse_duration("1:00:00").unwrap(), 3600);
        assert_eq!(parse_duration("48:00:00").unwrap(), 172_800);
        assert_eq!(parse_duration(" 00:00:05 ").unwrap(), 5);
    }

    #[test]
    fn moabs_days_first() {
        assert_eq!(parse_duration("1:00:00:00").unwrap(), 86_400);
        assert_eq!(
            parse_duration("2:12:30:05").unwrap(),
            2 * 86_400 + 12 * 3600 + 30 * 60 + 5
        );
        assert_eq!(parse_duration("1:2:3:4").unwrap(), 93_784);
        let err = parse_duration("1:24:00:00").unwrap_err().to_string();
        assert!(err.contains("below 24"), "{err}");
        let err = parse_duration("1:2:3:4:5").unwrap_err().to_string();
        assert!(err.contains("more than four fields"), "{err}");
    }

    #[test]
    fn bad_durations_say_why() {
        for bad in ["", "1:2:3:4:5", "1:60", "abc", "1::2", "-5", "1.5"] {
            let err = parse_duration(bad).unwrap_err().to_string();
            assert!(err.contains("bad wall time"), "{bad}: {err}");
        }
        assert!(
            parse_duration("1:75:00")
                .unwrap_err()
                .to_string()
                .contains("below 60")
        );
    }

    #[test]
    fn formats_past_a_day() {
        assert_eq!(format_hms(5), "00:00:05");
        assert_eq!(format_hms(93_784), "26:03:04");
    }
}
