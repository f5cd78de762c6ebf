//! The availability profile of one node set: how many nodes are free from
//! each instant on, once running jobs end and reservations begin.
//!
//! Backfilling asks two questions of it, for every pending job: "are `n`
//! nodes free for the whole of `[now, now + d)`?" and "what is the earliest
//! `t` with `n` nodes free for `[t, t + d)`?". A sorted list answers them
//! in O(breakpoints), which makes a conservative pass over 100,000 jobs
//! quadratic: this is why Slurm stops after `bf_max_job_test` jobs. So a
//! long profile lives in a treap (a balanced search tree, `treap`) whose
//! nodes also keep their subtree's minimum and maximum and a pending
//! addition, and each question and each reservation costs
//! O(log breakpoints). But a profile is mostly short (a real log's
//! conservative replay keeps a few hundred breakpoints), and there the
//! sorted list (`steps`) is several times faster: a profile begins as a
//! list and becomes a treap once it passes [`LIST_MAX`] breakpoints. Both
//! give the same answers (a property test holds them to a per-second
//! list); only the cost differs.
//!
//! A breakpoint at `t` with value `v` means `v` nodes are free from `t`
//! until the next breakpoint. The first breakpoint is the profile's start.

mod steps;
mod treap;

use steps::Steps;
use treap::Treap;

/// Instants are whole seconds (Unix time); the end of time is `i64::MAX`.
pub type Secs = i64;

/// Beyond every finite instant.
pub const FOREVER: Secs = i64::MAX;

/// The longest a profile stays a sorted list. Past this a treap's
/// O(log n) beats the list's contiguous O(n) (measured on conservative
/// replays and `qmesh-bench pass`; see docs/PERFORMANCE.md).
pub const LIST_MAX: usize = 1024;

#[derive(Clone, Debug)]
pub struct Profile {
    repr: Repr,
}

#[derive(Clone, Debug)]
enum Repr {
    List(Steps),
    Tree(Treap),
}

impl Profile {
    /// `free` nodes from `start` on.
    pub fn new(start: Secs, free: i64) -> Profile {
        Profile::of_steps(start, vec![(start, free)])
    }

    /// `free` nodes from `start` on, and `more` nodes from each given
    /// instant on (running jobs ending), built in one go: O(n), where
    /// adding them one by one costs O(n log n).
    pub fn with_releases(start: Secs, free: i64, releases: &mut [(Secs, i64)]) -> Profile {
        releases.sort_unstable();
        Profile::with_sorted_releases(start, free, releases)
    }

    /// [`Profile::with_releases`] for releases already sorted.
    pub fn with_sorted_releases(start: Secs, free: i64, releases: &[(Secs, i64)]) -> Profile {
        debug_assert!(releases.is_sorted());
        let mut steps: Vec<(Secs, i64)> = Vec::with_capacity(releases.len() + 1);
        steps.push((start, free));
        let mut value = free;
        for &(t, more) in releases.iter() {
            value += more;
            let t = t.max(start);
            match steps.last_mut() {
                Some(last) if last.0 == t => last.1 = value,
                _ => steps.push((t, value)),
            }
        }
        Profile::of_steps(start, steps)
    }

    fn of_steps(start: Secs, steps: Vec<(Secs, i64)>) -> Profile {
        let repr = if steps.len() > LIST_MAX {
            Repr::Tree(Treap::from_steps(start, &steps))
        } else {
            Repr::List(Steps::from_steps(steps))
        };
        Profile { repr }
    }

    /// Whether it has become a treap (it grew past [`LIST_MAX`]).
    pub fn is_tree(&self) -> bool {
        matches!(self.repr, Repr::Tree(_))
    }

    pub fn start(&self) -> Secs {
        match &self.repr {
            Repr::List(list) => list.start(),
            Repr::Tree(tree) => tree.start(),
        }
    }

    /// Adds `delta` free nodes over `[from, to)` (`to` may be [`FOREVER`]).
    /// `from` before the start counts from the start.
    pub fn add(&mut self, from: Secs, to: Secs, delta: i64) {
        let from = from.max(self.start());
        if from >= to || delta == 0 {
            return;
        }
        match &mut self.repr {
            Repr::List(list) if list.len() + 2 > LIST_MAX => {
                let tree = Treap::from_steps(list.start(), list.as_slice());
                self.repr = Repr::Tree(tree);
                self.add(from, to, delta);
            }
            Repr::List(list) => list.add(from, to, delta),
            Repr::Tree(tree) => tree.add(from, to, delta),
        }
    }

    /// Free nodes at `t` (the value of the last breakpoint at or before
    /// it; at the start for `t` before it).
    pub fn at(&mut self, t: Secs) -> i64 {
        let t = t.max(self.start());
        match &mut self.repr {
            Repr::List(list) => list.at(t),
            Repr::Tree(tree) => tree.at(t),
        }
    }

    /// The fewest nodes free at any instant of `[from, to)`.
    pub fn min_over(&mut self, from: Secs, to: Secs) -> i64 {
        let from = from.max(self.start());
        match &mut self.repr {
            Repr::List(list) => list.min_over(from, to),
            Repr::Tree(tree) => tree.min_over(from, to),
        }
    }

    /// The earliest instant at or after `from` from which `n` nodes stay
    /// free for `d` seconds; `None` if that never happens.
    pub fn earliest(&mut self, from: Secs, d: Secs, n: i64) -> Option<Secs> {
        let from = from.max(self.start());
        match &mut self.repr {
            Repr::List(list) => list.earliest(from, d, n),
            Repr::Tree(tree) => tree.earliest(from, d, n),
        }
    }

    /// The first breakpoint after `t`: when the free count next changes.
    pub fn next_after(&mut self, t: Secs) -> Option<Secs> {
        match &mut self.repr {
            Repr::List(list) => list.next_after(t),
            Repr::Tree(tree) => tree.next_after(t),
        }
    }

    /// Breakpoints `(t, free)` in time order.
    pub fn steps(&mut self) -> Vec<(Secs, i64)> {
        match &mut self.repr {
            Repr::List(list) => list.as_slice().to_vec(),
            Repr::Tree(tree) => tree.steps(),
        }
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::List(list) => list.len(),
            Repr::Tree(tree) => tree.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The same profile as a plain list of per-second values.
    struct Naive {
        start: Secs,
        values: Vec<i64>,
    }

    impl Naive {
        fn add(&mut self, from: Secs, to: Secs, d: i64) {
            for t in from.max(self.start)..to.min(self.start + self.values.len() as i64) {
                self.values[(t - self.start) as usize] += d;
            }
        }
        fn min_over(&self, from: Secs, to: Secs) -> i64 {
            (from..to)
                .map(|t| self.values[(t - self.start) as usize])
                .min()
                .unwrap_or(i64::MAX)
        }
        fn earliest(&self, from: Secs, d: Secs, n: i64, horizon: Secs) -> Option<Secs> {
            (from..horizon).find(|&t| self.min_over(t, t + d) >= n)
        }
    }

    #[test]
    fn running_jobs_ending_free_their_nodes() {
        // The ANL example: 8 free now; B's 64 at 60, A's 32 at 120, C's 24 at 180.
        let mut p = Profile::new(0, 8);
        p.add(60, FOREVER, 64);
        p.add(120, FOREVER, 32);
        p.add(180, FOREVER, 24);
        assert_eq!(p.earliest(0, 120, 32), Some(60), "D waits for B");
        p.add(60, 180, -32);
        assert_eq!(p.earliest(0, 30, 4), Some(0), "G fits before D");
        assert_eq!(
            p.min_over(0, 480),
            8,
            "an 8-node job may run past D's start"
        );
        assert_eq!(p.earliest(0, 120, 16), Some(60), "E only when B ends");
        assert_eq!(p.steps(), vec![(0, 8), (60, 40), (120, 72), (180, 128)]);
    }

    #[test]
    fn built_in_one_go_equals_built_step_by_step() {
        let mut releases: Vec<(Secs, i64)> =
            (0..200).map(|i| ((i * 7919) % 500, 1 + i % 3)).collect();
        let mut one_by_one = Profile::new(0, 5);
        for &(t, k) in &releases {
            one_by_one.add(t, FOREVER, k);
        }
        let mut built = Profile::with_releases(0, 5, &mut releases);
        assert_eq!(built.steps(), one_by_one.steps());
        built.add(100, 300, -7);
        one_by_one.add(100, 300, -7);
        assert_eq!(built.steps(), one_by_one.steps());
        assert_eq!(built.earliest(0, 50, 200), one_by_one.earliest(0, 50, 200));
    }

    /// A profile that is a treap from the start, however short.
    fn tree(start: Secs, free: i64) -> Profile {
        Profile {
            repr: Repr::Tree(Treap::from_steps(start, &[(start, free)])),
        }
    }

    #[test]
    fn a_long_list_becomes_a_treap_and_answers_alike() {
        let mut grown = Profile::new(0, 50);
        let mut tree = tree(0, 50);
        for i in 0..(LIST_MAX as i64) {
            let (from, to, d) = (i * 3, i * 3 + 1 + (i * 7919) % 300, -(i % 5));
            grown.add(from, to, d);
            tree.add(from, to, d);
        }
        assert!(grown.is_tree(), "{} breakpoints", grown.len());
        assert_eq!(grown.steps(), tree.steps());
        for (from, d, n) in [(0, 100, 10), (70, 3000, 30), (4000, 5, 48)] {
            assert_eq!(grown.earliest(from, d, n), tree.earliest(from, d, n));
            assert_eq!(
                grown.min_over(from, from + d),
                tree.min_over(from, from + d)
            );
            assert_eq!(grown.next_after(from), tree.next_after(from));
        }
    }

    proptest! {
        #[test]
        fn agrees_with_a_per_second_list(
            start_free in 0i64..20,
            ops in prop::collection::vec((0i64..60, 1i64..30, -5i64..6), 0..25),
            queries in prop::collection::vec((0i64..60, 1i64..30, 0i64..25), 1..10),
        ) {
            const H: Secs = 200;
            let mut list = Profile::new(0, start_free);
            let mut tree = tree(0, start_free);
            let mut naive = Naive { start: 0, values: vec![start_free; H as usize] };
            for (from, len, d) in ops {
                list.add(from, from + len, d);
                tree.add(from, from + len, d);
                naive.add(from, from + len, d);
            }
            prop_assert!(!list.is_tree());
            prop_assert_eq!(list.steps(), tree.steps());
            for (from, d, n) in queries {
                for p in [&mut list, &mut tree] {
                    prop_assert_eq!(p.min_over(from, from + d), naive.min_over(from, from + d));
                    prop_assert_eq!(p.at(from), naive.values[from as usize]);
                    // Past the last op (before 90) every value is start_free,
                    // so searching to 170 sees every answer.
                    prop_assert_eq!(p.earliest(from, d, n), naive.earliest(from, d, n, 170));
                }
                prop_assert_eq!(list.next_after(from), tree.next_after(from));
            }
        }
    }
}
