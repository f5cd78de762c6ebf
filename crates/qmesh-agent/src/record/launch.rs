//! `launch.json`: the daemon's launch order as it came, with what the
//! agent that took it added, and how the order is read where the daemon
//! said nothing (an older daemon's order). Version 1, the agent's own
//! copy of the order field by field, is read into the same launch.
//!
//! The file is compact JSON without the fields left at their defaults
//! (`qmesh-proto`'s `spool_json.rs`): the shepherd reads it at every
//! start, and that costs less than version 1's reading did.

use std::path::PathBuf;

use qmesh_proto::v1;
use serde::{Deserialize, Serialize};

use super::LAUNCH_VERSION;

/// `launch.json`: the daemon's order as it came, and what the agent that
/// took it added. A field added to `LaunchJob` on the wire is kept here
/// with no change to the agent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Launch {
    pub version: u32,
    /// The order, but its script (the `script` file).
    pub order: v1::LaunchJob,
    #[serde(default)]
    pub added: Additions,
}

/// What the agent adds to every launch order it takes: its site's
/// prologue and epilogue, where TMPDIRs go, its host's name, where
/// cgroups are made, and the GPUs it chose for the job.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Additions {
    /// Run by the shepherd before the job and after it (`--prologue`,
    /// `--epilogue` of the agent that launched it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prologue: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epilogue: Option<PathBuf>,
    /// Where the job's TMPDIR is made (`--tmpdir-base`); `None` (a launch
    /// from an older agent): no TMPDIR.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tmpdir_base: Option<PathBuf>,
    /// The socket the job's commands reach the daemon through (its
    /// QMESH_SOCKET, `--commands-socket`); `None`: their own default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commands_socket: Option<PathBuf>,
    /// This host's name, as its agent serves it (for PBS_GPUFILE).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub host: String,
    /// The GPU indices of this host given to the job.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<u32>,
    /// Where its shepherd makes the job's cgroup (`None`: the agent found
    /// none it could use, or an older agent launched it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroups: Option<Cgroups>,
}

/// Where the host's cgroups for jobs are, as the agent found them
/// (`crate::cgroup::detect`); kept in each launch, so that the shepherd
/// needs no detection of its own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "version", rename_all = "lowercase")]
pub enum Cgroups {
    /// The unified hierarchy: jobs in `base/JOBID`; `cpu`: whether the
    /// cpu controller is enabled there.
    V2 { base: PathBuf, cpu: bool },
    /// One base per v1 controller: jobs in `memory/JOBID` and so on.
    V1 {
        memory: PathBuf,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cpu: Option<PathBuf>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cpuacct: Option<PathBuf>,
        /// Where a suspended job is frozen (made when it is suspended).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        freezer: Option<PathBuf>,
    },
}

/// `launch.json` of version 1: the order's fields at the top level, with
/// the wire's names, and the agent's among them.
#[derive(Deserialize)]
struct LaunchV1 {
    #[serde(default)]
    version: u32,
    #[serde(flatten)]
    order: v1::LaunchJob,
    #[serde(flatten)]
    added: Additions,
}

impl Launch {
    pub fn new(order: v1::LaunchJob, added: Additions) -> Launch {
        Launch {
            version: LAUNCH_VERSION,
            order,
            added,
        }
    }

    /// Compact: the shepherd reads it back at every start (`jq .` shows
    /// it).
    pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(self)
    }

    /// A `launch.json` of any version.
    pub fn from_json(bytes: &[u8]) -> serde_json::Result<Launch> {
        serde_json::from_slice(bytes).or_else(|e| match serde_json::from_slice::<LaunchV1>(bytes) {
            Ok(old) if old.version <= 1 => Ok(Launch {
                version: old.version,
                order: old.order,
                added: old.added,
            }),
            _ => Err(e),
        })
    }

    /// The job's share of node `i` of its nodes (one process, one CPU, no
    /// GPU when the daemon did not say).
    pub fn share(&self, i: usize) -> v1::NodeShare {
        self.order.shares.get(i).copied().unwrap_or(v1::NodeShare {
            procs: 1,
            cpus: 1,
            threads: 1,
            gpus: 0,
            mem: None,
            shared: false,
        })
    }

    /// The indices in `nodes` of the job's nodes on this host (all of
    /// them when the daemon did not say).
    pub fn local_indices(&self) -> Vec<usize> {
        let order = &self.order;
        if order.local_nodes.is_empty() {
            return (0..order.nodes.len()).collect();
        }
        (0..order.nodes.len())
            .filter(|&i| order.local_nodes.contains(&order.nodes[i]))
            .collect()
    }

    /// The job's nodes on this host, by name (`QMESH_NODES` of its hooks).
    pub fn local_nodes(&self) -> &[String] {
        if self.order.local_nodes.is_empty() {
            &self.order.nodes
        } else {
            &self.order.local_nodes
        }
    }

    /// The job's share of its first node on this host (NCPUS,
    /// OMP_NUM_THREADS), as PBS Pro's MOM gives its first vnode's.
    pub fn local_share(&self) -> v1::NodeShare {
        self.local_indices()
            .first()
            .map_or_else(|| self.share(0), |&i| self.share(i))
    }

    /// GPUs the job has on this host: its local nodes' together.
    pub fn local_gpus(&self) -> u32 {
        self.local_indices()
            .iter()
            .map(|&i| self.share(i).gpus)
            .sum()
    }

    /// The queue the job was first submitted to (PBS_O_QUEUE).
    pub fn first_queue(&self) -> &str {
        if self.order.submit_queue.is_empty() {
            &self.order.queue
        } else {
            &self.order.submit_queue
        }
    }

    /// The limits on each of the job's processes (none when not said).
    pub fn limits(&self) -> v1::ProcessLimits {
        self.order.limits.unwrap_or_default()
    }
}

/// `nodefile` (PBS_NODEFILE): each node once per process the job has
/// there (PBS Pro's mpiprocs, Torque's ppn), in the order of its nodes.
pub fn node_file_text(launch: &Launch) -> String {
    let mut text = String::new();
    for (i, node) in launch.order.nodes.iter().enumerate() {
        for _ in 0..launch.share(i).procs {
            text.push_str(node);
            text.push('\n');
        }
    }
    text
}

/// `gpufile` (PBS_GPUFILE) as Torque writes it: `HOST-gpuN`, one line per
/// GPU.
pub fn gpu_file_text(host: &str, gpus: &[u32]) -> String {
    gpus.iter().map(|g| format!("{host}-gpu{g}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_launch_file_still_loads() {
        // launch.json as agents wrote it before shares, shells and limits.
        let old = r#"{
  "version": 1, "job": 12, "job_id": "12.srv", "name": "run.sh",
  "user": "alice", "uid": 1000, "gid": 1000, "group": "users",
  "workdir": "/home/alice/w", "stdout_path": "", "stderr_path": "",
  "join_output": false, "env": [["A", "1"]], "nodes": ["n1", "n2"],
  "walltime": 60, "kill_grace": 5, "queue": "batch", "account": "",
  "submit_host": "login1", "local_nodes": ["n1"]
}"#;
        let kept = Launch::from_json(old.as_bytes()).unwrap();
        let order = &kept.order;
        assert_eq!(kept.version, 1);
        assert_eq!(order.job_id, "12.srv");
        assert_eq!(
            order.env,
            vec![v1::EnvVar {
                name: "A".into(),
                value: "1".into()
            }]
        );
        assert!(order.shares.is_empty() && order.shell.is_empty());
        assert_eq!((order.umask, order.start_dir.as_str()), (None, ""));
        assert_eq!(kept.limits(), v1::ProcessLimits::default());
        assert!(kept.added.tmpdir_base.is_none());
        assert_eq!(kept.local_share().procs, 1);
        assert_eq!(kept.first_queue(), "batch");
        assert_eq!(kept.local_gpus(), 0);
        assert_eq!(kept.local_nodes(), ["n1".to_string()]);
    }

    #[test]
    fn a_launch_round_trips_through_its_json_but_its_script() {
        let order = v1::LaunchJob {
            job: 4,
            job_id: "4.srv".into(),
            script: b"echo hi\n".to_vec(),
            env: vec![v1::EnvVar {
                name: "A".into(),
                value: "1".into(),
            }],
            nodes: vec!["n1".into()],
            array_index: Some(0),
            ..Default::default()
        };
        let added = Additions {
            host: "h1".into(),
            gpus: vec![1],
            cgroups: Some(Cgroups::V2 {
                base: "/sys/fs/cgroup/qmesh/a".into(),
                cpu: false,
            }),
            ..Additions::default()
        };
        let launch = Launch::new(order.clone(), added);
        let json = launch.to_json().unwrap();
        assert!(!String::from_utf8_lossy(&json).contains("script"));
        let back = Launch::from_json(&json).unwrap();
        assert_eq!(back.version, LAUNCH_VERSION);
        assert_eq!(back.order.script, b"");
        assert_eq!(
            back,
            Launch::new(
                v1::LaunchJob {
                    script: Vec::new(),
                    ..order
                },
                launch.added.clone()
            )
        );
    }

    #[test]
    fn a_launch_of_an_unknown_version_is_an_error() {
        let e = Launch::from_json(br#"{"version": 3, "job": 1}"#).unwrap_err();
        assert!(e.to_string().contains("order"), "{e}");
    }
}
