//! Start-up, once the state is loaded: the sockets bound and the gRPC
//! servers started on them (commands on the clients' Unix socket, the
//! local agent on its own, other hosts' agents and relayed commands on
//! TCP, with TLS unless turned off), the Prometheus endpoint, and the local
//! agent in single-machine mode. Every server stops when `stop` turns
//! true.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use qmesh_proto::served::jobs_server::JobsServer;
use qmesh_proto::v1::admin_server::AdminServer;
use qmesh_proto::v1::agent_server::AgentServer;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Server;
use tracing::{info, warn};

use super::load::Dirs;
use crate::args::Args;
use crate::identity::Vouched;
use crate::{event, leader, local_agent, metrics, paths, service, tls};
use qmesh_config::Settings;

/// The largest request a command may send: a submission's largest script
/// and environment (`qmesh_core::submit::sizes`) with room to spare, so
/// that one past those limits is refused in their words.
const MAX_REQUEST_BYTES: usize = 16 << 20;

/// A server's task; each ends when `stop` turns true.
pub type Served = JoinHandle<Result<(), tonic::transport::Error>>;

/// The sockets, bound before anything is served.
pub struct Sockets {
    /// The commands' socket, and its path.
    pub clients: (tokio::net::UnixListener, PathBuf),
    /// The local agent's socket, and its path.
    pub agent: (tokio::net::UnixListener, PathBuf),
    /// Other hosts' agents, if the daemon listens for them.
    pub tcp: Option<tokio::net::TcpListener>,
}

impl Sockets {
    pub async fn bind(args: &Args, settings: &Settings, dirs: &Dirs) -> anyhow::Result<Sockets> {
        let uid = nix::unistd::getuid().as_raw();
        let socket = args
            .socket
            .clone()
            .or(settings.socket.clone())
            .unwrap_or_else(|| qmesh_proto::endpoint::daemon_default_socket(uid));
        let clients = paths::bind_socket(&socket, 0o666)?;
        let agent_socket = dirs.state.join("agent.sock");
        let agent = paths::bind_socket(&agent_socket, 0o600)?;
        let tcp = match args.listen.clone().or(settings.listen.clone()) {
            Some(addr) => Some(
                tokio::net::TcpListener::bind(&addr)
                    .await
                    .with_context(|| format!("listen for agents on {addr}"))?,
            ),
            None => None,
        };
        Ok(Sockets {
            clients: (clients, socket),
            agent: (agent, agent_socket),
            tcp,
        })
    }
}

impl Sockets {
    /// The socket files, removed at the end.
    pub fn files(&self) -> [PathBuf; 2] {
        [self.clients.1.clone(), self.agent.1.clone()]
    }
}

/// Resolves when `stop` turns true.
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|stop| *stop).await;
}

/// Serves the commands and the agents on `sockets` until `stop`. Every
/// service passes the leader's gate (`leader::gate`): only while `role`
/// says this daemon leads are requests let through.
pub fn serve(
    sockets: Sockets,
    link: &service::Link,
    tls: Option<(tokio_rustls::TlsAcceptor, tls::Pki)>,
    stop: &watch::Receiver<bool>,
    role: (&watch::Receiver<leader::Role>, &str),
) -> anyhow::Result<Vec<Served>> {
    let gate = leader::gate(role.0.clone(), role.1.to_string());
    let jobs = || {
        // Room for the largest script and environment a submission may
        // carry, so that one past them gets the limit's own words.
        let service = service::JobsService { link: link.clone() };
        let server = JobsServer::new(service.clone()).max_decoding_message_size(MAX_REQUEST_BYTES);
        // qstat's listings sent as the one shared encoding.
        service::SharedStatusBody::new(server, service)
    };
    let admin = || service::AdminService { link: link.clone() };
    let agents = || {
        AgentServer::with_interceptor(service::AgentService { link: link.clone() }, gate.clone())
    };
    let mut servers = vec![
        tokio::spawn(
            Server::builder()
                .add_service(InterceptedService::new(jobs(), gate.clone()))
                .add_service(AdminServer::with_interceptor(admin(), gate.clone()))
                .serve_with_incoming_shutdown(
                    UnixListenerStream::new(sockets.clients.0),
                    stopped(stop.clone()),
                ),
        ),
        tokio::spawn(
            Server::builder()
                .add_service(agents())
                .serve_with_incoming_shutdown(
                    UnixListenerStream::new(sockets.agent.0),
                    stopped(stop.clone()),
                ),
        ),
    ];
    let Some(listener) = sockets.tcp else {
        return Ok(servers);
    };
    // The agents' port also takes the commands other hosts' agents
    // relay (identity.rs says whom it believes).
    let router = Server::builder()
        .tcp_nodelay(true)
        .add_service(agents())
        .add_service(InterceptedService::new(
            jobs(),
            relayed_only(link, gate.clone()),
        ))
        .add_service(AdminServer::with_interceptor(
            admin(),
            relayed_only(link, gate.clone()),
        ));
    let addr = listener.local_addr()?;
    match tls {
        Some((acceptor, pki)) => {
            info!(%addr, ?pki, "listening for agents over TCP with TLS");
            servers.push(tokio::spawn(router.serve_with_incoming_shutdown(
                tls::incoming(listener, acceptor, pki),
                stopped(stop.clone()),
            )));
        }
        None => {
            info!(%addr, "listening for agents over plain TCP");
            servers.push(tokio::spawn(router.serve_with_incoming_shutdown(
                tls::plain_incoming(listener),
                stopped(stop.clone()),
            )));
        }
    }
    Ok(servers)
}

/// On the agents' port, every command (even those that do not ask who
/// calls) must come relayed by an agent of a host let in (and pass the
/// leader's gate first). The caller found is kept with the request for
/// its handler.
fn relayed_only<G>(
    link: &service::Link,
    mut gate: G,
) -> impl FnMut(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> + Clone + use<G>
where
    G: FnMut(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> + Clone + 'static,
{
    let identity = link.identity.clone();
    move |request| {
        let mut request = gate(request)?;
        let peer = identity.peer(&request)?;
        request.extensions_mut().insert(Vouched(peer));
        Ok(request)
    }
}

/// Serves `/metrics` on `listener` until `stop`: each scrape asks the
/// task to refresh the gauges first.
pub fn serve_metrics(
    listener: tokio::net::TcpListener,
    metrics: Arc<metrics::Metrics>,
    link: &service::Link,
    stop: &watch::Receiver<bool>,
) -> anyhow::Result<Served> {
    info!(addr = %listener.local_addr()?, "serving Prometheus metrics at /metrics");
    let events = link.events.clone();
    let refresh = move || {
        let events = events.clone();
        async move {
            let (tx, rx) = oneshot::channel();
            if events.send(event::Event::RefreshMetrics(tx)).await.is_ok() {
                let _ = rx.await;
            }
        }
    };
    let stop = stopped(stop.clone());
    Ok(tokio::spawn(async move {
        if let Err(e) = metrics::serve(listener, metrics, refresh, stop).await {
            warn!(error = %e, "the metrics server stopped");
        }
        Ok(())
    }))
}

/// In single-machine mode (`local_agent`, unless `--no-local-agent`):
/// the host's agent, started as qmeshd's child and kept running until
/// `stop`, with the soft limit on open files qmeshd started with
/// (`open_files`, when qmeshd raised its own).
pub fn start_local_agent(
    args: &Args,
    settings: &Settings,
    dirs: &Dirs,
    sockets: (&PathBuf, &PathBuf),
    open_files: Option<u64>,
    stop: &watch::Receiver<bool>,
) -> anyhow::Result<Option<JoinHandle<()>>> {
    if !settings.local_agent || args.no_local_agent {
        return Ok(None);
    }
    let (commands_socket, agent_socket) = sockets;
    let bin =
        local_agent::find_agent_bin(args.agent_bin.as_deref().or(settings.agent_bin.as_deref()))?;
    let agent = local_agent::LocalAgent {
        bin,
        server_url: format!("unix://{}", agent_socket.display()),
        host: settings.local_host.clone(),
        spool: dirs.state.join("agent-spool"),
        log: dirs.state.join("agent.log"),
        log_level: args.log_level.clone(),
        commands_socket: commands_socket.clone(),
        open_files,
    };
    Ok(Some(tokio::spawn(agent.supervise(stop.clone()))))
}
