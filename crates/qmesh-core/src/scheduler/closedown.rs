//! Closedowns: times from which node sets stop running jobs. The planner
//! knows one rule for all of them: it never starts a job whose wall time
//! `[now, now + wall)` overlaps a closedown of a set the job could run on.
//!
//! It keeps the rule in the availability profiles: a closedown takes every
//! node of its sets for `[start, end)` (for ever without an end), so a job
//! that would reach into it does not fit now, its reservation lands after
//! it, and backfilling fills the time before it with jobs short enough
//! (EPCC: "if there was only one hour left before a planned shutdown the
//! queues could be scanned for a job of the appropriate length").
//!
//! Closedowns here are the shutdown windows (`qmgr create shutdown`):
//! they close node sets for every queue. The ends of a queue's periods
//! (action kill or requeue) close nothing for the other queues, so the
//! planner applies them per queue (see [`crate::periods`]);
//! `Scheduler::closedown_crossed` names either kind as a `Closedown`.

use super::Reason;
use crate::shutdown;
use crate::state::State;
use crate::time::Time;

/// A time from which some node sets run no job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Closedown {
    pub start: Time,
    /// When the sets run jobs again; `None` for never (as far as the
    /// scheduler knows).
    pub end: Option<Time>,
    /// The node sets it closes, by name; empty for every set.
    pub sets: Vec<String>,
    /// What a job that would cross it waits for: `Shutdown`, `PeriodEnd`.
    pub reason: Reason,
    /// The shutdown window's name; for a period end, what happens then
    /// (`the end of period "DAY"`).
    pub name: String,
}

impl Closedown {
    /// Whether it closes node set `set`.
    pub fn covers(&self, set: &str) -> bool {
        self.sets.is_empty() || self.sets.iter().any(|s| s == set)
    }

    /// Whether it is over by `now`.
    pub fn is_over(&self, now: Time) -> bool {
        self.end.is_some_and(|end| end <= now)
    }

    /// Whether a job running over `[from, to)` would still run in it.
    pub fn overlaps(&self, from: Time, to: Time) -> bool {
        from < to && self.start < to && self.end.is_none_or(|end| from < end)
    }

    /// Why a job waits for it, for qstat's comment and spwhen, with times
    /// in local time in `zone`: `would cross shutdown "xmas"
    /// (2026-12-24 18:00 until 2026-12-27 08:00)`.
    pub fn describe<Z: chrono::TimeZone>(&self, zone: &Z) -> String
    where
        Z::Offset: std::fmt::Display,
    {
        let what = match self.reason {
            Reason::PeriodEnd => self.name.clone(),
            Reason::Shutdown => format!("shutdown \"{}\"", self.name),
            Reason::ReservedNodes => format!("reservation {}", self.name),
            other => format!("{} \"{}\"", other.as_str(), self.name),
        };
        let start = shutdown::format_local(self.start, zone);
        match self.end {
            Some(end) => format!(
                "would cross {what} ({start} until {})",
                shutdown::format_local(end, zone)
            ),
            None => format!("would cross {what} ({start})"),
        }
    }
}

/// Every closedown a pass at `now` must respect, from every source, in
/// order of start. Those already over are left out.
///
pub fn collect(state: &State, now: Time) -> Vec<Closedown> {
    let config = state.config();
    let mut all: Vec<Closedown> = config
        .shutdowns
        .values()
        .map(|w| Closedown {
            start: w.start,
            end: Some(w.end),
            sets: w.node_sets.clone(),
            reason: Reason::Shutdown,
            name: w.name.clone(),
        })
        .collect();
    all.retain(|c| !c.is_over(now));
    all.sort_by(|a, b| (a.start, &a.name).cmp(&(b.start, &b.name)));
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shutdown::Shutdown;
    use crate::state::tests::{state, t};

    fn closedown(start: i64, end: Option<i64>) -> Closedown {
        Closedown {
            start: t(start),
            end: end.map(t),
            sets: Vec::new(),
            reason: Reason::Shutdown,
            name: "maint".into(),
        }
    }

    #[test]
    fn overlap_is_half_open() {
        let c = closedown(100, Some(200));
        assert!(!c.overlaps(t(0), t(100)), "ends as the window starts");
        assert!(c.overlaps(t(0), t(101)));
        assert!(c.overlaps(t(150), t(160)));
        assert!(c.overlaps(t(199), t(300)));
        assert!(!c.overlaps(t(200), t(300)), "starts as the window ends");
        let open = closedown(100, None);
        assert!(open.overlaps(t(10_000), t(10_001)));
        assert!(!open.is_over(t(i64::from(i32::MAX))));
    }

    #[test]
    fn shutdown_windows_are_collected_and_past_ones_left_out() {
        let mut s = state(4);
        let mut config = s.config().clone();
        for (name, start, end) in [
            ("later", 7200, 9000),
            ("past", -600, -60),
            ("soon", 3600, 5400),
        ] {
            config
                .shutdowns
                .insert(name.into(), Shutdown::new(name, t(start), t(end)));
        }
        config.shutdowns.get_mut("soon").unwrap().node_sets = vec!["local".into()];
        s.set_config(config);
        let all = collect(&s, t(0));
        let names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            ["soon", "later"],
            "in order of start, the past one gone"
        );
        assert_eq!(all[0].sets, ["local"]);
        assert_eq!(all[0].reason, Reason::Shutdown);
        assert_eq!(all[0].end, Some(t(5400)));
        assert!(collect(&s, t(9000)).is_empty(), "all over");
    }

    #[test]
    fn describes_itself_in_local_time() {
        let plus1 = chrono::FixedOffset::east_opt(3600).unwrap();
        let mut c = closedown(0, Some(3600));
        c.name = "xmas".into();
        // t(0) is 2023-11-14 22:13:20 UTC.
        assert_eq!(
            c.describe(&plus1),
            "would cross shutdown \"xmas\" (2023-11-14 23:13:20 until 2023-11-15 00:13:20)"
        );
        c.end = None;
        c.reason = Reason::PeriodEnd;
        c.name = "the end of period \"DAY\"".into();
        assert_eq!(
            c.describe(&plus1),
            "would cross the end of period \"DAY\" (2023-11-14 23:13:20)"
        );
    }
}
