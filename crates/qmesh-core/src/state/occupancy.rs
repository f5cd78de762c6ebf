//! Who holds which node, kept ready for the scheduling pass.
//!
//! A pass needs the free nodes of each set and, per running job, how many
//! up nodes it will give back. Reading those off every node costs a pass
//! O(nodes) however little changed: with 1,024 nodes and 180,000 passes a
//! replay spent a fifth of its time there. Here they are kept as the state
//! changes: a bit per node that is up and idle, and per job holding nodes,
//! the node indices and the count of its up nodes per set. Starts and ends
//! update them in O(the job's nodes); the rare changes of node sets and
//! hosts rebuild them from the nodes, which stay the source of truth.
//!
//! A node of a shared set (`jobs_per_node` over 1) runs several jobs: it
//! stays free while it has room, and a set's count is of free slots (one
//! per job a node may still take). On an exclusive set a slot is a node.

use std::collections::BTreeMap;

use crate::job::JobId;
use crate::node::Node;

/// One bit per node, by index in [`crate::State::nodes`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeBits {
    words: Vec<u64>,
}

impl NodeBits {
    /// `len` bits, all clear.
    pub fn new(len: usize) -> NodeBits {
        NodeBits {
            words: vec![0; len.div_ceil(64)],
        }
    }

    pub fn get(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    pub fn set(&mut self, i: usize, on: bool) {
        if let Some(w) = self.words.get_mut(i / 64) {
            if on {
                *w |= 1 << (i % 64);
            } else {
                *w &= !(1 << (i % 64));
            }
        }
    }

    /// The indices set in `[from, to)`, in order.
    pub fn ones(&self, from: usize, to: usize) -> impl Iterator<Item = usize> + '_ {
        let first = from / 64;
        let last = to.div_ceil(64).min(self.words.len());
        (first..last).flat_map(move |w| {
            let mut word = self.words[w];
            if w == first {
                word &= u64::MAX.checked_shl((from % 64) as u32).unwrap_or(0);
            }
            if w * 64 + 64 > to {
                word &= (1u64 << (to - w * 64)).wrapping_sub(1);
            }
            std::iter::from_fn(move || {
                (word != 0).then(|| {
                    let bit = word.trailing_zeros() as usize;
                    word &= word - 1;
                    w * 64 + bit
                })
            })
        })
    }

    /// Clears and returns the first `k` bits set in `[from, to)`. A word
    /// at a time: every start takes its nodes here.
    pub fn take_first(&mut self, from: usize, to: usize, k: usize) -> Vec<usize> {
        let mut taken = Vec::with_capacity(k);
        let first = from / 64;
        let last = to.div_ceil(64).min(self.words.len());
        for w in first..last {
            if taken.len() == k {
                break;
            }
            let mut word = self.words[w];
            if w == first {
                word &= u64::MAX.checked_shl((from % 64) as u32).unwrap_or(0);
            }
            if w * 64 + 64 > to {
                word &= (1u64 << (to - w * 64)).wrapping_sub(1);
            }
            let mut cleared = 0u64;
            while word != 0 && taken.len() < k {
                let bit = word.trailing_zeros();
                word &= word - 1;
                cleared |= 1 << bit;
                taken.push(w * 64 + bit as usize);
            }
            self.words[w] &= !cleared;
        }
        taken
    }
}

/// What a job holding nodes holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// Its nodes, by index.
    pub nodes: Vec<usize>,
    /// Per node set, how many of them are up: what its end gives back.
    pub up_in: Vec<(usize, usize)>,
}

/// The free nodes and what each job holds (see the module comment).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Occupancy {
    /// Up and with room for a job (on an exclusive set: held by none).
    pub free: NodeBits,
    /// Per set, how many jobs its nodes may still take: its free nodes
    /// on an exclusive set, their free slots on a shared one.
    pub free_in: Vec<usize>,
    pub held: BTreeMap<JobId, Held>,
}

impl Occupancy {
    /// Read off the nodes (after node sets or hosts changed).
    pub fn of(nodes: &[Node], sets: usize) -> Occupancy {
        let mut occupancy = Occupancy {
            free: NodeBits::new(nodes.len()),
            free_in: vec![0; sets],
            held: BTreeMap::new(),
        };
        for (i, node) in nodes.iter().enumerate() {
            let room = node.room() as usize;
            if room > 0 {
                occupancy.free.set(i, true);
                occupancy.free_in[node.set] += room;
            }
            for id in node.jobs.iter() {
                occupancy.held.entry(id).or_default().nodes.push(i);
            }
        }
        for held in occupancy.held.values_mut() {
            held.up_in = up_in(nodes, &held.nodes);
        }
        occupancy
    }

    /// `id` takes a slot on each of `taken`, which were free (all of a
    /// shared node's slots when it is to be alone there: `sole`): the
    /// nodes record it, and the counts follow.
    pub fn take(&mut self, nodes: &mut [Node], id: JobId, taken: &[usize], sole: bool) {
        let mut taken = taken.to_vec();
        taken.sort_unstable();
        taken.dedup();
        // The up nodes per set, counted on the way (`up_in`, without a
        // second walk over the nodes).
        let mut up: Vec<(usize, usize)> = Vec::new();
        for &i in &taken {
            let node = &mut nodes[i];
            if node.usable() {
                match up.iter_mut().find(|(s, _)| *s == node.set) {
                    Some((_, n)) => *n += 1,
                    None => up.push((node.set, 1)),
                }
            }
            if node.slots == 1 && node.jobs.is_empty() {
                // An exclusive node: the common case, kept cheap.
                node.jobs.push(id);
                if self.free.get(i) {
                    self.free.set(i, false);
                    self.free_in[node.set] -= 1;
                }
                continue;
            }
            let before = node.room() as usize;
            if !node.jobs.contains(id) {
                node.jobs.push(id);
            }
            if sole && node.slots > 1 {
                node.sole = Some(id);
            }
            self.recount(node, i, before);
        }
        up.sort_unstable();
        debug_assert_eq!(up, up_in(nodes, &taken));
        self.held.insert(
            id,
            Held {
                nodes: taken,
                up_in: up,
            },
        );
    }

    /// `id` gives its slots back: the nodes forget it, and the counts
    /// follow. Returns its nodes (indices).
    pub fn give_back(&mut self, nodes: &mut [Node], id: JobId) -> Vec<usize> {
        let Some(held) = self.held.remove(&id) else {
            return Vec::new();
        };
        for &i in &held.nodes {
            let node = &mut nodes[i];
            if node.slots == 1 && node.jobs.first() == Some(id) && node.jobs.len() == 1 {
                // An exclusive node: the common case, kept cheap.
                node.jobs.remove(id);
                if node.usable() && !self.free.get(i) {
                    self.free.set(i, true);
                    self.free_in[node.set] += 1;
                }
                continue;
            }
            let before = node.room() as usize;
            node.jobs.remove(id);
            if node.sole == Some(id) {
                node.sole = None;
            }
            self.recount(node, i, before);
        }
        held.nodes
    }

    /// Node `i` changed (its host went up or down, or became busy): it
    /// had room for `room_before` jobs and was usable or not
    /// (`usable_before`). The free nodes and, for the jobs on it, the up
    /// nodes they hold follow, as [`Occupancy::of`] would read them.
    pub fn node_changed(&mut self, node: &Node, i: usize, room_before: usize, usable_before: bool) {
        self.recount(node, i, room_before);
        let usable = node.usable();
        if usable == usable_before {
            return;
        }
        for id in node.jobs.iter() {
            let Some(held) = self.held.get_mut(&id) else {
                continue;
            };
            let at = held.up_in.binary_search_by_key(&node.set, |&(s, _)| s);
            match (at, usable) {
                (Ok(k), true) => held.up_in[k].1 += 1,
                (Err(k), true) => held.up_in.insert(k, (node.set, 1)),
                (Ok(k), false) => {
                    held.up_in[k].1 -= 1;
                    if held.up_in[k].1 == 0 {
                        held.up_in.remove(k);
                    }
                }
                (Err(_), false) => {}
            }
        }
    }

    /// After node `i`'s jobs changed from when it had room for `before`.
    fn recount(&mut self, node: &Node, i: usize, before: usize) {
        let after = node.room() as usize;
        let count = &mut self.free_in[node.set];
        *count = (*count + after).saturating_sub(before);
        self.free.set(i, after > 0);
    }
}

/// Counts of the usable nodes among `indices`, per set (in set order).
fn up_in(nodes: &[Node], indices: &[usize]) -> Vec<(usize, usize)> {
    let mut counts: Vec<(usize, usize)> = Vec::new();
    for &i in indices {
        let node = &nodes[i];
        if !node.usable() {
            continue;
        }
        match counts.iter_mut().find(|(s, _)| *s == node.set) {
            Some((_, n)) => *n += 1,
            None => counts.push((node.set, 1)),
        }
    }
    counts.sort_unstable();
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The bits answer as a plain list of booleans would.
        #[test]
        fn bits_are_a_list_of_booleans(
            len in 1usize..300,
            flips in proptest::collection::vec((0usize..300, any::<bool>()), 0..200),
            from in 0usize..300,
            span in 0usize..300,
            k in 0usize..50,
        ) {
            let mut bits = NodeBits::new(len);
            let mut plain = vec![false; len];
            for (i, on) in flips {
                if i < len {
                    bits.set(i, on);
                    plain[i] = on;
                }
            }
            let from = from.min(len);
            let to = (from + span).min(len);
            let expected: Vec<usize> = (from..to).filter(|&i| plain[i]).collect();
            prop_assert_eq!(bits.ones(from, to).collect::<Vec<_>>(), expected.clone());
            let taken = bits.take_first(from, to, k);
            prop_assert_eq!(&taken[..], &expected[..k.min(expected.len())]);
            for (i, &was) in plain.iter().enumerate().take(len) {
                prop_assert_eq!(bits.get(i), was && !taken.contains(&i));
            }
        }
    }
}
