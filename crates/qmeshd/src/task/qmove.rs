//! The daemon's half of qmove: each job moved on its own through the core's
//! rules, each change stored, and the answer sent once they are durable
//! (as qhold and qrls do).

use tracing::info;

use super::SchedulerTask;
use crate::answer::JobOutcome;
use crate::dispatch::Now;
use crate::event::Reply;
use crate::identity::Peer;

impl SchedulerTask {
    pub(super) fn move_jobs(
        &mut self,
        peer: &Peer,
        destination: &str,
        ids: Vec<String>,
        reply: Reply<Vec<JobOutcome>>,
        now: Now,
    ) {
        let caller = self.caller(peer);
        let mut results = Vec::with_capacity(ids.len());
        for text in ids {
            let outcome = self
                .state
                .parse_id(&text)
                .and_then(|id| self.state.move_job(id, destination, &caller, now.wall));
            let refused = match outcome {
                Ok(job) => {
                    self.durability.persist(job);
                    info!(job = %job.id, user = %caller.user, queue = %job.queue, comment = %job.comment, "moved");
                    let (id, text) = (job.id, job.comment.clone());
                    let class = qmesh_core::joblog::EventClass::Job;
                    self.logs.event(&self.state, (id, class), text, now.wall);
                    None
                }
                Err(e) => {
                    info!(job = %text, user = %caller.user, destination, error = %e, "move refused");
                    Some(e.to_string())
                }
            };
            results.push(JobOutcome {
                job_id: text,
                refused,
            });
        }
        self.answer_when_durable(results, "the jobs were moved".to_string(), reply);
    }
}
