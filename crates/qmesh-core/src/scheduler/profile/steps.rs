//! The availability profile as a plain sorted list of breakpoints. Each
//! question is a binary search and a scan, each reservation an insertion:
//! O(breakpoints), but over a few contiguous cache lines. A conservative
//! pass replaying a real log (tens of running jobs, tens to hundreds of
//! waiting ones) keeps a few hundred breakpoints, where this is several
//! times faster than the treap's pointer chasing; [`super::Profile`] moves
//! to the treap when the list grows long.

use super::{FOREVER, Secs};

#[derive(Clone, Debug)]
pub(super) struct Steps {
    /// `(t, free)` in strictly increasing `t`; the first is the start.
    steps: Vec<(Secs, i64)>,
}

impl Steps {
    /// `steps` in time order, the first at the profile's start.
    pub fn from_steps(steps: Vec<(Secs, i64)>) -> Steps {
        debug_assert!(!steps.is_empty() && steps.windows(2).all(|w| w[0].0 < w[1].0));
        Steps { steps }
    }

    pub fn start(&self) -> Secs {
        self.steps[0].0
    }

    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn as_slice(&self) -> &[(Secs, i64)] {
        &self.steps
    }

    /// The index of the last breakpoint at or before `t` (the first if
    /// `t` is before the start).
    #[inline]
    fn index_at(&self, t: Secs) -> usize {
        self.steps
            .partition_point(|&(k, _)| k <= t)
            .saturating_sub(1)
    }

    /// Makes `t` (not before the start) a breakpoint; its index.
    #[inline]
    fn ensure(&mut self, t: Secs) -> usize {
        let i = self.steps.partition_point(|&(k, _)| k < t);
        if self.steps.get(i).is_some_and(|&(k, _)| k == t) {
            return i;
        }
        let value = self.steps[i.saturating_sub(1)].1;
        self.steps.insert(i, (t, value));
        i
    }

    /// See [`super::Profile::add`]; `from` is not before the start and
    /// before `to`.
    pub fn add(&mut self, from: Secs, to: Secs, delta: i64) {
        let i = self.ensure(from);
        let j = if to == FOREVER {
            self.steps.len()
        } else {
            self.ensure(to)
        };
        for step in &mut self.steps[i..j] {
            step.1 += delta;
        }
    }

    pub fn at(&self, t: Secs) -> i64 {
        self.steps[self.index_at(t)].1
    }

    /// See [`super::Profile::min_over`]; `from` is not before the start.
    pub fn min_over(&self, from: Secs, to: Secs) -> i64 {
        let i = self.index_at(from);
        self.steps[i + 1..]
            .iter()
            .take_while(|&&(k, _)| k < to)
            .fold(self.steps[i].1, |m, &(_, v)| m.min(v))
    }

    /// See [`super::Profile::earliest`]; `from` is not before the start.
    pub fn earliest(&self, from: Secs, d: Secs, n: i64) -> Option<Secs> {
        let steps = &self.steps[..];
        let mut i = self.index_at(from);
        let mut t = from;
        loop {
            if steps[i].1 < n {
                i += 1 + steps[i + 1..].iter().position(|&(_, v)| v >= n)?;
                t = steps[i].0;
            }
            let end = t.saturating_add(d.max(1));
            let past = i + 1 + steps[i + 1..].partition_point(|&(k, _)| k < end);
            // Jump past the last dip in the window, not the first: one
            // step skips every dip the window holds.
            match steps[i + 1..past].iter().rposition(|&(_, v)| v < n) {
                None => return Some(t),
                Some(dip) => {
                    i += 1 + dip;
                    t = steps[i].0;
                }
            }
        }
    }

    /// The first breakpoint after `t`.
    pub fn next_after(&self, t: Secs) -> Option<Secs> {
        let i = self.steps.partition_point(|&(k, _)| k <= t);
        self.steps.get(i).map(|&(k, _)| k)
    }
}
