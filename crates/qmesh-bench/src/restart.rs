//! Start-up with a full store: J jobs (with their scripts and environments)
//! are written straight into a store, then qmeshd is started on it and
//! timed until READY=1, i.e. until it has loaded every job, rebuilt its
//! state and listens. Scheduling is off in the stored configuration so the
//! first pass does not start jobs.
//!
//! With `--accounting`, the state directory also holds that day's
//! accounting log with every job's `Q` record, all of the same second
//! (the worst case for the start's check of the log against the store:
//! every job is recent), the last `--missing` of them left out, as a crash
//! would have left them; the first start writes those back, the later
//! ones find nothing missing.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use qmesh_core::job::JobPayload;
use qmesh_core::queue::Queue;
use qmesh_core::server::Config;
use qmesh_store::{SledStore, Store, suite};

use crate::Report;
use crate::daemon::{Daemon, DirSize};

pub fn run(
    qmeshd: &Path,
    jobs: u64,
    runs: usize,
    accounting: bool,
    missing: u64,
) -> anyhow::Result<Report> {
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
    if accounting {
        write_accounting(dir.path(), jobs, missing)?;
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
    // What the starts left in the log: every job's Q once.
    let logged = match (&dir, accounting) {
        (Some(d), true) => {
            let acct = Daemon::state_dir(d.path())
                .join("server_priv")
                .join("accounting");
            let mut lines = 0usize;
            for entry in std::fs::read_dir(&acct)?.flatten() {
                lines += std::fs::read_to_string(entry.path())?.lines().count();
            }
            format!("; the log holds {lines} records after")
        }
        _ => String::new(),
    };
    times.sort();
    let median: Duration = times[times.len() / 2];
    Ok(Report {
        text: format!(
            "restart: {jobs} jobs in the store ({:.0} MB){}: ready in {:.2} s (median of {}; all: {}){logged}",
            size as f64 / 1e6,
            if accounting {
                format!(
                    ", their Q records in the accounting log ({missing} missing at the first start)"
                )
            } else {
                String::new()
            },
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

/// The day file of the jobs' `Q` records, as the daemon would have
/// written them, less the last `missing`.
fn write_accounting(dir: &Path, jobs: u64, missing: u64) -> anyhow::Result<()> {
    use chrono::Local;
    use qmesh_core::joblog::{RecordType, accounting_line, file_name, queued};
    let server = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .map(|h| h.split('.').next().unwrap_or("").to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    let acct = Daemon::state_dir(dir)
        .join("server_priv")
        .join("accounting");
    std::fs::create_dir_all(&acct)?;
    let mut text = String::new();
    let mut day = None;
    for id in 1..=jobs.saturating_sub(missing) {
        let job = suite::sample_job(id);
        let at = job.qtime.with_timezone(&Local).naive_local();
        day = Some(at.date());
        text.push_str(&accounting_line(
            at,
            RecordType::Queued,
            &job.id.full(&server),
            &queued(&job, &server),
        ));
        text.push('\n');
    }
    if let Some(day) = day {
        std::fs::write(acct.join(file_name(day)), text)?;
    }
    Ok(())
}
