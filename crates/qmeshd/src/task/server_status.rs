//! The daemon's half of `qstat -B`: the server's own status, as PBS shows
//! it (state, job counts, the defaults and limits users meet, and the
//! licences and other resources it bounds: `resources_available.NAME`,
//! `resources_assigned.NAME`).

use chrono::Utc;
use qmesh_core::JobState;
use qmesh_proto::v1;

use super::SchedulerTask;

impl SchedulerTask {
    /// qstat -B.
    pub(super) fn server_status(&self) -> v1::ServerStatusReply {
        let config = self.state.config();
        let attrs = &config.server;
        let mut reply = v1::ServerStatusReply {
            server: self.state.server_name().to_string(),
            server_time: Utc::now().timestamp(),
            server_state: if attrs.scheduling { "Active" } else { "Idle" }.to_string(),
            server_host: host_name(),
            scheduling: attrs.scheduling,
            default_queue: config.default_queue().unwrap_or_default().to_string(),
            scheduler_iteration: attrs.scheduler_iteration,
            job_history_duration: attrs.job_history_duration,
            default_walltime: attrs.default_walltime,
            managers: attrs.managers.clone(),
            operators: attrs.operators.clone(),
            max_user_run: attrs.max_user_run,
            max_group_run: attrs.max_group_run,
            max_user_queued: attrs.max_user_queued,
            max_group_queued: attrs.max_group_queued,
            version: format!("qmesh-{}", env!("CARGO_PKG_VERSION")),
            ..Default::default()
        };
        for queue in config.queues.keys() {
            let counts = self.state.counts(queue);
            reply.transit += counts.transit;
            reply.queued += counts.queued;
            reply.held += counts.held;
            reply.waiting += counts.waiting;
            reply.running += counts.running;
            reply.exiting += counts.exiting;
            reply.total_jobs += counts.total();
        }
        reply.finished = self
            .state
            .jobs()
            .filter(|job| job.state == JobState::Finished)
            .count() as u32;
        let nodes = self.state.nodes();
        reply.nodes_total = nodes.len() as u32;
        reply.nodes_assigned = nodes.iter().filter(|n| !n.jobs.is_empty()).count() as u32;
        reply.resources_available = attrs
            .resources_available
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        reply.resources_assigned =
            qmesh_core::consumable::assigned(self.state.config(), self.state.active_jobs())
                .into_iter()
                .collect();
        reply
    }
}

/// This host's name, as PBS's `server_host`; empty if it cannot be read.
fn host_name() -> String {
    nix::unistd::gethostname()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}
