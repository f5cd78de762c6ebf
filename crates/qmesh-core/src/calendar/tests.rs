//! The calendar against explicit instants: prime time and holidays, the
//! EPCC periods, time zones on their daylight-saving days, the PBS import,
//! the text and TOML forms, and a property tying `next_change` to
//! `is_active`.

use chrono::{Duration, TimeZone, Utc};
use proptest::prelude::*;

use super::*;

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> Time {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
}

fn spans(texts: &[&str]) -> Vec<Span> {
    texts.iter().map(|t| t.parse().unwrap()).collect()
}

fn holidays(texts: &[&str]) -> Vec<Holiday> {
    texts.iter().map(|t| t.parse().unwrap()).collect()
}

fn in_zone(zone: &str) -> Calendar {
    Calendar {
        time_zone: zone.into(),
        ..Calendar::default()
    }
}

// ---- prime time and holidays ----

#[test]
fn the_default_is_utc_and_the_seeds_prime_time() {
    let cal = Calendar::default();
    assert_eq!(cal.time_zone, "UTC");
    assert_eq!(cal.prime_time, spans(&["Mon-Fri 09:00-17:00"]));
    assert!(cal.holidays.is_empty() && cal.periods.is_empty());
    assert_eq!(cal.validate(), Ok(()));
}

#[test]
fn prime_time_on_a_weekday_starts_at_nine_and_ends_at_five() {
    let cal = Calendar::default();
    // Wednesday 6 May 2026.
    assert!(!cal.is_prime(utc(2026, 5, 6, 8, 59)));
    assert!(cal.is_prime(utc(2026, 5, 6, 9, 0)));
    assert!(cal.is_prime(utc(2026, 5, 6, 16, 59)));
    assert!(!cal.is_prime(utc(2026, 5, 6, 17, 0)));
    assert_eq!(cal.is_active(NON_PRIME, utc(2026, 5, 6, 17, 0)), Ok(true));
    assert_eq!(cal.is_active(ALWAYS, utc(2026, 5, 6, 17, 0)), Ok(true));
}

#[test]
fn the_weekend_is_not_prime() {
    let cal = Calendar::default();
    assert!(!cal.is_prime(utc(2026, 5, 9, 12, 0))); // Saturday
    assert!(!cal.is_prime(utc(2026, 5, 10, 12, 0))); // Sunday
    assert!(cal.is_prime(utc(2026, 5, 11, 12, 0))); // Monday
}

#[test]
fn holidays_every_year_and_on_one_date_are_not_prime() {
    let cal = Calendar {
        holidays: holidays(&["12-25 Christmas Day", "2026-04-03 Good Friday"]),
        ..Calendar::default()
    };
    // Christmas on a Friday, a Monday and a Tuesday.
    for year in [2026, 2028, 2029] {
        assert!(cal.is_holiday(utc(year, 12, 25, 12, 0)), "{year}");
        assert!(!cal.is_prime(utc(year, 12, 25, 12, 0)), "{year}");
    }
    assert!(cal.is_prime(utc(2026, 12, 24, 12, 0))); // the Thursday before
    assert!(!cal.is_prime(utc(2026, 4, 3, 12, 0)));
    assert!(cal.is_holiday(utc(2026, 4, 3, 0, 0)));
    assert!(!cal.is_holiday(utc(2026, 4, 4, 0, 0)));
    assert!(cal.is_prime(utc(2026, 4, 2, 12, 0)));
    // Only in 2026: 3 April 2031 is a Thursday, and prime.
    assert!(!cal.is_holiday(utc(2031, 4, 3, 12, 0)));
    assert!(cal.is_prime(utc(2031, 4, 3, 12, 0)));
}

#[test]
fn prime_ends_on_friday_at_five_until_monday_at_nine_or_tuesday_after_a_holiday() {
    let friday_five = utc(2026, 5, 1, 17, 0);
    let cal = Calendar::default();
    assert_eq!(
        cal.next_change(PRIME, friday_five),
        Ok(Some(utc(2026, 5, 4, 9, 0)))
    );
    assert_eq!(
        cal.next_start(PRIME, friday_five),
        Ok(Some(utc(2026, 5, 4, 9, 0)))
    );
    assert_eq!(cal.active_until(PRIME, friday_five), Ok(None));
    assert_eq!(
        cal.active_until(NON_PRIME, friday_five),
        Ok(Some(utc(2026, 5, 4, 9, 0)))
    );
    // Friday noon: prime until five.
    assert_eq!(
        cal.active_until(PRIME, utc(2026, 5, 1, 12, 0)),
        Ok(Some(friday_five))
    );

    let with_holiday = Calendar {
        holidays: holidays(&["2026-05-04 Early May bank holiday"]),
        ..Calendar::default()
    };
    assert_eq!(
        with_holiday.next_change(PRIME, friday_five),
        Ok(Some(utc(2026, 5, 5, 9, 0)))
    );
    assert_eq!(
        with_holiday.next_change(NON_PRIME, friday_five),
        Ok(Some(utc(2026, 5, 5, 9, 0)))
    );
}

#[test]
fn always_never_changes_and_no_prime_time_never_starts() {
    let cal = Calendar::default();
    assert_eq!(cal.next_change(ALWAYS, utc(2026, 5, 1, 17, 0)), Ok(None));
    assert_eq!(cal.active_until(ALWAYS, utc(2026, 5, 1, 17, 0)), Ok(None));
    let none = Calendar {
        prime_time: Vec::new(),
        ..Calendar::default()
    };
    assert_eq!(none.next_start(PRIME, utc(2026, 5, 1, 17, 0)), Ok(None));
    assert_eq!(
        none.next_start(NON_PRIME, utc(2026, 5, 1, 17, 0)),
        Ok(Some(utc(2026, 5, 1, 17, 0)))
    );
}

// ---- EPCC's periods ----

fn epcc() -> Calendar {
    let mut periods = BTreeMap::new();
    periods.insert(
        "DAY".to_string(),
        Period {
            spans: spans(&["Mon-Fri 10:00-18:00"]),
            holidays_off: true,
        },
    );
    periods.insert(
        "NIGHT".to_string(),
        Period::new(spans(&["Mon-Thu 18:00-10:00"])),
    );
    periods.insert(
        "WEEKEND".to_string(),
        Period::new(spans(&["Fri 18:00-24:00", "Sat-Sun", "Mon 00:00-10:00"])),
    );
    Calendar {
        periods,
        holidays: holidays(&["2026-05-25 Spring bank holiday"]),
        ..Calendar::default()
    }
}

#[test]
fn epcc_day_night_and_weekend_at_a_dozen_instants() {
    let cal = epcc();
    // The week of Monday 11 May 2026.
    let expect = [
        (utc(2026, 5, 11, 9, 59), "WEEKEND"),
        (utc(2026, 5, 11, 10, 0), "DAY"),
        (utc(2026, 5, 11, 17, 59), "DAY"),
        (utc(2026, 5, 11, 18, 0), "NIGHT"),
        (utc(2026, 5, 12, 3, 0), "NIGHT"),
        (utc(2026, 5, 12, 10, 0), "DAY"),
        (utc(2026, 5, 14, 18, 0), "NIGHT"),
        (utc(2026, 5, 15, 9, 59), "NIGHT"),
        (utc(2026, 5, 15, 10, 0), "DAY"),
        (utc(2026, 5, 15, 18, 0), "WEEKEND"),
        (utc(2026, 5, 16, 12, 0), "WEEKEND"),
        (utc(2026, 5, 17, 23, 59), "WEEKEND"),
        (utc(2026, 5, 18, 0, 0), "WEEKEND"),
        (utc(2026, 5, 18, 10, 0), "DAY"),
    ];
    for (t, period) in expect {
        let named: Vec<String> = cal
            .active_periods(t)
            .into_iter()
            .filter(|p| cal.periods.contains_key(p))
            .collect();
        assert_eq!(named, [period], "at {t}");
        assert_eq!(cal.is_active(period, t), Ok(true), "{period} at {t}");
    }
}

#[test]
fn epcc_periods_cover_the_week_once() {
    let cal = epcc();
    let mut t = utc(2026, 5, 11, 0, 0);
    while t < utc(2026, 5, 18, 0, 0) {
        let count = ["DAY", "NIGHT", "WEEKEND"]
            .iter()
            .filter(|p| cal.is_active(p, t) == Ok(true))
            .count();
        assert_eq!(count, 1, "at {t}");
        t += Duration::minutes(7);
    }
}

#[test]
fn the_weekend_is_one_stretch_from_friday_evening_to_monday_morning() {
    let cal = epcc();
    let monday_ten = utc(2026, 5, 18, 10, 0);
    assert_eq!(
        cal.next_change("WEEKEND", utc(2026, 5, 16, 12, 0)),
        Ok(Some(monday_ten))
    );
    assert_eq!(
        cal.active_until("WEEKEND", utc(2026, 5, 15, 18, 0)),
        Ok(Some(monday_ten))
    );
    assert_eq!(
        cal.next_start("WEEKEND", utc(2026, 5, 13, 12, 0)),
        Ok(Some(utc(2026, 5, 15, 18, 0)))
    );
    assert_eq!(
        cal.next_start("DAY", utc(2026, 5, 16, 12, 0)),
        Ok(Some(monday_ten))
    );
    assert_eq!(
        cal.next_start("NIGHT", utc(2026, 5, 16, 12, 0)),
        Ok(Some(utc(2026, 5, 18, 18, 0)))
    );
    // A NIGHT runs from Monday 18:00 to Friday 10:00, one stretch per night.
    assert_eq!(
        cal.active_until("NIGHT", utc(2026, 5, 11, 18, 0)),
        Ok(Some(utc(2026, 5, 12, 10, 0)))
    );
}

#[test]
fn a_holiday_closes_day_but_leaves_night_and_weekend_alone() {
    let cal = epcc();
    // Monday 25 May 2026 is a holiday.
    assert_eq!(cal.is_active("WEEKEND", utc(2026, 5, 25, 9, 0)), Ok(true));
    assert_eq!(cal.is_active("DAY", utc(2026, 5, 25, 12, 0)), Ok(false));
    assert_eq!(cal.is_active("NIGHT", utc(2026, 5, 25, 20, 0)), Ok(true));
    assert_eq!(
        cal.next_start("DAY", utc(2026, 5, 22, 18, 0)),
        Ok(Some(utc(2026, 5, 26, 10, 0)))
    );
    assert_eq!(
        cal.active_periods(utc(2026, 5, 25, 12, 0)),
        [ALWAYS, NON_PRIME]
    );
}

#[test]
fn unknown_periods_are_named_with_the_known_ones() {
    let err = epcc()
        .is_active("EVENING", utc(2026, 5, 11, 12, 0))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "period \"EVENING\" is not defined; the calendar has always, prime, non_prime, DAY, NIGHT, WEEKEND"
    );
    // Names are case-sensitive.
    assert!(epcc().next_change("day", utc(2026, 5, 11, 12, 0)).is_err());
}

// ---- time zones and daylight saving ----

/// The instants a period's first stretch after `from` begins and ends.
fn stretch_after(cal: &Calendar, period: &str, from: Time) -> (Time, Time) {
    let start = cal.next_start(period, from).unwrap().unwrap();
    let end = cal.active_until(period, start).unwrap().unwrap();
    (start, end)
}

fn with_period(zone: &str, span: &str) -> Calendar {
    let mut cal = in_zone(zone);
    cal.periods.insert("X".into(), Period::new(spans(&[span])));
    cal
}

#[test]
fn london_prime_time_is_nine_on_the_wall_clock_summer_and_winter() {
    let cal = in_zone("Europe/London");
    // The Monday after the spring change (29 March 2026): 09:00 BST.
    assert_eq!(
        cal.next_start(PRIME, utc(2026, 3, 29, 12, 0)),
        Ok(Some(utc(2026, 3, 30, 8, 0)))
    );
    assert!(!cal.is_prime(utc(2026, 3, 30, 7, 59)));
    assert!(cal.is_prime(utc(2026, 3, 30, 8, 0)));
    assert_eq!(
        cal.active_until(PRIME, utc(2026, 3, 30, 8, 0)),
        Ok(Some(utc(2026, 3, 30, 16, 0)))
    );
    // The Monday after the autumn change (25 October 2026): 09:00 GMT.
    assert_eq!(
        cal.next_start(PRIME, utc(2026, 10, 25, 12, 0)),
        Ok(Some(utc(2026, 10, 26, 9, 0)))
    );
    assert!(!cal.is_prime(utc(2026, 10, 26, 8, 59)));
    assert!(cal.is_prime(utc(2026, 10, 26, 9, 0)));
    assert_eq!(cal.offset_at(utc(2026, 7, 1, 0, 0)).local_minus_utc(), 3600);
    assert_eq!(cal.offset_at(utc(2026, 12, 1, 0, 0)).local_minus_utc(), 0);
}

#[test]
fn new_york_changes_on_other_dates() {
    let cal = in_zone("America/New_York");
    // Spring: 8 March 2026; Monday 9 March 09:00 EDT is 13:00 UTC.
    assert_eq!(
        cal.next_start(PRIME, utc(2026, 3, 8, 12, 0)),
        Ok(Some(utc(2026, 3, 9, 13, 0)))
    );
    // Autumn: 1 November 2026; Monday 2 November 09:00 EST is 14:00 UTC.
    assert_eq!(
        cal.next_start(PRIME, utc(2026, 11, 1, 12, 0)),
        Ok(Some(utc(2026, 11, 2, 14, 0)))
    );
    // On Monday 16 March New York has changed and London has not.
    let london = in_zone("Europe/London");
    assert_eq!(
        london.next_start(PRIME, utc(2026, 3, 16, 0, 0)),
        Ok(Some(utc(2026, 3, 16, 9, 0)))
    );
    assert_eq!(
        cal.next_start(PRIME, utc(2026, 3, 16, 0, 0)),
        Ok(Some(utc(2026, 3, 16, 13, 0)))
    );
}

#[test]
fn a_span_across_the_change_night_has_its_wall_clock_length() {
    let london = with_period("Europe/London", "daily 00:30-03:30");
    assert_eq!(
        stretch_after(&london, "X", utc(2026, 3, 28, 12, 0)),
        (utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 2, 30)) // 2 hours
    );
    assert_eq!(
        stretch_after(&london, "X", utc(2026, 10, 24, 12, 0)),
        (utc(2026, 10, 24, 23, 30), utc(2026, 10, 25, 3, 30)) // 4 hours
    );
    // An ordinary night: 3 hours.
    assert_eq!(
        stretch_after(&london, "X", utc(2026, 6, 1, 12, 0)),
        (utc(2026, 6, 1, 23, 30), utc(2026, 6, 2, 2, 30))
    );

    let new_york = with_period("America/New_York", "daily 00:30-03:30");
    assert_eq!(
        stretch_after(&new_york, "X", utc(2026, 3, 7, 12, 0)),
        (utc(2026, 3, 8, 5, 30), utc(2026, 3, 8, 7, 30))
    );
    assert_eq!(
        stretch_after(&new_york, "X", utc(2026, 10, 31, 12, 0)),
        (utc(2026, 11, 1, 4, 30), utc(2026, 11, 1, 8, 30))
    );
}

#[test]
fn times_in_the_gap_start_after_it_and_repeated_times_take_the_first() {
    let london = with_period("Europe/London", "daily 01:30-02:30");
    // Spring: 01:30 does not exist; the span runs 02:00-02:30 BST.
    assert_eq!(
        stretch_after(&london, "X", utc(2026, 3, 28, 12, 0)),
        (utc(2026, 3, 29, 1, 0), utc(2026, 3, 29, 1, 30))
    );
    // Autumn: 01:30 BST (the first), to 02:30 GMT.
    assert_eq!(
        stretch_after(&london, "X", utc(2026, 10, 24, 12, 0)),
        (utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 2, 30))
    );
    // Wholly inside the gap: not that day.
    let gap = with_period("Europe/London", "Sun 01:10-01:50");
    assert_eq!(
        gap.next_start("X", utc(2026, 3, 28, 12, 0)),
        Ok(Some(utc(2026, 4, 5, 0, 10)))
    );
}

#[test]
fn a_holiday_on_a_change_day_lasts_its_local_day() {
    let cal = Calendar {
        holidays: holidays(&["2026-03-29", "2026-10-25"]),
        ..in_zone("Europe/London")
    };
    assert!(!cal.is_holiday(utc(2026, 3, 28, 23, 59)));
    assert!(cal.is_holiday(utc(2026, 3, 29, 0, 0)));
    assert!(cal.is_holiday(utc(2026, 3, 29, 22, 59)));
    assert!(!cal.is_holiday(utc(2026, 3, 29, 23, 0))); // 00:00 BST on the 30th
    assert!(!cal.is_holiday(utc(2026, 10, 24, 22, 59)));
    assert!(cal.is_holiday(utc(2026, 10, 24, 23, 0))); // 00:00 BST on the 25th
    assert!(cal.is_holiday(utc(2026, 10, 25, 23, 59)));
    assert!(!cal.is_holiday(utc(2026, 10, 26, 0, 0)));
}

// ---- validation and the text forms ----

#[test]
fn validation_names_what_is_wrong() {
    let err = in_zone("Europe/Londn").validate().unwrap_err().to_string();
    assert!(
        err.starts_with(
            "time zone \"Europe/Londn\" is not known; use an IANA name such as Europe/London"
        ),
        "{err}"
    );

    let err = "Mon-Fri 09:00-25:00"
        .parse::<Span>()
        .unwrap_err()
        .to_string();
    assert!(err.contains("\"Mon-Fri 09:00-25:00\""), "{err}");
    assert!(err.contains("\"25:00\" is not a time of day"), "{err}");

    for empty in ["", "   ", "09:00-17:00"] {
        let err = empty.parse::<Span>().unwrap_err().to_string();
        assert!(err.contains("names no days"), "{empty:?}: {err}");
    }

    let cal = Calendar {
        prime_time: vec![Span {
            days: Days::List(Vec::new()),
            hours: None,
        }],
        ..Calendar::default()
    };
    let err = cal.validate().unwrap_err().to_string();
    assert!(err.contains("names no days"), "{err}");

    let mut cal = Calendar::default();
    cal.periods
        .insert("prime".into(), Period::new(spans(&["daily"])));
    assert_eq!(
        cal.validate().unwrap_err().to_string(),
        "period \"prime\" is built in (always, prime, non_prime); give the named period another name"
    );
    let mut cal = Calendar::default();
    cal.periods
        .insert("late night".into(), Period::new(spans(&["daily"])));
    assert!(matches!(
        cal.validate(),
        Err(CalendarError::BadPeriodName { .. })
    ));
}

const EXAMPLE: &str = r#"
time_zone = "Europe/London"
prime_time = ["Mon-Fri 09:00-17:00"]
holidays = ["12-25 Christmas Day", "12-26 Boxing Day", "2026-04-03 Good Friday"]

[periods]
DAY = { spans = ["Mon-Fri 10:00-18:00"], holidays_off = true }
NIGHT = ["Mon-Thu 18:00-10:00"]
WEEKEND = ["Fri 18:00-24:00", "Sat-Sun", "Mon 00:00-10:00"]
"#;

#[test]
fn the_toml_form_loads_and_prints_back() {
    let cal: Calendar = toml::from_str(EXAMPLE).unwrap();
    assert_eq!(cal.validate(), Ok(()));
    assert_eq!(cal.holidays.len(), 3);
    assert!(cal.periods["DAY"].holidays_off);
    assert!(!cal.periods["NIGHT"].holidays_off);
    assert_eq!(cal.periods["WEEKEND"].spans.len(), 3);

    let printed = toml::to_string(&cal).unwrap();
    assert_eq!(toml::from_str::<Calendar>(&printed).unwrap(), cal);
    let json = serde_json::to_string(&cal).unwrap();
    assert_eq!(serde_json::from_str::<Calendar>(&json).unwrap(), cal);

    // Every field has its default.
    assert_eq!(toml::from_str::<Calendar>("").unwrap(), Calendar::default());
}

#[test]
fn toml_errors_name_the_bad_text() {
    for (text, part) in [
        (
            "prime_time = [\"Mon-Fri 09:00-25:00\"]",
            "\"25:00\" is not a time of day",
        ),
        ("holidays = [\"25-12 Christmas\"]", "25-12 is not a day"),
        (
            "[periods]\nNIGHT = [\"Mon-Thur 18:00-10:00\"]",
            "\"Thur\" is not a day",
        ),
        ("timezone = \"UTC\"", "timezone"),
    ] {
        let err = toml::from_str::<Calendar>(text).unwrap_err().to_string();
        assert!(err.contains(part), "{text}: {err}");
    }
}

// ---- the PBS holidays file ----

const PBS_FILE: &str = "\
*
* holidays - prime time and holidays for 2026
*
HOLIDAYFILE_VERSION1
YEAR\t2026
*
*\tPrime\tNon-Prime
* Day\tStart\tStart
*
weekday\t0000\t1730
friday\t0800\t1600   * early finish
saturday\tnone\tall
sunday\tnone\tall
*
* Day of\tCalendar\tCompany
* Year\t\tDate\t\tHoliday
*
1\tJan 1\tNew Year's Day
96\tApr 6\tEaster Monday
359\tDec 25\tChristmas Day
360\tDec 26\tBoxing Day
";

#[test]
fn a_pbs_holidays_file_imports() {
    let (prime, holidays) = import_pbs_holidays(PBS_FILE).unwrap();
    assert_eq!(prime, spans(&["Mon-Thu 00:00-17:30", "Fri 08:00-16:00"]));
    let dates: Vec<String> = holidays.iter().map(ToString::to_string).collect();
    assert_eq!(
        dates,
        [
            "2026-01-01 New Year's Day",
            "2026-04-06 Easter Monday",
            "2026-12-25 Christmas Day",
            "2026-12-26 Boxing Day"
        ]
    );
    let cal = Calendar {
        prime_time: prime,
        holidays,
        ..Calendar::default()
    };
    assert!(cal.is_prime(utc(2026, 1, 5, 0, 0))); // Monday midnight: the 0000 start
    assert!(!cal.is_prime(utc(2026, 1, 5, 17, 30)));
    assert!(!cal.is_prime(utc(2026, 1, 9, 7, 59))); // Friday
    assert!(cal.is_prime(utc(2026, 1, 9, 8, 0)));
    assert!(!cal.is_prime(utc(2026, 1, 10, 12, 0))); // Saturday
    assert!(!cal.is_prime(utc(2026, 4, 6, 12, 0))); // Easter Monday
    assert!(!cal.is_prime(utc(2026, 1, 1, 12, 0))); // a Thursday holiday
}

#[test]
fn pbs_errors_carry_the_line_number_and_the_line() {
    for (text, line_no, part) in [
        (
            "YEAR 2026\n*\nweekday 9am 1730",
            3,
            "\"9am\" is not a start",
        ),
        ("weekday 0900 2500", 1, "\"2500\" is not a start"),
        (
            "weekday 0900",
            1,
            "expected weekday PRIME_START NONPRIME_START",
        ),
        ("1 Jan 1 New Year's Day", 1, "needs the YEAR line above it"),
        (
            "YEAR 2026\n359 Dec 24 Christmas",
            2,
            "day 359 of 2026 is Dec 25, not Dec 24",
        ),
        ("YEAR 2026\n366 Dec 32 Nothing", 2, "2026 has no day 366"),
        ("YEAR 26", 1, "expected YEAR yyyy"),
        ("YEAR 2026\nYEAR 2027", 2, "a second YEAR line"),
        (
            "* fine\nweekdays 0900 1700",
            2,
            "\"weekdays\" is not a keyword",
        ),
    ] {
        let err = import_pbs_holidays(text).unwrap_err();
        let CalendarError::PbsHolidays {
            line_no: n,
            ref line,
            ..
        } = err
        else {
            panic!("{text}: {err}");
        };
        assert_eq!(n, line_no, "{text}");
        assert_eq!(Some(line.as_str()), text.lines().nth(line_no - 1), "{text}");
        let message = err.to_string();
        assert!(
            message.starts_with(&format!("holidays file line {line_no} ")),
            "{message}"
        );
        assert!(message.contains(part), "{text}: {message}");
    }
}

// ---- properties ----

fn weekday() -> impl Strategy<Value = chrono::Weekday> {
    (0u8..7).prop_map(|n| chrono::Weekday::try_from(n).unwrap())
}

fn a_span() -> impl Strategy<Value = Span> {
    let days = prop_oneof![
        Just(Days::Daily),
        prop::collection::vec(
            (weekday(), weekday()).prop_map(|(first, last)| DayRange { first, last }),
            1..3
        )
        .prop_map(Days::List),
    ];
    // Hours on the half hour, so spans meet and DST gaps bite.
    let time = (0u32..48).prop_map(|h| span::time_of_day(h * 30).unwrap());
    let end = prop_oneof![Just(End::Midnight), time.clone().prop_map(End::At)];
    let hours = prop::option::of((time, end).prop_map(|(from, to)| Hours { from, to }));
    (days, hours).prop_map(|(days, hours)| Span { days, hours })
}

fn a_holiday() -> impl Strategy<Value = Holiday> {
    let name = "[A-Za-z][A-Za-z' ]{0,12}[a-z]|";
    let date = prop_oneof![
        (1u32..=12, 1u32..=28).prop_map(|(month, day)| HolidayDate::Yearly { month, day }),
        (1900i32..2100, 1u32..=366).prop_filter_map("a day of that year", |(y, d)| {
            chrono::NaiveDate::from_yo_opt(y, d).map(HolidayDate::On)
        }),
    ];
    (date, name).prop_map(|(date, name)| Holiday { date, name })
}

const ZONES: [&str; 6] = [
    "UTC",
    "Europe/London",
    "America/New_York",
    "Australia/Lord_Howe", // a half-hour change
    "Asia/Kolkata",
    "Pacific/Apia", // skipped 30 December 2011
];

/// Instants near daylight-saving changes, and anywhere in a few years.
fn an_instant() -> impl Strategy<Value = Time> {
    let near = [
        utc(2026, 3, 29, 0, 0),
        utc(2026, 10, 25, 0, 0),
        utc(2026, 3, 8, 6, 0),
        utc(2026, 11, 1, 6, 0),
        utc(2026, 4, 4, 15, 0),
        utc(2011, 12, 29, 10, 0),
    ];
    prop_oneof![
        (0usize..near.len(), -3 * 86_400i64..3 * 86_400)
            .prop_map(move |(i, s)| near[i] + Duration::seconds(s)),
        (0i64..4 * 365 * 86_400).prop_map(|s| utc(2025, 1, 1, 0, 0) + Duration::seconds(s)),
    ]
}

proptest! {
    #[test]
    fn spans_and_holidays_read_back_what_they_print(span in a_span(), holiday in a_holiday()) {
        prop_assert_eq!(span.to_string().parse::<Span>().unwrap(), span.clone());
        prop_assert_eq!(holiday.to_string().parse::<Holiday>().unwrap(), holiday.clone());
        let json = serde_json::to_string(&span).unwrap();
        prop_assert_eq!(serde_json::from_str::<Span>(&json).unwrap(), span);
    }

    #[test]
    fn periods_read_back_what_they_print(
        spans in prop::collection::vec(a_span(), 0..4),
        holidays_off in any::<bool>(),
    ) {
        let period = Period { spans, holidays_off };
        prop_assert_eq!(period.to_string().parse::<Period>().unwrap(), period);
    }

    #[test]
    fn next_change_agrees_with_is_active(
        zone in 0usize..ZONES.len(),
        spans in prop::collection::vec(a_span(), 0..4),
        holiday_days in prop::collection::vec(0i64..10, 0..3),
        holidays_off in any::<bool>(),
        t in an_instant(),
        probes in prop::collection::vec(0.0f64..1.0, 8),
    ) {
        let tz: chrono_tz::Tz = ZONES[zone].parse().unwrap();
        let today = local::local_date(tz, t);
        let holidays = holiday_days
            .iter()
            .map(|&k| Holiday { date: HolidayDate::On(today + Duration::days(k)), name: String::new() })
            .collect();
        let mut cal = Calendar {
            time_zone: ZONES[zone].to_string(),
            prime_time: spans.clone(),
            holidays,
            periods: BTreeMap::new(),
        };
        cal.periods.insert("P".into(), Period { spans, holidays_off });
        for period in ["P", PRIME, NON_PRIME] {
            let now = cal.is_active(period, t).unwrap();
            let change = cal.next_change(period, t).unwrap();
            let end = change.unwrap_or(t + Duration::days(HORIZON_DAYS));
            if let Some(c) = change {
                prop_assert!(c > t);
                prop_assert_ne!(cal.is_active(period, c).unwrap(), now, "{} at {}", period, c);
                let before = c - Duration::seconds(1);
                if before >= t {
                    prop_assert_eq!(cal.is_active(period, before).unwrap(), now, "{} at {}", period, before);
                }
                prop_assert_eq!(cal.active_until(period, t).unwrap(), now.then_some(c));
                prop_assert_eq!(cal.next_start(period, t).unwrap(), Some(if now { t } else { c }));
            }
            let length = (end - t).num_seconds() as f64;
            for p in &probes {
                let u = t + Duration::seconds((p * length) as i64);
                prop_assert_eq!(cal.is_active(period, u).unwrap(), now, "{} at {} (from {})", period, u, t);
            }
        }
    }
}
