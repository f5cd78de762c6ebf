//! One node set as a pass sees it. The planner once kept this in ten
//! vectors indexed by set (profiles, free counts, nodes up, slots,
//! allocators, releases, placed reservations, hints, closedowns, first
//! node); a [`SetPlan`] holds one set's share of them, so what belongs
//! together is found together and each question about a set is a method.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::job::JobId;
use crate::reason::Reason;
use crate::scheduler::profile::{Profile, Secs};
use crate::state::State;
use qmesh_alloc::{Allocator, Placement};

/// One node set's working state for one pass.
pub(super) struct SetPlan {
    /// Its availability over time: free nodes now (slots on a shared set),
    /// plus the nodes of running jobs from the end of their wall time on,
    /// less what this pass has started, reserved and closed.
    pub profile: Profile,
    /// Its nodes free now: the state's, less what this pass has started.
    pub free: usize,
    /// Its nodes up.
    pub up: usize,
    /// The jobs each node runs at once (1: exclusive).
    pub slots: usize,
    /// Its nodes' indices in `State::nodes`.
    pub nodes: Range<usize>,
    /// Its topology's allocator holding what is taken now; `None` for a
    /// flat set, whose free nodes are simply counted.
    pub allocator: Option<Box<dyn Allocator>>,
    /// With an allocator: when the nodes of its running jobs (and of this
    /// pass's starts) come back. A reservation there is placed on the
    /// allocator as it will be then (see `place_window`).
    pub releases: Vec<Release>,
    /// With an allocator: the reservations placed there. A job started
    /// now keeps off the nodes of those it would still be running at.
    pub placed: Vec<Reservation>,
    /// By nodes then wall time, the last reservation's start. A pass only
    /// ever takes nodes from the profiles, so a job of at least as many
    /// nodes and as long a wall time cannot start earlier: its search
    /// begins there. Conservative passes rely on this to stay near linear
    /// (see `reserve`).
    hints: BTreeMap<i64, BTreeMap<Secs, Secs>>,
    /// The closedowns that close it. Their nodes are taken from the
    /// profile for their time (see `close`).
    pub closed: Vec<Closed>,
    /// On a flat set: the advance reservations' occurrences still to come
    /// (see `advance`). A start that would overlap one keeps off its nodes.
    pub held: Vec<super::advance::Held>,
    /// Every advance reservation's occurrence here, on any topology: what
    /// a job that cannot start is told it would cross.
    pub reserved: Vec<(Secs, Secs)>,
}

/// A running job's (or this pass's start's) nodes in a set with a
/// topology, and when they come back.
#[derive(Clone)]
pub(super) struct Release {
    /// The end of its wall time.
    pub end: Secs,
    /// The set's own node indices.
    pub nodes: Vec<u32>,
}

/// A window reserved for a job: `[start, end)` in one set.
#[derive(Clone)]
pub(super) struct Reservation {
    pub start: Secs,
    pub end: Secs,
    /// The set, by index.
    pub set: usize,
    /// What it takes from the set's profile: nodes (slots on a shared
    /// set), as the set's topology rounds the request.
    pub size: i64,
    /// The placed nodes, on a set with a topology (see `place_window`);
    /// `None` where the window was counted.
    pub nodes: Option<Vec<u32>>,
}

/// A closedown's time in one set: `[from, to)` and its reason.
#[derive(Clone, Copy)]
pub(super) struct Closed {
    pub from: Secs,
    pub to: Secs,
    pub reason: Reason,
}

/// What a set with a topology answered for a job to start now.
pub(super) enum Fit {
    Yes(Placement),
    /// It could be placed, but only on nodes a reservation needs.
    InTheWay,
    No,
}

impl Clone for SetPlan {
    fn clone(&self) -> Self {
        SetPlan {
            profile: self.profile.clone(),
            free: self.free,
            up: self.up,
            slots: self.slots,
            nodes: self.nodes.clone(),
            allocator: self.allocator.as_ref().map(|a| a.boxed_clone()),
            releases: self.releases.clone(),
            placed: self.placed.clone(),
            hints: self.hints.clone(),
            closed: self.closed.clone(),
            held: self.held.clone(),
            reserved: self.reserved.clone(),
        }
    }
}

impl SetPlan {
    /// A set with a topology: its allocator places jobs, counting is not
    /// enough.
    #[inline]
    pub fn shaped(&self) -> bool {
        self.allocator.is_some()
    }

    /// A shared set (`jobs_per_node` over 1): its profile counts slots.
    #[inline]
    pub fn shared(&self) -> bool {
        self.slots > 1
    }

    /// How much of the profile a request for `n` nodes takes here: `n`, or
    /// more where the topology rounds up (a torus: a power of two); `None`
    /// if the topology can never place it.
    #[inline]
    pub fn size_for(&self, n: u32) -> Option<i64> {
        match &self.allocator {
            Some(a) => a.size_for(n).map(i64::from),
            None => Some(i64::from(n)),
        }
    }

    /// Takes `k` of its free nodes (or slots) now, until `end`.
    #[inline]
    pub fn take(&mut self, now: Secs, end: Secs, k: usize) {
        self.free = self.free.saturating_sub(k);
        self.profile.add(now, end, -(k as i64));
    }

    /// Closes it from `from` to `to`: every slot of its nodes up is taken.
    pub fn close(&mut self, from: Secs, to: Secs, reason: Reason) {
        // No set has more free slots than its nodes up have.
        self.profile.add(from, to, -((self.up * self.slots) as i64));
        self.closed.push(Closed { from, to, reason });
    }

    /// The latest start of a reservation made here for a job no larger and
    /// no longer: the earliest one of `n` nodes for `wall` could start.
    #[inline]
    pub fn hint(&self, n: i64, wall: Secs) -> Secs {
        self.hints
            .range(..=n)
            .filter_map(|(_, by_wall)| by_wall.range(..=wall).next_back().map(|(_, &t)| t))
            .max()
            .unwrap_or(Secs::MIN)
    }

    /// Remembers a reservation's start for the next search (`hint`).
    #[inline]
    pub fn remember(&mut self, n: i64, wall: Secs, start: Secs) {
        self.hints.entry(n).or_default().insert(wall, start);
    }

    /// Places `n` nodes now for a job that runs until `end`, off the nodes
    /// of every reservation placed here that begins before it ends; as a
    /// `promised` job if it is one (see `start_now`).
    pub fn allocate_clear_of_reservations(
        &mut self,
        now: Secs,
        n: u32,
        end: Secs,
        promised: bool,
    ) -> Fit {
        let place = |a: &mut dyn Allocator| {
            if promised {
                a.allocate_promised(n)
            } else {
                a.allocate(n)
            }
        };
        let in_the_way: Vec<&Vec<u32>> = placed_over(&self.placed, now, end).collect();
        let Some(allocator) = self.allocator.as_mut() else {
            return Fit::No;
        };
        if in_the_way.is_empty() {
            return place(allocator.as_mut()).map_or(Fit::No, Fit::Yes);
        }
        let mut clear = allocator.boxed_clone();
        for nodes in in_the_way {
            occupy(clear.as_mut(), nodes);
        }
        match place(clear.as_mut()) {
            Some(placement) if allocator.occupy(&placement.nodes).is_ok() => Fit::Yes(placement),
            Some(_) => Fit::No,
            None if place(allocator.boxed_clone().as_mut()).is_some() => Fit::InTheWay,
            None => Fit::No,
        }
    }
}

impl SetPlan {
    /// On a flat set, the nodes of the advance reservations a job running
    /// over `[from, to)` must keep off (none, mostly: no allocation then).
    pub fn held_over(&self, from: Secs, to: Secs) -> Vec<usize> {
        self.held
            .iter()
            .filter(|h| h.start < to && from < h.end)
            .flat_map(|h| h.nodes.iter().copied())
            .collect()
    }
}

/// The nodes of the reservations of `placed` that overlap `[from, to)`.
pub(super) fn placed_over(
    placed: &[Reservation],
    from: Secs,
    to: Secs,
) -> impl Iterator<Item = &Vec<u32>> {
    placed
        .iter()
        .filter(move |r| r.start < to && from < r.end)
        .filter_map(|r| r.nodes.as_ref())
}

/// Takes `nodes` on `allocator`: together if it can (as they were placed),
/// else those still free one by one.
pub(super) fn occupy(allocator: &mut dyn Allocator, nodes: &[u32]) {
    if allocator.occupy(nodes).is_err() {
        for &node in nodes {
            let _ = allocator.occupy(&[node]);
        }
    }
}

/// Every set of the state as a pass begins: its profile from the free
/// nodes and the ends of the running jobs (`end_of`), its allocator and
/// releases where it has a topology.
pub(super) fn set_plans(state: &State, now: Secs, end_of: impl Fn(JobId) -> Secs) -> Vec<SetPlan> {
    let sets = state.node_sets();
    let occupancy = state.occupancy();
    // Per set, when the nodes of running jobs come free: one entry per
    // job and set.
    let mut ends: Vec<Vec<(Secs, i64)>> = vec![Vec::new(); sets.len()];
    for (&id, held) in &occupancy.held {
        if held.up_in.is_empty() {
            continue;
        }
        let end = end_of(id);
        for &(set, count) in &held.up_in {
            ends[set].push((end, count as i64));
        }
    }
    let (allocators, base) = allocators_of(state);
    let mut releases: Vec<Vec<Release>> = (0..sets.len()).map(|_| Vec::new()).collect();
    if allocators.iter().any(Option::is_some) {
        let nodes = state.nodes();
        for (&id, held) in &occupancy.held {
            let end = end_of(id);
            for &(set, _) in held.up_in.iter().filter(|(s, _)| allocators[*s].is_some()) {
                let local: Vec<u32> = held
                    .nodes
                    .iter()
                    .filter(|&&i| nodes[i].set == set && nodes[i].usable())
                    .map(|&i| (i - base[set]) as u32)
                    .collect();
                releases[set].push(Release { end, nodes: local });
            }
        }
    }
    allocators
        .into_iter()
        .zip(releases)
        .enumerate()
        .map(|(s, (allocator, releases))| {
            let free = state.occupancy().free_in[s] as i64;
            let profile = Profile::with_releases(now, free, &mut ends[s]);
            SetPlan::at_start(state, s, profile, base[s], allocator, releases)
        })
        .collect()
}

/// [`set_plans`] for sets that all have no topology, from when the
/// nodes of their running jobs come back (`ends`, per set, sorted), as
/// the caller already worked them out (a kept plan compares them: see
/// `kept`).
pub(super) fn counted_set_plans(
    state: &State,
    now: Secs,
    ends: &[Vec<(Secs, i64)>],
) -> Vec<SetPlan> {
    let mut base = 0;
    state
        .node_sets()
        .iter()
        .zip(ends)
        .enumerate()
        .map(|(s, (set, ends))| {
            debug_assert!(matches!(set.topology, crate::node::Topology::Flat));
            let free = state.occupancy().free_in[s] as i64;
            let profile = Profile::with_sorted_releases(now, free, ends);
            let plan = SetPlan::at_start(state, s, profile, base, None, Vec::new());
            base += set.nodes.len();
            plan
        })
        .collect()
}

impl SetPlan {
    /// Set `s` as a pass begins: its free nodes now, and its `profile`
    /// (those and when running jobs give nodes back); `base` is the index
    /// of its first node.
    fn at_start(
        state: &State,
        s: usize,
        profile: Profile,
        base: usize,
        allocator: Option<Box<dyn Allocator>>,
        releases: Vec<Release>,
    ) -> SetPlan {
        let set = &state.node_sets()[s];
        let free = state.occupancy().free_in[s];
        SetPlan {
            profile,
            free,
            up: state.up_per_set()[s],
            slots: set.attrs.slots() as usize,
            nodes: base..base + set.nodes.len(),
            allocator,
            releases,
            placed: Vec::new(),
            hints: BTreeMap::new(),
            closed: Vec::new(),
            held: Vec::new(),
            reserved: Vec::new(),
        }
    }
}

/// Each set's allocator, holding the nodes of running jobs and the nodes
/// down; and the index of each set's first node.
fn allocators_of(state: &State) -> (Vec<Option<Box<dyn Allocator>>>, Vec<usize>) {
    let sets = state.node_sets();
    let mut base = Vec::with_capacity(sets.len());
    let mut next = 0;
    for set in sets {
        base.push(next);
        next += set.nodes.len();
    }
    let mut allocators: Vec<Option<Box<dyn Allocator>>> = sets
        .iter()
        .map(|set| set.topology.allocator().ok().flatten())
        .collect();
    if allocators.iter().all(Option::is_none) {
        return (allocators, base);
    }
    // Taken nodes per set, grouped by job (a job's nodes are occupied
    // together, the way they were placed).
    let mut taken: Vec<BTreeMap<Option<JobId>, Vec<u32>>> = vec![BTreeMap::new(); sets.len()];
    for (idx, node) in state.nodes().iter().enumerate() {
        if allocators[node.set].is_none() || node.is_free() {
            continue;
        }
        let owner = if node.usable() { node.job() } else { None };
        taken[node.set]
            .entry(owner)
            .or_default()
            .push((idx - base[node.set]) as u32);
    }
    for (s, groups) in taken.into_iter().enumerate() {
        let Some(allocator) = allocators[s].as_mut() else {
            continue;
        };
        for (owner, nodes) in groups {
            if owner.is_none() || allocator.occupy(&nodes).is_err() {
                // Down nodes, or a job placed before this allocator knew
                // the set: take them one by one.
                for node in nodes {
                    let _ = allocator.occupy(&[node]);
                }
            }
        }
    }
    (allocators, base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::{Topology, TorusConversion, TorusPartition};

    /// A set of `up` nodes all free at time 0, `slots` jobs per node.
    fn set(up: usize, slots: usize, allocator: Option<Box<dyn Allocator>>) -> SetPlan {
        SetPlan {
            profile: Profile::new(0, (up * slots) as i64),
            free: up * slots,
            up,
            slots,
            nodes: 0..up,
            allocator,
            releases: Vec::new(),
            placed: Vec::new(),
            hints: BTreeMap::new(),
            closed: Vec::new(),
            held: Vec::new(),
            reserved: Vec::new(),
        }
    }

    #[test]
    fn a_flat_set_counts_nodes_and_a_torus_rounds_up() {
        assert_eq!(set(8, 1, None).size_for(5), Some(5));
        let torus = Topology::Torus {
            dims: vec![2, 2, 2],
            partition: TorusPartition::Nep,
            conversion: TorusConversion::Merge,
        };
        let on_torus = set(8, 1, torus.allocator().unwrap());
        assert!(on_torus.shaped() && !on_torus.shared());
        assert_eq!(on_torus.size_for(3), Some(4), "a torus gives powers of two");
        assert_eq!(on_torus.size_for(9), None, "more than the set holds");
    }

    #[test]
    fn taking_nodes_leaves_the_profile_short_until_they_come_back() {
        let mut s = set(10, 1, None);
        s.take(0, 100, 4);
        assert_eq!(s.free, 6);
        assert_eq!(s.profile.at(50), 6);
        assert_eq!(s.profile.at(100), 10);
    }

    #[test]
    fn a_closedown_takes_every_slot_of_the_nodes_up_for_its_time() {
        let mut s = set(4, 2, None);
        assert!(s.shared());
        s.close(10, 20, Reason::Shutdown);
        assert_eq!(s.profile.at(5), 8);
        assert_eq!(s.profile.min_over(10, 20), 0);
        assert_eq!(s.profile.at(20), 8);
        assert_eq!(s.closed.len(), 1);
        assert_eq!(s.closed[0].reason, Reason::Shutdown);
    }

    #[test]
    fn a_hint_is_the_latest_start_of_a_job_no_larger_and_no_longer() {
        let mut s = set(16, 1, None);
        assert_eq!(s.hint(4, 100), Secs::MIN, "nothing reserved yet");
        s.remember(4, 100, 50);
        s.remember(8, 200, 70);
        assert_eq!(s.hint(4, 100), 50);
        assert_eq!(s.hint(8, 200), 70);
        assert_eq!(s.hint(8, 150), 50, "the 8-node reservation was longer");
        assert_eq!(s.hint(2, 50), Secs::MIN, "both were larger");
    }

    #[test]
    fn a_start_keeps_off_the_nodes_of_a_reservation_it_would_overlap() {
        // A row of eight nodes, M2DB's mesh one node high: any count fits.
        let row = Topology::Mesh2d {
            width: 8,
            height: 1,
            contiguous: false,
        };
        let mut s = set(8, 1, row.allocator().unwrap());
        s.placed.push(Reservation {
            start: 10,
            end: 20,
            set: 0,
            size: 4,
            nodes: Some(vec![0, 1, 2, 3]),
        });
        // Running across the reservation: only the other four nodes.
        let Fit::Yes(placed) = s.allocate_clear_of_reservations(0, 4, 15, false) else {
            panic!("four nodes are clear of the reservation");
        };
        assert!(placed.nodes.iter().all(|n| *n >= 4), "{:?}", placed.nodes);
        // The free nodes left are the reserved ones: in the way until 20.
        assert!(matches!(
            s.allocate_clear_of_reservations(0, 2, 15, false),
            Fit::InTheWay
        ));
        // Ending before the reservation begins, a job may use them.
        assert!(matches!(
            s.allocate_clear_of_reservations(0, 2, 10, false),
            Fit::Yes(_)
        ));
    }

    #[test]
    fn placed_over_finds_the_reservations_a_window_overlaps() {
        let window = |start, end, nodes: Option<Vec<u32>>| Reservation {
            start,
            end,
            set: 0,
            size: 1,
            nodes,
        };
        let placed = [
            window(0, 10, Some(vec![1])),
            window(10, 20, Some(vec![2])),
            window(5, 15, None),
        ];
        let over: Vec<&Vec<u32>> = placed_over(&placed, 10, 12).collect();
        assert_eq!(
            over,
            [&vec![2]],
            "[0, 10) ended; a counted window has no nodes"
        );
    }
}
