//! What the scheduler task writes in PBS's job logs (see `crate::joblog`
//! for how they are written): an accounting record at each step of a job
//! (queued, started, ended, requeued, deleted, aborted) and a server
//! event in PBS's words, which tracejob shows beside the records. Each
//! call queues a line and returns; none waits for the disk.

use chrono::Utc;
use qmesh_core::JobId;
use qmesh_core::joblog::{self, EndedRun, EventClass, RecordType};
use qmesh_core::state::Finished;

use super::SchedulerTask;

impl SchedulerTask {
    /// `Q`, and "Job Queued at request of ...".
    pub(super) fn log_queued(&self, id: JobId, requestor: &str) {
        let Some(job) = self.state.job(id) else {
            return;
        };
        let server = self.state.server_name();
        let full = job.full_id(server);
        let now = Utc::now();
        self.joblog.event(
            now,
            EventClass::Job,
            &full,
            format!(
                "Job Queued at request of {requestor}@{server}, owner = {}@{}, job name = {}, queue = {}",
                job.owner.user,
                if job.submit_host.is_empty() {
                    server
                } else {
                    &job.submit_host
                },
                job.name,
                job.queue
            ),
        );
        self.joblog
            .record(now, RecordType::Queued, &full, joblog::queued(job, server));
    }

    /// `S`, and "Job Run at request of ... on exec_vnode ...".
    pub(super) fn log_started(&self, id: JobId, requestor: &str) {
        let Some(job) = self.state.job(id) else {
            return;
        };
        let server = self.state.server_name();
        let full = job.full_id(server);
        let now = Utc::now();
        self.joblog.event(
            now,
            EventClass::Job,
            &full,
            format!(
                "Job Run at request of {requestor}@{server} on exec_vnode {}",
                job.exec_vnode()
            ),
        );
        self.joblog.record(
            now,
            RecordType::Started,
            &full,
            joblog::started(job, server),
        );
    }

    /// `E` (or `R` when the job is queued again), with the run that
    /// ended; the usage as a job_usage event and the outcome as a job
    /// event.
    pub(super) fn log_ended(&self, id: JobId, run: &EndedRun, how: Finished) {
        let Some(job) = self.state.job(id) else {
            return;
        };
        let server = self.state.server_name();
        let full = job.full_id(server);
        let now = Utc::now();
        let kind = match how {
            Finished::Finished => RecordType::Ended,
            Finished::Requeued => RecordType::Rerun,
        };
        self.joblog.event(
            now,
            EventClass::JobUsage,
            &full,
            format!(
                "Exit_status={} resources_used.walltime={}",
                run.exit_status,
                qmesh_core::time::format_hms(run.end.saturating_sub(run.start).max(0) as u64)
            ),
        );
        self.joblog
            .event(now, EventClass::Job, &full, job.comment.clone());
        self.joblog
            .record(now, kind, &full, joblog::ended(job, server, run));
    }

    /// `D`, and "Job deleted at request of ...".
    pub(super) fn log_deleted(&self, id: JobId, requestor: &str) {
        let server = self.state.server_name();
        let full = self.state.full_id(id);
        let now = Utc::now();
        self.joblog.event(
            now,
            EventClass::Job,
            &full,
            format!("Job deleted at request of {requestor}@{server}"),
        );
        self.joblog.record(
            now,
            RecordType::Deleted,
            &full,
            joblog::deleted(requestor, server),
        );
    }

    /// `H` (a hold set) or `RL` (holds released), with the event line
    /// `text`.
    pub(super) fn log_hold_change(
        &self,
        id: JobId,
        kind: RecordType,
        requestor: &str,
        text: String,
    ) {
        let server = self.state.server_name();
        let full = self.state.full_id(id);
        let now = Utc::now();
        self.joblog.event(now, EventClass::Job, &full, text);
        self.joblog.record(
            now,
            kind,
            &full,
            joblog::hold_changed(requestor, server, "u"),
        );
    }

    /// `A`: the server ended the job on its own (a dependency that can
    /// never be met); `why` in words.
    pub(super) fn log_aborted(&self, id: JobId, why: &str) {
        let full = self.state.full_id(id);
        let now = Utc::now();
        self.joblog
            .event(now, EventClass::Job, &full, why.to_string());
        self.joblog
            .record(now, RecordType::Aborted, &full, why.to_string());
    }

    /// A server event about a job, no record: holds, moves, signals,
    /// reorders.
    pub(super) fn log_event(&self, id: JobId, class: EventClass, text: String) {
        let full = self.state.full_id(id);
        self.joblog.event(Utc::now(), class, &full, text);
    }
}
