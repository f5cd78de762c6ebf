//! The names everything else is built from: a job's id and state, a
//! node's name, a caller's role. They sit at the bottom of the core, below
//! the error type, so that anything may name a job or a node.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The sequence number of a job. Users see it as `SEQ.SERVER`. A sub-job
/// of an array (`12[3]`) keeps its index above the sequence's 40 bits
/// (see `array.rs`), so it is a job like any other to the store and agents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobId(pub u64);

const SEQ_BITS: u32 = 40;
pub(crate) const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;

impl JobId {
    /// `17.server`, the form users see and type (`12[3].server` for a
    /// sub-job; an array's own `12[].server` is `State::full_id`'s).
    pub fn full(self, server: &str) -> String {
        format!("{self}.{server}")
    }

    /// The sequence number: the job's, or its array's for a sub-job.
    pub fn seq(self) -> u64 {
        self.0 & SEQ_MASK
    }

    /// Sub-job `index` of the array with this id.
    pub fn sub_job(self, index: u32) -> JobId {
        JobId(self.seq() | (u64::from(index) + 1) << SEQ_BITS)
    }

    /// A sub-job's index.
    pub fn array_index(self) -> Option<u32> {
        let high = self.0 >> SEQ_BITS;
        (high > 0).then(|| (high - 1) as u32)
    }

    /// A sub-job's array.
    pub fn array_parent(self) -> Option<JobId> {
        self.array_index().map(|_| JobId(self.seq()))
    }

    /// A sub-job's array's id as users see it: `12[].server`.
    pub fn array_full(self, server: &str) -> Option<String> {
        self.array_parent().map(|a| format!("{a}[].{server}"))
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.array_index() {
            Some(index) => write!(f, "{}[{index}]", self.seq()),
            None => write!(f, "{}", self.0),
        }
    }
}

/// The PBS job states; the letter is what qstat prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Queued,
    Held,
    /// Waiting for its start-after time.
    Waiting,
    /// Being routed by a pipe queue.
    Transit,
    Running,
    /// Stopped where it runs (`qsig -s suspend`), its nodes still its
    /// own; its wall time does not run (PBS `S`).
    Suspended,
    /// Kill sent; waiting for the agent to report the end.
    Exiting,
    /// An array whose sub-jobs have all started (or been deleted) and
    /// not all ended (PBS `B`).
    Begun,
    Finished,
}

impl JobState {
    pub fn letter(self) -> char {
        match self {
            JobState::Queued => 'Q',
            JobState::Held => 'H',
            JobState::Waiting => 'W',
            JobState::Transit => 'T',
            JobState::Running => 'R',
            JobState::Suspended => 'S',
            JobState::Exiting => 'E',
            JobState::Begun => 'B',
            JobState::Finished => 'F',
        }
    }

    /// Holds nodes: running, suspended, or killed and not yet reported
    /// ended.
    pub fn is_active(self) -> bool {
        matches!(
            self,
            JobState::Running | JobState::Suspended | JobState::Exiting
        )
    }

    /// Running or suspended: a run that has not been told to end.
    pub fn is_running(self) -> bool {
        matches!(self, JobState::Running | JobState::Suspended)
    }

    /// Not yet started: the scheduler may still pick it.
    pub fn is_pending(self) -> bool {
        matches!(
            self,
            JobState::Queued | JobState::Held | JobState::Waiting | JobState::Transit
        )
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = match self {
            JobState::Queued => "queued",
            JobState::Held => "held",
            JobState::Waiting => "waiting",
            JobState::Transit => "in transit",
            JobState::Running => "running",
            JobState::Suspended => "suspended",
            JobState::Exiting => "exiting",
            JobState::Begun => "begun",
            JobState::Finished => "finished",
        };
        f.write_str(word)
    }
}

/// A node's name, shared: every job that ran on a node lists it, and a
/// start copies one name per node (a 1,024-node job, 1,024 names).
pub type NodeName = std::sync::Arc<str>;

/// Who is asking: PBS's three roles, each able to do what those below it can.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    User,
    Operator,
    Manager,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Operator => "operator",
            Role::Manager => "manager",
        }
    }
}
