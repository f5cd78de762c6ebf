//! spwait: block until a job has ended, and exit with its exit status, so
//! a shell script can chain work on it (`spwait 17 && next-step`). The
//! daemon's Wait call answers when the end is recorded; nothing polls.

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::{JobInfo, WaitRequest};

use crate::client;

/// Wait until a job has ended; exit with its exit status.
///
/// The exit status is what a shell would report for the job's script: its
/// exit code (0-255), or 128+N when signal N ended it (a job killed for
/// its wall time or by qdel ends by a signal). A job that never ran (it
/// was deleted while queued, could not be started or was lost) gives 255.
/// If the job cannot be waited for (unknown id, daemon unreachable),
/// spwait prints why and exits 1 — as a job that failed would.
#[derive(Parser, Debug)]
#[command(name = "spwait", version)]
pub struct Args {
    /// The job (17 or 17.server).
    #[arg(value_name = "ID")]
    pub id: String,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = WaitRequest { job_id: args.id };
        Ok(jobs.wait(request).await?.into_inner())
    });
    match reply {
        Ok(job) => ExitCode::from(shell_status(&job)),
        Err(err) => client::fail("spwait", &err),
    }
}

/// The job's end as a shell's `$?`: the code, 128+signal, or 255.
pub fn shell_status(job: &JobInfo) -> u8 {
    if let Some(sig) = job.exit_signal {
        return u8::try_from(128 + sig.clamp(0, 127)).unwrap_or(255);
    }
    match job.exit_status {
        Some(code) => u8::try_from(code).unwrap_or(255),
        None => 255,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(status: Option<i32>, signal: Option<i32>) -> JobInfo {
        JobInfo {
            exit_status: status,
            exit_signal: signal,
            ..Default::default()
        }
    }

    #[test]
    fn codes_pass_and_signals_read_as_a_shell_reads_them() {
        assert_eq!(shell_status(&ended(Some(0), None)), 0);
        assert_eq!(shell_status(&ended(Some(3), None)), 3);
        assert_eq!(shell_status(&ended(Some(255), None)), 255);
        // PBS's 256+N for signal N is 128+N in a shell.
        assert_eq!(shell_status(&ended(Some(265), Some(9))), 137);
        assert_eq!(shell_status(&ended(Some(271), Some(15))), 143);
    }

    #[test]
    fn a_job_that_never_ran_is_a_failure() {
        // -1 launch failed, -2 lost or deleted while queued.
        assert_eq!(shell_status(&ended(Some(-1), None)), 255);
        assert_eq!(shell_status(&ended(Some(-2), None)), 255);
        assert_eq!(shell_status(&ended(None, None)), 255);
    }
}
