//! qstart: PBS's queue command; see [`crate::queue_switch`].

use std::process::ExitCode;

use clap::Parser;

use crate::queue_switch::{self, Switch};

/// Let the jobs of queues start again.
///
/// The scheduler starts their jobs as before; qstop is the other way.
/// Operators and managers only.
///
/// Prints nothing when every queue was changed; otherwise one line per
/// queue that was not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "qstart", version)]
pub struct Args {
    /// Queues (QUEUE or QUEUE@SERVER).
    #[arg(value_name = "DESTINATION", required = true)]
    pub destinations: Vec<String>,
}

pub fn main() -> ExitCode {
    let args = Args::parse();
    queue_switch::main("qstart", Switch::Start, args.destinations)
}
