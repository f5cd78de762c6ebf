//! What a churn run left behind, turned into its figures: the daemon's
//! log (when each start was decided, when each end was recorded), the jobs'
//! output (when each script ran) and the clocks and CPU times the driver
//! kept. Kept apart from the driver (`churn.rs`) so the parsing can be
//! tested on its own lines and file names.

use std::collections::HashMap;
use std::path::Path;

use anyhow::bail;
use chrono::{DateTime, Utc};

use super::Run;
use crate::Report;
use crate::cpu::CpuTimes;

/// The driver's clocks.
pub(super) struct Timing {
    /// When scheduling was switched on.
    pub go: DateTime<Utc>,
    /// When the last job was seen finished.
    pub done: DateTime<Utc>,
    /// From the first submission to the last reply (a burst; with a rate,
    /// the submissions overlap the run).
    pub submit_s: f64,
    /// Status requests made while waiting for the end, and the time they
    /// took in all: the daemon lists every plain job in each, an array as
    /// one job, so their cost differs between the two.
    pub polls: usize,
    pub poll_s: f64,
    /// qmeshd's CPU when scheduling was switched on.
    pub daemon_at_go: CpuTimes,
}

/// The job an output file belongs to, as the log names it: `churn.o17`
/// is job `17`; a sub-job's `churn.o12.3` is `12[3]`.
pub(super) fn output_job(file: &str) -> Option<String> {
    let id = file.strip_prefix("churn.o")?;
    Some(match id.split_once('.') {
        Some((array, index)) => format!("{array}[{index}]"),
        None => id.to_string(),
    })
}

/// CPU seconds at the end of a run.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cpu {
    pub daemon: CpuTimes,
    /// The agents' own (and their zygotes'), and as children their
    /// shepherds and jobs.
    pub agents: CpuTimes,
}

pub(super) struct Measured {
    cpu: Cpu,
    /// qmeshd's CPU from scheduling on to the end.
    daemon_after_go: f64,
    submit_s: f64,
    polls: usize,
    poll_s: f64,
    starts_per_s: f64,
    ends_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    wall_s: f64,
}

/// `2026-11-23T08:30:45.591300Z  INFO ... job=17.srv ...` → (time, "17").
pub(super) fn log_event<'a>(line: &'a str, what: &str) -> Option<(DateTime<Utc>, &'a str)> {
    if !line.contains(what) {
        return None;
    }
    let time = DateTime::parse_from_rfc3339(line.split_whitespace().next()?).ok()?;
    let job = line.split("job=").nth(1)?.split(['.', ' ']).next()?;
    Some((time.with_timezone(&Utc), job))
}

pub(super) fn measure(
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
        let Some(job) = output_job(&name) else {
            continue;
        };
        let text = std::fs::read_to_string(entry.path())?;
        let Some(at) = text.trim().parse::<f64>().ok() else {
            continue;
        };
        let exec = DateTime::from_timestamp_micros((at * 1e6) as i64).unwrap_or(timing.go);
        last_exec = last_exec.max(exec);
        if let Some(&d) = decided.get(&job) {
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
        daemon_after_go: cpu.daemon.own - timing.daemon_at_go.own,
        submit_s: timing.submit_s,
        polls: timing.polls,
        poll_s: timing.poll_s,
        starts_per_s: jobs as f64 / secs(last_exec),
        ends_per_s: jobs as f64 / secs(last_end),
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
        max_ms: latencies[latencies.len() - 1],
        wall_s: secs(timing.done),
    })
}

impl Measured {
    pub(super) fn report(&self, run: &Run, nodes: usize) -> Report {
        let (submit_s, polls, poll_s) = (self.submit_s, self.polls, self.poll_s);
        let daemon_after_go = self.daemon_after_go;
        let watched = if run.watch_log {
            "ends counted in the log"
        } else {
            "every 50 ms"
        };
        let (jobs, secs, agents) = (run.jobs, run.secs, run.agents.max(1));
        let offered = match run.rate {
            Some(r) => format!("{r} jobs/s"),
            None if run.array => "a burst, as one job array".to_string(),
            None => "a burst".to_string(),
        };
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
                 p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; CPU: qmeshd {:.1} s ({:.1} s after \
                 scheduling on), agents {:.1} s, shepherds and jobs {:.1} s; submitted in {:.2} s; \
                 {polls} status polls while waiting ({watched}) took {:.1} s",
                self.starts_per_s,
                self.ends_per_s,
                self.wall_s,
                self.p50_ms,
                self.p99_ms,
                self.max_ms,
                self.cpu.daemon.own,
                daemon_after_go,
                self.cpu.agents.own,
                self.cpu.agents.children,
                submit_s,
                poll_s,
            ),
            json: serde_json::json!({
                "bench": "churn", "jobs": jobs, "agents": agents, "nodes": nodes,
                "job_secs": secs, "rate": run.rate, "exec_shepherds": run.exec_shepherds,
                "uncontained": run.uncontained,
                "array": run.array,
                "starts_per_second": self.starts_per_s,
                "ends_per_second": self.ends_per_s, "wall_seconds": self.wall_s,
                "exec_latency_p50_ms": self.p50_ms, "exec_latency_p99_ms": self.p99_ms,
                "exec_latency_max_ms": self.max_ms,
                "cpu_seconds_qmeshd": self.cpu.daemon.own,
                "cpu_seconds_qmeshd_after_go": daemon_after_go,
                "watch": if run.watch_log { "log" } else { "status" },
                "submit_seconds": submit_s, "status_polls": polls, "status_poll_seconds": poll_s,
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

    #[test]
    fn sub_jobs_are_named_alike_in_the_log_and_their_output() {
        let line = "2026-11-23T08:30:45.591300Z  INFO qmeshd::task: starting job=12[3] nodes=h0n03";
        let (_, job) = log_event(line, "starting").unwrap();
        assert_eq!(job, "12[3]");
        assert_eq!(output_job("churn.o12.3").as_deref(), Some("12[3]"));
        assert_eq!(output_job("churn.o17").as_deref(), Some("17"));
        assert_eq!(output_job("churn.e17"), None);
    }
}
