//! `qmesh-bench qsub`: short jobs through the real `qsub`, as a user's
//! shell loops send them, against qmeshd on its embedded default
//! configuration (one host, its local agent, containment, accounting and
//! fdatasync on): jobs per second from the first submission until every
//! job has ended, and the CPU each job cost qmeshd, its agent and the
//! agent's zygote.
//!
//! Why a benchmark of its own: `churn` drives the daemon over gRPC with
//! agents it starts itself, which is the scheduler's throughput; this is
//! what a site sees, process start of each `qsub` included, and it runs
//! any build's binaries (`--bindir`), so a build from before a change can
//! be measured beside the one after, in one run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::Report;
use crate::cpu::CpuTimes;
use crate::daemon::Daemon;

pub struct Run<'a> {
    pub jobs: usize,
    /// Shell loops submitting at once, each its share of the jobs.
    pub loops: usize,
    /// Where `qsub` and `qstat` are (default: next to qmesh-bench).
    pub bindir: Option<&'a Path>,
    /// Where the state and the jobs' output go (default: the temporary
    /// directory).
    pub dir: Option<&'a Path>,
}

/// The CPU of the three processes that serve a job on one host.
#[derive(Clone, Copy, Debug, Default)]
struct Served {
    daemon: CpuTimes,
    agent: CpuTimes,
    zygote: CpuTimes,
}

impl Served {
    fn of(daemon: u32, agent: u32, zygote: Option<u32>) -> Served {
        Served {
            daemon: CpuTimes::of(daemon).unwrap_or_default(),
            agent: CpuTimes::of(agent).unwrap_or_default(),
            zygote: zygote.and_then(CpuTimes::of).unwrap_or_default(),
        }
    }
}

pub fn run(qmeshd: &Path, run: &Run) -> anyhow::Result<Report> {
    if run.jobs == 0 || run.loops == 0 {
        bail!("--jobs and --loops must be at least 1");
    }
    let bindir = match run.bindir {
        Some(d) => d.to_path_buf(),
        None => qmeshd
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from(".")),
    };
    let qsub = bindir.join("qsub");
    let qstat = bindir.join("qstat");
    for b in [&qsub, &qstat] {
        if !b.is_file() {
            bail!(
                "{} is not there; pass --bindir, the directory of a build's binaries",
                b.display()
            );
        }
    }
    let root = crate::daemon::run_dir("qmesh-bench-qsub-", 0o755, run.dir)?;
    let work = root.path().join("work");
    std::fs::create_dir(&work)?;
    let script = work.join("job.sh");
    std::fs::write(&script, "#!/bin/sh\ntrue\n")?;
    let (mut daemon, _) = Daemon::start(qmeshd, root)?;
    let socket = daemon.socket.clone();
    let submit = |n: usize| -> anyhow::Result<()> {
        for _ in 0..n {
            let out = Command::new(&qsub)
                .env("QMESH_SOCKET", &socket)
                .current_dir(&work)
                .arg("job.sh")
                .stdin(Stdio::null())
                .output()
                .context("run qsub")?;
            if !out.status.success() {
                bail!(
                    "qsub failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
        }
        Ok(())
    };
    let queue_empty = || -> anyhow::Result<bool> {
        let out = Command::new(&qstat)
            .env("QMESH_SOCKET", &socket)
            .stdin(Stdio::null())
            .output()
            .context("run qstat")?;
        if !out.status.success() {
            bail!(
                "qstat failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(out.stdout.iter().all(u8::is_ascii_whitespace))
    };
    let await_empty = |limit: Duration| -> anyhow::Result<usize> {
        let deadline = Instant::now() + limit;
        let mut polls = 0;
        while !queue_empty()? {
            polls += 1;
            if Instant::now() > deadline {
                bail!("jobs still listed after {} s", limit.as_secs());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(polls)
    };
    // One job first: the agent is attached and every binary warm.
    submit(1)?;
    await_empty(Duration::from_secs(60))?;
    let daemon_pid = daemon.pid().context("qmeshd's pid")?;
    let agent = crate::cpu::children_of(daemon_pid)
        .into_iter()
        .find(|&pid| crate::cpu::runs(pid, "qmesh-agent"))
        .context("qmeshd's local agent is not running")?;
    let zygote = crate::cpu::zygotes_of(&[agent]).into_iter().next();
    let before = Served::of(daemon_pid, agent, zygote);
    let threads_before = crate::cpu::by_thread(daemon_pid);

    let me = std::process::id();
    let mine_before = CpuTimes::of(me).unwrap_or_default();
    let started = Instant::now();
    std::thread::scope(|s| -> anyhow::Result<()> {
        let loops: Vec<_> = (0..run.loops)
            .map(|i| {
                let share = run.jobs / run.loops + usize::from(i < run.jobs % run.loops);
                s.spawn(move || submit(share))
            })
            .collect();
        for l in loops {
            l.join()
                .map_err(|_| anyhow::anyhow!("a submitting loop panicked"))??;
        }
        Ok(())
    })?;
    let submitted = started.elapsed();
    // The loops' qsub processes, reaped: the submissions' own cost.
    let qsub_ms = (CpuTimes::of(me).unwrap_or_default().children - mine_before.children) * 1000.0
        / run.jobs as f64;
    let polls = await_empty(Duration::from_secs(600))?;
    let wall = started.elapsed();
    if let Some(z) = zygote {
        crate::cpu::await_reaped(&[z], Duration::from_secs(5));
    }
    let after = Served::of(daemon_pid, agent, zygote);
    // Where qmeshd's share went, thread by thread (ms per job).
    let threads: serde_json::Map<String, serde_json::Value> = crate::cpu::by_thread(daemon_pid)
        .into_iter()
        .map(|(name, s)| {
            let ms =
                (s - threads_before.get(&name).copied().unwrap_or(0.0)) * 1000.0 / run.jobs as f64;
            (name, serde_json::json!((ms * 1000.0).round() / 1000.0))
        })
        .collect();
    let outputs = std::fs::read_dir(&work)?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("job.sh.o"))
        .count();
    daemon.stop();
    if outputs != run.jobs + 1 {
        bail!(
            "{outputs} output files for {} jobs: some job did not run",
            run.jobs + 1
        );
    }

    let per_job_ms = |s: f64| s * 1000.0 / run.jobs as f64;
    let own = |f: fn(&Served) -> CpuTimes| per_job_ms(f(&after).own - f(&before).own);
    let daemon_ms = own(|s| s.daemon);
    let agent_ms = own(|s| s.agent);
    let zygote_ms = own(|s| s.zygote);
    let shepherds_ms = per_job_ms(after.zygote.children - before.zygote.children);
    let jobs_per_s = run.jobs as f64 / wall.as_secs_f64();
    let served_ms = daemon_ms + agent_ms + zygote_ms;
    let text = format!(
        "qsub: {} `true` jobs from {} loops: {:.1} jobs/s (submitted in {:.2} s, all ended at {:.2} s, {polls} qstat polls)\n  \
         CPU per job: qmeshd {daemon_ms:.2} ms, agent {agent_ms:.2} ms, zygote {zygote_ms:.2} ms = {served_ms:.2} ms; \
         shepherds and jobs (reaped by the zygote) {shepherds_ms:.2} ms; each qsub {qsub_ms:.2} ms",
        run.jobs,
        run.loops,
        jobs_per_s,
        submitted.as_secs_f64(),
        wall.as_secs_f64(),
    );
    let json = serde_json::json!({
        "bench": "qsub",
        "jobs": run.jobs,
        "loops": run.loops,
        "jobs_per_s": jobs_per_s,
        "submit_s": submitted.as_secs_f64(),
        "wall_s": wall.as_secs_f64(),
        "cpu_ms_per_job": {
            "qmeshd": daemon_ms,
            "agent": agent_ms,
            "zygote": zygote_ms,
            "served": served_ms,
            "shepherds_and_jobs": shepherds_ms,
            "qsub": qsub_ms,
        },
        "qmeshd_threads_ms_per_job": threads,
    });
    Ok(Report { text, json })
}
