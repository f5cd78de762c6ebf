//! Jobs across hosts, and hosts that fail.
//!
//! A job whose nodes span several hosts is launched by the agent of its
//! first node; the agent of every other host is sent a JoinJob (it marks
//! its nodes busy and runs the site's prologue) and, when the job ends, a
//! LeaveJob (the epilogue). Joins are sent again whenever an agent says
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
use std::time::Instant;

use chrono::Utc;
use qmesh_core::JobId;
use qmesh_core::job::{ExitCause, JobExit};
use qmesh_proto::v1;
use tracing::{info, warn};

use super::{Launch, SchedulerTask};

impl SchedulerTask {
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
        if self.awaiting_joins.contains_key(&id) {
            return !self.awaiting_joins[&id].is_empty();
        }
        for host in &others {
            self.send_join(host, id);
        }
        self.awaiting_joins.insert(id, others.into_iter().collect());
        true
    }

    /// The nodes of `job` on `host`, in the job's order.
    pub(super) fn nodes_on(&self, job: &qmesh_core::Job, host: &str) -> Vec<String> {
        job.exec_nodes
            .iter()
            .filter(|n| {
                self.state
                    .node_by_name(n)
                    .is_some_and(|node| node.host == host)
            })
            .map(|n| n.to_string())
            .collect()
    }

    /// The JoinJob for one host of a job (sent again after a hello).
    pub(super) fn send_join(&mut self, host: &str, id: JobId) {
        let Some(job) = self.state.job(id) else {
            return;
        };
        let nodes = self.nodes_on(job, host);
        // What it may use here: its nodes' here together.
        let here: Vec<_> = job
            .exec_nodes
            .iter()
            .zip(job.node_shares())
            .filter(|(n, _)| nodes.iter().any(|m| *m == n.to_string()))
            .collect();
        let mem = here
            .iter()
            .map(|(_, s)| s.mem)
            .sum::<Option<u64>>()
            .filter(|_| !here.is_empty());
        let shared = here
            .iter()
            .any(|(n, _)| self.state.node_by_name(n).is_some_and(|n| n.slots > 1));
        let cpus = if shared {
            here.iter().map(|(_, s)| s.cpus).sum()
        } else {
            0
        };
        let order = v1::JoinJob {
            job: id.0,
            job_id: job.id.full(self.state.server_name()),
            user: job.owner.user.clone(),
            uid: job.owner.uid,
            gid: job.owner.gid,
            group: job.owner.group.clone(),
            nodes,
            launched_on: self.state.job_host(job).unwrap_or_default().to_string(),
            all_nodes: job.exec_nodes.iter().map(|n| n.to_string()).collect(),
            mem,
            cpus,
        };
        if !self.send(host, v1::daemon_message::Kind::Join(order)) {
            info!(job = %id, host, "agent not connected; the join is sent when it says hello");
        }
    }

    /// Tells `hosts` (a job's joined hosts) that it ended.
    pub(super) fn send_leaves(&mut self, id: JobId, hosts: &[String], reason: &str) {
        for host in hosts {
            self.send(
                host,
                v1::daemon_message::Kind::Leave(v1::LeaveJob {
                    job: id.0,
                    reason: reason.to_string(),
                }),
            );
        }
    }

    /// At hello: joins for the jobs holding nodes of `host`, leaves for
    /// the jobs it holds that have ended.
    pub(super) fn reconcile_joins(&mut self, host: &str, held: &[u64]) {
        let joining = self.state.jobs_joining_host(host);
        for &id in &joining {
            self.send_join(host, id);
        }
        let joining: HashSet<u64> = joining.iter().map(|id| id.0).collect();
        for &job in held.iter().filter(|j| !joining.contains(j)) {
            self.send_leaves(
                JobId(job),
                &[host.to_string()],
                "the job no longer runs here",
            );
        }
    }

    /// A JobJoined: the launch leaves once every host has joined; a
    /// failed prologue ends the job.
    pub(super) fn joined(&mut self, host: &str, answer: &v1::JobJoined) {
        let id = JobId(answer.job);
        if answer.ok {
            info!(job = %id, host, "joined");
            let all_in = self
                .awaiting_joins
                .get_mut(&id)
                .is_some_and(|hosts| hosts.remove(host) && hosts.is_empty());
            if all_in && self.launches.get(&id) == Some(&Launch::Joining) {
                self.launch(id);
            }
            return;
        }
        let why = format!("the prologue on {host} failed: {}", answer.message);
        warn!(job = %id, host, "{why}");
        self.end_everywhere(id, ExitCause::LaunchFailed, why);
    }

    /// Ends an active job from outside: killed on the host that launched
    /// it, whose end report then counts as `cause` (see `job_finished`);
    /// at once if that host's agent is away.
    fn end_everywhere(&mut self, id: JobId, cause: ExitCause, why: String) {
        let Some(job) = self.state.job(id).filter(|j| j.state.is_active()) else {
            return;
        };
        let mother = self.state.job_host(job).unwrap_or_default().to_string();
        if self.agents.contains_key(&mother) && self.launches.get(&id) == Some(&Launch::Sent) {
            if self.giving_up.insert(id, (cause, why.clone())).is_none() {
                self.kill(&mother, id, &why);
            }
            return;
        }
        let exit = JobExit {
            code: None,
            signal: None,
            cause,
            message: why,
            cput: None,
            max_rss: None,
            vmem: None,
        };
        self.finish(id, exit, Utc::now(), None);
    }

    /// The exit a report stands for: a job given up ends as its reason
    /// says, whatever its agent saw.
    pub(super) fn given_up_exit(&mut self, id: JobId, exit: JobExit) -> JobExit {
        match self.giving_up.remove(&id) {
            Some((cause, message)) => JobExit {
                code: None,
                signal: None,
                cause,
                message,
                cput: None,
                max_rss: None,
                vmem: None,
            },
            None => exit,
        }
    }

    /// Whether an end report from `host` belongs to an old run of the job
    /// (one the daemon already ended there, or while the job now runs
    /// elsewhere). The caller acknowledges it, then calls
    /// [`Self::launch_after_stale`].
    pub(super) fn stale_report(&mut self, host: &str, id: JobId) -> bool {
        if self
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

    /// A job whose launch waited for its old run's end (now acknowledged,
    /// so the agent's spool no longer holds that run) is launched.
    pub(super) fn launch_after_stale(&mut self, id: JobId) {
        if self.launches.get(&id) == Some(&Launch::Ready) {
            self.launch(id);
        }
    }

    /// Whether the job's old run on `host` has not yet confirmed its end.
    pub(super) fn stale_on(&self, host: &str, id: JobId) -> bool {
        self.stale.get(host).is_some_and(|jobs| jobs.contains(&id))
    }

    /// Notes a job the agent of `host` runs that the daemon killed there.
    pub(super) fn mark_stale(&mut self, host: &str, id: JobId) {
        self.stale.entry(host.to_string()).or_default().insert(id);
    }

    /// Each tick: hosts holding active jobs whose agent is away (their
    /// nodes are down); those
    /// away for `lost_after` are given up.
    pub(super) fn give_up_lost_hosts(&mut self) {
        let now = Instant::now();
        // A node is down exactly while its host's agent is away; a pass
        // over the nodes, not over every job's hosts.
        let away: BTreeSet<String> = self
            .state
            .nodes()
            .iter()
            .filter(|n| !n.up && !n.jobs.is_empty())
            .map(|n| n.host.clone())
            .collect();
        self.away.retain(|host, _| away.contains(host));
        let limit = self.settings.lost_after;
        let mut lost = Vec::new();
        for host in away {
            let since = *self.away.entry(host.clone()).or_insert(now);
            if now.duration_since(since) >= limit {
                lost.push(host);
            }
        }
        for host in lost {
            self.give_up_host(&host);
        }
    }

    fn give_up_host(&mut self, host: &str) {
        self.away.remove(host);
        let why = format!(
            "host {host} was lost: its agent was away for {} s",
            self.settings.lost_after.as_secs()
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
            let exit = JobExit {
                code: None,
                signal: None,
                cause: ExitCause::Lost,
                message: why.clone(),
                cput: None,
                max_rss: None,
                vmem: None,
            };
            self.finish(id, exit, Utc::now(), None);
        }
        for id in joined {
            self.end_everywhere(id, ExitCause::Lost, why.clone());
        }
    }
}
