//! qdisable: PBS's queue command; see [`crate::queue_switch`].

use std::process::ExitCode;

use clap::Parser;

use crate::queue_switch::{self, Switch};

/// Stop queues from accepting jobs.
///
/// qsub and qmove into them are refused; the jobs already queued stay, and
/// run as before. qenable undoes it. Operators and managers only.
///
/// Prints nothing when every queue was changed; otherwise one line per
/// queue that was not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "qdisable", version)]
pub struct Args {
    /// Queues (QUEUE or QUEUE@SERVER).
    #[arg(value_name = "DESTINATION", required = true)]
    pub destinations: Vec<String>,
}

pub fn main() -> ExitCode {
    let args = Args::parse();
    queue_switch::main("qdisable", Switch::Disable, args.destinations)
}
