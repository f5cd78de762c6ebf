//! The machine: node sets and their nodes, which are up and in service,
//! which are free and what each job holds, and what each host's agent
//! last reported. Only the state's transitions change it (a start and an
//! end together with the job book, a host's report or a node mark alone).

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

use super::HostFacts;
use super::hosts::{effective, merge_first_report};
use super::occupancy::Occupancy;
use crate::ids::JobId;
use crate::node::{Node, NodeAttrs, NodeSet};

#[derive(Clone, Debug)]
pub(super) struct Machine {
    /// The daemon file's node sets, then the config's (made with qmgr).
    pub(super) node_sets: Vec<NodeSet>,
    /// How many of `node_sets` come from the daemon's file.
    pub(super) file_sets: usize,
    pub(super) nodes: Vec<Node>,
    pub(super) node_index: HashMap<String, usize>,
    /// Per host, its nodes (indices in `nodes`): a host's report or its
    /// agent's coming and going touches its own nodes, not every node.
    pub(super) host_nodes: HashMap<String, Vec<usize>>,
    /// Per node set, how many of its hosts have reported (`host_facts`).
    pub(super) reported_in: Vec<usize>,
    /// Per host, what its agent last reported (see `hosts.rs`).
    pub(super) host_facts: HashMap<String, HostFacts>,
    /// Per node set, its attributes for scheduling: the file's or qmgr's,
    /// with what its hosts report where those say nothing (`hosts.rs`).
    pub(super) effective: Vec<NodeAttrs>,
    /// Per host, jobs started there since that report: the load does not
    /// show them yet, and without them one pass would pile its jobs onto
    /// the host that looked least busy.
    pub(super) started_since_load: HashMap<String, u32>,
    /// Nodes usable (up and in service), per node set (kept by
    /// `set_host_up` and `apply_node_marks`).
    pub(super) up_per_set: Vec<usize>,
    /// Per node set, the largest job it can ever place (see
    /// `node_sets::largest_jobs`).
    pub(super) largest_job: Vec<u32>,
    /// The free nodes and what each job holds, kept for the pass.
    pub(super) occupancy: Occupancy,
    /// Hosts whose agent is connected (kept by `set_host_up`): nodes
    /// added on them later are up at once.
    pub(super) up_hosts: BTreeSet<String>,
}

impl Machine {
    /// Applies `change` to the nodes of `host`, keeping the usable counts
    /// and the occupancy; whether any node became usable or unusable.
    /// Costs the host's nodes (and the jobs on them), not the machine's.
    pub(super) fn change_host(&mut self, host: &str, change: impl Fn(&mut Node)) -> bool {
        let Some(indices) = self.host_nodes.get(host) else {
            return false;
        };
        let mut changed = false;
        for &i in indices {
            let node = &mut self.nodes[i];
            let (before, room) = (node.usable(), node.room());
            change(node);
            let node = &self.nodes[i];
            match (before, node.usable()) {
                (false, true) => self.up_per_set[node.set] += 1,
                (true, false) => self.up_per_set[node.set] -= 1,
                _ => {
                    if node.room() != room {
                        self.occupancy.node_changed(node, i, room as usize, before);
                    }
                    continue;
                }
            }
            self.occupancy.node_changed(node, i, room as usize, before);
            changed = true;
        }
        changed
    }

    /// The node sets that hold nodes of `host`, each once.
    fn sets_of_host(&self, host: &str) -> Vec<usize> {
        let mut sets: Vec<usize> = self
            .host_nodes
            .get(host)
            .into_iter()
            .flatten()
            .map(|&i| self.nodes[i].set)
            .collect();
        sets.sort_unstable();
        sets.dedup();
        sets
    }

    /// `host` reported for the first time (its facts are in
    /// `host_facts`): each of its sets takes it in. A set that had a
    /// report already only gets narrower (the least memory, CPUs and GPUs
    /// per node, the features all share), so it is merged in without
    /// reading the set's other hosts; the first report of a set is read
    /// in whole.
    pub(super) fn first_report(&mut self, host: &str) {
        let Some(facts) = self.host_facts.get(host) else {
            return;
        };
        for s in self.sets_of_host(host) {
            let set = &self.node_sets[s];
            self.reported_in[s] += 1;
            if self.reported_in[s] == 1 {
                self.effective[s] = effective(set, &self.host_facts);
                continue;
            }
            let held = set.nodes.iter().filter(|d| d.host == host).count() as u32;
            merge_first_report(&mut self.effective[s], &set.attrs, facts, held);
        }
    }

    /// `host`'s memory, CPUs, GPUs or features changed: its sets are read
    /// again in whole (a rare event: a host's hardware changed).
    pub(super) fn report_changed(&mut self, host: &str) {
        for s in self.sets_of_host(host) {
            self.effective[s] = effective(&self.node_sets[s], &self.host_facts);
        }
    }

    /// A job ended or went back to its queue: its nodes are free again.
    pub(super) fn release_nodes(&mut self, id: JobId) {
        self.occupancy.give_back(&mut self.nodes, id);
    }

    /// After the sets or a host's memory, CPUs or features changed.
    pub(super) fn recompute_effective(&mut self) {
        self.effective = self
            .node_sets
            .iter()
            .map(|set| effective(set, &self.host_facts))
            .collect();
        self.reported_in = self
            .node_sets
            .iter()
            .map(|set| {
                let mut hosts: Vec<&str> = set
                    .nodes
                    .iter()
                    .map(|d| d.host.as_str())
                    .filter(|h| self.host_facts.contains_key(*h))
                    .collect();
                hosts.sort_unstable();
                hosts.dedup();
                hosts.len()
            })
            .collect();
    }

    /// A job started on `nodes`: each of their hosts counts one more job
    /// until its next load report. Only shared sets read the count, so
    /// without one nothing is counted (the pass's hot path).
    pub(super) fn note_started_on(&mut self, nodes: &[usize]) {
        if self.node_sets.iter().all(|set| set.attrs.slots() == 1) {
            return;
        }
        let mut hosts: Vec<&str> = nodes
            .iter()
            .filter_map(|&i| self.nodes.get(i))
            .map(|n| n.host.as_str())
            .collect();
        hosts.sort_unstable();
        hosts.dedup();
        for host in hosts {
            match self.started_since_load.get_mut(host) {
                Some(count) => *count += 1,
                None => {
                    self.started_since_load.insert(host.to_string(), 1);
                }
            }
        }
    }

    /// How busy node `i`'s host is, NCAR's way: its run-queue length and
    /// its CPUs. The run queue is the last load reported plus the jobs
    /// started there since; the CPUs are those reported, else its set's,
    /// else its job slots. Among the nodes of shared sets with room for a
    /// job, the least busy (run queue over CPUs) takes it.
    pub(super) fn run_queue(&self, i: usize) -> (f64, u32) {
        let Some(node) = self.nodes.get(i) else {
            return (f64::INFINITY, 1);
        };
        let reported = self.host_facts.get(&node.host);
        let started = self
            .started_since_load
            .get(&node.host)
            .copied()
            .unwrap_or(0);
        let load = reported.map_or(0.0, |f| f.load) + f64::from(started);
        let cpus = reported
            .map(|f| f.cpus)
            .filter(|&c| c > 0)
            .or(self.effective[node.set].cpus)
            .unwrap_or(node.slots)
            .max(1);
        (load, cpus)
    }
}

/// Per host, its nodes' indices, in node order.
pub(super) fn host_nodes(nodes: &[Node]) -> HashMap<String, Vec<usize>> {
    let mut by_host: HashMap<String, Vec<usize>> = HashMap::default();
    for (i, node) in nodes.iter().enumerate() {
        match by_host.get_mut(node.host.as_str()) {
            Some(indices) => indices.push(i),
            None => {
                by_host.insert(node.host.clone(), vec![i]);
            }
        }
    }
    by_host
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::effective;
    use crate::node::{NodeDef, NodeSet, Topology};
    use crate::queue::Queue;
    use crate::server::Config;
    use crate::state::tests::{exited, submit, t};
    use crate::state::{HostFacts, State};

    /// Set `a`: hosts h0, h1, h2 with two nodes each; set `b`: one more
    /// node of h2 and two of h3.
    fn machine() -> State {
        let mut config = Config::default();
        config.queues.insert("batch".into(), Queue::open("batch"));
        let set = |name: &str, nodes: &[(&str, &str)]| NodeSet {
            name: name.into(),
            topology: Topology::Flat,
            nodes: nodes
                .iter()
                .map(|(n, h)| NodeDef {
                    name: n.to_string(),
                    host: h.to_string(),
                })
                .collect(),
            attrs: Default::default(),
        };
        let a = set(
            "a",
            &[
                ("a0", "h0"),
                ("a1", "h0"),
                ("a2", "h1"),
                ("a3", "h1"),
                ("a4", "h2"),
                ("a5", "h2"),
            ],
        );
        let b = set("b", &[("b0", "h2"), ("b1", "h3"), ("b2", "h3")]);
        State::new("srv", config, vec![a, b]).unwrap()
    }

    #[derive(Clone, Debug)]
    enum Op {
        Up(usize, bool),
        Facts(usize, HostFacts),
        Start(usize),
        End,
    }

    fn op() -> impl Strategy<Value = Op> {
        let facts = (1u32..4, 1u64..4, 0u32..20, any::<bool>(), 0u32..5).prop_map(
            |(cpus, mem, load, licensed, gpus)| HostFacts {
                load: f64::from(load),
                cpus,
                mem: mem << 30,
                features: if licensed {
                    vec!["imsl".into(), "x".into()]
                } else {
                    vec!["x".into()]
                },
                gpus,
            },
        );
        prop_oneof![
            (0usize..4, any::<bool>()).prop_map(|(h, up)| Op::Up(h, up)),
            (0usize..4, facts).prop_map(|(h, f)| Op::Facts(h, f)),
            (1usize..5).prop_map(Op::Start),
            Just(Op::End),
        ]
    }

    proptest! {
        /// A host's agent coming and going, and its reports, touch only
        /// its own nodes; what they leave is what reading every node and
        /// every host again gives (the occupancy, checked by
        /// `check_invariants`, and each set's effective attributes).
        #[test]
        fn a_hosts_changes_leave_what_a_rebuild_would(ops in prop::collection::vec(op(), 1..40)) {
            let mut s = machine();
            let mut running = Vec::new();
            for op in ops {
                match op {
                    Op::Up(h, up) => {
                        s.set_host_up(&format!("h{h}"), up);
                    }
                    Op::Facts(h, facts) => {
                        s.set_host_facts(&format!("h{h}"), facts);
                    }
                    Op::Start(n) => {
                        let free: Vec<usize> = s
                            .nodes()
                            .iter()
                            .enumerate()
                            .filter(|(_, node)| node.is_free())
                            .map(|(i, _)| i)
                            .take(n)
                            .collect();
                        if free.len() == n {
                            let id = submit(&mut s, 1000, n as u32);
                            if s.start(id, &free, t(1)).is_ok() {
                                running.push(id);
                            }
                        }
                    }
                    Op::End => {
                        if let Some(id) = running.pop() {
                            s.finish(id, exited(0), t(2)).unwrap();
                        }
                    }
                }
                s.check_invariants().unwrap();
                prop_assert_eq!(&s.machine.host_nodes, &super::host_nodes(&s.machine.nodes));
                for (i, set) in s.machine.node_sets.iter().enumerate() {
                    let mut full = effective(set, &s.machine.host_facts);
                    let mut kept = s.machine.effective[i].clone();
                    // Only the order of shared features may differ.
                    full.features.sort();
                    kept.features.sort();
                    prop_assert_eq!(kept, full, "set {}", set.name);
                }
            }
        }
    }
}
