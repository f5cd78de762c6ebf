//! The daemon's half of spusage: each account's allocation, what it has
//! used, what its queued and running jobs ask for, and what remains.
//!
//! A user sees the accounts whose users list names them and those their own
//! jobs charge; `all` is for operators and managers.

use qmesh_store::Store;
use std::collections::BTreeSet;

use chrono::Utc;
use qmesh_core::account::group_of;
use qmesh_core::{CoreError, Role};
use tonic::Status;
use tracing::error;

use super::SchedulerTask;
use crate::answer::UsageReport;
use crate::identity::Peer;
use crate::status;

impl SchedulerTask {
    pub(super) fn usage(&self, peer: &Peer, all: bool) -> Result<UsageReport, Status> {
        let caller = self.caller(peer);
        let groups: Vec<String> = if all {
            if caller.role < Role::Operator {
                return Err(status::from_core(&CoreError::PermissionDenied {
                    what: format!(
                        "{} asking for every account's usage (spusage --all)",
                        caller.user
                    ),
                    need: "operator".into(),
                }));
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
        let now = Utc::now();
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
        if let Err(e) = self.store.put_usage(self.state.accounting().usage()) {
            error!(error = %e, "could not store the usage charged to the accounts");
        }
    }
}
