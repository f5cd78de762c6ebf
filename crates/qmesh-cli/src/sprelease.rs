//! sprelease: end one's own running job and give its nodes back to the
//! free pool now, instead of at the end of its wall time. Only running
//! jobs: the daemon refuses a queued one (qdel removes those), so a typo
//! in the id cannot throw away a job that waits for its turn.

use std::process::ExitCode;

use clap::Parser;

use crate::action::{self, Action};
use crate::client;

/// End running jobs and release their nodes back to the free pool now.
///
/// Only running jobs are ended; a queued job is refused (qdel removes
/// it). Prints nothing when every job was released; otherwise one line
/// per job that was not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "sprelease", version)]
pub struct Args {
    /// Print the result for each job as JSON.
    #[arg(long)]
    pub json: bool,
    /// Running jobs to end (17 or 17.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    action::main("sprelease", Action::DeleteRunning, args.ids, args.json)
}
