//! `qmesh-bench floor`: how fast this machine starts churn's job script
//! with no scheduler at all, the floor `churn`'s starts per second are
//! held against.
//!
//! Each job is started as a shepherd starts one: a fork, a new session,
//! the job owner's groups and ids set, stdout and stderr opened on the
//! job's output file, and `exec` of the same script churn runs (bash,
//! printing `$EPOCHREALTIME`, then `sleep SECS`). `--forkers` threads
//! fork at once (default: one per core, as a scheduler has every core).
//! Starts per second are counted as churn counts them: the jobs, over the
//! time from the first fork to the last script's first line.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::SystemTime;

use anyhow::{Context, bail};

use crate::Report;
use crate::cpu::CpuTimes;

pub struct Run<'a> {
    pub jobs: usize,
    pub secs: f64,
    pub forkers: Option<usize>,
    /// The job owner (default: who runs the bench).
    pub user: Option<&'a str>,
    pub dir: Option<&'a Path>,
}

pub fn run(run: &Run) -> anyhow::Result<Report> {
    if run.jobs == 0 {
        bail!("--jobs must be at least 1");
    }
    let forkers = run
        .forkers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let (uid, gid) = match run.user {
        Some(name) => {
            let user = nix::unistd::User::from_name(name)
                .with_context(|| format!("look up user {name:?}"))?
                .with_context(|| format!("user {name:?} does not exist; see getent passwd"))?;
            (user.uid.as_raw(), user.gid.as_raw())
        }
        None => (
            nix::unistd::getuid().as_raw(),
            nix::unistd::getgid().as_raw(),
        ),
    };
    let root = crate::daemon::run_dir("qmesh-bench-floor-", 0o1777, run.dir)?;
    let work = root.path();
    let script = work.join("floor.sh");
    std::fs::write(
        &script,
        format!("#!/bin/bash\necho $EPOCHREALTIME\nsleep {}\n", run.secs),
    )?;
    let before = CpuTimes::of(std::process::id()).unwrap_or_default();
    let go = SystemTime::now();
    let children: Vec<Child> = std::thread::scope(|s| -> anyhow::Result<Vec<Child>> {
        let threads: Vec<_> = (0..forkers)
            .map(|f| {
                let script = &script;
                s.spawn(move || -> anyhow::Result<Vec<Child>> {
                    let mut mine = Vec::new();
                    for i in (f..run.jobs).step_by(forkers) {
                        let out = std::fs::File::create(work.join(format!("floor.o{i}")))?;
                        std::os::unix::fs::chown(
                            work.join(format!("floor.o{i}")),
                            Some(uid),
                            Some(gid),
                        )?;
                        let err = out.try_clone()?;
                        let child = Command::new("/bin/bash")
                            .arg(script)
                            .current_dir(work)
                            .stdin(Stdio::null())
                            .stdout(out)
                            .stderr(err)
                            .uid(uid)
                            .gid(gid)
                            .process_group(0)
                            .spawn()
                            .context("start the job script")?;
                        mine.push(child);
                    }
                    Ok(mine)
                })
            })
            .collect();
        let mut all = Vec::new();
        for t in threads {
            all.extend(
                t.join()
                    .map_err(|_| anyhow::anyhow!("a forker panicked"))??,
            );
        }
        Ok(all)
    })?;
    let forked = go.elapsed().unwrap_or_default();
    for mut c in children {
        c.wait()?;
    }
    let after = CpuTimes::of(std::process::id()).unwrap_or_default();
    let go_s = go.duration_since(SystemTime::UNIX_EPOCH)?.as_secs_f64();
    let mut last = go_s;
    for i in 0..run.jobs {
        let text = std::fs::read_to_string(work.join(format!("floor.o{i}")))?;
        let at: f64 = text
            .trim()
            .parse()
            .with_context(|| format!("job {i} printed no start time: {text:?}"))?;
        last = last.max(at);
    }
    let starts_per_s = run.jobs as f64 / (last - go_s).max(1e-6);
    let cpu_ms = |t: f64| t * 1000.0 / run.jobs as f64;
    let own_ms = cpu_ms(after.own - before.own);
    let jobs_ms = cpu_ms(after.children - before.children);
    let text = format!(
        "floor: {} jobs of {} s started with no scheduler by {forkers} forkers: {:.0} starts/s \
         (all forked in {:.2} s); CPU per job: the forkers {own_ms:.2} ms, the jobs {jobs_ms:.2} ms",
        run.jobs,
        run.secs,
        starts_per_s,
        forked.as_secs_f64(),
    );
    let json = serde_json::json!({
        "bench": "floor",
        "jobs": run.jobs,
        "job_secs": run.secs,
        "forkers": forkers,
        "starts_per_second": starts_per_s,
        "fork_seconds": forked.as_secs_f64(),
        "cpu_ms_per_job_forkers": own_ms,
        "cpu_ms_per_job_jobs": jobs_ms,
    });
    Ok(Report { text, json })
}
