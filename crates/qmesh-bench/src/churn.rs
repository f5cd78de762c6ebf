//! Churn: many short jobs through many agents, on the real binaries. A
//! qmeshd listens on TCP; `agents` qmesh-agent processes serve a host each
//! (`nodes` nodes in all). In a burst the jobs are submitted with
//! scheduling off, then scheduling is switched on; with a rate, one job is
//! submitted every 1/rate s with scheduling on (latency below saturation).
//! The clock runs until the last job has ended.
//!
//! Each job is `sleep SECS` in bash, which first prints bash's
//! `$EPOCHREALTIME`: the moment the script runs. The daemon's log (info)
//! says when the pass decided each start ("starting") and when each end
//! was recorded ("job ended"). Decision-to-exec latency is the script's
//! moment less the decision's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};
use qmesh_proto::v1;

use crate::Report;
use crate::cpu::CpuTimes;
use crate::daemon::Daemon;

pub fn run(qmeshd: &Path, run: &Run) -> anyhow::Result<Report> {
    if let Some(rate) = run.rate
        && !(rate.is_finite() && rate > 0.0)
    {
        bail!(
            "--rate {rate} is not a rate; give jobs per second above 0, or leave it out for a burst"
        );
    }
    let (jobs, secs) = (run.jobs, run.secs);
    let agents = run.agents.max(1);
    let per_host = run.nodes.div_ceil(agents).max(1);
    let mut builder = tempfile::Builder::new();
    builder.prefix("qmesh-churn-");
    let dir = match run.dir {
        Some(parent) => builder.tempdir_in(parent)?,
        None => builder.tempdir()?,
    };
    let root = dir.path().to_path_buf();
    let work = root.join("work");
    std::fs::create_dir_all(&work)?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let config = root.join("qmesh.toml");
    std::fs::write(&config, config_text(port, agents, per_host))?;
    let (mut daemon, _) =
        Daemon::start_configured(qmeshd, dir, Some(&config), run.daemon_log_level)?;
    let agent_bin = qmeshd.with_file_name("qmesh-agent");
    let mut children = Vec::new();
    for h in 0..agents {
        children.push(start_agent(
            &agent_bin,
            &root,
            port,
            h,
            run.agent_log_level,
            run.exec_shepherds,
        )?);
    }
    let guard = Agents(children);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let timing = runtime.block_on(drive(
        daemon.socket.clone(),
        &work,
        jobs,
        agents * per_host,
        secs,
        run.rate,
    ));
    // Shepherds are the zygotes' children (see qmesh-agent's zygote.rs):
    // their time counts once the zygotes have reaped them all.
    let agent_pids: Vec<u32> = guard.0.iter().map(|c| c.id()).collect();
    let zygotes = crate::cpu::zygotes_of(&agent_pids);
    crate::cpu::await_reaped(&zygotes, Duration::from_secs(5));
    let cpu = Cpu {
        daemon: daemon.pid().and_then(CpuTimes::of).unwrap_or_default(),
        agents: agent_pids
            .iter()
            .chain(&zygotes)
            .filter_map(|&pid| CpuTimes::of(pid))
            .fold(CpuTimes::default(), |a, b| a + b),
    };
    if timing.is_err() {
        // What every process was doing when the run gave up.
        if let Ok(ps) = Command::new("ps")
            .args(["-eo", "pid,ppid,stat,wchan:32,etime,args"])
            .output()
        {
            let _ = std::fs::write(root.join("ps.txt"), ps.stdout);
        }
    }
    drop(guard);
    daemon.stop();
    let timing = match timing {
        Ok(t) => t,
        Err(e) => {
            // Keep the logs and spools of a failed run: they are the evidence.
            daemon.dir.disable_cleanup(true);
            return Err(e.context(format!(
                "the churn run failed; its logs are kept in {}",
                root.display()
            )));
        }
    };
    let log = std::fs::read_to_string(root.join("qmeshd.log"))?;
    let measured = measure(&log, &work, jobs, timing, cpu)?;
    if run.keep {
        daemon.dir.disable_cleanup(true);
        eprintln!(
            "the run's logs, spools and job output are kept in {}",
            root.display()
        );
    }
    drop(daemon);
    Ok(measured.report(run, agents * per_host))
}

/// What to run.
pub struct Run<'a> {
    pub jobs: usize,
    pub agents: usize,
    /// In all, shared out among the agents' hosts.
    pub nodes: usize,
    /// Each job's run time.
    pub secs: f64,
    pub agent_log_level: &'a str,
    pub daemon_log_level: &'a str,
    /// The parent of the run's directory; the temporary directory if none.
    pub dir: Option<&'a Path>,
    /// Jobs submitted per second, scheduling on; `None`: all submitted
    /// first, then scheduling switched on (a burst).
    pub rate: Option<f64>,
    /// The agents exec their shepherds (no zygote).
    pub exec_shepherds: bool,
    /// Keep the run's directory (logs, spools, job output) after success.
    pub keep: bool,
}

fn config_text(port: u16, agents: usize, per_host: usize) -> String {
    let mut sets = String::new();
    for h in 0..agents {
        sets.push_str(&format!(
            "\n[[node_set]]\nname = \"h{h}\"\ncount = {per_host}\nhost = \"h{h}\"\n"
        ));
    }
    let names: Vec<String> = (0..agents).map(|h| format!("\"h{h}\"")).collect();
    format!(
        "[agents]\nlisten = \"127.0.0.1:{port}\"\nlocal = false\n\n\
         [server]\ndefault_queue = \"churn\"\n\n\
         [[queue]]\nname = \"churn\"\nnode_sets = [{}]\n{sets}",
        names.join(", ")
    )
}

fn start_agent(
    bin: &Path,
    root: &Path,
    port: u16,
    h: usize,
    log_level: &str,
    exec_shepherds: bool,
) -> anyhow::Result<Child> {
    let log = std::fs::File::create(root.join(format!("agent-h{h}.log")))?;
    let mut cmd = Command::new(bin);
    if exec_shepherds {
        cmd.arg("--exec-shepherds");
    }
    cmd.arg("--server")
        .arg(format!("http://127.0.0.1:{port}"))
        .arg("--host")
        .arg(format!("h{h}"))
        .arg("--spool")
        .arg(root.join(format!("spool-h{h}")))
        .arg("--log-level")
        .arg(log_level)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("start {}", bin.display()))
}

/// Kills the agents, and with them nothing else: their shepherds have
/// finished by then.
struct Agents(Vec<Child>);

impl Drop for Agents {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

struct Timing {
    /// When scheduling was switched on.
    go: DateTime<Utc>,
    /// When the last job was seen finished.
    done: DateTime<Utc>,
}

async fn drive(
    socket: PathBuf,
    work: &Path,
    jobs: usize,
    nodes: usize,
    secs: f64,
    rate: Option<f64>,
) -> anyhow::Result<Timing> {
    let channel = qmesh_proto::endpoint::connect_unix(&socket).await?;
    let mut admin = v1::admin_client::AdminClient::new(channel.clone());
    let mut client = v1::jobs_client::JobsClient::new(channel);
    let qmgr = |script: &str| v1::QmgrRequest {
        script: script.into(),
        source: "-c".into(),
        check_only: false,
    };
    admin.qmgr(qmgr("set server scheduling = false")).await?;
    // Every agent connected: all nodes up.
    let waited = Instant::now();
    loop {
        let reply = client
            .nodes(v1::NodesRequest::default())
            .await?
            .into_inner();
        if reply.nodes.len() == nodes && reply.nodes.iter().all(|n| n.up) {
            break;
        }
        if waited.elapsed() > Duration::from_secs(60) {
            bail!("the agents did not all connect within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let script = format!("#!/bin/bash\necho $EPOCHREALTIME\nsleep {secs}\n").into_bytes();
    let request = v1::SubmitRequest {
        script,
        script_name: "churn".into(),
        workdir: work.display().to_string(),
        submit_host: "bench".into(),
        resources: vec![v1::Resource {
            name: "walltime".into(),
            value: "60".into(),
        }],
        ..Default::default()
    };
    if let Some(rate) = rate {
        // Offered load: one job every 1/rate s with scheduling on, so that
        // below saturation each start is measured on its own.
        admin.qmgr(qmgr("set server scheduling = true")).await?;
        let go = Utc::now();
        let mut every = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        for _ in 0..jobs {
            every.tick().await;
            client
                .submit(request.clone())
                .await
                .map_err(|s| anyhow::anyhow!("a submission failed: {}", s.message()))?;
        }
        return wait_all_ended(&mut client, go).await;
    }
    let mut tasks = Vec::new();
    let clients = 16;
    for i in 0..clients {
        let share = jobs / clients + usize::from(i < jobs % clients);
        let mut c = client.clone();
        let request = request.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..share {
                c.submit(request.clone()).await?;
            }
            Ok::<_, tonic::Status>(())
        }));
    }
    for t in tasks {
        t.await?
            .map_err(|s| anyhow::anyhow!("a submission failed: {}", s.message()))?;
    }
    let go = Utc::now();
    admin.qmgr(qmgr("set server scheduling = true")).await?;
    wait_all_ended(&mut client, go).await
}

/// Until no job is left; an error after 60 s without an end or 600 s in all.
async fn wait_all_ended(
    client: &mut v1::jobs_client::JobsClient<tonic::transport::Channel>,
    go: DateTime<Utc>,
) -> anyhow::Result<Timing> {
    let (mut left, mut progress) = (usize::MAX, Instant::now());
    loop {
        let reply = client
            .status(v1::StatusRequest::default())
            .await?
            .into_inner();
        if reply.jobs.is_empty() {
            break;
        }
        if reply.jobs.len() < left {
            (left, progress) = (reply.jobs.len(), Instant::now());
        }
        if progress.elapsed() > Duration::from_secs(60) {
            let ids: Vec<&str> = reply.jobs.iter().take(10).map(|j| j.id.as_str()).collect();
            bail!(
                "{} jobs still unfinished and none ended for 60 s: {}",
                reply.jobs.len(),
                ids.join(" ")
            );
        }
        if Utc::now() - go > chrono::Duration::seconds(600) {
            bail!("{} jobs still unfinished after 600 s", reply.jobs.len());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(Timing {
        go,
        done: Utc::now(),
    })
}

/// CPU seconds at the end of a run.
#[derive(Clone, Copy, Debug)]
struct Cpu {
    daemon: CpuTimes,
    /// The agents' own (and their zygotes'), and as children their
    /// shepherds and jobs.
    agents: CpuTimes,
}

struct Measured {
    cpu: Cpu,
    starts_per_s: f64,
    ends_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    wall_s: f64,
}

/// `2026-11-23T08:30:45.591300Z  INFO ... job=17.srv ...` → (time, "17").
fn log_event<'a>(line: &'a str, what: &str) -> Option<(DateTime<Utc>, &'a str)> {
    if !line.contains(what) {
        return None;
    }
    let time = DateTime::parse_from_rfc3339(line.split_whitespace().next()?).ok()?;
    let job = line.split("job=").nth(1)?.split(['.', ' ']).next()?;
    Some((time.with_timezone(&Utc), job))
}

fn measure(
    log: &str,
    work: &Path,
    jobs: usize,
    timing: Timing,
    cpu: Cpu,
) -> anyhow::Result<Measured> {
    let mut decided: HashMap<String, DateTime<Utc>> = HashMap::new();
    let mut ended = Vec::new();
    for line in log.lines() {
        if let Some((t, job)) = log_event(line, "starting") {
            decided.insert(job.to_string(), t);
        } else if let Some((t, _)) = log_event(line, "job ended") {
            ended.push(t);
        }
    }
    let mut latencies = Vec::new();
    let mut last_exec = timing.go;
    for entry in std::fs::read_dir(work)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(seq) = name.strip_prefix("churn.o") else {
            continue;
        };
        let text = std::fs::read_to_string(entry.path())?;
        let Some(at) = text.trim().parse::<f64>().ok() else {
            continue;
        };
        let exec = DateTime::from_timestamp_micros((at * 1e6) as i64).unwrap_or(timing.go);
        last_exec = last_exec.max(exec);
        if let Some(&d) = decided.get(seq) {
            latencies.push((exec - d).num_microseconds().unwrap_or(0) as f64 / 1e3);
        }
    }
    if latencies.len() < jobs {
        bail!(
            "{} of {jobs} jobs left an exec time and a decision in the log",
            latencies.len()
        );
    }
    latencies.sort_by(f64::total_cmp);
    let pct = |p: f64| latencies[((latencies.len() - 1) as f64 * p) as usize];
    let last_end = ended.iter().max().copied().unwrap_or(timing.done);
    let secs = |to: DateTime<Utc>| (to - timing.go).num_microseconds().unwrap_or(1) as f64 / 1e6;
    Ok(Measured {
        cpu,
        starts_per_s: jobs as f64 / secs(last_exec),
        ends_per_s: jobs as f64 / secs(last_end),
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
        max_ms: latencies[latencies.len() - 1],
        wall_s: secs(timing.done),
    })
}

impl Measured {
    fn report(&self, run: &Run, nodes: usize) -> Report {
        let (jobs, secs, agents) = (run.jobs, run.secs, run.agents.max(1));
        let offered = run
            .rate
            .map_or_else(|| "a burst".to_string(), |r| format!("{r} jobs/s"));
        let shepherds = if run.exec_shepherds {
            "exec'd"
        } else {
            "forked by zygotes"
        };
        Report {
            text: format!(
                "churn: {jobs} jobs of {secs} s ({offered}) through {agents} agents ({nodes} nodes), \
                 shepherds {shepherds}: \
                 {:.0} starts/s, {:.0} ends/s (all done in {:.1} s); decision to exec \
                 p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; CPU: qmeshd {:.1} s, agents {:.1} s, \
                 shepherds and jobs {:.1} s",
                self.starts_per_s,
                self.ends_per_s,
                self.wall_s,
                self.p50_ms,
                self.p99_ms,
                self.max_ms,
                self.cpu.daemon.own,
                self.cpu.agents.own,
                self.cpu.agents.children,
            ),
            json: serde_json::json!({
                "bench": "churn", "jobs": jobs, "agents": agents, "nodes": nodes,
                "job_secs": secs, "rate": run.rate, "exec_shepherds": run.exec_shepherds,
                "starts_per_second": self.starts_per_s,
                "ends_per_second": self.ends_per_s, "wall_seconds": self.wall_s,
                "exec_latency_p50_ms": self.p50_ms, "exec_latency_p99_ms": self.p99_ms,
                "exec_latency_max_ms": self.max_ms,
                "cpu_seconds_qmeshd": self.cpu.daemon.own,
                "cpu_seconds_agents": self.cpu.agents.own,
                "cpu_seconds_shepherds_and_jobs": self.cpu.agents.children,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_give_the_time_and_the_job() {
        let line =
            "2026-11-23T08:30:45.591300Z  INFO qmeshd::task: starting job=17.srv nodes=h0n03";
        let (t, job) = log_event(line, "starting").unwrap();
        assert_eq!(job, "17");
        assert_eq!(t.timestamp_subsec_micros(), 591_300);
        assert!(log_event(line, "job ended").is_none());
    }
}
