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

use tracing::warn;

use crate::plan::Plan;
use crate::spool::{Cause, JobResult};

/// The line for `result`, if the job was killed for a limit: its wall
/// time (`walltime` the limit, seconds), or its memory (`mem_limit` bytes).
pub fn line(result: &JobResult, walltime: u64, mem_limit: Option<u64>) -> Option<String> {
    match result.cause {
        Cause::Walltime => Some(format!(
            "=>> PBS: job killed: walltime {} exceeded limit {walltime}",
            result.end_time.saturating_sub(result.start_time).max(0)
        )),
        Cause::Memory => {
            let used = result.max_rss.unwrap_or(0).div_ceil(1024);
            Some(match mem_limit {
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
    use crate::spool::FORMAT_VERSION;

    fn ended(cause: Cause) -> JobResult {
        JobResult {
            version: FORMAT_VERSION,
            job: 1,
            exit_code: None,
            signal: Some(9),
            cause,
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
        assert_eq!(
            line(&ended(Cause::Walltime), 120, None).unwrap(),
            "=>> PBS: job killed: walltime 152 exceeded limit 120"
        );
        assert_eq!(
            line(&ended(Cause::Memory), 0, Some(512 << 20)).unwrap(),
            "=>> PBS: job killed: mem 1048576kb exceeded limit 524288kb"
        );
        assert_eq!(line(&ended(Cause::Killed), 120, None), None);
        assert_eq!(line(&ended(Cause::Exited), 120, None), None);
    }
}
