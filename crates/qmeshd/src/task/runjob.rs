//! runjob hooks: a job the pass started is launched only once the site's
//! runjob hooks accept it. The hooks run off the task (`crate::site_hooks`);
//! the verdict comes back as an event. A job they reject is requeued the
//! way qrerun -W force requeues one that never ran, and held with a system
//! hold and a comment that quotes the hook: PBS retries a rejected job
//! every cycle, which only repeats the refusal; an operator releases it
//! (`qrls -h s`) once the cause is gone.

use qmesh_core::hook::HookEvent;
use qmesh_core::job::{ExitCause, JobExit};
use qmesh_core::joblog::EventClass;
use qmesh_core::{Holds, JobId, JobState};
use tokio::sync::mpsc;
use tracing::{info, warn};

use super::SchedulerTask;
use crate::dispatch::{DispatchEvent, Now};
use crate::event::Event;
use crate::site_hooks::{SiteHooks, doc};

/// What the task needs to run runjob hooks.
pub(super) struct Runjob {
    pub hooks: SiteHooks,
    /// The task's own events, held weakly: the task ends when the
    /// services' senders are gone.
    pub events: mpsc::WeakSender<Event>,
}

impl SchedulerTask {
    /// A start is durable: launch the job, or first ask the runjob hooks.
    pub(super) fn launch_or_judge(&mut self, id: JobId, now: Now) {
        let judge = self
            .runjob
            .as_ref()
            .filter(|r| r.hooks.any_at(HookEvent::RunJob));
        let (Some(runjob), Some(job)) = (judge, self.state.job(id)) else {
            self.dispatch_at(DispatchEvent::StartDurable { job: id }, now);
            return;
        };
        let document = doc::started_job(job, self.state.server_name());
        let hooks = runjob.hooks.clone();
        let events = runjob.events.clone();
        tokio::spawn(async move {
            let refused = hooks
                .runjob(document)
                .await
                .err()
                .map(|r| (r.hook.clone(), r.failure.explain(&r.hook)));
            if let Some(events) = events.upgrade() {
                let _ = events.send(Event::RunjobVerdict { job: id, refused }).await;
            }
        });
    }

    /// The runjob hooks have spoken on a started job.
    pub(super) fn runjob_verdict(
        &mut self,
        id: JobId,
        refused: Option<(String, String)>,
        now: Now,
    ) {
        // Deleted or requeued meanwhile: nothing is left to launch.
        if self.state.job(id).map(|j| j.state) != Some(JobState::Running) {
            return;
        }
        let Some((hook, sentence)) = refused else {
            self.dispatch_at(DispatchEvent::StartDurable { job: id }, now);
            return;
        };
        warn!(job = %id, hook, "{sentence}");
        let what = format!("the refusal of runjob hook \"{hook}\"");
        let host = match self.state.stop_for_period(id, &what, true, now.wall) {
            Ok((host, job)) => {
                self.durability.persist(job);
                host
            }
            Err(e) => {
                warn!(job = %id, error = %e, "could not requeue the job a runjob hook refused");
                return;
            }
        };
        let exit = JobExit {
            code: None,
            signal: None,
            cause: ExitCause::Deleted,
            message: format!("not run: runjob hook \"{hook}\" refused it: {sentence}"),
            cput: None,
            max_rss: None,
            vmem: None,
        };
        self.dispatch_at(
            DispatchEvent::EndWithoutAgent {
                job: id,
                host,
                exit,
            },
            now,
        );
        let server = self.server_caller();
        let system = Holds {
            system: true,
            ..Holds::default()
        };
        if self.state.hold_types(id, &server, system, now.wall).is_ok() {
            let comment = format!(
                "Not Running: runjob hook \"{hook}\" refused it: {sentence} (held; qrls -h s \
                 once the cause is gone)"
            );
            self.state.set_comment(id, &comment);
            if let Some(job) = self.state.job(id) {
                self.durability.persist(job);
            }
            info!(job = %id, hook, "held after a runjob hook's refusal");
            let text = format!("Job held: runjob hook \"{hook}\" refused it: {sentence}");
            self.logs
                .event(&self.state, (id, EventClass::Job), text, now.wall);
        }
    }
}
