//! Choosing nodes for a job within one node set: the papers' allocators.
//!
//! Each answers the same question through [`Allocator`]: place `n` nodes,
//! free them again. [`m2db`] is SDSC's M2DB on a 2-D mesh (the Paragon);
//! [`torus`] gives power-of-two subtori of an N-D torus by Equal or
//! Non-Equal Partition; [`shapes`] is EPCC's fixed shape per size on the
//! T3D's 3-D torus. A set without topology (a cluster, the ANL SP's
//! switch) has no allocator: any `n` free nodes will do, and the
//! scheduler counts them.
//!
//! This crate knows nothing of jobs, queues or configuration: a node is an
//! index into its set, and qmesh-core turns a set's topology into one of
//! these (`Topology::allocator`). Same rule as the core: no I/O, no clock.

pub mod m2db;
pub mod shapes;
pub mod torus;

use std::fmt;

use serde::{Deserialize, Serialize};

/// A job's place in one node set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The nodes, as indices into the set's node list (its topology order:
    /// for a mesh W wide, node `y * W + x`; for a torus d1×…×dk, node
    /// `c1 + d1 * (c2 + d2 * (c3 + …))`, the first dimension fastest).
    pub nodes: Vec<u32>,
    /// How the topology sees them, for qstat and the map.
    pub parts: Vec<Part>,
}

/// One piece of a placement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Part {
    /// A rectangle of a mesh: upper-left corner `(x, y)`, `w` wide, `h` high.
    Block { x: u32, y: u32, w: u32, h: u32 },
    /// A box of a torus: its origin and its extent in every dimension
    /// (coordinates wrap around).
    Box { origin: Vec<u32>, extent: Vec<u32> },
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |v: &[u32], sep: &str| {
            v.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(sep)
        };
        match self {
            Part::Block { x, y, w, h } => write!(f, "{x},{y},{w},{h}"),
            Part::Box { origin, extent } => {
                write!(f, "({})+{}", join(origin, ","), join(extent, "x"))
            }
        }
    }
}

/// Why nodes could not be taken as asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    #[error("node {node} is outside the node set ({size} nodes)")]
    OutOfRange { node: u32, size: u32 },
    #[error("node {node} is already taken")]
    Taken { node: u32 },
}

/// What every topology's allocator answers. One instance per node set; it
/// holds which nodes are free. The scheduler rebuilds it from the state at
/// each pass (`occupy` the nodes of running jobs and the nodes down), then
/// asks it for placements: a job starts only with a placement in hand.
pub trait Allocator: fmt::Debug + Send {
    /// How many nodes a request for `n` takes here: `n`, or more where the
    /// topology rounds requests up (a torus: the next power of two); `None`
    /// if no request of `n` can ever be placed in this set.
    fn size_for(&self, n: u32) -> Option<u32>;

    /// Places a request for `n` nodes among the free ones, or `None`.
    fn allocate(&mut self, n: u32) -> Option<Placement>;

    /// Places `n` nodes like `allocate`, or else on any free nodes the
    /// topology could give as one placement, however this allocator's
    /// own bookkeeping has them cut: for a job a reservation promised a
    /// start. Where `allocate` answers from history (a torus's semitori
    /// are cut by the requests before, and rebuilt from the nodes taken at
    /// every pass), a promise made on one pass's cuts may find other cuts
    /// on the next; this answer depends only on which nodes are free.
    /// `allocate` itself where that already holds.
    fn allocate_promised(&mut self, n: u32) -> Option<Placement> {
        self.allocate(n)
    }

    /// Gives nodes back (those of a placement, or any taken by `occupy`),
    /// merging free pieces back into their parents where the topology does.
    fn release(&mut self, nodes: &[u32]);

    /// Takes exactly these nodes (a running job after a restart, a node
    /// that is down). Nothing changes on error.
    fn occupy(&mut self, nodes: &[u32]) -> Result<(), AllocError>;

    /// Nodes free now.
    fn free_count(&self) -> u32;

    /// Nodes in the set.
    fn capacity(&self) -> u32;

    /// A copy, for planning on a scratch state.
    fn boxed_clone(&self) -> Box<dyn Allocator>;
}

/// The promises every allocator keeps, checked over a sequence of
/// requests: `(true, n)` asks for `n` nodes, `(false, k)` frees the
/// `k`-th live placement (modulo how many there are). Every allocator's
/// property test calls this with its own random sequences.
#[cfg(test)]
pub(crate) fn check_allocator<A>(fresh: &A, ops: &[(bool, u32)]) -> Result<(), String>
where
    A: Allocator + Clone + PartialEq,
{
    let mut a = fresh.clone();
    let mut live: Vec<Placement> = Vec::new();
    let mut taken = vec![false; a.capacity() as usize];
    for &(alloc, n) in ops {
        if alloc {
            let Some(p) = a.allocate(n) else { continue };
            let want = a
                .size_for(n)
                .ok_or(format!("placed {n} nodes that size_for says never fit"))?;
            if p.nodes.len() as u32 != want {
                return Err(format!("asked {n}, size_for {want}, got {}", p.nodes.len()));
            }
            for &node in &p.nodes {
                let slot = taken
                    .get_mut(node as usize)
                    .ok_or(format!("node {node} out of range"))?;
                if *slot {
                    return Err(format!("node {node} given twice"));
                }
                *slot = true;
            }
            live.push(p);
        } else if !live.is_empty() {
            let p = live.remove(n as usize % live.len());
            for &node in &p.nodes {
                taken[node as usize] = false;
            }
            a.release(&p.nodes);
        }
        let busy = taken.iter().filter(|&&t| t).count() as u32;
        if a.free_count() != a.capacity() - busy {
            return Err(format!(
                "free_count {} but {} of {} are taken",
                a.free_count(),
                busy,
                a.capacity()
            ));
        }
    }
    for p in live.drain(..) {
        a.release(&p.nodes);
    }
    if a != *fresh {
        return Err("after freeing everything the allocator is not as new".into());
    }
    Ok(())
}
