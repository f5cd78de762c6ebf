//! The machine the daemon's in-memory tests run on (`dispatch/tests.rs`,
//! `task/tests.rs`): one flat node set of one node per host, each node
//! named as its host, and one open queue `batch`, on server `srv`.
#![cfg(test)]

use qmesh_core::node::NodeAttrs;
use qmesh_core::{Config, NodeDef, NodeSet, Queue, State, Topology};

pub fn machine(hosts: &[&str]) -> State {
    let mut config = Config::default();
    config.queues.insert("batch".into(), Queue::open("batch"));
    let set = NodeSet {
        name: "flat".into(),
        topology: Topology::Flat,
        nodes: hosts
            .iter()
            .map(|h| NodeDef {
                name: h.to_string(),
                host: h.to_string(),
            })
            .collect(),
        attrs: NodeAttrs::default(),
    };
    State::new("srv", config, vec![set]).expect("a valid machine")
}
