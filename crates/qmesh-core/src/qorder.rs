//! qorder: two jobs that have not started exchange places (PBS Pro's
//! `req_orderjob`). Each takes the other's rank; if they wait in
//! different queues, each also moves to the other's queue, which must
//! take it (its limits, as qmove checks). A user may order only two jobs
//! of their own; operators and managers any two. Nothing else about the
//! jobs changes.

use crate::access::Caller;
use crate::error::CoreError;
use crate::job::JobId;
use crate::route::check_queue_limits;
use crate::state::State;
use crate::time::Time;

impl State {
    /// Exchanges the places of `a` and `b`; returns the jobs that changed
    /// (to store).
    pub fn order(
        &mut self,
        a: JobId,
        b: JobId,
        caller: &Caller,
        now: Time,
    ) -> Result<Vec<JobId>, CoreError> {
        for id in [a, b] {
            let job = self.job(id).ok_or_else(|| CoreError::NoSuchJob {
                id: self.full_id(id),
            })?;
            if !caller.may_act_on(job) {
                return Err(CoreError::NotYourJob {
                    id: self.full_id(id),
                    owner: job.owner.user.clone(),
                    action: "reorder".into(),
                });
            }
            if !job.state.is_pending() {
                return Err(CoreError::WrongState {
                    id: self.full_id(id),
                    action: "reorder".into(),
                    state: job.state,
                });
            }
        }
        if a == b {
            return Ok(Vec::new());
        }
        let (ja, jb) = match (self.job(a), self.job(b)) {
            (Some(ja), Some(jb)) => (ja, jb),
            _ => return Ok(Vec::new()),
        };
        let (qa, qb) = (ja.queue.clone(), jb.queue.clone());
        let (rank_a, rank_b) = (ja.rank.unwrap_or(a.0), jb.rank.unwrap_or(b.0));
        if qa != qb {
            // Each must be one the other's queue would take.
            for (job, dest) in [(ja, &qb), (jb, &qa)] {
                let queue = self
                    .config()
                    .queue(dest)
                    .ok_or_else(|| CoreError::NoSuchQueue {
                        queue: dest.clone(),
                    })?;
                let reach = self.reach(dest, &job.needs()).nodes;
                check_queue_limits(queue, job.nodes, job.walltime, reach)?;
            }
            let comment = |from: &str, to: &str, other: JobId| {
                format!(
                    "moved from {from} to {to} by {}: qorder with job {}",
                    caller.user,
                    self.full_id(other)
                )
            };
            let (ca, cb) = (comment(&qa, &qb, b), comment(&qb, &qa, a));
            self.relocate(a, &qb, ca, now)?;
            self.relocate(b, &qa, cb, now)?;
        }
        // A rank equal to the job's id is kept as no rank (its default).
        let rank_for = |id: JobId, rank: u64| (rank != id.0).then_some(rank);
        self.rerank(&qb, &[(a, rank_for(a, rank_b))], now);
        self.rerank(&qa, &[(b, rank_for(b, rank_a))], now);
        Ok(vec![a, b])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Role;
    use crate::queue::Queue;
    use crate::state::tests::{caller, state, submit, t};

    fn order_of(s: &State, queue: &str) -> Vec<u64> {
        s.pending_in(queue).map(|j| j.id.0).collect()
    }

    #[test]
    fn two_jobs_of_one_queue_exchange_places() {
        let mut s = state(1);
        let ids: Vec<JobId> = (0..4).map(|_| submit(&mut s, 1000, 1)).collect();
        assert_eq!(order_of(&s, "batch"), [1, 2, 3, 4]);
        let owner = caller(1000, Role::User);
        let changed = s.order(ids[0], ids[3], &owner, t(1)).unwrap();
        assert_eq!(changed, [ids[0], ids[3]]);
        assert_eq!(order_of(&s, "batch"), [4, 2, 3, 1]);
        s.check_invariants().unwrap();
        // And back: each returns to its own rank (none kept).
        s.order(ids[3], ids[0], &owner, t(2)).unwrap();
        assert_eq!(order_of(&s, "batch"), [1, 2, 3, 4]);
        assert!(s.jobs().all(|j| j.rank.is_none()));
        s.check_invariants().unwrap();
    }

    #[test]
    fn jobs_of_two_queues_exchange_queues_too_if_each_fits() {
        let mut s = state(4);
        let mut config = s.config().clone();
        let mut small = Queue::open("small");
        small.max_nodes = Some(1);
        config.queues.insert("small".into(), small);
        config.server.default_queue = Some("batch".into());
        s.set_config(config);
        let a = submit(&mut s, 1000, 1);
        let b = s
            .submit(
                crate::submit::Submission {
                    script_name: "b.sh".into(),
                    workdir: "/tmp".into(),
                    queue: Some("small".into()),
                    resources: vec![("nodes".into(), "1".into())],
                    ..Default::default()
                },
                &caller(1000, Role::User),
                t(0),
            )
            .unwrap()
            .id;
        let op = caller(5, Role::Operator);
        s.order(a, b, &op, t(1)).unwrap();
        assert_eq!(s.job(a).unwrap().queue, "small");
        assert_eq!(s.job(b).unwrap().queue, "batch");
        assert_eq!(order_of(&s, "small"), [a.0]);
        s.check_invariants().unwrap();
        // A job too big for the other queue stays where it is.
        let big = submit(&mut s, 1000, 2);
        let err = s.order(big, a, &op, t(2)).unwrap_err();
        assert!(
            err.to_string().contains("queue \"small\" allows at most 1"),
            "{err}"
        );
        assert_eq!(s.job(big).unwrap().queue, "batch");
        s.check_invariants().unwrap();
    }

    #[test]
    fn only_pending_jobs_of_one_s_own() {
        let mut s = state(2);
        let a = submit(&mut s, 1000, 1);
        let b = submit(&mut s, 1001, 1);
        let err = s.order(a, b, &caller(1000, Role::User), t(1)).unwrap_err();
        assert!(matches!(err, CoreError::NotYourJob { .. }), "{err}");
        s.start(a, &[0], t(1)).unwrap();
        let err = s.order(a, b, &caller(5, Role::Operator), t(2)).unwrap_err();
        assert_eq!(err.to_string(), "cannot reorder job 1.srv: it is running");
    }
}
