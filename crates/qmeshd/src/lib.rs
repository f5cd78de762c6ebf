//! qmeshd, the qmesh daemon: it loads the store, starts the scheduler task,
//! serves users on a Unix socket and agents on a Unix socket (the local
//! agent) and optionally TCP, and in single-machine mode runs its own agent.
//!
//! Start-up order matters: the store is loaded and the state rebuilt before
//! any socket accepts, so a client never sees a half-loaded daemon; systemd
//! hears "ready" only once every socket listens.

mod answer;
mod args;
mod dispatch;
mod event;
mod identity;
mod joblog;
mod local_agent;
mod mail;
mod metrics;
mod paths;
mod service;
mod status;
mod task;
mod tls;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use qmesh_core::State;
use qmesh_core::joblog::RecordType;
use qmesh_proto::v1::admin_server::AdminServer;
use qmesh_proto::v1::agent_server::AgentServer;
use qmesh_proto::v1::jobs_server::JobsServer;
use qmesh_store::{SledStore, Store};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_stream::wrappers::UnixListenerStream;
use tonic::transport::Server;
use tracing::{error, info, warn};

/// The largest request a command may send: a submission's largest script
/// and environment (`qmesh_core::submit::sizes`) with room to spare, so
/// that one past those limits is refused in their words.
const MAX_REQUEST_BYTES: usize = 16 << 20;
pub use args::Args;
pub use qmesh_config::{EMBEDDED, Settings};

pub fn main() -> ExitCode {
    let args = Args::parse();
    let filter = tracing_subscriber::EnvFilter::try_new(&args.log_level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    if args.print_default_config {
        print!("{EMBEDDED}");
        return ExitCode::SUCCESS;
    }
    let settings = match &args.config {
        Some(path) => Settings::from_file(path),
        None => Settings::embedded(),
    };
    let settings = match settings {
        Ok(s) => s,
        Err(e) => {
            eprintln!("qmeshd: {e}");
            return ExitCode::from(2);
        }
    };
    for warning in &settings.warnings {
        warn!("configuration: {warning}");
    }
    // The TLS files are read now: a wrong one fails here, and with
    // --check-config, before any state is touched.
    let tls = match settings.tls.as_ref().map(tls::acceptor).transpose() {
        Ok(tls) => tls,
        Err(e) => {
            eprintln!("qmeshd: {e:#}");
            return ExitCode::from(2);
        }
    };
    if args.check_config {
        print_summary(&settings);
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("qmeshd")
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("qmeshd: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args, settings, tls)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("{e:#}");
            eprintln!("qmeshd: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `--check-config`'s summary. Written, not printed: a reader that stops
/// early (`| head`) ends the output, not the process with a panic.
fn print_summary(settings: &Settings) {
    use std::fmt::Write as _;
    let mut out = String::from("configuration is valid\n");
    for set in &settings.node_sets {
        let _ = writeln!(
            out,
            "node set {}: {} nodes, {}{}",
            set.name,
            set.nodes.len(),
            set.topology.describe(),
            if set.attrs == Default::default() {
                String::new()
            } else {
                format!(", {}", set.attrs.describe())
            }
        );
    }
    for group in settings.initial.node_groups.values() {
        let _ = writeln!(out, "node group {}: {}", group.name, group.sets.join(", "));
    }
    for q in settings.initial.queues.values() {
        let _ = writeln!(out, "queue {}: priority {}", q.name, q.priority);
    }
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes());
}

fn short_hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .map(|h| h.split('.').next().unwrap_or("").to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

async fn run(
    args: Args,
    settings: Settings,
    tls: Option<tokio_rustls::TlsAcceptor>,
) -> anyhow::Result<()> {
    let uid = nix::unistd::getuid().as_raw();
    let state_dir = args
        .state_dir
        .clone()
        .or(settings.state_dir.clone())
        .unwrap_or_else(|| paths::default_state_dir(uid));
    paths::ensure_dir(&state_dir, 0o755)?;
    let _lock = paths::StateLock::take(&state_dir)?;
    let store_dir = state_dir.join("store");
    paths::ensure_dir(&store_dir, 0o700)?;

    let loading = Instant::now();
    let store = Arc::new(SledStore::open(&store_dir).context("open the store")?);
    let loaded = store.load().context("load the store")?;
    let mut config = match loaded.config {
        Some(stored) => {
            if stored != settings.initial {
                info!(
                    "the store's queues and server attributes differ from the configuration file's; \
                     the store's (qmgr's) are used; see qmgr -c \"print server\""
                );
            }
            stored
        }
        None => {
            store.put_config(&settings.initial)?;
            settings.initial.clone()
        }
    };
    // Node sets made with qmgr that the file now overlaps are left out.
    let (_, dropped) = qmesh_core::server::merge_sets(&settings.node_sets, &mut config);
    for warning in &dropped {
        warn!("{warning}");
    }
    let server_name = settings.server_name.clone().unwrap_or_else(short_hostname);
    let mut state = State::new(server_name.clone(), config, settings.node_sets.clone())
        .context("build the node sets")?;
    let job_count = loaded.jobs.len();
    let warnings = state.restore(loaded.jobs, loaded.next_id);
    // The records the store kept for the log (its outbox, `task/joblog.rs`):
    // those a crash kept from the log are written now, then the store
    // forgets them. Records are numbered on from the highest kept.
    let kept_upto = loaded.outbox.iter().map(|(seq, _)| *seq).max().unwrap_or(0);
    match joblog::recover_outbox(&state_dir, &loaded.outbox) {
        Ok(n) => {
            if n > 0 {
                warn!(
                    records = n,
                    "accounting records of changes the store had were missing from the log after a crash; written now"
                );
            }
            if kept_upto > 0 {
                store.write(vec![qmesh_store::Change::OutboxWritten(kept_upto)], None);
            }
        }
        Err(e) => warn!(
            error = %e,
            "could not write the accounting records the store kept; they stay there for the next start"
        ),
    }
    // Records of the last durable changes a crash kept from the log (a
    // store from before the outbox, or lines lost from the files).
    let expected = |since: qmesh_core::Time, present: &dyn Fn(RecordType, &str) -> bool| {
        let mut out = Vec::new();
        for job in state.jobs() {
            let due = |at: Option<qmesh_core::Time>| at.is_some_and(|t| t >= since);
            let (q, s, e) = (Some(job.qtime), job.stime, job.end_time);
            if !(due(q) || due(s) || due(e)) {
                continue;
            }
            let id = job.id.full(&server_name);
            let lacking = [
                (q, RecordType::Queued),
                (s, RecordType::Started),
                (e, RecordType::Ended),
            ]
            .iter()
            .any(|(at, kind)| due(*at) && !present(*kind, &id));
            if lacking {
                for (at, kind, text) in qmesh_core::joblog::expected_records(job, &server_name) {
                    out.push((at, kind, id.clone(), text));
                }
            }
        }
        out
    };
    match joblog::recover(&state_dir, expected) {
        Ok(0) => {}
        Ok(n) => warn!(
            records = n,
            "accounting records the last run did not write were written back"
        ),
        Err(e) => warn!(error = %e, "could not check the accounting log against the store"),
    }
    if let Some(usage) = loaded.usage {
        state.restore_usage(usage);
    }
    task::log_restore_warnings(&warnings);
    store.sync().context("flush the store")?;
    info!(
        jobs = job_count,
        ms = loading.elapsed().as_millis() as u64,
        store = %store_dir.display(),
        "state loaded"
    );

    let cluster_key = match &settings.cluster_key_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("read the cluster key {}", path.display()))?
                .trim()
                .to_string(),
        ),
        None => None,
    };
    // Commands relayed by other hosts' agents are believed only with the
    // cluster key or over TLS with client certificates.
    let relay_trust = identity::RelayTrust {
        key: cluster_key.clone(),
        client_certificates: settings.tls.as_ref().is_some_and(|t| t.client_ca.is_some()),
    };
    let (gate_tx, gate_rx) = watch::channel(Arc::new(identity::HostGate::default()));
    let metrics = match &settings.metrics_listen {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("serve metrics on {addr} ([daemon] metrics_listen)"))?;
            let metrics = Arc::new(metrics::Metrics::new());
            let flushes = metrics.clone();
            store.observe_flushes(Box::new(move |took, _changes| {
                flushes.flush_duration.observe(took.as_secs_f64());
            }));
            Some((listener, metrics))
        }
        None => None,
    };
    let (events_tx, events_rx) = mpsc::channel(4096);
    let (durable_tx, durable_rx) = mpsc::unbounded_channel();
    let scheduler = task::SchedulerTask::new(
        state,
        store.clone() as Arc<dyn Store>,
        task::TaskSettings {
            heartbeat_secs: settings.heartbeat_secs,
            lost_after: Duration::from_secs(settings.lost_after_secs.into()),
            pass_interval: Duration::from_millis(settings.pass_interval_ms),
            daemon_uid: uid,
            cluster_key,
            jobs: settings.jobs.clone(),
            file_config: settings.initial.clone(),
            store_dir: store_dir.clone(),
        },
        durable_tx,
    )
    .with_job_log(
        joblog::JobLog::open(&state_dir, &server_name)
            .with_context(|| format!("open the job logs under {}", state_dir.display()))?,
    )
    .with_record_seq(kept_upto + 1)
    .with_host_gate(gate_tx);
    let scheduler = match &metrics {
        Some((_, m)) => scheduler.with_metrics(m.clone()),
        None => scheduler,
    };
    let task_handle = tokio::spawn(scheduler.run(events_rx, durable_rx));

    let link = service::Link {
        events: events_tx.clone(),
        identity: Arc::new(identity::Identity::new(relay_trust, gate_rx)),
        rendezvous: Arc::default(),
        metrics: metrics.as_ref().map(|(_, m)| m.clone()),
    };
    let socket = args
        .socket
        .clone()
        .or(settings.socket.clone())
        .unwrap_or_else(|| qmesh_proto::endpoint::daemon_default_socket(uid));
    let client_listener = paths::bind_socket(&socket, 0o666)?;
    let agent_socket = state_dir.join("agent.sock");
    let agent_listener = paths::bind_socket(&agent_socket, 0o600)?;
    let tcp_listener = match args.listen.clone().or(settings.listen.clone()) {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(&addr)
                .await
                .with_context(|| format!("listen for agents on {addr}"))?,
        ),
        None => None,
    };

    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let mut servers = Vec::new();
    servers.push(tokio::spawn(
        Server::builder()
            // Room for the largest script and environment a submission may
            // carry (qmesh_core::submit::sizes), so that one past them gets
            // the limit's own words, not gRPC's.
            .add_service(
                JobsServer::new(service::JobsService { link: link.clone() })
                    .max_decoding_message_size(MAX_REQUEST_BYTES),
            )
            .add_service(AdminServer::new(service::AdminService {
                link: link.clone(),
            }))
            .serve_with_incoming_shutdown(
                UnixListenerStream::new(client_listener),
                stopped(stop_rx.clone()),
            ),
    ));
    servers.push(tokio::spawn(
        Server::builder()
            .add_service(AgentServer::new(service::AgentService {
                link: link.clone(),
            }))
            .serve_with_incoming_shutdown(
                UnixListenerStream::new(agent_listener),
                stopped(stop_rx.clone()),
            ),
    ));
    if let Some(listener) = tcp_listener {
        // The agents' port also takes the commands other hosts' agents
        // relay (identity.rs says whom it believes).
        let agents = Server::builder()
            .tcp_nodelay(true)
            .add_service(AgentServer::new(service::AgentService {
                link: link.clone(),
            }))
            .add_service(tonic::service::interceptor::InterceptedService::new(
                JobsServer::new(service::JobsService { link: link.clone() })
                    .max_decoding_message_size(MAX_REQUEST_BYTES),
                relayed_only(&link),
            ))
            .add_service(AdminServer::with_interceptor(
                service::AdminService { link: link.clone() },
                relayed_only(&link),
            ));
        match &tls {
            Some(acceptor) => {
                info!(
                    addr = %listener.local_addr()?,
                    client_certificates = settings.tls.as_ref().is_some_and(|t| t.client_ca.is_some()),
                    "listening for agents over TCP with TLS"
                );
                servers.push(tokio::spawn(agents.serve_with_incoming_shutdown(
                    tls::incoming(listener, acceptor.clone()),
                    stopped(stop_rx.clone()),
                )));
            }
            None => {
                info!(addr = %listener.local_addr()?, "listening for agents over TCP");
                // The builder's tcp_nodelay does not reach a listener we
                // bind ourselves: without it a reply in several writes
                // waits out the peer's delayed ACK (40 ms per qstat relayed
                // from a login node).
                let incoming =
                    tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
                servers.push(tokio::spawn(
                    agents.serve_with_incoming_shutdown(incoming, stopped(stop_rx.clone())),
                ));
            }
        }
    }

    if let Some((listener, m)) = metrics {
        info!(addr = %listener.local_addr()?, "serving Prometheus metrics at /metrics");
        let events = events_tx.clone();
        let refresh = move || {
            let events = events.clone();
            async move {
                let (tx, rx) = oneshot::channel();
                if events.send(event::Event::RefreshMetrics(tx)).await.is_ok() {
                    let _ = rx.await;
                }
            }
        };
        let stop = stopped(stop_rx.clone());
        servers.push(tokio::spawn(async move {
            if let Err(e) = metrics::serve(listener, m, refresh, stop).await {
                warn!(error = %e, "the metrics server stopped");
            }
            Ok(())
        }));
    }

    let mut local = None;
    if settings.local_agent && !args.no_local_agent {
        let bin = local_agent::find_agent_bin(
            args.agent_bin.as_deref().or(settings.agent_bin.as_deref()),
        )?;
        let agent = local_agent::LocalAgent {
            bin,
            server_url: format!("unix://{}", agent_socket.display()),
            host: settings.local_host.clone(),
            spool: state_dir.join("agent-spool"),
            log: state_dir.join("agent.log"),
            log_level: args.log_level.clone(),
            cluster_key_file: settings.cluster_key_file.clone(),
            commands_socket: socket.clone(),
        };
        local = Some(tokio::spawn(agent.supervise(stop_rx.clone())));
    }

    if let Err(e) = sd_notify::notify(&[sd_notify::NotifyState::Ready]) {
        warn!(error = %e, "could not tell systemd we are ready");
    }
    info!(socket = %socket.display(), server = %server_name, "qmeshd ready");

    wait_for_signal().await?;
    info!("shutting down");
    let _ = sd_notify::notify(&[sd_notify::NotifyState::Stopping]);
    let _ = stop_tx.send(true);
    let (done_tx, done_rx) = oneshot::channel();
    if events_tx
        .send(event::Event::Shutdown(done_tx))
        .await
        .is_ok()
    {
        let _ = done_rx.await;
    }
    let _ = task_handle.await;
    for server in servers {
        if tokio::time::timeout(Duration::from_secs(3), server)
            .await
            .is_err()
        {
            warn!("a server did not close within 3 s; leaving it");
        }
    }
    if let Some(local) = local {
        let _ = tokio::time::timeout(Duration::from_secs(10), local).await;
    }
    let _ = std::fs::remove_file(&socket);
    let _ = std::fs::remove_file(&agent_socket);
    info!("stopped");
    Ok(())
}

/// On the agents' port, every command (even those that do not ask who
/// calls) must come relayed by an agent of a host let in.
fn relayed_only(
    link: &service::Link,
) -> impl FnMut(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> + Clone + use<> {
    let identity = link.identity.clone();
    move |request| identity.peer(&request).map(|_| request)
}

async fn wait_for_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("watch SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("watch SIGINT")?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}
