//! A conservative plan kept from one pass to the next.
//!
//! Under conservative backfilling every waiting job holds a reservation,
//! and a pass re-reserves them all: in a replay, where a pass follows
//! every arrival and every end, that was nearly all of the time. Yet when
//! nothing happened since the last pass but new jobs queued behind the
//! others, that pass's reservations stand: nothing freed nodes earlier
//! than planned, so no job ahead can start sooner, and new jobs at the
//! tail take nodes only where no one ahead holds them. The pass can then
//! take up the last one's planner (profiles, free nodes, reservations)
//! and plan only the new jobs. [`Replanner::changes`] gives exactly what
//! [`Scheduler::changes`] gives (a property test runs both on random
//! workloads); it only skips work.
//!
//! What the last pass planned stands when, and only when, each input the
//! pass read of the jobs ahead is the same, which is checked, not assumed
//! (there are no invalidation hooks a new kind of change could miss):
//! - the configuration (its generation in the state);
//! - the free nodes, nodes up, and when each running job's nodes come
//!   back (ends counted as a fresh pass counts them), which catches a job
//!   that ended early or on time, was altered, suspended or started
//!   elsewhere;
//! - time: no breakpoint of the kept profiles lies between the two passes
//!   (no release, reservation start or end was due meanwhile);
//! - the order: the jobs the last pass planned and left waiting come first,
//!   as they were (same record view, queue and priority), in that order.
//!
//! Why a job the last pass reserved keeps its reservation `r` in a fresh
//! pass now: the profile it sees is the one it was reserved on, less the
//! nodes of the jobs started behind it since (which fit around `r`), and
//! from now on, where that profile has not changed. Nothing fitted before
//! `r` then, so nothing does now; `r` still fits. The new jobs then see
//! what they would have seen after the last pass.
//!
//! And only in the plain case a proof covers: conservative backfilling,
//! fifo by queue, flat exclusive node sets, no run limits, consumables,
//! closedowns, advance reservations, periods, allocations or preemption,
//! and jobs that are queued and ask nothing but nodes and time. Anything
//! else is planned afresh, as before.
//!
//! [`Scheduler::changes`]: crate::scheduler::Scheduler::changes

use std::collections::VecDeque;
use std::sync::Arc;

use super::gate::QueueNow;
use super::predicted::Durations;
use super::set_plan::{SetPlan, counted_set_plans};
use super::{Planner, Stop, expected_end};
use crate::scheduler::order::{Ranked, ranked};
use crate::scheduler::profile::Secs;
use crate::scheduler::{Entry, Plan, Start, Status};
use crate::server::{Backfill, JobOrder};
use crate::state::{NodeBits, PendingView, State};
use crate::time::Time;

/// [`Scheduler::changes`] with the last pass's plan kept for the next
/// (see the module comment). One per state: the simulator keeps one
/// beside its own. (The daemon's pass lists every job for qstat and
/// spq, with the profiles: `Stop::Never`, not kept yet.)
///
/// [`Scheduler::changes`]: crate::scheduler::Scheduler::changes
#[derive(Default)]
pub struct Replanner {
    kept: Option<Kept>,
    /// Whether the configuration of this generation is plain (`plain_config`),
    /// worked out once per configuration, not per pass; if it is, what
    /// each queue may do, which then does not change with time either.
    plain_config: Option<(u64, Option<Arc<[QueueNow]>>)>,
    /// The order read ahead, and what it said of the jobs planned: kept
    /// from pass to pass so that no pass grows them again from nothing.
    read_ahead: VecDeque<Ranked>,
    seen: Vec<Seen>,
    /// Passes that took up the kept plan, and those planned afresh.
    pub resumed: u64,
    pub fresh: u64,
}

/// The planner as a pass left it, and what it was planned on.
struct Kept {
    /// When it planned (its last pass).
    at: Secs,
    config: u64,
    sets: Vec<SetPlan>,
    free: NodeBits,
    /// Per set, sorted: when the nodes of the jobs running once its starts
    /// are applied come back, as the next pass will count them.
    releases: Vec<Vec<(Secs, i64)>>,
    /// The jobs it planned, in order, none started: their views, queue and
    /// priority, and entries.
    waiting: Vec<(Seen, Entry)>,
    considered: usize,
    reserved_any: bool,
}

/// What the order said of a job: it must say the same to a resumed pass.
#[derive(Clone, Copy, PartialEq)]
pub(super) struct Seen {
    view: PendingView,
    queue: usize,
    priority: u64,
}

impl Seen {
    pub(super) fn of(ranked: &Ranked) -> Seen {
        Seen {
            view: ranked.view,
            queue: ranked.queue,
            priority: ranked.priority.to_bits(),
        }
    }

    /// Queued and asking only nodes and time: its gate and placement read
    /// nothing else.
    fn plain(&self) -> bool {
        let v = &self.view;
        v.queued && !v.conditional && !v.has_needs && !v.constrained && !v.array
    }
}

impl Replanner {
    /// What [`Scheduler::changes`] gives, planning only the new jobs when
    /// the last pass's plan stands.
    ///
    /// [`Scheduler::changes`]: crate::scheduler::Scheduler::changes
    pub fn changes(&mut self, state: &State, now: Time) -> Plan {
        let attrs = &state.config().server;
        let kept = self.kept.take();
        if !attrs.scheduling {
            return Plan::default();
        }
        let generation = state.config_generation();
        let queues = match &self.plain_config {
            Some((g, queues)) if *g == generation => queues.clone(),
            _ => {
                let queues = plain_config(state).then(|| {
                    let n_sets = state.node_sets().len();
                    let config = state.config();
                    config
                        .queues
                        .values()
                        .map(|q| QueueNow::of(state, q, now, n_sets))
                        .collect()
                });
                self.plain_config = Some((generation, queues.clone()));
                queues
            }
        };
        let Some(queues) = queues.filter(|_| plain_now(state, now)) else {
            self.fresh += 1;
            return Planner::new(state, now, attrs.backfill).run(Stop::NothingStarts);
        };
        let now_s = now.timestamp();
        let releases = releases(state, now_s);
        let mut plan = Plan {
            now: Some(now),
            ..Plan::default()
        };
        let mut order = ranked(state, now);
        let resumed =
            kept.and_then(|k| k.resume(state, now, &releases, &mut order, &mut plan, &queues));
        let (mut planner, mut waiting) = match resumed {
            Some(resumed) => {
                self.resumed += 1;
                resumed
            }
            None => {
                self.fresh += 1;
                plan.queue.clear();
                order = ranked(state, now);
                // What `Planner::new` makes in the plain case, on the
                // releases already worked out.
                let sets = counted_set_plans(state, now_s, &releases);
                let free = state.occupancy().free.clone();
                (Planner::resumed(state, now, sets, free, queues), Vec::new())
            }
        };
        // What the order said of each job this pass plans, beside its
        // entries.
        let first = plan.queue.len();
        let mut seen = std::mem::take(&mut self.seen);
        seen.clear();
        let ahead = planner.looks_ahead(Stop::NothingStarts);
        let buffer = std::mem::take(&mut self.read_ahead);
        let mut order = super::predicted::Order::new(order, Backfill::Conservative)
            .reading_ahead_in(ahead, buffer);
        planner.plan_each(&mut order, &mut plan, Stop::NothingStarts, Some(&mut seen));
        self.read_ahead = order.into_buffer().unwrap_or_default();
        planner.conclude(&mut plan, Stop::NothingStarts);
        let planned = &plan.queue[first..];
        debug_assert_eq!(seen.len(), planned.len());
        self.kept = seen.iter().all(Seen::plain).then(|| {
            // Sized once: grown from nothing, it showed in a replay's profile.
            waiting.reserve(planned.len());
            waiting.extend(
                seen.iter()
                    .zip(planned)
                    .filter(|(_, e)| e.status != Status::Startable)
                    .map(|(s, e)| (*s, e.clone())),
            );
            Kept::of(state, planner, &plan.starts, waiting, releases)
        });
        self.seen = seen;
        plan
    }
}

impl Kept {
    /// The planner of the last pass, now at `now`, and the jobs it left
    /// waiting, if its plan stands (see the module comment). The entries
    /// of those jobs go into `plan` (unless no node is free: a fresh pass
    /// would then plan no one), and `order` is left at the first job it
    /// did not plan.
    fn resume<'a>(
        self,
        state: &'a State,
        now: Time,
        releases: &[Vec<(Secs, i64)>],
        order: &mut dyn Iterator<Item = Ranked>,
        plan: &mut Plan,
        queues: &Arc<[QueueNow]>,
    ) -> Option<(Planner<'a>, Vec<(Seen, Entry)>)> {
        let now_s = now.timestamp();
        let occupancy = state.occupancy();
        let mut sets = self.sets;
        let stands = self.config == state.config_generation()
            && now_s >= self.at
            && occupancy.free == self.free
            && sets.iter_mut().enumerate().all(|(s, set)| {
                set.free == occupancy.free_in[s]
                    && set.up == state.up_per_set()[s]
                    && set.profile.next_after(self.at).is_none_or(|t| t > now_s)
            })
            && releases == self.releases;
        if !stands {
            return None;
        }
        for (seen, _) in &self.waiting {
            if order.next().map(|r| Seen::of(&r)) != Some(*seen) {
                return None;
            }
        }
        let mut planner = Planner::resumed(state, now, sets, self.free, queues.clone());
        planner.considered = self.considered;
        planner.reserved_any = self.reserved_any;
        if planner.sets.iter().any(|set| set.free > 0) {
            plan.queue = self.waiting.iter().map(|(_, e)| e.clone()).collect();
        }
        Some((planner, self.waiting))
    }

    /// What a pass that planned `waiting` and made `starts` leaves for
    /// the next; `releases` are the running jobs' before the starts.
    fn of(
        state: &State,
        planner: Planner,
        starts: &[Start],
        waiting: Vec<(Seen, Entry)>,
        mut releases: Vec<Vec<(Secs, i64)>>,
    ) -> Kept {
        // Its starts run from now on: their nodes come back at the end of
        // their wall time, as placement took them from its profiles (a
        // placement that takes them for another time must be followed
        // here, or no plan will stand).
        let nodes = state.nodes();
        for start in starts {
            let wall = state.job(start.job).map_or(1, |j| j.walltime.max(1)) as Secs;
            let end = planner.now_s.saturating_add(wall);
            let mut per_set: Vec<(usize, i64)> = Vec::new();
            for &i in &start.nodes {
                let set = nodes[i].set;
                match per_set.iter_mut().find(|(s, _)| *s == set) {
                    Some((_, count)) => *count += 1,
                    None => per_set.push((set, 1)),
                }
            }
            // In order, where it goes: the rest are sorted already.
            for (set, count) in per_set {
                let set = &mut releases[set];
                let at = set.partition_point(|&r| r <= (end, count));
                set.insert(at, (end, count));
            }
        }
        Kept {
            at: planner.now_s,
            config: state.config_generation(),
            sets: planner.sets,
            free: planner.free,
            releases,
            waiting,
            considered: planner.considered,
            reserved_any: planner.reserved_any,
        }
    }
}

impl<'a> Planner<'a> {
    /// A planner on kept sets and free nodes, with the rest as
    /// [`Planner::new`] makes it in the plain case (`plain_config`, `plain_now`).
    fn resumed(
        state: &'a State,
        now: Time,
        sets: Vec<SetPlan>,
        free: NodeBits,
        queues: Arc<[QueueNow]>,
    ) -> Planner<'a> {
        Planner::from_parts(
            state,
            now,
            (Backfill::Conservative, Durations::Requested),
            sets,
            free,
            queues,
            (None, None),
        )
    }
}

/// The plain case, where a kept plan may stand (see the module comment),
/// as far as the configuration says (its node sets included, which only
/// a new configuration changes): the same for every pass under one
/// configuration.
fn plain_config(state: &State) -> bool {
    let config = state.config();
    let attrs = &config.server;
    attrs.backfill == Backfill::Conservative
        && attrs.job_order == JobOrder::Fifo
        && attrs.by_queue
        && attrs.search_depth == 0
        && !config.has_run_limits()
        && crate::consumable::Consumables::of(config, std::iter::empty()).is_none()
        && crate::preempt::Policy::of(config).is_none()
        && config.reservations.is_empty()
        && config.accounts.values().all(|a| a.allocation.is_none())
        && config.queues.values().all(|q| {
            q.reservation.is_none() && !q.follows_calendar() && q.period_priority.is_empty()
        })
        && state.node_sets().iter().all(|set| set.attrs.slots() == 1)
        && state
            .node_sets()
            .iter()
            .all(|set| matches!(set.topology, crate::node::Topology::Flat))
}

/// The rest of the plain case, which the state and the time decide: no
/// job lends its nodes, no shutdown window is to come.
fn plain_now(state: &State, now: Time) -> bool {
    state.lent_jobs().next().is_none()
        && crate::scheduler::closedown::collect(state, now).is_empty()
}

/// Per set, sorted, when the nodes of running jobs come back: what a fresh
/// pass's profiles count (`set_plan::set_plans`).
fn releases(state: &State, now: Secs) -> Vec<Vec<(Secs, i64)>> {
    let kill_delay = state.config().server.kill_delay;
    let held = &state.occupancy().held;
    // Room for every running job, and for the starts `Kept::of` adds:
    // grown from nothing, the vectors showed in a replay's profile.
    let n_sets = state.node_sets().len();
    let room = held.len().div_ceil(n_sets.max(1)) + 8;
    let mut ends: Vec<Vec<(Secs, i64)>> = (0..n_sets).map(|_| Vec::with_capacity(room)).collect();
    for (&id, held) in held {
        let end = state
            .job(id)
            .map_or(now + 1, |job| expected_end(job, now, kill_delay));
        for &(set, count) in &held.up_in {
            ends[set].push((end, count as i64));
        }
    }
    for set in &mut ends {
        set.sort_unstable();
    }
    ends
}

#[cfg(test)]
mod tests;
