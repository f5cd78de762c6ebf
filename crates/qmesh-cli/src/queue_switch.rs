//! What qenable, qdisable, qstart and qstop share (PBS's queue commands).
//! Each names queues (`QUEUE` or `QUEUE@SERVER`); each queue gets one qmgr
//! command (`set queue QUEUE enabled = False`...), sent on its own, so one
//! unknown queue does not stop the others. The daemon's qmgr checks the
//! rights: operators and managers, as in PBS.

use std::process::ExitCode;

use qmesh_proto::QmgrRequest;

use crate::client::{self, CliError};

/// Which switch a command turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Switch {
    /// qenable: the queue accepts jobs.
    Enable,
    /// qdisable: it accepts none (those queued stay and run).
    Disable,
    /// qstart: its jobs may start.
    Start,
    /// qstop: none starts (running ones go on).
    Stop,
}

impl Switch {
    /// The qmgr command for `queue`.
    pub fn directive(self, queue: &str) -> String {
        let (attr, value) = match self {
            Switch::Enable => ("enabled", "True"),
            Switch::Disable => ("enabled", "False"),
            Switch::Start => ("started", "True"),
            Switch::Stop => ("started", "False"),
        };
        format!("set queue {queue} {attr} = {value}")
    }
}

/// The queue a destination names: `QUEUE` or `QUEUE@SERVER`.
pub fn queue_of(destination: &str) -> Result<&str, String> {
    let queue = destination
        .split_once('@')
        .map_or(destination, |(q, _)| q)
        .trim();
    if queue.is_empty() {
        return Err(format!(
            "\"{destination}\" names no queue; write QUEUE or QUEUE@SERVER"
        ));
    }
    Ok(queue)
}

/// Turns `switch` on each destination; the whole of a command's `main`.
pub fn main(cmd: &str, switch: Switch, destinations: Vec<String>) -> ExitCode {
    client::restore_sigpipe();
    let outcome = client::block_on(async {
        let mut admin = client::admin().await?;
        let mut failures = Vec::new();
        for destination in &destinations {
            let queue = match queue_of(destination) {
                Ok(q) => q,
                Err(e) => {
                    failures.push(e);
                    continue;
                }
            };
            let request = QmgrRequest {
                script: switch.directive(queue),
                source: "-c".into(),
                check_only: false,
            };
            match admin.qmgr(request).await {
                Ok(_) => {}
                Err(status) if client::is_per_item(&status) || is_refusal(&status) => {
                    failures.push(CliError::from(status).to_string())
                }
                Err(status) => return Err(CliError::from(status)),
            }
        }
        Ok(failures)
    });
    match outcome {
        Ok(failures) => {
            for line in &failures {
                eprintln!("{cmd}: {line}");
            }
            if failures.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => client::fail(cmd, &e),
    }
}

/// A refusal about one queue (rights, state), as opposed to the daemon
/// being unreachable.
fn is_refusal(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        tonic::Code::PermissionDenied | tonic::Code::FailedPrecondition
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_command_sets_its_attribute() {
        assert_eq!(
            Switch::Disable.directive("batch"),
            "set queue batch enabled = False"
        );
        assert_eq!(Switch::Start.directive("q"), "set queue q started = True");
        assert_eq!(queue_of("batch@srv").unwrap(), "batch");
        assert_eq!(queue_of("batch").unwrap(), "batch");
        assert!(queue_of("@srv").unwrap_err().contains("names no queue"));
    }
}
