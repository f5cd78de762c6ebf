//! The availability profile as a treap (a balanced search tree) whose
//! nodes also keep their subtree's minimum and maximum and a pending
//! addition, so that each question and each reservation costs
//! O(log breakpoints): what a profile of thousands of breakpoints (a
//! conservative pass over a long queue) needs. See [`super::Profile`].

use super::{FOREVER, Secs};

const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Point {
    key: Secs,
    value: i64,
    /// Treap heap order.
    weight: u32,
    left: u32,
    right: u32,
    /// Over the subtree, after `add` below has been applied.
    min: i64,
    max: i64,
    /// Keys of the subtree span `[lo, hi]`.
    lo: Secs,
    hi: Secs,
    /// Still to be added to the children.
    add: i64,
}

#[derive(Clone, Debug)]
pub(super) struct Treap {
    points: Vec<Point>,
    root: u32,
    start: Secs,
    /// xorshift state for treap weights: deterministic, so plans are too.
    seed: u32,
}

impl Treap {
    /// The profile of `steps` (breakpoints in time order, the first at
    /// `start`), built in one go: O(n), where adding them one by one costs
    /// O(n log n).
    pub fn from_steps(start: Secs, steps: &[(Secs, i64)]) -> Treap {
        let mut profile = Treap {
            points: Vec::with_capacity(steps.len()),
            root: NIL,
            start,
            seed: 0x9e37_79b9,
        };
        for &(t, v) in steps {
            profile.alloc(t, v);
        }
        profile.root = profile.build(0, steps.len());
        profile
    }

    /// Links points `[lo, hi)` (in key order) into a balanced subtree and
    /// restores heap order on the weights by sifting down.
    fn build(&mut self, lo: usize, hi: usize) -> u32 {
        if lo >= hi {
            return NIL;
        }
        let mid = (lo + hi) / 2;
        let left = self.build(lo, mid);
        let right = self.build(mid + 1, hi);
        let node = mid as u32;
        self.points[mid].left = left;
        self.points[mid].right = right;
        self.sift_down(node);
        self.pull(node);
        node
    }

    fn sift_down(&mut self, mut node: u32) {
        loop {
            let p = &self.points[node as usize];
            let mut top = node;
            for child in [p.left, p.right] {
                if child != NIL
                    && self.points[child as usize].weight > self.points[top as usize].weight
                {
                    top = child;
                }
            }
            if top == node {
                return;
            }
            let w = self.points[node as usize].weight;
            self.points[node as usize].weight = self.points[top as usize].weight;
            self.points[top as usize].weight = w;
            node = top;
        }
    }

    /// Adds `delta` free nodes over `[from, to)` (`to` may be [`FOREVER`]).
    /// `from` before the start counts from the start.
    pub fn add(&mut self, from: Secs, to: Secs, delta: i64) {
        let from = from.max(self.start);
        if from >= to || delta == 0 {
            return;
        }
        self.ensure(from);
        if to != FOREVER {
            self.ensure(to);
        }
        let root = self.root;
        self.range_add(root, from, to, delta);
    }

    /// Free nodes at `t` (the value of the last breakpoint at or before it).
    pub fn at(&mut self, t: Secs) -> i64 {
        let mut node = self.root;
        let mut value = None;
        while node != NIL {
            self.push(node);
            let p = &self.points[node as usize];
            if p.key <= t {
                value = Some(p.value);
                node = p.right;
            } else {
                node = p.left;
            }
        }
        value.unwrap_or_else(|| self.points[self.root as usize].value)
    }

    /// The fewest nodes free at any instant of `[from, to)`.
    pub fn min_over(&mut self, from: Secs, to: Secs) -> i64 {
        let from = from.max(self.start);
        let first = self.at(from);
        let root = self.root;
        // Breakpoints strictly after `from` and before `to`.
        match from.checked_add(1) {
            Some(next) if next < to => first.min(self.range_min(root, next, to)),
            _ => first,
        }
    }

    /// The earliest instant at or after `from` from which `n` nodes stay
    /// free for `d` seconds; `None` if that never happens.
    pub fn earliest(&mut self, from: Secs, d: Secs, n: i64) -> Option<Secs> {
        let mut t = from.max(self.start);
        loop {
            if self.at(t) < n {
                let root = self.root;
                t = self.first_at_least(root, t, n)?;
            }
            let end = t.saturating_add(d.max(1));
            let root = self.root;
            // Jump past the last dip in the window, not the first: one step
            // skips every dip the window holds.
            match t
                .checked_add(1)
                .and_then(|next| self.last_below(root, next, end, n))
            {
                None => return Some(t),
                Some(dip) => t = dip,
            }
        }
    }

    /// The first breakpoint after `t`: when the free count next changes.
    pub fn next_after(&mut self, t: Secs) -> Option<Secs> {
        let root = self.root;
        self.first_at_least(root, t.checked_add(1)?, i64::MIN)
    }

    /// Breakpoints `(t, free)` in time order.
    pub fn steps(&mut self) -> Vec<(Secs, i64)> {
        let mut out = Vec::with_capacity(self.points.len());
        let root = self.root;
        self.collect(root, &mut out);
        out
    }

    pub fn start(&self) -> Secs {
        self.start
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    // --- the treap ---

    fn alloc(&mut self, key: Secs, value: i64) -> u32 {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 17;
        self.seed ^= self.seed << 5;
        self.points.push(Point {
            key,
            value,
            weight: self.seed,
            left: NIL,
            right: NIL,
            min: value,
            max: value,
            lo: key,
            hi: key,
            add: 0,
        });
        (self.points.len() - 1) as u32
    }

    fn apply(&mut self, node: u32, delta: i64) {
        if node == NIL {
            return;
        }
        let p = &mut self.points[node as usize];
        p.value += delta;
        p.min += delta;
        p.max += delta;
        p.add += delta;
    }

    fn push(&mut self, node: u32) {
        let (add, left, right) = {
            let p = &self.points[node as usize];
            (p.add, p.left, p.right)
        };
        if add != 0 {
            self.apply(left, add);
            self.apply(right, add);
            self.points[node as usize].add = 0;
        }
    }

    fn pull(&mut self, node: u32) {
        let (left, right) = {
            let p = &self.points[node as usize];
            (p.left, p.right)
        };
        let (mut min, mut max, mut lo, mut hi) = {
            let p = &self.points[node as usize];
            (p.value, p.value, p.key, p.key)
        };
        if left != NIL {
            let l = &self.points[left as usize];
            min = min.min(l.min);
            max = max.max(l.max);
            lo = l.lo;
        }
        if right != NIL {
            let r = &self.points[right as usize];
            min = min.min(r.min);
            max = max.max(r.max);
            hi = r.hi;
        }
        let p = &mut self.points[node as usize];
        p.min = min;
        p.max = max;
        p.lo = lo;
        p.hi = hi;
    }

    /// Splits into keys `< key` and keys `>= key`.
    fn split(&mut self, node: u32, key: Secs) -> (u32, u32) {
        if node == NIL {
            return (NIL, NIL);
        }
        self.push(node);
        if self.points[node as usize].key < key {
            let right = self.points[node as usize].right;
            let (a, b) = self.split(right, key);
            self.points[node as usize].right = a;
            self.pull(node);
            (node, b)
        } else {
            let left = self.points[node as usize].left;
            let (a, b) = self.split(left, key);
            self.points[node as usize].left = b;
            self.pull(node);
            (a, node)
        }
    }

    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.points[a as usize].weight > self.points[b as usize].weight {
            self.push(a);
            let right = self.points[a as usize].right;
            let merged = self.merge(right, b);
            self.points[a as usize].right = merged;
            self.pull(a);
            a
        } else {
            self.push(b);
            let left = self.points[b as usize].left;
            let merged = self.merge(a, left);
            self.points[b as usize].left = merged;
            self.pull(b);
            b
        }
    }

    /// Makes `t` a breakpoint, with the value in force at `t`.
    fn ensure(&mut self, t: Secs) {
        if t < self.start {
            return;
        }
        let value = self.at(t);
        let (left, right) = self.split(self.root, t);
        // `right` starts at `t` if `t` is already a breakpoint.
        let mut first = right;
        let mut exists = false;
        while first != NIL {
            self.push(first);
            let p = &self.points[first as usize];
            if p.left == NIL {
                exists = p.key == t;
                break;
            }
            first = p.left;
        }
        let middle = if exists { NIL } else { self.alloc(t, value) };
        let joined = self.merge(left, middle);
        self.root = self.merge(joined, right);
    }

    fn range_add(&mut self, node: u32, from: Secs, to: Secs, delta: i64) {
        if node == NIL {
            return;
        }
        let (lo, hi, key) = {
            let p = &self.points[node as usize];
            (p.lo, p.hi, p.key)
        };
        if hi < from || lo >= to {
            return;
        }
        if from <= lo && hi < to {
            self.apply(node, delta);
            return;
        }
        self.push(node);
        if from <= key && key < to {
            self.points[node as usize].value += delta;
        }
        let (left, right) = {
            let p = &self.points[node as usize];
            (p.left, p.right)
        };
        self.range_add(left, from, to, delta);
        self.range_add(right, from, to, delta);
        self.pull(node);
    }

    /// The least value among breakpoints in `[from, to)`; `i64::MAX` if none.
    fn range_min(&mut self, node: u32, from: Secs, to: Secs) -> i64 {
        if node == NIL {
            return i64::MAX;
        }
        let (lo, hi, key, min) = {
            let p = &self.points[node as usize];
            (p.lo, p.hi, p.key, p.min)
        };
        if hi < from || lo >= to {
            return i64::MAX;
        }
        if from <= lo && hi < to {
            return min;
        }
        self.push(node);
        let (left, right, value) = {
            let p = &self.points[node as usize];
            (p.left, p.right, p.value)
        };
        let mut best = if from <= key && key < to {
            value
        } else {
            i64::MAX
        };
        best = best.min(self.range_min(left, from, to));
        best.min(self.range_min(right, from, to))
    }

    /// The first breakpoint at or after `from` with at least `n` free.
    fn first_at_least(&mut self, node: u32, from: Secs, n: i64) -> Option<Secs> {
        if node == NIL {
            return None;
        }
        let (hi, max) = {
            let p = &self.points[node as usize];
            (p.hi, p.max)
        };
        if hi < from || max < n {
            return None;
        }
        self.push(node);
        let (left, right, key, value) = {
            let p = &self.points[node as usize];
            (p.left, p.right, p.key, p.value)
        };
        if key >= from {
            if let Some(t) = self.first_at_least(left, from, n) {
                return Some(t);
            }
            if value >= n {
                return Some(key);
            }
        }
        self.first_at_least(right, from, n)
    }

    /// The last breakpoint in `[from, to)` with fewer than `n` free.
    fn last_below(&mut self, node: u32, from: Secs, to: Secs, n: i64) -> Option<Secs> {
        if node == NIL {
            return None;
        }
        let (lo, hi, min) = {
            let p = &self.points[node as usize];
            (p.lo, p.hi, p.min)
        };
        if hi < from || lo >= to || min >= n {
            return None;
        }
        self.push(node);
        let (left, right, key, value) = {
            let p = &self.points[node as usize];
            (p.left, p.right, p.key, p.value)
        };
        if key < to {
            if let Some(t) = self.last_below(right, from, to, n) {
                return Some(t);
            }
            if key >= from && value < n {
                return Some(key);
            }
            if key < from {
                return None;
            }
        }
        self.last_below(left, from, to, n)
    }

    fn collect(&mut self, node: u32, out: &mut Vec<(Secs, i64)>) {
        if node == NIL {
            return;
        }
        self.push(node);
        let (left, right, key, value) = {
            let p = &self.points[node as usize];
            (p.left, p.right, p.key, p.value)
        };
        self.collect(left, out);
        out.push((key, value));
        self.collect(right, out);
    }
}
