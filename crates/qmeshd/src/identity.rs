//! Who is on the other end: the caller's uid and gid, with their names.
//!
//! On the daemon's own socket the kernel says (SO_PEERCRED). From other
//! hosts, a request arrives on the agents' TCP port, relayed by that
//! host's agent, which read its caller's credentials from its own socket
//! the same way and names them in the request's metadata (see
//! `qmesh-agent`'s `relay.rs`). Those names are believed only from an
//! agent, as `crate::trust` decides: over a connection whose certificate
//! from the cluster CA names the host, or with a proof of the cluster
//! key for this caller. The host must then be one the server lets in
//! (`submit_hosts`, compute hosts, `acl_hosts`), as the scheduler task
//! last published it. Refusals are logged, at most once a minute per
//! address and reason.
//!
//! Names are cached: a submission burst must not read /etc/passwd per
//! request.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::unistd::{Gid, Group, Uid, User};
use qmesh_core::server::ServerAttrs;
use qmesh_proto::relay as relay_keys;
use qmesh_proto::trust as proof_keys;
use tokio::sync::watch;
use tonic::transport::server::UdsConnectInfo;
use tonic::{Request, Status};
use tracing::warn;

use crate::tls::AgentConn;
use crate::trust::{RelayProof, RelayedCaller, Trust};

/// At most one refusal logged per address and reason in this time.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(60);

/// The caller; the role is worked out by the task.
#[derive(Clone, Debug)]
pub struct Peer {
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    pub group: String,
    /// The host whose agent relayed the request; `None` on the daemon's
    /// own socket.
    pub host: Option<String>,
}

/// A caller already identified on this request, by the agents' port's
/// interceptor: the handler's own look takes it as it is, for a relayed
/// request's proof of the key is good once. Only the daemon's own code
/// puts it in a request's extensions; nothing on the wire can.
#[derive(Clone, Debug)]
pub struct Vouched(pub Peer);

/// Which hosts may relay, as the scheduler task last published it.
#[derive(Clone, Debug, Default)]
pub struct HostGate {
    pub server: ServerAttrs,
    /// Hosts that have nodes in the node sets.
    pub compute_hosts: std::collections::HashSet<String>,
}

impl HostGate {
    pub fn check(&self, host: &str) -> Result<(), String> {
        let runs_nodes = self.compute_hosts.contains(host);
        qmesh_core::access::acl::check_relayed_host(&self.server, host, runs_nodes)
    }
}

pub struct Identity {
    users: Mutex<HashMap<u32, String>>,
    groups: Mutex<HashMap<u32, String>>,
    trust: Arc<Trust>,
    gate: watch::Receiver<Arc<HostGate>>,
    refusals: Mutex<HashMap<(Option<SocketAddr>, &'static str), Instant>>,
}

impl Default for Identity {
    fn default() -> Self {
        Identity::new(
            Arc::new(Trust::local_only()),
            watch::channel(Arc::new(HostGate::default())).1,
        )
    }
}

impl Identity {
    pub fn new(trust: Arc<Trust>, gate: watch::Receiver<Arc<HostGate>>) -> Identity {
        Identity {
            users: Mutex::default(),
            groups: Mutex::default(),
            trust,
            gate,
            refusals: Mutex::default(),
        }
    }

    pub fn peer<T>(&self, request: &Request<T>) -> Result<Peer, Status> {
        let extensions = request.extensions();
        if let Some(Vouched(peer)) = extensions.get::<Vouched>() {
            return Ok(peer.clone());
        }
        if let Some(info) = extensions.get::<UdsConnectInfo>() {
            let cred = info.peer_cred.ok_or_else(|| {
                Status::unauthenticated(
                    "the daemon could not read the caller's credentials from the socket",
                )
            })?;
            let (uid, gid) = (cred.uid(), cred.gid());
            return Ok(Peer {
                uid,
                gid,
                user: self.user_name(uid),
                group: self.group_name(gid),
                host: None,
            });
        }
        let Some(conn) = extensions.get::<AgentConn>() else {
            return Err(Status::unauthenticated(
                "the daemon cannot tell how this request came; it takes commands on its own \
                 socket and, relayed by agents, on the agents' port",
            ));
        };
        self.relayed(request.metadata(), conn)
    }

    /// The identity an agent relayed, if the request proves it comes from
    /// one and its host may use the server.
    fn relayed(
        &self,
        meta: &tonic::metadata::MetadataMap,
        conn: &AgentConn,
    ) -> Result<Peer, Status> {
        let addr = conn.remote;
        let text = |key: &str| meta.get(key).and_then(|v| v.to_str().ok());
        let number = |key: &str| text(key).and_then(|v| v.parse::<u32>().ok());
        let caller = RelayedCaller {
            host: text(relay_keys::HOST).unwrap_or_default(),
            uid: number(relay_keys::UID).unwrap_or(u32::MAX),
            gid: number(relay_keys::GID).unwrap_or(u32::MAX),
            user: text(relay_keys::USER).unwrap_or_default(),
            group: text(relay_keys::GROUP).unwrap_or_default(),
        };
        let offered = RelayProof {
            nonce: text(proof_keys::NONCE_HEADER),
            proof: text(proof_keys::PROOF_HEADER),
            legacy_key: meta.contains_key(relay_keys::LEGACY_KEY),
        };
        if let Err(refusal) = self.trust.vouch_relay(&caller, &offered, conn) {
            self.log_refusal(
                addr,
                refusal.reason(),
                text(relay_keys::HOST),
                text(relay_keys::USER),
            );
            return Err(Status::unauthenticated(format!(
                "commands from other hosts must come through the qmesh-agent of that host, \
                 which proves the cluster key or holds its host's certificate; run the command \
                 on a host with an agent (see README, \"Login nodes\"): {refusal}"
            )));
        }
        let (Some(host), Some(uid), Some(gid)) = (
            text(relay_keys::HOST).filter(|h| !h.is_empty()),
            number(relay_keys::UID),
            number(relay_keys::GID),
        ) else {
            return Err(Status::invalid_argument(
                "a relayed request must name its host, uid and gid; is the agent of that host \
                 the same version as the daemon?",
            ));
        };
        if let Err(why) = self.gate.borrow().check(host) {
            self.log_refusal(
                addr,
                "a host the server does not let in",
                Some(host),
                text(relay_keys::USER),
            );
            return Err(Status::permission_denied(why));
        }
        let user = text(relay_keys::USER)
            .filter(|u| !u.is_empty())
            .map_or_else(|| self.user_name(uid), str::to_string);
        let group = text(relay_keys::GROUP)
            .filter(|g| !g.is_empty())
            .map_or_else(|| self.group_name(gid), str::to_string);
        Ok(Peer {
            uid,
            gid,
            user,
            group,
            host: Some(host.to_string()),
        })
    }

    fn log_refusal(
        &self,
        addr: Option<SocketAddr>,
        why: &'static str,
        host: Option<&str>,
        user: Option<&str>,
    ) {
        let mut seen = self.refusals.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let due = seen
            .get(&(addr, why))
            .is_none_or(|last| now.duration_since(*last) >= REFUSAL_LOG_EVERY);
        if due {
            if seen.len() > 4096 {
                seen.clear();
            }
            seen.insert((addr, why), now);
            let addr = addr.map_or_else(|| "unknown".to_string(), |a| a.to_string());
            warn!(
                %addr,
                host = host.unwrap_or("-"),
                user = user.unwrap_or("-"),
                "refused a relayed request: {why} (logged at most once a minute per address and reason)"
            );
        }
    }

    pub fn user_name(&self, uid: u32) -> String {
        let mut cache = self.users.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .entry(uid)
            .or_insert_with(|| match User::from_uid(Uid::from_raw(uid)) {
                Ok(Some(user)) => user.name,
                _ => uid.to_string(),
            })
            .clone()
    }

    pub fn group_name(&self, gid: u32) -> String {
        let mut cache = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .entry(gid)
            .or_insert_with(|| match Group::from_gid(Gid::from_raw(gid)) {
                Ok(Some(group)) => group.name,
                _ => gid.to_string(),
            })
            .clone()
    }
}

/// The group a job runs with when it asks for `group` (`qsub -W
/// group_list=`): its name and gid, if `user` is a member of it (as their
/// primary group or a supplementary one); else why not, in words.
pub fn member_group(user: &str, primary_gid: u32, group: &str) -> Result<(String, u32), String> {
    let found = match group.parse::<u32>() {
        Ok(gid) => Group::from_gid(Gid::from_raw(gid)),
        Err(_) => Group::from_name(group),
    };
    let found = match found {
        Ok(Some(g)) => g,
        Ok(None) => {
            return Err(format!(
                "-W group_list={group}: there is no group {group} on the server; see getent group"
            ));
        }
        Err(e) => {
            return Err(format!(
                "-W group_list={group}: cannot look up the group: {e}"
            ));
        }
    };
    let gid = found.gid.as_raw();
    let member = gid == primary_gid
        || found.mem.iter().any(|m| m == user)
        || std::ffi::CString::new(user)
            .ok()
            .and_then(|name| nix::unistd::getgrouplist(&name, Gid::from_raw(primary_gid)).ok())
            .is_some_and(|groups| groups.iter().any(|g| g.as_raw() == gid));
    if member {
        Ok((found.name, gid))
    } else {
        Err(format!(
            "-W group_list={group}: user {user} is not a member of group {}; see id {user}, or ask for a group you are in",
            found.name
        ))
    }
}
