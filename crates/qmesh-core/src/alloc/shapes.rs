//! The T3D allocator: a 3-D torus where every job size has one fixed shape.
//!
//! The EPCC seed's complaint: NQS started a 128-PE job because 128 PEs were
//! free, but its 16×4×2 shape could not be placed on the torus, so it sat
//! blocking the pool. Here a job gets a box or nothing. A request of `n`
//! takes the smallest configured size at least `n`, in the shape configured
//! for it, in that orientation only (the seed fixes orientation: 64 PEs are
//! always 16×4×1, "flat" in Z), anywhere on the torus with wrap-around in
//! every dimension.
//!
//! Best fit, not first fit. Of all positions where the box is free, the one
//! touching the most busy nodes wins, so jobs pack against each other and
//! leave large holes whole. The measure, per face of the box (six faces):
//! 2 when every node across the face is busy (or the box spans that whole
//! dimension: nothing lies across it), 1 when some are, 0 when none are.
//! The position with the highest sum (0..=12) is taken; ties go to the
//! lowest origin node. A hole exactly the box's shape scores 12.
//!
//! Cheap: each line of the first dimension (at most 64 nodes) is one `u64`
//! of free bits. "The box fits at x" and "every / some node across a face
//! is busy" are runs of bits within a line, combined across lines by AND /
//! OR windows over the other two dimensions, so one allocation evaluates
//! every origin with a few word operations per line and a bit-sliced adder
//! for the scores; no per-node work except marking the chosen box.

use std::collections::BTreeMap;

use super::{AllocError, Allocator, Part, Placement};

/// A 3-D torus of `dims[0] × dims[1] × dims[2]` nodes, node
/// `x + X * (y + Y * z)`, with one box shape per job size.
#[derive(Clone, Debug)]
pub struct Shapes {
    dims: [u32; 3],
    shapes: BTreeMap<u32, [u32; 3]>,
    /// Per line `y + Y * z`: bit `x` set when node `(x, y, z)` is free.
    free: Vec<u64>,
    free_count: u32,
    /// Working space for `allocate`, not part of the state.
    scratch: Scratch,
}

/// Per-line buffers reused by every allocation (no allocation on the hot
/// path besides the placement itself).
#[derive(Clone, Debug, Default)]
struct Scratch {
    fit: Vec<u64>,
    busy_all: Vec<u64>,
    busy_any: Vec<u64>,
    tmp: Vec<u64>,
    closed: Vec<u64>,
    touch: Vec<u64>,
    and_along: Vec<u64>,
    or_along: Vec<u64>,
    score: Vec<[u64; 4]>,
}

impl PartialEq for Shapes {
    fn eq(&self, other: &Self) -> bool {
        self.dims == other.dims
            && self.shapes == other.shapes
            && self.free == other.free
            && self.free_count == other.free_count
    }
}

impl Shapes {
    /// A torus of `dims` with `shapes` mapping a job size to its box
    /// (`64 => [16, 4, 1]`). Every shape must hold exactly its size and fit
    /// the torus; the first dimension is at most 64 nodes.
    pub fn new(dims: [u32; 3], shapes: BTreeMap<u32, [u32; 3]>) -> Result<Shapes, String> {
        let [x, y, z] = dims;
        if dims.contains(&0) {
            return Err(format!(
                "torus {x}x{y}x{z} has an empty dimension; give every dimension at least 1 node"
            ));
        }
        if x > 64 {
            return Err(format!(
                "torus {x}x{y}x{z}: the first dimension is at most 64 nodes; \
                 list the dimensions with a shorter one first"
            ));
        }
        let capacity = u64::from(x) * u64::from(y) * u64::from(z);
        if capacity > u64::from(u32::MAX) {
            return Err(format!("torus {x}x{y}x{z} has too many nodes"));
        }
        if shapes.is_empty() {
            return Err(format!(
                "torus {x}x{y}x{z} has no job shapes; configure at least one, e.g. 64 = 16x4x1"
            ));
        }
        for (&size, &[a, b, c]) in &shapes {
            let nodes = u64::from(a) * u64::from(b) * u64::from(c);
            if size == 0 || nodes != u64::from(size) {
                return Err(format!(
                    "job shape {size} = {a}x{b}x{c} holds {nodes} nodes, not {size}; \
                     make the product of the extents equal the size"
                ));
            }
            if a > x || b > y || c > z {
                return Err(format!(
                    "job shape {size} = {a}x{b}x{c} does not fit the {x}x{y}x{z} torus; \
                     give every extent at most the torus dimension"
                ));
            }
        }
        let lines = (y * z) as usize;
        let scratch = Scratch {
            fit: vec![0; lines],
            busy_all: vec![0; lines],
            busy_any: vec![0; lines],
            tmp: vec![0; lines],
            closed: vec![0; lines],
            touch: vec![0; lines],
            and_along: vec![0; lines],
            or_along: vec![0; lines],
            score: vec![[0; 4]; lines],
        };
        Ok(Shapes {
            dims,
            shapes,
            free: vec![full(x); lines],
            free_count: capacity as u32,
            scratch,
        })
    }

    /// The torus dimensions.
    pub fn dims(&self) -> [u32; 3] {
        self.dims
    }

    /// The shape a job of exactly `size` nodes takes, if configured.
    pub fn shape(&self, size: u32) -> Option<[u32; 3]> {
        self.shapes.get(&size).copied()
    }

    /// Whether node `index` is free (false outside the torus).
    pub fn is_free(&self, index: u32) -> bool {
        let x = self.dims[0];
        self.free
            .get((index / x) as usize)
            .is_some_and(|line| line >> (index % x) & 1 == 1)
    }

    /// The best origin for a box `[a, b, c]`, or `None` if it fits nowhere.
    fn best_origin(&mut self, [a, b, c]: [u32; 3]) -> Option<[u32; 3]> {
        let [nx, ny, nz] = self.dims;
        let all = full(nx);
        let s = &mut self.scratch;
        // Where the box fits: a run of `a` free bits from x, on every line
        // of the b × c window.
        for (line, out) in self.free.iter().zip(s.tmp.iter_mut()) {
            *out = run_and(*line, a, nx);
        }
        window(&mut s.fit, &s.tmp, &mut s.and_along, ny, nz, b, c, true);
        let candidates: u32 = s.fit.iter().map(|m| m.count_ones()).sum();
        if candidates == 0 {
            return None;
        }
        if candidates > 1 {
            score_faces(s, &self.free, self.dims, [a, b, c], all);
            keep_highest(&mut s.fit, &s.score);
        }
        let line = s.fit.iter().position(|&m| m != 0)? as u32;
        let x = s.fit[line as usize].trailing_zeros();
        Some([x, line % ny, line / ny])
    }

    /// Marks the box at `origin` busy and lists its nodes, first dimension
    /// fastest from the origin.
    fn take_box(&mut self, origin: [u32; 3], [a, b, c]: [u32; 3]) -> Vec<u32> {
        let [nx, ny, nz] = self.dims;
        let row = rotl(run_bits(a), origin[0], nx);
        let mut nodes = Vec::with_capacity((a * b * c) as usize);
        for dz in 0..c {
            let z = (origin[2] + dz) % nz;
            for dy in 0..b {
                let y = (origin[1] + dy) % ny;
                let line = y + ny * z;
                self.free[line as usize] &= !row;
                for dx in 0..a {
                    nodes.push((origin[0] + dx) % nx + nx * line);
                }
            }
        }
        self.free_count -= a * b * c;
        nodes
    }
}

impl Allocator for Shapes {
    fn size_for(&self, n: u32) -> Option<u32> {
        if n == 0 {
            return None;
        }
        self.shapes.range(n..).next().map(|(&size, _)| size)
    }

    fn allocate(&mut self, n: u32) -> Option<Placement> {
        let size = self.size_for(n)?;
        if size > self.free_count {
            return None;
        }
        let extent = *self.shapes.get(&size)?;
        let origin = self.best_origin(extent)?;
        let nodes = self.take_box(origin, extent);
        Some(Placement {
            nodes,
            parts: vec![Part::Box {
                origin: origin.to_vec(),
                extent: extent.to_vec(),
            }],
        })
    }

    fn release(&mut self, nodes: &[u32]) {
        let x = self.dims[0];
        for &node in nodes {
            if let Some(line) = self.free.get_mut((node / x) as usize) {
                let bit = 1u64 << (node % x);
                if *line & bit == 0 {
                    *line |= bit;
                    self.free_count += 1;
                }
            }
        }
    }

    fn occupy(&mut self, nodes: &[u32]) -> Result<(), AllocError> {
        let size = self.capacity();
        for (i, &node) in nodes.iter().enumerate() {
            let failure = if node >= size {
                Some(AllocError::OutOfRange { node, size })
            } else if !self.is_free(node) {
                Some(AllocError::Taken { node })
            } else {
                None
            };
            if let Some(error) = failure {
                self.release(&nodes[..i]);
                return Err(error);
            }
            let x = self.dims[0];
            self.free[(node / x) as usize] &= !(1u64 << (node % x));
            self.free_count -= 1;
        }
        Ok(())
    }

    fn free_count(&self) -> u32 {
        self.free_count
    }

    fn capacity(&self) -> u32 {
        self.dims.iter().product()
    }

    fn boxed_clone(&self) -> Box<dyn Allocator> {
        Box::new(self.clone())
    }
}

/// Adds every face's score (0, 1 or 2) into the bit-sliced counters
/// `s.score` for every origin.
fn score_faces(s: &mut Scratch, free: &[u64], dims: [u32; 3], [a, b, c]: [u32; 3], all: u64) {
    let [nx, ny, nz] = dims;
    for counter in s.score.iter_mut() {
        *counter = [0; 4];
    }
    // Across the two x faces: node x-1 and node x+a on every line of the
    // b × c window.
    if a == nx {
        add_wall(&mut s.score, 2);
    } else {
        for shift in [Shift::Left(1), Shift::Right(a)] {
            for (line, out) in free.iter().zip(s.tmp.iter_mut()) {
                let busy = !line & all;
                *out = match shift {
                    Shift::Left(k) => rotl(busy, k, nx),
                    Shift::Right(k) => rotr(busy, k, nx),
                };
            }
            window(&mut s.closed, &s.tmp, &mut s.and_along, ny, nz, b, c, true);
            window(&mut s.touch, &s.tmp, &mut s.and_along, ny, nz, b, c, false);
            add_face(&mut s.score, &s.closed, &s.touch, |line| line);
        }
    }
    // The y and z faces are runs of `a` nodes on neighbouring lines.
    for (line, (all_busy, any_busy)) in free
        .iter()
        .zip(s.busy_all.iter_mut().zip(s.busy_any.iter_mut()))
    {
        *all_busy = run_and(!line & all, a, nx);
        *any_busy = !run_and(*line, a, nx) & all;
    }
    // y faces: lines y-1 and y+b, over the c lines of the z window.
    if b == ny {
        add_wall(&mut s.score, 2);
    } else {
        window_z(&mut s.and_along, &s.busy_all, ny, nz, c, true);
        window_z(&mut s.or_along, &s.busy_any, ny, nz, c, false);
        for offset in [ny - 1, b] {
            let at = |line: usize| {
                let (y, z) = (line as u32 % ny, line as u32 / ny);
                ((y + offset) % ny + ny * z) as usize
            };
            add_face(&mut s.score, &s.and_along, &s.or_along, at);
        }
    }
    // z faces: lines z-1 and z+c, over the b lines of the y window.
    if c == nz {
        add_wall(&mut s.score, 2);
    } else {
        window_y(&mut s.and_along, &s.busy_all, ny, nz, b, true);
        window_y(&mut s.or_along, &s.busy_any, ny, nz, b, false);
        for offset in [nz - 1, c] {
            let at = |line: usize| {
                let (y, z) = (line as u32 % ny, line as u32 / ny);
                (y + ny * ((z + offset) % nz)) as usize
            };
            add_face(&mut s.score, &s.and_along, &s.or_along, at);
        }
    }
}

enum Shift {
    Left(u32),
    Right(u32),
}

/// Adds one face: 1 where some node across it is busy, 1 more where all
/// are. `at` maps an origin's line to the line holding its face.
fn add_face(score: &mut [[u64; 4]], closed: &[u64], touch: &[u64], at: impl Fn(usize) -> usize) {
    for (line, counter) in score.iter_mut().enumerate() {
        let from = at(line);
        add_bits(counter, touch[from]);
        add_bits(counter, closed[from]);
    }
}

/// Adds `value` (a face spanning its whole dimension) to every origin.
fn add_wall(score: &mut [[u64; 4]], value: u32) {
    for counter in score.iter_mut() {
        for _ in 0..value {
            add_bits(counter, u64::MAX);
        }
    }
}

/// Bit-sliced increment: adds 1 to the 4-bit counter of every set bit.
fn add_bits(counter: &mut [u64; 4], mut carry: u64) {
    for plane in counter.iter_mut() {
        if carry == 0 {
            return;
        }
        let next = *plane & carry;
        *plane ^= carry;
        carry = next;
    }
}

/// Narrows `fit` to the origins with the highest score.
fn keep_highest(fit: &mut [u64], score: &[[u64; 4]]) {
    for plane in (0..4).rev() {
        let any = fit
            .iter()
            .zip(score)
            .any(|(m, counter)| m & counter[plane] != 0);
        if any {
            for (m, counter) in fit.iter_mut().zip(score) {
                *m &= counter[plane];
            }
        }
    }
}

/// `out[y, z]` = AND (or OR) of `src` over lines `y..y+b` × `z..z+c`,
/// wrapping around.
#[allow(clippy::too_many_arguments)]
fn window(
    out: &mut [u64],
    src: &[u64],
    tmp: &mut [u64],
    ny: u32,
    nz: u32,
    b: u32,
    c: u32,
    and: bool,
) {
    window_y(tmp, src, ny, nz, b, and);
    window_z(out, tmp, ny, nz, c, and);
}

/// `out[y, z]` = AND (or OR) of `src[y..y+b, z]`, wrapping in y.
fn window_y(out: &mut [u64], src: &[u64], ny: u32, nz: u32, b: u32, and: bool) {
    let ny = ny as usize;
    for z in 0..nz as usize {
        let row = &src[z * ny..(z + 1) * ny];
        for y in 0..ny {
            let mut acc = row[y];
            for k in 1..b as usize {
                let v = row[(y + k) % ny];
                acc = if and { acc & v } else { acc | v };
            }
            out[z * ny + y] = acc;
        }
    }
}

/// `out[y, z]` = AND (or OR) of `src[y, z..z+c]`, wrapping in z.
fn window_z(out: &mut [u64], src: &[u64], ny: u32, nz: u32, c: u32, and: bool) {
    let (ny, nz) = (ny as usize, nz as usize);
    for z in 0..nz {
        for y in 0..ny {
            let mut acc = src[z * ny + y];
            for k in 1..c as usize {
                let v = src[((z + k) % nz) * ny + y];
                acc = if and { acc & v } else { acc | v };
            }
            out[z * ny + y] = acc;
        }
    }
}

/// The `n` low bits set.
fn full(n: u32) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// `a` consecutive bits from bit 0.
fn run_bits(a: u32) -> u64 {
    full(a)
}

/// Rotates a line of `n` bits so bit `i` moves to `i + k`.
fn rotl(m: u64, k: u32, n: u32) -> u64 {
    let k = k % n;
    if k == 0 {
        return m;
    }
    ((m << k) | (m >> (n - k))) & full(n)
}

/// Rotates a line of `n` bits so bit `i + k` moves to `i`.
fn rotr(m: u64, k: u32, n: u32) -> u64 {
    rotl(m, n - k % n, n)
}

/// Bit `x` set when bits `x..x+a` (wrapping in a line of `n`) are all set.
fn run_and(m: u64, a: u32, n: u32) -> u64 {
    let mut acc = m;
    let mut len = 1;
    while len * 2 <= a {
        acc &= rotr(acc, len, n);
        len *= 2;
    }
    if len < a {
        acc &= rotr(acc, a - len, n);
    }
    acc
}

#[cfg(test)]
#[path = "shapes_tests.rs"]
mod tests;
