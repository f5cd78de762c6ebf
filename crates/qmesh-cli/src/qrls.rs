//! qrls: release the holds on jobs, so the scheduler may start them.
//! The work is shared with the other per-job commands in [`crate::action`].

use std::process::ExitCode;

use clap::Parser;

use crate::action::{self, Action};
use crate::client;

/// Release the holds on jobs, so they may start.
///
/// Prints nothing when every job was handled; otherwise one line per job
/// that was not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "qrls", version)]
pub struct Args {
    /// Print the result for each job as JSON.
    #[arg(long)]
    pub json: bool,
    /// Jobs to release (17 or 17.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    action::main("qrls", Action::Release, args.ids, args.json)
}
