//! The machine a trace is replayed on, and the policy it is scheduled by.
//!
//! Either one node set of the trace's size (flat, a mesh or a torus: the
//! torus seed's experiments), or a site as its daemon's configuration file
//! describes it (`--config`): node sets, node groups, queues and calendar,
//! read by the same `qmesh-config` as qmeshd. The policy is one of the
//! classic three, EASY++, or the configuration's own server attributes; qmgr
//! commands (`--qmgr`) may change the configuration first, as an
//! administrator would.
//!
//! With `--express` the configuration gains a queue `express` of
//! priority 200 on the default queue's node sets, whose jobs preempt
//! (see `qmesh_core::preempt`); `--preempt-order` sets how.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use qmesh_core::node::{NodeDef, NodeSet, Topology};
use qmesh_core::preempt::PreemptOrder;
use qmesh_core::{Backfill, Caller, Config, JobOrder, Queue, Role, State};

/// The scheduling policy replayed. The classic three take jobs in the
/// order they came, whatever their queues' priorities, and differ only in
/// what may overtake the first job that cannot start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// First come, first served: nothing overtakes the first waiting job.
    Fcfs,
    /// EASY backfilling: the first waiting job has a reservation; a later
    /// one starts if it does not delay it.
    Easy,
    /// Conservative backfilling: every waiting job has one.
    Conservative,
    /// EASY++ (Tsafrir, Etsion and Feitelson): EASY planned with predicted
    /// run times, the jobs behind the first tried shortest predicted
    /// first, none delaying the first past its wall-time reservation.
    #[value(name = "easy++")]
    #[serde(rename = "easy++")]
    EasyPredicted,
    /// The configuration's own server attributes (job_order, backfill,
    /// block_priority...): the policy its daemon runs.
    Config,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Fcfs => "fcfs",
            Policy::Easy => "easy",
            Policy::Conservative => "conservative",
            Policy::EasyPredicted => "easy++",
            Policy::Config => "config",
        }
    }

    /// The server attributes that make the core's planner follow it.
    pub fn configure(self, config: &mut Config) {
        let backfill = match self {
            Policy::Fcfs => Backfill::None,
            Policy::Easy => Backfill::Easy,
            Policy::Conservative => Backfill::Conservative,
            Policy::EasyPredicted => Backfill::EasyPredicted,
            Policy::Config => return,
        };
        let server = &mut config.server;
        server.backfill = backfill;
        // Submission order over all queues: every queue of one priority,
        // and with one queue fifo takes it as it stands, no sort per pass.
        server.job_order = JobOrder::Fifo;
        server.by_queue = config.queues.len() <= 1;
        server.search_depth = 0;
        for q in config.queues.values_mut() {
            q.priority = 1;
            q.period_priority.clear();
        }
        // FCFS: every job is above block_priority, so the first that
        // cannot start blocks the rest (SDSC blocking). Backfilling
        // reserves for it instead.
        server.block_priority = if self == Policy::Fcfs { 0.5 } else { 0.0 };
    }
}

/// How a one-set machine allocates nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Alloc {
    /// Any free nodes (no topology).
    #[default]
    Flat,
    /// SDSC's M2DB on a 2-D mesh (`--dims WxH`).
    M2db,
    /// Equal Partition subtori of an N-D torus (`--dims 2x2x2x4x4x8`).
    Ep,
    /// Non-Equal Partition subtori.
    Nep,
}

impl Alloc {
    pub fn as_str(self) -> &'static str {
        match self {
            Alloc::Flat => "flat",
            Alloc::M2db => "m2db",
            Alloc::Ep => "ep",
            Alloc::Nep => "nep",
        }
    }

    /// The node set's topology over `dims` (empty: flat only).
    pub fn topology(self, dims: &[u32]) -> Result<Topology, String> {
        match (self, dims) {
            (Alloc::Flat, _) => Ok(Topology::Flat),
            (Alloc::M2db, [width, height]) => Ok(Topology::Mesh2d {
                width: *width,
                height: *height,
                contiguous: false,
            }),
            (Alloc::M2db, _) => Err("m2db needs a 2-D mesh: --dims WxH".into()),
            (Alloc::Ep | Alloc::Nep, []) => Err(format!(
                "{} needs a torus: --dims 2x2x2x4x4x8",
                self.as_str()
            )),
            (Alloc::Ep | Alloc::Nep, dims) => Ok(Topology::Torus {
                dims: dims.to_vec(),
                partition: if self == Alloc::Ep {
                    qmesh_core::node::TorusPartition::Ep
                } else {
                    qmesh_core::node::TorusPartition::Nep
                },
                conversion: Default::default(),
            }),
        }
    }
}

/// What the jobs run on.
#[derive(Clone, Debug)]
pub enum Machine {
    /// One node set: flat (of `nodes`, else the trace's MaxProcs or
    /// MaxNodes) or a mesh or torus of its own size; one queue, `batch`.
    Single {
        topology: Topology,
        nodes: Option<u32>,
    },
    /// A site: the server configuration (queues, node groups, calendar)
    /// and the node sets of its daemon's file.
    Site {
        config: Box<Config>,
        node_sets: Vec<NodeSet>,
        /// The file's server name (`[server] name`), for the job ids of
        /// an accounting log; `sim` when it gives none.
        server_name: Option<String>,
    },
}

impl Default for Machine {
    fn default() -> Self {
        Machine::Single {
            topology: Topology::Flat,
            nodes: None,
        }
    }
}

impl Machine {
    /// A site from the text of a daemon's configuration file.
    pub fn site(text: &str, origin: &str) -> Result<Machine, String> {
        let settings = qmesh_config::Settings::parse(text, origin).map_err(|e| e.to_string())?;
        Ok(Machine::Site {
            config: Box::new(settings.initial),
            node_sets: settings.node_sets,
            server_name: settings.server_name,
        })
    }

    /// In a few words, for reports: `flat`, `2x2x2x4x4x8 torus (nep)`,
    /// `3 node sets, 27 queues`.
    pub fn describe(&self) -> String {
        match self {
            Machine::Single { topology, .. } => topology.describe(),
            Machine::Site {
                config, node_sets, ..
            } => format!(
                "{} node set(s), {} queue(s)",
                node_sets.len(),
                config.queues.len()
            ),
        }
    }
}

/// The server's name in job ids: the configuration's, else `sim`.
fn server_name(machine: &Machine) -> String {
    match machine {
        Machine::Site {
            server_name: Some(name),
            ..
        } => name.clone(),
        _ => "sim".into(),
    }
}

/// Why a machine could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    #[error(
        "the trace's header gives no machine size (MaxProcs or MaxNodes); give --nodes N or --config"
    )]
    NoSize,
    #[error("--nodes {nodes} does not match the {topology} ({size} nodes)")]
    SizeMismatch {
        nodes: u32,
        topology: String,
        size: u32,
    },
    #[error("--policy config needs --config (the server attributes of a configuration file)")]
    PolicyNeedsConfig,
    #[error("--qmgr, line {line}: {message}")]
    Qmgr { line: usize, message: String },
    #[error("the scheduler's core refused the set-up: {0}")]
    Core(String),
    #[error("--preempt-order: {0}")]
    PreemptOrder(String),
    #[error("--express: {0}")]
    Express(String),
}

/// The queue `--express` adds, and its priority: above PBS Pro's
/// `preempt_queue_prio` (150), so its jobs preempt.
pub const EXPRESS_QUEUE: &str = "express";
pub const EXPRESS_PRIORITY: i32 = 200;

/// How preemption is set up for a replay.
#[derive(Clone, Debug, Default)]
pub struct Preemption<'a> {
    /// Add the queue [`EXPRESS_QUEUE`] (`--express`).
    pub express: bool,
    /// The server's `preempt_order` (`--preempt-order`); `None` keeps the
    /// configuration's (PBS Pro's `SCR` unless its file sets one).
    pub order: Option<&'a str>,
}

/// The replay's scheduler state over `machine`, every host up, under
/// `policy`, with `preemption`'s queue and order, then `qmgr` applied;
/// `trace_size` is the trace header's size.
pub fn build_state(
    machine: &Machine,
    policy: Policy,
    preemption: &Preemption,
    qmgr: &[String],
    trace_size: Option<u32>,
) -> Result<State, MachineError> {
    let (mut config, sets) = match machine {
        Machine::Single { topology, nodes } => {
            if policy == Policy::Config {
                return Err(MachineError::PolicyNeedsConfig);
            }
            let size = match (topology.size(), *nodes) {
                (Some(size), Some(nodes)) if size != nodes => {
                    return Err(MachineError::SizeMismatch {
                        nodes,
                        topology: topology.describe(),
                        size,
                    });
                }
                (Some(size), _) => size,
                (None, nodes) => nodes.or(trace_size).ok_or(MachineError::NoSize)?,
            };
            let mut config = Config::default();
            config.queues.insert("batch".into(), Queue::open("batch"));
            config.server.default_queue = Some("batch".into());
            let set = NodeSet {
                name: "machine".into(),
                topology: topology.clone(),
                nodes: (0..size)
                    .map(|i| NodeDef {
                        name: format!("n{i}"),
                        host: "sim".into(),
                    })
                    .collect(),
                attrs: Default::default(),
            };
            (config, vec![set])
        }
        Machine::Site {
            config, node_sets, ..
        } => ((**config).clone(), node_sets.clone()),
    };
    config.server.scheduling = true;
    // Finished jobs are of no use to later passes: the replay keeps its own
    // records and drops them from the state as it goes.
    config.server.job_history_duration = 0;
    policy.configure(&mut config);
    if let Some(order) = preemption.order {
        let parsed = PreemptOrder::parse(order).map_err(MachineError::PreemptOrder)?;
        config.server.preempt_order = parsed.to_string();
    }
    // What a checkpoint keeps is the site's program's business: a replay
    // cannot say, so it does not pretend to.
    if PreemptOrder::parse(&config.server.preempt_order).is_ok_and(|o| o.may_checkpoint()) {
        return Err(MachineError::PreemptOrder(format!(
            "\"{}\" may checkpoint (C) before it suspends or deletes; a replay cannot tell \
             what a site's checkpoint keeps: use S, R and D",
            config.server.preempt_order
        )));
    }
    if preemption.express {
        add_express(&mut config)?;
    }
    let hosts: BTreeSet<String> = sets
        .iter()
        .flat_map(|s| s.nodes.iter().map(|n| n.host.clone()))
        .collect();
    let mut state = State::new(server_name(machine), config, sets)
        .map_err(|e| MachineError::Core(e.to_string()))?;
    for host in &hosts {
        state.set_host_up(host, true);
    }
    if !qmgr.is_empty() {
        apply_qmgr(&mut state, qmgr)?;
    }
    Ok(state)
}

/// Adds the queue [`EXPRESS_QUEUE`] of priority [`EXPRESS_PRIORITY`] on
/// the default queue's node sets (or node group; a route queue's: every
/// set), and makes sure its jobs may preempt: `preempt_prio` names
/// `express_queue`. Express jobs go first in every job order (the core's
/// `scheduler/order.rs`), so the site's order is kept for the others.
fn add_express(config: &mut Config) -> Result<(), MachineError> {
    if config.queues.contains_key(EXPRESS_QUEUE) {
        return Err(MachineError::Express(format!(
            "the configuration already has a queue \"{EXPRESS_QUEUE}\""
        )));
    }
    let server = &mut config.server;
    if server.preempt_queue_prio > EXPRESS_PRIORITY {
        return Err(MachineError::Express(format!(
            "the configuration's preempt_queue_prio is {}: a queue of priority {EXPRESS_PRIORITY} \
             would not preempt",
            server.preempt_queue_prio
        )));
    }
    if !server.preempt_prio.iter().any(|l| l == "express_queue") {
        server.preempt_prio.insert(0, "express_queue".into());
    }
    let mut express = Queue::open(EXPRESS_QUEUE);
    express.priority = EXPRESS_PRIORITY;
    if let Some(default) = server
        .default_queue
        .as_deref()
        .and_then(|name| config.queues.get(name))
        .filter(|q| !q.is_route())
    {
        express.node_sets = default.node_sets.clone();
        express.node_group = default.node_group.clone();
    }
    config.queues.insert(EXPRESS_QUEUE.into(), express);
    Ok(())
}

/// Runs qmgr commands against the state's configuration, all or nothing.
fn apply_qmgr(state: &mut State, commands: &[String]) -> Result<(), MachineError> {
    let script = commands.join("\n");
    let fail = |e: qmesh_core::qmgr::QmgrError| MachineError::Qmgr {
        line: e.line,
        message: e.message,
    };
    let parsed = qmesh_core::qmgr::parse_script(&script).map_err(fail)?;
    let mut config = state.config().clone();
    let admin = Caller {
        uid: 0,
        gid: 0,
        user: "root".into(),
        group: "root".into(),
        role: Role::Manager,
    };
    qmesh_core::qmgr::run(&parsed, &mut config, state, &admin).map_err(fail)?;
    state.set_config(config);
    Ok(())
}

/// The next instant after `now` at which the calendar changes what a pass
/// may do: a period the queues or node groups name begins or ends, or a
/// shutdown window does. The daemon notices such changes with its timed
/// passes; the replay wakes up for them. `None` when nothing changes.
pub fn next_calendar_change(state: &State, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let config = state.config();
    let mut periods: BTreeSet<&str> = BTreeSet::new();
    for q in config.queues.values() {
        periods.extend(q.periods.iter().map(String::as_str));
        periods.extend(q.period_priority.keys().map(String::as_str));
    }
    for g in config.node_groups.values() {
        periods.extend(g.periods.iter().map(|p| p.period.as_str()));
    }
    let calendar = periods
        .iter()
        .filter_map(|p| config.calendar.next_change(p, now).ok().flatten());
    let closedowns = qmesh_core::scheduler::closedown::collect(state, now)
        .into_iter()
        .flat_map(|c| [Some(c.start), c.end])
        .flatten();
    calendar.chain(closedowns).filter(|&t| t > now).min()
}
