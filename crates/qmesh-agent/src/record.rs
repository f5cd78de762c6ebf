//! What the spool's files hold: their names, their formats with each
//! format's version, and the write that puts a file in place whole. The
//! agent and its shepherds pass everything about a job through these
//! files, and an agent that restarts (or is upgraded while shepherds run)
//! reads what the last one left, so every format here is read by every
//! later agent. This module is the agent's bottom: it uses nothing of the
//! agent but [`crate::error`]; the directories are [`crate::spool`]'s.
//!
//! ```text
//! SPOOL/agent.lock            flock + pid of the agent serving it (crate::lock)
//! SPOOL/jobs/SEQ/launch.json  Launch: the daemon's order, what the agent added
//!               script        the job script, 0700, owned by the job user
//!               nodefile      each node once per process (PBS_NODEFILE), 0644
//!               gpufile       the GPUs given, HOST-gpuN (PBS_GPUFILE), 0644
//!               shepherd.pid  written by the agent right after the spawn
//!               job.pid       written by the shepherd right after the spawn
//!               kill_reason   written by the agent before it signals a kill
//!               signals/      SignalRequests waiting (crate::signals)
//!               WHAT.err      a prologue's or epilogue's stderr while it runs
//!               result.json   the wire's JobFinished: written by the shepherd
//!               shepherd.log  the shepherd's stderr
//! SPOOL/joined/SEQ.json       JoinedRecord: a job of another host (crate::joined)
//! ```
//!
//! Versions: `launch.json` 2 and `result.json` 2 (their version 1, the
//! agent's copies of the wire's messages field by field, is still read),
//! a signal request 1; a joined record has none (it has only ever had one
//! form).
//! `tests/spool_formats.rs` reads a spool of every version.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use qmesh_proto::v1;
use serde::{Deserialize, Serialize};

use crate::error::{AgentError, Result};

pub const LAUNCH_FILE: &str = "launch.json";
pub const SCRIPT_FILE: &str = "script";
pub const NODE_FILE: &str = "nodefile";
pub const GPU_FILE: &str = "gpufile";
pub const SHEPHERD_PID_FILE: &str = "shepherd.pid";
pub const JOB_PID_FILE: &str = "job.pid";
pub const KILL_REASON_FILE: &str = "kill_reason";
pub const SIGNALS_DIR: &str = "signals";
pub const RESULT_FILE: &str = "result.json";
pub const SHEPHERD_LOG: &str = "shepherd.log";

/// The version of `launch.json` this agent writes.
pub const LAUNCH_VERSION: u32 = 2;
/// The version of `result.json` this agent writes.
pub const RESULT_VERSION: u32 = 2;
/// The version of a signal request this agent writes.
pub const SIGNAL_VERSION: u32 = 1;

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
    pub prologue: Option<PathBuf>,
    pub epilogue: Option<PathBuf>,
    /// Where the job's TMPDIR is made (`--tmpdir-base`); `None` (a launch
    /// from an older agent): no TMPDIR.
    pub tmpdir_base: Option<PathBuf>,
    /// The socket the job's commands reach the daemon through (its
    /// QMESH_SOCKET, `--commands-socket`); `None`: their own default.
    pub commands_socket: Option<PathBuf>,
    /// This host's name, as its agent serves it (for PBS_GPUFILE).
    pub host: String,
    /// The GPU indices of this host given to the job.
    pub gpus: Vec<u32>,
    /// Where its shepherd makes the job's cgroup (`None`: the agent found
    /// none it could use, or an older agent launched it).
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
    },
}

/// `launch.json` of version 1: the order's fields at the top level, with
/// the wire's names but `env` as pairs, and the agent's among them.
#[derive(Deserialize)]
struct LaunchV1 {
    #[serde(default)]
    version: u32,
    #[serde(default)]
    env: Vec<(String, String)>,
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

    pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec_pretty(self)
    }

    /// A `launch.json` of any version.
    pub fn from_json(bytes: &[u8]) -> serde_json::Result<Launch> {
        serde_json::from_slice(bytes).or_else(|e| match serde_json::from_slice::<LaunchV1>(bytes) {
            Ok(old) if old.version <= 1 => {
                let mut order = old.order;
                order.env = old
                    .env
                    .into_iter()
                    .map(|(name, value)| v1::EnvVar { name, value })
                    .collect();
                Ok(Launch {
                    version: old.version,
                    order,
                    added: old.added,
                })
            }
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

/// A job's end as the wire's `JobFinished` says it, which the shepherd
/// writes into `result.json` and the agent reports as it is: `cause` is
/// all there is to fill but `message` and the end time (the others are
/// the wire's defaults: none).
pub fn finish(job: u64, cause: v1::FinishCause, message: String, end_time: i64) -> v1::JobFinished {
    v1::JobFinished {
        job,
        cause: cause as i32,
        message,
        end_time,
        ..v1::JobFinished::default()
    }
}

/// `result.json`: the end as it will be reported. `cause` is
/// `FinishCause`'s number (the proto's numbers, unlike its names, never
/// change).
#[derive(Serialize)]
struct ResultFile<'a> {
    version: u32,
    finished: &'a v1::JobFinished,
}

/// `result.json` of version 2 and later (their fields are added, not
/// changed; a new field reads as its default).
#[derive(Deserialize)]
struct ResultRead {
    finished: v1::JobFinished,
}

/// `result.json` of version 1: `JobFinished`'s fields at the top, the
/// cause by name.
#[derive(Deserialize)]
struct ResultV1 {
    cause: CauseV1,
    #[serde(flatten)]
    finished: v1::JobFinished,
}

#[derive(Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum CauseV1 {
    Exited,
    Walltime,
    Killed,
    LaunchFailed,
    Unknown,
    Memory,
    CpuTime,
}

pub fn result_to_json(finished: &v1::JobFinished) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec_pretty(&ResultFile {
        version: RESULT_VERSION,
        finished,
    })
}

/// A `result.json` of any version.
pub fn result_from_json(bytes: &[u8]) -> serde_json::Result<v1::JobFinished> {
    use v1::FinishCause as C;
    match serde_json::from_slice::<ResultRead>(bytes) {
        Ok(read) => Ok(read.finished),
        Err(e) => {
            let Ok(old) = serde_json::from_slice::<ResultV1>(bytes) else {
                return Err(e);
            };
            let cause = match old.cause {
                CauseV1::Exited => C::Exited,
                CauseV1::Walltime => C::Walltime,
                CauseV1::Killed => C::Killed,
                CauseV1::LaunchFailed => C::LaunchFailed,
                CauseV1::Unknown => C::Lost,
                CauseV1::Memory => C::Memory,
                CauseV1::CpuTime => C::CpuTime,
            };
            Ok(v1::JobFinished {
                cause: cause as i32,
                ..old.finished
            })
        }
    }
}

/// A signal request, `signals/NAME.json` (NAME sorts in posting order).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignalRequest {
    #[serde(default)]
    pub version: u32,
    /// The canonical name, `SIGUSR1`.
    pub signal: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub time: i64,
}

/// A job launched on another host that holds nodes here,
/// `SPOOL/joined/SEQ.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JoinedRecord {
    pub job: u64,
    pub job_id: String,
    pub user: String,
    pub group: String,
    /// Its nodes on this host.
    pub nodes: Vec<String>,
    pub launched_on: String,
    /// The prologue's outcome once known: the answer to a repeated join.
    #[serde(default)]
    pub outcome: Option<(bool, String)>,
}

/// Creates `path` (which must not exist) with `mode` and `bytes`.
pub fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| AgentError::io("create", path, e))?;
    file.write_all(bytes)
        .map_err(|e| AgentError::io("write", path, e))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| AgentError::io("set permissions of", path, e))
}

/// Replaces `path` with `bytes` all at once: a temporary file, fsync,
/// rename, fsync of the directory (so the new name survives a power cut:
/// a job's `result.json` must not be lost between the report and the
/// daemon's acknowledgement).
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .map_err(|e| AgentError::io("create", &tmp, e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| AgentError::io("write", &tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| AgentError::io("rename into place", path, e))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| AgentError::io("sync the directory of", path, e))
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

    #[test]
    fn old_result_without_optional_fields_still_loads() {
        let old = r#"{"job": 4, "cause": "EXITED", "exit_code": 0}"#;
        let r = result_from_json(old.as_bytes()).unwrap();
        assert_eq!(r.exit_code, Some(0));
        assert_eq!(r.cause(), v1::FinishCause::Exited);
        let old = r#"{"version": 1, "job": 5, "cause": "UNKNOWN", "exit_code": null}"#;
        let r = result_from_json(old.as_bytes()).unwrap();
        assert_eq!(
            (r.job, r.cause(), r.exit_code),
            (5, v1::FinishCause::Lost, None)
        );
    }

    #[test]
    fn a_result_round_trips_through_its_json() {
        let mut finished = finish(3, v1::FinishCause::Walltime, "over".into(), 20);
        finished.signal = Some(15);
        finished.start_time = 10;
        finished.cput = Some(3);
        let json = result_to_json(&finished).unwrap();
        assert_eq!(result_from_json(&json).unwrap(), finished);
        let e = result_from_json(br#"{"version": 3}"#).unwrap_err();
        assert!(e.to_string().contains("finished"), "{e}");
    }
}
