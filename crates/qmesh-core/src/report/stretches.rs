//! The stretches of time a report splits node-hours over: local days and
//! months, and the calendar's periods (prime, non-prime, holidays, named
//! ones) as the calendar says they fell. A job's run is shared out by its
//! overlap with each stretch, so a job running from 16:00 to 18:00 puts
//! one hour in prime time and one in non-prime, as SDSC counted.

use chrono::{Datelike, Months, NaiveDate};
use chrono_tz::Tz;

use crate::calendar::Calendar;
use crate::calendar::local::{day_start, local_date};

/// A stretch `[start, end)` in Unix seconds, and the group it counts for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stretch {
    pub start: i64,
    pub end: i64,
    pub group: usize,
}

fn time(secs: i64) -> crate::time::Time {
    chrono::DateTime::from_timestamp(secs, 0).unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC)
}

/// The local days (`month` false) or months of `zone` that `[from, to)`
/// touches, as keys (`2026-11-24`, `2026-11`) with their stretches (group
/// = the key's index), clipped to `[from, to)`.
pub fn calendar_buckets(zone: Tz, from: i64, to: i64, month: bool) -> (Vec<String>, Vec<Stretch>) {
    let mut keys = Vec::new();
    let mut stretches = Vec::new();
    if to <= from {
        return (keys, stretches);
    }
    let first = local_date(zone, time(from));
    let mut date = if month {
        first.with_day(1).unwrap_or(first)
    } else {
        first
    };
    loop {
        let next: Option<NaiveDate> = if month {
            date.checked_add_months(Months::new(1))
        } else {
            date.succ_opt()
        };
        let Some(next) = next else { break };
        let start = day_start(zone, date).timestamp();
        let end = day_start(zone, next).timestamp();
        if start >= to {
            break;
        }
        keys.push(if month {
            date.format("%Y-%m").to_string()
        } else {
            date.format("%Y-%m-%d").to_string()
        });
        stretches.push(Stretch {
            start: start.max(from),
            end: end.min(to),
            group: keys.len() - 1,
        });
        date = next;
    }
    (keys, stretches)
}

/// Where `period` (a calendar period name, or `holiday`) was active within
/// `[from, to)`, for group `group`.
pub fn period_stretches(
    calendar: &Calendar,
    period: &str,
    from: i64,
    to: i64,
    group: usize,
) -> Vec<Stretch> {
    let mut out = Vec::new();
    if to <= from {
        return out;
    }
    if period == HOLIDAY {
        let zone = calendar.zone().unwrap_or(Tz::UTC);
        let mut date = local_date(zone, time(from));
        loop {
            let start = day_start(zone, date).timestamp();
            let Some(next) = date.succ_opt() else { break };
            if start >= to {
                break;
            }
            if calendar.holidays.iter().any(|h| h.falls_on(date)) {
                let end = day_start(zone, next).timestamp();
                push(&mut out, start.max(from), end.min(to), group);
            }
            date = next;
        }
        return out;
    }
    let mut t = from;
    let Ok(mut active) = calendar.is_active(period, time(t)) else {
        return out;
    };
    while t < to {
        let next = match calendar.next_change(period, time(t)) {
            Ok(Some(next)) if next.timestamp() > t => next.timestamp().min(to),
            // No change within the calendar's horizon: as it is, up to `to`.
            _ => to,
        };
        if active {
            push(&mut out, t, next, group);
        }
        t = next;
        active = !active;
    }
    out
}

fn push(out: &mut Vec<Stretch>, start: i64, end: i64, group: usize) {
    match out.last_mut() {
        Some(last) if last.end == start && last.group == group => last.end = end,
        _ => out.push(Stretch { start, end, group }),
    }
}

/// The holidays' pseudo-period.
pub const HOLIDAY: &str = "holiday";

/// `f(group, seconds)` for each stretch of `stretches` (sorted, disjoint)
/// that `[a, b)` overlaps, with the overlap.
pub fn overlaps(stretches: &[Stretch], a: i64, b: i64, mut f: impl FnMut(usize, i64)) {
    let first = stretches.partition_point(|s| s.end <= a);
    for s in &stretches[first..] {
        if s.start >= b {
            break;
        }
        let seconds = b.min(s.end) - a.max(s.start);
        if seconds > 0 {
            f(s.group, seconds);
        }
    }
}

/// The group of the stretch of `stretches` (sorted, disjoint) holding `t`.
pub fn holding(stretches: &[Stretch], t: i64) -> Option<usize> {
    let i = stretches.partition_point(|s| s.end <= t);
    stretches.get(i).filter(|s| s.start <= t).map(|s| s.group)
}
