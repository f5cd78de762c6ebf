//! The daemon's half of spq, spwhen, spfree, spwhat and getjid.
//!
//! The task keeps the last pass's plan as it was computed, with an index by
//! job, so what the sp commands and qstat show is what the scheduler
//! follows, not a second estimate made on request. A job changed since the
//! pass (held, released) or submitted after it has no fresh entry; its
//! reason then comes from the state alone ([`Scheduler::reason`]).

use std::collections::HashMap;

use qmesh_core::job::Job;
use qmesh_core::scheduler::{Entry, Plan, Reason, Status};
use qmesh_core::{Backfill, CoreError, JobId, JobState, Time, route};
use qmesh_proto::v1;

use crate::convert;

use super::SchedulerTask;
use crate::answer::When;
use crate::dispatch::Now;
use crate::error::TaskError;

/// The last pass's plan and when it ran.
#[derive(Debug, Default)]
pub(super) struct LastPlan {
    plan: Plan,
    time: Option<Time>,
    /// Position of each job in `plan.queue`: lookups are O(1).
    index: HashMap<JobId, usize>,
}

impl LastPlan {
    pub(super) fn new(plan: Plan, time: Time) -> LastPlan {
        let index = plan
            .queue
            .iter()
            .enumerate()
            .map(|(i, e)| (e.job, i))
            .collect();
        LastPlan {
            plan,
            time: Some(time),
            index,
        }
    }

    /// The job's entry, if the pass saw it and it has not changed since.
    pub(super) fn fresh_entry(&self, job: &Job) -> Option<&Entry> {
        let time = self.time?;
        if job.mtime > time || !job.state.is_pending() {
            return None;
        }
        self.index
            .get(&job.id)
            .and_then(|&i| self.plan.queue.get(i))
    }
}

/// A pending job's status when the plan says nothing fresh about it.
fn status_without_plan(job: &Job, reason: Reason) -> Status {
    let holds = job.holds;
    if holds.user && !holds.operator && !holds.system {
        Status::Paused
    } else if holds.any() || matches!(reason, Reason::Dependency | Reason::BeginTime) {
        Status::Held
    } else {
        Status::Waiting
    }
}

/// Where a pending job stands: status, reason, expected start, priority.
struct Place {
    status: Status,
    reason: Option<Reason>,
    expected_start: Option<Time>,
    priority: f64,
}

impl SchedulerTask {
    /// Where a pending job stands after the last pass (at `now`, if the
    /// pass said nothing fresh of it).
    fn place(&self, job: &Job, now: Time) -> Place {
        match self.plan.fresh_entry(job) {
            // Startable but still pending: its start could not be applied.
            Some(e) if e.status != Status::Startable => Place {
                status: e.status,
                reason: e.reason,
                expected_start: e.expected_start,
                priority: e.priority,
            },
            _ => {
                let reason = self.scheduler.reason_at(&self.state, job, now);
                Place {
                    status: status_without_plan(job, reason),
                    reason: Some(reason),
                    expected_start: None,
                    priority: 0.0,
                }
            }
        }
    }

    /// Why a pending job waits (qstat's reason and comment).
    pub(super) fn pending_reason(&self, job: &Job, now: Time) -> Reason {
        self.place(job, now)
            .reason
            .unwrap_or_else(|| self.scheduler.reason_at(&self.state, job, now))
    }

    /// A sentence for why a pending job waits: the reason's, or for a
    /// closedown the one it would cross, named, in local time (qstat's
    /// comment, spwhen).
    pub(super) fn explain(&self, job: &Job, reason: Reason, now: Time) -> String {
        // A job caught by a holding queue says why it was put there.
        if reason == Reason::QueueStopped
            && let Some(note) = route::holding_note(self.state.config(), job)
        {
            return note.to_string();
        }
        if reason == Reason::OutsidePeriod
            && let Some(queue) = self.state.config().queue(&job.queue)
        {
            let periods = queue.periods.join(", ");
            return match qmesh_core::periods::next_open(&self.state, queue, now) {
                Some(at) => format!(
                    "its queue runs only in {periods}; the next begins {}",
                    qmesh_core::shutdown::format_local(at, &self.zone())
                ),
                None => format!("its queue runs only in {periods}, and none begins soon"),
            };
        }
        if matches!(
            reason,
            Reason::ReservationNotRunning | Reason::ReservationEnd
        ) && let Some(r) = self.state.config().reservation_of_queue(&job.queue)
        {
            let zone = self.zone();
            let name = r.queue_name();
            return match (reason, r.current(now)) {
                (Reason::ReservationNotRunning, Some(o)) => format!(
                    "reservation {name} begins {} (until {}); its jobs start then",
                    qmesh_core::shutdown::format_local(o.start, &zone),
                    qmesh_core::shutdown::format_local(o.end, &zone)
                ),
                (Reason::ReservationEnd, Some(o)) => format!(
                    "its wall time would reach past the end of reservation {name} ({}); \
                     give it less (qalter -l walltime=) or extend the reservation (pbs_ralter -E)",
                    qmesh_core::shutdown::format_local(o.end, &zone)
                ),
                _ => format!("reservation {name} has no occurrence to come"),
            };
        }
        if matches!(
            reason,
            Reason::Shutdown | Reason::PeriodEnd | Reason::ReservedNodes
        ) && let Some(closedown) = self.scheduler.closedown_crossed(&self.state, job, now)
        {
            return closedown.describe(&self.zone());
        }
        // A licence or other resource the server or queue bounds: which,
        // and how much is in use.
        if reason == Reason::Consumable
            && let Some(why) =
                qmesh_core::consumable::describe(self.state.config(), self.state.active_jobs(), job)
        {
            return why;
        }
        // GPUs or other resources used up per node on shared nodes.
        if reason == Reason::Placement
            && let Some(why) = qmesh_core::node_resources::placement_note(job)
        {
            return why;
        }
        // A PBS job-count limit: which one, and how many run.
        if matches!(
            reason,
            Reason::UserLimit | Reason::GroupLimit | Reason::QueueLimit
        ) && let Some(why) = qmesh_core::state::limits::describe_run_limit(&self.state, job)
        {
            return why;
        }
        reason.explain().to_string()
    }

    /// The calendar's time zone, in which people read times.
    fn zone(&self) -> chrono_tz::Tz {
        self.state
            .config()
            .calendar
            .zone()
            .unwrap_or(chrono_tz::Tz::UTC)
    }

    /// qstat's expected start and priority of a pending job.
    pub(super) fn expected_start(&self, job: &Job, now: Time) -> (Option<Time>, f64) {
        let place = self.place(job, now);
        (place.expected_start, place.priority)
    }

    fn pending_entry(&self, job: &Job, now: Time) -> v1::PlanEntry {
        let place = self.place(job, now);
        convert::plan_entry(
            job,
            self.state.server_name(),
            Some(place.status),
            place.reason,
            place.expected_start,
            place.priority,
        )
    }

    fn running_entry(&self, job: &Job) -> v1::PlanEntry {
        convert::plan_entry(job, self.state.server_name(), None, None, None, 0.0)
    }

    /// spq, spfree, spwhat: running jobs by start, queued jobs in plan
    /// order (then those the pass has not seen), free nodes, what fits.
    /// With query_other_jobs false, a user sees only their own jobs (PBS);
    /// the free nodes stay the machine's.
    pub(super) fn plan_reply(&self, caller: &qmesh_core::Caller, now: Now) -> v1::PlanReply {
        let now = now.wall;
        let state = &self.state;
        let seen = |job: &&Job| self.may_see(caller, job);
        let mut active: Vec<&Job> = state.active_jobs().filter(seen).collect();
        active.sort_by_key(|j| (j.stime, j.id));
        let running = active.iter().map(|j| self.running_entry(j)).collect();

        let mut queued = Vec::with_capacity(state.pending_count());
        for entry in &self.plan.plan.queue {
            if let Some(job) = state
                .job(entry.job)
                .filter(|j| j.state.is_pending())
                .filter(seen)
            {
                queued.push(self.pending_entry(job, now));
            }
        }
        for job in state.pending_jobs().filter(seen) {
            if !self.plan.index.contains_key(&job.id) {
                queued.push(self.pending_entry(job, now));
            }
        }

        let sets = state.node_sets();
        let mut up = vec![0u32; sets.len()];
        let mut total = vec![0u32; sets.len()];
        let mut free_now = vec![0u32; sets.len()];
        for node in state.nodes() {
            total[node.set] += 1;
            up[node.set] += u32::from(node.up);
            free_now[node.set] += u32::from(node.is_free());
        }
        let planned = self.plan.plan.free_nodes(state);
        let free = sets
            .iter()
            .enumerate()
            .map(|(i, set)| {
                let from_plan = planned.iter().find(|f| f.set == set.name);
                let item = from_plan
                    .cloned()
                    .unwrap_or(qmesh_core::scheduler::SetFree {
                        set: set.name.clone(),
                        free: free_now[i],
                        until: None,
                    });
                convert::set_free(&item, up[i], total[i])
            })
            .collect();
        let what = self
            .plan
            .plan
            .what(state)
            .iter()
            .map(convert::what_pair)
            .collect();
        let server = &state.config().server;
        v1::PlanReply {
            server: state.server_name().to_string(),
            server_time: now.timestamp(),
            plan_time: convert::unix(self.plan.time),
            job_order: server.job_order.as_str().to_string(),
            backfill: server.backfill.as_str().to_string(),
            running,
            queued,
            free,
            what,
        }
    }

    /// spwhen: the plan's expected start if it has one, else the
    /// scheduler's estimate; a running job says so.
    pub(super) fn when(
        &self,
        caller: &qmesh_core::Caller,
        job_id: &str,
        now: Now,
    ) -> Result<When, TaskError> {
        let now = now.wall;
        let state = &self.state;
        let id = state.parse_id(job_id)?;
        // A sub-job left to start starts when its array's next does (or
        // later): its array's answer.
        let id = match id.array_parent() {
            Some(array) if state.is_unstarted_sub_job(id) => array,
            _ => id,
        };
        let full = state.full_id(id);
        let job = state
            .job(id)
            .ok_or_else(|| CoreError::NoSuchJob { id: full.clone() })?;
        if !self.may_see(caller, job) {
            return Err(TaskError::Denied(format!(
                "Unauthorized Request: job {full} belongs to {}, and the server shows users \
                 only their own jobs (query_other_jobs = False)",
                job.owner.user
            )));
        }
        if job.state == JobState::Finished {
            return Err(TaskError::NotNow(format!(
                "job {full} has finished; qstat -x -f {full} shows how it ended"
            )));
        }
        if job.state.is_active() {
            return Ok(When {
                job: Box::new(job.clone()),
                server: state.server_name().to_string(),
                place: None,
                start: job.stime,
                predicted_start: None,
                reason: None,
                explanation: format!("job {full} is {}", job.state),
                at: now,
            });
        }
        let place = self.place(job, now);
        // The pass's reservation is from predicted run times under EASY++,
        // from wall times otherwise; the other estimate is planned here.
        let easy_pp = state.config().server.backfill == Backfill::EasyPredicted;
        let reserved = place.expected_start.map(|start| (start, place.reason));
        let (start, reason) = match reserved.filter(|_| !easy_pp) {
            Some((start, reason)) => (
                Some(start),
                reason.unwrap_or_else(|| self.scheduler.reason_at(state, job, now)),
            ),
            None => {
                let when = self.scheduler.when(state, job, now);
                (when.start, when.reason)
            }
        };
        let predicted_start = match reserved.filter(|_| easy_pp) {
            Some((start, _)) => Some(start),
            None => self.scheduler.when_predicted(state, job, now).start,
        };
        Ok(When {
            job: Box::new(job.clone()),
            server: state.server_name().to_string(),
            place: Some((place.status, place.reason, place.priority)),
            start,
            predicted_start,
            reason: Some(reason),
            explanation: match &job.array {
                Some(a) => format!(
                    "job array, {}; its next sub-job: {}",
                    a.left_text(),
                    self.explain(job, reason, now)
                ),
                None => self.explain(job, reason, now),
            },
            at: now,
        })
    }

    /// getjid, pbsnodes, sinfo: nodes (by name, or of one host) and the
    /// jobs holding them.
    pub(super) fn nodes(
        &self,
        names: &[String],
        host: &str,
        now: Now,
    ) -> Result<v1::NodesReply, TaskError> {
        let state = &self.state;
        let server = state.server_name();
        let reserved: Vec<usize> = state
            .reserved_spans()
            .iter()
            .filter(|span| span.start <= now.wall && now.wall < span.end)
            .flat_map(|span| span.nodes.iter().copied())
            .collect();
        let info = |index: usize, node: &qmesh_core::node::Node| {
            let job = node.job().and_then(|id| state.job(id));
            let held = held_of(state, node, index);
            v1::NodeInfo {
                node_cpus: held.cpus,
                gpus: held.gpus,
                cpus_alloc: held.cpus_alloc,
                gpus_alloc: held.gpus_alloc,
                mem_alloc: held.mem_alloc,
                reserved: reserved.contains(&index),
                name: node.name.to_string(),
                node_set: state
                    .node_sets()
                    .get(node.set)
                    .map(|s| s.name.clone())
                    .unwrap_or_default(),
                host: node.host.clone(),
                up: node.up,
                job_id: job.map(|j| j.full_id(server)).unwrap_or_default(),
                job_owner: job.map(|j| j.owner.user.clone()).unwrap_or_default(),
                job_ids: node.jobs.iter().map(|id| id.full(server)).collect(),
                jobs_per_node: node.slots,
                mem: state.effective_attrs(node.set).mem.unwrap_or(0),
                properties: state.effective_attrs(node.set).features.clone(),
                resources_available: state
                    .effective_attrs(node.set)
                    .resources
                    .iter()
                    .map(|(name, value)| (name.clone(), value.clone()))
                    .collect(),
                state: node.state_name().to_string(),
                load: state.host_load(&node.host).map_or(0.0, |(load, _)| load),
                cpus: state.host_load(&node.host).map_or(0, |(_, cpus)| cpus),
                comment: state
                    .config()
                    .node_marks
                    .get(&*node.name)
                    .map(|m| m.comment.clone())
                    .unwrap_or_default(),
            }
        };
        let host_ok = |node: &qmesh_core::node::Node| host.is_empty() || node.host == host;
        let nodes = if names.is_empty() {
            state
                .nodes()
                .iter()
                .enumerate()
                .filter(|(_, n)| host_ok(n))
                .map(|(i, n)| info(i, n))
                .collect()
        } else {
            let mut nodes = Vec::with_capacity(names.len());
            for name in names {
                let index = state
                    .nodes()
                    .iter()
                    .position(|n| *n.name == **name)
                    .ok_or_else(|| CoreError::NoSuchNode { node: name.clone() })?;
                let node = &state.nodes()[index];
                if host_ok(node) {
                    nodes.push(info(index, node));
                }
            }
            nodes
        };
        let sets = state
            .node_sets()
            .iter()
            .map(|set| v1::NodeSetInfo {
                name: set.name.clone(),
                topology: set.topology.describe(),
                dims: set.topology.dims(set.nodes.len()),
            })
            .collect();
        Ok(v1::NodesReply {
            sets,
            nodes,
            server: server.to_string(),
        })
    }
}

/// A node's CPUs and GPUs and what its jobs hold of them (Slurm's
/// CPUTot, CPUAlloc, Gres, AllocMem).
struct Held {
    cpus: u32,
    gpus: u32,
    cpus_alloc: u32,
    gpus_alloc: u32,
    mem_alloc: u64,
}

/// What the jobs on `node` (index `index` in `State::nodes`) hold of it: a
/// job on an exclusive node holds all its CPUs and the memory it asked per
/// node; on a shared one each job its share (`Job::node_shares`, by the
/// node's place in its exec_nodes; shared sets run small jobs).
fn held_of(state: &qmesh_core::State, node: &qmesh_core::node::Node, index: usize) -> Held {
    let attrs = state.effective_attrs(node.set);
    let cpus = attrs
        .cpus
        .or_else(|| state.host_load(&node.host).map(|(_, cpus)| cpus))
        .unwrap_or(0);
    let gpus = attrs.gpus.unwrap_or(0);
    let mut held = Held {
        cpus,
        gpus,
        cpus_alloc: 0,
        gpus_alloc: gpus.saturating_sub(state.gpus_free(index)),
        mem_alloc: 0,
    };
    if node.slots <= 1 {
        if let Some(job) = node.job().and_then(|id| state.job(id)) {
            held.cpus_alloc = if cpus > 0 {
                cpus
            } else {
                job.ncpus.unwrap_or(1)
            };
            held.mem_alloc = job.mem.unwrap_or(0);
        }
        return held;
    }
    for job in node.jobs.iter().filter_map(|id| state.job(id)) {
        let share = job
            .exec_nodes
            .iter()
            .position(|n| *n == node.name)
            .and_then(|i| job.node_shares().get(i).copied());
        if let Some(share) = share {
            held.cpus_alloc += share.cpus;
            held.mem_alloc += share.mem.unwrap_or(0);
        }
    }
    if cpus > 0 {
        held.cpus_alloc = held.cpus_alloc.min(cpus);
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;
    use qmesh_core::job::Holds;

    fn job(holds: Holds) -> Job {
        let text = r#"{"id":1,"name":"x","owner":{"uid":1,"gid":1,"user":"u","group":"g"},
            "queue":"batch","nodes":1,"walltime":60,"workdir":"/","stdout_path":"/o",
            "stderr_path":"/e","state":"held","qtime":"2026-01-01T00:00:00Z",
            "mtime":"2026-01-01T00:00:00Z"}"#;
        Job {
            holds,
            ..serde_json::from_str(text).unwrap()
        }
    }

    #[test]
    fn an_owners_hold_is_a_pause_and_others_are_holds() {
        let user = Holds {
            user: true,
            ..Holds::default()
        };
        let operator = Holds {
            operator: true,
            ..user
        };
        assert_eq!(
            status_without_plan(&job(user), Reason::Held),
            Status::Paused
        );
        assert_eq!(
            status_without_plan(&job(operator), Reason::Held),
            Status::Held
        );
        assert_eq!(
            status_without_plan(&job(Holds::default()), Reason::Dependency),
            Status::Held
        );
        assert_eq!(
            status_without_plan(&job(Holds::default()), Reason::Resources),
            Status::Waiting
        );
    }

    #[test]
    fn an_entry_is_stale_once_the_job_changed_after_the_pass() {
        let pass = chrono::DateTime::from_timestamp(1_767_225_700, 0).unwrap();
        let mut queued = job(Holds::default());
        queued.state = JobState::Queued;
        let mut plan = Plan::default();
        plan.queue = vec![Entry {
            job: queued.id,
            status: Status::Blocked,
            reason: Some(Reason::Blocked),
            expected_start: Some(pass),
            priority: 1.0,
        }];
        let last = LastPlan::new(plan, pass);
        assert_eq!(
            last.fresh_entry(&queued).map(|e| e.status),
            Some(Status::Blocked)
        );
        queued.mtime = pass + chrono::Duration::seconds(1);
        assert!(last.fresh_entry(&queued).is_none());
    }
}
