//! Jobs across hosts, and hosts that fail.
//!
//! A job whose nodes span several hosts is launched by the agent of its
//! first node; the agent of every other host is sent a join (it marks its
//! nodes busy and runs the site's prologue) and, when the job ends, a
//! leave (the epilogue). Joins are sent again whenever an agent says
//! hello, and an agent that still holds a job the daemon has ended is told
//! to leave it.
//!
//! A host whose agent stays away for `lost_after` (disconnected, or three
//! heartbeats missed) is given up: the jobs it launched are lost, requeued
//! if rerunnable, else failed; a job it only joined is killed on the host
//! that launched it and then counted lost the same way. Until the host
//! that launched a job confirms its end, the job's old run is *stale* on
//! that host: an end report from it ends nothing, and the job is not
//! launched there again before that report, so no job runs twice on one
//! spool.

use std::collections::{BTreeSet, HashSet};

use qmesh_core::JobId;
use qmesh_core::job::ExitCause;
use tracing::{info, warn};

use super::{Launch, Step, ToAgent, exit_of};

impl Step<'_> {
    /// Whether a job about to launch waits for other hosts to join it;
    /// sends them the joins the first time.
    pub(super) fn joins_pending(&mut self, id: JobId) -> bool {
        let Some(job) = self.state.job(id) else {
            return false;
        };
        let others: Vec<String> = self.state.job_hosts(job).into_iter().skip(1).collect();
        if others.is_empty() {
            return false;
        }
        if let Some(waiting) = self.d.awaiting_joins.get(&id) {
            return !waiting.is_empty();
        }
        for host in &others {
            self.send(host, ToAgent::Join(id));
        }
        self.d
            .awaiting_joins
            .insert(id, others.into_iter().collect());
        true
    }

    /// At hello: joins for the jobs holding nodes of `host`, leaves for
    /// the jobs it holds that have ended.
    pub(super) fn reconcile_joins(&mut self, host: &str, held: &[JobId]) {
        let joining = self.state.jobs_joining_host(host);
        for &id in &joining {
            self.send(host, ToAgent::Join(id));
        }
        let joining: HashSet<JobId> = joining.into_iter().collect();
        for &job in held.iter().filter(|j| !joining.contains(j)) {
            self.send(
                host,
                ToAgent::Leave {
                    job,
                    reason: "the job no longer runs here".into(),
                },
            );
        }
    }

    /// A host's answer to a join: the launch leaves once every host has
    /// joined; a failed prologue ends the job.
    pub(super) fn joined(&mut self, host: &str, id: JobId, ok: bool, message: &str) {
        if ok {
            info!(job = %id, host, "joined");
            let all_in = self
                .d
                .awaiting_joins
                .get_mut(&id)
                .is_some_and(|hosts| hosts.remove(host) && hosts.is_empty());
            if all_in && self.d.launches.get(&id) == Some(&Launch::Joining) {
                self.launch(id);
            }
            return;
        }
        let why = format!("the prologue on {host} failed: {message}");
        warn!(job = %id, host, "{why}");
        self.end_everywhere(id, ExitCause::LaunchFailed, why);
    }

    /// Ends an active job from outside: killed on the host that launched
    /// it, whose end report then counts as `cause` (see `job_end`); at
    /// once if that host's agent is away.
    fn end_everywhere(&mut self, id: JobId, cause: ExitCause, why: String) {
        let Some(job) = self.state.job(id).filter(|j| j.state.is_active()) else {
            return;
        };
        let mother = self.state.job_host(job).unwrap_or_default().to_string();
        if self.d.connected.contains(&mother) && self.d.launches.get(&id) == Some(&Launch::Sent) {
            if self.d.giving_up.insert(id, (cause, why.clone())).is_none() {
                self.kill(&mother, id, &why);
            }
            return;
        }
        let end = self.now.wall;
        self.finish(id, exit_of(cause, why), end, None);
    }

    /// Each tick: hosts holding active jobs whose agent is away (their
    /// nodes are down); those away for `lost_after` are given up.
    pub(super) fn give_up_lost_hosts(&mut self) {
        let now = self.now.mono;
        // A node is down exactly while its host's agent is away; a pass
        // over the nodes, not over every job's hosts.
        let away: BTreeSet<String> = self
            .state
            .nodes()
            .iter()
            .filter(|n| !n.up && !n.jobs.is_empty())
            .map(|n| n.host.clone())
            .collect();
        self.d.away.retain(|host, _| away.contains(host));
        let limit = self.d.lost_after;
        let mut lost = Vec::new();
        for host in away {
            let since = *self.d.away.entry(host.clone()).or_insert(now);
            if now.saturating_duration_since(since) >= limit {
                lost.push(host);
            }
        }
        for host in lost {
            self.give_up_host(&host);
        }
    }

    fn give_up_host(&mut self, host: &str) {
        self.d.away.remove(host);
        let why = format!(
            "host {host} was lost: its agent was away for {} s",
            self.d.lost_after.as_secs()
        );
        let launched = self.state.jobs_on_host(host);
        let joined = self.state.jobs_joining_host(host);
        warn!(
            host,
            launched = launched.len(),
            joined = joined.len(),
            "{why}; its jobs are requeued if rerunnable, else failed"
        );
        for id in launched {
            // Its agent, if it comes back with the job still running, is
            // told to kill it, and the job is not launched there again
            // before that run's end is in.
            self.mark_stale(host, id);
            let end = self.now.wall;
            self.finish(id, exit_of(ExitCause::Lost, why.clone()), end, None);
        }
        for id in joined {
            self.end_everywhere(id, ExitCause::Lost, why.clone());
        }
    }
}
