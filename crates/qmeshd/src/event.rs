//! The closed set of things that reach the scheduler task. Services turn
//! requests into events and await the reply; the store's writer turns
//! "now durable" into events; a ticker adds the time.

use qmesh_core::JobId;
use qmesh_proto::v1;
use tokio::sync::{mpsc, oneshot};
use tonic::Status;

use crate::identity::Peer;

pub type Reply<T> = oneshot::Sender<Result<T, Status>>;

/// What a session's stream to its agent carries: at most
/// [`AGENT_OUTBOX`] messages the agent has not read yet (see
/// `task::AgentLink::deliver`).
pub type AgentOutbox = mpsc::Sender<Result<v1::DaemonMessage, Status>>;

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
        request: v1::StatusRequest,
        reply: Reply<v1::StatusReply>,
    },
    Act {
        peer: Peer,
        action: JobAction,
        ids: Vec<String>,
        reply: Reply<v1::JobsReply>,
    },
    /// qsig: a signal for running jobs.
    Signal {
        peer: Peer,
        request: v1::SignalRequest,
        reply: Reply<v1::JobsReply>,
    },
    Wait {
        job_id: String,
        reply: Reply<v1::JobInfo>,
    },
    /// qmove: jobs to another queue.
    Move {
        peer: Peer,
        destination: String,
        ids: Vec<String>,
        reply: Reply<v1::JobsReply>,
    },
    Queues {
        request: v1::QueueStatusRequest,
        reply: Reply<v1::QueueStatusReply>,
    },
    /// qstat -B: the server's own status.
    ServerStatus {
        reply: Reply<v1::ServerStatusReply>,
    },
    /// spq, spfree, spwhat: the last pass's plan.
    Plan {
        peer: Peer,
        reply: Reply<v1::PlanReply>,
    },
    /// spwhen: one job's expected start.
    When {
        peer: Peer,
        request: v1::WhenRequest,
        reply: Reply<v1::WhenReply>,
    },
    /// getjid: nodes and the jobs holding them.
    Nodes {
        request: v1::NodesRequest,
        reply: Reply<v1::NodesReply>,
    },
    Qmgr {
        peer: Peer,
        request: v1::QmgrRequest,
        reply: Reply<v1::QmgrReply>,
    },
    Usage {
        peer: Peer,
        request: v1::UsageRequest,
        reply: Reply<v1::UsageReply>,
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
    /// qdel, with its options (-W force, -x); sprelease goes by `Act`.
    Delete {
        peer: Peer,
        request: v1::JobsRequest,
        reply: Reply<v1::JobsReply>,
    },
    /// qrerun: running jobs killed and queued again.
    Rerun {
        peer: Peer,
        request: v1::RerunRequest,
        reply: Reply<v1::JobsReply>,
    },
    /// qorder: two queued jobs exchange places.
    Order {
        peer: Peer,
        request: v1::OrderRequest,
        reply: Reply<v1::JobsReply>,
    },
    /// qrun: jobs started now, past policy.
    Run {
        peer: Peer,
        request: v1::RunRequest,
        reply: Reply<v1::JobsReply>,
    },
    /// tracejob: a job's lines in the job logs.
    Trace {
        peer: Peer,
        request: v1::TraceRequest,
        reply: Reply<v1::TraceReply>,
    },
    /// qalter: jobs' attributes changed, all or none per job.
    Alter {
        peer: Peer,
        request: Box<v1::AlterRequest>,
        reply: Reply<v1::JobsReply>,
    },
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
