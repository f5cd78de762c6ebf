//! The daemon's half of the agent sessions: hello, reports, departures.
//!
//! A hello is checked here (the host's nodes; its proof of the cluster
//! key was checked on the way in, `crate::trust`) and the session
//! recorded; what the agent still runs and has ended is then
//! reconciled by [`crate::dispatch`] (its `agents.rs`).

use qmesh_core::JobId;
use qmesh_proto::v1;

use crate::convert;
use tracing::{debug, info, warn};

use super::SchedulerTask;
use crate::dispatch::{DispatchEvent, EndReport, Now};
use crate::error::TaskError;
use crate::event::{AgentOutbox, Reply};

impl SchedulerTask {
    pub(super) fn agent_hello(
        &mut self,
        session: u64,
        hello: v1::AgentHello,
        outbox: AgentOutbox,
        reply: Reply<()>,
        now: Now,
    ) {
        let host = hello.host.clone();
        let configured: Vec<String> = self
            .state
            .nodes_of_host(&host)
            .map(|n| n.name.to_string())
            .collect();
        if configured.is_empty() {
            warn!(host, "agent refused: no nodes for its host");
            let _ = reply.send(Err(TaskError::NotNow(format!(
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
                term: self.settings.term,
            })),
        };
        if outbox.try_send(welcome).is_err() {
            let _ = reply.send(Err(TaskError::Unavailable(
                "the session closed during hello".into(),
            )));
            return;
        }
        if self.links.connect(&host, session, outbox, now.mono) {
            info!(host, "a new session replaces the agent's old one");
        }
        if let Some(facts) = &hello.facts {
            self.state.set_host_facts(&host, host_facts(facts));
        }
        self.pacing.mark_dirty();
        let _ = reply.send(Ok(()));
        info!(
            host,
            nodes = configured.len(),
            running = hello.running.len(),
            finished = hello.finished.len(),
            "agent connected"
        );

        let finished = hello.finished.iter().map(end_report).collect();
        let running: Vec<JobId> = hello.running.iter().map(|&id| JobId(id)).collect();
        self.resend_pauses(&host, &running);
        let connected = DispatchEvent::AgentConnected {
            host,
            running,
            finished,
            joined: hello.joined.iter().map(|&id| JobId(id)).collect(),
        };
        self.dispatch_at(connected, now);
    }

    pub(super) fn agent_said(&mut self, session: u64, message: v1::agent_message::Kind, now: Now) {
        let Some(host) = self.links.heard_from(session, now.mono) else {
            debug!(session, "message from a replaced session; ignored");
            return;
        };
        match message {
            v1::agent_message::Kind::Heartbeat(beat) => {
                // Shown by qstat -f (resources_used); kept in memory only.
                for used in &beat.jobs {
                    let id = JobId(used.job);
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
                    let busy = self.state.nodes_of_host(&host).any(|n| n.overloaded);
                    info!(
                        host,
                        load = facts.load,
                        cpus = facts.cpus,
                        busy,
                        "host load crossed the limit"
                    );
                    self.pacing.mark_dirty();
                }
            }
            v1::agent_message::Kind::Started(s) => {
                debug!(job = s.job, pid = s.pid, host, "job process started");
                // Shown by qstat (session_id); kept in memory only.
                self.state.set_session(JobId(s.job), s.pid);
                self.mail(JobId(s.job), crate::mail::MailEvent::Begin, now);
                self.unpark(JobId(s.job));
            }
            v1::agent_message::Kind::Finished(f) => {
                let report = end_report(&f);
                self.dispatch_at(DispatchEvent::JobEnd { host, report }, now);
            }
            v1::agent_message::Kind::Joined(j) => {
                let joined = DispatchEvent::Joined {
                    host,
                    job: JobId(j.job),
                    ok: j.ok,
                    message: j.message,
                };
                self.dispatch_at(joined, now);
            }
            v1::agent_message::Kind::Hello(_) => {
                warn!(host, "a second hello in one session; ignored");
            }
        }
    }

    pub(super) fn agent_gone(&mut self, session: u64, now: Now) {
        let Some(host) = self.links.session_ended(session) else {
            return;
        };
        self.dispatch_at(DispatchEvent::AgentGone { host: host.clone() }, now);
        self.pacing.mark_dirty();
        warn!(
            host,
            "agent disconnected; its nodes are down until it reconnects"
        );
    }
}

/// An agent's end report, in the daemon's terms.
fn end_report(report: &v1::JobFinished) -> EndReport {
    let (exit, end) = convert::job_exit(report);
    EndReport {
        job: JobId(report.job),
        exit,
        end,
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
