//! What qdel, qhold and qrls (and sprelease, sppause, spunpause, qmove, qsig) share: send every named job in one request,
//! print nothing for the ones that worked (as PBS does) and `CMD: MESSAGE`
//! for each that did not, and exit 1 if any failed. The daemon's per-job
//! message already names the job and what to do.

use std::process::ExitCode;

use qmesh_proto::{JobResult, JobsReply, JobsRequest};

use crate::client::{self, CliError};
use crate::output::{self, Output, Tree};

/// Which request to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Delete,
    /// sprelease: delete running jobs only.
    DeleteRunning,
    Hold,
    Release,
}

/// Sends `action` for `ids` and reports; the whole of a command's `main`.
pub fn main(cmd: &str, action: Action, ids: Vec<String>, json: bool) -> ExitCode {
    main_with_holds(cmd, action, ids, json, String::new())
}

/// [`main`] for qhold and qrls with `-h`: the hold letters (empty: their
/// default).
pub fn main_with_holds(
    cmd: &str,
    action: Action,
    ids: Vec<String>,
    json: bool,
    hold_types: String,
) -> ExitCode {
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = JobsRequest {
            job_ids: ids,
            running_only: action == Action::DeleteRunning,
            hold_types,
            ..JobsRequest::default()
        };
        let reply = match action {
            Action::Delete | Action::DeleteRunning => jobs.delete(request).await?,
            Action::Hold => jobs.hold(request).await?,
            Action::Release => jobs.release(request).await?,
        };
        Ok(reply.into_inner())
    });
    report(cmd, reply, json)
}

/// Prints what the daemon answered for each job (qmove and qsig too; nothing for those that
/// worked, `CMD: MESSAGE` for the others) and gives the exit code.
pub fn report(cmd: &str, reply: Result<JobsReply, CliError>, json: bool) -> ExitCode {
    let reply = match reply {
        Ok(reply) => reply,
        Err(err) => return client::fail(cmd, &err),
    };
    if let Err(e) = output::emit(&Results(&reply), json) {
        return client::fail(
            cmd,
            &CliError::msg(format!("cannot write the results: {e}")),
        );
    }
    let failures = failure_lines(cmd, &reply.results);
    for line in &failures {
        eprintln!("{line}");
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `CMD: MESSAGE` for each job the daemon refused.
fn failure_lines(cmd: &str, results: &[JobResult]) -> Vec<String> {
    results
        .iter()
        .filter(|r| !r.ok)
        .map(|r| {
            if r.error.is_empty() {
                format!("{cmd}: job {} failed", r.job_id)
            } else {
                format!("{cmd}: {}", r.error)
            }
        })
        .collect()
}

/// The per-job results: nothing as text, a list as JSON.
struct Results<'a>(&'a JobsReply);

impl Output for Results<'_> {
    fn text(&self) -> String {
        String::new()
    }

    fn json(&self) -> Tree {
        Tree::List(
            self.0
                .results
                .iter()
                .map(|r| {
                    let mut entry = vec![
                        ("job_id".to_string(), Tree::text(&r.job_id)),
                        ("ok".to_string(), Tree::Bool(r.ok)),
                    ];
                    if !r.ok {
                        entry.push(("error".to_string(), Tree::text(&r.error)));
                    }
                    Tree::Map(entry)
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply() -> JobsReply {
        JobsReply {
            results: vec![
                JobResult {
                    job_id: "17.server".into(),
                    ok: true,
                    error: String::new(),
                },
                JobResult {
                    job_id: "99.server".into(),
                    ok: false,
                    error: "job 99.server does not exist; see qstat".into(),
                },
            ],
        }
    }

    #[test]
    fn only_failures_are_printed() {
        assert_eq!(
            failure_lines("qdel", &reply().results),
            vec!["qdel: job 99.server does not exist; see qstat"]
        );
        assert_eq!(Results(&reply()).text(), "");
    }

    #[test]
    fn json_lists_every_result() {
        let text = serde_json::to_string(&Results(&reply()).json()).unwrap();
        assert_eq!(
            text,
            r#"[{"job_id":"17.server","ok":true},{"job_id":"99.server","ok":false,"error":"job 99.server does not exist; see qstat"}]"#
        );
    }
}
