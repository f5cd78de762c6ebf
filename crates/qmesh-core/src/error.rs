//! Every way a request can be refused by the core, each phrased to name the
//! thing and what to do about it. The daemon maps [`ErrorKind`] to a status
//! code in one table; the text reaches the user as it is.

use crate::ids::JobState;

/// What kind of refusal, for the one table that maps errors to status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request itself is malformed or out of limits.
    Invalid,
    /// It names something that does not exist.
    NotFound,
    /// The caller may not do this.
    Denied,
    /// It cannot be done in the present state.
    Conflict,
    /// A limit or an allocation would be passed.
    Exhausted,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoreError {
    #[error(
        "bad wall time \"{text}\": {why}; write [[hours:]minutes:]seconds, e.g. 1:30:00, or days:hours:minutes:seconds"
    )]
    BadDuration { text: String, why: String },
    #[error("bad value \"{value}\" for resource {name}: {why}")]
    BadResource {
        name: String,
        value: String,
        why: String,
    },
    #[error("unknown resource \"{name}\"; the resources that exist: {known}")]
    UnknownResource { name: String, known: String },
    #[error("bad job name \"{name}\": {why}")]
    BadJobName { name: String, why: String },
    /// A qsub option's value, refused with what to write instead.
    #[error("{message}")]
    BadOption { message: String },
    /// A job that asks for something the machine cannot give it: nodes or
    /// hosts it names that do not exist, or a placement no host allows.
    #[error("{message}")]
    Unplaceable { message: String },
    /// `qsub -u` naming another user.
    #[error(
        "-u {asked}: qmesh runs a job as the user who submits it ({user}); submit as {asked} instead (e.g. sudo -u {asked} qsub ...)"
    )]
    OtherUser { asked: String, user: String },
    #[error("bad path \"{path}\": {why}")]
    BadPath { path: String, why: String },
    #[error("queue \"{queue}\" does not exist; see qstat -Q")]
    NoSuchQueue { queue: String },
    #[error("queue \"{queue}\" is not enabled and accepts no jobs; see qstat -Q")]
    QueueDisabled { queue: String },
    #[error(
        "job asks for {requested} nodes but queue \"{queue}\" allows at most {max} (resources_max.nodes)"
    )]
    TooManyNodes {
        queue: String,
        requested: u32,
        max: u32,
    },
    #[error(
        "job asks for {requested} nodes but queue \"{queue}\" needs at least {min} (resources_min.nodes)"
    )]
    TooFewNodes {
        queue: String,
        requested: u32,
        min: u32,
    },
    #[error(
        "job asks for wall time {requested} but queue \"{queue}\" allows at most {max} (resources_max.walltime)"
    )]
    WalltimeTooLong {
        queue: String,
        requested: String,
        max: String,
    },
    #[error(
        "job asks for {requested} nodes but queue \"{queue}\" can reach only {capacity} nodes; it could never run"
    )]
    ExceedsCapacity {
        queue: String,
        requested: u32,
        capacity: u32,
    },
    #[error(
        "job asks for {requested} nodes with {needs} but queue \"{queue}\" reaches only {capacity} such nodes ({sets}); it could never run"
    )]
    NoMatchingNodes {
        queue: String,
        requested: u32,
        needs: String,
        capacity: u32,
        sets: String,
    },
    #[error("job {id} does not exist; see qstat")]
    NoSuchJob { id: String },
    #[error(
        "job {id} belongs to {owner}; only its owner, an operator or a manager may {action} it"
    )]
    NotYourJob {
        id: String,
        owner: String,
        action: String,
    },
    #[error("cannot {action} job {id}: it is {state}")]
    WrongState {
        id: String,
        action: String,
        state: JobState,
    },
    #[error(
        "{what} needs {need} rights; see the managers and operators lists (qmgr -c \"list server\")"
    )]
    PermissionDenied { what: String, need: String },
    #[error("bad job id \"{text}\": write SEQ or SEQ.SERVER, e.g. 17 or 17.{server}")]
    BadJobId { text: String, server: String },
    #[error("node \"{node}\" is unknown; see the node sets in the configuration")]
    NoSuchNode { node: String },
    #[error("bad node sets: {why}")]
    BadNodeSets { why: String },
    #[error(
        "bad dependency \"{word}\": {why}; write depend=TYPE:ID[:ID...][,TYPE:ID...] with TYPE after, afterok, afternotok, afterany or their before forms, or on:N, e.g. afterok:12"
    )]
    BadDependency { word: String, why: String },
    #[error("job {id} does not exist or has left the history; see qstat -x")]
    NoSuchPredecessor { id: String },
    #[error("{dependency} can never be satisfied: job {id} has already ended ({how})")]
    DependencyUnsatisfiable {
        dependency: String,
        id: String,
        how: String,
    },
    #[error("account \"{account}\" does not exist; see qmgr list account")]
    NoSuchAccount { account: String },
    #[error(
        "user {user} may not charge account \"{account}\": only the users of account {group} may (see qmgr list account {group}, and spusage for your accounts)"
    )]
    NotAccountUser {
        user: String,
        account: String,
        group: String,
    },
    #[error("user {user} must name an account with qsub -A ACCOUNT: {why}")]
    AccountRequired { user: String, why: String },
    /// `need`: "128.0 node-hours (64 nodes × 02:00:00)"; `left`: "100.5 of
    /// 5000 remain (4800.0 used, 99.5 committed to queued and running jobs)".
    #[error("account {group}: job needs {need} but only {left}; see spusage")]
    AllocationExceeded {
        group: String,
        need: String,
        left: String,
    },
    /// `asked`: "256 nodes for 13:00:00"; `destinations`: each one's
    /// limits, "MPP_64 takes 1-64 nodes up to 01:00:00; ...".
    #[error(
        "route queue \"{queue}\" has no destination for {asked} and no holding_queue: {destinations}; ask for what one of them takes, or see qstat -Q -f {queue}"
    )]
    NoRoute {
        queue: String,
        asked: String,
        destinations: String,
    },
    #[error(
        "route queues send jobs round in a loop: {chain}; remove one of them from the other's route_destinations (qmgr)"
    )]
    RouteLoop { chain: String },
    #[error(
        "cannot move job {id}: it is {state}; only jobs that have not started (queued, held, waiting) move"
    )]
    NotMovable { id: String, state: JobState },
    #[error(
        "{who} {what}, above the limit {limit} = {max}; wait until some of the queued jobs start, or delete some"
    )]
    LimitReached {
        who: String,
        what: String,
        limit: String,
        max: String,
    },
    #[error("bad signal \"{text}\": {why}; write a name or a number, e.g. SIGUSR1, USR1 or 10")]
    BadSignal { text: String, why: String },
    #[error("job {id} is not running (state {state}); only running jobs can be signalled")]
    NotRunning { id: String, state: char },
    /// PBS's "Unauthorized Request": an access list (acl_users,
    /// acl_groups, acl_hosts, acl_roots, from_route_only) refuses.
    #[error(
        "cannot resume job {id}: preemption suspended it and lent its nodes to job {to}; \
         it resumes by itself when they are all free (qdel {to} to free them now)"
    )]
    NodesLent { id: String, to: String },
    #[error("Unauthorized Request: {why}")]
    Unauthorized { why: String },
    /// PBS's "Maximum number of jobs already in queue": a queued limit
    /// (max_queued, max_queuable, max_user_queuable) is reached.
    #[error(
        "Maximum number of jobs {whose}already in {place}: {count} queued or running, and {limit} allows no more; wait until some end or delete some (qdel), or ask an administrator to raise it ({raise} = ...)"
    )]
    MaxJobsQueued {
        whose: String,
        place: String,
        count: u32,
        limit: String,
        raise: String,
    },
    /// PBS's "Job exceeds queue resource limits": a request above a
    /// resources_max or below a resources_min.
    /// `bound`: "queue \"workq\" allows at most 32gb (resources_max.mem);
    /// ask for less".
    #[error(
        "{header}: it asks for {requested} but {bound}, or submit to another queue (qstat -Q -f)"
    )]
    ResourceLimit {
        header: String,
        requested: String,
        bound: String,
    },
}

impl CoreError {
    pub fn kind(&self) -> ErrorKind {
        use CoreError::*;
        match self {
            NoSuchQueue { .. }
            | NoSuchJob { .. }
            | NoSuchNode { .. }
            | NoSuchPredecessor { .. }
            | NoSuchAccount { .. } => ErrorKind::NotFound,
            NotYourJob { .. }
            | PermissionDenied { .. }
            | NotAccountUser { .. }
            | OtherUser { .. }
            | Unauthorized { .. } => ErrorKind::Denied,
            AllocationExceeded { .. } | LimitReached { .. } => ErrorKind::Exhausted,
            MaxJobsQueued { .. } => ErrorKind::Exhausted,
            ResourceLimit { .. } => ErrorKind::Invalid,
            QueueDisabled { .. }
            | WrongState { .. }
            | NotMovable { .. }
            | RouteLoop { .. }
            | NotRunning { .. }
            | NodesLent { .. } => ErrorKind::Conflict,
            BadDuration { .. }
            | BadResource { .. }
            | UnknownResource { .. }
            | BadJobName { .. }
            | BadOption { .. }
            | Unplaceable { .. }
            | BadPath { .. }
            | TooManyNodes { .. }
            | NoMatchingNodes { .. }
            | TooFewNodes { .. }
            | WalltimeTooLong { .. }
            | ExceedsCapacity { .. }
            | BadJobId { .. }
            | BadNodeSets { .. }
            | BadDependency { .. }
            | DependencyUnsatisfiable { .. }
            | AccountRequired { .. }
            | NoRoute { .. }
            | BadSignal { .. } => ErrorKind::Invalid,
        }
    }
}
