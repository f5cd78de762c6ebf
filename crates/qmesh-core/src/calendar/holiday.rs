//! Holidays: `MM-DD Name` every year, `YYYY-MM-DD Name` on that day only.
//!
//! PBS makes sites rewrite their holidays file every January; a rule that
//! repeats (`12-25 Christmas Day`) needs no yearly edit, and the movable
//! feasts (`2026-04-03 Good Friday`) are written once each with their year.

use std::fmt;
use std::str::FromStr;

use chrono::{Datelike, NaiveDate};
use serde::{Deserialize, Serialize};

use super::CalendarError;

/// When a holiday falls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HolidayDate {
    /// This month and day every year (`02-29` only in leap years).
    Yearly { month: u32, day: u32 },
    /// This day only.
    On(NaiveDate),
}

/// A day that is non-prime all day (and closes periods that say
/// `holidays_off`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Holiday {
    pub date: HolidayDate,
    /// Free text, for people; may be empty.
    pub name: String,
}

impl Holiday {
    pub fn falls_on(&self, date: NaiveDate) -> bool {
        match self.date {
            HolidayDate::Yearly { month, day } => date.month() == month && date.day() == day,
            HolidayDate::On(on) => on == date,
        }
    }
}

impl FromStr for HolidayDate {
    type Err = String;

    fn from_str(text: &str) -> Result<HolidayDate, String> {
        let fields: Vec<&str> = text.split('-').collect();
        let number = |s: &str, width: usize| {
            (s.len() == width && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<u32>().ok())
                .flatten()
        };
        match fields[..] {
            [m, d] => {
                let (Some(month), Some(day)) = (number(m, 2), number(d, 2)) else {
                    return Err(format!("\"{text}\" is not a date"));
                };
                // 2000 is a leap year, so 02-29 passes.
                NaiveDate::from_ymd_opt(2000, month, day)
                    .map(|_| HolidayDate::Yearly { month, day })
                    .ok_or_else(|| format!("{text} is not a day of the year"))
            }
            [y, m, d] => {
                let (Some(year), Some(month), Some(day)) =
                    (number(y, 4), number(m, 2), number(d, 2))
                else {
                    return Err(format!("\"{text}\" is not a date"));
                };
                i32::try_from(year)
                    .ok()
                    .and_then(|year| NaiveDate::from_ymd_opt(year, month, day))
                    .map(HolidayDate::On)
                    .ok_or_else(|| format!("{text} is not a day"))
            }
            _ => Err(format!("\"{text}\" is not a date")),
        }
    }
}

impl FromStr for Holiday {
    type Err = CalendarError;

    fn from_str(text: &str) -> Result<Holiday, CalendarError> {
        let trimmed = text.trim();
        let (date, name) = match trimmed.split_once(char::is_whitespace) {
            Some((date, name)) => (date, name.trim()),
            None => (trimmed, ""),
        };
        let date = date.parse().map_err(|why| CalendarError::BadHoliday {
            text: text.to_string(),
            why,
        })?;
        Ok(Holiday {
            date,
            name: name.to_string(),
        })
    }
}

impl fmt::Display for HolidayDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HolidayDate::Yearly { month, day } => write!(f, "{month:02}-{day:02}"),
            HolidayDate::On(date) => write!(
                f,
                "{:04}-{:02}-{:02}",
                date.year(),
                date.month(),
                date.day()
            ),
        }
    }
}

impl fmt::Display for Holiday {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.date)?;
        if !self.name.is_empty() {
            write!(f, " {}", self.name)?;
        }
        Ok(())
    }
}

impl TryFrom<String> for Holiday {
    type Error = CalendarError;
    fn try_from(text: String) -> Result<Holiday, CalendarError> {
        text.parse()
    }
}

impl From<Holiday> for String {
    fn from(holiday: Holiday) -> String {
        holiday.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    #[test]
    fn yearly_and_dated_holidays() {
        let christmas: Holiday = "12-25 Christmas Day".parse().unwrap();
        assert_eq!(christmas.name, "Christmas Day");
        assert!(christmas.falls_on(day(2026, 12, 25)));
        assert!(christmas.falls_on(day(2031, 12, 25)));
        assert!(!christmas.falls_on(day(2026, 12, 24)));

        let good_friday: Holiday = "2026-04-03 Good Friday".parse().unwrap();
        assert!(good_friday.falls_on(day(2026, 4, 3)));
        assert!(!good_friday.falls_on(day(2027, 4, 3)));

        let leap: Holiday = "02-29".parse().unwrap();
        assert!(leap.falls_on(day(2028, 2, 29)));
        assert_eq!(leap.to_string(), "02-29");
    }

    #[test]
    fn names_keep_their_inner_spaces_and_lose_the_outer_ones() {
        let h: Holiday = "  12-26   Boxing  Day ".parse().unwrap();
        assert_eq!(h.to_string(), "12-26 Boxing  Day");
        assert_eq!(h.to_string().parse::<Holiday>().unwrap(), h);
    }

    #[test]
    fn bad_dates_name_the_text_and_the_forms() {
        for (text, part) in [
            ("13-01 Nothing", "13-01 is not a day of the year"),
            ("02-30", "02-30 is not a day of the year"),
            ("2026-02-29 No", "2026-02-29 is not a day"),
            ("Dec-25 Christmas", "\"Dec-25\" is not a date"),
            ("12/25 Christmas", "\"12/25\" is not a date"),
            ("", "\"\" is not a date"),
            ("1-5", "\"1-5\" is not a date"),
        ] {
            let err = text.parse::<Holiday>().unwrap_err().to_string();
            assert!(err.contains(part), "{text}: {err}");
            assert!(err.contains("MM-DD"), "{err}");
            assert!(err.contains("YYYY-MM-DD"), "{err}");
        }
    }
}
