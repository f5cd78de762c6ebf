//! Why a pending job does not start now: the words a pass, a dependency
//! or a limit gives, and what qstat's comment says of each.

use std::fmt;

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
    /// Its queue (or the server) runs as many jobs as `max_running` or
    /// `max_run [o:PBS_ALL=N]` allows (or its project, `[p:...]`).
    QueueLimit,
    /// It waits for other jobs to end (`qsub -W depend=`).
    Dependency,
    /// It may not start before its `qsub -a` time.
    BeginTime,
    /// Not enough nodes are up, even if every running job ended.
    NodesDown,
    /// Enough nodes are free, but not in a shape the topology can give
    /// (a mesh's or torus's free nodes are scattered).
    Placement,
    /// Its wall time would reach into a shutdown window of its nodes.
    Shutdown,
    /// Its wall time would reach past the end of a period that ends jobs
    /// (a calendar period whose action is kill or requeue).
    PeriodEnd,
    /// Its queue runs only in given calendar periods, and none is on.
    OutsidePeriod,
    /// A resource the server or its queue bounds (flag `q`, such as
    /// licences: `resources_available.matlab`) is too much in use for it.
    Consumable,
    /// Its array runs as many sub-jobs as its throttle (`%N`) allows.
    ArrayLimit,
    /// It is in a reservation's queue, and no occurrence of the
    /// reservation is on (Slurm's `ReqNodeNotAvail, Reserved...`).
    ReservationNotRunning,
    /// Its wall time would reach past the end of its reservation's
    /// occurrence.
    ReservationEnd,
    /// Its wall time would reach into an advance reservation on nodes it
    /// needs (pbs_rsub); shorter jobs may run before it.
    ReservedNodes,
    /// It preempted running jobs (requeued or deleted, `preempt_order`)
    /// and waits for them to be gone.
    Preempting,
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
            Reason::QueueLimit => "QueueLimit",
            Reason::Dependency => "Dependency",
            Reason::BeginTime => "BeginTime",
            Reason::NodesDown => "NodesDown",
            Reason::Placement => "Placement",
            Reason::Shutdown => "Shutdown",
            Reason::PeriodEnd => "PeriodEnd",
            Reason::OutsidePeriod => "OutsidePeriod",
            Reason::Consumable => "Consumable",
            Reason::ArrayLimit => "JobArrayTaskLimit",
            Reason::ReservationNotRunning => "ReservationNotRunning",
            Reason::ReservationEnd => "ReservationEnd",
            Reason::ReservedNodes => "ReservedNodes",
            Reason::Preempting => "Preempting",
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
            Reason::UserLimit => {
                "its owner already runs as many jobs as a limit allows (max_user_run, max_run)"
            }
            Reason::GroupLimit => {
                "its group already runs as many jobs as a limit allows (max_group_run, max_run)"
            }
            Reason::QueueLimit => {
                "its queue or the server already runs as many jobs as a limit allows (max_running, max_run)"
            }
            Reason::Dependency => "it waits for the jobs it depends on",
            Reason::BeginTime => "it may not start before its qsub -a time",
            Reason::NodesDown => "not enough nodes are up to run it",
            Reason::Placement => {
                "enough nodes are free, but not in a shape the node set's topology can give"
            }
            Reason::Shutdown => {
                "it would still run when a shutdown window begins; shorter jobs may run before it"
            }
            Reason::PeriodEnd => {
                "it would still run when its period ends; shorter jobs may run before the end"
            }
            Reason::OutsidePeriod => {
                "its queue runs only in its periods (qmgr list queue); it waits for the next"
            }
            Reason::Consumable => {
                "a resource it asks for is in use up to the server's or its queue's \
                 resources_available; it starts when running jobs give some back"
            }
            Reason::ArrayLimit => {
                "its array already runs as many sub-jobs as its %N throttle allows; \
                 the next starts when one ends"
            }
            Reason::ReservationNotRunning => {
                "its queue is a reservation's; it starts when the reservation's next occurrence \
                 begins (pbs_rstat)"
            }
            Reason::ReservedNodes => {
                "it would still run when a reservation begins on nodes it needs (pbs_rstat); \
                 shorter jobs may run before it"
            }
            Reason::Preempting => {
                "it preempted running jobs of lower queues and starts when they have ended"
            }
            Reason::ReservationEnd => {
                "its wall time would reach past the end of its reservation; give it less \
                 (qalter -l walltime=) or extend the reservation (pbs_ralter -E)"
            }
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
