//! Reservations: the earliest window of nodes for a job that cannot start
//! now, taken from its set's profile so that no later job delays it.
//!
//! On a flat set the window is counted. On a set with a topology the
//! nodes free at a time may be scattered, so the window is also placed on
//! the set's allocator as it will be then (`place_window`), and jobs
//! started now keep off its nodes.

use super::Planner;
use super::set_plan::{Release, Reservation, SetPlan, occupy, placed_over};
use crate::scheduler::profile::Secs;
use crate::state::NodeBits;
use crate::time::Time;

/// Reservations placed per set with a topology in one pass; the rest are
/// counted (see `reserve`).
const PLACED_PER_SET: usize = 32;

impl Planner<'_> {
    /// Reserves the earliest window of `n` nodes for `wall` seconds in one
    /// of the sets; returns its start. On a set with a topology the window
    /// is placed (`place_window`). On a flat set it is counted, and a job
    /// that could not be placed now elsewhere is not reserved before the
    /// free nodes next change (`later`).
    ///
    /// With `cuts` (per set, when the queue's jobs there are ended), only a
    /// window that ends by its set's cut is taken.
    pub(super) fn reserve(
        &mut self,
        sets: &[usize],
        n: u32,
        wall: Secs,
        later: bool,
        cuts: Option<&[Secs]>,
    ) -> Option<Time> {
        let now = self.now_s;
        let mut best: Option<Reservation> = None;
        for &s in sets {
            let set = &mut self.sets[s];
            // A topology may round the request up (a torus: a power of two).
            let Some(size) = set.size_for(n) else {
                continue;
            };
            if (set.up as i64) < size {
                continue;
            }
            let cut = cuts.map(|cuts| cuts[s]);
            // A long profile (a treap) or a placed window (an allocator copy
            // per instant tried) starts its search from the hint; on a
            // short one (a sorted list) scanning from now costs less than
            // looking the hint up (conservative replays, issue 31).
            let hinted = set.profile.is_tree() || set.shaped();
            let mut from = if hinted {
                set.hint(size, wall).max(now)
            } else {
                now
            };
            // Placing costs a copy of the allocator per instant tried; past
            // the first reservations of a set (conservative backfilling
            // with a long queue) they are counted, as estimates.
            let placed = set.shaped() && set.placed.len() < PLACED_PER_SET;
            let found = if placed {
                set.place_window(&self.free, now, n, size, wall, from, cut)
                    .map(|(t, nodes)| (t, Some(nodes)))
            } else {
                if later {
                    match set.profile.next_after(now) {
                        Some(next) => from = from.max(next),
                        None => continue,
                    }
                }
                set.profile
                    .earliest(from, wall, size)
                    .filter(|&t| cut.is_none_or(|cut| t.saturating_add(wall) <= cut))
                    .map(|t| (t, None))
            };
            if let Some((t, nodes)) = found
                && best.as_ref().is_none_or(|b| (t, s) < (b.start, b.set))
            {
                best = Some(Reservation {
                    start: t,
                    end: t.saturating_add(wall),
                    set: s,
                    size,
                    nodes,
                });
            }
        }
        let reservation = best?;
        let (start, set) = (reservation.start, &mut self.sets[reservation.set]);
        set.profile.add(start, reservation.end, -reservation.size);
        // Not a lower bound for others when it was counted and pushed past
        // `now`. Remembered only where searches use it: a hint left out
        // (a list that became a treap since) only starts a search earlier.
        let hinted = set.profile.is_tree() || set.shaped();
        if hinted && (reservation.nodes.is_some() || !later) {
            set.remember(reservation.size, wall, start);
        }
        if reservation.nodes.is_some() {
            set.placed.push(reservation);
        }
        chrono::DateTime::from_timestamp(start, 0)
    }
}

impl SetPlan {
    /// The earliest window of this set (which has a topology) where `n`
    /// nodes can be placed for `wall` seconds, ending by `cut`: its start
    /// and nodes. Counting is not enough there: the nodes free at a time
    /// may be scattered. So at each instant the profile allows, the set's
    /// allocator is taken as it will be then (the jobs that end by then
    /// gone, the reservations of the window in place) and asked for a
    /// placement; jobs started now keep off its nodes if they would still
    /// run then (`allocate_clear_of_reservations`), so it is not delayed.
    ///
    /// The placement is the one a promised job gets
    /// ([`Allocator::allocate_promised`]), so it depends only on which
    /// nodes are free then. The allocator the next pass rebuilds may be
    /// cut otherwise, but it finds these nodes free as long as the jobs
    /// started meanwhile keep off them: the promise holds.
    ///
    /// [`Allocator::allocate_promised`]: qmesh_alloc::Allocator::allocate_promised
    #[allow(clippy::too_many_arguments)]
    fn place_window(
        &mut self,
        free: &NodeBits,
        now: Secs,
        n: u32,
        size: i64,
        wall: Secs,
        from: Secs,
        cut: Option<Secs>,
    ) -> Option<(Secs, Vec<u32>)> {
        // The set's allocator as time goes on: running jobs give their
        // nodes back in the order they end.
        let mut future = self.allocator.as_ref()?.boxed_clone();
        let mut ending: Vec<&Release> = self.releases.iter().collect();
        ending.sort_by_key(|r| r.end);
        let mut ended = 0;
        let first = self.nodes.start;
        let free_now: Vec<u32> = free
            .ones(first, self.nodes.end)
            .map(|i| (i - first) as u32)
            .collect();
        let mut t = from;
        loop {
            t = self.profile.earliest(t, wall, size)?;
            let end = t.saturating_add(wall);
            if cut.is_some_and(|cut| end > cut) {
                return None;
            }
            while let Some(r) = ending.get(ended).filter(|r| r.end <= t) {
                future.release(&r.nodes);
                ended += 1;
            }
            // The reservations of the window hold their nodes.
            let mut then = future.boxed_clone();
            for nodes in placed_over(&self.placed, t, end) {
                occupy(then.as_mut(), nodes);
            }
            // Where it can, on nodes busy now: those free now stay free
            // for jobs to start on (backfilling, or later passes).
            if t > now && !free_now.is_empty() {
                let mut busy_first = then.boxed_clone();
                occupy(busy_first.as_mut(), &free_now);
                if let Some(placement) = busy_first.allocate_promised(n) {
                    return Some((t, placement.nodes));
                }
            }
            if let Some(placement) = then.allocate_promised(n) {
                return Some((t, placement.nodes));
            }
            t = self.profile.next_after(t)?;
        }
    }
}
