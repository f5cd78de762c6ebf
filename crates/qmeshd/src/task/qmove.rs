//! The daemon's half of qmove: each job moved on its own through the core's
//! rules, each change stored, and the answer sent once they are durable
//! (as qhold and qrls do).

use chrono::Utc;
use tracing::info;

use super::{SchedulerTask, persist};
use crate::answer::JobOutcome;
use crate::event::Reply;
use crate::identity::Peer;

impl SchedulerTask {
    pub(super) fn move_jobs(
        &mut self,
        peer: &Peer,
        destination: &str,
        ids: Vec<String>,
        reply: Reply<Vec<JobOutcome>>,
    ) {
        let caller = self.caller(peer);
        let now = Utc::now();
        let mut results = Vec::with_capacity(ids.len());
        for text in ids {
            let outcome = self
                .state
                .parse_id(&text)
                .and_then(|id| self.state.move_job(id, destination, &caller, now));
            let refused = match outcome {
                Ok(job) => {
                    persist(self.store.as_ref(), job);
                    info!(job = %job.id, user = %caller.user, queue = %job.queue, comment = %job.comment, "moved");
                    let (id, text) = (job.id, job.comment.clone());
                    self.log_event(id, qmesh_core::joblog::EventClass::Job, text);
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
