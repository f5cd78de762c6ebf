//! Watching a range of keys: one watch per stream, events in revision
//! order. A watch that breaks (the member went away) is an error; the
//! caller starts a new one from the revision after the last it saw, on
//! whichever member answers.

use tokio::sync::mpsc;
use tonic::Streaming;

use crate::{Client, EtcdError, pb};

/// One watch on one member.
pub struct Watch {
    stream: Streaming<pb::WatchResponse>,
    /// Held so the request side stays open while the watch runs.
    _requests: mpsc::Sender<pb::WatchRequest>,
    /// The revision the events have reached.
    revision: i64,
}

/// What a watch delivers at once: the events of one or more revisions.
pub struct Events {
    pub events: Vec<pb::Event>,
    /// Everything up to this revision has been delivered.
    pub revision: i64,
}

impl Client {
    /// Watches `[key, range_end)` (`range_end` empty: the key alone) from
    /// `start_revision` on.
    pub async fn watch(
        &self,
        key: &[u8],
        range_end: &[u8],
        start_revision: i64,
    ) -> Result<Watch, EtcdError> {
        let create = pb::WatchRequest {
            request_union: Some(pb::watch_request::RequestUnion::CreateRequest(
                pb::WatchCreateRequest {
                    key: key.to_vec(),
                    range_end: range_end.to_vec(),
                    start_revision,
                    progress_notify: true,
                    ..Default::default()
                },
            )),
        };
        let (stream, requests) = self
            .call("watch the store", |ch| {
                let (tx, rx) = mpsc::channel(4);
                let create = create.clone();
                let request = self.request(tokio_stream::wrappers::ReceiverStream::new(rx));
                async move {
                    tx.send(create)
                        .await
                        .map_err(|_| tonic::Status::cancelled("watch request dropped"))?;
                    let mut stream = pb::watch_client::WatchClient::new(ch)
                        .max_decoding_message_size(256 * 1024 * 1024)
                        .watch(request)
                        .await?
                        .into_inner();
                    // The first answer says the watch exists (or why not).
                    match stream.message().await? {
                        Some(first) if first.created && !first.canceled => Ok((stream, tx)),
                        Some(first) if first.compact_revision > 0 => {
                            Err(tonic::Status::out_of_range(format!(
                                "compacted:{}",
                                first.compact_revision
                            )))
                        }
                        Some(first) => Err(tonic::Status::internal(format!(
                            "the watch was not created: {}",
                            first.cancel_reason
                        ))),
                        None => Err(tonic::Status::unavailable("the watch stream ended")),
                    }
                }
            })
            .await
            .map_err(|e| match e {
                EtcdError::Other { detail, .. } if detail.contains("compacted:") => {
                    let revision = detail
                        .split("compacted:")
                        .nth(1)
                        .and_then(|s| s.split_whitespace().next())
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0);
                    EtcdError::Compacted { revision }
                }
                other => other,
            })?;
        Ok(Watch {
            stream,
            _requests: requests,
            revision: start_revision - 1,
        })
    }
}

impl Watch {
    /// The next events (or a progress notice with none).
    pub async fn next(&mut self) -> Result<Events, EtcdError> {
        let answer = self
            .stream
            .message()
            .await
            .map_err(|s| EtcdError::Other {
                what: "watch the store".into(),
                detail: s.message().to_string(),
            })?
            .ok_or_else(|| EtcdError::Other {
                what: "watch the store".into(),
                detail: "the watch stream ended".into(),
            })?;
        if answer.compact_revision > 0 {
            return Err(EtcdError::Compacted {
                revision: answer.compact_revision,
            });
        }
        if answer.canceled {
            return Err(EtcdError::Other {
                what: "watch the store".into(),
                detail: format!("the watch was cancelled: {}", answer.cancel_reason),
            });
        }
        let header = answer.header.as_ref().map_or(0, |h| h.revision);
        let last_event = answer
            .events
            .iter()
            .filter_map(|e| e.kv.as_ref().map(|kv| kv.mod_revision))
            .max()
            .unwrap_or(0);
        // A progress notice's header revision is how far the watch has
        // reached; an event batch's header may be ahead of its events.
        self.revision = if answer.events.is_empty() {
            self.revision.max(header)
        } else {
            self.revision.max(last_event)
        };
        Ok(Events {
            events: answer.events,
            revision: self.revision,
        })
    }

    /// The revision the delivered events have reached.
    pub fn revision(&self) -> i64 {
        self.revision
    }
}
