//! The agent process: logging, spool, lock, then sessions until SIGTERM or
//! SIGINT. Stopping leaves the jobs running: their shepherds are separate
//! processes in their own sessions, and the next agent adopts them.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use qmesh_proto::trust::ClusterKey;

use tokio::signal::unix::{SignalKind, signal};
use tracing::{info, warn};

use crate::cli::Cli;
use crate::error::{AgentError, Result};
use crate::hooks::Hooks;
use crate::joined::Joined;
use crate::session::{self, SessionConfig};
use crate::spool::Spool;
use crate::supervise::Supervisor;
use crate::trust::{TlsFlags, Trust};

pub fn run(cli: Cli) -> Result<()> {
    init_logging(&cli.log_level)?;
    let server = cli
        .server
        .ok_or_else(|| AgentError::Config("--server is required".into()))?;
    let host = match cli.host {
        Some(host) => host,
        None => hostname()?,
    };
    let relay_socket = relay_socket(&cli.relay_socket, cli.no_relay, &server);
    let cluster_key = read_key(cli.cluster_key_file.as_deref())?;
    let spool_path = match cli.spool {
        Some(path) => path,
        None => default_spool()?,
    };
    let flags = TlsFlags {
        ca: cli.tls_ca_file.as_deref(),
        cert: cli.tls_cert_file.as_deref(),
        key: cli.tls_key_file.as_deref(),
    };
    // One way in per daemon of the list (docs/HA.md: one leads).
    let servers = session::servers(&server);
    let sole = servers.len() == 1;
    let trusts = servers
        .into_iter()
        .map(|one| {
            let trust = Trust::new(one, &host, cluster_key.clone(), &flags, &spool_path)?;
            // Pinged often only where there is another daemon to go to.
            Ok(Arc::new(if sole { trust.sole_daemon() } else { trust }))
        })
        .collect::<Result<Vec<_>>>()?;
    if cli.submit_only {
        let Some(socket) = relay_socket else {
            return Err(AgentError::Config(
                "--submit-only relays this host's commands: give --relay-socket PATH \
                 (the default, /run/qmesh/qmeshd.sock, is for an agent run as root \
                 reaching the daemon over TCP)"
                    .into(),
            ));
        };
        return submit_only(&socket, trusts);
    }
    let spool = Spool::open(&spool_path)?;
    let _lock = crate::lock::acquire(spool.root())?;
    let gpus = cli
        .gpus
        .unwrap_or_else(|| crate::gpus::count_devices(std::path::Path::new("/dev")));
    let tmpdir_base = cli.tmpdir_base.unwrap_or_else(crate::tmpdir::default_base);
    if !tmpdir_base.is_absolute() || !tmpdir_base.is_dir() {
        return Err(AgentError::Config(format!(
            "--tmpdir-base {}: give the full path of an existing directory",
            tmpdir_base.display()
        )));
    }
    let cgroups = match crate::cgroup::detect(cli.cgroups, &crate::cgroup::agent_name(spool.root()))
    {
        Ok(cgroups) => {
            info!("jobs run contained: {cgroups}");
            Some(cgroups)
        }
        Err(why) if cli.cgroups == crate::cgroup::Wanted::Off => {
            info!("jobs run uncontained: {why}");
            None
        }
        Err(why) => {
            warn!(
                "jobs cannot be contained here ({why}): they run without a memory limit \
                 or a cgroup, as with --cgroups off"
            );
            None
        }
    };
    let cfg = SessionConfig {
        trusts,
        nodes: cli.nodes.into_iter().filter(|n| !n.is_empty()).collect(),
        facts: crate::facts::FactsConfig {
            cpus: cli.cpus,
            load_command: cli.load_command,
            features: cli.features.into_iter().filter(|f| !f.is_empty()).collect(),
            gpus,
        },
    };
    // One thread: the session, the daemon's connection and the jobs'
    // watchers hand each message on without waking another thread (a job
    // through qsub was five more context switches with a worker pool).
    // What blocks for long runs on the blocking pool or the zygote's thread.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AgentError::io("start the async runtime in", "/", e))?;
    let hooks = Hooks {
        prologue: cli.prologue,
        epilogue: cli.epilogue,
        checkpoint: cli.checkpoint,
    };
    for path in [&hooks.prologue, &hooks.epilogue, &hooks.checkpoint]
        .into_iter()
        .flatten()
    {
        if !path.is_file() {
            return Err(AgentError::Config(format!(
                "the prologue, epilogue or checkpoint program {} is not a file; give its full path",
                path.display()
            )));
        }
    }
    // Jobs reach the daemon through this host's relay unless told else.
    let places = JobPlaces {
        tmpdir_base,
        cgroups,
        commands_socket: cli.commands_socket.clone().or(relay_socket.clone()),
    };
    let outcome = runtime.block_on(serve(
        cfg,
        spool,
        hooks,
        places,
        relay_socket,
        cli.exec_shepherds,
    ));
    // Shepherds are not killed: kill_on_drop is off for every child.
    runtime.shutdown_timeout(Duration::from_secs(2));
    outcome
}

/// The relay's socket: the one given; else, for an agent run as root that
/// reaches the daemon over TCP (another host), the commands' system
/// socket; else none (the daemon is on this host: its own socket serves).
fn relay_socket(given: &Option<PathBuf>, no_relay: bool, server: &str) -> Option<PathBuf> {
    if no_relay {
        return None;
    }
    if given.is_some() {
        return given.clone();
    }
    let tcp = server.starts_with("http://") || server.starts_with("https://");
    (tcp && nix::unistd::Uid::effective().is_root())
        .then(|| PathBuf::from(qmesh_proto::endpoint::SYSTEM_SOCKET))
}

fn read_key(path: Option<&std::path::Path>) -> Result<Option<ClusterKey>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| AgentError::io("read cluster key file", path, e))?;
    ClusterKey::from_file_text(&text)
        .map(Some)
        .map_err(|e| AgentError::Config(format!("--cluster-key-file {}: {e}", path.display())))
}

/// A login node's agent: the relay only, until SIGTERM or SIGINT. With
/// the cluster CA it enrols meanwhile; commands wait for that.
fn submit_only(socket: &std::path::Path, trusts: Vec<Arc<Trust>>) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| AgentError::io("start the async runtime in", "/", e))?;
    runtime.block_on(async {
        let mut term = signal(SignalKind::terminate())
            .map_err(|e| AgentError::io("handle SIGTERM in", "/", e))?;
        let mut int = signal(SignalKind::interrupt())
            .map_err(|e| AgentError::io("handle SIGINT in", "/", e))?;
        let relay = crate::relay::start(socket, &trusts)?;
        let servers: Vec<&str> = trusts.iter().map(|t| t.server()).collect();
        info!(
            host = trusts.first().map_or("", |t| t.host()),
            server = %servers.join(","),
            pid = std::process::id(),
            "submit-only agent: running no jobs"
        );
        tokio::select! {
            _ = relay => {}
            () = ready_forever(&trusts) => {}
            _ = term.recv() => info!("SIGTERM: stopping"),
            _ = int.recv() => info!("SIGINT: stopping"),
        }
        let _ = std::fs::remove_file(socket);
        Ok(())
    })
}

/// Makes the agent ready (enrolled, with the cluster CA) with one of the
/// daemons (the leader: the others refuse), retrying with backoff; then
/// watches for the daemon's CA to change, forever.
async fn ready_forever(trusts: &[Arc<Trust>]) {
    let mut backoff = session::Backoff::new();
    let mut last = String::new();
    let mut at = 0;
    loop {
        at += 1;
        let trust = &trusts[at % trusts.len()];
        match trust.ready().await {
            Ok(()) => {
                backoff.reset();
                last.clear();
            }
            Err(e) => {
                let text = e.to_string();
                if text != last {
                    warn!("{text} (the agent keeps retrying)");
                    last = text;
                }
            }
        }
        tokio::time::sleep(backoff.next_delay()).await;
    }
}

/// Where this host's jobs find their TMPDIR and the daemon's commands.
struct JobPlaces {
    tmpdir_base: PathBuf,
    /// Where jobs' cgroups go, if the host has them.
    cgroups: Option<crate::record::Cgroups>,
    commands_socket: Option<PathBuf>,
}

async fn serve(
    cfg: SessionConfig,
    spool: Spool,
    hooks: Hooks,
    places: JobPlaces,
    relay_socket: Option<PathBuf>,
    exec_shepherds: bool,
) -> Result<()> {
    let mut term =
        signal(SignalKind::terminate()).map_err(|e| AgentError::io("handle SIGTERM in", "/", e))?;
    let mut int =
        signal(SignalKind::interrupt()).map_err(|e| AgentError::io("handle SIGINT in", "/", e))?;
    info!(
        host = %cfg.trusts[0].host(),
        server = %server_list(&cfg.trusts),
        spool = %spool.root().display(),
        gpus = cfg.facts.gpus,
        pid = std::process::id(),
        "agent starting"
    );
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let cgroups = places.cgroups.clone();
    let joined = Joined::open(
        spool.root(),
        hooks.clone(),
        places.cgroups.clone(),
        tx.clone(),
    )?;
    if let Some(cgroups) = &cgroups {
        remove_cgroups_left_behind(cgroups, &spool, &joined);
    }
    let spool_root = spool.root().to_path_buf();
    let sup = Supervisor::new(spool, tx)
        .with_hooks(hooks)
        .with_cgroups(places.cgroups)
        .with_host(cfg.trusts[0].host(), places.tmpdir_base, cfg.facts.gpus)
        .with_commands_socket(places.commands_socket);
    let sup = if exec_shepherds {
        sup
    } else {
        sup.with_zygote()
    };
    sup.adopt_all()?;
    if let Some(socket) = &relay_socket {
        crate::relay::start(socket, &cfg.trusts)?;
    }
    tokio::select! {
        () = session::run_forever(&cfg, &sup, &joined, &mut events) => {}
        _ = term.recv() => info!("SIGTERM: stopping; jobs keep running under their shepherds"),
        _ = int.recv() => info!("SIGINT: stopping; jobs keep running under their shepherds"),
    }
    if let Some(socket) = &relay_socket {
        let _ = std::fs::remove_file(socket);
    }
    if let Some(cgroups) = &cgroups {
        if let Ok(spool) = Spool::open(&spool_root) {
            remove_cgroups_left_behind(cgroups, &spool, &joined);
        }
        crate::cgroup::remove_agent_level(cgroups);
    }
    Ok(())
}

/// Removes the job cgroups under this agent's level that no job of its
/// spool, launched or joined, owns: those of shepherds killed with
/// SIGKILL, or of a host that went down under its jobs. At the start, and
/// at a clean stop, so that the level itself can go. A spool entry that
/// cannot be read stops it: nothing is removed then.
fn remove_cgroups_left_behind(cgroups: &crate::record::Cgroups, spool: &Spool, joined: &Joined) {
    use crate::cgroup::job::dir_name;
    let Some(joined) = joined.job_ids() else {
        return;
    };
    let Ok(launched) = spool.scan() else {
        return;
    };
    let mut live: std::collections::HashSet<String> =
        joined.iter().map(|id| dir_name(id)).collect();
    for dir in launched {
        match dir.read_launch() {
            Ok(launch) => live.insert(dir_name(&launch.order.job_id)),
            Err(_) => return,
        };
    }
    let removed = crate::cgroup::remove_left_behind(cgroups, &|name| live.contains(name));
    if removed > 0 {
        info!(
            removed,
            "removed the cgroups of jobs this agent no longer has"
        );
    }
}

/// The daemons of `--server`, as given.
fn server_list(trusts: &[Arc<Trust>]) -> String {
    trusts
        .iter()
        .map(|t| t.server())
        .collect::<Vec<_>>()
        .join(",")
}

fn init_logging(filter: &str) -> Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter).map_err(|e| {
        AgentError::Config(format!(
            "bad --log-level \"{filter}\": {e}; use error, warn, info, debug or trace"
        ))
    })?;
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(filter)
        .try_init();
    Ok(())
}

fn hostname() -> Result<String> {
    nix::unistd::gethostname()
        .map_err(|e| AgentError::Config(format!("cannot read the host name ({e}); give --host")))?
        .into_string()
        .map_err(|_| AgentError::Config("the host name is not UTF-8; give --host".into()))
}

/// `/var/spool/qmesh` for root, else under the user's state directory.
fn default_spool() -> Result<PathBuf> {
    if nix::unistd::Uid::effective().is_root() {
        return Ok(PathBuf::from("/var/spool/qmesh"));
    }
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let state = var("XDG_STATE_HOME")
        .or_else(|| var("HOME").map(|home| home.join(".local/state")))
        .ok_or_else(|| {
            AgentError::Config("neither XDG_STATE_HOME nor HOME is set; give --spool".into())
        })?;
    Ok(state.join("qmesh").join("spool"))
}
