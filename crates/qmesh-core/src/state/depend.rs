//! What the state does with dependencies (`qsub -W depend`, `qsub -a`):
//! whether a job still waits, linking `before*` jobs, and ending or deleting
//! the dependents of a job that ended, down the chain. The value types and
//! their text are [`crate::depend`]'s.

use crate::depend::{DependKind, DependText, Dependency, parse_text};
use crate::error::CoreError;
use crate::ids::{JobId, JobState};
use crate::job::{ExitCause, Job, JobExit};
use crate::reason::Reason;
use crate::state::State;
use crate::time::Time;

/// How a dependency on `pred` stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Standing {
    Waiting,
    Met,
    /// It ended the wrong way, with this exit status.
    Never(i32),
}

/// How `dep` stands at `now`, its job being `pred` (`None`: gone from the
/// history, so met). `aftercorr` here is the whole array's `afterok`; an
/// array's sub-jobs are matched one by one ([`State::ready_position`]).
fn standing(dep: &Dependency, pred: Option<&Job>, now: Time) -> Standing {
    let Some(pred) = pred else {
        return Standing::Met;
    };
    if dep.kind == DependKind::After {
        let array_begun = pred.array.as_ref().is_some_and(|a| a.tally.begun > 0);
        return if pred.stime.is_some() || pred.state.is_active() || array_begun {
            match pred.stime {
                Some(at) if dep.delay_minutes > 0 && after_delay(at, dep) > now => {
                    Standing::Waiting
                }
                _ => Standing::Met,
            }
        } else if pred.state == JobState::Finished {
            // Ended without ever starting (deleted while it waited).
            Standing::Never(pred.exit.as_ref().map_or(-2, JobExit::exit_status))
        } else {
            Standing::Waiting
        };
    }
    if pred.state != JobState::Finished {
        return Standing::Waiting;
    }
    let status = pred.exit.as_ref().map_or(-2, JobExit::exit_status);
    if dep.kind.met_by(status) {
        Standing::Met
    } else {
        Standing::Never(status)
    }
}

/// `at` plus the delay of an `after:ID+MINUTES`.
fn after_delay(at: Time, dep: &Dependency) -> Time {
    at + chrono::Duration::minutes(i64::from(dep.delay_minutes))
}

/// How a job's dependencies stand together: all must be met, or any one
/// (`?`); they can never be met once one (all) or every one (any) cannot.
fn combined(job: &Job, each: impl Fn(&Dependency) -> Standing) -> Standing {
    let mut waiting = false;
    let mut never = None;
    for dep in &job.depend {
        match each(dep) {
            Standing::Met if job.depend_how.any => return Standing::Met,
            Standing::Met => {}
            Standing::Waiting => waiting = true,
            Standing::Never(status) if !job.depend_how.any => return Standing::Never(status),
            Standing::Never(status) => never = Some(status),
        }
    }
    match never {
        _ if waiting => Standing::Waiting,
        Some(status) if job.depend_how.any => Standing::Never(status),
        _ => Standing::Met,
    }
}

/// How a finished job ended, in words for a comment.
fn ending(pred: &Job) -> String {
    match &pred.exit {
        Some(exit) if exit.cause == ExitCause::Deleted => "it was deleted".to_string(),
        Some(exit) => format!("exit status {}", exit.exit_status()),
        None => "no exit status".to_string(),
    }
}

impl State {
    /// Why a queued job may not start yet regardless of nodes: it depends
    /// on jobs that have not ended, or its start-after time is ahead.
    /// Costs one lookup per dependency; `singleton` costs a look at the
    /// running and waiting jobs.
    pub fn waits_for(&self, job: &Job, now: Time) -> Option<Reason> {
        // A dependency that can never be met also keeps the job waiting
        // (resolve_dependents deletes it; it must not run meanwhile).
        if !job.depend.is_empty() {
            let ready = if self.matches_sub_jobs(job) {
                self.ready_position(job, now).is_some()
            } else {
                self.dependencies_standing(job, now) == Standing::Met
            };
            if !ready {
                return Some(Reason::Dependency);
            }
        }
        if job.depend_on > 0 {
            // on:N: waiting to be named by N more before* jobs.
            return Some(Reason::Dependency);
        }
        if job.depend_how.singleton && self.singleton_blocked(job) {
            return Some(Reason::Dependency);
        }
        if job.start_after.is_some_and(|t| t > now) {
            return Some(Reason::BeginTime);
        }
        None
    }

    /// How `job`'s dependencies stand together, each on its whole job.
    fn dependencies_standing(&self, job: &Job, now: Time) -> Standing {
        combined(job, |d| standing(d, self.job(d.job), now))
    }

    /// Whether `job` is an array some of whose dependencies are matched
    /// sub-job by sub-job (`aftercorr`).
    pub(super) fn matches_sub_jobs(&self, job: &Job) -> bool {
        job.array.is_some() && job.depend.iter().any(|d| d.kind == DependKind::AfterCorr)
    }

    /// The first position of array `job` left to start whose dependencies
    /// are met, an `aftercorr` one by the named array's sub-job of the same
    /// index. `None` when no position may start yet.
    pub(crate) fn ready_position(&self, job: &Job, now: Time) -> Option<u32> {
        let array = job.array.as_ref()?;
        array
            .tally
            .unstarted
            .iter()
            .flat_map(|r| r.clone())
            .find(|&position| {
                let Some(index) = array.spec.index_at(position) else {
                    return false;
                };
                combined(job, |d| self.standing_at(d, index, now)) == Standing::Met
            })
    }

    /// How many sub-jobs of array `job` one pass may start, as far as its
    /// dependencies go: those whose `aftercorr` counterparts ended well,
    /// one for a `singleton` array (the next waits for it), else all left.
    pub fn startable_sub_jobs(&self, job: &Job, now: Time) -> u32 {
        let Some(array) = job.array.as_ref() else {
            return 0;
        };
        if job.depend_how.singleton {
            return array.unstarted().min(1);
        }
        if !self.matches_sub_jobs(job) {
            return array.unstarted();
        }
        let ready = array
            .tally
            .unstarted
            .iter()
            .flat_map(|r| r.clone())
            .filter(|&p| {
                array.spec.index_at(p).is_some_and(|index| {
                    combined(job, |d| self.standing_at(d, index, now)) == Standing::Met
                })
            });
        u32::try_from(ready.count()).unwrap_or(u32::MAX)
    }

    /// How `dep` stands for the sub-job with `index` of the job that holds
    /// it: for `aftercorr` on an array, by that array's sub-job of the same
    /// index (met if it has none); otherwise by the whole named job.
    fn standing_at(&self, dep: &Dependency, index: u32, now: Time) -> Standing {
        let pred = self.job(dep.job);
        let Some(array) = pred
            .filter(|_| dep.kind == DependKind::AfterCorr)
            .and_then(|p| p.array.as_ref())
        else {
            return standing(dep, pred, now);
        };
        let Some(position) = array.spec.position_of(index) else {
            return Standing::Met;
        };
        if let Some(sub) = self.job(dep.job.sub_job(index)) {
            return standing(dep, Some(sub), now);
        }
        if array.tally.unstarted.contains(&position) {
            Standing::Waiting
        } else if array.removed.contains(&position) {
            Standing::Never(-2)
        } else {
            // Its record has left the history: it ended, and ended well,
            // or this position would have been removed then.
            Standing::Met
        }
    }

    /// `singleton`: another job of the same owner and name runs, or waits
    /// and came first (Slurm's rule). Sub-jobs of its own array that run
    /// count, so an array's sub-jobs run one at a time.
    fn singleton_blocked(&self, job: &Job) -> bool {
        let same = |other: &&Job| {
            other.id != job.id && other.owner.uid == job.owner.uid && other.name == job.name
        };
        if self
            .active_jobs()
            .filter(|j| j.state.is_active())
            .any(|j| same(&j))
        {
            return true;
        }
        self.pending_jobs()
            .filter(|j| j.id < job.id && j.id.array_parent() != Some(job.id))
            .any(|j| same(&j))
    }

    /// When pending `job` may start by time alone, if it waits for a time:
    /// its start-after time, or the end of an `after:ID+MINUTES` delay of
    /// a job that has started.
    pub fn ready_time(&self, job: &Job) -> Option<Time> {
        let delays = job.depend.iter().filter(|d| d.delay_minutes > 0);
        let delayed = delays
            .filter_map(|d| Some(after_delay(self.job(d.job)?.stime?, d)))
            .max();
        job.start_after.max(delayed)
    }

    /// When the dependents of `id`, which has just started, may start by
    /// time alone (`after:ID+MINUTES`): a pass is due then.
    pub fn delayed_dependents_due(&self, id: JobId) -> Vec<Time> {
        let Some(stime) = self.job(id).and_then(|j| j.stime) else {
            return Vec::new();
        };
        let mut due = Vec::new();
        for pred in [Some(id), id.array_parent()].into_iter().flatten() {
            let dependents = self.book.dependents.get(&pred).into_iter().flatten();
            for job in dependents.filter_map(|d| self.job(*d)) {
                due.extend(
                    job.depend
                        .iter()
                        .filter(|d| d.job == pred && d.delay_minutes > 0)
                        .map(|d| after_delay(stime, d)),
                );
            }
        }
        due
    }

    /// The dependencies a submission's `-W depend=` text names, each on a
    /// job that exists and has not already ended the wrong way.
    pub(crate) fn dependencies_for(&self, text: &str, now: Time) -> Result<DependText, CoreError> {
        let mut parsed = parse_text(text, self.server_name())?;
        for dep in &mut parsed.after {
            dep.array = self.job(dep.job).is_some_and(|j| j.array.is_some());
        }
        let mut unsatisfiable = None;
        for dep in &parsed.after {
            let pred = self
                .job(dep.job)
                .ok_or_else(|| CoreError::NoSuchPredecessor {
                    id: self.full_id(dep.job),
                })?;
            // An aftercorr is judged sub-job by sub-job, as they end.
            if dep.kind == DependKind::AfterCorr {
                continue;
            }
            if let Standing::Never(_) = standing(dep, Some(pred), now) {
                unsatisfiable.get_or_insert(CoreError::DependencyUnsatisfiable {
                    dependency: format!("{}:{}", dep.kind.as_str(), self.full_id(dep.job)),
                    id: self.full_id(dep.job),
                    how: ending(pred),
                });
            } else if parsed.how.any {
                // One that may still be met will do.
                return Ok(parsed);
            }
        }
        match unsatisfiable {
            Some(error) => Err(error),
            None => Ok(parsed),
        }
    }

    /// The `before*` dependencies a submission names, each on a job that
    /// has not started (it is the one made to wait).
    pub(crate) fn before_targets(&self, text: &str) -> Result<Vec<Dependency>, CoreError> {
        let before = parse_text(text, self.server_name())?.before;
        for dep in &before {
            let target = self
                .job(dep.job)
                .ok_or_else(|| CoreError::NoSuchPredecessor {
                    id: self.full_id(dep.job),
                })?;
            if target.depend_how.any {
                return Err(CoreError::BadDependency {
                    word: format!("{}:{}", dep.kind.before_str(), self.full_id(dep.job)),
                    why: format!(
                        "job {} waits for any one of its dependencies (?); a before \
                         dependency cannot add to them",
                        self.full_id(dep.job)
                    ),
                });
            }
            if !target.state.is_pending() {
                return Err(CoreError::BadDependency {
                    word: format!("{}:{}", dep.kind.before_str(), self.full_id(dep.job)),
                    why: format!(
                        "job {} has already started, so it cannot wait for this one",
                        self.full_id(dep.job)
                    ),
                });
            }
        }
        Ok(before)
    }

    /// Once job `id` is admitted, the jobs it named in `before*` wait for
    /// it (and count down their `on:N`). Returns those changed, for the
    /// store.
    pub fn link_before(&mut self, id: JobId) -> Vec<JobId> {
        let Some(before) = self.job(id).map(|j| j.before.clone()) else {
            return Vec::new();
        };
        let mut changed = Vec::new();
        for dep in before {
            let link = Dependency {
                array: self.job(id).is_some_and(|j| j.array.is_some()),
                ..Dependency::new(dep.kind, id)
            };
            if self.add_dependency(dep.job, link) {
                changed.push(dep.job);
            }
        }
        changed
    }

    /// Deletes the pending jobs of a loaded state whose dependencies can no
    /// longer be met (their predecessor's end was stored, theirs not: a
    /// crash between the two), and theirs. Returns them, for the store.
    pub fn resolve_all_dependents(&mut self, now: Time) -> Resolved {
        let waiting: Vec<JobId> = self
            .pending_jobs()
            .filter(|job| !job.depend.is_empty())
            .map(|job| job.id)
            .collect();
        let mut resolved = Resolved::default();
        for id in waiting {
            if self.settle_dependent(id, None, now, &mut resolved) {
                let more = self.resolve_dependents(id, now);
                resolved.deleted.extend(more.deleted);
                resolved.trimmed.extend(more.trimmed);
            }
        }
        resolved
    }

    /// After `ended` finished (or was deleted before it started): deletes
    /// every pending job whose dependencies can now never be met, and
    /// theirs in turn; an array waiting `aftercorr` on `ended`'s array loses
    /// the sub-job whose counterpart `ended` was, if it ended badly.
    pub fn resolve_dependents(&mut self, ended: JobId, now: Time) -> Resolved {
        let mut resolved = Resolved::default();
        if let Some(array) = ended.array_parent() {
            let index = ended.array_index();
            let waiting = self
                .book
                .dependents
                .get(&array)
                .cloned()
                .unwrap_or_default();
            for id in waiting {
                self.trim_positions(id, index, now, &mut resolved);
            }
        }
        let mut ends = vec![ended];
        while let Some(pred_id) = ends.pop() {
            if self
                .job(pred_id)
                .is_none_or(|p| p.state != JobState::Finished)
            {
                // Requeued, not ended: its dependents keep waiting for it.
                continue;
            }
            for id in self.take_dependents(pred_id) {
                if self.settle_dependent(id, Some(pred_id), now, &mut resolved) {
                    ends.push(id);
                }
            }
        }
        resolved
    }

    /// Pending job `id` after `pred` (or, `None`, any of its predecessors)
    /// ended: deleted if its dependencies can never be met, its positions
    /// removed that can never start if it is an array matched sub-job by
    /// sub-job. True if it was deleted.
    fn settle_dependent(
        &mut self,
        id: JobId,
        pred: Option<JobId>,
        now: Time,
        resolved: &mut Resolved,
    ) -> bool {
        let Some(job) = self.job(id).filter(|j| j.state.is_pending()) else {
            return false;
        };
        if self.matches_sub_jobs(job) {
            self.trim_positions(id, None, now, resolved);
            return false;
        }
        if !matches!(self.dependencies_standing(job, now), Standing::Never(_)) {
            return false;
        }
        // The dependency to name: the one on `pred`, or the first that failed.
        let failed =
            |d: &&Dependency| matches!(standing(d, self.job(d.job), now), Standing::Never(_));
        let dep = job
            .depend
            .iter()
            .filter(failed)
            .find(|d| pred.is_none_or(|p| d.job == p))
            .or_else(|| job.depend.iter().find(failed))
            .copied();
        let any = job.depend_how.any && job.depend.len() > 1;
        let Some(dep) = dep else {
            return false;
        };
        let deleted = self.delete_unmet(id, dep, any, now);
        if deleted {
            resolved.deleted.push(id);
        }
        deleted
    }

    /// Removes from array `id` the positions left to start (the one of
    /// sub-job `index`, or all) whose dependencies can never be met.
    fn trim_positions(
        &mut self,
        id: JobId,
        index: Option<u32>,
        now: Time,
        resolved: &mut Resolved,
    ) {
        let Some(job) = self.job(id).filter(|j| j.state.is_pending()) else {
            return;
        };
        if !self.matches_sub_jobs(job) {
            return;
        }
        let Some(array) = job.array.as_ref() else {
            return;
        };
        let candidates: Vec<u32> = match index {
            Some(i) => array.spec.position_of(i).into_iter().collect(),
            None => array
                .tally
                .unstarted
                .iter()
                .flat_map(|r| r.clone())
                .collect(),
        };
        let mut dead = rangemap::RangeSet::new();
        for position in candidates {
            let Some(i) = array.spec.index_at(position) else {
                continue;
            };
            if array.tally.unstarted.contains(&position)
                && matches!(
                    combined(job, |d| self.standing_at(d, i, now)),
                    Standing::Never(_)
                )
            {
                dead.insert(position..position + 1);
            }
        }
        if dead.is_empty() {
            return;
        }
        let count = self.remove_unstarted(id, &dead);
        let deps = self.depend_text(id);
        if let Some(job) = self.book.jobs.get_mut(&id) {
            job.mtime = now;
            job.comment = format!(
                "{count} sub-job(s) deleted before they started: their dependency {deps} \
                 can never be satisfied"
            );
        }
        self.settle_array(id, now);
        resolved.trimmed.push(id);
    }

    /// A job's `after*` dependencies as written back (`afterok:12.srv`).
    fn depend_text(&self, id: JobId) -> String {
        let server = self.server_name();
        self.job(id).map_or_else(String::new, |job| {
            if job.depend_how.any {
                crate::depend::format_any(&job.depend, server)
            } else {
                crate::depend::format(&job.depend, server)
            }
        })
    }

    /// Ends pending job `id`, whose dependency `dep` can never be met (nor,
    /// with `any`, can any of the others).
    fn delete_unmet(&mut self, id: JobId, dep: Dependency, any: bool, now: Time) -> bool {
        let how = self.job(dep.job).map_or_else(String::new, ending);
        let pred = self.full_id(dep.job);
        let comment = if any {
            format!(
                "job deleted: none of its dependencies {} can be satisfied (job {pred} ended: {how})",
                self.depend_text(id)
            )
        } else {
            format!(
                "job deleted: its dependency {}:{pred} can never be satisfied (job {pred} ended: {how})",
                dep.kind.as_str(),
            )
        };
        let exit = JobExit {
            code: None,
            signal: None,
            cause: ExitCause::Deleted,
            message: String::new(),
            cput: None,
            max_rss: None,
            vmem: None,
        };
        self.end_unstarted(id, exit, comment, now).is_ok()
    }
}

/// What resolving dependencies changed, for the store: jobs deleted, and
/// arrays that lost sub-jobs that can never start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    pub deleted: Vec<JobId>,
    pub trimmed: Vec<JobId>,
}

#[cfg(test)]
mod tests;
