//! qrerun: a running job is killed and queued again (PBS Pro's
//! `req_rerunjob`). Operators and managers only; the job must be running
//! and rerunnable (`qsub -r y`, the default) unless forced (`-W force`).
//!
//! The job goes the way of a job requeued at its queue's period end: it
//! is marked exiting with a [`PeriodStop`](crate::job::PeriodStop) that requeues it, its agent is
//! told to kill it, and when the end is in, [`State::finish`] frees its
//! nodes and queues it again (its run charged, `run_count` kept, so the
//! next start counts one more). Slurm's `scontrol requeuehold` asks for
//! it to be held once queued again ([`Rerun::hold`]), so that no pass
//! starts it before its owner releases it.

use crate::access::{Caller, Role};
use crate::command_error::CommandError;
use crate::error::CoreError;
use crate::job::{Job, JobId};
use crate::state::State;
use crate::time::Time;

/// How a rerun goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rerun {
    /// `-W force`: a job that is not rerunnable too.
    pub force: bool,
    /// Held (a user hold) once queued again: `scontrol requeuehold`.
    pub hold: bool,
}

impl State {
    /// Marks a running job to be requeued once its agent has killed it;
    /// returns the host whose agent must kill it, and the changed job.
    pub fn rerun(
        &mut self,
        id: JobId,
        caller: &Caller,
        how: Rerun,
        now: Time,
    ) -> Result<(String, &Job), CommandError> {
        let full = self.full_id(id);
        let job = self
            .job(id)
            .ok_or_else(|| CoreError::NoSuchJob { id: full.clone() })?;
        if caller.role < Role::Operator {
            return Err(CoreError::PermissionDenied {
                what: format!("rerunning job {full}"),
                need: "operator".into(),
            }
            .into());
        }
        if !job.rerunnable && !how.force {
            return Err(CommandError::NotRerunnable { id: full });
        }
        if !job.state.is_running() {
            return Err(CoreError::WrongState {
                id: full,
                action: "rerun".into(),
                state: job.state,
            }
            .into());
        }
        let what = format!("qrerun by {}", caller.user);
        let host = self.stop_for_period(id, &what, true, now)?.0;
        if how.hold {
            self.hold_when_requeued(id);
        }
        let job = self.job(id).ok_or(CoreError::NoSuchJob { id: full })?;
        Ok((host, job))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{ExitCause, JobExit, JobState};
    use crate::state::Finished;
    use crate::state::tests::{caller, state, submit, t};

    fn killed() -> JobExit {
        JobExit {
            code: None,
            signal: Some(15),
            cause: ExitCause::Deleted,
            message: String::new(),
            cput: None,
            max_rss: None,
            vmem: None,
        }
    }

    #[test]
    fn an_operator_s_rerun_requeues_the_job_once_it_is_gone() {
        let mut s = state(2);
        let id = submit(&mut s, 1000, 1);
        s.start(id, &[0], t(1)).unwrap();
        let op = caller(5, Role::Operator);
        let (host, job) = s.rerun(id, &op, Rerun::default(), t(2)).unwrap();
        assert_eq!(host, "h");
        assert_eq!(job.state, JobState::Exiting);
        assert_eq!(job.comment, "being requeued at qrerun by u5");
        s.check_invariants().unwrap();
        let (how, job) = s.finish(id, killed(), t(3)).unwrap();
        assert_eq!(how, Finished::Requeued);
        assert_eq!(job.state, JobState::Queued);
        assert_eq!(job.run_count, 1);
        assert!(job.exec_nodes.is_empty() && job.stime.is_none());
        assert!(s.nodes().iter().all(|n| n.jobs.is_empty()), "nodes freed");
        s.check_invariants().unwrap();
        s.start(id, &[1], t(4)).unwrap();
        assert_eq!(s.job(id).unwrap().run_count, 2, "a new run counts");
    }

    #[test]
    fn users_jobs_not_running_and_not_rerunnable_are_refused() {
        let mut s = state(2);
        let id = submit(&mut s, 1000, 1);
        let once = s
            .submit(
                crate::submit::Submission {
                    script_name: "once.sh".into(),
                    workdir: "/tmp".into(),
                    rerunnable: Some(false),
                    ..Default::default()
                },
                &caller(1000, Role::User),
                t(0),
            )
            .unwrap()
            .id;
        let owner = caller(1000, Role::User);
        let op = caller(5, Role::Operator);
        let err = s.rerun(id, &op, Rerun::default(), t(1)).unwrap_err();
        assert_eq!(err.to_string(), "cannot rerun job 1.srv: it is queued");
        s.start(id, &[0], t(1)).unwrap();
        let err = s.rerun(id, &owner, Rerun::default(), t(2)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("rerunning job 1.srv needs operator rights"),
            "{err}"
        );
        s.start(once, &[1], t(2)).unwrap();
        let err = s.rerun(once, &op, Rerun::default(), t(2)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "job 2.srv is not rerunnable (qsub -r n); qrerun -W force requeues it anyway, or qdel ends it"
        );
        assert_eq!(s.job(once).unwrap().state, JobState::Running, "untouched");
        let (_, job) = s
            .rerun(
                once,
                &op,
                Rerun {
                    force: true,
                    hold: false,
                },
                t(2),
            )
            .unwrap();
        assert_eq!(job.state, JobState::Exiting, "-W force requeues it anyway");
    }

    #[test]
    fn requeuehold_queues_the_job_again_held() {
        let mut s = state(2);
        let id = submit(&mut s, 1000, 1);
        s.start(id, &[0], t(1)).unwrap();
        let op = caller(5, Role::Operator);
        let how = Rerun {
            force: false,
            hold: true,
        };
        s.rerun(id, &op, how, t(2)).unwrap();
        let (how, job) = s.finish(id, killed(), t(3)).unwrap();
        assert_eq!(how, Finished::Requeued);
        assert_eq!(job.state, JobState::Held);
        assert!(job.holds.user);
        assert!(
            job.comment.starts_with("requeued and held at qrerun by u5"),
            "{}",
            job.comment
        );
        let plan = crate::scheduler::Scheduler.pass(&s, t(4));
        assert!(plan.starts.is_empty(), "held: no pass starts it");
        s.check_invariants().unwrap();
    }
}
