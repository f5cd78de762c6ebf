//! qmesh's nodes and queues as Slurm names them, for sinfo and scontrol's
//! node and partition views: a partition is a queue (its node sets now, by
//! the calendar), a node is a qmesh node with its set's CPUs, memory, GPUs
//! and features, in Slurm's states. One place decides the mapping, so
//! `sinfo` and `scontrol show node|partition` never disagree.
//!
//! States: a node nobody holds is IDLE; one its jobs fill (all its CPUs,
//! or all its job slots on a shared set; a job on an exclusive set fills
//! it) is ALLOCATED, partly MIXED; an agent not connected is
//! NOT_RESPONDING (and DOWN when no job holds the node); an administrator's
//! offline, draining or drained is DRAIN (Slurm's `drng` while jobs still
//! run, `drain` after); an advance reservation's occurrence is RESERVED.

use qmesh_proto::{NodeInfo, QueueInfo};

/// The Slurm release whose commands qmesh's follow: what `sinfo -V`,
/// `%v`, the nodes' `Version=` and `--json`'s `meta` say (tools parse
/// `slurm 22.05.8`; qmesh's own version is `qstat --version`'s).
pub const SLURM_VERSION: &str = "22.05.8";

/// A node's base state (Slurm's `enum node_states`, by its numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    Down = 1,
    Idle = 2,
    Allocated = 3,
    Mixed = 5,
}

/// A node's state: its base and Slurm's flags qmesh has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeState {
    pub base: Base,
    pub drain: bool,
    pub reserved: bool,
    pub no_respond: bool,
}

impl NodeState {
    /// `sinfo %t`: `idle`, `alloc`, `mix`, `down*`, `drain`, `drng`, `resv`.
    pub fn compact(&self) -> String {
        let busy = matches!(self.base, Base::Allocated | Base::Mixed);
        let word = if self.drain {
            if busy { "drng" } else { "drain" }
        } else {
            match self.base {
                Base::Idle if self.reserved && !self.no_respond => "resv",
                Base::Idle => "idle",
                Base::Allocated => "alloc",
                Base::Mixed => "mix",
                Base::Down => "down",
            }
        };
        self.starred(word)
    }

    /// `sinfo %T`: `idle`, `allocated`, `mixed`, `down*`, `drained`,
    /// `draining`, `reserved`.
    pub fn long(&self) -> String {
        let busy = matches!(self.base, Base::Allocated | Base::Mixed);
        let word = if self.drain {
            if busy { "draining" } else { "drained" }
        } else {
            match self.base {
                Base::Idle if self.reserved && !self.no_respond => "reserved",
                Base::Idle => "idle",
                Base::Allocated => "allocated",
                Base::Mixed => "mixed",
                Base::Down => "down",
            }
        };
        self.starred(word)
    }

    fn starred(&self, word: &str) -> String {
        if self.no_respond {
            format!("{word}*")
        } else {
            word.to_string()
        }
    }

    /// `scontrol show node`'s `State=`: the base and its flags in
    /// Slurm's order (`IDLE+DRAIN`, `DOWN+NOT_RESPONDING`).
    pub fn complete(&self) -> String {
        let mut text = self.base_name().to_string();
        for (on, flag) in [
            (self.drain, "DRAIN"),
            (self.reserved, "RESERVED"),
            (self.no_respond, "NOT_RESPONDING"),
        ] {
            if on {
                text.push('+');
                text.push_str(flag);
            }
        }
        text
    }

    /// The base in capitals (`--json`'s `state`, lower-cased there).
    pub fn base_name(&self) -> &'static str {
        match self.base {
            Base::Down => "DOWN",
            Base::Idle => "IDLE",
            Base::Allocated => "ALLOCATED",
            Base::Mixed => "MIXED",
        }
    }

    /// The flags' names (`--json`'s `state_flags`).
    pub fn flags(&self) -> Vec<&'static str> {
        [
            (self.drain, "DRAIN"),
            (self.reserved, "RESERVED"),
            (self.no_respond, "NOT_RESPONDING"),
        ]
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| name)
        .collect()
    }

    /// Slurm's number for the state (base and flag bits), which sinfo
    /// sorts its rows by.
    pub fn number(&self) -> u32 {
        let mut n = self.base as u32;
        if self.reserved {
            n |= 0x20;
        }
        if self.drain {
            n |= 0x200;
        }
        if self.no_respond {
            n |= 0x800;
        }
        n
    }

    /// Out of service for sinfo's A/I/O/T counts (down or draining).
    pub fn other(&self) -> bool {
        self.drain || self.base == Base::Down
    }
}

/// A qmesh node in Slurm's terms.
#[derive(Clone, Debug, PartialEq)]
pub struct SlurmNode {
    pub name: String,
    pub host: String,
    pub node_set: String,
    pub state: NodeState,
    pub cpus: u32,
    pub cpus_alloc: u32,
    /// Megabytes.
    pub mem_mb: u64,
    pub mem_alloc_mb: u64,
    pub gpus: u32,
    pub gpus_alloc: u32,
    pub features: Vec<String>,
    /// Why it is out of service: the administrator's comment, or
    /// "Not responding" for an agent that is not connected.
    pub reason: String,
    /// The run-queue length its agent reported; `None` before any report.
    pub load: Option<f64>,
    /// One job per node (an exclusive set).
    pub exclusive: bool,
    /// The partitions (queues) that draw on it now.
    pub partitions: Vec<String>,
}

impl SlurmNode {
    pub fn from_info(n: &NodeInfo) -> SlurmNode {
        let cpus = if n.node_cpus > 0 { n.node_cpus } else { n.cpus };
        let jobs = if n.job_ids.is_empty() {
            usize::from(!n.job_id.is_empty())
        } else {
            n.job_ids.len()
        };
        let slots = n.jobs_per_node.max(1) as usize;
        let base = if jobs == 0 {
            if n.up { Base::Idle } else { Base::Down }
        } else if jobs >= slots || (cpus > 0 && n.cpus_alloc >= cpus) {
            Base::Allocated
        } else {
            Base::Mixed
        };
        let drain = matches!(
            n.state.as_str(),
            "offline" | "draining" | "drained" | "down,offline" | "down,draining"
        );
        let reason = if !n.comment.is_empty() {
            n.comment.clone()
        } else if !n.up {
            "Not responding".to_string()
        } else {
            String::new()
        };
        SlurmNode {
            name: n.name.clone(),
            host: n.host.clone(),
            node_set: n.node_set.clone(),
            state: NodeState {
                base,
                drain,
                reserved: n.reserved,
                no_respond: !n.up,
            },
            cpus,
            cpus_alloc: n.cpus_alloc,
            mem_mb: n.mem / (1024 * 1024),
            mem_alloc_mb: n.mem_alloc / (1024 * 1024),
            gpus: n.gpus,
            gpus_alloc: n.gpus_alloc,
            features: n.properties.clone(),
            reason,
            load: (n.cpus > 0).then_some(n.load),
            exclusive: n.jobs_per_node <= 1,
            partitions: Vec::new(),
        }
    }

    /// `Gres=`, sinfo's `%G`: `gpu:N`, `(null)` without GPUs.
    pub fn gres(&self) -> String {
        if self.gpus > 0 {
            format!("gpu:{}", self.gpus)
        } else {
            "(null)".into()
        }
    }

    /// `AvailableFeatures=`, sinfo's `%f`: `a,b`, `(null)` without.
    pub fn features_text(&self) -> String {
        if self.features.is_empty() {
            "(null)".into()
        } else {
            self.features.join(",")
        }
    }

    /// `CfgTRES=`: `cpu=2,mem=24105M,billing=2[,gres/gpu=N]`.
    pub fn cfg_tres(&self) -> String {
        let mut tres = vec![format!("cpu={}", self.cpus)];
        if self.mem_mb > 0 {
            tres.push(format!("mem={}", tres_mem(self.mem_mb)));
        }
        tres.push(format!("billing={}", self.cpus));
        if self.gpus > 0 {
            tres.push(format!("gres/gpu={}", self.gpus));
        }
        tres.join(",")
    }

    /// `AllocTRES=`: what its jobs hold, empty when none.
    pub fn alloc_tres(&self) -> String {
        let mut tres = Vec::new();
        if self.cpus_alloc > 0 {
            tres.push(format!("cpu={}", self.cpus_alloc));
        }
        if self.mem_alloc_mb > 0 {
            tres.push(format!("mem={}", tres_mem(self.mem_alloc_mb)));
        }
        if self.gpus_alloc > 0 {
            tres.push(format!("gres/gpu={}", self.gpus_alloc));
        }
        tres.join(",")
    }
}

/// Memory in a TRES string: megabytes, in G or T when exact.
pub fn tres_mem(mb: u64) -> String {
    if mb > 0 && mb % (1024 * 1024) == 0 {
        format!("{}T", mb / (1024 * 1024))
    } else if mb > 0 && mb % 1024 == 0 {
        format!("{}G", mb / 1024)
    } else {
        format!("{mb}M")
    }
}

/// A partition's availability (Slurm's `State=`, sinfo's `%a`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Avail {
    /// Enabled and started: takes jobs and runs them.
    Up,
    /// Takes jobs but starts none: stopped, or outside its periods.
    Down,
    /// Disabled but started: runs what it holds, takes no more.
    Drain,
    /// Disabled and stopped.
    Inactive,
}

impl Avail {
    /// `scontrol show partition`'s `State=`.
    pub fn upper(&self) -> &'static str {
        match self {
            Avail::Up => "UP",
            Avail::Down => "DOWN",
            Avail::Drain => "DRAIN",
            Avail::Inactive => "INACTIVE",
        }
    }

    /// sinfo's `%a`.
    pub fn lower(&self) -> &'static str {
        match self {
            Avail::Up => "up",
            Avail::Down => "down",
            Avail::Drain => "drain",
            Avail::Inactive => "inactive",
        }
    }
}

/// A qmesh queue in Slurm's terms.
#[derive(Clone, Debug, PartialEq)]
pub struct SlurmPartition {
    pub name: String,
    /// The server's default queue (sinfo's `*`, `Default=YES`).
    pub default: bool,
    pub avail: Avail,
    /// Seconds; `None`: no limit.
    pub max_time: Option<u64>,
    pub default_time: Option<u64>,
    pub min_nodes: u32,
    pub max_nodes: Option<u32>,
    /// Its Unix-group access list, when enabled.
    pub groups: Option<Vec<String>>,
    pub priority: i32,
    /// Its nodes now, in the order of the node list.
    pub nodes: Vec<String>,
}

impl SlurmPartition {
    /// Queue `q`, its nodes taken from `nodes` (those of the node sets it
    /// draws on now; none for a route queue).
    pub fn from_info(q: &QueueInfo, default_queue: &str, nodes: &[SlurmNode]) -> SlurmPartition {
        let avail = match (q.enabled, q.started && q.open_now) {
            (true, true) => Avail::Up,
            (true, false) => Avail::Down,
            (false, true) => Avail::Drain,
            (false, false) => Avail::Inactive,
        };
        let members = if q.queue_type == "route" {
            Vec::new()
        } else {
            nodes
                .iter()
                .filter(|n| q.sets_now.contains(&n.node_set))
                .map(|n| n.name.clone())
                .collect()
        };
        SlurmPartition {
            name: q.name.clone(),
            default: q.name == default_queue,
            avail,
            max_time: q.max_walltime.filter(|&s| s > 0),
            default_time: q.default_walltime.filter(|&s| s > 0),
            min_nodes: q.min_nodes.unwrap_or(0),
            max_nodes: q.max_nodes.filter(|&n| n > 0),
            groups: q.acl_group_enable.then(|| q.acl_groups.clone()),
            priority: q.priority,
            nodes: members,
        }
    }
}

/// The nodes and partitions of one reading of the daemon.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cluster {
    pub nodes: Vec<SlurmNode>,
    pub partitions: Vec<SlurmPartition>,
}

impl Cluster {
    /// Built from the Nodes and QueueStatus replies; each node learns the
    /// partitions that draw on it.
    pub fn new(nodes: &[NodeInfo], queues: &[QueueInfo], default_queue: &str) -> Cluster {
        let mut nodes: Vec<SlurmNode> = nodes.iter().map(SlurmNode::from_info).collect();
        let partitions: Vec<SlurmPartition> = queues
            .iter()
            .map(|q| SlurmPartition::from_info(q, default_queue, &nodes))
            .collect();
        for node in &mut nodes {
            node.partitions = partitions
                .iter()
                .filter(|p| p.nodes.contains(&node.name))
                .map(|p| p.name.clone())
                .collect();
        }
        Cluster { nodes, partitions }
    }

    pub fn node(&self, name: &str) -> Option<&SlurmNode> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The nodes of `partition`, in node-list order.
    pub fn nodes_of<'a>(&'a self, partition: &'a SlurmPartition) -> Vec<&'a SlurmNode> {
        partition
            .nodes
            .iter()
            .filter_map(|name| self.node(name))
            .collect()
    }
}

/// Reads the daemon: its nodes, queues and default queue.
pub async fn fetch() -> Result<Cluster, crate::client::CliError> {
    let mut jobs = crate::client::jobs().await?;
    let nodes = jobs
        .nodes(qmesh_proto::NodesRequest::default())
        .await?
        .into_inner();
    let queues = jobs
        .queue_status(qmesh_proto::QueueStatusRequest::default())
        .await?
        .into_inner();
    let server = jobs
        .server_status(qmesh_proto::ServerStatusRequest::default())
        .await?
        .into_inner();
    Ok(Cluster::new(
        &nodes.nodes,
        &queues.queues,
        &server.default_queue,
    ))
}

/// A duration as scontrol writes limits: `HH:MM:SS`, `D-HH:MM:SS`.
pub fn hms(secs: u64) -> String {
    let (d, h, m, s) = (
        secs / 86400,
        secs % 86400 / 3600,
        secs % 3600 / 60,
        secs % 60,
    );
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(state: &str, up: bool, jobs: &[&str]) -> NodeInfo {
        NodeInfo {
            name: "n1".into(),
            node_set: "s".into(),
            host: "h".into(),
            up,
            state: state.into(),
            job_id: jobs.first().map(|j| j.to_string()).unwrap_or_default(),
            job_ids: jobs.iter().map(|j| j.to_string()).collect(),
            jobs_per_node: 1,
            cpus: 2,
            node_cpus: 2,
            ..NodeInfo::default()
        }
    }

    fn words(n: &NodeInfo) -> (String, String, String) {
        let s = SlurmNode::from_info(n).state;
        (s.compact(), s.long(), s.complete())
    }

    #[test]
    fn qmesh_states_in_slurms_words() {
        let w = |c: &str, l: &str, s: &str| (c.to_string(), l.to_string(), s.to_string());
        assert_eq!(words(&info("free", true, &[])), w("idle", "idle", "IDLE"));
        assert_eq!(
            words(&info("job-busy", true, &["1.s"])),
            w("alloc", "allocated", "ALLOCATED")
        );
        assert_eq!(
            words(&info("down", false, &[])),
            w("down*", "down*", "DOWN+NOT_RESPONDING")
        );
        assert_eq!(
            words(&info("offline", true, &[])),
            w("drain", "drained", "IDLE+DRAIN")
        );
        assert_eq!(
            words(&info("draining", true, &["1.s"])),
            w("drng", "draining", "ALLOCATED+DRAIN")
        );
        assert_eq!(
            words(&info("down,offline", false, &[])),
            w("drain*", "drained*", "DOWN+DRAIN+NOT_RESPONDING")
        );
        let reserved = NodeInfo {
            reserved: true,
            ..info("free", true, &[])
        };
        assert_eq!(words(&reserved), w("resv", "reserved", "IDLE+RESERVED"));
    }

    #[test]
    fn a_shared_node_is_mixed_until_its_cpus_or_slots_are_full() {
        let mut n = info("free", true, &["1.s"]);
        n.jobs_per_node = 4;
        n.node_cpus = 8;
        n.cpus_alloc = 2;
        assert_eq!(SlurmNode::from_info(&n).state.compact(), "mix");
        n.cpus_alloc = 8;
        assert_eq!(SlurmNode::from_info(&n).state.compact(), "alloc");
        n.cpus_alloc = 1;
        n.job_ids = (1..=4).map(|i| format!("{i}.s")).collect();
        assert_eq!(SlurmNode::from_info(&n).state.compact(), "alloc");
    }

    fn queue(name: &str, enabled: bool, started: bool) -> QueueInfo {
        QueueInfo {
            name: name.into(),
            queue_type: "execution".into(),
            enabled,
            started,
            open_now: true,
            sets_now: vec!["s".into()],
            ..QueueInfo::default()
        }
    }

    #[test]
    fn a_queue_is_a_partition_of_the_nodes_of_its_sets_now() {
        let mut other = info("free", true, &[]);
        other.name = "m1".into();
        other.node_set = "t".into();
        let nodes = [info("free", true, &[]), other];
        let mut closed = queue("night", true, true);
        closed.open_now = false;
        let mut route = queue("route", true, true);
        route.queue_type = "route".into();
        let queues = [
            queue("batch", true, true),
            queue("stopped", true, false),
            queue("disabled", false, true),
            queue("off", false, false),
            closed,
            route,
        ];
        let cluster = Cluster::new(&nodes, &queues, "batch");
        let avail: Vec<Avail> = cluster.partitions.iter().map(|p| p.avail).collect();
        use Avail::*;
        assert_eq!(avail, [Up, Down, Drain, Inactive, Down, Up]);
        assert!(cluster.partitions[0].default && !cluster.partitions[1].default);
        assert_eq!(cluster.partitions[0].nodes, ["n1"]);
        assert!(cluster.partitions[5].nodes.is_empty(), "a route queue");
        assert_eq!(
            cluster.nodes[0].partitions,
            ["batch", "stopped", "disabled", "off", "night"]
        );
        assert!(cluster.nodes[1].partitions.is_empty());
    }

    #[test]
    fn tres_and_limits_as_slurm_writes_them() {
        let mut n = info("job-busy", true, &["1.s"]);
        n.mem = 24105 * 1024 * 1024;
        n.gpus = 2;
        n.gpus_alloc = 1;
        n.cpus_alloc = 2;
        n.mem_alloc = 4096 * 1024 * 1024;
        let node = SlurmNode::from_info(&n);
        assert_eq!(node.cfg_tres(), "cpu=2,mem=24105M,billing=2,gres/gpu=2");
        assert_eq!(node.alloc_tres(), "cpu=2,mem=4G,gres/gpu=1");
        assert_eq!(node.gres(), "gpu:2");
        assert_eq!(hms(5400), "01:30:00");
        assert_eq!(hms(90061), "1-01:01:01");
    }
}
