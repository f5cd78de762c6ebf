//! From local wall-clock time to instants, with the daylight-saving rule of
//! the calendar (see the module comment of `calendar`): a local time that
//! does not exist (in the spring gap) is the first instant after the gap; a
//! local time that happens twice (in the autumn overlap) is its first
//! occurrence.

use chrono::{DateTime, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

use crate::time::Time;

/// UTC offsets stay well within this, so `local - SLACK` read as UTC is
/// earlier on every wall clock, and `local + SLACK` later.
const SLACK_SECS: i64 = 15 * 3600;

/// The instant the wall clock in `tz` shows `local`, by the rule above.
pub(crate) fn resolve(tz: Tz, local: NaiveDateTime) -> Time {
    match tz.from_local_datetime(&local) {
        LocalResult::Single(t) => t.with_timezone(&Utc),
        LocalResult::Ambiguous(a, b) => a.min(b).with_timezone(&Utc),
        LocalResult::None => first_showing_at_least(tz, local),
    }
}

/// The first instant whose wall clock shows `local` or later: the end of
/// the gap `local` falls in. Bisection to the second (transitions fall on
/// whole seconds), on a window where the wall clock only jumps forward.
fn first_showing_at_least(tz: Tz, local: NaiveDateTime) -> Time {
    let at = local.and_utc().timestamp();
    let shows =
        |secs: i64| DateTime::from_timestamp(secs, 0).map(|t| t.with_timezone(&tz).naive_local());
    // Whole seconds: shows(lo) < local <= shows(hi).
    let (mut lo, mut hi) = (at - SLACK_SECS, at + SLACK_SECS);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match shows(mid) {
            Some(wall) if wall < local => lo = mid,
            _ => hi = mid,
        }
    }
    DateTime::from_timestamp(hi, 0).unwrap_or(local.and_utc())
}

/// The instant `date` begins in `tz`.
pub(crate) fn day_start(tz: Tz, date: NaiveDate) -> Time {
    resolve(tz, date.and_time(NaiveTime::MIN))
}

/// The local date of `t` in `tz`.
pub(crate) fn local_date(tz: Tz, t: Time) -> NaiveDate {
    t.with_timezone(&tz).date_naive()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn local(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, mo, d)
            .unwrap()
            .and_hms_opt(h, mi, 0)
            .unwrap()
    }

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> Time {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    #[test]
    fn a_time_in_the_spring_gap_is_the_end_of_the_gap() {
        let london = chrono_tz::Europe::London;
        // 29 March 2026: 01:00 GMT jumps to 02:00 BST, at 01:00 UTC.
        assert_eq!(
            resolve(london, local(2026, 3, 29, 0, 59)),
            utc(2026, 3, 29, 0, 59)
        );
        assert_eq!(
            resolve(london, local(2026, 3, 29, 1, 0)),
            utc(2026, 3, 29, 1, 0)
        );
        assert_eq!(
            resolve(london, local(2026, 3, 29, 1, 30)),
            utc(2026, 3, 29, 1, 0)
        );
        assert_eq!(
            resolve(london, local(2026, 3, 29, 2, 0)),
            utc(2026, 3, 29, 1, 0)
        );
        assert_eq!(
            resolve(london, local(2026, 3, 29, 2, 30)),
            utc(2026, 3, 29, 1, 30)
        );
    }

    #[test]
    fn a_repeated_time_is_its_first_occurrence() {
        let london = chrono_tz::Europe::London;
        // 25 October 2026: 02:00 BST falls back to 01:00 GMT, at 01:00 UTC.
        assert_eq!(
            resolve(london, local(2026, 10, 25, 1, 30)),
            utc(2026, 10, 25, 0, 30)
        );
        assert_eq!(
            resolve(london, local(2026, 10, 25, 2, 0)),
            utc(2026, 10, 25, 2, 0)
        );
    }

    #[test]
    fn a_whole_day_missing_begins_the_next() {
        // Samoa skipped 30 December 2011 (UTC-10 to UTC+14).
        let apia = chrono_tz::Pacific::Apia;
        let next = resolve(apia, local(2011, 12, 31, 0, 0));
        assert_eq!(
            day_start(apia, NaiveDate::from_ymd_opt(2011, 12, 30).unwrap()),
            next
        );
        assert_eq!(
            local_date(apia, next),
            NaiveDate::from_ymd_opt(2011, 12, 31).unwrap()
        );
    }
}
