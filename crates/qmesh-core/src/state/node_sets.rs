//! The nodes of a state, built from its node sets, and rebuilt when qmgr
//! makes, changes or deletes a set ([`State::set_config`]). A rebuild keeps
//! what is run-time state: which job holds a node, whether it is up.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;

use super::State;
use crate::error::CoreError;
use crate::node::{Node, NodeSet};

/// The nodes of `sets`, in set order, and where each name is; `up` says
/// whether a node starts up. Set and node names must be unique and a
/// mesh or torus must list as many nodes as its shape.
pub(super) fn index_nodes(
    sets: &[NodeSet],
    up: impl Fn(&crate::node::NodeDef) -> bool,
) -> Result<(Vec<Node>, HashMap<String, usize>), CoreError> {
    let mut nodes = Vec::new();
    let mut node_index = HashMap::default();
    let mut set_names = BTreeSet::new();
    for (set_idx, set) in sets.iter().enumerate() {
        if !set_names.insert(set.name.as_str()) {
            return Err(CoreError::BadNodeSets {
                why: format!("node set \"{}\" is defined twice", set.name),
            });
        }
        if let Some(size) = set.topology.size()
            && size as usize != set.nodes.len()
        {
            return Err(CoreError::BadNodeSets {
                why: format!(
                    "node set \"{}\" is a {} ({} nodes) but lists {} nodes",
                    set.name,
                    set.topology.describe(),
                    size,
                    set.nodes.len()
                ),
            });
        }
        if let Some(why) = crate::node::sharing_conflict(set) {
            return Err(CoreError::BadNodeSets { why });
        }
        for def in &set.nodes {
            if node_index.insert(def.name.clone(), nodes.len()).is_some() {
                return Err(CoreError::BadNodeSets {
                    why: format!("node \"{}\" appears twice", def.name),
                });
            }
            nodes.push(Node {
                name: def.name.as_str().into(),
                host: def.host.clone(),
                set: set_idx,
                up: up(def),
                jobs: Default::default(),
                slots: set.attrs.slots(),
                admin: None,
                overloaded: false,
                sole: None,
            });
        }
    }
    Ok((nodes, node_index))
}

/// Per set, the largest job it can ever place: all its nodes when flat,
/// else the largest request its topology's allocator can give (a 2×6
/// torus places subtori of up to 8 nodes, not 12).
pub(super) fn largest_jobs(sets: &[NodeSet]) -> Vec<u32> {
    sets.iter()
        .map(|set| {
            let all = set.nodes.len() as u32;
            match set.topology.allocator() {
                Ok(Some(allocator)) => (1..=all)
                    .rev()
                    .find(|&n| allocator.size_for(n).is_some_and(|size| size <= all))
                    .unwrap_or(0),
                _ => all,
            }
        })
        .collect()
}

impl State {
    /// Gives each node the administrator's mark of the configuration (or
    /// none), then counts the usable nodes again and rebuilds who holds
    /// what: a node out of service takes no job, and gives back none when
    /// its job ends.
    pub(super) fn apply_node_marks(&mut self) {
        for node in &mut self.machine.nodes {
            node.admin = self
                .config
                .node_marks
                .get(&*node.name)
                .map(|mark| mark.state);
        }
        let mut usable = vec![0; self.machine.node_sets.len()];
        for node in self.machine.nodes.iter().filter(|n| n.usable()) {
            usable[node.set] += 1;
        }
        self.machine.up_per_set = usable;
        self.machine.occupancy =
            super::Occupancy::of(&self.machine.nodes, self.machine.node_sets.len());
    }

    /// The node sets of the daemon's file: the first of
    /// [`State::node_sets`]. qmgr does not change them.
    pub fn file_sets(&self) -> &[NodeSet] {
        &self.machine.node_sets[..self.machine.file_sets]
    }

    /// Whether the set named comes from the daemon's file.
    pub fn is_file_set(&self, name: &str) -> bool {
        self.file_sets().iter().any(|s| s.name == name)
    }

    /// Puts `sets` in place of the node sets. A node that stays on the
    /// same host keeps being up or down; a new one is up if its host's
    /// agent is connected. Running jobs hold their nodes again; a node of
    /// one that is gone is reported. On a bad list (which
    /// [`crate::server::merge_sets`] prevents) nothing changes.
    pub(super) fn replace_node_sets(&mut self, sets: Vec<NodeSet>) -> Vec<String> {
        let was_up = |def: &crate::node::NodeDef| match self.machine.node_index.get(&def.name) {
            Some(&i) if self.machine.nodes[i].host == def.host => self.machine.nodes[i].up,
            _ => self.machine.up_hosts.contains(&def.host),
        };
        let (mut nodes, node_index) = match index_nodes(&sets, was_up) {
            Ok(built) => built,
            Err(e) => return vec![format!("the node sets were not changed: {e}")],
        };
        let mut warnings = Vec::new();
        for id in &self.book.active {
            let Some(job) = self.book.jobs.get(id) else {
                continue;
            };
            for name in &job.exec_nodes {
                match node_index.get(&**name) {
                    Some(&i) => {
                        nodes[i].jobs.push(*id);
                        if job.wants_sole_nodes() && nodes[i].slots > 1 {
                            nodes[i].sole = Some(*id);
                        }
                    }
                    None => warnings.push(format!(
                        "job {id} runs on node {name}, which is no longer in any node set"
                    )),
                }
            }
        }
        let mut up_per_set = vec![0; sets.len()];
        for node in nodes.iter().filter(|n| n.up) {
            up_per_set[node.set] += 1;
        }
        self.machine.node_sets = sets;
        self.machine.nodes = nodes;
        self.machine.node_index = node_index;
        self.machine.host_nodes = super::machine::host_nodes(&self.machine.nodes);
        self.machine.up_per_set = up_per_set;
        self.machine.largest_job = largest_jobs(&self.machine.node_sets);
        self.machine.recompute_effective();
        self.machine.occupancy =
            super::Occupancy::of(&self.machine.nodes, self.machine.node_sets.len());
        warnings
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{state, submit, t};
    use crate::node::{NodeDef, NodeSet, Topology};

    fn flat(name: &str, nodes: &[&str], host: &str) -> NodeSet {
        NodeSet {
            name: name.into(),
            topology: Topology::Flat,
            nodes: nodes
                .iter()
                .map(|n| NodeDef {
                    name: n.to_string(),
                    host: host.into(),
                })
                .collect(),
            attrs: Default::default(),
        }
    }

    #[test]
    fn new_sets_join_live_and_running_jobs_keep_their_nodes() {
        let mut s = state(2);
        let id = submit(&mut s, 1, 2);
        s.start(id, &[0, 1], t(1)).unwrap();
        let mut config = s.config().clone();
        config
            .node_sets
            .insert("extra".into(), flat("extra", &["x1", "x2"], "h"));
        config
            .node_sets
            .insert("far".into(), flat("far", &["f1"], "other"));
        assert!(s.set_config(config).is_empty());
        let names: Vec<&str> = s.node_sets().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["local", "extra", "far"]);
        assert_eq!(s.file_sets().len(), 1);
        assert!(s.is_file_set("local") && !s.is_file_set("extra"));
        // The job keeps n0 and n1; x1 and x2 are on a connected host.
        assert_eq!(s.node_by_name("n1").unwrap().job(), Some(id));
        assert!(s.node_by_name("x2").unwrap().is_free());
        assert!(!s.node_by_name("f1").unwrap().up, "no agent on host other");
        s.check_invariants().unwrap();

        // The far host's agent comes; then its set goes and comes back.
        s.set_host_up("other", true);
        assert!(s.node_by_name("f1").unwrap().up);
        let mut config = s.config().clone();
        let far = config.node_sets.remove("far").unwrap();
        s.set_config(config.clone());
        assert!(s.node_by_name("f1").is_none());
        config.node_sets.insert("far".into(), far);
        s.set_config(config);
        assert!(s.node_by_name("f1").unwrap().up, "its agent is still there");
        s.check_invariants().unwrap();

        // A job started on a qmgr set keeps it across another change.
        let x = submit(&mut s, 1, 1);
        let x2 = s.nodes().iter().position(|n| &*n.name == "x2").unwrap();
        s.start(x, &[x2], t(2)).unwrap();
        let mut config = s.config().clone();
        config.node_sets.remove("far");
        assert!(s.set_config(config).is_empty());
        assert_eq!(s.node_by_name("x2").unwrap().job(), Some(x));
        s.check_invariants().unwrap();
    }

    #[test]
    fn a_set_that_clashes_with_the_file_is_left_out_with_a_warning() {
        let mut s = state(2);
        let mut config = s.config().clone();
        config
            .node_sets
            .insert("dup".into(), flat("dup", &["n1", "z1"], "h"));
        let warnings = s.set_config(config);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("node \"n1\" is already in node set \"local\""),
            "{warnings:?}"
        );
        assert!(s.config().node_sets.is_empty());
        assert_eq!(s.node_sets().len(), 1);
        s.check_invariants().unwrap();
    }
}
