//! Job dependencies (`qsub -W depend=afterok:12`) and start-after times
//! (`qsub -a`): what keeps an otherwise ready job from starting.

use crate::Time;
use crate::job::Job;
use crate::scheduler::Reason;
use crate::state::State;

impl State {
    /// Why a queued job may not start yet regardless of nodes: it depends
    /// on jobs that have not ended, or its start-after time is ahead.
    pub fn waits_for(&self, _job: &Job, _now: Time) -> Option<Reason> {
        None
    }
}
