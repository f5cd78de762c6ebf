//! Planning with predicted run times (`crate::predict`): spwhen's estimate
//! from them, and EASY++ (Tsafrir, Etsion and Feitelson).
//!
//! With [`Durations::Predicted`] a running job's nodes come back at the end
//! of its predicted run time, moved up the ladder once it has outlived it
//! (`predict::corrected`), and a pending job takes its predicted run time
//! in the profiles. Kills, closedowns and period ends still come at wall
//! times.
//!
//! EASY++ plans so, and tries the jobs behind the first one that cannot
//! start shortest predicted first. A prediction can be short, and a job
//! started on one may run to its wall time, so the planner keeps a second
//! profile per node set, the *guard*: the profile a plain EASY pass would
//! have (running jobs end at their wall times), the first job's wall-time
//! reservation taken from it, and every start taken for its whole wall
//! time. A job starts only if it fits both. So no job delays the start the
//! first one would have had under EASY: it starts no later than the
//! reservation its wall-time plan gave it when it came first. On a set
//! with a topology the guard counts nodes; where they lie is the
//! predicted plan's.

use std::collections::VecDeque;

use super::Planner;
use super::ahead::Ahead;
use crate::job::{Job, JobState};
use crate::predict::{corrected, planned_run};
use crate::scheduler::order::Ranked;
use crate::scheduler::profile::Secs;
use crate::server::Backfill;
use crate::state::PendingView;

/// What a plan takes for a job's run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Durations {
    /// Its requested wall time.
    Requested,
    /// Its predicted run time, corrected once outlived.
    Predicted,
}

impl Durations {
    /// What a pass in `mode` plans with.
    pub fn of(mode: Backfill) -> Durations {
        if mode == Backfill::EasyPredicted {
            Durations::Predicted
        } else {
            Durations::Requested
        }
    }
}

impl<'a> Planner<'a> {
    /// The seconds the plan gives a pending job's run.
    #[inline]
    pub(super) fn planned_secs(&self, view: &PendingView) -> Secs {
        let secs = match self.durations {
            Durations::Requested => view.walltime.max(1),
            Durations::Predicted => {
                let predicted = (view.predicted > 0).then_some(u64::from(view.predicted));
                planned_run(view.walltime, predicted)
            }
        };
        secs as Secs
    }

    /// EASY++: the guard profiles (see the module comment).
    pub(super) fn add_guard(&mut self) {
        if self.mode == Backfill::EasyPredicted {
            let plain =
                Planner::with_durations(self.state, self.now, Backfill::Easy, Durations::Requested);
            self.guard = Some(plain.sets.into_iter().map(|set| set.profile).collect());
        }
    }

    /// How many nodes of set `s` the guard leaves a job running from now
    /// until `end` (its wall time); no bound without a guard.
    #[inline]
    pub(super) fn guard_room(&mut self, s: usize, end: Secs) -> usize {
        let now = self.now_s;
        self.guard
            .as_mut()
            .map_or(usize::MAX, |g| g[s].min_over(now, end).max(0) as usize)
    }

    /// A job started now on `nodes` (indices in `State::nodes`) holds them
    /// in the guard until `end`, its wall time.
    pub(super) fn guard_take(&mut self, nodes: &[usize], end: Secs) {
        let Some(guard) = self.guard.as_mut() else {
            return;
        };
        for (s, set) in self.sets.iter().enumerate() {
            let k = nodes.iter().filter(|i| set.nodes.contains(i)).count();
            if k > 0 {
                guard[s].add(self.now_s, end, -(k as i64));
            }
        }
    }

    /// The first job that cannot start: its wall-time reservation, the
    /// earliest window of `n` nodes for `wall` in one of `sets`, is taken
    /// from the guard.
    pub(super) fn guard_reserve(&mut self, sets: &[usize], n: u32, wall: Secs) {
        let now = self.now_s;
        let Some(guard) = self.guard.as_mut() else {
            return;
        };
        let best = sets
            .iter()
            .filter_map(|&s| {
                let size = self.sets[s].size_for(n)?;
                let t = guard[s].earliest(now, wall, size)?;
                Some((t, s, size))
            })
            .min();
        if let Some((t, s, size)) = best {
            guard[s].add(t, t.saturating_add(wall), -size);
        }
    }

    /// The next pending job to plan. Under EASY++, once the first job that
    /// cannot start has its reservation, the rest come shortest predicted
    /// first (express jobs still first; ties in their order).
    /// A conservative pass that only looks for starts reads ahead and
    /// ends once no job left might start (`ahead`).
    #[inline(always)]
    pub(super) fn next_job(&mut self, order: &mut Order<'_>) -> Option<Ranked> {
        if let Some(ahead) = &mut order.ahead {
            return self.next_ahead(order.ranked.as_mut(), ahead);
        }
        if order.shortest_first && self.reserved_any && order.rest.is_none() {
            let mut rest: Vec<Ranked> = order.ranked.by_ref().collect();
            rest.sort_by_key(|r| (!self.is_express(r), self.planned_secs(&r.view)));
            order.rest = Some(rest.into_iter());
        }
        match &mut order.rest {
            Some(rest) => rest.next(),
            None => order.ranked.next(),
        }
    }
}

/// The pending jobs in the order a pass takes them (`next_job`).
pub(super) struct Order<'a> {
    ranked: Box<dyn Iterator<Item = Ranked> + 'a>,
    /// EASY++: the jobs behind the first reservation are sorted.
    shortest_first: bool,
    /// Under EASY++, the jobs behind the first reservation, sorted.
    rest: Option<std::vec::IntoIter<Ranked>>,
    /// Reading ahead for a job that might start (`ahead`).
    ahead: Option<Ahead>,
}

impl<'a> Order<'a> {
    pub fn new(ranked: Box<dyn Iterator<Item = Ranked> + 'a>, mode: Backfill) -> Order<'a> {
        Order {
            ranked,
            shortest_first: mode == Backfill::EasyPredicted,
            rest: None,
            ahead: None,
        }
    }

    /// The order, read ahead by the pass: see `ahead`. (Only where
    /// `Planner::looks_ahead` says so; never under EASY++.)
    pub fn reading_ahead(mut self, ahead: bool) -> Order<'a> {
        self.ahead = ahead.then(Ahead::default);
        self
    }

    /// [`Order::reading_ahead`] into `buffer`, which
    /// [`Order::into_buffer`] gives back.
    pub fn reading_ahead_in(mut self, ahead: bool, buffer: VecDeque<Ranked>) -> Order<'a> {
        self.ahead = ahead.then(|| Ahead::in_buffer(buffer));
        self
    }

    /// The buffer the order was read ahead into, if it was.
    pub fn into_buffer(self) -> Option<VecDeque<Ranked>> {
        self.ahead.map(Ahead::into_buffer)
    }
}

/// When an active job's nodes come free as `durations` plans it: at the
/// end of its wall time ([`super::expected_end`]), or of its predicted run
/// time, corrected once outlived. Time suspended does not count, and
/// never before the next second.
pub(crate) fn planned_end(job: &Job, now: Secs, kill_delay: u64, durations: Durations) -> Secs {
    let stime = match (durations, job.state, job.stime) {
        (Durations::Predicted, state, Some(stime)) if state != JobState::Exiting => stime,
        _ => return super::expected_end(job, now, kill_delay),
    };
    let at = chrono::DateTime::from_timestamp(now, 0).unwrap_or_default();
    let suspended = job.suspension.secs_at(at) as Secs;
    let elapsed = (now - stime.timestamp() - suspended).max(0) as u64;
    let planned = planned_run(job.walltime, job.predicted_run);
    let run = corrected(planned, elapsed, job.walltime) as Secs;
    stime
        .timestamp()
        .saturating_add(run)
        .saturating_add(suspended)
        .max(now + 1)
}
