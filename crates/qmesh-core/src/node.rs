//! Nodes and node sets.
//!
//! A node set is a disjoint, homogeneous group of nodes with a topology; each
//! node is served by the agent of one host. The set is configuration (from
//! the daemon's TOML file, or made with qmgr and kept in
//! [`crate::server::Config`]); whether a node is up and which job holds it is
//! run-time state, kept in [`Node`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ids::JobId;

/// How the nodes of a set are connected, which decides how they are allocated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Topology {
    /// Any n nodes will do.
    Flat,
    /// A W×H mesh (the Paragon); node i sits at (i mod W, i div W).
    /// Allocated by M2DB (SDSC): rectangles, several if need be, unless
    /// `contiguous` asks for one rectangle only.
    Mesh2d {
        width: u32,
        height: u32,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        contiguous: bool,
    },
    /// A d1×…×dk torus, all dimensions but one powers of two, allocated in
    /// power-of-two subtori by Equal or Non-Equal Partition.
    Torus {
        dims: Vec<u32>,
        #[serde(default)]
        partition: TorusPartition,
        #[serde(default)]
        conversion: TorusConversion,
    },
    /// A 3-D torus where each job size has a fixed shape (EPCC's T3D):
    /// `shapes` maps a size to its extent in each dimension.
    Torus3dShapes {
        dims: [u32; 3],
        shapes: BTreeMap<u32, [u32; 3]>,
    },
}

/// How a torus's free semitori are split for a job (the torus seed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TorusPartition {
    /// Equal Partition: the semitorus splits into equal pieces.
    Ep,
    /// Non-Equal Partition: 1 + log p pieces of halving sizes; less
    /// fragmentation.
    #[default]
    Nep,
}

/// How the semitorus given to a job is turned into a torus (the seed's
/// two ways).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TorusConversion {
    /// Every dimension missing its wrap-around edge merges into one ring:
    /// more dimensions.
    #[default]
    Merge,
    /// Each such dimension pairs with a complete one: a more cube-like torus.
    Pair,
}

impl Topology {
    /// The allocator of a node set's topology; `None` for a flat set, whose
    /// nodes the scheduler counts without one (any n free nodes will do).
    pub fn allocator(&self) -> Result<Option<Box<dyn qmesh_alloc::Allocator>>, String> {
        match self {
            Topology::Flat => Ok(None),
            Topology::Torus {
                dims,
                partition,
                conversion,
            } => {
                let partition = match partition {
                    TorusPartition::Ep => qmesh_alloc::torus::Partition::Ep,
                    TorusPartition::Nep => qmesh_alloc::torus::Partition::Nep,
                };
                let conversion = match conversion {
                    TorusConversion::Merge => qmesh_alloc::torus::Conversion::Collapse,
                    TorusConversion::Pair => qmesh_alloc::torus::Conversion::Pair,
                };
                let t = qmesh_alloc::torus::Torus::new(dims, partition, conversion)
                    .map_err(|e| e.to_string())?;
                Ok(Some(Box::new(t)))
            }
            Topology::Mesh2d {
                width,
                height,
                contiguous,
            } => Ok(Some(Box::new(qmesh_alloc::m2db::M2db::new(
                *width,
                *height,
                *contiguous,
            )))),
            Topology::Torus3dShapes {
                dims,
                shapes: sizes,
            } => {
                let t = qmesh_alloc::shapes::Shapes::new(*dims, sizes.clone())?;
                Ok(Some(Box::new(t)))
            }
        }
    }

    /// How many nodes the topology has, if it fixes the number.
    pub fn size(&self) -> Option<u32> {
        match self {
            Topology::Flat => None,
            Topology::Mesh2d { width, height, .. } => Some(width * height),
            Topology::Torus { dims, .. } => Some(dims.iter().product()),
            Topology::Torus3dShapes { dims, .. } => Some(dims.iter().product()),
        }
    }

    /// The dimensions to draw a map with (a flat set: one row).
    pub fn dims(&self, nodes: usize) -> Vec<u32> {
        match self {
            Topology::Flat => vec![nodes as u32],
            Topology::Mesh2d { width, height, .. } => vec![*width, *height],
            Topology::Torus { dims, .. } => dims.clone(),
            Topology::Torus3dShapes { dims, .. } => dims.to_vec(),
        }
    }

    pub fn describe(&self) -> String {
        let join = |dims: &[u32]| {
            dims.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("x")
        };
        match self {
            Topology::Flat => "flat".to_string(),
            Topology::Mesh2d { width, height, .. } => format!("mesh2d {width}x{height}"),
            Topology::Torus { dims, .. } => format!("torus {}", join(dims)),
            Topology::Torus3dShapes { dims, .. } => format!("torus3d-shapes {}", join(dims)),
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
    /// What every node of the set has (a set is homogeneous).
    #[serde(default)]
    pub attrs: NodeAttrs,
}

/// What each node of a set has: jobs asking for more do not run there.
/// A set that declares no memory or CPUs is not checked for them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeAttrs {
    /// Bytes of memory per node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem: Option<u64>,
    /// CPUs per node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// Features (licensed software, "fat", "gpu"...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    /// How many jobs a node runs at once. Unset (or 1): the set is
    /// exclusive, one job per node (ANL). More makes it shared (NCAR's
    /// machines): a node takes jobs while it has room, and among the
    /// nodes with room the least busy wins. Only a flat set is shared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs_per_node: Option<u32>,
    /// GPUs per node. Unset: what the hosts' agents report (none if they
    /// report none). A job asking for GPUs runs only where nodes have as
    /// many; on a shared set the jobs on a node share its GPUs without
    /// overlap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u32>,
    /// PBS's `resources_available.NAME` of each node, for the resources
    /// the site made host-level (`create resource scratch type = size,
    /// flag = nh`), as written: `scratch = 400gb`, `model = skylake`.
    /// Jobs asking for them run only where the value serves (see
    /// `node_resources.rs`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resources: BTreeMap<String, String>,
}

/// What a job needs of each of its nodes (`-l mem=`, `-l ncpus=`,
/// `-l feature=`, host-level site resources).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeNeeds<'a> {
    pub mem: Option<u64>,
    pub cpus: Option<u32>,
    pub gpus: Option<u32>,
    pub features: &'a [String],
    /// Host-level site resources (`select=1:scratch=100gb`).
    pub resources: &'a [crate::site_resources::HostResource],
}

impl NodeNeeds<'_> {
    /// Whether the job needs anything of a node beyond being one.
    pub fn any(&self) -> bool {
        self.mem.is_some()
            || self.cpus.is_some()
            || self.gpus.is_some_and(|g| g > 0)
            || !self.features.is_empty()
            || !self.resources.is_empty()
    }

    /// `mem=32gb, ncpus=8, feature=fat` for messages.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(mem) = self.mem {
            parts.push(format!("mem={}", crate::resources::format_size(mem)));
        }
        if let Some(cpus) = self.cpus {
            parts.push(format!("ncpus={cpus}"));
        }
        if let Some(gpus) = self.gpus.filter(|&g| g > 0) {
            parts.push(format!("ngpus={gpus}"));
        }
        if !self.features.is_empty() {
            parts.push(format!("feature={}", self.features.join(":")));
        }
        for r in self.resources {
            parts.push(format!("{}={}", r.name, r.value));
        }
        parts.join(", ")
    }
}

impl NodeAttrs {
    /// How many jobs each node runs at once (1: exclusive).
    pub fn slots(&self) -> u32 {
        self.jobs_per_node.unwrap_or(1).max(1)
    }

    /// Whether every node of a set with these attributes serves `needs`.
    pub fn satisfies(&self, needs: &NodeNeeds) -> bool {
        needs
            .mem
            .is_none_or(|m| self.mem.is_none_or(|have| have >= m))
            && needs
                .cpus
                .is_none_or(|c| self.cpus.is_none_or(|have| have >= c))
            && needs
                .gpus
                .is_none_or(|g| g == 0 || self.gpus.unwrap_or(0) >= g)
            && needs
                .features
                .iter()
                .all(|f| self.features.contains(f) || self.has_true(f))
            && needs
                .resources
                .iter()
                .filter(|r| r.on_every_node())
                .all(|r| r.served_by(self.resources.get(&r.name).map(String::as_str)))
    }

    /// Whether a boolean host resource of the set is true (PBS Pro's
    /// `select=1:bigmem=True` is asked as a feature).
    fn has_true(&self, name: &str) -> bool {
        self.resources
            .get(name)
            .is_some_and(|v| crate::resources::parse_bool(name, v).unwrap_or(false))
    }

    /// `mem=16gb, ncpus=4, feature=fat, jobs_per_node=8` (or `no
    /// attributes`).
    pub fn describe(&self) -> String {
        let needs = NodeNeeds {
            mem: self.mem,
            cpus: self.cpus,
            gpus: self.gpus,
            features: &self.features,
            resources: &[],
        };
        let mut text = needs.describe();
        for (name, value) in &self.resources {
            if !text.is_empty() {
                text.push_str(", ");
            }
            text.push_str(&format!("{name}={value}"));
        }
        if self.slots() > 1 {
            if !text.is_empty() {
                text.push_str(", ");
            }
            text.push_str(&format!("jobs_per_node={}", self.slots()));
        }
        if text.is_empty() {
            "no attributes".into()
        } else {
            text
        }
    }
}

/// Why `set` cannot join `sets`: its name is taken, one of its nodes is
/// already in one of them (or twice in itself), or it does not have as
/// many nodes as its topology. `None` if it can.
pub fn conflict(set: &NodeSet, sets: &[NodeSet]) -> Option<String> {
    if sets.iter().any(|s| s.name == set.name) {
        return Some(format!("node set \"{}\" already exists", set.name));
    }
    if let Some(size) = set.topology.size()
        && size as usize != set.nodes.len()
    {
        return Some(format!(
            "node set \"{}\" is a {} ({} nodes) but lists {} nodes",
            set.name,
            set.topology.describe(),
            size,
            set.nodes.len()
        ));
    }
    if let Some(why) = sharing_conflict(set) {
        return Some(why);
    }
    let mut own = std::collections::HashSet::new();
    for def in &set.nodes {
        if !own.insert(def.name.as_str()) {
            return Some(format!(
                "node \"{}\" is listed twice in node set \"{}\"",
                def.name, set.name
            ));
        }
    }
    for other in sets {
        if let Some(def) = other.nodes.iter().find(|d| own.contains(d.name.as_str())) {
            return Some(format!(
                "node \"{}\" is already in node set \"{}\"; node sets are disjoint",
                def.name, other.name
            ));
        }
    }
    None
}

/// Why `set` cannot be shared as it asks: `jobs_per_node = 0`, or more
/// than one on a mesh or torus (whose allocators give each job nodes of
/// its own). `None` if it can.
pub fn sharing_conflict(set: &NodeSet) -> Option<String> {
    if set.attrs.jobs_per_node == Some(0) {
        return Some(format!(
            "node set \"{}\": jobs_per_node = 0 would run no job; give 1 (exclusive) or more (shared)",
            set.name
        ));
    }
    if set.attrs.slots() > 1 && set.topology != Topology::Flat {
        return Some(format!(
            "node set \"{}\" is a {}: only a flat set may be shared (jobs_per_node = {}); \
             a mesh or torus gives each job nodes of its own",
            set.name,
            set.topology.describe(),
            set.attrs.slots()
        ));
    }
    None
}

pub use crate::ids::NodeName;

/// What an administrator has said of a node (`qmgr -c "set node n7 state
/// = offline"`, `pbsnodes -o n7`): it takes no new job, and the jobs it
/// runs go on. NCAR repaired one machine this way without bringing the
/// cluster down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AdminState {
    /// Out of service (PBS's offline).
    Offline,
    /// To leave service once its jobs end (Slurm's drain): it shows as
    /// drained when they have.
    Draining,
}

impl AdminState {
    pub fn as_str(self) -> &'static str {
        match self {
            AdminState::Offline => "offline",
            AdminState::Draining => "draining",
        }
    }
}

/// An administrator's mark on a node, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeMark {
    pub state: AdminState,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub comment: String,
}

/// The jobs holding a node, first started first. The first is kept in
/// place: an exclusive node never holds more, and starting or ending a job
/// (the pass's and the simulator's hot path) then touches nothing else.
/// The others, on a shared node, follow it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeJobs {
    first: Option<JobId>,
    more: Vec<JobId>,
}

impl NodeJobs {
    pub fn first(&self) -> Option<JobId> {
        self.first
    }

    pub fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.more.len()
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    pub fn iter(&self) -> impl Iterator<Item = JobId> + '_ {
        self.first.into_iter().chain(self.more.iter().copied())
    }

    pub fn contains(&self, id: JobId) -> bool {
        self.first == Some(id) || self.more.contains(&id)
    }

    /// Adds `id` after the others.
    pub fn push(&mut self, id: JobId) {
        match self.first {
            None => self.first = Some(id),
            Some(_) => self.more.push(id),
        }
    }

    /// Takes `id` out; the next one, if any, becomes the first.
    pub fn remove(&mut self, id: JobId) {
        if self.first == Some(id) {
            self.first = (!self.more.is_empty()).then(|| self.more.remove(0));
        } else {
            self.more.retain(|&j| j != id);
        }
    }

    pub fn to_vec(&self) -> Vec<JobId> {
        self.iter().collect()
    }
}

/// A node at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub name: NodeName,
    pub host: String,
    /// Index of its set in `State::node_sets`.
    pub set: usize,
    /// Its agent is connected.
    pub up: bool,
    /// The jobs holding it, in the order they started: at most one on an
    /// exclusive set, up to `slots` on a shared one.
    pub jobs: NodeJobs,
    /// How many jobs it runs at once (its set's `jobs_per_node`).
    pub slots: u32,
    /// An administrator took it out of service (see [`AdminState`]).
    pub admin: Option<AdminState>,
    /// Its host's load is over the limit (see `State::set_host_load`).
    pub overloaded: bool,
    /// A job holding it asked to be alone there (`place=excl` on a shared
    /// set): it takes no other job until that one ends.
    pub sole: Option<JobId>,
}

impl Node {
    /// Up and in service: it may take jobs, now or when its job ends.
    pub fn usable(&self) -> bool {
        self.up && self.admin.is_none() && !self.overloaded
    }

    /// Usable and with room for one more job.
    pub fn is_free(&self) -> bool {
        self.room() > 0
    }

    /// How many more jobs it may take now (0 when not usable).
    pub fn room(&self) -> u32 {
        if self.usable() && self.sole.is_none() {
            self.slots.saturating_sub(self.jobs.len() as u32)
        } else {
            0
        }
    }

    /// The job holding it first (an exclusive node's only one).
    pub fn job(&self) -> Option<JobId> {
        self.jobs.first()
    }

    /// As pbsnodes says it: `down` (no agent), `offline`, `draining`
    /// (jobs still on it), `drained`, `job-busy` (no room for another
    /// job), `busy` (its host's load is over the limit) or `free` (a
    /// shared node with room is free, its jobs listed); a node both
    /// down and marked is `down,offline` or `down,draining`.
    pub fn state_name(&self) -> &'static str {
        let full = self.jobs.len() as u32 >= self.slots;
        match (self.up, self.admin, self.job()) {
            (false, None, _) => "down",
            (false, Some(AdminState::Offline), _) => "down,offline",
            (false, Some(AdminState::Draining), _) => "down,draining",
            (true, Some(AdminState::Offline), _) => "offline",
            (true, Some(AdminState::Draining), Some(_)) => "draining",
            (true, Some(AdminState::Draining), None) => "drained",
            (true, None, Some(_)) if full => "job-busy",
            (true, None, _) if self.overloaded => "busy",
            (true, None, _) => "free",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_jobs_keep_their_order_when_the_first_leaves() {
        let mut jobs = NodeJobs::default();
        assert!(jobs.is_empty() && jobs.first().is_none());
        for id in [JobId(3), JobId(5), JobId(7)] {
            jobs.push(id);
        }
        assert_eq!((jobs.len(), jobs.first()), (3, Some(JobId(3))));
        assert!(jobs.contains(JobId(5)) && !jobs.contains(JobId(4)));
        jobs.remove(JobId(3));
        assert_eq!(jobs.to_vec(), [JobId(5), JobId(7)]);
        jobs.remove(JobId(7));
        jobs.remove(JobId(9));
        assert_eq!(jobs.to_vec(), [JobId(5)]);
        jobs.remove(JobId(5));
        assert!(jobs.is_empty());
    }

    #[test]
    fn a_set_serves_needs_it_meets_and_does_not_check_what_it_does_not_declare() {
        let fat = NodeAttrs {
            mem: Some(64 << 30),
            cpus: Some(16),
            features: vec!["fat".into(), "nag".into()],
            jobs_per_node: None,
            gpus: None,
            resources: Default::default(),
        };
        let plain = NodeAttrs::default();
        let features = vec!["fat".to_string()];
        let needs = NodeNeeds {
            mem: Some(32 << 30),
            cpus: Some(8),
            gpus: None,
            features: &features,
            resources: &[],
        };
        assert!(fat.satisfies(&needs));
        assert!(!plain.satisfies(&needs), "plain has no feature fat");
        let no_features = NodeNeeds {
            features: &[],
            ..needs
        };
        assert!(
            plain.satisfies(&no_features),
            "undeclared memory is not checked"
        );
        let too_much = NodeNeeds {
            mem: Some(128 << 30),
            ..needs
        };
        assert!(!fat.satisfies(&too_much));
        assert_eq!(needs.describe(), "mem=32gb, ncpus=8, feature=fat");
    }
}
