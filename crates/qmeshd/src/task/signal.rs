//! The daemon's half of qsig, and the way the server signals a job on its
//! own authority (the warning before a queue's period ends).
//!
//! A signal goes to the agent of the job's first node, whose shepherd sends
//! it to the job's process group. Nothing is stored: a signal acts on
//! processes and changes nothing in the job's record, so the reply does not
//! wait for the store. It is sent only to a connected agent that has the
//! job's launch; otherwise the caller is told to try again, rather than the
//! signal being kept for later, when it might arrive after its moment.

use qmesh_core::signal::{parse_signal, signal_target};
use qmesh_core::suspend::Pause;
use qmesh_core::{CoreError, JobId, Time};
use qmesh_proto::v1;
use tracing::info;

use super::SchedulerTask;
use crate::answer::JobOutcome;
use crate::dispatch::{Launch, Now};
use crate::error::TaskError;
use crate::event::Reply;
use crate::identity::Peer;

/// Why a signal was not sent.
#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    #[error(transparent)]
    Core(#[from] CoreError),
    #[error(
        "job {id} is starting and its agent has not received it yet; the signal was not sent; try again in a moment"
    )]
    Starting { id: String },
    #[error(
        "job {id} runs on host {host}, whose agent is not connected; the signal was not sent; try again when the agent is back"
    )]
    AgentAway { id: String, host: String },
}

impl SchedulerTask {
    /// qsig: each job on its own. A bad signal name refuses the request.
    /// `suspend` and `resume` change the jobs' state (`pause.rs`): the
    /// answer waits for the store.
    pub(super) fn signal(
        &mut self,
        peer: &Peer,
        signal: &str,
        ids: Vec<String>,
        reply: Reply<Vec<JobOutcome>>,
        now: Now,
    ) {
        match Pause::from_signal_word(signal) {
            Ok(Some(pause)) => self.pause(peer, pause, ids, reply, now),
            Ok(None) => {
                let _ = reply.send(self.send_signal(peer, signal, ids, now));
            }
            Err(e) => {
                let _ = reply.send(Err(TaskError::from(e)));
            }
        }
    }

    fn send_signal(
        &mut self,
        peer: &Peer,
        signal: &str,
        ids: Vec<String>,
        now: Now,
    ) -> Result<Vec<JobOutcome>, TaskError> {
        let signal = parse_signal(signal)?;
        let caller = self.caller(peer);
        let reason = format!("qsig by {}", caller.user);
        let mut results = Vec::with_capacity(ids.len());
        for text in ids {
            // An array or a range: each of its running sub-jobs.
            let outcome = self
                .expand_targets(&text, (true, false), now)
                .map_err(SignalError::from)
                .and_then(|ids| {
                    let mut last =
                        Err(SignalError::from(CoreError::NoSuchJob { id: text.clone() }));
                    for id in ids {
                        signal_target(&self.state, id, Some(&caller))?;
                        last = Ok(self.signal_job(id, signal, &reason, now.wall)?);
                    }
                    last
                });
            if let Err(e) = &outcome {
                info!(job = %text, user = %caller.user, signal, error = %e, "signal refused");
            }
            results.push(JobOutcome::new(text, &outcome));
        }
        Ok(results)
    }

    /// Sends `signal` (written as qsig accepts it: `SIGUSR1`, `USR1`, `10`)
    /// to the running job `id`, on the server's authority; `reason` goes to
    /// the logs of the daemon, the agent and the shepherd. Returns the
    /// signal's canonical name. For the scheduler: the warning before a
    /// period ends. `now` is for the server's log.
    pub(super) fn signal_job(
        &mut self,
        id: JobId,
        signal: &str,
        reason: &str,
        now: Time,
    ) -> Result<&'static str, SignalError> {
        let signal = parse_signal(signal)?;
        let job = signal_target(&self.state, id, None)?;
        let full = self.state.full_id(id);
        if matches!(
            self.dispatch.launch_of(id),
            Some(Launch::AwaitingDurable | Launch::Ready)
        ) {
            return Err(SignalError::Starting { id: full });
        }
        let host = self.state.job_host(job).unwrap_or_default().to_string();
        // The other hosts of the job hold its pbsdsh tasks, if any.
        let others: Vec<String> = self.state.job_hosts(job).into_iter().skip(1).collect();
        let order = v1::SignalJob {
            job: id.0,
            signal: signal.to_string(),
            reason: reason.to_string(),
        };
        if !self
            .links
            .send(&host, v1::daemon_message::Kind::Signal(order.clone()))
        {
            return Err(SignalError::AgentAway { id: full, host });
        }
        for other in &others {
            self.links
                .send(other, v1::daemon_message::Kind::Signal(order.clone()));
        }
        info!(job = %full, signal, host, reason, "signal sent to the job's agent");
        let text = format!("Signal {signal} sent: {reason}");
        let class = qmesh_core::joblog::EventClass::Job;
        self.logs.event(&self.state, (id, class), text, now);
        Ok(signal)
    }
}
