//! qmove: move jobs that have not started to another queue (PBS syntax:
//! the destination first). Moving to a route (pipe) queue routes them on;
//! the daemon checks the destination's limits and who may move what.

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::MoveRequest;

use crate::action;
use crate::client;

/// Move jobs that have not started to another queue.
///
/// The destination must take each job (its node and wall time limits); a
/// route queue sends it on to the first of its destinations that does. A
/// user moves their own jobs into enabled queues; operators and managers
/// move any job. Running jobs do not move.
///
/// Prints nothing when every job moved; otherwise one line per job that
/// did not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "qmove", version)]
pub struct Args {
    /// Print the result for each job as JSON.
    #[arg(long)]
    pub json: bool,
    /// The queue to move the jobs to.
    #[arg(value_name = "DESTINATION")]
    pub destination: String,
    /// Jobs to move (17 or 17.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = MoveRequest {
            destination: args.destination,
            job_ids: args.ids,
        };
        Ok(jobs.r#move(request).await?.into_inner())
    });
    action::report("qmove", reply, args.json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_destination_comes_first() {
        let args = Args::try_parse_from(["qmove", "W_MPP_64", "17", "18.server"]).unwrap();
        assert_eq!(args.destination, "W_MPP_64");
        assert_eq!(args.ids, ["17", "18.server"]);
        assert!(
            Args::try_parse_from(["qmove", "W_MPP_64"]).is_err(),
            "no job"
        );
    }
}
