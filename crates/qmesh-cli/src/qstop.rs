//! qstop: PBS's queue command; see [`crate::queue_switch`].

use std::process::ExitCode;

use clap::Parser;

use crate::queue_switch::{self, Switch};

/// Stop the jobs of queues from starting.
///
/// Queued jobs wait (qstat says why); running jobs go on; the queues still
/// accept jobs. qstart undoes it. Operators and managers only.
///
/// Prints nothing when every queue was changed; otherwise one line per
/// queue that was not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "qstop", version)]
pub struct Args {
    /// Queues (QUEUE or QUEUE@SERVER).
    #[arg(value_name = "DESTINATION", required = true)]
    pub destinations: Vec<String>,
}

pub fn main() -> ExitCode {
    let args = Args::parse();
    queue_switch::main("qstop", Switch::Stop, args.destinations)
}
