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

fn standing(kind: DependKind, pred: Option<&Job>) -> Standing {
    let Some(pred) = pred else {
        return Standing::Met;
    };
    if kind == DependKind::After {
        let array_begun = pred.array.as_ref().is_some_and(|a| a.tally.begun > 0);
        return if pred.stime.is_some() || pred.state.is_active() || array_begun {
            Standing::Met
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
    if kind.met_by(status) {
        Standing::Met
    } else {
        Standing::Never(status)
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
    /// Costs one lookup per dependency.
    pub fn waits_for(&self, job: &Job, now: Time) -> Option<Reason> {
        // A dependency that can never be met also keeps the job waiting
        // (resolve_dependents deletes it; it must not run meanwhile).
        if job
            .depend
            .iter()
            .any(|d| standing(d.kind, self.job(d.job)) != Standing::Met)
        {
            return Some(Reason::Dependency);
        }
        if job.depend_on > 0 {
            // on:N: waiting to be named by N more before* jobs.
            return Some(Reason::Dependency);
        }
        if job.start_after.is_some_and(|t| t > now) {
            return Some(Reason::BeginTime);
        }
        None
    }

    /// The dependencies a submission's `-W depend=` text names, each on a
    /// job that exists and has not already ended the wrong way.
    pub(crate) fn dependencies_for(&self, text: &str) -> Result<DependText, CoreError> {
        let parsed = parse_text(text, self.server_name())?;
        let deps = &parsed.after;
        for dep in deps {
            let pred = self
                .job(dep.job)
                .ok_or_else(|| CoreError::NoSuchPredecessor {
                    id: self.full_id(dep.job),
                })?;
            if let Standing::Never(_) = standing(dep.kind, Some(pred)) {
                return Err(CoreError::DependencyUnsatisfiable {
                    dependency: format!("{}:{}", dep.kind.as_str(), self.full_id(dep.job)),
                    id: self.full_id(dep.job),
                    how: ending(pred),
                });
            }
        }
        Ok(parsed)
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
                kind: dep.kind,
                job: id,
            };
            if self.add_dependency(dep.job, link) {
                changed.push(dep.job);
            }
        }
        changed
    }

    /// Deletes the pending jobs of a loaded state whose dependency can no
    /// longer be met (their predecessor's end was stored, theirs not: a
    /// crash between the two), and theirs. Returns them, for the store.
    pub fn resolve_all_dependents(&mut self, now: Time) -> Vec<JobId> {
        let stuck: Vec<(JobId, Dependency)> =
            self.pending_jobs()
                .filter_map(|job| {
                    let dep = job.depend.iter().find(|d| {
                        matches!(standing(d.kind, self.job(d.job)), Standing::Never(_))
                    })?;
                    Some((job.id, *dep))
                })
                .collect();
        let mut changed = Vec::new();
        for (id, dep) in stuck {
            if self.delete_unmet(id, dep, now) {
                changed.push(id);
                changed.extend(self.resolve_dependents(id, now));
            }
        }
        changed
    }

    /// After `ended` finished (or was deleted before it started): deletes
    /// every pending job whose dependency on it can now never be met, and
    /// theirs in turn. Returns the jobs it changed, for the store.
    pub fn resolve_dependents(&mut self, ended: JobId, now: Time) -> Vec<JobId> {
        let mut changed = Vec::new();
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
                let Some(job) = self.job(id).filter(|j| j.state.is_pending()) else {
                    continue;
                };
                let unmet = job.depend.iter().find(|d| {
                    d.job == pred_id
                        && matches!(standing(d.kind, self.job(d.job)), Standing::Never(_))
                });
                if let Some(&dep) = unmet
                    && self.delete_unmet(id, dep, now)
                {
                    changed.push(id);
                    ends.push(id);
                }
            }
        }
        changed
    }

    /// Ends pending job `id`, whose dependency `dep` can never be met.
    fn delete_unmet(&mut self, id: JobId, dep: Dependency, now: Time) -> bool {
        let how = self.job(dep.job).map_or_else(String::new, ending);
        let pred = self.full_id(dep.job);
        let comment = format!(
            "job deleted: its dependency {}:{pred} can never be satisfied (job {pred} ended: {how})",
            dep.kind.as_str(),
        );
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Role;
    use crate::depend::*;
    use crate::job::ExitCause;
    use crate::state::tests::{caller, state, t};
    use crate::submit::Submission;

    fn dep(kind: DependKind, id: u64) -> Dependency {
        Dependency {
            kind,
            job: JobId(id),
        }
    }

    #[test]
    fn depend_text_parses() {
        use DependKind::*;
        assert_eq!(
            parse("afterok:12:13.srv,afterany:14", "srv").unwrap(),
            vec![dep(AfterOk, 12), dep(AfterOk, 13), dep(AfterAny, 14)]
        );
        assert_eq!(
            parse("depend=afternotok:7.srv.example.org", "srv").unwrap(),
            vec![dep(AfterNotOk, 7)]
        );
        assert_eq!(parse(" ", "srv").unwrap(), vec![]);
        assert_eq!(
            parse("afterok:3,afterok:3", "srv").unwrap(),
            vec![dep(AfterOk, 3)]
        );
    }

    #[test]
    fn bad_depend_text_names_the_word() {
        let msg = |text: &str| parse(text, "srv").unwrap_err().to_string();
        assert!(
            msg("aftreok:12").starts_with("bad dependency \"aftreok\": is not a dependency type"),
            "{}",
            msg("aftreok:12")
        );
        assert!(msg("afterok:1x").contains("\"1x\": is not a job id"));
        assert!(msg("afterok:12.other").contains("\"12.other\": names a job of another server"));
        assert!(msg("afterok").contains("\"afterok\": names no job"));
        assert!(msg("afterok:").contains("\"\": is not a job id"));
        assert!(msg("afterok:1,,afterany:2").contains("empty entry"));
        assert!(msg("afterok:x").contains("e.g. afterok:12"));
    }

    #[test]
    fn format_groups_by_kind() {
        use DependKind::*;
        let deps = [dep(AfterOk, 12), dep(AfterAny, 14), dep(AfterOk, 13)];
        assert_eq!(
            format(&deps, "srv"),
            "afterok:12.srv:13.srv,afterany:14.srv"
        );
        assert_eq!(format(&[], "srv"), "");
    }

    fn submit_dep(
        s: &mut State,
        depend: &str,
        start_after: Option<Time>,
    ) -> Result<JobId, CoreError> {
        let sub = Submission {
            script_name: "job.sh".into(),
            workdir: "/tmp".into(),
            depend: depend.into(),
            start_after,
            ..Submission::default()
        };
        s.submit(sub, &caller(1000, Role::User), t(0)).map(|j| j.id)
    }

    fn run_and_end(s: &mut State, id: JobId, code: i32) {
        s.start(id, &[0], t(1)).unwrap();
        let exit = JobExit {
            code: Some(code),
            signal: None,
            cause: ExitCause::Exited,
            message: String::new(),
            cput: None,
            max_rss: None,
            vmem: None,
        };
        s.finish(id, exit, t(2)).unwrap();
    }

    #[test]
    fn unknown_predecessors_are_refused() {
        let mut s = state(2);
        let err = submit_dep(&mut s, "afterok:12", None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "job 12.srv does not exist or has left the history; see qstat -x"
        );
        let a = submit_dep(&mut s, "", None).unwrap();
        run_and_end(&mut s, a, 1);
        let err = submit_dep(&mut s, &format!("afterok:{a}"), None).unwrap_err();
        assert!(err.to_string().contains("exit status 1"), "{err}");
        submit_dep(&mut s, &format!("afternotok:{a}"), None).unwrap();
    }

    #[test]
    fn waits_for_dependencies_then_the_start_time() {
        let mut s = state(2);
        let a = submit_dep(&mut s, "", None).unwrap();
        let b = submit_dep(&mut s, &format!("afterok:{a}"), Some(t(100))).unwrap();
        let job_b = s.job(b).unwrap().clone();
        assert_eq!(s.waits_for(&job_b, t(0)), Some(Reason::Dependency));
        run_and_end(&mut s, a, 0);
        assert!(s.resolve_dependents(a, t(2)).is_empty());
        assert_eq!(s.waits_for(&job_b, t(2)), Some(Reason::BeginTime));
        assert_eq!(s.waits_for(&job_b, t(100)), None);
        // A predecessor gone from the history was met.
        s.purge_history(t(1_000_000_000));
        assert_eq!(s.waits_for(&job_b, t(100)), None);
    }

    #[test]
    fn a_dependency_that_can_never_be_met_deletes_down_the_chain() {
        let mut s = state(2);
        let a = submit_dep(&mut s, "", None).unwrap();
        let ok = submit_dep(&mut s, &format!("afterok:{a}"), None).unwrap();
        let notok = submit_dep(&mut s, &format!("afternotok:{a}"), None).unwrap();
        let any = submit_dep(&mut s, &format!("afterany:{ok}"), None).unwrap();
        let after_any = submit_dep(&mut s, &format!("afterok:{any}"), None).unwrap();
        run_and_end(&mut s, a, 1);
        let mut changed = s.resolve_dependents(a, t(3));
        changed.sort();
        // ok dies with a; afterany:ok is met by a deleted job, so any waits on.
        assert_eq!(changed, vec![ok]);
        let gone = s.job(ok).unwrap();
        assert_eq!(gone.state, JobState::Finished);
        assert_eq!(
            gone.comment,
            format!(
                "job deleted: its dependency afterok:{a}.srv can never be satisfied (job {a}.srv ended: exit status 1)"
            )
        );
        let job_notok = s.job(notok).unwrap().clone();
        assert_eq!(s.waits_for(&job_notok, t(3)), None);
        let job_any = s.job(any).unwrap().clone();
        assert_eq!(s.waits_for(&job_any, t(3)), None);
        // Deleting `any` before it starts cascades to its afterok dependent.
        s.delete(any, &caller(1000, Role::User), t(4)).unwrap();
        assert_eq!(s.resolve_dependents(any, t(4)), vec![after_any]);
        assert!(s.job(after_any).unwrap().comment.contains("it was deleted"));
        s.check_invariants().unwrap();
    }

    #[test]
    fn cascades_reach_grandchildren() {
        let mut s = state(2);
        let a = submit_dep(&mut s, "", None).unwrap();
        let b = submit_dep(&mut s, &format!("afterok:{a}"), None).unwrap();
        let c = submit_dep(&mut s, &format!("afterok:{b}"), None).unwrap();
        let d = submit_dep(&mut s, &format!("afternotok:{c}"), None).unwrap();
        run_and_end(&mut s, a, 2);
        let mut changed = s.resolve_dependents(a, t(3));
        changed.sort();
        assert_eq!(changed, vec![b, c]);
        // afternotok on a deleted job is met.
        let job_d = s.job(d).unwrap().clone();
        assert_eq!(s.waits_for(&job_d, t(3)), None);
        s.check_invariants().unwrap();
    }

    #[test]
    fn a_loaded_state_deletes_what_a_crash_left_waiting() {
        let mut s = state(2);
        let a = submit_dep(&mut s, "", None).unwrap();
        let b = submit_dep(&mut s, &format!("afterok:{a}"), None).unwrap();
        let c = submit_dep(&mut s, &format!("afterok:{b}"), None).unwrap();
        run_and_end(&mut s, a, 1);
        // The end of a was stored, the deletion of b was not.
        let jobs: Vec<Job> = s.jobs().cloned().collect();
        let mut fresh = state(2);
        fresh.restore(jobs, 0);
        let mut changed = fresh.resolve_all_dependents(t(5));
        changed.sort();
        assert_eq!(changed, vec![b, c]);
        assert!(fresh.resolve_all_dependents(t(6)).is_empty());
        fresh.check_invariants().unwrap();
    }

    #[test]
    fn dependencies_survive_a_restore() {
        let mut s = state(2);
        let a = submit_dep(&mut s, "", None).unwrap();
        let b = submit_dep(&mut s, &format!("afterok:{a}"), None).unwrap();
        let jobs: Vec<Job> = s
            .jobs()
            .map(|j| serde_json::from_str(&serde_json::to_string(j).unwrap()).unwrap())
            .collect();
        let mut fresh = state(2);
        fresh.restore(jobs, 0);
        run_and_end(&mut fresh, a, 1);
        assert_eq!(fresh.resolve_dependents(a, t(3)), vec![b]);
    }

    #[test]
    fn after_waits_for_the_start_not_the_end() {
        let mut s = state(2);
        let a = submit_dep(&mut s, "", None).unwrap();
        let b = submit_dep(&mut s, &format!("after:{a}"), None).unwrap();
        let job_b = s.job(b).unwrap().clone();
        assert_eq!(s.waits_for(&job_b, t(0)), Some(Reason::Dependency));
        s.start(a, &[0], t(1)).unwrap();
        assert_eq!(s.waits_for(&job_b, t(1)), None, "a has started");
        // A job deleted before it started never meets after:.
        let c = submit_dep(&mut s, "", None).unwrap();
        let d = submit_dep(&mut s, &format!("after:{c}"), None).unwrap();
        s.delete(c, &caller(1000, Role::User), t(2)).unwrap();
        assert_eq!(s.resolve_dependents(c, t(3)), vec![d]);
    }

    #[test]
    fn before_makes_the_named_job_wait_and_on_counts_them() {
        let mut s = state(2);
        let b = submit_dep(&mut s, "on:2", None).unwrap();
        assert_eq!(
            s.waits_for(&s.job(b).unwrap().clone(), t(0)),
            Some(Reason::Dependency),
            "on:2 and nobody named it yet"
        );
        let a1 = submit_dep(&mut s, &format!("beforeok:{b}"), None).unwrap();
        let a2 = submit_dep(&mut s, &format!("beforeany:{b}"), None).unwrap();
        let job_b = s.job(b).unwrap().clone();
        assert_eq!(job_b.depend_on, 0);
        assert_eq!(job_b.depend.len(), 2);
        assert_eq!(
            crate::job::shown::format_depend(&job_b, "srv"),
            format!("afterok:{a1}.srv,afterany:{a2}.srv")
        );
        assert_eq!(
            crate::job::shown::format_depend(s.job(a1).unwrap(), "srv"),
            format!("beforeok:{b}.srv")
        );
        run_and_end(&mut s, a1, 0);
        assert_eq!(s.waits_for(&job_b, t(3)), Some(Reason::Dependency));
        s.start(a2, &[1], t(3)).unwrap();
        let exit = JobExit {
            code: Some(1),
            signal: None,
            cause: ExitCause::Exited,
            message: String::new(),
            cput: None,
            max_rss: None,
            vmem: None,
        };
        s.finish(a2, exit, t(4)).unwrap();
        assert_eq!(s.waits_for(&s.job(b).unwrap().clone(), t(5)), None);
        // A beforeok on a job that ran already is refused.
        let err = submit_dep(&mut s, &format!("beforeok:{a1}"), None).unwrap_err();
        assert!(err.to_string().contains("already started"), "{err}");
    }

    #[test]
    fn torque_sync_dependencies_are_refused_with_a_way_out() {
        let err = parse_text("syncwith:12", "srv").unwrap_err().to_string();
        assert!(err.contains("after:ID"), "{err}");
        let err = parse_text("on:x", "srv").unwrap_err().to_string();
        assert!(err.contains("on:2"), "{err}");
        let parsed = parse_text("before:3,on:1,after:4", "srv").unwrap();
        assert_eq!(parsed.on, 1);
        assert_eq!(parsed.before, vec![dep(DependKind::After, 3)]);
        assert_eq!(parsed.after, vec![dep(DependKind::After, 4)]);
    }
}
