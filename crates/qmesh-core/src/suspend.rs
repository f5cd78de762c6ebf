//! Suspend and resume (`qsig -s suspend` and `qsig -s resume`, as PBS
//! writes them): a running job is stopped where it runs and keeps its
//! nodes; later it goes on. Operators and managers only, as in PBS Pro.
//!
//! The state's side is small: the job turns `S` (still active: it holds
//! its nodes) and its [`Suspension`](crate::job::Suspension) counts the
//! time, which its wall time, its charge and its planned end leave out.
//! The stopping itself is the agent's (the job's cgroup frozen, or its
//! process group sent SIGSTOP), and so is its wall-time alarm, paused
//! with it. `qsig`'s other words are signals (`signal.rs`).

use crate::access::{Caller, Role};
use crate::error::CoreError;
use crate::job::{Job, JobId, JobState};
use crate::state::State;
use crate::time::Time;

/// What `qsig -s suspend|resume` asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pause {
    Suspend,
    Resume,
}

impl Pause {
    /// The word qsig takes for it (and the wire and the agent carry).
    pub fn word(self) -> &'static str {
        match self {
            Pause::Suspend => "suspend",
            Pause::Resume => "resume",
        }
    }

    /// `suspend` or `resume` (any case) as qsig's signal; `None` for any
    /// other word, which is a signal's name. PBS Pro's `admin-suspend`
    /// and `admin-resume` (which also take the node out of service) are
    /// refused with what to write instead.
    pub fn from_signal_word(text: &str) -> Result<Option<Pause>, CoreError> {
        match text.trim().to_ascii_lowercase().as_str() {
            "suspend" => Ok(Some(Pause::Suspend)),
            "resume" => Ok(Some(Pause::Resume)),
            word @ ("admin-suspend" | "admin-resume") => Err(CoreError::BadSignal {
                text: text.to_string(),
                why: format!(
                    "{word} is not provided; use qsig -s {} and pbsnodes -o or -r for the node",
                    word.trim_start_matches("admin-")
                ),
            }),
            _ => Ok(None),
        }
    }

    fn acts_on(self) -> JobState {
        match self {
            Pause::Suspend => JobState::Running,
            Pause::Resume => JobState::Suspended,
        }
    }
}

impl State {
    /// Suspends a running job or resumes a suspended one, for `caller`
    /// (an operator or a manager). Returns the host whose agent stops or
    /// continues it, and the changed job, to be stored.
    pub fn pause(
        &mut self,
        id: JobId,
        caller: &Caller,
        pause: Pause,
        now: Time,
    ) -> Result<(String, &Job), CoreError> {
        let job = self.job(id).ok_or_else(|| CoreError::NoSuchJob {
            id: self.full_id(id),
        })?;
        if caller.role < Role::Operator {
            return Err(CoreError::PermissionDenied {
                what: format!("{}ing job {}", pause.word(), self.full_id(id)),
                need: "operator".into(),
            });
        }
        if job.state != pause.acts_on() {
            return Err(self.wrong_state(job, pause.word()));
        }
        if pause == Pause::Resume && job.suspension.lent_to.is_some() {
            // Preemption suspended it: it resumes only on its own nodes,
            // when they are free.
            return self.take_back(id, now);
        }
        let host = self.job_host(job).unwrap_or_default().to_string();
        let job = self
            .job_in_place(id)
            .ok_or_else(|| CoreError::NoSuchJob { id: id.to_string() })?;
        match pause {
            Pause::Suspend => {
                job.state = JobState::Suspended;
                job.suspension.since = Some(now);
                job.comment = format!("suspended at request of {}", caller.user);
            }
            Pause::Resume => {
                job.state = JobState::Running;
                job.suspension.end(now);
                job.comment = format!("resumed at request of {}", caller.user);
            }
        }
        job.mtime = now;
        Ok((host, job))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{caller, exited, state, submit, t};

    #[test]
    fn qsig_words_are_suspend_and_resume_and_admin_ones_say_what_to_write() {
        assert_eq!(Pause::from_signal_word("suspend"), Ok(Some(Pause::Suspend)));
        assert_eq!(Pause::from_signal_word("RESUME"), Ok(Some(Pause::Resume)));
        assert_eq!(Pause::from_signal_word("SIGSTOP"), Ok(None));
        let err = Pause::from_signal_word("admin-suspend").unwrap_err();
        assert!(err.to_string().contains("use qsig -s suspend"), "{err}");
    }

    #[test]
    fn a_suspended_job_keeps_its_nodes_and_its_wall_time_leaves_the_suspension_out() {
        let mut s = state(2);
        let id = submit(&mut s, 1000, 1);
        s.start(id, &[0], t(10)).unwrap();
        let op = caller(5, Role::Operator);
        let (host, job) = s.pause(id, &op, Pause::Suspend, t(40)).unwrap();
        assert_eq!(host, "h");
        assert_eq!(job.state, JobState::Suspended);
        assert_eq!(job.state.letter(), 'S');
        assert!(job.state.is_active(), "it holds its nodes");
        s.check_invariants().unwrap();
        assert_eq!(
            s.job(id).unwrap().elapsed(t(100)),
            Some(30),
            "stopped at 30 s"
        );
        let (_, job) = s.pause(id, &op, Pause::Resume, t(100)).unwrap();
        assert_eq!(job.state, JobState::Running);
        assert_eq!(job.suspension.secs, 60);
        assert_eq!(job.elapsed(t(110)), Some(40));
        // A second suspension adds to the first.
        s.pause(id, &op, Pause::Suspend, t(120)).unwrap();
        s.pause(id, &op, Pause::Resume, t(125)).unwrap();
        let (_, job) = s.finish(id, exited(0), t(130)).unwrap();
        assert_eq!(job.elapsed(t(999)), Some(55), "120 s less 65 s suspended");
    }

    #[test]
    fn a_job_killed_while_suspended_is_charged_up_to_its_suspension() {
        let mut s = state(1);
        let id = submit(&mut s, 1000, 1);
        s.start(id, &[0], t(0)).unwrap();
        let op = caller(5, Role::Operator);
        s.pause(id, &op, Pause::Suspend, t(20)).unwrap();
        let (_, job) = s.finish(id, exited(0), t(500)).unwrap();
        assert_eq!(job.elapsed(t(999)), Some(20));
        let run = crate::joblog::EndedRun::of(job).ended(t(500).timestamp(), &exited(0));
        let record = crate::joblog::ended(job, "srv", &run);
        assert!(
            record.contains("resources_used.walltime=00:00:20"),
            "{record}"
        );
    }

    #[test]
    fn users_and_jobs_in_the_wrong_state_are_refused() {
        let mut s = state(1);
        let id = submit(&mut s, 1000, 1);
        let op = caller(5, Role::Operator);
        let err = s.pause(id, &op, Pause::Suspend, t(1)).unwrap_err();
        assert_eq!(err.to_string(), "cannot suspend job 1.srv: it is queued");
        s.start(id, &[0], t(1)).unwrap();
        let owner = caller(1000, Role::User);
        let err = s.pause(id, &owner, Pause::Suspend, t(2)).unwrap_err();
        assert!(err.to_string().contains("needs operator rights"), "{err}");
        let err = s.pause(id, &op, Pause::Resume, t(2)).unwrap_err();
        assert_eq!(err.to_string(), "cannot resume job 1.srv: it is running");
        assert_eq!(s.job(id).unwrap().state, JobState::Running, "untouched");
    }

    #[test]
    fn the_plan_moves_a_suspended_job_s_end_by_its_suspension() {
        let mut s = state(1);
        let id = submit(&mut s, 1000, 1);
        s.start(id, &[0], t(0)).unwrap();
        let walltime = s.job(id).unwrap().walltime as i64;
        let op = caller(5, Role::Operator);
        s.pause(id, &op, Pause::Suspend, t(10)).unwrap();
        let job = s.job(id).unwrap();
        let at = |secs| t(secs).timestamp();
        let end = crate::scheduler::plan::expected_end(job, at(10), 0);
        assert_eq!(end, at(walltime), "suspended this second");
        let later = crate::scheduler::plan::expected_end(job, at(70), 0);
        assert_eq!(later, at(walltime + 60), "planned as if resumed now");
    }
}
