//! The daemon's half of `qstat -B`: the server's own status, as PBS shows
//! it (state, job counts, the defaults and limits users meet, and the
//! licences and other resources it bounds: `resources_available.NAME`,
//! `resources_assigned.NAME`). The service shows the report
//! (`crate::service::reply::server_status`).

use qmesh_core::JobState;
use qmesh_core::state::StateCounts;

use super::SchedulerTask;
use crate::answer::ServerReport;
use crate::dispatch::Now;

impl SchedulerTask {
    /// qstat -B.
    pub(super) fn server_status(&self, now: Now) -> ServerReport {
        let config = self.state.config();
        let mut counts = StateCounts::default();
        for queue in config.queues.keys() {
            let c = self.state.counts(queue);
            counts.transit += c.transit;
            counts.queued += c.queued;
            counts.held += c.held;
            counts.waiting += c.waiting;
            counts.running += c.running;
            counts.exiting += c.exiting;
        }
        let nodes = self.state.nodes();
        ServerReport {
            server: self.state.server_name().to_string(),
            at: now.wall,
            attrs: config.server.clone(),
            default_queue: config.default_queue().unwrap_or_default().to_string(),
            counts,
            finished: self
                .state
                .jobs()
                .filter(|job| job.state == JobState::Finished)
                .count() as u32,
            nodes_total: nodes.len() as u32,
            nodes_assigned: nodes.iter().filter(|n| !n.jobs.is_empty()).count() as u32,
            resources_assigned: qmesh_core::consumable::assigned(
                self.state.config(),
                self.state.active_jobs(),
            ),
        }
    }
}
