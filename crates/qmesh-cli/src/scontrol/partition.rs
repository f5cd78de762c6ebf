//! `scontrol show partition [NAME]`: qmesh's queues in Slurm 22.05's
//! `Key=Value` layout, its keys in its order (checked against the real
//! one's fixtures, `tests/slurm/sinfo.rs`). A queue's limits become the
//! partition's (`max_walltime` MaxTime, `default_walltime` DefaultTime,
//! `max_nodes`/`min_nodes`, `acl_groups` AllowGroups), its state and
//! nodes are `sinfo::view`'s, and what Slurm has that qmesh has not is
//! written as Slurm writes its defaults (`AllowQos=ALL`, `PreemptMode=OFF`).

use super::node::join;
use crate::client::{self, CliError};
use crate::sinfo::view::{self, Cluster, SlurmPartition, hms, tres_mem};

/// The text `scontrol show partition [NAME]` prints (`name` None: all).
pub fn show(name: Option<&str>, one_liner: bool) -> Result<String, CliError> {
    let cluster = client::block_on(view::fetch())?;
    text(&cluster, name, one_liner)
}

/// The text for `cluster`'s partitions; a name it does not have is
/// Slurm's `Partition NAME not found`.
pub fn text(cluster: &Cluster, name: Option<&str>, one_liner: bool) -> Result<String, CliError> {
    match name {
        Some(name) => cluster
            .partitions
            .iter()
            .find(|p| p.name == name)
            .map(|p| record(cluster, p, one_liner))
            .ok_or_else(|| CliError::msg(format!("Partition {name} not found"))),
        None => Ok(cluster
            .partitions
            .iter()
            .map(|p| record(cluster, p, one_liner))
            .collect()),
    }
}

fn record(cluster: &Cluster, p: &SlurmPartition, one_liner: bool) -> String {
    let nodes = cluster.nodes_of(p);
    let cpus: u64 = nodes.iter().map(|n| u64::from(n.cpus)).sum();
    let mem: u64 = nodes.iter().map(|n| n.mem_mb).sum();
    let gpus: u64 = nodes.iter().map(|n| u64::from(n.gpus)).sum();
    let yes = |b: bool| if b { "YES" } else { "NO" };
    let groups = match &p.groups {
        Some(groups) if !groups.is_empty() => groups.join(","),
        _ => "ALL".into(),
    };
    let node_list = if nodes.is_empty() {
        "(null)".to_string()
    } else {
        let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
        qmesh_core::job::slurm::hostlist::compress_sorted(&names)
    };
    let oversubscribe = if !nodes.is_empty() && nodes.iter().all(|n| n.exclusive) {
        "EXCLUSIVE"
    } else {
        "NO"
    };
    let mut tres = vec![format!("cpu={cpus}")];
    if mem > 0 {
        tres.push(format!("mem={}", tres_mem(mem)));
    }
    tres.push(format!("node={}", nodes.len()));
    tres.push(format!("billing={cpus}"));
    if gpus > 0 {
        tres.push(format!("gres/gpu={gpus}"));
    }
    let lines = vec![
        format!("PartitionName={}", p.name),
        format!("AllowGroups={groups} AllowAccounts=ALL AllowQos=ALL"),
        format!("AllocNodes=ALL Default={} QoS=N/A", yes(p.default)),
        format!(
            "DefaultTime={} DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO",
            p.default_time.map_or("NONE".to_string(), hms)
        ),
        format!(
            "MaxNodes={} MaxTime={} MinNodes={} LLN=NO MaxCPUsPerNode=UNLIMITED",
            p.max_nodes
                .map_or("UNLIMITED".to_string(), |n| n.to_string()),
            p.max_time.map_or("UNLIMITED".to_string(), hms),
            p.min_nodes
        ),
        format!("Nodes={node_list}"),
        format!(
            "PriorityJobFactor=1 PriorityTier={} RootOnly=NO ReqResv=NO OverSubscribe={oversubscribe}",
            p.priority
        ),
        "OverTimeLimit=NONE PreemptMode=OFF".to_string(),
        format!(
            "State={} TotalCPUs={cpus} TotalNodes={} SelectTypeParameters=NONE",
            p.avail.upper(),
            nodes.len()
        ),
        "JobDefaults=(null)".to_string(),
        "DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED".to_string(),
        format!("TRES={}", tres.join(",")),
    ];
    join(&lines, one_liner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use qmesh_proto::{NodeInfo, QueueInfo};

    fn cluster() -> Cluster {
        let n1 = NodeInfo {
            name: "n1".into(),
            node_set: "s".into(),
            host: "h1".into(),
            up: true,
            state: "free".into(),
            jobs_per_node: 2,
            cpus: 2,
            node_cpus: 2,
            mem: 24105 * 1024 * 1024,
            ..NodeInfo::default()
        };
        let debug = QueueInfo {
            name: "debug".into(),
            queue_type: "execution".into(),
            priority: 1,
            enabled: true,
            started: true,
            open_now: true,
            sets_now: vec!["s".into()],
            ..QueueInfo::default()
        };
        let long = QueueInfo {
            name: "long".into(),
            enabled: false,
            max_walltime: Some(5400),
            default_walltime: Some(1800),
            max_nodes: Some(4),
            acl_group_enable: true,
            acl_groups: vec!["phys".into(), "chem".into()],
            sets_now: vec!["other".into()],
            ..debug.clone()
        };
        Cluster::new(&[n1], &[debug, long], "debug")
    }

    #[test]
    fn a_partition_in_slurms_layout() {
        assert_eq!(
            text(&cluster(), Some("debug"), false).unwrap(),
            "PartitionName=debug\n   \
             AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL\n   \
             AllocNodes=ALL Default=YES QoS=N/A\n   \
             DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO\n   \
             MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED\n   \
             Nodes=n1\n   \
             PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO\n   \
             OverTimeLimit=NONE PreemptMode=OFF\n   \
             State=UP TotalCPUs=2 TotalNodes=1 SelectTypeParameters=NONE\n   \
             JobDefaults=(null)\n   \
             DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED\n   \
             TRES=cpu=2,mem=24105M,node=1,billing=2\n\n"
        );
    }

    #[test]
    fn a_queues_limits_groups_and_state_on_one_line() {
        let one = text(&cluster(), Some("long"), true).unwrap();
        assert_eq!(one.lines().count(), 1);
        for part in [
            "PartitionName=long AllowGroups=phys,chem ",
            " Default=NO ",
            " DefaultTime=00:30:00 ",
            " MaxNodes=4 MaxTime=01:30:00 MinNodes=0 ",
            " Nodes=(null) ",
            " State=DRAIN TotalCPUs=0 TotalNodes=0 ",
            " TRES=cpu=0,node=0,billing=0\n",
        ] {
            assert!(one.contains(part), "{part}: {one}");
        }
        let all = text(&cluster(), None, false).unwrap();
        assert!(
            all.starts_with("PartitionName=debug\n") && all.contains("\n\nPartitionName=long\n")
        );
        assert_eq!(
            text(&cluster(), Some("nope"), false)
                .unwrap_err()
                .to_string(),
            "Partition nope not found"
        );
    }
}
