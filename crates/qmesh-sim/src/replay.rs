//! The replay: a virtual clock driving the very `Scheduler::pass` the
//! daemon runs. At each instant something happens (jobs arrive, jobs end)
//! the state takes the changes, one pass plans, and its starts are applied;
//! a started job ends at its start plus its run time from the trace (cut
//! at its requested time: the log's jobs were killed there too).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use chrono::{DateTime, Utc};
use qmesh_core::node::{NodeDef, NodeSet, Topology};
use qmesh_core::{
    Backfill, Caller, Config, ExitCause, JobExit, JobId, JobOrder, Queue, Role, Scheduler, State,
    Submission,
};

use crate::swf::{SwfJob, Trace};

/// The scheduling policy replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// First come, first served: nothing overtakes the first waiting job.
    Fcfs,
    /// EASY backfilling: the first waiting job has a reservation.
    Easy,
    /// Conservative backfilling: every waiting job has one.
    Conservative,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Fcfs => "fcfs",
            Policy::Easy => "easy",
            Policy::Conservative => "conservative",
        }
    }

    /// The server attributes that make the core's planner follow it.
    fn configure(self, config: &mut Config) {
        let server = &mut config.server;
        match self {
            Policy::Fcfs => {
                // Every job above block_priority: the first that cannot
                // start blocks the rest (SDSC blocking), in submission order
                // (fifo: the queue is taken as it stands, no sort per pass).
                server.backfill = Backfill::None;
                server.job_order = JobOrder::Fifo;
                server.block_priority = 0.5;
                for q in config.queues.values_mut() {
                    q.priority = 1;
                }
            }
            Policy::Easy => server.backfill = Backfill::Easy,
            Policy::Conservative => server.backfill = Backfill::Conservative,
        }
    }
}

/// How the machine's one node set allocates nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Alloc {
    /// Any free nodes (no topology).
    #[default]
    Flat,
    /// SDSC's M2DB on a 2-D mesh (`--dims WxH`).
    M2db,
    /// Equal Partition subtori of an N-D torus (`--dims 2x2x2x4x4x8`).
    Ep,
    /// Non-Equal Partition subtori.
    Nep,
}

impl Alloc {
    pub fn as_str(self) -> &'static str {
        match self {
            Alloc::Flat => "flat",
            Alloc::M2db => "m2db",
            Alloc::Ep => "ep",
            Alloc::Nep => "nep",
        }
    }

    /// The node set's topology over `dims` (empty: flat only).
    pub fn topology(self, dims: &[u32]) -> Result<Topology, String> {
        match (self, dims) {
            (Alloc::Flat, _) => Ok(Topology::Flat),
            (Alloc::M2db, [width, height]) => Ok(Topology::Mesh2d {
                width: *width,
                height: *height,
                contiguous: false,
            }),
            (Alloc::M2db, _) => Err("m2db needs a 2-D mesh: --dims WxH".into()),
            (Alloc::Ep | Alloc::Nep, []) => Err(format!(
                "{} needs a torus: --dims 2x2x2x4x4x8",
                self.as_str()
            )),
            (Alloc::Ep | Alloc::Nep, dims) => Ok(Topology::Torus {
                dims: dims.to_vec(),
                partition: if self == Alloc::Ep {
                    qmesh_core::node::TorusPartition::Ep
                } else {
                    qmesh_core::node::TorusPartition::Nep
                },
                conversion: Default::default(),
            }),
        }
    }
}

/// How the trace is read into the machine.
#[derive(Clone, Debug)]
pub struct Options {
    pub policy: Policy,
    /// The machine's one node set: flat (of `nodes`, else the trace's
    /// MaxProcs or MaxNodes) or a mesh or torus of its own size.
    pub topology: Topology,
    pub nodes: Option<u32>,
    /// Multiplies each job's processor count (rounded up).
    pub size_scale: f64,
    /// Rounds each size up to a power of two.
    pub round_pow2: bool,
    /// Multiplies run and requested times (the torus seed's load scaling).
    pub load_scale: f64,
    /// Record, for each job, the start `spwhen` would have predicted just
    /// after it was submitted (one conservative replan per job).
    pub predict: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            policy: Policy::Easy,
            topology: Topology::Flat,
            nodes: None,
            size_scale: 1.0,
            round_pow2: false,
            load_scale: 1.0,
            predict: false,
        }
    }
}

/// What happened to one job of the trace.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct JobRecord {
    pub number: u64,
    /// Seconds from the trace's start.
    pub submit: i64,
    pub start: i64,
    pub end: i64,
    pub nodes: u32,
    pub queue: i64,
    /// The start spwhen predicted right after its submission (seconds from
    /// the trace's start); `None` when not asked for or not given.
    pub predicted: Option<i64>,
}

impl JobRecord {
    pub fn wait(&self) -> i64 {
        self.start - self.submit
    }

    pub fn run(&self) -> i64 {
        self.end - self.start
    }
}

/// A job the replay left out, and why.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Skipped {
    pub number: u64,
    pub why: String,
}

/// The replay's outcome: records in trace order, the jobs left out.
#[derive(Clone, Debug, Default)]
pub struct Replay {
    pub nodes: u32,
    pub records: Vec<JobRecord>,
    pub skipped: Vec<Skipped>,
    /// Passes run.
    pub passes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(
        "the trace's header gives no machine size (MaxProcs or MaxNodes); give --nodes N or --config"
    )]
    NoSize,
    #[error("--nodes {nodes} does not match the {topology} ({size} nodes)")]
    SizeMismatch {
        nodes: u32,
        topology: String,
        size: u32,
    },
    #[error("the scheduler's core refused the set-up: {0}")]
    Core(String),
    #[error("{0} jobs never started although nothing more would happen; the first is job {1}")]
    Stuck(usize, u64),
}

/// One job ready to replay.
struct Planned {
    index: usize,
    number: u64,
    submit: i64,
    nodes: u32,
    walltime: u64,
    run: i64,
    user: i64,
    queue: i64,
}

/// Finished jobs dropped from the state once this many have ended: the
/// state stays the size of what is queued and running.
const PURGE_EVERY: usize = 4096;

/// Replays `trace` under `options`.
pub fn replay(trace: &Trace, options: &Options) -> Result<Replay, ReplayError> {
    let nodes = match (options.topology.size(), options.nodes) {
        (Some(size), Some(nodes)) if size != nodes => {
            return Err(ReplayError::SizeMismatch {
                nodes,
                topology: options.topology.describe(),
                size,
            });
        }
        (Some(size), _) => size,
        (None, nodes) => nodes
            .or_else(|| trace.max_procs())
            .ok_or(ReplayError::NoSize)?,
    };
    let (mut planned, skipped) = plan_jobs(trace, options, nodes);
    planned.sort_by_key(|p| (p.submit, p.index));
    // What each job runs, by trace index: its run time, cut at its wall time.
    let mut run_of = vec![0i64; trace.jobs.len()];
    for p in &planned {
        run_of[p.index] = p.run.min(p.walltime as i64).max(0);
    }

    let mut config = Config::default();
    config.queues.insert("batch".into(), Queue::open("batch"));
    config.server.default_queue = Some("batch".into());
    config.server.scheduling = true;
    // Finished jobs are of no use to later passes: the replay keeps its own
    // records and drops them from the state as it goes (see below).
    config.server.job_history_duration = 0;
    options.policy.configure(&mut config);
    let set = NodeSet {
        name: "machine".into(),
        topology: options.topology.clone(),
        nodes: (0..nodes)
            .map(|i| NodeDef {
                name: format!("n{i}"),
                host: "sim".into(),
            })
            .collect(),
        attrs: Default::default(),
    };
    let mut state =
        State::new("sim", config, vec![set]).map_err(|e| ReplayError::Core(e.to_string()))?;
    state.set_host_up("sim", true);

    let mut records: Vec<Option<JobRecord>> = vec![None; trace.jobs.len()];
    let mut by_id: HashMap<JobId, usize> = HashMap::with_capacity(planned.len());
    let mut ends: BinaryHeap<Reverse<(i64, JobId)>> = BinaryHeap::new();
    let mut next = 0;
    let mut passes = 0;
    let mut callers: HashMap<i64, Caller> = HashMap::new();
    let mut finished = 0usize;
    while next < planned.len() || !ends.is_empty() {
        let now_s = match (planned.get(next), ends.peek()) {
            (Some(p), Some(Reverse((end, _)))) => p.submit.min(*end),
            (Some(p), None) => p.submit,
            (None, Some(Reverse((end, _)))) => *end,
            (None, None) => break,
        };
        let now = at(now_s);
        while let Some(&Reverse((end, id))) = ends.peek() {
            if end > now_s {
                break;
            }
            ends.pop();
            let exit = JobExit {
                code: Some(0),
                signal: None,
                cause: ExitCause::Exited,
                message: String::new(),
            };
            state
                .finish(id, exit, now)
                .map_err(|e| ReplayError::Core(e.to_string()))?;
            finished += 1;
            if finished % PURGE_EVERY == 0 {
                state.purge_history(now);
            }
        }
        let mut arrived = Vec::new();
        while let Some(p) = planned.get(next).filter(|p| p.submit <= now_s) {
            next += 1;
            let caller = callers.entry(p.user).or_insert_with(|| caller(p.user));
            let sub = Submission {
                script_name: "job".into(),
                workdir: "/sim".into(),
                resources: vec![
                    ("nodes".into(), p.nodes.to_string()),
                    ("walltime".into(), p.walltime.to_string()),
                ],
                ..Submission::default()
            };
            let job = state
                .submit(sub, caller, now)
                .map_err(|e| ReplayError::Core(format!("job {}: {e}", p.number)))?;
            by_id.insert(job.id, p.index);
            arrived.push(job.id);
            records[p.index] = Some(JobRecord {
                number: p.number,
                submit: p.submit,
                start: -1,
                end: -1,
                nodes: p.nodes,
                queue: p.queue,
                predicted: None,
            });
        }
        if state.pending_count() == 0 {
            continue;
        }
        // The starts are all a replay needs of a pass.
        let starts = Scheduler.starts(&state, now);
        passes += 1;
        for start in &starts {
            state
                .start_placed(start.job, &start.nodes, &start.parts, now)
                .map_err(|e| ReplayError::Core(e.to_string()))?;
            let index = by_id[&start.job];
            let end = now_s + run_of[index];
            if let Some(r) = records[index].as_mut() {
                r.start = now_s;
                r.end = end;
            }
            ends.push(Reverse((end, start.job)));
        }
        if options.predict {
            // What spwhen says once the pass after the submission is done.
            for id in arrived {
                let predicted = match state.job(id) {
                    Some(job) if job.state.is_pending() => Scheduler
                        .when(&state, job, now)
                        .start
                        .map(|t| t.timestamp()),
                    _ => Some(now_s),
                };
                if let Some(r) = records[by_id[&id]].as_mut() {
                    r.predicted = predicted;
                }
            }
        }
    }
    let stuck: Vec<&JobRecord> = records.iter().flatten().filter(|r| r.start < 0).collect();
    if let Some(first) = stuck.first() {
        return Err(ReplayError::Stuck(stuck.len(), first.number));
    }
    Ok(Replay {
        nodes,
        records: records.into_iter().flatten().collect(),
        skipped,
        passes,
    })
}

/// Scaled wall time and run time of a job: (ok, wall, run).
fn times(job: &SwfJob, options: &Options) -> (bool, u64, i64) {
    let scale = |v: i64| (v as f64 * options.load_scale).round() as i64;
    let run = scale(job.run);
    let wall = scale(job.walltime()).max(run.min(1)).max(1);
    (run >= 0, wall as u64, run)
}

/// The jobs to replay, and those left out with the reason.
fn plan_jobs(trace: &Trace, options: &Options, nodes: u32) -> (Vec<Planned>, Vec<Skipped>) {
    let mut planned = Vec::with_capacity(trace.jobs.len());
    let mut skipped = Vec::new();
    for (index, job) in trace.jobs.iter().enumerate() {
        let skip = |why: &str| Skipped {
            number: job.number,
            why: why.to_string(),
        };
        let procs = job.procs();
        if procs <= 0 {
            skipped.push(skip("no processor count (fields 5 and 8)"));
            continue;
        }
        if job.submit < 0 {
            skipped.push(skip("no submit time (field 2)"));
            continue;
        }
        let (ok, walltime, run) = times(job, options);
        if !ok || job.run < 0 {
            skipped.push(skip("no run time (field 4)"));
            continue;
        }
        let mut size = (procs as f64 * options.size_scale).ceil().max(1.0) as u64;
        if options.round_pow2 {
            size = size.next_power_of_two();
        }
        if size > u64::from(nodes) {
            skipped.push(skip("larger than the machine"));
            continue;
        }
        planned.push(Planned {
            index,
            number: job.number,
            submit: job.submit,
            nodes: size as u32,
            walltime,
            run,
            user: job.user,
            queue: job.queue,
        });
    }
    (planned, skipped)
}

fn caller(user: i64) -> Caller {
    let uid = u32::try_from(user.max(0)).unwrap_or(0) + 1000;
    Caller {
        uid,
        gid: 100,
        user: format!("u{user}"),
        group: "users".into(),
        role: Role::User,
    }
}

/// The virtual clock's instant `secs` from the trace's start.
fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(secs, 0).unwrap_or(DateTime::<Utc>::MIN_UTC)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::swf;

    /// An SWF line: number, submit, run, procs, requested time.
    fn line(n: u64, submit: i64, run: i64, procs: i64, req: i64) -> String {
        format!("{n} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 1 1 -1 1 -1 -1 -1\n")
    }

    fn starts(text: &str, policy: Policy) -> Vec<(u64, i64, i64)> {
        let trace = swf::read(text.as_bytes(), "t.swf").unwrap();
        let options = Options {
            policy,
            ..Options::default()
        };
        replay(&trace, &options)
            .unwrap()
            .records
            .iter()
            .map(|r| (r.number, r.start, r.end))
            .collect()
    }

    /// Four nodes. J2 needs all four and waits for J1; J3 fits in the two
    /// free nodes and ends before J1 does; J4 would not.
    fn easy_example() -> String {
        let mut t = String::from("; MaxProcs: 4\n");
        t += &line(1, 0, 100, 2, 100);
        t += &line(2, 1, 50, 4, 50);
        t += &line(3, 2, 50, 2, 50);
        t += &line(4, 3, 200, 2, 200);
        t
    }

    #[test]
    fn fcfs_lets_nothing_overtake() {
        assert_eq!(
            starts(&easy_example(), Policy::Fcfs),
            [(1, 0, 100), (2, 100, 150), (3, 150, 200), (4, 150, 350)]
        );
    }

    #[test]
    fn easy_and_conservative_backfill_what_delays_no_one() {
        for policy in [Policy::Easy, Policy::Conservative] {
            assert_eq!(
                starts(&easy_example(), policy),
                [(1, 0, 100), (2, 100, 150), (3, 2, 52), (4, 150, 350)],
                "{policy:?}"
            );
        }
    }

    /// The ANL paper's queue (Lifka, "The ANL/IBM SP scheduling system"):
    /// 128 nodes, users A to H all waiting at once, minutes as given.
    fn anl(f_nodes: i64) -> String {
        let mut t = String::from("; MaxNodes: 128\n");
        let jobs = [
            (32, 120),
            (64, 60),
            (24, 180),
            (32, 120),
            (16, 120),
            (f_nodes, 480),
            (4, 30),
            (32, 120),
        ];
        for (i, (nodes, minutes)) in jobs.into_iter().enumerate() {
            t += &line(i as u64 + 1, 0, minutes * 60, nodes, minutes * 60);
        }
        t
    }

    /// Start minutes of users A to H.
    fn start_minutes(text: &str, policy: Policy) -> Vec<i64> {
        starts(text, policy)
            .iter()
            .map(|&(_, s, _)| s / 60)
            .collect()
    }

    #[test]
    fn the_anl_example_by_hand() {
        // Step 4: D is blocked until B ends at 60; G (4 nodes, 30 min) fits
        // the 8 idle nodes and backfills; E and F cannot.
        assert_eq!(
            start_minutes(&anl(10), Policy::Easy),
            [0, 0, 0, 60, 60, 60, 0, 120]
        );
        // With F at 8 nodes, F backfills for its 480 minutes: when B ends,
        // 64 nodes come free, more than D needs. G then waits for B too.
        assert_eq!(
            start_minutes(&anl(8), Policy::Easy),
            [0, 0, 0, 60, 60, 0, 60, 120]
        );
        // First come, first served: G waits behind D.
        assert_eq!(
            start_minutes(&anl(10), Policy::Fcfs),
            [0, 0, 0, 60, 60, 60, 60, 120]
        );
    }

    #[test]
    fn a_job_killed_at_its_requested_time_ends_there() {
        let mut t = String::from("; MaxNodes: 2\n");
        t += &line(1, 0, 300, 2, 100);
        t += &line(2, 0, 10, 2, 10);
        assert_eq!(
            starts(&t, Policy::Easy),
            [(1, 0, 100), (2, 100, 110)],
            "run time cut at the requested 100 s"
        );
    }

    #[test]
    fn jobs_that_cannot_be_replayed_are_counted_with_the_reason() {
        let mut t = String::from("; MaxProcs: 4\n");
        t += &line(1, 0, 10, 2, 10);
        t += &line(2, 0, 10, 0, 10);
        t += &line(3, 0, 10, 8, 10);
        t += &line(4, 0, -1, 2, 10);
        let trace = swf::read(t.as_bytes(), "t.swf").unwrap();
        let r = replay(&trace, &Options::default()).unwrap();
        assert_eq!(r.records.len(), 1);
        let why: Vec<(u64, &str)> = r
            .skipped
            .iter()
            .map(|s| (s.number, s.why.as_str()))
            .collect();
        assert_eq!(
            why,
            [
                (2, "no processor count (fields 5 and 8)"),
                (3, "larger than the machine"),
                (4, "no run time (field 4)")
            ]
        );
        let none = swf::read(line(1, 0, 1, 1, 1).as_bytes(), "t.swf").unwrap();
        assert!(matches!(
            replay(&none, &Options::default()),
            Err(ReplayError::NoSize)
        ));
    }

    #[test]
    fn scaling_sizes_and_times() {
        let mut t = String::from("; MaxProcs: 16\n");
        t += &line(1, 0, 100, 3, 200);
        let trace = swf::read(t.as_bytes(), "t.swf").unwrap();
        let options = Options {
            size_scale: 2.0,
            round_pow2: true,
            load_scale: 1.5,
            ..Options::default()
        };
        let r = replay(&trace, &options).unwrap();
        assert_eq!(r.records[0].nodes, 8, "3 × 2 = 6, rounded up to 8");
        assert_eq!(r.records[0].end, 150, "100 s × 1.5");
    }
}

#[cfg(test)]
mod prediction_tests {
    use super::*;
    use crate::swf;

    fn predicted(text: &str) -> Vec<(u64, i64, Option<i64>)> {
        let trace = swf::read(text.as_bytes(), "t.swf").unwrap();
        let options = Options {
            policy: Policy::Conservative,
            predict: true,
            ..Options::default()
        };
        replay(&trace, &options)
            .unwrap()
            .records
            .iter()
            .map(|r| (r.number, r.start, r.predicted))
            .collect()
    }

    #[test]
    fn exact_requests_give_exact_predictions_and_early_ends_early_starts() {
        let line = |n, submit, run, procs, req| {
            format!("{n} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 1 1 -1 1 -1 -1 -1\n")
        };
        let mut t = String::from("; MaxProcs: 4\n");
        t += &line(1, 0, 100, 2, 100);
        t += &line(2, 1, 50, 4, 50);
        t += &line(3, 2, 50, 2, 50);
        assert_eq!(
            predicted(&t),
            [(1, 0, Some(0)), (2, 100, Some(100)), (3, 2, Some(2))]
        );
        // J1 asked for 100 s and ends at 40: J2 was told 100, starts at 40.
        let mut t = String::from("; MaxProcs: 4\n");
        t += &line(1, 0, 40, 2, 100);
        t += &line(2, 1, 50, 4, 50);
        assert_eq!(predicted(&t), [(1, 0, Some(0)), (2, 40, Some(100))]);
    }
}
