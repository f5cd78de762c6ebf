//! One job array of many sub-jobs (`qsub -J 0-99999`), submitted to a fresh
//! daemon as qsub sends it: the time until its durable reply, and what it
//! adds to the store. An array is one job record until its sub-jobs start
//! (qmesh-core's array.rs), so a 100,000-task array should be durable about
//! as fast as one job, and take kilobytes where 100,000 jobs take
//! hundreds of megabytes.
//!
//! Scheduling is off, as in `submit`, so nothing starts. Each run submits
//! one plain job (which also opens the connection), then the array, then
//! a second plain job, timed: the floor, one flush on a warm connection,
//! beside the array's time. The store
//! is measured two ways, because sled preallocates its files: the store
//! directory's growth from just before the array was sent to just after
//! its reply (file lengths, and blocks allocated); and, once the daemon is
//! stopped, the array's stored value (its record, a newline, its script and
//! environment, as the store writes them), re-encoded from the store's own
//! copy, beside the plain job's.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use qmesh_core::job::Job;
use qmesh_proto::v1;
use qmesh_store::{SledStore, Store};

use crate::Report;
use crate::daemon::{Daemon, DirSize};

pub fn run(qmeshd: &Path, tasks: u32, runs: usize) -> anyhow::Result<Report> {
    if tasks == 0 {
        bail!("an array needs at least one sub-job (--tasks 1 or more)");
    }
    let mut all = Vec::new();
    for _ in 0..runs.max(1) {
        all.push(once(qmeshd, tasks)?);
    }
    Ok(report(tasks, all))
}

/// One run's figures.
struct Measured {
    array: Duration,
    plain: Duration,
    /// Store growth while the array was submitted: file lengths, blocks.
    grown: (i64, i64),
    /// The store's size once the daemon had stopped.
    after_stop: DirSize,
    /// Stored values (record + script), read back after the stop.
    array_value: usize,
    plain_value: usize,
}

fn once(qmeshd: &Path, tasks: u32) -> anyhow::Result<Measured> {
    let dir = tempfile::Builder::new().prefix("qmesh-bench-").tempdir()?;
    let store_dir = Daemon::store_dir(dir.path());
    let (mut daemon, _) = Daemon::start(qmeshd, dir)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let sent = runtime.block_on(submit(daemon.socket.clone(), &store_dir, tasks))?;
    daemon.stop();
    let after_stop = DirSize::of(&store_dir);
    let (array_value, plain_value) = stored_values(&store_dir, tasks)?;
    drop(daemon);
    Ok(Measured {
        array: sent.array,
        plain: sent.plain,
        grown: sent.after.since(sent.before),
        after_stop,
        array_value,
        plain_value,
    })
}

struct Sent {
    plain: Duration,
    array: Duration,
    before: DirSize,
    after: DirSize,
}

async fn submit(socket: PathBuf, store_dir: &Path, tasks: u32) -> anyhow::Result<Sent> {
    let channel = qmesh_proto::endpoint::connect_unix(&socket)
        .await
        .context("connect to qmeshd")?;
    crate::submit::scheduling_off(channel.clone()).await?;
    let mut client = v1::jobs_client::JobsClient::new(channel);
    let cwd = std::env::temp_dir().display().to_string();
    let failed = |s: tonic::Status| anyhow::anyhow!("the submission failed: {}", s.message());
    client
        .submit(crate::submit::request(&cwd))
        .await
        .map_err(failed)?;
    let request = v1::SubmitRequest {
        array: format!("0-{}", tasks - 1),
        array_option: "J".into(),
        ..crate::submit::request(&cwd)
    };
    let before = DirSize::of(store_dir);
    let t = Instant::now();
    let reply = client.submit(request).await.map_err(failed)?.into_inner();
    let array = t.elapsed();
    let after = DirSize::of(store_dir);
    let t = Instant::now();
    client
        .submit(crate::submit::request(&cwd))
        .await
        .map_err(failed)?;
    let plain = t.elapsed();
    if !reply.job_id.contains("[]") {
        bail!(
            "qmeshd answered {} for an array: not an array's id (12[].server)",
            reply.job_id
        );
    }
    // What qstat -f would say of it: every sub-job queued.
    let status = client
        .status(v1::StatusRequest {
            job_ids: vec![reply.job_id.clone()],
            ..Default::default()
        })
        .await
        .map_err(|s| anyhow::anyhow!("qstat of the array failed: {}", s.message()))?
        .into_inner();
    let queued = format!("Queued:{tasks} ");
    match status.jobs.first() {
        Some(info) if info.array && info.array_state_count.starts_with(&queued) => {}
        Some(info) => bail!(
            "the array {} says \"{}\", not {tasks} sub-jobs queued",
            reply.job_id,
            info.array_state_count
        ),
        None => bail!("qstat does not show the array {}", reply.job_id),
    }
    Ok(Sent {
        plain,
        array,
        before,
        after,
    })
}

/// The stored values of the array and of the plain job, in bytes, from the
/// stopped daemon's store: each job re-encoded as the store writes it.
fn stored_values(store_dir: &Path, tasks: u32) -> anyhow::Result<(usize, usize)> {
    let store = SledStore::open(store_dir).context("open the stopped daemon's store")?;
    let loaded = store.load().context("read the stopped daemon's store")?;
    let value = |job: &Job| -> anyhow::Result<usize> {
        let record = qmesh_store::encode(job)?.len();
        let payload = match store.payload(job.id)? {
            Some(p) => 1 + qmesh_store::encode(&p)?.len(),
            None => 0,
        };
        Ok(record + payload)
    };
    let array = loaded
        .jobs
        .iter()
        .find(|j| j.array.as_ref().is_some_and(|a| a.spec.count() == tasks))
        .context("the store holds no array of that many sub-jobs")?;
    let plain = loaded
        .jobs
        .iter()
        .find(|j| j.array.is_none() && j.id.array_parent().is_none())
        .context("the store holds no plain job")?;
    if loaded.jobs.len() != 3 {
        bail!(
            "the store holds {} jobs, not the two plain jobs and the array",
            loaded.jobs.len()
        );
    }
    Ok((value(array)?, value(plain)?))
}

/// Median and range of a list of figures.
fn spread<T: Copy + PartialOrd>(mut all: Vec<T>) -> (T, T, T) {
    all.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    (all[all.len() / 2], all[0], all[all.len() - 1])
}

fn report(tasks: u32, all: Vec<Measured>) -> Report {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let array = spread(all.iter().map(|m| ms(m.array)).collect());
    let plain = spread(all.iter().map(|m| ms(m.plain)).collect());
    let bytes = spread(all.iter().map(|m| m.grown.0).collect());
    let blocks = spread(all.iter().map(|m| m.grown.1).collect());
    let stopped = spread(all.iter().map(|m| m.after_stop.bytes).collect());
    let array_value = spread(all.iter().map(|m| m.array_value).collect());
    let plain_value = spread(all.iter().map(|m| m.plain_value).collect());
    let runs = all.len();
    Report {
        text: format!(
            "array submit: one array of {tasks} sub-jobs (-J 0-{}), {runs} runs, fresh daemon each:\n\
             \x20 durable reply: {:.2} ms median [{:.2} - {:.2}] (one plain job after it: {:.2} ms [{:.2} - {:.2}])\n\
             \x20 store growth over the array's submission: files {} bytes [{} - {}], blocks allocated {} bytes [{} - {}]\n\
             \x20 stored value (record + script): array {} bytes, plain job {} bytes (read back after the stop; store then {} bytes [{} - {}])",
            tasks - 1,
            array.0,
            array.1,
            array.2,
            plain.0,
            plain.1,
            plain.2,
            bytes.0,
            bytes.1,
            bytes.2,
            blocks.0,
            blocks.1,
            blocks.2,
            array_value.0,
            plain_value.0,
            stopped.0,
            stopped.1,
            stopped.2,
        ),
        json: serde_json::json!({
            "bench": "array_submit", "tasks": tasks, "runs": runs,
            "durable_ms": array.0,
            "all_durable_ms": all.iter().map(|m| ms(m.array)).collect::<Vec<_>>(),
            "plain_durable_ms": all.iter().map(|m| ms(m.plain)).collect::<Vec<_>>(),
            "store_growth_bytes": all.iter().map(|m| m.grown.0).collect::<Vec<_>>(),
            "store_growth_allocated_bytes": all.iter().map(|m| m.grown.1).collect::<Vec<_>>(),
            "store_bytes_after_stop": all.iter().map(|m| m.after_stop.bytes).collect::<Vec<_>>(),
            "array_value_bytes": array_value.0,
            "plain_value_bytes": plain_value.0,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_gives_median_and_range() {
        assert_eq!(spread(vec![3, 1, 2]), (2, 1, 3));
        assert_eq!(spread(vec![5.0]), (5.0, 5.0, 5.0));
    }
}
