//! What the state keeps of accounts (the usage charged, the counters of
//! queued and running jobs) and what it answers from them: fair share, an
//! allocation running short, an account's report.

use crate::account::{AccountReport, Tally, Usage, charge_of, group_of, hours, node_seconds};
use crate::job::Job;
use crate::server::Config;
use crate::state::State;
use crate::time::Time;

/// Everything the state keeps about accounts: the usage charged and the
/// counters of queued and running jobs. Only [`State`] changes it.
#[derive(Clone, Debug, Default)]
pub struct Accounting {
    pub(crate) usage: Usage,
    pub(crate) tally: Tally,
    /// Shares of all configured accounts, kept with the configuration.
    pub(crate) total_shares: u64,
    /// Every group's decayed usage, kept with the usage: fair share reads
    /// it once per pending job and pass.
    pub(crate) total_decayed: f64,
}

impl Accounting {
    pub(crate) fn configure(&mut self, config: &Config) {
        self.total_shares = config.accounts.values().map(|a| u64::from(a.shares)).sum();
    }

    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// Charges a finished job to its group; see [`charge_of`].
    pub(crate) fn charge(&mut self, job: &Job, half_life: u64) {
        if let (Some((group, node_hours)), Some(end)) = (charge_of(job), job.end_time) {
            self.usage.charge(group, node_hours, end, half_life);
            self.total_decayed = self.usage.total_decayed();
        }
    }

    /// Charges the run of a job that goes back to the queue (requeued at
    /// its period's end): its nodes × the wall-clock time it ran (less
    /// any time suspended), as if it had ended then.
    pub(crate) fn charge_run(&mut self, job: &Job, end: Time, half_life: u64) {
        if let (Some(account), Some(_)) = (job.account.as_deref(), job.stime) {
            let seconds = job.charged_seconds(end) as f64;
            let node_hours = f64::from(job.nodes) * seconds / 3600.0;
            self.usage
                .charge(group_of(account), node_hours, end, half_life);
            self.total_decayed = self.usage.total_decayed();
        }
    }

    pub(crate) fn restore(&mut self, usage: Usage) {
        self.total_decayed = usage.total_decayed();
        self.usage = usage;
    }
}

impl State {
    /// The fair-share factor of a job's group at `now`: 2^(−U/S), U the
    /// group's part of all decayed usage and S its part of all shares
    /// (Kay–Lauder, as Slurm's classic factor). Higher when its decayed
    /// usage is light against its shares; 1.0 for a job without an
    /// account, and for every job while no usage is recorded.
    ///
    /// `now` does not change the answer: every group's usage decays at the
    /// same rate, so the parts stay the same between charges.
    pub fn fair_share(&self, job: &Job, _now: Time) -> f64 {
        let ledger = self.accounting();
        let total = ledger.total_decayed;
        let Some(account) = self.config().account_of(job) else {
            return 1.0;
        };
        if total <= 0.0 || ledger.total_shares == 0 {
            return 1.0;
        }
        let used = ledger.usage.decayed(&account.name) / total;
        let share = f64::from(account.shares) / ledger.total_shares as f64;
        if share <= 0.0 {
            return if used > 0.0 { 0.0 } else { 1.0 };
        }
        (-used / share).exp2()
    }

    /// True when the job's group has an allocation that what it has used,
    /// what its running jobs may still use and this job cannot all fit in
    /// (the job then waits, reason Allocation).
    pub fn allocation_short(&self, job: &Job) -> bool {
        let Some(account) = self.config().account_of(job) else {
            return false;
        };
        let Some(allocation) = account.allocation else {
            return false;
        };
        let ledger = self.accounting();
        let used = ledger.usage.used(&account.name);
        let running = hours(ledger.tally.group(&account.name).running_node_secs);
        used + running + hours(node_seconds(job)) > allocation as f64
    }

    /// An account's figures at `now`; `group` need not be configured (its
    /// jobs may have charged it before accounts were made).
    pub fn account_report(&self, group: &str, now: Time) -> AccountReport {
        let ledger = self.accounting();
        let account = self.config().accounts.get(group);
        let count = ledger.tally.group(group);
        let used = ledger.usage.used(group);
        let committed = hours(count.queued_node_secs + count.running_node_secs);
        let allocation = account.and_then(|a| a.allocation);
        AccountReport {
            name: group.to_string(),
            allocation,
            used,
            committed,
            remaining: allocation.map(|a| a as f64 - used - committed),
            shares: account.map_or(0, |a| a.shares),
            decayed: ledger
                .usage
                .decayed_at(group, now, self.config().server.fairshare_half_life),
            users: account.map(|a| a.users.clone()).unwrap_or_default(),
        }
    }

    /// Every group that is configured or has been charged, in name order.
    pub fn account_groups(&self) -> Vec<String> {
        let mut names: Vec<String> = self.config().accounts.keys().cloned().collect();
        for group in self.accounting().usage.groups.keys() {
            if !self.config().accounts.contains_key(group) {
                names.push(group.clone());
            }
        }
        names.sort();
        names
    }
}
