//! qmsg: write a message into running jobs' error or output files (PBS).
//! The daemon checks the caller and the jobs and passes the line to the
//! agent of each job's first node, which appends it to the files the job
//! has open.

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::MessageRequest;

use crate::action;
use crate::client::{self, CliError};

/// Write a message into running jobs' error file (or output file).
///
/// The message is one line, appended to the file the job writes its
/// standard error to (`-E`, the default), its standard output (`-O`), or
/// both. Only running jobs take messages; a user may send to their own
/// jobs, operators and managers to any. Prints nothing when every job's
/// host was given the line (it is written a moment later); otherwise one
/// line per job whose host was not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "qmsg", version)]
pub struct Args {
    /// To the job's error file (the default).
    #[arg(short = 'E')]
    pub error: bool,
    /// To the job's output file.
    #[arg(short = 'O')]
    pub output: bool,
    /// Print the result for each job as JSON.
    #[arg(long)]
    pub json: bool,
    /// The message (quote it: one argument).
    #[arg(value_name = "MESSAGE")]
    pub message: String,
    /// Running jobs (17 or 17.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    if args.message.contains('\n') {
        return client::fail(
            "qmsg",
            &CliError::msg("a message is one line; it has a newline".to_string()),
        );
    }
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = MessageRequest {
            job_ids: args.ids,
            message: args.message,
            to_output: args.output,
            to_error: args.error,
        };
        Ok(jobs.message(request).await?.into_inner())
    });
    action::report("qmsg", reply, args.json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_comes_before_the_jobs() {
        let a = Args::try_parse_from(["qmsg", "hello there", "17", "18.srv"]).unwrap();
        assert_eq!(a.message, "hello there");
        assert_eq!(a.ids, vec!["17", "18.srv"]);
        assert!(!a.error && !a.output);
        let a = Args::try_parse_from(["qmsg", "-O", "-E", "hi", "17"]).unwrap();
        assert!(a.error && a.output);
        assert!(Args::try_parse_from(["qmsg", "hi"]).is_err());
    }
}
