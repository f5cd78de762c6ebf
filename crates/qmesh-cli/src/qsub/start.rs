//! When a job may start, as qsub reads it: `-a` (not before this local
//! time). `-W depend=` is read with the other `-W` attributes
//! (`w_attrs`).
//!
//! `-a` is read here, in the submitting host's time zone (chrono's `Local`),
//! and sent as an instant; the server never guesses a user's zone. The
//! dependency text is checked by the server, which knows the jobs.

use chrono::{DateTime, Datelike, Months, NaiveDate, NaiveDateTime, TimeZone};

/// PBS `-a [[[[CC]YY]MM]DD]hhmm[.SS]` in the zone of `now`. Fields left
/// out roll forward as PBS does: a time of day already past means
/// tomorrow, a day already past next month, a date already past next
/// year. A full date is taken as written, even if it is past (the job may
/// start at once).
pub fn parse_start_after<Tz: TimeZone>(
    text: &str,
    now: DateTime<Tz>,
) -> Result<DateTime<Tz>, String> {
    let bad = |why: &str| {
        format!(
            "bad -a time \"{text}\": {why}; write [[[[CC]YY]MM]DD]hhmm[.SS], e.g. 2230 or 202612312359"
        )
    };
    let (digits, secs) = match text.trim().split_once('.') {
        Some((main, secs)) => (main, Some(secs)),
        None => (text.trim(), None),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(digits) || ![4, 6, 8, 10, 12].contains(&digits.len()) {
        return Err(bad("it must be 4, 6, 8, 10 or 12 digits"));
    }
    let second = match secs {
        None => 0,
        Some(s) if s.len() == 2 && all_digits(s) => s.parse::<u32>().unwrap_or(60),
        Some(_) => return Err(bad("the seconds after '.' must be two digits")),
    };
    // Two digits at a time, from the right: mm, hh, DD, MM, YY, CC.
    let field = |from_right: usize| -> Option<u32> {
        let end = digits.len().checked_sub(2 * from_right)?;
        let start = end.checked_sub(2)?;
        digits.get(start..end)?.parse().ok()
    };
    let (minute, hour) = (field(0).unwrap_or(0), field(1).unwrap_or(0));
    if hour > 23 || minute > 59 || second > 59 {
        return Err(bad("hours run to 23, minutes and seconds to 59"));
    }
    let today = now.naive_local();
    let at = |date: NaiveDate| date.and_hms_opt(hour, minute, second);
    let local = match digits.len() {
        4 => {
            let t = at(today.date()).ok_or_else(|| bad("no such time"))?;
            if t > today {
                t
            } else {
                t + chrono::Duration::days(1)
            }
        }
        6 => {
            let day = field(2).unwrap_or(0);
            let first = today
                .date()
                .with_day(1)
                .ok_or_else(|| bad("no such date"))?;
            // This month if that moment is ahead, else the next month that has the day.
            (0..=2)
                .filter_map(|ahead| first.checked_add_months(Months::new(ahead)))
                .filter_map(|month| month.with_day(day).and_then(at))
                .find(|t| *t > today)
                .ok_or_else(|| bad(&format!("no month ahead has a day {day}")))?
        }
        8 => {
            let (month, day) = (field(3).unwrap_or(0), field(2).unwrap_or(0));
            (0..=4)
                .filter_map(|ahead| NaiveDate::from_ymd_opt(today.year() + ahead, month, day))
                .filter_map(at)
                .find(|t| *t > today)
                .ok_or_else(|| bad(&format!("there is no date {month:02}/{day:02}")))?
        }
        n => {
            let yy = field(4).unwrap_or(0) as i32;
            let year = if n == 12 {
                field(5).unwrap_or(0) as i32 * 100 + yy
            } else {
                today.year() / 100 * 100 + yy
            };
            let (month, day) = (field(3).unwrap_or(0), field(2).unwrap_or(0));
            NaiveDate::from_ymd_opt(year, month, day)
                .and_then(at)
                .ok_or_else(|| bad(&format!("there is no date {year}-{month:02}-{day:02}")))?
        }
    };
    in_zone(&now.timezone(), local).ok_or_else(|| {
        bad("that local time does not exist here (the clock skips it when it changes)")
    })
}

/// A local wall-clock time in `tz`; of two (the clock going back) the first.
fn in_zone<Tz: TimeZone>(tz: &Tz, local: NaiveDateTime) -> Option<DateTime<Tz>> {
    tz.from_local_datetime(&local).earliest()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{FixedOffset, Utc};

    /// 2026-03-14 11:15:00 at UTC+1 (a Saturday).
    fn now() -> DateTime<FixedOffset> {
        FixedOffset::east_opt(3600)
            .unwrap()
            .with_ymd_and_hms(2026, 3, 14, 11, 15, 0)
            .unwrap()
    }

    fn at(text: &str) -> String {
        parse_start_after(text, now())
            .unwrap()
            .format("%Y-%m-%d %H:%M:%S %z")
            .to_string()
    }

    #[test]
    fn a_time_of_day_is_today_or_tomorrow() {
        assert_eq!(at("2230"), "2026-03-14 22:30:00 +0100");
        assert_eq!(at("1130.45"), "2026-03-14 11:30:45 +0100");
        // PBS: submitted at 11:15 with 1110, it may run at 11:10 tomorrow.
        assert_eq!(at("1110"), "2026-03-15 11:10:00 +0100");
        assert_eq!(at("1115"), "2026-03-15 11:15:00 +0100");
    }

    #[test]
    fn days_months_and_years_roll_forward() {
        assert_eq!(at("200900"), "2026-03-20 09:00:00 +0100");
        assert_eq!(at("010900"), "2026-04-01 09:00:00 +0100");
        assert_eq!(at("01010000"), "2027-01-01 00:00:00 +0100");
        assert_eq!(at("12251800"), "2026-12-25 18:00:00 +0100");
        // A full date is taken as written, past or not.
        assert_eq!(at("2601010000"), "2026-01-01 00:00:00 +0100");
        assert_eq!(at("202801011200.30"), "2028-01-01 12:00:30 +0100");
    }

    #[test]
    fn the_instant_is_in_the_zone_of_now() {
        let t = parse_start_after("1200", now()).unwrap();
        assert_eq!(
            t.with_timezone(&Utc).to_rfc3339(),
            "2026-03-14T11:00:00+00:00"
        );
    }

    #[test]
    fn bad_times_say_the_format() {
        for (text, why) in [
            ("930", "4, 6, 8, 10 or 12 digits"),
            ("12:30", "4, 6, 8, 10 or 12 digits"),
            ("2460", "hours run to 23"),
            ("1200.5", "two digits"),
            ("02301200", "no date 02/30"),
            ("2602301200", "no date 2026-02-30"),
        ] {
            let err = parse_start_after(text, now()).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
            assert!(err.contains("[[[[CC]YY]MM]DD]hhmm[.SS]"), "{err}");
        }
    }
}
