//! sacct's time window: `-S/--starttime` and `-E/--endtime` in Slurm's
//! forms, and Slurm's defaults. Read on the rig (`sacct -v` prints the
//! window it asks for): `now[{+|-}N[seconds|minutes|hours|days|weeks]]`
//! (whole words, singular or plural; `now-2h` is refused), `YYYY-MM-DD`,
//! `YYYY-MM-DDTHH:MM[:SS]`, `MMDD[YY]`, `MM/DD[/YY]`, `HH:MM[:SS]`
//! (today), `today` and `midnight` (today's 00:00), `noon`, `fika` and
//! `teatime` (today's 12:00, 15:00, 16:00), `tomorrow`. Without `-S`:
//! today's 00:00; with jobs named (`-j`), the epoch; with states asked
//! (`-s`), now. Without `-E`: now. A start after the end is an error.

use chrono::{DateTime, Duration, Local, NaiveDate, NaiveDateTime, NaiveTime, TimeZone};

/// The forms, for the error.
const FORMS: &str = "now[{+|-}N[seconds|minutes|hours|days|weeks]], YYYY-MM-DD[THH:MM[:SS]], \
                     MMDD[YY], MM/DD[/YY], HH:MM[:SS], today, midnight, noon, fika, teatime or \
                     tomorrow";

/// A time as `-S` and `-E` take it, in the local zone.
pub fn parse(text: &str, now: DateTime<Local>) -> Result<DateTime<Local>, String> {
    let bad = || format!("Invalid time specification \"{text}\"; write {FORMS}");
    let t = text.trim().to_ascii_lowercase();
    let today = now.date_naive();
    let local = |at: NaiveDateTime| Local.from_local_datetime(&at).earliest().ok_or_else(bad);
    let at = |h: u32, m: u32, day: NaiveDate| {
        NaiveTime::from_hms_opt(h, m, 0)
            .ok_or_else(bad)
            .and_then(|time| local(day.and_time(time)))
    };
    if let Some(rest) = t.strip_prefix("now") {
        let rest: String = rest.chars().filter(|c| !c.is_whitespace()).collect();
        if rest.is_empty() {
            return Ok(now);
        }
        let (sign, rest) = match rest.split_at(1) {
            ("+", r) => (1, r),
            ("-", r) => (-1, r),
            _ => return Err(bad()),
        };
        let split = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let n: i64 = rest[..split].parse().map_err(|_| bad())?;
        let unit = match &rest[split..] {
            "" | "second" | "seconds" => 1,
            "minute" | "minutes" => 60,
            "hour" | "hours" => 3600,
            "day" | "days" => 86400,
            "week" | "weeks" => 7 * 86400,
            _ => return Err(bad()),
        };
        return Ok(now + Duration::seconds(sign * n * unit));
    }
    match t.as_str() {
        "today" | "midnight" => return at(0, 0, today),
        "noon" => return at(12, 0, today),
        "fika" => return at(15, 0, today),
        "teatime" => return at(16, 0, today),
        "tomorrow" => return at(0, 0, today.succ_opt().ok_or_else(bad)?),
        _ => {}
    }
    let time_of = |s: &str| {
        NaiveTime::parse_from_str(s, "%H:%M:%S")
            .or_else(|_| NaiveTime::parse_from_str(s, "%H:%M"))
            .ok()
            .filter(|_| s.split(':').skip(1).all(|p| p.len() == 2))
    };
    if let Some((date, time)) = t.split_once('t') {
        let day = NaiveDate::parse_from_str(date, "%Y-%m-%d").map_err(|_| bad())?;
        return local(day.and_time(time_of(time).ok_or_else(bad)?));
    }
    if let Ok(day) = NaiveDate::parse_from_str(&t, "%Y-%m-%d") {
        return at(0, 0, day);
    }
    if t.contains(':') {
        return local(today.and_time(time_of(&t).ok_or_else(bad)?));
    }
    let day = month_day(&t, today).ok_or_else(bad)?;
    at(0, 0, day)
}

/// `MMDD[YY]` and `MM/DD[/YY]`: this year's day unless a year is given.
fn month_day(t: &str, today: NaiveDate) -> Option<NaiveDate> {
    let parts: Vec<&str> = if t.contains('/') {
        t.split('/').collect()
    } else if t.len() == 4 || t.len() == 6 {
        (0..t.len()).step_by(2).map(|i| &t[i..i + 2]).collect()
    } else {
        return None;
    };
    if parts.len() < 2 || parts.len() > 3 || !parts.iter().all(|p| p.len() <= 2) {
        return None;
    }
    let number = |p: &str| p.parse::<u32>().ok();
    let year = match parts.get(2) {
        Some(yy) => 2000 + i32::try_from(number(yy)?).ok()?,
        None => chrono::Datelike::year(&today),
    };
    NaiveDate::from_ymd_opt(year, number(parts[0])?, number(parts[1])?)
}

/// The window asked for: `(start, end)` in Unix seconds, 0 for the epoch.
pub fn window(
    start: Option<&str>,
    end: Option<&str>,
    (jobs_named, states_asked): (bool, bool),
    now: DateTime<Local>,
) -> Result<(i64, i64), String> {
    let end = match end {
        Some(text) => parse(text, now)?,
        None => now,
    };
    let start = match start {
        Some(text) => parse(text, now)?.timestamp(),
        None if jobs_named => 0,
        None if states_asked => now.timestamp(),
        None => parse("today", now)?.timestamp(),
    };
    if start > end.timestamp() {
        let shown = |secs: i64| {
            Local
                .timestamp_opt(secs, 0)
                .earliest()
                .map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string())
                .unwrap_or_default()
        };
        return Err(format!(
            "Start time ({}) requested is after end time ({}).",
            shown(start),
            shown(end.timestamp())
        ));
    }
    Ok((start, end.timestamp()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Local> {
        Local
            .with_ymd_and_hms(2026, 11, 27, 11, 11, 42)
            .earliest()
            .unwrap()
    }

    fn shown(text: &str) -> String {
        parse(text, now())
            .map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string())
            .unwrap_or_else(|e| e)
    }

    /// What `sacct -v -S TEXT` said on the rig at 2026-11-27T11:11:42.
    #[test]
    fn slurms_forms_give_slurms_times() {
        for (text, at) in [
            ("now", "2026-11-27T11:11:42"),
            ("now-1hour", "2026-11-27T10:11:42"),
            ("now-2hours", "2026-11-27T09:11:42"),
            ("now - 2hours", "2026-11-27T09:11:42"),
            ("now-30minutes", "2026-11-27T10:41:42"),
            ("now-2minute", "2026-11-27T11:09:42"),
            ("now-1", "2026-11-27T11:11:41"),
            ("now-2days", "2026-11-25T11:11:42"),
            ("now-1week", "2026-11-20T11:11:42"),
            ("now+0", "2026-11-27T11:11:42"),
            ("10:00", "2026-11-27T10:00:00"),
            ("10:30:15", "2026-11-27T10:30:15"),
            ("1127", "2026-11-27T00:00:00"),
            ("112726", "2026-11-27T00:00:00"),
            ("1126", "2026-11-26T00:00:00"),
            ("11/27", "2026-11-27T00:00:00"),
            ("11/26/26", "2026-11-26T00:00:00"),
            ("2026-11-27", "2026-11-27T00:00:00"),
            ("2026-11-27T10:30", "2026-11-27T10:30:00"),
            ("2026-11-27T9:05", "2026-11-27T09:05:00"),
            ("2026-11-27T10:30:15", "2026-11-27T10:30:15"),
            ("today", "2026-11-27T00:00:00"),
            ("midnight", "2026-11-27T00:00:00"),
            ("noon", "2026-11-27T12:00:00"),
            ("teatime", "2026-11-27T16:00:00"),
            ("tomorrow", "2026-11-28T00:00:00"),
        ] {
            assert_eq!(shown(text), at, "-S {text}");
        }
        for refused in [
            "now-2h",
            "now-2min",
            "now-2s",
            "bogus",
            "yesterday",
            "1:5",
            "2026-11-27T10",
            "11/27/2026",
        ] {
            assert!(
                shown(refused).starts_with("Invalid time specification"),
                "-S {refused}: {}",
                shown(refused)
            );
        }
    }

    #[test]
    fn the_default_window_and_a_start_after_the_end() {
        let n = now();
        let midnight = parse("today", n).unwrap().timestamp();
        assert_eq!(
            window(None, None, (false, false), n).unwrap(),
            (midnight, n.timestamp())
        );
        assert_eq!(window(None, None, (true, false), n).unwrap().0, 0, "-j");
        assert_eq!(
            window(None, None, (false, true), n).unwrap().0,
            n.timestamp(),
            "-s"
        );
        assert_eq!(
            window(None, Some("11:05"), (false, false), n).unwrap().1,
            parse("11:05", n).unwrap().timestamp()
        );
        assert_eq!(
            window(Some("23:00"), None, (false, false), n).unwrap_err(),
            "Start time (2026-11-27T23:00:00) requested is after end time (2026-11-27T11:11:42)."
        );
    }
}
