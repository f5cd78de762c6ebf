//! The gRPC services. Each handler identifies the caller, turns the request
//! into an event for the scheduler task and awaits its answer; no handler
//! touches the state. Pueue's layout: `jobs.rs` here mirrors
//! `task/jobs.rs`, `admin.rs` mirrors `task/admin.rs`.

mod admin;
mod agent;
mod attach;
mod jobs;

pub use admin::AdminService;
pub use agent::AgentService;
pub use jobs::JobsService;

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tonic::Status;

use crate::event::{Event, Reply};
use crate::identity::Identity;
use crate::status::shutting_down;

/// What every service holds: the way to the task, and the identity cache.
#[derive(Clone)]
pub struct Link {
    pub events: mpsc::Sender<Event>,
    pub identity: Arc<Identity>,
    /// Job tasks waiting for their agent's end (`attach.rs`).
    pub rendezvous: Arc<attach::Rendezvous>,
    /// The Prometheus metrics, when served.
    pub metrics: Option<Arc<crate::metrics::Metrics>>,
}

impl Link {
    /// Sends the event `make` builds and awaits the task's reply.
    pub async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Event) -> Result<T, Status> {
        let (tx, rx) = oneshot::channel();
        self.events
            .send(make(tx))
            .await
            .map_err(|_| shutting_down())?;
        rx.await.map_err(|_| shutting_down())?
    }
}
