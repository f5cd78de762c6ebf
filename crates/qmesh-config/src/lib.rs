//! The daemon's configuration file (TOML), and the embedded default.
//!
//! Its own crate so that qmeshd and qmesh-sim read one file the same way: a
//! site replays a trace on the very machine, queues and calendar its daemon
//! runs (`qmesh-sim --config`).
//!
//! The file describes the machine (node sets, agents, paths) and the
//! *initial* server configuration (server attributes, queues). Once the
//! store holds a configuration, qmgr owns the server attributes and queues
//! (as in PBS): the file's `[server]` and `[[queue]]` sections seed a new
//! store and are otherwise reported when they differ. Node sets always come
//! from the file.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

mod store;
pub use store::{DEFAULT_LEASE_TTL, EtcdStoreSettings, StoreSection, StoreSettings};

use qmesh_core::node::{NodeDef, NodeSet, Topology, TorusConversion, TorusPartition};
use qmesh_core::queue::Queue;
use qmesh_core::server::{Config, ServerAttrs};
use qmesh_core::time::parse_duration;

/// The configuration used when no `--config` is given: one 4×4 mesh of 16
/// nodes called `local`, served by a local agent, and one queue `batch`.
pub const EMBEDDED: &str = include_str!("embedded.toml");

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read configuration file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("configuration {origin}: {message}")]
    Syntax { origin: String, message: String },
    #[error("configuration {origin}: {key}: {message}")]
    Invalid {
        origin: String,
        key: String,
        message: String,
    },
}

/// A duration written as seconds (`30`) or `[[H:]M:]S` (`"1:00:00"`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum DurationSpec {
    Secs(u64),
    Text(String),
}

impl DurationSpec {
    fn secs(&self) -> Result<u64, String> {
        match self {
            DurationSpec::Secs(s) => Ok(*s),
            DurationSpec::Text(t) => parse_duration(t).map_err(|e| e.to_string()),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    #[serde(default)]
    pub daemon: DaemonSection,
    #[serde(default)]
    pub agents: AgentsSection,
    #[serde(default)]
    pub server: ServerSection,
    #[serde(default, rename = "queue")]
    pub queues: Vec<QueueSection>,
    #[serde(default, rename = "node_set")]
    pub node_sets: Vec<NodeSetSection>,
    /// Ordered node sets per calendar period, named by queues.
    #[serde(default, rename = "node_group")]
    pub node_groups: Vec<qmesh_core::node_group::NodeGroup>,
    /// Time zone, prime time, holidays and named periods.
    #[serde(default)]
    pub calendar: Option<qmesh_core::calendar::Calendar>,
    /// How jobs run: where they start, how mail reaches their users.
    #[serde(default)]
    pub jobs: JobsSection,
    #[serde(default)]
    pub store: StoreSection,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobsSection {
    /// Where a job starts when qsub names no -d: "home" (PBS and
    /// Torque: the user's home directory) or "submit" (where qsub ran).
    pub start_dir: Option<String>,
    /// The site's sendmail, for qsub -m/-M; unset: no mail is sent, and a
    /// job that asks for some says so in its comment.
    pub sendmail: Option<PathBuf>,
    /// The sender of that mail (PBS's mail_from); default "adm".
    pub mail_from: Option<String>,
}

/// How jobs run, from the file's `[jobs]` section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobSettings {
    /// Jobs that name no start directory start where qsub ran, not in
    /// the home directory.
    pub start_in_submit_dir: bool,
    pub sendmail: Option<PathBuf>,
    pub mail_from: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonSection {
    pub state_dir: Option<PathBuf>,
    pub socket: Option<PathBuf>,
    /// Shortest time between two scheduling passes, in milliseconds.
    pub pass_interval_ms: Option<u64>,
    /// Where to serve Prometheus metrics (GET /metrics), e.g.
    /// "127.0.0.1:9464"; none by default.
    pub metrics_listen: Option<String>,
    /// Where the job logs go (server_priv/accounting and audit under it);
    /// default: the state directory. The qmeshd of one queue on etcd
    /// share one (docs/HA.md).
    pub job_logs_dir: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentsSection {
    /// TCP address for remote agents, e.g. "0.0.0.0:15001".
    pub listen: Option<String>,
    /// Start a qmesh-agent for this host as a child process.
    #[serde(default)]
    pub local: bool,
    /// The host name the local agent serves.
    #[serde(default = "localhost")]
    pub local_host: String,
    #[serde(default = "ten")]
    pub heartbeat_secs: u32,
    /// Seconds a host's agent may stay away (disconnected, or silent for
    /// three heartbeats) before its jobs are given up: requeued if
    /// rerunnable, else failed. An agent back sooner finds its jobs again.
    #[serde(default = "sixty")]
    pub lost_after_secs: u32,
    /// A file holding the cluster key, which agents on other hosts prove
    /// they hold (it never travels). With none, a daemon that listens
    /// makes one in its state directory (`cluster.key`).
    pub cluster_key_file: Option<PathBuf>,
    /// TLS on the agents' TCP port: true (the default) with the site's
    /// files below, or else with the cluster CA the daemon makes in its
    /// state directory, from which agents get their certificates; false
    /// for plain TCP (the key is still proven, never sent, but what
    /// travels can be read).
    #[serde(default = "yes")]
    pub tls: bool,
    /// The site's PKI: the daemon's certificate (PEM, its chain after it)
    /// and private key. They take the place of the cluster CA.
    pub tls_cert_file: Option<PathBuf>,
    pub tls_key_file: Option<PathBuf>,
    /// The site's CA for agents (PEM): an agent connecting over TCP must
    /// present a client certificate it signed, or is refused.
    pub tls_client_ca_file: Option<PathBuf>,
    /// Path to the qmesh-agent binary; default: next to qmeshd.
    pub agent_bin: Option<PathBuf>,
}

fn localhost() -> String {
    "localhost".into()
}

fn ten() -> u32 {
    10
}

fn sixty() -> u32 {
    60
}

impl Default for AgentsSection {
    fn default() -> Self {
        AgentsSection {
            listen: None,
            local: false,
            local_host: localhost(),
            heartbeat_secs: ten(),
            lost_after_secs: sixty(),
            cluster_key_file: None,
            tls: true,
            tls_cert_file: None,
            tls_key_file: None,
            tls_client_ca_file: None,
            agent_bin: None,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// The server name in job ids (17.NAME); default: the host name.
    pub name: Option<String>,
    pub scheduling: Option<bool>,
    pub default_queue: Option<String>,
    #[serde(default)]
    pub managers: Vec<String>,
    #[serde(default)]
    pub operators: Vec<String>,
    pub job_history_duration: Option<DurationSpec>,
    pub kill_delay: Option<DurationSpec>,
    /// The most sub-jobs a job array may have (qmgr's max_array_size).
    pub max_array_size: Option<u32>,
    pub scheduler_iteration: Option<DurationSpec>,
    pub default_walltime: Option<DurationSpec>,
    /// The scheduling policy (qmgr's server attributes of the same names):
    /// fifo, priority_aging, hrn or fairshare.
    pub job_order: Option<String>,
    pub by_queue: Option<bool>,
    /// Priority points per hour waited (priority_aging).
    pub age_factor: Option<f64>,
    /// Jobs above it hold nodes for themselves (SDSC blocking); 0: off.
    pub block_priority: Option<f64>,
    /// none, easy, conservative or easy++.
    pub backfill: Option<String>,
    /// Jobs a pass considers; 0: all.
    pub search_depth: Option<u32>,
    pub max_user_run: Option<u32>,
    pub max_user_queued: Option<u32>,
    /// A host whose load reaches this many times its CPUs takes no new
    /// job (NCAR: 4); 0: off.
    pub max_load_factor: Option<f64>,
    /// Whether a job that names no qsub -r may be rerun after a lost host.
    pub default_rerunnable: Option<bool>,
    /// Login nodes whose agents may relay their users' commands
    /// (qmgr's submit_hosts): "login1", "*.login.example.com".
    #[serde(default)]
    pub submit_hosts: Vec<String>,
    /// Whether the compute hosts' agents may relay commands (jobs submit
    /// jobs); default true.
    pub allow_node_submit: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSection {
    pub name: String,
    #[serde(default)]
    pub priority: i32,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "yes")]
    pub started: bool,
    pub max_nodes: Option<u32>,
    pub min_nodes: Option<u32>,
    pub max_walltime: Option<DurationSpec>,
    pub default_nodes: Option<u32>,
    pub default_walltime: Option<DurationSpec>,
    #[serde(default)]
    pub node_sets: Vec<String>,
    /// A node group, in place of node_sets.
    pub node_group: Option<String>,
    /// Calendar periods in which its jobs may start; empty: always.
    #[serde(default)]
    pub periods: Vec<String>,
    /// Priority while a period is on, e.g. { NIGHT = 10 }.
    #[serde(default)]
    pub period_priority: BTreeMap<String, i32>,
    /// continue (default), kill or requeue: its running jobs at a period's end.
    pub period_end: Option<String>,
    /// How long before a period's end its jobs get warning_signal.
    pub period_end_warning: Option<DurationSpec>,
    /// SIGUSR1 unless given.
    pub warning_signal: Option<String>,
    /// "execution" (default) or "route" (NQS says pipe): a route queue
    /// runs no job but sends each on to the first destination that takes it.
    pub queue_type: Option<String>,
    /// Route queues: where jobs go, tried in order.
    #[serde(default)]
    pub route_destinations: Vec<String>,
    /// Route queues: where a job that names neither nodes nor wall time goes.
    pub default_destination: Option<String>,
    /// Route queues: where a job no destination takes waits (a queue that
    /// is not started), with the reason in its comment.
    pub holding_queue: Option<String>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSetSection {
    pub name: String,
    /// flat, mesh2d, torus or torus3d-shapes.
    #[serde(default = "flat")]
    pub topology: String,
    /// Mesh or torus shape, e.g. [4, 4].
    #[serde(default)]
    pub dims: Vec<u32>,
    /// mesh2d: one rectangle per job only (M2DB otherwise gives several).
    #[serde(default)]
    pub contiguous: bool,
    /// torus: "nep" (Non-Equal Partition, default) or "ep".
    pub partition: Option<String>,
    /// torus: how a job's semitorus becomes a torus: "merge" (default) or "pair".
    pub conversion: Option<String>,
    /// torus3d-shapes: the shape of each job size, e.g. { 64 = [16, 4, 1] }.
    #[serde(default)]
    pub shapes: BTreeMap<String, [u32; 3]>,
    /// Number of nodes of a flat set named by prefix.
    pub count: Option<u32>,
    /// Host of every node, unless `nodes` names hosts one by one.
    pub host: Option<String>,
    /// Node names are PREFIX00, PREFIX01, ...; default: the set's name.
    pub prefix: Option<String>,
    /// Explicit nodes: names, or { name = "n1", host = "h1" }.
    #[serde(default)]
    pub nodes: Vec<NodeEntry>,
    /// Memory per node, e.g. "32gb": jobs asking more (-l mem) run elsewhere.
    pub mem: Option<String>,
    /// CPUs per node (-l ncpus).
    pub cpus: Option<u32>,
    /// Node features (-l feature=fat).
    #[serde(default)]
    pub features: Vec<String>,
    /// Jobs each node runs at once: 1 (the default) gives each job its
    /// nodes alone; more shares them, the least busy node taking the next
    /// job (flat sets only).
    pub jobs_per_node: Option<u32>,
    /// GPUs per node (-l ngpus, Torque's gpus=); unset: what the agents
    /// of the set's hosts report.
    pub gpus: Option<u32>,
    /// PBS's resources_available of each node, for the site's host-level
    /// resources (qmgr create resource scratch type = size, flag = nh):
    /// { scratch = "400gb", model = "skylake", bigmem = true }.
    #[serde(default)]
    pub resources: BTreeMap<String, toml::Value>,
}

fn flat() -> String {
    "flat".into()
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum NodeEntry {
    Name(String),
    Full { name: String, host: String },
}

/// TLS on the agents' TCP port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentTls {
    /// With the cluster CA the daemon makes and keeps (the default):
    /// agents enrol with it.
    ClusterCa,
    /// With the site's PKI.
    Site(AgentTlsFiles),
    /// None: plain TCP (`tls = false`).
    Off,
}

impl AgentTls {
    /// The site's files, if the site brings its own PKI.
    pub fn site(&self) -> Option<&AgentTlsFiles> {
        match self {
            AgentTls::Site(files) => Some(files),
            _ => None,
        }
    }
}

/// The site's files of TLS on the agents' TCP port (PEM).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentTlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// When set, agents must present a client certificate it signed.
    pub client_ca: Option<PathBuf>,
}

/// Everything the daemon takes from its configuration.
#[derive(Debug)]
pub struct Settings {
    pub server_name: Option<String>,
    pub state_dir: Option<PathBuf>,
    /// `[daemon] job_logs_dir`: where server_priv (the job logs) is.
    pub job_logs_dir: Option<PathBuf>,
    pub socket: Option<PathBuf>,
    pub pass_interval_ms: u64,
    /// Where Prometheus metrics are served, if anywhere.
    pub metrics_listen: Option<String>,
    pub listen: Option<String>,
    pub local_agent: bool,
    pub local_host: String,
    pub heartbeat_secs: u32,
    pub lost_after_secs: u32,
    pub cluster_key_file: Option<PathBuf>,
    /// TLS on the agents' TCP port.
    pub tls: AgentTls,
    pub agent_bin: Option<PathBuf>,
    /// The server attributes and queues a new store starts with.
    pub initial: Config,
    pub node_sets: Vec<NodeSet>,
    pub jobs: JobSettings,
    /// Where the state is kept (`[store]`).
    pub store: StoreSettings,
    /// Things that work but are likely not meant (a started holding
    /// queue), for the log.
    pub warnings: Vec<String>,
}

impl Settings {
    pub fn embedded() -> Result<Settings, ConfigError> {
        Settings::parse(EMBEDDED, "(embedded default)")
    }

    pub fn from_file(path: &std::path::Path) -> Result<Settings, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Settings::parse(&text, &path.display().to_string())
    }

    pub fn parse(text: &str, origin: &str) -> Result<Settings, ConfigError> {
        let file: FileConfig = toml::from_str(text).map_err(|e| ConfigError::Syntax {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        let invalid = |key: String, message: String| ConfigError::Invalid {
            origin: origin.to_string(),
            key,
            message,
        };

        let mut server = ServerAttrs::default();
        let s = &file.server;
        if let Some(v) = s.scheduling {
            server.scheduling = v;
        }
        server.default_queue = s.default_queue.clone();
        server.managers = s.managers.clone();
        server.operators = s.operators.clone();
        let dur =
            |key: &str, spec: &Option<DurationSpec>, into: &mut u64| -> Result<(), ConfigError> {
                if let Some(spec) = spec {
                    *into = spec
                        .secs()
                        .map_err(|m| invalid(format!("server.{key}"), m))?;
                }
                Ok(())
            };
        dur(
            "job_history_duration",
            &s.job_history_duration,
            &mut server.job_history_duration,
        )?;
        dur("kill_delay", &s.kill_delay, &mut server.kill_delay)?;
        dur(
            "scheduler_iteration",
            &s.scheduler_iteration,
            &mut server.scheduler_iteration,
        )?;
        dur(
            "default_walltime",
            &s.default_walltime,
            &mut server.default_walltime,
        )?;
        // The policy takes qmgr's parsing and checks of the same attributes.
        let policy: [(&str, Option<String>); 13] = [
            ("job_order", s.job_order.clone()),
            ("by_queue", s.by_queue.map(|v| v.to_string())),
            ("age_factor", s.age_factor.map(|v| v.to_string())),
            ("block_priority", s.block_priority.map(|v| v.to_string())),
            ("backfill", s.backfill.clone()),
            ("search_depth", s.search_depth.map(|v| v.to_string())),
            ("max_user_run", s.max_user_run.map(|v| v.to_string())),
            ("max_user_queued", s.max_user_queued.map(|v| v.to_string())),
            ("max_load_factor", s.max_load_factor.map(|v| v.to_string())),
            (
                "default_rerunnable",
                s.default_rerunnable.map(|v| v.to_string()),
            ),
            ("max_array_size", s.max_array_size.map(|v| v.to_string())),
            (
                "submit_hosts",
                (!s.submit_hosts.is_empty()).then(|| s.submit_hosts.join(",")),
            ),
            (
                "allow_node_submit",
                s.allow_node_submit.map(|v| v.to_string()),
            ),
        ];
        for (name, value) in policy {
            if let Some(value) = value {
                qmesh_core::qmgr::set_server_attr(&mut server, name, &value)
                    .map_err(|why| invalid(format!("server.{name}"), why))?;
            }
        }
        if server.scheduler_iteration == 0 {
            return Err(invalid(
                "server.scheduler_iteration".into(),
                "must be at least 1 second".into(),
            ));
        }

        // Accounts and shutdown windows are made with qmgr, not in the file.
        let mut config = Config {
            server,
            ..Config::default()
        };
        for q in &file.queues {
            let key = format!("queue \"{}\"", q.name);
            qmesh_core::queue::valid_queue_name(&q.name)
                .map_err(|why| invalid(key.clone(), format!("bad queue name: {why}")))?;
            let walltime =
                |field: &str, spec: &Option<DurationSpec>| -> Result<Option<u64>, ConfigError> {
                    spec.as_ref()
                        .map(|s| s.secs().map_err(|m| invalid(format!("{key}.{field}"), m)))
                        .transpose()
                };
            let queue = Queue {
                name: q.name.clone(),
                priority: q.priority,
                enabled: q.enabled,
                started: q.started,
                max_nodes: q.max_nodes,
                min_nodes: q.min_nodes,
                max_walltime: walltime("max_walltime", &q.max_walltime)?,
                default_nodes: q.default_nodes,
                default_walltime: walltime("default_walltime", &q.default_walltime)?,
                node_sets: q.node_sets.clone(),
                node_group: q.node_group.clone(),
                periods: q.periods.clone(),
                period_priority: q.period_priority.clone(),
                period_end_warning: walltime("period_end_warning", &q.period_end_warning)?,
                ..Queue::new(&q.name)
            };
            let mut queue = queue;
            // The route fields take qmgr's checks of names and values.
            let destinations =
                (!q.route_destinations.is_empty()).then(|| q.route_destinations.join(","));
            for (attr, value) in [
                ("period_end", &q.period_end),
                ("warning_signal", &q.warning_signal),
                ("queue_type", &q.queue_type),
                ("route_destinations", &destinations),
                ("default_destination", &q.default_destination),
                ("holding_queue", &q.holding_queue),
            ] {
                if let Some(value) = value {
                    qmesh_core::qmgr::set_queue_attr(&mut queue, attr, value)
                        .map_err(|why| invalid(format!("{key}.{attr}"), why))?;
                }
            }
            if config.queues.insert(q.name.clone(), queue).is_some() {
                return Err(invalid(key, "is defined twice".into()));
            }
        }
        if let Some(dq) = &config.server.default_queue
            && !config.queues.contains_key(dq)
        {
            return Err(invalid(
                "server.default_queue".into(),
                format!("queue \"{dq}\" is not defined"),
            ));
        }
        // The checks qmgr runs after every change: destinations exist, no
        // route queue names itself or loops, holding queues keep jobs.
        let mut warnings =
            qmesh_core::route::check(&config).map_err(|why| invalid("queue".into(), why))?;

        let mut node_sets = Vec::new();
        for set in &file.node_sets {
            node_sets
                .push(node_set(set).map_err(|m| invalid(format!("node_set \"{}\"", set.name), m))?);
        }
        for q in config.queues.values() {
            for name in &q.node_sets {
                if !node_sets.iter().any(|s: &NodeSet| &s.name == name) {
                    return Err(invalid(
                        format!("queue \"{}\".node_sets", q.name),
                        format!("node set \"{name}\" is not defined"),
                    ));
                }
            }
        }
        for group in &file.node_groups {
            if config
                .node_groups
                .insert(group.name.clone(), group.clone())
                .is_some()
            {
                return Err(invalid(
                    format!("node_group \"{}\"", group.name),
                    "is defined twice".into(),
                ));
            }
        }
        if let Some(calendar) = file.calendar {
            calendar
                .validate()
                .map_err(|e| invalid("calendar".into(), e.to_string()))?;
            config.calendar = calendar;
        }
        config
            .check_periods()
            .map_err(|why| invalid("calendar".into(), why))?;
        let set_names: Vec<&str> = node_sets.iter().map(|s| s.name.as_str()).collect();
        qmesh_core::server::check_node_groups(&config, &set_names)
            .map_err(|(key, why)| invalid(key, why))?;

        let agents = &file.agents;
        let tls = match (&agents.tls_cert_file, &agents.tls_key_file) {
            (Some(cert), Some(key)) => Some(AgentTlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: agents.tls_client_ca_file.clone(),
            }),
            (None, None) if agents.tls_client_ca_file.is_some() => {
                return Err(invalid(
                    "agents.tls_client_ca_file".into(),
                    "client certificates need TLS: give tls_cert_file and tls_key_file too".into(),
                ));
            }
            (None, None) => None,
            (Some(_), None) | (None, Some(_)) => {
                return Err(invalid(
                    "agents.tls_cert_file".into(),
                    "TLS needs both tls_cert_file and tls_key_file".into(),
                ));
            }
        };
        let tls = match (tls, agents.tls) {
            (Some(files), true) => AgentTls::Site(files),
            (None, true) => AgentTls::ClusterCa,
            (None, false) => AgentTls::Off,
            (Some(_), false) => {
                return Err(invalid(
                    "agents.tls".into(),
                    "tls = false turns TLS off, but tls_cert_file is set: remove one of them"
                        .into(),
                ));
            }
        };
        if tls.site().is_some() && agents.listen.is_none() {
            warnings.push(
                "agents.tls_cert_file is set but agents.listen is not: TLS applies to the \
                 TCP port for agents only"
                    .into(),
            );
        }
        let start_in_submit_dir = match file.jobs.start_dir.as_deref() {
            None | Some("home") => false,
            Some("submit") => true,
            Some(other) => {
                return Err(invalid(
                    "jobs.start_dir".into(),
                    format!("\"{other}\" is not a start directory; write \"home\" or \"submit\""),
                ));
            }
        };
        let store = file
            .store
            .check()
            .map_err(|(key, message)| invalid(key, message))?;
        if store != StoreSettings::Sled && s.name.is_none() {
            return Err(invalid(
                "server.name".into(),
                "a queue kept in etcd is served by whichever qmeshd leads: give it one name for its                  job ids on every host, e.g. [server] name = \"cluster1\""
                    .into(),
            ));
        }
        if store != StoreSettings::Sled && file.agents.cluster_key_file.is_none() {
            return Err(invalid(
                "agents.cluster_key_file".into(),
                "a queue kept in etcd has several qmeshd: give them all the same cluster key \
                 (the agents' too), e.g. cluster_key_file = \"/etc/qmesh/cluster.key\""
                    .into(),
            ));
        }
        if store != StoreSettings::Sled && file.agents.local {
            return Err(invalid(
                "agents.local".into(),
                "a qmeshd on etcd may stand by for another: its hosts' agents run on their own                  (qmesh-agent --server with every qmeshd); write local = false"
                    .into(),
            ));
        }
        let jobs = JobSettings {
            start_in_submit_dir,
            sendmail: file.jobs.sendmail,
            mail_from: file.jobs.mail_from.unwrap_or_else(|| "adm".into()),
        };
        Ok(Settings {
            server_name: s.name.clone(),
            state_dir: file.daemon.state_dir,
            job_logs_dir: file.daemon.job_logs_dir,
            socket: file.daemon.socket,
            pass_interval_ms: file.daemon.pass_interval_ms.unwrap_or(20),
            metrics_listen: file.daemon.metrics_listen,
            listen: file.agents.listen,
            local_agent: file.agents.local,
            local_host: file.agents.local_host,
            heartbeat_secs: file.agents.heartbeat_secs.max(1),
            lost_after_secs: file.agents.lost_after_secs.max(1),
            cluster_key_file: file.agents.cluster_key_file,
            tls,
            agent_bin: file.agents.agent_bin,
            initial: config,
            node_sets,
            jobs,
            store,
            warnings,
        })
    }
}

/// The most nodes in one node set: as many as one job may ask for
/// (`qmesh_core::resources::chunk::MAX_NODES`).
pub const MAX_SET_NODES: u32 = qmesh_core::resources::chunk::MAX_NODES;

fn node_set(spec: &NodeSetSection) -> Result<NodeSet, String> {
    let topology = match spec.topology.as_str() {
        "flat" => Topology::Flat,
        "mesh2d" => match spec.dims.as_slice() {
            [w, h] if *w > 0 && *h > 0 => Topology::Mesh2d {
                width: *w,
                height: *h,
                contiguous: spec.contiguous,
            },
            _ => return Err("a mesh2d needs dims = [width, height], both above 0".into()),
        },
        "torus" => {
            if spec.dims.is_empty() || spec.dims.contains(&0) {
                return Err("a torus needs dims = [d1, d2, ...], each above 0".into());
            }
            let partition = match spec.partition.as_deref() {
                None | Some("nep") => TorusPartition::Nep,
                Some("ep") => TorusPartition::Ep,
                Some(other) => {
                    return Err(format!("partition \"{other}\" is not known; use nep or ep"));
                }
            };
            let conversion = match spec.conversion.as_deref() {
                None | Some("merge") => TorusConversion::Merge,
                Some("pair") => TorusConversion::Pair,
                Some(other) => {
                    return Err(format!(
                        "conversion \"{other}\" is not known; use merge or pair"
                    ));
                }
            };
            Topology::Torus {
                dims: spec.dims.clone(),
                partition,
                conversion,
            }
        }
        "torus3d-shapes" => {
            let dims: [u32; 3] = match spec.dims.as_slice() {
                [x, y, z] if *x > 0 && *y > 0 && *z > 0 => [*x, *y, *z],
                _ => return Err("a torus3d-shapes needs dims = [x, y, z], each above 0".into()),
            };
            if spec.shapes.is_empty() {
                return Err(
                    "a torus3d-shapes needs shapes, e.g. shapes = { 64 = [16, 4, 1] }".into(),
                );
            }
            let mut shapes = BTreeMap::new();
            for (size, shape) in &spec.shapes {
                let n: u32 = size
                    .parse()
                    .map_err(|_| format!("shape size \"{size}\" is not a whole number"))?;
                shapes.insert(n, *shape);
            }
            Topology::Torus3dShapes { dims, shapes }
        }
        other => {
            return Err(format!(
                "unknown topology \"{other}\"; use flat, mesh2d, torus or torus3d-shapes"
            ));
        }
    };
    // Before anything is built for them: dims whose product passes a
    // u32 overflowed in the allocators, and a count of billions filled
    // the memory.
    let size: u64 = match (&topology, spec.count) {
        (Topology::Flat, count) => u64::from(count.unwrap_or(0)).max(spec.nodes.len() as u64),
        _ => spec.dims.iter().map(|&d| u64::from(d)).product(),
    };
    if size > u64::from(MAX_SET_NODES) {
        return Err(format!(
            "it has {size} nodes; a node set may have at most {MAX_SET_NODES} (split the machine in several sets)"
        ));
    }
    // The allocator checks what it needs (a torus: all dimensions but one
    // powers of two; shapes that fit).
    topology.allocator()?;
    let count = match (&topology, spec.count, spec.nodes.len()) {
        (_, _, n) if n > 0 => n as u32,
        (Topology::Flat, Some(c), _) => c,
        (Topology::Flat, None, _) => {
            return Err("a flat set needs count = N or a nodes list".into());
        }
        (t, _, _) => t.size().unwrap_or(0),
    };
    let default_host = spec.host.clone();
    let nodes: Vec<NodeDef> = if spec.nodes.is_empty() {
        let host =
            default_host.ok_or("give host = \"NAME\" (the host whose agent serves these nodes)")?;
        let prefix = spec.prefix.clone().unwrap_or_else(|| spec.name.clone());
        let width = count.saturating_sub(1).to_string().len().max(2);
        (0..count)
            .map(|i| NodeDef {
                name: format!("{prefix}{i:0width$}"),
                host: host.clone(),
            })
            .collect()
    } else {
        spec.nodes
            .iter()
            .map(|entry| match entry {
                NodeEntry::Name(name) => default_host
                    .clone()
                    .map(|host| NodeDef {
                        name: name.clone(),
                        host,
                    })
                    .ok_or_else(|| format!("node \"{name}\" has no host; give host = \"NAME\" for the set or {{ name, host }}")),
                NodeEntry::Full { name, host } => Ok(NodeDef {
                    name: name.clone(),
                    host: host.clone(),
                }),
            })
            .collect::<Result<_, _>>()?
    };
    let mem = spec
        .mem
        .as_deref()
        .map(|m| {
            qmesh_core::resources::parse_size(m).map_err(|why| format!("mem = \"{m}\": {why}"))
        })
        .transpose()?;
    let features = spec
        .features
        .iter()
        .map(|f| qmesh_core::resources::check_feature(f))
        .collect::<Result<_, _>>()?;
    Ok(NodeSet {
        name: spec.name.clone(),
        topology,
        nodes,
        attrs: qmesh_core::node::NodeAttrs {
            mem,
            cpus: spec.cpus,
            features,
            jobs_per_node: spec.jobs_per_node,
            gpus: spec.gpus,
            resources: node_resources(&spec.resources)?,
        },
    })
}

/// A set's `resources` table as the values qmgr would write: strings as
/// they are, numbers, `True` and `False`.
fn node_resources(
    table: &BTreeMap<String, toml::Value>,
) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for (name, value) in table {
        qmesh_core::site_resources::check_name(name).map_err(|why| format!("resources: {why}"))?;
        let text = match value {
            toml::Value::String(s) if !s.trim().is_empty() => s.trim().to_string(),
            toml::Value::Integer(n) => n.to_string(),
            toml::Value::Float(x) => x.to_string(),
            toml::Value::Boolean(b) => if *b { "True" } else { "False" }.to_string(),
            _ => {
                return Err(format!(
                    "resources.{name}: write a string, a number or true/false, e.g. {name} = \"400gb\""
                ));
            }
        };
        out.insert(name.clone(), text);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jobs_section_says_where_jobs_start_and_how_mail_goes() {
        let s = Settings::embedded().unwrap();
        assert!(!s.jobs.start_in_submit_dir, "PBS: the home directory");
        assert_eq!(
            (s.jobs.sendmail.as_ref(), s.jobs.mail_from.as_str()),
            (None, "adm")
        );
        let text = format!(
            "{EMBEDDED}\n[jobs]\nstart_dir = \"submit\"\nsendmail = \"/usr/sbin/sendmail\"\n"
        );
        let s = Settings::parse(&text, "t").unwrap();
        assert!(s.jobs.start_in_submit_dir);
        assert_eq!(s.jobs.sendmail, Some(PathBuf::from("/usr/sbin/sendmail")));
        let text = format!("{EMBEDDED}\n[jobs]\nstart_dir = \"scratch\"\n");
        let err = Settings::parse(&text, "t").unwrap_err().to_string();
        assert!(
            err.contains("jobs.start_dir") && err.contains("\"submit\""),
            "{err}"
        );
    }

    #[test]
    fn the_file_bounds_job_arrays_as_qmgr_does() {
        let s = Settings::parse("[server]\nmax_array_size = 2000\n", "t").unwrap();
        assert_eq!(s.initial.server.max_array_size, 2000);
        let err = Settings::parse("[server]\nmax_array_size = 0\n", "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("server.max_array_size"), "{err}");
    }

    #[test]
    fn the_file_names_the_login_nodes() {
        let s = Settings::parse(
            "[server]\nsubmit_hosts = [\"login1\", \"*.login.example.com\"]\nallow_node_submit = false\n",
            "t",
        )
        .unwrap();
        assert_eq!(
            s.initial.server.submit_hosts,
            ["login1", "*.login.example.com"]
        );
        assert!(!s.initial.server.allow_node_submit);
        let err = Settings::parse("[server]\nsubmit_hosts = [\"bad host\"]\n", "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("server.submit_hosts"), "{err}");
    }

    #[test]
    fn the_embedded_default_is_a_4x4_mesh_with_a_batch_queue() {
        let s = Settings::embedded().unwrap();
        assert_eq!(s.node_sets.len(), 1);
        let set = &s.node_sets[0];
        assert_eq!(set.name, "local");
        assert_eq!(
            set.topology,
            Topology::Mesh2d {
                width: 4,
                height: 4,
                contiguous: false
            }
        );
        assert_eq!(set.nodes.len(), 16);
        assert_eq!(set.nodes[0].name, "local00");
        assert_eq!(set.nodes[15].name, "local15");
        assert!(s.local_agent);
        let batch = &s.initial.queues["batch"];
        assert!(batch.enabled && batch.started);
        assert_eq!(s.initial.server.default_queue.as_deref(), Some("batch"));
    }

    #[test]
    fn the_annotated_example_parses() {
        let text = include_str!("../../../etc/qmesh.toml");
        Settings::parse(text, "etc/qmesh.toml").unwrap();
    }

    #[test]
    fn the_site_examples_parse() {
        for (name, text) in [
            (
                "sdsc-paragon",
                include_str!("../../../etc/examples/sdsc-paragon.toml"),
            ),
            (
                "epcc-t3d",
                include_str!("../../../etc/examples/epcc-t3d.toml"),
            ),
            (
                "ncar-cluster",
                include_str!("../../../etc/examples/ncar-cluster.toml"),
            ),
        ] {
            let s = Settings::parse(text, name).unwrap_or_else(|e| panic!("{e}"));
            assert!(s.warnings.is_empty(), "{name}: {:?}", s.warnings);
        }
    }

    #[test]
    fn tls_needs_a_certificate_and_its_key_and_client_certificates_need_tls() {
        let agents = |keys: &str| format!("[agents]\nlisten = \"0.0.0.0:15001\"\n{keys}");
        let s = Settings::parse(
            &agents("tls_cert_file = \"c.pem\"\ntls_key_file = \"k.pem\"\n"),
            "t",
        )
        .unwrap();
        let tls = s.tls.site().unwrap();
        assert_eq!(
            (tls.cert.to_str(), tls.client_ca.as_ref()),
            (Some("c.pem"), None)
        );
        let s = Settings::parse(&agents(""), "t").unwrap();
        assert_eq!(s.tls, AgentTls::ClusterCa, "TLS by default");
        let s = Settings::parse(&agents("tls = false\n"), "t").unwrap();
        assert_eq!(s.tls, AgentTls::Off);
        let err = Settings::parse(
            &agents("tls = false\ntls_cert_file = \"c.pem\"\ntls_key_file = \"k.pem\"\n"),
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("agents.tls") && err.contains("remove one"),
            "{err}"
        );
        let err = Settings::parse(&agents("tls_cert_file = \"c.pem\"\n"), "t")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("agents.tls_cert_file") && err.contains("both"),
            "{err}"
        );
        let err = Settings::parse(&agents("tls_client_ca_file = \"ca.pem\"\n"), "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("agents.tls_client_ca_file"), "{err}");
        let s = Settings::parse(
            "[agents]\ntls_cert_file = \"c.pem\"\ntls_key_file = \"k.pem\"\n",
            "t",
        )
        .unwrap();
        assert!(
            s.warnings.iter().any(|w| w.contains("agents.listen")),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn errors_name_the_key() {
        let err = Settings::parse("[server]\nkill_dealy = 3\n", "t")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("kill_dealy") && err.contains("line 2"),
            "{err}"
        );
        let err = Settings::parse("[[queue]]\nname = \"b\"\nmax_walltime = \"1:99\"\n", "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("queue \"b\".max_walltime"), "{err}");
        let err = Settings::parse(
            "[[node_set]]\nname = \"m\"\ntopology = \"mesh2d\"\ndims = [4]\nhost = \"h\"\n",
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("node_set \"m\"") && err.contains("dims"),
            "{err}"
        );
        let err = Settings::parse("[[queue]]\nname = \"b\"\nnode_sets = [\"x\"]\n", "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("node set \"x\" is not defined"), "{err}");
    }

    #[test]
    fn the_scheduling_policy_comes_from_the_server_section_with_qmgrs_checks() {
        let s = Settings::parse(
            "[server]\njob_order = \"priority_aging\"\nage_factor = 2\n\
             block_priority = 20.5\nbackfill = \"none\"\nby_queue = false\n",
            "t",
        )
        .unwrap();
        let server = &s.initial.server;
        assert_eq!(server.job_order, qmesh_core::JobOrder::PriorityAging);
        assert_eq!((server.age_factor, server.block_priority), (2.0, 20.5));
        assert_eq!(server.backfill, qmesh_core::Backfill::None);
        assert!(!server.by_queue);
        let err = Settings::parse("[server]\nbackfill = \"eager\"\n", "t")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "configuration t: server.backfill: \"eager\" is not a backfill mode; \
             write none, easy, conservative or easy++"
        );
    }

    const PIPE: &str = r#"
[[node_set]]
name = "s"
count = 4
host = "h"

[[queue]]
name = "small"
max_nodes = 2

[[queue]]
name = "big"
min_nodes = 3

[[queue]]
name = "hold"
started = false

[[queue]]
name = "pipe"
queue_type = "route"
route_destinations = ["small", "big"]
default_destination = "small"
holding_queue = "hold"
"#;

    #[test]
    fn route_queues_come_from_the_file_with_qmgrs_checks() {
        let s = Settings::parse(PIPE, "t").unwrap();
        let pipe = &s.initial.queues["pipe"];
        assert!(pipe.is_route());
        assert_eq!(pipe.route_destinations, ["small", "big"]);
        assert_eq!(pipe.default_destination.as_deref(), Some("small"));
        assert_eq!(pipe.holding_queue.as_deref(), Some("hold"));
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);

        let missing = PIPE.replace("[\"small\", \"big\"]", "[\"small\", \"huge\"]");
        let err = Settings::parse(&missing, "t").unwrap_err().to_string();
        assert!(
            err.contains("route queue \"pipe\"")
                && err.contains("route_destinations names queue \"huge\", which does not exist"),
            "{err}"
        );
        let on_execution = PIPE.replace("queue_type = \"route\"\n", "");
        let err = Settings::parse(&on_execution, "t").unwrap_err().to_string();
        assert!(
            err.contains("queue \"pipe\" is an execution queue"),
            "{err}"
        );
        let bad_type = PIPE.replace("\"route\"", "\"tunnel\"");
        let err = Settings::parse(&bad_type, "t").unwrap_err().to_string();
        assert!(
            err.contains("queue \"pipe\".queue_type") && err.contains("tunnel"),
            "{err}"
        );
        let started_hold = PIPE.replace("started = false\n", "");
        let s = Settings::parse(&started_hold, "t").unwrap();
        assert!(s.warnings[0].contains("\"hold\""), "{:?}", s.warnings);
    }

    #[test]
    fn nodes_may_name_their_hosts() {
        let s = Settings::parse(
            "[[node_set]]\nname = \"c\"\nnodes = [{ name = \"a1\", host = \"ha\" }, { name = \"b1\", host = \"hb\" }]\n",
            "t",
        )
        .unwrap();
        assert_eq!(s.node_sets[0].nodes[1].host, "hb");
    }

    #[test]
    fn a_set_names_what_each_node_has_of_the_sites_resources() {
        let s = Settings::parse(
            "[[node_set]]\nname = \"big\"\ncount = 2\nhost = \"h\"\n\
             resources = { scratch = \"400gb\", nmics = 2, bigmem = true, model = \"skylake\" }\n",
            "t",
        )
        .unwrap();
        let have = &s.node_sets[0].attrs.resources;
        assert_eq!(have["scratch"], "400gb");
        assert_eq!(have["nmics"], "2");
        assert_eq!(have["bigmem"], "True");
        assert_eq!(have["model"], "skylake");
        let err = Settings::parse(
            "[[node_set]]\nname = \"big\"\ncount = 2\nhost = \"h\"\nresources = { scratch = [1] }\n",
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("node_set \"big\"") && err.contains("resources.scratch"),
            "{err}"
        );
    }

    #[test]
    fn fuzz_node_sets_past_a_million_nodes_are_refused() {
        // Found while fuzzing (fuzz/fuzz_targets/config.rs): a 65536 x
        // 65536 mesh overflowed u32 in the M2DB tree (a panic), and a
        // flat count of billions filled the memory.
        for set in [
            "topology = \"mesh2d\"\ndims = [65536, 65536]",
            "topology = \"torus\"\ndims = [1024, 1024, 2]",
            "count = 4294967295",
        ] {
            let err = Settings::parse(
                &format!("[[node_set]]\nname = \"big\"\n{set}\nhost = \"h\"\n"),
                "t",
            )
            .unwrap_err()
            .to_string();
            assert!(
                err.contains("node_set \"big\"") && err.contains("at most 1000000"),
                "{err}"
            );
        }
    }
}
