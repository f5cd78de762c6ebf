//! qhold: put a user hold on jobs, so they stay queued until released.
//! The work is shared with the other per-job commands in [`crate::action`].

use std::process::ExitCode;

use clap::Parser;

use crate::action::{self, Action};
use crate::client;

/// Put a user hold on jobs, so they do not start until released with qrls.
///
/// Prints nothing when every job was handled; otherwise one line per job
/// that was not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "qhold", version, disable_help_flag = true)]
pub struct Args {
    /// Print help.
    #[arg(long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// PBS's hold list: some of u (user), o (operator: operators and
    /// managers), s (system: managers) [default: u (a user hold)].
    #[arg(short = 'h', value_name = "LIST")]
    pub holds: Option<String>,
    /// Print the result for each job as JSON.
    #[arg(long)]
    pub json: bool,
    /// Jobs to hold (17 or 17.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    action::main_with_holds(
        "qhold",
        Action::Hold,
        args.ids,
        args.json,
        args.holds.unwrap_or_default(),
    )
}
