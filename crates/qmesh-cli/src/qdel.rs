//! qdel: delete jobs. A running job is killed (SIGTERM, then SIGKILL after
//! the server's kill_delay); a queued or held one is removed. PBS Pro's
//! `-W force` and `-x` and Torque's `-p` go to the daemon as flags; the
//! per-job report is shared with the other per-job commands
//! ([`crate::action`]).

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::JobsRequest;

use crate::action;
use crate::client::{self, CliError};

/// Delete jobs: kill the running ones, remove the queued ones.
///
/// A user deletes their own jobs; operators and managers any job. Prints
/// nothing when every job was handled; otherwise one line per job that was
/// not, and exits 1.
#[derive(Parser, Debug)]
#[command(name = "qdel", version)]
pub struct Args {
    /// PBS's -W: "force" removes a job whose host's agent is not
    /// connected, or that is already being killed, without waiting for
    /// the agent (its run is killed when the agent comes back);
    /// "suppress_email=N" is accepted; a number is Torque's delay between
    /// SIGTERM and SIGKILL, accepted (the server's kill_delay applies).
    #[arg(short = 'W', value_name = "force|suppress_email=N")]
    pub extend: Vec<String>,
    /// Delete the job's history too: a finished job leaves qstat -x at
    /// once, another one once it has ended.
    #[arg(short = 'x')]
    pub history: bool,
    /// Torque's purge: the same as -W force.
    #[arg(short = 'p')]
    pub purge: bool,
    /// Accepted (PBS's and Torque's asynchronous delete); qdel answers
    /// once each deletion is on disk.
    #[arg(short = 'a')]
    pub asynchronous: bool,
    /// Torque's message for the job's owner: accepted, not sent.
    #[arg(short = 'm', value_name = "MESSAGE")]
    pub message: Option<String>,
    /// Print the result for each job as JSON.
    #[arg(long)]
    pub json: bool,
    /// Jobs to delete (17 or 17.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

/// What the -W options and -p say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Extend {
    pub force: bool,
    pub suppress_email: Option<i32>,
}

/// Reads the -W values (each may hold several, comma-separated).
pub fn parse_extend(values: &[String], purge: bool) -> Result<Extend, String> {
    let mut out = Extend {
        force: purge,
        ..Extend::default()
    };
    for value in values.iter().flat_map(|v| v.split(',')) {
        let value = value.trim();
        if value == "force" {
            out.force = true;
        } else if let Some(n) = value.strip_prefix("suppress_email=") {
            let n: i32 = n.trim().parse().map_err(|_| {
                format!(
                    "-W {value}: suppress_email takes a whole number, e.g. -W suppress_email=-1"
                )
            })?;
            out.suppress_email = Some(n);
        } else if value.parse::<u64>().is_err() {
            return Err(format!(
                "-W {value}: write -W force or -W suppress_email=N (or Torque's delay in seconds)"
            ));
        }
    }
    if out.force && out.suppress_email.is_some() {
        return Err(
            "-W force and -W suppress_email cannot be used together (as in PBS); give one".into(),
        );
    }
    Ok(out)
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let extend = match parse_extend(&args.extend, args.purge) {
        Ok(extend) => extend,
        Err(e) => {
            eprintln!("qdel: {e}");
            return ExitCode::from(2);
        }
    };
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = JobsRequest {
            job_ids: args.ids,
            force: extend.force,
            purge_history: args.history,
            suppress_email: extend.suppress_email,
            ..JobsRequest::default()
        };
        Ok::<_, CliError>(jobs.delete(request).await?.into_inner())
    });
    action::report("qdel", reply, args.json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pbs_and_torque_options() {
        let args = Args::try_parse_from(["qdel", "-Wforce", "-x", "17", "18.srv"]).unwrap();
        assert!(args.history);
        assert!(parse_extend(&args.extend, args.purge).unwrap().force);
        assert_eq!(args.ids, ["17", "18.srv"]);
        let args = Args::try_parse_from(["qdel", "-p", "17"]).unwrap();
        assert!(parse_extend(&args.extend, args.purge).unwrap().force);
        let e = parse_extend(&["suppress_email=5".into()], false).unwrap();
        assert_eq!(
            e,
            Extend {
                force: false,
                suppress_email: Some(5)
            }
        );
        assert!(
            parse_extend(&["30".into()], false).is_ok(),
            "Torque's delay"
        );
        let err = parse_extend(&["force".into(), "suppress_email=1".into()], false).unwrap_err();
        assert!(err.contains("cannot be used together"), "{err}");
        let err = parse_extend(&["hard".into()], false).unwrap_err();
        assert!(err.starts_with("-W hard: write -W force"), "{err}");
        assert!(Args::try_parse_from(["qdel", "-x"]).is_err(), "no job");
    }
}
