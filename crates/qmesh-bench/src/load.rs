//! Load: many `qstat` callers and submitters at once, with clients that
//! stop reading, against one real qmeshd.
//!
//! A private qmeshd (the embedded configuration: 16 nodes and its own
//! agent) is given `--preload` held jobs, so that a listing has real size.
//! Then, for `--secs`:
//!
//! * `--qstat` callers, each a tokio task with its own connection (its
//!   own Unix socket connection and HTTP/2 session, as each `qstat`
//!   process has), each sending qstat's Status request (the one plain
//!   `qstat` sends, `qmesh_cli::qstat::fetch`) again as soon as the last
//!   is answered. Tasks, not processes: 1,000 processes would measure
//!   the 2 cores' fork and exec, not the daemon. Each answer is received
//!   whole, but its jobs are counted, not decoded (`qmesh_proto::served`):
//!   decoding is the work of the callers' hosts, and here it would take
//!   the daemon's cores.
//! * `--submitters` clients, each on its own connection, sending the
//!   durable Submit request of a held job (`qsub -h`) again as soon as
//!   the last is acknowledged. They and the probe run on a thread of
//!   their own, as qsub runs in a process of its own: in the callers'
//!   runtime their answers would wait behind a thousand listings being
//!   taken in, and their latency would measure the bench.
//! * The callers' threads run at `--callers-nice` (19 unless told): they
//!   stand for `watch qstat` on login nodes, not on the daemon's host.
//!   At a few thousand listings a second, taking them in costs as much
//!   CPU as serving them; at the daemon's priority on a 2-core machine
//!   it would be the daemon's CPU that the storm measures.
//! * A probe: every second one job that runs (`true` on one node) is
//!   submitted and awaited (the Wait call): the scheduler's pass, the
//!   agent and the end report still go round.
//! * `--slow-readers` connections that each send a Status request for
//!   every job and never read the answer (`raw_h2.rs`: half stop at
//!   HTTP/2's window, half leave the socket unread). They are opened
//!   before the load and closed after it.
//!
//! Every request must be answered: a failed call counts as an error, and
//! calls still unanswered 120 s after the end count as errors too. The
//! daemon's VmRSS and VmHWM (`/proc/PID/status`) are read every second.

mod raw_h2;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use qmesh_proto::v1::jobs_client::JobsClient;
use qmesh_proto::{served, v1};
use tonic::transport::Channel;

use crate::Report;
use crate::daemon::Daemon;
pub use raw_h2::Stall;

/// What a command reads at most (qmesh-cli's `client::MAX_REPLY`).
const MAX_REPLY: usize = 1 << 30;
/// How long calls still running at the end may take to be answered.
const DRAIN_WITHIN: Duration = Duration::from_secs(120);
/// `qstat -x`'s Status request, encoded by hand (include_finished = 3,
/// report_refused = 7): what a slow reader asks for.
const EVERY_JOB: &[u8] = &[0x18, 0x01, 0x38, 0x01];
const STATUS_PATH: &str = "/qmesh.v1.Jobs/Status";

pub struct Run {
    pub qstat: usize,
    pub submitters: usize,
    pub secs: u64,
    pub preload: usize,
    pub slow_readers: usize,
    /// The callers ask for every attribute (`qstat -f`), not qstat's plain
    /// table.
    pub full: bool,
    /// Each submitter deletes its job once acknowledged (the queue's size
    /// stays the preloaded one).
    pub steady: bool,
    /// The niceness the qstat callers' threads take (0: as the daemon's).
    pub callers_nice: i32,
}

/// The calling thread's niceness raised by `by` (nice(2) is per thread on
/// Linux). The callers stand for other hosts' processes: on this machine
/// their taking in of listings would otherwise take the daemon's cores.
fn lower_priority(by: i32) {
    if by != 0 {
        // SAFETY: nice(2) takes an integer and changes only this thread's
        // scheduling priority.
        unsafe {
            libc::nice(by);
        }
    }
}

/// The Status request of a plain `qstat` (qmesh-cli's `qstat/fetch.rs`),
/// or with `full` of `qstat -f`.
fn qstat_request(full: bool) -> v1::StatusRequest {
    v1::StatusRequest {
        report_refused: true,
        brief: !full,
        ..Default::default()
    }
}

fn held_job(cwd: &str) -> v1::SubmitRequest {
    v1::SubmitRequest {
        hold: true,
        ..crate::submit::request(cwd)
    }
}

fn probe_job(cwd: &str) -> v1::SubmitRequest {
    v1::SubmitRequest {
        script: b"#!/bin/sh\ntrue\n".to_vec(),
        script_name: "probe.sh".into(),
        resources: vec![v1::Resource {
            name: "nodes".into(),
            value: "1".into(),
        }],
        workdir: cwd.to_string(),
        submit_host: "bench".into(),
        stdout_path: "/dev/null".into(),
        stderr_path: "/dev/null".into(),
        ..Default::default()
    }
}

/// One sample of the daemon's memory.
#[derive(Clone, Copy, Debug, Default)]
struct Memory {
    at: f64,
    rss_kb: u64,
    hwm_kb: u64,
    fds: usize,
}

fn memory(pid: u32, since: Instant) -> Memory {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0);
    Memory {
        at: since.elapsed().as_secs_f64(),
        rss_kb: field("VmRSS:"),
        hwm_kb: field("VmHWM:"),
        fds,
    }
}

/// Latencies of one kind of call, and its failures.
#[derive(Default)]
struct Calls {
    latencies: Vec<Duration>,
    errors: usize,
    first_error: Option<String>,
    /// Jobs listed (Status) over all calls.
    listed: usize,
}

impl Calls {
    fn merge(&mut self, other: Calls) {
        self.latencies.extend(other.latencies);
        self.errors += other.errors;
        self.listed += other.listed;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    fn fail(&mut self, why: String) {
        self.errors += 1;
        self.first_error.get_or_insert(why);
    }

    fn summary(&mut self, secs: f64) -> Summary {
        self.latencies.sort();
        let pct = |p: f64| {
            let n = self.latencies.len();
            if n == 0 {
                return 0.0;
            }
            let i = ((n as f64 * p).ceil() as usize).clamp(1, n) - 1;
            self.latencies[i].as_secs_f64() * 1e3
        };
        Summary {
            count: self.latencies.len(),
            per_second: self.latencies.len() as f64 / secs,
            p50: pct(0.50),
            p90: pct(0.90),
            p99: pct(0.99),
            max: pct(1.0),
            errors: self.errors,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Summary {
    count: usize,
    per_second: f64,
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
    errors: usize,
}

impl Summary {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "count": self.count, "per_second": self.per_second, "p50_ms": self.p50,
            "p90_ms": self.p90, "p99_ms": self.p99, "max_ms": self.max, "errors": self.errors,
        })
    }

    fn text(&self, what: &str) -> String {
        format!(
            "{what:<28}{:>8}{:>9.1}{:>10.1}{:>10.1}{:>10.1}{:>10.1}{:>8}",
            self.count, self.per_second, self.p50, self.p90, self.p99, self.max, self.errors
        )
    }
}

pub fn run(qmeshd: &Path, run: &Run) -> anyhow::Result<Vec<Report>> {
    if run.secs == 0 {
        bail!("--secs must be at least 1");
    }
    let dir = tempfile::Builder::new().prefix("qmesh-load-").tempdir()?;
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work)?;
    let cwd = work.display().to_string();
    let (daemon, _) = Daemon::start(qmeshd, dir)?;
    let pid = daemon.pid().context("qmeshd's pid")?;
    let socket = daemon.socket.clone();
    let callers_nice = run.callers_nice;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_start(move || lower_priority(callers_nice))
        .build()?;
    let t0 = Instant::now();
    let mut marks: Vec<(&'static str, Memory)> = Vec::new();
    marks.push(("daemon ready", memory(pid, t0)));
    runtime.block_on(preload(&socket, &cwd, run.preload))?;
    marks.push(("jobs preloaded", memory(pid, t0)));
    let reply_bytes = raw_h2::reply_bytes(&socket, STATUS_PATH, EVERY_JOB)
        .context("read one whole listing by hand")?;

    let mut qstat_clients = runtime.block_on(connect_channels(&socket, run.qstat))?;
    // The submitters and the probe on a thread of their own: each qsub is
    // a process of its own, not a task queued behind a thousand callers
    // taking listings in.
    let submitting = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("submitters")
        .enable_all()
        .build()?;
    let submit_clients = submitting.block_on(connect_many(&socket, run.submitters))?;
    let probe_client = submitting.block_on(connect_many(&socket, 1))?.remove(0);
    marks.push(("clients connected", memory(pid, t0)));
    let mut slow = Vec::new();
    for i in 0..run.slow_readers {
        let stall = if i % 2 == 0 {
            Stall::FlowControl
        } else {
            Stall::Socket
        };
        slow.push(
            raw_h2::call(&socket, STATUS_PATH, EVERY_JOB, stall)
                .with_context(|| format!("open slow reader {i}"))?,
        );
    }
    // Their listings built and handed to the connections.
    let settled = runtime.block_on(async {
        let mut c = JobsClient::new(qstat_clients[0].clone()).max_decoding_message_size(MAX_REPLY);
        c.status(qstat_request(run.full))
            .await
            .map(|r| r.into_inner().jobs.len())
    })?;
    marks.push(("slow readers opened", memory(pid, t0)));

    // Memory every second until the end.
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            while sampling.load(Ordering::Relaxed) {
                samples.push(memory(pid, t0));
                std::thread::sleep(Duration::from_secs(1));
            }
            samples
        })
    };
    let started = Instant::now();
    let load_from = t0.elapsed().as_secs_f64();
    let deadline = started + Duration::from_secs(run.secs);
    let (mut qstat, mut submit, probes) = runtime.block_on(async {
        let mut qstat_tasks = Vec::new();
        for client in qstat_clients.drain(..) {
            qstat_tasks.push(tokio::spawn(qstat_loop(client, deadline, run.full)));
        }
        let mut submit_tasks = Vec::new();
        for client in submit_clients {
            let steady = run.steady;
            submit_tasks.push(submitting.spawn(submit_loop(client, cwd.clone(), deadline, steady)));
        }
        let probe = submitting.spawn(probe_loop(probe_client, cwd.clone(), deadline));
        let drained = deadline + DRAIN_WITHIN;
        let (mut qstat, mut submit) = (Calls::default(), Calls::default());
        for (tasks, calls) in [(qstat_tasks, &mut qstat), (submit_tasks, &mut submit)] {
            for task in tasks {
                match tokio::time::timeout_at(drained.into(), task).await {
                    Ok(Ok(c)) => calls.merge(c),
                    Ok(Err(e)) => calls.fail(format!("a client task failed: {e}")),
                    Err(_) => calls.fail("a call was not answered within 120 s".into()),
                }
            }
        }
        let probes = match tokio::time::timeout_at(drained.into(), probe).await {
            Ok(Ok(p)) => p,
            _ => {
                let mut p = Calls::default();
                p.fail("the probe did not end within 120 s".into());
                p
            }
        };
        (qstat, submit, probes)
    });
    let load_secs = started.elapsed().as_secs_f64();
    let load_to = t0.elapsed().as_secs_f64();
    marks.push(("load over", memory(pid, t0)));
    // The slow readers are still there: is the daemon whole?
    let slow_open = slow.iter().filter(|s| still_open(s)).count();
    drop(slow);
    let after = runtime.block_on(async {
        // Their connections closed and forgotten.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut c = connect_many(&socket, 1).await?.remove(0);
        Ok::<_, anyhow::Error>(
            c.status(qstat_request(run.full))
                .await?
                .into_inner()
                .jobs
                .len(),
        )
    })?;
    marks.push(("slow readers closed", memory(pid, t0)));
    sampling.store(false, Ordering::Relaxed);
    let samples = sampler.join().unwrap_or_default();
    drop(runtime);
    drop(submitting);
    drop(daemon);

    let mut probes = probes;
    let (q, s, p) = (
        qstat.summary(load_secs),
        submit.summary(load_secs),
        probes.summary(load_secs),
    );
    let listed_mean = if q.count == 0 {
        0.0
    } else {
        qstat.listed as f64 / q.count as f64
    };
    let during: Vec<&Memory> = samples
        .iter()
        .filter(|m| m.at >= load_from && m.at <= load_to)
        .collect();
    let peak = during.iter().map(|m| m.rss_kb).max().unwrap_or(0);
    let half = (load_from + load_to) / 2.0;
    let peak_in = |first: bool| {
        during
            .iter()
            .filter(|m| (m.at < half) == first)
            .map(|m| m.rss_kb)
            .max()
            .unwrap_or(0)
    };
    let hwm = samples.iter().map(|m| m.hwm_kb).max().unwrap_or(0);
    let mb = |kb: u64| kb as f64 / 1024.0;
    let mut text = format!(
        "load: {} qstat callers (tokio tasks, one connection each) and {} submitters (held jobs, \
         durable replies{}) for {:.1} s; {} slow readers; {} held jobs preloaded\n\
         a listing at the start: {} jobs, {:.2} MB on the wire; jobs listed per qstat on average: {:.0}; \
         jobs at the end: {}\n\
         {:<28}{:>8}{:>9}{:>10}{:>10}{:>10}{:>10}{:>8}\n{}\n{}\n{}\n",
        run.qstat,
        run.submitters,
        if run.steady {
            ", each deleted once acknowledged"
        } else {
            ""
        },
        load_secs,
        run.slow_readers,
        run.preload,
        settled,
        reply_bytes as f64 / 1e6,
        listed_mean,
        after,
        "call (ms)",
        "count",
        "per s",
        "p50",
        "p90",
        "p99",
        "max",
        "errors",
        q.text("qstat (Status RPC)"),
        s.text("qsub -h (Submit RPC)"),
        p.text("probe: submit to end"),
    );
    for (what, calls) in [("qstat", &qstat), ("submit", &submit), ("probe", &probes)] {
        if let Some(e) = &calls.first_error {
            text.push_str(&format!("first {what} error: {e}\n"));
        }
    }
    text.push_str(&format!(
        "slow readers still connected at the end: {slow_open} of {}\n\
         daemon memory (VmRSS), MB:\n",
        run.slow_readers
    ));
    for (what, m) in &marks {
        text.push_str(&format!(
            "  {what:<22} {:>8.1}  (at {:>5.1} s, {} fds)\n",
            mb(m.rss_kb),
            m.at,
            m.fds
        ));
    }
    text.push_str(&format!(
        "  peak under load        {:>8.1}  (first half {:.1}, second half {:.1})\n  VmHWM                  {:>8.1}",
        mb(peak),
        mb(peak_in(true)),
        mb(peak_in(false)),
        mb(hwm)
    ));
    let json = serde_json::json!({
        "bench": "load",
        "qstat_callers": run.qstat,
        "callers_nice": run.callers_nice,
        "submitters": run.submitters,
        "secs": load_secs,
        "slow_readers": run.slow_readers,
        "slow_readers_open_at_end": slow_open,
        "preload": run.preload,
        "listing_jobs_at_start": settled,
        "listing_bytes_at_start": reply_bytes,
        "jobs_at_end": after,
        "qstat": q.json(),
        "submit": s.json(),
        "probe": p.json(),
        "rss_mb": marks.iter().map(|(w, m)| (w.to_string(), serde_json::Value::from(mb(m.rss_kb)))).collect::<serde_json::Map<_, _>>(),
        "rss_peak_mb": mb(peak),
        "rss_peak_first_half_mb": mb(peak_in(true)),
        "rss_peak_second_half_mb": mb(peak_in(false)),
        "hwm_mb": mb(hwm),
        "rss_samples_mb": samples.iter().map(|m| (m.at, mb(m.rss_kb))).collect::<Vec<_>>(),
    });
    Ok(vec![Report { text, json }])
}

/// Whether the daemon still holds a connection open (nothing to read,
/// or data waiting, but no end of file).
fn still_open(s: &std::os::unix::net::UnixStream) -> bool {
    use nix::sys::socket::{MsgFlags, recv};
    use std::os::fd::AsRawFd;
    let mut buf = [0u8; 1];
    match recv(
        s.as_raw_fd(),
        &mut buf,
        MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT,
    ) {
        Ok(0) => false,
        Ok(_) => true,
        Err(e) => e == nix::errno::Errno::EAGAIN,
    }
}

async fn connect_many(socket: &Path, n: usize) -> anyhow::Result<Vec<JobsClient<Channel>>> {
    let channels = connect_channels(socket, n).await?;
    Ok(channels
        .into_iter()
        .map(|c| JobsClient::new(c).max_decoding_message_size(MAX_REPLY))
        .collect())
}

/// `n` connections of their own.
async fn connect_channels(socket: &Path, n: usize) -> anyhow::Result<Vec<Channel>> {
    let mut tasks = Vec::new();
    for _ in 0..n {
        let socket: PathBuf = socket.to_path_buf();
        tasks.push(tokio::spawn(async move {
            qmesh_proto::endpoint::connect_unix(&socket).await
        }));
    }
    let mut clients = Vec::with_capacity(n);
    for t in tasks {
        clients.push(t.await?.context("connect to qmeshd")?);
    }
    Ok(clients)
}

async fn preload(socket: &Path, cwd: &str, jobs: usize) -> anyhow::Result<()> {
    let clients = connect_many(socket, 16).await?;
    let mut tasks = Vec::new();
    for (i, mut client) in clients.into_iter().enumerate() {
        let share = jobs / 16 + usize::from(i < jobs % 16);
        let request = held_job(cwd);
        tasks.push(tokio::spawn(async move {
            for _ in 0..share {
                client.submit(request.clone()).await?;
            }
            Ok::<_, tonic::Status>(())
        }));
    }
    for t in tasks {
        t.await?
            .map_err(|s| anyhow::anyhow!("preloading failed: {}", s.message()))?;
    }
    Ok(())
}

async fn qstat_loop(channel: Channel, deadline: Instant, full: bool) -> Calls {
    let mut calls = Calls::default();
    // The answer taken in whole, its jobs counted, not decoded.
    let mut client =
        served::jobs_client::JobsClient::new(channel).max_decoding_message_size(MAX_REPLY);
    while Instant::now() < deadline {
        let t = Instant::now();
        match client.status(qstat_request(full)).await {
            Ok(reply) => match reply.into_inner().job_count() {
                Ok(jobs) => {
                    calls.latencies.push(t.elapsed());
                    calls.listed += jobs;
                }
                Err(e) => calls.fail(format!("a listing does not decode: {e}")),
            },
            Err(s) => calls.fail(format!("{:?}: {}", s.code(), s.message())),
        }
    }
    calls
}

async fn submit_loop(
    mut client: JobsClient<Channel>,
    cwd: String,
    deadline: Instant,
    steady: bool,
) -> Calls {
    let mut calls = Calls::default();
    let request = held_job(&cwd);
    while Instant::now() < deadline {
        let t = Instant::now();
        let id = match client.submit(request.clone()).await {
            Ok(reply) => {
                calls.latencies.push(t.elapsed());
                reply.into_inner().job_id
            }
            Err(s) => {
                calls.fail(format!("{:?}: {}", s.code(), s.message()));
                continue;
            }
        };
        if steady {
            let delete = v1::JobsRequest {
                job_ids: vec![id],
                ..Default::default()
            };
            if let Err(s) = client.delete(delete).await {
                calls.fail(format!("qdel: {:?}: {}", s.code(), s.message()));
            }
        }
    }
    calls
}

/// One running job a second, submitted and awaited to its end.
async fn probe_loop(mut client: JobsClient<Channel>, cwd: String, deadline: Instant) -> Calls {
    let mut calls = Calls::default();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while Instant::now() < deadline {
        tick.tick().await;
        let t = Instant::now();
        let id = match client.submit(probe_job(&cwd)).await {
            Ok(reply) => reply.into_inner().job_id,
            Err(s) => {
                calls.fail(format!("submit: {:?}: {}", s.code(), s.message()));
                continue;
            }
        };
        match client.wait(v1::WaitRequest { job_id: id }).await {
            Ok(info) if info.get_ref().exit_status == Some(0) => calls.latencies.push(t.elapsed()),
            Ok(info) => calls.fail(format!(
                "probe job {} ended with {:?} ({})",
                info.get_ref().id,
                info.get_ref().exit_status,
                info.get_ref().state_letter
            )),
            Err(s) => calls.fail(format!("wait: {:?}: {}", s.code(), s.message())),
        }
    }
    calls
}
