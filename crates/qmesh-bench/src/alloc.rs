//! Allocate+free pairs per second for each topology's allocator, under the
//! request sizes the SDSC Paragon saw (seed Table 3, batch jobs: 4,987 of
//! 1 node, 653 of 2, 785 of 4, 1,267 of 8, 1,642 of 16, 2,095 of 32,
//! 3,477 of 64, 629 of 128, 122 of 256).
//!
//! A loop keeps the set busy the way a scheduler does: it asks for a job of
//! the mix; when the allocator cannot place it, it frees a random running
//! placement first. Every placement is freed by the end, so allocations =
//! frees = pairs.
//!
//! A flat set has no allocator: the scheduler counts its free nodes
//! (`Topology::allocator` gives none). Its row says so and times nothing.

use std::collections::BTreeMap;
use std::time::Instant;

use qmesh_core::alloc::{self, Allocator, Placement};
use qmesh_core::node::{Topology, TorusConversion, TorusPartition};

use crate::Report;

const MIX: [(u32, u32); 9] = qmesh_core::alloc::m2db::SDSC_TABLE3_BATCH_JOBS;

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A request size from the mix, at most `cap`.
fn size(rng: &mut XorShift, cap: u32) -> u32 {
    let total: u32 = MIX.iter().filter(|(n, _)| *n <= cap).map(|(_, w)| w).sum();
    let mut pick = (rng.next() % u64::from(total.max(1))) as u32;
    for &(n, w) in MIX.iter().filter(|(n, _)| *n <= cap) {
        if pick < w {
            return n;
        }
        pick -= w;
    }
    1
}

/// The layouts the issue names, with their allocators.
fn layouts() -> Vec<(&'static str, Topology, u32)> {
    let shapes: BTreeMap<u32, [u32; 3]> = BTreeMap::from(alloc::shapes::CUBE_SHAPES_16X8X8);
    let torus = |dims: &[u32], partition| Topology::Torus {
        dims: dims.to_vec(),
        partition,
        conversion: TorusConversion::Merge,
    };
    vec![
        ("flat 1024", Topology::Flat, 1024),
        (
            "mesh2d 16x14 (Paragon batch node set, 224 nodes), M2DB",
            Topology::Mesh2d {
                width: 16,
                height: 14,
                contiguous: false,
            },
            224,
        ),
        (
            "mesh2d 32x32, M2DB",
            Topology::Mesh2d {
                width: 32,
                height: 32,
                contiguous: false,
            },
            1024,
        ),
        (
            "torus 2x2x2x6x8 (JLAB), NEP",
            torus(&[2, 2, 2, 6, 8], TorusPartition::Nep),
            384,
        ),
        (
            "torus 2x2x2x6x8 (JLAB), EP",
            torus(&[2, 2, 2, 6, 8], TorusPartition::Ep),
            384,
        ),
        (
            "torus 2x2x2x4x4x8 (QCDOC), NEP",
            torus(&[2, 2, 2, 4, 4, 8], TorusPartition::Nep),
            1024,
        ),
        (
            "torus3d-shapes 16x8x8, best fit",
            Topology::Torus3dShapes {
                dims: [16, 8, 8],
                shapes,
            },
            1024,
        ),
    ]
}

/// Runs `pairs` allocations (and as many frees) on each layout.
pub fn run(pairs: usize) -> anyhow::Result<Report> {
    let mut text =
        format!("allocate+free pairs per second, SDSC Table 3 request mix ({pairs} pairs each):\n");
    let mut rows = Vec::new();
    for (name, topology, nodes) in layouts() {
        let mut allocator: Box<dyn Allocator> = match topology.allocator() {
            Ok(Some(a)) => a,
            Ok(None) => {
                text.push_str(&format!("  {name:<55} {:>20}\n", "no allocator: counted"));
                rows.push(serde_json::json!({
                    "layout": name,
                    "nodes": nodes,
                    "counted": "no allocator: the scheduler counts a flat set's free nodes",
                }));
                continue;
            }
            Err(e) => anyhow::bail!("{name}: {e}"),
        };
        let cap = allocator.capacity();
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let mut live: Vec<Placement> = Vec::new();
        let mut done = 0usize;
        let mut refused = 0usize;
        let start = Instant::now();
        while done < pairs {
            let n = size(&mut rng, cap);
            match allocator.allocate(n) {
                Some(p) => {
                    live.push(p);
                    done += 1;
                }
                None if live.is_empty() => {
                    refused += 1;
                    if refused > pairs {
                        anyhow::bail!("{name}: nothing can be placed in an empty set");
                    }
                }
                None => {
                    let victim = (rng.next() % live.len() as u64) as usize;
                    let p = live.swap_remove(victim);
                    allocator.release(&p.nodes);
                }
            }
        }
        for p in live.drain(..) {
            allocator.release(&p.nodes);
        }
        let secs = start.elapsed().as_secs_f64();
        let rate = done as f64 / secs;
        if allocator.free_count() != cap {
            anyhow::bail!(
                "{name}: {} of {cap} nodes free after freeing everything",
                allocator.free_count()
            );
        }
        text.push_str(&format!("  {name:<55} {rate:>12.0} pairs/s\n"));
        rows.push(serde_json::json!({
            "layout": name,
            "nodes": cap,
            "pairs": done,
            "pairs_per_second": rate,
        }));
    }
    Ok(Report {
        text: text.trim_end().to_string(),
        json: serde_json::json!({ "bench": "alloc", "results": rows }),
    })
}
