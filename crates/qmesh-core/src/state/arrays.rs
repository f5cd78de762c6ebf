//! Job arrays in the state (see `array.rs`): a sub-job's record is made
//! when it starts or is acted on alone, and its array's tally follows every
//! change of its sub-jobs. The array waits in its queue as one pending job
//! while it has sub-jobs left to start; then it is `Begun` until the last
//! ends, and then `Finished`, with PBS Pro's exit status of an array.

use std::collections::BTreeMap;

use rangemap::RangeSet;

use super::{State, add_pending, remove_pending};
use crate::access::Caller;
use crate::array::{JobArray, Named, Positions, intersection, sub_path};
use crate::error::CoreError;
use crate::job::{ExitCause, Job, JobExit, JobId, JobState};
use crate::time::Time;

/// What a command's id names (see [`State::targets`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Targets {
    /// Jobs with records: a job, an array, sub-jobs that have not finished.
    pub jobs: Vec<JobId>,
    /// Sub-jobs left to start: the array and their positions.
    pub unstarted: Option<(JobId, RangeSet<u32>)>,
}

/// What a sub-job record tells its array at load.
struct SubSeen {
    position: u32,
    state: JobState,
    exit: Option<(i32, bool)>,
    end: Option<Time>,
}

impl State {
    /// The sub-job at `position` of `array`, made pending now; its array
    /// no longer counts it among those left.
    pub(crate) fn materialize(
        &mut self,
        array: JobId,
        position: u32,
        now: Time,
    ) -> Result<JobId, CoreError> {
        let parent = self
            .book
            .jobs
            .get(&array)
            .ok_or_else(|| self.no_such(array))?;
        let Some(spec) = parent.array.as_ref() else {
            return Err(self.wrong_state(parent, "take a sub-job of"));
        };
        let index = spec
            .spec
            .index_at(position)
            .ok_or_else(|| CoreError::NoSuchJob {
                id: format!("{array}[#{position}]"),
            })?;
        if !spec.tally.unstarted.contains(&position) {
            return Err(CoreError::NoSuchJob {
                id: self.full_id(array.sub_job(index)),
            });
        }
        let id = array.sub_job(index);
        let sub = Job {
            id,
            array: None,
            stdout_path: sub_path(&parent.stdout_path, index),
            stderr_path: sub_path(&parent.stderr_path, index),
            depend: Vec::new(),
            before: Vec::new(),
            depend_on: 0,
            depend_how: Default::default(),
            start_after: None,
            // Held while its array is: it is one of them.
            holds: parent.holds,
            state: parent.pending_state(),
            mtime: now,
            comment: String::new(),
            // The submission made the array, not this sub-job.
            submission_id: None,
            ..parent.clone()
        };
        add_pending(&mut self.book.pending, &sub);
        self.book.accounting.tally.enter_pending(&sub);
        self.book.jobs.insert(id, sub);
        if let Some(tally) = self.array_tally(array) {
            tally.unstarted.remove(position..position + 1);
            tally.live += 1;
            tally.begun += 1;
        }
        self.settle_array(array, now);
        Ok(id)
    }

    /// The next sub-job of `array` to start, made pending (the pass
    /// starts an array by starting it).
    pub(crate) fn materialize_next(&mut self, array: JobId, now: Time) -> Result<JobId, CoreError> {
        let next = self.book.jobs.get(&array).and_then(|job| {
            // Matched sub-job by sub-job (aftercorr): the first whose
            // counterpart has ended well; otherwise the first left.
            if self.matches_sub_jobs(job) {
                self.ready_position(job, now)
            } else {
                let a = job.array.as_ref()?;
                a.tally.unstarted.iter().next().map(|r| r.start)
            }
        });
        match next {
            Some(position) => self.materialize(array, position, now),
            None => {
                let job = self
                    .book
                    .jobs
                    .get(&array)
                    .ok_or_else(|| self.no_such(array))?;
                Err(self.wrong_state(job, "start"))
            }
        }
    }

    /// The array of a job: its own, or its sub-job's array's.
    pub fn array_of(&self, id: JobId) -> Option<&JobArray> {
        let array = id.array_parent().unwrap_or(id);
        self.book.jobs.get(&array).and_then(|j| j.array.as_deref())
    }

    /// Whether the job's array already runs as many sub-jobs as its
    /// throttle allows.
    pub fn array_throttled(&self, id: JobId) -> bool {
        self.array_of(id).is_some_and(|a| !a.throttle_room(0))
    }

    fn array_tally(&mut self, array: JobId) -> Option<&mut crate::array::ArrayTally> {
        self.book
            .jobs
            .get_mut(&array)
            .and_then(|j| j.array.as_mut())
            .map(|a| &mut a.tally)
    }

    /// A sub-job went from `before` to its present state: its array's
    /// tally follows, and an array whose sub-jobs have all ended finishes.
    pub(super) fn sub_job_changed(&mut self, id: JobId, before: JobState, now: Time) {
        let Some(array) = id.array_parent() else {
            return;
        };
        let Some(sub) = self.book.jobs.get(&id) else {
            return;
        };
        let after = sub.state;
        let ended = (after == JobState::Finished && before != JobState::Finished).then(|| {
            let exit = sub.exit.as_ref();
            (
                exit.is_some_and(|e| e.cause == ExitCause::Deleted),
                exit.map_or(0, |e| e.exit_status()),
            )
        });
        let Some(tally) = self.array_tally(array) else {
            return;
        };
        match (before.is_active(), after.is_active()) {
            (false, true) => tally.running += 1,
            (true, false) => tally.running = tally.running.saturating_sub(1),
            _ => {}
        }
        if let Some((deleted, status)) = ended {
            tally.live = tally.live.saturating_sub(1);
            tally.deleted |= deleted;
            tally.failed |= status != 0;
        }
        self.settle_array(array, now);
    }

    /// An array with no sub-job left to start leaves its queue (`Begun`),
    /// and finishes once the last has ended.
    pub(super) fn settle_array(&mut self, array: JobId, now: Time) {
        let Some(job) = self.book.jobs.get(&array) else {
            return;
        };
        let Some(a) = job.array.as_ref() else {
            return;
        };
        if !a.tally.unstarted.is_empty() {
            return;
        }
        if job.state.is_pending() {
            remove_pending(&mut self.book.pending, job);
            self.book.accounting.tally.leave_pending(job);
        }
        let done = a.is_done();
        let Some(job) = self.book.jobs.get_mut(&array) else {
            return;
        };
        if done && job.state != JobState::Finished {
            finish_array(job, now);
            self.book.ended_arrays.push(array);
        } else if !done && job.state != JobState::Begun {
            job.state = JobState::Begun;
            job.mtime = now;
            job.comment = "job array begun: every sub-job has started".into();
        }
    }

    /// Arrays that finished since the last call: the caller stores them
    /// and resolves what depends on them.
    pub fn take_ended_arrays(&mut self) -> Vec<JobId> {
        std::mem::take(&mut self.book.ended_arrays)
    }

    /// qdel of sub-jobs that have not started (a range of `array`, or all
    /// of them): they are recorded as deleted in the array's record.
    /// Returns how many were deleted.
    pub fn delete_unstarted(
        &mut self,
        array: JobId,
        positions: &RangeSet<u32>,
        caller: &Caller,
        now: Time,
    ) -> Result<u32, CoreError> {
        let job = self.checked(array, caller, "delete")?;
        if job.array.is_none() {
            return Err(self.wrong_state(job, "delete sub-jobs of"));
        }
        let count = self.remove_unstarted(array, positions);
        if count == 0 {
            return Ok(0);
        }
        if let Some(job) = self.book.jobs.get_mut(&array) {
            job.mtime = now;
            job.comment = format!(
                "{count} sub-job(s) deleted by {} before they started",
                caller.user
            );
        }
        self.settle_array(array, now);
        Ok(count)
    }

    /// Those of `positions` still left to start leave the array for good
    /// (recorded as deleted); how many. The caller settles the array.
    pub(super) fn remove_unstarted(&mut self, array: JobId, positions: &Positions) -> u32 {
        let Some(a) = self
            .book
            .jobs
            .get_mut(&array)
            .and_then(|j| j.array.as_mut())
        else {
            return 0;
        };
        let gone = intersection(positions, &a.tally.unstarted);
        for r in gone.iter() {
            a.tally.unstarted.remove(r.clone());
            a.removed.insert(r.clone());
        }
        if !gone.is_empty() {
            a.tally.deleted = true;
        }
        crate::array::count(&gone)
    }

    /// The sub-jobs of `array` that have a record and have not finished.
    pub fn live_sub_jobs(&self, array: JobId) -> Vec<JobId> {
        let live = self
            .book
            .jobs
            .get(&array)
            .and_then(|j| j.array.as_ref())
            .map_or(0, |a| a.tally.live);
        if live == 0 {
            return Vec::new();
        }
        let mut ids: Vec<JobId> = self
            .book
            .jobs
            .values()
            .filter(|j| j.id.array_parent() == Some(array) && j.state != JobState::Finished)
            .map(|j| j.id)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// An array's sub-jobs, each with its index, in index order: those
    /// with a record, and those left to start (qstat -t).
    pub fn sub_jobs(&self, array: JobId) -> Vec<(u32, Option<&Job>)> {
        let Some(a) = self.book.jobs.get(&array).and_then(|j| j.array.as_ref()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for pos in 0..a.spec.count() {
            let Some(index) = a.spec.index_at(pos) else {
                break;
            };
            if a.removed.contains(&pos) {
                continue;
            }
            let record = self.book.jobs.get(&array.sub_job(index));
            if record.is_some() || a.tally.unstarted.contains(&pos) {
                out.push((index, record));
            }
        }
        out
    }

    /// What a command's id names: the jobs with records (a job, an array,
    /// the sub-jobs of a range that have not finished), and the sub-jobs
    /// left to start among them. A range with neither is no such job.
    pub fn targets(&self, text: &str) -> Result<Targets, CoreError> {
        let (array, first, last) = match Named::parse(text, &self.server_name)? {
            Named::One(id) => {
                if self.book.jobs.contains_key(&id) {
                    return Ok(Targets {
                        jobs: vec![id],
                        unstarted: None,
                    });
                }
                let (Some(array), Some(index)) = (id.array_parent(), id.array_index()) else {
                    return Err(self.no_such(id));
                };
                (array, index, index)
            }
            Named::Range { array, first, last } => (array, first, last),
        };
        let what = || CoreError::NoSuchJob {
            id: format!("{array}[{first}-{last}].{}", self.server_name),
        };
        let a = self
            .book
            .jobs
            .get(&array)
            .and_then(|j| j.array.as_ref())
            .ok_or_else(what)?;
        let wanted = a.spec.positions_between(first, last);
        let unstarted = intersection(&wanted, &a.tally.unstarted);
        let mut jobs = Vec::new();
        for r in wanted.iter() {
            if a.tally.live == 0 {
                continue;
            }
            for pos in r.clone() {
                let id = a.spec.index_at(pos).map(|i| array.sub_job(i));
                if let Some(job) = id.and_then(|id| self.book.jobs.get(&id))
                    && job.state != JobState::Finished
                {
                    jobs.push(job.id);
                }
            }
        }
        if jobs.is_empty() && unstarted.is_empty() {
            return Err(what());
        }
        Ok(Targets {
            jobs,
            unstarted: (!unstarted.is_empty()).then_some((array, unstarted)),
        })
    }

    /// The ids of the sub-jobs at `positions` of `array`.
    pub fn sub_ids(&self, array: JobId, positions: &RangeSet<u32>) -> Vec<JobId> {
        let Some(a) = self.array_of(array) else {
            return Vec::new();
        };
        positions
            .iter()
            .flat_map(|r| r.clone())
            .filter_map(|p| a.spec.index_at(p).map(|i| array.sub_job(i)))
            .collect()
    }

    /// A sub-job left to start, as qstat shows it: its array's record
    /// under its own id (nothing is stored or changed).
    pub fn unstarted_view(&self, id: JobId) -> Option<Job> {
        if !self.is_unstarted_sub_job(id) {
            return None;
        }
        let parent = self.book.jobs.get(&id.array_parent()?)?;
        let index = id.array_index()?;
        Some(Job {
            id,
            array: None,
            stdout_path: sub_path(&parent.stdout_path, index),
            stderr_path: sub_path(&parent.stderr_path, index),
            comment: String::new(),
            submission_id: None,
            ..parent.clone()
        })
    }

    /// Sub-job `id` exists as a record: made now if it was left to start
    /// (to hold, alter or move it alone). A sub-job that ended and was
    /// purged, or was deleted, is no such job.
    pub fn sub_job_record(&mut self, id: JobId, now: Time) -> Result<(), CoreError> {
        let Some(array) = id.array_parent() else {
            return Ok(());
        };
        if self.book.jobs.contains_key(&id) {
            return Ok(());
        }
        let position = self
            .book
            .jobs
            .get(&array)
            .and_then(|j| j.array.as_ref())
            .and_then(|a| id.array_index().and_then(|i| a.spec.position_of(i)))
            .ok_or_else(|| self.no_such(id))?;
        self.materialize(array, position, now).map(|_| ())
    }

    /// Whether `id` names a sub-job left to start (no record yet).
    pub fn is_unstarted_sub_job(&self, id: JobId) -> bool {
        let (Some(array), Some(index)) = (id.array_parent(), id.array_index()) else {
            return false;
        };
        self.book
            .jobs
            .get(&array)
            .and_then(|j| j.array.as_ref())
            .and_then(|a| {
                a.spec
                    .position_of(index)
                    .map(|p| a.tally.unstarted.contains(&p))
            })
            .unwrap_or(false)
    }

    /// Each array's tally agrees with its sub-jobs' records, and it waits
    /// in its queue exactly while it has sub-jobs left (for tests).
    pub(super) fn check_arrays(&self) -> Result<(), String> {
        for job in self.book.jobs.values() {
            let Some(a) = &job.array else {
                continue;
            };
            let subs = self
                .book
                .jobs
                .values()
                .filter(|j| j.id.array_parent() == Some(job.id));
            let (mut live, mut running) = (0, 0);
            for sub in subs {
                live += u32::from(sub.state != JobState::Finished);
                running += u32::from(sub.state.is_active());
                let index = sub.id.array_index().unwrap_or(0);
                let pos = a.spec.position_of(index);
                if pos.is_none_or(|p| a.tally.unstarted.contains(&p) || a.removed.contains(&p)) {
                    return Err(format!(
                        "array {}: sub-job {} has a record and is counted left",
                        job.id, sub.id
                    ));
                }
            }
            if (live, running) != (a.tally.live, a.tally.running) {
                return Err(format!(
                    "array {}: {live} live and {running} running, tally says {} and {}",
                    job.id, a.tally.live, a.tally.running
                ));
            }
            let waits = job.state.is_pending();
            if waits == a.tally.unstarted.is_empty() {
                return Err(format!(
                    "array {} is {} with {} left",
                    job.id,
                    job.state,
                    a.unstarted()
                ));
            }
            if job.state == JobState::Finished && !a.is_done() {
                return Err(format!("array {} finished with sub-jobs live", job.id));
            }
        }
        Ok(())
    }

    /// At load, once every record is in: each array's tally from its
    /// sub-jobs' records, and the arrays still waiting back in their
    /// queues.
    pub(super) fn restore_arrays(&mut self, arrays: Vec<JobId>) {
        let mut seen: BTreeMap<JobId, Vec<SubSeen>> = BTreeMap::new();
        for job in self.book.jobs.values() {
            let (Some(array), Some(index)) = (job.id.array_parent(), job.id.array_index()) else {
                continue;
            };
            let Some(position) = self
                .book
                .jobs
                .get(&array)
                .and_then(|p| p.array.as_ref())
                .and_then(|a| a.spec.position_of(index))
            else {
                continue;
            };
            seen.entry(array).or_default().push(SubSeen {
                position,
                state: job.state,
                exit: job
                    .exit
                    .as_ref()
                    .map(|e| (e.exit_status(), e.cause == ExitCause::Deleted)),
                end: job.end_time,
            });
        }
        for id in arrays {
            let subs = seen.remove(&id).unwrap_or_default();
            let Some(job) = self.book.jobs.get_mut(&id) else {
                continue;
            };
            let Some(a) = job.array.as_mut() else {
                continue;
            };
            let mut tally = JobArray::new(a.spec.clone()).tally;
            for r in a.removed.iter() {
                tally.unstarted.remove(r.clone());
            }
            tally.deleted = !a.removed.is_empty();
            for s in &subs {
                tally.unstarted.remove(s.position..s.position + 1);
                tally.begun += 1;
                if s.state != JobState::Finished {
                    tally.live += 1;
                }
                if s.state.is_active() {
                    tally.running += 1;
                }
                if let Some((status, deleted)) = s.exit {
                    tally.deleted |= deleted;
                    tally.failed |= status != 0;
                }
            }
            a.tally = tally;
            if job.state.is_pending() && !a.tally.unstarted.is_empty() {
                add_pending(&mut self.book.pending, job);
                self.book.accounting.tally.enter_pending(job);
                self.note_dependencies_of(id);
            } else if job.state != JobState::Finished {
                // Its last starts (or ends) were stored, not its new state:
                // it ended when its last sub-job did.
                let last_end = subs.iter().filter_map(|s| s.end).max();
                let at = last_end.map_or(job.mtime, |end| end.max(job.mtime));
                job.state = JobState::Begun;
                self.settle_array(id, at);
            }
        }
    }
}

/// An array whose sub-jobs have all ended: finished, with PBS Pro's exit
/// status of an array.
fn finish_array(job: &mut Job, now: Time) {
    let status = job.array.as_ref().map_or(0, |a| a.exit_status());
    job.state = JobState::Finished;
    job.mtime = now;
    job.end_time = Some(now);
    job.exit = Some(JobExit {
        code: Some(status),
        signal: None,
        cause: ExitCause::Exited,
        message: String::new(),
        cput: None,
        max_rss: None,
        vmem: None,
    });
    job.comment = match status {
        0 => "job array finished: every sub-job exited 0".into(),
        1 => "job array finished: a sub-job exited non-zero".into(),
        _ => "job array finished: sub-jobs were deleted".into(),
    };
}

#[cfg(test)]
mod tests;
