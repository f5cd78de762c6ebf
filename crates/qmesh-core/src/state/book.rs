//! The job book: every job, history included, and the indexes kept over
//! them so that a pass and a query never scan the whole book: pending jobs
//! by queue in rank order, the active set, who depends on whom, and the
//! accounting counters. Only the state's transitions change it, each
//! keeping the indexes in step with the records (`check_invariants`).

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap as HashMap;

use super::Accounting;
use crate::ids::{JobId, JobState};
use crate::job::Job;
use crate::time::Time;

#[derive(Clone, Debug)]
pub(super) struct JobBook {
    /// Every job, history included. Hashed: a pass looks up each pending
    /// job, and a B-tree search per job cost more than the pass itself.
    pub(super) jobs: HashMap<JobId, Job>,
    /// Pending jobs by queue, in rank order (a job's rank is its id unless
    /// the queue was reordered): a pass walks a queue without sorting and
    /// stops when the nodes run out.
    pub(super) pending: Pending,
    pub(super) active: BTreeSet<JobId>,
    /// Active jobs suspended by preemption, their nodes lent (`lent.rs`):
    /// a pass reads them without walking the active jobs.
    pub(super) lent: BTreeSet<JobId>,
    /// Jobs that named each job in `-W depend` and may still wait for it;
    /// entries go when the named job ends ([`super::State::take_dependents`]).
    pub(super) dependents: HashMap<JobId, Vec<JobId>>,
    pub(super) next_id: u64,
    /// Arrays finished since the daemon last asked
    /// ([`super::State::take_ended_arrays`]).
    pub(super) ended_arrays: Vec<JobId>,
    /// Usage charged, and counters of what queued and running jobs ask
    /// for (see `account.rs`).
    pub(super) accounting: Accounting,
    /// Jobs by the id their client gave the submission
    /// ([`Job::submission_id`]), while the job is kept.
    pub(super) by_submission: HashMap<String, JobId>,
}

impl JobBook {
    /// An empty book whose ids start at 1.
    pub(super) fn new(accounting: Accounting) -> JobBook {
        JobBook {
            jobs: HashMap::default(),
            pending: BTreeMap::new(),
            active: BTreeSet::new(),
            lent: BTreeSet::new(),
            dependents: HashMap::default(),
            next_id: 1,
            ended_arrays: Vec::new(),
            accounting,
            by_submission: HashMap::default(),
        }
    }
}

/// Where a pending job stands in its queue: its priority (`qsub -p`,
/// higher first), then its rank, then its id. A change to any of them
/// must take the job out under its old key first.
pub(super) type PendingKey = (i32, u64, JobId);

pub(super) fn pending_key(job: &Job) -> PendingKey {
    (-job.priority, job.rank.unwrap_or(job.id.seq()), job.id)
}

/// What a scheduling pass reads of every pending job, kept beside its key.
/// A pass walks these in order without touching the job records: with
/// 100,000 jobs, one cache miss per record cost more than the pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingView {
    pub id: JobId,
    pub nodes: u32,
    pub walltime: u64,
    /// Its predicted run time in seconds, if its owner had run jobs
    /// (`predict.rs`); 0 when not. Four bytes: every pass copies the view
    /// of every job it takes.
    pub predicted: u32,
    pub qtime: Time,
    /// Queued: not held, waiting or in transit.
    pub queued: bool,
    /// Has dependencies or a start-after time to check.
    pub conditional: bool,
    /// Names an account (allocations, group limits, fair share apply).
    pub has_account: bool,
    /// Needs memory, CPUs or features of its nodes: not every set serves it.
    pub has_needs: bool,
    /// Names its nodes or hosts, asks for them packed, scattered or to
    /// itself, or needs GPUs or other resources consumed per node: the
    /// planner chooses its nodes one by one.
    pub constrained: bool,
    /// An array, or a sub-job with a record of its own: its array's
    /// throttle applies.
    pub array: bool,
}

impl PendingView {
    pub(super) fn of(job: &Job) -> PendingView {
        PendingView {
            id: job.id,
            nodes: job.nodes,
            walltime: job.walltime,
            predicted: job
                .predicted_run
                .map_or(0, |p| u32::try_from(p).unwrap_or(u32::MAX).max(1)),
            qtime: job.qtime,
            queued: job.state == JobState::Queued,
            conditional: !job.depend.is_empty()
                || job.start_after.is_some()
                || job.depend_on > 0
                || job.depend_how.singleton,
            has_account: job.account.is_some(),
            has_needs: job.needs().any(),
            constrained: job.consumes_on_nodes()
                || job
                    .layout
                    .as_ref()
                    .is_some_and(|l| l.constrains_placement()),
            array: job.array.is_some() || job.id.array_parent().is_some(),
        }
    }
}

pub(super) type Pending = BTreeMap<String, BTreeMap<PendingKey, PendingView>>;

/// Puts a job that ran back in its queue, as if never started.
pub(super) fn requeue(
    job: &mut Job,
    comment: String,
    pending: &mut Pending,
    accounting: &mut Accounting,
) {
    job.state = job.pending_state();
    job.comment = comment;
    job.stime = None;
    job.suspension = Default::default();
    job.exec_nodes.clear();
    job.placement.clear();
    add_pending(pending, job);
    accounting.tally.enter_pending(job);
}

pub(super) fn add_pending(pending: &mut Pending, job: &Job) {
    // The queue's name is copied only for its first pending job.
    let view = PendingView::of(job);
    match pending.get_mut(&job.queue) {
        Some(queue) => {
            queue.insert(pending_key(job), view);
        }
        None => {
            let queue = pending.entry(job.queue.clone()).or_default();
            queue.insert(pending_key(job), view);
        }
    }
}

/// After a pending job's state changed (held, released).
pub(super) fn refresh_pending(pending: &mut Pending, job: &Job) {
    if let Some(view) = pending
        .get_mut(&job.queue)
        .and_then(|set| set.get_mut(&pending_key(job)))
    {
        *view = PendingView::of(job);
    }
}

pub(super) fn remove_pending(pending: &mut Pending, job: &Job) {
    if let Some(set) = pending.get_mut(&job.queue) {
        set.remove(&pending_key(job));
        if set.is_empty() {
            pending.remove(&job.queue);
        }
    }
}
