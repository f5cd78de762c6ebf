//! The N-D torus allocator of the torus seed (Mao, Chen, Watson): a torus
//! with all but one dimension a power of two is preprocessed into
//! power-of-two semitori; a request is rounded up to a power of two and
//! given a whole semitorus of that size, cut from the smallest free one
//! that holds it by the Equal or Non-Equal Partition; freeing puts a piece
//! back and, once all its siblings are free, merges them into their parent.
//!
//! Why the bookkeeping looks as it does: the scheduler asks for placements
//! on every pass, so one allocate+free must cost little. The semitori live
//! in an arena (slots reused), free ones sit on intrusive lists per size,
//! and each node knows the piece holding it, so the hot path allocates
//! nothing but the placement it returns.

mod shapes;

pub use shapes::{Conversion, MAX_DIMS, Partition, TorusError, convert, wraps};
use shapes::{Semi, partition, preprocess};

use super::{AllocError, Allocator, Part, Placement};

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// On the free list of its level.
    Free,
    /// A job's (or occupied) piece.
    Taken,
    /// Cut into its children.
    Split,
    /// An unused arena slot.
    Vacant,
}

#[derive(Clone, Debug)]
struct Cell {
    semi: Semi,
    level: u32,
    state: State,
    parent: u32,
    first_child: u32,
    next_sibling: u32,
    children: u32,
    free_children: u32,
    prev_free: u32,
    next_free: u32,
    /// Nodes of this taken piece seen so far by the running `release`.
    pending: u32,
}

/// An N-D torus node set, allocating subtori (see the module comment).
#[derive(Clone, Debug)]
pub struct Torus {
    dims: Vec<u32>,
    partition: Partition,
    conversion: Conversion,
    capacity: u32,
    /// log2 of the largest preprocessed semitorus: no request goes beyond.
    max_level: u32,
    /// Cells `0..roots` are the preprocessed semitori; they never vanish.
    roots: u32,
    cells: Vec<Cell>,
    vacant: Vec<u32>,
    /// Head of the free list per level (log2 of the size).
    free_heads: Vec<u32>,
    /// Per node: the taken piece holding it, or NONE.
    owner: Vec<u32>,
    free: u32,
    /// Reused buffer for the pieces of a partition.
    scratch: Vec<Semi>,
}

impl Torus {
    /// A free torus of `dims` (sizes per dimension, the first fastest in
    /// node numbering), cut by `partition`, converting by `conversion`.
    pub fn new(
        dims: &[u32],
        partition: Partition,
        conversion: Conversion,
    ) -> Result<Torus, TorusError> {
        let roots = preprocess(dims)?;
        let capacity: u32 = dims.iter().product();
        let max_level = roots.iter().map(|r| r.level()).max().unwrap_or(0);
        let mut t = Torus {
            dims: dims.to_vec(),
            partition,
            conversion,
            capacity,
            max_level,
            roots: roots.len() as u32,
            cells: Vec::new(),
            vacant: Vec::new(),
            free_heads: vec![NONE; max_level as usize + 1],
            owner: vec![NONE; capacity as usize],
            free: capacity,
            scratch: Vec::new(),
        };
        for r in roots {
            let x = t.new_cell(r, NONE, State::Free);
            t.push_free(x);
        }
        Ok(t)
    }

    pub fn dims(&self) -> &[u32] {
        &self.dims
    }

    pub fn partition(&self) -> Partition {
        self.partition
    }

    pub fn conversion(&self) -> Conversion {
        self.conversion
    }

    /// The semitori preprocessing made (the initial available set).
    pub fn semitori(&self) -> Vec<Part> {
        (0..self.roots)
            .map(|x| self.part_of(&self.cells[x as usize].semi))
            .collect()
    }

    /// The torus a job placed on `part` sees, by this set's conversion:
    /// e.g. the whole 2×2×2×4×8 semitorus of the JLAB torus, open in its
    /// fourth dimension, stays 2×2×2×4×8 collapsed (one open dimension has
    /// nothing to merge with) and is 8×2×2×8 paired.
    pub fn job_torus(&self, part: &Part) -> Option<Vec<u32>> {
        match part {
            Part::Box { extent, .. } if extent.len() == self.dims.len() => {
                Some(convert(self.conversion, extent, &wraps(&self.dims, extent)))
            }
            _ => None,
        }
    }

    fn ndims(&self) -> usize {
        self.dims.len()
    }

    fn part_of(&self, s: &Semi) -> Part {
        let n = self.ndims();
        Part::Box {
            origin: s.origin[..n].to_vec(),
            extent: s.exps[..n].iter().map(|&e| 1u32 << e).collect(),
        }
    }

    fn new_cell(&mut self, semi: Semi, parent: u32, state: State) -> u32 {
        let cell = Cell {
            level: semi.level(),
            semi,
            state,
            parent,
            first_child: NONE,
            next_sibling: NONE,
            children: 0,
            free_children: 0,
            prev_free: NONE,
            next_free: NONE,
            pending: 0,
        };
        match self.vacant.pop() {
            Some(x) => {
                self.cells[x as usize] = cell;
                x
            }
            None => {
                self.cells.push(cell);
                (self.cells.len() - 1) as u32
            }
        }
    }

    fn push_free(&mut self, x: u32) {
        let level = self.cells[x as usize].level as usize;
        let head = self.free_heads[level];
        let c = &mut self.cells[x as usize];
        c.state = State::Free;
        c.prev_free = NONE;
        c.next_free = head;
        if head != NONE {
            self.cells[head as usize].prev_free = x;
        }
        self.free_heads[level] = x;
    }

    fn unlink_free(&mut self, x: u32) {
        let c = &self.cells[x as usize];
        let (prev, next, level) = (c.prev_free, c.next_free, c.level as usize);
        if prev == NONE {
            self.free_heads[level] = next;
        } else {
            self.cells[prev as usize].next_free = next;
        }
        if next != NONE {
            self.cells[next as usize].prev_free = prev;
        }
    }

    /// A free leaf stops being free (to be taken or split).
    fn leave_free(&mut self, x: u32) {
        self.unlink_free(x);
        let p = self.cells[x as usize].parent;
        if p != NONE {
            self.cells[p as usize].free_children -= 1;
        }
    }

    /// A leaf becomes free; siblings all free merge into their parent, up
    /// the tree as far as it goes.
    fn become_free(&mut self, mut x: u32) {
        loop {
            self.push_free(x);
            let p = self.cells[x as usize].parent;
            if p == NONE {
                return;
            }
            let pc = &mut self.cells[p as usize];
            pc.free_children += 1;
            if pc.free_children < pc.children {
                return;
            }
            let mut c = pc.first_child;
            pc.first_child = NONE;
            pc.children = 0;
            pc.free_children = 0;
            while c != NONE {
                let next = self.cells[c as usize].next_sibling;
                self.unlink_free(c);
                self.cells[c as usize].state = State::Vacant;
                self.vacant.push(c);
                c = next;
            }
            x = p;
        }
    }

    /// Cuts leaf `x` (already off the free list if it was free) into the
    /// pieces in `scratch`, each in `state`; returns the first.
    fn split(&mut self, x: u32, state: State) -> u32 {
        let pieces = std::mem::take(&mut self.scratch);
        let mut first = NONE;
        let mut prev = NONE;
        for s in &pieces {
            let c = self.new_cell(*s, x, state);
            if prev == NONE {
                first = c;
            } else {
                self.cells[prev as usize].next_sibling = c;
            }
            prev = c;
            match state {
                State::Free => self.push_free(c),
                _ => {
                    let owner = &mut self.owner;
                    each_node(&self.dims, s, |n| owner[n as usize] = c);
                }
            }
        }
        let n = pieces.len() as u32;
        self.scratch = pieces;
        let xc = &mut self.cells[x as usize];
        xc.state = State::Split;
        xc.first_child = first;
        xc.children = n;
        xc.free_children = if state == State::Free { n } else { 0 };
        first
    }

    fn take(&mut self, x: u32) {
        self.cells[x as usize].state = State::Taken;
        self.free -= 1 << self.cells[x as usize].level;
        let s = self.cells[x as usize].semi;
        let owner = &mut self.owner;
        each_node(&self.dims, &s, |id| owner[id as usize] = x);
    }

    /// Frees taken leaf `x` whole.
    fn give_back(&mut self, x: u32) {
        let s = self.cells[x as usize].semi;
        self.cells[x as usize].pending = 0;
        let owner = &mut self.owner;
        each_node(&self.dims, &s, |id| owner[id as usize] = NONE);
        self.free += 1 << self.cells[x as usize].level;
        self.become_free(x);
    }

    /// Takes (or, for a taken leaf, frees) the `marked` nodes of leaf `x`,
    /// halving it as far as needed. Each cut is along the dimension that
    /// leaves the most halves wholly marked or unmarked, so occupying the
    /// nodes of a placement finds that placement's box as one piece.
    fn carve(&mut self, x: u32, marked: &[bool], freeing: bool) {
        let s = self.cells[x as usize].semi;
        let level = self.cells[x as usize].level;
        let n = self.ndims();
        // Marked nodes in all, and in the lower half of each dimension.
        let mut count = 0u32;
        let mut lower = [0u32; MAX_DIMS];
        let mut off = [0u32; MAX_DIMS];
        each_node(&self.dims, &s, |id| {
            if marked[id as usize] {
                count += 1;
                for d in 0..n {
                    lower[d] += (off[d] < (1 << s.exps[d]) >> 1) as u32;
                }
            }
            for (o, &e) in off.iter_mut().zip(&s.exps).take(n) {
                *o += 1;
                if *o < 1 << e {
                    break;
                }
                *o = 0;
            }
        });
        if count == 0 {
            return;
        }
        if count == 1 << level {
            if freeing {
                self.give_back(x);
            } else {
                self.leave_free(x);
                self.take(x);
            }
            return;
        }
        let half = 1u32 << (level - 1);
        let pure = |m: u32| (m == 0 || m == half) as u32;
        let Some(d) = (0..n)
            .filter(|&d| s.exps[d] > 0)
            .max_by_key(|&d| (pure(lower[d]) + pure(count - lower[d]), s.exps[d], d))
        else {
            return;
        };
        let mut low = s;
        low.exps[d] -= 1;
        let mut high = low;
        high.origin[d] += 1 << low.exps[d];
        self.scratch.clear();
        self.scratch.extend([low, high]);
        let first = if freeing {
            self.split(x, State::Taken)
        } else {
            self.leave_free(x);
            self.split(x, State::Free)
        };
        let second = self.cells[first as usize].next_sibling;
        self.carve(first, marked, freeing);
        self.carve(second, marked, freeing);
    }

    /// The leaf holding node `id`.
    fn leaf_of(&self, id: u32) -> u32 {
        let mut coord = [0u32; MAX_DIMS];
        let mut rest = id;
        for (i, &d) in self.dims.iter().enumerate() {
            coord[i] = rest % d;
            rest /= d;
        }
        let coord = &coord[..self.ndims()];
        let mut x = (0..self.roots)
            .find(|&r| self.cells[r as usize].semi.contains(coord))
            .unwrap_or(0);
        while self.cells[x as usize].state == State::Split {
            let mut c = self.cells[x as usize].first_child;
            while c != NONE && !self.cells[c as usize].semi.contains(coord) {
                c = self.cells[c as usize].next_sibling;
            }
            if c == NONE {
                break;
            }
            x = c;
        }
        x
    }

    /// A release that named only part of some piece: free exactly those
    /// nodes, splitting the pieces. Not the hot path.
    fn release_partial(&mut self, nodes: &[u32]) {
        let mut marked = vec![false; self.capacity as usize];
        for &n in nodes {
            let o = self.owner.get(n as usize).copied().unwrap_or(NONE);
            if o != NONE {
                marked[n as usize] = true;
                self.cells[o as usize].pending = 0;
            }
        }
        for &n in nodes {
            let o = self.owner.get(n as usize).copied().unwrap_or(NONE);
            if o != NONE {
                self.carve(o, &marked, true);
            }
        }
    }

    /// The first box of 2^k nodes, all free, that halving a preprocessed
    /// semitorus could make (power-of-two sides, aligned to them within
    /// it), whatever pieces the free nodes lie in now. Shapes are tried
    /// from the most cube-like, then origins in node order.
    fn free_box(&self, k: u32) -> Option<Semi> {
        let n = self.ndims();
        let mut shapes: Vec<[u8; MAX_DIMS]> = Vec::new();
        for r in 0..self.roots {
            let root = self.cells[r as usize].semi;
            if root.level() < k {
                continue;
            }
            shapes.clear();
            shapes_of(&root.exps[..n], k, &mut [0; MAX_DIMS], 0, &mut shapes);
            shapes.sort_by_key(|e| e[..n].iter().max().copied());
            for exps in &shapes {
                let found = aligned_boxes(&root, exps, n, |semi| {
                    all_nodes(&self.dims, semi, |id| self.owner[id as usize] == NONE)
                        .then_some(*semi)
                });
                if found.is_some() {
                    return found;
                }
            }
        }
        None
    }

    fn same_tree(&self, x: u32, other: &Torus, y: u32) -> bool {
        let (a, b) = (&self.cells[x as usize], &other.cells[y as usize]);
        if a.semi != b.semi || a.state != b.state || a.children != b.children {
            return false;
        }
        let (mut c, mut d) = (a.first_child, b.first_child);
        while c != NONE && d != NONE {
            if !self.same_tree(c, other, d) {
                return false;
            }
            c = self.cells[c as usize].next_sibling;
            d = other.cells[d as usize].next_sibling;
        }
        c == NONE && d == NONE
    }
}

/// Every way of giving 2^`k` nodes power-of-two sides no larger than
/// `within` (log2 per dimension), from dimension `d` on.
fn shapes_of(
    within: &[u8],
    k: u32,
    exps: &mut [u8; MAX_DIMS],
    d: usize,
    out: &mut Vec<[u8; MAX_DIMS]>,
) {
    if d == within.len() {
        if k == 0 {
            out.push(*exps);
        }
        return;
    }
    let rest: u32 = within[d + 1..].iter().map(|&e| e as u32).sum();
    for e in k.saturating_sub(rest)..=k.min(within[d] as u32) {
        exps[d] = e as u8;
        shapes_of(within, k - e, exps, d + 1, out);
    }
    exps[d] = 0;
}

/// Calls `f` with each box of sides 2^`exps` aligned to them inside
/// `root`, the first dimension fastest, until it answers something.
fn aligned_boxes<T>(
    root: &Semi,
    exps: &[u8; MAX_DIMS],
    n: usize,
    mut f: impl FnMut(&Semi) -> Option<T>,
) -> Option<T> {
    let mut semi = Semi {
        origin: root.origin,
        exps: *exps,
    };
    loop {
        if let Some(found) = f(&semi) {
            return Some(found);
        }
        let mut d = 0;
        loop {
            if d == n {
                return None;
            }
            semi.origin[d] += 1 << exps[d];
            if semi.origin[d] < root.origin[d] + (1 << root.exps[d]) {
                break;
            }
            semi.origin[d] = root.origin[d];
            d += 1;
        }
    }
}

/// Calls `f` with every node of `s` in a torus of `dims`, first dimension
/// fastest.
fn each_node(dims: &[u32], s: &Semi, mut f: impl FnMut(u32)) {
    all_nodes(dims, s, |id| {
        f(id);
        true
    });
}

/// Whether `f` holds for every node of `s` in a torus of `dims` (asked
/// first dimension fastest, stopping at the first that fails).
fn all_nodes(dims: &[u32], s: &Semi, mut f: impl FnMut(u32) -> bool) -> bool {
    let n = dims.len();
    let mut stride = [0u32; MAX_DIMS];
    let mut acc = 1;
    let mut id = 0;
    for i in 0..n {
        stride[i] = acc;
        id += s.origin[i] * acc;
        acc *= dims[i];
    }
    let mut at = [0u32; MAX_DIMS];
    loop {
        if !f(id) {
            return false;
        }
        let mut i = 0;
        loop {
            if i == n {
                return true;
            }
            at[i] += 1;
            id += stride[i];
            if at[i] < 1 << s.exps[i] {
                break;
            }
            id -= stride[i] << s.exps[i];
            at[i] = 0;
            i += 1;
        }
    }
}

/// Equal when both hold the same tree of semitori in the same states
/// (arena layout and free-list order aside).
impl PartialEq for Torus {
    fn eq(&self, other: &Torus) -> bool {
        self.dims == other.dims
            && self.partition == other.partition
            && self.conversion == other.conversion
            && self.free == other.free
            && self.roots == other.roots
            && (0..self.roots).all(|r| self.same_tree(r, other, r))
    }
}

impl Allocator for Torus {
    fn size_for(&self, n: u32) -> Option<u32> {
        let m = n.checked_next_power_of_two()?;
        (n > 0 && m.trailing_zeros() <= self.max_level).then_some(m)
    }

    fn allocate(&mut self, n: u32) -> Option<Placement> {
        let k = self.size_for(n)?.trailing_zeros();
        let level = (k..=self.max_level).find(|&l| self.free_heads[l as usize] != NONE)?;
        let x = self.free_heads[level as usize];
        self.leave_free(x);
        let target = if level == k {
            x
        } else {
            let s = self.cells[x as usize].semi;
            partition(self.partition, &s, self.ndims(), k, &mut self.scratch);
            let first = self.split(x, State::Free);
            self.leave_free(first);
            first
        };
        self.take(target);
        let s = self.cells[target as usize].semi;
        let mut nodes = Vec::with_capacity(1 << k);
        each_node(&self.dims, &s, |id| nodes.push(id));
        Some(Placement {
            nodes,
            parts: vec![self.part_of(&s)],
        })
    }

    /// The seed's allocation, else the first free box a semitorus could
    /// be halved into (`free_box`), taken by `occupy`.
    fn allocate_promised(&mut self, n: u32) -> Option<Placement> {
        if let Some(placement) = self.allocate(n) {
            return Some(placement);
        }
        let k = self.size_for(n)?.trailing_zeros();
        if self.free < 1 << k {
            return None;
        }
        let s = self.free_box(k)?;
        let mut nodes = Vec::with_capacity(1 << k);
        each_node(&self.dims, &s, |id| nodes.push(id));
        self.occupy(&nodes).ok()?;
        Some(Placement {
            nodes,
            parts: vec![self.part_of(&s)],
        })
    }

    fn release(&mut self, nodes: &[u32]) {
        let mut named = 0u32;
        let mut freed = 0u32;
        for &n in nodes {
            let o = self.owner.get(n as usize).copied().unwrap_or(NONE);
            if o == NONE {
                continue;
            }
            named += 1;
            let c = &mut self.cells[o as usize];
            c.pending += 1;
            if c.pending == 1 << c.level {
                freed += c.pending;
                self.give_back(o);
            }
        }
        if freed != named {
            self.release_partial(nodes);
        }
    }

    fn occupy(&mut self, nodes: &[u32]) -> Result<(), AllocError> {
        for &n in nodes {
            match self.owner.get(n as usize) {
                None => {
                    return Err(AllocError::OutOfRange {
                        node: n,
                        size: self.capacity,
                    });
                }
                Some(&o) if o != NONE => return Err(AllocError::Taken { node: n }),
                Some(_) => {}
            }
        }
        let mut marked = vec![false; self.capacity as usize];
        for &n in nodes {
            marked[n as usize] = true;
        }
        for &n in nodes {
            if self.owner[n as usize] == NONE {
                let leaf = self.leaf_of(n);
                self.carve(leaf, &marked, false);
            }
        }
        Ok(())
    }

    fn free_count(&self) -> u32 {
        self.free
    }

    fn capacity(&self) -> u32 {
        self.capacity
    }

    fn boxed_clone(&self) -> Box<dyn Allocator> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests;
