//! The daemon's half of qmsg: a line for a running job's error file (or
//! its output file, or both). Like a signal it goes to the agent of the
//! job's first node, which writes it to the files the job has open; the
//! same rights as qsig (the owner, operators, managers) and nothing is
//! stored. A job whose agent is away is told to the caller, not kept.

use qmesh_core::CoreError;
use qmesh_proto::v1;
use tracing::info;

use super::SchedulerTask;
use crate::answer::JobOutcome;
use crate::dispatch::{Launch, Now};
use crate::error::TaskError;
use crate::identity::Peer;

/// Why a message was not sent.
#[derive(Debug, thiserror::Error)]
pub enum MessageError {
    #[error(transparent)]
    Core(#[from] CoreError),
    #[error(
        "job {id} belongs to {owner}; only its owner, an operator or a manager may send it a message"
    )]
    NotYours { id: String, owner: String },
    #[error("job {id} is not running (state {state}); only running jobs take messages")]
    NotRunning { id: String, state: char },
    #[error(
        "job {id} is starting and its agent has not received it yet; the message was not written; try again in a moment"
    )]
    Starting { id: String },
    #[error(
        "job {id} runs on host {host}, whose agent is not connected; the message was not written; try again when the agent is back"
    )]
    AgentAway { id: String, host: String },
}

impl SchedulerTask {
    /// qmsg: each job on its own; `(to_output, to_error)`, neither: the
    /// error file.
    pub(super) fn message(
        &mut self,
        peer: &Peer,
        text: &str,
        files: (bool, bool),
        ids: Vec<String>,
        now: Now,
    ) -> Result<Vec<JobOutcome>, TaskError> {
        let caller = self.caller(peer);
        let (to_output, to_error) = (files.0, files.1 || !files.0);
        let mut results = Vec::with_capacity(ids.len());
        for text_id in ids {
            let outcome = self
                .expand_targets(&text_id, (true, false), now)
                .map_err(MessageError::from)
                .and_then(|ids| {
                    let mut last =
                        Err(MessageError::from(CoreError::NoSuchJob { id: text_id.clone() }));
                    for id in ids {
                        let full = self.state.full_id(id);
                        let job = self
                            .state
                            .job(id)
                            .ok_or_else(|| CoreError::NoSuchJob { id: full.clone() })?;
                        if !caller.may_act_on(job) {
                            return Err(MessageError::NotYours {
                                id: full,
                                owner: job.owner.user.clone(),
                            });
                        }
                        if !job.state.is_running() {
                            return Err(MessageError::NotRunning {
                                id: full,
                                state: job.state.letter(),
                            });
                        }
                        if matches!(
                            self.dispatch.launch_of(id),
                            Some(Launch::AwaitingDurable | Launch::Ready)
                        ) {
                            return Err(MessageError::Starting { id: full });
                        }
                        let host = self.state.job_host(job).unwrap_or_default().to_string();
                        let order = v1::MessageJob {
                            job: id.0,
                            text: text.to_string(),
                            to_output,
                            to_error,
                        };
                        if !self
                            .links
                            .send(&host, v1::daemon_message::Kind::Message(order))
                        {
                            return Err(MessageError::AgentAway { id: full, host });
                        }
                        info!(job = %full, user = %caller.user, host, "qmsg sent to the job's agent");
                        last = Ok("message");
                    }
                    last
                });
            results.push(JobOutcome::new(text_id, &outcome));
        }
        Ok(results)
    }
}
