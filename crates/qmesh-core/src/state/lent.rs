//! The state's side of preemption (`preempt.rs`): a job suspended so an
//! express job may run lends its nodes, and takes them back when they are
//! all free again; a job requeued or deleted by preemption is ended as at
//! a period's end, remembering who preempted it.
//!
//! A lent job stays active (state `S`, counted as running, its wall time
//! stopped) but holds no node: the nodes' occupancy knows only the jobs
//! running there. The scheduling pass keeps a lent job's free nodes for
//! express jobs, and resumes it first once all are free.

use super::State;
use crate::error::CoreError;
use crate::job::{Job, JobId, JobState};
use crate::time::Time;

impl State {
    /// Suspends running job `id` for job `by`, which takes its nodes.
    /// Returns the host whose agent stops it, and the changed job.
    pub fn suspend_for(
        &mut self,
        id: JobId,
        by: JobId,
        now: Time,
    ) -> Result<(String, &Job), CoreError> {
        let job = self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))?;
        if job.state != JobState::Running {
            return Err(self.wrong_state(job, "preempt"));
        }
        let host = self.job_host(job).unwrap_or_default().to_string();
        let by_name = self.full_id(by);
        self.machine.release_nodes(id);
        let job = self
            .book
            .jobs
            .get_mut(&id)
            .ok_or_else(|| CoreError::NoSuchJob { id: id.to_string() })?;
        job.state = JobState::Suspended;
        job.suspension.since = Some(now);
        job.suspension.lent_to = Some(by);
        self.book.lent.insert(id);
        job.mtime = now;
        job.comment = format!(
            "suspended: preempted by job {by_name}; it resumes when its nodes are free again"
        );
        Ok((host, job))
    }

    /// Ends running job `id` for job `by`: requeued (`requeue`) or killed
    /// once its agent reports it gone, as at a period's end. Returns the
    /// host whose agent kills it, and the changed job.
    pub fn stop_for(
        &mut self,
        id: JobId,
        by: JobId,
        requeue: bool,
        now: Time,
    ) -> Result<(String, &Job), CoreError> {
        let what = format!("preemption by job {}", self.full_id(by));
        self.stop_for_period(id, &what, requeue, now)?;
        let host = self
            .book
            .jobs
            .get(&id)
            .and_then(|j| self.job_host(j))
            .unwrap_or_default()
            .to_string();
        let job = self
            .book
            .jobs
            .get_mut(&id)
            .ok_or_else(|| CoreError::NoSuchJob { id: id.to_string() })?;
        if let Some(stop) = job.period_stop.as_mut() {
            stop.preempted_by = Some(by);
        }
        Ok((host, job))
    }

    /// The jobs suspended by preemption, their nodes lent.
    pub fn lent_jobs(&self) -> impl Iterator<Item = &Job> {
        self.book
            .lent
            .iter()
            .filter_map(|id| self.book.jobs.get(id))
    }

    /// A lent job's nodes, by index (those the configuration still has).
    pub fn lent_nodes(&self, job: &Job) -> Vec<usize> {
        job.exec_nodes
            .iter()
            .filter_map(|name| self.machine.node_index.get(&**name).copied())
            .collect()
    }

    /// Whether a lent job could take its nodes back now: all free and up.
    pub fn may_take_back(&self, job: &Job) -> bool {
        let nodes = self.lent_nodes(job);
        nodes.len() == job.exec_nodes.len()
            && nodes.iter().all(|&i| self.machine.nodes[i].is_free())
    }

    /// Jobs ended by preemption for `by` and still being killed.
    pub fn being_preempted_for(&self, by: JobId) -> usize {
        self.book
            .active
            .iter()
            .filter_map(|id| self.book.jobs.get(id))
            .filter(|j| {
                j.state == JobState::Exiting
                    && j.period_stop.as_ref().and_then(|s| s.preempted_by) == Some(by)
            })
            .count()
    }

    /// Resumes a job suspended by preemption on its own nodes, which must
    /// all be free. Returns the host whose agent continues it, and the
    /// changed job.
    pub fn take_back(&mut self, id: JobId, now: Time) -> Result<(String, &Job), CoreError> {
        let job = self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))?;
        let Some(to) = job
            .suspension
            .lent_to
            .filter(|_| job.state == JobState::Suspended)
        else {
            return Err(self.wrong_state(job, "resume"));
        };
        if !self.may_take_back(job) {
            return Err(CoreError::NodesLent {
                id: self.full_id(id),
                to: self.full_id(to),
            });
        }
        let nodes = self.lent_nodes(job);
        let sole = job.wants_sole_nodes();
        let host = self.job_host(job).unwrap_or_default().to_string();
        self.machine
            .occupancy
            .take(&mut self.machine.nodes, id, &nodes, sole);
        let job = self
            .book
            .jobs
            .get_mut(&id)
            .ok_or_else(|| CoreError::NoSuchJob { id: id.to_string() })?;
        job.state = JobState::Running;
        job.suspension.end(now);
        job.suspension.lent_to = None;
        self.book.lent.remove(&id);
        job.mtime = now;
        job.comment = "resumed: the nodes it lent by preemption are free again".to_string();
        Ok((host, job))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{exited, state, submit, t};

    #[test]
    fn a_lent_job_frees_its_nodes_keeps_its_time_and_takes_them_back() {
        let mut s = state(2);
        let low = submit(&mut s, 1000, 2);
        s.start(low, &[0, 1], t(0)).unwrap();
        let high = submit(&mut s, 100, 1);
        s.suspend_for(low, high, t(100)).unwrap();
        s.check_invariants().unwrap();
        assert_eq!(s.job(low).unwrap().state, JobState::Suspended);
        assert!(s.nodes().iter().all(|n| n.is_free()), "its nodes are lent");
        s.start(high, &[0], t(100)).unwrap();
        let lent = s.job(low).unwrap();
        assert!(!s.may_take_back(lent), "node 0 runs the express job");
        let err = s.take_back(low, t(150)).unwrap_err();
        assert!(err.to_string().contains("lent its nodes"), "{err}");
        s.finish(high, exited(0), t(200)).unwrap();
        s.take_back(low, t(200)).unwrap();
        s.check_invariants().unwrap();
        let job = s.job(low).unwrap();
        assert_eq!(job.state, JobState::Running);
        assert_eq!(
            job.elapsed(t(300)),
            Some(200),
            "100 s suspended not counted"
        );
        assert!(s.nodes().iter().all(|n| !n.is_free()));
    }

    #[test]
    fn a_lent_job_restored_from_the_store_holds_no_node() {
        let mut s = state(2);
        let low = submit(&mut s, 1000, 2);
        s.start(low, &[0, 1], t(0)).unwrap();
        s.suspend_for(low, JobId(99), t(10)).unwrap();
        let jobs: Vec<Job> = s.jobs().cloned().collect();
        let mut again = state(2);
        let warnings = again.restore(jobs, 2);
        assert!(warnings.is_empty(), "{warnings:?}");
        again.check_invariants().unwrap();
        assert!(again.nodes().iter().all(|n| n.is_free()));
    }

    #[test]
    fn a_job_stopped_for_preemption_names_who_preempted_it() {
        let mut s = state(1);
        let low = submit(&mut s, 1000, 1);
        s.start(low, &[0], t(0)).unwrap();
        let (_, job) = s.stop_for(low, JobId(7), true, t(10)).unwrap();
        assert_eq!(job.state, JobState::Exiting);
        assert!(
            job.comment.contains("preemption by job 7"),
            "{}",
            job.comment
        );
        assert_eq!(s.being_preempted_for(JobId(7)), 1);
    }
}
