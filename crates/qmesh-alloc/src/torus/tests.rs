use super::*;
use crate::check_allocator;
use proptest::prelude::*;

const JLAB: [u32; 5] = [2, 2, 2, 6, 8];
const QCDOC: [u32; 6] = [2, 2, 2, 4, 4, 8];

fn torus(dims: &[u32], p: Partition) -> Torus {
    Torus::new(dims, p, Conversion::Collapse).unwrap()
}

/// The free semitori, as (origin, extent), sorted.
fn free_pieces(t: &Torus) -> Vec<(Vec<u32>, Vec<u32>)> {
    let mut out = Vec::new();
    for &head in &t.free_heads {
        let mut x = head;
        while x != NONE {
            match t.part_of(&t.cells[x as usize].semi) {
                Part::Box { origin, extent } => out.push((origin, extent)),
                Part::Block { .. } => unreachable!(),
            }
            x = t.cells[x as usize].next_free;
        }
    }
    out.sort();
    out
}

fn extent(p: &Placement) -> Vec<u32> {
    match &p.parts[..] {
        [Part::Box { extent, .. }] => extent.clone(),
        other => panic!("not one box: {other:?}"),
    }
}

#[test]
fn nep_allocation_leaves_the_seed_partition_free() {
    let mut t = torus(&[2, 4, 4, 8], Partition::Nep);
    let p = t.allocate(16).unwrap();
    assert_eq!(extent(&p), vec![2, 4, 2, 1]);
    assert_eq!(p.nodes.len(), 16);
    let mut free: Vec<Vec<u32>> = free_pieces(&t).into_iter().map(|(_, e)| e).collect();
    free.sort();
    assert_eq!(
        free,
        vec![
            vec![2, 4, 2, 1],
            vec![2, 4, 4, 1],
            vec![2, 4, 4, 2],
            vec![2, 4, 4, 4]
        ]
    );
    // The next request of 16 takes the twin piece, no new cut.
    let q = t.allocate(13).unwrap();
    assert_eq!(extent(&q), vec![2, 4, 2, 1]);
    assert_eq!(free_pieces(&t).len(), 3);
}

#[test]
fn ep_allocation_cuts_equal_pieces_of_the_seed_shapes() {
    let mut t = torus(&[2, 4, 4, 8], Partition::Ep);
    let p = t.allocate(8).unwrap();
    let mut e = extent(&p);
    e.sort();
    assert_eq!(e, vec![1, 2, 2, 2]);
    let free = free_pieces(&t);
    assert_eq!(free.len(), 31);
    assert!(free.iter().all(|(_, e)| e == &extent(&p)));

    let mut t = torus(&[2, 4, 4, 8], Partition::Ep);
    let mut e = extent(&t.allocate(64).unwrap());
    e.sort();
    assert_eq!(e, vec![2, 2, 4, 4]);
    assert_eq!(free_pieces(&t).len(), 3);
}

#[test]
fn jlab_torus_starts_as_its_two_semitori_and_rounds_requests() {
    let mut t = torus(&JLAB, Partition::Nep);
    assert_eq!(
        t.semitori(),
        vec![
            Part::Box {
                origin: vec![0, 0, 0, 0, 0],
                extent: vec![2, 2, 2, 4, 8]
            },
            Part::Box {
                origin: vec![0, 0, 0, 4, 0],
                extent: vec![2, 2, 2, 2, 8]
            },
        ]
    );
    assert_eq!(t.capacity(), 384);
    assert_eq!(t.size_for(3), Some(4));
    assert_eq!(t.size_for(200), Some(256));
    assert_eq!(t.size_for(300), None, "no semitorus holds 512");
    assert_eq!(t.size_for(0), None);
    // The best fit: 128 goes to the small semitorus, keeping 256 whole.
    let small = t.allocate(100).unwrap();
    assert_eq!(small.nodes.len(), 128);
    assert_eq!(small.nodes[0], 4 * 8, "origin (0,0,0,4,0)");
    let big = t.allocate(256).unwrap();
    assert_eq!(big.nodes.len(), 256);
    assert_eq!(t.free_count(), 0);
    assert_eq!(t.allocate(1), None);
}

#[test]
fn placements_number_nodes_first_dimension_fastest() {
    let mut t = torus(&[4, 4], Partition::Nep);
    let a = t.allocate(8).unwrap();
    assert_eq!(a.nodes, vec![0, 1, 2, 3, 4, 5, 6, 7]);
    let b = t.allocate(4).unwrap();
    assert_eq!(
        b.parts,
        vec![Part::Box {
            origin: vec![0, 2],
            extent: vec![2, 2]
        }]
    );
    assert_eq!(b.nodes, vec![8, 9, 12, 13]);
}

#[test]
fn job_torus_converts_both_ways() {
    for (conv, want) in [
        (Conversion::Collapse, vec![2, 2, 2, 4, 8]),
        (Conversion::Pair, vec![8, 2, 2, 8]),
    ] {
        let mut t = Torus::new(&JLAB, Partition::Nep, conv).unwrap();
        let p = t.allocate(256).unwrap();
        assert_eq!(t.job_torus(&p.parts[0]), Some(want));
    }
    // EP's 4×4 corner of an 8×8 torus is a mesh: collapsed into a ring.
    let mut t = Torus::new(&[8, 8], Partition::Ep, Conversion::Collapse).unwrap();
    let p = t.allocate(16).unwrap();
    assert_eq!(extent(&p), vec![4, 4]);
    assert_eq!(t.job_torus(&p.parts[0]), Some(vec![16]));
}

#[test]
fn release_merges_back_into_the_whole_torus() {
    for scheme in [Partition::Ep, Partition::Nep] {
        let fresh = torus(&QCDOC, scheme);
        let mut t = fresh.clone();
        let ps: Vec<Placement> = [128, 64, 16, 8, 4, 2, 1, 1]
            .iter()
            .map(|&n| t.allocate(n).unwrap())
            .collect();
        assert!(t.cells.len() > 1);
        for p in ps.iter().rev().step_by(2).chain(ps.iter().step_by(2)) {
            t.release(&p.nodes);
        }
        assert_eq!(t, fresh);
        assert_eq!(free_pieces(&t), free_pieces(&fresh), "one whole torus free");
        assert_eq!(t.allocate(1024).unwrap().nodes.len(), 1024);
    }
}

#[test]
fn occupy_splits_down_and_release_merges_back() {
    let fresh = torus(&JLAB, Partition::Ep);
    let mut t = fresh.clone();
    t.occupy(&[5, 200, 383]).unwrap();
    assert_eq!(t.free_count(), 381);
    // Halving keeps big pieces whole: 64 nodes still fit in each semitorus.
    let p = t.allocate(64).unwrap();
    assert!(!p.nodes.iter().any(|n| [5, 200, 383].contains(n)));
    assert_eq!(t.occupy(&[5]), Err(AllocError::Taken { node: 5 }));
    let before = t.clone();
    assert_eq!(
        t.occupy(&[7, 384]),
        Err(AllocError::OutOfRange {
            node: 384,
            size: 384
        })
    );
    assert_eq!(t, before, "nothing changes on error");
    t.release(&[200, 5]);
    t.release(&p.nodes);
    t.release(&[383]);
    assert_eq!(t, fresh);
}

#[test]
fn occupying_a_whole_placement_takes_it_as_one_piece() {
    let mut t = torus(&QCDOC, Partition::Nep);
    let p = t.allocate(32).unwrap();
    let mut rebuilt = torus(&QCDOC, Partition::Nep);
    rebuilt.occupy(&p.nodes).unwrap();
    assert_eq!(rebuilt.free_count(), 1024 - 32);
    let taken: std::collections::BTreeSet<u32> = rebuilt
        .owner
        .iter()
        .copied()
        .filter(|&o| o != NONE)
        .collect();
    assert_eq!(taken.len(), 1, "one piece holds the job");
}

#[test]
fn releasing_part_of_a_piece_frees_just_those_nodes() {
    let fresh = torus(&[4, 4], Partition::Nep);
    let mut t = fresh.clone();
    let p = t.allocate(8).unwrap();
    t.release(&p.nodes[..3]);
    assert_eq!(t.free_count(), 8 + 3);
    let one = t.allocate(2).unwrap();
    assert!(
        one.nodes
            .iter()
            .all(|n| p.nodes[..3].contains(n) || *n >= 8)
    );
    t.release(&one.nodes);
    t.release(&p.nodes[3..]);
    assert_eq!(t, fresh);
}

#[test]
fn a_second_odd_dimension_is_refused_by_name() {
    let err = Torus::new(&[2, 6, 10], Partition::Ep, Conversion::Pair).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("dimension 3 of the torus has size 10")
    );
}

/// The case the scheduler's reservation test found: rebuilt from the
/// nodes taken (0-1 for one job, 2 for another), the 4×4 torus holds the
/// free row 4-7 as two pieces of two that are not siblings. The seed's
/// allocation has no piece of four; a promised job still gets the row.
#[test]
fn a_promised_job_gets_a_free_box_the_pieces_split() {
    let mut t = torus(&[4, 4], Partition::Nep);
    t.occupy(&[0, 1]).unwrap();
    t.occupy(&[2]).unwrap();
    assert_eq!(t.free_count(), 13);
    t.occupy(&[8, 9, 10, 11, 12, 13, 14, 15]).unwrap();
    assert!(t.clone().allocate(3).is_none());
    let p = t.allocate_promised(3).expect("the free row 4-7");
    assert_eq!(p.nodes, [4, 5, 6, 7]);
    assert_eq!(extent(&p), [4, 1]);
    assert_eq!(t.free_count(), 1);
    assert!(t.allocate_promised(2).is_none(), "only node 3 is left");
    t.release(&p.nodes);
    assert_eq!(t.free_count(), 5);
}

/// Whether some box of 2^k nodes, power-of-two sides aligned to them
/// inside one preprocessed semitorus, has every node free: by brute force
/// over every node's box of every shape.
fn some_free_box(t: &Torus, k: u32, free: &[bool]) -> bool {
    let n = t.dims.len();
    t.semitori().iter().any(|root| {
        let Part::Box { origin, extent } = root else {
            return false;
        };
        let volume: u32 = extent.iter().product();
        (0..volume).any(|corner| {
            // The corner's coordinates inside the root.
            let mut c = vec![0u32; n];
            let mut rest = corner;
            for d in 0..n {
                c[d] = rest % extent[d];
                rest /= extent[d];
            }
            let mut shapes = Vec::new();
            let within: Vec<u8> = extent.iter().map(|e| e.trailing_zeros() as u8).collect();
            shapes_of(&within, k, &mut [0; MAX_DIMS], 0, &mut shapes);
            shapes.iter().any(|exps| {
                (0..n).all(|d| c[d] % (1 << exps[d]) == 0)
                    && (0..1u32 << k).all(|i| {
                        let mut id = 0;
                        let mut stride = 1;
                        let mut rest = i;
                        for d in 0..n {
                            let side = 1u32 << exps[d];
                            id += (origin[d] + c[d] + rest % side) * stride;
                            rest /= side;
                            stride *= t.dims[d];
                        }
                        free[id as usize]
                    })
            })
        })
    })
}

fn ops() -> impl Strategy<Value = Vec<(bool, u32)>> {
    proptest::collection::vec(
        prop_oneof![
            3 => (Just(true), prop_oneof![4 => 1u32..9, 2 => 9u32..70, 1 => 70u32..400]),
            2 => (Just(false), 0u32..64),
        ],
        0..120,
    )
}

fn shapes() -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![
        Just(JLAB.to_vec()),
        Just(QCDOC.to_vec()),
        Just(vec![4, 4]),
        Just(vec![6]),
        Just(vec![2, 12, 4]),
        Just(vec![8, 2, 7]),
    ]
}

fn scheme() -> impl Strategy<Value = Partition> {
    prop_oneof![Just(Partition::Ep), Just(Partition::Nep)]
}

proptest! {
    #[test]
    fn keeps_the_allocator_promises(dims in shapes(), p in scheme(), ops in ops()) {
        let fresh = torus(&dims, p);
        prop_assert_eq!(check_allocator(&fresh, &ops), Ok(()));
    }

    #[test]
    fn occupied_nodes_are_never_given_and_merge_back(
        dims in shapes(),
        p in scheme(),
        down in proptest::collection::btree_set(0u32..384, 0..40),
        sizes in proptest::collection::vec(1u32..40, 0..30),
    ) {
        let fresh = torus(&dims, p);
        let mut t = fresh.clone();
        let down: Vec<u32> = down.into_iter().filter(|&n| n < t.capacity()).collect();
        t.occupy(&down).unwrap();
        prop_assert_eq!(t.free_count(), t.capacity() - down.len() as u32);
        let mut live = Vec::new();
        for n in sizes {
            if let Some(pl) = t.allocate(n) {
                prop_assert!(!pl.nodes.iter().any(|x| down.contains(x)));
                live.push(pl);
            }
        }
        t.release(&down);
        for pl in live {
            t.release(&pl.nodes);
        }
        prop_assert_eq!(t, fresh);
    }
}

proptest! {
    /// Whatever history cut the pieces (allocations of either partition,
    /// then nodes taken and freed one by one), a promised job is placed
    /// exactly when a free aligned box of its size exists, on free nodes
    /// only, and its release gives them back.
    #[test]
    fn a_promised_job_is_placed_whenever_a_free_box_exists(
        dims in shapes(),
        p in scheme(),
        sizes in proptest::collection::vec(1u32..40, 0..20),
        flips in proptest::collection::vec(0u32..384, 0..60),
        ask in 1u32..70,
    ) {
        let mut t = torus(&dims, p);
        for n in sizes {
            t.allocate(n);
        }
        let capacity = t.capacity();
        for id in flips.into_iter().filter(|&id| id < capacity) {
            if t.owner[id as usize] == NONE {
                t.occupy(&[id]).unwrap();
            } else {
                t.release(&[id]);
            }
        }
        let free: Vec<bool> = t.owner.iter().map(|&o| o == NONE).collect();
        let Some(size) = t.size_for(ask) else { return Ok(()) };
        let exists = some_free_box(&t, size.trailing_zeros(), &free);
        let before = t.free_count();
        match t.allocate_promised(ask) {
            Some(placement) => {
                prop_assert!(exists, "placed where no free box exists");
                prop_assert_eq!(placement.nodes.len() as u32, size);
                prop_assert!(placement.nodes.iter().all(|&id| free[id as usize]));
                prop_assert_eq!(t.free_count(), before - size);
                t.release(&placement.nodes);
                prop_assert_eq!(t.free_count(), before);
            }
            None => prop_assert!(!exists, "a free box of {} exists but was not found", size),
        }
    }
}
