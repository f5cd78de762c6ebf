//! The daemon's half of qalter: each job altered on its own through the
//! core's rules (`State::alter`: all of a job's changes or none), stored,
//! written in the accounting log as PBS's `a` record (the attributes
//! changed), and answered once durable. A changed `-a` time wakes a pass
//! then; any change may change the plan.

use tracing::info;

use super::SchedulerTask;
use crate::answer::JobOutcome;
use crate::dispatch::Now;
use crate::event::Reply;
use crate::identity::Peer;

impl SchedulerTask {
    pub(super) fn alter(
        &mut self,
        peer: &Peer,
        ids: Vec<String>,
        alteration: &qmesh_core::qalter::Alteration,
        reply: Reply<Vec<JobOutcome>>,
        now: Now,
    ) {
        let caller = self.caller(peer);
        let mut results = Vec::with_capacity(ids.len());
        for text in ids {
            // An array is altered as a whole (the sub-jobs it has yet to
            // start follow); a sub-job or a range, each alone.
            let ids = match self.expand_targets(&text, (false, true), now) {
                Ok(ids) => ids,
                Err(e) => {
                    results.push(JobOutcome {
                        job_id: text,
                        refused: Some(e.to_string()),
                    });
                    continue;
                }
            };
            let mut refused = None;
            for id in ids {
                match self.state.alter(id, &caller, alteration, now.wall) {
                    Ok((changes, job)) => {
                        self.durability.persist(job);
                        let start_after = job.start_after;
                        info!(job = %id, user = %caller.user, changes = %changes.join(" "), "altered");
                        self.logs
                            .altered(&self.state, id, (&caller.user, &changes), now.wall);
                        if let Some(at) = start_after.filter(|t| *t > now.wall) {
                            self.pacing.wake_at(at);
                        }
                    }
                    Err(e) => {
                        info!(job = %text, user = %caller.user, error = %e, "qalter refused");
                        refused.get_or_insert_with(|| e.to_string());
                    }
                }
            }
            results.push(JobOutcome {
                job_id: text,
                refused,
            });
        }
        self.answer_when_durable(results, "the jobs were altered".to_string(), reply);
    }
}
