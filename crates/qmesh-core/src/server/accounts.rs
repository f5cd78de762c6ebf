//! What the configuration says of accounts and job-count limits: which
//! account a job charges, and the running-job caps that apply to it.

use super::Config;
use crate::account::{Account, RunLimits, group_of};
use crate::job::Job;

impl Config {
    /// Whether any of PBS's job-count limits is set, on the server or a
    /// queue (the state keeps their counters only then).
    pub fn has_job_count_limits(&self) -> bool {
        !self.server.limits.is_empty() || self.queues.values().any(|q| !q.limits.is_empty())
    }

    /// Whether any running-job cap is set (a pass skips counting if not).
    pub fn has_run_limits(&self) -> bool {
        self.server.max_user_run.is_some()
            || self.server.max_group_run.is_some()
            || self.accounts.values().any(|a| a.max_run.is_some())
            || self.server.limits.limits_running()
            || self.queues.values().any(|q| q.limits.limits_running())
    }

    /// The running-job caps for a job, from the server's limits and its
    /// account's (an account's max_run overrides max_group_run).
    pub fn run_limits(&self, job: &Job) -> RunLimits {
        let group = job.account.as_deref().map(group_of);
        let max = group
            .and_then(|g| self.accounts.get(g))
            .and_then(|a| a.max_run)
            .or(self.server.max_group_run);
        RunLimits {
            user: self.server.max_user_run,
            group: match (group, max) {
                (Some(group), Some(max)) => Some((group.to_string(), max)),
                _ => None,
            },
        }
    }

    /// The account a job charges, if it has one and it is configured.
    pub fn account_of(&self, job: &Job) -> Option<&Account> {
        self.accounts.get(group_of(job.account.as_deref()?))
    }
}
