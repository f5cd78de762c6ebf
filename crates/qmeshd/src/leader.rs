//! Who serves: with the store in etcd, several qmeshd share one queue and
//! one of them leads (docs/HA.md). This module is the daemon's side of
//! that: the role it has ([`Role`]), the gate every service passes (only a
//! leader answers; a standby says who leads), the campaign, and what
//! happens when the term ends.
//!
//! The order of a takeover: the warm copy of the store is kept from the
//! start (`qmesh_store`'s mirror); the campaign wins; the store is fenced
//! on the new term; the copy is brought up to the term's revision (every
//! write of the old leader came before it); the state is loaded from it;
//! the task starts; the gate opens. Agents, whose sessions the old leader
//! lost with it, try the next server on their list and reattach with
//! their running jobs, as after a restart.
//!
//! When the term ends (the lease ran out in etcd, or a write was fenced)
//! the daemon exits at once with [`EXIT_STEPPED_DOWN`]: it has written
//! nothing since (every write is fenced) and starts nothing (a launch
//! waits for its start to be durable). Its service manager starts it
//! again, as a standby. A leader that only cannot renew its lease (etcd
//! unreachable or without quorum) turns read-only, as on a failing disk,
//! and leads on if the lease held.

use std::time::Duration;

use qmesh_etcd::{Election, Standing, Term};
use qmesh_store::EtcdStore;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch};
use tonic::{Request, Status};
use tracing::{error, info, warn};

use crate::event::Event;

/// The exit status of a leader whose term ended (EX_TEMPFAIL): systemd's
/// `Restart=on-failure` starts it again as a standby.
pub const EXIT_STEPPED_DOWN: i32 = 75;

/// How long a new leader waits for its warm copy to reach the term before
/// it reads the store whole instead.
const CATCH_UP: Duration = Duration::from_secs(5);

/// What the election key says about the leader: where to reach it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderInfo {
    pub host: String,
    /// The agents' (and login nodes') URL of this qmeshd, if it has one.
    pub agents: Option<String>,
    pub pid: u32,
}

/// What this daemon is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// Loading its state before its first answer.
    Starting,
    /// Another qmeshd leads (or nobody, for a moment).
    Standby { leader: Option<LeaderInfo> },
    /// It serves; `term` is the election's (0 on the sled store, where
    /// there is no election).
    Leading { term: i64 },
    /// It led, but could not renew its lease within it: another may lead
    /// by now. It answers nothing and has let its agents go, until etcd
    /// says the lease held (it leads on) or is gone (it steps down).
    Unsure { term: i64, why: String },
}

/// The metadata every refusal of the gate carries: a relay or agent that
/// sees it tries the next daemon of its list.
pub const NOT_LEADING: &str = "qmesh-not-leading";

/// The interceptor every service of the daemon passes: a leader lets
/// everything through; otherwise the caller is told why not and, from a
/// standby, who leads (also in the `qmesh-leader` metadata, for agents).
pub fn gate(
    role: watch::Receiver<Role>,
    host: String,
) -> impl FnMut(Request<()>) -> Result<Request<()>, Status> + Clone {
    move |request| {
        let role = role.borrow();
        let mut refusal = match &*role {
            Role::Leading { .. } => return Ok(request),
            Role::Starting => Status::unavailable(
                "qmeshd is starting: it is loading its state; try again in a moment",
            ),
            Role::Standby { leader } => standby_refusal(&host, leader.as_ref()),
            Role::Unsure { why, .. } => Status::unavailable(format!(
                "qmeshd on {host} cannot tell whether it still leads ({why}); it takes no \
                 request until etcd answers again, and another qmeshd may take over meanwhile"
            )),
        };
        refusal.metadata_mut().insert(
            NOT_LEADING,
            tonic::metadata::MetadataValue::from_static("1"),
        );
        Err(refusal)
    }
}

fn standby_refusal(host: &str, leader: Option<&LeaderInfo>) -> Status {
    let mut status = match leader {
        Some(l) => Status::unavailable(format!(
            "qmeshd on {host} stands by; the queue is served by the leader, qmeshd on {}{}; \
             run the command on that host or through a login node, or wait: this one takes over \
             if the leader goes",
            l.host,
            l.agents
                .as_ref()
                .map(|url| format!(" (agents and login nodes: {url})"))
                .unwrap_or_default()
        )),
        None => Status::unavailable(format!(
            "qmeshd on {host} stands by and no qmeshd leads at this moment (an election is under \
             way, or the store is unreachable); try again in a few seconds"
        )),
    };
    if let Some(url) = leader.and_then(|l| l.agents.as_ref())
        && let Ok(value) = url.parse()
    {
        status.metadata_mut().insert("qmesh-leader", value);
    }
    status
}

/// The election, once won.
pub struct Leader {
    pub election: Election,
    pub term: Term,
    /// The lease, kept from the moment the election is won: loading a
    /// large store may take longer than the lease.
    standing: watch::Receiver<Standing>,
}

/// Stands by until this daemon leads, keeping the warm copy and telling
/// `role` who leads meanwhile; then fences the store on the new term and
/// brings the copy up to it. Returns the term.
pub async fn take_over(
    store: &EtcdStore,
    lease_ttl_secs: u32,
    me: &LeaderInfo,
    role: &watch::Sender<Role>,
) -> Leader {
    store.mirror();
    let election = Election::new(
        store.client().clone(),
        store.keys().leader(),
        lease_ttl_secs.into(),
    );
    let value = serde_json::to_vec(me).unwrap_or_default();
    let _ = role.send(Role::Standby { leader: None });
    let mut said = String::new();
    let term = election
        .campaign(&value, |seen| {
            let (line, leader) = match seen {
                Ok(Some(raw)) => {
                    let leader: Option<LeaderInfo> = serde_json::from_slice(raw).ok();
                    let who = leader.as_ref().map_or_else(
                        || "another qmeshd".to_string(),
                        |l| format!("qmeshd on {}", l.host),
                    );
                    (format!("standing by: the leader is {who}"), leader)
                }
                Ok(None) => ("no qmeshd leads: campaigning".to_string(), None),
                Err(e) => (format!("standing by: {e}"), None),
            };
            if line != said {
                info!("{line}");
                said = line;
            }
            let _ = role.send(Role::Standby { leader });
        })
        .await;
    info!(term = term.revision, "this qmeshd leads now");
    let standing = election.keep(term);
    store.fence(term);
    let caught_up = match store.mirror_progress() {
        Some(mut progress) => {
            tokio::time::timeout(CATCH_UP, progress.wait_for(|r| *r >= term.revision))
                .await
                .is_ok_and(|r| r.is_ok())
        }
        None => false,
    };
    if !caught_up {
        warn!(
            "the warm copy of the store did not reach the new term within {} s; reading the store whole",
            CATCH_UP.as_secs()
        );
        store.stop_mirror();
    }
    Leader {
        election,
        term,
        standing,
    }
}

/// Watches the term: a lease that cannot be renewed closes the gate,
/// lets the agents go and makes the task read-only (through `events`), so
/// that the agents find whoever leads next; renewed again, the gate opens.
/// A term that ended, here or by a fenced write, ends the process.
pub fn keep_leading(
    leader: &Leader,
    store: &EtcdStore,
    events: mpsc::Sender<Event>,
    role: watch::Sender<Role>,
) {
    store.on_fenced(Box::new(|why| step_down(why)));
    let mut standing = leader.standing.clone();
    let term = leader.term.revision;
    tokio::spawn(async move {
        loop {
            let now = standing.borrow_and_update().clone();
            match now {
                Standing::Leading => {
                    let _ = role.send(Role::Leading { term });
                }
                Standing::Uncertain { why } => {
                    let why = format!("the election lease cannot be renewed: {why}");
                    let _ = role.send(Role::Unsure {
                        term,
                        why: why.clone(),
                    });
                    let _ = events.send(Event::LeadUncertain { why }).await;
                }
                Standing::Lost { why } => step_down(&why),
            }
            if standing.changed().await.is_err() {
                return;
            }
        }
    });
}

/// The term is over: say why, and exit before anything else happens.
fn step_down(why: &str) -> ! {
    error!(
        "{why}: another qmeshd leads now; this one steps down (it wrote nothing after the term \
         ended and starts no job) and exits with status {EXIT_STEPPED_DOWN}, to be started again \
         as a standby"
    );
    eprintln!("qmeshd: {why}: stepping down");
    std::process::exit(EXIT_STEPPED_DOWN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_standby_names_the_leader_and_a_leader_lets_through() {
        let (tx, rx) = watch::channel(Role::Starting);
        let mut g = gate(rx, "head2".into());
        let starting = g(Request::new(())).unwrap_err();
        assert!(starting.message().contains("starting"), "{starting:?}");
        let _ = tx.send(Role::Standby {
            leader: Some(LeaderInfo {
                host: "head1".into(),
                agents: Some("https://head1:15004".into()),
                pid: 1,
            }),
        });
        let standby = g(Request::new(())).unwrap_err();
        assert_eq!(standby.code(), tonic::Code::Unavailable);
        assert!(
            standby.message().contains("qmeshd on head2 stands by")
                && standby.message().contains("qmeshd on head1")
                && standby.message().contains("https://head1:15004"),
            "{standby:?}"
        );
        assert_eq!(
            standby.metadata().get("qmesh-leader").unwrap(),
            "https://head1:15004"
        );
        assert_eq!(standby.metadata().get(NOT_LEADING).unwrap(), "1");
        let _ = tx.send(Role::Leading { term: 7 });
        assert!(g(Request::new(())).is_ok());
    }
}
