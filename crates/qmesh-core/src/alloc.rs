//! Choosing nodes for a job.
//!
//! Here: the flat allocator, which treats every node of a set alike, with the
//! SDSC selection rule across sets (seed 2.2): first the set with the fewest
//! free nodes that holds the whole request (keeping big holes for big jobs),
//! else spill across the sets in order. Topology-aware allocators (M2DB,
//! subtori, T3D shapes) plug in per set later; they answer the same question.

/// Free nodes of one node set, as indices into `State::nodes`, in set order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreeSet {
    pub set: usize,
    pub free: Vec<usize>,
}

/// Picks `n` nodes from the sets the job may use (`allowed` holds set
/// indices). Returns node indices, or `None` when there are too few.
pub fn flat(free: &[FreeSet], allowed: impl Fn(usize) -> bool, n: usize) -> Option<Vec<usize>> {
    if n == 0 {
        return None;
    }
    let usable: Vec<&FreeSet> = free.iter().filter(|fs| allowed(fs.set)).collect();
    let best_fit = usable
        .iter()
        .filter(|fs| fs.free.len() >= n)
        .min_by_key(|fs| (fs.free.len(), fs.set));
    if let Some(fs) = best_fit {
        let picked = fs.free[..n].to_vec();
        debug_assert_eq!(picked.len(), n);
        return Some(picked);
    }
    let total: usize = usable.iter().map(|fs| fs.free.len()).sum();
    if total < n {
        return None;
    }
    let picked: Vec<usize> = usable
        .iter()
        .flat_map(|fs| fs.free.iter().copied())
        .take(n)
        .collect();
    debug_assert_eq!(picked.len(), n);
    Some(picked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn sets(sizes: &[usize]) -> Vec<FreeSet> {
        let mut next = 0;
        sizes
            .iter()
            .enumerate()
            .map(|(set, &size)| {
                let free = (next..next + size).collect();
                next += size;
                FreeSet { set, free }
            })
            .collect()
    }

    #[test]
    fn prefers_the_fullest_set_that_holds_the_job() {
        let free = sets(&[8, 3, 5]);
        assert_eq!(flat(&free, |_| true, 3).unwrap(), vec![8, 9, 10]);
        assert_eq!(flat(&free, |_| true, 4).unwrap(), vec![11, 12, 13, 14]);
    }

    #[test]
    fn spills_across_sets_in_order_when_none_holds_it() {
        let free = sets(&[2, 3]);
        assert_eq!(flat(&free, |_| true, 4).unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(flat(&free, |_| true, 6), None);
        assert_eq!(flat(&free, |s| s == 1, 3).unwrap(), vec![2, 3, 4]);
        assert_eq!(flat(&free, |s| s == 0, 3), None);
    }

    proptest! {
        #[test]
        fn gives_exactly_n_distinct_free_nodes_or_none(
            sizes in proptest::collection::vec(0usize..6, 1..5),
            n in 1usize..20,
        ) {
            let free = sets(&sizes);
            let total: usize = sizes.iter().sum();
            match flat(&free, |_| true, n) {
                Some(picked) => {
                    prop_assert_eq!(picked.len(), n);
                    let distinct: BTreeSet<usize> = picked.iter().copied().collect();
                    prop_assert_eq!(distinct.len(), n);
                    prop_assert!(picked.iter().all(|&i| i < total));
                }
                None => prop_assert!(total < n),
            }
        }
    }
}
