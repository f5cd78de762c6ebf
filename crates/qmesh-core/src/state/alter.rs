//! A job's record replaced after qalter changed it, the state's
//! invariants kept: a pending job leaves its queue's list and the
//! per-user and per-group counters with its old figures and comes back
//! with its new ones; a running job's record changes only in what
//! nothing the state keeps depends on (qalter refuses the rest).

use super::{State, add_pending, remove_pending};
use crate::error::CoreError;
use crate::job::{Job, JobId};

impl State {
    /// Puts `new` in place of the pending job of its id; with
    /// `check_accounts`, its account, allocation and the submit-time
    /// limits are checked as for a submission (the old job not counted),
    /// and on a refusal the old job stays as it was.
    pub(crate) fn replace_pending(
        &mut self,
        new: Job,
        check_accounts: bool,
    ) -> Result<&Job, CoreError> {
        let id = new.id;
        let old = self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))?;
        if !old.state.is_pending() {
            return Err(self.wrong_state(old, "alter"));
        }
        remove_pending(&mut self.book.pending, old);
        self.book.accounting.tally.leave_pending(old);
        let mut new = new;
        if check_accounts && let Err(e) = self.check_accounts(&mut new) {
            let old = &self.book.jobs[&id];
            add_pending(&mut self.book.pending, old);
            self.book.accounting.tally.enter_pending(old);
            return Err(e);
        }
        add_pending(&mut self.book.pending, &new);
        self.book.accounting.tally.enter_pending(&new);
        self.book.jobs.insert(id, new);
        self.job_ref(id)
    }

    /// Puts `new` in place of a running job's record, which must keep its
    /// nodes, wall time, queue and account.
    pub(crate) fn replace_active(&mut self, new: Job) -> Result<&Job, CoreError> {
        let id = new.id;
        let old = self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))?;
        debug_assert!(
            old.exec_nodes == new.exec_nodes
                && old.walltime == new.walltime
                && old.nodes == new.nodes
                && old.queue == new.queue
                && old.account == new.account
                && old.state == new.state,
            "qalter changed what a running job's counters depend on"
        );
        self.book.jobs.insert(id, new);
        self.job_ref(id)
    }

    fn job_ref(&self, id: JobId) -> Result<&Job, CoreError> {
        self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))
    }
}
