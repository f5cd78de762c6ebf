//! The reservations' occurrences by node index, kept with the
//! configuration: every pass reads them, and finding each node by its name
//! there cost a replay with a standing reservation two thirds of its time.

use super::State;
use crate::time::Time;

/// One occurrence of a reservation, its nodes as indices in
/// `State::nodes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReservedSpan {
    pub resv: u64,
    /// The node set, by index.
    pub set: usize,
    pub start: Time,
    pub end: Time,
    pub nodes: Vec<usize>,
}

impl State {
    /// Every reservation's occurrences, ended ones included, by node index.
    pub fn reserved_spans(&self) -> &[ReservedSpan] {
        &self.reserved
    }

    /// Works the spans out again from the configuration (after it or the
    /// node sets changed).
    pub(super) fn index_reservations(&mut self) {
        let mut spans = Vec::new();
        for r in self.config.reservations.values() {
            let Some(set) = self
                .machine
                .node_sets
                .iter()
                .position(|s| s.name == r.node_set)
            else {
                continue;
            };
            for o in &r.occurrences {
                let nodes = o
                    .nodes
                    .iter()
                    .filter_map(|name| self.machine.node_index.get(name.as_str()).copied())
                    .collect();
                spans.push(ReservedSpan {
                    resv: r.id,
                    set,
                    start: o.start,
                    end: o.end,
                    nodes,
                });
            }
        }
        self.reserved = spans;
    }
}
