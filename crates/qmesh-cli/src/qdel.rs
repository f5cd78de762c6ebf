//! qdel: delete jobs. A running job is killed (SIGTERM, then SIGKILL after
//! the server's kill_delay); a queued or held one is removed.
//! The work is shared with the other per-job commands in [`crate::action`].

use std::process::ExitCode;

use clap::Parser;

use crate::action::{self, Action};
use crate::client;

/// Delete jobs: kill the running ones, remove the queued ones.
///
/// Prints nothing when every job was handled; otherwise one line per job
/// that was not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "qdel", version)]
pub struct Args {
    /// Print the result for each job as JSON.
    #[arg(long)]
    pub json: bool,
    /// Jobs to delete (17 or 17.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    action::main("qdel", Action::Delete, args.ids, args.json)
}
