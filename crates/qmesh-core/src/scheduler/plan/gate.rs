//! The gate: whether a job may be considered for nodes at all this pass,
//! and if not, why it waits. Holds, dependencies, stopped queues, periods,
//! allocations, nodes down, the search depth, array throttles, run limits,
//! consumables and SDSC blocking are all decided here, before placement
//! looks at a single node, so that placement is only about where and when.

use std::collections::HashMap;
use std::sync::Arc;

use super::{Planner, a_id};
use crate::job::Job;
use crate::periods;
use crate::scheduler::order::Ranked;
use crate::scheduler::profile::{FOREVER, Secs};
use crate::scheduler::{Reason, Status};
use crate::state::State;
use crate::time::Time;

/// Why the gate turned a job away: its status and reason in the plan.
pub(super) struct Waits {
    pub status: Status,
    pub reason: Reason,
}

impl Waits {
    fn held(reason: Reason) -> Waits {
        Waits {
            status: Status::Held,
            reason,
        }
    }

    fn waiting(reason: Reason) -> Waits {
        Waits {
            status: Status::Waiting,
            reason,
        }
    }
}

/// A job the gate let through: the sets of its queue it may use. Kept
/// small, as every job of a pass passes through here: carrying the
/// queue's copy as well made an EASY pass over 100,000 waiting jobs a
/// fifth slower (`qmesh-bench pass`); placement takes its own copy.
pub(super) struct Admitted {
    /// The queue's sets that have what the job needs of a node, when it
    /// needs more than nodes (`None`: all of them).
    fitting: Option<Vec<usize>>,
}

impl Admitted {
    /// The sets the job may use, in the queue's order.
    pub fn sets<'q>(&'q self, queue: &'q QueueNow) -> &'q [usize] {
        self.fitting.as_deref().unwrap_or(&queue.sets)
    }
}

impl<'a> Planner<'a> {
    /// Whether `ranked` may be considered for nodes now: the sets it may
    /// use, or why it waits. A job that gets past the search depth counts
    /// as considered, whatever stops it after.
    // One call site (`plan_job`), in the hot loop: inlined as it was
    // when the gate and placement were one function.
    #[inline(always)]
    pub(super) fn gate(&mut self, ranked: &Ranked) -> Result<Admitted, Waits> {
        let view = &ranked.view;
        // The record itself only when a rule needs more than the view.
        let state = self.state;
        let job = || state.job(view.id);
        if !view.queued {
            let status = job().map_or(Status::Held, Status::of_pending);
            return Err(Waits {
                status,
                reason: Reason::Held,
            });
        }
        if view.conditional
            && let Some(reason) = job().and_then(|job| state.waits_for(job, self.now))
        {
            return Err(Waits::held(reason));
        }
        let queue = &self.queues[ranked.queue];
        if !queue.started {
            return Err(Waits::waiting(Reason::QueueStopped));
        }
        if !queue.open {
            return Err(Waits::waiting(if queue.reservation.is_some() {
                Reason::ReservationNotRunning
            } else {
                Reason::OutsidePeriod
            }));
        }
        if view.has_account && job().is_some_and(|job| state.allocation_short(job)) {
            return Err(Waits::waiting(Reason::Allocation));
        }
        // A job that needs more of a node than some sets have uses the others.
        // (The record is looked up only for such a job: once per job and
        // pass, the lookup showed in a replay's profile.)
        let fitting = view.has_needs.then(job).flatten().map(|job| {
            let needs = job.needs();
            queue
                .sets
                .iter()
                .copied()
                .filter(|&s| state.effective_attrs(s).satisfies(&needs))
                .collect()
        });
        let admitted = Admitted { fitting };
        let n = view.nodes as usize;
        let reachable: usize = admitted.sets(queue).iter().map(|&s| self.sets[s].up).sum();
        if reachable < n {
            return Err(Waits::waiting(Reason::NodesDown));
        }
        if self.search_depth > 0 && self.considered >= self.search_depth {
            return Err(Waits::waiting(Reason::Priority));
        }
        self.considered += 1;
        if view.array
            && let Some(a) = self.state.array_of(view.id)
            && !a.throttle_room(self.array_starts.get(&a_id(view.id)).copied().unwrap_or(0))
        {
            return Err(Waits::waiting(Reason::ArrayLimit));
        }
        if let Some(running) = &self.running
            && let Some(reason) = job().and_then(|job| running.over_limit(state, job))
        {
            return Err(Waits::waiting(reason));
        }
        // Licences and the like: checked each pass, never reserved.
        if let Some(consumables) = &self.consumables
            && job().is_some_and(|job| consumables.shortfall(job).is_some())
        {
            return Err(Waits::waiting(Reason::Consumable));
        }
        // SDSC blocking holds the machine's nodes, not a reservation's.
        if self.blocked && queue.reservation.is_none() {
            return Err(Waits::waiting(Reason::Blocked));
        }
        Ok(admitted)
    }
}

/// Running jobs per user and group, and per queue and server, user, Unix
/// group and project for PBS's limits (`limits.rs`), this pass's starts
/// counted. Kept only while the configuration sets a run limit.
#[derive(Clone, Default)]
pub(super) struct Running<'a> {
    user: HashMap<&'a str, u32>,
    group: HashMap<String, u32>,
    entity: crate::limits::RunCounts,
}

impl<'a> Running<'a> {
    /// Counts `job` as running.
    pub fn count(&mut self, state: &State, job: &'a Job) {
        *self.user.entry(job.owner.user.as_str()).or_default() += 1;
        if let Some((group, _)) = state.config().run_limits(job).group {
            *self.group.entry(group).or_default() += 1;
        }
        self.entity.add(job);
    }

    /// The limit `job` would go over if it started now.
    fn over_limit(&self, state: &State, job: &Job) -> Option<Reason> {
        let config = state.config();
        if let Some(reason) = crate::state::limits::run_reason(config, &self.entity, job) {
            return Some(reason);
        }
        let limits = config.run_limits(job);
        if let Some(max) = limits.user {
            let running = self.user.get(job.owner.user.as_str()).copied();
            if running.unwrap_or(0) >= max {
                return Some(Reason::UserLimit);
            }
        }
        if let Some((group, max)) = limits.group
            && self.group.get(&group).copied().unwrap_or(0) >= max
        {
            return Some(Reason::GroupLimit);
        }
        None
    }
}

/// A queue as the pass sees it (an `Arc` each of its lists: placement
/// takes a copy while it changes the planner).
#[derive(Clone)]
pub(super) struct QueueNow {
    started: bool,
    /// One of its periods is on (or it names none).
    open: bool,
    /// The sets it draws on now, in selection order.
    sets: Arc<[usize]>,
    /// Indexed by set: when its jobs there are ended ([`FOREVER`]: not);
    /// `None` when no set has a cut.
    pub cuts: Option<Arc<[Secs]>>,
    /// The reservation whose queue it is: open while an occurrence is on.
    pub reservation: Option<u64>,
}

impl QueueNow {
    /// The sets it draws on now.
    pub fn sets_now(&self) -> &[usize] {
        &self.sets
    }

    pub fn of(state: &State, queue: &crate::queue::Queue, now: Time, n_sets: usize) -> QueueNow {
        if let Some(id) = queue.reservation {
            let r = state.config().reservations.get(&id);
            let set = r.and_then(|r| state.node_sets().iter().position(|s| s.name == r.node_set));
            return QueueNow {
                started: queue.started,
                open: r.is_some_and(|r| r.state_at(now) == crate::reservation::ResvState::Running),
                sets: set.into_iter().collect::<Vec<_>>().into(),
                cuts: None,
                reservation: Some(id),
            };
        }
        if !queue.follows_calendar() {
            return QueueNow {
                started: queue.started,
                open: true,
                sets: state.sets_now(queue, |_| false).into(),
                cuts: None,
                reservation: None,
            };
        }
        let window = periods::window(state, queue, now);
        let cuts = window.cuts.iter().any(Option::is_some).then(|| {
            let mut by_set = vec![FOREVER; n_sets];
            for (&s, cut) in window.sets.iter().zip(&window.cuts) {
                if let Some(cut) = cut {
                    by_set[s] = cut.at.timestamp();
                }
            }
            by_set.into()
        });
        QueueNow {
            started: queue.started,
            open: window.open,
            sets: window.sets.into(),
            cuts,
            reservation: None,
        }
    }
}
