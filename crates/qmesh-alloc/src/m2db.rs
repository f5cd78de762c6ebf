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

mod pool;
#[cfg(test)]
mod tests;
mod tree;

use std::fmt;
use std::sync::Arc;

use super::{AllocError, Allocator, Part, Placement};
use pool::{Pool, State, block, corner_distance};
use tree::Tree;
pub use tree::{Buddies, Rect, buddies, halving_buddies};

/// The M2DB allocator of one `width × height` mesh; node `y * width + x`.
#[derive(Clone, PartialEq)]
pub struct M2db {
    tree: Arc<Tree>,
    contiguous: bool,
    pool: Pool,
}

impl M2db {
    /// A free mesh. `width` and `height` must be at least 1.
    pub fn new(width: u32, height: u32, contiguous: bool) -> M2db {
        let tree = Tree::new(width.max(1), height.max(1), contiguous);
        M2db {
            pool: Pool::new(&tree),
            contiguous,
            tree: Arc::new(tree),
        }
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
        (0..self.tree.len())
            .filter(|&t| self.pool.state[t] == State::Free)
            .map(|t| block(self.tree.rect[t]))
            .collect()
    }

    /// Whether every free block is as large as it can be: no split block
    /// has all its buddies free.
    #[cfg(test)]
    fn free_blocks_are_whole(&self) -> bool {
        (0..self.tree.len() as u32).all(|t| {
            self.pool.state[t as usize] != State::Split
                || self
                    .tree
                    .kids(t)
                    .any(|c| self.pool.state[c as usize] != State::Free)
        })
    }

    fn allocate_blocks(&mut self, n: u32) -> Placement {
        let (tree, pool) = (&*self.tree, &mut self.pool);
        let mut p = Placement {
            nodes: Vec::with_capacity(n as usize),
            parts: Vec::with_capacity(4),
        };
        let area = |t: u32| tree.rect[t as usize].area();
        let anchor = match pool.smallest_free_at_least(tree, n) {
            Some(mut t) => loop {
                if area(t) == n {
                    pool.take(tree, t, &mut p);
                    return p;
                }
                pool.split(tree, t);
                let fitting = tree
                    .kids(t)
                    .filter(|&c| area(c) >= n)
                    .min_by_key(|&c| (area(c), c));
                match fitting {
                    Some(c) => t = c,
                    None => break tree.kids(t).min_by_key(|&c| (u32::MAX - area(c), c)),
                }
            },
            None => pool.largest_free(tree),
        };
        let Some(anchor) = anchor else { return p };
        pool.take(tree, anchor, &mut p);
        let mut left = n - area(anchor);
        if left == 0 {
            return p;
        }
        let a = tree.rect[anchor as usize];
        let mut near = pool.free_by_distance(tree, a);
        while left > 0 {
            let Some(t) = near.pop().map(pool::near_block) else {
                break;
            };
            if area(t) <= left {
                pool.take(tree, t, &mut p);
                left -= area(t);
            } else {
                pool.split(tree, t);
                pool.split_near.push(t);
                for k in tree.kids(t) {
                    near.push(pool::near_key(corner_distance(a, tree.rect[k as usize]), k));
                }
            }
        }
        pool.done_near(near);
        // Free blocks stay whole: a block split in step 5 whose buddies all
        // went unused is merged back.
        while let Some(t) = pool.split_near.pop() {
            if pool.state[t as usize] == State::Split {
                pool.merge_from(tree, t);
            }
        }
        p
    }

    fn allocate_rectangle(&mut self, n: u32) -> Option<Placement> {
        let (tree, pool) = (&*self.tree, &mut self.pool);
        let exact = tree.class_exactly(n)?;
        let members = &tree.class_members[exact];
        for c in tree.class_at_least(n)..tree.class_area.len() {
            if !pool.has_free_in(c) {
                continue;
            }
            let mut from = 0;
            while let Some(f) = pool.first_free_in(tree, c, from) {
                from = tree.rank[f as usize] as usize + 1;
                let i = members.partition_point(|&m| m < f);
                let Some(&target) = members.get(i).filter(|&&m| m < tree.end[f as usize]) else {
                    continue;
                };
                let mut t = f;
                while t != target {
                    pool.split(tree, t);
                    t = tree
                        .kids(t)
                        .find(|&k| k <= target && target < tree.end[k as usize])
                        .unwrap_or(target);
                }
                let mut p = Placement {
                    nodes: Vec::with_capacity(n as usize),
                    parts: Vec::with_capacity(1),
                };
                pool.take(tree, target, &mut p);
                return Some(p);
            }
        }
        None
    }
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
        if n == 0 || n > self.pool.free {
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
        let (tree, pool) = (&*self.tree, &mut self.pool);
        let cap = tree.width * tree.height;
        // Placements list their nodes block by block, row by row: while the
        // list goes on like that, each taken block is freed whole at once.
        let mut i = 0;
        while let Some(&v) = nodes.get(i) {
            if v >= cap {
                break;
            }
            let t = pool.holder(tree, v);
            if pool.state[t as usize] != State::Taken {
                break;
            }
            let r = tree.rect[t as usize];
            let run = &nodes[i..nodes.len().min(i + r.area() as usize)];
            let rows = (r.y..r.y + r.h).map(|y| y * tree.width + r.x);
            // Row by row, every node one past the last (no early exit, so
            // the comparison runs on whole vectors).
            let is_block = run.len() == r.area() as usize
                && run
                    .chunks_exact(r.w as usize)
                    .zip(rows)
                    .all(|(row, first)| {
                        row.iter()
                            .zip(first..)
                            .fold(true, |same, (&v, want)| same & (v == want))
                    });
            if !is_block {
                break;
            }
            pool.give_back(tree, t);
            i += run.len();
        }
        // Any other list: mark the nodes, free each taken block whose nodes
        // are all marked, split those only partly marked.
        let rest = &nodes[i..];
        for &v in rest.iter().filter(|&&v| v < cap) {
            pool.set_mark(v, true);
        }
        for &v in rest.iter().filter(|&&v| v < cap) {
            let t = pool.holder(tree, v);
            if pool.state[t as usize] == State::Taken {
                pool.release_marked(tree, t);
            }
        }
        for &v in rest.iter().filter(|&&v| v < cap) {
            pool.set_mark(v, false);
        }
    }

    fn occupy(&mut self, nodes: &[u32]) -> Result<(), AllocError> {
        let (tree, pool) = (&*self.tree, &mut self.pool);
        let cap = tree.width * tree.height;
        let mut bad = None;
        for (i, &v) in nodes.iter().enumerate() {
            if v >= cap {
                bad = Some((i, AllocError::OutOfRange { node: v, size: cap }));
            } else if pool.is_marked(v) || pool.state[pool.holder(tree, v) as usize] != State::Free
            {
                bad = Some((i, AllocError::Taken { node: v }));
            }
            if bad.is_some() {
                break;
            }
            pool.set_mark(v, true);
        }
        let checked = bad.as_ref().map_or(nodes.len(), |(i, _)| *i);
        for &v in &nodes[..checked] {
            pool.set_mark(v, false);
        }
        if let Some((_, e)) = bad {
            return Err(e);
        }
        for &v in nodes {
            pool.take_node(tree, v);
        }
        Ok(())
    }

    fn free_count(&self) -> u32 {
        self.pool.free
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
            .field("free", &self.pool.free)
            .field("free_blocks", &free)
            .finish()
    }
}

/// Seed Table 3: request sizes and how many batch jobs asked for each
/// (SDSC Paragon, April to September 1995), for benchmarks and the
/// simulator as a realistic mix. The size-2 row reads "653391" run
/// together: 653 batch and 391 interactive jobs (its usage share matches
/// 653, the rate per node-job of the 1-node row).
pub const SDSC_TABLE3_BATCH_JOBS: [(u32, u32); 9] = [
    (1, 4987),
    (2, 653),
    (4, 785),
    (8, 1267),
    (16, 1642),
    (32, 2095),
    (64, 3477),
    (128, 629),
    (256, 122),
];
