//! The spool: the agent's only memory, so that a restarted agent (or one
//! whose daemon restarted) knows what runs and what ended.
//!
//! ```text
//! SPOOL/agent.lock            flock + pid of the agent serving this spool
//! SPOOL/jobs/SEQ/launch.json  the launch order (LaunchSpec), root only
//!               script        the job script, 0700, owned by the job user
//!               nodefile      each node as many times as it has processes
//!                             (PBS_NODEFILE), 0644
//!               gpufile       the GPUs given, HOST-gpuN (PBS_GPUFILE), 0644
//!               shepherd.pid  written by the agent right after the spawn
//!               job.pid       written by the shepherd right after the spawn
//!               kill_reason   written by the agent before it signals a kill
//!               signals/      signal requests for the job (crate::signals)
//!               result.json   written by the shepherd when the job has ended
//!               shepherd.log  the shepherd's stderr
//! ```
//!
//! A job directory is built under a dot name and renamed into place, so
//! `jobs/SEQ` either holds a complete launch or does not exist; `result.json`
//! and the pid files are written to a temporary name and renamed too. A job
//! is *finished* exactly when `result.json` exists; the directory goes away
//! when the daemon acknowledges the finish.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use qmesh_proto::v1;
use serde::{Deserialize, Serialize};

use crate::error::{AgentError, Result};
use crate::hooks::Hooks;

pub const LAUNCH_FILE: &str = "launch.json";
pub const SCRIPT_FILE: &str = "script";
pub const NODE_FILE: &str = "nodefile";
pub const GPU_FILE: &str = "gpufile";
pub const SHEPHERD_PID_FILE: &str = "shepherd.pid";
pub const JOB_PID_FILE: &str = "job.pid";
pub const KILL_REASON_FILE: &str = "kill_reason";
pub const RESULT_FILE: &str = "result.json";
pub const SHEPHERD_LOG: &str = "shepherd.log";

/// The format version of launch.json and result.json.
pub const FORMAT_VERSION: u32 = 1;

/// The launch order as kept in `launch.json`: `LaunchJob` without the script
/// (which has its own file).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LaunchSpec {
    pub version: u32,
    pub job: u64,
    pub job_id: String,
    pub name: String,
    pub user: String,
    pub uid: u32,
    pub gid: u32,
    pub group: String,
    pub workdir: String,
    pub stdout_path: String,
    pub stderr_path: String,
    pub join_output: bool,
    pub env: Vec<(String, String)>,
    pub nodes: Vec<String>,
    pub walltime: u64,
    pub kill_grace: u64,
    pub queue: String,
    pub account: String,
    pub submit_host: String,
    /// The job's nodes on this host (all of them from an older daemon).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub local_nodes: Vec<String>,
    /// The site's prologue and epilogue, which the shepherd runs around
    /// the job (`--prologue`, `--epilogue` of the agent that launched it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prologue: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epilogue: Option<PathBuf>,
    /// The job's share of each of `nodes`, in order (empty: one process,
    /// one CPU, no GPU on each).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shares: Vec<NodeShare>,
    /// qsub -S: the shell that runs the script (empty: its #! line, else
    /// /bin/sh).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub shell: String,
    /// qsub -W umask=.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub umask: Option<u32>,
    /// Where the job starts; empty: the user's home directory here.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub start_dir: String,
    /// qsub -j eo: standard output into the standard error file.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub join_to_error: bool,
    #[serde(skip_serializing_if = "Limits::is_none")]
    pub limits: Limits,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub project: String,
    /// The queue first asked for (PBS_O_QUEUE); empty: `queue`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub submit_queue: String,
    /// A sub-job of an array: its index and its array's id (`12[].srv`);
    /// Torque's form (`qsub -t`) or PBS Pro's (`-J`) names its variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array_index: Option<u32>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub array_id: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub array_torque: bool,
    /// qsub -I: the script is the terminal's bridge (`crate::tasks`),
    /// and PBS_ENVIRONMENT says PBS_INTERACTIVE.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interactive: bool,
    /// The socket the job's commands reach the daemon through (its
    /// QMESH_SOCKET); `None`: their own default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands_socket: Option<PathBuf>,
    /// This host's name, as its agent serves it (for PBS_GPUFILE).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub host: String,
    /// Where the job's TMPDIR is made (`--tmpdir-base` of the agent that
    /// launched it); `None` (a launch from an older agent): no TMPDIR.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tmpdir_base: Option<PathBuf>,
    /// The GPU indices of this host given to the job.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<u32>,
    /// Where its shepherd makes the job's cgroup (`None`: the agent found
    /// none it could use, or an older agent launched it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroups: Option<crate::cgroup::Cgroups>,
}

/// What a job has of one of its nodes (`NodeShare` of the launch order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NodeShare {
    /// Lines in the node file (PBS Pro's mpiprocs, Torque's ppn).
    pub procs: u32,
    /// NCPUS.
    pub cpus: u32,
    /// OMP_NUM_THREADS.
    pub threads: u32,
    pub gpus: u32,
    /// Memory in bytes the job asked for on the node; `None`: not asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem: Option<u64>,
    /// Other jobs run on the node beside it: it is held to its `cpus`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
}

/// The limits on each of the job's processes (`ProcessLimits`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// RLIMIT_CPU, seconds (-l pcput).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_secs: Option<u64>,
    /// RLIMIT_AS, bytes (-l pvmem).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_space: Option<u64>,
    /// RLIMIT_FSIZE, bytes (-l file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_size: Option<u64>,
    /// -l nice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    /// -l cput: CPU seconds of all the job's processes together, which
    /// the shepherd holds it to where the job has a cgroup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_cpu_secs: Option<u64>,
}

impl Limits {
    pub fn is_none(&self) -> bool {
        *self == Limits::default()
    }
}

impl LaunchSpec {
    /// The job's share of node `i` of `nodes`.
    pub fn share(&self, i: usize) -> NodeShare {
        self.shares.get(i).copied().unwrap_or(NodeShare {
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
        if self.local_nodes.is_empty() {
            return (0..self.nodes.len()).collect();
        }
        (0..self.nodes.len())
            .filter(|&i| self.local_nodes.contains(&self.nodes[i]))
            .collect()
    }

    /// The job's share of its first node on this host (NCPUS,
    /// OMP_NUM_THREADS), as PBS Pro's MOM gives its first vnode's.
    pub fn local_share(&self) -> NodeShare {
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
        if self.submit_queue.is_empty() {
            &self.queue
        } else {
            &self.submit_queue
        }
    }
}

/// What the agent adds to every launch order it takes: its site's
/// prologue and epilogue, where TMPDIRs go, its host's name, and the
/// GPUs it chose for the job.
#[derive(Clone, Debug, Default)]
pub struct LaunchAdditions {
    pub hooks: Hooks,
    pub tmpdir_base: Option<PathBuf>,
    /// QMESH_SOCKET for the job (`--commands-socket`).
    pub commands_socket: Option<PathBuf>,
    pub host: String,
    pub gpus: Vec<u32>,
    /// Jobs' cgroups on this host, if the agent can make them.
    pub cgroups: Option<crate::cgroup::Cgroups>,
}

/// PBS_NODEFILE: each node once per process the job has there (PBS Pro's
/// mpiprocs, Torque's ppn), in the order of the job's nodes.
pub fn node_file_text(spec: &LaunchSpec) -> String {
    let mut text = String::new();
    for (i, node) in spec.nodes.iter().enumerate() {
        for _ in 0..spec.share(i).procs {
            text.push_str(node);
            text.push('\n');
        }
    }
    text
}

/// PBS_GPUFILE as Torque writes it: `HOST-gpuN`, one line per GPU.
pub fn gpu_file_text(host: &str, gpus: &[u32]) -> String {
    gpus.iter().map(|g| format!("{host}-gpu{g}\n")).collect()
}

impl From<&v1::LaunchJob> for LaunchSpec {
    fn from(l: &v1::LaunchJob) -> Self {
        LaunchSpec {
            version: FORMAT_VERSION,
            job: l.job,
            job_id: l.job_id.clone(),
            name: l.name.clone(),
            user: l.user.clone(),
            uid: l.uid,
            gid: l.gid,
            group: l.group.clone(),
            workdir: l.workdir.clone(),
            stdout_path: l.stdout_path.clone(),
            stderr_path: l.stderr_path.clone(),
            join_output: l.join_output,
            env: l
                .env
                .iter()
                .map(|e| (e.name.clone(), e.value.clone()))
                .collect(),
            nodes: l.nodes.clone(),
            walltime: l.walltime,
            kill_grace: l.kill_grace,
            queue: l.queue.clone(),
            account: l.account.clone(),
            submit_host: l.submit_host.clone(),
            local_nodes: l.local_nodes.clone(),
            prologue: None,
            epilogue: None,
            shares: l
                .shares
                .iter()
                .map(|s| NodeShare {
                    procs: s.procs,
                    cpus: s.cpus,
                    threads: s.threads,
                    gpus: s.gpus,
                    mem: s.mem,
                    shared: s.shared,
                })
                .collect(),
            shell: l.shell.clone(),
            umask: l.umask,
            start_dir: l.start_dir.clone(),
            join_to_error: l.join_to_error,
            limits: l.limits.map_or_else(Limits::default, |p| Limits {
                cpu_secs: p.cpu_secs,
                address_space: p.address_space,
                file_size: p.file_size,
                nice: p.nice,
                job_cpu_secs: p.job_cpu_secs,
            }),
            project: l.project.clone(),
            submit_queue: l.submit_queue.clone(),
            array_index: l.array_index,
            array_id: l.array_id.clone(),
            array_torque: l.array_torque,
            interactive: l.interactive,
            commands_socket: None,
            host: String::new(),
            tmpdir_base: None,
            gpus: Vec::new(),
            cgroups: None,
        }
    }
}

/// How a job ended, as kept in `result.json`; mirrors `JobFinished`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Cause {
    Exited,
    Walltime,
    Killed,
    LaunchFailed,
    /// The end was not observed (the shepherd died with the job running).
    Unknown,
    /// Killed for going over its memory limit (its cgroup's).
    Memory,
    /// Killed for going over its CPU time (-l cput).
    CpuTime,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobResult {
    #[serde(default)]
    pub version: u32,
    pub job: u64,
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub signal: Option<i32>,
    pub cause: Cause,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub start_time: i64,
    #[serde(default)]
    pub end_time: i64,
    /// CPU seconds the job's processes used (those reaped: the script and
    /// whatever it left), and the largest resident set among them, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cput: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss: Option<u64>,
    /// The largest virtual memory all its processes held together, bytes
    /// (sampled; only in a cgroup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vmem: Option<u64>,
}

impl JobResult {
    /// A job that could not be started.
    pub fn launch_failed(job: u64, message: String, now: i64) -> Self {
        JobResult {
            version: FORMAT_VERSION,
            job,
            exit_code: None,
            signal: None,
            cause: Cause::LaunchFailed,
            message,
            start_time: 0,
            end_time: now,
            cput: None,
            max_rss: None,
            vmem: None,
        }
    }

    pub fn to_proto(&self) -> v1::JobFinished {
        let cause = match self.cause {
            Cause::Exited => v1::FinishCause::Exited,
            Cause::Walltime => v1::FinishCause::Walltime,
            Cause::Killed => v1::FinishCause::Killed,
            Cause::LaunchFailed => v1::FinishCause::LaunchFailed,
            Cause::Unknown => v1::FinishCause::Lost,
            Cause::Memory => v1::FinishCause::Memory,
            Cause::CpuTime => v1::FinishCause::CpuTime,
        };
        v1::JobFinished {
            job: self.job,
            exit_code: self.exit_code,
            signal: self.signal,
            cause: cause as i32,
            message: self.message.clone(),
            start_time: self.start_time,
            end_time: self.end_time,
            cput: self.cput,
            max_rss: self.max_rss,
            vmem: self.vmem,
        }
    }
}

/// The spool root. Its path is absolute (shepherds are recognised by it).
#[derive(Clone, Debug)]
pub struct Spool {
    root: PathBuf,
}

impl Spool {
    /// Opens the spool at `root`, creating it (0755) and `jobs/` if missing.
    pub fn open(root: &Path) -> Result<Spool> {
        if !root.exists() {
            DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(root)
                .map_err(|e| AgentError::io("create spool directory", root, e))?;
        }
        let root = root
            .canonicalize()
            .map_err(|e| AgentError::io("resolve spool directory", root, e))?;
        let jobs = root.join("jobs");
        if !jobs.exists() {
            DirBuilder::new()
                .mode(0o755)
                .create(&jobs)
                .map_err(|e| AgentError::io("create spool directory", &jobs, e))?;
        }
        Ok(Spool { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn jobs_dir(&self) -> PathBuf {
        self.root.join("jobs")
    }

    pub fn job(&self, seq: u64) -> JobDir {
        JobDir {
            seq,
            path: self.jobs_dir().join(seq.to_string()),
        }
    }

    /// Writes a launch into `jobs/SEQ`. `Ok(None)` when the job is already
    /// in the spool (a repeated launch is ignored).
    pub fn prepare(
        &self,
        launch: &v1::LaunchJob,
        additions: &LaunchAdditions,
    ) -> Result<Option<JobDir>> {
        let dir = self.job(launch.job);
        if dir.path.exists() {
            return Ok(None);
        }
        let tmp = self.jobs_dir().join(format!(".{}.new", launch.job));
        if tmp.exists() {
            fs::remove_dir_all(&tmp)
                .map_err(|e| AgentError::io("remove partial job directory", &tmp, e))?;
        }
        DirBuilder::new()
            .mode(0o711)
            .create(&tmp)
            .map_err(|e| AgentError::io("create job directory", &tmp, e))?;
        // Traversable by the job user, whatever the umask.
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o711))
            .map_err(|e| AgentError::io("set permissions of", &tmp, e))?;
        let spec = LaunchSpec {
            prologue: additions.hooks.prologue.clone(),
            epilogue: additions.hooks.epilogue.clone(),
            host: additions.host.clone(),
            tmpdir_base: additions.tmpdir_base.clone(),
            commands_socket: additions.commands_socket.clone(),
            gpus: additions.gpus.clone(),
            cgroups: additions.cgroups.clone(),
            ..LaunchSpec::from(launch)
        };
        let json = serde_json::to_vec_pretty(&spec).map_err(|e| AgentError::Json {
            path: tmp.join(LAUNCH_FILE),
            source: e,
        })?;
        write_file(&tmp.join(LAUNCH_FILE), &json, 0o600)?;
        let script = if spec.interactive {
            crate::tasks::interactive_script(self.root(), spec.job)
        } else {
            launch.script.clone()
        };
        write_file(&tmp.join(SCRIPT_FILE), &script, 0o700)?;
        write_file(
            &tmp.join(NODE_FILE),
            node_file_text(&spec).as_bytes(),
            0o644,
        )?;
        if !spec.gpus.is_empty() {
            let text = gpu_file_text(&spec.host, &spec.gpus);
            write_file(&tmp.join(GPU_FILE), text.as_bytes(), 0o644)?;
        }
        crate::signals::create_dir(&tmp)?;
        fs::rename(&tmp, &dir.path)
            .map_err(|e| AgentError::io("move job directory into place", &dir.path, e))?;
        Ok(Some(dir))
    }

    /// All job directories, in sequence order.
    pub fn scan(&self) -> Result<Vec<JobDir>> {
        let jobs = self.jobs_dir();
        let entries =
            fs::read_dir(&jobs).map_err(|e| AgentError::io("read spool directory", &jobs, e))?;
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| AgentError::io("read spool directory", &jobs, e))?;
            let name = entry.file_name();
            let Some(seq) = name.to_str().and_then(|n| n.parse::<u64>().ok()) else {
                continue;
            };
            found.push(JobDir {
                seq,
                path: entry.path(),
            });
        }
        found.sort_by_key(|d| d.seq);
        Ok(found)
    }

    /// Removes launches that were being written when an agent stopped.
    pub fn remove_partial(&self) -> Result<()> {
        let jobs = self.jobs_dir();
        let entries =
            fs::read_dir(&jobs).map_err(|e| AgentError::io("read spool directory", &jobs, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name.to_str().is_some_and(|n| n.starts_with('.')) {
                let path = entry.path();
                fs::remove_dir_all(&path)
                    .map_err(|e| AgentError::io("remove partial job directory", &path, e))?;
            }
        }
        Ok(())
    }
}

/// One job's directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobDir {
    pub seq: u64,
    pub path: PathBuf,
}

impl JobDir {
    /// The directory a shepherd was given; the sequence number is its name.
    pub fn from_path(path: &Path) -> Option<JobDir> {
        let seq = path.file_name()?.to_str()?.parse().ok()?;
        Some(JobDir {
            seq,
            path: path.to_path_buf(),
        })
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    pub fn exists(&self) -> bool {
        self.path.is_dir()
    }

    pub fn read_launch(&self) -> Result<LaunchSpec> {
        let path = self.file(LAUNCH_FILE);
        let bytes = fs::read(&path).map_err(|e| AgentError::io("read", &path, e))?;
        serde_json::from_slice(&bytes).map_err(|e| AgentError::Json { path, source: e })
    }

    /// The result, if the job has ended.
    pub fn read_result(&self) -> Result<Option<JobResult>> {
        let path = self.file(RESULT_FILE);
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| AgentError::Json { path, source: e }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(AgentError::io("read", &path, e)),
        }
    }

    pub fn has_result(&self) -> bool {
        self.file(RESULT_FILE).exists()
    }

    pub fn write_result(&self, result: &JobResult) -> Result<()> {
        let path = self.file(RESULT_FILE);
        let json = serde_json::to_vec_pretty(result).map_err(|e| AgentError::Json {
            path: path.clone(),
            source: e,
        })?;
        write_atomic(&path, &json, 0o644)
    }

    /// A pid file's content; `None` when it is missing or unreadable.
    pub fn read_pid(&self, name: &str) -> Option<i32> {
        let text = fs::read_to_string(self.file(name)).ok()?;
        text.trim().parse().ok().filter(|p| *p > 0)
    }

    pub fn write_pid(&self, name: &str, pid: i32) -> Result<()> {
        write_atomic(&self.file(name), format!("{pid}\n").as_bytes(), 0o644)
    }

    /// When a file was last written, in Unix seconds (0 when unknown).
    pub fn mtime(&self, name: &str) -> i64 {
        fs::metadata(self.file(name))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs() as i64)
    }

    pub fn remove(&self) -> Result<()> {
        fs::remove_dir_all(&self.path)
            .map_err(|e| AgentError::io("remove job directory", &self.path, e))
    }
}

/// Creates `path` (which must not exist) with `mode` and `bytes`.
fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
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

    fn launch(seq: u64) -> v1::LaunchJob {
        v1::LaunchJob {
            job: seq,
            job_id: format!("{seq}.server"),
            name: "run.sh".into(),
            script: b"#!/bin/sh\necho hi\n".to_vec(),
            user: "alice".into(),
            uid: 1000,
            gid: 1000,
            env: vec![v1::EnvVar {
                name: "A".into(),
                value: "1".into(),
            }],
            nodes: vec!["n1".into(), "n2".into()],
            walltime: 60,
            kill_grace: 5,
            ..Default::default()
        }
    }

    #[test]
    fn prepare_writes_a_complete_directory_once() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(&tmp.path().join("spool")).unwrap();
        let dir = spool
            .prepare(&launch(7), &LaunchAdditions::default())
            .unwrap()
            .unwrap();
        assert_eq!(dir.path, spool.jobs_dir().join("7"));
        let spec = dir.read_launch().unwrap();
        assert_eq!(spec, LaunchSpec::from(&launch(7)));
        assert_eq!(spec.env, vec![("A".to_string(), "1".to_string())]);
        assert_eq!(fs::read_to_string(dir.file(NODE_FILE)).unwrap(), "n1\nn2\n");
        let mode = fs::metadata(dir.file(SCRIPT_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        // A repeated launch is ignored.
        assert!(
            spool
                .prepare(&launch(7), &LaunchAdditions::default())
                .unwrap()
                .is_none()
        );
        assert_eq!(spool.scan().unwrap(), vec![dir]);
    }

    #[test]
    fn result_round_trips_and_marks_the_job_finished() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        let dir = spool
            .prepare(&launch(3), &LaunchAdditions::default())
            .unwrap()
            .unwrap();
        assert_eq!(dir.read_result().unwrap(), None);
        let result = JobResult {
            version: FORMAT_VERSION,
            job: 3,
            exit_code: None,
            signal: Some(15),
            cause: Cause::Walltime,
            message: "over".into(),
            start_time: 10,
            end_time: 20,
            cput: Some(3),
            max_rss: Some(4096),
            vmem: None,
        };
        dir.write_result(&result).unwrap();
        assert_eq!(dir.read_result().unwrap(), Some(result.clone()));
        let wire = result.to_proto();
        assert_eq!(wire.cause, v1::FinishCause::Walltime as i32);
        assert_eq!(wire.signal, Some(15));
        assert_eq!((wire.cput, wire.max_rss), (Some(3), Some(4096)));
        // No temporary file is left behind.
        let names: Vec<_> = fs::read_dir(&dir.path)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }

    #[test]
    fn scan_skips_partial_launches_and_remove_partial_cleans_them() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        spool
            .prepare(&launch(2), &LaunchAdditions::default())
            .unwrap();
        spool
            .prepare(&launch(10), &LaunchAdditions::default())
            .unwrap();
        fs::create_dir(spool.jobs_dir().join(".5.new")).unwrap();
        let seqs: Vec<u64> = spool.scan().unwrap().iter().map(|d| d.seq).collect();
        assert_eq!(seqs, vec![2, 10]);
        spool.remove_partial().unwrap();
        assert!(!spool.jobs_dir().join(".5.new").exists());
    }

    #[test]
    fn old_result_without_optional_fields_still_loads() {
        let old = r#"{"job": 4, "cause": "EXITED", "exit_code": 0}"#;
        let r: JobResult = serde_json::from_str(old).unwrap();
        assert_eq!(r.exit_code, Some(0));
        assert_eq!(r.cause, Cause::Exited);
    }

    #[test]
    fn the_node_file_has_each_node_once_per_process() {
        let mut l = launch(5);
        l.nodes = vec!["n1".into(), "n2".into(), "n3".into()];
        let share = |procs, gpus| v1::NodeShare {
            procs,
            cpus: 4,
            threads: 2,
            gpus,
            mem: None,
            shared: false,
        };
        l.shares = vec![share(2, 1), share(3, 0), share(0, 2)];
        l.local_nodes = vec!["n1".into(), "n3".into()];
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        let additions = LaunchAdditions {
            host: "h1".into(),
            gpus: vec![1, 3, 4],
            ..LaunchAdditions::default()
        };
        let dir = spool.prepare(&l, &additions).unwrap().unwrap();
        assert_eq!(
            fs::read_to_string(dir.file(NODE_FILE)).unwrap(),
            "n1\nn1\nn2\nn2\nn2\n",
            "mpiprocs=0 gives a node no line"
        );
        assert_eq!(
            fs::read_to_string(dir.file(GPU_FILE)).unwrap(),
            "h1-gpu1\nh1-gpu3\nh1-gpu4\n"
        );
        let spec = dir.read_launch().unwrap();
        assert_eq!(spec.local_indices(), vec![0, 2]);
        assert_eq!(spec.local_gpus(), 3);
        assert_eq!(
            (spec.local_share().cpus, spec.local_share().threads),
            (4, 2)
        );
        assert_eq!(spec.gpus, vec![1, 3, 4]);
        assert_eq!(spec.host, "h1");
    }

    #[test]
    fn a_launch_without_shares_has_one_line_per_node() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        let dir = spool
            .prepare(&launch(6), &LaunchAdditions::default())
            .unwrap()
            .unwrap();
        assert_eq!(fs::read_to_string(dir.file(NODE_FILE)).unwrap(), "n1\nn2\n");
        assert!(!dir.file(GPU_FILE).exists());
        let spec = dir.read_launch().unwrap();
        assert_eq!(spec.local_share(), spec.share(0));
        assert_eq!(spec.share(1).procs, 1);
        assert_eq!(spec.first_queue(), spec.queue);
    }

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
        let spec: LaunchSpec = serde_json::from_str(old).unwrap();
        assert_eq!(spec.job_id, "12.srv");
        assert!(spec.shares.is_empty() && spec.shell.is_empty());
        assert_eq!((spec.umask, spec.start_dir.as_str()), (None, ""));
        assert!(spec.limits.is_none() && spec.tmpdir_base.is_none());
        assert_eq!(spec.local_share().procs, 1);
        assert_eq!(spec.first_queue(), "batch");
        assert_eq!(spec.local_gpus(), 0);
    }

    #[test]
    fn the_new_fields_round_trip_through_launch_json() {
        let mut l = launch(8);
        l.shell = "/bin/bash".into();
        l.umask = Some(0o27);
        l.start_dir = "/scratch/a".into();
        l.join_to_error = true;
        l.limits = Some(v1::ProcessLimits {
            cpu_secs: Some(30),
            address_space: Some(1 << 30),
            file_size: None,
            nice: Some(5),
            job_cpu_secs: Some(3600),
        });
        l.project = "p1".into();
        l.submit_queue = "route".into();
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        let additions = LaunchAdditions {
            tmpdir_base: Some("/var/tmp".into()),
            ..LaunchAdditions::default()
        };
        let dir = spool.prepare(&l, &additions).unwrap().unwrap();
        let spec = dir.read_launch().unwrap();
        assert_eq!(spec.shell, "/bin/bash");
        assert_eq!(spec.umask, Some(0o27));
        assert_eq!(spec.start_dir, "/scratch/a");
        assert!(spec.join_to_error);
        assert_eq!(spec.limits.cpu_secs, Some(30));
        assert_eq!(spec.limits.address_space, Some(1 << 30));
        assert_eq!(spec.limits.nice, Some(5));
        assert_eq!(spec.limits.job_cpu_secs, Some(3600));
        assert_eq!(spec.project, "p1");
        assert_eq!(spec.first_queue(), "route");
        assert_eq!(spec.tmpdir_base.as_deref(), Some(Path::new("/var/tmp")));
    }

    #[test]
    fn pid_files_round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        let dir = spool
            .prepare(&launch(1), &LaunchAdditions::default())
            .unwrap()
            .unwrap();
        assert_eq!(dir.read_pid(JOB_PID_FILE), None);
        dir.write_pid(JOB_PID_FILE, 1234).unwrap();
        assert_eq!(dir.read_pid(JOB_PID_FILE), Some(1234));
        assert_eq!(JobDir::from_path(&dir.path), Some(dir));
    }
}
