//! qdel's rules beyond [`State::delete`]: `-x` removes a finished job's
//! history (PBS Pro: "deletes job history for specified job(s)"), which
//! otherwise stays for `job_history_duration`. A job not yet finished is
//! deleted first; the daemon removes its history once it has ended.

use crate::access::Caller;
use crate::command_error::CommandError;
use crate::job::{JobId, JobState};
use crate::state::State;

impl State {
    /// Forgets a finished job (its owner, operators and managers may);
    /// the caller removes it from the store.
    pub fn forget(&mut self, id: JobId, caller: &Caller) -> Result<(), CommandError> {
        let job = self.checked(id, caller, "delete the history of")?;
        if job.state != JobState::Finished {
            return Err(CommandError::NotFinished {
                id: self.full_id(id),
                state: job.state.to_string(),
            });
        }
        self.remove_finished(id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Role;
    use crate::state::tests::{caller, state, submit, t};

    #[test]
    fn a_finished_job_is_forgotten_by_its_owner_only() {
        let mut s = state(1);
        let id = submit(&mut s, 1000, 1);
        let owner = caller(1000, Role::User);
        let err = s.forget(id, &owner).unwrap_err();
        assert!(matches!(err, CommandError::NotFinished { .. }), "{err}");
        s.delete(id, &owner, t(1)).unwrap();
        let err = s.forget(id, &caller(1001, Role::User)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("job 1.srv belongs to u1000; only its owner"),
            "{err}"
        );
        s.forget(id, &owner).unwrap();
        assert!(s.job(id).is_none());
        s.check_invariants().unwrap();
        let err = s.forget(id, &owner).unwrap_err();
        assert_eq!(err.to_string(), "job 1.srv does not exist; see qstat");
    }
}
