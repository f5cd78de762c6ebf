//! `Jobs.Attach` and `Agent.Attach`: a job's process (pbsdsh's task, an
//! interactive job's terminal) wired to its caller through the daemon.
//!
//! The caller's stream opens with a TaskOpen; the scheduler task checks it
//! and sends the agent a StartTask with a fresh random token (a capability
//! only that agent's authenticated session ever saw). The agent starts the
//! process and opens its own stream, whose first frame is the token; the
//! two are paired here and frames pass both ways, input to the agent and
//! output to the caller, until the task's exit frame. Nothing of this goes
//! through the scheduler task, so a busy terminal costs the scheduler
//! nothing.
//!
//! qsub -I is the job's owner on the other end: if it goes away (Ctrl-\,
//! a lost login session) before the shell has ended, the job is deleted,
//! as PBS does.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use qmesh_proto::v1;
use qmesh_proto::v1::task_frame::Kind;
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};
use tracing::{debug, info, warn};

use super::Link;
use crate::event::Event;
use crate::identity::Peer;

/// How long the agent has to open its end once told to start a task.
const AGENT_ARRIVES_WITHIN: Duration = Duration::from_secs(60);

/// Frames in flight each way before the sender waits.
const FRAMES_IN_FLIGHT: usize = 64;

pub type FrameStream = ReceiverStream<Result<v1::TaskFrame, Status>>;

/// The agent's end of a task's stream.
pub struct AgentEnd {
    inbound: Streaming<v1::TaskFrame>,
    outbox: mpsc::Sender<Result<v1::TaskFrame, Status>>,
}

/// Callers waiting for their task's agent, by token.
#[derive(Default)]
pub struct Rendezvous {
    waiting: Mutex<HashMap<String, oneshot::Sender<AgentEnd>>>,
}

impl Rendezvous {
    /// The agent's end of `token`'s task, when it arrives.
    fn await_agent(&self, token: &str) -> oneshot::Receiver<AgentEnd> {
        let (tx, rx) = oneshot::channel();
        self.lock().insert(token.to_string(), tx);
        rx
    }

    fn forget(&self, token: &str) {
        self.lock().remove(token);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<AgentEnd>>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn frame(kind: Kind) -> v1::TaskFrame {
    v1::TaskFrame { kind: Some(kind) }
}

fn new_token() -> String {
    use rand::Rng;
    let bytes: [u8; 16] = rand::rng().random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The caller's side: checks the open, then serves the stream.
pub async fn caller(
    link: &Link,
    peer: Peer,
    mut inbound: Streaming<v1::TaskFrame>,
) -> Result<FrameStream, Status> {
    let open = match inbound.message().await? {
        Some(v1::TaskFrame {
            kind: Some(Kind::Open(open)),
        }) => open,
        _ => {
            return Err(Status::invalid_argument(
                "an attach must start with TaskOpen",
            ));
        }
    };
    let (tx, rx) = mpsc::channel(FRAMES_IN_FLIGHT);
    let link = link.clone();
    tokio::spawn(async move {
        let token = new_token();
        let interactive = open.interactive;
        let job_id = open.job_id.clone();
        let arrives = link.rendezvous.await_agent(&token);
        let outcome = serve_caller(&link, &peer, open, &token, arrives, inbound, &tx).await;
        link.rendezvous.forget(&token);
        if let Err(status) = outcome {
            // Cancelled is ours alone: the caller's stream broke or closed.
            let caller_gone = tx.is_closed() || status.code() == tonic::Code::Cancelled;
            let _ = tx.send(Err(status)).await;
            if interactive && caller_gone {
                info!(job = %job_id, user = %peer.user, "qsub -I went away; deleting its job");
                let _ = link
                    .ask(|reply| Event::Delete {
                        peer,
                        ids: vec![job_id],
                        force: false,
                        purge_history: false,
                        reply,
                    })
                    .await;
            }
        }
    });
    Ok(ReceiverStream::new(rx))
}

async fn serve_caller(
    link: &Link,
    peer: &Peer,
    open: v1::TaskOpen,
    token: &str,
    arrives: oneshot::Receiver<AgentEnd>,
    mut inbound: Streaming<v1::TaskFrame>,
    tx: &mpsc::Sender<Result<v1::TaskFrame, Status>>,
) -> Result<(), Status> {
    let gone = || Status::cancelled("the caller went away");
    let job_id = open.job_id.clone();
    // Authorised and sent to the agent; an interactive job may first have
    // to start, which may take as long as the queue says.
    let asked = link.ask(|reply| Event::OpenTask {
        peer: peer.clone(),
        open,
        token: token.to_string(),
        reply,
    });
    let host = tokio::select! {
        host = asked => host?,
        () = tx.closed() => return Err(gone()),
    };
    let agent = tokio::select! {
        end = tokio::time::timeout(AGENT_ARRIVES_WITHIN, arrives) => match end {
            Ok(Ok(end)) => end,
            _ => return Err(Status::unavailable(format!(
                "the agent of host {host} did not start the task of job {job_id} within {} s; see its log",
                AGENT_ARRIVES_WITHIN.as_secs()
            ))),
        },
        () = tx.closed() => return Err(gone()),
    };
    tx.send(Ok(frame(Kind::Started(host.clone()))))
        .await
        .map_err(|_| gone())?;
    let AgentEnd {
        inbound: mut from_agent,
        outbox: to_agent,
    } = agent;
    let mut caller_open = true;
    loop {
        tokio::select! {
            from = inbound.message(), if caller_open => match from {
                Ok(Some(v1::TaskFrame { kind: Some(kind) })) => {
                    if is_input(&kind) && to_agent.send(Ok(frame(kind))).await.is_err() {
                        return Err(lost(&host, &job_id));
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => {
                    // The caller has nothing more to say; the output goes on.
                    caller_open = false;
                    let _ = to_agent.send(Ok(frame(Kind::StdinClosed(true)))).await;
                }
                Err(e) => {
                    debug!(job = %job_id, error = %e, "the caller's stream broke");
                    return Err(gone());
                }
            },
            from = from_agent.message() => match from {
                Ok(Some(v1::TaskFrame { kind: Some(kind) })) => {
                    let last = matches!(kind, Kind::Exit(_) | Kind::Error(_));
                    if is_output(&kind) && tx.send(Ok(frame(kind))).await.is_err() {
                        return Err(gone());
                    }
                    if last {
                        return Ok(());
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return Err(lost(&host, &job_id)),
            },
            () = tx.closed() => return Err(gone()),
        }
    }
}

fn lost(host: &str, job_id: &str) -> Status {
    Status::unavailable(format!(
        "the agent of host {host} lost the task of job {job_id} (the job ended, or the agent restarted)"
    ))
}

fn is_input(kind: &Kind) -> bool {
    matches!(
        kind,
        Kind::Stdin(_) | Kind::StdinClosed(_) | Kind::Window(_) | Kind::Signal(_)
    )
}

fn is_output(kind: &Kind) -> bool {
    matches!(
        kind,
        Kind::Stdout(_) | Kind::Stderr(_) | Kind::Exit(_) | Kind::Error(_)
    )
}

/// The agent's side: the token pairs it with its caller.
pub async fn agent(
    link: &Link,
    mut inbound: Streaming<v1::TaskFrame>,
) -> Result<FrameStream, Status> {
    let token = match inbound.message().await? {
        Some(v1::TaskFrame {
            kind: Some(Kind::Token(token)),
        }) => token,
        _ => {
            return Err(Status::invalid_argument(
                "an agent's attach must start with its token",
            ));
        }
    };
    let waiting = link.rendezvous.lock().remove(&token);
    let Some(waiting) = waiting else {
        warn!("an attach with a token nobody waits for (the caller left, or a forgery)");
        return Err(Status::permission_denied(
            "no task waits for this token; its caller has gone",
        ));
    };
    let (outbox, rx) = mpsc::channel(FRAMES_IN_FLIGHT);
    if waiting.send(AgentEnd { inbound, outbox }).is_err() {
        return Err(Status::cancelled("the task's caller has gone"));
    }
    Ok(ReceiverStream::new(rx))
}
