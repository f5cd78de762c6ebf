//! Queues: where jobs wait, with the limits and defaults that shape them.

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use crate::acl::QueueAcl;
use crate::limits::JobLimits;
use crate::time::TimeOfDay;

/// What a queue's running jobs undergo when its period ends (EPCC: batch
/// jobs aborted at the end of each configuration, interactive work flows
/// through).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeriodEnd {
    /// They run on.
    #[default]
    Continue,
    /// They are killed; the scheduler starts none that would be.
    Kill,
    /// They are killed and queued again; the scheduler starts none that
    /// would be.
    Requeue,
}

impl PeriodEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            PeriodEnd::Continue => "continue",
            PeriodEnd::Kill => "kill",
            PeriodEnd::Requeue => "requeue",
        }
    }

    pub fn is_continue(&self) -> bool {
        *self == PeriodEnd::Continue
    }

    /// Whether jobs must end before the period does.
    pub fn ends_jobs(self) -> bool {
        self != PeriodEnd::Continue
    }
}

/// Execution queues run jobs. Route queues (PBS's word; NQS says pipe)
/// run none: a job submitted or moved to one is sent on at once to the
/// first of its destinations that takes it (see [`crate::route`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueType {
    #[default]
    Execution,
    Route,
}

impl QueueType {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueType::Execution => "execution",
            QueueType::Route => "route",
        }
    }
}

/// A queue. A queue made by `qmgr create queue` starts neither enabled nor
/// started, as in PBS and NQS: the admin opens it when it is ready.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Queue {
    pub name: String,
    #[serde(default)]
    pub queue_type: QueueType,
    /// Higher runs first.
    #[serde(default)]
    pub priority: i32,
    /// Accepts new jobs.
    #[serde(default)]
    pub enabled: bool,
    /// Its jobs may start.
    #[serde(default)]
    pub started: bool,
    #[serde(default)]
    pub max_nodes: Option<u32>,
    #[serde(default)]
    pub min_nodes: Option<u32>,
    /// Seconds.
    #[serde(default)]
    pub max_walltime: Option<u64>,
    /// Nodes for a job that names none (NQS `set per_request ncpus`).
    #[serde(default)]
    pub default_nodes: Option<u32>,
    /// Seconds, for a job that names none.
    #[serde(default)]
    pub default_walltime: Option<u64>,
    /// The node sets its jobs run on; empty means all of them.
    #[serde(default)]
    pub node_sets: Vec<String>,
    /// The node group its jobs run on, whose sets may change with the
    /// calendar's periods; when set, it replaces `node_sets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_group: Option<String>,
    /// Calendar periods in which its jobs may start (EPCC: a DAY queue);
    /// empty: always.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub periods: Vec<String>,
    /// Its priority while a period is on, in place of `priority` (EPCC:
    /// the queue order reversed on Monday nights); the highest of the
    /// periods on wins.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub period_priority: BTreeMap<String, i32>,
    /// What happens to its running jobs when its periods end or their
    /// nodes leave its node group.
    #[serde(default, skip_serializing_if = "PeriodEnd::is_continue")]
    pub period_end: PeriodEnd,
    /// Seconds before such an end at which its jobs get `warning_signal`,
    /// so they can checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_end_warning: Option<u64>,
    /// The warning signal (default SIGUSR1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning_signal: Option<String>,
    /// Local times of day at which its jobs are reordered in group cascade
    /// order (EPCC); empty: only on command.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reorder_times: Vec<TimeOfDay>,
    /// Route queues: where jobs go, tried in order (PBS
    /// `route_destinations`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub route_destinations: Vec<String>,
    /// Route queues: where a job that names neither nodes nor wall time
    /// goes (EPCC's COMPILE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_destination: Option<String>,
    /// Route queues: where a job that no destination takes waits, with
    /// the reason in its comment (EPCC's holding queue, never started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holding_queue: Option<String>,
    /// PBS's limits on its jobs: how many run and how many it holds, in
    /// all, per user, per group (`max_running`, `max_user_run`,
    /// `max_run = "[u:PBS_GENERIC=5]"`, `max_queuable`, `max_queued`...).
    #[serde(default, skip_serializing_if = "JobLimits::is_empty")]
    pub limits: JobLimits,
    /// Who may put jobs in it (`acl_users`, `acl_groups`, `acl_hosts`...).
    #[serde(default, skip_serializing_if = "QueueAcl::is_empty")]
    pub acl: QueueAcl,
    /// `resources_max.NAME` for the resources that have no field above
    /// (`ncpus`, `mem`, site-defined ones), by name, as written.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resources_max: BTreeMap<String, String>,
    /// `resources_min.NAME`, likewise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resources_min: BTreeMap<String, String>,
    /// `resources_default.NAME`, likewise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resources_default: BTreeMap<String, String>,
    /// `resources_available.NAME` for the resources consumed per queue and
    /// server (flag `q`): what its running jobs together may use.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resources_available: BTreeMap<String, String>,
    /// The administrator's note (qstat -Q -f, list queue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Attributes of PBS and Torque that qmgr accepted, which qmesh keeps
    /// and prints but does not act on (qmgr warned when they were set).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inert: BTreeMap<String, String>,
    /// The reservation whose queue it is (`R12`): its jobs run only in
    /// the reservation's occurrences, on its nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<u64>,
}

impl Queue {
    pub fn new(name: &str) -> Queue {
        Queue {
            name: name.to_string(),
            queue_type: QueueType::Execution,
            priority: 0,
            enabled: false,
            started: false,
            max_nodes: None,
            min_nodes: None,
            max_walltime: None,
            default_nodes: None,
            default_walltime: None,
            node_sets: Vec::new(),
            node_group: None,
            periods: Vec::new(),
            period_priority: BTreeMap::new(),
            period_end: PeriodEnd::Continue,
            period_end_warning: None,
            warning_signal: None,
            reorder_times: Vec::new(),
            route_destinations: Vec::new(),
            default_destination: None,
            holding_queue: None,
            limits: JobLimits::default(),
            acl: QueueAcl::default(),
            resources_max: BTreeMap::new(),
            resources_min: BTreeMap::new(),
            resources_default: BTreeMap::new(),
            resources_available: BTreeMap::new(),
            comment: None,
            inert: BTreeMap::new(),
            reservation: None,
        }
    }

    /// A queue that accepts and runs jobs, as the embedded default has.
    pub fn open(name: &str) -> Queue {
        Queue {
            enabled: true,
            started: true,
            ..Queue::new(name)
        }
    }

    pub fn is_route(&self) -> bool {
        self.queue_type == QueueType::Route
    }

    /// Whether the queue's jobs may use nodes of this set.
    pub fn uses_set(&self, set: &str) -> bool {
        self.node_sets.is_empty() || self.node_sets.iter().any(|s| s == set)
    }
}

/// Queue names follow PBS: a letter, then letters, digits, `_` or `-`, at
/// most 15 characters.
pub fn valid_queue_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    match chars.next() {
        None => return Err("it is empty".into()),
        Some(c) if !c.is_ascii_alphabetic() => return Err("it must start with a letter".into()),
        _ => {}
    }
    if name.len() > 15 {
        return Err("it is longer than 15 characters".into());
    }
    if let Some(c) = chars.find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-')) {
        return Err(format!(
            "'{c}' is not allowed; use letters, digits, _ and -"
        ));
    }
    Ok(())
}
