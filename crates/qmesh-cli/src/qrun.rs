//! qrun: an operator or manager starts queued jobs now, whatever the
//! scheduler's policy says (PBS and Torque). The daemon chooses free nodes
//! of the job's queue, or checks those -H names, and starts the job the
//! way a scheduling pass does.

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::RunRequest;

use crate::action;
use crate::client::{self, CliError};

/// Start queued jobs now, past the scheduler's policy.
///
/// Limits, priorities, blocking, reservations, a stopped queue and
/// scheduling = false do not hold a job back; a hold, unmet dependencies
/// or an -a time ahead do, and so do nodes that are not free. Operators
/// and managers only. Prints nothing when every job started; otherwise one
/// line per job that did not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "qrun", version)]
pub struct Args {
    /// The nodes to run on: nodes or hosts joined by + (n1+n2, or PBS's
    /// (n1:ncpus=4)+(n2:ncpus=4)), one per node of the job, a host
    /// standing for one of its free nodes; a single host for all of them
    /// (Torque); "-" or none: the server chooses free nodes.
    #[arg(short = 'H', value_name = "NODES")]
    pub nodes: Option<String>,
    /// Accepted (asynchronous run): qrun answers once each start is on
    /// disk.
    #[arg(short = 'a')]
    pub asynchronous: bool,
    /// Print the result for each job as JSON.
    #[arg(long)]
    pub json: bool,
    /// Queued jobs to start (17 or 17.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = RunRequest {
            job_ids: args.ids,
            nodes: args.nodes.unwrap_or_default(),
            asynchronous: args.asynchronous,
        };
        Ok::<_, CliError>(jobs.run(request).await?.into_inner())
    });
    action::report("qrun", reply, args.json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_in_pbs_forms() {
        let args = Args::try_parse_from(["qrun", "-H", "(n1:ncpus=4)+(n2)", "17"]).unwrap();
        assert_eq!(args.nodes.as_deref(), Some("(n1:ncpus=4)+(n2)"));
        let args = Args::try_parse_from(["qrun", "-a", "17", "18"]).unwrap();
        assert!(args.asynchronous && args.nodes.is_none());
        assert!(Args::try_parse_from(["qrun"]).is_err());
    }
}
