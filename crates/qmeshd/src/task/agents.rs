//! The daemon's half of the agent sessions: hello and reconciliation,
//! reports, departures.
//!
//! Reconciliation when an agent says hello (after its own restart, the
//! daemon's, or a broken connection), for each job the daemon believes runs
//! on that host: the agent runs it → keep it (and kill it again if it was
//! deleted meanwhile); the agent reports it finished → record the end; its
//! launch never left → send it now; otherwise the agent does not know it →
//! it is lost: requeued if rerunnable, else failed. Jobs the agent runs that
//! the daemon does not place there are killed.

use std::collections::HashSet;
use std::time::Instant;

use chrono::Utc;
use qmesh_core::job::{ExitCause, JobExit};
use qmesh_core::{JobId, JobState};
use qmesh_proto::{convert, v1};
use tonic::Status;
use tracing::{debug, info, warn};

use super::{AgentLink, Launch, SchedulerTask};
use crate::event::{AgentOutbox, Reply};

impl SchedulerTask {
    pub(super) fn agent_hello(
        &mut self,
        session: u64,
        hello: v1::AgentHello,
        outbox: AgentOutbox,
        reply: Reply<()>,
    ) {
        let host = hello.host.clone();
        if let Some(key) = &self.settings.cluster_key
            && hello.cluster_key != *key
        {
            warn!(host, "agent refused: wrong cluster key");
            let _ = reply.send(Err(Status::unauthenticated(format!(
                "the agent for host \"{host}\" presented a wrong cluster key; check its --cluster-key-file"
            ))));
            return;
        }
        let configured: Vec<String> = self
            .state
            .nodes()
            .iter()
            .filter(|n| n.host == host)
            .map(|n| n.name.to_string())
            .collect();
        if configured.is_empty() {
            warn!(host, "agent refused: no nodes for its host");
            let _ = reply.send(Err(Status::failed_precondition(format!(
                "host \"{host}\" has no nodes in the daemon's node sets; add it to a node_set or start the agent with --host NAME"
            ))));
            return;
        }
        if !hello.nodes.is_empty() {
            let mut offered = hello.nodes.clone();
            offered.sort();
            let mut ours = configured.clone();
            ours.sort();
            if offered != ours {
                warn!(host, offered = %offered.join(","), configured = %ours.join(","),
                    "the agent offers other nodes than the configuration gives its host; using the configuration");
            }
        }
        let welcome = v1::DaemonMessage {
            kind: Some(v1::daemon_message::Kind::Welcome(v1::Welcome {
                nodes: configured.clone(),
                heartbeat_secs: self.settings.heartbeat_secs,
                server: self.state.server_name().to_string(),
            })),
        };
        if outbox.try_send(Ok(welcome)).is_err() {
            let _ = reply.send(Err(Status::unavailable("the session closed during hello")));
            return;
        }
        if let Some(old) = self.agents.insert(
            host.clone(),
            AgentLink {
                session,
                outbox,
                last_seen: Instant::now(),
            },
        ) {
            info!(host, "a new session replaces the agent's old one");
            self.sessions.remove(&old.session);
        }
        self.sessions.insert(session, host.clone());
        self.away.remove(&host);
        self.state.set_host_up(&host, true);
        if let Some(facts) = &hello.facts {
            self.state.set_host_facts(&host, host_facts(facts));
        }
        self.dirty = true;
        let _ = reply.send(Ok(()));
        info!(
            host,
            nodes = configured.len(),
            running = hello.running.len(),
            finished = hello.finished.len(),
            "agent connected"
        );

        let finished: HashSet<u64> = hello.finished.iter().map(|f| f.job).collect();
        let running: HashSet<u64> = hello.running.iter().copied().collect();
        // Old runs the agent no longer has (its spool was wiped) are over.
        if let Some(stale) = self.stale.get_mut(&host) {
            stale.retain(|id| running.contains(&id.0) || finished.contains(&id.0));
        }
        for report in &hello.finished {
            self.job_finished(&host, report);
        }
        for id in self.state.jobs_on_host(&host) {
            if finished.contains(&id.0) {
                continue;
            }
            let exiting = self
                .state
                .job(id)
                .is_some_and(|j| j.state == JobState::Exiting);
            if running.contains(&id.0) {
                if exiting {
                    self.kill(&host, id, "deleted while its agent was away");
                }
                continue;
            }
            match self.launches.get(&id) {
                Some(Launch::AwaitingDurable | Launch::Joining) => {}
                Some(Launch::Ready) => self.launch(id),
                _ if exiting => {
                    self.finish_unlaunched(id, "job deleted; its agent no longer ran it");
                }
                _ => {
                    let lost = JobExit {
                        code: None,
                        signal: None,
                        cause: ExitCause::Lost,
                        message: format!("the agent on {host} did not know it when it reconnected"),
                        cput: None,
                        max_rss: None,
                        vmem: None,
                    };
                    warn!(job = %id, host, "job lost");
                    self.finish(id, lost, Utc::now(), None);
                }
            }
        }
        let ours: HashSet<u64> = self
            .state
            .jobs_on_host(&host)
            .iter()
            .map(|id| id.0)
            .collect();
        for id in running.difference(&ours) {
            warn!(
                job = id,
                host, "the agent runs a job the daemon does not place there; killing it"
            );
            self.mark_stale(&host, JobId(*id));
            self.kill(&host, JobId(*id), "the daemon does not run this job here");
        }
        self.reconcile_joins(&host, &hello.joined);
    }

    pub(super) fn agent_said(&mut self, session: u64, message: v1::agent_message::Kind) {
        let Some(host) = self.sessions.get(&session).cloned() else {
            debug!(session, "message from a replaced session; ignored");
            return;
        };
        if let Some(link) = self.agents.get_mut(&host) {
            link.last_seen = Instant::now();
        }
        match message {
            v1::agent_message::Kind::Heartbeat(beat) => {
                // Shown by qstat -f (resources_used); kept in memory only.
                for used in &beat.jobs {
                    let id = qmesh_core::JobId(used.job);
                    let launched_here = self
                        .state
                        .job(id)
                        .and_then(|job| self.state.job_host(job))
                        .is_some_and(|h| h == host);
                    if !launched_here {
                        continue;
                    }
                    self.state.set_used_so_far(
                        id,
                        qmesh_core::job::UsedSoFar {
                            cput: used.cput,
                            mem: used.mem,
                            vmem: used.vmem,
                        },
                    );
                }
                if let Some(facts) = beat.facts
                    && self.state.set_host_facts(&host, host_facts(&facts))
                {
                    let busy = self
                        .state
                        .nodes()
                        .iter()
                        .any(|n| n.host == host && n.overloaded);
                    info!(
                        host,
                        load = facts.load,
                        cpus = facts.cpus,
                        busy,
                        "host load crossed the limit"
                    );
                    self.dirty = true;
                }
            }
            v1::agent_message::Kind::Started(s) => {
                debug!(job = s.job, pid = s.pid, host, "job process started");
                // Shown by qstat (session_id); kept in memory only.
                self.state.set_session(qmesh_core::JobId(s.job), s.pid);
                self.mail(qmesh_core::JobId(s.job), crate::mail::MailEvent::Begin);
                self.unpark(qmesh_core::JobId(s.job));
            }
            v1::agent_message::Kind::Finished(f) => self.job_finished(&host, &f),
            v1::agent_message::Kind::Joined(j) => self.joined(&host, &j),
            v1::agent_message::Kind::Hello(_) => {
                warn!(host, "a second hello in one session; ignored");
            }
        }
    }

    pub(super) fn agent_gone(&mut self, session: u64) {
        let Some(host) = self.sessions.remove(&session) else {
            return;
        };
        if self.agents.get(&host).is_some_and(|l| l.session == session) {
            self.agents.remove(&host);
            self.state.set_host_up(&host, false);
            self.dirty = true;
            warn!(
                host,
                "agent disconnected; its nodes are down until it reconnects"
            );
        }
    }

    fn job_finished(&mut self, host: &str, report: &v1::JobFinished) {
        let id = JobId(report.job);
        debug!(job = %id, host, "end report");
        if self.stale_report(host, id) {
            // The acknowledgement first: until it, the agent's spool holds
            // the old run, and a launch of the same job would be ignored.
            self.send(
                host,
                v1::daemon_message::Kind::Ack(v1::AckFinished { job: id.0 }),
            );
            self.launch_after_stale(id);
            return;
        }
        let (exit, end) = convert::job_exit(report);
        let exit = self.given_up_exit(id, exit);
        self.finish(
            id,
            exit,
            end.unwrap_or_else(Utc::now),
            Some(host.to_string()),
        );
    }
}

/// An agent's report, for the state.
fn host_facts(facts: &v1::HostFacts) -> qmesh_core::state::HostFacts {
    qmesh_core::state::HostFacts {
        load: facts.load,
        cpus: facts.cpus,
        mem: facts.mem,
        features: facts.features.clone(),
        gpus: facts.gpus,
    }
}
