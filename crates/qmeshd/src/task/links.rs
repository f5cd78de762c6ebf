//! Agent links: the task's side of every agent's session, and what it
//! keeps for the processes it starts through them.
//!
//! One link per host: the session that said hello last (a new hello
//! replaces the old session), the queue of messages for it, and when the
//! agent was last heard from. Messages are queued without waiting: the
//! task never waits for one agent (`AgentLink::deliver`). Here too: the
//! attaches to interactive jobs parked until their job starts, and the
//! last `PBS_TASKNUM` given out per job.
//!
//! This is one of the two places the task speaks the wire (the agents'
//! session carries protobuf messages both ways); the other is the
//! listings (`plan.rs`, `jobs.rs`'s qstat).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use qmesh_core::JobId;
use qmesh_proto::v1;
use tokio::sync::mpsc::error::TrySendError;
use tracing::warn;

use crate::event::{AgentOutbox, Reply};

/// A connected agent.
struct AgentLink {
    session: u64,
    outbox: AgentOutbox,
    last_seen: Instant,
}

impl AgentLink {
    /// Queues a message for the agent without waiting. An agent that has
    /// left its buffer full ([`crate::event::AGENT_OUTBOX`] messages
    /// unread) is stuck: its session is ended (the stream closes once what
    /// it holds is read) and this message is not sent. The agent
    /// reconnects, and its hello reconciles what it missed; launches not
    /// sent wait for it.
    fn deliver(&mut self, host: &str, kind: v1::daemon_message::Kind) -> bool {
        match self.outbox.try_send(v1::DaemonMessage { kind: Some(kind) }) {
            Ok(()) => true,
            Err(TrySendError::Closed(_)) => false,
            Err(TrySendError::Full(_)) => {
                warn!(
                    host,
                    session = self.session,
                    unread = self.outbox.max_capacity(),
                    "the agent does not read its messages; ending its session (it reconnects and reconciles)"
                );
                self.outbox = tokio::sync::mpsc::channel(1).0;
                false
            }
        }
    }
}

/// An attach to an interactive job waiting for it to start.
pub(super) struct Parked {
    pub open: v1::TaskOpen,
    pub token: String,
    pub reply: Reply<String>,
}

#[derive(Default)]
pub(super) struct AgentLinks {
    by_host: HashMap<String, AgentLink>,
    /// Which host each live session serves.
    sessions: HashMap<u64, String>,
    /// qsub -I attaches waiting for their job to start.
    parked: HashMap<JobId, Vec<Parked>>,
    /// The last PBS_TASKNUM given out per running job (the script is 1).
    task_numbers: HashMap<JobId, u32>,
}

impl AgentLinks {
    /// `host`'s agent is connected through `session` as of `now`; true if
    /// this replaced an older session of the same host.
    pub(super) fn connect(
        &mut self,
        host: &str,
        session: u64,
        outbox: AgentOutbox,
        now: Instant,
    ) -> bool {
        let link = AgentLink {
            session,
            outbox,
            last_seen: now,
        };
        let replaced = self.by_host.insert(host.to_string(), link);
        if let Some(old) = &replaced {
            self.sessions.remove(&old.session);
        }
        self.sessions.insert(session, host.to_string());
        replaced.is_some()
    }

    /// The host of a live session, now heard from; `None` for a session
    /// that was replaced.
    pub(super) fn heard_from(&mut self, session: u64, now: Instant) -> Option<String> {
        let host = self.sessions.get(&session)?.clone();
        if let Some(link) = self.by_host.get_mut(&host) {
            link.last_seen = now;
        }
        Some(host)
    }

    /// The session ended; its host, if it was that host's current session
    /// (whose agent is now away).
    pub(super) fn session_ended(&mut self, session: u64) -> Option<String> {
        let host = self.sessions.remove(&session)?;
        if self
            .by_host
            .get(&host)
            .is_some_and(|l| l.session == session)
        {
            self.by_host.remove(&host);
            return Some(host);
        }
        None
    }

    /// Ends the links of agents not heard from within `limit` of `now`;
    /// their hosts.
    pub(super) fn drop_silent(&mut self, now: Instant, limit: Duration) -> Vec<String> {
        let silent: Vec<String> = self
            .by_host
            .iter()
            .filter(|(_, link)| now.duration_since(link.last_seen) > limit)
            .map(|(host, _)| host.clone())
            .collect();
        for host in &silent {
            if let Some(link) = self.by_host.remove(host) {
                self.sessions.remove(&link.session);
            }
        }
        silent
    }

    /// Ends every agent's link (their sessions end: a leader that cannot
    /// tell whether it still leads lets its agents find the next); their
    /// hosts.
    pub(super) fn drop_all(&mut self) -> Vec<String> {
        self.sessions.clear();
        self.by_host.drain().map(|(host, _)| host).collect()
    }

    pub(super) fn is_connected(&self, host: &str) -> bool {
        self.by_host.contains_key(host)
    }

    pub(super) fn connected(&self) -> usize {
        self.by_host.len()
    }

    /// Queues a message for a host's agent; false if it is not connected
    /// (or no longer keeps up, see [`AgentLink::deliver`]).
    pub(super) fn send(&mut self, host: &str, kind: v1::daemon_message::Kind) -> bool {
        match self.by_host.get_mut(host) {
            Some(link) => link.deliver(host, kind),
            None => false,
        }
    }

    /// Tells `host`'s agent that `job`'s end is recorded: it may forget
    /// the job (a lost acknowledgement is sent again after its next hello).
    pub(super) fn ack(&mut self, host: &str, job: JobId) -> bool {
        self.send(
            host,
            v1::daemon_message::Kind::Ack(v1::AckFinished { job: job.0 }),
        )
    }

    /// Keeps an attach until `job` starts.
    pub(super) fn park(&mut self, job: JobId, parked: Parked) {
        self.parked.entry(job).or_default().push(parked);
    }

    /// The attaches waiting for `job`, now taken.
    pub(super) fn unpark(&mut self, job: JobId) -> Vec<Parked> {
        self.parked.remove(&job).unwrap_or_default()
    }

    /// The next PBS_TASKNUM of a job's process (the script is 1).
    pub(super) fn next_task_number(&mut self, job: JobId) -> u32 {
        let counter = self.task_numbers.entry(job).or_insert(1);
        *counter += 1;
        *counter
    }

    /// The job has ended: its task numbers go.
    pub(super) fn job_ended(&mut self, job: JobId) {
        self.task_numbers.remove(&job);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(job: u64) -> v1::daemon_message::Kind {
        v1::daemon_message::Kind::Ack(v1::AckFinished { job })
    }

    fn acked(message: Option<v1::DaemonMessage>) -> Option<u64> {
        match message?.kind? {
            v1::daemon_message::Kind::Ack(a) => Some(a.job),
            _ => None,
        }
    }

    #[test]
    fn an_agent_that_does_not_read_loses_its_session_and_the_task_never_waits() {
        let (outbox, mut outgoing) = tokio::sync::mpsc::channel(2);
        let mut links = AgentLinks::default();
        links.connect("h1", 7, outbox, Instant::now());
        assert!(links.send("h1", ack(1)));
        assert!(links.send("h1", ack(2)));
        assert!(!links.send("h1", ack(3)), "full: the session ends");
        assert!(!links.send("h1", ack(4)), "and stays ended");
        // The agent still reads what was queued, then the stream ends.
        assert_eq!(acked(outgoing.try_recv().ok()), Some(1));
        assert_eq!(acked(outgoing.try_recv().ok()), Some(2));
        assert!(matches!(
            outgoing.try_recv(),
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected)
        ));
    }

    #[test]
    fn a_new_hello_replaces_the_old_session_whose_end_then_changes_nothing() {
        let mut links = AgentLinks::default();
        let t0 = Instant::now();
        let (old, _old_rx) = tokio::sync::mpsc::channel(8);
        let (new, mut new_rx) = tokio::sync::mpsc::channel(8);
        assert!(!links.connect("h1", 1, old, t0));
        assert!(
            links.connect("h1", 2, new, t0),
            "the second replaces the first"
        );
        assert_eq!(
            links.heard_from(1, t0),
            None,
            "the old session is not heard"
        );
        assert_eq!(links.session_ended(1), None, "its end leaves the host up");
        assert!(links.is_connected("h1"));
        assert!(links.send("h1", ack(9)));
        assert_eq!(
            acked(new_rx.try_recv().ok()),
            Some(9),
            "the new one gets it"
        );
        assert_eq!(links.session_ended(2).as_deref(), Some("h1"));
        assert!(!links.is_connected("h1") && !links.send("h1", ack(10)));
    }

    #[test]
    fn agents_not_heard_from_within_the_limit_are_dropped() {
        let mut links = AgentLinks::default();
        let t0 = Instant::now();
        let limit = Duration::from_secs(30);
        links.connect("quiet", 1, tokio::sync::mpsc::channel(1).0, t0);
        links.connect("chatty", 2, tokio::sync::mpsc::channel(1).0, t0);
        assert_eq!(
            links.heard_from(2, t0 + Duration::from_secs(20)).as_deref(),
            Some("chatty")
        );
        assert!(
            links.drop_silent(t0 + limit, limit).is_empty(),
            "not past it"
        );
        assert_eq!(
            links.drop_silent(t0 + Duration::from_secs(31), limit),
            ["quiet"]
        );
        assert_eq!(links.connected(), 1);
        assert_eq!(links.heard_from(1, t0), None, "its session is gone too");
    }

    #[test]
    fn task_numbers_count_from_two_per_job_and_go_with_it() {
        let mut links = AgentLinks::default();
        assert_eq!(links.next_task_number(JobId(1)), 2);
        assert_eq!(links.next_task_number(JobId(1)), 3);
        assert_eq!(links.next_task_number(JobId(2)), 2);
        links.job_ended(JobId(1));
        assert_eq!(links.next_task_number(JobId(1)), 2);
    }
}
