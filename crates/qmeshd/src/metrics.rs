//! Prometheus metrics (`[daemon] metrics_listen`, off by default): GET
//! /metrics in the OpenMetrics text format, which Prometheus scrapes.
//!
//! Two kinds. What describes the state now (jobs by state and queue,
//! nodes by state and node set, agents connected, the oldest queued
//! job's wait, utilization) is read from the state at each scrape: the
//! handler asks the scheduler task to refresh those gauges, as any
//! request asks it, so a scrape costs one trip to the task and no lock on
//! the state. What happens over time (pass durations, starts per pass,
//! submissions to their durable reply, the store's flushes) goes into
//! histograms as it happens. Names follow Prometheus's conventions: a
//! `qmesh_` prefix, base units (seconds), a ratio for utilization.

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct JobLabels {
    pub state: String,
    pub queue: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodeLabels {
    pub state: String,
    pub node_set: String,
}

/// A gauge of a fractional value (seconds, ratios).
type FloatGauge = Gauge<f64, AtomicU64>;

/// Every metric qmeshd exports, with the registry that encodes them.
pub struct Metrics {
    registry: Registry,
    pub jobs: Family<JobLabels, Gauge>,
    pub nodes: Family<NodeLabels, Gauge>,
    pub agents_connected: Gauge,
    pub oldest_queued_wait: FloatGauge,
    pub utilization: FloatGauge,
    pub pass_duration: Histogram,
    pub pass_starts: Histogram,
    pub submission_duration: Histogram,
    pub flush_duration: Histogram,
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("qmesh");
        let jobs = Family::<JobLabels, Gauge>::default();
        registry.register(
            "jobs",
            "Jobs by state (queued, held, waiting, running, exiting, begun; finished ones kept for qstat -x) and queue",
            jobs.clone(),
        );
        let nodes = Family::<NodeLabels, Gauge>::default();
        registry.register(
            "nodes",
            "Nodes by state, as pbsnodes says it (free, job-busy, busy, down, offline, draining, drained), and node set",
            nodes.clone(),
        );
        let agents_connected = Gauge::default();
        registry.register(
            "agents_connected",
            "Hosts whose agent has a session with the daemon",
            agents_connected.clone(),
        );
        let oldest_queued_wait = FloatGauge::default();
        registry.register(
            "oldest_queued_job_wait_seconds",
            "How long the longest-waiting pending job has waited (0 when none waits)",
            oldest_queued_wait.clone(),
        );
        let utilization = FloatGauge::default();
        registry.register(
            "utilization_ratio",
            "Nodes holding a job over all nodes, now",
            utilization.clone(),
        );
        // 100 us to about 6.5 s.
        let seconds = || Histogram::new(exponential_buckets(0.0001, 2.0, 17));
        let pass_duration = seconds();
        registry.register(
            "scheduling_pass_duration_seconds",
            "Time of one scheduling pass, its plan applied",
            pass_duration.clone(),
        );
        let pass_starts = Histogram::new(exponential_buckets(1.0, 2.0, 12));
        registry.register(
            "scheduling_pass_starts",
            "Jobs a scheduling pass started",
            pass_starts.clone(),
        );
        let submission_duration = seconds();
        registry.register(
            "submission_duration_seconds",
            "From a submission's arrival to its reply, once the job is durable",
            submission_duration.clone(),
        );
        let flush_duration = seconds();
        registry.register(
            "store_flush_duration_seconds",
            "Time the store took to apply and flush one batch of changes",
            flush_duration.clone(),
        );
        Metrics {
            registry,
            jobs,
            nodes,
            agents_connected,
            oldest_queued_wait,
            utilization,
            pass_duration,
            pass_starts,
            submission_duration,
            flush_duration,
        }
    }

    /// The text a scrape gets.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String does not fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// Serves GET /metrics on `listener`; `refresh` brings the gauges up to
/// date before each scrape.
pub async fn serve<F, Fut>(
    listener: tokio::net::TcpListener,
    metrics: Arc<Metrics>,
    refresh: F,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()>
where
    F: Fn() -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    use axum::http::header::CONTENT_TYPE;
    use axum::routing::get;
    let app = axum::Router::new().route(
        "/metrics",
        get(move || {
            let metrics = metrics.clone();
            let refresh = refresh.clone();
            async move {
                refresh().await;
                (
                    [(
                        CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    metrics.encode(),
                )
            }
        }),
    );
    axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await
}
