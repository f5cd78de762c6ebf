//! qorder: two jobs that have not started exchange places in their
//! queues (PBS). Jobs in two queues also exchange queues, if each fits
//! the other's. The owner of both, or an operator or manager.

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::OrderRequest;

use crate::action;
use crate::client::{self, CliError};

/// Exchange the places of two queued jobs.
///
/// Each takes the other's place in the queue order (and, when they wait in
/// different queues, the other's queue, which must take it). Nothing else
/// about them changes. Running jobs cannot be reordered. A user may
/// reorder two jobs of their own; operators and managers any two. Prints
/// nothing when it worked; otherwise why not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "qorder", version)]
pub struct Args {
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// The first job (17 or 17.server).
    #[arg(value_name = "ID1")]
    pub first: String,
    /// The second job.
    #[arg(value_name = "ID2")]
    pub second: String,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = OrderRequest {
            first: args.first,
            second: args.second,
        };
        Ok::<_, CliError>(jobs.order(request).await?.into_inner())
    });
    action::report("qorder", reply, args.json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_two_jobs() {
        let args = Args::try_parse_from(["qorder", "17", "18.srv"]).unwrap();
        assert_eq!(
            (args.first.as_str(), args.second.as_str()),
            ("17", "18.srv")
        );
        assert!(Args::try_parse_from(["qorder", "17"]).is_err());
        assert!(Args::try_parse_from(["qorder", "17", "18", "19"]).is_err());
    }
}
