//! The machine: node sets and their nodes, which are up and in service,
//! which are free and what each job holds, and what each host's agent
//! last reported. Only the state's transitions change it (a start and an
//! end together with the job book, a host's report or a node mark alone).

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

use super::HostFacts;
use super::hosts::effective;
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
    pub(super) fn change_host(&mut self, host: &str, change: impl Fn(&mut Node)) -> bool {
        let mut changed = false;
        for node in self.nodes.iter_mut().filter(|n| n.host == host) {
            let before = node.usable();
            change(node);
            match (before, node.usable()) {
                (false, true) => self.up_per_set[node.set] += 1,
                (true, false) => self.up_per_set[node.set] -= 1,
                _ => continue,
            }
            changed = true;
        }
        if changed {
            self.occupancy = Occupancy::of(&self.nodes, self.node_sets.len());
        }
        changed
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
