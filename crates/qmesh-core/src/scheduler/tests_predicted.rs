//! Planning with predicted run times: spwhen's estimate from them, and
//! EASY++ with its guarantee that the first job is never delayed past its
//! wall-time reservation.

use super::*;
use crate::Role;
use crate::state::tests::{caller, exited, state, t};
use crate::submit::Submission;
use proptest::prelude::*;
use std::collections::HashMap;

/// Submits `nodes` × `secs` of wall time as user `uid`, at `at`.
fn job(s: &mut State, uid: u32, nodes: u32, secs: u64, at: Time) -> JobId {
    let sub = Submission {
        script_name: "job.sh".into(),
        workdir: "/tmp".into(),
        resources: vec![
            ("nodes".into(), nodes.to_string()),
            ("walltime".into(), secs.to_string()),
        ],
        ..Submission::default()
    };
    s.submit(sub, &caller(uid, Role::User), at).unwrap().id
}

/// User `uid` ran two one-node jobs of `ran` seconds, ending by `at`.
fn history(s: &mut State, uid: u32, ran: i64, at: i64) {
    for _ in 0..2 {
        let id = job(s, uid, 1, 86_400, t(at - ran));
        let free = s.nodes().iter().position(|n| n.jobs.is_empty()).unwrap();
        s.start(id, &[free], t(at - ran)).unwrap();
        s.finish(id, exited(0), t(at)).unwrap();
    }
}

fn set_backfill(s: &mut State, backfill: Backfill) {
    let mut config = s.config().clone();
    config.server.backfill = backfill;
    s.set_config(config);
}

fn started(plan: &Plan) -> Vec<JobId> {
    plan.starts.iter().map(|s| s.job).collect()
}

fn apply(s: &mut State, plan: &Plan, at: Time) {
    for start in &plan.starts {
        s.start(start.job, &start.nodes, at).unwrap();
    }
}

#[test]
fn a_job_is_predicted_from_its_owners_last_two_runs() {
    let mut s = state(4);
    let first = job(&mut s, 1, 1, 7200, t(0));
    assert_eq!(s.job(first).unwrap().predicted_run, None, "no history yet");
    history(&mut s, 1, 600, 1000);
    let next = job(&mut s, 1, 2, 7200, t(1000));
    assert_eq!(s.job(next).unwrap().predicted_run, Some(600));
    let other = job(&mut s, 2, 2, 7200, t(1000));
    assert_eq!(
        s.job(other).unwrap().predicted_run,
        None,
        "user 2 ran nothing"
    );
}

/// Ten nodes; user 1's job runs on six of them, asked 2 h and predicted
/// 1 h from user 1's history; user 2 waits for eight nodes.
fn running_and_waiting() -> (State, JobId, JobId) {
    let mut s = state(10);
    history(&mut s, 1, 3600, 0);
    let running = job(&mut s, 1, 6, 7200, t(0));
    s.start(running, &[0, 1, 2, 3, 4, 5], t(0)).unwrap();
    let head = job(&mut s, 2, 8, 3600, t(0));
    (s, running, head)
}

#[test]
fn spwhen_from_predictions_counts_on_the_running_jobs_predicted_end() {
    let (s, _, head) = running_and_waiting();
    let job = s.job(head).unwrap();
    assert_eq!(Scheduler.when(&s, job, t(60)).start, Some(t(7200)));
    assert_eq!(
        Scheduler.when_predicted(&s, job, t(60)).start,
        Some(t(3600)),
        "its owner's last two jobs ran an hour"
    );
    // Outlived: moved up the ladder (1 h, then 2 h: its wall time).
    assert_eq!(
        Scheduler.when_predicted(&s, job, t(3700)).start,
        Some(t(7200))
    );
}

#[test]
fn spwhen_from_predictions_never_starts_a_job_across_a_shutdown() {
    let mut s = state(4);
    let mut config = s.config().clone();
    let window = crate::shutdown::Shutdown::new("maint", t(3600), t(7200));
    config.shutdowns.insert("maint".into(), window);
    s.set_config(config);
    // Its owner's jobs run 10 minutes, but it asks 2 hours: it cannot run
    // before the window, whatever it is predicted to run.
    history(&mut s, 1, 600, 0);
    let long = job(&mut s, 1, 4, 7200, t(0));
    let job = s.job(long).unwrap();
    assert_eq!(job.predicted_run, Some(600));
    assert_eq!(Scheduler.when(&s, job, t(0)).start, Some(t(7200)));
    assert_eq!(
        Scheduler.when_predicted(&s, job, t(0)).start,
        Some(t(7200)),
        "planned again from the window's end"
    );
}

#[test]
fn easy_plus_plus_tries_the_shortest_predicted_job_first() {
    let (mut s, _, _head) = running_and_waiting();
    // Four nodes free: room for one of these two, both ending before the
    // first job's reservation however it is planned.
    let long = job(&mut s, 3, 4, 3000, t(0));
    history(&mut s, 4, 300, 0);
    let short = job(&mut s, 4, 4, 3300, t(0));
    set_backfill(&mut s, Backfill::Easy);
    assert_eq!(
        started(&Scheduler.pass(&s, t(0))),
        vec![long],
        "queue order"
    );
    set_backfill(&mut s, Backfill::EasyPredicted);
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(started(&plan), vec![short], "shortest predicted first");
    assert_eq!(
        plan.entry(long).unwrap().status,
        Status::Waiting,
        "no node is left for it"
    );
}

#[test]
fn easy_plus_plus_starts_nothing_that_would_delay_the_wall_time_reservation() {
    let (mut s, _, head) = running_and_waiting();
    // Predicted 10 min, asking 3 h: as predicted it ends long before the
    // first job's predicted start (1 h), but if it ran its wall time it
    // would hold four nodes past 2 h, when the first job must start.
    history(&mut s, 5, 600, 0);
    let risky = job(&mut s, 5, 4, 3 * 3600, t(0));
    // Predicted 10 min, asking 90 min: done by 2 h whatever happens.
    history(&mut s, 6, 600, 0);
    let safe = job(&mut s, 6, 2, 90 * 60, t(0));
    set_backfill(&mut s, Backfill::EasyPredicted);
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(started(&plan), vec![safe]);
    assert_eq!(plan.entry(risky).unwrap().status, Status::CannotBackfill);
    let first = plan.entry(head).unwrap();
    assert_eq!(first.status, Status::Blocked);
    assert_eq!(
        first.expected_start,
        Some(t(3600)),
        "planned on predictions"
    );
}

#[test]
fn easy_plus_plus_is_set_and_printed_as_qmgr_writes_it() {
    let s = state(1);
    let mut config = s.config().clone();
    let manager = caller(0, Role::Manager);
    let set = crate::qmgr::parse_script("set server backfill = easy++").unwrap();
    crate::qmgr::run(&set, &mut config, &s, &manager).unwrap();
    assert_eq!(config.server.backfill, Backfill::EasyPredicted);
    let printed = crate::qmgr::print_server(&config);
    let line = printed.lines().find(|l| l.contains("backfill")).unwrap();
    // What print writes, qmgr reads back.
    let mut again = crate::server::Config::default();
    let back = crate::qmgr::parse_script(line).unwrap();
    crate::qmgr::run(&back, &mut again, &s, &manager).unwrap();
    assert_eq!(again.server.backfill, Backfill::EasyPredicted, "{line}");
    let bad = crate::qmgr::parse_script("set server backfill = easy+").unwrap();
    let err = crate::qmgr::run(&bad, &mut again, &s, &manager).unwrap_err();
    assert!(err.to_string().contains("easy++"), "{err}");
}

/// One job of a random workload: submitted at `at`, by user `user`,
/// asking `nodes` for `wall` seconds, running `ran` of them.
#[derive(Clone, Debug)]
struct Load {
    at: i64,
    user: u32,
    nodes: u32,
    wall: u64,
    ran: u64,
}

fn workload() -> impl Strategy<Value = Vec<Load>> {
    proptest::collection::vec(
        (0i64..4000, 1u32..4, 1u32..9, 60u64..4000, 0.0f64..1.0),
        5..40,
    )
    .prop_map(|jobs| {
        let mut jobs: Vec<Load> = jobs
            .into_iter()
            .map(|(at, user, nodes, wall, share)| Load {
                at,
                user,
                nodes,
                wall,
                ran: ((wall as f64 * share) as u64).max(1),
            })
            .collect();
        jobs.sort_by_key(|j| j.at);
        jobs
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Replays the workload under EASY++ on eight nodes. Whenever a job
    /// is first the one EASY++ reserves for, a plain EASY pass on the same
    /// state says when its wall-time reservation is; it must start by then.
    #[test]
    fn easy_plus_plus_never_starts_the_first_job_after_its_wall_time_reservation(
        jobs in workload()
    ) {
        let mut s = state(8);
        set_backfill(&mut s, Backfill::EasyPredicted);
        let mut next = 0;
        let mut ends: Vec<(i64, JobId)> = Vec::new();
        let mut bound: HashMap<JobId, i64> = HashMap::new();
        let mut start_of: HashMap<JobId, i64> = HashMap::new();
        let mut ran: HashMap<JobId, u64> = HashMap::new();
        let mut now = 0;
        loop {
            // Jobs end, jobs arrive, one pass.
            ends.sort();
            while let Some(&(end, id)) = ends.first().filter(|(end, _)| *end <= now) {
                ends.remove(0);
                s.finish(id, exited(0), t(end)).unwrap();
            }
            while let Some(j) = jobs.get(next).filter(|j| j.at <= now) {
                let id = job(&mut s, j.user, j.nodes, j.wall, t(now));
                ran.insert(id, j.ran);
                next += 1;
            }
            let plan = Scheduler.pass(&s, t(now));
            for entry in plan.queue.iter().filter(|e| e.status == Status::Blocked) {
                bound.entry(entry.job).or_insert_with(|| {
                    let easy = Planner::new(&s, t(now), Backfill::Easy).run(Stop::Never);
                    let reserved = easy.entry(entry.job).and_then(|e| e.expected_start);
                    let reserved = reserved.expect("EASY reserves for the first job");
                    reserved.timestamp() - t(0).timestamp()
                });
            }
            apply(&mut s, &plan, t(now));
            for start in &plan.starts {
                start_of.insert(start.job, now);
                ends.push((now + ran[&start.job] as i64, start.job));
            }
            s.check_invariants().unwrap();
            let arrival = jobs.get(next).map(|j| j.at);
            let end = ends.iter().map(|(e, _)| *e).min();
            now = match (arrival, end) {
                (Some(a), Some(e)) => a.min(e),
                (Some(a), None) => a,
                (None, Some(e)) => e,
                (None, None) => break,
            };
        }
        prop_assert_eq!(start_of.len(), jobs.len(), "every job ran");
        for (id, reserved) in &bound {
            prop_assert!(
                start_of[id] <= *reserved,
                "job {} started at {} s, after its wall-time reservation at {} s",
                id, start_of[id], reserved
            );
        }
    }
}
