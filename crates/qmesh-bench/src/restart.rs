//! Start-up with a full store: J jobs (with their scripts and environments)
//! are written straight into a store, then qmeshd is started on it and
//! timed until READY=1, i.e. until it has loaded every job, rebuilt its
//! state and listens. Scheduling is off in the stored configuration so the
//! first pass does not start jobs.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use qmesh_core::job::JobPayload;
use qmesh_core::queue::Queue;
use qmesh_core::server::Config;
use qmesh_store::{SledStore, Store, suite};

use crate::Report;
use crate::daemon::{Daemon, DirSize};

pub fn run(qmeshd: &Path, jobs: u64, runs: usize) -> anyhow::Result<Report> {
    let dir = tempfile::Builder::new().prefix("qmesh-bench-").tempdir()?;
    let store_dir = Daemon::store_dir(dir.path());
    std::fs::create_dir_all(&store_dir)?;
    {
        let store = SledStore::open(&store_dir).context("open the store to fill it")?;
        let mut config = Config::default();
        config.server.scheduling = false;
        config.server.default_queue = Some("batch".into());
        let mut batch = Queue::open("batch");
        batch.max_walltime = Some(24 * 3600);
        config.queues.insert("batch".into(), batch);
        store.put_config(&config)?;
        for id in 1..=jobs {
            let job = suite::sample_job(id);
            let payload = JobPayload {
                env: (0..8)
                    .map(|i| (format!("PBS_O_VAR{i}"), format!("/some/typical/value/{i}")))
                    .collect(),
                ..suite::sample_payload(id)
            };
            store.put_new_job(&job, &payload)?;
        }
        store.sync()?;
    }
    let size = DirSize::of(&store_dir).bytes;
    let mut times = Vec::new();
    let mut dir = Some(dir);
    for _ in 0..runs.max(1) {
        let (mut daemon, ready) = Daemon::start(qmeshd, dir.take().context("bench directory")?)?;
        daemon.stop();
        times.push(ready);
        dir = Some(std::mem::replace(
            &mut daemon.dir,
            tempfile::Builder::new().prefix("qmesh-bench-").tempdir()?,
        ));
    }
    times.sort();
    let median: Duration = times[times.len() / 2];
    Ok(Report {
        text: format!(
            "restart: {jobs} jobs in the store ({:.0} MB): ready in {:.2} s (median of {}; all: {})",
            size as f64 / 1e6,
            median.as_secs_f64(),
            times.len(),
            times
                .iter()
                .map(|t| format!("{:.2}", t.as_secs_f64()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        json: serde_json::json!({
            "bench": "restart", "jobs": jobs, "store_bytes": size,
            "seconds": median.as_secs_f64(),
            "all_seconds": times.iter().map(|t| t.as_secs_f64()).collect::<Vec<_>>(),
        }),
    })
}
