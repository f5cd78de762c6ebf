//! Durable submissions per second. Scheduling is switched off first, so the
//! jobs stay queued and the figure is the daemon's and the store's, not the
//! machine's speed at forking shells.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use qmesh_proto::v1;

use crate::Report;
use crate::daemon::Daemon;

/// Runs the measurement `runs` times (a fresh daemon each, unless `socket`
/// names one) and reports the median rate with the range: on a shared
/// machine the disk's flush latency moves the figure by tens of percent.
pub fn run(
    qmeshd: &Path,
    clients: usize,
    jobs: usize,
    runs: usize,
    socket: Option<&Path>,
) -> anyhow::Result<Report> {
    run_hooked(qmeshd, (clients, jobs, runs), socket, None)
}

/// [`run`], with `hook` (an executable's content) made a queuejob hook
/// first: the cost of a site's filter on every submission.
pub fn run_hooked(
    qmeshd: &Path,
    (clients, jobs, runs): (usize, usize, usize),
    socket: Option<&Path>,
    hook: Option<(&[u8], bool)>,
) -> anyhow::Result<Report> {
    let mut all = Vec::new();
    for _ in 0..runs.max(1) {
        all.push(once(qmeshd, clients, jobs, socket, hook)?);
    }
    all.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    let median = &all[all.len() / 2];
    let rates: Vec<String> = all.iter().map(|m| format!("{:.0}", m.rate)).collect();
    Ok(Report {
        text: format!(
            "submit{}: {jobs} jobs from {} client(s): {:.0} durable submissions/s (median of {}; all: {}); latency p50 {:.2} ms, p99 {:.2} ms",
            match hook {
                Some((_, true)) => " (persistent queuejob hook)",
                Some(_) => " (queuejob hook)",
                None => "",
            },
            clients.max(1),
            median.rate,
            all.len(),
            rates.join(", "),
            median.p50.as_secs_f64() * 1e3,
            median.p99.as_secs_f64() * 1e3
        ),
        json: serde_json::json!({
            "bench": "submit", "clients": clients.max(1), "jobs": jobs, "hook": hook.is_some(),
            "per_second": median.rate,
            "all_per_second": all.iter().map(|m| m.rate).collect::<Vec<_>>(),
            "p50_ms": median.p50.as_secs_f64() * 1e3, "p99_ms": median.p99.as_secs_f64() * 1e3,
        }),
    })
}

struct Measured {
    rate: f64,
    p50: Duration,
    p99: Duration,
}

fn once(
    qmeshd: &Path,
    clients: usize,
    jobs: usize,
    socket: Option<&Path>,
    hook: Option<(&[u8], bool)>,
) -> anyhow::Result<Measured> {
    let clients = clients.max(1);
    let mut owned = None;
    let socket = match socket {
        Some(s) => s.to_path_buf(),
        None => {
            let dir = tempfile::Builder::new().prefix("qmesh-bench-").tempdir()?;
            let (daemon, _) = Daemon::start(qmeshd, dir)?;
            let socket = daemon.socket.clone();
            owned = Some(daemon);
            socket
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (elapsed, mut latencies) =
        runtime.block_on(measure(socket.clone(), clients, jobs, hook))?;
    drop(owned);
    latencies.sort();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * p) as usize)
            .copied()
            .unwrap_or_default()
    };
    let rate = jobs as f64 / elapsed.as_secs_f64();
    Ok(Measured {
        rate,
        p50: pct(0.50),
        p99: pct(0.99),
    })
}

pub(crate) fn request(cwd: &str) -> v1::SubmitRequest {
    v1::SubmitRequest {
        script: b"#!/bin/sh\n#PBS -l walltime=10:00\nsrun ./a.out\n".to_vec(),
        script_name: "job.sh".into(),
        resources: vec![v1::Resource {
            name: "nodes".into(),
            value: "4".into(),
        }],
        env: (0..8)
            .map(|i| v1::EnvVar {
                name: format!("PBS_O_VAR{i}"),
                value: format!("/some/typical/value/{i}"),
            })
            .collect(),
        workdir: cwd.to_string(),
        submit_host: "bench".into(),
        ..Default::default()
    }
}

async fn measure(
    socket: std::path::PathBuf,
    clients: usize,
    jobs: usize,
    hook: Option<(&[u8], bool)>,
) -> anyhow::Result<(Duration, Vec<Duration>)> {
    let channel = qmesh_proto::endpoint::connect_unix(&socket)
        .await
        .context("connect to qmeshd")?;
    scheduling_off(channel.clone()).await?;
    if let Some((content, persistent)) = hook {
        use base64::Engine;
        let data = base64::engine::general_purpose::STANDARD.encode(content);
        v1::admin_client::AdminClient::new(channel)
            .qmgr(v1::QmgrRequest {
                script: format!(
                    "create hook bench event = queuejob, persistent = {persistent}\n\
                     import hook bench application/x-executable base64 \"{data}\""
                ),
                source: "-c".into(),
                check_only: false,
            })
            .await
            .context("make the queuejob hook")?;
    }
    let cwd = Arc::new(std::env::temp_dir().display().to_string());
    let mut connections = Vec::new();
    for _ in 0..clients {
        let channel = qmesh_proto::endpoint::connect_unix(&socket).await?;
        connections.push(v1::jobs_client::JobsClient::new(channel));
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (i, mut client) in connections.into_iter().enumerate() {
        let share = jobs / clients + usize::from(i < jobs % clients);
        let cwd = Arc::clone(&cwd);
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(share);
            for _ in 0..share {
                let t = Instant::now();
                client.submit(request(&cwd)).await?;
                lat.push(t.elapsed());
            }
            Ok::<_, tonic::Status>(lat)
        }));
    }
    let mut latencies = Vec::with_capacity(jobs);
    for t in tasks {
        match t.await? {
            Ok(lat) => latencies.extend(lat),
            Err(status) => bail!("a submission failed: {}", status.message()),
        }
    }
    Ok((started.elapsed(), latencies))
}

/// Switches scheduling off, so submitted jobs stay queued: the figures are
/// the daemon's and the store's, not the machine's speed at forking.
pub(crate) async fn scheduling_off(channel: tonic::transport::Channel) -> anyhow::Result<()> {
    let mut admin = v1::admin_client::AdminClient::new(channel);
    admin
        .qmgr(v1::QmgrRequest {
            script: "set server scheduling = false".into(),
            source: "-c".into(),
            check_only: false,
        })
        .await
        .context("switch scheduling off")?;
    Ok(())
}
