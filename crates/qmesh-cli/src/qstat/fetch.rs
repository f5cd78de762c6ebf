//! Asking the daemon for what qstat shows, and turning what it could not
//! show into PBS's words and exit statuses (PBS exits with its error
//! number, which the shell sees modulo 256: 15001 Unknown Job Id is 153,
//! 15139 a finished job is 35, 15018 Unknown queue is 170).

use std::collections::HashSet;

use qmesh_proto::jobs_client::JobsClient;
use qmesh_proto::{
    JobInfo, QueueInfo, QueueStatusRequest, ServerStatusReply, ServerStatusRequest, StatusRefusal,
    StatusRefusalReason, StatusRequest,
};
use tonic::transport::Channel;

use super::options::JobQuery;
use crate::client::{self, CliError};

/// Something named that cannot be shown: the line for stderr (after
/// `qstat: `) and the exit status it gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    pub exit_status: u8,
}

const UNKNOWN_JOB: u8 = 153;
const FINISHED_JOB: u8 = 35;
const UNKNOWN_QUEUE: u8 = 170;

impl Refusal {
    /// PBS's words for what the daemon refused.
    fn of(refused: &StatusRefusal) -> Refusal {
        let name = &refused.name;
        let (message, exit_status) = match refused.reason() {
            StatusRefusalReason::UnknownJob => (format!("Unknown Job Id {name}"), UNKNOWN_JOB),
            StatusRefusalReason::Finished => (
                format!(
                    "{name} Job has finished, use -x or -H to obtain historical job information"
                ),
                FINISHED_JOB,
            ),
            StatusRefusalReason::BadId => (format!("illegally formed job identifier: {name}"), 1),
            StatusRefusalReason::UnknownQueue => (format!("Unknown queue {name}"), UNKNOWN_QUEUE),
            StatusRefusalReason::Unspecified => (refused.message.clone(), 1),
        };
        Refusal {
            message,
            exit_status,
        }
    }

    fn unknown_queue(name: &str) -> Refusal {
        Refusal {
            message: format!("Unknown queue {name}"),
            exit_status: UNKNOWN_QUEUE,
        }
    }
}

/// The jobs to show, in order, and what was named but cannot be shown.
pub struct FoundJobs {
    pub jobs: Vec<JobInfo>,
    pub server: String,
    /// The server's clock when it answered (Unix seconds).
    pub time: i64,
    pub refusals: Vec<Refusal>,
}

/// Asks for the jobs of `query`: one request, the daemon naming what it
/// cannot list instead of refusing the whole of it.
pub async fn jobs(
    client: &mut JobsClient<Channel>,
    query: &JobQuery,
) -> Result<FoundJobs, CliError> {
    let listing = StatusRequest {
        users: query.users.clone(),
        states: query.states.clone(),
        include_finished: query.include_finished,
        report_refused: true,
        expand_arrays: query.subjobs,
        arrays_only: query.arrays_only,
        brief: query.brief,
        ..StatusRequest::default()
    };
    let reply = client
        .status(StatusRequest {
            job_ids: query.ids.clone(),
            queues: query.queues.clone(),
            ..listing.clone()
        })
        .await?
        .into_inner();
    let refused_ids = reply
        .refused
        .iter()
        .filter(|r| r.reason() != StatusRefusalReason::UnknownQueue)
        .count();
    let mut jobs = reply.jobs;
    // The jobs named by id come first; the filters leave them alone.
    let mut listed = jobs.split_off(query.ids.len().saturating_sub(refused_ids).min(jobs.len()));
    if query.all && !(query.ids.is_empty() && query.queues.is_empty()) {
        // `@SERVER` besides ids or queues: every job as well.
        listed.extend(client.status(listing).await?.into_inner().jobs);
    }
    jobs.extend(listed);
    if query.execution_only {
        let queues = client
            .queue_status(QueueStatusRequest::default())
            .await?
            .into_inner()
            .queues;
        let execution: HashSet<String> = queues
            .into_iter()
            .filter(|q| q.queue_type.eq_ignore_ascii_case("execution"))
            .map(|q| q.name)
            .collect();
        jobs.retain(|job| execution.contains(&job.queue));
    }
    Ok(FoundJobs {
        jobs,
        time: server_time(reply.server_time),
        server: reply.server,
        refusals: reply.refused.iter().map(Refusal::of).collect(),
    })
}

fn server_time(reported: i64) -> i64 {
    if reported > 0 {
        reported
    } else {
        chrono::Utc::now().timestamp()
    }
}

/// The queues to show and the names that are not queues.
pub struct FoundQueues {
    pub queues: Vec<QueueInfo>,
    pub server: String,
    pub time: i64,
    pub refusals: Vec<Refusal>,
}

/// Asks for the queues named (all when none is); when one is unknown, the
/// daemon refuses the request, so each is asked for alone.
pub async fn queues(
    client: &mut JobsClient<Channel>,
    names: &[String],
) -> Result<FoundQueues, CliError> {
    let request = QueueStatusRequest {
        names: names.to_vec(),
    };
    let status = match client.queue_status(request).await {
        Ok(reply) => {
            let reply = reply.into_inner();
            return Ok(FoundQueues {
                queues: reply.queues,
                server: reply.server,
                time: server_time(reply.server_time),
                refusals: Vec::new(),
            });
        }
        Err(status) => status,
    };
    if names.is_empty() || !client::is_per_item(&status) {
        return Err(status.into());
    }
    let mut found = FoundQueues {
        queues: Vec::new(),
        server: client::hostname(),
        time: server_time(0),
        refusals: Vec::new(),
    };
    for name in names {
        let one = QueueStatusRequest {
            names: vec![name.clone()],
        };
        let status = match client.queue_status(one).await {
            Ok(reply) => {
                let reply = reply.into_inner();
                found.server = reply.server;
                found.time = server_time(reply.server_time);
                found.queues.extend(reply.queues);
                continue;
            }
            Err(status) => status,
        };
        match status.code() {
            tonic::Code::NotFound => found.refusals.push(Refusal::unknown_queue(name)),
            _ if client::is_per_item(&status) => found.refusals.push(Refusal {
                message: CliError::from(status).to_string(),
                exit_status: 1,
            }),
            _ => return Err(status.into()),
        }
    }
    Ok(found)
}

/// Asks for the server's status; `names` must name this server (empty:
/// it does), since the commands reach one daemon.
pub async fn server(
    client: &mut JobsClient<Channel>,
    names: &[String],
) -> Result<(Option<ServerStatusReply>, Vec<Refusal>), CliError> {
    let status = client
        .server_status(ServerStatusRequest {})
        .await?
        .into_inner();
    let refusals: Vec<Refusal> = names
        .iter()
        .filter(|name| {
            !same_server(name, &status.server) && !same_server(name, &status.server_host)
        })
        .map(|name| Refusal {
            message: format!(
                "cannot connect to server {name}: this qmeshd is {}",
                status.server
            ),
            exit_status: 1,
        })
        .collect();
    let shown = names.is_empty() || refusals.len() < names.len();
    Ok((shown.then_some(status), refusals))
}

/// Whether `name` names `server`, either may be the short or the full
/// host name.
fn same_server(name: &str, server: &str) -> bool {
    let name = name.trim();
    !server.is_empty()
        && (name == server
            || name
                .strip_prefix(server)
                .is_some_and(|rest| rest.starts_with('.'))
            || server
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('.')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(name: &str, reason: StatusRefusalReason) -> Refusal {
        Refusal::of(&StatusRefusal {
            name: name.into(),
            reason: reason as i32,
            message: "the daemon's words".into(),
        })
    }

    #[test]
    fn refusals_in_pbss_words_and_exit_statuses() {
        assert_eq!(
            refused("12.host", StatusRefusalReason::UnknownJob),
            Refusal {
                message: "Unknown Job Id 12.host".into(),
                exit_status: 153
            }
        );
        assert_eq!(
            refused("12.host", StatusRefusalReason::Finished),
            Refusal {
                message: "12.host Job has finished, use -x or -H to obtain historical job \
                          information"
                    .into(),
                exit_status: 35
            }
        );
        assert_eq!(
            refused("12x", StatusRefusalReason::BadId).message,
            "illegally formed job identifier: 12x"
        );
        assert_eq!(
            refused("gpu", StatusRefusalReason::UnknownQueue),
            Refusal::unknown_queue("gpu")
        );
        assert_eq!(
            refused("gpu", StatusRefusalReason::UnknownQueue).exit_status,
            170
        );
        assert_eq!(
            refused("x", StatusRefusalReason::Unspecified).message,
            "the daemon's words"
        );
    }

    #[test]
    fn server_names_short_or_full() {
        assert!(same_server("host", "host"));
        assert!(same_server("host.example.org", "host"));
        assert!(same_server("host", "host.example.org"));
        assert!(!same_server("hostile", "host"));
        assert!(!same_server("other", "host"));
        assert!(!same_server("host", ""));
    }
}
