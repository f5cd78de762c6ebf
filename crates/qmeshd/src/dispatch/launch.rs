//! Launches, and ends the daemon decides.
//!
//! A start is launched once it is durable, and only while its agent is
//! connected, its old run on that host has confirmed its end, and (a job
//! across hosts) every other host has joined it; otherwise the launch
//! waits for whichever comes last. Every end goes through
//! [`Step::finish`], which records it in the state and forgets the job's
//! launch, joins and give-up.

use qmesh_core::job::{ExitCause, JobExit};
use qmesh_core::joblog::EndedRun;
use qmesh_core::{JobId, JobState, Time};
use tracing::{debug, info};

use super::{Ended, Launch, Order, Step, ToAgent, exit_of};

impl Step<'_> {
    /// Sends a job's launch order to its agent, if it is connected.
    pub(super) fn launch(&mut self, id: JobId) {
        let Some(job) = self.state.job(id) else {
            self.d.launches.remove(&id);
            return;
        };
        match job.state {
            JobState::Running => {}
            JobState::Exiting => {
                // Deleted before its launch left: it never ran.
                self.finish_unlaunched(id, "job deleted before it was launched");
                return;
            }
            _ => {
                self.d.launches.remove(&id);
                return;
            }
        }
        let host = self.state.job_host(job).unwrap_or_default().to_string();
        if !self.d.connected.contains(&host) {
            debug!(job = %id, host, "agent not connected; the launch waits for it");
            self.d.launches.insert(id, Launch::Ready);
            return;
        }
        if self.d.stale_on(&host, id) {
            debug!(job = %id, host, "its old run there has not ended yet; the launch waits for it");
            self.d.launches.insert(id, Launch::Ready);
            return;
        }
        if self.joins_pending(id) {
            self.d.launches.insert(id, Launch::Joining);
            return;
        }
        // Sent unless the task answers that the agent did not take it.
        self.d.launches.insert(id, Launch::Sent);
        self.send(&host, ToAgent::Launch(id));
    }

    /// Ends a job the state has just marked exiting: kills it, or if its
    /// launch has not gone out, ends it without one.
    pub(super) fn end_active(&mut self, id: JobId, host: &str, reason: &str) {
        match self.d.launches.get(&id) {
            // launch() sees it exiting and ends it without a launch.
            Some(Launch::AwaitingDurable) => {}
            Some(Launch::Ready) => {
                self.finish_unlaunched(id, &format!("{reason} before it was launched"));
            }
            _ => self.kill(host, id, reason),
        }
    }

    /// Tells an agent to kill a job; if it is away, the kill is sent again
    /// when it reconnects (the job stays exiting until its end is reported).
    pub(super) fn kill(&mut self, host: &str, id: JobId, reason: &str) {
        self.send(
            host,
            ToAgent::Kill {
                job: id,
                reason: reason.to_string(),
            },
        );
    }

    pub(super) fn finish_failed(&mut self, id: JobId, message: &str) {
        let exit = exit_of(ExitCause::LaunchFailed, message.to_string());
        let end = self.now.wall;
        self.finish(id, exit, end, None);
    }

    pub(super) fn finish_unlaunched(&mut self, id: JobId, message: &str) {
        let exit = exit_of(ExitCause::Deleted, message.to_string());
        let end = self.now.wall;
        self.finish(id, exit, end, None);
    }

    /// Records a job's end; once durable, `ack_host`'s agent is told. The
    /// hosts it joined leave it; the rest is the task's ([`Order::Ended`]).
    pub(super) fn finish(&mut self, id: JobId, exit: JobExit, end: Time, ack_host: Option<String>) {
        let was_stopped = self.state.job(id).is_some_and(|j| j.period_stop.is_some());
        let joined_hosts: Vec<String> = self
            .state
            .job(id)
            .map(|job| self.state.job_hosts(job).into_iter().skip(1).collect())
            .unwrap_or_default();
        self.d.giving_up.remove(&id);
        self.d.awaiting_joins.remove(&id);
        // The run that ends, for the accounting log.
        let run = self
            .state
            .job(id)
            .filter(|j| j.state.is_active())
            .map(|job| EndedRun::of(job).ended(end.timestamp(), &exit));
        match self.state.finish(id, exit, end) {
            Ok((how, job)) => {
                let reason = job.comment.clone();
                for host in &joined_hosts {
                    self.send(
                        host,
                        ToAgent::Leave {
                            job: id,
                            reason: reason.clone(),
                        },
                    );
                }
                self.d.launches.remove(&id);
                self.out.push(Order::Ended(Ended {
                    job: id,
                    how,
                    run,
                    was_stopped,
                    end,
                    ack: ack_host,
                }));
            }
            Err(e) => {
                // A repeated report (already recorded): acknowledge again.
                debug!(job = %id, error = %e, "end report for a job that is not running");
                if let Some(host) = ack_host {
                    self.send(&host, ToAgent::Ack(id));
                }
            }
        }
    }

    /// A job whose launch waited for its old run's end (now acknowledged,
    /// so the agent's spool no longer holds that run) is launched.
    pub(super) fn launch_after_stale(&mut self, id: JobId) {
        if self.d.launches.get(&id) == Some(&Launch::Ready) {
            self.launch(id);
        }
    }

    /// Notes a job the agent of `host` runs that the daemon killed there.
    pub(super) fn mark_stale(&mut self, host: &str, id: JobId) {
        self.d.stale.entry(host.to_string()).or_default().insert(id);
    }

    /// Whether an end report from `host` belongs to an old run of the job
    /// (one the daemon already ended there, or while the job now runs
    /// elsewhere). The caller acknowledges it, then calls
    /// [`Self::launch_after_stale`].
    pub(super) fn stale_report(&mut self, host: &str, id: JobId) -> bool {
        if self
            .d
            .stale
            .get_mut(host)
            .is_some_and(|jobs| jobs.remove(&id))
        {
            info!(job = %id, host, "the old run's end is in; it ends nothing");
            return true;
        }
        self.state
            .job(id)
            .is_some_and(|job| job.state.is_active() && self.state.job_host(job) != Some(host))
    }
}
