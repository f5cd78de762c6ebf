//! Refusals of qrerun, qrun, qorder and `qdel -x` that [`CoreError`] has
//! no words for, each naming the job or node and what to do. The daemon
//! maps them to status codes through the same [`ErrorKind`]s.

use crate::error::{CoreError, ErrorKind};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error(transparent)]
    Core(#[from] CoreError),
    #[error(
        "job {id} is not rerunnable (qsub -r n); qrerun -W force requeues it anyway, or qdel ends it"
    )]
    NotRerunnable { id: String },
    #[error(
        "cannot run job {id} on node {node}: {why}; name free nodes (pbsnodes -l shows the others)"
    )]
    NodeNotFree {
        id: String,
        node: String,
        why: String,
    },
    #[error(
        "cannot run job {id}: it asks for {asked} nodes but {found}; free some, or name them with qrun -H"
    )]
    NoFreeNodes {
        id: String,
        asked: u32,
        found: String,
    },
    #[error(
        "cannot run job {id} on \"{spec}\": it asks for {asked} nodes and that names {named}; name one node (or host) per node, joined by +"
    )]
    NodeCount {
        id: String,
        spec: String,
        asked: u32,
        named: usize,
    },
    #[error(
        "bad node list \"{spec}\": {why}; write nodes or hosts joined by +, e.g. -H n1+n2 or -H (n1:ncpus=4)+(n2:ncpus=4)"
    )]
    BadNodeSpec { spec: String, why: String },
    #[error(
        "cannot run job {id}: it {why}; qrun starts a job whose dependencies and -a time are met (qalter or qrls first)"
    )]
    NotReady { id: String, why: String },
    #[error(
        "cannot remove the history of job {id}: it is {state}; qdel -x deletes it first, then its history"
    )]
    NotFinished { id: String, state: String },
}

impl CommandError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            CommandError::Core(e) => e.kind(),
            CommandError::NotRerunnable { .. }
            | CommandError::NodeNotFree { .. }
            | CommandError::NoFreeNodes { .. }
            | CommandError::NotReady { .. }
            | CommandError::NotFinished { .. } => ErrorKind::Conflict,
            CommandError::NodeCount { .. } | CommandError::BadNodeSpec { .. } => ErrorKind::Invalid,
        }
    }
}
