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
//!
//! With standby daemons (docs/HA.md) the relay knows them all and sends to
//! the one that last served; a daemon out of reach, or a standby's refusal
//! (which names the leader in `qmesh-leader`), moves it on. A command's
//! request (not a job's task stream) is held whole and sent again to the
//! next daemon at once; qsub's submission id makes that one job.

use std::marker::PhantomData;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use nix::unistd::{Gid, Group, Uid, User};
use qmesh_proto::relay as keys;
use qmesh_proto::trust as proof_keys;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::body::Body;
use tonic::codegen::{BoxFuture, Context, Poll, Service, http};
use tonic::server::NamedService;
use tonic::transport::Server;
use tonic::transport::server::UdsConnectInfo;
use tracing::{debug, error, info};

use crate::error::{AgentError, Result};
use crate::trust::{Linked, Trust};

/// What the relay adds to every call: this host.
struct Vouch {
    host: String,
}

/// One daemon: its channel, and how this agent proves itself to it.
struct Daemon {
    trust: Arc<Trust>,
    linked: Linked,
}

/// The daemons, and the one calls go to.
struct Daemons {
    list: Vec<Daemon>,
    current: AtomicUsize,
}

impl Daemons {
    fn current(&self) -> (usize, &Daemon) {
        let at = self.current.load(Ordering::Relaxed) % self.list.len();
        (at, &self.list[at])
    }

    /// Calls go elsewhere from now on: to the leader a standby named, if
    /// it is on the list, else to the next after `failed`.
    fn move_on(&self, failed: usize, leader: Option<&str>) {
        let named = leader.and_then(|url| {
            self.list
                .iter()
                .position(|d| d.trust.server().trim_end_matches('/') == url.trim_end_matches('/'))
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
            let (uid, gid) = (cred.uid(), cred.gid());
            let (mut parts, body) = request.into_parts();
            let caller = name_caller(&mut parts.headers, &vouch, uid, gid);
            debug!(uid, path = %parts.uri.path(), "relaying");
            let caller = Caller {
                uid,
                gid,
                names: caller,
            };
            // A stream (a job's task) goes through as it comes, to one
            // daemon. Any other call is one message: held whole, it can be
            // sent again to the next daemon when one is out of reach or
            // stands by.
            if parts.uri.path().ends_with("/Attach") {
                let (at, daemon) = daemons.current();
                let request = http::Request::from_parts(parts, body);
                return Ok(forward(&daemons, at, daemon, &caller, request).await);
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
            let mut answer = None;
            for _ in 0..daemons.list.len() {
                let (at, daemon) = daemons.current();
                let mut request =
                    http::Request::new(Body::new(http_body_util::Full::new(bytes.clone())));
                *request.method_mut() = parts.method.clone();
                *request.uri_mut() = parts.uri.clone();
                *request.version_mut() = parts.version;
                *request.headers_mut() = parts.headers.clone();
                let response = forward(&daemons, at, daemon, &caller, request).await;
                let elsewhere =
                    not_leading(response.headers()) || response.headers().contains_key(UNREACHED);
                answer = Some(response);
                if !elsewhere {
                    break;
                }
            }
            let mut answer = answer
                .unwrap_or_else(|| tonic::Status::unavailable("no qmeshd to relay to").into_http());
            answer.headers_mut().remove(UNREACHED);
            Ok(answer)
        })
    }
}

/// Who called, as the kernel said and as the request names them.
struct Caller {
    uid: u32,
    gid: u32,
    names: (String, String),
}

/// Sends `request` to `daemon` (number `at`), with a proof of the cluster
/// key where its wire needs one; moves the relay on if that daemon is out
/// of reach or stands by.
async fn forward(
    daemons: &Daemons,
    at: usize,
    daemon: &Daemon,
    caller: &Caller,
    mut request: http::Request<Body>,
) -> http::Response<Body> {
    let server = daemon.trust.server();
    let unreachable = |e: &dyn std::fmt::Display| {
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
    let mut channel = daemon.linked.channel.clone();
    if let Err(e) = std::future::poll_fn(|cx| channel.poll_ready(cx)).await {
        return unreachable(&e);
    }
    if daemon.trust.relays_with_proofs() {
        let (user, group) = &caller.names;
        let proven = daemon
            .trust
            .relay_proof(&daemon.linked, caller.uid, caller.gid, user, group)
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
            // A standby refuses the challenge too: the next daemon.
            Err(e) => return unreachable(&format!("could not prove the cluster key: {e}")),
        }
    }
    match channel.call(request).await {
        Ok(response) => {
            if not_leading(response.headers()) {
                let leader = response.headers().get("qmesh-leader");
                daemons.move_on(at, leader.and_then(|l| l.to_str().ok()));
            }
            response
        }
        Err(e) => unreachable(&e),
    }
}

/// Marks the relay's own "cannot reach" answer, which the next daemon's
/// may replace.
const UNREACHED: &str = "x-qmesh-relay-unreached";

/// Whether an answer is the refusal of a daemon that does not lead now (a
/// standby, or a leader unsure of its lease): its gate marks it.
fn not_leading(headers: &http::HeaderMap) -> bool {
    headers.contains_key("qmesh-not-leading")
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
/// runtime, until the process ends. The connections to the daemons (one
/// per entry of `--server`) are made at the first call, and again after
/// they break.
pub fn start(socket: &Path, trusts: &[Arc<Trust>]) -> Result<tokio::task::JoinHandle<()>> {
    let mut list = Vec::new();
    for trust in trusts {
        list.push(Daemon {
            linked: trust.lazy()?,
            trust: trust.clone(),
        });
    }
    let host = trusts
        .first()
        .map(|t| t.host().to_string())
        .unwrap_or_default();
    let daemons = Arc::new(Daemons {
        list,
        current: AtomicUsize::new(0),
    });
    let vouch = Arc::new(Vouch { host });
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
        let vouch = Vouch {
            host: "login1".into(),
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
