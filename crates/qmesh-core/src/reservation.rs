//! Advance and standing reservations, PBS Pro's way (`pbs_rsub`): nodes
//! held for some users from a start to an end, once or on a recurrence
//! rule (RFC 5545 RRULE, `FREQ=WEEKLY;BYDAY=MO,WE;COUNT=10`).
//!
//! A reservation is configuration, kept with the queues in the one stored
//! record, because it is one: it makes a queue (`R12`) its users submit to,
//! and it changes what the planner may do with nodes, as a shutdown window
//! does. It is confirmed when it is made (`scheduler::reservations` finds
//! nodes free for every occurrence, around running jobs, other
//! reservations and shutdown windows) or refused with the reason; an
//! unconfirmed reservation is never stored. Its occurrences, each with its
//! nodes, are worked out once, at confirmation, so the planner and pbs_rstat
//! read them and never expand a rule again.
//!
//! A standing reservation's rule is read in a time zone (the submitter's
//! `PBS_TZID`, else the calendar's), so a weekly 10:00 stays 10:00 local
//! time across a change to or from summer time.

use chrono::{SecondsFormat, TimeZone};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::time::Time;

/// The most occurrences a standing reservation may have.
pub const MAX_OCCURRENCES: u16 = 1000;

/// One reservation (`pbs_rstat -f`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reservation {
    /// Its number: the reservation is `R{id}`, its queue too.
    pub id: u64,
    /// `pbs_rsub -N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Who made it (`Reserve_Owner`), and from where.
    pub owner: String,
    pub owner_host: String,
    /// Who may submit to its queue (`Authorized_Users`, `-U`); the owner
    /// when none is given.
    pub users: Vec<String>,
    /// Unix groups whose members may (`Authorized_Groups`, `-G`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Nodes it holds in each occurrence.
    pub nodes: u32,
    /// What `-l` said, as written (`select=2:ncpus=4`), for pbs_rstat.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resources: String,
    /// The first occurrence's start (the rule's DTSTART).
    pub start: Time,
    /// Seconds each occurrence lasts.
    pub duration: u64,
    /// A standing reservation's rule, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rrule: Option<String>,
    /// The zone the rule is read in (IANA name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// The node set its nodes are in.
    pub node_set: String,
    /// Every occurrence, in order, with its nodes.
    pub occurrences: Vec<Occurrence>,
    /// When it was made and last changed.
    pub ctime: Time,
    pub mtime: Time,
}

/// One span of a reservation and the nodes it holds then.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Occurrence {
    pub start: Time,
    pub end: Time,
    /// Node names, in the set's order.
    pub nodes: Vec<String>,
}

impl Occurrence {
    /// Whether `[from, to)` overlaps it.
    pub fn overlaps(&self, from: Time, to: Time) -> bool {
        self.start < to && from < self.end
    }
}

/// Where a reservation is at an instant (PBS's `reserve_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResvState {
    /// Its next occurrence has not begun.
    Confirmed,
    /// An occurrence is on: its jobs may run.
    Running,
    /// Every occurrence has ended.
    Finished,
}

impl ResvState {
    /// PBS's name (`pbs_rstat -f`'s `reserve_state`).
    pub fn pbs_name(self) -> &'static str {
        match self {
            ResvState::Confirmed => "RESV_CONFIRMED",
            ResvState::Running => "RESV_RUNNING",
            ResvState::Finished => "RESV_FINISHED",
        }
    }

    /// pbs_rstat's two letters.
    pub fn short(self) -> &'static str {
        match self {
            ResvState::Confirmed => "CO",
            ResvState::Running => "RN",
            ResvState::Finished => "FN",
        }
    }
}

impl Reservation {
    /// `R12`: its name in commands, and its queue's.
    pub fn queue_name(&self) -> String {
        format!("R{}", self.id)
    }

    /// The occurrence on at `now` or next to come.
    pub fn current(&self, now: Time) -> Option<&Occurrence> {
        self.occurrences.iter().find(|o| now < o.end)
    }

    /// Its position among the occurrences, from 1 (`reserve_index`).
    pub fn index_at(&self, now: Time) -> usize {
        self.occurrences
            .iter()
            .position(|o| now < o.end)
            .map_or(self.occurrences.len(), |i| i + 1)
    }

    pub fn state_at(&self, now: Time) -> ResvState {
        match self.current(now) {
            Some(o) if o.start <= now => ResvState::Running,
            Some(_) => ResvState::Confirmed,
            None => ResvState::Finished,
        }
    }

    /// Whether `user` (of Unix group `group`) may submit to its queue.
    pub fn admits(&self, user: &str, group: &str) -> bool {
        let name = |entry: &String| entry.split('@').next() == Some(user);
        user == self.owner
            || self.users.iter().any(|u| u == "*" || name(u))
            || self.groups.iter().any(|g| g == group)
    }
}

/// Why a reservation could not be made or changed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ResvError {
    #[error("reservation {0} does not exist; see pbs_rstat")]
    Unknown(String),
    #[error("{0}")]
    Invalid(String),
    #[error("reservation request denied: {0}")]
    Denied(String),
    #[error("{0}")]
    NotAllowed(String),
}

/// The spans of a reservation that starts at `start`, lasts `duration`
/// seconds and recurs by `rrule` (none: once), the rule read in `zone`.
/// A rule must end (COUNT or UNTIL) within [`MAX_OCCURRENCES`].
pub fn occurrence_spans(
    start: Time,
    duration: u64,
    rrule: Option<&str>,
    zone: chrono_tz::Tz,
) -> Result<Vec<(Time, Time)>, ResvError> {
    let length = chrono::Duration::seconds(i64::try_from(duration).unwrap_or(i64::MAX / 1000));
    if duration == 0 {
        return Err(ResvError::Invalid(
            "a reservation must last at least a second; give -E END after -R START, or -D DURATION"
                .into(),
        ));
    }
    let Some(rule) = rrule.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(vec![(start, start + length)]);
    };
    let rule = rule.strip_prefix("RRULE:").unwrap_or(rule);
    let upper = rule.to_ascii_uppercase();
    if !upper.contains("COUNT=") && !upper.contains("UNTIL=") {
        return Err(ResvError::Invalid(format!(
            "recurrence rule \"{rule}\" has no end; add COUNT=N or UNTIL=YYYYMMDDTHHMMSSZ"
        )));
    }
    let local = start.with_timezone(&zone).naive_local();
    let text = format!(
        "DTSTART;TZID={}:{}\nRRULE:{rule}",
        zone.name(),
        local.format("%Y%m%dT%H%M%S")
    );
    let set: rrule::RRuleSet = text.parse().map_err(|e: rrule::RRuleError| {
        ResvError::Invalid(format!(
            "recurrence rule \"{rule}\" is not one RFC 5545 allows: {e}; e.g. FREQ=WEEKLY;BYDAY=MO,WE;COUNT=10"
        ))
    })?;
    let result = set.all(MAX_OCCURRENCES);
    if result.limited && result.dates.len() >= usize::from(MAX_OCCURRENCES) {
        return Err(ResvError::Invalid(format!(
            "recurrence rule \"{rule}\" gives more than {MAX_OCCURRENCES} occurrences; lower COUNT or UNTIL"
        )));
    }
    let spans: Vec<(Time, Time)> = result
        .dates
        .into_iter()
        .map(|d| {
            let t = d.to_utc();
            (t, t + length)
        })
        .collect();
    if spans.is_empty() {
        return Err(ResvError::Invalid(format!(
            "recurrence rule \"{rule}\" gives no occurrence from the start given"
        )));
    }
    if spans.windows(2).any(|w| w[1].0 < w[0].1) {
        return Err(ResvError::Invalid(format!(
            "the occurrences of \"{rule}\" overlap: each lasts {duration} s; make it shorter or the rule sparser"
        )));
    }
    Ok(spans)
}

/// A time as pbs_rstat -f prints it (`Tue Jun 14 13:00:00 2022`) in `zone`.
pub fn ctime_in<Z: TimeZone>(t: Time, zone: &Z) -> String
where
    Z::Offset: std::fmt::Display,
{
    t.with_timezone(zone)
        .format("%a %b %e %H:%M:%S %Y")
        .to_string()
}

/// RFC 3339 in UTC, for JSON.
pub fn rfc3339(t: Time) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Reads `R12`, `R12.server` or `12` as a reservation number.
pub fn parse_id(text: &str) -> Result<u64, ResvError> {
    let bare = text.split('.').next().unwrap_or(text);
    let digits = bare.strip_prefix(['R', 'S']).unwrap_or(bare);
    digits.parse().map_err(|_| {
        ResvError::Invalid(format!(
            "\"{text}\" is not a reservation id; write R12 or R12.server"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> Time {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    #[test]
    fn an_advance_reservation_is_one_span() {
        let spans = occurrence_spans(utc(2027, 1, 4, 9, 0), 3600, None, chrono_tz::UTC).unwrap();
        assert_eq!(spans, [(utc(2027, 1, 4, 9, 0), utc(2027, 1, 4, 10, 0))]);
    }

    #[test]
    fn a_weekly_reservation_keeps_its_local_hour_across_summer_time() {
        // London goes to summer time on Sunday 28 March 2027: 10:00 local
        // is 10:00 UTC before and 09:00 UTC after.
        let london: chrono_tz::Tz = "Europe/London".parse().unwrap();
        let spans = occurrence_spans(
            utc(2027, 3, 22, 10, 0),
            7200,
            Some("FREQ=WEEKLY;BYDAY=MO;COUNT=3"),
            london,
        )
        .unwrap();
        let starts: Vec<Time> = spans.iter().map(|s| s.0).collect();
        assert_eq!(
            starts,
            [
                utc(2027, 3, 22, 10, 0),
                utc(2027, 3, 29, 9, 0),
                utc(2027, 4, 5, 9, 0)
            ]
        );
        assert!(
            spans
                .iter()
                .all(|(s, e)| *e - *s == chrono::Duration::hours(2))
        );
    }

    #[test]
    fn two_days_a_week_and_until() {
        let spans = occurrence_spans(
            utc(2027, 1, 4, 9, 0),
            600,
            Some("FREQ=WEEKLY;BYDAY=MO,WE;UNTIL=20270114T000000Z"),
            chrono_tz::UTC,
        )
        .unwrap();
        let days: Vec<u32> = spans.iter().map(|s| chrono::Datelike::day(&s.0)).collect();
        assert_eq!(days, [4, 6, 11, 13]);
    }

    #[test]
    fn rules_that_never_end_or_overlap_or_are_not_rules_are_refused() {
        let start = utc(2027, 1, 4, 9, 0);
        let err = |rule, duration| {
            occurrence_spans(start, duration, Some(rule), chrono_tz::UTC)
                .unwrap_err()
                .to_string()
        };
        assert!(
            err("FREQ=DAILY", 60).contains("add COUNT=N"),
            "{}",
            err("FREQ=DAILY", 60)
        );
        assert!(err("FREQ=HOURLY;COUNT=3", 7200).contains("overlap"));
        assert!(err("FREQ=SOMETIMES;COUNT=3", 60).contains("RFC 5545"));
        assert!(err("FREQ=DAILY;COUNT=5000", 60).contains("more than 1000"));
        assert!(occurrence_spans(start, 0, None, chrono_tz::UTC).is_err());
    }

    fn resv() -> Reservation {
        let o = |s, e| Occurrence {
            start: utc(2027, 1, 4, s, 0),
            end: utc(2027, 1, 4, e, 0),
            nodes: vec!["n1".into()],
        };
        Reservation {
            id: 7,
            name: None,
            owner: "ann".into(),
            owner_host: "login".into(),
            users: vec!["bob@login".into()],
            groups: vec!["physics".into()],
            nodes: 1,
            resources: String::new(),
            start: utc(2027, 1, 4, 9, 0),
            duration: 3600,
            rrule: None,
            time_zone: None,
            node_set: "all".into(),
            occurrences: vec![o(9, 10), o(12, 13)],
            ctime: utc(2027, 1, 1, 0, 0),
            mtime: utc(2027, 1, 1, 0, 0),
        }
    }

    #[test]
    fn its_state_follows_its_occurrences() {
        let r = resv();
        assert_eq!(r.queue_name(), "R7");
        assert_eq!(r.state_at(utc(2027, 1, 4, 8, 0)), ResvState::Confirmed);
        assert_eq!(r.state_at(utc(2027, 1, 4, 9, 0)), ResvState::Running);
        assert_eq!(r.state_at(utc(2027, 1, 4, 10, 0)), ResvState::Confirmed);
        assert_eq!(r.index_at(utc(2027, 1, 4, 10, 0)), 2);
        assert_eq!(r.state_at(utc(2027, 1, 4, 13, 0)), ResvState::Finished);
    }

    #[test]
    fn its_users_groups_and_owner_may_submit() {
        let r = resv();
        assert!(r.admits("ann", "x"));
        assert!(r.admits("bob", "x"));
        assert!(r.admits("cy", "physics"));
        assert!(!r.admits("cy", "x"));
    }

    #[test]
    fn ids_read_as_pbs_writes_them() {
        assert_eq!(parse_id("R12.server").unwrap(), 12);
        assert_eq!(parse_id("R12").unwrap(), 12);
        assert_eq!(parse_id("12").unwrap(), 12);
        assert!(parse_id("Rx").is_err());
    }
}
