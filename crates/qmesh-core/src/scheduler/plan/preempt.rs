//! Preemption in a pass (`crate::preempt` has the policy): an express job
//! that cannot start is planned again on a clone of the planner in which
//! running jobs of lower queues have given their nodes back, lowest
//! priority and latest started first, until it starts; then each of those
//! it did not need is given its nodes again. Planning it on the planner
//! itself keeps every rule a start obeys: reservations made this pass,
//! advance reservations, shutdown windows, periods, and the topology's
//! placement (a subtorus, not any N nodes).
//!
//! A job suspended by preemption lends its nodes. Those free are kept
//! from every job that may not preempt (taken from the pass until the
//! job would end if it resumed when they come back), and an express job
//! may take them as it takes a victim's. Once all are free it is resumed,
//! before any job starts.
//!
//! When every victim is suspended the express job starts in this pass.
//! A victim requeued or deleted must be gone first: the express job waits
//! (`Preempting`) and starts in the pass after their ends, first in line.

use std::collections::BTreeSet;

use super::{Planner, expected_end};
use crate::job::{Job, JobId, JobState};
use crate::preempt::{Method, Policy};
use crate::scheduler::order::Ranked;
use crate::scheduler::profile::Secs;
use crate::scheduler::{Entry, Preempted, Reason, Start, Status};

/// What preemption adds to a pass.
#[derive(Clone)]
pub(super) struct Preempting {
    policy: Policy,
    /// Per queue (in the configuration's order): whether it is express.
    express: Vec<bool>,
    /// Free nodes of lent jobs, kept for express jobs.
    lent: Vec<Kept>,
    /// Running jobs this pass has chosen to preempt.
    chosen: BTreeSet<JobId>,
    pub resumes: Vec<JobId>,
    pub preempted: Vec<Preempted>,
}

/// A free node kept for express jobs, and until when.
#[derive(Clone, Copy)]
struct Kept {
    node: usize,
    until: Secs,
}

/// A placement found by giving victims' nodes back.
struct Found<'a> {
    planner: Planner<'a>,
    entry: Entry,
    start: Start,
    victims: Vec<(JobId, Method)>,
    /// The nodes the trial made free, and until when to keep those the
    /// express job did not take.
    released: Vec<Kept>,
}

impl<'a> Planner<'a> {
    /// Reads the policy; keeps lent jobs' free nodes, and takes back the
    /// nodes of those that resume now. `end_of` is when the job on a node
    /// gives it back.
    pub(super) fn prepare_preemption(&mut self, end_of: impl Fn(usize) -> Option<Secs>) {
        let state = self.state;
        let Some(policy) = Policy::of(state.config()) else {
            if state.lent_jobs().next().is_none() {
                return;
            }
            // Preemption was turned off with jobs still lent: they resume
            // as their nodes free; nothing may preempt.
            return self.keep_lent(None, end_of);
        };
        self.keep_lent(Some(policy), end_of);
    }

    fn keep_lent(&mut self, policy: Option<Policy>, end_of: impl Fn(usize) -> Option<Secs>) {
        let state = self.state;
        let express = state
            .config()
            .queues
            .values()
            .map(|q| policy.as_ref().is_some_and(|p| p.is_express(q)))
            .collect();
        let mut p = Preempting {
            policy: policy.unwrap_or_else(Policy::never),
            express,
            lent: Vec::new(),
            chosen: BTreeSet::new(),
            resumes: Vec::new(),
            preempted: Vec::new(),
        };
        let now = self.now_s;
        for job in state.lent_jobs() {
            let nodes = state.lent_nodes(job);
            let left = remaining(job, self.now) as Secs;
            // It resumes on its nodes once all are free, unless it would
            // then run into a reservation or a shutdown window there.
            if state.may_take_back(job)
                && nodes.iter().all(|&i| self.free.get(i))
                && self.clear_for(&nodes, now + left)
            {
                p.resumes.push(job.id);
                for &i in &nodes {
                    self.take_node(i, now, now + left);
                }
                self.add_release(&nodes, now + left);
                continue;
            }
            let back = nodes.iter().filter_map(|&i| end_of(i)).max().unwrap_or(now);
            let until = back.max(now) + left;
            for &i in &nodes {
                if self.free.get(i) {
                    self.take_node(i, now, until);
                    p.lent.push(Kept { node: i, until });
                } else if let Some(from) = end_of(i) {
                    let s = state.nodes()[i].set;
                    self.sets[s].profile.add(from, until, -1);
                }
            }
        }
        self.preempt = Some(Box::new(p));
    }

    /// Whether a job on `nodes` until `end` would run into no advance
    /// reservation's occurrence on them and no closedown of their sets.
    fn clear_for(&self, nodes: &[usize], end: Secs) -> bool {
        let now = self.now_s;
        let all = self.state.nodes();
        let mut sets: Vec<usize> = nodes.iter().map(|&i| all[i].set).collect();
        sets.dedup();
        if self.crossing(&sets, end).is_some() {
            return false;
        }
        nodes.iter().all(|&i| {
            let set = &self.sets[all[i].set];
            let local = (i - set.nodes.start) as u32;
            let held = set
                .held
                .iter()
                .any(|h| h.start < end && now < h.end && h.nodes.contains(&i));
            let placed = super::set_plan::placed_over(&set.placed, now, end)
                .any(|placed| placed.contains(&local));
            !held && !placed
        })
    }

    /// Whether the ranked job's queue may preempt.
    #[inline]
    pub(super) fn is_express(&self, ranked: &Ranked) -> bool {
        self.preempt
            .as_ref()
            .is_some_and(|p| p.express.get(ranked.queue).copied().unwrap_or(false))
    }

    /// Plans an express job: as any job, and if it cannot start for want
    /// of nodes, by preempting.
    pub(super) fn plan_preempting(&mut self, ranked: &Ranked, starts: &mut Vec<Start>) -> Entry {
        let before = self.clone();
        let entry = self.plan_job(ranked, starts);
        let for_nodes = matches!(
            entry.reason,
            Some(
                Reason::Resources | Reason::Reservation | Reason::Placement | Reason::ReservedNodes
            )
        );
        if entry.status == Status::Startable || !for_nodes {
            return entry;
        }
        let id = ranked.view.id;
        let waiting = |entry: Entry, kill_delay: u64| Entry {
            status: Status::Blocked,
            reason: Some(Reason::Preempting),
            expected_start: chrono::DateTime::from_timestamp(
                before.now_s + kill_delay.max(1) as Secs,
                0,
            ),
            ..entry
        };
        let kill_delay = self.state.config().server.kill_delay;
        if self.state.being_preempted_for(id) > 0 {
            return waiting(entry, kill_delay);
        }
        let Some(found) = before.find_victims(ranked) else {
            return entry;
        };
        let suspends = found.victims.iter().all(|(_, m)| *m == Method::Suspend);
        let preempted: Vec<Preempted> = found
            .victims
            .iter()
            .map(|&(job, method)| Preempted {
                job,
                by: id,
                method,
            })
            .collect();
        if suspends {
            let Found {
                planner,
                entry,
                start,
                released,
                ..
            } = found;
            *self = planner;
            // What the express job did not take is kept again, now for
            // express jobs only: its victims are lent.
            let mut kept = Vec::new();
            for k in released {
                if !start.nodes.contains(&k.node) && self.free.get(k.node) {
                    self.take_node(k.node, self.now_s, k.until);
                    kept.push(k);
                }
            }
            starts.push(start);
            if let Some(p) = self.preempt.as_mut() {
                p.lent = kept;
                p.chosen.extend(preempted.iter().map(|v| v.job));
                p.preempted.extend(preempted);
            }
            return entry;
        }
        // Its free nodes of the placement found wait for it with the
        // victims': no other job starts there meanwhile.
        let wall = ranked.view.walltime.max(1) as Secs;
        let now = before.now_s;
        *self = before.clone();
        for &i in &found.start.nodes {
            if self.free.get(i) {
                self.take_node(i, now, now + wall);
            }
        }
        if let Some(p) = self.preempt.as_mut() {
            p.chosen.extend(preempted.iter().map(|v| v.job));
            p.preempted.extend(preempted);
        }
        waiting(entry, kill_delay)
    }

    /// The fewest, lowest victims that let `ranked` start, and the trial
    /// planner it starts on; `None` if even all of them would not.
    fn find_victims(&self, ranked: &Ranked) -> Option<Found<'a>> {
        let state = self.state;
        let p = self.preempt.as_ref()?;
        let config = state.config();
        let by_queue = config.queues.values().nth(ranked.queue)?;
        let by = state.job(ranked.view.id)?;
        let sets = self.queues.get(ranked.queue)?.sets_now();
        let occupancy = state.occupancy();
        let mut candidates: Vec<(&Job, Method)> = state
            .active_jobs()
            .filter(|j| j.state == JobState::Running && !p.chosen.contains(&j.id))
            .filter(|j| {
                config
                    .queue(&j.queue)
                    .is_some_and(|q| p.policy.may_preempt(by, by_queue, q))
            })
            .filter(|j| {
                occupancy.held.get(&j.id).is_some_and(|held| {
                    !held.nodes.is_empty()
                        && held.up_in.iter().any(|(s, _)| sets.contains(s))
                        && held.up_in.iter().all(|&(s, _)| !self.sets[s].shared())
                })
            })
            .filter_map(|j| {
                let used = j.elapsed(self.now).unwrap_or(0);
                p.policy.order.method_for(j, used).map(|m| (j, m))
            })
            .collect();
        // Lowest queue first, then the latest started (PBS Pro's
        // min_time_since_start), then the newest.
        candidates.sort_by_key(|(j, _)| {
            let queue = config.queue(&j.queue).map_or(0, |q| q.priority);
            (queue, std::cmp::Reverse(j.stime), std::cmp::Reverse(j.id))
        });
        let lent_free = p.lent.len();
        let free: usize = sets.iter().map(|&s| self.sets[s].free).sum();
        let could: usize = candidates
            .iter()
            .filter_map(|(j, _)| occupancy.held.get(&j.id))
            .map(|h| h.nodes.len())
            .sum();
        if free + lent_free + could < ranked.view.nodes as usize {
            return None;
        }
        let wall = ranked.view.walltime.max(1);
        let mut taken: Vec<(&Job, Method)> = Vec::new();
        let mut rest = candidates.into_iter();
        // Victims one by one until the job starts.
        let mut found = loop {
            if let Some(found) = self.trial(ranked, &taken, wall) {
                break found;
            }
            taken.push(rest.next()?);
        };
        // Then each it may do without, the highest first.
        let mut i = taken.len();
        while i > 0 {
            i -= 1;
            let mut fewer = taken.clone();
            fewer.remove(i);
            if let Some(smaller) = self.trial(ranked, &fewer, wall) {
                taken = fewer;
                found = smaller;
            }
        }
        Some(found)
    }

    /// `ranked` planned on a clone where the lent nodes and `victims`'
    /// nodes are free; the clone if it starts there.
    fn trial(&self, ranked: &Ranked, victims: &[(&Job, Method)], wall: u64) -> Option<Found<'a>> {
        let mut t = self.clone();
        let now = t.now_s;
        let p = t.preempt.as_ref()?;
        let mut released: Vec<Kept> = p.lent.clone();
        for k in &released {
            t.free_node(k.node, now, k.until);
        }
        let kill_delay = t.state.config().server.kill_delay;
        for (job, _) in victims {
            let end = expected_end(job, now, kill_delay);
            let until = now + wall as Secs + remaining(job, t.now) as Secs;
            let nodes = t.state.occupancy().held.get(&job.id)?.nodes.clone();
            t.drop_release(&nodes, end);
            for &i in &nodes {
                if t.state.nodes()[i].usable() {
                    t.free_node(i, now, end);
                    released.push(Kept { node: i, until });
                }
            }
        }
        let mut starts = Vec::new();
        let entry = t.plan_job(ranked, &mut starts);
        if entry.status != Status::Startable {
            return None;
        }
        let start = starts.pop()?;
        Some(Found {
            planner: t,
            entry,
            start,
            victims: victims.iter().map(|(j, m)| (j.id, *m)).collect(),
            released,
        })
    }

    /// Takes free node `i` from the pass over `[from, to)`.
    fn take_node(&mut self, i: usize, from: Secs, to: Secs) {
        let s = self.state.nodes()[i].set;
        self.free.set(i, false);
        let set = &mut self.sets[s];
        set.free = set.free.saturating_sub(1);
        set.profile.add(from, to, -1);
        let base = set.nodes.start;
        if let Some(a) = set.allocator.as_mut() {
            let _ = a.occupy(&[(i - base) as u32]);
        }
    }

    /// Gives node `i` to the pass over `[from, to)`: the reverse of
    /// `take_node`.
    fn free_node(&mut self, i: usize, from: Secs, to: Secs) {
        let s = self.state.nodes()[i].set;
        self.free.set(i, true);
        let set = &mut self.sets[s];
        set.free += 1;
        set.profile.add(from, to, 1);
        let base = set.nodes.start;
        if let Some(a) = set.allocator.as_mut() {
            a.release(&[(i - base) as u32]);
        }
    }

    /// A resumed job's nodes come back at `end`, for reservations placed
    /// on a topology.
    fn add_release(&mut self, nodes: &[usize], end: Secs) {
        for (s, set) in self.sets.iter_mut().enumerate() {
            if !set.shaped() {
                continue;
            }
            let base = set.nodes.start;
            let local: Vec<u32> = nodes
                .iter()
                .filter(|&&i| self.state.nodes()[i].set == s)
                .map(|&i| (i - base) as u32)
                .collect();
            if !local.is_empty() {
                set.releases
                    .push(super::set_plan::Release { end, nodes: local });
            }
        }
    }

    /// A victim's nodes no longer come back at `end`: they are free now.
    fn drop_release(&mut self, nodes: &[usize], end: Secs) {
        for set in self.sets.iter_mut().filter(|s| s.shaped()) {
            let base = set.nodes.start;
            let range = set.nodes.clone();
            let local: Vec<u32> = nodes
                .iter()
                .filter(|i| range.contains(i))
                .map(|&i| (i - base) as u32)
                .collect();
            if let Some(at) = set
                .releases
                .iter()
                .position(|r| r.end == end && r.nodes == local)
            {
                set.releases.swap_remove(at);
            }
        }
    }

    /// What preemption decided: the jobs to resume and to preempt.
    pub(super) fn preemption_outcome(&mut self) -> (Vec<JobId>, Vec<Preempted>) {
        match self.preempt.as_mut() {
            Some(p) => (
                std::mem::take(&mut p.resumes),
                std::mem::take(&mut p.preempted),
            ),
            None => (Vec::new(), Vec::new()),
        }
    }
}

/// Seconds of wall time a job has left (at least 1).
fn remaining(job: &Job, now: crate::time::Time) -> u64 {
    let used = job.elapsed(now).unwrap_or(0);
    job.walltime.saturating_sub(used).max(1)
}
