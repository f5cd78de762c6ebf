//! Advance and standing reservations in a pass (`pbs_rsub`): their nodes
//! are kept from every other job for their occurrences, and their own
//! queue's jobs run there and nowhere else.
//!
//! An occurrence still to come is held as a closedown is, but on its nodes
//! only: its size is taken from its set's profile for its time, so no job
//! that would still run then starts on a count that needs them; on a mesh
//! or torus it is also placed (the nodes confirmed), so a job started now
//! keeps off them (`allocate_clear_of_reservations`); on a flat set the
//! starts that would overlap it take other nodes (`clear_of_held`). An
//! occurrence on now takes its free nodes out of the pass's free nodes
//! until its end; they are the only nodes its jobs get.

use super::set_plan::{Release, Reservation as Window};
use super::{Planner, a_id};
use crate::scheduler::order::Ranked;
use crate::scheduler::profile::Secs;
use crate::scheduler::reservations::HeldSpan;
use crate::scheduler::{Entry, Reason, Start, Status};
use crate::time::Time;

/// An occurrence on now, as its jobs see it.
#[derive(Clone)]
pub(super) struct OnNow {
    pub resv: u64,
    pub set: usize,
    pub end: Secs,
    /// Its nodes (indices in `State::nodes`) free for its jobs, in order.
    pub free: Vec<usize>,
}

/// An occurrence still to come on a flat set: starts overlapping it keep
/// off its nodes.
#[derive(Clone)]
pub(super) struct Held {
    pub start: Secs,
    pub end: Secs,
    pub nodes: Vec<usize>,
}

impl Planner<'_> {
    /// Keeps every occurrence's nodes for it (see the module comment).
    /// `end_of` is when an active job's nodes come back.
    pub(super) fn hold_reservations(
        &mut self,
        spans: Vec<HeldSpan>,
        end_of: impl Fn(usize) -> Option<Secs>,
    ) {
        let now = self.now_s;
        for span in spans {
            let set = &mut self.sets[span.set];
            let base = set.nodes.start;
            set.reserved.push((span.start, span.end));
            if span.start > now {
                set.profile
                    .add(span.start, span.end, -(span.nodes.len() as i64));
                if set.shaped() {
                    set.placed.push(Window {
                        start: span.start,
                        end: span.end,
                        set: span.set,
                        size: span.nodes.len() as i64,
                        nodes: Some(span.nodes.iter().map(|&i| (i - base) as u32).collect()),
                    });
                } else {
                    set.held.push(Held {
                        start: span.start,
                        end: span.end,
                        nodes: span.nodes,
                    });
                }
                continue;
            }
            // On now: its free nodes are its jobs' alone until its end.
            let mut free = Vec::new();
            for &i in &span.nodes {
                if self.free.get(i) {
                    self.free.set(i, false);
                    set.free = set.free.saturating_sub(1);
                    set.profile.add(now, span.end, -1);
                    free.push(i);
                } else if let Some(back) = end_of(i).filter(|&back| back < span.end) {
                    set.profile.add(back, span.end, -1);
                }
            }
            if set.shaped() {
                set.placed.push(Window {
                    start: now,
                    end: span.end,
                    set: span.set,
                    size: span.nodes.len() as i64,
                    nodes: Some(span.nodes.iter().map(|&i| (i - base) as u32).collect()),
                });
            }
            self.advance.push(OnNow {
                resv: span.resv,
                set: span.set,
                end: span.end,
                free,
            });
        }
    }

    /// A job of reservation `resv`'s queue: it starts on the reservation's
    /// free nodes if they are enough and its wall time ends in time.
    pub(super) fn place_in_reservation(
        &mut self,
        ranked: &Ranked,
        resv: u64,
        starts: &mut Vec<Start>,
    ) -> Entry {
        let view = &ranked.view;
        let entry = |status, reason: Option<Reason>, start: Option<Time>| Entry {
            job: view.id,
            status,
            reason,
            expected_start: start,
            priority: ranked.priority,
        };
        let Some(on) = self.advance.iter().position(|o| o.resv == resv) else {
            return entry(Status::Waiting, Some(Reason::ReservationNotRunning), None);
        };
        let n = view.nodes as usize;
        let end = self.now_s.saturating_add(view.walltime.max(1) as Secs);
        if end > self.advance[on].end {
            return entry(Status::Waiting, Some(Reason::ReservationEnd), None);
        }
        if self.advance[on].free.len() < n {
            return entry(Status::Waiting, Some(Reason::Resources), None);
        }
        let s = self.advance[on].set;
        let set = &mut self.sets[s];
        let (nodes, parts) = match set.allocator.as_ref() {
            // The set's allocator with every node but the reservation's
            // free ones taken: the job is placed inside the reservation.
            Some(allocator) => {
                let base = set.nodes.start;
                let mut inside = allocator.boxed_clone();
                for i in set.nodes.clone() {
                    if !self.advance[on].free.contains(&i) {
                        let _ = inside.occupy(&[(i - base) as u32]);
                    }
                }
                let Some(placement) = inside.allocate(n as u32) else {
                    return entry(Status::Waiting, Some(Reason::Placement), None);
                };
                if let Some(a) = set.allocator.as_mut() {
                    let _ = a.occupy(&placement.nodes);
                }
                // Back at its end, for the reservations placed after it.
                set.releases.push(Release {
                    end,
                    nodes: placement.nodes.clone(),
                });
                let mut nodes: Vec<usize> =
                    placement.nodes.iter().map(|&i| base + i as usize).collect();
                nodes.sort_unstable();
                (nodes, placement.parts)
            }
            None => (self.advance[on].free[..n].to_vec(), Vec::new()),
        };
        self.advance[on].free.retain(|i| !nodes.contains(i));
        self.record_start(view.id, view.array, nodes, parts, starts);
        entry(Status::Startable, None, Some(self.now))
    }

    /// Counts a start in the pass's tallies and adds it to the plan.
    pub(super) fn record_start(
        &mut self,
        id: crate::job::JobId,
        array: bool,
        nodes: Vec<usize>,
        parts: Vec<qmesh_alloc::Part>,
        starts: &mut Vec<Start>,
    ) {
        let state = self.state;
        if let Some(job) = state.job(id) {
            if let Some(running) = &mut self.running {
                running.count(state, job);
            }
            if let Some(consumables) = &mut self.consumables {
                consumables.add(job);
            }
        }
        starts.push(Start {
            job: id,
            nodes,
            parts,
        });
        if array {
            *self.array_starts.entry(a_id(id)).or_default() += 1;
        }
    }
}
