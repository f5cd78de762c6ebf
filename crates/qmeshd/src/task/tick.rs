//! The task's second: what is done on time rather than on request. A
//! read-only daemon tries its store again; agents silent for three
//! heartbeats are taken for away, and hosts away too long given up
//! (dispatch); finished jobs leave the history; start-after times and
//! `reorder_times` that came wake a pass or a reorder; running jobs whose
//! period ends are warned and ended; with time-dependent orders a pass
//! comes every `scheduler_iteration`.

use std::time::Duration;

use qmesh_store::Store;
use tracing::{error, info, warn};

use super::SchedulerTask;
use crate::dispatch::{DispatchEvent, Now};

impl SchedulerTask {
    pub(super) fn tick(&mut self, now: Now) {
        self.try_recover(now);
        let limit = Duration::from_secs(3 * u64::from(self.settings.heartbeat_secs));
        for host in self.links.drop_silent(now.mono, limit) {
            warn!(
                host,
                "agent missed three heartbeats; its nodes are down until it reconnects"
            );
            self.dispatch_at(DispatchEvent::AgentGone { host }, now);
            self.pacing.mark_dirty();
        }
        self.dispatch_at(DispatchEvent::Tick, now);
        if self.pacing.purge_due(now.mono) {
            let old = self.state.purge_history(now.wall);
            if !old.is_empty() {
                info!(jobs = old.len(), "finished jobs left the history");
                if let Err(e) = self.durability.store().remove_jobs(&old) {
                    error!(error = %e, "could not remove finished jobs from the store");
                }
            }
        }
        if self.pacing.begin_time_came(now.wall) {
            self.pacing.mark_dirty();
            self.set_next_begin(now);
        }
        self.reorder_on_time(now);
        self.enforce_period_ends(now);
        self.enforce_reservations(now);
        let iteration = Duration::from_secs(self.state.config().server.scheduler_iteration);
        self.pacing.iterate(now.mono, iteration);
    }
}
