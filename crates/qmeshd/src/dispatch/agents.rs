//! An agent's hello reconciled, its end reports, its departure.
//!
//! Reconciliation when an agent says hello (after its own restart, the
//! daemon's, or a broken connection), for each job the daemon believes runs
//! on that host: the agent runs it → keep it (and kill it again if it was
//! deleted meanwhile); the agent reports it finished → record the end; its
//! launch never left → send it now; otherwise the agent does not know it →
//! it is lost: requeued if rerunnable, else failed. Jobs the agent runs that
//! the daemon does not place there are killed, and their run is stale
//! there until its end is in.

use std::collections::HashSet;

use qmesh_core::job::ExitCause;
use qmesh_core::{JobId, JobState};
use tracing::{debug, warn};

use super::{EndReport, Launch, Step, ToAgent, exit_of};

impl Step<'_> {
    pub(super) fn agent_connected(
        &mut self,
        host: &str,
        running: &[JobId],
        finished: &[EndReport],
        joined: &[JobId],
    ) {
        self.d.connected.insert(host.to_string());
        self.d.away.remove(host);
        self.state.set_host_up(host, true);
        let finished_ids: HashSet<JobId> = finished.iter().map(|f| f.job).collect();
        let running: HashSet<JobId> = running.iter().copied().collect();
        // Old runs the agent no longer has (its spool was wiped) are over.
        if let Some(stale) = self.d.stale.get_mut(host) {
            stale.retain(|id| running.contains(id) || finished_ids.contains(id));
        }
        for report in finished {
            self.job_end(host, report.clone());
        }
        for id in self.state.jobs_on_host(host) {
            if finished_ids.contains(&id) {
                continue;
            }
            let exiting = self
                .state
                .job(id)
                .is_some_and(|j| j.state == JobState::Exiting);
            if running.contains(&id) {
                if exiting {
                    self.kill(host, id, "deleted while its agent was away");
                }
                continue;
            }
            match self.d.launches.get(&id) {
                Some(Launch::AwaitingDurable | Launch::Joining) => {}
                Some(Launch::Ready) => self.launch(id),
                _ if exiting => {
                    self.finish_unlaunched(id, "job deleted; its agent no longer ran it");
                }
                _ => {
                    let lost = exit_of(
                        ExitCause::Lost,
                        format!("the agent on {host} did not know it when it reconnected"),
                    );
                    warn!(job = %id, host, "job lost");
                    let end = self.now.wall;
                    self.finish(id, lost, end, None);
                }
            }
        }
        let ours: HashSet<JobId> = self.state.jobs_on_host(host).into_iter().collect();
        let mut strays: Vec<JobId> = running.difference(&ours).copied().collect();
        strays.sort();
        for id in strays {
            warn!(
                job = %id,
                host, "the agent runs a job the daemon does not place there; killing it"
            );
            self.mark_stale(host, id);
            self.kill(host, id, "the daemon does not run this job here");
        }
        self.reconcile_joins(host, joined);
    }

    pub(super) fn agent_gone(&mut self, host: &str) {
        self.d.connected.remove(host);
        self.state.set_host_up(host, false);
    }

    /// An agent's report of a job's end: an old run's ends nothing (it is
    /// acknowledged, and a launch that waited for it leaves); else the
    /// job ends, as the daemon's cause if it was being given up.
    pub(super) fn job_end(&mut self, host: &str, report: EndReport) {
        let id = report.job;
        debug!(job = %id, host, "end report");
        if self.stale_report(host, id) {
            // The acknowledgement first: until it, the agent's spool holds
            // the old run, and a launch of the same job would be ignored.
            self.send(host, ToAgent::Ack(id));
            self.launch_after_stale(id);
            return;
        }
        let exit = match self.d.giving_up.remove(&id) {
            Some((cause, message)) => exit_of(cause, message),
            None => report.exit,
        };
        let end = report.end.unwrap_or(self.now.wall);
        self.finish(id, exit, end, Some(host.to_string()));
    }
}
