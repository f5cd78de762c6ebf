//! Accounts: allocations charged by wall clock × nodes (ANL, EPCC), shares
//! and decayed usage for fair share (NCAR), and the per-user and per-group
//! limits (EPCC).
//!
//! Sub-accounts resolve to a group: `c1-prod` and `c1-dev` charge `c1`.

use crate::Time;
use crate::job::Job;
use crate::server::Config;
use crate::state::State;

/// The group an account name belongs to: the part before the first `-`.
pub fn group_of(account: &str) -> &str {
    account.split('-').next().unwrap_or(account)
}

/// The caps on running jobs that apply to one job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunLimits {
    /// Most running jobs of its owner.
    pub user: Option<u32>,
    /// Its group and the most running jobs of that group.
    pub group: Option<(String, u32)>,
}

impl Config {
    /// Whether any running-job cap is set (a pass skips counting if not).
    pub fn has_run_limits(&self) -> bool {
        self.server.max_user_run.is_some() || self.server.max_group_run.is_some()
    }

    /// The running-job caps for a job, from the server's limits and its
    /// account's.
    pub fn run_limits(&self, job: &Job) -> RunLimits {
        RunLimits {
            user: self.server.max_user_run,
            group: match (&job.account, self.server.max_group_run) {
                (Some(account), Some(max)) => Some((group_of(account).to_string(), max)),
                _ => None,
            },
        }
    }
}

impl State {
    /// The fair-share factor of a job's group at `now`: higher when its
    /// decayed usage is light against its shares. 1.0 for every job until
    /// accounts have shares.
    pub fn fair_share(&self, _job: &Job, _now: Time) -> f64 {
        1.0
    }

    /// True when the job's group has an allocation whose remainder cannot
    /// cover the job (the job then waits, reason Allocation).
    pub fn allocation_short(&self, _job: &Job) -> bool {
        false
    }
}
