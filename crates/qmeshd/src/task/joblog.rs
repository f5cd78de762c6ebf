//! What the scheduler task writes in PBS's job logs (see `crate::joblog`
//! for how they are written): an accounting record at each step of a job
//! (queued, started, ended, requeued, deleted, aborted, held, released)
//! and a server event in PBS's words, which tracejob shows beside the
//! records. None waits for the disk.
//!
//! An accounting record is never written before what it records is in
//! the store: the records of a turn of the task wait in `pending_records`
//! and are handed to the store's writer at the end of the turn, which
//! passes them to the log's writer once every change queued before them
//! (the turn's own) is durable. A crash can so lose the last records of
//! changes that were durable, never show one the store does not have.

use chrono::Utc;
use qmesh_core::JobId;
use qmesh_core::joblog::{self, EndedRun, EventClass, RecordType};
use qmesh_core::state::Finished;

use super::SchedulerTask;

/// An accounting record waiting for the changes it records to be durable.
pub(super) struct PendingRecord {
    at: qmesh_core::Time,
    kind: RecordType,
    id: String,
    text: String,
}

impl SchedulerTask {
    /// Queues an accounting record for the end of this turn.
    pub(super) fn record(&self, at: qmesh_core::Time, kind: RecordType, id: &str, text: String) {
        self.pending_records.borrow_mut().push(PendingRecord {
            at,
            kind,
            id: id.to_string(),
            text,
        });
    }

    /// Hands this turn's records to the store's writer, which passes them
    /// to the log once the turn's changes are durable.
    pub(super) fn flush_records(&self) {
        let records = std::mem::take(&mut *self.pending_records.borrow_mut());
        if records.is_empty() {
            return;
        }
        let sender = self.joblog.records();
        self.store.on_durable(Box::new(move |result| match result {
            Ok(()) => {
                for r in records {
                    sender.record(r.at, r.kind, r.id, r.text);
                }
            }
            Err(e) => tracing::error!(
                error = %e,
                records = records.len(),
                "accounting records not written: the changes they record are not durable"
            ),
        }));
    }

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
        self.record(now, RecordType::Queued, &full, joblog::queued(job, server));
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
        self.record(
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
        self.record(now, kind, &full, joblog::ended(job, server, run));
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
        self.record(
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
        self.record(
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
        self.record(now, RecordType::Aborted, &full, why.to_string());
    }

    /// A server event about a job, no record: holds, moves, signals,
    /// reorders.
    pub(super) fn log_event(&self, id: JobId, class: EventClass, text: String) {
        let full = self.state.full_id(id);
        self.joblog.event(Utc::now(), class, &full, text);
    }
}
