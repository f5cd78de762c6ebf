//! qsig: send a signal to running jobs (PBS). The daemon checks the caller
//! and the jobs and passes the signal to the agent of each job's first
//! node, whose shepherd sends it to the job's whole process group.
//! The signal name is checked here too, so a typo costs no round trip.
//! `suspend` and `resume` (operators) stop and continue the whole job,
//! its wall time paused with it (`qmesh_core::suspend`).

use std::process::ExitCode;

use clap::Parser;
use qmesh_core::signal::{DEFAULT_SIGNAL, parse_signal};
use qmesh_core::suspend::Pause;
use qmesh_proto::SignalRequest;

use crate::action;
use crate::client::{self, CliError};

/// Send a signal to running jobs.
///
/// The signal goes to every process of the job (its process group). Unlike
/// qdel, nothing follows it: a job that traps the signal goes on. Only running
/// jobs can be signalled; a user may signal their own jobs, operators and
/// managers any job. `-s suspend` stops every process of the job where it
/// runs (its cgroup frozen, or SIGSTOP) and keeps its nodes; its wall time
/// does not run until `-s resume`; both need operator rights, and qstat
/// shows a suspended job as S. Prints nothing when every job was signalled;
/// otherwise one line per job that was not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "qsig", version)]
pub struct Args {
    /// The signal: a name (SIGUSR1 or USR1), a number (10), or suspend or
    /// resume.
    #[arg(short = 's', value_name = "SIGNAL", default_value = DEFAULT_SIGNAL)]
    pub signal: String,
    /// Print the result for each job as JSON.
    #[arg(long)]
    pub json: bool,
    /// Running jobs to signal (17 or 17.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let signal = match Pause::from_signal_word(&args.signal) {
        Ok(Some(pause)) => pause.word(),
        Ok(None) => match parse_signal(&args.signal) {
            Ok(name) => name,
            Err(e) => return client::fail("qsig", &CliError::msg(e.to_string())),
        },
        Err(e) => return client::fail("qsig", &CliError::msg(e.to_string())),
    };
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = SignalRequest {
            job_ids: args.ids,
            signal: signal.to_string(),
        };
        Ok(jobs.signal(request).await?.into_inner())
    });
    action::report("qsig", reply, args.json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signal_defaults_to_sigterm_and_takes_pbs_forms() {
        let args = Args::try_parse_from(["qsig", "17"]).unwrap();
        assert_eq!(args.signal, "SIGTERM");
        assert_eq!(args.ids, vec!["17"]);
        let args = Args::try_parse_from(["qsig", "-s", "USR1", "17", "18.server"]).unwrap();
        assert_eq!(parse_signal(&args.signal), Ok("SIGUSR1"));
        assert_eq!(args.ids, vec!["17", "18.server"]);
        assert!(Args::try_parse_from(["qsig", "-s", "USR1"]).is_err());
    }
}
