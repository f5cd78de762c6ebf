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
//! Versions: `launch.json` 2 (`record/launch.rs`) and `result.json` 2
//! (`record/result.rs`), each holding the wire's message itself (each
//! still reads its version 1, the agent's copy of that message field by
//! field); a signal request 1; a joined record has none (it has only ever
//! had one form). `tests/spool_formats.rs` reads a spool of every version.

mod launch;
mod result;

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{AgentError, Result};

pub use launch::{Additions, Cgroups, Launch, gpu_file_text, node_file_text};
pub use result::{finish, result_from_json, result_to_json};

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
