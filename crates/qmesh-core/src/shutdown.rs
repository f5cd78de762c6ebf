//! Shutdown windows: planned times when node sets leave service (EPCC's
//! "knowledge of planned shutdowns", DJM's shutdown-aware job selection,
//! PBS's `dedicated_time`, Slurm's maintenance reservations).
//!
//! A window is configuration (`qmgr -c "create shutdown maint start = ...,
//! end = ..."`), kept with the queues so `print server` backs it up. The
//! scheduler reads every window as a closedown (`scheduler::closedown`):
//! no job starts whose wall time would reach into it, and shorter jobs are
//! backfilled into the time left before it. A window that has ended is
//! kept until an operator deletes it, and ignored.
//!
//! Times are written in the calendar's time zone (summer time included:
//! `2027-07-01 08:00` in London is 07:00 UTC whenever it is written) or as
//! RFC 3339 with their own offset; they are kept in UTC.

use std::fmt::Display;

use chrono::{DateTime, LocalResult, NaiveDateTime, SecondsFormat, TimeZone};
use serde::{Deserialize, Serialize};

use crate::time::Time;

/// One planned shutdown of some node sets (all of them if none is named).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shutdown {
    pub name: String,
    /// When the nodes leave service.
    pub start: Time,
    /// When they are back; always after `start`.
    pub end: Time,
    /// The node sets it takes down; empty for every set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_sets: Vec<String>,
    /// Why, for the operators (shown by `qmgr list shutdown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

impl Shutdown {
    pub fn new(name: &str, start: Time, end: Time) -> Shutdown {
        Shutdown {
            name: name.to_string(),
            start,
            end,
            node_sets: Vec::new(),
            comment: None,
        }
    }

    /// Whether it takes down node set `set`.
    pub fn covers(&self, set: &str) -> bool {
        self.node_sets.is_empty() || self.node_sets.iter().any(|s| s == set)
    }

    /// Whether it has ended by `now` (the scheduler ignores it then).
    pub fn is_over(&self, now: Time) -> bool {
        self.end <= now
    }

    /// Checks what a window must satisfy on its own: end after start.
    pub fn check(&self) -> Result<(), String> {
        if self.end <= self.start {
            return Err(format!(
                "shutdown \"{}\": end ({}) is not after start ({}); give an end later than the start",
                self.name,
                self.end.to_rfc3339_opts(SecondsFormat::Secs, true),
                self.start.to_rfc3339_opts(SecondsFormat::Secs, true),
            ));
        }
        Ok(())
    }
}

/// Shutdown names: a letter, then letters, digits, `_` or `-`, at most 32.
pub fn valid_shutdown_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic()) {
        return Err("it must start with a letter".into());
    }
    if !chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err("use only letters, digits, '_' and '-'".into());
    }
    if name.len() > 32 {
        return Err("it may have at most 32 characters".into());
    }
    Ok(())
}

/// Reads a time: `YYYY-MM-DD HH:MM[:SS]` (also with `T`) in local time in
/// `zone`, or RFC 3339 with its own offset (`2026-12-01T08:00:00+01:00`,
/// `...Z`). A local time the clocks skip is refused; one they pass twice
/// is the first.
pub fn parse_time<Z: TimeZone>(text: &str, zone: &Z) -> Result<Time, String> {
    let text = text.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.to_utc());
    }
    let local = [
        "%Y-%m-%d %H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%dT%H:%M:%S",
    ]
    .iter()
    .find_map(|form| NaiveDateTime::parse_from_str(text, form).ok());
    let Some(naive) = local else {
        return Err(format!(
            "\"{text}\" is not a time; write \"YYYY-MM-DD HH:MM\" in the calendar's time zone \
             or RFC 3339 with an offset, e.g. 2026-12-01T08:00:00+01:00"
        ));
    };
    match zone.from_local_datetime(&naive) {
        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => Ok(t.to_utc()),
        LocalResult::None => Err(format!(
            "\"{text}\" does not exist in the calendar's time zone: the clocks go forward \
             then; write a later time, or RFC 3339 with an offset"
        )),
    }
}

/// `2026-12-01T08:00:00+01:00`: what `print server` writes, read back the
/// same whatever the server's offset then.
pub fn format_rfc3339<Z: TimeZone>(t: Time, zone: &Z) -> String
where
    Z::Offset: Display,
{
    t.with_timezone(zone)
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// `2026-12-01 08:00` in local time in `zone` (seconds only when set):
/// what people read in qstat's comment.
pub fn format_local<Z: TimeZone>(t: Time, zone: &Z) -> String
where
    Z::Offset: Display,
{
    let local = t.with_timezone(zone);
    if local.timestamp() % 60 == 0 {
        local.format("%Y-%m-%d %H:%M").to_string()
    } else {
        local.format("%Y-%m-%d %H:%M:%S").to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::FixedOffset;

    fn utc() -> FixedOffset {
        FixedOffset::east_opt(0).unwrap()
    }

    fn at(text: &str) -> Time {
        DateTime::parse_from_rfc3339(text).unwrap().to_utc()
    }

    #[test]
    fn local_times_take_the_servers_offset() {
        let plus1 = FixedOffset::east_opt(3600).unwrap();
        assert_eq!(
            parse_time("2026-12-01 08:00", &plus1).unwrap(),
            at("2026-12-01T07:00:00Z")
        );
        assert_eq!(
            parse_time("2026-12-01T08:00:30", &utc()).unwrap(),
            at("2026-12-01T08:00:30Z")
        );
        assert_eq!(
            parse_time(" 2026-12-01T08:00:00-05:00 ", &plus1).unwrap(),
            at("2026-12-01T13:00:00Z"),
            "an explicit offset wins"
        );
        assert_eq!(
            parse_time("2026-12-01T08:00:00Z", &plus1).unwrap(),
            at("2026-12-01T08:00:00Z")
        );
    }

    #[test]
    fn bad_times_say_the_accepted_forms() {
        for bad in ["tomorrow", "2026-13-01 08:00", "2026-12-01", "08:00", ""] {
            let err = parse_time(bad, &utc()).unwrap_err();
            assert!(
                err.contains("YYYY-MM-DD HH:MM") && err.contains("RFC 3339"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn formats_read_back() {
        let plus1 = FixedOffset::east_opt(3600).unwrap();
        let t = at("2026-12-24T17:00:00Z");
        assert_eq!(format_rfc3339(t, &plus1), "2026-12-24T18:00:00+01:00");
        assert_eq!(format_rfc3339(t, &utc()), "2026-12-24T17:00:00Z");
        assert_eq!(parse_time(&format_rfc3339(t, &plus1), &utc()).unwrap(), t);
        assert_eq!(format_local(t, &plus1), "2026-12-24 18:00");
        assert_eq!(
            format_local(t + chrono::Duration::seconds(5), &plus1),
            "2026-12-24 18:00:05"
        );
    }

    #[test]
    fn a_window_ends_after_it_starts_and_covers_its_sets() {
        let mut w = Shutdown::new(
            "maint",
            at("2026-12-01T08:00:00Z"),
            at("2026-12-01T08:00:00Z"),
        );
        let err = w.check().unwrap_err();
        assert!(
            err.contains("shutdown \"maint\": end") && err.contains("not after start"),
            "{err}"
        );
        w.end = at("2026-12-01T20:00:00Z");
        w.check().unwrap();
        assert!(w.covers("anything"), "no sets named: every set");
        w.node_sets = vec!["batch".into()];
        assert!(w.covers("batch") && !w.covers("interactive"));
        assert!(!w.is_over(at("2026-12-01T19:59:59Z")));
        assert!(w.is_over(at("2026-12-01T20:00:00Z")));
    }

    #[test]
    fn names_are_checked() {
        valid_shutdown_name("xmas-2026").unwrap();
        for bad in ["", "9am", "a b", &"x".repeat(33)] {
            assert!(valid_shutdown_name(bad).is_err(), "{bad}");
        }
    }
}
