//! The commands' way to the daemon from any host with an agent: login
//! nodes (`--submit-only`) and compute nodes (jobs submit jobs).
//!
//! The agent serves the `Jobs` and `Admin` services on a local Unix socket
//! and forwards each call, as it is, over one HTTP/2 connection to the
//! daemon's agents' port. The kernel tells it who called (SO_PEERCRED);
//! it strips whatever `x-qmesh-*` metadata the caller sent and names the
//! caller and its own host in their place (`qmesh_proto::relay`). The
//! daemon believes those names only from an agent, and only for hosts it
//! lets in: over the connection's certificate from the cluster CA, which
//! names this host, or, without one, a proof of the cluster key for this
//! caller over a nonce the daemon gave for it (one more round trip per
//! command; `crate::trust`). The key itself never travels. Nothing is decoded here: every
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
use qmesh_proto::trust as proof_keys;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::body::Body;
use tonic::codegen::{BoxFuture, Context, Poll, Service, http};
use tonic::server::NamedService;
use tonic::transport::server::UdsConnectInfo;
use tonic::transport::{Channel, Server};
use tracing::{debug, error, info};

use crate::error::{AgentError, Result};
use crate::trust::{Linked, Trust};

/// What the relay adds to every call: this host, and what vouches for it.
struct Vouch {
    host: String,
    server: String,
    trust: Arc<Trust>,
    linked: Linked,
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
            let (uid, gid) = (cred.uid(), cred.gid());
            let (user, group) = name_caller(request.headers_mut(), &vouch, uid, gid);
            debug!(uid, path = %request.uri().path(), "relaying");
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
            if vouch.trust.relays_with_proofs() {
                let proven = vouch
                    .trust
                    .relay_proof(&vouch.linked, uid, gid, &user, &group)
                    .await;
                match proven {
                    Ok((nonce, proof)) => {
                        let headers = request.headers_mut();
                        for (name, value) in [
                            (proof_keys::NONCE_HEADER, nonce),
                            (proof_keys::PROOF_HEADER, proof),
                        ] {
                            if let Ok(value) = http::HeaderValue::from_str(&value) {
                                headers.insert(name, value);
                            }
                        }
                    }
                    Err(e) => {
                        return Ok(tonic::Status::unavailable(format!(
                            "this host's agent could not prove the cluster key to qmeshd at {}: {e}",
                            vouch.server
                        ))
                        .into_http());
                    }
                }
            }
            match channel.call(request).await {
                Ok(response) => Ok(response),
                Err(e) => unreachable(e),
            }
        })
    }
}

/// Replaces whatever the caller said about itself with what the kernel
/// said, and names this host. Returns the caller's user and group names
/// as sent (empty where the host has none).
fn name_caller(
    headers: &mut http::HeaderMap,
    vouch: &Vouch,
    uid: u32,
    gid: u32,
) -> (String, String) {
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
    let mut named = |key: &'static str, name: Option<String>| match name {
        Some(name) if http::HeaderValue::from_str(&name).is_ok() => {
            set(key, &name);
            name
        }
        _ => String::new(),
    };
    let user = named(
        keys::USER,
        User::from_uid(Uid::from_raw(uid))
            .ok()
            .flatten()
            .map(|u| u.name),
    );
    let group = named(
        keys::GROUP,
        Group::from_gid(Gid::from_raw(gid))
            .ok()
            .flatten()
            .map(|g| g.name),
    );
    (user, group)
}

/// Binds `socket` and serves the relay on it, in a task of the current
/// runtime, until the process ends. The connection to the daemon is made
/// at the first call, and again after it breaks.
pub fn start(socket: &Path, trust: Arc<Trust>) -> Result<tokio::task::JoinHandle<()>> {
    let linked = trust.lazy()?;
    let channel = linked.channel.clone();
    let vouch = Arc::new(Vouch {
        host: trust.host().to_string(),
        server: trust.server().to_string(),
        trust,
        linked,
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
    fn what_a_caller_says_about_itself_is_replaced_and_no_key_is_sent() {
        let mut headers = http::HeaderMap::new();
        headers.insert(keys::UID, http::HeaderValue::from_static("0"));
        headers.insert(keys::HOST, http::HeaderValue::from_static("adm1"));
        headers.insert(keys::LEGACY_KEY, http::HeaderValue::from_static("guess"));
        headers.insert(
            proof_keys::PROOF_HEADER,
            http::HeaderValue::from_static("00"),
        );
        headers.insert("x-qmesh-anything", http::HeaderValue::from_static("x"));
        headers.insert("te", http::HeaderValue::from_static("trailers"));
        let key = qmesh_proto::trust::ClusterKey::from_file_text("k").ok();
        let trust = Trust::new(
            "http://d:1",
            "login1",
            key,
            &crate::trust::TlsFlags::default(),
            Path::new("/nonexistent"),
        )
        .unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let linked = runtime.block_on(async { trust.lazy().unwrap() });
        let vouch = Vouch {
            host: "login1".into(),
            server: "http://d:1".into(),
            trust: Arc::new(trust),
            linked,
        };
        let (user, _) = name_caller(&mut headers, &vouch, 0, 0);
        assert_eq!(user, "root");
        let (_, _) = name_caller(&mut headers, &vouch, 4242, 4343);
        assert_eq!(headers[keys::UID], "4242");
        assert_eq!(headers[keys::GID], "4343");
        assert_eq!(headers[keys::HOST], "login1");
        for gone in [
            keys::LEGACY_KEY,
            proof_keys::PROOF_HEADER,
            "x-qmesh-anything",
        ] {
            assert!(!headers.contains_key(gone), "{gone}");
        }
        assert_eq!(headers["te"], "trailers");
    }
}
