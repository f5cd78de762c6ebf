//! Sessions with the daemon: connect (enrolling first if this agent has no
//! certificate yet, `crate::trust`), say Hello with what the spool holds
//! and the proof of the cluster key, take the Welcome, then carry orders in and job events out until the
//! stream ends; then reconnect, with backoff, forever.
//!
//! With several qmeshd (one leads, the others stand by, docs/HA.md),
//! `--server` lists them all: a session that cannot be had from one (down,
//! or a standby's refusal) is tried at the next at once; only after the
//! whole list failed does the agent back off. The Welcome says the
//! leader's term: an agent that has seen a later term refuses a daemon of
//! an older one (a deposed leader) and tries the next.
//!
//! Delivery is at least once and the spool makes it so: a finished job is
//! in every Hello until the daemon acknowledges it, so a finish sent just
//! before a connection broke is sent again. Within one session a finish is
//! sent once (the Hello counts).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use qmesh_proto::agent_client::AgentClient;
use qmesh_proto::v1::{self, agent_message, daemon_message};
use tokio::sync::mpsc::{self, UnboundedReceiver};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_stream::wrappers::ReceiverStream;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::error::{AgentError, Result};
use crate::joined::Joined;
use crate::shepherd::now;
use crate::supervise::{Event, Supervisor};
use crate::trust::Trust;

/// The word of a SignalJob that asks for preemption's checkpoint (C):
/// the site's program, then the kill (`Supervisor::checkpoint`).
pub const CHECKPOINT: &str = "checkpoint";

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const WELCOME_TIMEOUT: Duration = Duration::from_secs(30);
/// When the Welcome says 0.
const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(10);

/// Who this agent is, for the Hello.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// Every daemon of `--server`, in order, each with how this agent
    /// proves itself to it.
    pub trusts: Vec<Arc<Trust>>,
    pub nodes: Vec<String>,
    pub facts: crate::facts::FactsConfig,
}

/// Reconnect delays: 100 ms doubling to 5 s; back to 100 ms after a session
/// that got its Welcome.
#[derive(Debug)]
pub struct Backoff {
    next: Duration,
}

impl Backoff {
    pub const FIRST: Duration = Duration::from_millis(100);
    pub const MAX: Duration = Duration::from_secs(5);

    pub fn new() -> Self {
        Backoff { next: Self::FIRST }
    }

    pub fn reset(&mut self) {
        self.next = Self::FIRST;
    }

    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        delay
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

/// Runs sessions one after another; returns never.
pub async fn run_forever(
    cfg: &SessionConfig,
    sup: &Supervisor,
    joined: &Joined,
    events: &mut UnboundedReceiver<Event>,
) {
    let mut backoff = Backoff::new();
    // A daemon that stays away is logged once, not every five seconds.
    let mut last_failure = String::new();
    let servers = &cfg.trusts;
    let mut at = 0;
    // The latest term a daemon has shown this agent.
    let mut term = 0;
    loop {
        let mut welcomed = false;
        let trust = servers[at % servers.len()].clone();
        let outcome = session(cfg, &trust, sup, joined, events, (&mut welcomed, &mut term)).await;
        // The next daemon on the list is tried at once; a pause (and a
        // warning) only once the whole list failed.
        let round_failed = if welcomed {
            backoff.reset();
            last_failure.clear();
            false
        } else {
            at += 1;
            at % servers.len() == 0
        };
        match outcome {
            Ok(()) => info!("the daemon ended the session; reconnecting"),
            Err(e) => {
                let text = e.to_string();
                if text == last_failure || (!welcomed && !round_failed) {
                    debug!("{text}");
                } else {
                    warn!("{text} (the agent keeps retrying)");
                    last_failure = text;
                }
            }
        }
        if !welcomed && !round_failed {
            continue;
        }
        // With several daemons, a failed round means an election is under
        // way: the next round comes soon, so the agent is back within a
        // moment of the new leader.
        let delay = if servers.len() > 1 {
            backoff.next_delay().min(Duration::from_millis(250))
        } else {
            backoff.next_delay()
        };
        debug!(?delay, "reconnecting");
        tokio::time::sleep(delay).await;
    }
}

fn message(kind: agent_message::Kind) -> v1::AgentMessage {
    v1::AgentMessage { kind: Some(kind) }
}

async fn send(tx: &mpsc::Sender<v1::AgentMessage>, kind: agent_message::Kind) -> Result<()> {
    tx.send(message(kind)).await.map_err(|_| AgentError::Closed)
}

/// The daemons of `--server`, in order.
pub fn servers(list: &str) -> Vec<&str> {
    let servers: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if servers.is_empty() {
        vec![list]
    } else {
        servers
    }
}

/// One session with `server`. `welcomed` tells the caller it got as far as
/// the Welcome; `term` is the latest term seen, raised by this Welcome.
async fn session(
    cfg: &SessionConfig,
    trust: &Trust,
    sup: &Supervisor,
    joined: &Joined,
    events: &mut UnboundedReceiver<Event>,
    (welcomed, term): (&mut bool, &mut i64),
) -> Result<()> {
    let server = trust.server();
    // With the cluster CA: its certificate, kept or got now.
    tokio::time::timeout(WELCOME_TIMEOUT, trust.ready())
        .await
        .map_err(|_| AgentError::Timeout {
            what: "enrolling with the daemon",
            secs: WELCOME_TIMEOUT.as_secs(),
        })??;
    let linked = tokio::time::timeout(CONNECT_TIMEOUT, trust.connect())
        .await
        .map_err(|_| AgentError::Timeout {
            what: "connecting to the daemon",
            secs: CONNECT_TIMEOUT.as_secs(),
        })??;
    let channel = linked.channel.clone();
    // Tasks open their own streams on the same connection.
    let mut client = AgentClient::new(channel.clone());
    let (nonce, proof) = tokio::time::timeout(WELCOME_TIMEOUT, trust.hello_proof(&linked))
        .await
        .map_err(|_| AgentError::Timeout {
            what: "waiting for the daemon's challenge",
            secs: WELCOME_TIMEOUT.as_secs(),
        })??;

    let state = sup.state()?;
    let mut reported: HashSet<u64> = state.finished.iter().map(|r| r.job).collect();
    let hello = v1::AgentHello {
        host: trust.host().to_string(),
        nodes: cfg.nodes.clone(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        running: state.running.clone(),
        finished: state.finished,
        joined: joined.jobs(),
        facts: Some(crate::facts::gather(&cfg.facts).await),
        nonce,
        proof,
        ..Default::default()
    };
    let (tx, rx) = mpsc::channel(64);
    send(&tx, agent_message::Kind::Hello(hello)).await?;
    let mut inbound = client
        .session(ReceiverStream::new(rx))
        .await
        .map_err(|status| AgentError::refused(server, &status))?
        .into_inner();
    let first = tokio::time::timeout(WELCOME_TIMEOUT, inbound.message())
        .await
        .map_err(|_| AgentError::Timeout {
            what: "waiting for the daemon's Welcome",
            secs: WELCOME_TIMEOUT.as_secs(),
        })?
        .map_err(|status| AgentError::refused(server, &status))?;
    let welcome = match first.and_then(|m| m.kind) {
        Some(daemon_message::Kind::Welcome(w)) => w,
        None => {
            return Err(AgentError::Protocol(
                "the daemon ended the session without a Welcome".into(),
            ));
        }
        Some(other) => {
            return Err(AgentError::Protocol(format!(
                "expected a Welcome first, got {other:?}"
            )));
        }
    };
    if welcome.term < *term {
        return Err(AgentError::Protocol(format!(
            "refusing the orders of qmeshd at {server}: its term {} is older than term {}, \
             that of a later leader (it was deposed); trying the next server",
            welcome.term, *term
        )));
    }
    *term = welcome.term;
    *welcomed = true;
    info!(
        term = welcome.term,
        server = %welcome.server,
        nodes = ?welcome.nodes,
        running = ?state.running,
        finished = ?reported,
        "session established"
    );

    let period = match welcome.heartbeat_secs {
        0 => DEFAULT_HEARTBEAT,
        secs => Duration::from_secs(secs.into()),
    };
    let mut heartbeat = tokio::time::interval_at(Instant::now() + period, period);
    heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            received = inbound.message() => match received {
                Ok(Some(msg)) => handle(msg, sup, joined, &tx, &mut reported, &channel).await?,
                Ok(None) => return Ok(()),
                Err(status) => return Err(AgentError::stream(&status)),
            },
            _ = heartbeat.tick() => {
                let facts = crate::facts::gather(&cfg.facts).await;
                let beat = v1::Heartbeat { time: now(), facts: Some(facts), jobs: sup.used_so_far() };
                send(&tx, agent_message::Kind::Heartbeat(beat)).await?;
            }
            Some(event) = events.recv() => {
                if let Event::Finished(result) = &event {
                    sup.tasks.end_job(result.job);
                }
                forward(event, &tx, &mut reported).await?
            }
        }
    }
}

async fn handle(
    msg: v1::DaemonMessage,
    sup: &Supervisor,
    joined: &Joined,
    tx: &mpsc::Sender<v1::AgentMessage>,
    reported: &mut HashSet<u64>,
    channel: &tonic::transport::Channel,
) -> Result<()> {
    match msg.kind {
        Some(daemon_message::Kind::Launch(launch)) => {
            let span = info_span!("job", job = launch.job);
            let finished = async {
                info!(
                    job_id = %launch.job_id,
                    user = %launch.user,
                    nodes = ?launch.nodes,
                    walltime = launch.walltime,
                    "launch order"
                );
                sup.launch(launch).await
            }
            .instrument(span)
            .await;
            if let Err(finished) = finished {
                reported.insert(finished.job);
                send(tx, agent_message::Kind::Finished(finished)).await?;
            }
        }
        Some(daemon_message::Kind::Kill(kill)) => {
            info_span!("job", job = kill.job).in_scope(|| sup.kill(kill.job, &kill.reason));
            sup.tasks.end_job(kill.job);
        }
        Some(daemon_message::Kind::Task(order)) => sup.tasks.start(order, channel.clone()),
        Some(daemon_message::Kind::Signal(order)) if order.signal == CHECKPOINT => {
            info_span!("job", job = order.job)
                .in_scope(|| sup.checkpoint(order.job, &order.reason));
        }
        Some(daemon_message::Kind::Signal(order)) => {
            info_span!("job", job = order.job)
                .in_scope(|| sup.signal(order.job, &order.signal, &order.reason));
            // pbsdsh's tasks here are the job's too; on the job's other
            // hosts, so is its cgroup.
            if let Some(what) = crate::signals::Order::parse(&order.signal) {
                sup.tasks.signal_job(order.job, what.as_signal());
                joined.pause(order.job, what);
            }
        }
        Some(daemon_message::Kind::Message(order)) => {
            info_span!("job", job = order.job)
                .in_scope(|| sup.message(order.job, &order.text, order.to_output, order.to_error));
        }
        Some(daemon_message::Kind::Ack(ack)) => {
            info_span!("job", job = ack.job).in_scope(|| sup.ack(ack.job));
            // That run's end is recorded; a requeued job's next run on this
            // host reports its own end.
            reported.remove(&ack.job);
        }
        Some(daemon_message::Kind::Join(order)) => joined.join(order),
        Some(daemon_message::Kind::Leave(order)) => {
            sup.tasks.end_job(order.job);
            joined.leave(order.job, order.reason);
        }
        Some(daemon_message::Kind::Welcome(_)) => warn!("a second Welcome in one session; ignored"),
        None => debug!("an empty message from the daemon; ignored"),
    }
    Ok(())
}

async fn forward(
    event: Event,
    tx: &mpsc::Sender<v1::AgentMessage>,
    reported: &mut HashSet<u64>,
) -> Result<()> {
    match event {
        Event::Started { job, pid, time } => {
            if !reported.contains(&job) {
                let started = v1::JobStarted { job, pid, time };
                send(tx, agent_message::Kind::Started(started)).await?;
            }
        }
        Event::Joined(answer) => send(tx, agent_message::Kind::Joined(answer)).await?,
        Event::Finished(result) => {
            let job = result.job;
            if reported.insert(job) {
                send(tx, agent_message::Kind::Finished(result)).await?;
                debug!(job, "finish sent");
            } else {
                debug!(job = result.job, "finish already reported in this session");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_five_seconds_and_resets() {
        let mut b = Backoff::new();
        let delays: Vec<u64> = (0..8).map(|_| b.next_delay().as_millis() as u64).collect();
        assert_eq!(delays, vec![100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        b.reset();
        assert_eq!(b.next_delay(), Duration::from_millis(100));
    }

    #[tokio::test]
    async fn a_finish_is_sent_once_per_session() {
        let (tx, mut rx) = mpsc::channel(8);
        let mut reported: HashSet<u64> = [1].into_iter().collect();
        let done = |job| {
            Event::Finished(crate::record::finish(
                job,
                v1::FinishCause::LaunchFailed,
                "x".into(),
                0,
            ))
        };
        // Already in the Hello: neither its start nor its finish again.
        forward(
            Event::Started {
                job: 1,
                pid: 5,
                time: 0,
            },
            &tx,
            &mut reported,
        )
        .await
        .unwrap();
        forward(done(1), &tx, &mut reported).await.unwrap();
        forward(done(2), &tx, &mut reported).await.unwrap();
        forward(done(2), &tx, &mut reported).await.unwrap();
        drop(tx);
        let mut sent = Vec::new();
        while let Some(m) = rx.recv().await {
            sent.push(m.kind);
        }
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert!(matches!(&sent[0], Some(agent_message::Kind::Finished(f)) if f.job == 2));
    }
}
