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
//! sets, so a submission's checks cost a few lookups, not a scan. What the
//! state does with them (charging, fair share, admission) is in
//! `state/account.rs` and `state/admit.rs`; what the configuration says (a
//! job's account, its run caps) in `server/accounts.rs`.

mod tally;
mod usage;

use serde::{Deserialize, Serialize};

use crate::job::{ExitCause, Job};

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

/// The group a finished job charges and the node-hours: nodes × the
/// wall-clock seconds from its start to its end less any time it spent
/// suspended, in whole seconds as qstat shows them
/// (resources_used.walltime). A job that never ran
/// (its launch failed, or it was deleted before the launch left) charges
/// nothing, nor does one without an account.
pub fn charge_of(job: &Job) -> Option<(&str, f64)> {
    let account = job.account.as_deref()?;
    let (end, exit) = (job.end_time?, job.exit.as_ref()?);
    let never_ran = match exit.cause {
        ExitCause::LaunchFailed => true,
        ExitCause::Deleted => exit.code.is_none() && exit.signal.is_none(),
        _ => false,
    };
    if never_ran {
        return None;
    }
    let seconds = job.charged_seconds(end) as f64;
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

#[cfg(test)]
mod tests;
