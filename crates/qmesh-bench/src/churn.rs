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
//!
//! With `array`, the burst is one job array of N sub-jobs (`qsub -J
//! 0-N-1`) instead of N jobs: the same scripts, so the two can be compared.
//! Sub-jobs appear in the log as `job=12[3]` and write `churn.o12.3`; the
//! array itself stays listed until its last sub-job ends, so the wait
//! counts what its `array_state_count` says is left.

mod figures;
mod wait;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chrono::Utc;
use figures::{Cpu, Timing};
use qmesh_proto::v1;
use wait::{Watch, wait_all_ended};

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
    if run.jobs == 0 {
        bail!("--jobs 0: give at least one job to run");
    }
    if run.array && run.rate.is_some() {
        bail!(
            "--array submits one array of --jobs sub-jobs (at least 1) as a burst; leave out --rate"
        );
    }
    let jobs = run.jobs;
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
    let port = crate::daemon::free_port()?;
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
            run.uncontained,
        )?);
    }
    let guard = Agents(children);
    let watch = if run.watch_log {
        Watch::Log(root.join("qmeshd.log"))
    } else {
        Watch::Status
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let timing = runtime.block_on(drive(
        run,
        daemon.socket.clone(),
        &work,
        agents * per_host,
        daemon.pid(),
        &watch,
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
    let measured = figures::measure(&log, &work, jobs, timing, cpu)?;
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
    /// The agents run jobs without cgroups (`--cgroups off`): what
    /// containment costs.
    pub uncontained: bool,
    /// Keep the run's directory (logs, spools, job output) after success.
    pub keep: bool,
    /// The burst is one job array of `jobs` sub-jobs.
    pub array: bool,
    /// Wait for the ends by counting them in the daemon's log, not by
    /// listing the jobs every 50 ms (see `wait.rs`).
    pub watch_log: bool,
}

fn config_text(port: u16, agents: usize, per_host: usize) -> String {
    let mut sets = String::new();
    for h in 0..agents {
        sets.push_str(&format!(
            "\n[[node_set]]\nname = \"h{h}\"\ncount = {per_host}\nhost = \"h{h}\"\n"
        ));
    }
    let names: Vec<String> = (0..agents).map(|h| format!("\"h{h}\"")).collect();
    // Plain TCP, as when the figures in docs/PERFORMANCE.md were first
    // taken: the churn is the scheduler's and the agents', not TLS's.
    // The agents still prove the key the daemon makes in its state
    // directory.
    format!(
        "[agents]\nlisten = \"127.0.0.1:{port}\"\nlocal = false\ntls = false\n\n\
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
    uncontained: bool,
) -> anyhow::Result<Child> {
    let log = std::fs::File::create(root.join(format!("agent-h{h}.log")))?;
    let mut cmd = Command::new(bin);
    if exec_shepherds {
        cmd.arg("--exec-shepherds");
    }
    if uncontained {
        cmd.args(["--cgroups", "off"]);
    }
    cmd.arg("--no-relay")
        .arg("--server")
        .arg(format!("http://127.0.0.1:{port}"))
        // Made by the daemon at its start, which is over by now.
        .arg("--cluster-key-file")
        .arg(Daemon::state_dir(root).join("cluster.key"))
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
    /// A clean stop (SIGTERM), so that each agent removes its cgroups;
    /// one still there after 5 s is killed.
    fn drop(&mut self) {
        for child in &self.0 {
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        for child in &mut self.0 {
            while std::time::Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Submits the run's jobs and waits for the last to end.
async fn drive(
    run: &Run<'_>,
    socket: PathBuf,
    work: &Path,
    nodes: usize,
    daemon_pid: Option<u32>,
    watch: &Watch,
) -> anyhow::Result<Timing> {
    let (jobs, secs, rate, array) = (run.jobs, run.secs, run.rate, run.array);
    let daemon_cpu = || daemon_pid.and_then(CpuTimes::of).unwrap_or_default();
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
        let (go, at_go, submitting) = (Utc::now(), daemon_cpu(), Instant::now());
        let mut every = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        for _ in 0..jobs {
            every.tick().await;
            client
                .submit(request.clone())
                .await
                .map_err(|s| anyhow::anyhow!("a submission failed: {}", s.message()))?;
        }
        let submit_s = submitting.elapsed().as_secs_f64();
        let waited = wait_all_ended(&mut client, go, watch, jobs).await?;
        return Ok(waited.timing(go, at_go, submit_s));
    }
    if array {
        // One submission for them all.
        let request = v1::SubmitRequest {
            array: format!("0-{}", jobs.saturating_sub(1)),
            array_option: "J".into(),
            ..request
        };
        let submitting = Instant::now();
        client
            .submit(request)
            .await
            .map_err(|s| anyhow::anyhow!("the array's submission failed: {}", s.message()))?;
        let submit_s = submitting.elapsed().as_secs_f64();
        let (go, at_go) = (Utc::now(), daemon_cpu());
        admin.qmgr(qmgr("set server scheduling = true")).await?;
        let waited = wait_all_ended(&mut client, go, watch, jobs).await?;
        return Ok(waited.timing(go, at_go, submit_s));
    }
    let submitting = Instant::now();
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
    let submit_s = submitting.elapsed().as_secs_f64();
    let (go, at_go) = (Utc::now(), daemon_cpu());
    admin.qmgr(qmgr("set server scheduling = true")).await?;
    let waited = wait_all_ended(&mut client, go, watch, jobs).await?;
    Ok(waited.timing(go, at_go, submit_s))
}
