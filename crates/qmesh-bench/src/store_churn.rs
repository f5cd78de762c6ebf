//! The store's size on disk while jobs flow through it as the daemon
//! writes them: each job created with its script, started, ended, and
//! removed once `history` later jobs have ended (the job history's
//! expiry), in group commits of `batch` changes with the store's own
//! fdatasync. Reported against the live data (the bytes of the jobs still
//! held), every tenth of the run: sled's copy-on-write log must not grow
//! without bound.

use std::collections::VecDeque;
use std::time::Instant;

use qmesh_store::{Change, SledStore, Store, suite};

use crate::Report;

pub fn run(jobs: u64, history: usize, batch: usize) -> anyhow::Result<Report> {
    let dir = tempfile::Builder::new().prefix("qmesh-bench-").tempdir()?;
    let store = SledStore::open(&dir.path().join("store"))?;
    let began = Instant::now();
    // Jobs ended and still held, oldest first, with their bytes.
    let mut held: VecDeque<(u64, usize)> = VecDeque::new();
    let mut live: usize = 0;
    let mut samples = Vec::new();
    let every = (jobs / 10).max(1);
    let mut next = 1u64;
    while next <= jobs {
        let last = (next + batch as u64 - 1).min(jobs);
        let mut created = Vec::new();
        let mut changed = Vec::new();
        for id in next..=last {
            let mut job = suite::sample_job(id);
            let payload = suite::sample_payload(id);
            created.push(Change::new_job(&job, &payload)?);
            job.state = qmesh_core::JobState::Running;
            changed.push(Change::job(&job)?);
            job.state = qmesh_core::JobState::Finished;
            let end = Change::job(&job)?;
            let bytes = qmesh_store::encode(&job)?.len() + qmesh_store::encode(&payload)?.len();
            changed.push(end);
            held.push_back((id, bytes));
            live += bytes;
        }
        let mut gone = Vec::new();
        while held.len() > history {
            if let Some((id, bytes)) = held.pop_front() {
                gone.push(qmesh_core::JobId(id));
                live -= bytes;
            }
        }
        // Submissions, then starts and ends, then the history purge: the
        // daemon's turns, each a group commit.
        store.write(created, None);
        store.sync()?;
        store.write(changed, None);
        store.sync()?;
        if !gone.is_empty() {
            store.write(vec![Change::Remove(gone)], None);
            store.sync()?;
        }
        let before = next;
        next = last + 1;
        if before / every != last / every || next > jobs {
            let disk = store.size_on_disk();
            samples.push(serde_json::json!({
                "jobs": last,
                "secs": began.elapsed().as_secs_f64(),
                "disk_bytes": disk,
                "live_bytes": live,
                "ratio": disk as f64 / live.max(1) as f64,
            }));
        }
    }
    let mut text = format!(
        "store-churn: {jobs} jobs through the store, {history} kept as history, commits of {batch}\n"
    );
    for s in &samples {
        text.push_str(&format!(
            "  after {:>9} jobs ({:>6.1} s): {:>7.1} MB on disk, {:>6.1} MB live, {:.2}x\n",
            s["jobs"],
            s["secs"].as_f64().unwrap_or(0.0),
            s["disk_bytes"].as_f64().unwrap_or(0.0) / 1e6,
            s["live_bytes"].as_f64().unwrap_or(0.0) / 1e6,
            s["ratio"].as_f64().unwrap_or(0.0),
        ));
    }
    Ok(Report {
        text: text.trim_end().to_string(),
        json: serde_json::json!({
            "bench": "store-churn", "jobs": jobs, "history": history, "batch": batch,
            "samples": samples,
        }),
    })
}
