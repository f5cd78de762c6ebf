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
//! Cheap: free nodes are bits of 128-bit words. When an x×y plane holds at
//! most 128 nodes (a T3D's 16×8 does) one word is a whole plane, its rows
//! lanes of `x` bits; otherwise one word is one row along x. "The box fits
//! at x" and "every / some node across a face is busy" are runs of bits
//! within a lane, combined across rows and planes by AND / OR windows, so
//! one allocation evaluates every origin with a few word operations per
//! plane (or row) and a bit-sliced adder for the scores (one ripple of
//! carries per face); no per-node work except marking the chosen box.

use std::collections::BTreeMap;

use super::{AllocError, Allocator, Part, Placement};

/// A set of free bits: a plane of lanes, or one row.
type Word = u128;

/// A 3-D torus of `dims[0] × dims[1] × dims[2]` nodes, node
/// `x + X * (y + Y * z)`, with one box shape per job size.
#[derive(Clone, Debug)]
pub struct Shapes {
    dims: [u32; 3],
    shapes: BTreeMap<u32, [u32; 3]>,
    layout: Layout,
    /// Per word (`layout.word_of`): bit `x + X * row` set when free.
    free: Vec<Word>,
    free_count: u32,
    /// Working space for `allocate`, not part of the state.
    scratch: Scratch,
}

/// How nodes map to words, and the masks the lane operations use.
#[derive(Clone, Debug)]
struct Layout {
    nx: u32,
    ny: u32,
    nz: u32,
    /// Rows along x per word: `ny` (a word is a plane) or 1 (a row).
    rows: u32,
    /// Words per x×y plane: `ny / rows`.
    per_plane: usize,
    /// The bits that are nodes: `nx * rows` low bits.
    valid: Word,
    /// `low[k]`: in every lane, the `nx - k` low bits (what a rotation by
    /// `k` shifts down); `high[k]` the other `k` bits of every lane.
    low: Vec<Word>,
    high: Vec<Word>,
}

/// Bit `x` set when bits `x..x+a` of its lane (wrapping) are all set: a
/// run doubles its length with each rotation (1, 2, 4, … then the rest),
/// so at most 8 steps cover a lane of 128. The masks are looked up once
/// per allocation, not once per word.
struct Runs {
    /// Rotate by `k`: keep `low` of the word shifted down, `high` of the
    /// word shifted up.
    steps: [(u32, Word, Word); 8],
    len: usize,
}

impl Runs {
    #[inline]
    fn of(&self, m: Word, nx: u32) -> Word {
        let mut acc = m;
        for &(k, low, high) in &self.steps[..self.len] {
            acc &= ((acc >> k) & low) | ((acc << (nx - k)) & high);
        }
        acc
    }
}

/// Per-word buffers reused by every allocation (no allocation on the hot
/// path besides the placement itself).
#[derive(Clone, Debug, Default)]
struct Scratch {
    /// Free on every / some plane of the z window.
    z_all: Vec<Word>,
    z_any: Vec<Word>,
    /// Runs of `a` along x free on every plane / busy on every plane of
    /// the z window.
    z_run: Vec<Word>,
    z_busy_run: Vec<Word>,
    /// The same over the y window.
    y_run: Vec<Word>,
    y_busy_run: Vec<Word>,
    /// Free on every / some row of the y × z window.
    box_all: Vec<Word>,
    box_any: Vec<Word>,
    /// Origins where the box fits.
    fit: Vec<Word>,
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
    /// the torus; the first dimension is at most 128 nodes.
    pub fn new(dims: [u32; 3], shapes: BTreeMap<u32, [u32; 3]>) -> Result<Shapes, String> {
        let [x, y, z] = dims;
        if dims.contains(&0) {
            return Err(format!(
                "torus {x}x{y}x{z} has an empty dimension; give every dimension at least 1 node"
            ));
        }
        if x > Word::BITS {
            return Err(format!(
                "torus {x}x{y}x{z}: the first dimension is at most {} nodes; \
                 list the dimensions with a shorter one first",
                Word::BITS
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
        let rows = if u64::from(x) * u64::from(y) <= u64::from(Word::BITS) {
            y
        } else {
            1
        };
        Ok(Shapes::with_rows(dims, shapes, rows))
    }

    /// The torus with `rows` rows along x per word (`ny` or 1), all free.
    fn with_rows(dims: [u32; 3], shapes: BTreeMap<u32, [u32; 3]>, rows: u32) -> Shapes {
        let layout = Layout::new(dims, rows);
        let words = layout.per_plane * dims[2] as usize;
        let scratch = Scratch {
            z_all: vec![0; words],
            z_any: vec![0; words],
            z_run: vec![0; words],
            z_busy_run: vec![0; words],
            y_run: vec![0; words],
            y_busy_run: vec![0; words],
            box_all: vec![0; words],
            box_any: vec![0; words],
            fit: vec![0; words],
        };
        Shapes {
            dims,
            shapes,
            free: vec![layout.valid; words],
            layout,
            free_count: dims.iter().product(),
            scratch,
        }
    }

    /// The same empty torus with one row per word, the layout of tori
    /// whose planes exceed a word, to test it on small ones.
    #[cfg(test)]
    pub(crate) fn row_per_word(&self) -> Shapes {
        Shapes::with_rows(self.dims, self.shapes.clone(), 1)
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
        let (word, bit) = self.layout.bit_of(index);
        self.free.get(word).is_some_and(|w| w >> bit & 1 == 1)
    }

    /// The best origin for a box `[a, b, c]`, or `None` if it fits nowhere.
    ///
    /// Runs along x and windows across rows and planes commute, so each
    /// run is taken once per word on a z or y window and shared: by the
    /// fit test and by the faces that read a neighbouring row or plane.
    fn best_origin(&mut self, [a, b, c]: [u32; 3]) -> Option<[u32; 3]> {
        let l = &self.layout;
        let (nx, ny, nz) = (l.nx, l.ny, l.nz);
        let s = &mut self.scratch;
        let runs = l.runs(a);
        // Free on every plane of the z window, and runs of `a` of those
        // from x: the box fits at x if that holds on every row of the y
        // window too.
        l.window_z::<true>(&mut s.z_all, &self.free, c);
        for (run, &word) in s.z_run.iter_mut().zip(&s.z_all) {
            *run = runs.of(word, nx);
        }
        l.window_y::<true>(&mut s.fit, &s.z_run, b);
        // How many words hold origins, and whether one holds several.
        let (mut words, mut several) = (0, false);
        for fit in &s.fit {
            words += u32::from(*fit != 0);
            several |= *fit & fit.wrapping_sub(1) != 0;
        }
        if words == 0 {
            return None;
        }
        if words == 1 && !several {
            let w = s.fit.iter().position(|&m| m != 0)?;
            return Some(l.origin_of(w, s.fit[w].trailing_zeros()));
        }
        // Busy across a face = not free; "all busy" is the complement of
        // "some free" (an OR window), "some busy" of "all free". Only the
        // windows some face reads: a face spanning its dimension is a wall
        // and reads none.
        if a != nx || b != ny {
            l.window_z::<false>(&mut s.z_any, &self.free, c);
        }
        if a != nx {
            // x faces read single columns of the whole y × z window.
            l.window_y::<true>(&mut s.box_all, &s.z_all, b);
            l.window_y::<false>(&mut s.box_any, &s.z_any, b);
        }
        if b != ny {
            // y faces: runs on one row over the z window, all busy.
            for (busy, &word) in s.z_busy_run.iter_mut().zip(&s.z_any) {
                *busy = runs.of(!word & l.valid, nx);
            }
        }
        if c != nz {
            // z faces: runs on one plane over the y window.
            l.window_y::<true>(&mut s.y_run, &self.free, b);
            l.window_y::<false>(&mut s.y_busy_run, &self.free, b);
            for (run, busy) in s.y_run.iter_mut().zip(s.y_busy_run.iter_mut()) {
                *run = runs.of(*run, nx);
                *busy = runs.of(!*busy & l.valid, nx);
            }
        }
        let total = s.fit.len();
        let mut best: Option<(u32, usize, u32)> = None;
        for w in 0..total {
            let fit = s.fit[w];
            if fit == 0 {
                continue;
            }
            let mut score = [0; 4];
            // x faces: node x-1 and node x+a on every row of the window.
            if a == nx {
                add_wall(&mut score);
            } else {
                let all_busy = !s.box_any[w] & l.valid;
                let any_busy = !s.box_all[w] & l.valid;
                add_face(&mut score, l.x_rotl(all_busy, 1), l.x_rotl(any_busy, 1));
                add_face(&mut score, l.x_rotr(all_busy, a), l.x_rotr(any_busy, a));
            }
            // y faces: `a` nodes on rows y-1 and y+b, over the z window.
            if b == ny {
                add_wall(&mut score);
            } else {
                for k in [ny - 1, b] {
                    let all_busy = l.rows_shifted(&s.z_busy_run, w, k);
                    let any_busy = !l.rows_shifted(&s.z_run, w, k) & l.valid;
                    add_face(&mut score, all_busy, any_busy);
                }
            }
            // z faces: `a` nodes on planes z-1 and z+c, over the y window.
            if c == nz {
                add_wall(&mut score);
            } else {
                for k in [nz - 1, c] {
                    let face = (w + l.per_plane * k as usize) % total;
                    add_face(&mut score, s.y_busy_run[face], !s.y_run[face] & l.valid);
                }
            }
            let (value, at) = highest(fit, &score);
            if best.is_none_or(|(top, _, _)| value > top) {
                best = Some((value, w, at.trailing_zeros()));
                // Nothing scores above 12, and later words hold only
                // higher origin nodes, so the first 12 is the answer.
                if value == PERFECT {
                    break;
                }
            }
        }
        best.map(|(_, w, bit)| l.origin_of(w, bit))
    }

    /// Marks the box at `origin` busy and lists its nodes, first dimension
    /// fastest from the origin.
    fn take_box(&mut self, origin: [u32; 3], [a, b, c]: [u32; 3]) -> Vec<u32> {
        let l = &self.layout;
        let (nx, ny, nz) = (l.nx, l.ny, l.nz);
        let row = rotl(full(a), origin[0], nx);
        let mut nodes = Vec::with_capacity((a * b * c) as usize);
        for dz in 0..c {
            let z = (origin[2] + dz) % nz;
            for dy in 0..b {
                let y = (origin[1] + dy) % ny;
                let line = y + ny * z;
                let (word, shift) = l.bit_of(nx * line);
                self.free[word] &= !(row << shift);
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

impl Layout {
    fn new([nx, ny, nz]: [u32; 3], rows: u32) -> Layout {
        let lanes = (0..rows).fold(0 as Word, |m, r| m | 1 << (nx * r));
        let valid = full(nx * rows);
        let low: Vec<Word> = (0..=nx).map(|k| full(nx - k).wrapping_mul(lanes)).collect();
        Layout {
            nx,
            ny,
            nz,
            rows,
            per_plane: (ny / rows) as usize,
            valid,
            high: low.iter().map(|l| valid & !l).collect(),
            low,
        }
    }

    /// The word holding node `index` and its bit there.
    fn bit_of(&self, index: u32) -> (usize, u32) {
        let per_word = self.nx * self.rows;
        ((index / per_word) as usize, index % per_word)
    }

    /// The origin node at bit `bit` of word `w`.
    fn origin_of(&self, w: usize, bit: u32) -> [u32; 3] {
        let y = (w % self.per_plane) as u32 * self.rows + bit / self.nx;
        [bit % self.nx, y, (w / self.per_plane) as u32]
    }

    /// Every lane rotated so bit `x + k` moves to `x` (`k < nx`).
    fn x_rotr(&self, m: Word, k: u32) -> Word {
        if k == 0 {
            return m;
        }
        let k = k as usize;
        ((m >> k) & self.low[k]) | ((m << (self.nx as usize - k)) & self.high[k])
    }

    /// Every lane rotated so bit `x` moves to `x + k` (`0 < k < nx`).
    fn x_rotl(&self, m: Word, k: u32) -> Word {
        self.x_rotr(m, self.nx - k)
    }

    /// The rotations that find runs of `a` along x (see [`Runs`]).
    fn runs(&self, a: u32) -> Runs {
        let mut runs = Runs {
            steps: [(0, 0, 0); 8],
            len: 0,
        };
        let mut add = |k: u32| {
            let k = k as usize;
            runs.steps[runs.len] = (k as u32, self.low[k], self.high[k]);
            runs.len += 1;
        };
        let mut len = 1;
        while len * 2 <= a {
            add(len);
            len *= 2;
        }
        if len < a {
            add(a - len);
        }
        runs
    }

    /// Word `w` of `src` with its rows shifted so row `y` holds row
    /// `y + k` (wrapping, `k < ny`).
    fn rows_shifted(&self, src: &[Word], w: usize, k: u32) -> Word {
        if k == 0 {
            src[w]
        } else if self.per_plane == 1 {
            // The plane is one word: rotate it by whole rows.
            let (n, s) = (self.nx * self.ny, self.nx * k);
            ((src[w] >> s) | (src[w] << (n - s))) & self.valid
        } else {
            let (plane, y) = (w / self.per_plane, (w % self.per_plane) as u32);
            let y = if y + k >= self.ny {
                y + k - self.ny
            } else {
                y + k
            };
            src[plane * self.per_plane + y as usize]
        }
    }

    /// `out[w]` = AND (OR when not `AND`) of `src` rows `y..y+h` at `w`.
    fn window_y<const AND: bool>(&self, out: &mut [Word], src: &[Word], h: u32) {
        if self.per_plane == 1 {
            // A word is a plane: double the window within each word, as
            // runs along x are found (log h rotations of whole rows, not h).
            let (n, mut shifts, mut count) = (self.nx * self.ny, [0; 8], 0);
            let mut len = 1;
            while len * 2 <= h {
                shifts[count] = self.nx * len;
                count += 1;
                len *= 2;
            }
            if len < h {
                shifts[count] = self.nx * (h - len);
                count += 1;
            }
            for (to, &word) in out.iter_mut().zip(src) {
                let mut acc = word;
                for &s in &shifts[..count] {
                    let v = ((acc >> s) | (acc << (n - s))) & self.valid;
                    acc = if AND { acc & v } else { acc | v };
                }
                *to = acc;
            }
            return;
        }
        for (w, to) in out.iter_mut().enumerate() {
            let mut acc = src[w];
            for k in 1..h {
                let v = self.rows_shifted(src, w, k);
                acc = if AND { acc & v } else { acc | v };
            }
            *to = acc;
        }
    }

    /// `out[w]` = AND (OR when not `AND`) of `src` planes `z..z+d` at `w`.
    fn window_z<const AND: bool>(&self, out: &mut [Word], src: &[Word], d: u32) {
        out.copy_from_slice(src);
        let len = out.len();
        for k in 1..d as usize {
            // Plane z takes plane z+k: the whole array shifted by k planes.
            let shift = k * self.per_plane;
            let (head, tail) = out.split_at_mut(len - shift);
            combine::<AND>(head, &src[shift..]);
            combine::<AND>(tail, &src[..shift]);
        }
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
        if n == 0 {
            return None;
        }
        let (&size, &extent) = self.shapes.range(n..).next()?;
        if size > self.free_count {
            return None;
        }
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
        for &node in nodes {
            let (word, bit) = self.layout.bit_of(node);
            if let Some(w) = self.free.get_mut(word) {
                let bit = 1 << bit;
                if *w & bit == 0 {
                    *w |= bit;
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
            let (word, bit) = self.layout.bit_of(node);
            self.free[word] &= !(1 << bit);
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

/// The highest score: all six faces against busy nodes or walls.
const PERFECT: u32 = 12;

/// Adds one face: 1 where some node across it is busy, 1 more where all
/// are (both given as masks over origins).
///
/// "All busy" implies "some busy", so the face is the 2-bit number
/// `all_busy`:`any_busy ^ all_busy`, added to the counters with one ripple
/// of carries instead of two increments.
fn add_face(score: &mut [Word; 4], all_busy: Word, any_busy: Word) {
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

/// A face spanning its whole dimension: nothing lies across it (2).
fn add_wall(score: &mut [Word; 4]) {
    add_face(score, Word::MAX, Word::MAX);
}

/// The highest score among the origins in `fit`, and the origins having it.
fn highest(fit: Word, score: &[Word; 4]) -> (u32, Word) {
    let (mut value, mut at) = (0, fit);
    for plane in (0..4).rev() {
        if at & score[plane] != 0 {
            at &= score[plane];
            value |= 1 << plane;
        }
    }
    (value, at)
}

/// `acc[i] &= v[i]` (or `|=`), element by element.
fn combine<const AND: bool>(acc: &mut [Word], v: &[Word]) {
    for (a, b) in acc.iter_mut().zip(v) {
        *a = if AND { *a & b } else { *a | b };
    }
}

/// The `n` low bits set.
fn full(n: u32) -> Word {
    if n >= Word::BITS {
        Word::MAX
    } else {
        (1 << n) - 1
    }
}

/// Rotates a row of `n` bits so bit `i` moves to `i + k` (`k < n`).
fn rotl(m: Word, k: u32, n: u32) -> Word {
    if k == 0 {
        return m;
    }
    ((m << k) | (m >> (n - k))) & full(n)
}

#[cfg(test)]
#[path = "shapes_tests.rs"]
mod tests;
