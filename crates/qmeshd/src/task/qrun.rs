//! The daemon's half of qrun: the core chooses (or checks) the nodes
//! (`State::qrun_nodes`), and the job starts the way a pass starts one
//! (`start_job`: stored, then launched once durable). The answer goes once
//! the start is durable, so a job qrun reported started survives a crash.

use qmesh_core::command_error::CommandError;
use qmesh_core::{Caller, JobId};
use tracing::info;

use super::SchedulerTask;
use crate::answer::JobOutcome;
use crate::dispatch::Now;
use crate::event::{AfterDurable, Reply};
use crate::identity::Peer;

impl SchedulerTask {
    pub(super) fn run_now(
        &mut self,
        peer: &Peer,
        ids: Vec<String>,
        spec: Option<&str>,
        reply: Reply<Vec<JobOutcome>>,
        now: Now,
    ) {
        let caller = self.caller(peer);
        let mut results = Vec::with_capacity(ids.len());
        let mut launches = Vec::new();
        for text in ids {
            let outcome = self
                .state
                .parse_id(&text)
                .map_err(CommandError::from)
                .and_then(|id| self.run_one(id, &caller, spec, now));
            match &outcome {
                Ok(id) => launches.push(AfterDurable::Launch(*id)),
                Err(e) => info!(job = %text, user = %caller.user, error = %e, "qrun refused"),
            }
            results.push(JobOutcome::new(text, &outcome));
        }
        if !launches.is_empty() {
            self.durability.when_durable(launches);
        }
        self.answer_when_durable(results, "the jobs were started".to_string(), reply);
    }

    fn run_one(
        &mut self,
        id: JobId,
        caller: &Caller,
        spec: Option<&str>,
        now: Now,
    ) -> Result<JobId, CommandError> {
        if self.state.is_unstarted_sub_job(id) {
            // One sub-job of an array, run alone.
            self.state.sub_job_record(id, now.wall)?;
        }
        let on = self.state.qrun_nodes(id, caller, spec, now.wall)?;
        info!(job = %id, user = %caller.user, "run at once (qrun)");
        Ok(self.start_job(id, (&on.nodes, &on.parts), &caller.user, now)?)
    }
}
