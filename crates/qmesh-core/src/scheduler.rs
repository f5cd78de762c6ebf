//! One scheduling pass: from the state, which jobs start now and on which
//! nodes, and why each other job waits.
//!
//! The pass is a pure function of the state and `now`; the daemon applies
//! its plan by writing the starts to the store and then telling the agents,
//! the simulator by advancing its clock. The policy here is the simplest
//! honest one: queues by priority, jobs in submission order, each started
//! if the allocator can place it. Ordering policies, blocking and
//! backfilling (ANL, SDSC, NCAR) come with the policy issue.

use std::fmt;

use crate::Time;
use crate::alloc::{self, FreeSet};
use crate::job::{JobId, JobState};
use crate::state::State;

/// Why a job did not start in this pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// It carries a hold.
    Held,
    /// Its queue is not started.
    QueueStopped,
    /// The server's scheduling is off.
    SchedulingOff,
    /// Not enough free nodes now.
    Resources,
    /// Not enough nodes up, even if every running job ended.
    NodesDown,
}

impl Reason {
    /// The name Slurm users know from `squeue`'s reason column.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Held => "Held",
            Reason::QueueStopped => "QueueStopped",
            Reason::SchedulingOff => "SchedulingOff",
            Reason::Resources => "Resources",
            Reason::NodesDown => "NodesDown",
        }
    }

    /// A sentence for qstat's comment.
    pub fn explain(self) -> &'static str {
        match self {
            Reason::Held => "job is held; qrls releases it",
            Reason::QueueStopped => "its queue is stopped; an operator starts it with qmgr",
            Reason::SchedulingOff => "scheduling is off (qmgr: set server scheduling = true)",
            Reason::Resources => "waiting for free nodes",
            Reason::NodesDown => "not enough nodes are up to run it",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Start this job on these nodes (indices into `State::nodes`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Start {
    pub job: JobId,
    pub nodes: Vec<usize>,
}

/// What one pass decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub starts: Vec<Start>,
    /// Every pending job that does not start, with its reason.
    pub waiting: Vec<(JobId, Reason)>,
}

/// The scheduling policy. It has no settings yet; it will carry the job
/// order, blocking and backfill choices.
#[derive(Clone, Debug, Default)]
pub struct Scheduler;

impl Scheduler {
    pub fn pass(&self, state: &State, _now: Time) -> Plan {
        let config = state.config();
        let mut free: Vec<FreeSet> = state
            .node_sets()
            .iter()
            .enumerate()
            .map(|(set, _)| FreeSet {
                set,
                free: Vec::new(),
            })
            .collect();
        let mut up = vec![0usize; free.len()];
        for (idx, node) in state.nodes().iter().enumerate() {
            if node.up {
                up[node.set] += 1;
            }
            if node.is_free() {
                free[node.set].free.push(idx);
            }
        }
        let mut free_total: usize = free.iter().map(|f| f.free.len()).sum();

        // Queues by priority (higher first), then name; jobs by id.
        let mut order: Vec<(i32, &str, JobId)> = state
            .pending_jobs()
            .map(|job| {
                let prio = config.queue(&job.queue).map_or(i32::MIN, |q| q.priority);
                (prio, job.queue.as_str(), job.id)
            })
            .collect();
        order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)).then(a.2.cmp(&b.2)));

        let mut plan = Plan::default();
        for (_, queue_name, id) in order {
            let Some(job) = state.job(id) else { continue };
            let queue = config.queue(queue_name);
            let reason = if job.state == JobState::Held {
                Reason::Held
            } else if !config.server.scheduling {
                Reason::SchedulingOff
            } else if !queue.is_some_and(|q| q.started) {
                Reason::QueueStopped
            } else {
                let Some(queue) = queue else { continue };
                let allowed = |set: usize| queue.uses_set(&state.node_sets()[set].name);
                let n = job.nodes as usize;
                let placed = if free_total >= n {
                    alloc::flat(&free, allowed, n)
                } else {
                    None
                };
                match placed {
                    Some(nodes) => {
                        for fs in free.iter_mut() {
                            fs.free.retain(|i| !nodes.contains(i));
                        }
                        free_total -= nodes.len();
                        plan.starts.push(Start { job: id, nodes });
                        continue;
                    }
                    None => {
                        let reachable: usize =
                            (0..up.len()).filter(|&s| allowed(s)).map(|s| up[s]).sum();
                        if reachable < n {
                            Reason::NodesDown
                        } else {
                            Reason::Resources
                        }
                    }
                }
            };
            plan.waiting.push((id, reason));
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{state, submit, t};

    fn apply(state: &mut State, plan: &Plan) {
        for start in &plan.starts {
            state.start(start.job, &start.nodes, t(1)).unwrap();
        }
    }

    #[test]
    fn starts_in_submission_order_while_nodes_last() {
        let mut s = state(4);
        let a = submit(&mut s, 1, 2);
        let b = submit(&mut s, 1, 3);
        let c = submit(&mut s, 1, 2);
        let plan = Scheduler.pass(&s, t(0));
        let started: Vec<JobId> = plan.starts.iter().map(|st| st.job).collect();
        assert_eq!(started, vec![a, c], "b does not fit after a; c does");
        assert_eq!(plan.waiting, vec![(b, Reason::Resources)]);
        apply(&mut s, &plan);
        s.check_invariants().unwrap();
        let again = Scheduler.pass(&s, t(2));
        assert!(again.starts.is_empty());
    }

    #[test]
    fn higher_priority_queues_go_first() {
        let mut s = state(2);
        let low = submit(&mut s, 1, 2);
        let mut config = s.config().clone();
        let mut fast = crate::queue::Queue::open("fast");
        fast.priority = 10;
        config.queues.insert("fast".into(), fast);
        s.set_config(config);
        let sub = crate::submit::Submission {
            queue: Some("fast".into()),
            workdir: "/tmp".into(),
            resources: vec![("nodes".into(), "2".into())],
            ..Default::default()
        };
        let high = s
            .submit(
                sub,
                &crate::state::tests::caller(1, crate::Role::User),
                t(0),
            )
            .unwrap()
            .id;
        let plan = Scheduler.pass(&s, t(0));
        assert_eq!(plan.starts[0].job, high);
        assert_eq!(plan.waiting, vec![(low, Reason::Resources)]);
    }

    #[test]
    fn held_stopped_and_down_jobs_say_why() {
        let mut s = state(2);
        let held = submit(&mut s, 1, 1);
        s.hold(
            held,
            &crate::state::tests::caller(1, crate::Role::User),
            t(0),
        )
        .unwrap();
        let plan = Scheduler.pass(&s, t(0));
        assert_eq!(plan.waiting, vec![(held, Reason::Held)]);

        let waiting = submit(&mut s, 1, 2);
        s.set_host_up("h", false);
        let plan = Scheduler.pass(&s, t(0));
        assert!(plan.waiting.contains(&(waiting, Reason::NodesDown)));

        s.set_host_up("h", true);
        let mut config = s.config().clone();
        config.queues.get_mut("batch").unwrap().started = false;
        s.set_config(config);
        let plan = Scheduler.pass(&s, t(0));
        assert!(plan.waiting.contains(&(waiting, Reason::QueueStopped)));
        assert!(plan.starts.is_empty());
    }
}
