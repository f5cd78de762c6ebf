//! The Agent service: one bidirectional stream per agent. The first message
//! must be a hello; the task answers with a welcome on the outgoing stream
//! and from then on every message becomes an event. When the stream ends,
//! for whatever reason, the task hears that the session is gone.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};

use qmesh_proto::v1;
use qmesh_proto::v1::agent_server::Agent;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};
use tracing::debug;

use super::Link;
use crate::event::Event;

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

    async fn session(
        &self,
        request: Request<Streaming<v1::AgentMessage>>,
    ) -> Result<Response<Outgoing>, Status> {
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
