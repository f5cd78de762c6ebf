//! Which blocks of the buddy tree are free, taken or split now, and the
//! moves between those states: split, take, give back and merge.
//!
//! Kept apart from the allocation steps so that the tree (shared, read
//! only) and this state (per copy) are borrowed separately: every method
//! takes the tree as an argument.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::tree::{NONE, Rect, Tree};
use crate::{Part, Placement};

/// What a block of the buddy tree is now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum State {
    /// Inside a free or taken block: not a block of its own now.
    Covered,
    /// A free block (its parent is not free).
    Free,
    /// Taken as a whole.
    Taken,
    /// Split into its buddies.
    Split,
}

/// Free blocks by distance to an anchor, nearest first (ties: first in
/// the tree's order), each as one key: `near_key`.
pub(super) type Near = BinaryHeap<Reverse<u64>>;

/// A block's place in `Near`: its distance in the high half, the block in
/// the low half, so one integer comparison orders by distance then tree
/// order. Exact while distances fit 32 bits, which holds for meshes up to
/// 16,384 nodes a side (the largest is 4 × (2 × 16,383²) < 2³²); beyond,
/// distances saturate and farther blocks tie in tree order.
pub(super) fn near_key(distance: u64, t: u32) -> Reverse<u64> {
    Reverse(distance.min(u64::from(u32::MAX)) << 32 | u64::from(t))
}

/// The block of a `Near` key.
pub(super) fn near_block(Reverse(key): Reverse<u64>) -> u32 {
    key as u32
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Pool {
    pub state: Vec<State>,
    /// Per size class, a bit per block of the class: free now.
    free_bits: Vec<u64>,
    class_free: Vec<u32>,
    pub free: u32,
    /// Scratch for `release` and `occupy`, all clear between calls.
    mark: Vec<u64>,
    /// Scratch for `allocate`: blocks split in step 5, to merge back those
    /// none of whose buddies were taken. Empty between calls.
    pub split_near: Vec<u32>,
    /// Scratch for `allocate`: the storage of the `Near` heap. Empty
    /// between calls.
    near: Vec<Reverse<u64>>,
}

pub(super) fn block(r: Rect) -> Part {
    Part::Block {
        x: r.x,
        y: r.y,
        w: r.w,
        h: r.h,
    }
}

/// The seed's closeness: over the four corners, the squared distance
/// between the anchor's corner and the candidate's. Each corner shares
/// its x with one other corner and its y with another, so the sum is
/// twice the squared differences of the two x and the two y edges.
pub(super) fn corner_distance(a: Rect, b: Rect) -> u64 {
    let sq = |u: u32, v: u32| u64::from(u.abs_diff(v)).pow(2);
    let (ax1, ay1) = (a.x + a.w - 1, a.y + a.h - 1);
    let (bx1, by1) = (b.x + b.w - 1, b.y + b.h - 1);
    2 * (sq(a.x, b.x) + sq(ax1, bx1) + sq(a.y, b.y) + sq(ay1, by1))
}

impl Pool {
    /// The whole mesh, free.
    pub fn new(tree: &Tree) -> Pool {
        let nodes = (tree.width * tree.height) as usize;
        let mut pool = Pool {
            state: vec![State::Covered; tree.len()],
            free_bits: vec![0; *tree.class_word.last().unwrap_or(&0) as usize],
            class_free: vec![0; tree.class_area.len()],
            free: nodes as u32,
            mark: vec![0; nodes.div_ceil(64)],
            split_near: Vec::new(),
            near: Vec::new(),
        };
        pool.set_free(tree, 0);
        pool
    }

    fn bit(tree: &Tree, t: u32) -> (usize, u64) {
        let c = tree.class_of[t as usize] as usize;
        let r = tree.rank[t as usize] as usize;
        (tree.class_word[c] as usize + r / 64, 1u64 << (r % 64))
    }

    fn set_free(&mut self, tree: &Tree, t: u32) {
        self.state[t as usize] = State::Free;
        let (w, b) = Self::bit(tree, t);
        self.free_bits[w] |= b;
        self.class_free[tree.class_of[t as usize] as usize] += 1;
    }

    /// A free block stops being one (taken, split or merged).
    fn unset_free(&mut self, tree: &Tree, t: u32, now: State) {
        debug_assert_eq!(self.state[t as usize], State::Free);
        self.state[t as usize] = now;
        let (w, b) = Self::bit(tree, t);
        self.free_bits[w] &= !b;
        self.class_free[tree.class_of[t as usize] as usize] -= 1;
    }

    pub fn has_free_in(&self, c: usize) -> bool {
        self.class_free[c] > 0
    }

    /// The first free block of class `c` at or after rank `from`.
    pub fn first_free_in(&self, tree: &Tree, c: usize, from: usize) -> Option<u32> {
        let (start, stop) = (tree.class_word[c] as usize, tree.class_word[c + 1] as usize);
        let mut w = start + from / 64;
        if w >= stop {
            return None;
        }
        let mut word = self.free_bits[w] & (!0u64 << (from % 64));
        loop {
            if word != 0 {
                let rank = (w - start) * 64 + word.trailing_zeros() as usize;
                return Some(tree.class_members[c][rank]);
            }
            w += 1;
            if w >= stop {
                return None;
            }
            word = self.free_bits[w];
        }
    }

    /// The smallest free block of at least `n` nodes.
    pub fn smallest_free_at_least(&self, tree: &Tree, n: u32) -> Option<u32> {
        (tree.class_at_least(n)..self.class_free.len())
            .find(|&c| self.class_free[c] > 0)
            .and_then(|c| self.first_free_in(tree, c, 0))
    }

    pub fn largest_free(&self, tree: &Tree) -> Option<u32> {
        (0..self.class_free.len())
            .rev()
            .find(|&c| self.class_free[c] > 0)
            .and_then(|c| self.first_free_in(tree, c, 0))
    }

    /// Every free block by distance to `anchor`, nearest on top. Give the
    /// heap back with `done_near`.
    pub fn free_by_distance(&mut self, tree: &Tree, anchor: Rect) -> Near {
        let mut near = std::mem::take(&mut self.near);
        for c in 0..self.class_free.len() {
            if self.class_free[c] == 0 {
                continue;
            }
            let (start, stop) = (tree.class_word[c] as usize, tree.class_word[c + 1] as usize);
            for w in start..stop {
                let mut word = self.free_bits[w];
                while word != 0 {
                    let rank = (w - start) * 64 + word.trailing_zeros() as usize;
                    word &= word - 1;
                    let t = tree.class_members[c][rank];
                    near.push(near_key(corner_distance(anchor, tree.rect[t as usize]), t));
                }
            }
        }
        BinaryHeap::from(near)
    }

    pub fn done_near(&mut self, near: Near) {
        let mut near = near.into_vec();
        near.clear();
        self.near = near;
    }

    /// Splits a free block into its buddies, all free.
    pub fn split(&mut self, tree: &Tree, t: u32) {
        self.unset_free(tree, t, State::Split);
        for c in tree.kids(t) {
            self.set_free(tree, c);
        }
    }

    /// Takes a free block for the placement being built.
    pub fn take(&mut self, tree: &Tree, t: u32, p: &mut Placement) {
        self.unset_free(tree, t, State::Taken);
        let r = tree.rect[t as usize];
        self.free -= r.area();
        for y in r.y..r.y + r.h {
            let row = y * tree.width;
            p.nodes.extend(row + r.x..row + r.x + r.w);
        }
        p.parts.push(block(r));
    }

    /// Frees a taken block, merging buddies up while all of them are free.
    pub fn give_back(&mut self, tree: &Tree, t: u32) {
        debug_assert_eq!(self.state[t as usize], State::Taken);
        self.free += tree.rect[t as usize].area();
        self.set_free(tree, t);
        self.merge_from(tree, tree.parent[t as usize]);
    }

    /// Merges block `p` and up while all buddies of a block are free.
    pub fn merge_from(&mut self, tree: &Tree, mut p: u32) {
        while p != NONE && tree.kids(p).all(|c| self.state[c as usize] == State::Free) {
            for c in tree.kids(p) {
                self.unset_free(tree, c, State::Covered);
            }
            self.set_free(tree, p);
            p = tree.parent[p as usize];
        }
    }

    /// The block that holds node `v` now (free or taken).
    pub fn holder(&self, tree: &Tree, v: u32) -> u32 {
        let mut t = tree.leaf_of[v as usize];
        while self.state[t as usize] == State::Covered {
            t = tree.parent[t as usize];
        }
        t
    }

    pub fn is_marked(&self, v: u32) -> bool {
        self.mark[v as usize / 64] & (1 << (v % 64)) != 0
    }

    pub fn set_mark(&mut self, v: u32, on: bool) {
        let (w, b) = (v as usize / 64, 1u64 << (v % 64));
        if on {
            self.mark[w] |= b;
        } else {
            self.mark[w] &= !b;
        }
    }

    /// How many of the nodes `lo..hi` are marked.
    fn marked_range(&self, lo: u32, hi: u32) -> u32 {
        let (lo, hi) = (lo as usize, hi as usize);
        let mut count = 0;
        let mut i = lo;
        while i < hi {
            let (w, bit) = (i / 64, i % 64);
            let span = (64 - bit).min(hi - i);
            let mask = if span == 64 {
                !0
            } else {
                ((1u64 << span) - 1) << bit
            };
            count += (self.mark[w] & mask).count_ones();
            i += span;
        }
        count
    }

    /// Frees the marked nodes of taken block `t`: the whole block if all
    /// are marked, else its buddies, taken, freed in turn.
    pub fn release_marked(&mut self, tree: &Tree, t: u32) {
        let r = tree.rect[t as usize];
        let marked: u32 = (r.y..r.y + r.h)
            .map(|y| self.marked_range(y * tree.width + r.x, y * tree.width + r.x + r.w))
            .sum();
        if marked == r.area() {
            self.give_back(tree, t);
        } else if marked > 0 {
            self.state[t as usize] = State::Split;
            for c in tree.kids(t) {
                self.state[c as usize] = State::Taken;
            }
            for c in tree.kids(t) {
                self.release_marked(tree, c);
            }
        }
    }

    /// Splits down from the free block holding node `v` and takes `v`.
    pub fn take_node(&mut self, tree: &Tree, v: u32) {
        let (x, y) = (v % tree.width, v / tree.width);
        let mut t = self.holder(tree, v);
        while tree.rect[t as usize].area() > 1 {
            self.split(tree, t);
            t = tree
                .kids(t)
                .find(|&c| tree.rect[c as usize].contains(x, y))
                .unwrap_or(t);
        }
        self.unset_free(tree, t, State::Taken);
        self.free -= 1;
    }
}
