//! The site's prologue and epilogue, as PBS runs them: as root, with the
//! job id, the user and the group as arguments, in a clean environment;
//! a non-zero exit or five minutes' silence is a failure.
//!
//! Every host of a job runs them: the host that launches it in the job's
//! shepherd, before the script and after it (`shepherd.rs`), so they
//! survive agent restarts like the job; the other hosts when the job joins
//! and leaves them (`joined.rs`). Here: what both build and say.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

/// How long a prologue or epilogue may run (PBS's default too).
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(300);

/// The site's programs around a job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hooks {
    pub prologue: Option<PathBuf>,
    pub epilogue: Option<PathBuf>,
    /// Run by the agent when preemption checkpoints a job launched here
    /// (`supervise.rs`, `Supervisor::checkpoint`).
    pub checkpoint: Option<PathBuf>,
}

/// What a hook is told about its job.
pub struct HookJob<'a> {
    pub job_id: &'a str,
    pub user: &'a str,
    pub group: &'a str,
    /// The job's nodes on this host (`QMESH_NODES`, comma-separated).
    pub nodes: &'a [String],
}

/// `PROGRAM JOBID USER GROUP` with the job's id and its nodes here in the
/// environment, and nothing else but `PATH`. The caller sets its stdio.
pub fn command(program: &Path, job: &HookJob) -> Command {
    let mut cmd = Command::new(program);
    cmd.arg(job.job_id)
        .arg(job.user)
        .arg(job.group)
        .env_clear()
        .env("PATH", crate::env::DEFAULT_PATH)
        .env("QMESH_JOBID", job.job_id)
        .env("PBS_JOBID", job.job_id)
        .env("QMESH_NODES", job.nodes.join(","));
    cmd
}

/// Why a hook that ended with `status` failed, with the first line it
/// wrote to stderr; `None` if it succeeded.
pub fn failure(what: &str, program: &Path, status: ExitStatus, stderr: &[u8]) -> Option<String> {
    if status.success() {
        return None;
    }
    let said = String::from_utf8_lossy(stderr);
    let said = said.lines().next().unwrap_or("").trim();
    Some(format!(
        "the {what} {} failed ({status}){}",
        program.display(),
        if said.is_empty() {
            String::new()
        } else {
            format!(": {said}")
        }
    ))
}

/// A hook that ran over [`HOOK_TIMEOUT`].
pub fn overran(what: &str, program: &Path) -> String {
    format!(
        "the {what} {} ran over {} s and was killed",
        program.display(),
        HOOK_TIMEOUT.as_secs()
    )
}

/// A hook that could not be started.
pub fn unstartable(what: &str, program: &Path, e: &std::io::Error) -> String {
    format!("the {what} {} could not start: {e}", program.display())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn a_failure_names_the_hook_its_status_and_its_first_words() {
        let program = Path::new("/etc/qmesh/prologue");
        let ok = ExitStatus::from_raw(0);
        assert_eq!(failure("prologue", program, ok, b"ignored"), None);
        let three = ExitStatus::from_raw(3 << 8);
        assert_eq!(
            failure("prologue", program, three, b"scratch not mounted\nmore\n").as_deref(),
            Some("the prologue /etc/qmesh/prologue failed (exit status: 3): scratch not mounted")
        );
        assert_eq!(
            failure("epilogue", program, three, b"").as_deref(),
            Some("the epilogue /etc/qmesh/prologue failed (exit status: 3)")
        );
    }
}
