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
#[command(name = "qrls", version, disable_help_flag = true)]
pub struct Args {
    /// Print help.
    #[arg(long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// PBS's hold list: some of u (user), o (operator: operators and
    /// managers), s (system: managers) [default: u, as PBS's qrls].
    #[arg(short = 'h', value_name = "LIST")]
    pub holds: Option<String>,
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
    action::main_with_holds(
        "qrls",
        Action::Release,
        args.ids,
        args.json,
        args.holds.unwrap_or_else(|| "u".to_string()),
    )
}
