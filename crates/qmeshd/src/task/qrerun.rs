//! The daemon's half of qrerun: each running job is marked to be requeued
//! (`State::rerun`) and killed; when its agent reports the end, `finish`
//! queues it again (an `R` record in the accounting log) and a later pass
//! starts it anew. With `-W force` a job whose host's agent is not
//! connected is requeued at once; its old run is then stale on that host
//! (`hosts.rs`), killed when the agent comes back, and the job is not
//! launched there again before that run's end is in.

use qmesh_core::command_error::CommandError;
use qmesh_core::job::{ExitCause, JobExit};
use qmesh_core::joblog::EventClass;
use qmesh_core::qrerun::Rerun;
use qmesh_core::{Caller, JobId};
use tracing::{info, warn};

use super::SchedulerTask;
use crate::answer::JobOutcome;
use crate::dispatch::{DispatchEvent, Now};
use crate::event::Reply;
use crate::identity::Peer;

impl SchedulerTask {
    pub(super) fn rerun(
        &mut self,
        peer: &Peer,
        ids: Vec<String>,
        how: Rerun,
        reply: Reply<Vec<JobOutcome>>,
        now: Now,
    ) {
        let caller = self.caller(peer);
        let mut results = Vec::with_capacity(ids.len());
        for text in ids {
            // An array or a range: each of its running sub-jobs.
            let outcome = self
                .expand_targets(&text, (true, false), now)
                .map_err(CommandError::from)
                .and_then(|ids| {
                    ids.into_iter()
                        .try_for_each(|id| self.rerun_one(id, &caller, how, now))
                });
            if let Err(e) = &outcome {
                info!(job = %text, user = %caller.user, error = %e, "rerun refused");
            }
            results.push(JobOutcome::new(text, &outcome));
        }
        self.answer_when_durable(results, "the jobs are being requeued".to_string(), reply);
    }

    fn rerun_one(
        &mut self,
        id: JobId,
        caller: &Caller,
        how: Rerun,
        now: Now,
    ) -> Result<(), CommandError> {
        let force = how.force;
        let (host, job) = self.state.rerun(id, caller, how, now.wall)?;
        self.durability.persist(job);
        let reason = job.comment.clone();
        info!(job = %id, user = %caller.user, host, force, "requeueing");
        let text = format!(
            "Job Rerun at request of {}@{}",
            caller.user,
            self.state.server_name()
        );
        self.logs
            .event(&self.state, (id, EventClass::Job), text, now.wall);
        if force && !self.links.is_connected(&host) {
            warn!(job = %id, host, "requeued without its agent's word (qrerun -W force)");
            let exit = JobExit {
                code: None,
                signal: None,
                cause: ExitCause::Deleted,
                message: format!(
                    "requeued by {} with qrerun -W force; the agent of host {host} did not confirm the end",
                    caller.user
                ),
                cput: None,
                max_rss: None,
                vmem: None,
            };
            let event = DispatchEvent::EndWithoutAgent {
                job: id,
                host: host.clone(),
                exit,
            };
            self.dispatch_at(event, now);
        } else {
            self.end_active(id, &host, &reason, now);
        }
        Ok(())
    }
}
