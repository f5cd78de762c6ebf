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
//! for the scores (one ripple of carries per face); no per-node work except
//! marking the chosen box.

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
    /// Free on every / some line of the z window.
    z_all: Vec<u64>,
    z_any: Vec<u64>,
    /// Free on every / some line of the y window.
    y_all: Vec<u64>,
    y_any: Vec<u64>,
    /// Free on every / some line of the y × z window.
    box_all: Vec<u64>,
    box_any: Vec<u64>,
    /// Origins where the box fits.
    fit: Vec<u64>,
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
            z_all: vec![0; lines],
            z_any: vec![0; lines],
            y_all: vec![0; lines],
            y_any: vec![0; lines],
            box_all: vec![0; lines],
            box_any: vec![0; lines],
            fit: vec![0; lines],
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
        // Free on every line of the b × c window, then a run of `a` of
        // those from x: the box fits at x.
        window_z::<true>(&mut s.z_all, &self.free, ny, nz, c);
        window_y::<true>(&mut s.box_all, &s.z_all, ny, nz, b);
        // How many lines hold origins, and whether one holds several.
        let (mut lines, mut several) = (0, false);
        for (fit, line) in s.fit.iter_mut().zip(&s.box_all) {
            *fit = run_and(*line, a, nx);
            lines += u32::from(*fit != 0);
            several |= *fit & fit.wrapping_sub(1) != 0;
        }
        if lines == 0 {
            return None;
        }
        if lines == 1 && !several {
            let line = s.fit.iter().position(|&m| m != 0)? as u32;
            return Some([s.fit[line as usize].trailing_zeros(), line % ny, line / ny]);
        }
        // Busy across a face = not free; "all busy" is the complement of
        // "some free" (an OR window), "some busy" of "all free".
        // Only the windows some face reads: a face spanning its dimension
        // is a wall and reads none.
        if a != nx || b != ny {
            window_z::<false>(&mut s.z_any, &self.free, ny, nz, c);
        }
        if a != nx {
            window_y::<false>(&mut s.box_any, &s.z_any, ny, nz, b);
        }
        if c != nz {
            window_y::<true>(&mut s.y_all, &self.free, ny, nz, b);
            window_y::<false>(&mut s.y_any, &self.free, ny, nz, b);
        }
        let mut best: Option<(u32, [u32; 3])> = None;
        'planes: for z in 0..nz {
            for y in 0..ny {
                let line = (y + ny * z) as usize;
                let fit = s.fit[line];
                if fit == 0 {
                    continue;
                }
                let mut score = [0u64; 4];
                // x faces: node x-1 and node x+a on every line of the window.
                if a == nx {
                    add_wall(&mut score);
                } else {
                    let all_busy = !s.box_any[line] & all;
                    let any_busy = !s.box_all[line] & all;
                    add_face(&mut score, rotl(all_busy, 1, nx), rotl(any_busy, 1, nx));
                    add_face(&mut score, rotr(all_busy, a, nx), rotr(any_busy, a, nx));
                }
                // y faces: `a` nodes on lines y-1 and y+b, over the z window.
                if b == ny {
                    add_wall(&mut score);
                } else {
                    for yy in [wrap(y + ny - 1, ny), wrap(y + b, ny)] {
                        let face = (yy + ny * z) as usize;
                        let (free_all, free_any) = (s.z_all[face], s.z_any[face]);
                        add_run_face(&mut score, free_all, free_any, a, nx);
                    }
                }
                // z faces: `a` nodes on lines z-1 and z+c, over the y window.
                if c == nz {
                    add_wall(&mut score);
                } else {
                    for zz in [wrap(z + nz - 1, nz), wrap(z + c, nz)] {
                        let face = (y + ny * zz) as usize;
                        let (free_all, free_any) = (s.y_all[face], s.y_any[face]);
                        add_run_face(&mut score, free_all, free_any, a, nx);
                    }
                }
                let (value, at) = highest(fit, &score);
                if best.is_none_or(|(top, _)| value > top) {
                    best = Some((value, [at.trailing_zeros(), y, z]));
                    // Nothing scores above 12, and later lines hold only
                    // higher origin nodes, so the first 12 is the answer.
                    if value == PERFECT {
                        break 'planes;
                    }
                }
            }
        }
        best.map(|(_, origin)| origin)
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
                let first = nx * line;
                let wrap = (nx - origin[0]).min(a);
                nodes.extend(first + origin[0]..first + origin[0] + wrap);
                nodes.extend(first..first + (a - wrap));
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

/// The highest score: all six faces against busy nodes or walls.
/// A shape for every power of two up to 256 nodes on a 1,024-node
/// 16×8×8 torus, each as near a cube as the size allows: the layout the
/// benchmark and the tests use.
pub const CUBE_SHAPES_16X8X8: [(u32, [u32; 3]); 9] = [
    (1, [1, 1, 1]),
    (2, [2, 1, 1]),
    (4, [2, 2, 1]),
    (8, [2, 2, 2]),
    (16, [4, 2, 2]),
    (32, [4, 4, 2]),
    (64, [4, 4, 4]),
    (128, [8, 4, 4]),
    (256, [8, 8, 4]),
];

const PERFECT: u32 = 12;

/// Adds one face: 1 where some node across it is busy, 1 more where all
/// are (both given as masks over origins x).
///
/// "All busy" implies "some busy", so the face is the 2-bit number
/// `all_busy`:`any_busy ^ all_busy`, added to the counters with one ripple
/// of carries instead of two increments.
fn add_face(score: &mut [u64; 4], all_busy: u64, any_busy: u64) {
    debug_assert_eq!(all_busy & !any_busy, 0, "all busy without some busy");
    let (high, low) = (all_busy, any_busy ^ all_busy);
    let carry0 = score[0] & low;
    score[0] ^= low;
    let one = score[1];
    score[1] = one ^ high ^ carry0;
    let carry1 = (one & high) | (carry0 & (one ^ high));
    let carry2 = score[2] & carry1;
    score[2] ^= carry1;
    score[3] ^= carry2;
}

/// Adds a face of `a` nodes on one neighbouring line, from that line's
/// "all free" and "some free" masks over the window.
fn add_run_face(score: &mut [u64; 4], free_all: u64, free_any: u64, a: u32, nx: u32) {
    let all = full(nx);
    // All busy along x..x+a: no bit of the run is free anywhere in the window.
    let all_busy = run_and(!free_any & all, a, nx);
    // Some busy: not every bit of the run is free everywhere.
    let any_busy = !run_and(free_all, a, nx) & all;
    add_face(score, all_busy, any_busy);
}

/// A face spanning its whole dimension: nothing lies across it (2).
fn add_wall(score: &mut [u64; 4]) {
    add_face(score, u64::MAX, u64::MAX);
}

/// The highest score among the origins in `fit`, and the origins having it.
fn highest(fit: u64, score: &[u64; 4]) -> (u32, u64) {
    let (mut value, mut at) = (0, fit);
    for plane in (0..4).rev() {
        if at & score[plane] != 0 {
            at &= score[plane];
            value |= 1 << plane;
        }
    }
    (value, at)
}

/// `out[y, z]` = AND (OR when not `AND`) of `src[y..y+w, z]`, wrapping in y.
fn window_y<const AND: bool>(out: &mut [u64], src: &[u64], ny: u32, nz: u32, w: u32) {
    out.copy_from_slice(src);
    let ny = ny as usize;
    for z in 0..nz as usize {
        let row = &src[z * ny..(z + 1) * ny];
        let to = &mut out[z * ny..(z + 1) * ny];
        for k in 1..w as usize {
            // Line y takes line y+k: the row shifted by k, wrapping.
            let (head, tail) = to.split_at_mut(ny - k);
            combine::<AND>(head, &row[k..]);
            combine::<AND>(tail, &row[..k]);
        }
    }
}

/// `out[y, z]` = AND (OR when not `AND`) of `src[y, z..z+w]`, wrapping in z.
fn window_z<const AND: bool>(out: &mut [u64], src: &[u64], ny: u32, nz: u32, w: u32) {
    out.copy_from_slice(src);
    let (ny, nz) = (ny as usize, nz as usize);
    for k in 1..w as usize {
        // Plane z takes plane z+k: the whole array shifted by k planes.
        let (head, tail) = out.split_at_mut((nz - k) * ny);
        combine::<AND>(head, &src[k * ny..]);
        combine::<AND>(tail, &src[..k * ny]);
    }
}

/// `acc[i] &= v[i]` (or `|=`), element by element.
fn combine<const AND: bool>(acc: &mut [u64], v: &[u64]) {
    for (a, b) in acc.iter_mut().zip(v) {
        *a = if AND { *a & b } else { *a | b };
    }
}

/// `i` modulo `n` for `i < 2n`, without a division.
fn wrap(i: u32, n: u32) -> u32 {
    if i >= n { i - n } else { i }
}

/// The `n` low bits set.
fn full(n: u32) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// `a` consecutive bits from bit 0.
fn run_bits(a: u32) -> u64 {
    full(a)
}

/// Rotates a line of `n` bits so bit `i` moves to `i + k` (`k < n`).
fn rotl(m: u64, k: u32, n: u32) -> u64 {
    if k == 0 {
        return m;
    }
    ((m << k) | (m >> (n - k))) & full(n)
}

/// Rotates a line of `n` bits so bit `i + k` moves to `i` (`0 < k < n`).
fn rotr(m: u64, k: u32, n: u32) -> u64 {
    ((m >> k) | (m << (n - k))) & full(n)
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
