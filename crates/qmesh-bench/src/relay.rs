//! Relay: what a user on a login node waits for, against a user on the
//! daemon's own host. On the daemon's host a command speaks gRPC to
//! qmeshd's Unix socket; on a login node it speaks to the host's
//! `qmesh-agent --submit-only`, which relays each call over TCP to the
//! daemon's agents' port with the caller's identity. The difference is
//! the relay's price: one more hop, one more HTTP/2 stream, the caller's
//! names looked up.
//!
//! One private qmeshd (a flat set of 4 nodes on host `bench`, none of
//! them up: no compute agent runs) listens for agents on 127.0.0.1 with a
//! cluster key, over TLS with its own cluster CA (the default: the
//! agent enrols at its start, and its certificate vouches for what it
//! relays), and lets host `login1` in (`qmgr -c "set server submit_hosts
//! += login1"`: the configuration file's `[server]` takes no access
//! lists). A submit-only
//! agent for `login1` relays on its own socket, on the same machine, so
//! the network is loopback: the figures are the relay's own cost, not a
//! network's.
//!
//! Measured, each through both sockets, samples alternated between the two
//! (and which goes first alternated too) so that drift in the machine's
//! speed falls on both alike:
//!
//! * the Status RPC listing every job (what qstat asks), with 100 held
//!   jobs queued, on one long-lived connection per socket;
//! * the Submit RPC of a small held job, on the same connections: its
//!   reply waits for the store's flush, so the disk dominates;
//! * the real `qstat` and `qsub -h` binaries, spawned with QMESH_SOCKET
//!   naming each socket: the wall time a user sees, process start and
//!   connection included.
//!
//! Jobs are all held (`hold: true`, `qsub -h`): nothing tries to run. The
//! Status figures and the qstat runs come before any Submit, so they list
//! the 100 seeded jobs and no more.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use qmesh_proto::v1;
use qmesh_proto::v1::jobs_client::JobsClient;
use tonic::transport::Channel;

use crate::Report;
use crate::daemon::Daemon;

/// Calls discarded before each RPC measurement, per socket.
const WARMUP_CALLS: usize = 50;
/// Runs discarded before each command measurement, per socket.
const WARMUP_COMMANDS: usize = 5;
/// Held jobs queued before the Status figures.
const QUEUED: usize = 100;
/// The login node's host name, as the daemon's submit_hosts lets it in.
const LOGIN_HOST: &str = "login1";
/// How long the relay may take to serve its first Status.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// What to measure.
pub struct Run {
    /// Status RPCs per socket.
    pub status_samples: usize,
    /// Submit RPCs per socket.
    pub submit_samples: usize,
    /// Runs of each command (qstat, qsub -h) per socket.
    pub command_samples: usize,
}

pub fn run(qmeshd: &Path, run: &Run) -> anyhow::Result<Vec<Report>> {
    if run.status_samples == 0 || run.submit_samples == 0 || run.command_samples == 0 {
        bail!("--samples and --command-samples must each be at least 1");
    }
    let bin_dir = std::env::current_exe().context("find qmesh-bench's own path")?;
    let qstat = sibling(&bin_dir, "qstat")?;
    let qsub = sibling(&bin_dir, "qsub")?;
    let agent_bin = qmeshd.with_file_name("qmesh-agent");
    if !agent_bin.is_file() {
        bail!(
            "cannot find qmesh-agent next to qmeshd ({}); build it (cargo build --release -p qmesh)",
            agent_bin.display()
        );
    }
    let (load, cpus) = (load_average(), cpus_allowed());

    let dir = tempfile::Builder::new().prefix("qmesh-relay-").tempdir()?;
    let root = dir.path().to_path_buf();
    let work = root.join("work");
    std::fs::create_dir_all(&work)?;
    let key = root.join("cluster.key");
    write_key(&key)?;
    let port = crate::daemon::free_port()?;
    let config = root.join("qmesh.toml");
    std::fs::write(&config, config_text(port, &key))?;
    // Declared before the agent, so dropped after it: on an error the
    // agent goes first, then the daemon.
    let (daemon, _) = Daemon::start_configured(qmeshd, dir, Some(&config), "warn")?;
    let relay = root.join("relay.sock");
    let agent_log = root.join("agent-login1.log");
    let mut agent = Agent(start_agent(
        &agent_bin,
        port,
        &key,
        (&relay, &root.join("spool-login1")),
        &agent_log,
    )?);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (status, submit) = runtime.block_on(async {
        let daemon_channel = qmesh_proto::endpoint::connect_unix(&daemon.socket)
            .await
            .with_context(|| format!("connect to qmeshd at {}", daemon.socket.display()))?;
        let_login_in(daemon_channel.clone()).await?;
        let login = await_relay(&relay, &mut agent, &agent_log).await?;
        let mut on_daemon = JobsClient::new(daemon_channel);
        let mut on_login = JobsClient::new(login);
        let held = held_job(&work);
        for _ in 0..QUEUED {
            on_daemon
                .submit(held.clone())
                .await
                .map_err(|s| anyhow::anyhow!("queueing the held jobs failed: {}", s.message()))?;
        }
        same_listing(&mut on_daemon, &mut on_login).await?;
        let status = pair(
            &mut on_daemon,
            &mut on_login,
            Rpc::Status,
            run.status_samples,
            &held,
        )
        .await
        .context("the Status RPCs")?;
        // Kept for after the commands: Submit grows the queue qstat lists.
        Ok::<_, anyhow::Error>((status, (on_daemon, on_login, held)))
    })?;

    let script = work.join("tiny.sh");
    std::fs::write(&script, "#!/bin/sh\ntrue\n")?;
    let script_arg = script.display().to_string();
    let sockets = [&daemon.socket, &relay];
    let qstat_times = commands(&qstat, &[], sockets, &work, run.command_samples)?;

    let (mut on_daemon, mut on_login, held) = submit;
    let submit = runtime
        .block_on(pair(
            &mut on_daemon,
            &mut on_login,
            Rpc::Submit,
            run.submit_samples,
            &held,
        ))
        .context("the Submit RPCs")?;
    drop((on_daemon, on_login));
    drop(runtime);
    let qsub_times = commands(
        &qsub,
        &["-h", &script_arg],
        sockets,
        &work,
        run.command_samples,
    )?;

    drop(agent);
    drop(daemon);
    let rows = [
        Row::new("status_rpc", "Status RPC (all jobs)", status),
        Row::new("submit_rpc", "Submit RPC (held job)", submit),
        Row::new("qstat", "qstat (whole command)", qstat_times),
        Row::new("qsub", "qsub -h (whole command)", qsub_times),
    ];
    let header = format!(
        "relay: the same calls from a login node (qmesh-agent --submit-only, relaying over \
         TCP on 127.0.0.1) and from the daemon's host (its Unix socket); {QUEUED} held jobs \
         queued for the listings; samples alternated; times in µs\n\
         load average at the start: {load}; CPUs allowed: {cpus}\n\
         {:<26}{:<8}{:>8}{:>10}{:>10}{:>10}",
        "call", "from", "samples", "median", "p90", "p99"
    );
    Ok(rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let text = row.text();
            Report {
                text: if i == 0 {
                    format!("{header}\n{text}")
                } else {
                    text
                },
                json: row.json(&load, &cpus),
            }
        })
        .collect())
}

fn sibling(exe: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let path = exe.with_file_name(name);
    if !path.is_file() {
        bail!(
            "cannot find {name} next to qmesh-bench ({}); build the commands (cargo build --release -p qmesh)",
            path.display()
        );
    }
    Ok(path)
}

/// A key the daemon and the agent share, readable by its owner only.
fn write_key(path: &Path) -> anyhow::Result<()> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let mut file = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("write the cluster key {}", path.display()))?;
    writeln!(file, "qmesh-bench-relay-{}-{nanos}", std::process::id())?;
    Ok(())
}

fn config_text(port: u16, key: &Path) -> String {
    format!(
        "[agents]\nlisten = \"127.0.0.1:{port}\"\nlocal = false\ncluster_key_file = \"{}\"\n\n\
         [server]\ndefault_queue = \"relay\"\n\n\
         [[queue]]\nname = \"relay\"\nnode_sets = [\"bench\"]\n\n\
         [[node_set]]\nname = \"bench\"\ncount = 4\nhost = \"bench\"\n",
        key.display()
    )
}

/// `submit_hosts += login1`, as qmgr on the daemon's host: the file's
/// `[server]` section takes only qmgr's own attributes (attrs.rs), not
/// the PBS access lists such as submit_hosts.
async fn let_login_in(channel: Channel) -> anyhow::Result<()> {
    let mut admin = v1::admin_client::AdminClient::new(channel);
    admin
        .qmgr(v1::QmgrRequest {
            script: format!("set server submit_hosts += {LOGIN_HOST}"),
            source: "-c".into(),
            check_only: false,
        })
        .await
        .map_err(|s| {
            anyhow::anyhow!(
                "qmgr -c \"set server submit_hosts += {LOGIN_HOST}\" failed: {}",
                s.message()
            )
        })?;
    Ok(())
}

/// The login node's agent, relaying on `relay` and keeping its
/// certificate under `spool`.
fn start_agent(
    bin: &Path,
    port: u16,
    key: &Path,
    (relay, spool): (&Path, &Path),
    log: &Path,
) -> anyhow::Result<Child> {
    let log = std::fs::File::create(log)?;
    Command::new(bin)
        .arg("--submit-only")
        .arg("--host")
        .arg(LOGIN_HOST)
        .arg("--server")
        .arg(format!("https://127.0.0.1:{port}"))
        .arg("--cluster-key-file")
        .arg(key)
        .arg("--relay-socket")
        .arg(relay)
        .arg("--spool")
        .arg(spool)
        .arg("--log-level")
        .arg("warn")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("start {}", bin.display()))
}

/// The login node's agent, killed when dropped.
struct Agent(Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until the relay socket takes a connection and a Status through
/// it succeeds (the daemon let the host in); returns that connection.
async fn await_relay(relay: &Path, agent: &mut Agent, log: &Path) -> anyhow::Result<Channel> {
    let started = Instant::now();
    let mut backoff = Duration::from_millis(10);
    let last = loop {
        if let Some(status) = agent.0.try_wait()? {
            bail!(
                "qmesh-agent --submit-only exited early ({status}); its log:\n{}",
                tail(log)
            );
        }
        let error = match qmesh_proto::endpoint::connect_unix(relay).await {
            Ok(channel) => {
                let mut client = JobsClient::new(channel.clone());
                match client.status(v1::StatusRequest::default()).await {
                    Ok(_) => return Ok(channel),
                    Err(s) => format!("Status through it failed: {}", s.message()),
                }
            }
            Err(e) => format!("cannot connect: {e}"),
        };
        if started.elapsed() >= READY_WITHIN {
            break error;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_millis(500));
    };
    bail!(
        "the login node's relay {} did not serve within {} s (last: {last}); the agent's log:\n{}",
        relay.display(),
        READY_WITHIN.as_secs(),
        tail(log)
    )
}

/// The last lines of a log, for an error message.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let shown = lines[lines.len().saturating_sub(20)..].join("\n");
    if shown.is_empty() {
        "(empty)".into()
    } else {
        shown
    }
}

/// A small held job: it waits in the queue and never runs.
fn held_job(work: &Path) -> v1::SubmitRequest {
    v1::SubmitRequest {
        hold: true,
        ..crate::submit::request(&work.display().to_string())
    }
}

/// Both sockets list the same jobs: otherwise the Status figures would
/// compare different replies.
async fn same_listing(
    on_daemon: &mut JobsClient<Channel>,
    on_login: &mut JobsClient<Channel>,
) -> anyhow::Result<()> {
    let all = v1::StatusRequest::default;
    let here = on_daemon.status(all()).await?.into_inner().jobs.len();
    let there = on_login.status(all()).await?.into_inner().jobs.len();
    if here != QUEUED || there != QUEUED {
        bail!(
            "the daemon's socket lists {here} jobs and the login node's {there}; expected {QUEUED} on both"
        );
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Rpc {
    Status,
    Submit,
}

/// One call, timed from the request's send to its reply's decoding.
async fn call(
    client: &mut JobsClient<Channel>,
    rpc: Rpc,
    held: &v1::SubmitRequest,
) -> Result<Duration, tonic::Status> {
    match rpc {
        Rpc::Status => {
            let started = Instant::now();
            let reply = client.status(v1::StatusRequest::default()).await?;
            let took = started.elapsed();
            std::hint::black_box(reply);
            Ok(took)
        }
        Rpc::Submit => {
            let request = held.clone();
            let started = Instant::now();
            let reply = client.submit(request).await?;
            let took = started.elapsed();
            std::hint::black_box(reply);
            Ok(took)
        }
    }
}

/// `samples` calls through each socket, alternated, after the warm-up.
async fn pair(
    on_daemon: &mut JobsClient<Channel>,
    on_login: &mut JobsClient<Channel>,
    rpc: Rpc,
    samples: usize,
    held: &v1::SubmitRequest,
) -> anyhow::Result<Pair> {
    let mut times = Pair::with_capacity(samples);
    for i in 0..WARMUP_CALLS + samples {
        let (daemon_first, keep) = (i % 2 == 0, i >= WARMUP_CALLS);
        let one = async |client: &mut JobsClient<Channel>, from: &str| {
            call(client, rpc, held)
                .await
                .map_err(|s| anyhow::anyhow!("a call from the {from} failed: {}", s.message()))
        };
        let (d, l) = if daemon_first {
            let d = one(on_daemon, "daemon's host").await?;
            (d, one(on_login, "login node").await?)
        } else {
            let l = one(on_login, "login node").await?;
            (one(on_daemon, "daemon's host").await?, l)
        };
        if keep {
            times.daemon.push(d);
            times.login.push(l);
        }
    }
    Ok(times)
}

/// `samples` runs of the command through each socket, alternated, after a
/// short warm-up (the binary and its libraries into the page cache).
fn commands(
    bin: &Path,
    args: &[&str],
    sockets: [&PathBuf; 2],
    cwd: &Path,
    samples: usize,
) -> anyhow::Result<Pair> {
    let mut times = Pair::with_capacity(samples);
    for i in 0..WARMUP_COMMANDS + samples {
        let (daemon_first, keep) = (i % 2 == 0, i >= WARMUP_COMMANDS);
        let (d, l) = if daemon_first {
            let d = command(bin, args, sockets[0], cwd)?;
            (d, command(bin, args, sockets[1], cwd)?)
        } else {
            let l = command(bin, args, sockets[1], cwd)?;
            (command(bin, args, sockets[0], cwd)?, l)
        };
        if keep {
            times.daemon.push(d);
            times.login.push(l);
        }
    }
    Ok(times)
}

/// One run of a command as a user runs it: spawned, its output read, its
/// exit awaited.
fn command(bin: &Path, args: &[&str], socket: &Path, cwd: &Path) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let out = Command::new(bin)
        .args(args)
        .env(qmesh_proto::endpoint::SOCKET_ENV, socket)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("run {}", bin.display()))?;
    let took = started.elapsed();
    if !out.status.success() {
        bail!(
            "{} {} with QMESH_SOCKET={} failed ({}): {}",
            bin.display(),
            args.join(" "),
            socket.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(took)
}

/// The same measurement through the two sockets.
struct Pair {
    daemon: Vec<Duration>,
    login: Vec<Duration>,
}

impl Pair {
    fn with_capacity(n: usize) -> Pair {
        Pair {
            daemon: Vec::with_capacity(n),
            login: Vec::with_capacity(n),
        }
    }
}

/// Median, p90 and p99 in µs.
#[derive(Clone, Copy)]
struct Stats {
    samples: usize,
    median: f64,
    p90: f64,
    p99: f64,
}

impl Stats {
    fn of(mut times: Vec<Duration>) -> Stats {
        times.sort();
        let pct = |p: f64| {
            times
                .get(((times.len() as f64 - 1.0) * p) as usize)
                .map_or(0.0, |d| d.as_secs_f64() * 1e6)
        };
        Stats {
            samples: times.len(),
            median: pct(0.50),
            p90: pct(0.90),
            p99: pct(0.99),
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "samples": self.samples, "median_us": self.median,
            "p90_us": self.p90, "p99_us": self.p99,
        })
    }
}

/// One line of the table: a call from both places.
struct Row {
    key: &'static str,
    label: &'static str,
    daemon: Stats,
    login: Stats,
}

impl Row {
    fn new(key: &'static str, label: &'static str, pair: Pair) -> Row {
        Row {
            key,
            label,
            daemon: Stats::of(pair.daemon),
            login: Stats::of(pair.login),
        }
    }

    fn diff(&self) -> f64 {
        self.login.median - self.daemon.median
    }

    fn text(&self) -> String {
        let line = |label: &str, from: &str, s: &Stats| {
            format!(
                "{label:<26}{from:<8}{:>8}{:>10.1}{:>10.1}{:>10.1}",
                s.samples, s.median, s.p90, s.p99
            )
        };
        let ratio = if self.daemon.median > 0.0 {
            format!(" (x{:.2})", self.login.median / self.daemon.median)
        } else {
            String::new()
        };
        format!(
            "{}\n{}\n{:<26}login - daemon, medians: {:+.1} µs{ratio}",
            line(self.label, "daemon", &self.daemon),
            line("", "login", &self.login),
            "",
            self.diff()
        )
    }

    fn json(&self, load: &str, cpus: &str) -> serde_json::Value {
        serde_json::json!({
            "bench": "relay", "call": self.key, "queued": QUEUED,
            "daemon": self.daemon.json(), "login": self.login.json(),
            "median_diff_us": self.diff(),
            "load_average": load, "cpus_allowed": cpus,
        })
    }
}

/// The 1, 5 and 15 minute load averages, as /proc/loadavg says them.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

/// The CPUs this process (and so the daemon and agent it starts) may run
/// on: `taskset -c 1` puts all three on one CPU.
fn cpus_allowed() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank_in_microseconds() {
        let times = (1..=100).map(Duration::from_micros).collect();
        let s = Stats::of(times);
        assert_eq!(s.samples, 100);
        assert_eq!(s.median, 50.0);
        assert_eq!(s.p90, 90.0);
        assert_eq!(s.p99, 99.0);
    }

    #[test]
    fn the_configuration_listens_for_agents_with_a_key() {
        let text = config_text(4242, Path::new("/tmp/k"));
        assert!(text.contains("listen = \"127.0.0.1:4242\""), "{text}");
        assert!(text.contains("cluster_key_file = \"/tmp/k\""), "{text}");
        assert!(text.contains("local = false"), "{text}");
    }
}
