//! One pass over the ordered pending jobs: start what may start, reserve
//! nodes for what must not be delayed, and say why the rest waits.
//!
//! Each node set has an availability [`Profile`]: free nodes now, plus the
//! nodes of running jobs from the end of their wall time on (ANL: users give
//! wall-clock limits so that anyone can tell when a job will start). A job
//! starts now if `n` nodes stay free for its whole wall time in the profiles
//! of its queue's sets, so it cannot delay any reservation already made. A
//! reservation takes the earliest window in one set. Which jobs get one is
//! the backfill mode: EASY the first that cannot start (and any above
//! `block_priority`), conservative all, none only those above
//! `block_priority`, and then (SDSC blocking) nothing else starts at all.
//! Closedowns (shutdown windows) take their sets' nodes from the profiles
//! for their time, so no job starts or is reserved across one. A queue
//! whose jobs end with its periods (see [`crate::periods`]) starts a job
//! only on sets it would not outlast there, and reserves only windows that
//! end in time; a queue outside its periods starts nothing.
//!
//! On a shared set (`jobs_per_node` over 1) the profiles count job slots,
//! not nodes: a job takes one slot on each of its nodes, which must be
//! distinct, so a job starts only where that many nodes have room, on the
//! least busy of them (NCAR: run queue over CPUs, counting the jobs this
//! pass starts). A reservation there is counted in slots, an estimate
//! when the nodes with room are fewer than the job asks.
//!
//! Counting nodes is exact for flat node sets. On a mesh or torus the
//! nodes free at a time may be scattered, so a reservation there is also
//! placed on the set's allocator as it will be then, and jobs started now
//! keep off its nodes (see `reserve`).
//!
//! The pass is in layers, one file each: [`set_plan`] is one node set's
//! working state (its profile, free nodes, allocator, releases and placed
//! reservations); [`gate`] decides whether a job may be considered at all
//! and why it waits if not; [`place`] starts it now or asks for a
//! reservation, which [`reserve`] finds; [`shared`] picks nodes one by one
//! on shared sets and for jobs that name them.
//!
//! [`Profile`]: super::profile::Profile

mod advance;
mod ahead;
mod gate;
pub mod kept;
mod place;
mod predicted;
mod preempt;
mod reserve;
mod set_plan;
mod shared;

use std::collections::HashMap;
use std::sync::Arc;

use super::closedown::{self, Closedown};
use super::order::{Ranked, ranked};
use super::profile::{FOREVER, Profile, Secs};
use super::{Entry, Plan, Reason, Start, Status};
use crate::job::{Job, JobId, JobState};
use crate::server::Backfill;
use crate::state::{NodeBits, State};
use crate::time::Time;
use gate::{QueueNow, Running, Waits};
pub(super) use predicted::Durations;
use set_plan::SetPlan;
use shared::Started;

/// The planner's working state for one pass. A clone is a trial: a
/// preempting job is planned on one with its victims' nodes given back.
#[derive(Clone)]
pub(super) struct Planner<'a> {
    state: &'a State,
    now: Time,
    now_s: Secs,
    mode: Backfill,
    /// Wall times or predicted run times (`predicted`).
    durations: Durations,
    /// EASY++: per node set, the profile as wall times plan it
    /// (`predicted`).
    guard: Option<Vec<Profile>>,
    block_priority: f64,
    search_depth: usize,
    /// Per node set, in the state's order.
    sets: Vec<SetPlan>,
    /// The nodes free now: the state's, less what this pass has started.
    free: NodeBits,
    /// What this pass's starts took on shared nodes.
    started: Started<'a>,
    /// Per queue (in the configuration's name order): what it may do now.
    /// Shared: a kept plan's passes take it up unchanged (`kept`).
    queues: Arc<[QueueNow]>,
    /// Running jobs per user, group and PBS entity, kept only when the
    /// configuration sets a run limit.
    running: Option<Running<'a>>,
    /// The server's and queues' bounds on resources consumed per queue
    /// and server (flag `q`) and what running jobs use, this pass's
    /// starts counted; `None` when nothing is bounded.
    consumables: Option<crate::consumable::Consumables>,
    reserved_any: bool,
    /// SDSC blocking without backfill: nothing more starts this pass.
    blocked: bool,
    considered: usize,
    /// Sub-jobs this pass started, per array (for their throttles).
    array_starts: HashMap<JobId, u32>,
    /// The advance reservations on now, with their nodes left for their
    /// own jobs (see `advance`).
    advance: Vec<advance::OnNow>,
    /// Preemption's share of the pass, when a queue is express or a job
    /// lent its nodes (see `preempt`).
    preempt: Option<Box<preempt::Preempting>>,
}

impl<'a> Planner<'a> {
    pub fn new(state: &'a State, now: Time, mode: Backfill) -> Planner<'a> {
        Planner::with_durations(state, now, mode, Durations::of(mode))
    }

    /// A planner that has planned nothing yet, on the sets, free nodes and
    /// queues given: worked out from the state by [`Planner::with_durations`],
    /// or handed over by a kept plan (`kept.rs`).
    fn from_parts(
        state: &'a State,
        now: Time,
        (mode, durations): (Backfill, Durations),
        sets: Vec<SetPlan>,
        free: NodeBits,
        queues: Arc<[QueueNow]>,
        (running, consumables): (Option<Running<'a>>, Option<crate::consumable::Consumables>),
    ) -> Planner<'a> {
        let attrs = &state.config().server;
        Planner {
            state,
            now,
            now_s: now.timestamp(),
            mode,
            durations,
            guard: None,
            block_priority: attrs.block_priority,
            search_depth: attrs.search_depth as usize,
            sets,
            free,
            started: Started::default(),
            queues,
            running,
            consumables,
            reserved_any: false,
            blocked: false,
            considered: 0,
            array_starts: HashMap::new(),
            advance: Vec::new(),
            preempt: None,
        }
    }

    pub fn with_durations(
        state: &'a State,
        now: Time,
        mode: Backfill,
        durations: Durations,
    ) -> Planner<'a> {
        let attrs = &state.config().server;
        let now_s = now.timestamp();
        let end_of = |id| {
            state.job(id).map_or(now_s + 1, |job| {
                predicted::planned_end(job, now_s, attrs.kill_delay, durations)
            })
        };
        let sets = set_plan::set_plans(state, now_s, end_of);
        let config = state.config();
        let queues = config
            .queues
            .values()
            .map(|q| QueueNow::of(state, q, now, sets.len()))
            .collect();
        let running = config.has_run_limits().then(|| {
            let mut running = Running::default();
            for job in state.active_jobs() {
                running.count(state, job);
            }
            running
        });
        let consumables = crate::consumable::Consumables::of(config, state.active_jobs());
        let mut planner = Planner::from_parts(
            state,
            now,
            (mode, durations),
            sets,
            state.occupancy().free.clone(),
            queues,
            (running, consumables),
        );
        planner.close(&closedown::collect(state, now));
        let held = crate::scheduler::reservations::held_spans(state, now);
        if !held.is_empty() {
            let nodes = state.nodes();
            planner.hold_reservations(held, |i| nodes[i].job().map(&end_of));
        }
        let nodes = state.nodes();
        planner.prepare_preemption(|i| nodes[i].job().map(&end_of));
        planner.add_guard();
        planner
    }

    /// Takes every node of each closedown's sets for its time, so that no
    /// job starts or is reserved across it. Call before planning any job:
    /// the reservation hints assume nodes are only ever taken.
    pub fn close(&mut self, closedowns: &[Closedown]) {
        let sets = self.state.node_sets();
        for c in closedowns.iter().filter(|c| !c.is_over(self.now)) {
            let from = c.start.timestamp();
            let to = c.end.map_or(FOREVER, |end| end.timestamp());
            for (set, plan) in sets.iter().zip(&mut self.sets) {
                if c.covers(&set.name) {
                    plan.close(from, to, c.reason);
                }
            }
        }
    }

    /// The reason of the earliest closedown of `sets` that a job running
    /// from now until `end` would cross.
    fn crossing(&self, sets: &[usize], end: Secs) -> Option<Reason> {
        sets.iter()
            .flat_map(|&s| &self.sets[s].closed)
            .filter(|c| c.from < end && self.now_s < c.to)
            .min_by_key(|c| c.from)
            .map(|c| c.reason)
    }

    /// Whether a job running from now until `end` on `sets` would still
    /// run during an advance reservation's occurrence there.
    fn reserved_over(&self, sets: &[usize], end: Secs) -> Option<Reason> {
        sets.iter()
            .flat_map(|&s| &self.sets[s].reserved)
            .any(|&(from, to)| from < end && self.now_s < to)
            .then_some(Reason::ReservedNodes)
    }

    /// Plans every pending job (`Stop::Never`), or up to one (spwhen), or,
    /// with `Stop::NothingStarts`, until nothing more could start this
    /// pass: no node is free, or SDSC blocking holds the rest back.
    pub fn run(mut self, stop: Stop) -> Plan {
        let mut order = predicted::Order::new(ranked(self.state, self.now), self.mode)
            .reading_ahead(self.looks_ahead(stop));
        let mut plan = Plan {
            now: Some(self.now),
            ..Plan::default()
        };
        if stop == Stop::Never {
            plan.queue.reserve(self.state.pending_count());
        }
        self.plan_each(&mut order, &mut plan, stop, None);
        self.conclude(&mut plan, stop);
        plan
    }

    /// Plans the jobs of `order` in turn into `plan` (see `run`); a kept
    /// plan resumes here (see `kept`), and has what the order said of
    /// each job planned put in `seen`.
    fn plan_each(
        &mut self,
        order: &mut predicted::Order<'_>,
        plan: &mut Plan,
        stop: Stop,
        mut seen: Option<&mut Vec<kept::Seen>>,
    ) {
        while let Some(ranked) = self.next_job(order) {
            if stop == Stop::NothingStarts
                && (self.blocked || self.sets.iter().all(|set| set.free == 0))
                && self.advance.iter().all(|on| on.free.is_empty())
                && !self.is_express(&ranked)
            {
                break;
            }
            if let Some(seen) = seen.as_deref_mut() {
                seen.push(kept::Seen::of(&ranked));
            }
            // An array is planned sub-job after sub-job, each as the next
            // job in line, until one cannot start: its sub-jobs are alike,
            // so one that waits stands for the rest. (One call site: the
            // planner's hot path stays inlined.)
            let mut left: Option<u32> = None;
            let entry = loop {
                let entry = if self.is_express(&ranked) {
                    self.plan_preempting(&ranked, &mut plan.starts)
                } else {
                    self.plan_job(&ranked, &mut plan.starts)
                };
                if !ranked.view.array || entry.status != Status::Startable {
                    break entry;
                }
                let n = *left.get_or_insert_with(|| self.unstarted(ranked.view.id));
                if n <= 1 {
                    break entry;
                }
                left = Some(n - 1);
            };
            let last = stop == Stop::At(entry.job);
            plan.queue.push(entry);
            if last {
                break;
            }
        }
    }

    /// The pass's preemptions and, unless it only looked for starts, the
    /// profiles it leaves.
    fn conclude(&mut self, plan: &mut Plan, stop: Stop) {
        (plan.resumes, plan.preempted) = self.preemption_outcome();
        if stop != Stop::NothingStarts {
            plan.steps = self
                .sets
                .iter_mut()
                .map(|set| set.profile.steps())
                .collect();
        }
    }

    /// One job: the gate, then if it lets the job through, placement.
    /// (Inlined, with both: the loop over 100,000 jobs stays one function.)
    #[inline(always)]
    fn plan_job(&mut self, ranked: &Ranked, starts: &mut Vec<Start>) -> Entry {
        match self.gate(ranked) {
            Ok(admitted) => self.place(ranked, &admitted, starts),
            Err(Waits { status, reason }) => Entry {
                job: ranked.view.id,
                status,
                reason: Some(reason),
                expected_start: None,
                priority: ranked.priority,
            },
        }
    }

    /// Sub-jobs of an array this pass may start (0 for any other job):
    /// those left, less those whose dependencies wait.
    fn unstarted(&self, id: JobId) -> u32 {
        self.state
            .job(id)
            .map_or(0, |j| self.state.startable_sub_jobs(j, self.now))
    }
}

/// The array a job belongs to: itself, or its sub-job's.
fn a_id(id: JobId) -> JobId {
    id.array_parent().unwrap_or(id)
}

/// When an active job's nodes come free: at the end of its wall time,
/// which does not run while it is suspended (a suspended job is planned
/// as if resumed now; an exiting job ends within the kill delay), and
/// never before the next second.
pub(crate) fn expected_end(job: &Job, now: Secs, kill_delay: u64) -> Secs {
    let suspended = || match job.suspension.since {
        // None under way: no instant to read (once per running job and
        // pass, it showed in a replay's profile).
        None => job.suspension.secs as Secs,
        Some(_) => {
            let at = chrono::DateTime::from_timestamp(now, 0).unwrap_or_default();
            job.suspension.secs_at(at) as Secs
        }
    };
    let end = match (job.state, job.stime) {
        (JobState::Exiting, _) => now.saturating_add(kill_delay as Secs),
        (_, Some(stime)) => stime
            .timestamp()
            .saturating_add(job.walltime as Secs)
            .saturating_add(suspended()),
        (_, None) => now.saturating_add(job.walltime as Secs),
    };
    end.max(now + 1)
}

/// How far [`Planner::run`] plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stop {
    /// Every pending job.
    Never,
    /// Up to this job (spwhen).
    At(JobId),
    /// Until no other job could start (the starts, for the simulator).
    NothingStarts,
}
