//! qmeshd, the qmesh daemon: it loads the store, starts the scheduler task,
//! serves users on a Unix socket and agents on a Unix socket (the local
//! agent) and optionally TCP, and in single-machine mode runs its own agent.
//!
//! Start-up order matters: the store is loaded and the state rebuilt before
//! any socket accepts, so a client never sees a half-loaded daemon; systemd
//! hears "ready" only once every socket listens.

mod answer;
mod args;
mod ca;
/// The wire's messages to and from the core's types: only the daemon
/// converts. Public for the fuzz targets (`fuzz/`), which feed it
/// requests as a client could send them.
#[doc(hidden)]
pub mod convert;
mod dispatch;
mod error;
mod event;
mod identity;
mod joblog;
mod leader;
mod listings;
mod local_agent;
mod mail;
mod metrics;
mod paths;
mod service;
mod site_hooks;
mod start;
mod status;
mod task;
#[cfg(test)]
mod test_machine;
mod tls;
mod trust;

use std::process::ExitCode;

use clap::Parser;
use tokio::sync::watch;
use tracing::{error, info, warn};

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
    let tls = match settings.tls.site().map(tls::acceptor).transpose() {
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

/// The daemon's life, step by step (`start/`): nothing is answered before
/// the state is loaded, and systemd hears "ready" once every socket
/// listens. On the sled store the daemon leads from the start; on etcd it
/// first stands by, serving only refusals that name the leader, until it
/// wins the election (`leader.rs`).
async fn run(
    args: Args,
    settings: Settings,
    tls: Option<tokio_rustls::TlsAcceptor>,
) -> anyhow::Result<()> {
    // Watched from the start: a SIGTERM that comes while a standby takes
    // over is kept until the daemon waits for it.
    let mut signals = start::signals::Signals::watch()?;
    let open_files_started_with = start::open_files::raise(&settings);
    let uid = nix::unistd::getuid().as_raw();
    let dirs = start::load::take_dirs(&args, &settings, uid)?;
    let server_name = start::load::server_name(&settings);
    let store = start::store::OpenStore::open(&settings, &dirs, &server_name)?;
    let metrics = start::bind_metrics(&settings, &store).await?;
    let listening = args.listen.is_some() || settings.listen.is_some();
    let port = tokio::task::block_in_place(|| {
        start::trust::prepare(&settings, &dirs, &store, listening, tls)
    })?;
    let wiring = start::wire(
        metrics.as_ref().map(|m| m.1.clone()),
        port.trust,
        dirs.state.join("hooks"),
    );
    let link = wiring.link.clone();
    let host = start::load::short_hostname();
    let (stop_tx, stop) = watch::channel(false);

    let begin = start::lead::Begin {
        args: &args,
        settings: &settings,
        dirs: &dirs,
        store: &store,
        wiring,
        tls: port.tls,
        stop: &stop,
        host: &host,
    };
    let leading = match &store {
        start::store::OpenStore::Sled(_) => start::lead::alone(begin).await?,
        start::store::OpenStore::Etcd(etcd) => {
            match start::lead::after_standing_by(begin, etcd, &mut signals, &stop_tx).await? {
                Some(leading) => leading,
                None => return Ok(()),
            }
        }
    };
    let start::lead::Leading {
        running,
        sockets,
        mut servers,
        won: leader,
    } = leading;
    if let Some((listener, m)) = metrics {
        servers.push(start::serve::serve_metrics(listener, m, &link, &stop)?);
    }
    let [socket, agent_socket] = &sockets;
    let local_agent = start::serve::start_local_agent(
        &args,
        &settings,
        &dirs,
        (socket, agent_socket),
        open_files_started_with,
        &stop,
    )?;
    match &leader {
        // A standby was "ready" when it began to serve its refusals.
        Some(_) => start::notify_status("leading"),
        None => start::notify_ready(),
    }
    info!(socket = %socket.display(), server = %server_name, "qmeshd ready");

    signals.next().await;
    info!("shutting down");
    start::shut_down(running, servers, local_agent, stop_tx, sockets).await;
    if let Some((won, _role)) = leader {
        // The key goes now: a standby takes over without waiting for the
        // lease to run out.
        if let Err(e) = won.election.resign(won.term).await {
            warn!(error = %e, "could not give up the election; a standby takes over once the lease runs out");
        }
    }
    info!("stopped");
    Ok(())
}
