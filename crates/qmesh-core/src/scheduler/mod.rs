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
use crate::job::{Job, JobId, JobState};
use crate::queue::Queue;
use crate::state::State;

/// Why a pending job does not start now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// It carries a hold.
    Held,
    /// Its queue is not started.
    QueueStopped,
    /// The server's scheduling is off.
    SchedulingOff,
    /// Not enough free nodes now; it is first in line for them.
    Resources,
    /// Jobs of higher priority come first.
    Priority,
    /// A job above `block_priority` is waiting for nodes, and nothing may
    /// start that would delay it (SDSC blocking).
    Blocked,
    /// It would fit in the free nodes, but would delay a reservation.
    Reservation,
    /// Its account's remaining allocation cannot cover it.
    Allocation,
    /// Its owner runs as many jobs as `max_user_run` allows.
    UserLimit,
    /// Its group runs as many jobs as its limit allows.
    GroupLimit,
    /// It waits for other jobs to end (`qsub -W depend=`).
    Dependency,
    /// It may not start before its `qsub -a` time.
    BeginTime,
    /// Not enough nodes are up, even if every running job ended.
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
            Reason::Priority => "Priority",
            Reason::Blocked => "Blocked",
            Reason::Reservation => "Reservation",
            Reason::Allocation => "Allocation",
            Reason::UserLimit => "UserLimit",
            Reason::GroupLimit => "GroupLimit",
            Reason::Dependency => "Dependency",
            Reason::BeginTime => "BeginTime",
            Reason::NodesDown => "NodesDown",
        }
    }

    /// A sentence for qstat's comment.
    pub fn explain(self) -> &'static str {
        match self {
            Reason::Held => "job is held; qrls releases it",
            Reason::QueueStopped => "its queue is stopped; an operator starts it with qmgr",
            Reason::SchedulingOff => "scheduling is off (qmgr: set server scheduling = true)",
            Reason::Resources => "waiting for free nodes; it is next in line for them",
            Reason::Priority => "jobs of higher priority are ahead of it",
            Reason::Blocked => "nodes are being held for a large job of high priority",
            Reason::Reservation => "it would delay a job that has nodes reserved",
            Reason::Allocation => "its account's allocation cannot cover it (see spusage)",
            Reason::UserLimit => "its owner already runs max_user_run jobs",
            Reason::GroupLimit => "its group already runs as many jobs as it may",
            Reason::Dependency => "it waits for the jobs it depends on",
            Reason::BeginTime => "it may not start before its qsub -a time",
            Reason::NodesDown => "not enough nodes are up to run it",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A pending job's place in the plan, as the ANL sp commands name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Starts in this pass.
    Startable,
    /// Cannot start now; nodes are held for it (it has a reservation).
    Blocked,
    /// Was tried against free nodes and would delay a reservation, or
    /// needs more nodes than are free.
    CannotBackfill,
    /// Not tried: no nodes were free, or higher priority jobs come first.
    Waiting,
    /// Held by an operator or the system, or waiting on a dependency or
    /// its start-after time.
    Held,
    /// Held by its owner (qhold, sppause).
    Paused,
}

impl Status {
    /// The words spq prints, as in the ANL paper.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Startable => "Startable",
            Status::Blocked => "Blocked",
            Status::CannotBackfill => "Cannot Backfill",
            Status::Waiting => "Waiting",
            Status::Held => "Held",
            Status::Paused => "Paused",
        }
    }
}

/// One pending job in the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub job: JobId,
    pub status: Status,
    /// Why it does not start now; `None` when it starts.
    pub reason: Option<Reason>,
    /// When the plan expects it to start, if it has a reservation.
    pub expected_start: Option<Time>,
    /// Its priority under the server's job order (higher goes first).
    pub priority: f64,
}

/// Free nodes of one node set, and until when they all stay free.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetFree {
    pub set: String,
    pub free: u32,
    /// When a reservation claims some of them; `None` if none does.
    pub until: Option<Time>,
}

/// A job of up to `nodes` nodes could start now and run `secs` seconds
/// (`None`: without limit) without delaying any reservation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WhatPair {
    pub nodes: u32,
    pub secs: Option<u64>,
}

/// When one pending job is expected to start (spwhen).
#[derive(Clone, Debug, PartialEq)]
pub struct When {
    pub start: Option<Time>,
    pub reason: Reason,
}

/// Start this job on these nodes (indices into `State::nodes`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Start {
    pub job: JobId,
    pub nodes: Vec<usize>,
}

/// What one pass decided.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub starts: Vec<Start>,
    /// Every pending job the pass saw, in the order it took them.
    pub queue: Vec<Entry>,
    /// Pending jobs the pass looked at and could not start, with the reason.
    /// A job it did not look at (the nodes ran out first, or it was held)
    /// waits for the reason [`Scheduler::reason`] gives.
    pub waiting: Vec<(JobId, Reason)>,
}

impl Plan {
    /// A pending job's entry, if the pass saw it.
    pub fn entry(&self, id: JobId) -> Option<&Entry> {
        self.queue.iter().find(|e| e.job == id)
    }

    /// Free nodes per node set now, and how long they stay free (spfree).
    pub fn free_nodes(&self, _state: &State) -> Vec<SetFree> {
        Vec::new()
    }

    /// The largest jobs that would start now (spwhat), widest first.
    pub fn what(&self, _state: &State) -> Vec<WhatPair> {
        Vec::new()
    }

    /// The reason a pending job waits after this plan.
    pub fn reason_of(&self, scheduler: &Scheduler, state: &State, job: &Job) -> Reason {
        self.waiting
            .iter()
            .find(|(id, _)| *id == job.id)
            .map(|(_, r)| *r)
            .unwrap_or_else(|| scheduler.reason(state, job))
    }
}

/// The scheduling policy. It has no settings yet; it will carry the job
/// order, blocking and backfill choices.
#[derive(Clone, Debug, Default)]
pub struct Scheduler;

impl Scheduler {
    /// Walks the queues by priority (then name), each in submission order,
    /// and starts every job the allocator can place. It stops as soon as no
    /// node is free, so a pass over a long queue on a full machine costs
    /// next to nothing.
    pub fn pass(&self, state: &State, _now: Time) -> Plan {
        let config = state.config();
        let mut plan = Plan::default();
        if !config.server.scheduling {
            return plan;
        }
        let sets = state.node_sets();
        let mut free: Vec<FreeSet> = (0..sets.len())
            .map(|set| FreeSet {
                set,
                free: Vec::new(),
            })
            .collect();
        let mut up = vec![0usize; sets.len()];
        for (idx, node) in state.nodes().iter().enumerate() {
            if node.up {
                up[node.set] += 1;
            }
            if node.is_free() {
                free[node.set].free.push(idx);
            }
        }
        let mut free_total: usize = free.iter().map(|f| f.free.len()).sum();

        let mut queues: Vec<&Queue> = config.queues.values().filter(|q| q.started).collect();
        queues.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.name.cmp(&b.name)));
        for queue in queues {
            let allowed = |set: usize| queue.uses_set(&sets[set].name);
            let reachable: usize = (0..sets.len()).filter(|&s| allowed(s)).map(|s| up[s]).sum();
            for job in state.pending_in(&queue.name) {
                if free_total == 0 {
                    return plan;
                }
                if job.state != JobState::Queued {
                    continue;
                }
                let n = job.nodes as usize;
                let placed = if n <= free_total {
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
                        plan.starts.push(Start { job: job.id, nodes });
                    }
                    None => {
                        let reason = if reachable < n {
                            Reason::NodesDown
                        } else {
                            Reason::Resources
                        };
                        plan.waiting.push((job.id, reason));
                    }
                }
            }
        }
        plan
    }

    /// When a pending job is expected to start, given the jobs ahead of
    /// it (spwhen).
    pub fn when(&self, state: &State, job: &Job, _now: Time) -> When {
        When {
            start: None,
            reason: self.reason(state, job),
        }
    }

    /// Why a pending job waits, from the state alone.
    pub fn reason(&self, state: &State, job: &Job) -> Reason {
        let config = state.config();
        if job.state == JobState::Held {
            return Reason::Held;
        }
        if !config.server.scheduling {
            return Reason::SchedulingOff;
        }
        let Some(queue) = config.queue(&job.queue).filter(|q| q.started) else {
            return Reason::QueueStopped;
        };
        let reachable = state.up_for_queue(queue);
        if reachable < job.nodes as usize {
            Reason::NodesDown
        } else {
            Reason::Resources
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{state, submit, t};

    fn why(plan: &Plan, state: &State, id: JobId) -> Reason {
        plan.reason_of(&Scheduler, state, state.job(id).unwrap())
    }

    #[test]
    fn a_full_machine_ends_the_pass_early() {
        let mut s = state(2);
        let first = submit(&mut s, 1, 2);
        for _ in 0..1000 {
            submit(&mut s, 1, 1);
        }
        let plan = Scheduler.pass(&s, t(0));
        assert_eq!(plan.starts.len(), 1);
        assert_eq!(plan.starts[0].job, first);
        assert!(plan.waiting.is_empty(), "nothing else was looked at");
        let last = s.pending_jobs().last().unwrap();
        assert_eq!(plan.reason_of(&Scheduler, &s, last), Reason::Resources);
    }

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
        assert_eq!(plan.starts.len(), 1);
        assert_eq!(plan.starts[0].job, high);
        assert_eq!(why(&plan, &s, low), Reason::Resources);
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
        assert_eq!(why(&plan, &s, held), Reason::Held);

        let waiting = submit(&mut s, 1, 2);
        s.set_host_up("h", false);
        let plan = Scheduler.pass(&s, t(0));
        assert!(plan.starts.is_empty());
        assert_eq!(why(&plan, &s, waiting), Reason::NodesDown);

        s.set_host_up("h", true);
        let mut config = s.config().clone();
        config.queues.get_mut("batch").unwrap().started = false;
        s.set_config(config);
        let plan = Scheduler.pass(&s, t(0));
        assert_eq!(why(&plan, &s, waiting), Reason::QueueStopped);
        assert!(plan.starts.is_empty());

        let mut config = s.config().clone();
        config.queues.get_mut("batch").unwrap().started = true;
        config.server.scheduling = false;
        s.set_config(config);
        let plan = Scheduler.pass(&s, t(0));
        assert!(plan.starts.is_empty());
        assert_eq!(why(&plan, &s, waiting), Reason::SchedulingOff);
    }
}
