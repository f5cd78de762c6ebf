//! Nodes and node sets.
//!
//! A node set is a disjoint, homogeneous group of nodes with a topology; each
//! node is served by the agent of one host. The set is configuration (from
//! the daemon's TOML file); whether a node is up and which job holds it is
//! run-time state, kept in [`Node`].

use serde::{Deserialize, Serialize};

use crate::job::JobId;

/// How the nodes of a set are connected, which decides how they are allocated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Topology {
    /// Any n nodes will do.
    Flat,
    /// A W×H mesh (the Paragon); node i sits at (i mod W, i div W).
    Mesh2d { width: u32, height: u32 },
    /// A d1×…×dk torus.
    Torus { dims: Vec<u32> },
}

impl Topology {
    /// How many nodes the topology has, if it fixes the number.
    pub fn size(&self) -> Option<u32> {
        match self {
            Topology::Flat => None,
            Topology::Mesh2d { width, height } => Some(width * height),
            Topology::Torus { dims } => Some(dims.iter().product()),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Topology::Flat => "flat".to_string(),
            Topology::Mesh2d { width, height } => format!("mesh2d {width}x{height}"),
            Topology::Torus { dims } => format!(
                "torus {}",
                dims.iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            ),
        }
    }
}

/// One node as configured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeDef {
    pub name: String,
    /// The host whose agent runs jobs on this node.
    pub host: String,
}

/// A node set as configured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeSet {
    pub name: String,
    pub topology: Topology,
    /// In topology order (for a mesh: row by row).
    pub nodes: Vec<NodeDef>,
}

/// A node at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    pub host: String,
    /// Index of its set in `State::node_sets`.
    pub set: usize,
    /// Its agent is connected.
    pub up: bool,
    /// The job holding it, if any.
    pub job: Option<JobId>,
}

impl Node {
    pub fn is_free(&self) -> bool {
        self.up && self.job.is_none()
    }
}
