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

use std::marker::PhantomData;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

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
    server: String,
}

/// One service's relay; `S` names which.
pub struct Relay<S> {
    channel: Channel,
    vouch: Arc<Vouch>,
    service: PhantomData<fn() -> S>,
}

impl<S> Clone for Relay<S> {
    fn clone(&self) -> Self {
        Relay {
            channel: self.channel.clone(),
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

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        let cred = request
            .extensions()
            .get::<UdsConnectInfo>()
            .and_then(|info| info.peer_cred);
        let vouch = self.vouch.clone();
        let mut channel = self.channel.clone();
        Box::pin(async move {
            let Some(cred) = cred else {
                return Ok(tonic::Status::unauthenticated(
                    "the agent could not read the caller's credentials from its socket",
                )
                .into_http());
            };
            name_caller(request.headers_mut(), &vouch, cred.uid(), cred.gid());
            debug!(uid = cred.uid(), path = %request.uri().path(), "relaying");
            let unreachable = |e: tonic::transport::Error| {
                Ok(tonic::Status::unavailable(format!(
                    "cannot reach qmeshd at {} from this host's agent: {e}; is the daemon running?",
                    vouch.server
                ))
                .into_http())
            };
            if let Err(e) = std::future::poll_fn(|cx| channel.poll_ready(cx)).await {
                return unreachable(e);
            }
            match channel.call(request).await {
                Ok(response) => Ok(response),
                Err(e) => unreachable(e),
            }
        })
    }
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
    let channel = qmesh_proto::endpoint::lazy_url_tls(server, tls)
        .map_err(|e| AgentError::Config(format!("--server {server}: {e}")))?;
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
        server: server.to_string(),
    });
    let listener = bind(socket)?;
    info!(socket = %socket.display(), "relaying this host's commands to the daemon");
    let jobs = Relay::<JobsApi> {
        channel: channel.clone(),
        vouch: vouch.clone(),
        service: PhantomData,
    };
    let admin = Relay::<AdminApi> {
        channel,
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
            server: "http://d:1".into(),
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
