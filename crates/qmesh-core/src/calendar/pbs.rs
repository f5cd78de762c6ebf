//! Import of a PBS `holidays` file, for sites that migrate.
//!
//! The file: a `YEAR yyyy` line; day lines `weekday|saturday|sunday|
//! monday..friday PRIME_START NONPRIME_START`, each start `HHMM`, `all` or
//! `none`; holiday lines `DAY_OF_YEAR Mon DD Name`; `*` starts a comment.
//! Each day is read as the PBS scheduler reads it, so prime time stays what
//! the site had:
//!
//! - prime `all`: prime all day; non-prime `all`: no prime time; prime
//!   `none`: no prime time; non-prime `none`: prime from the prime start to
//!   midnight (both `none`: PBS assumes prime all day, and so do we);
//! - prime start before non-prime start: prime in between; otherwise prime
//!   before the non-prime start and from the prime start on (equal starts:
//!   prime all day);
//! - a day no line mentions is prime all day (PBS fills it so).
//!
//! The trap: PBS stores a start as hour and minute and takes a prime start
//! of `0000` for a missing line, so `weekday 0000 1730` became prime all
//! day. Here `0000` is midnight: prime 00:00–17:30.
//!
//! Holidays come back dated (`2026-12-25`), as the file is for one year;
//! the day of the year must agree with the date written beside it.

use chrono::{Datelike, NaiveDate, Weekday};

use super::span::{DAY_MINUTES, parse_weekday, time_of_day};
use super::{CalendarError, DayRange, Days, End, Holiday, HolidayDate, Hours, Span};

/// A day's prime or non-prime start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    All,
    None,
    /// Minutes after midnight, up to 24:00.
    At(u32),
}

/// The prime-time spans and dated holidays of a PBS `holidays` file.
/// Errors carry the line number and the line.
pub fn import_pbs_holidays(text: &str) -> Result<(Vec<Span>, Vec<Holiday>), CalendarError> {
    let mut rows: [Option<(Start, Start)>; 7] = [None; 7];
    let mut year: Option<i32> = None;
    let mut holidays = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.split('*').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: String| CalendarError::PbsHolidays {
            line_no: index + 1,
            line: raw.trim().to_string(),
            why,
        };
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let keyword = tokens[0].to_ascii_lowercase();
        if keyword == "holidayfile_version1" {
            continue;
        }
        if keyword == "year" {
            if year.is_some() {
                return Err(bad(
                    "a second YEAR line; a holidays file covers one year".into()
                ));
            }
            year = Some(parse_year(&tokens).map_err(bad)?);
        } else if let Some(days) = day_keyword(&keyword) {
            let [_, prime, non_prime] = tokens[..] else {
                return Err(bad(format!(
                    "expected {keyword} PRIME_START NONPRIME_START, each HHMM, all or none"
                )));
            };
            let row = (
                parse_start(prime).map_err(&bad)?,
                parse_start(non_prime).map_err(&bad)?,
            );
            for day in days {
                rows[day.num_days_from_monday() as usize] = Some(row);
            }
        } else if keyword.bytes().all(|b| b.is_ascii_digit()) {
            let Some(year) = year else {
                return Err(bad("a holiday line needs the YEAR line above it".into()));
            };
            holidays.push(parse_holiday(year, &tokens).map_err(bad)?);
        } else {
            return Err(bad(format!(
                "\"{}\" is not a keyword; expected YEAR, weekday, saturday, sunday, monday … friday, \
                 or a holiday line DAY_OF_YEAR Mon DD Name",
                tokens[0]
            )));
        }
    }
    Ok((prime_spans(&rows), holidays))
}

fn parse_year(tokens: &[&str]) -> Result<i32, String> {
    match tokens {
        [_, y] if y.len() == 4 && y.bytes().all(|b| b.is_ascii_digit()) => {
            y.parse().map_err(|_| format!("\"{y}\" is not a year"))
        }
        _ => Err("expected YEAR yyyy, e.g. YEAR 2026".into()),
    }
}

fn day_keyword(word: &str) -> Option<Vec<Weekday>> {
    use Weekday::*;
    match word {
        "weekday" => Some(vec![Mon, Tue, Wed, Thu, Fri]),
        "saturday" | "sunday" | "monday" | "tuesday" | "wednesday" | "thursday" | "friday" => {
            parse_weekday(word).map(|d| vec![d])
        }
        _ => None,
    }
}

/// `HHMM` (PBS reads it as a number: `900` is 09:00), `all` or `none`.
fn parse_start(text: &str) -> Result<Start, String> {
    if text.eq_ignore_ascii_case("all") {
        return Ok(Start::All);
    }
    if text.eq_ignore_ascii_case("none") {
        return Ok(Start::None);
    }
    let bad = || format!("\"{text}\" is not a start; write HHMM (e.g. 0900), all or none");
    if text.is_empty() || text.len() > 4 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: u32 = text.parse().map_err(|_| bad())?;
    let (hour, minute) = (n / 100, n % 100);
    if minute >= 60 || hour > 24 || (hour == 24 && minute > 0) {
        return Err(bad());
    }
    Ok(Start::At(hour * 60 + minute))
}

fn parse_holiday(year: i32, tokens: &[&str]) -> Result<Holiday, String> {
    let day_of_year: u32 = tokens[0]
        .parse()
        .map_err(|_| format!("\"{}\" is not a day of the year", tokens[0]))?;
    let date = NaiveDate::from_yo_opt(year, day_of_year)
        .ok_or_else(|| format!("{year} has no day {day_of_year}"))?;
    let mut rest = &tokens[1..];
    if let Some(month) = rest.first().and_then(|m| parse_month(m)) {
        let day: Option<u32> = rest.get(1).and_then(|d| d.parse().ok());
        let Some(day) = day else {
            return Err(format!(
                "expected the day of the month after {}, e.g. {} 25",
                rest[0], rest[0]
            ));
        };
        if (date.month(), date.day()) != (month, day) {
            return Err(format!(
                "day {day_of_year} of {year} is {}, not {} {day}; fix the day of the year or the date",
                date.format("%b %-d"),
                rest[0]
            ));
        }
        rest = &rest[2..];
    }
    let name = rest.join(" ");
    // The import writes the names into a quoted qmgr value whose holidays
    // `;` separates: a quote or a semicolon in a name ended it early, and
    // what followed was read as qmgr commands or as other holidays.
    if let Some(c) = name.chars().find(|c| matches!(c, '"' | ';')) {
        return Err(format!(
            "the holiday name \"{name}\" holds {c}, which ends a name in the calendar's \
             holidays list; write the name without it"
        ));
    }
    Ok(Holiday {
        date: HolidayDate::On(date),
        name,
    })
}

fn parse_month(text: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let lower = text.to_ascii_lowercase();
    MONTHS
        .iter()
        .position(|m| *m == lower || (lower.len() == 3 && m.starts_with(&lower)))
        .and_then(|i| u32::try_from(i + 1).ok())
}

/// A day's prime-time windows in minutes, as the PBS scheduler reads its row.
fn windows(row: Option<(Start, Start)>) -> Vec<(u32, u32)> {
    let whole = vec![(0, DAY_MINUTES)];
    let windows = match row {
        None | Some((Start::All, _)) | Some((Start::None, Start::None)) => whole,
        Some((_, Start::All)) | Some((Start::None, _)) => Vec::new(),
        Some((Start::At(p), Start::None)) => vec![(p, DAY_MINUTES)],
        Some((Start::At(p), Start::At(n))) if p < n => vec![(p, n)],
        Some((Start::At(p), Start::At(n))) if p == n => whole,
        Some((Start::At(p), Start::At(n))) => vec![(0, n), (p, DAY_MINUTES)],
    };
    windows.into_iter().filter(|(a, b)| a < b).collect()
}

/// Spans for the week: runs of days with the same windows, Monday first.
fn prime_spans(rows: &[Option<(Start, Start)>; 7]) -> Vec<Span> {
    use Weekday::*;
    const WEEK: [Weekday; 7] = [Mon, Tue, Wed, Thu, Fri, Sat, Sun];
    let day = |i: usize| WEEK[i];
    let mut spans = Vec::new();
    let mut i = 0;
    while i < 7 {
        let w = windows(rows[i]);
        let mut j = i;
        while j + 1 < 7 && windows(rows[j + 1]) == w {
            j += 1;
        }
        let days = Days::List(vec![DayRange {
            first: day(i),
            last: day(j),
        }]);
        for &(from, to) in &w {
            let hours = if (from, to) == (0, DAY_MINUTES) {
                None
            } else {
                time_of_day(from).map(|from| Hours {
                    from,
                    to: time_of_day(to).map_or(End::Midnight, End::At),
                })
            };
            spans.push(Span {
                days: days.clone(),
                hours,
            });
        }
        i = j + 1;
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(text: &str) -> Vec<String> {
        import_pbs_holidays(text)
            .unwrap()
            .0
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    // Found by the holidays fuzz target (fuzz/): a quote or a semicolon in
    // a holiday's name ended the quoted value `qmgr import holidays`
    // writes, and the rest was read as qmgr commands or more holidays.
    #[test]
    fn fuzz_a_quote_or_semicolon_in_a_holiday_name_is_refused() {
        for name in [
            "Decn26rij\"nCh sun",
            "x\"; set server managers += mallory; \"",
            "Boxing Day; 2026-12-27 Extra",
        ] {
            let file = format!("YEAR 2026\n360 Dec 26 {name}\n");
            let err = import_pbs_holidays(&file).unwrap_err().to_string();
            assert!(err.contains("write the name without it"), "{err}");
        }
        let file = "YEAR 2026\n1 Jan 1 New Year's Day (#1, 'the first')\n";
        let commands = crate::qmgr::import_holidays_commands(file).unwrap();
        let parsed = crate::qmgr::parse_script(&commands).unwrap();
        assert_eq!(parsed.len(), 2, "{commands}");
    }

    #[test]
    fn each_row_as_pbs_reads_it() {
        assert_eq!(
            spans("weekday 0800 1800\nsaturday none all\nsunday none all"),
            ["Mon-Fri 08:00-18:00"]
        );
        assert_eq!(
            spans("weekday all none\nsaturday none none\nsunday 1800 0600"),
            ["Mon-Sat", "Sun 00:00-06:00", "Sun 18:00-24:00"]
        );
        assert_eq!(
            spans("weekday 1200 none\nsaturday 0900 0900\nsunday 0000 2400"),
            ["Mon-Fri 12:00-24:00", "Sat-Sun"]
        );
        // Later lines override: Friday closes early.
        assert_eq!(
            spans("weekday 0900 1700\nfriday 0900 1500\nsaturday none all\nsunday none all"),
            ["Mon-Thu 09:00-17:00", "Fri 09:00-15:00"]
        );
    }

    #[test]
    fn a_prime_start_at_midnight_is_midnight_not_a_missing_line() {
        assert_eq!(
            spans("weekday 0000 1730\nsaturday none all\nsunday none all"),
            ["Mon-Fri 00:00-17:30"]
        );
        assert_eq!(
            spans("weekday 1730 0000\nsaturday none all\nsunday none all"),
            ["Mon-Fri 17:30-24:00"]
        );
    }

    #[test]
    fn days_no_line_mentions_are_prime_all_day() {
        assert_eq!(
            spans("weekday 0900 1700"),
            ["Mon-Fri 09:00-17:00", "Sat-Sun"]
        );
        assert_eq!(spans(""), ["Mon-Sun"]);
    }

    #[test]
    fn holiday_lines_check_the_day_of_the_year() {
        let (_, holidays) =
            import_pbs_holidays("YEAR 2026\n1 Jan 1 New Year's Day\n359 Dec 25 Christmas\n360\n")
                .unwrap();
        let text: Vec<String> = holidays.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "2026-01-01 New Year's Day",
                "2026-12-25 Christmas",
                "2026-12-26"
            ]
        );
    }
}
