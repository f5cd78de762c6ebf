//! qrerun: running jobs are killed and queued again (PBS; operators and
//! managers). The daemon marks each job and has its agent kill it; the job
//! is requeued when its end is in, and starts again in a later pass.

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::RerunRequest;

use crate::action;
use crate::client::{self, CliError};

/// Kill running jobs and queue them again.
///
/// Each job must be running and rerunnable (qsub -r y, the default). The
/// job runs again from the start: run_count counts its runs. Operators and
/// managers only. Prints nothing when every job was requeued; otherwise one
/// line per job that was not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "qrerun", version)]
pub struct Args {
    /// "force": requeue a job even if it is not rerunnable, or if its
    /// host's agent is not connected (the old run is killed when the
    /// agent comes back, before the job runs there again).
    #[arg(short = 'W', value_name = "force")]
    pub extend: Option<String>,
    /// Torque's force: the same as -W force.
    #[arg(short = 'f')]
    pub force: bool,
    /// Print the result for each job as JSON.
    #[arg(long)]
    pub json: bool,
    /// Running jobs to requeue (17 or 17.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let force = match args.extend.as_deref().map(str::trim) {
        None => args.force,
        Some("force") => true,
        Some(other) => {
            eprintln!("qrerun: -W {other}: the only -W qrerun takes is -W force");
            return ExitCode::from(2);
        }
    };
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = RerunRequest {
            job_ids: args.ids,
            force,
            hold: false,
        };
        Ok::<_, CliError>(jobs.rerun(request).await?.into_inner())
    });
    action::report("qrerun", reply, args.json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn force_is_written_the_pbs_or_the_torque_way() {
        let args = Args::try_parse_from(["qrerun", "-Wforce", "17"]).unwrap();
        assert_eq!(args.extend.as_deref(), Some("force"));
        let args = Args::try_parse_from(["qrerun", "-f", "17", "18"]).unwrap();
        assert!(args.force);
        assert_eq!(args.ids, ["17", "18"]);
        assert!(Args::try_parse_from(["qrerun"]).is_err());
    }
}
