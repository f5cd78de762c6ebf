//! The server's configuration as qmgr shapes it: server attributes and the
//! queues. It is stored as one record and replaced as a whole, so a qmgr
//! script applies all of its commands or none.

mod accounts;
mod node_sets;
mod reservations;
mod resources;

pub use node_sets::{check_node_groups, merge_sets};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::account::Account;
use crate::acl::ServerAcl;
use crate::calendar::Calendar;
use crate::limits::JobLimits;
use crate::node::NodeSet;
use crate::node_group::NodeGroup;
use crate::queue::Queue;
use crate::shutdown::Shutdown;
use crate::site_resources::ResourceDef;

/// Server attributes (`qmgr -c "list server"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerAttrs {
    /// Whether the scheduler starts jobs at all.
    pub scheduling: bool,
    /// Where a job goes when qsub names no queue.
    pub default_queue: Option<String>,
    /// Users who may change the configuration (root always may).
    pub managers: Vec<String>,
    /// Users who may act on every job and set attributes.
    pub operators: Vec<String>,
    /// Seconds a finished job stays visible to `qstat -x`.
    pub job_history_duration: u64,
    /// Seconds between SIGTERM and SIGKILL when a job is killed.
    pub kill_delay: u64,
    /// The most sub-jobs an array may have (PBS Pro's `max_array_size`,
    /// whose default is 10,000; qmesh keeps an array as one record until
    /// its sub-jobs start, so it allows 100,000).
    pub max_array_size: u32,
    /// A host whose load (run-queue length) reaches this many times its
    /// CPUs takes no new job (NCAR: 4); 0 (the default) turns the check
    /// off: on space-shared nodes a job has its node to itself.
    pub max_load_factor: f64,
    /// Whether a job that names no `qsub -r` may be rerun when its node
    /// is lost (requeued rather than failed).
    pub default_rerunnable: bool,
    /// Seconds between scheduling passes when nothing else prompts one.
    pub scheduler_iteration: u64,
    /// Wall time, in seconds, of a job that names none and whose queue has
    /// neither a default nor a maximum (`resources_default.walltime`).
    pub default_walltime: u64,

    // --- Scheduling policy (see `scheduler`) ---
    /// How pending jobs are ordered.
    pub job_order: JobOrder,
    /// Queue priority sorts first, the job order within it (PBS `by_queue`).
    /// `priority_aging` mixes the two by its formula and ignores this.
    pub by_queue: bool,
    /// `priority_aging`: priority points a job gains per hour it waits
    /// (SDSC: job_priority = queue_priority + age_factor × hours).
    pub age_factor: f64,
    /// SDSC blocking: a job whose priority exceeds this and cannot start
    /// has nodes held for it. 0 turns blocking off.
    pub block_priority: f64,
    /// How jobs may start out of order around reservations.
    pub backfill: Backfill,
    /// How many pending jobs a pass considers, in priority order (NCAR's
    /// finite search depth); 0 for all.
    pub search_depth: u32,

    // --- Fair share and limits (see `account`) ---
    /// Seconds over which past usage halves, for `fairshare`.
    pub fairshare_half_life: u64,
    /// Most queued (not yet started) jobs one user may have.
    pub max_user_queued: Option<u32>,
    /// Most running jobs one user may have; more wait (UserLimit).
    pub max_user_run: Option<u32>,
    /// Most node-hours one user's queued jobs may ask for.
    pub max_user_node_hours: Option<u64>,
    /// The same limits for a group (an account with its sub-accounts).
    pub max_group_queued: Option<u32>,
    pub max_group_run: Option<u32>,
    pub max_group_node_hours: Option<u64>,

    // --- PBS and Torque attributes admin guides set ---
    /// PBS's job-count limits on the server: `max_running`, `max_queuable`,
    /// `max_user_queuable` and the new-style `max_run`, `max_queued`
    /// (groups there are Unix groups).
    #[serde(skip_serializing_if = "JobLimits::is_empty")]
    pub limits: JobLimits,
    /// Who may submit at all (`acl_users`, `acl_hosts`, `acl_roots`).
    #[serde(skip_serializing_if = "ServerAcl::is_empty")]
    pub acl: ServerAcl,
    /// Whether users see other users' jobs in qstat (PBS's
    /// `query_other_jobs`; qmesh's default is true, as installed PBS
    /// servers set it).
    pub query_other_jobs: bool,
    /// Hosts besides the compute hosts whose agents may relay commands
    /// (login nodes; Torque's `submit_hosts`): `login1`, `*.example.com`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub submit_hosts: Vec<String>,
    /// Whether the compute hosts' agents may relay commands (jobs submit
    /// jobs; Torque's `allow_node_submit`, true here by default).
    pub allow_node_submit: bool,
    /// `resources_max.NAME`, `resources_min.NAME`, `resources_default.NAME`
    /// for every job, by resource, as written (walltime's default is
    /// `default_walltime`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub resources_max: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub resources_min: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub resources_default: BTreeMap<String, String>,
    /// `resources_available.NAME` for the resources consumed per queue and
    /// server (flag `q`): what all running jobs together may use, as
    /// written (`matlab = 4`; see `consumable.rs`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub resources_available: BTreeMap<String, String>,
    /// The administrator's note (qmgr list server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Attributes of PBS and Torque that qmgr accepted, which qmesh keeps
    /// and prints but does not act on (qmgr warned when they were set).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub inert: BTreeMap<String, String>,

    // --- Who may reserve nodes (pbs_rsub; see `reservation`) ---
    /// Whether pbs_rsub takes reservations at all (PBS `resv_enable`).
    pub resv_enable: bool,
    /// Whether `acl_resv_users` is checked (managers and operators always
    /// may reserve).
    pub acl_resv_user_enable: bool,
    pub acl_resv_users: Vec<String>,
    /// Whether `acl_resv_groups` is checked.
    pub acl_resv_group_enable: bool,
    pub acl_resv_groups: Vec<String>,

    // --- Preemption (see `preempt`) ---
    /// Queues at or above this priority are express: their jobs may
    /// preempt (PBS Pro's `preempt_queue_prio`, 150).
    pub preempt_queue_prio: i32,
    /// How a preempted job gives its nodes up (PBS Pro's `SCR`).
    pub preempt_order: String,
    /// PBS Pro's preemption levels; `express_queue` turns preemption on.
    pub preempt_prio: Vec<String>,
}

/// The order a pass takes pending jobs in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobOrder {
    /// Submission order (after queue priority, with `by_queue`).
    #[default]
    Fifo,
    /// SDSC: queue priority plus age_factor per hour waited.
    PriorityAging,
    /// NCAR: highest response ratio next, (wait + wall time) / wall time.
    Hrn,
    /// NCAR/Kay–Lauder: accounts whose decayed usage is light against
    /// their shares go first.
    Fairshare,
}

impl JobOrder {
    pub const ALL: [JobOrder; 4] = [
        JobOrder::Fifo,
        JobOrder::PriorityAging,
        JobOrder::Hrn,
        JobOrder::Fairshare,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobOrder::Fifo => "fifo",
            JobOrder::PriorityAging => "priority_aging",
            JobOrder::Hrn => "hrn",
            JobOrder::Fairshare => "fairshare",
        }
    }
}

/// Backfilling: none (a job that does not fit is passed over, unless
/// blocking holds nodes for it), EASY (the first job that cannot start
/// gets a reservation; others may start if they do not delay it),
/// conservative (every pending job gets a reservation), or EASY++
/// (Tsafrir, Etsion and Feitelson): EASY planned with predicted run times
/// (`predict.rs`), the jobs behind the first tried shortest predicted
/// first, and none started that would delay the first job's start as
/// requested wall times plan it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backfill {
    None,
    #[default]
    Easy,
    Conservative,
    /// `easy++`.
    EasyPredicted,
}

impl Backfill {
    pub const ALL: [Backfill; 4] = [
        Backfill::None,
        Backfill::Easy,
        Backfill::Conservative,
        Backfill::EasyPredicted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Backfill::None => "none",
            Backfill::Easy => "easy",
            Backfill::Conservative => "conservative",
            Backfill::EasyPredicted => "easy++",
        }
    }
}

impl Default for ServerAttrs {
    fn default() -> Self {
        ServerAttrs {
            scheduling: true,
            default_queue: None,
            managers: Vec::new(),
            operators: Vec::new(),
            job_history_duration: 14 * 24 * 3600,
            kill_delay: 30,
            max_array_size: 100_000,
            default_rerunnable: true,
            max_load_factor: 0.0,
            scheduler_iteration: 10,
            default_walltime: 3600,
            job_order: JobOrder::Fifo,
            by_queue: true,
            age_factor: 0.0,
            block_priority: 0.0,
            backfill: Backfill::Easy,
            search_depth: 0,
            fairshare_half_life: 7 * 24 * 3600,
            max_user_queued: None,
            max_user_run: None,
            max_user_node_hours: None,
            max_group_queued: None,
            max_group_run: None,
            max_group_node_hours: None,
            limits: JobLimits::default(),
            acl: ServerAcl::default(),
            query_other_jobs: true,
            submit_hosts: Vec::new(),
            allow_node_submit: true,
            resources_max: BTreeMap::new(),
            resources_min: BTreeMap::new(),
            resources_default: BTreeMap::new(),
            resources_available: BTreeMap::new(),
            comment: None,
            inert: BTreeMap::new(),
            resv_enable: true,
            acl_resv_user_enable: false,
            acl_resv_users: Vec::new(),
            acl_resv_group_enable: false,
            acl_resv_groups: Vec::new(),
            // PBS Pro's default (`preempt::EXPRESS_PRIORITY`).
            preempt_queue_prio: 150,
            preempt_order: "SCR".into(),
            preempt_prio: vec!["express_queue".into(), "normal_jobs".into()],
        }
    }
}

/// Everything qmgr manages.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub server: ServerAttrs,
    #[serde(default)]
    pub queues: BTreeMap<String, Queue>,
    /// Accounts by group name (`qmgr -c "create account c1"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub accounts: BTreeMap<String, Account>,
    /// Node sets made with qmgr (`qmgr -c "create node_set s1 ..."`), by
    /// name. The sets of the daemon's file are not here: they describe the
    /// machine and qmgr only reads them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_sets: BTreeMap<String, NodeSet>,
    /// Node groups by name (`qmgr -c "create node_group short"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_groups: BTreeMap<String, NodeGroup>,
    /// The site's week: time zone, prime time, holidays, named periods.
    #[serde(default, skip_serializing_if = "is_default_calendar")]
    pub calendar: Calendar,
    /// Planned shutdown windows by name (`qmgr -c "create shutdown maint"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub shutdowns: BTreeMap<String, Shutdown>,
    /// Nodes an administrator took out of service, by node name (`qmgr -c
    /// "set node n7 state = offline"`). Kept with the configuration, so a
    /// restart keeps them out.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_marks: BTreeMap<String, crate::node::NodeMark>,
    /// Resources the site defined (`qmgr -c "create resource ngpus
    /// type = long, flag = nh"`), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resources: BTreeMap<String, ResourceDef>,
    /// Site hooks by name (`qmgr -c "create hook h1"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hooks: BTreeMap<String, crate::hook::Hook>,
    /// Advance and standing reservations by number (`pbs_rsub`), each with
    /// its queue `R{id}` in `queues`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reservations: BTreeMap<u64, crate::reservation::Reservation>,
    /// The number the next reservation gets.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub next_reservation: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_default_calendar(calendar: &Calendar) -> bool {
    *calendar == Calendar::default()
}

impl Config {
    /// Every period name something refers to exists in the calendar:
    /// queues' periods and per-period priorities, node groups' periods.
    /// The error names the referrer and the period.
    pub fn check_periods(&self) -> Result<(), String> {
        let known = self.calendar.period_names();
        let missing = |name: &String| !known.contains(name);
        let hint = || {
            format!(
                "periods: {}; see qmgr -c \"list calendar\"",
                known.join(", ")
            )
        };
        for q in self.queues.values() {
            if let Some(p) = q
                .periods
                .iter()
                .chain(q.period_priority.keys())
                .find(|p| missing(p))
            {
                return Err(format!(
                    "queue \"{}\": period \"{p}\" does not exist; {}",
                    q.name,
                    hint()
                ));
            }
        }
        for g in self.node_groups.values() {
            if let Some(p) = g.periods.iter().map(|p| &p.period).find(|p| missing(p)) {
                return Err(format!(
                    "node group \"{}\": period \"{p}\" does not exist; {}",
                    g.name,
                    hint()
                ));
            }
        }
        Ok(())
    }

    /// The resources the site declared that jobs may ask for (`qmgr
    /// create resource`, without the r or i flag), besides the built-in
    /// ones.
    pub fn requestable_site_resources(&self) -> Vec<&str> {
        self.resources
            .values()
            .filter(|def| def.requestable())
            .map(|def| def.name.as_str())
            .collect()
    }

    pub fn queue(&self, name: &str) -> Option<&Queue> {
        self.queues.get(name)
    }

    /// The queue a job goes to when it names none: `default_queue`, else
    /// the only queue if there is just one.
    pub fn default_queue(&self) -> Option<&str> {
        match &self.server.default_queue {
            Some(name) => Some(name.as_str()),
            None if self.queues.len() == 1 => self.queues.keys().next().map(|s| s.as_str()),
            None => None,
        }
    }
}
