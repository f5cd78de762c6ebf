//! The daemon's half of preemption (`qmesh_core::preempt`): a pass's
//! resumptions and preemptions applied before its starts. A suspended
//! victim is stopped by its agents as `qsig -s suspend` stops a job
//! (`pause.rs`), lending its nodes; a requeued or deleted one is ended as
//! at a period's end, and its express job starts in the pass after its
//! end. Each change is stored, and PBS Pro's `z`/`r` accounting records
//! are written for suspensions and resumptions.
//!
//! An express job is not applied while one of its victims has not been
//! launched yet (it could not be stopped): its start waits for the next
//! pass.

use std::collections::BTreeSet;

use qmesh_core::joblog::{EventClass, RecordType};
use qmesh_core::preempt::Method;
use qmesh_core::scheduler::{Plan, Preempted};
use qmesh_core::suspend::Pause;
use qmesh_core::{CoreError, JobId};
use qmesh_proto::v1;
use tracing::{info, warn};

use super::SchedulerTask;
use crate::dispatch::{Launch, Now};

impl SchedulerTask {
    /// Resumes and preempts what `plan` says; returns the express jobs
    /// whose starts must wait (a victim could not be stopped now).
    pub(super) fn apply_preemption(&mut self, plan: &Plan, now: Now) -> BTreeSet<JobId> {
        for &id in &plan.resumes {
            if let Err(e) = self.resume_lent(id, now) {
                warn!(job = %id, error = %e, "a preempted job could not resume");
            }
        }
        let mut held_back = BTreeSet::new();
        let by: BTreeSet<JobId> = plan.preempted.iter().map(|p| p.by).collect();
        for express in by {
            let victims: Vec<&Preempted> =
                plan.preempted.iter().filter(|p| p.by == express).collect();
            let unlaunched = victims.iter().find(|p| {
                matches!(
                    self.dispatch.launch_of(p.job),
                    Some(Launch::AwaitingDurable | Launch::Ready)
                )
            });
            if let Some(p) = unlaunched {
                info!(job = %express, victim = %p.job, "preemption waits for its victim's launch");
                held_back.insert(express);
                continue;
            }
            for p in victims {
                if let Err(e) = self.preempt_one(p, now) {
                    warn!(job = %p.job, by = %express, error = %e, "could not preempt");
                    held_back.insert(express);
                }
            }
        }
        held_back
    }

    fn preempt_one(&mut self, p: &Preempted, now: Now) -> Result<(), CoreError> {
        let by = self.state.full_id(p.by);
        match p.method {
            Method::Suspend => {
                let (host, _) = self.state.suspend_for(p.job, p.by, now.wall)?;
                self.persist_job(p.job);
                let reason = format!("preempted by job {by}");
                self.tell_pause(p.job, &host, Pause::Suspend, &reason);
                let server = self.state.server_name().to_string();
                let text = format!("Job suspended: preempted by job {by} at {server}");
                self.logs.pause_changed(
                    &self.state,
                    (p.job, RecordType::Suspended),
                    "Scheduler",
                    text,
                    now.wall,
                );
            }
            Method::Requeue | Method::Delete | Method::Checkpoint => {
                let requeue = p.method != Method::Delete;
                let (host, job) = self.state.stop_for(p.job, p.by, requeue, now.wall)?;
                let reason = job.comment.clone();
                self.persist_job(p.job);
                self.logs.event(
                    &self.state,
                    (p.job, EventClass::Job),
                    reason.clone(),
                    now.wall,
                );
                if p.method == Method::Checkpoint && self.links.is_connected(&host) {
                    // Its first host's agent runs the site's checkpoint
                    // program, then kills it; its end requeues it.
                    let order = v1::SignalJob {
                        job: p.job.0,
                        signal: "checkpoint".to_string(),
                        reason: format!("checkpoint at preemption by job {by}"),
                    };
                    self.links
                        .send(&host, v1::daemon_message::Kind::Signal(order));
                } else {
                    self.end_active(p.job, &host, &reason, now);
                }
            }
        }
        info!(job = %p.job, by = %by, method = %p.method.letter(), "preempted");
        Ok(())
    }

    fn resume_lent(&mut self, id: JobId, now: Now) -> Result<(), CoreError> {
        let (host, _) = self.state.take_back(id, now.wall)?;
        self.persist_job(id);
        self.tell_pause(id, &host, Pause::Resume, "its nodes are free again");
        let server = self.state.server_name().to_string();
        let text = format!("Job resumed: its nodes are free again at {server}");
        self.logs.pause_changed(
            &self.state,
            (id, RecordType::Resumed),
            "Scheduler",
            text,
            now.wall,
        );
        info!(job = %id, host, "resumed after preemption");
        Ok(())
    }

    fn persist_job(&mut self, id: JobId) {
        if let Some(job) = self.state.job(id) {
            self.durability.persist(job);
        }
    }

    /// Tells the agents of a job's hosts to stop or continue it (the
    /// first host's shepherd freezes or thaws it; the others its pbsdsh
    /// tasks).
    pub(super) fn tell_pause(&mut self, id: JobId, host: &str, pause: Pause, reason: &str) {
        let others: Vec<String> = match self.state.job(id) {
            Some(job) => self.state.job_hosts(job).into_iter().skip(1).collect(),
            None => Vec::new(),
        };
        let order = v1::SignalJob {
            job: id.0,
            signal: pause.word().to_string(),
            reason: reason.to_string(),
        };
        for to in std::iter::once(host).chain(others.iter().map(String::as_str)) {
            self.links
                .send(to, v1::daemon_message::Kind::Signal(order.clone()));
        }
    }
}
