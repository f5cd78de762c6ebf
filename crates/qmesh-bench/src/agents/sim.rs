//! One simulated agent: a real agent's session with the daemon (its own
//! TLS connection, its certificate from the cluster CA, its proof of the
//! cluster key, one `Agent.Session` stream), without a spool or a
//! shepherd. It says hello with what it runs and what has ended but is
//! not acknowledged, heartbeats at the period the Welcome gives with fixed
//! facts, joins every job it is asked to, and runs each launch as a job
//! that starts at once and ends `job_secs` later. It reconnects as the
//! real agent does (`qmesh_agent::session::Backoff`).
//!
//! The connection, the enrolment and the proofs are the real agent's own
//! code (`qmesh_agent::trust::Trust`); only what happens between the
//! messages is simulated.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use qmesh_agent::session::Backoff;
use qmesh_agent::trust::Trust;
use qmesh_proto::agent_client::AgentClient;
use qmesh_proto::v1::{self, agent_message, daemon_message};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// How long a step of a session may take before it is tried again (the
/// real agent's own limits are 10 s to connect and 30 s for the rest).
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// What all simulated agents share with the bench's driver.
pub struct Shared {
    /// Agents whose session got its Welcome and has not ended.
    pub attached: AtomicUsize,
    /// Heartbeats sent, by all.
    pub heartbeats: AtomicU64,
    /// Join orders answered, by all.
    pub joins: AtomicU64,
    /// Each launch order as it arrives: the job and when.
    pub launched: mpsc::UnboundedSender<(u64, Instant)>,
    /// Each join order as it arrives: the job and when.
    pub joined: mpsc::UnboundedSender<(u64, Instant)>,
    /// Each acknowledged end (the daemon recorded it durably).
    pub acked: mpsc::UnboundedSender<u64>,
    /// How long a launched job runs.
    pub job_secs: Duration,
}

/// What this agent runs and has ended: its spool, in memory.
#[derive(Default)]
struct Jobs {
    running: Vec<u64>,
    /// Ended, not yet acknowledged: in every hello until it is.
    finished: Vec<v1::JobFinished>,
    /// Jobs launched elsewhere that hold this host's nodes.
    joined: Vec<u64>,
}

/// Runs sessions one after another, forever (the driver drops the
/// runtime at the end).
pub async fn run(trust: Arc<Trust>, shared: Arc<Shared>) {
    let mut backoff = Backoff::new();
    let mut jobs = Jobs::default();
    loop {
        let mut welcomed = false;
        let _ended = session(&trust, &shared, &mut jobs, &mut welcomed).await;
        if welcomed {
            shared.attached.fetch_sub(1, Ordering::SeqCst);
            backoff.reset();
        }
        tokio::time::sleep(backoff.next_delay()).await;
    }
}

fn message(kind: agent_message::Kind) -> v1::AgentMessage {
    v1::AgentMessage { kind: Some(kind) }
}

/// A host's facts, the same at every heartbeat but the load, which moves
/// a little (well below any limit) as a real host's does.
fn facts(beat: u64) -> v1::HostFacts {
    v1::HostFacts {
        cpus: 32,
        mem: 128 << 30,
        load: 0.25 * (beat % 4) as f64,
        features: Vec::new(),
        gpus: 0,
    }
}

async fn within<T, E: Into<anyhow::Error>>(
    what: &str,
    step: impl std::future::Future<Output = Result<T, E>>,
) -> anyhow::Result<T> {
    match tokio::time::timeout(STEP_TIMEOUT, step).await {
        Ok(done) => done.map_err(Into::into).with_context(|| what.to_string()),
        Err(_) => bail!("{what}: no answer within {} s", STEP_TIMEOUT.as_secs()),
    }
}

async fn session(
    trust: &Trust,
    shared: &Shared,
    jobs: &mut Jobs,
    welcomed: &mut bool,
) -> anyhow::Result<()> {
    // With the cluster CA: this host's certificate, got once by enrolling.
    within("enrol", trust.ready()).await?;
    let linked = within("connect", trust.connect()).await?;
    let mut client = AgentClient::new(linked.channel.clone());
    let (nonce, proof) = within("prove the key", trust.hello_proof(&linked)).await?;
    let hello = v1::AgentHello {
        host: trust.host().to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        running: jobs.running.clone(),
        finished: jobs.finished.clone(),
        joined: jobs.joined.clone(),
        facts: Some(facts(0)),
        nonce,
        proof,
        ..Default::default()
    };
    let (tx, rx) = mpsc::channel(64);
    tx.send(message(agent_message::Kind::Hello(hello))).await?;
    let mut inbound = within("open the session", client.session(ReceiverStream::new(rx)))
        .await?
        .into_inner();
    let welcome = match within("wait for the Welcome", inbound.message()).await? {
        Some(v1::DaemonMessage {
            kind: Some(daemon_message::Kind::Welcome(w)),
        }) => w,
        other => bail!("expected a Welcome, got {other:?}"),
    };
    *welcomed = true;
    shared.attached.fetch_add(1, Ordering::SeqCst);
    let period = Duration::from_secs(u64::from(welcome.heartbeat_secs.max(1)));
    let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (ends, mut ending) = mpsc::unbounded_channel::<u64>();
    let mut beats = 0u64;
    loop {
        tokio::select! {
            received = inbound.message() => match received? {
                Some(msg) => handle(msg, shared, jobs, &tx, &ends).await?,
                None => return Ok(()),
            },
            _ = heartbeat.tick() => {
                beats += 1;
                let beat = v1::Heartbeat { time: now(), facts: Some(facts(beats)), jobs: Vec::new() };
                tx.send(message(agent_message::Kind::Heartbeat(beat))).await?;
                shared.heartbeats.fetch_add(1, Ordering::Relaxed);
            }
            Some(job) = ending.recv() => {
                if let Some(done) = end(jobs, job, v1::FinishCause::Exited, "") {
                    tx.send(message(agent_message::Kind::Finished(done))).await?;
                }
            }
        }
    }
}

async fn handle(
    msg: v1::DaemonMessage,
    shared: &Shared,
    jobs: &mut Jobs,
    tx: &mpsc::Sender<v1::AgentMessage>,
    ends: &mpsc::UnboundedSender<u64>,
) -> anyhow::Result<()> {
    match msg.kind {
        Some(daemon_message::Kind::Launch(launch)) => {
            let _ = shared.launched.send((launch.job, Instant::now()));
            if jobs.running.contains(&launch.job) {
                return Ok(());
            }
            jobs.running.push(launch.job);
            let started = v1::JobStarted {
                job: launch.job,
                pid: 1,
                time: now(),
            };
            tx.send(message(agent_message::Kind::Started(started)))
                .await?;
            let (ends, job, secs) = (ends.clone(), launch.job, shared.job_secs);
            tokio::spawn(async move {
                tokio::time::sleep(secs).await;
                let _ = ends.send(job);
            });
        }
        Some(daemon_message::Kind::Join(join)) => {
            let _ = shared.joined.send((join.job, Instant::now()));
            shared.joins.fetch_add(1, Ordering::Relaxed);
            if !jobs.joined.contains(&join.job) {
                jobs.joined.push(join.job);
            }
            let answer = v1::JobJoined {
                job: join.job,
                ok: true,
                message: String::new(),
            };
            tx.send(message(agent_message::Kind::Joined(answer)))
                .await?;
        }
        Some(daemon_message::Kind::Leave(leave)) => jobs.joined.retain(|&j| j != leave.job),
        Some(daemon_message::Kind::Kill(kill)) => {
            if let Some(done) = end(jobs, kill.job, v1::FinishCause::Killed, &kill.reason) {
                tx.send(message(agent_message::Kind::Finished(done)))
                    .await?;
            }
        }
        Some(daemon_message::Kind::Ack(ack)) => {
            jobs.finished.retain(|f| f.job != ack.job);
            let _ = shared.acked.send(ack.job);
        }
        // Signals, messages and tasks reach no process here.
        _ => {}
    }
    Ok(())
}

/// The job ends now, if it runs here; its report, kept until acknowledged.
fn end(jobs: &mut Jobs, job: u64, cause: v1::FinishCause, why: &str) -> Option<v1::JobFinished> {
    let at = jobs.running.iter().position(|&j| j == job)?;
    jobs.running.swap_remove(at);
    let time = now();
    let done = v1::JobFinished {
        job,
        exit_code: (cause == v1::FinishCause::Exited).then_some(0),
        cause: cause.into(),
        message: why.to_string(),
        start_time: time,
        end_time: time,
        ..Default::default()
    };
    jobs.finished.push(done.clone());
    Some(done)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_end_is_kept_until_acknowledged_and_only_for_a_running_job() {
        let mut jobs = Jobs {
            running: vec![4, 7],
            ..Jobs::default()
        };
        let done = end(&mut jobs, 7, v1::FinishCause::Exited, "").unwrap();
        assert_eq!((done.job, done.exit_code), (7, Some(0)));
        assert_eq!(jobs.running, [4]);
        assert_eq!(jobs.finished.len(), 1, "in the next hello");
        assert!(end(&mut jobs, 7, v1::FinishCause::Exited, "").is_none());
        let killed = end(&mut jobs, 4, v1::FinishCause::Killed, "qdel").unwrap();
        assert_eq!(killed.exit_code, None);
        assert_eq!(killed.message, "qdel");
    }
}
