//! sppause: keep one's own queued job from starting (a user hold, as qhold
//! puts). The work is shared with the other per-job commands in
//! [`crate::action`].

use std::process::ExitCode;

use clap::Parser;

use crate::action::{self, Action};
use crate::client;

/// Pause queued jobs so they do not start until spunpause.
///
/// The job keeps its place in the queue's order; spq shows it as Paused.
/// Prints nothing when every job was paused; otherwise one line per job
/// that was not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "sppause", version)]
pub struct Args {
    /// Print the result for each job as JSON.
    #[arg(long)]
    pub json: bool,
    /// Jobs to pause (17 or 17.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    action::main("sppause", Action::Hold, args.ids, args.json)
}
