//! When a period is active, and when that next changes.
//!
//! Every span, on every day it applies, covers one stretch of instants
//! `[start, end)` (its local times resolved by `local.rs`); a holiday covers
//! the instants of its local day. A period is active at `t` when some
//! stretch holds `t` and, if holidays close it, no holiday does. So its
//! activity can only change at a stretch's start or end or at a local
//! midnight: `next_change` walks those candidates in time order and returns
//! the first at which the activity differs. Stretches that meet (Friday
//! 18:00-24:00, then Saturday) are no change, since the activity at the
//! meeting point is the same.

use chrono::{Duration, NaiveDate};
use chrono_tz::Tz;

use super::local::{day_start, local_date, resolve};
use super::{Holiday, Span};
use crate::time::Time;

/// How far `next_change` looks: beyond this, a period "never" changes.
pub const HORIZON_DAYS: i64 = 400;

/// Days scanned per step of `next_change`.
const WINDOW_DAYS: u64 = 7;

/// What decides a period's activity.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Rule<'a> {
    Always,
    Spans {
        spans: &'a [Span],
        /// Holidays close it.
        holidays_off: bool,
        /// Active exactly when the spans rule is not (non-prime).
        negate: bool,
    },
}

/// The zone and holidays a rule is read in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Zoned<'a> {
    pub tz: Tz,
    pub holidays: &'a [Holiday],
}

impl Zoned<'_> {
    fn stretch(&self, span: &Span, date: NaiveDate) -> Option<(Time, Time)> {
        let (start, end) = span.stretch_from(date)?;
        Some((resolve(self.tz, start), resolve(self.tz, end)))
    }

    fn day(&self, date: NaiveDate) -> Option<(Time, Time)> {
        Some((
            day_start(self.tz, date),
            day_start(self.tz, date.succ_opt()?),
        ))
    }

    /// The dates whose stretches may hold `t`: a stretch ends within two
    /// local days of its start; one more on each side covers the zones'
    /// odd days.
    fn around(&self, t: Time) -> impl Iterator<Item = NaiveDate> {
        let d = local_date(self.tz, t);
        (-2..=1).filter_map(move |k| d.checked_add_signed(Duration::days(k)))
    }

    pub fn is_holiday(&self, t: Time) -> bool {
        self.holidays.iter().any(|h| {
            self.around(t).any(|date| {
                h.falls_on(date) && self.day(date).is_some_and(|(a, b)| a <= t && t < b)
            })
        })
    }

    pub fn is_active(&self, rule: Rule<'_>, t: Time) -> bool {
        let Rule::Spans {
            spans,
            holidays_off,
            negate,
        } = rule
        else {
            return true;
        };
        let in_span = || {
            self.around(t).any(|date| {
                spans
                    .iter()
                    .any(|s| self.stretch(s, date).is_some_and(|(a, b)| a <= t && t < b))
            })
        };
        let on = !(holidays_off && self.is_holiday(t)) && in_span();
        on != negate
    }

    /// The first instant after `t` at which the rule's activity differs
    /// from its activity at `t`, if one comes within [`HORIZON_DAYS`].
    pub fn next_change(&self, rule: Rule<'_>, t: Time) -> Option<Time> {
        let Rule::Spans { spans, .. } = rule else {
            return None;
        };
        let now = self.is_active(rule, t);
        let horizon = t.checked_add_signed(Duration::days(HORIZON_DAYS))?;
        let mut from = local_date(self.tz, t).pred_opt()?;
        loop {
            let to = from.checked_add_days(chrono::Days::new(WINDOW_DAYS))?;
            let (lo, hi) = (day_start(self.tz, from), day_start(self.tz, to));
            // Every candidate in [lo, hi) comes from a day in [from - 2, to).
            let mut candidates: Vec<Time> = Vec::new();
            let mut date = from.checked_sub_days(chrono::Days::new(2))?;
            while date < to {
                candidates.push(day_start(self.tz, date));
                for span in spans {
                    if let Some((a, b)) = self.stretch(span, date) {
                        candidates.extend([a, b]);
                    }
                }
                date = date.succ_opt()?;
            }
            candidates.retain(|&c| c > t && lo <= c && c < hi);
            candidates.sort_unstable();
            candidates.dedup();
            for c in candidates {
                if c > horizon {
                    return None;
                }
                if self.is_active(rule, c) != now {
                    return Some(c);
                }
            }
            if hi > horizon {
                return None;
            }
            from = to;
        }
    }
}
