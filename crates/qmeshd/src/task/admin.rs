//! The daemon's half of qmgr: parse the whole script, run it against a copy
//! of the configuration, and keep the copy only if every command succeeded.

use qmesh_core::qmgr;
use qmesh_core::reorder::reorder_due;
use qmesh_store::Store;
use tracing::{info, warn};

use super::SchedulerTask;
use crate::dispatch::Now;
use crate::error::TaskError;
use crate::event::Reply;
use crate::identity::Peer;

impl SchedulerTask {
    pub(super) fn qmgr(
        &mut self,
        peer: &Peer,
        (script, source, check_only): (&str, &str, bool),
        reply: Reply<(String, u32)>,
        now: Now,
    ) {
        let caller = self.caller(peer);
        let place = |e: qmgr::QmgrError| {
            let text = match source {
                "" | "-c" | "stdin" => e.to_string(),
                file => format!("{file}, {e}"),
            };
            TaskError::Invalid(format!("{text}; nothing was changed"))
        };
        let commands = match qmgr::parse_script(script) {
            Ok(c) => c,
            Err(e) => {
                let _ = reply.send(Err(place(e)));
                return;
            }
        };
        let mut config = self.state.config().clone();
        let run = qmgr::run_over(
            &commands,
            &mut config,
            &self.state,
            &caller,
            &self.settings.file_config,
        );
        let outcome = match run {
            Ok(o) => o,
            Err(e) => {
                let _ = reply.send(Err(place(e)));
                return;
            }
        };
        let answer = (outcome.output, if check_only { 0 } else { outcome.applied });
        let config_changed = outcome.applied > 0 && config != *self.state.config();
        if check_only || (!config_changed && outcome.reorder.is_empty()) {
            let _ = reply.send(Ok(answer));
            return;
        }
        if config_changed {
            if let Err(e) = self.durability.store().put_config(&config) {
                let _ = reply.send(Err(TaskError::not_stored(&e, "the configuration")));
                return;
            }
            info!(user = %caller.user, commands = outcome.applied, "configuration changed by qmgr");
            // The audit log: who changed what, a line per command written.
            let who = format!(
                "{}@{}",
                caller.user,
                peer.host.as_deref().unwrap_or(self.state.server_name())
            );
            let source = match source {
                "" => "-c",
                s => s,
            };
            for line in script
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
            {
                self.logs.writer().audit(now.wall, &who, source, line);
            }
            for warning in self.state.set_config(config) {
                warn!("{warning}");
            }
        }
        for queue in &outcome.reorder {
            self.reorder_jobs(queue, &caller.user, now);
        }
        self.answer_when_durable(answer, "the configuration changed".to_string(), reply);
    }
}

impl SchedulerTask {
    /// Reorders a queue's pending jobs in group cascade order (EPCC) and
    /// stores the jobs that moved; `by` says who or what asked.
    pub(super) fn reorder_jobs(&mut self, queue: &str, by: &str, now: Now) {
        match self.state.reorder_queue(queue, now.wall) {
            Ok(changed) => {
                for id in &changed {
                    if let Some(job) = self.state.job(*id) {
                        self.durability.persist(job);
                    }
                }
                info!(
                    queue,
                    moved = changed.len(),
                    by,
                    "queue reordered in group cascade order"
                );
                self.pacing.mark_dirty();
            }
            Err(e) => warn!(queue, by, error = %e, "could not reorder the queue"),
        }
    }

    /// Reorders the queues whose `reorder_times` (in the calendar's time
    /// zone) passed since the last look.
    pub(super) fn reorder_on_time(&mut self, now: Now) {
        let offset = self.state.config().calendar.offset_at(now.wall);
        let last = self.pacing.reorder_checked(now.wall);
        let due: Vec<String> = self
            .state
            .config()
            .queues
            .values()
            .filter(|q| reorder_due(&q.reorder_times, last, now.wall, offset))
            .map(|q| q.name.clone())
            .collect();
        for queue in due {
            self.reorder_jobs(&queue, "reorder_times", now);
        }
    }
}
