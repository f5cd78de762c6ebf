//! The torus seed's geometry, apart from the allocator's bookkeeping:
//! preprocessing a torus into power-of-two semitori, the Equal and
//! Non-Equal Partition of a semitorus, and the two conversions of a
//! semitorus into the torus a job sees. Kept separate so each worked
//! example of the seed is a test of one small function.

use serde::{Deserialize, Serialize};

/// The most dimensions a torus may have (QCDOC has six).
pub const MAX_DIMS: usize = 8;

/// How a semitorus larger than the request is cut (seed section 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Partition {
    /// Equal Partition: identical pieces of the request's size, each as
    /// high-dimensional and as cube-like as the semitorus allows.
    Ep,
    /// Non-Equal Partition: 1 + log p pieces of growing size, halving the
    /// largest dimension first, so big pieces stay whole for big jobs.
    Nep,
}

/// How the chosen semitorus becomes the job's torus (seed section 2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Conversion {
    /// All dimensions missing their wrap-around edge become one ring:
    /// 2²×2³×2×2² (first two open) → 2⁵×2×2². More dimensions.
    Collapse,
    /// Each open dimension pairs with a closed one into one ring:
    /// 2²×2³×2×2² → 2⁴×2⁴. A more cube-like torus.
    Pair,
}

/// A semitorus: a box of the torus with power-of-two sides, given by its
/// origin and the log2 of its extent in every dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Semi {
    pub origin: [u32; MAX_DIMS],
    pub exps: [u8; MAX_DIMS],
}

impl Semi {
    /// log2 of its node count.
    pub fn level(&self) -> u32 {
        self.exps.iter().map(|&e| e as u32).sum()
    }

    /// Whether the node at `coord` lies inside.
    pub fn contains(&self, coord: &[u32]) -> bool {
        coord
            .iter()
            .enumerate()
            .all(|(i, &c)| c >= self.origin[i] && c - self.origin[i] < 1 << self.exps[i])
    }
}

/// Why a torus cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TorusError {
    #[error("a torus needs at least one dimension; give its sizes, e.g. 2x2x2x6x8")]
    NoDimensions,
    #[error("the torus has {count} dimensions; at most {MAX_DIMS} are supported")]
    TooManyDimensions { count: usize },
    #[error("dimension {dim} of the torus has size 0; every dimension needs a node")]
    EmptyDimension { dim: usize },
    #[error(
        "dimension {dim} of the torus has size {size}, not a power of two, and so has \
         dimension {other} ({other_size}); all but one dimension must be powers of two"
    )]
    NotPowerOfTwo {
        dim: usize,
        size: u32,
        other: usize,
        other_size: u32,
    },
    #[error("the torus has more than 2^31 nodes; give smaller dimensions")]
    TooLarge,
}

/// Preprocessing (seed 2.3): the one dimension of size 2^a·p (p odd) is cut
/// along p's binary digits into segments 2^a·2^b, largest first, each
/// giving one semitorus; with every dimension a power of two the torus is
/// its own single semitorus. Dimensions are numbered from 1 in errors.
pub fn preprocess(dims: &[u32]) -> Result<Vec<Semi>, TorusError> {
    if dims.is_empty() {
        return Err(TorusError::NoDimensions);
    }
    if dims.len() > MAX_DIMS {
        return Err(TorusError::TooManyDimensions { count: dims.len() });
    }
    let mut odd_dim: Option<usize> = None;
    let mut total: u64 = 1;
    for (i, &d) in dims.iter().enumerate() {
        if d == 0 {
            return Err(TorusError::EmptyDimension { dim: i + 1 });
        }
        total = total.saturating_mul(d as u64);
        if !d.is_power_of_two() {
            if let Some(o) = odd_dim {
                return Err(TorusError::NotPowerOfTwo {
                    dim: i + 1,
                    size: d,
                    other: o + 1,
                    other_size: dims[o],
                });
            }
            odd_dim = Some(i);
        }
    }
    if total > 1 << 31 {
        return Err(TorusError::TooLarge);
    }
    let mut base = Semi {
        origin: [0; MAX_DIMS],
        exps: [0; MAX_DIMS],
    };
    for (i, &d) in dims.iter().enumerate() {
        base.exps[i] = d.trailing_zeros() as u8;
    }
    let Some(j) = odd_dim else {
        return Ok(vec![base]);
    };
    let a = dims[j].trailing_zeros();
    let p = dims[j] >> a;
    let mut roots = Vec::new();
    let mut offset = 0;
    for b in (0..32).rev().filter(|b| p & (1 << b) != 0) {
        let mut s = base;
        s.exps[j] = (a + b) as u8;
        s.origin[j] = offset;
        offset += 1 << (a + b);
        roots.push(s);
    }
    Ok(roots)
}

/// The extents (log2) of each piece of the Equal Partition of `s` for a
/// request of 2^k nodes: one doubling at a time to the dimension whose
/// piece is smallest and still has room, the larger dimension first; so
/// k ≤ h gives 2×…×2 over k dimensions, and k > h sides as equal as may be.
pub fn ep_piece(s: &Semi, ndims: usize, k: u32) -> [u8; MAX_DIMS] {
    let mut piece = [0u8; MAX_DIMS];
    for _ in 0..k {
        let best = (0..ndims)
            .filter(|&i| piece[i] < s.exps[i])
            .min_by_key(|&i| (piece[i], std::cmp::Reverse(s.exps[i]), i));
        match best {
            Some(i) => piece[i] += 1,
            None => break,
        }
    }
    piece
}

/// Cuts `s` (level > k) into pieces by `scheme`, writing them to `out`
/// (cleared first) with the piece of 2^k nodes at `s`'s origin first.
pub fn partition(scheme: Partition, s: &Semi, ndims: usize, k: u32, out: &mut Vec<Semi>) {
    out.clear();
    match scheme {
        Partition::Ep => equal(s, ndims, k, out),
        Partition::Nep => non_equal(s, ndims, k, out),
    }
}

fn equal(s: &Semi, ndims: usize, k: u32, out: &mut Vec<Semi>) {
    let piece = ep_piece(s, ndims, k);
    let mut counts = [1u32; MAX_DIMS];
    for i in 0..ndims {
        counts[i] = 1 << (s.exps[i] - piece[i]);
    }
    let mut at = [0u32; MAX_DIMS];
    loop {
        let mut p = Semi {
            origin: s.origin,
            exps: piece,
        };
        for i in 0..ndims {
            p.origin[i] += at[i] << piece[i];
        }
        out.push(p);
        let mut i = 0;
        loop {
            if i == ndims {
                return;
            }
            at[i] += 1;
            if at[i] < counts[i] {
                break;
            }
            at[i] = 0;
            i += 1;
        }
    }
}

/// Halves the largest dimension (by size, then by position) down to
/// nothing, then the next, and so on, keeping the upper half each time as
/// a piece, until the lower half has 2^k nodes: the seed's 2×2²×2²×2³ with
/// m = 2⁴ halves the 2³ three times and then one 2².
fn non_equal(s: &Semi, ndims: usize, k: u32, out: &mut Vec<Semi>) {
    let mut order = [0usize; MAX_DIMS];
    for (i, o) in order.iter_mut().enumerate().take(ndims) {
        *o = i;
    }
    order[..ndims].sort_by_key(|&i| (s.exps[i], i));
    let mut cur = *s;
    let mut level = cur.level();
    let mut next = ndims;
    while level > k && next > 0 {
        let d = order[next - 1];
        if cur.exps[d] == 0 {
            next -= 1;
            continue;
        }
        cur.exps[d] -= 1;
        let mut upper = cur;
        upper.origin[d] += 1 << cur.exps[d];
        out.push(upper);
        level -= 1;
    }
    out.push(cur);
    out.reverse();
}

/// Which dimensions of a box keep their wrap-around edge in a torus of
/// `dims`: those spanning the whole ring, and those of 2 nodes or fewer.
pub fn wraps(dims: &[u32], extent: &[u32]) -> Vec<bool> {
    dims.iter()
        .zip(extent)
        .map(|(&d, &e)| e == d || e <= 2)
        .collect()
}

/// The torus a job is given for a semitorus of `extent` whose dimensions
/// `wraps` keep (or miss) their wrap-around edge. Dimensions of one node
/// vanish; each group of merged dimensions takes the place of its first.
/// With Collapse and a single open dimension there is nothing to merge it
/// with, so it stays as it is.
pub fn convert(conversion: Conversion, extent: &[u32], wraps: &[bool]) -> Vec<u32> {
    let live: Vec<usize> = (0..extent.len()).filter(|&i| extent[i] > 1).collect();
    let mut open: Vec<usize> = live.iter().copied().filter(|&i| !wraps[i]).collect();
    let closed: Vec<usize> = live.iter().copied().filter(|&i| wraps[i]).collect();
    // Groups of dimensions, each becoming one dimension of the torus.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    match conversion {
        Conversion::Collapse => {
            if !open.is_empty() {
                groups.push(open);
            }
            groups.extend(closed.into_iter().map(|i| vec![i]));
        }
        Conversion::Pair => {
            open.sort_by_key(|&i| (std::cmp::Reverse(extent[i]), i));
            let mut closed = closed;
            closed.sort_by_key(|&i| (extent[i], i));
            let paired = open.len().min(closed.len());
            for (&o, &c) in open.iter().zip(&closed) {
                groups.push(vec![o, c]);
            }
            if open.len() > paired {
                groups.push(open[paired..].to_vec());
            }
            groups.extend(closed[paired..].iter().map(|&i| vec![i]));
        }
    }
    groups.sort_by_key(|g| g.iter().copied().min());
    groups
        .iter()
        .map(|g| g.iter().map(|&i| extent[i]).product())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn semi(exps: &[u8]) -> Semi {
        let mut s = Semi {
            origin: [0; MAX_DIMS],
            exps: [0; MAX_DIMS],
        };
        s.exps[..exps.len()].copy_from_slice(exps);
        s
    }

    fn sides(s: &Semi, ndims: usize) -> Vec<u32> {
        s.exps[..ndims].iter().map(|&e| 1u32 << e).collect()
    }

    fn sorted_sides(exps: &[u8]) -> Vec<u32> {
        let mut v: Vec<u32> = exps.iter().filter(|&&e| e > 0).map(|&e| 1 << e).collect();
        v.sort();
        v
    }

    #[test]
    fn nep_of_the_seed_example_gives_its_five_semitori() {
        // S = 2×2²×2²×2³, m = 2⁴: p = 2⁴, 1 + log p = 5 pieces.
        let s = semi(&[1, 2, 2, 3]);
        let mut out = Vec::new();
        partition(Partition::Nep, &s, 4, 4, &mut out);
        let got: Vec<Vec<u32>> = out.iter().map(|p| sides(p, 4)).collect();
        assert_eq!(
            got,
            vec![
                vec![2, 4, 2, 1],
                vec![2, 4, 2, 1],
                vec![2, 4, 4, 1],
                vec![2, 4, 4, 2],
                vec![2, 4, 4, 4],
            ]
        );
        // The first piece is the request's, at S's origin; the pieces tile S.
        assert_eq!(out[0].origin, s.origin);
        assert_eq!(out.iter().map(|p| 1u32 << p.level()).sum::<u32>(), 256);
        assert_tiles(&s, 4, &out);
    }

    #[test]
    fn ep_of_the_seed_examples() {
        let s = semi(&[1, 2, 2, 3]);
        assert_eq!(sorted_sides(&ep_piece(&s, 4, 3)), vec![2, 2, 2]);
        assert_eq!(sorted_sides(&ep_piece(&s, 4, 6)), vec![2, 2, 4, 4]);
        let mut out = Vec::new();
        partition(Partition::Ep, &s, 4, 3, &mut out);
        assert_eq!(out.len(), 256 / 8);
        assert!(out.iter().all(|p| p.level() == 3));
        assert_eq!(out[0].origin, s.origin);
        assert_tiles(&s, 4, &out);
        partition(Partition::Ep, &s, 4, 6, &mut out);
        assert_eq!(out.len(), 4);
        assert_tiles(&s, 4, &out);
    }

    /// Every node of `s` lies in exactly one piece.
    fn assert_tiles(s: &Semi, ndims: usize, pieces: &[Semi]) {
        let n = 1u32 << s.level();
        for idx in 0..n {
            let mut coord = vec![0u32; ndims];
            let mut rest = idx;
            for (i, c) in coord.iter_mut().enumerate() {
                *c = s.origin[i] + (rest & ((1 << s.exps[i]) - 1));
                rest >>= s.exps[i];
            }
            let holders = pieces.iter().filter(|p| p.contains(&coord)).count();
            assert_eq!(holders, 1, "node {coord:?} in {holders} pieces");
        }
    }

    #[test]
    fn jlab_torus_preprocesses_into_two_semitori() {
        let roots = preprocess(&[2, 2, 2, 6, 8]).unwrap();
        let got: Vec<(Vec<u32>, Vec<u32>)> = roots
            .iter()
            .map(|r| (r.origin[..5].to_vec(), sides(r, 5)))
            .collect();
        assert_eq!(
            got,
            vec![
                (vec![0, 0, 0, 0, 0], vec![2, 2, 2, 4, 8]),
                (vec![0, 0, 0, 4, 0], vec![2, 2, 2, 2, 8]),
            ]
        );
        // 2·7 = 2·(4 + 2 + 1): three segments.
        let r = preprocess(&[14, 4]).unwrap();
        let segs: Vec<(u32, u32)> = r.iter().map(|s| (s.origin[0], 1 << s.exps[0])).collect();
        assert_eq!(segs, vec![(0, 8), (8, 4), (12, 2)]);
        assert_eq!(preprocess(&[2, 2, 2, 4, 4, 8]).unwrap().len(), 1);
    }

    #[test]
    fn a_second_dimension_not_a_power_of_two_is_named() {
        let err = preprocess(&[2, 6, 4, 3]).unwrap_err();
        assert_eq!(
            err,
            TorusError::NotPowerOfTwo {
                dim: 4,
                size: 3,
                other: 2,
                other_size: 6
            }
        );
        assert!(
            err.to_string()
                .contains("dimension 4 of the torus has size 3")
        );
        assert_eq!(
            preprocess(&[2, 0]).unwrap_err(),
            TorusError::EmptyDimension { dim: 2 }
        );
        assert_eq!(preprocess(&[]).unwrap_err(), TorusError::NoDimensions);
    }

    #[test]
    fn conversion_both_ways_of_the_seed() {
        // 2²×2³×2×2² with the first two dimensions missing their wrap edge.
        let extent = [4, 8, 2, 4];
        let wraps = [false, false, true, true];
        assert_eq!(
            convert(Conversion::Collapse, &extent, &wraps),
            vec![32, 2, 4]
        );
        assert_eq!(convert(Conversion::Pair, &extent, &wraps), vec![16, 16]);
        // Figure 1: a mesh with both edges missing becomes a ring.
        assert_eq!(
            convert(Conversion::Collapse, &[4, 4], &[false, false]),
            vec![16]
        );
        // A whole torus stays as it is, minus dimensions of one node.
        assert_eq!(
            convert(Conversion::Pair, &[2, 1, 4], &[true, true, true]),
            vec![2, 4]
        );
    }

    #[test]
    fn wrap_edges_exist_on_whole_rings_and_short_sides() {
        // The JLAB root 2×2×2×4×8 misses its wrap edge in the 6-node dimension.
        assert_eq!(
            wraps(&[2, 2, 2, 6, 8], &[2, 2, 2, 4, 8]),
            vec![true, true, true, false, true]
        );
        assert_eq!(wraps(&[8, 8], &[4, 2]), vec![false, true]);
    }
}
