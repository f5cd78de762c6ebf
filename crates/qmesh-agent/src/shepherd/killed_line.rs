//! The line PBS's MOM adds to a job's error file when it kills the job
//! for a limit, which users look for there:
//! `=>> PBS: job killed: walltime 152 exceeded limit 120`, and for memory
//! `=>> PBS: job killed: mem 1048576kb exceeded limit 524288kb`.
//!
//! The file is the user's: it is appended to by a child process that
//! runs as the user (a root shepherd opening a path in the user's
//! directory could be sent elsewhere by a symbolic link).

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use qmesh_proto::v1::{FinishCause, JobFinished};
use tracing::warn;

use crate::plan::Plan;

/// The job's limits the line may name.
#[derive(Clone, Copy, Debug, Default)]
pub struct Limits {
    /// Seconds.
    pub walltime: u64,
    /// Bytes on this host.
    pub mem: Option<u64>,
    /// CPU seconds (-l cput).
    pub cput: Option<u64>,
    /// Seconds it was suspended: not wall time.
    pub suspended: u64,
}

/// The line for `result`, if the job was killed for a limit: its wall
/// time, its memory or its CPU time.
pub fn line(result: &JobFinished, limits: &Limits) -> Option<String> {
    match result.cause() {
        FinishCause::Walltime => Some(format!(
            "=>> PBS: job killed: walltime {} exceeded limit {}",
            (result.end_time.saturating_sub(result.start_time).max(0) as u64)
                .saturating_sub(limits.suspended),
            limits.walltime
        )),
        FinishCause::CpuTime => Some(format!(
            "=>> PBS: job killed: cput {} exceeded limit {}",
            result.cput.unwrap_or(0),
            limits.cput.unwrap_or(0)
        )),
        FinishCause::Memory => {
            let used = result.max_rss.unwrap_or(0).div_ceil(1024);
            Some(match limits.mem {
                Some(limit) => format!(
                    "=>> PBS: job killed: mem {used}kb exceeded limit {}kb",
                    limit.div_ceil(1024)
                ),
                None => format!("=>> PBS: job killed: mem {used}kb exceeded its limit"),
            })
        }
        _ => None,
    }
}

/// Appends `line` to the job's error file (its output file when joined),
/// as the job's user.
pub fn append(plan: &Plan, line: &str) {
    let path = plan.stderr.as_ref().unwrap_or(&plan.stdout);
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("printf '%s\\n' \"$1\" >> \"$2\"")
        .arg("sh")
        .arg(line)
        .arg(path)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(c) = &plan.switch_to {
        cmd.uid(c.uid.as_raw()).gid(c.gid.as_raw());
    }
    match cmd.status() {
        Ok(status) if status.success() => {}
        Ok(status) => {
            warn!(path = %path.display(), %status, "cannot add the kill line to the job's error file")
        }
        Err(e) => {
            warn!(path = %path.display(), "cannot add the kill line to the job's error file: {e}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(cause: FinishCause) -> JobFinished {
        JobFinished {
            job: 1,
            exit_code: None,
            signal: Some(9),
            cause: cause as i32,
            message: String::new(),
            start_time: 100,
            end_time: 252,
            cput: None,
            max_rss: Some(1 << 30),
            vmem: None,
        }
    }

    #[test]
    fn the_lines_are_pbss() {
        let limits = Limits {
            walltime: 120,
            mem: Some(512 << 20),
            cput: Some(60),
            suspended: 0,
        };
        assert_eq!(
            line(&ended(FinishCause::Walltime), &limits).unwrap(),
            "=>> PBS: job killed: walltime 152 exceeded limit 120"
        );
        let paused = Limits {
            suspended: 30,
            ..limits
        };
        assert_eq!(
            line(&ended(FinishCause::Walltime), &paused).unwrap(),
            "=>> PBS: job killed: walltime 122 exceeded limit 120",
            "time suspended is not wall time"
        );
        assert_eq!(
            line(&ended(FinishCause::Memory), &limits).unwrap(),
            "=>> PBS: job killed: mem 1048576kb exceeded limit 524288kb"
        );
        let mut cpu = ended(FinishCause::CpuTime);
        cpu.cput = Some(62);
        assert_eq!(
            line(&cpu, &limits).unwrap(),
            "=>> PBS: job killed: cput 62 exceeded limit 60"
        );
        assert_eq!(line(&ended(FinishCause::Killed), &limits), None);
        assert_eq!(line(&ended(FinishCause::Exited), &limits), None);
    }
}
