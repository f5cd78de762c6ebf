//! pbs_rdel: delete reservations (PBS Pro). The daemon removes each with
//! its queue; the jobs in it are deleted, running ones killed. As PBS's
//! pbs_rdel, it prints nothing for those deleted and `pbs_rdel: MESSAGE`
//! for each that was not (the daemon's message names it and says why),
//! and exits 1 if any was not.

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::ReservationStatusRequest;

use crate::client::{self, CliError};

/// Delete reservations and the jobs in them.
///
/// The owner of a reservation may delete it, and operators and managers
/// any. Its queue goes with it: queued jobs in it are deleted and running
/// ones killed. Prints nothing when every reservation was deleted;
/// otherwise a line for each that was not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "pbs_rdel", version)]
pub struct Args {
    /// Print the result for each reservation as JSON.
    #[arg(long)]
    pub json: bool,
    /// Reservations (R12 or R12.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = ReservationStatusRequest { ids: args.ids };
        Ok::<_, CliError>(jobs.delete_reservation(request).await?.into_inner())
    });
    // qdel's report: nothing for those deleted, `pbs_rdel: MESSAGE` for
    // the others, a list with --json.
    crate::action::report("pbs_rdel", reply, args.json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_required() {
        assert!(Args::try_parse_from(["pbs_rdel"]).is_err());
        let a = Args::try_parse_from(["pbs_rdel", "R1", "R2.s"]).unwrap();
        assert_eq!(a.ids, ["R1", "R2.s"]);
    }
}
