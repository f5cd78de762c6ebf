//! Period ends in the daemon: the warning signal a queue's running jobs get
//! before their period ends, then the kill or requeue (a queue's
//! `period_end`, `period_end_warning`, `warning_signal`).
//!
//! The planner starts no job that would outlast its cut (see
//! `qmesh_core::periods`), so the jobs that reach one are those running
//! when the calendar, a queue or a node group changed under them. Each
//! gets its full warning: it is ended at its cut or `period_end_warning`
//! after the warning went out, whichever is later, so a job can always
//! checkpoint. A signal that cannot be sent (the agent is away, the launch
//! not yet there) is tried again each second, until the job is due anyway.

use std::collections::HashMap;

use qmesh_core::periods::{self, QueueWindow};
use qmesh_core::{JobId, Time};
use tracing::{info, warn};

use super::SchedulerTask;
use crate::dispatch::Now;

/// When a running job was warned that its period ends. Dropped when the
/// job is no longer due (ended, or its period was extended), so a later
/// cut warns again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Warned {
    at: Time,
}

/// What to do with one running job now.
struct Due {
    id: JobId,
    /// What ends it: `the end of period "DAY"`.
    what: String,
    cut: Time,
    requeue: bool,
    warning: Option<(chrono::Duration, String)>,
}

impl SchedulerTask {
    /// Warns and ends the running jobs whose queue's period is ending.
    /// Called every second; costs nothing when no queue ends jobs.
    pub(super) fn enforce_period_ends(&mut self, clock: Now) {
        let now = clock.wall;
        let config = self.state.config();
        if !config.queues.values().any(|q| q.period_end.ends_jobs()) {
            self.warned.clear();
            return;
        }
        let mut windows: HashMap<&str, QueueWindow> = HashMap::new();
        let mut due = Vec::new();
        for job in self.state.active_jobs() {
            if !job.state.is_running() {
                continue;
            }
            let Some(queue) = config
                .queue(&job.queue)
                .filter(|q| q.period_end.ends_jobs())
            else {
                continue;
            };
            let window = windows
                .entry(queue.name.as_str())
                .or_insert_with(|| periods::window(&self.state, queue, now));
            let Some(cut) = periods::job_cut_in(&self.state, job, window, now) else {
                continue;
            };
            let warning = queue.period_end_warning.map(|secs| {
                (
                    chrono::Duration::seconds(i64::try_from(secs).unwrap_or(i64::MAX / 1000)),
                    queue
                        .warning_signal
                        .clone()
                        .unwrap_or_else(|| "SIGUSR1".into()),
                )
            });
            let warn_from = warning.as_ref().map_or(cut.at, |(w, _)| cut.at - *w);
            if now >= warn_from {
                due.push(Due {
                    id: job.id,
                    what: cut.what,
                    cut: cut.at,
                    requeue: queue.period_end == qmesh_core::queue::PeriodEnd::Requeue,
                    warning,
                });
            }
        }
        let running: Vec<JobId> = due.iter().map(|d| d.id).collect();
        self.warned.retain(|id, _| running.contains(id));
        for d in due {
            self.period_end_of(d, clock);
        }
    }

    fn period_end_of(&mut self, d: Due, clock: Now) {
        let now = clock.wall;
        let mut end_at = d.cut;
        if let Some((lead, signal)) = &d.warning {
            match self.warned.get(&d.id) {
                Some(w) => end_at = end_at.max(w.at + *lead),
                None => {
                    let reason = format!(
                        "{}: the job is {} in {} s",
                        d.what,
                        if d.requeue { "requeued" } else { "killed" },
                        (d.cut.max(now) + *lead - now).num_seconds()
                    );
                    match self.signal_job(d.id, signal, &reason, now) {
                        Ok(_) => {
                            self.warned.insert(d.id, Warned { at: now });
                            end_at = end_at.max(now + *lead);
                        }
                        Err(e) => {
                            // Tried again next second, until due regardless.
                            warn!(job = %d.id, error = %e, "period-end warning not sent yet");
                            end_at += *lead;
                        }
                    }
                }
            }
        }
        if now < end_at {
            return;
        }
        self.warned.remove(&d.id);
        match self.state.stop_for_period(d.id, &d.what, d.requeue, now) {
            Ok((host, job)) => {
                info!(job = %d.id, at = %d.what, requeue = d.requeue, "ending a job at its period's end");
                self.durability.persist(job);
                let reason = job.comment.clone();
                let class = qmesh_core::joblog::EventClass::Job;
                self.logs
                    .event(&self.state, (d.id, class), reason.clone(), now);
                self.end_active(d.id, &host, &reason, clock);
                self.pacing.mark_dirty();
            }
            Err(e) => warn!(job = %d.id, error = %e, "could not end the job at its period's end"),
        }
    }
}
