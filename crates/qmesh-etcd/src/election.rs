//! Who leads: one election key, created under a lease by the daemon that
//! wins, deleted by etcd when the lease runs out.
//!
//! The term of a leader is the key's creation revision: it only grows
//! from one leader to the next, it is what every write of the leader
//! compares against ([`Term::fence`]), and it is what agents are told, so
//! that an order from an older term can be refused.
//!
//! Keeping the lease: a keepalive every third of the TTL. The leader counts
//! its lease from when it *sent* the last keepalive that was answered, by
//! its own monotonic clock, which runs on through a SIGSTOP: a leader that
//! cannot renew knows it may no longer lead before etcd can let another
//! win, and says so ([`Standing::Uncertain`]). A keepalive that finds the
//! lease gone, or a write fenced off, ends the term ([`Standing::Lost`]).

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{info, warn};

use crate::{Client, EtcdError, pb};

/// A term of leadership.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Term {
    /// The election key's creation revision.
    pub revision: i64,
    /// The lease the key lives under.
    pub lease: i64,
}

impl Term {
    /// The condition every write of this term carries: the election key
    /// is still the one this term created.
    pub fn fence(&self, key: &[u8]) -> pb::Compare {
        pb::Compare {
            result: pb::compare::CompareResult::Equal as i32,
            target: pb::compare::CompareTarget::Create as i32,
            key: key.to_vec(),
            target_union: Some(pb::compare::TargetUnion::CreateRevision(self.revision)),
            range_end: Vec::new(),
        }
    }
}

/// Where a leader stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// The lease was renewed within its TTL.
    Leading,
    /// No renewal got through within the TTL: another daemon may lead by
    /// now. Start nothing, write nothing, until a renewal says otherwise.
    Uncertain { why: String },
    /// The lease is gone (or a write was fenced): the term is over.
    Lost { why: String },
}

/// One election: its key, and the lease's TTL.
#[derive(Clone, Debug)]
pub struct Election {
    client: Client,
    key: Vec<u8>,
    ttl: i64,
}

impl Election {
    pub fn new(client: Client, key: Vec<u8>, ttl_secs: i64) -> Election {
        Election {
            client,
            key,
            ttl: ttl_secs.max(2),
        }
    }

    pub fn key(&self) -> &[u8] {
        &self.key
    }

    pub fn ttl(&self) -> Duration {
        Duration::from_secs(self.ttl as u64)
    }

    /// Who leads now: the value the leader put in the key.
    pub async fn leader(&self) -> Result<Option<Vec<u8>>, EtcdError> {
        Ok(self.client.get(&self.key).await?.map(|kv| kv.value))
    }

    /// Waits until this daemon leads, telling `seen` who leads meanwhile
    /// (each time that changes; `None` while nobody does). `value` is what
    /// the key holds while this daemon leads (where to reach it).
    /// Store errors are retried here, with `seen` told of them.
    pub async fn campaign(
        &self,
        value: &[u8],
        mut seen: impl FnMut(Result<Option<&[u8]>, &EtcdError>),
    ) -> Term {
        let retry = Duration::from_millis(500);
        loop {
            match self.try_once(value, &mut seen).await {
                Ok(Some(term)) => return term,
                Ok(None) => {}
                Err(e) => {
                    seen(Err(&e));
                    tokio::time::sleep(retry).await;
                }
            }
        }
    }

    /// One round: waits for the key to be free, then tries to create it.
    async fn try_once(
        &self,
        value: &[u8],
        seen: &mut impl FnMut(Result<Option<&[u8]>, &EtcdError>),
    ) -> Result<Option<Term>, EtcdError> {
        if let Some(current) = self.client.get(&self.key).await? {
            seen(Ok(Some(&current.value)));
            self.wait_for_delete(current.mod_revision + 1).await?;
        }
        seen(Ok(None));
        let (lease, _) = self.client.grant(self.ttl).await?;
        let txn = pb::TxnRequest {
            compare: vec![pb::Compare {
                result: pb::compare::CompareResult::Equal as i32,
                target: pb::compare::CompareTarget::Create as i32,
                key: self.key.clone(),
                target_union: Some(pb::compare::TargetUnion::CreateRevision(0)),
                range_end: Vec::new(),
            }],
            success: vec![pb::RequestOp {
                request: Some(pb::request_op::Request::RequestPut(pb::PutRequest {
                    key: self.key.clone(),
                    value: value.to_vec(),
                    lease,
                    prev_kv: false,
                })),
            }],
            failure: vec![],
        };
        let answer = self.client.txn(txn).await;
        // Whether it was created (and by whom) is read back: an answer
        // lost on the way and retried finds the key there, made by us.
        let now = self.client.get(&self.key).await?;
        match now {
            Some(kv) if kv.lease == lease => Ok(Some(Term {
                revision: kv.create_revision,
                lease,
            })),
            _ => {
                let _ = self.client.revoke(lease).await;
                answer.map(|_| None)
            }
        }
    }

    /// Returns once the key is deleted (at or after `from`).
    async fn wait_for_delete(&self, from: i64) -> Result<(), EtcdError> {
        let mut watch = self.client.watch(&self.key, &[], from).await?;
        loop {
            let events = watch.next().await?;
            if events
                .events
                .iter()
                .any(|e| e.r#type == pb::event::EventType::Delete as i32)
            {
                return Ok(());
            }
        }
    }

    /// Keeps the lease of `term` alive until the returned watch is dropped
    /// or the term is lost; the watch says where the leader stands.
    pub fn keep(&self, term: Term) -> watch::Receiver<Standing> {
        let (tx, rx) = watch::channel(Standing::Leading);
        let client = self.client.clone();
        let ttl = Duration::from_secs(self.ttl as u64);
        tokio::spawn(async move {
            let every = ttl / 3;
            // The lease was granted before the key was made: counted from now
            // it is at most the TTL.
            let mut good_until = Instant::now() + ttl;
            loop {
                let sent = Instant::now();
                let answer = tokio::time::timeout(every, client.keep_alive_once(term.lease)).await;
                let standing = match answer {
                    Ok(Ok(left)) if left > 0 => {
                        good_until = sent + Duration::from_secs(left as u64);
                        Standing::Leading
                    }
                    Ok(Ok(_)) => Standing::Lost {
                        why: "the election lease expired in etcd".into(),
                    },
                    Ok(Err(e)) if Instant::now() >= good_until => {
                        Standing::Uncertain { why: e.to_string() }
                    }
                    Err(_) if Instant::now() >= good_until => Standing::Uncertain {
                        why: format!(
                            "etcd did not answer the lease's keepalive within {} s: \
                             it has no quorum, or cannot be reached",
                            ttl.as_secs()
                        ),
                    },
                    // Failed, but the lease still holds: as before.
                    _ => tx.borrow().clone(),
                };
                let changed = *tx.borrow() != standing;
                if changed {
                    match &standing {
                        Standing::Leading => info!("the election lease is renewed again"),
                        Standing::Uncertain { why } => {
                            warn!(%why, "cannot renew the election lease")
                        }
                        Standing::Lost { why } => warn!(%why, "the term is over"),
                    }
                }
                let lost = matches!(standing, Standing::Lost { .. });
                if tx.send(standing).is_err() || lost {
                    return;
                }
                let next = sent + every;
                tokio::time::sleep_until(next.max(Instant::now())).await;
                // A stop (SIGSTOP) is seen here: the clock ran on.
                if Instant::now() >= good_until && *tx.borrow() == Standing::Leading {
                    let _ = tx.send(Standing::Uncertain {
                        why: "this qmeshd was stopped longer than the election lease".into(),
                    });
                }
            }
        });
        rx
    }

    /// Gives the term up (at shutdown): the key goes at once, so a standby
    /// need not wait for the lease to run out.
    pub async fn resign(&self, term: Term) -> Result<(), EtcdError> {
        self.client.revoke(term.lease).await
    }
}
