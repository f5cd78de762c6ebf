//! Any n free nodes: the allocator of a set without topology (a cluster,
//! the ANL SP's switch). The scheduler counts flat sets' nodes directly and
//! needs no instance; this one is for the benchmark and for completeness of
//! the trait.

use std::collections::BTreeSet;

use super::{AllocError, Allocator, Placement};

/// The free nodes, lowest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flat {
    free: BTreeSet<u32>,
    size: u32,
}

impl Flat {
    pub fn new(size: u32) -> Flat {
        Flat {
            free: (0..size).collect(),
            size,
        }
    }
}

impl Allocator for Flat {
    fn size_for(&self, n: u32) -> Option<u32> {
        (n >= 1 && n <= self.size).then_some(n)
    }

    fn allocate(&mut self, n: u32) -> Option<Placement> {
        if n == 0 || n as usize > self.free.len() {
            return None;
        }
        let nodes = (0..n).filter_map(|_| self.free.pop_first()).collect();
        Some(Placement {
            nodes,
            parts: Vec::new(),
        })
    }

    fn release(&mut self, nodes: &[u32]) {
        self.free
            .extend(nodes.iter().copied().filter(|&n| n < self.size));
    }

    fn occupy(&mut self, nodes: &[u32]) -> Result<(), AllocError> {
        for &node in nodes {
            if node >= self.size {
                return Err(AllocError::OutOfRange {
                    node,
                    size: self.size,
                });
            }
            if !self.free.contains(&node) {
                return Err(AllocError::Taken { node });
            }
        }
        for node in nodes {
            self.free.remove(node);
        }
        Ok(())
    }

    fn free_count(&self) -> u32 {
        self.free.len() as u32
    }

    fn capacity(&self) -> u32 {
        self.size
    }

    fn boxed_clone(&self) -> Box<dyn Allocator> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn keeps_the_promises(
            size in 1u32..64,
            ops in prop::collection::vec((any::<bool>(), 0u32..70), 0..60),
        ) {
            let fresh = Flat::new(size);
            prop_assert_eq!(super::super::check_allocator(&fresh, &ops), Ok(()));
        }
    }

    #[test]
    fn occupy_refuses_taken_and_unknown_nodes() {
        let mut a = Flat::new(4);
        a.occupy(&[1, 2]).unwrap();
        assert_eq!(a.occupy(&[2]), Err(AllocError::Taken { node: 2 }));
        assert_eq!(
            a.occupy(&[9]),
            Err(AllocError::OutOfRange { node: 9, size: 4 })
        );
        assert_eq!(a.allocate(2).unwrap().nodes, vec![0, 3]);
    }
}
