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
//! reached it, so the way out is a restart of qmeshd once the disk has
//! room: it loads the last durable state and the agents report again the
//! ends they kept.

use qmesh_store::StoreError;
use tracing::error;

use super::SchedulerTask;
use crate::event::{AfterDurable, Event};

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
                "the store cannot write: qmeshd refuses changes and starts no job until it is restarted with a working disk; running jobs go on and their ends wait in the agents' spools"
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

    /// Why changes are refused now, as a client is told it.
    fn refusal(&self) -> Option<tonic::Status> {
        let why = self.read_only.as_ref()?;
        Some(tonic::Status::unavailable(format!(
            "qmeshd cannot write its store in {} ({why}); it refuses changes until the disk works and qmeshd is restarted; running jobs go on",
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
