use super::*;
use crate::access::Role;
use crate::array::ArrayStyle;
use crate::scheduler::{Reason, Scheduler};
use crate::state::Deleted;
use crate::state::tests::{caller, exited, state, t};
use crate::submit::Submission;

fn submit_array(state: &mut State, text: &str, style: ArrayStyle) -> JobId {
    let sub = Submission {
        script_name: "sweep.sh".into(),
        workdir: "/home/u1".into(),
        resources: vec![("nodes".into(), "1".into())],
        array: Some((style, text.into())),
        ..Submission::default()
    };
    state.submit(sub, &caller(1, Role::User), t(0)).unwrap().id
}

/// One pass, its starts applied; the ids started.
fn pass(state: &mut State, at: i64) -> Vec<JobId> {
    let plan = Scheduler.pass(state, t(at));
    let mut started = Vec::new();
    for s in plan.starts {
        started.push(state.start(s.job, &s.nodes, t(at)).unwrap().id);
    }
    state.check_invariants().unwrap();
    started
}

#[test]
fn an_array_is_one_pending_job_until_its_sub_jobs_start() {
    let mut s = state(4);
    let a = submit_array(&mut s, "1-10", ArrayStyle::PbsPro);
    assert_eq!(s.pending_count(), 1);
    assert_eq!(s.full_id(a), "1[].srv");
    assert_eq!(
        s.job(a).unwrap().stdout_path,
        "/home/u1/sweep.sh.o1.^array_index^"
    );
    let started = pass(&mut s, 1);
    assert_eq!(
        started,
        [a.sub_job(1), a.sub_job(2), a.sub_job(3), a.sub_job(4)]
    );
    let sub = s.job(a.sub_job(3)).unwrap();
    assert_eq!(sub.stdout_path, "/home/u1/sweep.sh.o1.3");
    assert_eq!(sub.state, JobState::Running);
    assert_eq!(s.job(a).unwrap().state_letter(), 'B');
    assert_eq!(s.pending_count(), 1);
    // Ends free nodes for the next four.
    for i in 1..=4 {
        s.finish(a.sub_job(i), exited(0), t(2)).unwrap();
    }
    assert_eq!(pass(&mut s, 3).len(), 4);
    for i in 5..=8 {
        s.finish(a.sub_job(i), exited(0), t(4)).unwrap();
    }
    assert_eq!(pass(&mut s, 5), [a.sub_job(9), a.sub_job(10)]);
    // Nothing left to start: the array leaves its queue, begun.
    assert_eq!(s.pending_count(), 0);
    assert_eq!(s.job(a).unwrap().state, JobState::Begun);
    s.finish(a.sub_job(9), exited(0), t(6)).unwrap();
    assert!(s.take_ended_arrays().is_empty());
    s.finish(a.sub_job(10), exited(3), t(7)).unwrap();
    assert_eq!(s.take_ended_arrays(), [a]);
    let done = s.job(a).unwrap();
    assert_eq!(done.state, JobState::Finished);
    assert_eq!(done.exit.as_ref().unwrap().exit_status(), 1);
    s.check_invariants().unwrap();
}

#[test]
fn the_throttle_holds_sub_jobs_back_with_its_reason() {
    let mut s = state(8);
    let a = submit_array(&mut s, "1-20%3", ArrayStyle::Torque);
    assert_eq!(pass(&mut s, 1).len(), 3);
    let plan = Scheduler.pass(&s, t(2));
    assert!(plan.starts.is_empty());
    assert_eq!(plan.entry(a).unwrap().reason, Some(Reason::ArrayLimit));
    assert!(s.array_throttled(a));
    s.finish(a.sub_job(2), exited(0), t(3)).unwrap();
    assert_eq!(pass(&mut s, 4), [a.sub_job(4)]);
    assert_eq!(
        s.job(a.sub_job(4)).unwrap().stdout_path,
        "/home/u1/sweep.sh.o1-4"
    );
}

#[test]
fn later_jobs_and_arrays_share_the_free_nodes() {
    let mut s = state(4);
    let a = submit_array(&mut s, "0-2", ArrayStyle::PbsPro);
    let plain = crate::state::tests::submit(&mut s, 2, 1);
    let started = pass(&mut s, 1);
    assert_eq!(started, [a.sub_job(0), a.sub_job(1), a.sub_job(2), plain]);
}

#[test]
fn a_range_deleted_before_it_starts_never_runs() {
    let mut s = state(2);
    let a = submit_array(&mut s, "1-10", ArrayStyle::PbsPro);
    let spec = s.job(a).unwrap().array.as_ref().unwrap().spec.clone();
    let owner = caller(1, Role::User);
    let n = s
        .delete_unstarted(a, &spec.positions_between(5, 9), &owner, t(1))
        .unwrap();
    assert_eq!(n, 5);
    let mut ran = Vec::new();
    for at in 0..10 {
        for id in pass(&mut s, 10 + at * 2) {
            ran.push(id.array_index().unwrap());
            s.finish(id, exited(0), t(11 + at * 2)).unwrap();
        }
    }
    assert_eq!(ran, [1, 2, 3, 4, 10]);
    let done = s.job(a).unwrap();
    assert_eq!(done.state, JobState::Finished);
    assert_eq!(done.exit.as_ref().unwrap().exit_status(), 2);
    // Another user may not.
    let b = submit_array(&mut s, "1-3", ArrayStyle::PbsPro);
    let other = caller(2, Role::User);
    let all = s
        .job(b)
        .unwrap()
        .array
        .as_ref()
        .unwrap()
        .tally
        .unstarted
        .clone();
    assert!(s.delete_unstarted(b, &all, &other, t(40)).is_err());
}

#[test]
fn deleting_an_array_deletes_what_is_left_and_kills_what_runs() {
    let mut s = state(2);
    let a = submit_array(&mut s, "1-5", ArrayStyle::PbsPro);
    pass(&mut s, 1);
    let owner = caller(1, Role::User);
    assert_eq!(s.live_sub_jobs(a), [a.sub_job(1), a.sub_job(2)]);
    for id in s.live_sub_jobs(a) {
        assert!(matches!(
            s.delete(id, &owner, t(2)).unwrap().0,
            Deleted::Kill { .. }
        ));
    }
    s.delete(a, &owner, t(2)).unwrap();
    assert_eq!(s.job(a).unwrap().state, JobState::Begun);
    assert_eq!(s.pending_count(), 0);
    let mut killed = exited(0);
    killed.signal = Some(15);
    killed.cause = ExitCause::Deleted;
    s.finish(a.sub_job(1), killed.clone(), t(3)).unwrap();
    s.finish(a.sub_job(2), killed, t(3)).unwrap();
    assert_eq!(s.take_ended_arrays(), [a]);
    assert_eq!(s.job(a).unwrap().exit.as_ref().unwrap().exit_status(), 2);
    s.check_invariants().unwrap();
}

#[test]
fn a_sub_job_held_alone_waits_while_the_others_run() {
    let mut s = state(4);
    let a = submit_array(&mut s, "1-3", ArrayStyle::PbsPro);
    let owner = caller(1, Role::User);
    assert!(s.is_unstarted_sub_job(a.sub_job(2)));
    s.sub_job_record(a.sub_job(2), t(1)).unwrap();
    s.hold(a.sub_job(2), &owner, t(1)).unwrap();
    assert_eq!(pass(&mut s, 2), [a.sub_job(1), a.sub_job(3)]);
    assert_eq!(s.job(a.sub_job(2)).unwrap().state, JobState::Held);
    s.release(a.sub_job(2), &owner, t(3)).unwrap();
    assert_eq!(pass(&mut s, 4), [a.sub_job(2)]);
    assert_eq!(s.job(a).unwrap().state, JobState::Begun);
}

#[test]
fn a_restart_counts_the_sub_jobs_from_their_records() {
    let mut s = state(2);
    let a = submit_array(&mut s, "1-6%2", ArrayStyle::PbsPro);
    pass(&mut s, 1);
    s.finish(a.sub_job(1), exited(0), t(2)).unwrap();
    pass(&mut s, 3);
    // What the store holds: the array as submitted, the sub-jobs' records.
    let mut stored: Vec<Job> = s.jobs().cloned().collect();
    for job in &mut stored {
        if job.id == a {
            job.state = JobState::Queued;
        }
    }
    let mut fresh = state(2);
    fresh.restore(stored, 0);
    fresh.check_invariants().unwrap();
    let array = fresh.job(a).unwrap().array.as_ref().unwrap();
    assert_eq!(array.unstarted(), 3);
    assert_eq!(array.tally.running, 2);
    assert_eq!(fresh.job(a).unwrap().state_letter(), 'B');
    assert!(fresh.array_throttled(a));
    assert_eq!(fresh.next_id(), JobId(2));
    // Nothing runs twice: the next to start is 4.
    fresh.finish(a.sub_job(2), exited(0), t(4)).unwrap();
    assert_eq!(pass(&mut fresh, 5), [a.sub_job(4)]);
}

#[test]
fn finished_sub_jobs_outlive_history_until_their_array_ends() {
    let mut s = state(2);
    let a = submit_array(&mut s, "1-3", ArrayStyle::PbsPro);
    pass(&mut s, 1);
    s.finish(a.sub_job(1), exited(0), t(2)).unwrap();
    let later = t(2 + 30 * 24 * 3600);
    assert!(s.purge_history(later).is_empty());
    assert!(!s.remove_finished(a.sub_job(1)));
    assert!(s.job(a.sub_job(1)).is_some());
}

#[test]
fn arrays_larger_than_the_server_allows_are_refused() {
    let mut s = state(2);
    let sub = Submission {
        script_name: "sweep.sh".into(),
        workdir: "/home/u1".into(),
        array: Some((ArrayStyle::PbsPro, "0-100000".into())),
        ..Submission::default()
    };
    let err = s.submit(sub, &caller(1, Role::User), t(0)).unwrap_err();
    assert!(err.to_string().contains("max_array_size"), "{err}");
}

#[test]
fn a_pass_with_huge_arrays_looks_at_each_once() {
    let mut s = state(4);
    for _ in 0..50 {
        submit_array(&mut s, "0-99999", ArrayStyle::PbsPro);
    }
    let plan = Scheduler.pass(&s, t(1));
    assert_eq!(plan.starts.len(), 4);
    // Every array has an entry, and the first holds the free nodes.
    assert_eq!(plan.queue.len(), 50);
    for s0 in &plan.starts {
        assert_eq!(s0.job, JobId(1));
    }
}

fn submit_sized(state: &mut State, nodes: u32, walltime: &str, array: Option<&str>) -> JobId {
    let sub = Submission {
        script_name: "job.sh".into(),
        workdir: "/home/u1".into(),
        resources: vec![
            ("nodes".into(), nodes.to_string()),
            ("walltime".into(), walltime.into()),
        ],
        array: array.map(|a| (ArrayStyle::PbsPro, a.to_string())),
        ..Submission::default()
    };
    state.submit(sub, &caller(1, Role::User), t(0)).unwrap().id
}

#[test]
fn later_sub_jobs_backfill_while_the_head_waits_and_never_delay_it() {
    // Short sub-jobs fill the two free nodes, then wait for nodes; long
    // ones would delay the head and wait for its reservation.
    for (wall, expect, why) in [
        ("0:01:00", 2, Reason::Resources),
        ("2:00:00", 0, Reason::Reservation),
    ] {
        let mut s = state(4);
        s.set_config({
            let mut c = s.config().clone();
            c.server.backfill = crate::server::Backfill::Easy;
            c
        });
        let running = submit_sized(&mut s, 2, "0:30:00", None);
        assert_eq!(pass(&mut s, 0), [running]);
        let head = submit_sized(&mut s, 4, "1:00:00", None);
        let a = submit_sized(&mut s, 1, wall, Some("1-10"));
        let plan = Scheduler.pass(&s, t(1));
        let started: Vec<JobId> = plan.starts.iter().map(|st| st.job).collect();
        assert_eq!(started, vec![a; expect], "wall {wall}");
        // The head keeps its reservation at the running job's end.
        let head_entry = plan.entry(head).unwrap();
        assert_eq!(head_entry.expected_start, Some(t(30 * 60)), "wall {wall}");
        let reason = plan.entry(a).unwrap().reason;
        assert_eq!(reason, Some(why), "wall {wall}");
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Arrays and plain jobs run to the end: no node twice (the state's
        /// invariants), no sub-job twice, no throttle exceeded, nothing lost.
        #[test]
        fn every_sub_job_runs_once_within_its_throttle(
            arrays in proptest::collection::vec((1u32..30, proptest::option::of(1u32..4), 1u32..3), 1..5),
            plain in 0usize..5,
            ends in proptest::collection::vec(0usize..8, 1..200),
        ) {
            let mut s = state(6);
            let mut ids = Vec::new();
            for &(n, throttle, nodes) in &arrays {
                let text = match throttle {
                    Some(k) => format!("0-{}%{k}", n - 1),
                    None => format!("0-{}", n - 1),
                };
                let sub = Submission {
                    script_name: "a.sh".into(),
                    workdir: "/w".into(),
                    resources: vec![("nodes".into(), nodes.to_string())],
                    array: Some((ArrayStyle::PbsPro, text)),
                    ..Submission::default()
                };
                ids.push((s.submit(sub, &caller(1, Role::User), t(0)).unwrap().id, n, throttle));
            }
            for _ in 0..plain {
                crate::state::tests::submit(&mut s, 2, 1);
            }
            let mut ran: BTreeMap<JobId, u32> = BTreeMap::new();
            let mut pick = ends.iter().cycle();
            for at in 1..2000 {
                for id in pass(&mut s, at) {
                    *ran.entry(id).or_default() += 1;
                }
                for &(a, _, throttle) in &ids {
                    let running = s.active_jobs().filter(|j| j.id.array_parent() == Some(a)).count() as u32;
                    prop_assert!(throttle.is_none_or(|k| running <= k), "{a}: {running} running");
                }
                let active: Vec<JobId> = s.active_jobs().map(|j| j.id).collect();
                if active.is_empty() && s.pending_count() == 0 {
                    break;
                }
                if !active.is_empty() {
                    let victim = active[*pick.next().unwrap() % active.len()];
                    s.finish(victim, exited(0), t(at)).unwrap();
                }
            }
            prop_assert_eq!(s.pending_count(), 0);
            prop_assert!(ran.values().all(|&n| n == 1));
            for &(a, n, _) in &ids {
                let subs = ran.keys().filter(|id| id.array_parent() == Some(a)).count() as u32;
                prop_assert_eq!(subs, n);
                prop_assert_eq!(s.job(a).unwrap().state, JobState::Finished);
            }
        }
    }
}

#[test]
fn an_array_whose_last_end_was_stored_alone_finishes_at_load() {
    let mut s = state(2);
    let a = submit_array(&mut s, "1-2", ArrayStyle::PbsPro);
    pass(&mut s, 1);
    s.finish(a.sub_job(1), exited(0), t(5)).unwrap();
    s.finish(a.sub_job(2), exited(4), t(9)).unwrap();
    // The crash came before the array's own end was stored.
    let mut stored: Vec<Job> = s.jobs().cloned().collect();
    for job in &mut stored {
        if job.id == a {
            job.state = JobState::Queued;
            job.end_time = None;
            job.exit = None;
        }
    }
    let mut fresh = state(2);
    fresh.restore(stored, 0);
    fresh.check_invariants().unwrap();
    let done = fresh.job(a).unwrap();
    assert_eq!(done.state, JobState::Finished);
    assert_eq!(done.end_time, Some(t(9)));
    assert_eq!(done.exit.as_ref().unwrap().exit_status(), 1);
    assert_eq!(fresh.take_ended_arrays(), [a]);
}

#[test]
fn a_sub_job_taken_alone_from_a_held_array_stays_held() {
    let mut s = state(4);
    let a = submit_array(&mut s, "1-3", ArrayStyle::PbsPro);
    s.hold(a, &caller(1, Role::User), t(1)).unwrap();
    s.sub_job_record(a.sub_job(2), t(2)).unwrap();
    assert_eq!(s.job(a.sub_job(2)).unwrap().state, JobState::Held);
    assert!(pass(&mut s, 3).is_empty(), "nothing of a held array starts");
}
