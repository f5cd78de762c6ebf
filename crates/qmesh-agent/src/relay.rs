//! The commands' way to the daemon from any host with an agent: login
//! nodes (`--submit-only`) and compute nodes (jobs submit jobs).
//!
//! The agent serves the `Jobs` and `Admin` services on a local Unix socket
//! and forwards each call, as it is, over one HTTP/2 connection to the
//! daemon's agents' port. The kernel tells it who called (SO_PEERCRED);
//! it strips whatever `x-qmesh-*` metadata the caller sent and names the
//! caller, its own host and the cluster key in their place
//! (`qmesh_proto::relay`). The daemon believes those names only from an
//! agent, and only for hosts it lets in. Nothing is decoded here: every
//! command, streaming or not, passes through with the daemon's answers
//! and errors unchanged, so the commands print the same on every host.
//!
//! Why this and not MUNGE: docs/ARCHITECTURE.md, "Login nodes".
//!
//! With standby daemons (docs/HA.md) the relay knows them all and sends to
//! the one that last served; a daemon out of reach, or a standby's refusal
//! (which names the leader in `qmesh-leader`), moves it on for the next
//! call. The call itself gets the refusal: a command retries (qsub with
//! the same submission id, so never twice).

use std::marker::PhantomData;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use nix::unistd::{Gid, Group, Uid, User};
use qmesh_proto::relay as keys;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::body::Body;
use tonic::codegen::{BoxFuture, Context, Poll, Service, http};
use tonic::server::NamedService;
use tonic::transport::server::UdsConnectInfo;
use tonic::transport::{Channel, Server};
use tracing::{debug, error, info};

use crate::error::{AgentError, Result};

/// What the relay adds to every call: this host and the cluster key.
struct Vouch {
    host: String,
    key: Option<http::HeaderValue>,
}

/// The daemons, and the one calls go to.
struct Daemons {
    list: Vec<(String, Channel)>,
    current: AtomicUsize,
}

impl Daemons {
    fn current(&self) -> (usize, &str, Channel) {
        let at = self.current.load(Ordering::Relaxed) % self.list.len();
        (at, &self.list[at].0, self.list[at].1.clone())
    }

    /// Calls go elsewhere from now on: to the leader a standby named, if
    /// it is on the list, else to the next after `failed`.
    fn move_on(&self, failed: usize, leader: Option<&str>) {
        let named = leader.and_then(|url| {
            self.list
                .iter()
                .position(|(s, _)| s.trim_end_matches('/') == url.trim_end_matches('/'))
        });
        let next = named.unwrap_or((failed + 1) % self.list.len());
        let _ = self
            .current
            .compare_exchange(failed, next, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// One service's relay; `S` names which.
pub struct Relay<S> {
    daemons: Arc<Daemons>,
    vouch: Arc<Vouch>,
    service: PhantomData<fn() -> S>,
}

impl<S> Clone for Relay<S> {
    fn clone(&self) -> Self {
        Relay {
            daemons: self.daemons.clone(),
            vouch: self.vouch.clone(),
            service: PhantomData,
        }
    }
}

pub struct JobsApi;
pub struct AdminApi;

impl NamedService for Relay<JobsApi> {
    const NAME: &'static str = "qmesh.v1.Jobs";
}

impl NamedService for Relay<AdminApi> {
    const NAME: &'static str = "qmesh.v1.Admin";
}

impl<S> Service<http::Request<Body>> for Relay<S> {
    type Response = http::Response<Body>;
    type Error = std::convert::Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<std::result::Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let cred = request
            .extensions()
            .get::<UdsConnectInfo>()
            .and_then(|info| info.peer_cred);
        let vouch = self.vouch.clone();
        let daemons = self.daemons.clone();
        Box::pin(async move {
            let Some(cred) = cred else {
                return Ok(tonic::Status::unauthenticated(
                    "the agent could not read the caller's credentials from its socket",
                )
                .into_http());
            };
            let (mut parts, body) = request.into_parts();
            name_caller(&mut parts.headers, &vouch, cred.uid(), cred.gid());
            debug!(uid = cred.uid(), path = %parts.uri.path(), "relaying");
            // A stream (a job's task) goes through as it comes, to one
            // daemon. Any other call is one message: held whole, it can be
            // sent again to the next daemon when one is out of reach or
            // stands by.
            if parts.uri.path().ends_with("/Attach") {
                let (at, server, channel) = daemons.current();
                let server = server.to_string();
                return Ok(forward(&daemons, at, &server, channel, http::Request::from_parts(parts, body)).await);
            }
            let bytes = match http_body_util::BodyExt::collect(body).await {
                Ok(collected) => collected.to_bytes(),
                Err(e) => {
                    return Ok(tonic::Status::cancelled(format!(
                        "the command's request could not be read: {e}"
                    ))
                    .into_http());
                }
            };
            let tries = daemons.list.len();
            let mut answer = None;
            for _ in 0..tries {
                let (at, server, channel) = daemons.current();
                let server = server.to_string();
                let mut request = http::Request::new(Body::new(http_body_util::Full::new(bytes.clone())));
                *request.method_mut() = parts.method.clone();
                *request.uri_mut() = parts.uri.clone();
                *request.version_mut() = parts.version;
                *request.headers_mut() = parts.headers.clone();
                let response = forward(&daemons, at, &server, channel, request).await;
                let elsewhere = response.headers().contains_key("qmesh-leader")
                    || standby_refusal(response.headers())
                    || unreached(response.headers());
                answer = Some(response);
                if !elsewhere {
                    break;
                }
            }
            let mut answer = answer.unwrap_or_else(|| {
                tonic::Status::unavailable("no qmeshd to relay to").into_http()
            });
            answer.headers_mut().remove(UNREACHED);
            Ok(answer)
        })
    }
}

/// Sends `request` to daemon `at`; on the way, moves the relay on if that
/// daemon is out of reach or stands by.
async fn forward(
    daemons: &Daemons,
    at: usize,
    server: &str,
    mut channel: Channel,
    request: http::Request<Body>,
) -> http::Response<Body> {
    let unreachable = |e: tonic::transport::Error| {
        daemons.move_on(at, None);
        let mut response = tonic::Status::unavailable(format!(
            "cannot reach qmeshd at {server} from this host's agent: {e}; is the daemon running?"
        ))
        .into_http();
        response
            .headers_mut()
            .insert(UNREACHED, http::HeaderValue::from_static("1"));
        response
    };
    if let Err(e) = std::future::poll_fn(|cx| channel.poll_ready(cx)).await {
        return unreachable(e);
    }
    match channel.call(request).await {
        Ok(response) => {
            if let Some(leader) = response.headers().get("qmesh-leader") {
                daemons.move_on(at, leader.to_str().ok());
            } else if standby_refusal(response.headers()) {
                daemons.move_on(at, None);
            }
            response
        }
        Err(e) => unreachable(e),
    }
}

/// Marks the relay's own "cannot reach" answer, which it may replace by
/// the next daemon's.
const UNREACHED: &str = "x-qmesh-relay-unreached";

fn unreached(headers: &http::HeaderMap) -> bool {
    headers.contains_key(UNREACHED)
}

/// Whether an answer is a standby's refusal with no leader named (an
/// election under way): `grpc-status` 14 in the headers, "stands by".
fn standby_refusal(headers: &http::HeaderMap) -> bool {
    headers.get("grpc-status").is_some_and(|s| s == "14")
        && headers
            .get("grpc-message")
            .and_then(|m| m.to_str().ok())
            .is_some_and(|m| m.contains("stands%20by") || m.contains("stands by"))
}

/// Replaces whatever the caller said about itself with what the kernel
/// said, and vouches with the host and the key.
fn name_caller(headers: &mut http::HeaderMap, vouch: &Vouch, uid: u32, gid: u32) {
    let forged: Vec<http::HeaderName> = headers
        .keys()
        .filter(|name| name.as_str().starts_with(keys::PREFIX))
        .cloned()
        .collect();
    for name in forged {
        headers.remove(name);
    }
    let mut set = |key: &'static str, value: &str| {
        if let Ok(value) = http::HeaderValue::from_str(value) {
            headers.insert(key, value);
        }
    };
    set(keys::HOST, &vouch.host);
    set(keys::UID, &uid.to_string());
    set(keys::GID, &gid.to_string());
    if let Ok(Some(user)) = User::from_uid(Uid::from_raw(uid)) {
        set(keys::USER, &user.name);
    }
    if let Ok(Some(group)) = Group::from_gid(Gid::from_raw(gid)) {
        set(keys::GROUP, &group.name);
    }
    if let Some(key) = &vouch.key {
        headers.insert(keys::KEY, key.clone());
    }
}

/// Binds `socket` and serves the relay on it, in a task of the current
/// runtime, until the process ends. The connection to the daemon is made
/// at the first call, and again after it breaks.
pub fn start(
    socket: &Path,
    server: &str,
    tls: Option<tonic::transport::ClientTlsConfig>,
    host: &str,
    cluster_key: &str,
) -> Result<tokio::task::JoinHandle<()>> {
    let mut list = Vec::new();
    for one in crate::session::servers(server) {
        let channel = qmesh_proto::endpoint::lazy_url_tls(one, tls.clone())
            .map_err(|e| AgentError::Config(format!("--server {one}: {e}")))?;
        list.push((one.to_string(), channel));
    }
    let daemons = Arc::new(Daemons {
        list,
        current: AtomicUsize::new(0),
    });
    let key = if cluster_key.is_empty() {
        None
    } else {
        Some(
            http::HeaderValue::from_str(cluster_key)
                .map(|mut v| {
                    v.set_sensitive(true);
                    v
                })
                .map_err(|_| {
                    AgentError::Config(
                        "the cluster key holds characters that cannot travel in a request; \
                 use printable ASCII"
                            .into(),
                    )
                })?,
        )
    };
    let vouch = Arc::new(Vouch {
        host: host.to_string(),
        key,
    });
    let listener = bind(socket)?;
    info!(socket = %socket.display(), "relaying this host's commands to the daemon");
    let jobs = Relay::<JobsApi> {
        daemons: daemons.clone(),
        vouch: vouch.clone(),
        service: PhantomData,
    };
    let admin = Relay::<AdminApi> {
        daemons,
        vouch,
        service: PhantomData,
    };
    let shown = socket.display().to_string();
    Ok(tokio::spawn(async move {
        if let Err(e) = Server::builder()
            .add_service(jobs)
            .add_service(admin)
            .serve_with_incoming(UnixListenerStream::new(listener))
            .await
        {
            error!(socket = %shown, error = %e, "the relay stopped; this host's commands cannot reach the daemon");
        }
    }))
}

/// Binds the socket anyone on the host may use (the daemon decides what
/// each caller may do); a socket left by a dead process is replaced, one
/// something still serves is not.
fn bind(path: &Path) -> Result<tokio::net::UnixListener> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
        && !parent.exists()
    {
        std::fs::create_dir_all(parent)
            .map_err(|e| AgentError::io("make the directory of the relay socket", parent, e))?;
        let _ = std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755));
    }
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(AgentError::Config(format!(
                "something already serves {} (a daemon on this host, or another agent); \
                 give --relay-socket another path, or --no-relay",
                path.display()
            )));
        }
        std::fs::remove_file(path)
            .map_err(|e| AgentError::io("remove the stale socket", path, e))?;
    }
    let listener = tokio::net::UnixListener::bind(path)
        .map_err(|e| AgentError::io("listen for commands on", path, e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))
        .map_err(|e| AgentError::io("set the permissions of", path, e))?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_caller_says_about_itself_is_replaced() {
        let mut headers = http::HeaderMap::new();
        headers.insert(keys::UID, http::HeaderValue::from_static("0"));
        headers.insert(keys::HOST, http::HeaderValue::from_static("adm1"));
        headers.insert("x-qmesh-anything", http::HeaderValue::from_static("x"));
        headers.insert("te", http::HeaderValue::from_static("trailers"));
        let vouch = Vouch {
            host: "login1".into(),
            key: Some(http::HeaderValue::from_static("k")),
        };
        name_caller(&mut headers, &vouch, 4242, 4343);
        assert_eq!(headers[keys::UID], "4242");
        assert_eq!(headers[keys::GID], "4343");
        assert_eq!(headers[keys::HOST], "login1");
        assert_eq!(headers[keys::KEY], "k");
        assert!(!headers.contains_key("x-qmesh-anything"));
        assert_eq!(headers["te"], "trailers");
    }
}
