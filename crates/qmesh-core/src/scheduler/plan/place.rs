//! Placement: for a job the gate let through, whether it starts now and on
//! which nodes, else its reservation (by the backfill mode) or why it
//! waits. A job starts now only if its nodes stay free for its whole wall
//! time in the profiles, so it cannot delay a reservation already made.

use super::Planner;
use super::gate::Admitted;
use super::set_plan::{Fit, Release};
use crate::node_resources::HostResource;
use crate::scheduler::choose::Wants;
use crate::scheduler::order::Ranked;
use crate::scheduler::profile::Secs;
use crate::scheduler::{Entry, Reason, Start, Status};
use crate::server::Backfill;
use qmesh_alloc::Part;

/// What `start_now` found.
pub(super) enum Now {
    Started(Vec<usize>, Vec<Part>),
    /// Not enough nodes free for long enough.
    NoRoom,
    /// Enough nodes free, but no topology could place the job.
    NoPlacement,
}

impl<'a> Planner<'a> {
    /// Starts `ranked` now on the sets `admitted` gives it if it can,
    /// else reserves a window for it if the backfill mode says so, else
    /// says why it waits.
    // One call site (`plan_job`), in the hot loop: inlined as it was
    // when the gate and placement were one function.
    #[inline(always)]
    pub(super) fn place(
        &mut self,
        ranked: &Ranked,
        admitted: &Admitted,
        starts: &mut Vec<Start>,
    ) -> Entry {
        let view = &ranked.view;
        let entry = |status, reason, expected_start| Entry {
            job: view.id,
            status,
            reason,
            expected_start,
            priority: ranked.priority,
        };
        let state = self.state;
        let job = || state.job(view.id);
        // The queues stay as they are for the pass; this borrow of them
        // leaves the planner free to change.
        let queues = std::sync::Arc::clone(&self.queues);
        let queue = &queues[ranked.queue];
        if let Some(resv) = queue.reservation {
            return self.place_in_reservation(ranked, resv, starts);
        }
        let sets = admitted.sets(queue);
        let cuts = queue.cuts.as_deref();
        let n = view.nodes as usize;
        let wall = view.walltime.max(1) as Secs;
        let end = self.now_s.saturating_add(wall);
        let free_now: usize = sets.iter().map(|&s| self.sets[s].free).sum();
        let above_block = self.block_priority > 0.0 && ranked.priority > self.block_priority;
        let reserve = match self.mode {
            Backfill::Conservative => true,
            Backfill::Easy | Backfill::EasyPredicted => !self.reserved_any || above_block,
            Backfill::None => above_block,
        };
        // In a queue whose jobs end with its periods, only the sets the job
        // would not outlast there (worked out only if they are tried).
        let within: Vec<usize>;
        let (usable, cut_off) = match cuts {
            Some(cuts) if free_now >= n || reserve => {
                within = sets.iter().copied().filter(|&s| cuts[s] >= end).collect();
                (&within[..], within.len() < sets.len())
            }
            _ => (sets, false),
        };
        let mut unplaceable = false;
        let wants = view.constrained.then(job).flatten().and_then(Wants::of);
        let wants = wants.as_ref();
        if free_now >= n {
            // Its run as planned: its wall time, or its predicted run time.
            let run_end = self.now_s.saturating_add(self.planned_secs(view));
            match self.start_now(usable, n, run_end, end, reserve, wants) {
                Now::Started(nodes, parts) => {
                    self.guard_take(&nodes, end);
                    self.record_start(view.id, view.array, nodes, parts, starts);
                    return entry(Status::Startable, None, Some(self.now));
                }
                Now::NoPlacement => unplaceable = true,
                Now::NoRoom => {}
            }
        }

        // Nodes enough are free, but the job would run into a closedown.
        let closed = if free_now >= n {
            self.crossing(sets, end)
                .or(cut_off.then_some(Reason::PeriodEnd))
                .or_else(|| self.reserved_over(sets, end))
        } else {
            None
        };
        if reserve {
            let run = self.planned_secs(view);
            let start = self.reserve(usable, n as u32, run, unplaceable, cuts);
            self.guard_reserve(usable, n as u32, wall);
            // A job its period leaves no window for holds no nodes: under
            // EASY the next job gets the reservation.
            if start.is_some() || cuts.is_none() {
                self.reserved_any = true;
                if self.mode == Backfill::None {
                    self.blocked = true;
                }
            }
            if start.is_none() && cuts.is_some() {
                return entry(Status::Waiting, Some(Reason::PeriodEnd), None);
            }
            let reason = if unplaceable {
                Reason::Placement
            } else {
                closed.unwrap_or(Reason::Resources)
            };
            return entry(Status::Blocked, Some(reason), start);
        }
        let status = if free_now > 0 {
            Status::CannotBackfill
        } else {
            Status::Waiting
        };
        let reason = if unplaceable {
            Reason::Placement
        } else if let Some(reason) = closed {
            reason
        } else if n <= free_now {
            Reason::Reservation
        } else {
            Reason::Resources
        };
        entry(status, Some(reason), None)
    }

    /// Takes `n` nodes now if they stay free until `end` in the profiles
    /// (and until `wall_end` in EASY++'s guard).
    /// A set with a topology must place the job as a whole (its allocator
    /// gives a concrete placement or nothing); flat sets are tried by
    /// SDSC's rule: the exclusive set with the fewest free nodes that holds
    /// the whole job (keeping big holes for big jobs), else the shared set
    /// whose least busy nodes are least busy (NCAR), else spread over the
    /// flat sets in order.
    ///
    /// A job that is `promised` (it gets a reservation if it cannot start)
    /// is placed on any free nodes its set's topology could give it, not
    /// only on those the allocator's bookkeeping holds as one piece
    /// ([`Allocator::allocate_promised`]): that is where the reservation
    /// an earlier pass gave it lies.
    ///
    /// [`Allocator::allocate_promised`]: qmesh_alloc::Allocator::allocate_promised
    fn start_now(
        &mut self,
        sets: &[usize],
        n: usize,
        end: Secs,
        wall_end: Secs,
        promised: bool,
        wants: Option<&Wants<'a>>,
    ) -> Now {
        let now = self.now_s;
        let mut unplaceable = false;
        // A placement exists, but only on nodes a reservation needs.
        let mut in_the_way = false;
        // Ties go to the set first in the queue's (or node group's) order.
        let mut shaped: Vec<(usize, usize)> = sets
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, s)| self.sets[s].shaped() && self.sets[s].free > 0)
            .collect();
        shaped.sort_by_key(|&(order, s)| (self.sets[s].free, order));
        // A job that names hosts or wants them packed or scattered may
        // use a topology's allocator only where any node serves it alike.
        // Where it names nodes, or nodes to avoid, it gets nodes chosen one
        // by one whatever their shape (with the flat sets, below): a user
        // who names nodes knows them.
        let mut pinned_shaped: Vec<usize> = Vec::new();
        if let Some(wants) = wants {
            let pins = wants.pins.iter().any(Option::is_some) || !wants.avoid.is_empty();
            shaped.retain(|&(_, s)| {
                let alike = self.indifferent(s, wants);
                if !alike && pins {
                    pinned_shaped.push(s);
                }
                alike
            });
        }
        for (_, s) in shaped {
            let set = &mut self.sets[s];
            let Some(size) = set.allocator.as_ref().and_then(|a| a.size_for(n as u32)) else {
                continue;
            };
            let size = size as usize;
            if set.free < size || set.profile.min_over(now, end) < size as i64 {
                continue;
            }
            if self.guard_room(s, wall_end) < size {
                continue;
            }
            let set = &mut self.sets[s];
            let placement =
                match set.allocate_clear_of_reservations(now, n as u32, wall_end, promised) {
                    Fit::Yes(placement) => placement,
                    Fit::InTheWay => {
                        in_the_way = true;
                        continue;
                    }
                    Fit::No => {
                        unplaceable = true;
                        continue;
                    }
                };
            set.releases.push(Release {
                end,
                nodes: placement.nodes.clone(),
            });
            let base = set.nodes.start;
            let mut nodes: Vec<usize> =
                placement.nodes.iter().map(|&i| base + i as usize).collect();
            nodes.sort_unstable();
            for &i in &nodes {
                if self.free.get(i) {
                    self.free.set(i, false);
                    set.free -= 1;
                }
            }
            set.profile.add(now, end, -(nodes.len() as i64));
            return Now::Started(nodes, placement.parts);
        }

        // In the queue's (or node group's) order.
        let caps: Vec<(usize, usize)> = sets
            .iter()
            .filter_map(|&s| {
                let set = &mut self.sets[s];
                if (set.shaped() && !pinned_shaped.contains(&s)) || set.free == 0 {
                    return None;
                }
                let window = set.profile.min_over(now, end).max(0) as usize;
                let mut cap = window.min(set.free);
                if self.guard.is_some() {
                    cap = cap.min(self.guard_room(s, wall_end));
                }
                let set = &mut self.sets[s];
                if !set.held.is_empty() {
                    let held = set.held_over(now, wall_end);
                    let clear = self
                        .free
                        .ones(set.nodes.start, set.nodes.end)
                        .filter(|i| !held.contains(i))
                        .count();
                    cap = cap.min(clear);
                }
                if set.shared() {
                    // One slot per node: as many nodes as have room.
                    cap = cap.min(self.free.ones(set.nodes.start, set.nodes.end).count());
                }
                Some((s, cap))
            })
            .collect();
        if caps.iter().map(|(_, c)| c).sum::<usize>() < n {
            return if unplaceable && !in_the_way {
                Now::NoPlacement
            } else {
                Now::NoRoom
            };
        }
        if let Some(wants) = wants {
            return self.start_chosen(&caps, end, wants);
        }
        let whole = || caps.iter().enumerate().filter(|(_, (_, cap))| *cap >= n);
        let exclusive = whole()
            .filter(|(_, (s, _))| !self.sets[*s].shared())
            .min_by_key(|(order, (s, _))| (self.sets[*s].free, *order));
        let shared = || {
            whole()
                .filter(|(_, (s, _))| self.sets[*s].shared())
                .map(|(order, c)| {
                    // How busy the busiest of the n nodes it would take is.
                    let busiest = self
                        .least_busy(c.0)
                        .get(n - 1)
                        .map_or(f64::INFINITY, |&(busy, _, _)| busy);
                    (busiest, order, c)
                })
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
                .map(|(_, order, c)| (order, c))
        };
        let take: Vec<(usize, usize)> = match exclusive.or_else(shared).map(|(_, c)| c) {
            Some(&(s, _)) => vec![(s, n)],
            None => {
                let mut left = n;
                caps.iter()
                    .filter_map(|&(s, cap)| {
                        let k = cap.min(left);
                        left -= k;
                        (k > 0).then_some((s, k))
                    })
                    .collect()
            }
        };
        // Taken from one set (the common case), its nodes are the list.
        let mut nodes: Vec<usize> = Vec::new();
        for (s, k) in take {
            if self.sets[s].shared() {
                let picked = self.take_least_busy(s, k);
                nodes.extend(picked);
            } else if !self.sets[s].held.is_empty() {
                let set = &self.sets[s];
                let held = set.held_over(now, wall_end);
                let picked: Vec<usize> = self
                    .free
                    .ones(set.nodes.start, set.nodes.end)
                    .filter(|i| !held.contains(i))
                    .take(k)
                    .collect();
                for &i in &picked {
                    self.free.set(i, false);
                }
                nodes.extend(picked);
            } else {
                let range = &self.sets[s].nodes;
                let picked = self.free.take_first(range.start, range.end, k);
                if nodes.is_empty() {
                    nodes = picked;
                } else {
                    nodes.extend(picked);
                }
            }
            self.sets[s].take(now, end, k);
        }
        Now::Started(nodes, Vec::new())
    }

    /// Whether set `s`'s allocator may place a job that `wants` more than
    /// nodes: every node of the set serves it alike.
    fn indifferent(&self, s: usize, wants: &Wants) -> bool {
        let set = &self.state.node_sets()[s];
        let host = set.nodes.first().map(|n| n.host.as_str());
        let one_host = host.filter(|h| set.nodes.iter().all(|n| n.host == *h));
        // Its first node is one of the set's: all must have what it
        // uses up there (the set is homogeneous, and not shared).
        let first = self.effective_has(s, &wants.first_node);
        let avoided = || set.nodes.iter().any(|n| wants.avoids(&n.name, &n.host));
        first
            && !avoided()
            && wants.indifferent_on(one_host, |pin| {
                set.nodes.iter().all(|n| pin.admits(&n.name, &n.host))
            })
    }

    /// Whether the nodes of set `s` have the resources (each node its
    /// node set's `resources_available`).
    pub(super) fn effective_has(&self, s: usize, resources: &[&HostResource]) -> bool {
        let have = &self.state.effective_attrs(s).resources;
        resources
            .iter()
            .all(|r| r.served_by(have.get(&r.name).map(String::as_str)))
    }
}
