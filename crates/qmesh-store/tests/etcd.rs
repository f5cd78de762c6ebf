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
fn outbox_confirmations_delete_what_they_confirm() {
    with_store!("confirmations", s => suite::outbox_confirmations_delete_what_they_confirm(s, |s| {
        drop(s);
        open("confirmations").unwrap()
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

/// A leader (a store fenced on a term) sends its requests to etcd's raft
/// leader, and compacts etcd's history every interval to the revision
/// seen one interval before: a watch from before that revision is then
/// refused as compacted (a standby's warm copy reads the store again).
#[test]
fn a_leader_compacts_etcds_history() {
    let Some(shared) = cluster() else { return };
    let mut settings = EtcdSettings::new(shared.endpoints.clone(), "/test/compaction/");
    settings.compact_every = Some(std::time::Duration::from_millis(200));
    let store = EtcdStore::open(settings).unwrap();
    let client = store.client().clone();
    assert!(
        store
            .block({
                let client = client.clone();
                async move { client.prefer_raft_leader().await }
            })
            .unwrap(),
        "a healthy cluster names its raft leader"
    );
    let election = qmesh_etcd::Election::new(client.clone(), store.keys().leader(), 2);
    let term = store
        .block(async move { election.campaign(b"leader", |_| {}).await })
        .unwrap();
    store.fence(term);
    store
        .put_new_job(&suite::sample_job(1), &suite::sample_payload(1))
        .unwrap();
    store.sync().unwrap();
    let before = store
        .block({
            let client = client.clone();
            async move { client.revision().await }
        })
        .unwrap()
        .unwrap();
    store
        .put_new_job(&suite::sample_job(2), &suite::sample_payload(2))
        .unwrap();
    store.sync().unwrap();
    let prefix = store.keys().prefix().to_vec();
    let compacted = store
        .block(async move {
            let end = qmesh_etcd::prefix_end(&prefix);
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
            while tokio::time::Instant::now() < deadline {
                if let Ok(mut watch) = client.watch(&prefix, &end, before).await
                    && let Err(qmesh_etcd::EtcdError::Compacted { revision }) = watch.next().await
                {
                    return Some(revision);
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            None
        })
        .unwrap();
    let revision =
        compacted.expect("the history before the leader's writes is compacted within 30 s");
    assert!(
        revision >= before,
        "compacted to {revision}, before {before}"
    );
    // The latest values stay.
    assert_eq!(store.load().unwrap().jobs.len(), 2);
}
