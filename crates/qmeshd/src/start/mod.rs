//! The steps of a daemon's life that `crate::run` names, in order: the
//! open-file limit raised (`open_files.rs`), the state loaded before
//! anything listens (`load.rs`), the agents' port's trust (`trust.rs`:
//! the cluster key, the cluster CA), the scheduler
//! task started over the state (here), the sockets bound and served
//! (`serve.rs`), alone on sled or after standing by on etcd (`lead.rs`),
//! and at the end the shutdown (here).
//!
//! The order matters: a client never sees a half-loaded daemon (on etcd a
//! standby serves before it loads, and its gate refuses everything until
//! it leads: `crate::leader`), and systemd hears "ready" only once every
//! socket listens.

pub mod lead;
pub mod load;
pub mod open_files;
pub mod serve;
pub mod signals;
pub mod store;
pub mod trust;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tracing::warn;

use crate::{event, identity, joblog, metrics, service, task};
use load::{Dirs, Loaded};
use qmesh_config::Settings;

/// The Prometheus endpoint's listener and metrics, when it is configured
/// (`[daemon] metrics_listen`); the store reports its flushes to it.
pub async fn bind_metrics(
    settings: &Settings,
    store: &store::OpenStore,
) -> anyhow::Result<Option<(tokio::net::TcpListener, Arc<metrics::Metrics>)>> {
    let Some(addr) = &settings.metrics_listen else {
        return Ok(None);
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("serve metrics on {addr} ([daemon] metrics_listen)"))?;
    let metrics = Arc::new(metrics::Metrics::new());
    let flushes = metrics.clone();
    store.observe_flushes(Box::new(move |took, _changes| {
        flushes.flush_duration.observe(took.as_secs_f64());
    }));
    Ok(Some((listener, metrics)))
}

/// The running scheduler task and the way the services reach it.
pub struct Running {
    pub link: service::Link,
    pub task: JoinHandle<()>,
}

/// The channels between the services and the scheduler task, made before
/// the task so that the services can be served first (a standby serves
/// its refusals before it leads).
pub struct Wiring {
    pub link: service::Link,
    events: mpsc::Receiver<event::Event>,
    gate: watch::Sender<Arc<identity::HostGate>>,
    hooks: crate::site_hooks::Publisher,
}

/// The services' link to a task yet to start: other hosts are believed as
/// `trust` says; the task publishes which hosts may relay and the site
/// hooks, whose files go under `hooks_dir`.
pub fn wire(
    metrics: Option<Arc<metrics::Metrics>>,
    trust: Arc<crate::trust::Trust>,
    hooks_dir: std::path::PathBuf,
) -> Wiring {
    let (site_hooks, hooks) = crate::site_hooks::SiteHooks::new(hooks_dir);
    let (gate, gate_rx) = watch::channel(Arc::new(identity::HostGate::default()));
    let (events_tx, events) = mpsc::channel(4096);
    let link = service::Link {
        events: events_tx,
        identity: Arc::new(identity::Identity::new(trust.clone(), gate_rx)),
        trust,
        rendezvous: Arc::default(),
        metrics,
        hooks: site_hooks,
        listings: Arc::default(),
    };
    Wiring {
        link,
        events,
        gate,
        hooks,
    }
}

/// Starts the scheduler task over the loaded state: it writes the job
/// logs (under `dirs.logs`), publishes which hosts may relay commands,
/// keeps the link's metrics up to date, and tells agents `term`.
pub fn start_task(
    loaded: Loaded,
    wiring: Wiring,
    dirs: &Dirs,
    settings: &Settings,
    term: i64,
) -> anyhow::Result<Running> {
    let uid = nix::unistd::getuid().as_raw();
    let (durable_tx, durable_rx) = mpsc::unbounded_channel();
    let job_log = joblog::JobLog::open(&dirs.logs, &loaded.server_name)
        .with_context(|| format!("open the job logs under {}", dirs.logs.display()))?;
    let task_settings = task::TaskSettings {
        heartbeat_secs: settings.heartbeat_secs,
        lost_after: Duration::from_secs(settings.lost_after_secs.into()),
        pass_interval: Duration::from_millis(settings.pass_interval_ms),
        daemon_uid: uid,
        jobs: settings.jobs.clone(),
        file_config: settings.initial.clone(),
        store_name: loaded.store.describe(dirs),
        term,
    };
    let store = loaded.store.as_store();
    let now = task::read_clock();
    let mut scheduler =
        task::SchedulerTask::new(loaded.state, store, task_settings, durable_tx, now)
            .with_job_log(job_log, loaded.next_record)
            .with_host_gate(wiring.gate)
            .with_listing_generation(wiring.link.listings.generation())
            .with_site_hooks(wiring.hooks, wiring.link.hooks.clone(), &wiring.link.events);
    if let Some(m) = &wiring.link.metrics {
        scheduler = scheduler.with_metrics(m.clone());
    }
    let task = tokio::spawn(scheduler.run(wiring.events, durable_rx));
    tokio::spawn(crate::site_hooks::periodic::run(wiring.link.hooks.clone()));
    Ok(Running {
        link: wiring.link,
        task,
    })
}

/// Where agents and login nodes reach this daemon when it leads, as a
/// standby tells them: `[store] advertise`, or this host and the port of
/// `[agents] listen` (https unless `tls = false`).
pub fn advertised(settings: &Settings, listen: Option<&str>, host: &str) -> Option<String> {
    if let qmesh_config::StoreSettings::Etcd(e) = &settings.store
        && let Some(url) = &e.advertise
    {
        return Some(url.clone());
    }
    let listen = listen.or(settings.listen.as_deref())?;
    let port = listen.rsplit(':').next()?;
    let scheme = if settings.tls == qmesh_config::AgentTls::Off {
        "http"
    } else {
        "https"
    };
    Some(format!("{scheme}://{host}:{port}"))
}

/// Tells systemd what the daemon is doing now (a standby that took over:
/// "leading"); nobody listening is no matter.
pub fn notify_status(status: &str) {
    let _ = sd_notify::notify(&[sd_notify::NotifyState::Status(status)]);
}

/// Tells systemd the daemon is ready (every socket listens).
pub fn notify_ready() {
    if let Err(e) = sd_notify::notify(&[sd_notify::NotifyState::Ready]) {
        warn!(error = %e, "could not tell systemd we are ready");
    }
}

/// Stops serving, lets the task make the store durable and write out the
/// job logs, and waits (with deadlines) for the servers and the local
/// agent; the sockets' files go.
pub async fn shut_down(
    running: Running,
    servers: Vec<serve::Served>,
    local_agent: Option<JoinHandle<()>>,
    stop: watch::Sender<bool>,
    sockets: [std::path::PathBuf; 2],
) {
    let _ = sd_notify::notify(&[sd_notify::NotifyState::Stopping]);
    let _ = stop.send(true);
    let (done_tx, done_rx) = oneshot::channel();
    if running
        .link
        .events
        .send(event::Event::Shutdown(done_tx))
        .await
        .is_ok()
    {
        let _ = done_rx.await;
    }
    let _ = running.task.await;
    for server in servers {
        if tokio::time::timeout(Duration::from_secs(3), server)
            .await
            .is_err()
        {
            warn!("a server did not close within 3 s; leaving it");
        }
    }
    if let Some(local) = local_agent {
        let _ = tokio::time::timeout(Duration::from_secs(10), local).await;
    }
    for socket in sockets {
        let _ = std::fs::remove_file(&socket);
    }
}
