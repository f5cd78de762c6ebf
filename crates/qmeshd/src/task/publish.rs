//! What the task publishes for the rest of the daemon, which never reads
//! the state itself: the Prometheus gauges (refreshed when a scrape asks,
//! `crate::metrics`) and the hosts that may relay commands (checked by the
//! services on every relayed request, `crate::identity`) and the site
//! hooks (run by the services, `crate::site_hooks`), both sent again
//! after every qmgr change.

use std::sync::Arc;
use std::time::Duration;

use qmesh_core::{State, Time};
use tokio::sync::watch;

use crate::identity::HostGate;
use crate::metrics::{JobLabels, Metrics, NodeLabels};

#[derive(Default)]
pub(super) struct Published {
    metrics: Option<Arc<Metrics>>,
    gate: Option<watch::Sender<Arc<HostGate>>>,
    hooks: Option<crate::site_hooks::Publisher>,
    /// Moved on after every turn that may have changed a listing.
    generation: Arc<crate::listings::Generation>,
}

impl Published {
    pub(super) fn set_metrics(&mut self, metrics: Arc<Metrics>) {
        self.metrics = Some(metrics);
    }

    pub(super) fn set_host_gate(&mut self, gate: watch::Sender<Arc<HostGate>>) {
        self.gate = Some(gate);
    }

    pub(super) fn set_listing_generation(&mut self, generation: Arc<crate::listings::Generation>) {
        self.generation = generation;
    }

    /// The generation of what the task shows now.
    pub(super) fn listing_generation(&self) -> u64 {
        self.generation.current()
    }

    /// What the task does next may change what a listing shows.
    pub(super) fn changed(&self) {
        self.generation.advance();
    }

    pub(super) fn set_site_hooks(&mut self, hooks: crate::site_hooks::Publisher) {
        self.hooks = Some(hooks);
    }

    /// The configuration's site hooks, for the services to run.
    pub(super) fn site_hooks(&self, state: &State) {
        if let Some(hooks) = &self.hooks {
            crate::site_hooks::publish(hooks, state.server_name(), &state.config().hooks);
        }
    }

    /// Which hosts may relay commands, as the state's configuration and
    /// nodes say now.
    pub(super) fn host_gate(&self, state: &State) {
        let Some(gate) = &self.gate else { return };
        let compute_hosts = state.nodes().iter().map(|n| n.host.to_string()).collect();
        gate.send_replace(Arc::new(HostGate {
            server: state.config().server.clone(),
            compute_hosts,
        }));
    }

    /// A pass's cost and how many jobs it started.
    pub(super) fn pass(&self, cost: Duration, starts: usize) {
        if let Some(metrics) = &self.metrics {
            metrics.pass_duration.observe(cost.as_secs_f64());
            metrics.pass_starts.observe(starts as f64);
        }
    }

    /// The gauges of the state as it is at `now`, for a scrape.
    pub(super) fn refresh_metrics(&self, state: &State, agents: usize, now: Time) {
        let Some(m) = &self.metrics else { return };
        m.jobs.clear();
        for job in state.jobs() {
            m.jobs
                .get_or_create(&JobLabels {
                    state: job.state.to_string().replace(' ', "_"),
                    queue: job.queue.to_string(),
                })
                .inc();
        }
        m.nodes.clear();
        let sets = state.node_sets();
        let mut busy = 0usize;
        for node in state.nodes() {
            if node.job().is_some() {
                busy += 1;
            }
            let set = sets
                .get(node.set)
                .map(|s| s.name.to_string())
                .unwrap_or_default();
            m.nodes
                .get_or_create(&NodeLabels {
                    state: node.state_name().to_string(),
                    node_set: set,
                })
                .inc();
        }
        let all = state.nodes().len();
        m.utilization.set(if all == 0 {
            0.0
        } else {
            busy as f64 / all as f64
        });
        m.agents_connected.set(agents as i64);
        let oldest = state
            .pending_jobs()
            .map(|j| (now - j.qtime).num_milliseconds())
            .max()
            .unwrap_or(0)
            .max(0);
        m.oldest_queued_wait.set(oldest as f64 / 1000.0);
    }
}
