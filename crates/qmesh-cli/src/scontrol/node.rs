//! `scontrol show node [NAME]`: qmesh's nodes in Slurm 22.05's
//! `Key=Value` layout, its keys in its order (checked against the real
//! one's fixtures, `tests/slurm/sinfo.rs`). Lines are joined by a newline
//! and three spaces, or by one space with `-o`; what qmesh does not know
//! of a node Slurm leaves out too (`Arch=`, `OS=`) or writes as it writes
//! the unknown (`FreeMem=N/A`, `BootTime=None`). Which state a node is in
//! is `sinfo::view`'s decision, shared with sinfo.

use crate::client::{self, CliError};
use crate::sinfo::view::{self, Cluster, SLURM_VERSION, SlurmNode};

/// The text `scontrol show node [NAME]` prints (`name` None: every node).
pub fn show(name: Option<&str>, one_liner: bool) -> Result<String, CliError> {
    let cluster = client::block_on(view::fetch())?;
    text(&cluster, name, one_liner)
}

/// The text for `cluster`'s nodes; a name it does not have is Slurm's
/// `Node NAME not found`.
pub fn text(cluster: &Cluster, name: Option<&str>, one_liner: bool) -> Result<String, CliError> {
    match name {
        Some(name) => cluster
            .node(name)
            .map(|n| record(n, one_liner))
            .ok_or_else(|| CliError::msg(format!("Node {name} not found"))),
        None => Ok(cluster.nodes.iter().map(|n| record(n, one_liner)).collect()),
    }
}

/// One node, each line as Slurm writes it (some with a trailing space).
pub fn record(n: &SlurmNode, one_liner: bool) -> String {
    let load = n.load.map_or("N/A".to_string(), |l| format!("{l:.2}"));
    let mut lines = vec![
        format!("NodeName={} CoresPerSocket={} ", n.name, n.cpus),
        format!(
            "CPUAlloc={} CPUEfctv={} CPUTot={} CPULoad={load}",
            n.cpus_alloc, n.cpus, n.cpus
        ),
        format!("AvailableFeatures={}", n.features_text()),
        format!("ActiveFeatures={}", n.features_text()),
        format!("Gres={}", n.gres()),
        format!(
            "NodeAddr={} NodeHostName={} Version={SLURM_VERSION}",
            n.host, n.host
        ),
        format!(
            "RealMemory={} AllocMem={} FreeMem=N/A Sockets=1 Boards=1",
            n.mem_mb, n.mem_alloc_mb
        ),
        format!(
            "State={} ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A",
            n.state.complete()
        ),
    ];
    if !n.partitions.is_empty() {
        lines.push(format!("Partitions={} ", n.partitions.join(",")));
    }
    lines.extend([
        "BootTime=None SlurmdStartTime=None".to_string(),
        "LastBusyTime=Unknown".to_string(),
        format!("CfgTRES={}", n.cfg_tres()),
        format!("AllocTRES={}", n.alloc_tres()),
        "CapWatts=n/a".to_string(),
        "CurrentWatts=0 AveWatts=0".to_string(),
        "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s".to_string(),
    ]);
    if !n.reason.is_empty() {
        lines.push(format!("Reason={}", n.reason));
    }
    join(&lines, one_liner)
}

/// Lines as scontrol joins them: a newline and three spaces, and a blank
/// line after the record; or one space and one newline (`-o`).
pub fn join(lines: &[String], one_liner: bool) -> String {
    if one_liner {
        format!("{}\n", lines.join(" "))
    } else {
        format!("{}\n\n", lines.join("\n   "))
    }
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
            state: "job-busy".into(),
            job_id: "4.srv".into(),
            jobs_per_node: 1,
            cpus: 2,
            load: 0.77,
            node_cpus: 2,
            cpus_alloc: 2,
            mem: 24105 * 1024 * 1024,
            ..NodeInfo::default()
        };
        let n2 = NodeInfo {
            name: "n2".into(),
            up: false,
            state: "down,offline".into(),
            job_id: String::new(),
            comment: "fan broken".into(),
            cpus_alloc: 0,
            gpus: 2,
            properties: vec!["fat".into(), "big".into()],
            ..n1.clone()
        };
        let debug = QueueInfo {
            name: "debug".into(),
            queue_type: "execution".into(),
            enabled: true,
            started: true,
            open_now: true,
            sets_now: vec!["s".into()],
            ..QueueInfo::default()
        };
        Cluster::new(&[n1, n2], &[debug], "debug")
    }

    #[test]
    fn a_node_in_slurms_layout() {
        assert_eq!(
            text(&cluster(), Some("n1"), false).unwrap(),
            "NodeName=n1 CoresPerSocket=2 \n   \
             CPUAlloc=2 CPUEfctv=2 CPUTot=2 CPULoad=0.77\n   \
             AvailableFeatures=(null)\n   \
             ActiveFeatures=(null)\n   \
             Gres=(null)\n   \
             NodeAddr=h1 NodeHostName=h1 Version=22.05.8\n   \
             RealMemory=24105 AllocMem=0 FreeMem=N/A Sockets=1 Boards=1\n   \
             State=ALLOCATED ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n   \
             Partitions=debug \n   \
             BootTime=None SlurmdStartTime=None\n   \
             LastBusyTime=Unknown\n   \
             CfgTRES=cpu=2,mem=24105M,billing=2\n   \
             AllocTRES=cpu=2\n   \
             CapWatts=n/a\n   \
             CurrentWatts=0 AveWatts=0\n   \
             ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n\n"
        );
    }

    #[test]
    fn a_down_offline_node_with_gpus_features_and_a_reason() {
        let one = text(&cluster(), Some("n2"), true).unwrap();
        assert!(one.ends_with(" Reason=fan broken\n"), "{one}");
        assert_eq!(one.lines().count(), 1);
        for part in [
            " AvailableFeatures=fat,big ActiveFeatures=fat,big Gres=gpu:2 ",
            " State=DOWN+DRAIN+NOT_RESPONDING ",
            " CfgTRES=cpu=2,mem=24105M,billing=2,gres/gpu=2 AllocTRES= ",
            "CoresPerSocket=2  CPUAlloc=0",
        ] {
            assert!(one.contains(part), "{part}: {one}");
        }
        let all = text(&cluster(), None, false).unwrap();
        assert!(all.starts_with("NodeName=n1 ") && all.contains("\n\nNodeName=n2 "));
        assert_eq!(
            text(&cluster(), Some("n9"), false).unwrap_err().to_string(),
            "Node n9 not found"
        );
    }
}
