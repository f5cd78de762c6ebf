//! The site's week: a time zone, prime time, holidays and named periods,
//! and which of them is active at an instant and until when.
//!
//! Sites describe their day in local wall-clock time (SDSC's prime time
//! Mon–Fri 09:00–17:00, EPCC's DAY, NIGHT and WEEKEND); the scheduler works
//! in UTC instants. This module is the one place that converts, so node
//! groups, queues and closedowns ask it rather than doing sums of their own.
//! It is pure: every answer is a function of the calendar and an instant.
//!
//! ```toml
//! [calendar]
//! time_zone = "Europe/London"            # IANA name; default UTC
//! prime_time = ["Mon-Fri 09:00-17:00"]   # the default
//! holidays = ["12-25 Christmas Day", "2026-04-03 Good Friday"]
//! [calendar.periods]
//! DAY = { spans = ["Mon-Fri 10:00-18:00"], holidays_off = true }
//! NIGHT = ["Mon-Thu 18:00-10:00"]        # end <= start: ends the next day
//! WEEKEND = ["Fri 18:00-24:00", "Sat-Sun", "Mon 00:00-10:00"]
//! ```
//!
//! Every calendar has three built-in periods: `prime` (prime time, never
//! on a holiday), `non_prime` (the rest) and `always`. Named periods ignore
//! holidays unless they set `holidays_off`.
//!
//! **Daylight saving.** Spans are wall-clock times in the calendar's zone.
//! A local time that does not exist (the spring gap) stands for the first
//! instant after the gap; a local time that happens twice (the autumn
//! overlap) stands for its first occurrence. So in Europe/London
//! `daily 00:30-03:30` lasts 2 hours on the spring change day and 4 on the
//! autumn one, `daily 01:30-02:30` lasts 30 minutes in spring (02:00–02:30
//! BST) and 2 hours in autumn (01:30 BST to 02:30 GMT), and a span inside
//! the gap (`01:10-01:50`) does not happen that day. A holiday, or a span
//! without hours, covers its local day, 23 or 25 hours long on change days.
//! Prime time at 09:00 stays 09:00 on the wall clock, winter and summer.

mod change;
mod holiday;
pub(crate) mod local;
mod pbs;
mod period;
mod span;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use chrono::{FixedOffset, Offset, TimeZone, Weekday};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

pub use change::HORIZON_DAYS;
pub use holiday::{Holiday, HolidayDate};
pub use pbs::import_pbs_holidays;
pub use period::{ALWAYS, BUILT_IN, NON_PRIME, PRIME, Period, check_name};
pub use span::{DayRange, Days, End, Hours, Span};

use crate::time::Time;
use change::{Rule, Zoned};
use span::time_of_day;

/// Every way a calendar can be refused, naming the text and the form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CalendarError {
    #[error("time zone \"{zone}\" is not known; use an IANA name such as Europe/London or UTC")]
    UnknownZone { zone: String },
    #[error(
        "bad span \"{text}\": {why}; write DAYS [HH:MM-HH:MM], e.g. \"Mon-Fri 09:00-17:00\", \
         \"Sat,Sun\" or \"daily 00:30-03:30\""
    )]
    BadSpan { text: String, why: String },
    #[error(
        "bad holiday \"{text}\": {why}; write MM-DD NAME for every year or YYYY-MM-DD NAME \
         for that day only, e.g. \"12-25 Christmas Day\""
    )]
    BadHoliday { text: String, why: String },
    #[error(
        "bad period \"{text}\": {why}; write spans separated by \";\", e.g. \
         \"Mon-Fri 10:00-18:00; holidays_off\""
    )]
    BadPeriod { text: String, why: String },
    #[error(
        "period name \"{name}\" is not allowed; use letters, digits, \"_\" and \"-\", e.g. DAY or night_2"
    )]
    BadPeriodName { name: String },
    #[error(
        "period \"{name}\" is built in (always, prime, non_prime); give the named period another name"
    )]
    BuiltInPeriod { name: String },
    #[error("period \"{name}\" is not defined; the calendar has {known}")]
    UnknownPeriod { name: String, known: String },
    #[error("holidays file line {line_no} \"{line}\": {why}")]
    PbsHolidays {
        line_no: usize,
        line: String,
        why: String,
    },
}

/// What a site says about its week (the daemon's `[calendar]` table).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Calendar {
    /// An IANA zone name, e.g. `Europe/London`.
    pub time_zone: String,
    pub prime_time: Vec<Span>,
    pub holidays: Vec<Holiday>,
    pub periods: BTreeMap<String, Period>,
}

impl Default for Calendar {
    /// UTC, prime time Mon–Fri 09:00–17:00 (the SDSC seed's), no holidays,
    /// no named periods.
    fn default() -> Calendar {
        let prime = time_of_day(9 * 60)
            .zip(time_of_day(17 * 60))
            .map(|(from, to)| Span {
                days: Days::List(vec![DayRange {
                    first: Weekday::Mon,
                    last: Weekday::Fri,
                }]),
                hours: Some(Hours {
                    from,
                    to: End::At(to),
                }),
            });
        Calendar {
            time_zone: "UTC".into(),
            prime_time: prime.into_iter().collect(),
            holidays: Vec::new(),
            periods: BTreeMap::new(),
        }
    }
}

impl Calendar {
    /// The zone, or why its name is not one.
    pub fn zone(&self) -> Result<Tz, CalendarError> {
        self.time_zone
            .parse()
            .map_err(|_| CalendarError::UnknownZone {
                zone: self.time_zone.clone(),
            })
    }

    /// Checks what the types cannot: the zone is known, period names are
    /// well formed and none takes a built-in name, every span names days.
    pub fn validate(&self) -> Result<(), CalendarError> {
        self.zone()?;
        self.periods.keys().try_for_each(|name| check_name(name))?;
        // A span built in code (not parsed) may hold an empty day list.
        let spans = self.periods.values().flat_map(|p| &p.spans);
        self.prime_time
            .iter()
            .chain(spans)
            .try_for_each(|span| span.to_string().parse::<Span>().map(drop))
    }

    /// The zone and holidays the queries read in. A calendar that did not
    /// pass [`Calendar::validate`] is read in UTC.
    fn zoned(&self) -> Zoned<'_> {
        Zoned {
            tz: self.zone().unwrap_or(Tz::UTC),
            holidays: &self.holidays,
        }
    }

    fn prime_rule(&self, negate: bool) -> Rule<'_> {
        Rule::Spans {
            spans: &self.prime_time,
            holidays_off: true,
            negate,
        }
    }

    fn rule(&self, period: &str) -> Result<Rule<'_>, CalendarError> {
        match period {
            ALWAYS => Ok(Rule::Always),
            PRIME => Ok(self.prime_rule(false)),
            NON_PRIME => Ok(self.prime_rule(true)),
            name => match self.periods.get(name) {
                Some(p) => Ok(Rule::Spans {
                    spans: &p.spans,
                    holidays_off: p.holidays_off,
                    negate: false,
                }),
                None => Err(CalendarError::UnknownPeriod {
                    name: name.to_string(),
                    known: self.period_names().join(", "),
                }),
            },
        }
    }

    /// Every period the calendar knows: the built-ins, then the named ones.
    pub fn period_names(&self) -> Vec<String> {
        BUILT_IN
            .iter()
            .map(|s| s.to_string())
            .chain(self.periods.keys().cloned())
            .collect()
    }

    /// Whether `t` falls on a holiday, in the calendar's zone.
    pub fn is_holiday(&self, t: Time) -> bool {
        self.zoned().is_holiday(t)
    }

    /// Whether `t` is prime time: in a prime-time span, not on a holiday.
    pub fn is_prime(&self, t: Time) -> bool {
        self.zoned().is_active(self.prime_rule(false), t)
    }

    pub fn is_active(&self, period: &str, t: Time) -> Result<bool, CalendarError> {
        Ok(self.zoned().is_active(self.rule(period)?, t))
    }

    /// The periods active at `t`: `always`, `prime` or `non_prime`, then
    /// the named ones in name order.
    pub fn active_periods(&self, t: Time) -> Vec<String> {
        let zoned = self.zoned();
        let mut active = vec![ALWAYS.to_string()];
        active.push(if self.is_prime(t) { PRIME } else { NON_PRIME }.to_string());
        active.extend(
            self.periods
                .iter()
                .filter(|(_, p)| {
                    zoned.is_active(
                        Rule::Spans {
                            spans: &p.spans,
                            holidays_off: p.holidays_off,
                            negate: false,
                        },
                        t,
                    )
                })
                .map(|(name, _)| name.clone()),
        );
        active
    }

    /// The first instant after `t` at which `period`'s activity flips, or
    /// None if it does not within [`HORIZON_DAYS`] (`always` never does).
    /// Spans that meet are one stretch: WEEKEND's `Fri 18:00-24:00` then
    /// `Sat-Sun` does not flip at midnight.
    pub fn next_change(&self, period: &str, t: Time) -> Result<Option<Time>, CalendarError> {
        Ok(self.zoned().next_change(self.rule(period)?, t))
    }

    /// If `period` is active at `t`, when it stops (its next change); None
    /// if it is inactive, or stays active beyond the horizon.
    pub fn active_until(&self, period: &str, t: Time) -> Result<Option<Time>, CalendarError> {
        if self.is_active(period, t)? {
            self.next_change(period, t)
        } else {
            Ok(None)
        }
    }

    /// When `period` is next active: `t` itself if it is active now, else
    /// its next change; None if it does not start within the horizon.
    pub fn next_start(&self, period: &str, t: Time) -> Result<Option<Time>, CalendarError> {
        if self.is_active(period, t)? {
            Ok(Some(t))
        } else {
            self.next_change(period, t)
        }
    }

    /// The zone's UTC offset at `t`, for code that wants local times of
    /// day (a queue's `reorder_times`).
    pub fn offset_at(&self, t: Time) -> FixedOffset {
        self.zoned()
            .tz
            .offset_from_utc_datetime(&t.naive_utc())
            .fix()
    }
}
