//! What the agents say of their hosts with every hello and heartbeat:
//! the load (the run-queue length, NCAR's measure), CPUs, memory, GPUs
//! and features (licensed software: `qmesh-agent --features imsl`).
//!
//! The load decides whether a host takes new jobs (at `max_load_factor`
//! times its CPUs it does not) and, on shared sets, which node takes the
//! next one (`run_queue`). Memory, CPUs and features fill in a node set's
//! attributes where the configuration says nothing: its effective memory
//! and CPUs are those of its smallest host that has reported, its GPUs
//! per node the fewest any such host has per node of the set it holds
//! (a host's GPUs shared out among its nodes of the set), and a
//! feature every such host reports is the set's. A set stays homogeneous
//! for the pass, which reads the effective attributes; the
//! configuration's values win where it gives them (a site may keep
//! memory back for the system).

use rustc_hash::FxHashMap as HashMap;

use super::State;
use crate::node::{NodeAttrs, NodeSet};

/// What a host's agent last reported.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostFacts {
    /// The run-queue length (or the site's `--load-command`).
    pub load: f64,
    pub cpus: u32,
    /// Bytes.
    pub mem: u64,
    pub features: Vec<String>,
    /// GPUs on the host.
    pub gpus: u32,
}

impl State {
    /// Takes a host's report. A host whose load reaches the server's
    /// `max_load_factor` times its CPUs takes no new job until it drops
    /// (seed: four times); running jobs go on. Whether the host's nodes
    /// became usable or unusable.
    pub fn set_host_facts(&mut self, host: &str, facts: HostFacts) -> bool {
        let old = self.machine.host_facts.get(host);
        let first = old.is_none();
        let resized = old.is_some_and(|old| {
            old.cpus != facts.cpus
                || old.mem != facts.mem
                || old.gpus != facts.gpus
                || old.features != facts.features
        });
        let busy = overloaded(facts.load, facts.cpus, self.config.server.max_load_factor);
        match self.machine.host_facts.get_mut(host) {
            Some(kept) => *kept = facts,
            None => {
                self.machine.host_facts.insert(host.to_string(), facts);
            }
        }
        if !self.machine.started_since_load.is_empty() {
            self.machine.started_since_load.remove(host);
        }
        if first {
            self.machine.first_report(host);
        } else if resized {
            self.machine.report_changed(host);
        }
        self.machine
            .change_host(host, |node| node.overloaded = busy)
    }

    /// A host's load and CPUs, its memory and features as last reported.
    pub fn set_host_load(&mut self, host: &str, load: f64, cpus: u32) -> bool {
        let facts = HostFacts {
            load,
            cpus,
            ..self
                .machine
                .host_facts
                .get(host)
                .cloned()
                .unwrap_or_default()
        };
        self.set_host_facts(host, facts)
    }

    /// The load and CPUs a host's agent last reported.
    pub fn host_load(&self, host: &str) -> Option<(f64, u32)> {
        self.machine.host_facts.get(host).map(|f| (f.load, f.cpus))
    }

    /// What a host's agent last reported.
    pub fn host_facts(&self, host: &str) -> Option<&HostFacts> {
        self.machine.host_facts.get(host)
    }

    /// Node set `set`'s attributes for scheduling (see the module
    /// comment); the configuration's are `node_sets()[set].attrs`.
    pub fn effective_attrs(&self, set: usize) -> &NodeAttrs {
        &self.machine.effective[set]
    }

    /// The GPUs of node `i` that the jobs on it have not taken (its set's
    /// GPUs per node, less each job's).
    pub fn gpus_free(&self, i: usize) -> u32 {
        let Some(node) = self.machine.nodes.get(i) else {
            return 0;
        };
        let have = self.machine.effective[node.set].gpus.unwrap_or(0);
        let held: u32 = node
            .jobs
            .iter()
            .filter_map(|id| self.book.jobs.get(&id))
            .map(|job| job.gpus.unwrap_or(0))
            .sum();
        have.saturating_sub(held)
    }

    /// How busy node `i`'s host is, NCAR's way: its run-queue length and
    /// its CPUs. The run queue is the last load reported plus the jobs
    /// started there since; the CPUs are those reported, else its set's,
    /// else its job slots. Among the nodes of shared sets with room for a
    /// job, the least busy (run queue over CPUs) takes it.
    pub fn run_queue(&self, i: usize) -> (f64, u32) {
        self.machine.run_queue(i)
    }

    /// After `max_load_factor` changed: every host judged again.
    pub(super) fn judge_loads(&mut self) {
        let hosts: Vec<(String, f64, u32)> = self
            .machine
            .host_facts
            .iter()
            .map(|(h, f)| (h.clone(), f.load, f.cpus))
            .collect();
        for (host, load, cpus) in hosts {
            self.set_host_load(&host, load, cpus);
        }
    }
}

/// `set`'s attributes with what its hosts reported filling the gaps.
pub(super) fn effective(set: &NodeSet, facts: &HashMap<String, HostFacts>) -> NodeAttrs {
    let mut attrs = set.attrs.clone();
    let mut hosts: Vec<&str> = set.nodes.iter().map(|d| d.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let reported: Vec<&HostFacts> = hosts.iter().filter_map(|h| facts.get(*h)).collect();
    let Some(first) = reported.first() else {
        return attrs;
    };
    if attrs.mem.is_none() {
        attrs.mem = reported.iter().map(|f| f.mem).filter(|&m| m > 0).min();
    }
    if attrs.cpus.is_none() {
        attrs.cpus = reported.iter().map(|f| f.cpus).filter(|&c| c > 0).min();
    }
    if attrs.gpus.is_none() {
        let mut held: HashMap<&str, u32> = HashMap::default();
        for def in &set.nodes {
            *held.entry(def.host.as_str()).or_default() += 1;
        }
        attrs.gpus = held
            .iter()
            .filter_map(|(host, &nodes)| facts.get(*host).map(|f| f.gpus / nodes.max(1)))
            .min()
            .filter(|&g| g > 0);
    }
    for feature in &first.features {
        if !attrs.features.contains(feature)
            && reported.iter().all(|f| f.features.contains(feature))
        {
            attrs.features.push(feature.clone());
        }
    }
    attrs
}

/// A set's effective attributes (`effective`, with at least one host
/// reported) narrowed by the first report of one more host, which holds
/// `held` of its nodes: what `effective` gives for all of them, but the
/// order of the features the hosts share may differ (it follows the
/// first host by name there).
pub(super) fn merge_first_report(
    attrs: &mut NodeAttrs,
    configured: &NodeAttrs,
    facts: &HostFacts,
    held: u32,
) {
    if configured.mem.is_none() && facts.mem > 0 {
        attrs.mem = Some(attrs.mem.map_or(facts.mem, |m| m.min(facts.mem)));
    }
    if configured.cpus.is_none() && facts.cpus > 0 {
        attrs.cpus = Some(attrs.cpus.map_or(facts.cpus, |c| c.min(facts.cpus)));
    }
    if configured.gpus.is_none() {
        // None here means the least so far is 0, which stays the least.
        let here = facts.gpus / held.max(1);
        attrs.gpus = attrs.gpus.map(|g| g.min(here)).filter(|&g| g > 0);
    }
    attrs
        .features
        .retain(|f| configured.features.contains(f) || facts.features.contains(f));
}

/// Whether a host's load is at or over `factor` times its CPUs (a
/// factor of 0 turns the check off; a host that names no CPUs counts one).
pub fn overloaded(load: f64, cpus: u32, factor: f64) -> bool {
    factor > 0.0 && load >= factor * f64::from(cpus.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::{NodeDef, Topology};

    fn set(nodes: &[(&str, &str)], gpus: Option<u32>) -> NodeSet {
        NodeSet {
            name: "g".into(),
            topology: Topology::Flat,
            nodes: nodes
                .iter()
                .map(|(name, host)| NodeDef {
                    name: name.to_string(),
                    host: host.to_string(),
                })
                .collect(),
            attrs: NodeAttrs {
                gpus,
                ..NodeAttrs::default()
            },
        }
    }

    fn gpus(n: u32) -> HostFacts {
        HostFacts {
            cpus: 8,
            gpus: n,
            ..HostFacts::default()
        }
    }

    #[test]
    fn a_sets_gpus_per_node_come_from_its_hosts_shared_among_their_nodes() {
        let s = set(&[("a1", "h1"), ("a2", "h1"), ("b1", "h2")], None);
        let mut facts = HashMap::default();
        assert_eq!(effective(&s, &facts).gpus, None, "nothing reported");
        facts.insert("h1".to_string(), gpus(8));
        assert_eq!(
            effective(&s, &facts).gpus,
            Some(4),
            "h1's 8 GPUs for its 2 nodes"
        );
        facts.insert("h2".to_string(), gpus(2));
        assert_eq!(effective(&s, &facts).gpus, Some(2), "h2 has fewer");
        facts.insert("h2".to_string(), gpus(0));
        assert_eq!(
            effective(&s, &facts).gpus,
            None,
            "a host without GPUs: the set has none"
        );
    }

    #[test]
    fn the_configurations_gpus_win() {
        let s = set(&[("a1", "h1")], Some(1));
        let mut facts = HashMap::default();
        facts.insert("h1".to_string(), gpus(4));
        assert_eq!(effective(&s, &facts).gpus, Some(1));
    }
}
