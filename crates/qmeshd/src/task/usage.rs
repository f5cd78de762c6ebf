//! The daemon's half of spusage: each account's allocation, what it has
//! used, what its queued and running jobs ask for, and what remains.
//!
//! A user sees the accounts whose users list names them and those their own
//! jobs charge; `all` is for operators and managers.

use std::collections::BTreeSet;

use qmesh_core::account::group_of;
use qmesh_core::{CoreError, Role};
use qmesh_store::Store;
use tracing::error;

use super::SchedulerTask;
use crate::answer::UsageReport;
use crate::dispatch::Now;
use crate::error::TaskError;
use crate::identity::Peer;

impl SchedulerTask {
    pub(super) fn usage(&self, peer: &Peer, all: bool, now: Now) -> Result<UsageReport, TaskError> {
        let caller = self.caller(peer);
        let groups: Vec<String> = if all {
            if caller.role < Role::Operator {
                return Err(CoreError::PermissionDenied {
                    what: format!(
                        "{} asking for every account's usage (spusage --all)",
                        caller.user
                    ),
                    need: "operator".into(),
                }
                .into());
            }
            self.state.account_groups()
        } else {
            let mut mine: BTreeSet<String> = self
                .state
                .config()
                .accounts
                .values()
                .filter(|a| a.lists(&caller.user))
                .map(|a| a.name.clone())
                .collect();
            for job in self.state.jobs() {
                if job.owner.uid == caller.uid
                    && let Some(account) = &job.account
                {
                    mine.insert(group_of(account).to_string());
                }
            }
            mine.into_iter().collect()
        };
        let now = now.wall;
        let accounts = groups
            .iter()
            .map(|group| self.state.account_report(group, now))
            .collect();
        Ok(UsageReport {
            accounts,
            server: self.state.server_name().to_string(),
            at: now,
        })
    }

    /// Writes the usage map after a charge; a failure is logged here.
    pub(super) fn persist_usage(&self) {
        let usage = self.state.accounting().usage();
        if let Err(e) = self.durability.store().put_usage(usage) {
            error!(error = %e, "could not store the usage charged to the accounts");
        }
    }
}
