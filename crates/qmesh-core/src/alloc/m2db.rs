//! M2DB, the Modified 2-D Buddy system (SDSC seed 2.4): nodes of a 2-D
//! mesh, given as one or more rectangular blocks, exactly as many as asked.
//!
//! Why a buddy system: jobs ask mostly for powers of two, and splitting the
//! mesh by the seed's six buddy cases keeps big power-of-two blocks whole
//! for them, while any count can still be served from several blocks.
//!
//! The algorithm, as the seed gives it (2.4.1):
//! 1. the anchor is the smallest free block at least as large as the request
//!    (ties: the first in the tree's order, upper left first);
//! 2. if it is exactly the request, done;
//! 3. if larger, split it into its buddies (2.4.2) and choose again among
//!    them: the smallest buddy at least as large as the request. When every
//!    buddy is smaller, the largest buddy is the anchor and the rest is
//!    served by step 5. (Read literally, "go to step 1" would then go on to
//!    split every other free block of that size, which shatters the mesh;
//!    staying inside the chosen block is what the seed means by it.)
//! 4. if every free block is smaller than the request, the largest is the
//!    anchor and the request shrinks by its size;
//! 5. the next block is the free block closest to the anchor: the sum, over
//!    the four corners, of the squared distance between the anchor's corner
//!    and the candidate's (corners at node coordinates; ties: first in the
//!    tree's order); a block larger than what is left is split and step 5
//!    repeats, until nothing is left.
//!
//! Freeing returns the blocks and merges buddies back into their parent
//! whenever all of a parent's buddies are free, so freeing everything gives
//! the whole mesh back.
//!
//! The `contiguous` mode is for comparison (the simulator): one rectangle
//! only. It takes the smallest free block that holds a buddy of exactly `n`
//! nodes (the block itself, or one reached by splitting it), else nothing;
//! `size_for(n)` says whether the buddy tree has a block of `n` nodes at all.
//! Its tree splits a power-of-two square first into two halves (then into
//! the seed's quarters), so that 2, 8, 32, … nodes are rectangles too.
//!
//! The cost per operation is small: the tree of every block the buddy cases
//! can make is built once and shared (`Arc`); the allocator holds a state
//! byte per block and, per block area, a bitmap of the free blocks.

#[cfg(test)]
mod tests;
mod tree;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::sync::Arc;

use super::{AllocError, Allocator, Part, Placement};
pub use tree::{Buddies, Rect, buddies, halving_buddies};
use tree::{NONE, Tree};

/// What a block of the buddy tree is now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum State {
    /// Inside a free or taken block: not a block of its own now.
    Covered,
    /// A free block (its parent is not free).
    Free,
    /// Taken as a whole.
    Taken,
    /// Split into its buddies.
    Split,
}

/// The M2DB allocator of one `width × height` mesh; node `y * width + x`.
#[derive(Clone, PartialEq)]
pub struct M2db {
    tree: Arc<Tree>,
    contiguous: bool,
    state: Vec<State>,
    /// Per size class, a bit per block of the class: free now.
    free_bits: Vec<u64>,
    class_free: Vec<u32>,
    free: u32,
    /// Scratch for `release` and `occupy`, all clear between calls.
    mark: Vec<u64>,
    /// Scratch for `allocate`: blocks split while looking for the closest,
    /// to merge back those none of whose buddies were taken. Empty between
    /// calls.
    split_near: Vec<u32>,
    /// Scratch for `allocate`: the heap of free blocks by distance to the
    /// anchor. Empty between calls.
    near: Vec<Reverse<(u64, u32)>>,
}

impl M2db {
    /// A free mesh. `width` and `height` must be at least 1.
    pub fn new(width: u32, height: u32, contiguous: bool) -> M2db {
        let (width, height) = (width.max(1), height.max(1));
        let tree = Tree::new(width, height, contiguous);
        let mut m = M2db {
            state: vec![State::Covered; tree.len()],
            free_bits: vec![0; *tree.class_word.last().unwrap_or(&0) as usize],
            class_free: vec![0; tree.class_area.len()],
            free: width * height,
            mark: vec![0; ((width * height) as usize).div_ceil(64)],
            split_near: Vec::new(),
            near: Vec::new(),
            contiguous,
            tree: Arc::new(tree),
        };
        m.set_free(0);
        m
    }

    pub fn width(&self) -> u32 {
        self.tree.width
    }

    pub fn height(&self) -> u32 {
        self.tree.height
    }

    pub fn is_contiguous(&self) -> bool {
        self.contiguous
    }

    /// The free blocks, in the tree's order.
    pub fn free_blocks(&self) -> Vec<Part> {
        (0..self.tree.len() as u32)
            .filter(|&t| self.state[t as usize] == State::Free)
            .map(|t| block(self.tree.rect[t as usize]))
            .collect()
    }

    fn bit(&self, t: u32) -> (usize, u64) {
        let tr = &self.tree;
        let c = tr.class_of[t as usize] as usize;
        let r = tr.rank[t as usize] as usize;
        (tr.class_word[c] as usize + r / 64, 1u64 << (r % 64))
    }

    fn set_free(&mut self, t: u32) {
        self.state[t as usize] = State::Free;
        let (w, b) = self.bit(t);
        self.free_bits[w] |= b;
        self.class_free[self.tree.class_of[t as usize] as usize] += 1;
    }

    /// A free block stops being one (taken, split or merged).
    fn unset_free(&mut self, t: u32, now: State) {
        debug_assert_eq!(self.state[t as usize], State::Free);
        self.state[t as usize] = now;
        let (w, b) = self.bit(t);
        self.free_bits[w] &= !b;
        self.class_free[self.tree.class_of[t as usize] as usize] -= 1;
    }

    /// The first free block of class `c` at or after rank `from`.
    fn first_free_in(&self, c: usize, from: usize) -> Option<u32> {
        let tr = &self.tree;
        let (start, stop) = (tr.class_word[c] as usize, tr.class_word[c + 1] as usize);
        let mut w = start + from / 64;
        let mut word = *self.free_bits.get(w)? & (!0u64 << (from % 64));
        loop {
            if word != 0 {
                let rank = (w - start) * 64 + word.trailing_zeros() as usize;
                return Some(tr.class_members[c][rank]);
            }
            w += 1;
            if w >= stop {
                return None;
            }
            word = self.free_bits[w];
        }
    }

    /// The smallest free block of at least `n` nodes.
    fn smallest_free_at_least(&self, n: u32) -> Option<u32> {
        (self.tree.class_at_least(n)..self.class_free.len())
            .find(|&c| self.class_free[c] > 0)
            .and_then(|c| self.first_free_in(c, 0))
    }

    fn largest_free(&self) -> Option<u32> {
        (0..self.class_free.len())
            .rev()
            .find(|&c| self.class_free[c] > 0)
            .and_then(|c| self.first_free_in(c, 0))
    }

    /// Fills `near` with every free block, nearest to `anchor` on top (seed
    /// 2.4.1 step 5; ties: first in the tree's order). Blocks do not move
    /// while one job is placed, so one heap serves the whole of step 5: a
    /// block split pushes its buddies.
    fn free_by_distance(&mut self, anchor: u32) -> BinaryHeap<Reverse<(u64, u32)>> {
        let mut near = std::mem::take(&mut self.near);
        let tree = &self.tree;
        let a = tree.rect[anchor as usize];
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
                    near.push(Reverse((corner_distance(a, tree.rect[t as usize]), t)));
                }
            }
        }
        BinaryHeap::from(near)
    }

    /// Splits a free block into its buddies, all free.
    fn split(&mut self, t: u32) {
        self.unset_free(t, State::Split);
        let tree = Arc::clone(&self.tree);
        for c in tree.kids(t) {
            self.set_free(c);
        }
    }

    /// Takes a free block for the placement being built.
    fn take(&mut self, t: u32, p: &mut Placement) {
        self.unset_free(t, State::Taken);
        let r = self.tree.rect[t as usize];
        self.free -= r.area();
        let width = self.tree.width;
        for y in r.y..r.y + r.h {
            p.nodes.extend((r.x..r.x + r.w).map(|x| y * width + x));
        }
        p.parts.push(block(r));
    }

    /// Frees a taken block, merging buddies up while all of them are free.
    fn give_back(&mut self, t: u32) {
        debug_assert_eq!(self.state[t as usize], State::Taken);
        self.free += self.tree.rect[t as usize].area();
        self.set_free(t);
        self.merge_from(self.tree.parent[t as usize]);
    }

    /// Merges block `p` and up while all buddies of a block are free.
    fn merge_from(&mut self, mut p: u32) {
        let tree = Arc::clone(&self.tree);
        while p != NONE && tree.kids(p).all(|c| self.state[c as usize] == State::Free) {
            for c in tree.kids(p) {
                self.unset_free(c, State::Covered);
            }
            self.set_free(p);
            p = tree.parent[p as usize];
        }
    }

    /// The block that holds node `v` now (free or taken).
    fn holder(&self, v: u32) -> u32 {
        let mut t = self.tree.leaf_of[v as usize];
        while self.state[t as usize] == State::Covered {
            t = self.tree.parent[t as usize];
        }
        t
    }

    fn is_marked(&self, v: u32) -> bool {
        self.mark[v as usize / 64] & (1 << (v % 64)) != 0
    }

    fn set_mark(&mut self, v: u32, on: bool) {
        let (w, b) = (v as usize / 64, 1u64 << (v % 64));
        if on {
            self.mark[w] |= b;
        } else {
            self.mark[w] &= !b;
        }
    }

    /// How many nodes of block `t` are marked.
    fn marked_in(&self, t: u32) -> u32 {
        let r = self.tree.rect[t as usize];
        let width = self.tree.width;
        (r.y..r.y + r.h)
            .flat_map(|y| (r.x..r.x + r.w).map(move |x| y * width + x))
            .filter(|&v| self.is_marked(v))
            .count() as u32
    }

    /// Frees the marked nodes of taken block `t`: the whole block if all
    /// are marked, else its buddies, taken, freed in turn.
    fn release_marked(&mut self, t: u32) {
        let marked = self.marked_in(t);
        if marked == self.tree.rect[t as usize].area() {
            self.give_back(t);
        } else if marked > 0 {
            self.state[t as usize] = State::Split;
            let tree = Arc::clone(&self.tree);
            for c in tree.kids(t) {
                self.state[c as usize] = State::Taken;
            }
            for c in tree.kids(t) {
                self.release_marked(c);
            }
        }
    }

    /// Splits down from the free block holding node `v` and takes `v`.
    fn take_node(&mut self, v: u32) {
        let tree = Arc::clone(&self.tree);
        let (x, y) = (v % tree.width, v / tree.width);
        let mut t = self.holder(v);
        while tree.rect[t as usize].area() > 1 {
            self.split(t);
            t = tree
                .kids(t)
                .find(|&c| tree.rect[c as usize].contains(x, y))
                .unwrap_or(t);
        }
        self.unset_free(t, State::Taken);
        self.free -= 1;
    }

    fn allocate_blocks(&mut self, n: u32) -> Placement {
        let mut p = Placement {
            nodes: Vec::with_capacity(n as usize),
            parts: Vec::new(),
        };
        let tree = Arc::clone(&self.tree);
        let area = |t: u32| tree.rect[t as usize].area();
        let anchor = match self.smallest_free_at_least(n) {
            Some(mut t) => loop {
                if area(t) == n {
                    self.take(t, &mut p);
                    return p;
                }
                self.split(t);
                let fitting = tree
                    .kids(t)
                    .filter(|&c| area(c) >= n)
                    .min_by_key(|&c| (area(c), c));
                match fitting {
                    Some(c) => t = c,
                    None => break tree.kids(t).min_by_key(|&c| (u32::MAX - area(c), c)),
                }
            },
            None => self.largest_free(),
        };
        let Some(anchor) = anchor else { return p };
        self.take(anchor, &mut p);
        let mut left = n - area(anchor);
        if left == 0 {
            return p;
        }
        let a = tree.rect[anchor as usize];
        let mut near = self.free_by_distance(anchor);
        while left > 0 {
            let Some(Reverse((_, t))) = near.pop() else {
                break;
            };
            if area(t) <= left {
                self.take(t, &mut p);
                left -= area(t);
            } else {
                self.split(t);
                self.split_near.push(t);
                for k in tree.kids(t) {
                    near.push(Reverse((corner_distance(a, tree.rect[k as usize]), k)));
                }
            }
        }
        let mut near = near.into_vec();
        near.clear();
        self.near = near;
        // Free blocks stay whole: a block split in step 5 whose buddies all
        // went unused is merged back.
        while let Some(t) = self.split_near.pop() {
            if self.state[t as usize] == State::Split {
                self.merge_from(t);
            }
        }
        p
    }

    fn allocate_rectangle(&mut self, n: u32) -> Option<Placement> {
        let tree = Arc::clone(&self.tree);
        let exact = tree.class_exactly(n)?;
        let members = &tree.class_members[exact];
        for c in tree.class_at_least(n)..self.class_free.len() {
            if self.class_free[c] == 0 {
                continue;
            }
            let mut from = 0;
            while let Some(f) = self.first_free_in(c, from) {
                from = tree.rank[f as usize] as usize + 1;
                let i = members.partition_point(|&m| m < f);
                let Some(&target) = members.get(i).filter(|&&m| m < tree.end[f as usize]) else {
                    continue;
                };
                let mut t = f;
                while t != target {
                    self.split(t);
                    t = tree
                        .kids(t)
                        .find(|&k| k <= target && target < tree.end[k as usize])
                        .unwrap_or(target);
                }
                let mut p = Placement {
                    nodes: Vec::with_capacity(n as usize),
                    parts: Vec::with_capacity(1),
                };
                self.take(target, &mut p);
                return Some(p);
            }
        }
        None
    }
}

fn block(r: Rect) -> Part {
    Part::Block {
        x: r.x,
        y: r.y,
        w: r.w,
        h: r.h,
    }
}

/// The seed's closeness: over the four corners, the squared distance
/// between the anchor's corner and the candidate's.
fn corner_distance(a: Rect, b: Rect) -> u64 {
    let corners = |r: Rect| {
        let (x0, y0) = (r.x as i64, r.y as i64);
        let (x1, y1) = (x0 + r.w as i64 - 1, y0 + r.h as i64 - 1);
        [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    };
    corners(a)
        .iter()
        .zip(corners(b).iter())
        .map(|(&(ax, ay), &(bx, by))| ((ax - bx).pow(2) + (ay - by).pow(2)) as u64)
        .sum()
}

impl Allocator for M2db {
    fn size_for(&self, n: u32) -> Option<u32> {
        if n == 0 || n > self.capacity() {
            return None;
        }
        if self.contiguous {
            self.tree.class_exactly(n).map(|_| n)
        } else {
            Some(n)
        }
    }

    fn allocate(&mut self, n: u32) -> Option<Placement> {
        if n == 0 || n > self.free {
            return None;
        }
        let p = if self.contiguous {
            self.allocate_rectangle(n)?
        } else {
            self.allocate_blocks(n)
        };
        debug_assert_eq!(p.nodes.len() as u32, n);
        Some(p)
    }

    fn release(&mut self, nodes: &[u32]) {
        let cap = self.capacity();
        for &v in nodes {
            if v < cap {
                self.set_mark(v, true);
            }
        }
        for &v in nodes {
            if v < cap && self.is_marked(v) {
                let t = self.holder(v);
                if self.state[t as usize] == State::Taken {
                    self.release_marked(t);
                }
            }
        }
        for &v in nodes {
            if v < cap {
                self.set_mark(v, false);
            }
        }
    }

    fn occupy(&mut self, nodes: &[u32]) -> Result<(), AllocError> {
        let cap = self.capacity();
        let mut bad = None;
        for (i, &v) in nodes.iter().enumerate() {
            if v >= cap {
                bad = Some((i, AllocError::OutOfRange { node: v, size: cap }));
            } else if self.is_marked(v) || self.state[self.holder(v) as usize] != State::Free {
                bad = Some((i, AllocError::Taken { node: v }));
            }
            if bad.is_some() {
                break;
            }
            self.set_mark(v, true);
        }
        let checked = bad.as_ref().map_or(nodes.len(), |(i, _)| *i);
        for &v in &nodes[..checked] {
            self.set_mark(v, false);
        }
        if let Some((_, e)) = bad {
            return Err(e);
        }
        for &v in nodes {
            self.take_node(v);
        }
        Ok(())
    }

    fn free_count(&self) -> u32 {
        self.free
    }

    fn capacity(&self) -> u32 {
        self.tree.width * self.tree.height
    }

    fn boxed_clone(&self) -> Box<dyn Allocator> {
        Box::new(self.clone())
    }
}

impl fmt::Debug for M2db {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let free: Vec<String> = self.free_blocks().iter().map(|b| b.to_string()).collect();
        f.debug_struct("M2db")
            .field("width", &self.tree.width)
            .field("height", &self.tree.height)
            .field("contiguous", &self.contiguous)
            .field("free", &self.free)
            .field("free_blocks", &free)
            .finish()
    }
}

/// Seed Table 3: request sizes and how many batch jobs asked for each
/// (SDSC Paragon, April to September 1995), for benchmarks and the
/// simulator as a realistic mix.
pub const SDSC_TABLE3_BATCH_JOBS: [(u32, u32); 9] = [
    (1, 4987),
    (2, 65),
    (4, 785),
    (8, 1267),
    (16, 1642),
    (32, 2095),
    (64, 3477),
    (128, 629),
    (256, 122),
];
