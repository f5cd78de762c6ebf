//! Accounts: allocations charged by wall clock × nodes (ANL, EPCC), shares
//! and decayed usage for fair share (NCAR), and the per-user and per-group
//! limits (EPCC).
//!
//! Sub-accounts resolve to a group: `c1-prod` and `c1-dev` charge `c1`, so
//! accounts are configured (and charged, and limited) per group only.
//!
//! The split: an [`Account`] is configuration (qmgr `create account`); the
//! node-hours charged are state ([`Usage`], stored as one record by the
//! daemon); what queued and running jobs ask for is kept as counters
//! ([`Tally`]) updated where jobs enter and leave the pending and active
//! sets, so a submission's checks cost a few lookups, not a scan.

mod admit;
mod tally;
mod usage;

use serde::{Deserialize, Serialize};

use crate::Time;
use crate::job::{ExitCause, Job};
use crate::server::Config;
use crate::state::State;

pub use tally::{Count, Tally, node_seconds};
pub use usage::{GroupUsage, Usage};

/// The group an account name belongs to: the part before the first `-`.
pub fn group_of(account: &str) -> &str {
    account.split('-').next().unwrap_or(account)
}

/// Node-hours from node-seconds.
pub fn hours(node_seconds: u64) -> f64 {
    node_seconds as f64 / 3600.0
}

/// One group's account (`qmgr -c "create account c1 allocation = 5000"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Account {
    pub name: String,
    /// Node-hours the group may use in all; `None`: unlimited.
    pub allocation: Option<u64>,
    /// Its part of the machine for fair share, against the other accounts'.
    pub shares: u32,
    /// Users who may charge it; empty: anyone.
    pub users: Vec<String>,
    /// Overrides of the server's max_group_queued, max_group_run and
    /// max_group_node_hours for this group.
    pub max_queued: Option<u32>,
    pub max_run: Option<u32>,
    pub max_node_hours: Option<u64>,
}

impl Default for Account {
    fn default() -> Self {
        Account {
            name: String::new(),
            allocation: None,
            shares: 1,
            users: Vec::new(),
            max_queued: None,
            max_run: None,
            max_node_hours: None,
        }
    }
}

impl Account {
    pub fn new(name: &str) -> Account {
        Account {
            name: name.to_string(),
            ..Account::default()
        }
    }

    /// Whether `user` may charge it. Entries may be `user@host`, as in the
    /// managers list; the host is not checked.
    pub fn admits(&self, user: &str) -> bool {
        self.users.is_empty() || self.lists(user)
    }

    /// Whether `user` is named in its users list.
    pub fn lists(&self, user: &str) -> bool {
        self.users
            .iter()
            .any(|entry| entry.split('@').next() == Some(user))
    }
}

/// Why a name cannot be an account's: a group name is letters, digits, `_`
/// and `.`; a `-` would make it a sub-account.
pub fn valid_account_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("it is empty".into());
    }
    if name.contains('-') {
        return Err(format!(
            "accounts are groups and a '-' starts a sub-account; sub-accounts charge their \
             group: create account {} and submit with -A {name}",
            group_of(name)
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.')))
    {
        return Err(format!(
            "'{c}' is not allowed; use letters, digits, '_' and '.'"
        ));
    }
    Ok(())
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
    /// its period's end): its nodes × the wall-clock time it ran, as if it
    /// had ended then.
    pub(crate) fn charge_run(&mut self, job: &Job, end: Time, half_life: u64) {
        if let (Some(account), Some(start)) = (job.account.as_deref(), job.stime) {
            let seconds = (end.timestamp() - start.timestamp()).max(0) as f64;
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

/// The group a finished job charges and the node-hours: nodes × the
/// wall-clock seconds from its start to its end, in whole seconds as
/// qstat shows them (`stime`, the end; resources_used.walltime). A job that never ran
/// (its launch failed, or it was deleted before the launch left) charges
/// nothing, nor does one without an account.
pub fn charge_of(job: &Job) -> Option<(&str, f64)> {
    let account = job.account.as_deref()?;
    let (start, end, exit) = (job.stime?, job.end_time?, job.exit.as_ref()?);
    let never_ran = match exit.cause {
        ExitCause::LaunchFailed => true,
        ExitCause::Deleted => exit.code.is_none() && exit.signal.is_none(),
        _ => false,
    };
    if never_ran {
        return None;
    }
    let seconds = (end.timestamp() - start.timestamp()).max(0) as f64;
    Some((group_of(account), f64::from(job.nodes) * seconds / 3600.0))
}

/// One account's figures, in node-hours (qmgr list account, spusage).
#[derive(Clone, Debug, PartialEq)]
pub struct AccountReport {
    pub name: String,
    pub allocation: Option<u64>,
    pub used: f64,
    /// Asked for by its queued and running jobs, not yet charged.
    pub committed: f64,
    /// allocation − used − committed, when it has an allocation.
    pub remaining: Option<f64>,
    pub shares: u32,
    /// Decayed usage at the time asked for.
    pub decayed: f64,
    pub users: Vec<String>,
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

#[cfg(test)]
mod tests;
