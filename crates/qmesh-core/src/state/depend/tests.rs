use super::*;
use crate::access::Role;
use crate::depend::*;
use crate::job::ExitCause;
use crate::state::tests::{caller, state, t};
use crate::submit::Submission;

fn dep(kind: DependKind, id: u64) -> Dependency {
    Dependency::new(kind, JobId(id))
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

fn submit_dep(s: &mut State, depend: &str, start_after: Option<Time>) -> Result<JobId, CoreError> {
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
    assert!(s.resolve_dependents(a, t(2)).deleted.is_empty());
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
    let mut changed = s.resolve_dependents(a, t(3)).deleted;
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
    assert_eq!(s.resolve_dependents(any, t(4)).deleted, vec![after_any]);
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
    let mut changed = s.resolve_dependents(a, t(3)).deleted;
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
    let mut changed = fresh.resolve_all_dependents(t(5)).deleted;
    changed.sort();
    assert_eq!(changed, vec![b, c]);
    assert!(fresh.resolve_all_dependents(t(6)).deleted.is_empty());
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
    assert_eq!(fresh.resolve_dependents(a, t(3)).deleted, vec![b]);
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
    assert_eq!(s.resolve_dependents(c, t(3)).deleted, vec![d]);
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

// Slurm's forms: `?`, `after:ID+MINUTES`, `singleton`, `aftercorr`.

fn submit_as(s: &mut State, uid: u32, name: &str, depend: &str) -> Result<JobId, CoreError> {
    let sub = Submission {
        script_name: "job.sh".into(),
        name: Some(name.into()),
        workdir: "/tmp".into(),
        depend: depend.into(),
        ..Submission::default()
    };
    s.submit(sub, &caller(uid, Role::User), t(0)).map(|j| j.id)
}

fn waits(s: &State, id: JobId, at: i64) -> Option<Reason> {
    s.waits_for(s.job(id).unwrap(), t(at))
}

#[test]
fn slurm_forms_parse_and_read_back() {
    use DependKind::*;
    let any = parse_text("afterok:1?afternotok:2", "srv").unwrap();
    assert!(any.how.any);
    assert_eq!(any.after, vec![dep(AfterOk, 1), dep(AfterNotOk, 2)]);
    assert_eq!(
        format_any(&any.after, "srv"),
        "afterok:1.srv?afternotok:2.srv"
    );
    let delayed = parse_text("after:12+5:13", "srv").unwrap();
    assert_eq!(delayed.after[0].delay_minutes, 5);
    assert_eq!(delayed.after[1].delay_minutes, 0);
    assert_eq!(format(&delayed.after, "srv"), "after:12.srv+5:13.srv");
    let single = parse_text("singleton,afterok:3", "srv").unwrap();
    assert!(single.how.singleton && !single.how.any);
    assert_eq!(
        parse_text("aftercorr:4", "srv").unwrap().after,
        vec![dep(AfterCorr, 4)]
    );
    let msg = |text: &str| parse_text(text, "srv").unwrap_err().to_string();
    assert!(msg("afterok:1?afterok:2,afterok:3").contains("both , (all of) and ?"));
    assert!(msg("afterok:1+5").contains("only with after"));
    assert!(msg("after:1+soon").contains("whole number of minutes"));
    assert!(msg("singleton:4").contains("singleton names no job"));
    assert!(msg("singleton?afterok:4").contains("only joins after-type"));
    assert!(msg("beforecorr:4").contains("not a dependency type"));
}

#[test]
fn any_of_starts_on_the_first_met_and_dies_with_the_last() {
    let mut s = state(4);
    let a = submit_dep(&mut s, "", None).unwrap();
    let b = submit_dep(&mut s, "", None).unwrap();
    let c = submit_dep(&mut s, "", None).unwrap();
    let either = submit_dep(&mut s, &format!("afterok:{a}?afterok:{b}"), None).unwrap();
    let other = submit_dep(&mut s, &format!("afterok:{a}?afterok:{c}"), None).unwrap();
    assert_eq!(waits(&s, either, 0), Some(Reason::Dependency));
    // a fails: neither is lost, each still has one that may be met.
    run_and_end(&mut s, a, 1);
    assert!(s.resolve_dependents(a, t(2)).deleted.is_empty());
    assert_eq!(waits(&s, either, 2), Some(Reason::Dependency));
    // b succeeds: `either` may start.
    run_and_end(&mut s, b, 0);
    assert!(s.resolve_dependents(b, t(2)).deleted.is_empty());
    assert_eq!(waits(&s, either, 2), None);
    // c fails too: `other` can never start.
    run_and_end(&mut s, c, 1);
    assert_eq!(s.resolve_dependents(c, t(2)).deleted, vec![other]);
    let gone = s.job(other).unwrap();
    assert_eq!(
        gone.comment,
        format!(
            "job deleted: none of its dependencies afterok:{a}.srv?afterok:{c}.srv can be \
             satisfied (job {c}.srv ended: exit status 1)"
        )
    );
    assert_eq!(
        crate::job::shown::format_depend(s.job(either).unwrap(), "srv"),
        format!("afterok:{a}.srv?afterok:{b}.srv")
    );
    // Submission: refused only when none can be met.
    let err = submit_dep(&mut s, &format!("afterok:{a}?afterok:{c}"), None).unwrap_err();
    assert!(err.to_string().contains("can never"), "{err}");
    submit_dep(&mut s, &format!("afterok:{a}?afternotok:{c}"), None).unwrap();
    // A job that waits for any one gains no before* dependencies.
    let err = submit_dep(&mut s, &format!("beforeok:{either}"), None).unwrap_err();
    assert!(err.to_string().contains("any one"), "{err}");
    s.check_invariants().unwrap();
}

#[test]
fn after_with_minutes_waits_past_the_start() {
    let mut s = state(2);
    let a = submit_dep(&mut s, "", None).unwrap();
    let b = submit_dep(&mut s, &format!("after:{a}+5"), None).unwrap();
    assert_eq!(s.ready_time(s.job(b).unwrap()), None, "a has not started");
    s.start(a, &[0], t(100)).unwrap();
    assert_eq!(s.delayed_dependents_due(a), vec![t(400)]);
    assert_eq!(s.ready_time(s.job(b).unwrap()), Some(t(400)));
    assert_eq!(waits(&s, b, 399), Some(Reason::Dependency));
    assert_eq!(waits(&s, b, 400), None);
    assert_eq!(
        crate::job::shown::format_depend(s.job(b).unwrap(), "srv"),
        format!("after:{a}.srv+5")
    );
}

#[test]
fn singleton_waits_for_the_same_name_of_the_same_owner() {
    let mut s = state(4);
    let first = submit_as(&mut s, 1000, "chain", "").unwrap();
    let second = submit_as(&mut s, 1000, "chain", "singleton").unwrap();
    let other_user = submit_as(&mut s, 1001, "chain", "singleton").unwrap();
    let other_name = submit_as(&mut s, 1000, "other", "singleton").unwrap();
    let third = submit_as(&mut s, 1000, "chain", "singleton").unwrap();
    assert_eq!(
        waits(&s, second, 0),
        Some(Reason::Dependency),
        "first waits"
    );
    assert_eq!(waits(&s, other_user, 0), None);
    assert_eq!(waits(&s, other_name, 0), None);
    s.start(first, &[0], t(1)).unwrap();
    assert_eq!(waits(&s, second, 1), Some(Reason::Dependency), "first runs");
    s.finish(first, crate::state::tests::exited(1), t(2))
        .unwrap();
    assert_eq!(waits(&s, second, 2), None, "however first ended");
    assert_eq!(
        waits(&s, third, 2),
        Some(Reason::Dependency),
        "second came first"
    );
    assert_eq!(
        crate::job::shown::format_depend(s.job(third).unwrap(), "srv"),
        "singleton"
    );
    assert!(
        s.pending_views("batch")
            .find(|v| v.id == third)
            .unwrap()
            .conditional,
        "the pass asks a singleton job whether it waits"
    );
}

fn submit_array(s: &mut State, text: &str, depend: &str) -> JobId {
    let sub = Submission {
        script_name: "sweep.sh".into(),
        workdir: "/tmp".into(),
        depend: depend.into(),
        array: Some((crate::array::ArrayStyle::Torque, text.into())),
        ..Submission::default()
    };
    s.submit(sub, &caller(1000, Role::User), t(0)).unwrap().id
}

#[test]
fn aftercorr_matches_sub_jobs_by_index() {
    let mut s = state(8);
    let a = submit_array(&mut s, "1-4", "");
    let b = submit_array(&mut s, "1-4", &format!("aftercorr:{a}"));
    assert_eq!(waits(&s, b, 0), Some(Reason::Dependency));
    // a[2] and a[3] run; a[3] ends well first: b[3] is the one ready.
    s.start(a, &[0], t(1)).unwrap();
    s.start(a, &[1], t(1)).unwrap();
    s.start(a, &[2], t(1)).unwrap();
    s.finish(a.sub_job(3), crate::state::tests::exited(0), t(2))
        .unwrap();
    assert!(s.resolve_dependents(a.sub_job(3), t(2)).trimmed.is_empty());
    assert_eq!(waits(&s, b, 2), None);
    assert_eq!(s.start(b, &[4], t(2)).unwrap().id, b.sub_job(3));
    assert_eq!(waits(&s, b, 2), Some(Reason::Dependency), "b[1,2,4] wait");
    // a[2] fails: b[2] can never start and leaves the array.
    s.finish(a.sub_job(2), crate::state::tests::exited(1), t(3))
        .unwrap();
    let resolved = s.resolve_dependents(a.sub_job(2), t(3));
    assert_eq!(resolved.trimmed, vec![b]);
    assert!(resolved.deleted.is_empty());
    let array = s.job(b).unwrap().array.as_ref().unwrap();
    assert!(
        !array.tally.unstarted.contains(&1),
        "b[2] (position 1) removed"
    );
    assert!(s.job(b).unwrap().comment.contains("1 sub-job(s) deleted"));
    // a[1] ends well: b[1]; a[4] deleted before it started: b[4] goes.
    s.finish(a.sub_job(1), crate::state::tests::exited(0), t(4))
        .unwrap();
    assert_eq!(s.start(b, &[5], t(4)).unwrap().id, b.sub_job(1));
    s.delete(a, &caller(1000, Role::User), t(5)).unwrap();
    let resolved = s.resolve_dependents(a, t(5));
    assert_eq!(resolved.trimmed, vec![b]);
    assert!(
        s.job(b)
            .unwrap()
            .array
            .as_ref()
            .unwrap()
            .tally
            .unstarted
            .is_empty()
    );
    s.check_invariants().unwrap();
}

#[test]
fn aftercorr_on_a_job_that_is_not_an_array_is_afterok() {
    let mut s = state(2);
    let a = submit_dep(&mut s, "", None).unwrap();
    let b = submit_dep(&mut s, &format!("aftercorr:{a}"), None).unwrap();
    run_and_end(&mut s, a, 1);
    assert_eq!(s.resolve_dependents(a, t(3)).deleted, vec![b]);
}

#[test]
fn a_dependency_on_an_array_is_written_with_brackets() {
    let mut s = state(2);
    let a = submit_array(&mut s, "1-2", "");
    let b = submit_dep(&mut s, &format!("afterok:{a}[]"), None).unwrap();
    assert_eq!(
        crate::job::shown::format_depend(s.job(b).unwrap(), "srv"),
        format!("afterok:{a}[].srv")
    );
}

#[test]
fn a_pass_starts_only_the_sub_jobs_whose_counterparts_ended_well() {
    use crate::scheduler::Scheduler;
    let mut s = state(8);
    let a = submit_array(&mut s, "1-4", "");
    let b = submit_array(&mut s, "1-4", &format!("aftercorr:{a}"));
    for node in 0..4 {
        s.start(a, &[node], t(1)).unwrap();
    }
    s.finish(a.sub_job(2), crate::state::tests::exited(0), t(2))
        .unwrap();
    s.finish(a.sub_job(4), crate::state::tests::exited(0), t(2))
        .unwrap();
    assert_eq!(s.startable_sub_jobs(s.job(b).unwrap(), t(2)), 2);
    let plan = Scheduler.pass(&s, t(3));
    let mut started = Vec::new();
    for start in plan.starts {
        started.push(s.start(start.job, &start.nodes, t(3)).unwrap().id);
    }
    assert_eq!(started, [b.sub_job(2), b.sub_job(4)]);
    // A singleton array: one sub-job per pass, the next after it.
    let c = {
        let sub = Submission {
            script_name: "one.sh".into(),
            workdir: "/tmp".into(),
            depend: "singleton".into(),
            array: Some((crate::array::ArrayStyle::Torque, "1-3".into())),
            ..Submission::default()
        };
        s.submit(sub, &caller(1000, Role::User), t(3)).unwrap().id
    };
    let plan = Scheduler.pass(&s, t(4));
    let starts: Vec<JobId> = plan.starts.iter().map(|st| st.job).collect();
    assert_eq!(starts, [c]);
}
