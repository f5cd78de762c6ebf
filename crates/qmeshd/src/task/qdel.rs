//! The daemon's half of qdel with PBS Pro's options (plain deletion is
//! `act_on` in `jobs.rs`).
//!
//! `-W force`: a running job whose host's agent is not connected, or that
//! was already being killed (PBS: "the job is in the E state"), is ended
//! at once as deleted, without the agent's word. Its run is then *stale*
//! on that host (`hosts.rs`): if the agent comes back still running it, it
//! is told to kill it, and its end report ends nothing. Otherwise
//! (PBS: "if the server can contact the MoM, this option is ignored") the
//! job is deleted the usual way.
//!
//! `-x`: the job's history goes too: a finished job's at once, another's
//! once it has ended (`purge_if_asked`, from `finish`).
//!
//! Each job on its own; the answer once the changes are durable.

use qmesh_core::command_error::CommandError;
use qmesh_core::job::{ExitCause, JobExit};
use qmesh_core::joblog::EventClass;
use qmesh_core::{Caller, JobId, JobState};
use qmesh_store::Store;
use tracing::{error, info, warn};

use super::SchedulerTask;
use crate::answer::JobOutcome;
use crate::dispatch::{DispatchEvent, Now};
use crate::event::{JobAction, Reply};
use crate::identity::Peer;

impl SchedulerTask {
    pub(super) fn delete(
        &mut self,
        peer: &Peer,
        ids: Vec<String>,
        (force, purge): (bool, bool),
        reply: Reply<Vec<JobOutcome>>,
        now: Now,
    ) {
        let caller = self.caller(peer);
        let mut results = Vec::with_capacity(ids.len());
        for text in ids {
            let outcome = self.delete_named(&text, &caller, (force, purge), now);
            if let Err(e) = &outcome {
                info!(job = %text, user = %caller.user, error = %e, "delete refused");
            }
            results.push(JobOutcome::new(text, &outcome));
        }
        self.answer_when_durable(results, "the change was made".to_string(), reply);
    }

    /// One id of qdel: a job, an array (its sub-jobs too), a sub-job or a
    /// range of them (`12[5-9]`).
    fn delete_named(
        &mut self,
        text: &str,
        caller: &Caller,
        (force, purge): (bool, bool),
        now: Now,
    ) -> Result<(), CommandError> {
        let targets = if purge {
            // -x: a finished job is named by its id alone.
            match self.state.parse_id(text) {
                Ok(id) if self.state.job(id).is_some() => qmesh_core::state::Targets {
                    jobs: vec![id],
                    unstarted: None,
                },
                _ => self.state.targets(text)?,
            }
        } else {
            self.state.targets(text)?
        };
        if let Some((array, positions)) = &targets.unstarted {
            self.delete_unstarted(*array, positions, caller, now)?;
        }
        let mut first_error = None;
        for id in targets.jobs {
            // An array's sub-jobs first, each with -W force and -x.
            if self.state.job(id).is_some_and(|j| j.array.is_some()) {
                for sub in self.state.live_sub_jobs(id) {
                    let exiting = self.state.job(sub).map(|j| j.state) == Some(JobState::Exiting);
                    if exiting && !force {
                        continue;
                    }
                    if let Err(e) = self.delete_one(sub, caller, (force, purge), now) {
                        first_error.get_or_insert(e);
                    }
                }
            }
            if let Err(e) = self.delete_one(id, caller, (force, purge), now) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn delete_one(
        &mut self,
        id: JobId,
        caller: &Caller,
        (force, purge): (bool, bool),
        now: Now,
    ) -> Result<(), CommandError> {
        let (state, host) = match self.state.job(id) {
            Some(job) => (
                job.state,
                self.state.job_host(job).unwrap_or_default().to_string(),
            ),
            None => (JobState::Finished, String::new()),
        };
        if purge && state == JobState::Finished {
            return self.forget(id, caller, now);
        }
        let was_exiting = state == JobState::Exiting;
        let away = state.is_active() && !self.links.is_connected(&host);
        if force && state.is_active() && (was_exiting || away) {
            if let Some(job) = self.state.job(id)
                && !caller.may_act_on(job)
            {
                return Err(qmesh_core::CoreError::NotYourJob {
                    id: self.state.full_id(id),
                    owner: job.owner.user.clone(),
                    action: "delete".into(),
                }
                .into());
            }
            if was_exiting {
                self.logs.deleted(&self.state, id, &caller.user, now.wall);
            } else {
                // Exiting now (logged D), its kill waiting for the agent.
                self.act_on(JobAction::Delete, id, caller, now)?;
            }
            self.force_end(id, &host, caller, now);
        } else {
            self.act_on(JobAction::Delete, id, caller, now)?;
        }
        if purge {
            match self.state.job(id).map(|j| j.state) {
                Some(JobState::Finished) => self.forget(id, caller, now)?,
                Some(_) => {
                    self.purge_on_end.insert(id);
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Ends an exiting job now, as deleted; the run on `host` is stale.
    fn force_end(&mut self, id: JobId, host: &str, caller: &Caller, now: Now) {
        let why = format!(
            "deleted by {} with qdel -W force; the agent of host {host} did not confirm the end",
            caller.user
        );
        warn!(job = %id, host, user = %caller.user, "job removed without its agent's word (qdel -W force)");
        let exit = JobExit {
            code: None,
            signal: None,
            cause: ExitCause::Deleted,
            message: why,
            cput: None,
            max_rss: None,
            vmem: None,
        };
        let event = DispatchEvent::EndWithoutAgent {
            job: id,
            host: host.to_string(),
            exit,
        };
        self.dispatch_at(event, now);
    }

    /// qdel -x on a finished job: gone from the state and the store.
    fn forget(&mut self, id: JobId, caller: &Caller, now: Now) -> Result<(), CommandError> {
        self.state.forget(id, caller)?;
        if let Err(e) = self.durability.store().remove_jobs(&[id]) {
            error!(job = %id, error = %e, "could not remove the job's history from the store");
        }
        info!(job = %id, user = %caller.user, "history deleted");
        let text = format!(
            "Job history deleted at request of {}@{}",
            caller.user,
            self.state.server_name()
        );
        self.logs
            .event(&self.state, (id, EventClass::Job), text, now.wall);
        Ok(())
    }

    /// After a job finished: its history goes if qdel -x asked.
    pub(super) fn purge_if_asked(&mut self, id: JobId) {
        if self.purge_on_end.remove(&id) && self.state.remove_finished(id) {
            if let Err(e) = self.durability.store().remove_jobs(&[id]) {
                error!(job = %id, error = %e, "could not remove the job's history from the store");
            }
            info!(job = %id, "history deleted (qdel -x)");
        }
    }
}
