//! qstat: what the jobs and queues are doing.
//!
//! Three forms, as PBS users know them: the job table (default), every
//! attribute of each job (`-f`), and the queues (`-Q`, `-Q -f`); each also
//! as PBS's JSON document (`--json` or `-F json`). The rendering lives in
//! [`jobs`] and [`queues`]; this file asks the daemon and picks the form.
//!
//! When several ids are named and one is unknown, the daemon refuses the
//! whole request; qstat then asks for each id alone, so it lists the jobs
//! that exist and names the ones that do not, as PBS does.

mod jobs;
mod queues;

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::jobs_client::JobsClient;
use qmesh_proto::{QueueStatusRequest, StatusReply, StatusRequest};
use tonic::transport::Channel;

use crate::client::{self, CliError};
use crate::output;

pub use jobs::{JobListing, job_attrs, pbs_date_in};
pub use queues::{QueueListing, queue_attrs};

/// Show the status of jobs and queues.
///
/// Without options, a table of the jobs that have not finished. Job ids
/// (17 or 17.server) restrict the list.
#[derive(Parser, Debug)]
#[command(name = "qstat", version)]
pub struct Args {
    /// Full display: every attribute of each job (or queue, with -Q).
    #[arg(short = 'f')]
    pub full: bool,
    /// Show queues instead of jobs; names restrict the list.
    #[arg(short = 'Q')]
    pub queues: bool,
    /// Under each job, the nodes it runs on (PBS's -n).
    #[arg(short = 'n')]
    pub nodes: bool,
    /// Include finished jobs still in the history.
    #[arg(short = 'x')]
    pub finished: bool,
    /// Only the jobs of USER.
    #[arg(short = 'u', value_name = "USER")]
    pub user: Option<String>,
    /// Accepted for PBS compatibility: the table always shows nodes, wall time and elapsed time.
    #[arg(short = 'a')]
    pub alternate: bool,
    /// Print PBS's JSON document (as qstat -f -F json) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Output format; "json" is the same as --json.
    #[arg(short = 'F', value_name = "FORMAT", value_parser = ["json"])]
    pub format: Option<String>,
    /// Job ids, or queue names with -Q.
    #[arg(value_name = "ID")]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    match client::block_on(run(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => client::fail("qstat", &err),
    }
}

/// Prints the listing; `Ok(false)` when some named job or queue was refused
/// (its message is already on stderr).
async fn run(args: Args) -> Result<bool, CliError> {
    let json = args.json || args.format.is_some();
    let mut jobs_client = client::jobs().await?;
    let (listing, errors): (Box<dyn output::Output>, Vec<String>) = if args.queues {
        let (listing, errors) = fetch_queues(&mut jobs_client, &args.ids).await?;
        (
            Box::new(QueueListing {
                full: args.full,
                ..listing
            }),
            errors,
        )
    } else {
        let request = StatusRequest {
            job_ids: args.ids.clone(),
            user: args.user.clone().unwrap_or_default(),
            include_finished: args.finished,
        };
        let (reply, errors) = fetch_jobs(&mut jobs_client, request).await?;
        let mut listing = JobListing::new(reply, args.full);
        listing.show_nodes = args.nodes;
        (Box::new(listing), errors)
    };
    output::emit(listing.as_ref(), json)
        .map_err(|e| CliError::msg(format!("cannot write the listing: {e}")))?;
    for error in &errors {
        eprintln!("qstat: {error}");
    }
    Ok(errors.is_empty())
}

/// The jobs asked for, and the daemon's words for each named id it refused.
async fn fetch_jobs(
    client: &mut JobsClient<Channel>,
    request: StatusRequest,
) -> Result<(StatusReply, Vec<String>), CliError> {
    let status = match client.status(request.clone()).await {
        Ok(reply) => return Ok((reply.into_inner(), Vec::new())),
        Err(status) => status,
    };
    if request.job_ids.len() < 2 || !client::is_per_item(&status) {
        return Err(status.into());
    }
    let mut merged = StatusReply::default();
    let mut errors = Vec::new();
    for id in &request.job_ids {
        let one = StatusRequest {
            job_ids: vec![id.clone()],
            ..request.clone()
        };
        match client.status(one).await {
            Ok(reply) => {
                let reply = reply.into_inner();
                merged.server = reply.server;
                merged.server_time = reply.server_time;
                merged.jobs.extend(reply.jobs);
            }
            Err(status) if client::is_per_item(&status) => {
                errors.push(CliError::from(status).to_string())
            }
            Err(status) => return Err(status.into()),
        }
    }
    Ok((merged, errors))
}

/// The queues asked for, and the daemon's words for each name it refused.
async fn fetch_queues(
    client: &mut JobsClient<Channel>,
    names: &[String],
) -> Result<(QueueListing, Vec<String>), CliError> {
    let listing = |queues, server: String, time: i64| QueueListing {
        server,
        time,
        queues,
        full: false,
    };
    let request = QueueStatusRequest {
        names: names.to_vec(),
    };
    let status = match client.queue_status(request).await {
        Ok(reply) => {
            let reply = reply.into_inner();
            return Ok((
                listing(reply.queues, reply.server, reply.server_time),
                Vec::new(),
            ));
        }
        Err(status) => status,
    };
    if names.len() < 2 || !client::is_per_item(&status) {
        return Err(status.into());
    }
    let mut queues = Vec::new();
    let mut errors = Vec::new();
    let mut server = client::hostname();
    let mut time = chrono::Utc::now().timestamp();
    for name in names {
        let one = QueueStatusRequest {
            names: vec![name.clone()],
        };
        match client.queue_status(one).await {
            Ok(reply) => {
                let reply = reply.into_inner();
                server = reply.server;
                time = reply.server_time;
                queues.extend(reply.queues);
            }
            Err(status) if client::is_per_item(&status) => {
                errors.push(CliError::from(status).to_string())
            }
            Err(status) => return Err(status.into()),
        }
    }
    Ok((listing(queues, server, time), errors))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dash_f_json_is_a_synonym_and_other_formats_are_usage_errors() {
        let args = Args::try_parse_from(["qstat", "-F", "json", "-f", "17"]).unwrap();
        assert_eq!(args.format.as_deref(), Some("json"));
        assert!(args.full);
        assert_eq!(args.ids, vec!["17"]);
        let err = Args::try_parse_from(["qstat", "-F", "dsv"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }
}
