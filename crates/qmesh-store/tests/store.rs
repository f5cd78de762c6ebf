//! The sled engine against the store suite, and old record formats.

use qmesh_store::{SledStore, decode, suite};

/// Opens the store; a reopen in the same process may find sled's file
/// lock still held for a moment by the threads of the store just dropped
/// (they release it as they end; there is nothing to wait on), so a lock
/// refusal is tried again for up to 10 s.
fn open(dir: &std::path::Path) -> SledStore {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match SledStore::open(dir) {
            Ok(store) => return store,
            Err(e)
                if e.to_string().contains("could not acquire lock")
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn sled_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    suite::round_trip(open(&path), |s| {
        drop(s);
        open(&path)
    })
    .unwrap();
}

#[test]
fn sled_usage_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    suite::usage_round_trip(open(&path), |s| {
        drop(s);
        open(&path)
    })
    .unwrap();
}

#[test]
fn sled_empty() {
    let dir = tempfile::tempdir().unwrap();
    suite::empty(open(&dir.path().join("db"))).unwrap();
}

#[test]
fn sled_changes_in_one_batch_apply_in_order() {
    let dir = tempfile::tempdir().unwrap();
    suite::changes_in_one_batch_apply_in_order(open(&dir.path().join("db"))).unwrap();
}

#[test]
fn sled_a_large_write_commits_whole() {
    let dir = tempfile::tempdir().unwrap();
    suite::a_large_write_commits_whole(open(&dir.path().join("db"))).unwrap();
}

#[test]
fn sled_purges_never_lower_the_next_id() {
    let dir = tempfile::tempdir().unwrap();
    suite::purges_never_lower_the_next_id(open(&dir.path().join("db"))).unwrap();
}

#[test]
fn sled_durability_callbacks() {
    let dir = tempfile::tempdir().unwrap();
    suite::durability_callbacks(open(&dir.path().join("db"))).unwrap();
}

/// A job record as schema 1 wrote it must always load.
#[test]
fn schema_1_job_record_loads() {
    let bytes = include_bytes!("fixtures/job-v1.json");
    let job: qmesh_core::Job = decode("fixture", bytes).unwrap();
    assert_eq!(job.id, qmesh_core::JobId(17));
    assert_eq!(job.exec_nodes, ["local00".into(), "local01".into()]);
    assert_eq!(job.exit.unwrap().exit_status(), 271);
}

/// The usage record as schema 1 wrote it must always load.
#[test]
fn schema_1_usage_record_loads() {
    let bytes = include_bytes!("fixtures/usage-v1.json");
    let usage: qmesh_core::account::Usage = decode("fixture", bytes).unwrap();
    assert_eq!(usage.groups["c1"].used, 4800.0);
    assert_eq!(usage.groups["c2"].decayed, 0.75);
    assert_eq!(usage.decayed_at.unwrap().timestamp(), 1_700_000_000);
}

#[test]
fn a_newer_schema_is_refused_with_a_clear_message() {
    let err = decode::<u64>("k", br#"{"v":99,"data":1}"#).unwrap_err();
    assert!(err.to_string().contains("newer qmesh (schema 99)"), "{err}");
}

#[test]
fn a_corrupt_record_names_its_key() {
    let err = decode::<qmesh_core::Job>("job 5", b"{not json").unwrap_err();
    assert!(err.to_string().contains("job 5"), "{err}");
}

#[test]
fn sled_outbox_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    suite::outbox_round_trip(open(&path), |s| {
        drop(s);
        open(&path)
    })
    .unwrap();
}

#[test]
fn sled_outbox_confirmations_delete_what_they_confirm() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    suite::outbox_confirmations_delete_what_they_confirm(open(&path), |s| {
        drop(s);
        open(&path)
    })
    .unwrap();
}

/// The engine reopened in the process (after a full disk) holds what was
/// durable and takes writes again.
#[test]
fn sled_reopens_in_the_process() {
    use qmesh_store::Store;
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("db"));
    store
        .put_new_job(&suite::sample_job(1), &suite::sample_payload(1))
        .unwrap();
    store.sync().unwrap();
    // sled's lock may linger a moment after the old engine is gone.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while let Err(e) = store.reopen() {
        assert!(std::time::Instant::now() < deadline, "{e}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(store.load().unwrap().jobs, vec![suite::sample_job(1)]);
    store
        .put_new_job(&suite::sample_job(2), &suite::sample_payload(2))
        .unwrap();
    store.sync().unwrap();
    assert_eq!(store.load().unwrap().jobs.len(), 2);
    assert_eq!(
        store.payload(qmesh_core::JobId(1)).unwrap(),
        Some(suite::sample_payload(1))
    );
}
