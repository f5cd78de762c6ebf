//! Allocate+free pairs per second of the torus allocator on the JLAB and
//! QCDOC tori, EP and NEP, under a mix of power-of-two requests, mostly
//! small. Run: `cargo run --release -p qmesh-core --example torus_alloc`.

use std::time::Instant;

use qmesh_core::alloc::torus::{Conversion, Partition, Torus};
use qmesh_core::alloc::{Allocator, Placement};

/// Request sizes and their weights: most jobs small, few large.
const MIX: [(u32, u32); 8] = [
    (1, 30),
    (2, 20),
    (4, 15),
    (8, 12),
    (16, 10),
    (32, 7),
    (64, 4),
    (128, 2),
];

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }

    fn size(&mut self) -> u32 {
        let total: u32 = MIX.iter().map(|m| m.1).sum();
        let mut r = self.next() % total;
        for (n, w) in MIX {
            if r < w {
                return n;
            }
            r -= w;
        }
        1
    }
}

/// Keeps the torus about three-quarters busy: each round frees a random
/// job, then asks for new ones until three quarters are busy again or a
/// request does not fit. Returns successful allocations per second (each
/// job is freed in turn, so these are allocate+free pairs) and the mean
/// share of nodes busy.
fn pairs_per_second(dims: &[u32], scheme: Partition, rounds: u32) -> (f64, f64) {
    let mut t = Torus::new(dims, scheme, Conversion::Collapse).expect("torus");
    let mut rng = Lcg(42);
    let mut live: Vec<Placement> = Vec::new();
    let target = t.capacity() / 4;
    let fill = |t: &mut Torus, rng: &mut Lcg, live: &mut Vec<Placement>| {
        let mut placed = 0u64;
        while t.free_count() > target {
            match t.allocate(rng.size()) {
                Some(p) => {
                    live.push(p);
                    placed += 1;
                }
                None => break,
            }
        }
        placed
    };
    fill(&mut t, &mut rng, &mut live);
    let (mut placed, mut busy) = (0u64, 0u64);
    let start = Instant::now();
    for _ in 0..rounds {
        if !live.is_empty() {
            let i = rng.next() as usize % live.len();
            let old = live.swap_remove(i);
            t.release(&old.nodes);
        }
        placed += fill(&mut t, &mut rng, &mut live);
        busy += (t.capacity() - t.free_count()) as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    let util = busy as f64 / rounds as f64 / t.capacity() as f64;
    (placed as f64 / secs, util)
}

fn main() {
    let pairs = 2_000_000;
    for (name, dims) in [
        ("JLAB 2x2x2x6x8", &[2u32, 2, 2, 6, 8][..]),
        ("QCDOC 2x2x2x4x4x8", &[2, 2, 2, 4, 4, 8][..]),
    ] {
        for scheme in [Partition::Ep, Partition::Nep] {
            let (rate, util) = pairs_per_second(dims, scheme, pairs);
            println!(
                "{name:18} {scheme:?}: {rate:>10.0} pairs/s, {:.0}% busy on average",
                util * 100.0
            );
        }
    }
}
