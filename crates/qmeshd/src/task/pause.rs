//! The daemon's half of `qsig -s suspend|resume`: each job changes state
//! in the core (`State::pause`, operators only), the change is stored,
//! the agents of its hosts are told (the word travels as a `SignalJob`
//! signal: the first host's shepherd freezes or thaws the job and pauses
//! its wall-time alarm; the others stop or continue its pbsdsh tasks),
//! and PBS Pro's `z` or `r` accounting record is written. The answer
//! waits for the store, as every change does.
//!
//! A job is suspended only while its first host's agent is connected and
//! has its launch: otherwise the request is refused and nothing changes,
//! as for a signal.

use qmesh_core::joblog::RecordType;
use qmesh_core::suspend::Pause;
use qmesh_core::{Caller, CoreError, JobId};
use qmesh_proto::v1;
use tracing::info;

use super::SchedulerTask;
use super::signal::SignalError;
use crate::answer::JobOutcome;
use crate::dispatch::{Launch, Now};
use crate::event::Reply;
use crate::identity::Peer;

impl SchedulerTask {
    pub(super) fn pause(
        &mut self,
        peer: &Peer,
        pause: Pause,
        ids: Vec<String>,
        reply: Reply<Vec<JobOutcome>>,
        now: Now,
    ) {
        let caller = self.caller(peer);
        let mut results = Vec::with_capacity(ids.len());
        for text in ids {
            // An array or a range: each of its sub-jobs that can be.
            let outcome = self
                .expand_targets(&text, (true, false), now)
                .map_err(SignalError::from)
                .and_then(|ids| {
                    let ids = self.pausable(ids, pause);
                    if ids.is_empty() {
                        return Err(CoreError::NoSuchJob { id: text.clone() }.into());
                    }
                    ids.into_iter()
                        .try_for_each(|id| self.pause_one(id, &caller, pause, now))
                });
            if let Err(e) = &outcome {
                info!(job = %text, user = %caller.user, error = %e, "{} refused", pause.word());
            }
            results.push(JobOutcome::new(text, &outcome));
        }
        let done = match pause {
            Pause::Suspend => "the jobs are suspended",
            Pause::Resume => "the jobs are resumed",
        };
        self.answer_when_durable(results, done.to_string(), reply);
    }

    /// Of several jobs (an array, a range), those in the state `pause`
    /// acts on; one job named alone is kept, to be refused with its state.
    fn pausable(&self, ids: Vec<JobId>, pause: Pause) -> Vec<JobId> {
        if ids.len() < 2 {
            return ids;
        }
        ids.into_iter()
            .filter(|id| {
                self.state.job(*id).is_some_and(|j| match pause {
                    Pause::Suspend => j.state == qmesh_core::JobState::Running,
                    Pause::Resume => j.state == qmesh_core::JobState::Suspended,
                })
            })
            .collect()
    }

    fn pause_one(
        &mut self,
        id: JobId,
        caller: &Caller,
        pause: Pause,
        now: Now,
    ) -> Result<(), SignalError> {
        let full = self.state.full_id(id);
        if let Some(job) = self.state.job(id) {
            if matches!(
                self.dispatch.launch_of(id),
                Some(Launch::AwaitingDurable | Launch::Ready)
            ) {
                return Err(SignalError::Starting { id: full });
            }
            let host = self.state.job_host(job).unwrap_or_default().to_string();
            if job.state.is_running() && !self.links.is_connected(&host) {
                return Err(SignalError::AgentAway { id: full, host });
            }
        }
        let (host, job) = self.state.pause(id, caller, pause, now.wall)?;
        self.durability.persist(job);
        let reason = format!("qsig -s {} by {}", pause.word(), caller.user);
        self.tell_pause(id, &host, pause, &reason);
        info!(job = %full, host, user = %caller.user, "job {}ed", pause.word());
        let (kind, verb) = match pause {
            Pause::Suspend => (RecordType::Suspended, "suspended"),
            Pause::Resume => (RecordType::Resumed, "resumed"),
        };
        let server = self.state.server_name().to_string();
        let text = format!("Job {verb} at request of {}@{server}", caller.user);
        self.logs
            .pause_changed(&self.state, (id, kind), &caller.user, text, now.wall);
        Ok(())
    }
}

impl SchedulerTask {
    /// An agent says hello again with jobs it runs: a suspension or
    /// resumption sent just before its session broke may never have
    /// reached it, so each of its jobs is told again what the daemon
    /// holds: suspended jobs `suspend`, running ones ever suspended
    /// `resume`. The shepherd takes a word it already acted on as a no-op.
    pub(super) fn resend_pauses(&mut self, host: &str, running: &[JobId]) {
        for &id in running {
            let Some(job) = self.state.job(id) else {
                continue;
            };
            let word = match job.state {
                qmesh_core::JobState::Suspended => Pause::Suspend,
                qmesh_core::JobState::Running if job.suspension.secs > 0 => Pause::Resume,
                _ => continue,
            };
            let order = v1::SignalJob {
                job: id.0,
                signal: word.word().to_string(),
                reason: format!("{} again after the agent's reconnection", word.word()),
            };
            self.links
                .send(host, v1::daemon_message::Kind::Signal(order));
            info!(job = %id, host, "{} sent again to a reconnected agent", word.word());
        }
    }
}
