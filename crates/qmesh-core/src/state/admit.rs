//! What a submission must pass besides its queue's limits: an account it
//! may charge, an allocation that can cover it, and the per-user and
//! per-group limits on queued jobs (EPCC's "400 jobs at once"). Each
//! refusal names the account or the limit and the figures.

use crate::account::{Account, group_of, hours, node_seconds};
use crate::error::CoreError;
use crate::job::Job;
use crate::state::State;
use crate::time::format_hms;

fn one_decimal(x: f64) -> String {
    format!("{x:.1}")
}

impl State {
    /// Resolves the job's account (filling it in when the user may charge
    /// only one) and checks the allocation and the limits. Reads counters
    /// only: a few lookups per submission.
    pub(crate) fn check_accounts(&self, job: &mut Job) -> Result<(), CoreError> {
        let config = self.config();
        if !config.accounts.is_empty() {
            let account = self.resolve_account(job)?;
            self.check_allocation(job, account)?;
        }
        self.check_limits(job)
    }

    fn resolve_account(&self, job: &mut Job) -> Result<&Account, CoreError> {
        let config = self.config();
        let user = &job.owner.user;
        let Some(name) = &job.account else {
            let listed: Vec<&Account> =
                config.accounts.values().filter(|a| a.lists(user)).collect();
            return match listed.as_slice() {
                [only] => {
                    job.account = Some(only.name.clone());
                    Ok(only)
                }
                [] => Err(CoreError::AccountRequired {
                    user: user.clone(),
                    why: format!("no account lists {user} as a user; see qmgr list account"),
                }),
                many => Err(CoreError::AccountRequired {
                    user: user.clone(),
                    why: format!(
                        "{user} may charge {}",
                        many.iter()
                            .map(|a| a.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }),
            };
        };
        let group = group_of(name);
        let account = config
            .accounts
            .get(group)
            .ok_or_else(|| CoreError::NoSuchAccount {
                account: name.clone(),
            })?;
        if !account.admits(user) {
            return Err(CoreError::NotAccountUser {
                user: user.clone(),
                account: name.clone(),
                group: group.to_string(),
            });
        }
        Ok(account)
    }

    /// Refuses a job the allocation's remainder (after what is used and
    /// what queued and running jobs ask for) cannot cover.
    fn check_allocation(&self, job: &Job, account: &Account) -> Result<(), CoreError> {
        let Some(allocation) = account.allocation else {
            return Ok(());
        };
        let ledger = self.accounting();
        let used = ledger.usage.used(&account.name);
        let count = ledger.tally.group(&account.name);
        let committed = hours(count.queued_node_secs + count.running_node_secs);
        let remaining = allocation as f64 - used - committed;
        let need = hours(node_seconds(job));
        if need > remaining {
            return Err(CoreError::AllocationExceeded {
                group: account.name.clone(),
                need: format!(
                    "{} node-hours ({} nodes × {})",
                    one_decimal(need),
                    job.nodes,
                    format_hms(job.walltime)
                ),
                left: format!(
                    "{} of {allocation} remain ({} used, {} committed to queued and running jobs)",
                    one_decimal(remaining.max(0.0)),
                    one_decimal(used),
                    one_decimal(committed)
                ),
            });
        }
        Ok(())
    }

    /// Nothing is formatted unless a limit is passed: this runs on every
    /// submission.
    fn check_limits(&self, job: &Job) -> Result<(), CoreError> {
        if let Some(queue) = self.config().queue(&job.queue) {
            self.check_queued_limits(job, queue, false)?;
        }
        let server = &self.config().server;
        let tally = &self.accounting().tally;
        let need = node_seconds(job);
        let user = tally.user(&job.owner.user);
        let whose = Whose::User(&job.owner.user);
        queued_limit(whose, user.queued, server.max_user_queued)?;
        hours_limit(
            whose,
            user.queued_node_secs,
            need,
            server.max_user_node_hours,
        )?;
        let Some(account) = &job.account else {
            return Ok(());
        };
        let group = group_of(account);
        let count = tally.group(group);
        let own = self.config().accounts.get(group);
        let (whose, max) = match own.and_then(|a| a.max_queued) {
            Some(max) => (Whose::Account(group), Some(max)),
            None => (Whose::Group(group), server.max_group_queued),
        };
        queued_limit(whose, count.queued, max)?;
        let (whose, max) = match own.and_then(|a| a.max_node_hours) {
            Some(max) => (Whose::Account(group), Some(max)),
            None => (Whose::Group(group), server.max_group_node_hours),
        };
        hours_limit(whose, count.queued_node_secs, need, max)
    }
}

/// Whose limit applies: a user's or a group's from the server's
/// attributes, or the group's own account override.
#[derive(Clone, Copy)]
enum Whose<'a> {
    User(&'a str),
    Group(&'a str),
    Account(&'a str),
}

impl Whose<'_> {
    fn who(self) -> String {
        match self {
            Whose::User(user) => format!("user {user}"),
            Whose::Group(group) | Whose::Account(group) => format!("account {group}"),
        }
    }

    /// The attribute's name, e.g. max_user_queued or max_queued of account c1.
    fn limit(self, what: &str) -> String {
        match self {
            Whose::User(_) => format!("max_user_{what}"),
            Whose::Group(_) => format!("max_group_{what}"),
            Whose::Account(group) => format!("max_{what} of account {group}"),
        }
    }
}

fn queued_limit(whose: Whose, queued: u32, max: Option<u32>) -> Result<(), CoreError> {
    match max {
        Some(max) if queued >= max => Err(CoreError::LimitReached {
            who: whose.who(),
            what: format!("already has {queued} queued jobs and this would be one more"),
            limit: whose.limit("queued"),
            max: max.to_string(),
        }),
        _ => Ok(()),
    }
}

fn hours_limit(
    whose: Whose,
    queued_secs: u64,
    need_secs: u64,
    max: Option<u64>,
) -> Result<(), CoreError> {
    match max {
        Some(max) if queued_secs + need_secs > max.saturating_mul(3600) => {
            Err(CoreError::LimitReached {
                who: whose.who(),
                what: format!(
                    "has queued jobs asking for {} node-hours and this one asks for {} more",
                    one_decimal(hours(queued_secs)),
                    one_decimal(hours(need_secs))
                ),
                limit: whose.limit("node_hours"),
                max: max.to_string(),
            })
        }
        _ => Ok(()),
    }
}
