//! qmove: a job that has not started changes queue (PBS `qmove DEST ID`).
//!
//! EPCC's operators moved the jobs their holding queue caught to a queue
//! that would run them; users move their own jobs between queues. The rules
//! are those of a submission: the destination must take the job (its
//! limits, with the figures when it does not), a route queue routes it on,
//! and only a job that has not started moves. An owner moves only into an
//! enabled queue; operators and managers may also fill a disabled one.

use crate::access::{Caller, Role};
use crate::error::CoreError;
use crate::job::{Job, JobId};
use crate::route::check_queue_limits;
use crate::route::{self, Ask};
use crate::state::State;
use crate::time::Time;

impl State {
    /// Moves a pending job to `dest` (routing it, if `dest` is a route
    /// queue). Returns the changed job for the caller to store.
    pub fn move_job(
        &mut self,
        id: JobId,
        dest: &str,
        caller: &Caller,
        now: Time,
    ) -> Result<&Job, CoreError> {
        let job = self.job(id).ok_or_else(|| CoreError::NoSuchJob {
            id: self.full_id(id),
        })?;
        if !caller.may_act_on(job) {
            return Err(CoreError::NotYourJob {
                id: self.full_id(id),
                owner: job.owner.user.clone(),
                action: "move".into(),
            });
        }
        if !job.state.is_pending() {
            return Err(CoreError::NotMovable {
                id: self.full_id(id),
                state: job.state,
            });
        }
        let config = self.config();
        let queue = config.queue(dest).ok_or_else(|| CoreError::NoSuchQueue {
            queue: dest.to_string(),
        })?;
        if !queue.enabled && caller.role < Role::Operator {
            return Err(CoreError::QueueDisabled {
                queue: dest.to_string(),
            });
        }
        let from = job.queue.clone();
        // Only the sets whose nodes have what the job needs of a node count.
        let needs = job.needs();
        let nodes_in = |q: &str| self.reach(q, &needs).nodes;
        let (landed, comment) = if queue.is_route() {
            let routed = route::route(config, dest, Ask::of(job), &nodes_in)?;
            let comment = routed.held.unwrap_or_else(|| {
                format!(
                    "moved from {from} to {} (routed by {dest}) by {}",
                    routed.queue, caller.user
                )
            });
            (routed.queue, comment)
        } else {
            check_queue_limits(queue, job.nodes, job.walltime, nodes_in(dest))?;
            let comment = format!("moved from {from} to {dest} by {}", caller.user);
            (dest.to_string(), comment)
        };
        crate::access::acl::check_move(config, job, dest, &landed)?;
        if let Some(into) = config.queue(&landed).filter(|q| q.name != from) {
            self.check_queued_limits(job, into, true)?;
        }
        self.relocate(id, &landed, comment, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobState;
    use crate::queue::{Queue, QueueType};
    use crate::state::tests::{caller, state, submit, t};

    /// `batch` (open, 4 nodes), `small` (at most 2 nodes, 02:00:00),
    /// `closed` (not enabled), `HOLD` (not started), and `PIPE` routing
    /// to small, holding in HOLD.
    fn setup() -> State {
        let mut s = state(4);
        let mut config = s.config().clone();
        let mut small = Queue::open("small");
        small.max_nodes = Some(2);
        small.max_walltime = Some(7200);
        config.queues.insert("small".into(), small);
        config.queues.insert("closed".into(), Queue::new("closed"));
        let mut hold = Queue::new("HOLD");
        hold.enabled = true;
        config.queues.insert("HOLD".into(), hold);
        let mut pipe = Queue::open("PIPE");
        pipe.queue_type = QueueType::Route;
        pipe.route_destinations = vec!["small".into()];
        pipe.holding_queue = Some("HOLD".into());
        config.queues.insert("PIPE".into(), pipe);
        config.server.default_queue = Some("batch".into());
        s.set_config(config);
        s
    }

    fn user() -> Caller {
        caller(1000, Role::User)
    }

    #[test]
    fn an_owner_moves_a_queued_job_within_the_destinations_limits() {
        let mut s = setup();
        let id = submit(&mut s, 1000, 2);
        let job = s.move_job(id, "small", &user(), t(5)).unwrap();
        assert_eq!(job.queue, "small");
        assert_eq!(job.comment, "moved from batch to small by u1000");
        assert_eq!(job.qtime, t(0), "it keeps its queue time");
        assert_eq!(s.pending_in("small").count(), 1);
        assert_eq!(s.pending_in("batch").count(), 0);
        s.check_invariants().unwrap();
    }

    #[test]
    fn the_destinations_limits_are_checked_with_the_figures() {
        let mut s = setup();
        let id = submit(&mut s, 1000, 3);
        let err = s.move_job(id, "small", &user(), t(5)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "job asks for 3 nodes but queue \"small\" allows at most 2 (resources_max.nodes)"
        );
        assert_eq!(s.job(id).unwrap().queue, "batch", "nothing moved");
        s.check_invariants().unwrap();
    }

    #[test]
    fn only_jobs_that_have_not_started_move() {
        let mut s = setup();
        let id = submit(&mut s, 1000, 1);
        s.start(id, &[0], t(1)).unwrap();
        let err = s.move_job(id, "small", &user(), t(2)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot move job 1.srv: it is running; only jobs that have not started (queued, held, waiting) move"
        );
        // A held job moves and stays held.
        let held = submit(&mut s, 1000, 1);
        s.hold(held, &user(), t(2)).unwrap();
        let job = s.move_job(held, "small", &user(), t(3)).unwrap();
        assert_eq!((job.queue.as_str(), job.state), ("small", JobState::Held));
        s.check_invariants().unwrap();
    }

    #[test]
    fn owners_move_their_own_jobs_operators_any_job() {
        let mut s = setup();
        let id = submit(&mut s, 1000, 1);
        let other = caller(1001, Role::User);
        assert!(matches!(
            s.move_job(id, "small", &other, t(1)),
            Err(CoreError::NotYourJob { .. })
        ));
        let op = caller(5, Role::Operator);
        assert_eq!(s.move_job(id, "small", &op, t(1)).unwrap().queue, "small");
    }

    #[test]
    fn only_operators_fill_a_queue_that_is_not_enabled() {
        let mut s = setup();
        let id = submit(&mut s, 1000, 1);
        assert!(matches!(
            s.move_job(id, "closed", &user(), t(1)),
            Err(CoreError::QueueDisabled { .. })
        ));
        let op = caller(5, Role::Operator);
        assert_eq!(s.move_job(id, "closed", &op, t(1)).unwrap().queue, "closed");
        assert!(matches!(
            s.move_job(id, "nosuch", &op, t(1)),
            Err(CoreError::NoSuchQueue { .. })
        ));
    }

    #[test]
    fn moving_to_a_route_queue_routes_the_job() {
        let mut s = setup();
        let fits = submit(&mut s, 1000, 1);
        let job = s.move_job(fits, "PIPE", &user(), t(1)).unwrap();
        assert_eq!(job.queue, "small");
        assert_eq!(
            job.comment,
            "moved from batch to small (routed by PIPE) by u1000"
        );
        let big = submit(&mut s, 1000, 4);
        let job = s.move_job(big, "PIPE", &user(), t(1)).unwrap();
        assert_eq!(job.queue, "HOLD");
        assert_eq!(
            job.comment,
            "routed to HOLD by pipe queue PIPE: no destination takes 4 nodes for 01:00:00 (largest node count 2)"
        );
        // From the holding queue to a real one, by an operator.
        let op = caller(5, Role::Operator);
        assert_eq!(s.move_job(big, "batch", &op, t(2)).unwrap().queue, "batch");
        s.check_invariants().unwrap();
    }
}
