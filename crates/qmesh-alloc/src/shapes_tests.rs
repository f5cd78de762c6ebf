use super::*;
use crate::check_allocator;
use proptest::prelude::*;

/// The EPCC 256-PE pool (seed: the MCN320 torus of 8×4×5 two-PE nodes, of
/// which 8×4×4 nodes form POOL_256), counted in PEs as the seed's shapes
/// are: 16×4×4, with the shapes of the seed's mppview listings and the
/// whole pool for 256.
fn epcc() -> Shapes {
    let shapes = BTreeMap::from([
        (2, [2, 1, 1]),
        (8, [4, 2, 1]),
        (16, [8, 2, 1]),
        (32, [8, 4, 1]),
        (64, [16, 4, 1]),
        (128, [16, 4, 2]),
        (256, [16, 4, 4]),
    ]);
    Shapes::new([16, 4, 4], shapes).unwrap()
}

/// 1,024 nodes, 16×8×8, a shape for every power of two to 256.
fn t3d_1024() -> Shapes {
    let shapes = BTreeMap::from(CUBE_SHAPES_16X8X8);
    Shapes::new([16, 8, 8], shapes).unwrap()
}

/// Odd dimensions and shapes that are not powers of two.
fn odd() -> Shapes {
    let shapes = BTreeMap::from([
        (1, [1, 1, 1]),
        (2, [2, 1, 1]),
        (4, [2, 2, 1]),
        (6, [3, 2, 1]),
        (12, [3, 2, 2]),
        (30, [6, 5, 1]),
        (90, [6, 5, 3]),
    ]);
    Shapes::new([6, 5, 3], shapes).unwrap()
}

fn node(s: &Shapes, [x, y, z]: [u32; 3]) -> u32 {
    let [nx, ny, _] = s.dims();
    x + nx * (y + ny * z)
}

/// Every node of the z-plane `z`.
fn plane(s: &Shapes, z: u32) -> Vec<u32> {
    let [nx, ny, _] = s.dims();
    (0..nx * ny).map(|i| i + nx * ny * z).collect()
}

#[test]
fn the_epcc_128_pe_job_is_refused_although_128_pes_are_free() {
    // Two 64-PE jobs (16×4×1) in planes 0 and 2: the free planes 1 and 3
    // are not neighbours, so no 16×4×2 box is free.
    let mut t3d = epcc();
    t3d.occupy(&plane(&t3d, 0)).unwrap();
    t3d.occupy(&plane(&t3d, 2)).unwrap();
    assert_eq!(t3d.free_count(), 128);
    assert_eq!(t3d.allocate(128), None);
    assert_eq!(t3d.free_count(), 128);
    // Once one of them ends, the job is placed across two planes.
    t3d.release(&plane(&t3d, 2));
    let p = t3d.allocate(128).unwrap();
    assert_eq!(p.nodes.len(), 128);
    let Part::Box { origin, extent } = &p.parts[0] else {
        panic!("not a box: {:?}", p.parts);
    };
    assert_eq!(extent, &vec![16, 4, 2]);
    assert!(origin[2] == 1 || origin[2] == 2, "origin {origin:?}");
}

#[test]
fn best_fit_packs_64_pe_jobs_so_the_128_pe_shape_still_fits() {
    // The seed's day mix, 1×128 and 2×64: with the 128 gone, two 64s
    // placed by best fit sit in adjacent planes, leaving room for a 128.
    let mut t3d = epcc();
    let first = t3d.allocate(64).unwrap();
    let second = t3d.allocate(64).unwrap();
    let z = |p: &Placement| match &p.parts[0] {
        Part::Box { origin, .. } => origin[2],
        other => panic!("not a box: {other:?}"),
    };
    let gap = (z(&first) + 4 - z(&second)) % 4;
    assert!(
        gap == 1 || gap == 3,
        "planes {} and {}",
        z(&first),
        z(&second)
    );
    assert_eq!(t3d.allocate(128).unwrap().nodes.len(), 128);
}

#[test]
fn a_box_wraps_around_every_dimension() {
    let shapes = BTreeMap::from([(8, [4, 2, 1])]);
    let mut t = Shapes::new([8, 4, 2], shapes).unwrap();
    let hole: Vec<u32> = [6, 7, 0, 1]
        .iter()
        .flat_map(|&x| [3, 0].map(|y| node(&t, [x, y, 1])))
        .collect();
    let rest: Vec<u32> = (0..64).filter(|i| !hole.contains(i)).collect();
    t.occupy(&rest).unwrap();
    let p = t.allocate(8).unwrap();
    assert_eq!(
        p.parts,
        vec![Part::Box {
            origin: vec![6, 3, 1],
            extent: vec![4, 2, 1]
        }]
    );
    assert_eq!(p.nodes[..4], [62, 63, 56, 57]);
    let mut got = p.nodes.clone();
    got.sort_unstable();
    let mut want = hole.clone();
    want.sort_unstable();
    assert_eq!(got, want);
    assert_eq!(t.free_count(), 0);
}

#[test]
fn best_fit_takes_the_snug_hole_not_the_first_free_spot() {
    // x 0..4 is open; x 4..8 is busy but for a 2×2 hole at (5, 5).
    let shapes = BTreeMap::from([(4, [2, 2, 1])]);
    let mut t = Shapes::new([8, 8, 1], shapes).unwrap();
    let hole = [[5, 5, 0], [6, 5, 0], [5, 6, 0], [6, 6, 0]].map(|c| node(&t, c));
    let busy: Vec<u32> = (0..64)
        .filter(|&i| i % 8 >= 4 && !hole.contains(&i))
        .collect();
    t.occupy(&busy).unwrap();
    let p = t.allocate(4).unwrap();
    assert_eq!(
        p.parts[0],
        Part::Box {
            origin: vec![5, 5, 0],
            extent: vec![2, 2, 1]
        }
    );
    // Next, against a wall of busy nodes rather than in the open middle.
    let Part::Box { origin, .. } = &t.allocate(4).unwrap().parts[0] else {
        panic!("not a box");
    };
    assert!(origin[0] == 0 || origin[0] == 2, "origin {origin:?}");
}

#[test]
fn requests_round_up_to_the_next_configured_size() {
    let mut t3d = epcc();
    assert_eq!(t3d.size_for(0), None);
    assert_eq!(t3d.size_for(1), Some(2));
    assert_eq!(t3d.size_for(100), Some(128));
    assert_eq!(t3d.size_for(256), Some(256));
    assert_eq!(t3d.size_for(257), None);
    assert_eq!(t3d.allocate(257), None);
    let p = t3d.allocate(100).unwrap();
    assert_eq!(p.nodes.len(), 128);
    assert_eq!(t3d.free_count(), 128);
}

#[test]
fn shapes_must_hold_their_size_and_fit_the_torus() {
    let bad = |shapes: &[(u32, [u32; 3])]| {
        Shapes::new([16, 4, 4], shapes.iter().copied().collect()).unwrap_err()
    };
    assert!(bad(&[(64, [16, 4, 2])]).contains("holds 128 nodes, not 64"));
    assert!(bad(&[(64, [32, 2, 1])]).contains("does not fit the 16x4x4 torus"));
    assert!(bad(&[]).contains("no job shapes"));
    assert!(Shapes::new([0, 4, 4], BTreeMap::from([(1, [1, 1, 1])])).is_err());
    assert!(Shapes::new([129, 1, 1], BTreeMap::from([(1, [1, 1, 1])])).is_err());
}

#[test]
fn occupy_takes_nothing_when_any_node_is_taken_or_outside() {
    let mut t3d = epcc();
    t3d.occupy(&[5]).unwrap();
    assert_eq!(t3d.occupy(&[1, 2, 5]), Err(AllocError::Taken { node: 5 }));
    assert_eq!(t3d.occupy(&[3, 3]), Err(AllocError::Taken { node: 3 }));
    assert_eq!(
        t3d.occupy(&[4, 256]),
        Err(AllocError::OutOfRange {
            node: 256,
            size: 256
        })
    );
    assert_eq!(t3d.free_count(), 255);
    t3d.release(&[5]);
    assert_eq!(t3d, epcc());
}

fn ops(max: u32) -> impl Strategy<Value = Vec<(bool, u32)>> {
    proptest::collection::vec((any::<bool>(), 0..=max), 0..80)
}

proptest! {
    #[test]
    fn epcc_pool_keeps_the_allocator_promises(ops in ops(256)) {
        prop_assert_eq!(check_allocator(&epcc(), &ops), Ok(()));
    }

    #[test]
    fn odd_torus_keeps_the_allocator_promises(ops in ops(90)) {
        prop_assert_eq!(check_allocator(&odd(), &ops), Ok(()));
    }

    #[test]
    fn odd_torus_one_row_per_word_keeps_the_allocator_promises(ops in ops(90)) {
        prop_assert_eq!(check_allocator(&odd().row_per_word(), &ops), Ok(()));
    }

    #[test]
    fn t3d_1024_keeps_the_allocator_promises(ops in ops(256)) {
        prop_assert_eq!(check_allocator(&t3d_1024(), &ops), Ok(()));
    }

    /// A word per plane (the 16×8 planes fit one) and a word per row, the
    /// layout of larger planes, choose the same boxes.
    #[test]
    fn both_word_layouts_place_alike(ops in ops(256)) {
        let (mut planes, mut rows) = (t3d_1024(), t3d_1024().row_per_word());
        let mut live = Vec::new();
        for (place, n) in ops {
            if place || live.is_empty() {
                let (p, r) = (planes.allocate(n), rows.allocate(n));
                prop_assert_eq!(&p, &r);
                live.extend(p);
            } else {
                let p: Placement = live.swap_remove(n as usize % live.len());
                planes.release(&p.nodes);
                rows.release(&p.nodes);
            }
        }
    }
}

/// Allocate+free pairs per second on 1,024 nodes under a mix of mostly
/// small jobs; run with
/// `cargo test --release -p qmesh-core shapes_pairs_per_second -- --ignored --nocapture`.
#[test]
#[ignore]
fn shapes_pairs_per_second() {
    let (sizes, weights) = (
        [1, 2, 4, 8, 16, 32, 64, 128, 256],
        [10, 10, 15, 20, 15, 12, 10, 5, 3],
    );
    let total: u32 = weights.iter().sum();
    let mut t = t3d_1024();
    let mut live: Vec<Vec<u32>> = Vec::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut pairs = 0u64;
    let mut refusals = 0u64;
    let zero = std::time::Duration::ZERO;
    let (mut placing, mut refusing, mut releasing) = (zero, zero, zero);
    let start = std::time::Instant::now();
    while pairs < 2_000_000 {
        let mut pick = (next() % u64::from(total)) as u32;
        let size = sizes
            .iter()
            .zip(weights)
            .find(|(_, w)| {
                let hit = pick < *w;
                pick = pick.saturating_sub(*w);
                hit
            })
            .map_or(1, |(s, _)| *s);
        let asked = std::time::Instant::now();
        let placed = t.allocate(size);
        let took = asked.elapsed();
        match placed {
            Some(p) => {
                live.push(p.nodes);
                pairs += 1;
                placing += took;
            }
            None => {
                refusing += took;
                refusals += 1;
                let k = (next() % live.len().max(1) as u64) as usize;
                if k < live.len() {
                    let nodes = live.swap_remove(k);
                    let freeing = std::time::Instant::now();
                    t.release(&nodes);
                    releasing += freeing.elapsed();
                }
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "torus3d-shapes 16x8x8: {pairs} allocate+free pairs in {secs:.2}s = {:.0} pairs/s \
         ({} live at the end, {} free)",
        pairs as f64 / secs,
        live.len(),
        t.free_count()
    );
    let per = |d: std::time::Duration, n: u64| d.as_nanos() as f64 / n.max(1) as f64;
    println!(
        "  placing {:.0} ns, refusing {:.0} ns ({refusals} refusals), releasing {:.0} ns; \
         placing+releasing alone {:.0} pairs/s",
        per(placing, pairs),
        per(refusing, refusals),
        per(releasing, pairs),
        pairs as f64 / (placing + releasing).as_secs_f64()
    );
}

/// The measure computed node by node: the best origin and its score.
fn oracle(t: &Shapes, [a, b, c]: [u32; 3]) -> Option<([u32; 3], u32)> {
    let [nx, ny, nz] = t.dims();
    let at = |x: u32, y: u32, z: u32| node(t, [x % nx, y % ny, z % nz]);
    let mut best: Option<([u32; 3], u32)> = None;
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                let fits = (0..a)
                    .all(|i| (0..b).all(|j| (0..c).all(|k| t.is_free(at(x + i, y + j, z + k)))));
                if !fits {
                    continue;
                }
                // Each face: its nodes, or None when the box spans the dimension.
                let faces: [Option<Vec<u32>>; 6] = [
                    (a < nx).then(|| {
                        let mut v = Vec::new();
                        for j in 0..b {
                            for k in 0..c {
                                v.push(at(x + nx - 1, y + j, z + k));
                            }
                        }
                        v
                    }),
                    (a < nx).then(|| {
                        let mut v = Vec::new();
                        for j in 0..b {
                            for k in 0..c {
                                v.push(at(x + a, y + j, z + k));
                            }
                        }
                        v
                    }),
                    (b < ny).then(|| {
                        let mut v = Vec::new();
                        for i in 0..a {
                            for k in 0..c {
                                v.push(at(x + i, y + ny - 1, z + k));
                            }
                        }
                        v
                    }),
                    (b < ny).then(|| {
                        let mut v = Vec::new();
                        for i in 0..a {
                            for k in 0..c {
                                v.push(at(x + i, y + b, z + k));
                            }
                        }
                        v
                    }),
                    (c < nz).then(|| {
                        let mut v = Vec::new();
                        for i in 0..a {
                            for j in 0..b {
                                v.push(at(x + i, y + j, z + nz - 1));
                            }
                        }
                        v
                    }),
                    (c < nz).then(|| {
                        let mut v = Vec::new();
                        for i in 0..a {
                            for j in 0..b {
                                v.push(at(x + i, y + j, z + c));
                            }
                        }
                        v
                    }),
                ];
                let score: u32 = faces
                    .iter()
                    .map(|face| match face {
                        None => 2,
                        Some(nodes) => {
                            let busy = nodes.iter().filter(|&&n| !t.is_free(n)).count();
                            u32::from(busy > 0) + u32::from(busy == nodes.len())
                        }
                    })
                    .sum();
                if best.is_none_or(|(_, top)| score > top) {
                    best = Some(([x, y, z], score));
                }
            }
        }
    }
    best
}

proptest! {
    #[test]
    fn best_fit_is_the_highest_contact_origin_node_by_node(
        dims in (1u32..7, 1u32..6, 1u32..5),
        extent in (1u32..7, 1u32..6, 1u32..5),
        density in 0u32..4,
        draws in proptest::collection::vec(0u32..4, 6 * 5 * 4),
        row_per_word: bool,
    ) {
        let dims = [dims.0, dims.1, dims.2];
        let extent = [extent.0.min(dims[0]), extent.1.min(dims[1]), extent.2.min(dims[2])];
        let size = extent.iter().product::<u32>();
        let mut t = Shapes::new(dims, BTreeMap::from([(size, extent)])).unwrap();
        if row_per_word {
            t = t.row_per_word();
        }
        let taken: Vec<u32> = (0..t.capacity()).filter(|&i| draws[i as usize] < density).collect();
        t.occupy(&taken).unwrap();
        let want = oracle(&t, extent);
        let got = t.allocate(size).map(|p| match &p.parts[0] {
            Part::Box { origin, .. } => [origin[0], origin[1], origin[2]],
            other => panic!("not a box: {other:?}"),
        });
        prop_assert_eq!(got, want.map(|(origin, _)| origin));
    }
}
