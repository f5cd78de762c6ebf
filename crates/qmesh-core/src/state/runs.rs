//! The state's history of runs, which new jobs' run times are predicted
//! from (`predict.rs`): fed by every job's end (`finish`), so the daemon
//! and the simulator learn alike, and rebuilt from the finished jobs the
//! store keeps when the daemon starts again.

use super::State;
use crate::job::{Job, JobState};
use crate::predict::{Likeness, Run, RunHistory};

impl State {
    /// Each user's last runs.
    pub fn runs(&self) -> &RunHistory {
        &self.runs
    }

    /// Which earlier jobs count as like a new one, from now on (the
    /// simulator measures both; the daemon keeps the default).
    pub fn predict_from(&mut self, likeness: Likeness) {
        self.runs.set_likeness(likeness);
    }

    /// Learns the runs of the finished jobs kept (at a restart), oldest
    /// end first.
    pub(super) fn learn_runs_kept(&mut self) {
        let mut ended: Vec<(&Job, Run)> = self
            .book
            .jobs
            .values()
            .filter(|j| j.state == JobState::Finished)
            .filter_map(|j| ran(j).map(|run| (j, run)))
            .collect();
        ended.sort_by_key(|(j, _)| (j.end_time, j.id));
        for (job, run) in ended {
            self.runs.record(&job.owner.user, run);
        }
    }
}

/// What a finished job ran, for the history: `None` if it never started
/// (deleted while queued), or is an array (its sub-jobs ran).
pub(super) fn ran(job: &Job) -> Option<Run> {
    if job.array.is_some() {
        return None;
    }
    let (start, end) = (job.stime?, job.end_time?);
    let secs = (end - start).num_seconds().max(0) as u64;
    Some(Run {
        nodes: job.nodes,
        walltime: job.walltime,
        ran: secs.saturating_sub(job.suspension.secs),
    })
}

#[cfg(test)]
mod tests {
    use crate::access::Role;
    use crate::state::tests::{caller, exited, state, submit, t};

    #[test]
    fn runs_are_learnt_at_each_end_and_again_from_the_jobs_kept() {
        let mut s = state(4);
        for (ran, user) in [(100, 1), (300, 1), (50, 2)] {
            let id = submit(&mut s, user, 1);
            s.start(id, &[0], t(0)).unwrap();
            s.finish(id, exited(0), t(ran)).unwrap();
        }
        // Deleted before it started: no run.
        let gone = submit(&mut s, 1, 1);
        s.delete(gone, &caller(1, Role::User), t(400)).unwrap();
        assert_eq!(s.runs().predict("u1", 1, 3600), Some(200));
        assert_eq!(s.runs().predict("u2", 1, 3600), Some(50));
        // A restart: the history is what the finished jobs kept say.
        let mut fresh = state(4);
        fresh.restore(s.jobs().cloned(), 0);
        assert_eq!(fresh.runs().predict("u1", 1, 3600), Some(200));
        assert_eq!(fresh.runs().users(), 2);
        // A new job carries its prediction in its record (the store's).
        let next = submit(&mut fresh, 1, 2);
        assert_eq!(fresh.job(next).unwrap().predicted_run, Some(200));
    }
}
