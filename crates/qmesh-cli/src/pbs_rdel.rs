//! pbs_rdel: delete reservations (PBS Pro). The daemon removes each with
//! its queue; the jobs in it are deleted, running ones killed. As PBS's
//! pbs_rdel, it prints nothing for those deleted and `pbs_rdel: MESSAGE`
//! for each that was not (the daemon's message names it and says why),
//! and exits 1 if any was not.

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::{JobResult, JobsReply, ReservationStatusRequest};

use crate::client::{self, CliError};
use crate::output::{self, Output, Tree};

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
    let reply = match reply {
        Ok(reply) => reply,
        Err(err) => return client::fail("pbs_rdel", &err),
    };
    if let Err(e) = output::emit(&Results(&reply), args.json) {
        return client::fail(
            "pbs_rdel",
            &CliError::msg(format!("cannot write the results: {e}")),
        );
    }
    let failures = failure_lines(&reply.results);
    for line in &failures {
        eprintln!("{line}");
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `pbs_rdel: MESSAGE` for each reservation not deleted.
fn failure_lines(results: &[JobResult]) -> Vec<String> {
    results
        .iter()
        .filter(|r| !r.ok)
        .map(|r| {
            if r.error.is_empty() {
                format!("pbs_rdel: reservation {} was not deleted", r.job_id)
            } else {
                format!("pbs_rdel: {}", r.error)
            }
        })
        .collect()
}

/// Nothing as text (as PBS); a list as JSON.
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
                        ("id".to_string(), Tree::text(&r.job_id)),
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
                    job_id: "R12.server".into(),
                    ok: true,
                    error: String::new(),
                },
                JobResult {
                    job_id: "R99.server".into(),
                    ok: false,
                    error: "reservation R99 does not exist; see pbs_rstat".into(),
                },
                JobResult {
                    job_id: "R7.server".into(),
                    ok: false,
                    error: String::new(),
                },
            ],
        }
    }

    #[test]
    fn only_failures_are_printed() {
        assert_eq!(
            failure_lines(&reply().results),
            vec![
                "pbs_rdel: reservation R99 does not exist; see pbs_rstat",
                "pbs_rdel: reservation R7.server was not deleted",
            ]
        );
        assert_eq!(Results(&reply()).text(), "");
    }

    #[test]
    fn json_lists_every_result() {
        let doc = serde_json::to_value(Results(&reply()).json()).unwrap();
        assert_eq!(doc[0], serde_json::json!({"id": "R12.server", "ok": true}));
        assert_eq!(doc[1]["ok"], false);
        assert_eq!(
            doc[1]["error"],
            "reservation R99 does not exist; see pbs_rstat"
        );
    }

    #[test]
    fn ids_are_required() {
        assert!(Args::try_parse_from(["pbs_rdel"]).is_err());
        let a = Args::try_parse_from(["pbs_rdel", "R1", "R2.s"]).unwrap();
        assert_eq!(a.ids, ["R1", "R2.s"]);
    }
}
