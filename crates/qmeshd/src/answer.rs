//! What the scheduler task answers, in the daemon's terms: core types and
//! the few structs that gather them. The services make the wire's replies
//! of them (`crate::service::reply`).

use qmesh_core::account::AccountReport;
use qmesh_core::joblog::LogLine;
use qmesh_core::scheduler::{Reason, Status};
use qmesh_core::state::StateCounts;
use qmesh_core::{Job, Queue, ServerAttrs, Time};

/// One job's answer in a reply about several (qdel, qhold, qalter...):
/// the id as the caller wrote it, and why it was refused if it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobOutcome {
    pub job_id: String,
    pub refused: Option<String>,
}

impl JobOutcome {
    pub fn new<T, E: std::fmt::Display>(job_id: String, outcome: &Result<T, E>) -> JobOutcome {
        JobOutcome {
            job_id,
            refused: outcome.as_ref().err().map(|e| e.to_string()),
        }
    }
}

/// A reservation as it stood when the task answered (pbs_rsub, pbs_rstat):
/// with the jobs in its queue, the server's name and its calendar's zone.
#[derive(Clone, Debug)]
pub struct ResvShown {
    pub resv: qmesh_core::reservation::Reservation,
    pub jobs: u32,
    pub server: String,
    pub zone: String,
    pub at: Time,
}

/// A job as it stood when the task answered, with what showing it needs
/// (the server's name, the time).
#[derive(Clone, Debug)]
pub struct JobSnapshot {
    pub job: Box<Job>,
    pub server: String,
    pub at: Time,
}

/// qstat -Q: each queue with its jobs by state, its capacity (nodes) and
/// what the calendar makes of it now.
#[derive(Debug)]
pub struct QueueList {
    pub queues: Vec<(Queue, StateCounts, u32, QueueNow)>,
    pub server: String,
    pub at: Time,
}

/// A queue by the calendar now: one of its periods is on, and the node
/// sets (names) it draws on.
#[derive(Debug)]
pub struct QueueNow {
    pub open: bool,
    pub sets: Vec<String>,
}

/// spusage: the accounts' reports.
#[derive(Debug)]
pub struct UsageReport {
    pub accounts: Vec<AccountReport>,
    pub server: String,
    pub at: Time,
}

/// tracejob: the job's lines in the logs of the last `days` days.
#[derive(Debug)]
pub struct Trace {
    pub job_id: String,
    pub lines: Vec<LogLine>,
    pub days: u32,
}

/// qstat -B: the server's attributes and what it holds now.
#[derive(Debug)]
pub struct ServerReport {
    pub server: String,
    pub at: Time,
    pub attrs: ServerAttrs,
    pub default_queue: String,
    /// The jobs of every queue, by state.
    pub counts: StateCounts,
    pub finished: u32,
    pub nodes_total: u32,
    /// Nodes that hold a job.
    pub nodes_assigned: u32,
    /// `resources_assigned.NAME`: what the running jobs hold of each
    /// resource the server bounds.
    pub resources_assigned: Vec<(String, String)>,
}

/// spwhen: when a job is expected to start, and why not sooner.
#[derive(Debug)]
pub struct When {
    pub job: Box<Job>,
    pub server: String,
    /// A pending job's place in the plan: its status, the plan's reason,
    /// its priority; `None` for a running job.
    pub place: Option<(Status, Option<Reason>, f64)>,
    /// The expected start as requested wall times plan it (a running
    /// job's start).
    pub start: Option<Time>,
    /// A pending job's expected start as predicted run times plan it
    /// (`qmesh_core::predict`).
    pub predicted_start: Option<Time>,
    /// Why a pending job waits; `None` for a running job.
    pub reason: Option<Reason>,
    pub explanation: String,
    pub at: Time,
}
