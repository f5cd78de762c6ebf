//! When the store cannot write (a full or failing disk): the daemon's
//! memory would run ahead of its disk. So the first turn that could not be
//! made durable puts the daemon in read-only mode, said once in its log:
//! - changes from clients (qsub, qdel, qhold, qrls, qalter, qmove, qorder,
//!   qrun, qrerun, qsub -I) are refused with the reason and the store's
//!   directory; queries go on answering;
//! - no pass starts a job;
//! - running jobs go on; their ends are taken in memory but not
//!   acknowledged to the agents, so each stays in its host's spool, and
//!   launches whose start was not durable are not sent.
//!
//! sled does not write again in the same process once an I/O error has
//! reached it. So every few seconds the task reopens the store and writes
//! the whole state back (every job, the configuration, the usage) in one
//! batch; once that is durable the disk and the memory agree again, the
//! daemon takes changes, sends the launches and acknowledgements it held
//! back, and says so. A restart of qmeshd works as well: it loads the
//! last durable state and the agents report again the ends they kept.

use std::time::{Duration, Instant};

use qmesh_store::{Change, Store, StoreError};
use tracing::{error, info, warn};

use super::SchedulerTask;
use crate::event::{AfterDurable, Event};

/// How often a read-only daemon tries its store again.
const RETRY: Duration = Duration::from_secs(2);

impl SchedulerTask {
    /// What a turn tells the task if its writes could not be made durable.
    pub(super) fn failure_watch(&self) -> Box<dyn FnOnce(StoreError) + Send> {
        let tx = self.durable_tx.clone();
        Box::new(move |e| {
            let _ = tx.send(vec![AfterDurable::NotDurable {
                items: Vec::new(),
                why: e.to_string(),
            }]);
        })
    }

    /// Enters read-only mode (once) and keeps `items` back.
    pub(super) fn not_durable(&mut self, items: Vec<AfterDurable>, why: String) {
        if self.read_only.is_none() {
            error!(
                store = %self.settings.store_dir.display(),
                error = %why,
                "the store cannot write: qmeshd refuses changes and starts no job until it can write again (it tries every few seconds); running jobs go on and their ends wait in the agents' spools"
            );
            self.read_only = Some(why);
        }
        for item in items {
            match item {
                AfterDurable::NotDurable { items, why } => self.not_durable(items, why),
                other => self.held_back.push(other),
            }
        }
    }

    /// In read-only mode, at most every [`RETRY`]: reopens the store and
    /// writes the whole state back.
    pub(super) fn try_recover(&mut self) {
        if self.read_only.is_none() || self.last_recovery.is_some_and(|at| at.elapsed() < RETRY) {
            return;
        }
        self.last_recovery = Some(Instant::now());
        if let Err(e) = self.store.reopen() {
            tracing::debug!(error = %e, "the store does not open again yet");
            return;
        }
        self.drop_unconfirmed_submissions();
        let mut changes = Vec::new();
        for job in self.state.jobs() {
            match Change::job(job) {
                Ok(c) => changes.push(c),
                Err(e) => {
                    warn!(job = %job.id, error = %e, "a job could not be encoded to be written back")
                }
            }
        }
        changes.extend(Change::config(self.state.config()).ok());
        changes.extend(Change::usage(self.state.accounting().usage()).ok());
        let tx = self.durable_tx.clone();
        let done: qmesh_store::OnDurable = Box::new(move |result| {
            if result.is_ok() {
                let _ = tx.send(vec![AfterDurable::Resynced]);
            }
        });
        self.store
            .end_turn_watched(changes, Some(done), Some(self.failure_watch()));
    }

    /// A job whose submission met the full disk was answered "not
    /// confirmed", and its script never reached the store: it ends now,
    /// before the state is written back, rather than fail at its launch.
    fn drop_unconfirmed_submissions(&mut self) {
        let unconfirmed: Vec<qmesh_core::JobId> = self
            .state
            .jobs()
            .filter(|job| job.state.is_pending() && job.id.array_parent().is_none())
            .filter(|job| matches!(self.store.payload(job.id), Ok(None)))
            .map(|job| job.id)
            .collect();
        let daemon = qmesh_core::access::Caller {
            uid: 0,
            gid: 0,
            user: "qmeshd".into(),
            group: "root".into(),
            role: qmesh_core::access::Role::Manager,
        };
        let now = chrono::Utc::now();
        for id in unconfirmed {
            if self.state.delete(id, &daemon, now).is_ok() {
                let comment = "its submission met a full disk and was not confirmed \
                               (qsub said so); it will not run: submit it again";
                self.state.set_comment(id, comment);
                warn!(job = %id, "dropped: {comment}");
            }
        }
    }

    /// The whole state is durable again.
    pub(super) fn resynced(&mut self) {
        if self.read_only.take().is_none() {
            return;
        }
        info!(
            jobs = self.state.jobs().count(),
            "the store writes again and holds the whole state: changes are taken again"
        );
        let held = std::mem::take(&mut self.held_back);
        self.after_durable(held);
        self.dirty = true;
    }

    /// Why changes are refused now, as a client is told it.
    fn refusal(&self) -> Option<tonic::Status> {
        let why = self.read_only.as_ref()?;
        Some(tonic::Status::unavailable(format!(
            "qmeshd cannot write its store in {} ({why}); it refuses changes until the disk works again (it tries every few seconds); running jobs go on",
            self.settings.store_dir.display()
        )))
    }

    /// In read-only mode, answers a change with the refusal; gives back
    /// every other event.
    pub(super) fn refuse_if_read_only(&self, event: Event) -> Option<Event> {
        let Some(status) = self.refusal() else {
            return Some(event);
        };
        match event {
            Event::Submit { reply, .. } => {
                let _ = reply.send(Err(status));
                None
            }
            Event::OpenTask { reply, .. } => {
                let _ = reply.send(Err(status));
                None
            }
            Event::Act { reply, .. }
            | Event::Move { reply, .. }
            | Event::Delete { reply, .. }
            | Event::Rerun { reply, .. }
            | Event::Order { reply, .. }
            | Event::Run { reply, .. }
            | Event::Alter { reply, .. } => {
                let _ = reply.send(Err(status));
                None
            }
            other => Some(other),
        }
    }
}
