//! The span syntax sites write their week in: `DAYS [HH:MM-HH:MM]`, e.g.
//! `Mon-Fri 09:00-17:00`, `Fri-Mon`, `Sat,Sun`, `daily 00:30-03:30`.
//!
//! A span keeps the days as written (`Fri-Mon` stays a range, it is not
//! turned into a set), so `print server` gives back what the admin typed,
//! in canonical spelling. The times are local wall-clock times; turning them
//! into instants is `local.rs`'s job.

use std::fmt;
use std::str::FromStr;

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, Weekday};
use serde::{Deserialize, Serialize};

use super::CalendarError;
use crate::time::TimeOfDay;

/// Minutes in a day: the end of a span that runs to `24:00`.
pub(crate) const DAY_MINUTES: u32 = 24 * 60;

/// Days of the week: `daily`, or a comma list of days and ranges.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Days {
    Daily,
    /// Each item a day (`first == last`) or a range, which may wrap
    /// (`Fri-Mon` is Friday to Monday).
    List(Vec<DayRange>),
}

/// `Mon`, or `Mon-Fri`, or a wrapping `Fri-Mon`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DayRange {
    pub first: Weekday,
    pub last: Weekday,
}

/// The end of a span's hours: a time of day, or the day's end (`24:00`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum End {
    At(TimeOfDay),
    Midnight,
}

/// `HH:MM-HH:MM`. An end at or before the start runs into the next day
/// (`18:00-10:00` is a night).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Hours {
    pub from: TimeOfDay,
    pub to: End,
}

/// Days with optional hours; no hours means the whole of each day.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Span {
    pub days: Days,
    pub hours: Option<Hours>,
}

impl Span {
    /// The local wall-clock stretch `[start, end)` this span covers from
    /// `date`, if the span applies on that day of the week.
    pub(crate) fn stretch_from(&self, date: NaiveDate) -> Option<(NaiveDateTime, NaiveDateTime)> {
        if !self.days.contains(date.weekday()) {
            return None;
        }
        let next = date.succ_opt()?;
        let (from, to) = match self.hours {
            None => (0, DAY_MINUTES),
            Some(hours) => (minutes(hours.from), hours.end_minutes()),
        };
        let start = date.and_time(clock(from));
        let end = if to > from && to < DAY_MINUTES {
            date.and_time(clock(to))
        } else if to == DAY_MINUTES {
            next.and_time(NaiveTime::MIN)
        } else {
            next.and_time(clock(to))
        };
        Some((start, end))
    }
}

impl Hours {
    fn end_minutes(self) -> u32 {
        match self.to {
            End::At(t) => minutes(t),
            End::Midnight => DAY_MINUTES,
        }
    }
}

/// Minutes since midnight of a time of day. `TimeOfDay` keeps its fields
/// to itself; its `HH:MM` text is the canonical form, so it is read back.
pub(crate) fn minutes(t: TimeOfDay) -> u32 {
    let text = t.to_string();
    let hour: u32 = text.get(0..2).and_then(|h| h.parse().ok()).unwrap_or(0);
    let minute: u32 = text.get(3..5).and_then(|m| m.parse().ok()).unwrap_or(0);
    hour * 60 + minute
}

/// The time of day `m` minutes after midnight (`m` below a day).
pub(crate) fn time_of_day(m: u32) -> Option<TimeOfDay> {
    TimeOfDay::new(u8::try_from(m / 60).ok()?, u8::try_from(m % 60).ok()?)
}

fn clock(m: u32) -> NaiveTime {
    NaiveTime::from_num_seconds_from_midnight_opt(m.min(DAY_MINUTES - 1) * 60, 0)
        .unwrap_or(NaiveTime::MIN)
}

impl Days {
    pub fn contains(&self, day: Weekday) -> bool {
        match self {
            Days::Daily => true,
            Days::List(ranges) => ranges.iter().any(|r| r.contains(day)),
        }
    }
}

impl DayRange {
    pub fn contains(self, day: Weekday) -> bool {
        let (f, l, d) = (
            self.first.num_days_from_monday(),
            self.last.num_days_from_monday(),
            day.num_days_from_monday(),
        );
        if f <= l {
            f <= d && d <= l
        } else {
            d >= f || d <= l
        }
    }
}

/// A day name, case-insensitive: three letters or in full.
pub(crate) fn parse_weekday(text: &str) -> Option<Weekday> {
    const NAMES: [(&str, Weekday); 7] = [
        ("monday", Weekday::Mon),
        ("tuesday", Weekday::Tue),
        ("wednesday", Weekday::Wed),
        ("thursday", Weekday::Thu),
        ("friday", Weekday::Fri),
        ("saturday", Weekday::Sat),
        ("sunday", Weekday::Sun),
    ];
    let lower = text.to_ascii_lowercase();
    NAMES
        .iter()
        .find(|(name, _)| lower == *name || (lower.len() == 3 && name.starts_with(&lower)))
        .map(|(_, day)| *day)
}

impl FromStr for Days {
    type Err = String;

    fn from_str(text: &str) -> Result<Days, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("it names no days".into());
        }
        if text.eq_ignore_ascii_case("daily") {
            return Ok(Days::Daily);
        }
        let day = |name: &str| {
            parse_weekday(name.trim()).ok_or_else(|| {
                format!(
                    "\"{}\" is not a day; write Mon … Sun (or in full), a range such as \
                     Mon-Fri, a list such as Sat,Sun, or daily",
                    name.trim()
                )
            })
        };
        let mut ranges = Vec::new();
        for item in text.split(',') {
            if item.trim().is_empty() {
                return Err("its day list has an empty item".into());
            }
            let (first, last) = match item.split_once('-') {
                Some((a, b)) => (day(a)?, day(b)?),
                None => {
                    let d = day(item)?;
                    (d, d)
                }
            };
            ranges.push(DayRange { first, last });
        }
        Ok(Days::List(ranges))
    }
}

impl FromStr for Hours {
    type Err = String;

    fn from_str(text: &str) -> Result<Hours, String> {
        let Some((from, to)) = text.split_once('-') else {
            return Err(format!("\"{text}\" is not a range of hours"));
        };
        let midnight = |s: &str| s == "24:00" || s == "2400";
        let from = from.trim();
        let to = to.trim();
        if midnight(from) {
            return Err("hours cannot start at 24:00; start at 00:00".into());
        }
        let from = TimeOfDay::parse(from).map_err(|why| why_time(&why))?;
        let to = if midnight(to) {
            End::Midnight
        } else {
            End::At(TimeOfDay::parse(to).map_err(|why| why_time(&why))?)
        };
        Ok(Hours { from, to })
    }
}

/// `TimeOfDay`'s message, with the one extra form spans allow.
fn why_time(why: &str) -> String {
    format!("{why} (00:00 to 23:59, or 24:00 as an end)")
}

impl FromStr for Span {
    type Err = CalendarError;

    fn from_str(text: &str) -> Result<Span, CalendarError> {
        let bad = |why: String| CalendarError::BadSpan {
            text: text.to_string(),
            why,
        };
        let tokens: Vec<&str> = text.split_whitespace().collect();
        // The hours begin at the first token that starts with a digit.
        let split = tokens
            .iter()
            .position(|t| t.starts_with(|c: char| c.is_ascii_digit()))
            .unwrap_or(tokens.len());
        let days: Days = tokens[..split].join(" ").parse().map_err(bad)?;
        let hours = if split == tokens.len() {
            None
        } else {
            Some(tokens[split..].concat().parse::<Hours>().map_err(bad)?)
        };
        Ok(Span { days, hours })
    }
}

impl fmt::Display for Days {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Days::Daily => f.write_str("daily"),
            Days::List(ranges) => {
                for (i, range) in ranges.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{range}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for DayRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "{}", self.first)
        } else {
            write!(f, "{}-{}", self.first, self.last)
        }
    }
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            End::At(t) => write!(f, "{t}"),
            End::Midnight => f.write_str("24:00"),
        }
    }
}

impl fmt::Display for Hours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.from, self.to)
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.days)?;
        if let Some(hours) = self.hours {
            write!(f, " {hours}")?;
        }
        Ok(())
    }
}

impl TryFrom<String> for Span {
    type Error = CalendarError;
    fn try_from(text: String) -> Result<Span, CalendarError> {
        text.parse()
    }
}

impl From<Span> for String {
    fn from(span: Span) -> String {
        span.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(text: &str) -> Span {
        text.parse().unwrap()
    }

    #[test]
    fn the_forms_read_and_print_canonically() {
        for (text, canonical) in [
            ("Mon-Fri 09:00-17:00", "Mon-Fri 09:00-17:00"),
            ("mon-FRI 9:00-17:00", "Mon-Fri 09:00-17:00"),
            ("Monday 0900-1700", "Mon 09:00-17:00"),
            ("Fri-Mon", "Fri-Mon"),
            ("Sat,Sun", "Sat,Sun"),
            ("Sat, Sun 10:00 - 12:00", "Sat,Sun 10:00-12:00"),
            ("Mon-Wed,Fri", "Mon-Wed,Fri"),
            ("DAILY 00:30-03:30", "daily 00:30-03:30"),
            ("Fri 18:00-24:00", "Fri 18:00-24:00"),
            ("Mon-Thu 18:00-10:00", "Mon-Thu 18:00-10:00"),
        ] {
            let s = span(text);
            assert_eq!(s.to_string(), canonical, "{text}");
            assert_eq!(span(canonical), s, "{text}");
        }
    }

    #[test]
    fn wrapping_ranges_cover_the_weekend() {
        let days = span("Fri-Mon").days;
        let covered: Vec<Weekday> = [
            Weekday::Mon,
            Weekday::Tue,
            Weekday::Wed,
            Weekday::Thu,
            Weekday::Fri,
            Weekday::Sat,
            Weekday::Sun,
        ]
        .into_iter()
        .filter(|d| days.contains(*d))
        .collect();
        assert_eq!(
            covered,
            [Weekday::Mon, Weekday::Fri, Weekday::Sat, Weekday::Sun]
        );
    }

    #[test]
    fn bad_spans_name_the_text_and_the_form() {
        for (text, part) in [
            ("", "names no days"),
            ("09:00-17:00", "names no days"),
            ("Mon,,Tue", "empty item"),
            ("Mon-Fry", "\"Fry\" is not a day"),
            ("Mon Fri", "\"Mon Fri\" is not a day"),
            ("Mon 25:00-26:00", "\"25:00\" is not a time of day"),
            ("Mon 09:00", "not a range of hours"),
            ("Mon 24:00-01:00", "cannot start at 24:00"),
            ("Mon 09:60-10:00", "\"09:60\""),
        ] {
            let err = text.parse::<Span>().unwrap_err().to_string();
            assert!(err.contains(&format!("\"{text}\"")), "{err}");
            assert!(err.contains(part), "{text}: {err}");
            assert!(err.contains("DAYS [HH:MM-HH:MM]"), "{err}");
        }
    }

    #[test]
    fn stretches_run_into_the_next_day_when_the_end_is_not_after_the_start() {
        let d = NaiveDate::from_ymd_opt(2026, 5, 4).unwrap(); // a Monday
        let at = |day: u32, h: u32, m: u32| {
            NaiveDate::from_ymd_opt(2026, 5, day)
                .unwrap()
                .and_hms_opt(h, m, 0)
                .unwrap()
        };
        assert_eq!(
            span("Mon-Thu 18:00-10:00").stretch_from(d),
            Some((at(4, 18, 0), at(5, 10, 0)))
        );
        assert_eq!(
            span("Mon").stretch_from(d),
            Some((at(4, 0, 0), at(5, 0, 0)))
        );
        assert_eq!(
            span("Mon 18:00-24:00").stretch_from(d),
            Some((at(4, 18, 0), at(5, 0, 0)))
        );
        assert_eq!(span("Tue-Sun").stretch_from(d), None);
    }

    #[test]
    fn minutes_read_a_time_of_day() {
        assert_eq!(minutes(TimeOfDay::new(0, 0).unwrap()), 0);
        assert_eq!(minutes(TimeOfDay::new(23, 59).unwrap()), 1439);
        assert_eq!(time_of_day(17 * 60 + 30), TimeOfDay::new(17, 30));
        assert_eq!(time_of_day(DAY_MINUTES), None);
    }
}
