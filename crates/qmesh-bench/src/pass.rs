//! The cost of one scheduling pass, in process: the very `Scheduler::pass`
//! the daemon and the simulator run, on a state built directly.
//!
//! The machine is full (one running job per node, ending at spread-out
//! times), so no queued job can start now: EASY must still test every job
//! against the head's reservation, and conservative must find a
//! reservation for every one. That is the worst case for depth, the case
//! Slurm avoids by stopping after `bf_max_job_test` jobs.

use std::time::{Duration, Instant};

use chrono::TimeZone;
use qmesh_core::node::{NodeDef, NodeSet, Topology};
use qmesh_core::submit::Submission;
use qmesh_core::{Backfill, Caller, Config, Queue, Role, Scheduler, State};

use crate::Report;

/// A small deterministic generator: the same workload every run.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[(self.next() % from.len() as u64) as usize]
    }
}

/// Builds `nodes` flat nodes each running a one-node job, and `queued`
/// pending jobs of typical sizes (powers of two up to 256 nodes) and
/// wall times (10 minutes to 24 hours).
///
/// With `calendar`, queue `batch` runs out of prime time only (the
/// benchmark's instant is a Tuesday, 22:13 UTC: prime time begins in under
/// 11 hours), has a priority per period, draws on a node group, and
/// requeues its jobs at its period's end: every job is checked against
/// the cut, and the longer ones neither start nor get a reservation.
///
/// With `tasks`, each queued job is a job array of that many sub-jobs
/// (`qsub -J 0-N`), drawn the same: the same sizes and wall times as the
/// plain queue, so the two can be compared (see `pass_arrays.rs`).
pub fn workload(
    nodes: usize,
    queued: usize,
    mode: Backfill,
    calendar: bool,
    tasks: Option<u32>,
) -> anyhow::Result<State> {
    let mut config = Config::default();
    let mut batch = Queue::open("batch");
    if calendar {
        batch.periods = vec!["non_prime".into()];
        batch.period_priority.insert("prime".into(), 5);
        batch.period_end = qmesh_core::queue::PeriodEnd::Requeue;
        batch.node_group = Some("pool".into());
        let mut pool = qmesh_core::node_group::NodeGroup::new("pool");
        pool.set_sets(None, vec!["flat".into()]);
        pool.set_sets(Some("prime"), vec!["flat".into()]);
        config.node_groups.insert("pool".into(), pool);
    }
    config.queues.insert("batch".into(), batch);
    config.server.backfill = mode;
    let set = NodeSet {
        name: "flat".into(),
        topology: Topology::Flat,
        nodes: (0..nodes)
            .map(|i| NodeDef {
                name: format!("n{i:05}"),
                host: "h".into(),
            })
            .collect(),
        attrs: Default::default(),
    };
    let mut state = State::new("bench", config, vec![set])?;
    state.set_host_up("h", true);
    let epoch = bench_epoch()?;
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let callers: Vec<Caller> = (0..50)
        .map(|uid| Caller {
            uid: 1000 + uid,
            gid: 100,
            user: format!("user{uid}"),
            group: "users".into(),
            role: Role::User,
        })
        .collect();
    let submission = |nodes: u64, secs: u64| Submission {
        script_name: "job.sh".into(),
        workdir: "/tmp".into(),
        resources: vec![
            ("nodes".into(), nodes.to_string()),
            ("walltime".into(), secs.to_string()),
        ],
        ..Submission::default()
    };
    let array = tasks.map(|n| {
        (
            qmesh_core::array::ArrayStyle::PbsPro,
            format!("0-{}", n.max(1) - 1),
        )
    });
    // Running: started up to a day ago, with a day of wall time.
    for node in 0..nodes {
        let caller = &callers[node % callers.len()];
        let started = epoch - chrono::Duration::seconds((rng.next() % 86_400) as i64);
        let id = state
            .submit(submission(1, 86_400), caller, started)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .id;
        state
            .start(id, &[node], started)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let sizes = [1, 1, 2, 4, 8, 16, 32, 64, 128, 256];
    let walls = [600, 1800, 3600, 7200, 4 * 3600, 12 * 3600, 24 * 3600];
    for i in 0..queued {
        let caller = &callers[i % callers.len()];
        let at = epoch - chrono::Duration::seconds((queued - i) as i64);
        let job = Submission {
            array: array.clone(),
            ..submission(rng.pick(&sizes), rng.pick(&walls))
        };
        state
            .submit(job, caller, at)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(state)
}

/// The instant the workload is built around (any fixed one will do).
pub fn bench_epoch() -> anyhow::Result<qmesh_core::Time> {
    chrono::Utc
        .timestamp_opt(1_700_000_000, 0)
        .single()
        .ok_or_else(|| anyhow::anyhow!("the benchmark's epoch is not a valid time"))
}

/// Times `runs` passes at each queue length; reports the medians.
pub fn run(nodes: usize, lengths: &[usize], runs: usize, calendar: bool) -> anyhow::Result<Report> {
    let mut text = format!(
        "scheduling pass, {nodes} flat nodes all running, full depth{} (median of {runs}):\n",
        if calendar {
            ", queue following the calendar"
        } else {
            ""
        }
    );
    let mut rows = Vec::new();
    for &queued in lengths {
        for mode in [Backfill::Easy, Backfill::Conservative] {
            let state = workload(nodes, queued, mode, calendar, None)?;
            let now = bench_epoch()?;
            let mut times: Vec<Duration> = Vec::with_capacity(runs);
            let mut reserved = 0;
            for _ in 0..runs.max(1) {
                let start = Instant::now();
                let plan = Scheduler.pass(&state, now);
                times.push(start.elapsed());
                reserved = plan
                    .queue
                    .iter()
                    .filter(|e| e.expected_start.is_some())
                    .count();
            }
            times.sort();
            let median = times[times.len() / 2];
            let ms = median.as_secs_f64() * 1e3;
            text.push_str(&format!(
                "  {:>12} {queued:>7} queued: {ms:>9.1} ms  ({reserved} reservations)\n",
                mode.as_str()
            ));
            rows.push(serde_json::json!({
                "backfill": mode.as_str(),
                "calendar": calendar,
                "queued": queued,
                "running": nodes,
                "nodes": nodes,
                "median_ms": ms,
                "min_ms": times[0].as_secs_f64() * 1e3,
                "max_ms": times[times.len() - 1].as_secs_f64() * 1e3,
                "reservations": reserved,
            }));
        }
    }
    Ok(Report {
        text: text.trim_end().to_string(),
        json: serde_json::json!({ "bench": "pass", "results": rows }),
    })
}
