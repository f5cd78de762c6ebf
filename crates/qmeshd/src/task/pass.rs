//! A scheduling pass in the daemon: the core's pass over the state, its
//! starts applied and stored, their launches queued for when the starts
//! are durable, and the plan kept for qstat and the sp commands. qrun
//! starts a job the same way (`start_job`).

use qmesh_core::alloc::Part;
use qmesh_core::{CoreError, JobId};
use tracing::{debug, error, info, info_span};

use super::SchedulerTask;
use super::plan::LastPlan;
use crate::dispatch::{DispatchEvent, Now};
use crate::event::AfterDurable;

impl SchedulerTask {
    /// One scheduling pass, and its plan applied.
    pub(super) fn schedule(&mut self, now: Now) {
        if self.durability.is_read_only() {
            // Starts could not be made durable: none until the store writes.
            self.pacing.skip_pass();
            return;
        }
        let n = self.pacing.pass_begins(now);
        let span = info_span!("pass", n);
        let _enter = span.enter();
        let plan = self.scheduler.pass(&self.state, now.wall);
        let starts = plan.starts.len();
        let held_back = if plan.resumes.is_empty() && plan.preempted.is_empty() {
            Default::default()
        } else {
            self.apply_preemption(&plan, now)
        };
        let mut launches = Vec::new();
        for start in plan.starts.iter().filter(|s| !held_back.contains(&s.job)) {
            match self.start_job(start.job, (&start.nodes, &start.parts), "Scheduler", now) {
                Ok(started) => launches.push(AfterDurable::Launch(started)),
                Err(e) => error!(job = %start.job, error = %e, "the plan could not be applied"),
            }
        }
        self.plan = LastPlan::new(plan, now.wall);
        if !launches.is_empty() {
            self.durability.when_durable(launches);
        }
        let cost = self.pacing.pass_ended();
        debug!(ms = cost.as_secs_f64() * 1e3, "pass done");
        self.published.pass(cost, starts);
    }

    /// Starts a job on nodes (a pass's start, or qrun's): the start is
    /// stored, and the caller queues its launch for when it is durable.
    /// `requestor` is who asked, for the job logs ("Scheduler", a user).
    pub(super) fn start_job(
        &mut self,
        id: JobId,
        (nodes, parts): (&[usize], &[Part]),
        requestor: &str,
        now: Now,
    ) -> Result<JobId, CoreError> {
        let job = self.state.start_placed(id, nodes, parts, now.wall)?;
        // An array's start is its next sub-job's.
        let id = job.id;
        info!(job = %job.id, nodes = %job.exec_nodes.join("+"), "starting");
        self.durability.persist(job);
        self.dispatch_at(DispatchEvent::Started { job: id }, now);
        self.logs.started(&self.state, id, requestor, now.wall);
        // A job waiting `after:` this one (or its array) may start now.
        let array_has_dependents = id
            .array_parent()
            .is_some_and(|array| self.state.has_dependents(array));
        if self.state.has_dependents(id) || array_has_dependents {
            self.pacing.mark_dirty();
            // after:ID+MINUTES: a pass when the delay has passed.
            for at in self.state.delayed_dependents_due(id) {
                self.pacing.wake_at(at);
            }
        }
        Ok(id)
    }
}
