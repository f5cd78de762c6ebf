//! What the scheduler task writes in PBS's job logs (see `crate::joblog`
//! for how they are written): an accounting record at each step of a job
//! (queued, started, ended, requeued, deleted, aborted, held, released)
//! and a server event in PBS's words, which tracejob shows beside the
//! records. None waits for the disk.
//!
//! An accounting record is written with the change it records, never
//! before and never lost: the records of a turn of the task wait in
//! `pending_records`, numbered; at the end of the turn they go to the
//! store in the same write as the turn's changes (`turn_store.rs`), so
//! the store's batch holds both or neither, and once that batch is
//! durable they go to the log's writer. The store keeps them (its outbox)
//! until the log's writer has written and flushed them; the task then
//! tells the store to forget them, in a later turn's write. A start after
//! a crash appends the kept records the log lacks
//! (`crate::joblog::recover_outbox`). So a record in the log is of a
//! change in the store, and a change in the store has its record in the
//! log, or in the store on its way there.

use chrono::Utc;
use qmesh_core::JobId;
use qmesh_core::joblog::{self, EndedRun, EventClass, RecordType};
use qmesh_core::state::Finished;
use qmesh_store::Change;

use crate::joblog::Kept;

use super::SchedulerTask;

/// An accounting record waiting for the changes it records to be durable.
pub(super) struct PendingRecord {
    seq: u64,
    at: qmesh_core::Time,
    kind: RecordType,
    id: String,
    text: String,
}

impl SchedulerTask {
    /// Queues an accounting record for the end of this turn.
    pub(super) fn record(&self, at: qmesh_core::Time, kind: RecordType, id: &str, text: String) {
        let seq = self.next_record_seq.get();
        self.next_record_seq.set(seq + 1);
        self.pending_records.borrow_mut().push(PendingRecord {
            seq,
            at,
            kind,
            id: id.to_string(),
            text,
        });
    }

    /// Ends the turn: its changes and records go to the store as one
    /// write (with word that the log has the records up to where its
    /// writer has confirmed), and the records to the log once durable.
    pub(super) fn end_turn(&mut self) {
        let records = std::mem::take(&mut *self.pending_records.borrow_mut());
        let watch = Some(self.failure_watch());
        if !self.joblog.writes_records() {
            self.store.end_turn_watched(Vec::new(), None, watch);
            return;
        }
        let mut extra = Vec::new();
        let confirmed = self.joblog.confirmed();
        if confirmed > self.confirmed_records {
            extra.push(Change::OutboxWritten(confirmed));
            self.confirmed_records = confirmed;
        }
        if records.is_empty() {
            self.store.end_turn_watched(extra, None, watch);
            return;
        }
        let mut kept = Vec::with_capacity(records.len());
        for r in &records {
            match qmesh_store::encode(&Kept::new(r.at, r.kind, &r.id, &r.text)) {
                Ok(bytes) => kept.push((r.seq, bytes)),
                // Cannot be (plain strings); the record still goes to the log.
                Err(e) => {
                    tracing::error!(error = %e, job = r.id, "an accounting record could not be kept in the store")
                }
            }
        }
        extra.push(Change::Outbox(kept));
        let sender = self.joblog.records();
        let done: qmesh_store::OnDurable = Box::new(move |result| match result {
            Ok(()) => {
                for r in records {
                    sender.record(r.seq, r.at, r.kind, r.id, r.text);
                }
            }
            // The changes they record are not durable either: the daemon
            // is read-only now (`read_only.rs`, which logs it once).
            Err(e) => tracing::debug!(
                error = %e,
                records = records.len(),
                "accounting records not written: the changes they record are not durable"
            ),
        });
        self.store.end_turn_watched(extra, Some(done), watch);
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

    /// `H` (a hold set) or `RL` (holds released) of `holds` (PBS's
    /// letters), with the event line `text`.
    pub(super) fn log_hold_change(
        &self,
        id: JobId,
        kind: RecordType,
        (requestor, holds): (&str, &str),
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
            joblog::hold_changed(requestor, server, holds),
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
