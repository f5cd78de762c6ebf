//! What follows a job's end, whatever ended it (its agent's report, qdel,
//! a dependency that can never be met, an array's last sub-job): those
//! waiting for it are answered (spwait, parked attaches), the jobs that
//! depended on it resolved, arrays settled, and mail sent where the job
//! asked for it.

use qmesh_core::joblog::EventClass;
use qmesh_core::{JobId, JobState, Time};
use tracing::info;

use super::SchedulerTask;
use crate::answer::JobSnapshot;
use crate::dispatch::Now;
use crate::mail::MailEvent;

impl SchedulerTask {
    /// Answers those waiting for a job, if it has finished.
    pub(super) fn job_done(&mut self, id: JobId, now: Now) {
        if self.state.job(id).map(|j| j.state) != Some(JobState::Finished) {
            return;
        }
        self.unpark_ended(id);
        let Some(job) = self.state.job(id) else {
            return;
        };
        if let Some(waiting) = self.waiters.remove(&id) {
            let snapshot = self.snapshot(job, now);
            for reply in waiting {
                let _ = reply.send(Ok(snapshot.clone()));
            }
        }
    }

    /// `job` as it stands at `now`, for spwait's answer.
    pub(super) fn snapshot(&self, job: &qmesh_core::Job, now: Now) -> JobSnapshot {
        JobSnapshot {
            job: Box::new(job.clone()),
            server: self.state.server_name().to_string(),
            at: now.wall,
        }
    }

    /// After `id` ended (at `at`): deletes the jobs whose dependency on it
    /// can never be met (and theirs), stores them and answers their
    /// waiters.
    pub(super) fn end_dependents(&mut self, id: JobId, at: Time, now: Now) {
        let resolved = self.state.resolve_dependents(id, at);
        for array in resolved.trimmed {
            // An array that lost sub-jobs (aftercorr) waits on, or has ended.
            if let Some(job) = self.state.job(array) {
                info!(job = %array, comment = %job.comment, "sub-jobs can never start");
                self.durability.persist(job);
            }
        }
        for dependent in resolved.deleted {
            if let Some(job) = self.state.job(dependent) {
                info!(job = %dependent, comment = %job.comment, "dependency can never be met");
                self.durability.persist(job);
                self.logs
                    .aborted(&self.state, dependent, &job.comment, now.wall);
                self.mail(dependent, MailEvent::Abort, now);
            }
            self.job_done(dependent, now);
        }
    }

    /// Arrays whose last sub-job has just ended (or been deleted): stored,
    /// logged, and what waits on them resolved.
    pub(super) fn settle_arrays(&mut self, now: Now) {
        self.settle_arrays_at(now.wall, now);
    }

    /// [`Self::settle_arrays`], what depends on them resolved as of `at`
    /// (a sub-job's end).
    pub(super) fn settle_arrays_at(&mut self, at: Time, now: Now) {
        for id in self.state.take_ended_arrays() {
            if let Some(job) = self.state.job(id) {
                info!(job = %id, comment = %job.comment, "job array finished");
                self.durability.persist(job);
            }
            let text = "job array finished".to_string();
            self.logs
                .event(&self.state, (id, EventClass::Job), text, now.wall);
            self.job_done(id, now);
            self.end_dependents(id, at, now);
            self.pacing.mark_dirty();
        }
    }

    /// Mails the job's users about `event` if it asked for such mail
    /// (`qsub -m`) and the site has a sendmail.
    pub(super) fn mail(&self, id: JobId, event: MailEvent, now: Now) {
        let Some(sendmail) = self.settings.jobs.sendmail.clone() else {
            return;
        };
        let Some(job) = self.state.job(id) else {
            return;
        };
        if !job.options.mails_at(event.point()) {
            return;
        }
        let full = self.state.full_id(id);
        let from = self.settings.jobs.mail_from.clone();
        let message = crate::mail::compose(job, &full, event, &from, now.wall);
        crate::mail::send(sendmail, from, crate::mail::recipients(job), message, full);
    }
}
