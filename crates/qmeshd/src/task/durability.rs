//! Durability: the task's writes, and what waits for them to be on disk.
//!
//! Every change goes to the store a turn at a time (`turn_store.rs`); an
//! answer, a launch or an acknowledgement that depends on a change waits
//! for the store's writer to say it is durable (the group commit), and then
//! comes back to the task as [`AfterDurable`] or goes straight to its
//! caller. When the store cannot write, the daemon is read-only
//! (`read_only.rs` says what that means and how it ends): this part keeps
//! why, and what was held back meanwhile.

use std::sync::Arc;
use std::time::{Duration, Instant};

use qmesh_core::job::Job;
use qmesh_store::{Store, StoreError};
use tokio::sync::mpsc;
use tracing::error;

use super::turn_store::TurnStore;
use crate::error::TaskError;
use crate::event::{AfterDurable, Reply};

/// How often a read-only daemon tries its store again.
const RETRY: Duration = Duration::from_secs(2);

pub(super) struct Durability {
    store: Arc<TurnStore>,
    /// Where "now durable" comes back to the task.
    after: mpsc::UnboundedSender<Vec<AfterDurable>>,
    /// The store's directory, named when it cannot write.
    /// The store as named in messages (`TaskSettings::store_name`).
    name: String,
    /// Why the store cannot write, once it could not.
    read_only: Option<String>,
    /// Launches and acknowledgements whose changes are not durable.
    held_back: Vec<AfterDurable>,
    /// When a read-only daemon last tried its store again.
    last_recovery: Option<Instant>,
}

impl Durability {
    pub(super) fn new(
        store: Arc<dyn Store>,
        after: mpsc::UnboundedSender<Vec<AfterDurable>>,
        name: String,
    ) -> Durability {
        Durability {
            store: Arc::new(TurnStore::new(store)),
            after,
            name,
            read_only: None,
            held_back: Vec::new(),
            last_recovery: None,
        }
    }

    /// The store, written a turn at a time.
    pub(super) fn store(&self) -> &TurnStore {
        &self.store
    }

    /// Writes a changed job; a failure is logged where it happens.
    pub(super) fn persist(&self, job: &Job) {
        if let Err(e) = self.store.put_job(job) {
            error!(job = %job.id, error = %e, "could not store the job's change");
        }
    }

    /// Queues `after` for when everything written so far is durable.
    pub(super) fn when_durable(&self, after: Vec<AfterDurable>) {
        let tx = self.after.clone();
        self.store.on_durable(Box::new(move |result| {
            let after = match result {
                Ok(()) => after,
                Err(e) => vec![AfterDurable::NotDurable {
                    items: after,
                    why: e.to_string(),
                }],
            };
            let _ = tx.send(after);
        }));
    }

    /// Answers `reply` with `answer` once this turn's changes are on disk;
    /// `done` says what was done, for the error when the store cannot
    /// confirm it.
    pub(super) fn answer_when_durable<T: Send + 'static>(
        &self,
        answer: T,
        done: String,
        reply: Reply<T>,
    ) {
        self.store.on_durable(Box::new(move |result| {
            let _ = reply.send(result.map(|()| answer).map_err(|e| {
                TaskError::Unavailable(format!(
                    "{done} but the store could not confirm it is on disk: {e}"
                ))
            }));
        }));
    }

    /// What a turn tells the task if its writes could not be made durable.
    pub(super) fn failure_watch(&self) -> Box<dyn FnOnce(StoreError) + Send> {
        let tx = self.after.clone();
        Box::new(move |e| {
            let _ = tx.send(vec![AfterDurable::NotDurable {
                items: Vec::new(),
                why: e.to_string(),
            }]);
        })
    }

    /// What the task is told once the store holds the whole state again.
    pub(super) fn resync_watch(&self) -> qmesh_store::OnDurable {
        let tx = self.after.clone();
        Box::new(move |result| {
            if result.is_ok() {
                let _ = tx.send(vec![AfterDurable::Resynced]);
            }
        })
    }

    pub(super) fn is_read_only(&self) -> bool {
        self.read_only.is_some()
    }

    /// Why changes are refused now, as a client is told it.
    pub(super) fn refusal(&self) -> Option<TaskError> {
        let why = self.read_only.as_ref()?;
        Some(TaskError::Unavailable(format!(
            "qmeshd cannot write its store {} ({why}); it refuses changes until the store works again (it tries every few seconds); running jobs go on",
            self.name
        )))
    }

    /// Enters read-only mode (said once in the log) and keeps `items` back.
    pub(super) fn not_durable(&mut self, items: Vec<AfterDurable>, why: String) {
        if self.read_only.is_none() {
            error!(
                store = %self.name,
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

    /// Whether a read-only daemon should try its store again at `now`
    /// (at most every [`RETRY`]); the try counts as made.
    pub(super) fn recovery_due(&mut self, now: Instant) -> bool {
        if self.read_only.is_none()
            || self
                .last_recovery
                .is_some_and(|at| now.duration_since(at) < RETRY)
        {
            return false;
        }
        self.last_recovery = Some(now);
        true
    }

    /// The whole state is durable again: read-only mode ends; what was
    /// held back, to be carried out now. `None` if it was not read-only.
    pub(super) fn resynced(&mut self) -> Option<Vec<AfterDurable>> {
        self.read_only.take()?;
        Some(std::mem::take(&mut self.held_back))
    }
}
