//! One scheduling pass: from the state, which jobs start now and on which
//! nodes, and why each other job waits.
//!
//! The pass is a pure function of the state and `now`; the daemon applies
//! its plan by writing the starts to the store and then telling the agents,
//! the simulator by advancing its clock. The policy here is the simplest
//! honest one: queues by priority, jobs in submission order, each started
//! if the allocator can place it. Ordering policies, blocking and
//! backfilling (ANL, SDSC, NCAR) come with the policy issue.

pub(crate) mod choose;
pub mod closedown;
mod order;
pub(crate) mod plan;
pub mod profile;
pub mod reservations;

pub use crate::reason::Reason;
pub use closedown::Closedown;
pub use plan::kept::Replanner;
use plan::{Durations, Planner, Stop};
use profile::Secs;

use crate::job::{Job, JobId, JobState};
use crate::server::Backfill;
use crate::state::State;
use crate::time::Time;

/// A pending job's place in the plan, as the ANL sp commands name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Starts in this pass.
    Startable,
    /// Cannot start now; nodes are held for it (it has a reservation).
    Blocked,
    /// Was tried against free nodes and would delay a reservation, or
    /// needs more nodes than are free.
    CannotBackfill,
    /// Not tried: no nodes were free, or higher priority jobs come first.
    Waiting,
    /// Held by an operator or the system, or waiting on a dependency or
    /// its start-after time.
    Held,
    /// Held by its owner (qhold, sppause).
    Paused,
}

impl Status {
    /// Paused if only its owner holds it, Held for other holds, else Waiting.
    pub fn of_pending(job: &Job) -> Status {
        if job.state != JobState::Held {
            Status::Waiting
        } else if job.holds.user && !job.holds.operator && !job.holds.system {
            Status::Paused
        } else {
            Status::Held
        }
    }

    /// The words spq prints, as in the ANL paper.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Startable => "Startable",
            Status::Blocked => "Blocked",
            Status::CannotBackfill => "Cannot Backfill",
            Status::Waiting => "Waiting",
            Status::Held => "Held",
            Status::Paused => "Paused",
        }
    }
}

/// One pending job in the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub job: JobId,
    pub status: Status,
    /// Why it does not start now; `None` when it starts.
    pub reason: Option<Reason>,
    /// When the plan expects it to start, if it has a reservation.
    pub expected_start: Option<Time>,
    /// Its priority under the server's job order (higher goes first).
    pub priority: f64,
}

/// Free nodes of one node set, and until when they all stay free.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetFree {
    pub set: String,
    pub free: u32,
    /// When a reservation claims some of them; `None` if none does.
    pub until: Option<Time>,
}

/// A job of up to `nodes` nodes could start now and run `secs` seconds
/// (`None`: without limit) without delaying any reservation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WhatPair {
    pub nodes: u32,
    pub secs: Option<u64>,
}

/// When one pending job is expected to start (spwhen).
#[derive(Clone, Debug, PartialEq)]
pub struct When {
    pub start: Option<Time>,
    pub reason: Reason,
}

/// Start this job on these nodes (indices into `State::nodes`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Start {
    pub job: JobId,
    pub nodes: Vec<usize>,
    /// How the topology placed them (mesh blocks, a subtorus); empty on a
    /// flat set.
    pub parts: Vec<qmesh_alloc::Part>,
}

/// A running job a pass preempts for a job of an express queue
/// (`crate::preempt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preempted {
    pub job: JobId,
    /// The express job it makes room for.
    pub by: JobId,
    pub method: crate::preempt::Method,
}

/// What one pass decided. Applied in this order: `resumes`, `preempted`,
/// `starts` (a start may use nodes a preempted job gives up).
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// When the pass ran; `None` for a plan no pass made.
    pub now: Option<Time>,
    /// Jobs suspended by preemption whose nodes are all free again: they
    /// resume on them.
    pub resumes: Vec<JobId>,
    /// Running jobs to suspend, requeue or delete for express jobs.
    pub preempted: Vec<Preempted>,
    pub starts: Vec<Start>,
    /// Every pending job the pass saw, in the order it took them.
    pub queue: Vec<Entry>,
    /// Per node set, the availability profile after the plan: `(t, free)`
    /// steps from `now` on (see [`profile`]).
    steps: Vec<Vec<(Secs, i64)>>,
}

impl Plan {
    /// A pending job's entry, if the pass saw it.
    pub fn entry(&self, id: JobId) -> Option<&Entry> {
        self.queue.iter().find(|e| e.job == id)
    }

    /// The reason a pending job waits after this plan: the plan's, or for
    /// a job it did not see, the state's.
    pub fn reason_of(&self, scheduler: &Scheduler, state: &State, job: &Job) -> Reason {
        self.entry(job.id)
            .and_then(|e| e.reason)
            .unwrap_or_else(|| scheduler.reason(state, job))
    }

    /// Free nodes per node set after this plan's starts, and until when
    /// they all stay free (spfree).
    pub fn free_nodes(&self, state: &State) -> Vec<SetFree> {
        state
            .node_sets()
            .iter()
            .zip(&self.steps)
            .map(|(set, steps)| {
                let free = steps.first().map_or(0, |&(_, v)| v.max(0));
                let until = steps
                    .iter()
                    .skip(1)
                    .find(|&&(_, v)| v < free)
                    .and_then(|&(t, _)| chrono::DateTime::from_timestamp(t, 0));
                SetFree {
                    set: set.name.clone(),
                    free: free as u32,
                    until: if free > 0 { until } else { None },
                }
            })
            .collect()
    }

    /// The largest jobs that would start now without delaying any
    /// reservation (spwhat): for each width, how long it could run. Widest
    /// first; a narrower job may run longer.
    pub fn what(&self, _state: &State) -> Vec<WhatPair> {
        let mut pairs: Vec<WhatPair> = Vec::new();
        for steps in &self.steps {
            let Some(&(start, first)) = steps.first() else {
                continue;
            };
            let mut width = first;
            for &(t, v) in &steps[1..] {
                if width <= 0 {
                    break;
                }
                if v < width {
                    pairs.push(WhatPair {
                        nodes: width as u32,
                        secs: Some((t - start) as u64),
                    });
                    width = v;
                }
            }
            if width > 0 {
                pairs.push(WhatPair {
                    nodes: width as u32,
                    secs: None,
                });
            }
        }
        // Keep the pairs no other pair beats on both counts.
        let longer = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(a), Some(b)) => a >= b,
        };
        let mut best: Vec<WhatPair> = Vec::new();
        for p in &pairs {
            let beaten = pairs
                .iter()
                .any(|q| q != p && q.nodes >= p.nodes && longer(q.secs, p.secs));
            if !beaten && !best.contains(p) {
                best.push(*p);
            }
        }
        best.sort_by_key(|p| std::cmp::Reverse(p.nodes));
        best
    }
}

/// The scheduling policy. Its settings are the server's attributes
/// (`job_order`, `backfill`, `block_priority`, ...), read at each pass.
#[derive(Clone, Debug, Default)]
pub struct Scheduler;

impl Scheduler {
    /// Orders the pending jobs by the server's job order and plans each:
    /// start now, reserve nodes, or wait (with the reason).
    pub fn pass(&self, state: &State, now: Time) -> Plan {
        let attrs = &state.config().server;
        if !attrs.scheduling {
            // Nothing is planned: every pending job waits for the same
            // reason, which `reason` gives from the state. Listing them
            // here would cost O(jobs) per pass while submissions pour in.
            return Plan {
                now: Some(now),
                ..Plan::default()
            };
        }
        Planner::new(state, now, attrs.backfill).run(Stop::Never)
    }

    /// The starts of [`Scheduler::pass`], and only those: the pass stops
    /// once nothing more could start (no node free, SDSC blocking, or
    /// under conservative backfilling no job left that might fit: see
    /// `plan/ahead.rs`), so the jobs behind get no entry and no reason. What a simulator needs
    /// from each instant, at a fraction of the cost when queues are long.
    pub fn starts(&self, state: &State, now: Time) -> Vec<Start> {
        self.changes(state, now).starts
    }

    /// What [`Scheduler::starts`] gives, with the pass's resumptions and
    /// preemptions (apply them first: see [`Plan`]); the plan has no
    /// entries for waiting jobs.
    pub fn changes(&self, state: &State, now: Time) -> Plan {
        let attrs = &state.config().server;
        if !attrs.scheduling {
            return Plan::default();
        }
        Planner::new(state, now, attrs.backfill).run(Stop::NothingStarts)
    }

    /// When a pending job is expected to start, given the jobs ahead of
    /// it (spwhen): every job ahead gets a reservation, as if backfill were
    /// conservative, so the answer holds whatever the mode.
    pub fn when(&self, state: &State, job: &Job, now: Time) -> When {
        self.when_by(state, job, now, Durations::Requested)
    }

    /// [`Scheduler::when`], with every job planned to run its predicted
    /// run time (`crate::predict`): running jobs end when their owners'
    /// last jobs suggest (later once they outlive it), and the jobs ahead
    /// take what theirs ran. The job itself takes its predicted run time
    /// too, but never starts where its wall time would cross a closedown:
    /// it is planned again from the closedown's end (from the wall-time
    /// estimate when the closedown has none, a period's end).
    pub fn when_predicted(&self, state: &State, job: &Job, now: Time) -> When {
        let mut when = self.when_by(state, job, now, Durations::Predicted);
        for _ in 0..MAX_REPLANS {
            let Some(start) = when.start else {
                return when;
            };
            let Some(closedown) = self.closedown_crossed(state, job, start) else {
                return when;
            };
            match closedown.end {
                Some(end) => {
                    when.start = expected_from(state, job, Some(end), now, Durations::Predicted);
                }
                None => break,
            }
        }
        self.when(state, job, now)
    }

    fn when_by(&self, state: &State, job: &Job, now: Time, durations: Durations) -> When {
        if !job.state.is_pending() || !state.config().server.scheduling {
            return When {
                start: None,
                reason: self.reason_at(state, job, now),
            };
        }
        let plan = Planner::with_durations(state, now, Backfill::Conservative, durations)
            .run(Stop::At(job.id));
        match plan.entry(job.id) {
            // Its queue is outside its periods: plan again from when the
            // next begins, with the jobs running then (an estimate: jobs
            // that start before then are not seen).
            Some(entry) if entry.reason == Some(Reason::OutsidePeriod) => {
                let open = state
                    .config()
                    .queue(&job.queue)
                    .and_then(|q| crate::periods::next_open(state, q, now));
                let start = expected_from(state, job, open, now, durations);
                When {
                    start,
                    reason: Reason::OutsidePeriod,
                }
            }
            // Its reservation's next occurrence has not begun: planned
            // again from its start.
            Some(entry) if entry.reason == Some(Reason::ReservationNotRunning) => {
                let open = state
                    .config()
                    .reservation_of_queue(&job.queue)
                    .and_then(|r| r.current(now))
                    .map(|o| o.start);
                let start = expected_from(state, job, open, now, durations);
                When {
                    start,
                    reason: Reason::ReservationNotRunning,
                }
            }
            Some(entry) => When {
                start: entry.expected_start,
                reason: entry.reason.unwrap_or(Reason::Resources),
            },
            None => When {
                start: None,
                reason: self.reason_at(state, job, now),
            },
        }
    }

    /// The closedown a pending job would cross if it started at `now`:
    /// the earliest, on its queue's node sets, that its wall time reaches
    /// into. It names the window when the reason is `Shutdown` or
    /// `PeriodEnd` (qstat's comment, spwhen).
    pub fn closedown_crossed(&self, state: &State, job: &Job, now: Time) -> Option<Closedown> {
        let queue = state.config().queue(&job.queue)?;
        let wall = i64::try_from(job.walltime.max(1)).unwrap_or(i64::MAX);
        let end = chrono::TimeDelta::try_seconds(wall)
            .and_then(|d| now.checked_add_signed(d))
            .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC);
        let sets = state.node_sets();
        let shutdown = closedown::collect(state, now).into_iter().find(|c| {
            c.overlaps(now, end)
                && sets
                    .iter()
                    .any(|set| queue.uses_set(&set.name) && c.covers(&set.name))
        });
        let period = crate::periods::window(state, queue, now)
            .cuts
            .into_iter()
            .flatten()
            .filter(|c| c.at < end)
            .min_by_key(|c| c.at)
            .map(|c| Closedown {
                start: c.at,
                end: None,
                sets: Vec::new(),
                reason: Reason::PeriodEnd,
                name: c.what,
            });
        // An advance reservation's occurrence on the queue's sets (not the
        // job's own reservation).
        let reserved = state
            .config()
            .reservations
            .values()
            .filter(|r| r.queue_name() != job.queue && queue.uses_set(&r.node_set))
            .flat_map(|r| {
                r.occurrences
                    .iter()
                    .filter(|o| o.overlaps(now, end))
                    .map(move |o| Closedown {
                        start: o.start,
                        end: Some(o.end),
                        sets: vec![r.node_set.clone()],
                        reason: Reason::ReservedNodes,
                        name: r.queue_name(),
                    })
            })
            .min_by_key(|c| c.start);
        [shutdown, period, reserved]
            .into_iter()
            .flatten()
            .min_by_key(|c| c.start)
    }

    /// Why a pending job waits, from the state alone (for a job no pass
    /// has seen yet).
    pub fn reason(&self, state: &State, job: &Job) -> Reason {
        let config = state.config();
        if job.state == JobState::Held {
            return Reason::Held;
        }
        if !config.server.scheduling {
            return Reason::SchedulingOff;
        }
        let Some(queue) = config.queue(&job.queue).filter(|q| q.started) else {
            return Reason::QueueStopped;
        };
        let reachable = state.up_for_queue(queue);
        if reachable < job.nodes as usize {
            return Reason::NodesDown;
        }
        if state.array_throttled(job.id) {
            return Reason::ArrayLimit;
        }
        let running = state.accounting().tally.entities.running();
        if let Some(reason) = crate::state::limits::run_reason(config, running, job) {
            return reason;
        }
        // Counts what running jobs use: only where something is bounded.
        if crate::consumable::Consumables::of(state.config(), state.active_jobs())
            .is_some_and(|c| c.shortfall(job).is_some())
        {
            return Reason::Consumable;
        }
        Reason::Resources
    }

    /// [`Scheduler::reason`], with what depends on the time: dependencies
    /// and start-after times.
    pub fn reason_at(&self, state: &State, job: &Job, now: Time) -> Reason {
        if job.state == JobState::Queued
            && let Some(reason) = state.waits_for(job, now)
        {
            return reason;
        }
        self.reason(state, job)
    }
}

/// Closedowns a start from predicted run times is moved past before the
/// wall-time estimate is given instead.
const MAX_REPLANS: usize = 3;

/// A job's start planned again from `open`, when its queue opens (its
/// next period, its reservation's next occurrence): an estimate, since
/// jobs that start before then are not seen.
fn expected_from(
    state: &State,
    job: &Job,
    open: Option<Time>,
    now: Time,
    durations: Durations,
) -> Option<Time> {
    let open = open.filter(|&open| open > now)?;
    Planner::with_durations(state, open, Backfill::Conservative, durations)
        .run(Stop::At(job.id))
        .entry(job.id)
        .and_then(|e| e.expected_start)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_chunks;
#[cfg(test)]
mod tests_node_sets;
#[cfg(test)]
mod tests_placed;
#[cfg(test)]
mod tests_predicted;
#[cfg(test)]
mod tests_preempt;
#[cfg(test)]
mod tests_reservations;
#[cfg(test)]
mod tests_shared;
