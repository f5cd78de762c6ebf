//! High availability on etcd (docs/HA.md), on a private 3-member etcd on
//! this machine's loopback:
//! - durable submissions per second from N clients to a leader on etcd;
//! - failover: kill -9 of the leader until its standby acknowledges a
//!   submission, and until that job has started (an agent that follows
//!   the leader runs it);
//! - a takeover with many jobs stored: the leader's start (the whole store
//!   read) and, after a kill -9, the standby's takeover from its warm copy.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use qmesh_etcd::testing::Cluster;
use qmesh_proto::v1;
use qmesh_store::{Change, EtcdSettings, EtcdStore, Store, suite};

use crate::Report;
use crate::daemon::Daemon;

pub struct Run {
    pub clients: usize,
    pub jobs: usize,
    pub failovers: usize,
    pub stored: usize,
}

/// One qmeshd of the queue: its own directory and configuration.
struct Head {
    dir: PathBuf,
    config: PathBuf,
    daemon: Option<Daemon>,
}

impl Head {
    fn socket(&self) -> PathBuf {
        self.dir.join("qmeshd.sock")
    }
}

pub fn run(qmeshd: &Path, run: &Run) -> anyhow::Result<Vec<Report>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let root = tempfile::Builder::new()
        .prefix("qmesh-bench-ha-")
        .tempdir()?;
    let cluster = {
        let _in = runtime.enter();
        Cluster::start(&root.path().join("etcd"), 3).map_err(anyhow::Error::msg)?
    };
    let endpoints = cluster.endpoints();
    let mut reports = Vec::new();
    // Each figure is said as soon as it is measured (the stored takeover
    // takes minutes to fill).
    let mut said = |report: Report| {
        eprintln!("{}", report.text);
        reports.push(report);
    };
    said(submissions(qmeshd, &runtime, root.path(), &endpoints, run)?);
    said(failovers(qmeshd, &runtime, root.path(), &endpoints, run)?);
    if run.stored > 0 {
        said(takeover_with_stored(
            qmeshd,
            &runtime,
            root.path(),
            &endpoints,
            run,
        )?);
    }
    drop(cluster);
    Ok(reports)
}

/// The heads of a queue under `prefix`, each with its configuration.
fn heads(root: &Path, endpoints: &[String], prefix: &str) -> anyhow::Result<Vec<Head>> {
    let key = root.join("cluster.key");
    std::fs::write(&key, "bench-key\n")?;
    let eps = endpoints
        .iter()
        .map(|e| format!("\"{e}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let mut heads = Vec::new();
    for name in ["a", "b"] {
        let dir = root.join(format!("{prefix}-{name}"));
        std::fs::create_dir_all(&dir)?;
        let port = crate::daemon::free_port()?;
        let config = dir.join("qmesh.toml");
        std::fs::write(
            &config,
            format!(
                r#"
[daemon]
job_logs_dir = "{logs}"

[store]
backend = "etcd"
endpoints = [{eps}]
prefix = "/bench/{prefix}/"

[agents]
listen = "127.0.0.1:{port}"
cluster_key_file = "{key}"

[server]
name = "{prefix}"

[[node_set]]
name = "n"
nodes = ["n1-0", "n1-1", "n1-2", "n1-3"]
host = "n1"

[[queue]]
name = "batch"
"#,
                logs = root.join(format!("{prefix}-logs")).display(),
                key = key.display(),
            ),
        )?;
        heads.push(Head {
            dir,
            config,
            daemon: None,
        });
    }
    Ok(heads)
}

fn port_of(head: &Head) -> anyhow::Result<u16> {
    let text = std::fs::read_to_string(&head.config)?;
    text.lines()
        .find_map(|l| l.strip_prefix("listen = \"127.0.0.1:"))
        .and_then(|rest| rest.trim_end_matches('"').parse().ok())
        .context("the head's port")
}

/// Starts head `i` and waits for its READY (leading or standing by).
fn start(qmeshd: &Path, head: &mut Head) -> anyhow::Result<Duration> {
    let dir = tempfile::Builder::new()
        .prefix("run-")
        .tempdir_in(&head.dir)?;
    let socket = head.socket();
    let _ = std::fs::remove_file(&socket);
    let (daemon, took) =
        Daemon::start_configured_at(qmeshd, dir, Some(&head.config), "warn", &socket)?;
    head.daemon = Some(daemon);
    Ok(took)
}

/// Whether the head at `socket` serves (leads): a status call within 1 s.
async fn leads(socket: &Path) -> bool {
    let Ok(Ok(channel)) = tokio::time::timeout(
        Duration::from_secs(1),
        qmesh_proto::endpoint::connect_unix(socket),
    )
    .await
    else {
        return false;
    };
    let mut jobs = v1::jobs_client::JobsClient::new(channel);
    matches!(
        tokio::time::timeout(
            Duration::from_secs(1),
            jobs.server_status(v1::ServerStatusRequest::default())
        )
        .await,
        Ok(Ok(_))
    )
}

async fn wait_leading(socket: &Path, within: Duration) -> anyhow::Result<Duration> {
    let started = Instant::now();
    while !leads(socket).await {
        if started.elapsed() > within {
            bail!("no head led within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(started.elapsed())
}

/// Submits one job with a fresh submission id until a head at `socket`
/// acknowledges it; its id.
async fn submit_until_acknowledged(socket: &Path, within: Duration) -> anyhow::Result<String> {
    let started = Instant::now();
    let mut request = crate::submit::request(&std::env::temp_dir().display().to_string());
    request.resources = vec![v1::Resource {
        name: "nodes".into(),
        value: "1".into(),
    }];
    request.script = b"#!/bin/sh\ntrue\n".to_vec();
    request.submission_id = format!(
        "bench-{}",
        started.elapsed().as_nanos() ^ u128::from(std::process::id())
    );
    loop {
        let attempt = async {
            let channel = qmesh_proto::endpoint::connect_unix(socket).await.ok()?;
            let mut jobs = v1::jobs_client::JobsClient::new(channel);
            tokio::time::timeout(Duration::from_secs(2), jobs.submit(request.clone()))
                .await
                .ok()?
                .ok()
        }
        .await;
        if let Some(answer) = attempt {
            return Ok(answer.into_inner().job_id);
        }
        if started.elapsed() > within {
            bail!("no submission acknowledged within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until job `id` has started (running, or already finished).
async fn started(socket: &Path, id: &str, within: Duration) -> anyhow::Result<()> {
    let begun = Instant::now();
    loop {
        if let Ok(channel) = qmesh_proto::endpoint::connect_unix(socket).await {
            let mut jobs = v1::jobs_client::JobsClient::new(channel);
            let request = v1::StatusRequest {
                job_ids: vec![id.to_string()],
                include_finished: true,
                ..Default::default()
            };
            if let Ok(reply) = jobs.status(request).await
                && reply.into_inner().jobs.iter().any(|j| {
                    [
                        v1::JobState::Running,
                        v1::JobState::Exiting,
                        v1::JobState::Finished,
                    ]
                    .iter()
                    .any(|s| j.state == *s as i32)
                })
            {
                return Ok(());
            }
        }
        if begun.elapsed() > within {
            bail!("job {id} did not start within {within:?}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The agent of host `n1`, knowing both heads; its files under `dir`.
fn agent(qmeshd: &Path, root: &Path, dir: &Path, heads: &[Head]) -> anyhow::Result<Child> {
    let bin = qmeshd.with_file_name("qmesh-agent");
    let servers = heads
        .iter()
        .map(|h| port_of(h).map(|p| format!("https://127.0.0.1:{p}")))
        .collect::<anyhow::Result<Vec<_>>>()?
        .join(",");
    let log = std::fs::File::create(dir.join("agent.log"))?;
    std::fs::create_dir_all(dir.join("tmp"))?;
    Command::new(&bin)
        .arg("--server")
        .arg(servers)
        .args(["--host", "n1", "--no-relay"])
        .arg("--spool")
        .arg(dir.join("spool"))
        .arg("--tmpdir-base")
        .arg(dir.join("tmp"))
        .arg("--cluster-key-file")
        .arg(root.join("cluster.key"))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("start {}", bin.display()))
}

fn submissions(
    qmeshd: &Path,
    runtime: &tokio::runtime::Runtime,
    root: &Path,
    endpoints: &[String],
    run: &Run,
) -> anyhow::Result<Report> {
    let heads = leader_and_standby(qmeshd, runtime, root, endpoints, "rate")?;
    let mut report =
        crate::submit::run(qmeshd, run.clients, run.jobs, 1, Some(&heads[0].socket()))?;
    report.text = format!("etcd (3 members, one host): {}", report.text);
    Ok(report)
}

/// The heads of a queue under `prefix`: the first started and leading,
/// then the second, standing by.
fn leader_and_standby(
    qmeshd: &Path,
    runtime: &tokio::runtime::Runtime,
    root: &Path,
    endpoints: &[String],
    prefix: &str,
) -> anyhow::Result<Vec<Head>> {
    let mut heads = heads(root, endpoints, prefix)?;
    start(qmeshd, &mut heads[0])?;
    runtime.block_on(wait_leading(&heads[0].socket(), Duration::from_secs(30)))?;
    start(qmeshd, &mut heads[1])?;
    Ok(heads)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn failovers(
    qmeshd: &Path,
    runtime: &tokio::runtime::Runtime,
    root: &Path,
    endpoints: &[String],
    run: &Run,
) -> anyhow::Result<Report> {
    let mut heads = leader_and_standby(qmeshd, runtime, root, endpoints, "failover")?;
    let mut agent = agent(qmeshd, root, &root.join("failover-a"), &heads)?;
    // The agent is in before the first kill: a job starts.
    let first = runtime.block_on(submit_until_acknowledged(
        &heads[0].socket(),
        Duration::from_secs(30),
    ))?;
    runtime.block_on(started(&heads[0].socket(), &first, Duration::from_secs(30)))?;
    let (mut acks, mut starts) = (Vec::new(), Vec::new());
    let mut leader = 0;
    for _ in 0..run.failovers.max(1) {
        let standby = 1 - leader;
        // The standby's warm copy is read and its watch is on.
        std::thread::sleep(Duration::from_secs(2));
        let t0 = Instant::now();
        if let Some(d) = heads[leader].daemon.as_mut() {
            d.kill9();
        }
        let socket = heads[standby].socket();
        let id = runtime.block_on(submit_until_acknowledged(&socket, Duration::from_secs(60)))?;
        acks.push(t0.elapsed());
        runtime.block_on(started(&socket, &id, Duration::from_secs(60)))?;
        starts.push(t0.elapsed());
        heads[leader].daemon = None;
        start(qmeshd, &mut heads[leader])?;
        leader = standby;
    }
    let _ = agent.kill();
    let _ = agent.wait();
    let ms = |d: &Duration| format!("{:.0}", d.as_secs_f64() * 1e3);
    let (ack, start) = (median(acks.clone()), median(starts.clone()));
    Ok(Report {
        text: format!(
            "failover (kill -9 of the leader, lease {} s): a submission acknowledged by the standby after {} ms, its job started after {} ms (medians of {}; all starts: {} ms)",
            qmesh_config::DEFAULT_LEASE_TTL,
            ms(&ack),
            ms(&start),
            starts.len(),
            starts.iter().map(ms).collect::<Vec<_>>().join(", ")
        ),
        json: serde_json::json!({
            "bench": "ha-failover",
            "lease_ttl_s": qmesh_config::DEFAULT_LEASE_TTL,
            "ack_ms": acks.iter().map(|d| d.as_secs_f64() * 1e3).collect::<Vec<_>>(),
            "start_ms": starts.iter().map(|d| d.as_secs_f64() * 1e3).collect::<Vec<_>>(),
        }),
    })
}

fn takeover_with_stored(
    qmeshd: &Path,
    runtime: &tokio::runtime::Runtime,
    root: &Path,
    endpoints: &[String],
    run: &Run,
) -> anyhow::Result<Report> {
    let mut heads = heads(root, endpoints, "stored")?;
    let filling = Instant::now();
    let store = {
        let _in = runtime.enter();
        EtcdStore::open(EtcdSettings::new(endpoints.to_vec(), "/bench/stored/"))?
    };
    store.unfenced();
    for chunk in (1..=run.stored as u64).collect::<Vec<_>>().chunks(1000) {
        let mut changes = Vec::with_capacity(chunk.len());
        for &id in chunk {
            let mut job = suite::sample_job(id);
            job.queue = "batch".into();
            job.nodes = 1;
            changes.push(Change::new_job(&job, &suite::sample_payload(id))?);
        }
        store.write(changes, None);
    }
    store.sync()?;
    drop(store);
    let filled = filling.elapsed();
    let t0 = Instant::now();
    start(qmeshd, &mut heads[0])?;
    runtime.block_on(wait_leading(&heads[0].socket(), Duration::from_secs(300)))?;
    let first_start = t0.elapsed();
    start(qmeshd, &mut heads[1])?;
    // The standby reads its warm copy whole: give it the time.
    std::thread::sleep(Duration::from_secs(10));
    let t1 = Instant::now();
    if let Some(d) = heads[0].daemon.as_mut() {
        d.kill9();
    }
    runtime.block_on(submit_until_acknowledged(
        &heads[1].socket(),
        Duration::from_secs(300),
    ))?;
    let takeover = t1.elapsed();
    Ok(Report {
        text: format!(
            "{} jobs in etcd (written in {:.1} s): the first leader serves {:.2} s after its start (the store read whole); after a kill -9, the standby acknowledges a submission {:.2} s later (from its warm copy)",
            run.stored,
            filled.as_secs_f64(),
            first_start.as_secs_f64(),
            takeover.as_secs_f64()
        ),
        json: serde_json::json!({
            "bench": "ha-stored", "jobs": run.stored,
            "fill_s": filled.as_secs_f64(),
            "first_start_s": first_start.as_secs_f64(),
            "takeover_s": takeover.as_secs_f64(),
        }),
    })
}
