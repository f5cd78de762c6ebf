//! spunpause: let a job paused with sppause start again (releases the
//! user hold, as qrls does). The work is shared with the other per-job
//! commands in [`crate::action`].

use std::process::ExitCode;

use clap::Parser;

use crate::action::{self, Action};
use crate::client;

/// Unpause jobs paused with sppause, so the scheduler may start them.
///
/// Prints nothing when every job was unpaused; otherwise one line per job
/// that was not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "spunpause", version)]
pub struct Args {
    /// Print the result for each job as JSON.
    #[arg(long)]
    pub json: bool,
    /// Jobs to unpause (17 or 17.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    action::main("spunpause", Action::Release, args.ids, args.json)
}
