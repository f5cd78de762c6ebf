//! The behaviour every [`Store`] engine must have. Each function takes a
//! fresh store (and, for round trips, a way to reopen it) and returns the
//! first store error; mismatches fail with an assertion.

use std::sync::mpsc;
use std::time::Duration;

use chrono::TimeZone;
use qmesh_core::account::Usage;
use qmesh_core::job::{Holds, Job, JobId, JobPayload, JobState, Owner};
use qmesh_core::queue::Queue;
use qmesh_core::server::Config;

use crate::{Store, StoreError};

/// A job record as the daemon would write it.
pub fn sample_job(id: u64) -> Job {
    let t = chrono::Utc
        .timestamp_opt(1_700_000_000, 0)
        .single()
        .unwrap_or_default();
    Job {
        id: JobId(id),
        name: format!("job{id}"),
        owner: Owner {
            uid: 1000,
            gid: 1000,
            user: "alice".into(),
            group: "users".into(),
        },
        account: Some("c1-prod".into()),
        queue: "batch".into(),
        nodes: 4,
        walltime: 3600,
        predicted_run: None,
        mem: None,
        ncpus: None,
        features: Vec::new(),
        gpus: None,
        node_resources: Vec::new(),
        layout: None,
        resource_list: Default::default(),
        priority: 0,
        project: None,
        options: Default::default(),
        submit_queue: None,
        session_id: None,
        used_so_far: None,
        workdir: "/home/alice".into(),
        stdout_path: format!("/home/alice/job{id}.o{id}"),
        stderr_path: format!("/home/alice/job{id}.e{id}"),
        join_output: false,
        rerunnable: true,
        submit_host: "login1".into(),
        holds: Holds::default(),
        state: JobState::Queued,
        qtime: t,
        mtime: t,
        stime: None,
        end_time: None,
        suspension: Default::default(),
        exec_nodes: vec![],
        placement: vec![],
        exit: None,
        run_count: 0,
        comment: String::new(),
        depend: vec![],
        before: vec![],
        depend_on: 0,
        depend_how: Default::default(),
        start_after: None,
        rank: None,
        period_stop: None,
        array: None,
        submission_id: None,
    }
}

pub fn sample_payload(id: u64) -> JobPayload {
    JobPayload {
        script: format!("#!/bin/sh\necho job {id}\n").into_bytes(),
        env: vec![("HOME".into(), "/home/alice".into())],
    }
}

/// Jobs, payloads, the next id and the configuration survive a reopen.
pub fn round_trip<S: Store>(store: S, reopen: impl FnOnce(S) -> S) -> Result<(), StoreError> {
    for id in 1..=3 {
        store.put_new_job(&sample_job(id), &sample_payload(id))?;
    }
    let mut running = sample_job(2);
    running.state = JobState::Running;
    running.exec_nodes = vec!["n0".into()];
    store.put_job(&running)?;
    store.remove_jobs(&[JobId(3)])?;
    let mut config = Config::default();
    config.queues.insert("batch".into(), Queue::open("batch"));
    store.put_config(&config)?;
    store.sync()?;

    let store = reopen(store);
    let loaded = store.load()?;
    assert_eq!(loaded.config, Some(config));
    assert_eq!(loaded.next_id, 4, "ids are not reused after a purge");
    assert_eq!(loaded.jobs, vec![sample_job(1), running]);
    assert_eq!(store.payload(JobId(1))?, Some(sample_payload(1)));
    assert_eq!(
        store.payload(JobId(2))?,
        Some(sample_payload(2)),
        "a job's change keeps its script"
    );
    assert_eq!(store.payload(JobId(3))?, None);
    Ok(())
}

/// The usage map survives a reopen; the last one written wins, also
/// within one batch, and it does not disturb the jobs.
pub fn usage_round_trip<S: Store>(store: S, reopen: impl FnOnce(S) -> S) -> Result<(), StoreError> {
    let t = chrono::Utc
        .timestamp_opt(1_700_000_000, 0)
        .single()
        .unwrap_or_default();
    let mut usage = Usage::default();
    usage.charge("c1", 12.5, t, 3600);
    store.put_new_job(&sample_job(1), &sample_payload(1))?;
    store.put_usage(&Usage::default())?;
    let first = usage.clone();
    usage.charge("c2", 1.0, t + chrono::Duration::hours(1), 3600);
    store.write(
        vec![crate::Change::usage(&first)?, crate::Change::usage(&usage)?],
        None,
    );
    store.sync()?;
    let store = reopen(store);
    let loaded = store.load()?;
    assert_eq!(loaded.usage, Some(usage));
    assert_eq!(loaded.jobs, vec![sample_job(1)]);
    Ok(())
}

/// A job created and changed in one batch keeps both the change and its
/// payload, in the order they were queued.
pub fn changes_in_one_batch_apply_in_order<S: Store>(store: S) -> Result<(), StoreError> {
    let mut changed = sample_job(5);
    changed.state = JobState::Held;
    store.write(
        vec![
            crate::Change::new_job(&sample_job(5), &sample_payload(5))?,
            crate::Change::job(&changed)?,
        ],
        None,
    );
    store.sync()?;
    assert_eq!(store.load()?.jobs, vec![changed]);
    assert_eq!(store.payload(JobId(5))?, Some(sample_payload(5)));
    Ok(())
}

/// A new store loads as empty.
pub fn empty<S: Store>(store: S) -> Result<(), StoreError> {
    let loaded = store.load()?;
    assert!(loaded.config.is_none());
    assert!(loaded.jobs.is_empty());
    assert_eq!(loaded.next_id, 1);
    assert!(loaded.usage.is_none());
    Ok(())
}

/// Every durability callback is called, and after all writes it follows.
pub fn durability_callbacks<S: Store>(store: S) -> Result<(), StoreError> {
    let (tx, rx) = mpsc::channel();
    for id in 1..=50 {
        store.put_new_job(&sample_job(id), &sample_payload(id))?;
        let tx = tx.clone();
        store.on_durable(Box::new(move |r| {
            let _ = tx.send((id, r));
        }));
    }
    let mut seen = Vec::new();
    for _ in 0..50 {
        let (id, r) = rx
            .recv_timeout(Duration::from_secs(30))
            .map_err(|_| StoreError::Closed)?;
        r?;
        seen.push(id);
    }
    seen.sort();
    assert_eq!(seen, (1..=50).collect::<Vec<_>>());
    Ok(())
}

/// Accounting records wait in the store with the changes they record
/// until the daemon says the log has them; they survive a reopen in
/// sequence order, and leave up to the sequence said, no further.
pub fn outbox_round_trip<S: Store>(
    store: S,
    reopen: impl FnOnce(S) -> S,
) -> Result<(), StoreError> {
    store.write(
        vec![
            crate::Change::new_job(&sample_job(1), &sample_payload(1))?,
            crate::Change::Outbox(vec![(1, b"Q 1".to_vec()), (2, b"S 1".to_vec())]),
        ],
        None,
    );
    store.write(
        vec![crate::Change::Outbox(vec![(3, b"E 1".to_vec())])],
        None,
    );
    store.sync()?;
    let store = reopen(store);
    let loaded = store.load()?;
    assert_eq!(loaded.jobs, vec![sample_job(1)], "records are not jobs");
    assert_eq!(
        loaded.outbox,
        vec![
            (1, b"Q 1".to_vec()),
            (2, b"S 1".to_vec()),
            (3, b"E 1".to_vec())
        ]
    );
    store.write(vec![crate::Change::OutboxWritten(2)], None);
    store.sync()?;
    assert_eq!(store.load()?.outbox, vec![(3, b"E 1".to_vec())]);
    assert_eq!(store.load()?.next_id, 2, "records take no job ids");
    Ok(())
}

/// The log's confirmations delete exactly the records up to them: on a
/// store never loaded, after a load, again after a reopen, on a store
/// whose outbox was empty at its load, and when a confirmation comes
/// twice. (The etcd store deletes from the lowest record it knows of.)
pub fn outbox_confirmations_delete_what_they_confirm<S: Store>(
    store: S,
    reopen: impl Fn(S) -> S,
) -> Result<(), StoreError> {
    let record = |seq: u64| (seq, format!("R {seq}").into_bytes());
    let seqs = |store: &S| -> Result<Vec<u64>, StoreError> {
        Ok(store
            .load()?
            .outbox
            .into_iter()
            .map(|(seq, _)| seq)
            .collect())
    };
    let confirm = |store: &S, upto: u64| -> Result<(), StoreError> {
        store.write(vec![crate::Change::OutboxWritten(upto)], None);
        store.sync()
    };
    let put = |store: &S, from: u64, to: u64| -> Result<(), StoreError> {
        store.write(
            vec![crate::Change::Outbox((from..=to).map(record).collect())],
            None,
        );
        store.sync()
    };
    put(&store, 5, 7)?;
    confirm(&store, 5)?;
    assert_eq!(seqs(&store)?, vec![6, 7], "never loaded");
    put(&store, 8, 8)?;
    confirm(&store, 7)?;
    assert_eq!(seqs(&store)?, vec![8], "after a load");
    confirm(&store, 7)?;
    assert_eq!(seqs(&store)?, vec![8], "a confirmation twice");
    let store = reopen(store);
    assert_eq!(seqs(&store)?, vec![8]);
    confirm(&store, 8)?;
    put(&store, 9, 10)?;
    confirm(&store, 9)?;
    assert_eq!(seqs(&store)?, vec![10], "after a reopen");
    confirm(&store, 10)?;
    let store = reopen(store);
    assert_eq!(seqs(&store)?, Vec::<u64>::new());
    put(&store, 11, 12)?;
    confirm(&store, 11)?;
    assert_eq!(seqs(&store)?, vec![12], "loaded with no records");
    Ok(())
}

/// A write too large for one transaction of an engine with limits (etcd's
/// 128 operations) is still committed whole, jobs and records, and a job
/// changed twice in it keeps its last change.
pub fn a_large_write_commits_whole<S: Store>(store: S) -> Result<(), StoreError> {
    let mut changes = Vec::new();
    let mut records = Vec::new();
    for id in 1..=400 {
        changes.push(crate::Change::new_job(
            &sample_job(id),
            &sample_payload(id),
        )?);
        records.push((id, format!("Q {id}").into_bytes()));
    }
    let mut held = sample_job(7);
    held.state = JobState::Held;
    changes.push(crate::Change::job(&held)?);
    changes.push(crate::Change::Outbox(records));
    store.write(changes, None);
    store.sync()?;
    let loaded = store.load()?;
    assert_eq!(loaded.jobs.len(), 400);
    assert_eq!(loaded.jobs[6], held);
    assert_eq!(loaded.outbox.len(), 400);
    assert_eq!(loaded.next_id, 401);
    assert_eq!(store.payload(JobId(400))?, Some(sample_payload(400)));
    Ok(())
}

/// A purge of lower jobs after a purge of higher ones does not lower the
/// next id.
pub fn purges_never_lower_the_next_id<S: Store>(store: S) -> Result<(), StoreError> {
    for id in 1..=5 {
        store.put_new_job(&sample_job(id), &sample_payload(id))?;
    }
    store.remove_jobs(&[JobId(5)])?;
    store.remove_jobs(&[JobId(1)])?;
    store.sync()?;
    assert_eq!(store.load()?.next_id, 6);
    Ok(())
}
