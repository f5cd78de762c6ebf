//! Thousands of hosts: a real qmeshd whose node set names N hosts (one
//! node each), and N simulated agents in this one process (`sim.rs`),
//! each with its own TLS connection, certificate and session, as many
//! real agents would have. The daemon listens on TCP with TLS and the
//! cluster CA; each simulated host enrols once (one certificate per
//! host, as the protocol wants: a session's hello must name the host its
//! certificate names).
//!
//! Four figures, in order:
//! 1. the first attach: from the agents' start until all N have their
//!    Welcome (enrolment included);
//! 2. qmeshd's CPU per heartbeat, and its share of one core, over
//!    `duration` seconds of steady heartbeats (from /proc/PID/stat: the
//!    daemon's whole CPU in the window, HTTP/2 keepalives and ticks
//!    included, divided by the heartbeats sent);
//! 3. a job asking all N hosts (`nodes=N`, one node per host): from its
//!    submission until the launch order reaches its first host (every
//!    other host has joined by then), the median of `wide_runs`;
//! 4. a restart: qmeshd killed (SIGKILL) and started again on the same
//!    store; from the new start until all N agents have their Welcome
//!    again (the agents back off as the real one does while it is away).

mod sim;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use qmesh_agent::trust::{TlsFlags, Trust};
use qmesh_proto::trust::ClusterKey;
use qmesh_proto::v1;
use serde_json::json;
use tokio::sync::mpsc;

use crate::Report;
use crate::cpu::CpuTimes;
use crate::daemon::Daemon;

/// What to run.
pub struct Run<'a> {
    pub hosts: usize,
    /// The daemon's `heartbeat_secs` (None: its default).
    pub heartbeat_secs: Option<u32>,
    /// How long heartbeats are counted for the CPU figure.
    pub duration: Duration,
    /// Jobs across all hosts, one after another.
    pub wide_runs: usize,
    /// How long each such job runs.
    pub job_secs: f64,
    pub daemon_log_level: &'a str,
    /// Restarts timed.
    pub restarts: usize,
    /// The agents ping as agents that know several daemons do (every 3 s),
    /// not as those of a sole daemon.
    pub failover_keepalive: bool,
}

/// Longest wait for all agents to attach.
const ATTACH_LIMIT: Duration = Duration::from_secs(600);

pub fn run(qmeshd: &Path, run: &Run) -> anyhow::Result<Report> {
    if run.hosts == 0 {
        bail!("--hosts 0: give at least one host to simulate");
    }
    let files = raise_open_files(run.hosts)?;
    let dir = tempfile::Builder::new().prefix("qmesh-agents-").tempdir()?;
    let root = dir.path().to_path_buf();
    let key_text = qmesh_proto::trust::new_key_text()?;
    let key_file = root.join("cluster.key");
    write_private(&key_file, &key_text)?;
    let port = crate::daemon::free_port()?;
    let config = root.join("qmesh.toml");
    std::fs::write(
        &config,
        config_text(port, run.hosts, run.heartbeat_secs, &key_file),
    )?;
    let (mut daemon, _) =
        Daemon::start_configured(qmeshd, dir, Some(&config), run.daemon_log_level)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let measured =
        runtime.block_on(async { drive(run, &mut daemon, qmeshd, &config, &key_text, port).await });
    daemon.stop();
    // The agents' tasks end with the runtime, after the daemon.
    runtime.shutdown_background();
    let measured = match measured {
        Ok(m) => m,
        Err(e) => {
            daemon.dir.disable_cleanup(true);
            return Err(e.context(format!(
                "the agents run failed; qmeshd's log is kept in {}",
                root.display()
            )));
        }
    };
    Ok(measured.report(run, files))
}

/// Raises this process's open-file limit to its hard limit if the
/// sockets need more (each agent holds one connection here and one in
/// qmeshd, which inherits the limit); the limit now.
fn raise_open_files(hosts: usize) -> anyhow::Result<u64> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let needed = hosts as u64 + 256;
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).context("read RLIMIT_NOFILE")?;
    if soft >= needed {
        return Ok(soft);
    }
    if hard < needed {
        bail!(
            "{hosts} hosts need about {needed} open files, and the hard limit is {hard}: \
             raise it (ulimit -Hn, or LimitNOFILE) or simulate fewer hosts"
        );
    }
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).context("raise RLIMIT_NOFILE")?;
    Ok(hard)
}

fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).with_context(|| format!("write {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(())
}

/// The host of simulated agent `i`, which is also its one node's name.
fn host_name(i: usize) -> String {
    format!("h{i:05}")
}

fn config_text(port: u16, hosts: usize, heartbeat_secs: Option<u32>, key: &Path) -> String {
    let nodes: Vec<String> = (0..hosts)
        .map(|i| {
            let h = host_name(i);
            format!("  {{ name = \"{h}\", host = \"{h}\" }},")
        })
        .collect();
    let heartbeat = heartbeat_secs.map_or(String::new(), |s| format!("heartbeat_secs = {s}\n"));
    // TLS with the daemon's cluster CA (the default), the key given.
    format!(
        "[agents]\nlisten = \"127.0.0.1:{port}\"\nlocal = false\ncluster_key_file = \"{key}\"\n\
         {heartbeat}\n\
         [server]\ndefault_queue = \"batch\"\n\n\
         [[queue]]\nname = \"batch\"\nnode_sets = [\"compute\"]\n\n\
         [[node_set]]\nname = \"compute\"\nnodes = [\n{}\n]\n",
        nodes.join("\n"),
        key = key.display(),
    )
}

/// What the run measured.
struct Measured {
    heartbeat_secs: u32,
    first_attach: Duration,
    beats: u64,
    window: Duration,
    daemon_cpu: f64,
    wide: Vec<Wide>,
    restarts: Vec<Restart>,
}

/// One job across all hosts.
struct Wide {
    /// Submission until its durable reply.
    reply: Duration,
    /// Submission until the last join order reached its host.
    joins: Duration,
    /// Submission until the launch order reached the first host.
    launch: Duration,
}

struct Restart {
    ready: Duration,
    attached: Duration,
}

async fn drive(
    run: &Run<'_>,
    daemon: &mut Daemon,
    qmeshd: &Path,
    config: &Path,
    key_text: &str,
    port: u16,
) -> anyhow::Result<Measured> {
    let key = ClusterKey::from_file_text(key_text)?;
    let server = format!("https://127.0.0.1:{port}");
    // One directory for every host's credentials (`tls/HOST.pem`...).
    let spool = daemon.dir.path().join("agents");
    let (launched_tx, mut launched) = mpsc::unbounded_channel();
    let (joined_tx, mut joined) = mpsc::unbounded_channel();
    let (acked_tx, mut acked) = mpsc::unbounded_channel();
    let shared = Arc::new(sim::Shared {
        attached: Default::default(),
        heartbeats: Default::default(),
        joins: Default::default(),
        launched: launched_tx,
        joined: joined_tx,
        acked: acked_tx,
        job_secs: Duration::from_secs_f64(run.job_secs.max(0.0)),
    });
    let started = Instant::now();
    for i in 0..run.hosts {
        let trust = Trust::new(
            &server,
            &host_name(i),
            Some(key.clone()),
            &TlsFlags::default(),
            &spool,
        )?;
        // As `qmesh-agent --server` with this one daemon does, unless asked.
        let trust = if run.failover_keepalive {
            trust
        } else {
            trust.sole_daemon()
        };
        tokio::spawn(sim::run(Arc::new(trust), shared.clone()));
    }
    all_attached(&shared, run.hosts, "first attach").await?;
    let first_attach = started.elapsed();
    eprintln!(
        "agents: {} attached in {:.1} s",
        run.hosts,
        first_attach.as_secs_f64()
    );

    let pid = || daemon.pid().context("qmeshd is not running");
    let heartbeat_secs = run.heartbeat_secs.unwrap_or(10);
    // Every agent past its first heartbeat (which may change its facts),
    // then the window.
    tokio::time::sleep(Duration::from_secs(u64::from(heartbeat_secs) + 1)).await;
    let (cpu0, beats0, t0) = (
        daemon_cpu(pid()?)?,
        shared.heartbeats.load(Ordering::SeqCst),
        Instant::now(),
    );
    tokio::time::sleep(run.duration).await;
    let (cpu1, beats1, window) = (
        daemon_cpu(pid()?)?,
        shared.heartbeats.load(Ordering::SeqCst),
        t0.elapsed(),
    );
    eprintln!(
        "agents: {} heartbeats in {:.1} s, qmeshd {:.2} s CPU",
        beats1 - beats0,
        window.as_secs_f64(),
        cpu1 - cpu0
    );

    let mut wide = Vec::new();
    let channel = qmesh_proto::endpoint::connect_unix(&daemon.socket).await?;
    let mut client = v1::jobs_client::JobsClient::new(channel);
    for _ in 0..run.wide_runs {
        let w = wide_job(
            &mut client,
            run.hosts,
            (&mut launched, &mut joined, &mut acked),
        )
        .await?;
        eprintln!(
            "agents: a {}-host job launched {:.0} ms after its submission",
            run.hosts,
            w.launch.as_secs_f64() * 1e3
        );
        wide.push(w);
    }

    let mut restarts = Vec::new();
    for _ in 0..run.restarts {
        daemon.kill9();
        let gone = Instant::now();
        while shared.attached.load(Ordering::SeqCst) > 0 {
            if gone.elapsed() > Duration::from_secs(60) {
                bail!("the agents did not see qmeshd's end within 60 s");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let again = Instant::now();
        let ready = daemon.start_again(qmeshd, Some(config), run.daemon_log_level)?;
        all_attached(&shared, run.hosts, "attach after a restart").await?;
        let attached = again.elapsed();
        eprintln!(
            "agents: restarted, READY in {:.2} s, all attached again in {:.2} s",
            ready.as_secs_f64(),
            attached.as_secs_f64()
        );
        restarts.push(Restart { ready, attached });
    }
    Ok(Measured {
        heartbeat_secs,
        first_attach,
        beats: beats1 - beats0,
        window,
        daemon_cpu: cpu1 - cpu0,
        wide,
        restarts,
    })
}

fn daemon_cpu(pid: u32) -> anyhow::Result<f64> {
    CpuTimes::of(pid)
        .map(|t| t.own)
        .context("read qmeshd's CPU time from /proc")
}

async fn all_attached(shared: &sim::Shared, hosts: usize, what: &str) -> anyhow::Result<()> {
    let since = Instant::now();
    while shared.attached.load(Ordering::SeqCst) < hosts {
        if since.elapsed() > ATTACH_LIMIT {
            bail!(
                "{what}: only {} of {hosts} agents attached within {} s",
                shared.attached.load(Ordering::SeqCst),
                ATTACH_LIMIT.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

type Heard<'a> = (
    &'a mut mpsc::UnboundedReceiver<(u64, Instant)>,
    &'a mut mpsc::UnboundedReceiver<(u64, Instant)>,
    &'a mut mpsc::UnboundedReceiver<u64>,
);

/// Submits a job asking every host and waits for its launch, then for
/// its end to be acknowledged (so the next one finds every node free).
async fn wide_job(
    client: &mut v1::jobs_client::JobsClient<tonic::transport::Channel>,
    hosts: usize,
    (launched, joined, acked): Heard<'_>,
) -> anyhow::Result<Wide> {
    let request = v1::SubmitRequest {
        script: b"#!/bin/sh\ntrue\n".to_vec(),
        script_name: "wide".into(),
        workdir: "/".into(),
        submit_host: "bench".into(),
        resources: vec![
            v1::Resource {
                name: "nodes".into(),
                value: hosts.to_string(),
            },
            v1::Resource {
                name: "walltime".into(),
                value: "600".into(),
            },
        ],
        ..Default::default()
    };
    let submitted = Instant::now();
    let reply = client
        .submit(request)
        .await
        .map_err(|s| anyhow::anyhow!("the {hosts}-host job's submission failed: {}", s.message()))?
        .into_inner();
    let replied = submitted.elapsed();
    // "17.server": the number is what the agents are told.
    let job: u64 = reply
        .job_id
        .split('.')
        .next()
        .and_then(|n| n.parse().ok())
        .with_context(|| format!("read the job number of \"{}\"", reply.job_id))?;
    let limit = Duration::from_secs(120);
    let mut last_join = None;
    let mut joins = 0;
    let launch = loop {
        tokio::select! {
            Some((j, at)) = launched.recv() => if j == job { break at.duration_since(submitted) },
            Some((j, at)) = joined.recv() => if j == job {
                joins += 1;
                last_join = Some(at.duration_since(submitted));
            },
            _ = tokio::time::sleep_until((submitted + limit).into()) => {
                bail!("job {job} across {hosts} hosts was not launched within {} s ({joins} joins)", limit.as_secs())
            }
        }
    };
    // Joins that arrived just before the launch but were read after it.
    while let Ok((j, at)) = joined.try_recv() {
        if j == job {
            joins += 1;
            last_join = last_join.max(Some(at.duration_since(submitted)));
        }
    }
    if joins + 1 < hosts {
        bail!(
            "job {job} was launched after {joins} of {} joins",
            hosts - 1
        );
    }
    let deadline = Instant::now() + limit;
    loop {
        tokio::select! {
            Some(j) = acked.recv() => if j == job { break },
            _ = tokio::time::sleep_until(deadline.into()) => bail!("job {job}'s end was not acknowledged within {} s", limit.as_secs()),
        }
    }
    Ok(Wide {
        reply: replied,
        joins: last_join.unwrap_or_default(),
        launch,
    })
}

/// How often the agents ping an idle connection, in seconds.
fn keep_alive(run: &Run) -> u64 {
    if run.failover_keepalive {
        qmesh_agent::trust::FAILOVER_KEEP_ALIVE.as_secs()
    } else {
        qmesh_agent::trust::SOLE_KEEP_ALIVE.as_secs()
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

impl Measured {
    fn report(&self, run: &Run, files: u64) -> Report {
        let per_beat_us = self.daemon_cpu / self.beats.max(1) as f64 * 1e6;
        let core_share = self.daemon_cpu / self.window.as_secs_f64() * 100.0;
        let ms = |d: &Duration| d.as_secs_f64() * 1e3;
        let launches: Vec<f64> = self.wide.iter().map(|w| ms(&w.launch)).collect();
        let joins: Vec<f64> = self.wide.iter().map(|w| ms(&w.joins)).collect();
        let replies: Vec<f64> = self.wide.iter().map(|w| ms(&w.reply)).collect();
        let attached: Vec<f64> = self
            .restarts
            .iter()
            .map(|r| r.attached.as_secs_f64())
            .collect();
        let ready: Vec<f64> = self
            .restarts
            .iter()
            .map(|r| r.ready.as_secs_f64())
            .collect();
        let list = |xs: &[f64], digits: usize| {
            xs.iter()
                .map(|x| format!("{x:.digits$}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let text = format!(
            "agents: {hosts} simulated hosts (TLS, cluster CA, one certificate each; keepalive every {ka} s; open files {files})\n\
             \x20 first attach, enrolment included: {attach:.1} s\n\
             \x20 heartbeat every {hb} s: {beats} heartbeats in {window:.0} s, qmeshd {cpu:.2} s CPU: \
             {per_beat_us:.0} µs per heartbeat, {core_share:.2} % of one core\n\
             \x20 a {hosts}-host job, submission to launch: median {launch:.0} ms ({launches} ms); \
             last join {join:.0} ms, durable reply {reply:.1} ms (medians)\n\
             \x20 restart (SIGKILL, same store): all attached again in median {att:.2} s ({atts} s; READY {readys} s)",
            hosts = run.hosts,
            ka = keep_alive(run),
            attach = self.first_attach.as_secs_f64(),
            hb = self.heartbeat_secs,
            beats = self.beats,
            window = self.window.as_secs_f64(),
            cpu = self.daemon_cpu,
            launch = median(launches.clone()),
            launches = list(&launches, 0),
            join = median(joins.clone()),
            reply = median(replies.clone()),
            att = median(attached.clone()),
            atts = list(&attached, 2),
            readys = list(&ready, 2),
        );
        let json = json!({
            "bench": "agents",
            "hosts": run.hosts,
            "open_files": files,
            "keepalive_secs": keep_alive(run),
            "heartbeat_secs": self.heartbeat_secs,
            "first_attach_s": self.first_attach.as_secs_f64(),
            "heartbeats": self.beats,
            "window_s": self.window.as_secs_f64(),
            "daemon_cpu_s": self.daemon_cpu,
            "cpu_per_heartbeat_us": per_beat_us,
            "core_percent": core_share,
            "wide_launch_ms": launches,
            "wide_last_join_ms": joins,
            "wide_reply_ms": replies,
            "restart_attached_s": attached,
            "restart_ready_s": ready,
        });
        Report { text, json }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_names_one_node_per_host_and_parses() {
        let text = config_text(7000, 3, Some(30), Path::new("/k"));
        let settings = qmesh_config::Settings::parse(&text, "t").unwrap();
        let nodes = &settings.node_sets[0].nodes;
        assert_eq!(nodes.len(), 3);
        assert_eq!(
            (nodes[2].name.as_str(), nodes[2].host.as_str()),
            ("h00002", "h00002")
        );
        assert_eq!(settings.heartbeat_secs, 30);
        assert!(!config_text(7000, 1, None, Path::new("/k")).contains("heartbeat"));
    }

    #[test]
    fn the_median_is_the_middle_one() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert!(median(Vec::new()).is_nan());
    }
}
