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
//!
//! Why the daemon is read-only and what it held back are kept by the
//! task's durability part (`durability.rs`); this file is what read-only
//! mode does to requests and how the state is written back.

use qmesh_store::{Change, Store};
use tracing::{info, warn};

use super::SchedulerTask;
use crate::dispatch::Now;
use crate::event::Event;

impl SchedulerTask {
    /// In read-only mode, at most every few seconds: reopens the store and
    /// writes the whole state back.
    pub(super) fn try_recover(&mut self, now: Now) {
        if !self.durability.recovery_due(now.mono) {
            return;
        }
        let store = self.durability.store();
        if let Err(e) = store.reopen() {
            tracing::debug!(error = %e, "the store does not open again yet");
            return;
        }
        self.drop_unconfirmed_submissions(now);
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
        let done = self.durability.resync_watch();
        let watch = self.durability.failure_watch();
        self.durability
            .store()
            .end_turn_watched(changes, Some(done), Some(watch));
    }

    /// A job whose submission met the full disk was answered "not
    /// confirmed", and its script never reached the store: it ends now,
    /// before the state is written back, rather than fail at its launch.
    fn drop_unconfirmed_submissions(&mut self, now: Now) {
        let store = self.durability.store();
        let unconfirmed: Vec<qmesh_core::JobId> = self
            .state
            .jobs()
            .filter(|job| job.state.is_pending() && job.id.array_parent().is_none())
            .filter(|job| matches!(store.payload(job.id), Ok(None)))
            .map(|job| job.id)
            .collect();
        let daemon = qmesh_core::access::Caller {
            uid: 0,
            gid: 0,
            user: "qmeshd".into(),
            group: "root".into(),
            role: qmesh_core::access::Role::Manager,
        };
        for id in unconfirmed {
            if self.state.delete(id, &daemon, now.wall).is_ok() {
                let comment = "its submission met a full disk and was not confirmed \
                               (qsub said so); it will not run: submit it again";
                self.state.set_comment(id, comment);
                warn!(job = %id, "dropped: {comment}");
            }
        }
    }

    /// The whole state is durable again.
    pub(super) fn resynced(&mut self, now: Now) {
        let Some(held) = self.durability.resynced() else {
            return;
        };
        info!(
            jobs = self.state.jobs().count(),
            "the store writes again and holds the whole state: changes are taken again"
        );
        self.after_durable(held, now);
        self.pacing.mark_dirty();
    }

    /// In read-only mode, answers a change with the refusal; gives back
    /// every other event.
    pub(super) fn refuse_if_read_only(&self, event: Event) -> Option<Event> {
        let Some(refusal) = self.durability.refusal() else {
            return Some(event);
        };
        match event {
            Event::Submit { reply, .. } => {
                let _ = reply.send(Err(refusal));
                None
            }
            Event::OpenTask { reply, .. } => {
                let _ = reply.send(Err(refusal));
                None
            }
            Event::Act { reply, .. }
            | Event::Move { reply, .. }
            | Event::Delete { reply, .. }
            | Event::Rerun { reply, .. }
            | Event::Order { reply, .. }
            | Event::Run { reply, .. }
            | Event::Alter { reply, .. } => {
                let _ = reply.send(Err(refusal));
                None
            }
            other => Some(other),
        }
    }
}
