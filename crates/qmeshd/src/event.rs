//! The closed set of things that reach the scheduler task. Services turn
//! requests into events and await the reply; the store's writer turns
//! "now durable" into events; a ticker adds the time.

use qmesh_core::JobId;
use qmesh_proto::v1;
use tokio::sync::{mpsc, oneshot};

use crate::answer::{
    JobOutcome, JobSnapshot, QueueList, ResvShown, ServerReport, Trace, UsageReport, When,
};
use crate::error::TaskError;
use crate::identity::Peer;

/// Where the task's answer goes: the answer, or why not (the service
/// makes it a gRPC status, `crate::status`).
pub type Reply<T> = oneshot::Sender<Result<T, TaskError>>;

/// What a session's stream to its agent carries: at most
/// [`AGENT_OUTBOX`] messages the agent has not read yet (see the task's
/// agent links, `AgentLink::deliver`).
pub type AgentOutbox = mpsc::Sender<v1::DaemonMessage>;

/// Messages a session may hold for its agent. A pass sends a host at most
/// a launch per node and an acknowledgement per ended job; an agent this
/// far behind is stuck, and its session is ended.
pub const AGENT_OUTBOX: usize = 8192;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobAction {
    Delete,
    /// sprelease: delete, but only a running job (a queued one is refused).
    DeleteRunning,
    /// qhold: the holds to set.
    Hold(qmesh_core::Holds),
    /// qrls: the holds to remove (`None`: every one the caller may).
    Release(Option<qmesh_core::Holds>),
}

impl JobAction {
    pub fn verb(self) -> &'static str {
        match self {
            JobAction::Delete => "delete",
            JobAction::DeleteRunning => "release the nodes of",
            JobAction::Hold(_) => "hold",
            JobAction::Release(_) => "release",
        }
    }
}

/// qstat's question. Its answer stays the wire's `StatusReply`, built by
/// the task as it walks the jobs: each pending job's line needs the plan's
/// reason, explanation and estimate, and a copy of every job for the
/// service to convert would cost a 100,000-job listing more.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct StatusQuery {
    /// Jobs named by id: listed first, whatever the filters.
    pub job_ids: Vec<String>,
    /// Queues named: their jobs, after those named by id.
    pub queues: Vec<String>,
    /// -u: only these users' jobs (`user@host` already made `user`).
    pub users: Vec<String>,
    /// -i, -r, -H: only jobs whose state letter is one of these.
    pub states: String,
    /// -x: finished jobs too.
    pub include_finished: bool,
    /// Ids and queues that cannot be listed are named, not refused.
    pub report_refused: bool,
    /// -t: an array's sub-jobs after it.
    pub expand_arrays: bool,
    /// -J: arrays only.
    pub arrays_only: bool,
    /// qstat's plain table: the brief line of each job.
    pub brief: bool,
    /// printjob: the scripts of the jobs named by id.
    pub with_script: bool,
}

/// A qstat listing the task built for anyone, and from which generation
/// of the state (`crate::listings`).
#[derive(Debug)]
pub struct SharedListing {
    pub reply: v1::StatusReply,
    pub generation: u64,
}

pub enum Event {
    /// A metrics scrape: bring the state's gauges up to date, then answer.
    RefreshMetrics(oneshot::Sender<()>),
    /// pbsdsh or qsub -I: start a process of a job (or attach to its
    /// terminal) and wire it to the stream that awaits `token`; the reply
    /// is the host it runs on.
    OpenTask {
        peer: Peer,
        open: v1::TaskOpen,
        token: String,
        reply: Reply<String>,
    },
    /// qsub: the submission, its script and environment; the reply is
    /// the job's full id.
    Submit {
        peer: Peer,
        submission: Box<qmesh_core::Submission>,
        payload: qmesh_core::job::JobPayload,
        reply: Reply<String>,
    },
    Status {
        /// Who asks: a user sees only their own jobs when the server's
        /// query_other_jobs is false.
        peer: Peer,
        query: Box<StatusQuery>,
        reply: Reply<v1::StatusReply>,
    },
    /// qstat's question, for the listing every caller asking it shares
    /// (`crate::listings`): answered `None` when the listing would depend
    /// on who asks (the server's query_other_jobs is false, or scripts
    /// are asked for).
    SharedStatus {
        peer: Peer,
        query: Box<StatusQuery>,
        reply: Reply<Option<SharedListing>>,
    },
    Act {
        peer: Peer,
        action: JobAction,
        ids: Vec<String>,
        reply: Reply<Vec<JobOutcome>>,
    },
    /// qsig: a signal (as qsig writes it) for running jobs.
    Signal {
        peer: Peer,
        signal: String,
        ids: Vec<String>,
        reply: Reply<Vec<JobOutcome>>,
    },
    /// qmsg: a line for running jobs' error or output files.
    Message {
        peer: Peer,
        text: String,
        to_output: bool,
        to_error: bool,
        ids: Vec<String>,
        reply: Reply<Vec<JobOutcome>>,
    },
    /// spwait: the job once it has finished.
    Wait {
        job_id: String,
        reply: Reply<JobSnapshot>,
    },
    /// qmove: jobs to another queue.
    Move {
        peer: Peer,
        destination: String,
        ids: Vec<String>,
        reply: Reply<Vec<JobOutcome>>,
    },
    /// qstat -Q: the queues named, or all of them (`names` empty).
    Queues {
        names: Vec<String>,
        reply: Reply<QueueList>,
    },
    /// qstat -B: the server's own status.
    ServerStatus {
        reply: Reply<ServerReport>,
    },
    /// spq, spfree, spwhat: the last pass's plan.
    Plan {
        peer: Peer,
        reply: Reply<v1::PlanReply>,
    },
    /// spwhen: one job's expected start.
    When {
        peer: Peer,
        job_id: String,
        reply: Reply<When>,
    },
    /// getjid: nodes and the jobs holding them: those named (all when
    /// none is), of `host` only when it is not empty.
    Nodes {
        names: Vec<String>,
        host: String,
        reply: Reply<v1::NodesReply>,
    },
    /// qmgr: a script, run whole or not at all; the reply is its output
    /// and how many commands were applied.
    Qmgr {
        peer: Peer,
        script: String,
        /// Where it came from, for its errors: "-c", "stdin", a file.
        source: String,
        check_only: bool,
        reply: Reply<(String, u32)>,
    },
    /// spusage: the accounts the caller may see (`all`: every one).
    Usage {
        peer: Peer,
        all: bool,
        reply: Reply<UsageReport>,
    },
    AgentHello {
        session: u64,
        hello: v1::AgentHello,
        outbox: AgentOutbox,
        reply: Reply<()>,
    },
    AgentSaid {
        session: u64,
        message: v1::agent_message::Kind,
    },
    AgentGone {
        session: u64,
    },
    /// Stop: make the store durable and answer.
    Shutdown(oneshot::Sender<()>),
    /// The leader cannot renew its election lease (etcd out of reach or
    /// without quorum): another qmeshd may lead soon, so this one turns
    /// read-only, as on a failing store (`leader.rs`).
    LeadUncertain {
        why: String,
    },
    /// The runjob hooks' verdict on a started job not yet launched
    /// (`task/runjob.rs`): `None` they accepted it; else the hook and its
    /// sentence.
    RunjobVerdict {
        job: JobId,
        refused: Option<(String, String)>,
    },
    /// qdel, with its options (-W force, -x); sprelease goes by `Act`.
    Delete {
        peer: Peer,
        ids: Vec<String>,
        /// -W force: ended at once if the agent cannot confirm.
        force: bool,
        /// -x: the history goes too.
        purge_history: bool,
        reply: Reply<Vec<JobOutcome>>,
    },
    /// qrerun: running jobs killed and queued again (`-W force`; held
    /// once queued, as scontrol requeuehold asks).
    Rerun {
        peer: Peer,
        ids: Vec<String>,
        how: qmesh_core::qrerun::Rerun,
        reply: Reply<Vec<JobOutcome>>,
    },
    /// qorder: two queued jobs exchange places.
    Order {
        peer: Peer,
        first: String,
        second: String,
        reply: Reply<Vec<JobOutcome>>,
    },
    /// qrun: jobs started now, past policy (`nodes`: -H, when given).
    Run {
        peer: Peer,
        ids: Vec<String>,
        nodes: Option<String>,
        reply: Reply<Vec<JobOutcome>>,
    },
    /// sacct: the jobs of a time window, from the accounting log and the
    /// state (`task/accounting.rs`).
    Accounting {
        peer: Peer,
        request: v1::AccountingRequest,
        reply: Reply<v1::AccountingReply>,
    },
    /// tracejob: a job's lines in the job logs.
    Trace {
        peer: Peer,
        job_id: String,
        days: u32,
        reply: Reply<Trace>,
    },
    /// qalter: jobs' attributes changed, all or none per job.
    Alter {
        peer: Peer,
        ids: Vec<String>,
        alteration: Box<qmesh_core::qalter::Alteration>,
        reply: Reply<Vec<JobOutcome>>,
    },
    /// pbs_rsub (no `id`) and pbs_ralter: a reservation confirmed or
    /// refused.
    Reserve {
        peer: Peer,
        id: Option<String>,
        request: Box<qmesh_core::rsub::ResvRequest>,
        reply: Reply<ResvShown>,
    },
    /// pbs_rstat.
    Reservations {
        ids: Vec<String>,
        reply: Reply<Vec<ResvShown>>,
    },
    /// pbs_rdel.
    Unreserve {
        peer: Peer,
        ids: Vec<String>,
        reply: Reply<Vec<JobOutcome>>,
    },
}

impl Event {
    /// Whether the task's answer only reads: such a turn leaves every
    /// listing as it was (`crate::listings::Generation`). Any other event
    /// may change what a listing shows.
    pub fn only_reads(&self) -> bool {
        matches!(
            self,
            Event::Status { .. }
                | Event::SharedStatus { .. }
                | Event::Plan { .. }
                | Event::When { .. }
                | Event::Queues { .. }
                | Event::ServerStatus { .. }
                | Event::Nodes { .. }
                | Event::Reservations { .. }
                | Event::RefreshMetrics(_)
                | Event::Wait { .. }
        )
    }
}

/// What to do once the changes written before it are durable.
#[derive(Debug)]
pub enum AfterDurable {
    /// The job's start is on disk: tell its agent.
    Launch(JobId),
    /// The job's end is on disk: the agent may forget it.
    Ack { host: String, job: JobId },
    /// The store could not make a turn durable (`why`): these items wait
    /// (no launch, no acknowledgement), and the daemon refuses changes
    /// (`task/read_only.rs`).
    NotDurable {
        items: Vec<AfterDurable>,
        why: String,
    },
    /// The store, reopened, holds the whole state again: changes are
    /// taken again and what was held back goes on.
    Resynced,
}
