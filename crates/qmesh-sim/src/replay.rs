//! The replay: a virtual clock driving the very `Scheduler` the daemon
//! runs. At each instant something happens (jobs arrive, jobs end, the
//! calendar turns) the state takes the changes, one pass plans, and its
//! starts are applied; a started job ends at its start plus its run time
//! from the trace (cut at its requested time: the log's jobs were killed
//! there too).
//!
//! On a site's configuration (`--config`) each job goes to the queue the
//! trace names, if the configuration has it and the queue takes the job,
//! else to the default queue, as a `qsub` without `-q` would; a job no
//! queue takes is counted with the core's reason. The clock is the log's
//! own (its `UnixStartTime`), so prime time and weekends fall where they
//! fell.
//!
//! With `--arrays` (see `arrays.rs`) a group of jobs arrives as one array
//! at its first job's submit time; each sub-job, as the pass starts it,
//! runs its own job's run time, and its record counts its wait from the
//! array's submission.
//!
//! With `--reservations` (see `reservations.rs`) each reservation is made
//! at its submit time, by the core's own `pbs_rsub`, confirmed or refused;
//! the planner keeps its nodes for it, and the clock stops at each of its
//! occurrences' starts and ends while jobs wait, as the daemon passes
//! then. Jobs the file sends to it run in its queue, inside it; those
//! still queued when its last occurrence ends are deleted, as PBS does.
//!
//! Each pass is `Scheduler::changes` (through `Replanner`, which plans only
//! the new jobs when the last pass's plan stands): its resumptions and preemptions are
//! applied before its starts, as the daemon applies them. A job suspended
//! for an express job stops its clock: it ends its trace's run time of
//! running later, its end moved by the time it was suspended. A job
//! requeued or deleted is reported gone at once, and the replay passes
//! again at the same instant, in which the express job starts; a requeued
//! job waits again and runs its whole run time from its next start (its
//! record is that run; the work thrown away is counted), a deleted one
//! ends there, killed. With `--express` (`express`) a share of the jobs,
//! chosen by [`express_job`], is submitted to the queue `express` that
//! `machine.rs` adds.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::ops::Bound;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use qmesh_core::array::{ArrayStyle, MAX_INDEX};
use qmesh_core::predict::Likeness;
use qmesh_core::preempt::Method;
use qmesh_core::rsub::{self, ResvRequest};
use qmesh_core::scheduler::Replanner;
use qmesh_core::state::Finished;
use qmesh_core::submit::Asked;
use qmesh_core::{Caller, ExitCause, JobExit, JobId, Role, Scheduler, State, Submission};
// Keyed by job ids and trace numbers, looked up several times per job:
// SipHash showed in a replay's profile.
use rustc_hash::FxHashMap as HashMap;

use crate::accounting::Record;
use crate::arrays::{self, Formed, Key, Program};
use crate::machine::{
    EXPRESS_QUEUE, Machine, MachineError, Policy, Preemption, build_state, next_calendar_change,
};
use crate::reservations::{Booked, Outcome, ResvSpec, Span};
use crate::swf::{SwfJob, Trace};

/// How the trace is read into the machine.
#[derive(Clone, Debug)]
pub struct Options {
    pub policy: Policy,
    pub machine: Machine,
    /// qmgr commands applied to the configuration before the replay
    /// (`set server job_order = priority_aging`).
    pub qmgr: Vec<String>,
    /// Multiplies each job's processor count (rounded up).
    pub size_scale: f64,
    /// Rounds each size up to a power of two.
    pub round_pow2: bool,
    /// Multiplies run and requested times (the torus seed's load scaling).
    pub load_scale: f64,
    /// Record, for each job, the starts `spwhen` would have predicted just
    /// after it was submitted: planned with requested wall times, and with
    /// predicted run times (two conservative replans per job).
    pub predict: bool,
    /// Which earlier jobs of its user a job's run time is predicted from.
    pub like_jobs: Likeness,
    /// Only the jobs of this partition (SWF field 16), by number or by the
    /// header's name (`batch`).
    pub partition: Option<String>,
    /// A job asking more wall time than its queue allows asks for the
    /// queue's maximum instead, and is killed there (as NQS would have).
    /// Without it such a job is refused by its queue and counted.
    pub cap_walltime: bool,
    /// Submit a user's runs of like jobs as job arrays (see `arrays.rs`).
    /// Spwhen's predictions (`predict`) are then made for lone jobs only.
    pub arrays: bool,
    /// Keep the accounting records the daemon would have written (`Q`,
    /// `S`, `E`, by its own formatting) in [`Replay::accounting`]. (The
    /// records of preemptions, `z`, `r` and a killed job's `E`, are not
    /// written.)
    pub accounting: bool,
    /// Reservations made during the replay (`--reservations`).
    pub reservations: Vec<ResvSpec>,
    /// `--express SHARE`: this share (0 to 1) of the jobs, those
    /// [`express_job`] picks, go to the queue `express` (priority 200, on
    /// the default queue's node sets), whose jobs preempt. Not with
    /// `arrays`: an array is never express.
    pub express: Option<f64>,
    /// The server's `preempt_order` (`SCR`, `R`, `SCR 80 S`...); `None`
    /// keeps the configuration's (`SCR` unless its file sets one).
    pub preempt_order: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            policy: Policy::Easy,
            machine: Machine::default(),
            qmgr: Vec::new(),
            size_scale: 1.0,
            round_pow2: false,
            load_scale: 1.0,
            predict: false,
            like_jobs: Likeness::User,
            partition: None,
            cap_walltime: false,
            arrays: false,
            accounting: false,
            reservations: Vec::new(),
            express: None,
            preempt_order: None,
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
    /// The queue it ran in: on a site's configuration, the configuration's
    /// queue; else the trace's (its header's name, or its number). Shared
    /// by the records of a queue: one name, not one string per job.
    pub queue: Arc<str>,
    /// The start spwhen predicted right after its submission (seconds from
    /// the trace's start), planning with requested wall times; `None` when
    /// not asked for or not given.
    pub predicted: Option<i64>,
    /// The same, planning with predicted run times (`when_predicted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_from_runs: Option<i64>,
    /// The reservation (its number) whose queue it ran in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservation: Option<u64>,
    /// It ran in the queue `express` (`--express`).
    #[serde(skip_serializing_if = "is_false")]
    pub express: bool,
    /// Times it was suspended for an express job (in all its runs).
    #[serde(skip_serializing_if = "is_zero")]
    pub suspensions: u32,
    /// Seconds its run (`start` to `end`) spent suspended, its nodes lent.
    #[serde(skip_serializing_if = "is_zero")]
    pub suspended: i64,
    /// Times it was requeued for an express job; `start` and `end` are
    /// its last run's.
    #[serde(skip_serializing_if = "is_zero")]
    pub requeues: u32,
    /// Node-seconds of the runs those requeues threw away.
    #[serde(skip_serializing_if = "is_zero")]
    pub requeued_work: i64,
    /// Deleted for an express job at `end` (its run's work lost).
    #[serde(skip_serializing_if = "is_false")]
    pub killed: bool,
}

impl JobRecord {
    /// A record of a job that has not started, with nothing happened to
    /// it yet.
    pub fn new(number: u64, submit: i64, nodes: u32, queue: impl Into<Arc<str>>) -> JobRecord {
        JobRecord {
            number,
            submit,
            start: -1,
            end: -1,
            nodes,
            queue: queue.into(),
            predicted: None,
            predicted_from_runs: None,
            reservation: None,
            express: false,
            suspensions: 0,
            suspended: 0,
            requeues: 0,
            requeued_work: 0,
            killed: false,
        }
    }

    pub fn wait(&self) -> i64 {
        self.start - self.submit
    }

    /// Its last run, start to end, suspensions included.
    pub fn run(&self) -> i64 {
        self.end - self.start
    }

    /// The seconds its last run ran: [`JobRecord::run`] less the time it
    /// was suspended.
    pub fn ran(&self) -> i64 {
        self.run() - self.suspended
    }

    /// Node-seconds of work preemption threw away: the runs requeued, and
    /// the last run if it was deleted.
    pub fn lost(&self) -> i64 {
        let killed = if self.killed {
            i64::from(self.nodes) * self.ran()
        } else {
            0
        };
        self.requeued_work + killed
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// Whether `--express SHARE` makes job `number` express: when the
/// SplitMix64 hash of its number, over 2^64, is below `share`. The choice
/// is the job's own (not its place in the trace), spreads over the trace,
/// and a larger share keeps the jobs of a smaller one.
pub fn express_job(number: u64, share: f64) -> bool {
    let mut z = number.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z as f64) / 18_446_744_073_709_551_616.0 < share
}

/// A job the replay left out, and why.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Skipped {
    pub number: u64,
    /// What kind of reason, for counting: `no run time (field 4)`,
    /// `refused by the queues`...
    pub kind: String,
    /// The reason in full (the core's message, for a refusal).
    pub why: String,
}

impl Skipped {
    fn new(number: u64, kind: &str, why: impl Into<String>) -> Skipped {
        Skipped {
            number,
            kind: kind.into(),
            why: why.into(),
        }
    }
}

/// The replay's outcome: records in trace order, the jobs left out.
#[derive(Clone, Debug, Default)]
pub struct Replay {
    pub nodes: u32,
    pub records: Vec<JobRecord>,
    /// In trace order.
    pub skipped: Vec<Skipped>,
    /// Passes run.
    pub passes: u64,
    /// Of those, the passes that took up the last one's conservative plan
    /// and planned only new jobs (`Replanner`).
    pub passes_resumed: u64,
    /// With `--arrays`: the arrays the trace's jobs made.
    pub arrays: Option<Formed>,
    /// With `accounting`: the records, in time order.
    pub accounting: Vec<Record>,
    /// The calendar's zone, where the log's days begin.
    pub zone: chrono_tz::Tz,
    /// With `reservations`: what became of each, in the file's order.
    pub reservations: Vec<Outcome>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Machine(#[from] MachineError),
    #[error("--partition {given}: the trace has no such partition (it names: {known})")]
    NoPartition { given: String, known: String },
    #[error("the scheduler's core refused a step: {0}")]
    Core(String),
    #[error(
        "{count} jobs never started or never resumed, though nothing more would happen; \
         the first is job {first}: {why}"
    )]
    Stuck {
        count: usize,
        first: u64,
        why: String,
    },
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
    group: i64,
    queue: i64,
    program: Option<Program>,
}

impl Planned {
    fn key(&self) -> Key {
        Key {
            user: self.user,
            queue: self.queue,
            nodes: self.nodes,
            program: self.program,
        }
    }
}

/// Passes at one instant that may each requeue or delete jobs for express
/// jobs before the replay gives up (each ends jobs: a few suffice).
const MAX_ROUNDS: usize = 10_000;

/// Finished jobs dropped from the state once this many have ended: the
/// state stays the size of what is queued and running.
const PURGE_EVERY: usize = 4096;

/// With jobs waiting and nothing left but the calendar turning, the replay
/// gives up this long after anything last happened.
const STUCK_AFTER: i64 = 14 * 24 * 3600;

/// The longest submit, run or wall time a job of a trace may give, in
/// seconds (100 years): larger ones (a garbled field read as i64::MAX)
/// overflowed the virtual clock; such jobs are skipped with the reason.
const MAX_TRACE_SECS: i64 = 100 * 365 * 24 * 3600;

/// Replays `trace` under `options`.
pub fn replay(trace: &Trace, options: &Options) -> Result<Replay, ReplayError> {
    replay_with_progress(trace, options, |_, _| {})
}

/// [`replay`], telling `progress(submitted, to_submit)` as jobs arrive (at
/// most a few hundred times).
pub fn replay_with_progress(
    trace: &Trace,
    options: &Options,
    mut progress: impl FnMut(usize, usize),
) -> Result<Replay, ReplayError> {
    let preemption = Preemption {
        express: options.express.is_some(),
        order: options.preempt_order.as_deref(),
    };
    let mut state = build_state(
        &options.machine,
        options.policy,
        &preemption,
        &options.qmgr,
        trace.max_procs(),
    )?;
    state.predict_from(options.like_jobs);
    let nodes = state.nodes().len() as u32;
    let partition = match &options.partition {
        None => None,
        Some(given) => Some(trace.partition(given).ok_or_else(|| {
            ReplayError::NoPartition {
                given: given.clone(),
                known: trace
                    .partitions
                    .iter()
                    .map(|(n, name)| format!("{n} {name}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        })?),
    };
    let (mut planned, mut skipped) = plan_jobs(trace, options, nodes, partition);
    planned.sort_by_key(|p| (p.submit, p.index));
    // What arrives together: each job alone; with --arrays each group, its
    // members side by side in `planned`.
    let (planned, arrivals, formed) = if options.arrays {
        let most = (state.config().server.max_array_size as usize).min(MAX_INDEX as usize + 1);
        let keys: Vec<Key> = planned.iter().map(Planned::key).collect();
        let (planned, arrivals) = arrays::gather(planned, &arrays::group(&keys, most));
        let formed = Formed::of(&arrivals);
        (planned, arrivals, Some(formed))
    } else {
        let arrivals = (0..planned.len()).map(|i| i..i + 1).collect::<Vec<_>>();
        (planned, arrivals, None)
    };
    // The clock reads the log's own dates; records count from its start.
    let base = trace.unix_start().unwrap_or(0);
    let site = matches!(options.machine, Machine::Site { .. });
    // Reservations by submit time (the file's order among equals), and
    // what became of each.
    let mut resv_order: Vec<(i64, usize)> = options
        .reservations
        .iter()
        .enumerate()
        .map(|(i, spec)| (spec.submit.secs(base), i))
        .collect();
    resv_order.sort_unstable();
    let mut outcomes: Vec<Outcome> = options
        .reservations
        .iter()
        .map(|spec| Outcome::new(spec, spec.submit.secs(base)))
        .collect();
    let mut next_resv = 0;
    let mut booked: Vec<Booked> = Vec::new();
    // Every confirmed occurrence's start and end: a pass at each while
    // jobs wait. And each reservation's last end (with its number and
    // outcome), when the jobs left in its queue go.
    let mut bounds: BTreeSet<i64> = BTreeSet::new();
    let mut finishes: BinaryHeap<Reverse<(i64, u64, usize)>> = BinaryHeap::new();
    // What each job runs, by trace index: its run time, cut at its wall time.
    let mut run_of = vec![0i64; trace.jobs.len()];

    let mut records: Vec<Option<JobRecord>> = vec![None; trace.jobs.len()];
    // Lone jobs not finished yet, by id: their trace index. (A finished
    // job leaves: the map stays the size of what is queued and running.)
    let mut by_id: HashMap<JobId, usize> = HashMap::default();
    // An array's jobs, by trace index, in the order of its sub-jobs.
    let mut members: HashMap<JobId, Vec<usize>> = HashMap::default();
    // Running jobs' ends, with the number of the end set last for each
    // (`end_of`): an end moved by a suspension, or a job requeued or
    // deleted, leaves its old entry behind, which is passed over.
    let mut ends: BinaryHeap<Reverse<(i64, JobId, u64)>> = BinaryHeap::new();
    let mut end_of: HashMap<JobId, (i64, u64)> = HashMap::default();
    let mut end_seq = 0u64;
    // Jobs suspended by preemption: since when, and their run time left.
    let mut lent: HashMap<JobId, (i64, i64)> = HashMap::default();
    let exit = JobExit {
        code: Some(0),
        signal: None,
        cause: ExitCause::Exited,
        message: String::new(),
        cput: None,
        max_rss: None,
        vmem: None,
    };
    // Arrivals taken, and the jobs they held.
    let mut next = 0;
    let mut submitted = 0;
    let mut passes = 0;
    let mut callers: HashMap<(i64, i64), Caller> = HashMap::default();
    let mut finished = 0usize;
    let mut log: Vec<Record> = Vec::new();
    let server = state.server_name().to_string();
    // When the calendar next turns after `clock` (the instant last
    // replayed), and when that was worked out.
    let mut wake: Option<(i64, Option<i64>)> = None;
    let mut clock = i64::MIN;
    let mut last_progress = i64::MIN;
    let tell_every = (planned.len() / 200).max(1);
    // The passes keep their plan for the next where it stands (arrivals
    // only, under conservative backfilling): the same starts, less work.
    let mut replanner = Replanner::default();
    let mut names = QueueNames::default();
    loop {
        let arrival = arrivals
            .get(next)
            .and_then(|r| planned.get(r.start))
            .map(|p| p.submit);
        while let Some(&Reverse((_, id, seq))) = ends.peek() {
            if end_of.get(&id).is_some_and(|&(_, s)| s == seq) {
                break;
            }
            ends.pop();
        }
        let end = ends.peek().map(|Reverse((end, _, _))| *end);
        // Jobs wait: queued, or suspended until their nodes are free.
        let waiting = state.pending_count() > 0 || !lent.is_empty();
        let turn = if waiting {
            let stale = match wake {
                None => true,
                Some((_, Some(t))) => t <= clock,
                // Nothing within the calendar's horizon: look again later.
                Some((at, None)) => clock - at > 24 * 3600,
            };
            if stale {
                let t =
                    next_calendar_change(&state, at(base + clock)).map(|t| t.timestamp() - base);
                wake = Some((clock, t));
            }
            wake.and_then(|(_, t)| t)
        } else {
            None
        };
        let resv_submit = resv_order.get(next_resv).map(|&(t, _)| t);
        let bound = if waiting {
            bounds
                .range((Bound::Excluded(clock), Bound::Unbounded))
                .next()
                .copied()
        } else {
            None
        };
        let soon = arrival
            .into_iter()
            .chain(end)
            .chain(resv_submit)
            .chain(bound);
        let now_s = match (soon.min(), turn) {
            (Some(t), Some(w)) => t.min(w),
            (Some(t), None) => t,
            (None, Some(w)) if w <= last_progress.saturating_add(STUCK_AFTER) => w,
            (None, _) => break,
        };
        clock = now_s;
        let now = at(base + now_s);
        while let Some(&Reverse((end, id, seq))) = ends.peek() {
            if end > now_s {
                break;
            }
            ends.pop();
            if end_of.get(&id).is_none_or(|&(_, s)| s != seq) {
                continue;
            }
            end_of.remove(&id);
            let run = options
                .accounting
                .then(|| state.job(id).map(qmesh_core::joblog::EndedRun::of))
                .flatten();
            let (how, _) = state
                .finish(id, exit.clone(), now)
                .map_err(|e| ReplayError::Core(e.to_string()))?;
            if how == Finished::Finished {
                by_id.remove(&id);
            }
            if let (Some(run), Some(job)) = (run, state.job(id)) {
                log.push(Record::ended(job, &server, run, &exit, now));
            }
            last_progress = now_s;
            finished += 1;
            if finished % PURGE_EVERY == 0 {
                state.purge_history(now);
            }
        }
        // Nothing depends on an array here: its end needs no more.
        state.take_ended_arrays();
        // Reservations over: the jobs left in their queues go.
        while let Some(&Reverse((last, id, o))) = finishes.peek() {
            if last > now_s {
                break;
            }
            finishes.pop();
            let queue = format!("R{id}");
            let left: Vec<JobId> = state.pending_in(&queue).map(|j| j.id).collect();
            for job in left {
                state
                    .delete(job, &admin(), now)
                    .map_err(|e| ReplayError::Core(e.to_string()))?;
                let Some(index) = by_id.remove(&job) else {
                    continue;
                };
                records[index] = None;
                outcomes[o].deleted += 1;
                skipped.push((
                    index,
                    Skipped::new(
                        trace.jobs[index].number,
                        "left in a reservation's queue",
                        format!(
                            "still queued in {queue} when its last occurrence ended (deleted, as PBS does)"
                        ),
                    ),
                ));
            }
        }
        // Reservations made now.
        while let Some(&(t, i)) = resv_order.get(next_resv).filter(|&&(t, _)| t <= now_s) {
            next_resv += 1;
            let spec = &options.reservations[i];
            let request = ResvRequest {
                name: Some(format!("line{}", spec.line)),
                users: vec!["*".into()],
                nodes: spec.nodes,
                start: Some(at(base + spec.start.secs(base))),
                duration: Some(spec.duration),
                rrule: spec.rrule.clone(),
                node_set: spec.node_set.clone(),
                ..ResvRequest::default()
            };
            match rsub::submit(&state, &admin(), "sim", &request, now) {
                Ok((config, r)) => {
                    state.set_config(config);
                    let spans: Vec<Span> = r
                        .occurrences
                        .iter()
                        .map(|o| Span {
                            start: o.start.timestamp() - base,
                            end: o.end.timestamp() - base,
                            nodes: o.nodes.clone(),
                        })
                        .collect();
                    bounds.extend(spans.iter().flat_map(|s| [s.start, s.end]));
                    if let Some(last) = spans.last() {
                        finishes.push(Reverse((last.end, r.id, i)));
                    }
                    let pairs: Vec<(i64, i64)> = spans.iter().map(|s| (s.start, s.end)).collect();
                    booked.push(Booked::new(i, r.id, r.nodes, spec.share, t, &pairs));
                    let outcome = &mut outcomes[i];
                    outcome.id = Some(r.id);
                    outcome.node_set = Some(r.node_set);
                    outcome.occurrences = spans;
                    // The calendar's next turn is worked out again.
                    wake = None;
                }
                Err(e) => outcomes[i].refused = Some(e.to_string()),
            }
        }
        let mut arrived = Vec::new();
        while let Some(range) = arrivals
            .get(next)
            .filter(|r| planned.get(r.start).is_some_and(|p| p.submit <= now_s))
        {
            next += 1;
            let group = planned.get(range.clone()).unwrap_or_default();
            let Some(p) = group.first() else {
                continue;
            };
            let before = submitted;
            submitted += group.len();
            if submitted / tell_every > before / tell_every || submitted == planned.len() {
                progress(submitted, planned.len());
            }
            last_progress = now_s;
            let caller = callers
                .entry((p.user, p.group))
                .or_insert_with(|| caller(p.user, p.group));
            // An array asks for its longest job's time; each sub-job runs
            // its own job's time, cut at that job's request as alone.
            let walltime = group.iter().map(|m| m.walltime).max().unwrap_or(p.walltime);
            // A lone job may be express (`--express`).
            let express = group.len() == 1
                && options
                    .express
                    .is_some_and(|share| express_job(p.number, share));
            // A lone job may go to a reservation (the first that takes it).
            let resv = if group.len() == 1 && !express {
                booked.iter_mut().find_map(|b| {
                    b.takes(p.submit, p.nodes, walltime)
                        .then(|| (b.id, b.outcome, b.queue.clone()))
                })
            } else {
                None
            };
            match submit(
                &mut state,
                p,
                walltime,
                group.len(),
                trace,
                options,
                caller,
                resv.as_ref()
                    .map(|r| r.2.as_str())
                    .or(express.then_some(EXPRESS_QUEUE)),
                now,
            ) {
                Ok((id, queue, walltime)) => {
                    let in_resv = resv.filter(|r| r.2 == queue);
                    if let Some((_, o, _)) = in_resv {
                        outcomes[o].jobs += 1;
                    }
                    if options.accounting
                        && let Some(job) = state.job(id)
                    {
                        log.push(Record::queued(job, &server, now));
                    }
                    let in_express = options.express.is_some() && queue == EXPRESS_QUEUE;
                    let landed = site || in_resv.is_some() || in_express;
                    for m in group {
                        run_of[m.index] = m.run.min(m.walltime.min(walltime) as i64).max(0);
                        let name = if landed {
                            names.landed(&queue)
                        } else {
                            names.traced(trace, m.queue)
                        };
                        records[m.index] = Some(JobRecord {
                            reservation: in_resv.as_ref().map(|r| r.0),
                            express: in_express,
                            ..JobRecord::new(m.number, p.submit, m.nodes, name)
                        });
                    }
                    if group.len() > 1 {
                        members.insert(id, group.iter().map(|m| m.index).collect());
                    } else {
                        by_id.insert(id, p.index);
                        arrived.push(id);
                    }
                }
                Err(why) => skipped.extend(group.iter().map(|m| {
                    (
                        m.index,
                        Skipped::new(m.number, "refused by the queues", why.clone()),
                    )
                })),
            }
        }
        if state.pending_count() == 0 && lent.is_empty() {
            continue;
        }
        let core = |e: qmesh_core::CoreError| ReplayError::Core(e.to_string());
        let index_of = |id: JobId, what: &str| {
            trace_index(&by_id, &members, id)
                .ok_or_else(|| ReplayError::Core(format!("it {what} job {id}, never submitted")))
        };
        // A pass's starts, resumptions and preemptions are all a replay
        // needs of it. Jobs requeued or deleted for an express job are
        // gone at once (their agents' reports): the express job starts in
        // the pass after, at the same instant.
        for round in 0.. {
            if round == MAX_ROUNDS {
                return Err(ReplayError::Core(format!(
                    "{MAX_ROUNDS} passes at {now_s} s each preempted jobs, and no express job \
                     started"
                )));
            }
            let plan = replanner.changes(&state, now);
            passes += 1;
            for &id in &plan.resumes {
                state.take_back(id, now).map_err(core)?;
                let (since, left) = lent.remove(&id).ok_or_else(|| {
                    ReplayError::Core(format!("it resumed job {id}, not suspended"))
                })?;
                let index = index_of(id, "resumed")?;
                if let Some(r) = records[index].as_mut() {
                    r.suspended += now_s - since;
                    r.end += now_s - since;
                }
                end_seq += 1;
                end_of.insert(id, (now_s + left, end_seq));
                ends.push(Reverse((now_s + left, id, end_seq)));
                last_progress = now_s;
            }
            for p in &plan.preempted {
                let index = index_of(p.job, "preempted")?;
                let (end, _) = end_of.remove(&p.job).ok_or_else(|| {
                    ReplayError::Core(format!("it preempted job {}, not running", p.job))
                })?;
                let r = records[index].as_mut().ok_or_else(|| {
                    ReplayError::Core(format!("it preempted job {}, not recorded", p.job))
                })?;
                match p.method {
                    Method::Suspend => {
                        state.suspend_for(p.job, p.by, now).map_err(core)?;
                        lent.insert(p.job, (now_s, end - now_s));
                        r.suspensions += 1;
                    }
                    Method::Requeue | Method::Delete => {
                        let requeue = p.method == Method::Requeue;
                        state.stop_for(p.job, p.by, requeue, now).map_err(core)?;
                        state.finish(p.job, exit.clone(), now).map_err(core)?;
                        if requeue {
                            r.requeues += 1;
                            r.requeued_work += i64::from(r.nodes) * (now_s - r.start - r.suspended);
                            (r.start, r.end, r.suspended) = (-1, -1, 0);
                        } else {
                            r.end = now_s;
                            r.killed = true;
                            finished += 1;
                            if finished % PURGE_EVERY == 0 {
                                state.purge_history(now);
                            }
                        }
                    }
                    Method::Checkpoint => {
                        return Err(ReplayError::Core(format!(
                            "it checkpointed job {}, which a replay refuses to do (machine.rs)",
                            p.job
                        )));
                    }
                }
                last_progress = now_s;
            }
            for start in &plan.starts {
                // An array's start is its next sub-job's.
                let started = state
                    .start_placed(start.job, &start.nodes, &start.parts, now)
                    .map_err(core)?
                    .id;
                if options.accounting
                    && let Some(job) = state.job(started)
                {
                    log.push(Record::started(job, &server, now));
                }
                last_progress = now_s;
                let index = index_of(started, "started")?;
                let end = now_s + run_of[index];
                if let Some(r) = records[index].as_mut() {
                    r.start = now_s;
                    r.end = end;
                }
                end_seq += 1;
                end_of.insert(started, (end, end_seq));
                ends.push(Reverse((end, started, end_seq)));
            }
            // The tests replay with the core's own checks: no node runs two
            // jobs, what each job holds is what its nodes say.
            #[cfg(test)]
            state.check_invariants().map_err(ReplayError::Core)?;
            if plan.preempted.iter().all(|p| p.method == Method::Suspend) {
                break;
            }
        }
        if options.predict {
            // What spwhen says once the pass after the submission is done,
            // from wall times and from predicted run times.
            for id in arrived {
                let (predicted, from_runs) = match state.job(id) {
                    Some(job) if job.state.is_pending() => {
                        let since = |t: DateTime<Utc>| t.timestamp() - base;
                        (
                            Scheduler.when(&state, job, now).start.map(since),
                            Scheduler.when_predicted(&state, job, now).start.map(since),
                        )
                    }
                    _ => (Some(now_s), Some(now_s)),
                };
                if let Some(r) = records[by_id[&id]].as_mut() {
                    r.predicted = predicted;
                    r.predicted_from_runs = from_runs;
                }
            }
        }
    }
    let stuck = || {
        let lone = by_id.iter().map(|(&id, &index)| (id, index));
        let subs = members
            .iter()
            .flat_map(|(&id, m)| m.iter().map(move |&index| (id, index)));
        lone.chain(subs)
            .filter(|&(_, index)| records[index].as_ref().is_some_and(|r| r.start < 0))
    };
    let never_resumed = || {
        lent.keys()
            .filter_map(|&id| trace_index(&by_id, &members, id).map(|index| (id, index)))
    };
    if let Some((_, index)) = never_resumed().min_by_key(|&(_, index)| index) {
        return Err(ReplayError::Stuck {
            count: never_resumed().count(),
            first: trace.jobs[index].number,
            why: "suspended for an express job, its nodes were never all free again".into(),
        });
    }
    if let Some((id, index)) = stuck().min_by_key(|&(_, index)| index) {
        let why = state.job(id).map_or_else(String::new, |job| {
            Scheduler
                .when(&state, job, at(base + last_progress))
                .reason
                .explain()
                .to_string()
        });
        return Err(ReplayError::Stuck {
            count: stuck().count(),
            first: trace.jobs[index].number,
            why,
        });
    }
    skipped.sort_by_key(|(index, _)| *index);
    // In place (`flatten` is not collected so): a second vector of a few
    // hundred thousand records, or one grown by doubling, showed in the
    // replay's profile.
    #[allow(clippy::filter_map_identity)]
    let records: Vec<JobRecord> = records.into_iter().filter_map(|r| r).collect();
    for r in &records {
        let Some(o) = r
            .reservation
            .and_then(|id| outcomes.iter_mut().find(|o| o.id == Some(id)))
        else {
            continue;
        };
        o.ran += 1;
        o.used += f64::from(r.nodes) * r.run() as f64;
    }
    Ok(Replay {
        nodes,
        records,
        skipped: skipped.into_iter().map(|(_, s)| s).collect(),
        passes,
        passes_resumed: replanner.resumed,
        arrays: formed,
        accounting: log,
        zone: state.config().calendar.zone().unwrap_or(chrono_tz::Tz::UTC),
        reservations: outcomes,
    })
}

/// The queue names the records share, one each.
#[derive(Default)]
struct QueueNames {
    /// By the trace's queue number.
    traced: HashMap<i64, Arc<str>>,
    /// The configuration's queues jobs landed in (a few).
    landed: Vec<Arc<str>>,
}

impl QueueNames {
    fn traced(&mut self, trace: &Trace, queue: i64) -> Arc<str> {
        self.traced
            .entry(queue)
            .or_insert_with(|| trace.queue_name(queue).into())
            .clone()
    }

    fn landed(&mut self, queue: &str) -> Arc<str> {
        if let Some(name) = self.landed.iter().find(|n| &***n == queue) {
            return name.clone();
        }
        let name: Arc<str> = queue.into();
        self.landed.push(name.clone());
        name
    }
}

/// The trace index of a started job: a lone job's, or its array's member
/// at the sub-job's index.
fn trace_index(
    by_id: &HashMap<JobId, usize>,
    members: &HashMap<JobId, Vec<usize>>,
    id: JobId,
) -> Option<usize> {
    match (id.array_parent(), id.array_index()) {
        (Some(array), Some(i)) => members.get(&array)?.get(i as usize).copied(),
        _ => by_id.get(&id).copied(),
    }
}

/// Submits one job, or with `count` above 1 an array `-J 0-(count-1)` of
/// jobs like it, asking `walltime`: to queue `resv` (a reservation's, or
/// `express`) if given, else to the queue its trace names if the configuration has it; if that
/// queue does not take the job, to the default queue.
/// Returns its id, the queue it landed in and its wall time; or why no
/// queue took it.
#[allow(clippy::too_many_arguments)]
fn submit(
    state: &mut State,
    p: &Planned,
    walltime: u64,
    count: usize,
    trace: &Trace,
    options: &Options,
    caller: &Caller,
    resv: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(JobId, String, u64), String> {
    let named = match resv {
        Some(queue) => Some(queue.to_string()),
        None => {
            let named = trace.queue_name(p.queue);
            state.config().queues.contains_key(&named).then_some(named)
        }
    };
    let mut attempt = |queue: Option<&str>| -> Result<(JobId, String, u64), String> {
        let config = state.config();
        let target = queue.or(config.server.default_queue.as_deref());
        let max = target
            .and_then(|q| config.queue(q))
            .filter(|q| !q.is_route())
            .and_then(|q| q.max_walltime);
        let walltime = match max {
            Some(max) if options.cap_walltime => walltime.min(max),
            _ => walltime,
        };
        let sub = Submission {
            script_name: "job".into(),
            workdir: "/sim".into(),
            queue: queue.map(str::to_string),
            array: (count > 1).then(|| (ArrayStyle::PbsPro, format!("0-{}", count - 1))),
            ..Submission::default()
        };
        // `-l nodes=N,walltime=S`, as numbers: nothing to write out and
        // parse again.
        let asked = Asked {
            nodes: p.nodes,
            walltime,
        };
        let job = state
            .submit_asked(sub, Some(asked), caller, now)
            .map_err(|e| e.to_string())?;
        let (id, landed, comment) = (job.id, job.queue.clone(), job.comment.clone());
        // A route queue's holding queue is not started: the job would wait
        // there for ever.
        if !state.config().queue(&landed).is_some_and(|q| q.started) {
            let _ = state.delete(id, &admin(), now);
            return Err(format!(
                "it lands in queue \"{landed}\", which does not run jobs: {comment}"
            ));
        }
        Ok((id, landed, walltime))
    };
    match named {
        None => attempt(None),
        Some(q) => attempt(Some(&q)).or_else(|refused| {
            attempt(None).map_err(|_| format!("queue \"{q}\" refuses it: {refused}"))
        }),
    }
}

/// Scaled wall time and run time of a job: (ok, wall, run).
fn times(job: &SwfJob, options: &Options) -> (bool, u64, i64) {
    let scale = |v: i64| (v as f64 * options.load_scale).round() as i64;
    let run = scale(job.run);
    let wall = scale(job.walltime()).max(run.min(1)).max(1);
    (run >= 0, wall as u64, run)
}

/// The jobs to replay, and those left out with the reason (by trace index).
fn plan_jobs(
    trace: &Trace,
    options: &Options,
    nodes: u32,
    partition: Option<i64>,
) -> (Vec<Planned>, Vec<(usize, Skipped)>) {
    let mut planned = Vec::with_capacity(trace.jobs.len());
    let mut skipped = Vec::new();
    for (index, job) in trace.jobs.iter().enumerate() {
        let skip = |kind: &str, why: String| (index, Skipped::new(job.number, kind, why));
        if let Some(p) = partition
            && job.partition != p
        {
            let name = trace.partitions.get(&job.partition).map_or_else(
                || job.partition.to_string(),
                |n| format!("{} {n}", job.partition),
            );
            skipped.push(skip(
                "in another partition",
                format!("in partition {name}, not the one replayed"),
            ));
            continue;
        }
        let procs = job.procs();
        if procs <= 0 {
            let why = "no processor count (fields 5 and 8)";
            skipped.push(skip(why, why.into()));
            continue;
        }
        if job.submit < 0 {
            let why = "no submit time (field 2)";
            skipped.push(skip(why, why.into()));
            continue;
        }
        if [job.submit, job.run, job.walltime()]
            .iter()
            .any(|&t| t > MAX_TRACE_SECS)
        {
            let why = "a time past 100 years (field 2, 4 or 9)";
            skipped.push(skip(why, why.into()));
            continue;
        }
        let (ok, walltime, run) = times(job, options);
        if !ok || job.run < 0 {
            let why = "no run time (field 4)";
            skipped.push(skip(why, why.into()));
            continue;
        }
        let mut size = (procs as f64 * options.size_scale).ceil().max(1.0) as u64;
        if options.round_pow2 {
            size = size.next_power_of_two();
        }
        if size > u64::from(nodes) {
            let why = "larger than the machine";
            skipped.push(skip(why, why.into()));
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
            group: job.group,
            queue: job.queue,
            program: Program::of(job),
        });
    }
    (planned, skipped)
}

/// The trace's user and group as a caller: uid 1000 + user, `u7` in `g3`.
fn caller(user: i64, group: i64) -> Caller {
    let uid = u32::try_from(user.max(0)).unwrap_or(0) + 1000;
    Caller {
        uid,
        gid: 100,
        user: format!("u{user}"),
        group: if group >= 0 {
            format!("g{group}")
        } else {
            "users".into()
        },
        role: Role::User,
    }
}

fn admin() -> Caller {
    Caller {
        uid: 0,
        gid: 0,
        user: "root".into(),
        group: "root".into(),
        role: Role::Manager,
    }
}

/// The virtual clock's instant `secs` after the Unix epoch.
fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(secs, 0).unwrap_or(DateTime::<Utc>::MIN_UTC)
}

#[cfg(test)]
mod array_tests;
#[cfg(test)]
mod preempt_tests;
#[cfg(test)]
mod resv_tests;
#[cfg(test)]
mod site_tests;
#[cfg(test)]
mod tests;
