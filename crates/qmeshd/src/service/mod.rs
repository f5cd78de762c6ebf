//! The gRPC services. Each handler identifies the caller, turns the request
//! into an event for the scheduler task (in the core's and the daemon's
//! terms, `crate::event`) and awaits its answer, which `reply.rs` makes the
//! wire's reply; no handler touches the state. Pueue's layout: `jobs.rs` here mirrors
//! `task/jobs.rs`, `admin.rs` mirrors `task/admin.rs`.

mod admin;
mod agent;
mod attach;
mod jobs;
mod listing_body;
mod reply;

pub use admin::AdminService;
pub use agent::AgentService;
pub use jobs::JobsService;
pub use listing_body::SharedStatusBody;

use std::sync::Arc;

use tokio::sync::{Semaphore, mpsc, oneshot};
use tonic::Status;

use crate::event::{Event, Reply};
use crate::identity::Identity;
use crate::status::shutting_down;

/// Listings (qstat's Status, spq's Plan) waiting in the task's queue at
/// once. The task takes events in order, and a listing costs it time in
/// proportion to the jobs it lists (about 10 ms for 2,000 jobs on the
/// 2-core machine): with 1,000 qstat callers queued, a submission or an
/// agent's report would wait behind all of their listings (seconds).
/// Callers past this many wait here instead, first come first served,
/// off the task, so a change waits behind at most this many listings;
/// the task still always has the next one queued, so listings are not
/// served more slowly. docs/PERFORMANCE.md, "Under load".
pub const LISTINGS_QUEUED: usize = 4;
static LISTINGS: Semaphore = Semaphore::const_new(LISTINGS_QUEUED);

/// What every service holds: the way to the task, and the identity cache.
#[derive(Clone)]
pub struct Link {
    pub events: mpsc::Sender<Event>,
    pub identity: Arc<Identity>,
    /// What agents on other hosts must prove (challenges, enrolment).
    pub trust: Arc<crate::trust::Trust>,
    /// Job tasks waiting for their agent's end (`attach.rs`).
    pub rendezvous: Arc<attach::Rendezvous>,
    /// The Prometheus metrics, when served.
    pub metrics: Option<Arc<crate::metrics::Metrics>>,
    /// The site's hooks, run here before a request becomes an event.
    pub hooks: crate::site_hooks::SiteHooks,
    /// The listings shared by callers asking the same (qstat storms).
    pub listings: Arc<crate::listings::Listings>,
}

impl Link {
    /// Sends the event `make` builds and awaits the task's reply.
    /// A listing first waits for its turn ([`LISTINGS_QUEUED`]); the
    /// turn is given back once the task has answered, so a caller that
    /// does not read its answer holds none.
    pub async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Event) -> Result<T, Status> {
        let (tx, rx) = oneshot::channel();
        let event = make(tx);
        let _turn = match event {
            Event::Status { .. } | Event::SharedStatus { .. } | Event::Plan { .. } => {
                Some(LISTINGS.acquire().await.map_err(|_| shutting_down())?)
            }
            _ => None,
        };
        self.events.send(event).await.map_err(|_| shutting_down())?;
        Ok(rx.await.map_err(|_| shutting_down())??)
    }
}
