//! The Agent service: one bidirectional stream per agent. The first message
//! must be a hello, whose proof of the cluster key (from another host) is
//! checked here (`crate::trust`), as is an agent's enrolment with the
//! cluster CA; `Challenge` gives the nonces they answer. The task answers
//! a hello with a welcome on the outgoing stream, and from then on every
//! message becomes an event. When the stream ends, for whatever reason,
//! the task hears that the session is gone.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};

use qmesh_proto::v1;
use qmesh_proto::v1::agent_server::Agent;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};
use tracing::{debug, info, warn};

use super::Link;
use crate::event::Event;
use crate::tls::AgentConn;
use crate::trust::Refusal;

/// A refusal as the agent reads it; logged here, where it is handled.
fn refused(refusal: &Refusal, conn: Option<&AgentConn>, host: &str) -> Status {
    let addr = conn
        .and_then(|c| c.remote)
        .map_or_else(|| "the local socket".to_string(), |a| a.to_string());
    warn!(host, %addr, "agent refused: {refusal}");
    if refusal.unauthenticated() {
        Status::unauthenticated(refusal.to_string())
    } else {
        Status::failed_precondition(refusal.to_string())
    }
}

static SESSIONS: AtomicU64 = AtomicU64::new(1);

pub struct AgentService {
    pub link: Link,
}

type Outgoing = Pin<Box<dyn Stream<Item = Result<v1::DaemonMessage, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl Agent for AgentService {
    type SessionStream = Outgoing;
    type AttachStream = super::attach::FrameStream;

    async fn attach(
        &self,
        request: Request<Streaming<v1::TaskFrame>>,
    ) -> Result<Response<Self::AttachStream>, Status> {
        super::attach::agent(&self.link, request.into_inner())
            .await
            .map(Response::new)
    }

    async fn challenge(
        &self,
        _request: Request<v1::ChallengeRequest>,
    ) -> Result<Response<v1::ChallengeGiven>, Status> {
        Ok(Response::new(v1::ChallengeGiven {
            nonce: self.link.trust.challenge(),
        }))
    }

    async fn enrol(
        &self,
        request: Request<v1::EnrolRequest>,
    ) -> Result<Response<v1::Enrolled>, Status> {
        let conn = request.extensions().get::<AgentConn>().cloned();
        let asked = request.into_inner();
        match self.link.trust.enrol(&asked, conn.as_ref()) {
            Ok(enrolled) => {
                let addr = conn.and_then(|c| c.remote).map(|a| a.to_string());
                info!(host = %asked.host, ?addr, "enrolled an agent: its certificate from the cluster CA names its host");
                Ok(Response::new(enrolled))
            }
            Err(refusal) => Err(refused(&refusal, conn.as_ref(), &asked.host)),
        }
    }

    async fn session(
        &self,
        request: Request<Streaming<v1::AgentMessage>>,
    ) -> Result<Response<Outgoing>, Status> {
        // None: the daemon's own Unix socket (its local agent).
        let conn = request.extensions().get::<AgentConn>().cloned();
        let mut inbound = request.into_inner();
        let hello = match inbound.message().await? {
            Some(v1::AgentMessage {
                kind: Some(v1::agent_message::Kind::Hello(hello)),
            }) => hello,
            _ => {
                return Err(Status::invalid_argument(
                    "an agent session must start with AgentHello",
                ));
            }
        };
        if let Err(refusal) = self.link.trust.check_hello(&hello, conn.as_ref()) {
            return Err(refused(&refusal, conn.as_ref(), &hello.host));
        }
        let session = SESSIONS.fetch_add(1, Ordering::Relaxed);
        let (outbox, outgoing) = tokio::sync::mpsc::channel(crate::event::AGENT_OUTBOX);
        self.link
            .ask(|reply| Event::AgentHello {
                session,
                hello,
                outbox,
                reply,
            })
            .await?;
        let events = self.link.events.clone();
        tokio::spawn(async move {
            loop {
                match inbound.message().await {
                    Ok(Some(v1::AgentMessage {
                        kind: Some(message),
                    })) => {
                        if events
                            .send(Event::AgentSaid { session, message })
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(e) => {
                        debug!(session, error = %e, "agent stream broke");
                        break;
                    }
                }
            }
            let _ = events.send(Event::AgentGone { session }).await;
        });
        Ok(Response::new(Box::pin(
            ReceiverStream::new(outgoing).map(Ok),
        )))
    }
}
