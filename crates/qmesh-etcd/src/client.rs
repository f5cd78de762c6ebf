//! A client of an etcd cluster: one lazily connected channel per member,
//! requests sent to the member that last answered, and on a member that is
//! down, cut off or without quorum, the next one tried. Every request has
//! a deadline, so a silent member costs one timeout, not a hang.
//!
//! Retrying a write whose answer was lost applies it twice; every write
//! qmesh makes is a put or delete of a definite value (or a create that
//! checks its own lease, `election.rs`), so twice is the same as once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tonic::metadata::AsciiMetadataValue;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Request, Status};

use crate::EtcdError;
use crate::pb;

/// Largest answer read (a page of a range read).
const MAX_ANSWER: usize = 256 * 1024 * 1024;
/// Keys read per range request when loading a prefix.
const PAGE: i64 = 5000;

/// How to reach etcd.
#[derive(Clone, Debug)]
pub struct Options {
    /// `http://host:port` or `https://host:port` (or `host:port`, plain).
    pub endpoints: Vec<String>,
    /// TLS to the members (`https://` endpoints).
    pub tls: Option<ClientTlsConfig>,
    /// etcd's user and password, when its auth is on.
    pub user: Option<(String, String)>,
    /// How long one request may take on one member.
    pub request_timeout: Duration,
    /// How long connecting to one member may take.
    pub connect_timeout: Duration,
}

impl Options {
    pub fn new(endpoints: Vec<String>) -> Options {
        Options {
            endpoints,
            tls: None,
            user: None,
            request_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(2),
        }
    }
}

/// A handle on the cluster; cheap to clone.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    members: Vec<(String, Channel)>,
    /// The member to try first: the last that answered.
    current: AtomicUsize,
    token: RwLock<Option<AsciiMetadataValue>>,
    options: Options,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("endpoints", &self.endpoints())
            .finish()
    }
}

/// An error that another member may not have.
fn worth_another_member(status: &Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled | Code::Unknown
    )
}

/// Whether the member could not be talked to at all (as opposed to one
/// that answered that it could not commit).
fn not_reached(status: &Status) -> bool {
    let m = status.message();
    status.code() != Code::DeadlineExceeded
        && (m.contains("connect") || m.contains("dns") || m.contains("refused"))
}

fn token_refused(status: &Status) -> bool {
    status.code() == Code::Unauthenticated
        || status.message().contains("invalid auth token")
        || status.message().contains("user name is empty")
}

impl Client {
    /// A client of the members in `options`; connects on first use. Must be
    /// called in a tokio runtime, which its connections then use.
    pub fn new(options: Options) -> Result<Client, EtcdError> {
        if options.endpoints.is_empty() {
            return Err(EtcdError::Other {
                what: "connect".into(),
                detail: "no endpoints given; set [store] endpoints".into(),
            });
        }
        let mut members = Vec::new();
        for raw in &options.endpoints {
            let url = if raw.contains("://") {
                raw.clone()
            } else {
                format!("http://{raw}")
            };
            let mut endpoint = Endpoint::from_shared(url.clone())
                .map_err(|e| EtcdError::Other {
                    what: format!("read the endpoint {raw:?}"),
                    detail: e.to_string(),
                })?
                .connect_timeout(options.connect_timeout)
                .timeout(options.request_timeout)
                // A member cut off mid-stream (a watch) is noticed within
                // seconds, not at TCP's timeout. Not more often: etcd
                // closes a connection that pings more than once in 5 s
                // (its --grpc-keepalive-min-time).
                .http2_keep_alive_interval(Duration::from_secs(10))
                .keep_alive_timeout(Duration::from_secs(5));
            if url.starts_with("https://") {
                let tls = options.tls.clone().unwrap_or_default();
                endpoint = endpoint.tls_config(tls).map_err(|e| EtcdError::Other {
                    what: format!("set up TLS to {url}"),
                    detail: e.to_string(),
                })?;
            }
            members.push((url, endpoint.connect_lazy()));
        }
        Ok(Client {
            inner: Arc::new(Inner {
                members,
                current: AtomicUsize::new(0),
                token: RwLock::new(None),
                options,
            }),
        })
    }

    /// The members, as configured, for messages.
    pub fn endpoints(&self) -> String {
        self.inner.options.endpoints.join(",")
    }

    pub fn request_timeout(&self) -> Duration {
        self.inner.options.request_timeout
    }

    /// The member to try first, and the others after it.
    pub(crate) fn channels(&self) -> Vec<(usize, Channel)> {
        let n = self.inner.members.len();
        let first = self.inner.current.load(Ordering::Relaxed) % n;
        (0..n)
            .map(|i| {
                let at = (first + i) % n;
                (at, self.inner.members[at].1.clone())
            })
            .collect()
    }

    pub(crate) fn answered(&self, member: usize) {
        self.inner.current.store(member, Ordering::Relaxed);
    }

    /// `message` as a request, with the auth token if there is one.
    pub(crate) fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        let token = match self.inner.token.read() {
            Ok(t) => t.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        if let Some(token) = token {
            request.metadata_mut().insert("token", token);
        }
        request
    }

    /// Gets a token for the configured user (none configured: nothing).
    async fn authenticate(&self, channel: Channel) -> Result<(), EtcdError> {
        let Some((name, password)) = self.inner.options.user.clone() else {
            return Ok(());
        };
        let answer = pb::auth_client::AuthClient::new(channel)
            .authenticate(pb::AuthenticateRequest {
                name: name.clone(),
                password,
            })
            .await
            .map_err(|s| EtcdError::Auth {
                what: format!("user {name}"),
                detail: s.message().to_string(),
            })?
            .into_inner();
        let token =
            AsciiMetadataValue::try_from(answer.token.as_str()).map_err(|e| EtcdError::Auth {
                what: format!("user {name}"),
                detail: format!("etcd's token is not valid metadata: {e}"),
            })?;
        match self.inner.token.write() {
            Ok(mut t) => *t = Some(token),
            Err(poisoned) => *poisoned.into_inner() = Some(token),
        }
        Ok(())
    }

    /// Runs `call` on the members in turn until one answers; `what` names
    /// the request in errors.
    pub(crate) async fn call<T, F, Fut>(&self, what: &str, call: F) -> Result<T, EtcdError>
    where
        F: Fn(Channel) -> Fut,
        Fut: std::future::Future<Output = Result<T, Status>>,
    {
        let needs_token = self.inner.options.user.is_some()
            && match self.inner.token.read() {
                Ok(t) => t.is_none(),
                Err(_) => true,
            };
        let mut errors: Vec<(String, Status)> = Vec::new();
        for (at, channel) in self.channels() {
            if needs_token && let Err(e) = self.authenticate(channel.clone()).await {
                if matches!(e, EtcdError::Auth { .. }) && !e.to_string().contains("transport") {
                    return Err(e);
                }
                continue;
            }
            let mut outcome = call(channel.clone()).await;
            if let Err(status) = &outcome
                && token_refused(status)
                && self.inner.options.user.is_some()
            {
                self.authenticate(channel.clone()).await?;
                outcome = call(channel).await;
            }
            match outcome {
                Ok(answer) => {
                    self.answered(at);
                    return Ok(answer);
                }
                Err(status) if worth_another_member(&status) => {
                    errors.push((self.inner.members[at].0.clone(), status));
                }
                Err(status) => return Err(self.refusal(what, &status)),
            }
        }
        Err(self.unavailable(&errors))
    }

    /// The error for members that all failed.
    pub(crate) fn unavailable(&self, errors: &[(String, Status)]) -> EtcdError {
        let detail = errors
            .iter()
            .map(|(url, s)| format!("{url}: {}", s.message()))
            .collect::<Vec<_>>()
            .join("; ");
        if !errors.is_empty() && errors.iter().all(|(_, s)| not_reached(s)) {
            EtcdError::Unreachable {
                endpoints: self.endpoints(),
                detail,
            }
        } else {
            EtcdError::NoQuorum {
                endpoints: self.endpoints(),
                detail,
            }
        }
    }

    /// The error for a request a member refused.
    pub(crate) fn refusal(&self, what: &str, status: &Status) -> EtcdError {
        let m = status.message();
        if m.contains("too large") || m.contains("too many operations") {
            EtcdError::TooLarge {
                bytes: 0,
                ops: 0,
                detail: m.to_string(),
            }
        } else if status.code() == Code::PermissionDenied || token_refused(status) {
            EtcdError::Auth {
                what: what.to_string(),
                detail: m.to_string(),
            }
        } else if m.contains("compacted") {
            EtcdError::Compacted { revision: 0 }
        } else {
            EtcdError::Other {
                what: what.to_string(),
                detail: format!("{} ({:?})", m, status.code()),
            }
        }
    }

    fn kv(channel: Channel) -> pb::kv_client::KvClient<Channel> {
        pb::kv_client::KvClient::new(channel).max_decoding_message_size(MAX_ANSWER)
    }

    /// One key, if it exists.
    pub async fn get(&self, key: &[u8]) -> Result<Option<pb::KeyValue>, EtcdError> {
        let request = pb::RangeRequest {
            key: key.to_vec(),
            ..Default::default()
        };
        let answer = self
            .call("read a key", |ch| {
                let r = self.request(request.clone());
                async move { Self::kv(ch).range(r).await }
            })
            .await?
            .into_inner();
        Ok(answer.kvs.into_iter().next())
    }

    /// Every key under `prefix`, in key order, as of one revision, which is
    /// returned with them (the revision to watch from, plus one).
    pub async fn range_prefix(&self, prefix: &[u8]) -> Result<(Vec<pb::KeyValue>, i64), EtcdError> {
        let end = prefix_end(prefix);
        let mut out = Vec::new();
        let mut from = prefix.to_vec();
        let mut revision = 0;
        loop {
            let request = pb::RangeRequest {
                key: from.clone(),
                range_end: end.clone(),
                limit: PAGE,
                revision,
                ..Default::default()
            };
            let answer = self
                .call("read the store", |ch| {
                    let r = self.request(request.clone());
                    async move { Self::kv(ch).range(r).await }
                })
                .await?
                .into_inner();
            if revision == 0 {
                revision = answer.header.as_ref().map_or(0, |h| h.revision);
            }
            let more = answer.more;
            if let Some(last) = answer.kvs.last() {
                from = last.key.clone();
                from.push(0);
            }
            out.extend(answer.kvs);
            if !more {
                return Ok((out, revision));
            }
        }
    }

    /// A transaction, on the first member that can commit it.
    pub async fn txn(&self, txn: pb::TxnRequest) -> Result<pb::TxnResponse, EtcdError> {
        let bytes = prost::Message::encoded_len(&txn);
        let ops = txn.success.len();
        self.call("commit a transaction", |ch| {
            let r = self.request(txn.clone());
            async move { Self::kv(ch).txn(r).await }
        })
        .await
        .map(tonic::Response::into_inner)
        .map_err(|e| match e {
            EtcdError::TooLarge { detail, .. } => EtcdError::TooLarge { bytes, ops, detail },
            other => other,
        })
    }

    /// Sends requests first to the member that is etcd's raft leader, if
    /// one says which: a write sent to a follower is forwarded to the
    /// leader, one more hop on every commit (a quarter of a small
    /// transaction's time on a local cluster). Asks every member at once;
    /// one that does not answer within a second is left out. Whether the
    /// leader was found.
    pub async fn prefer_raft_leader(&self) -> bool {
        let mut asks = tokio::task::JoinSet::new();
        for (at, (_, channel)) in self.inner.members.iter().enumerate() {
            let r = self.request(pb::StatusRequest {});
            let mut m = pb::maintenance_client::MaintenanceClient::new(channel.clone());
            asks.spawn(async move {
                match tokio::time::timeout(Duration::from_secs(1), m.status(r)).await {
                    Ok(Ok(a)) => {
                        let a = a.into_inner();
                        Some((at, a.header.map_or(0, |h| h.member_id), a.leader))
                    }
                    _ => None,
                }
            });
        }
        let answers: Vec<(usize, u64, u64)> = asks.join_all().await.into_iter().flatten().collect();
        let leader = answers
            .iter()
            .find(|(_, me, leader)| *me != 0 && me == leader);
        match leader {
            Some((at, _, _)) => {
                self.answered(*at);
                true
            }
            None => false,
        }
    }

    /// Drops etcd's history of every key before `revision` (the latest
    /// values stay). A revision compacted already is not an error.
    pub async fn compact(&self, revision: i64) -> Result<(), EtcdError> {
        let answer = self
            .call("compact the store's history", |ch| {
                let r = self.request(pb::CompactionRequest {
                    revision,
                    physical: false,
                });
                async move { Self::kv(ch).compact(r).await }
            })
            .await;
        match answer {
            Ok(_) | Err(EtcdError::Compacted { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The store's current revision (a read of one key, counted only).
    pub async fn revision(&self) -> Result<i64, EtcdError> {
        let answer = self
            .call("read the store's revision", |ch| {
                let r = self.request(pb::RangeRequest {
                    key: vec![0],
                    count_only: true,
                    ..Default::default()
                });
                async move { Self::kv(ch).range(r).await }
            })
            .await?
            .into_inner();
        Ok(answer.header.map_or(0, |h| h.revision))
    }

    /// A lease of `ttl` seconds: its id and the TTL etcd granted.
    pub async fn grant(&self, ttl: i64) -> Result<(i64, i64), EtcdError> {
        let answer = self
            .call("grant a lease", |ch| {
                let r = self.request(pb::LeaseGrantRequest { ttl, id: 0 });
                async move { pb::lease_client::LeaseClient::new(ch).lease_grant(r).await }
            })
            .await?
            .into_inner();
        if !answer.error.is_empty() {
            return Err(EtcdError::Other {
                what: "grant a lease".into(),
                detail: answer.error,
            });
        }
        Ok((answer.id, answer.ttl))
    }

    /// Ends a lease now (its keys go with it).
    pub async fn revoke(&self, lease: i64) -> Result<(), EtcdError> {
        self.call("revoke a lease", |ch| {
            let r = self.request(pb::LeaseRevokeRequest { id: lease });
            async move { pb::lease_client::LeaseClient::new(ch).lease_revoke(r).await }
        })
        .await
        .map(|_| ())
    }

    /// One keepalive of `lease` on one member: the TTL left (0 or less: the
    /// lease is gone).
    pub async fn keep_alive_once(&self, lease: i64) -> Result<i64, EtcdError> {
        let answer = self
            .call("keep the lease alive", |ch| {
                let r = self.request(tokio_stream::once(pb::LeaseKeepAliveRequest { id: lease }));
                async move {
                    let mut stream = pb::lease_client::LeaseClient::new(ch)
                        .lease_keep_alive(r)
                        .await?
                        .into_inner();
                    match stream.message().await? {
                        Some(answer) => Ok(answer),
                        None => Err(Status::unavailable("the keepalive stream ended")),
                    }
                }
            })
            .await?;
        Ok(answer.ttl)
    }
}

/// The end of the range of keys that start with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte 0xff: to the end of the key space.
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_ends_at_its_last_byte_plus_one() {
        assert_eq!(prefix_end(b"/qmesh/"), b"/qmesh0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff"), vec![0]);
    }

    #[test]
    fn no_endpoints_is_a_clear_error() {
        let err = Client::new(Options::new(vec![])).unwrap_err();
        assert!(err.to_string().contains("[store] endpoints"), "{err}");
    }
}
