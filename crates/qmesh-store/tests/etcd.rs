//! The store's suite against etcd: one real 3-member cluster for the whole
//! file, each test under a prefix of its own; and the fencing of a deposed
//! leader's writes.

use std::sync::OnceLock;

use qmesh_etcd::testing::Cluster;
use qmesh_store::{EtcdSettings, EtcdStore, Store, StoreError, suite};

struct Shared {
    _dir: tempfile::TempDir,
    endpoints: Vec<String>,
    _cluster: Cluster,
    _runtime: tokio::runtime::Runtime,
}

/// The file's cluster, started once (None: skipped).
fn cluster() -> Option<&'static Shared> {
    static CLUSTER: OnceLock<Option<Shared>> = OnceLock::new();
    CLUSTER
        .get_or_init(|| {
            if Cluster::skipped() {
                return None;
            }
            let dir = tempfile::tempdir().unwrap();
            let runtime = tokio::runtime::Runtime::new().unwrap();
            let cluster = {
                let _in = runtime.enter();
                Cluster::start(dir.path(), 3).unwrap_or_else(|e| panic!("{e}"))
            };
            Some(Shared {
                endpoints: cluster.endpoints(),
                _dir: dir,
                _cluster: cluster,
                _runtime: runtime,
            })
        })
        .as_ref()
}

fn open(prefix: &str) -> Option<EtcdStore> {
    let shared = cluster()?;
    let store = EtcdStore::open(EtcdSettings::new(
        shared.endpoints.clone(),
        &format!("/test/{prefix}/"),
    ))
    .unwrap();
    store.unfenced();
    Some(store)
}

macro_rules! with_store {
    ($prefix:expr, $store:ident => $body:expr) => {
        let Some($store) = open($prefix) else { return };
        $body
    };
}

#[test]
fn round_trip() {
    with_store!("round_trip", s => suite::round_trip(s, |s| {
        drop(s);
        open("round_trip").unwrap()
    }).unwrap());
}

#[test]
fn usage_round_trip() {
    with_store!("usage", s => suite::usage_round_trip(s, |s| {
        drop(s);
        open("usage").unwrap()
    }).unwrap());
}

#[test]
fn outbox_round_trip() {
    with_store!("outbox", s => suite::outbox_round_trip(s, |s| {
        drop(s);
        open("outbox").unwrap()
    }).unwrap());
}

#[test]
fn empty() {
    with_store!("empty", s => suite::empty(s).unwrap());
}

#[test]
fn changes_in_one_batch_apply_in_order() {
    with_store!("order", s => suite::changes_in_one_batch_apply_in_order(s).unwrap());
}

#[test]
fn durability_callbacks() {
    with_store!("callbacks", s => suite::durability_callbacks(s).unwrap());
}

#[test]
fn a_large_write_commits_whole() {
    with_store!("large", s => suite::a_large_write_commits_whole(s).unwrap());
}

#[test]
fn purges_never_lower_the_next_id() {
    with_store!("purges", s => suite::purges_never_lower_the_next_id(s).unwrap());
}

/// Two stores on one prefix, each fenced on its own term: once the second
/// holds the election key, the first one's writes are refused whole, it is
/// told, and nothing of them is stored.
#[test]
fn a_deposed_leaders_writes_are_refused() {
    let Some(shared) = cluster() else { return };
    let settings = EtcdSettings::new(shared.endpoints.clone(), "/test/fencing/");
    let old = EtcdStore::open(settings.clone()).unwrap();
    let new = EtcdStore::open(settings).unwrap();
    let election = |store: &EtcdStore| {
        qmesh_etcd::Election::new(store.client().clone(), store.keys().leader(), 2)
    };
    let old_election = election(&old);
    let term = old
        .block(async move { old_election.campaign(b"old", |_| {}).await })
        .unwrap();
    old.fence(term);
    let (told_tx, told) = std::sync::mpsc::channel();
    old.on_fenced(Box::new(move |why| {
        let _ = told_tx.send(why.to_string());
    }));
    old.put_new_job(&suite::sample_job(1), &suite::sample_payload(1))
        .unwrap();
    old.sync().unwrap();

    // The old leader's lease goes (as when it is stopped past its TTL);
    // the new one wins.
    let client = old.client().clone();
    old.block(async move { client.revoke(term.lease).await })
        .unwrap()
        .unwrap();
    let new_election = election(&new);
    let new_term = new
        .block(async move { new_election.campaign(b"new", |_| {}).await })
        .unwrap();
    new.fence(new_term);
    assert!(new_term.revision > term.revision);

    old.put_new_job(&suite::sample_job(2), &suite::sample_payload(2))
        .unwrap();
    let err = old.sync().unwrap_err();
    assert!(matches!(err, StoreError::Fenced { .. }), "{err}");
    assert!(told.recv().unwrap().contains("no longer leads"));
    let ids: Vec<u64> = new.load().unwrap().jobs.iter().map(|j| j.id.0).collect();
    assert_eq!(
        ids,
        vec![suite::sample_job(1).id.0],
        "the deposed leader wrote nothing"
    );
    new.put_new_job(&suite::sample_job(3), &suite::sample_payload(3))
        .unwrap();
    new.sync().unwrap();
}
