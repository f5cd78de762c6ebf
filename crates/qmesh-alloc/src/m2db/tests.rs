//! The seed's buddy cases on concrete blocks, the allocation steps on
//! small meshes, and the promises every allocator keeps.

use super::*;
use crate::check_allocator;
use proptest::prelude::*;

fn r(x: u32, y: u32, w: u32, h: u32) -> Rect {
    Rect { x, y, w, h }
}

fn b(x: u32, y: u32, w: u32, h: u32) -> Part {
    Part::Block { x, y, w, h }
}

fn split(rect: Rect) -> (u8, Vec<Rect>) {
    let bs = buddies(rect).unwrap();
    (bs.case, bs.parts().to_vec())
}

#[test]
fn case_1_power_of_two_square_gives_four_equal_squares() {
    assert_eq!(
        split(r(8, 4, 8, 8)),
        (
            1,
            vec![r(8, 4, 4, 4), r(12, 4, 4, 4), r(12, 8, 4, 4), r(8, 8, 4, 4)]
        )
    );
}

#[test]
fn case_2_tall_power_of_two_rectangle_splits_its_height() {
    // The seed prints `2` for the first buddy's width; W2 is meant.
    assert_eq!(
        split(r(0, 0, 4, 8)),
        (2, vec![r(0, 0, 4, 4), r(0, 4, 4, 4)])
    );
    assert_eq!(
        split(r(3, 1, 1, 2)),
        (2, vec![r(3, 1, 1, 1), r(3, 2, 1, 1)])
    );
}

#[test]
fn case_3_wide_power_of_two_rectangle_splits_its_width() {
    assert_eq!(
        split(r(0, 8, 8, 4)),
        (3, vec![r(0, 8, 4, 4), r(4, 8, 4, 4)])
    );
}

#[test]
fn case_4_power_of_two_height_splits_width_into_w2_and_the_rest() {
    assert_eq!(
        split(r(2, 0, 6, 4)),
        (4, vec![r(2, 0, 4, 4), r(6, 0, 2, 4)])
    );
}

#[test]
fn case_5_power_of_two_width_splits_height_into_h2_and_the_rest() {
    assert_eq!(
        split(r(0, 2, 4, 6)),
        (5, vec![r(0, 2, 4, 4), r(0, 6, 4, 2)])
    );
}

#[test]
fn case_6_no_power_of_two_side_gives_four_unequal_pieces() {
    assert_eq!(
        split(r(1, 1, 6, 5)),
        (
            6,
            vec![r(1, 1, 4, 4), r(5, 1, 2, 4), r(5, 5, 2, 1), r(1, 5, 4, 1)]
        )
    );
    // A square with no power-of-two side is case 6 too.
    assert_eq!(
        split(r(0, 0, 3, 3)),
        (
            6,
            vec![r(0, 0, 2, 2), r(2, 0, 1, 2), r(2, 2, 1, 1), r(0, 2, 2, 1)]
        )
    );
    assert_eq!(buddies(r(5, 5, 1, 1)), None);
}

#[test]
fn a_power_of_two_request_gets_the_smallest_block_that_fits() {
    let mut m = M2db::new(8, 8, false);
    assert_eq!(m.allocate(16).unwrap().parts, vec![b(0, 0, 4, 4)]);
    let p = m.allocate(4).unwrap();
    assert_eq!(p.parts, vec![b(4, 0, 2, 2)]);
    assert_eq!(p.nodes, vec![4, 5, 12, 13]);
    // Two free 4×4 remain: the first in the seed's buddy order (lower right).
    assert_eq!(m.allocate(16).unwrap().parts, vec![b(4, 4, 4, 4)]);
    assert_eq!(m.free_count(), 64 - 36);
}

#[test]
fn an_odd_request_anchors_in_the_chosen_block_and_adds_the_closest_nodes() {
    let mut m = M2db::new(8, 8, false);
    let p = m.allocate(6).unwrap();
    // 8×8 → 4×4 → 2×2 (none holds 6): the first 2×2 anchors; the nearest
    // buddy (right) splits and its two nodes nearest the anchor join.
    assert_eq!(p.parts, vec![b(0, 0, 2, 2), b(2, 0, 1, 1), b(2, 1, 1, 1)]);
    assert_eq!(p.nodes, vec![0, 1, 8, 9, 2, 10]);
}

#[test]
fn a_fragmented_mesh_serves_a_request_from_several_blocks() {
    let mut m = M2db::new(4, 4, false);
    let jobs: Vec<Placement> = (0..4).map(|_| m.allocate(4).unwrap()).collect();
    m.release(&jobs[0].nodes);
    m.release(&jobs[2].nodes);
    assert_eq!(m.free_blocks(), vec![b(0, 0, 2, 2), b(2, 2, 2, 2)]);
    let p = m.allocate(8).unwrap();
    assert_eq!(p.parts, vec![b(0, 0, 2, 2), b(2, 2, 2, 2)]);
    assert_eq!(m.free_count(), 0);
    assert_eq!(m.allocate(1), None);
}

#[test]
fn the_closest_block_wins_over_the_first_in_order() {
    let mut m = M2db::new(8, 8, false);
    // Free: a 2×2 at the far upper left, the lower-right 4×4, and a 2×2
    // just left of it.
    let keep_free = |v: u32| {
        let (x, y) = (v % 8, v / 8);
        (x < 2 && y < 2) || (x >= 4 && y >= 4) || ((2..4).contains(&x) && (4..6).contains(&y))
    };
    let busy: Vec<u32> = (0..64).filter(|&v| !keep_free(v)).collect();
    m.occupy(&busy).unwrap();
    assert_eq!(
        m.free_blocks(),
        vec![b(0, 0, 2, 2), b(4, 4, 4, 4), b(2, 4, 2, 2)]
    );
    // No block holds 20: the largest anchors, then the nearest 2×2.
    let p = m.allocate(20).unwrap();
    assert_eq!(p.parts, vec![b(4, 4, 4, 4), b(2, 4, 2, 2)]);
    assert_eq!(corner_distance(r(4, 4, 4, 4), r(2, 4, 2, 2)), 48);
    assert_eq!(corner_distance(r(4, 4, 4, 4), r(0, 0, 2, 2)), 208);
}

#[test]
fn freeing_everything_merges_back_to_the_whole_mesh() {
    let fresh = M2db::new(6, 5, false);
    let mut m = fresh.clone();
    let jobs: Vec<Placement> = [7, 1, 4, 9, 3]
        .iter()
        .map(|&n| m.allocate(n).unwrap())
        .collect();
    assert_eq!(m.free_count(), 30 - 24);
    for j in jobs.iter().rev() {
        m.release(&j.nodes);
    }
    assert_eq!(m.free_blocks(), vec![b(0, 0, 6, 5)]);
    assert_eq!(m, fresh);
}

#[test]
fn part_of_a_block_can_be_freed_and_the_rest_later() {
    let fresh = M2db::new(4, 4, false);
    let mut m = fresh.clone();
    let p = m.allocate(16).unwrap();
    m.release(&[5, 0]);
    assert_eq!(m.free_count(), 2);
    assert_eq!(m.free_blocks(), vec![b(0, 0, 1, 1), b(1, 1, 1, 1)]);
    let rest: Vec<u32> = p
        .nodes
        .iter()
        .copied()
        .filter(|&v| v != 0 && v != 5)
        .collect();
    m.release(&rest);
    assert_eq!(m, fresh);
}

#[test]
fn occupy_takes_given_nodes_and_changes_nothing_on_error() {
    let fresh = M2db::new(4, 4, false);
    let mut m = fresh.clone();
    m.occupy(&[5, 6]).unwrap();
    assert_eq!(m.free_count(), 14);
    let before = m.clone();
    assert_eq!(m.occupy(&[1, 6]), Err(AllocError::Taken { node: 6 }));
    assert_eq!(m.occupy(&[1, 1]), Err(AllocError::Taken { node: 1 }));
    assert_eq!(
        m.occupy(&[2, 16]),
        Err(AllocError::OutOfRange { node: 16, size: 16 })
    );
    assert_eq!(m, before);
    let p = m.allocate(14).unwrap();
    assert!(!p.nodes.contains(&5) && !p.nodes.contains(&6));
    m.release(&p.nodes);
    m.release(&[6, 5]);
    assert_eq!(m, fresh);
}

#[test]
fn sdsc_batch_node_sets_serve_their_largest_requests_in_one_block() {
    // Seed 3.0 gives the sets' sizes, not their shapes: 112, 224 and 32
    // nodes, read here as 16 high and 7, 14 and 2 wide.
    let mut set2 = M2db::new(14, 16, false);
    assert_eq!(set2.allocate(128).unwrap().parts, vec![b(0, 0, 8, 16)]);
    assert_eq!(set2.allocate(64).unwrap().parts, vec![b(8, 0, 4, 16)]);
    let mut set1 = M2db::new(7, 16, false);
    assert_eq!(set1.allocate(64).unwrap().parts, vec![b(0, 0, 4, 16)]);
    let p = set1.allocate(48).unwrap();
    assert_eq!(p.nodes.len(), 48);
    assert_eq!(set1.free_count(), 0);
    let mut set3 = M2db::new(2, 16, false);
    assert_eq!(set3.allocate(32).unwrap().parts, vec![b(0, 0, 2, 16)]);
}

#[test]
fn contiguous_mode_gives_one_rectangle_or_nothing() {
    let mut m = M2db::new(8, 8, true);
    assert_eq!(m.size_for(8), Some(8));
    assert_eq!(m.size_for(32), Some(32));
    assert_eq!(m.size_for(6), None);
    assert_eq!(m.allocate(6), None);
    assert_eq!(m.allocate(16).unwrap().parts, vec![b(0, 0, 4, 4)]);
    // The smallest free block holding a 2×2 is the 4×4 below the first.
    assert_eq!(m.allocate(4).unwrap().parts, vec![b(0, 4, 2, 2)]);
    assert_eq!(m.allocate(32).unwrap().parts, vec![b(4, 0, 4, 8)]);
    assert_eq!(m.allocate(8).unwrap().parts, vec![b(2, 4, 2, 4)]);
    assert_eq!(m.free_count(), 4);
    assert_eq!(m.allocate(4).unwrap().parts, vec![b(0, 6, 2, 2)]);
    assert_eq!(M2db::new(6, 5, true).size_for(30), Some(30));
    assert_eq!(M2db::new(6, 5, false).size_for(31), None);
}

#[test]
fn contiguous_mode_refuses_when_free_nodes_are_not_one_rectangle() {
    let mut m = M2db::new(4, 4, true);
    m.occupy(&[0, 15]).unwrap();
    assert_eq!(m.free_count(), 14);
    assert_eq!(m.allocate(8), None);
    assert_eq!(m.allocate(4).unwrap().parts, vec![b(0, 2, 2, 2)]);
}

fn ops() -> impl Strategy<Value = Vec<(bool, u32)>> {
    proptest::collection::vec(
        prop_oneof![
            (Just(true), 1u32..9),
            (Just(true), 1u32..70),
            (Just(false), 0u32..100),
        ],
        0..60,
    )
}

proptest! {
    #[test]
    fn keeps_the_allocator_promises(
        (w, h) in prop_oneof![
            Just((1, 1)), Just((3, 3)), Just((8, 8)), Just((6, 5)),
            Just((16, 4)), Just((7, 3)), Just((1, 13)), Just((14, 16)),
        ],
        contiguous in any::<bool>(),
        ops in ops(),
    ) {
        let fresh = M2db::new(w, h, contiguous);
        prop_assert_eq!(check_allocator(&fresh, &ops), Ok(()));
    }

    #[test]
    fn free_blocks_stay_whole_after_every_step(
        (w, h) in prop_oneof![Just((8, 8)), Just((6, 5)), Just((14, 16))],
        contiguous in any::<bool>(),
        ops in ops(),
        down in proptest::collection::vec(0u32..30, 0..4),
    ) {
        let mut m = M2db::new(w, h, contiguous);
        let mut down = down;
        down.sort_unstable();
        down.dedup();
        m.occupy(&down).unwrap();
        prop_assert!(m.free_blocks_are_whole());
        let mut live: Vec<Placement> = Vec::new();
        for (alloc, n) in ops {
            if alloc {
                live.extend(m.allocate(n));
            } else if !live.is_empty() {
                let mut p = live.remove(n as usize % live.len());
                // Any order frees the same nodes.
                if n % 2 == 1 {
                    p.nodes.reverse();
                }
                m.release(&p.nodes);
            }
            prop_assert!(m.free_blocks_are_whole(), "{:?}", m);
        }
        for p in live {
            m.release(&p.nodes);
        }
        m.release(&down);
        prop_assert_eq!(m, M2db::new(w, h, contiguous));
    }

    #[test]
    fn non_contiguous_places_any_request_up_to_the_free_count(
        (w, h) in prop_oneof![Just((8, 8)), Just((6, 5)), Just((7, 3))],
        sizes in proptest::collection::vec(1u32..20, 1..20),
    ) {
        let mut m = M2db::new(w, h, false);
        for n in sizes {
            let free = m.free_count();
            match m.allocate(n) {
                Some(p) => prop_assert_eq!(p.nodes.len() as u32, n),
                None => prop_assert!(n > free),
            }
        }
    }
}

/// A draw from seed Table 3's batch mix (xorshift, so no dependency).
fn table3_size(state: &mut u64) -> u32 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    let total: u64 = SDSC_TABLE3_BATCH_JOBS.iter().map(|&(_, c)| c as u64).sum();
    let mut pick = *state % total;
    for &(size, count) in &SDSC_TABLE3_BATCH_JOBS {
        if pick < count as u64 {
            return size;
        }
        pick -= count as u64;
    }
    1
}

/// Allocate+free pairs per second on a 32×32 mesh under the Table 3 mix:
/// jobs are freed oldest first whenever fewer than `reserve` nodes would
/// stay free (0: the mesh runs full, the most fragmented case).
fn pairs_per_second(contiguous: bool, reserve: u32) -> (f64, f64) {
    let mut m = M2db::new(32, 32, contiguous);
    let mut live = std::collections::VecDeque::new();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let pairs = 1_000_000u32;
    let mut multi = 0u64;
    let start = std::time::Instant::now();
    for _ in 0..pairs {
        let n = table3_size(&mut rng);
        let p = loop {
            if m.free_count() >= n + reserve {
                if let Some(p) = m.allocate(n) {
                    break p;
                }
            }
            let old: Placement = live.pop_front().unwrap();
            m.release(&old.nodes);
        };
        multi += (p.parts.len() > 1) as u64;
        live.push_back(p);
    }
    for p in live.drain(..) {
        m.release(&p.nodes);
    }
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(m, M2db::new(32, 32, contiguous));
    (pairs as f64 / secs, 100.0 * multi as f64 / pairs as f64)
}

/// `cargo test --release -p qmesh-core m2db_pairs -- --ignored --nocapture`
#[test]
#[ignore]
fn m2db_pairs_per_second_on_32x32() {
    for contiguous in [false, true] {
        for (load, reserve) in [("full", 0), ("78%", 225)] {
            let (rate, multi) = pairs_per_second(contiguous, reserve);
            println!(
                "m2db 32x32 contiguous={contiguous} load={load}: {rate:.0} pairs/s \
                 ({multi:.1}% placed in several blocks)"
            );
        }
    }
}
