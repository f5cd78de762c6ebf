//! scancel: Slurm's way to end or signal jobs, on qmesh's Delete and Signal.
//! Jobs are named by Slurm's ids (`12`, an array's task `13_4`, the whole
//! array `13`) or chosen by `-u`, `-n`, `-p`, `-t` (and all of them at
//! once, as scancel's filters combine). As Slurm's scancel, it says
//! nothing when all went well, and a job already gone is an error line.

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::{JobInfo, JobsRequest, SignalRequest, StatusRequest};

use crate::client::{self, CliError};
use crate::squeue;

/// Cancel or signal jobs (Slurm's scancel, to qmesh).
#[derive(Parser, Debug, Default)]
#[command(
    name = "scancel",
    disable_help_flag = true,
    disable_version_flag = true
)]
pub struct Args {
    /// Send this signal instead of ending the jobs: a name or a number.
    #[arg(short = 's', long = "signal", value_name = "SIGNAL")]
    pub signal: Option<String>,
    /// Only this user's jobs.
    #[arg(short = 'u', long = "user", value_name = "USER")]
    pub user: Option<String>,
    /// Only jobs of this name.
    #[arg(short = 'n', long = "name", alias = "jobname", value_name = "NAME")]
    pub name: Option<String>,
    /// Only jobs of this partition.
    #[arg(short = 'p', long = "partition", value_name = "PARTITION")]
    pub partition: Option<String>,
    /// Only jobs in this state: PENDING, RUNNING or SUSPENDED (or PD, R, S).
    #[arg(short = 't', long = "state", value_name = "STATE")]
    pub state: Option<String>,
    /// Only your own jobs.
    #[arg(long = "me")]
    pub me: bool,
    /// Say what is done.
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    #[arg(long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Jobs: 12, 13_4, 13_[1-3], 13.
    #[arg(value_name = "JOBID")]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            eprintln!("scancel: error: {err}");
            ExitCode::from(1)
        }
    }
}

/// A Slurm job id in qmesh's form: `12` 12, `13_4` `13[4]`, `13_[1-3]`
/// `13[1-3]`.
pub fn qmesh_id(id: &str) -> Result<String, String> {
    let bad = || format!("invalid job id {id}");
    let (base, index) = match id.split_once('_') {
        Some((base, index)) => (
            base,
            Some(index.trim_start_matches('[').trim_end_matches(']')),
        ),
        None => (id, None),
    };
    if base.is_empty() || !base.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    Ok(match index {
        Some(i) if !i.is_empty() => format!("{base}[{i}]"),
        Some(_) => return Err(bad()),
        None => base.to_string(),
    })
}

fn filtered(args: &Args) -> bool {
    args.user.is_some()
        || args.name.is_some()
        || args.partition.is_some()
        || args.state.is_some()
        || args.me
}

fn run(args: &Args) -> Result<bool, CliError> {
    if args.ids.is_empty() && !filtered(args) {
        return Err(CliError::msg(
            "no job identification provided; name jobs or choose them with -u, -n, -p, -t",
        ));
    }
    let mut ids = Vec::new();
    for id in &args.ids {
        ids.push(qmesh_id(id).map_err(CliError::Msg)?);
    }
    let state = args
        .state
        .as_deref()
        .map(|s| match s.to_ascii_uppercase().as_str() {
            "PENDING" | "PD" => Ok("PD"),
            "RUNNING" | "R" => Ok("R"),
            "SUSPENDED" | "S" => Ok("S"),
            _ => Err(CliError::msg(format!(
                "invalid job state {s}; write PENDING, RUNNING or SUSPENDED"
            ))),
        })
        .transpose()?;
    let user = args
        .user
        .clone()
        .or_else(|| args.me.then(client::current_user));
    let results = client::block_on(async {
        let mut jobs = client::jobs().await?;
        if filtered(args) {
            // The filters choose among the jobs named, or among all.
            let listed = jobs
                .status(StatusRequest {
                    user: user.clone().unwrap_or_default(),
                    expand_arrays: true,
                    ..StatusRequest::default()
                })
                .await?
                .into_inner()
                .jobs;
            let chosen: Vec<String> = listed
                .iter()
                .filter(|j| !j.array || j.state_letter != "B")
                .filter(|j| args.name.as_ref().is_none_or(|n| *n == j.name))
                .filter(|j| args.partition.as_ref().is_none_or(|p| *p == j.queue))
                .filter(|j| state.is_none_or(|s| slurm_state(j) == s))
                .filter(|j| {
                    ids.is_empty()
                        || ids.iter().any(|i| {
                            let seq = j.id.split('.').next().unwrap_or_default();
                            seq == i || seq.split('[').next() == Some(i.as_str())
                        })
                })
                .map(|j| j.id.clone())
                .collect();
            if chosen.is_empty() {
                return Ok(Vec::new());
            }
            ids = chosen;
        }
        let reply = match &args.signal {
            Some(signal) => {
                jobs.signal(SignalRequest {
                    job_ids: ids.clone(),
                    signal: signal.clone(),
                })
                .await?
            }
            None => {
                jobs.delete(JobsRequest {
                    job_ids: ids.clone(),
                    ..JobsRequest::default()
                })
                .await?
            }
        };
        Ok::<_, CliError>(reply.into_inner().results)
    })?;
    let mut all_ok = true;
    for r in results {
        let shown = squeue::slurm_id(&r.job_id);
        if r.ok {
            if args.verbose {
                eprintln!("scancel: Terminating job {shown}");
            }
        } else {
            all_ok = false;
            eprintln!(
                "scancel: error: Kill job error on job id {shown}: {}",
                r.error
            );
        }
    }
    Ok(all_ok)
}

fn slurm_state(job: &JobInfo) -> &'static str {
    match job.state_letter.as_str() {
        "R" | "B" => "R",
        "S" => "S",
        "E" | "F" | "X" => "",
        _ => "PD",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_ids_in_qmeshs_form() {
        assert_eq!(qmesh_id("12").unwrap(), "12");
        assert_eq!(qmesh_id("13_4").unwrap(), "13[4]");
        assert_eq!(qmesh_id("13_[1-3]").unwrap(), "13[1-3]");
        assert!(qmesh_id("x").is_err());
        assert!(qmesh_id("13_").is_err());
    }
}
