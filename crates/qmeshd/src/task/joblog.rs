//! What the scheduler task writes in PBS's job logs (see `crate::joblog`
//! for how they are written): an accounting record at each step of a job
//! (queued, started, ended, requeued, deleted, aborted, held, released,
//! altered) and a server event in PBS's words, which tracejob shows beside
//! the records. None waits for the disk.
//!
//! An accounting record is written with the change it records, never
//! before and never lost: the records of a turn of the task wait in
//! [`JobLogs`], numbered; at the end of the turn they go to the store in
//! the same write as the turn's changes (`turn_store.rs`), so the store's
//! batch holds both or neither, and once that batch is durable they go to
//! the log's writer. The store keeps them (its outbox) until the log's
//! writer has written and flushed them; the task then tells the store to
//! forget them, in a later turn's write. A start after a crash appends the
//! kept records the log lacks (`crate::joblog::recover_outbox`). So a
//! record in the log is of a change in the store, and a change in the
//! store has its record in the log, or in the store on its way there.

use qmesh_core::joblog::{self, EndedRun, EventClass, RecordType};
use qmesh_core::state::Finished;
use qmesh_core::{JobId, State, Time};
use qmesh_store::{Change, StoreError};

use super::turn_store::TurnStore;
use crate::joblog::{JobLog, Kept};

/// An accounting record waiting for the changes it records to be durable.
struct PendingRecord {
    seq: u64,
    at: Time,
    kind: RecordType,
    id: String,
    text: String,
}

/// PBS's job logs as the task writes them: the log's writer, and the
/// store's outbox of the records on their way there.
pub(super) struct JobLogs {
    log: JobLog,
    /// This turn's records, written at its end.
    pending: Vec<PendingRecord>,
    /// The next record's number in the store's outbox.
    next_seq: u64,
    /// The outbox is known written up to here (the store was told).
    confirmed: u64,
}

impl JobLogs {
    /// Writes to `log`, numbering records from `next_seq` on (above every
    /// record the store still keeps).
    pub(super) fn new(log: JobLog, next_seq: u64) -> JobLogs {
        JobLogs {
            log,
            pending: Vec::new(),
            next_seq: next_seq.max(1),
            confirmed: 0,
        }
    }

    /// The log's writer (for tracejob's files and qmgr's audit lines).
    pub(super) fn writer(&self) -> &JobLog {
        &self.log
    }

    /// Queues an accounting record for the end of this turn.
    fn record(&mut self, at: Time, kind: RecordType, id: &str, text: String) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.pending.push(PendingRecord {
            seq,
            at,
            kind,
            id: id.to_string(),
            text,
        });
    }

    /// Ends the turn: its changes and records go to `store` as one write
    /// (with word that the log has the records up to where its writer has
    /// confirmed), and the records to the log once durable; `watch` hears
    /// if the turn could not be made durable.
    pub(super) fn end_turn(
        &mut self,
        store: &TurnStore,
        watch: Box<dyn FnOnce(StoreError) + Send>,
    ) {
        let records = std::mem::take(&mut self.pending);
        if !self.log.writes_records() {
            store.end_turn_watched(Vec::new(), None, Some(watch));
            return;
        }
        let mut extra = Vec::new();
        let confirmed = self.log.confirmed();
        if confirmed > self.confirmed {
            extra.push(Change::OutboxWritten(confirmed));
            self.confirmed = confirmed;
        }
        if records.is_empty() {
            store.end_turn_watched(extra, None, Some(watch));
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
        let sender = self.log.records();
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
        store.end_turn_watched(extra, Some(done), Some(watch));
    }

    /// At exit: waits for the log's writer (5 s at most) and, if it wrote
    /// more than the store was told, says so in a last write (returned to
    /// the caller to make durable).
    pub(super) fn close(&mut self) -> Option<Change> {
        self.log.close(std::time::Duration::from_secs(5));
        let confirmed = self.log.confirmed();
        (confirmed > self.confirmed).then_some(Change::OutboxWritten(confirmed))
    }

    /// `Q`, and "Job Queued at request of ...".
    pub(super) fn queued(&mut self, state: &State, id: JobId, requestor: &str, now: Time) {
        let Some(job) = state.job(id) else {
            return;
        };
        let server = state.server_name();
        let full = job.full_id(server);
        self.log.event(
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
    pub(super) fn started(&mut self, state: &State, id: JobId, requestor: &str, now: Time) {
        let Some(job) = state.job(id) else {
            return;
        };
        let server = state.server_name();
        let full = job.full_id(server);
        self.log.event(
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
    pub(super) fn ended(
        &mut self,
        state: &State,
        id: JobId,
        (run, how): (&EndedRun, Finished),
        now: Time,
    ) {
        let Some(job) = state.job(id) else {
            return;
        };
        let server = state.server_name();
        let full = job.full_id(server);
        let kind = match how {
            Finished::Finished => RecordType::Ended,
            Finished::Requeued => RecordType::Rerun,
        };
        self.log.event(
            now,
            EventClass::JobUsage,
            &full,
            format!(
                "Exit_status={} resources_used.walltime={}",
                run.exit_status,
                qmesh_core::time::format_hms(run.end.saturating_sub(run.start).max(0) as u64)
            ),
        );
        self.log
            .event(now, EventClass::Job, &full, job.comment.clone());
        self.record(now, kind, &full, joblog::ended(job, server, run));
    }

    /// `D`, and "Job deleted at request of ...".
    pub(super) fn deleted(&mut self, state: &State, id: JobId, requestor: &str, now: Time) {
        let server = state.server_name();
        let full = state.full_id(id);
        self.log.event(
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
    pub(super) fn hold_changed(
        &mut self,
        state: &State,
        (id, kind): (JobId, RecordType),
        (requestor, holds): (&str, &str),
        text: String,
        now: Time,
    ) {
        let full = state.full_id(id);
        self.log.event(now, EventClass::Job, &full, text);
        self.record(
            now,
            kind,
            &full,
            joblog::hold_changed(requestor, state.server_name(), holds),
        );
    }

    /// `z` (suspended) or `r` (resumed), with the event line `text`.
    pub(super) fn pause_changed(
        &mut self,
        state: &State,
        (id, kind): (JobId, RecordType),
        requestor: &str,
        text: String,
        now: Time,
    ) {
        let full = state.full_id(id);
        self.log.event(now, EventClass::Job, &full, text);
        if let Some(job) = state.job(id) {
            let keys = joblog::pause_changed(requestor, state.server_name(), job, now);
            self.record(now, kind, &full, keys);
        }
    }

    /// `a` (what changed), and "Job Modified at request of ...".
    pub(super) fn altered(
        &mut self,
        state: &State,
        id: JobId,
        (user, changes): (&str, &[String]),
        now: Time,
    ) {
        let full = state.full_id(id);
        let text = format!("Job Modified at request of {user}@{}", state.server_name());
        self.log.event(now, EventClass::Job, &full, text);
        self.record(now, RecordType::Altered, &full, changes.join(" "));
    }

    /// `A`: the server ended the job on its own (a dependency that can
    /// never be met); `why` in words.
    pub(super) fn aborted(&mut self, state: &State, id: JobId, why: &str, now: Time) {
        let full = state.full_id(id);
        self.log.event(now, EventClass::Job, &full, why.to_string());
        self.record(now, RecordType::Aborted, &full, why.to_string());
    }

    /// A server event about a job, no record: holds, moves, signals,
    /// reorders.
    pub(super) fn event(
        &self,
        state: &State,
        (id, class): (JobId, EventClass),
        text: String,
        now: Time,
    ) {
        self.log.event(now, class, &state.full_id(id), text);
    }
}
