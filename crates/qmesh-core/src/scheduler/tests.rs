//! The pass against the seeds' examples, and its invariants as properties.

use super::*;
use crate::Role;
use crate::server::JobOrder;
use crate::state::tests::{caller, state, submit, t};
use crate::submit::Submission;
use proptest::prelude::*;
use std::collections::{BTreeSet, HashMap};

mod closedowns;

fn why(plan: &Plan, state: &State, id: JobId) -> Reason {
    plan.reason_of(&Scheduler, state, state.job(id).unwrap())
}

fn apply(state: &mut State, plan: &Plan, at: Time) {
    for start in &plan.starts {
        state.start(start.job, &start.nodes, at).unwrap();
    }
}

fn started(plan: &Plan) -> Vec<JobId> {
    plan.starts.iter().map(|s| s.job).collect()
}

fn set_server(s: &mut State, f: impl FnOnce(&mut crate::ServerAttrs)) {
    let mut config = s.config().clone();
    f(&mut config.server);
    s.set_config(config);
}

/// Submits `nodes` × `minutes` as user `uid` into `queue`, at `at`.
fn job(s: &mut State, uid: u32, nodes: u32, minutes: u64, queue: &str, at: Time) -> JobId {
    let sub = Submission {
        script_name: "job.sh".into(),
        queue: Some(queue.into()),
        workdir: "/tmp".into(),
        resources: vec![
            ("nodes".into(), nodes.to_string()),
            ("walltime".into(), format!("{minutes}:00")),
        ],
        ..Submission::default()
    };
    s.submit(sub, &caller(uid, Role::User), at).unwrap().id
}

fn status(plan: &Plan, id: JobId) -> Status {
    plan.entry(id).unwrap().status
}

/// The ANL paper's queue on its 128-node SP; `f_nodes` is 10 or 8.
fn anl(f_nodes: u32) -> (State, Vec<JobId>) {
    let mut s = state(128);
    let table = [
        (32, 120),
        (64, 60),
        (24, 180),
        (32, 120),
        (16, 120),
        (f_nodes, 480),
        (4, 30),
        (32, 120),
    ];
    let ids = table
        .iter()
        .enumerate()
        .map(|(i, &(n, m))| job(&mut s, i as u32 + 1, n, m, "batch", t(0)))
        .collect();
    (s, ids)
}

#[test]
fn anl_worked_example_user_f_with_ten_nodes() {
    let (mut s, ids) = anl(10);
    let [a, b, c, d, e, f, g, h] = ids[..] else {
        unreachable!()
    };
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(started(&plan), vec![a, b, c, g]);
    assert_eq!(status(&plan, d), Status::Blocked);
    assert_eq!(
        plan.entry(d).unwrap().expected_start,
        Some(t(3600)),
        "D starts when B ends, 60 minutes on"
    );
    assert_eq!(status(&plan, e), Status::CannotBackfill);
    assert_eq!(status(&plan, f), Status::CannotBackfill);
    assert_eq!(why(&plan, &s, f), Reason::Resources, "10 nodes, 8 free");
    assert_eq!(why(&plan, &s, h), Reason::Resources);
    apply(&mut s, &plan, t(0));
    s.check_invariants().unwrap();
    let when = Scheduler.when(&s, s.job(d).unwrap(), t(60));
    assert_eq!(when.start, Some(t(3600)));
}

#[test]
fn anl_worked_example_user_f_with_eight_nodes() {
    let (s, ids) = anl(8);
    let [a, b, c, d, e, f, g, _h] = ids[..] else {
        unreachable!()
    };
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(
        started(&plan),
        vec![a, b, c, f],
        "F runs 480 minutes on nodes D does not need"
    );
    assert_eq!(status(&plan, d), Status::Blocked);
    assert_eq!(plan.entry(d).unwrap().expected_start, Some(t(3600)));
    assert_eq!(status(&plan, e), Status::CannotBackfill);
    assert_eq!(status(&plan, g), Status::Waiting, "no node is left for G");
}

#[test]
fn without_backfill_a_job_that_does_not_fit_is_passed_over() {
    let (mut s, ids) = anl(10);
    set_server(&mut s, |a| a.backfill = Backfill::None);
    let plan = Scheduler.pass(&s, t(0));
    // First fit, as NQS did: G (4) and nothing holds nodes for D.
    assert_eq!(started(&plan), vec![ids[0], ids[1], ids[2], ids[6]]);
    assert_eq!(status(&plan, ids[3]), Status::CannotBackfill);
    assert_eq!(plan.entry(ids[3]).unwrap().expected_start, None);
}

#[test]
fn conservative_gives_every_job_a_reservation() {
    let (s, ids) = {
        let (mut s, ids) = anl(10);
        set_server(&mut s, |a| a.backfill = Backfill::Conservative);
        (s, ids)
    };
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(started(&plan), vec![ids[0], ids[1], ids[2], ids[6]]);
    for &id in &[ids[3], ids[4], ids[5], ids[7]] {
        assert_eq!(status(&plan, id), Status::Blocked);
        assert!(plan.entry(id).unwrap().expected_start.is_some());
    }
    // D at 60 min (B's 64 nodes); E (16) fits beside D at 60 min too;
    // F (10 × 480 min) and H (32) fit in what is left then.
    let start = |id| plan.entry(id).unwrap().expected_start.unwrap();
    assert_eq!(start(ids[3]), t(3600));
    assert_eq!(start(ids[4]), t(3600));
    assert!(start(ids[7]) >= t(3600));
}

#[test]
fn priority_aging_overtakes_a_high_priority_queue() {
    // batch (priority 0) + 2 per hour overtakes high (10) after 5 hours.
    let first_at = |secs: i64| {
        let mut s = state(4);
        let mut config = s.config().clone();
        let mut high = crate::queue::Queue::open("high");
        high.priority = 10;
        config.queues.insert("high".into(), high);
        config.server.job_order = JobOrder::PriorityAging;
        config.server.age_factor = 2.0;
        s.set_config(config);
        // Both need the whole machine: only the first in order starts.
        let old = job(&mut s, 1, 4, 60, "batch", t(0));
        let fresh = job(&mut s, 2, 4, 60, "high", t(secs));
        let plan = Scheduler.pass(&s, t(secs));
        (started(&plan), old, fresh)
    };
    let (run, _, fresh) = first_at(5 * 3600 - 60);
    assert_eq!(run, vec![fresh], "9.97 < 10: the high queue first");
    let (run, old, _) = first_at(5 * 3600 + 60);
    assert_eq!(run, vec![old], "10.03 > 10: the aged job first");
}

#[test]
fn blocking_holds_nodes_for_a_large_job() {
    let mut s = state(8);
    set_server(&mut s, |a| {
        a.backfill = Backfill::None;
        a.job_order = JobOrder::PriorityAging;
        a.age_factor = 1.0;
        a.block_priority = 5.0;
    });
    let small = job(&mut s, 1, 4, 600, "batch", t(0));
    let plan = Scheduler.pass(&s, t(0));
    apply(&mut s, &plan, t(0));
    let large = job(&mut s, 2, 8, 60, "batch", t(0));
    let filler = job(&mut s, 3, 2, 10, "batch", t(3600));
    // At 2 hours the large job's priority (2) is below block_priority: the
    // filler takes free nodes.
    let plan = Scheduler.pass(&s, t(7200));
    assert_eq!(started(&plan), vec![filler]);
    // At 6 hours it is above (6 > 5): nothing that could delay it starts.
    let plan = Scheduler.pass(&s, t(6 * 3600));
    assert!(plan.starts.is_empty(), "{:?}", plan.starts);
    assert_eq!(status(&plan, large), Status::Blocked);
    assert_eq!(why(&plan, &s, filler), Reason::Blocked);
    let _ = small;
}

#[test]
fn hrn_puts_short_jobs_first_and_lets_long_ones_catch_up() {
    let mut s = state(4);
    set_server(&mut s, |a| a.job_order = JobOrder::Hrn);
    let blocker = job(&mut s, 9, 4, 600, "batch", t(0));
    let plan = Scheduler.pass(&s, t(0));
    apply(&mut s, &plan, t(0));
    assert_eq!(started(&plan), vec![blocker]);
    let long = job(&mut s, 1, 4, 600, "batch", t(0));
    let short = job(&mut s, 2, 4, 10, "batch", t(3000));
    // At 3000 s: long (3000 + 36000) / 36000 = 1.08; short (0 + 600) / 600 = 1.
    let plan = Scheduler.pass(&s, t(3000));
    assert_eq!(plan.queue[0].job, long);
    // At 3300 s: short has 1.5, long 1.09.
    let plan = Scheduler.pass(&s, t(3300));
    assert_eq!(plan.queue[0].job, short);
    assert!((plan.queue[0].priority - 1.5).abs() < 1e-9);
}

#[test]
fn search_depth_limits_how_far_a_pass_looks() {
    let mut s = state(4);
    set_server(&mut s, |a| {
        a.search_depth = 2;
        a.backfill = Backfill::None;
    });
    let held = job(&mut s, 1, 1, 10, "batch", t(0));
    s.hold(held, &caller(1, Role::User), t(0)).unwrap();
    let big1 = job(&mut s, 1, 3, 10, "batch", t(0));
    let big2 = job(&mut s, 1, 3, 10, "batch", t(0));
    let small = job(&mut s, 1, 1, 10, "batch", t(0));
    let plan = Scheduler.pass(&s, t(0));
    // The held job does not count; big1 starts, big2 is the second job
    // considered; small is beyond the depth.
    assert_eq!(started(&plan), vec![big1]);
    assert_eq!(why(&plan, &s, big2), Reason::Resources);
    assert_eq!(why(&plan, &s, small), Reason::Priority);
}

#[test]
fn user_run_limit_keeps_jobs_waiting() {
    let mut s = state(8);
    set_server(&mut s, |a| a.max_user_run = Some(2));
    let ids: Vec<JobId> = (0..3).map(|_| submit(&mut s, 1, 1)).collect();
    let other = submit(&mut s, 2, 1);
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(started(&plan), vec![ids[0], ids[1], other]);
    assert_eq!(why(&plan, &s, ids[2]), Reason::UserLimit);
}

#[test]
fn higher_priority_queues_go_first() {
    let mut s = state(2);
    let low = submit(&mut s, 1, 2);
    let mut config = s.config().clone();
    let mut fast = crate::queue::Queue::open("fast");
    fast.priority = 10;
    config.queues.insert("fast".into(), fast);
    s.set_config(config);
    let high = job(&mut s, 1, 2, 10, "fast", t(0));
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(started(&plan), vec![high]);
    assert_eq!(why(&plan, &s, low), Reason::Resources);
}

#[test]
fn held_stopped_and_down_jobs_say_why() {
    let mut s = state(2);
    let held = submit(&mut s, 1, 1);
    s.hold(held, &caller(1, Role::User), t(0)).unwrap();
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(why(&plan, &s, held), Reason::Held);
    assert_eq!(status(&plan, held), Status::Paused, "its owner held it");

    let waiting = submit(&mut s, 1, 2);
    s.set_host_up("h", false);
    let plan = Scheduler.pass(&s, t(0));
    assert!(plan.starts.is_empty());
    assert_eq!(why(&plan, &s, waiting), Reason::NodesDown);

    s.set_host_up("h", true);
    let mut config = s.config().clone();
    config.queues.get_mut("batch").unwrap().started = false;
    s.set_config(config);
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(why(&plan, &s, waiting), Reason::QueueStopped);
    assert!(plan.starts.is_empty());

    let mut config = s.config().clone();
    config.queues.get_mut("batch").unwrap().started = true;
    config.server.scheduling = false;
    s.set_config(config);
    let plan = Scheduler.pass(&s, t(0));
    assert!(plan.starts.is_empty());
    assert_eq!(why(&plan, &s, waiting), Reason::SchedulingOff);
}

#[test]
fn spfree_and_spwhat_read_the_profile() {
    let (s, _) = anl(10);
    let plan = Scheduler.pass(&s, t(0));
    // After A, B, C, G: 4 free; D's reservation takes 32 of B's 64 at 60 min.
    let free = plan.free_nodes(&s);
    assert_eq!(free.len(), 1);
    assert_eq!(free[0].free, 4);
    assert_eq!(free[0].until, None, "4 nodes stay free for ever");
    let what = plan.what(&s);
    assert_eq!(
        what,
        vec![WhatPair {
            nodes: 4,
            secs: None
        }]
    );
    // Before G started: 8 free, G's 4 return at 30 minutes.
    let (mut s, ids) = anl(10);
    s.hold(ids[6], &caller(7, Role::User), t(0)).unwrap();
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(plan.free_nodes(&s)[0].free, 8);
    assert_eq!(
        plan.what(&s),
        vec![WhatPair {
            nodes: 8,
            secs: None
        }],
        "D needs 32 of the 72 free at 60 minutes: 8 can run on"
    );
}

// --- properties ---

#[derive(Clone, Debug)]
struct Scenario {
    nodes: usize,
    running: Vec<(u32, u64, i64)>,
    queued: Vec<(u32, u32, u64)>,
    mode: Backfill,
    max_user_run: Option<u32>,
    /// Shutdown windows of every set: start and length, in minutes from now.
    windows: Vec<(i64, i64)>,
    /// The queue runs in a period that ends today at this minute of the
    /// day (now is 22:13:20), and its jobs are killed then.
    period_end: Option<i64>,
    /// Every job above `block_priority` (SDSC blocking: with no backfill,
    /// the first that cannot start holds back the rest).
    block: bool,
}

/// Seconds from now (t(0), a Tuesday at 22:13:20 UTC) to `minute` of the day.
fn until_minute(minute: i64) -> i64 {
    minute * 60 - (22 * 3600 + 13 * 60 + 20)
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (4usize..40).prop_flat_map(|nodes| {
        (
            Just(nodes),
            prop::collection::vec((1u32..=nodes as u32, 1u64..120, 0i64..100), 0..6),
            prop::collection::vec((0u32..4, 1u32..=nodes as u32, 1u64..120), 1..25),
            prop::sample::select(vec![Backfill::None, Backfill::Easy, Backfill::Conservative]),
            prop::option::of(1u32..4),
            prop::collection::vec((-60i64..300, 1i64..120), 0..3),
            prop::option::of(22 * 60 + 14..24 * 60 - 1i64),
            any::<bool>(),
        )
            .prop_map(
                |(nodes, running, queued, mode, max_user_run, windows, period_end, block)| {
                    Scenario {
                        nodes,
                        running,
                        queued,
                        mode,
                        max_user_run,
                        windows,
                        period_end,
                        block,
                    }
                },
            )
    })
}

/// Builds the state: running jobs started in the past as far as nodes go.
fn build(sc: &Scenario, skip: &BTreeSet<usize>) -> (State, Vec<Option<JobId>>) {
    let mut s = state(sc.nodes);
    set_server(&mut s, |a| {
        a.backfill = sc.mode;
        a.max_user_run = sc.max_user_run;
        if sc.block {
            a.block_priority = 0.5;
        }
    });
    let mut config = s.config().clone();
    if sc.block {
        config.queues.get_mut("batch").unwrap().priority = 1;
    }
    for (i, &(start, minutes)) in sc.windows.iter().enumerate() {
        let name = format!("w{i}");
        let w = crate::shutdown::Shutdown::new(&name, t(start * 60), t((start + minutes) * 60));
        config.shutdowns.insert(name, w);
    }
    if let Some(minute) = sc.period_end {
        let spans = format!("Tue 00:00-{:02}:{:02}", minute / 60, minute % 60);
        config
            .calendar
            .periods
            .insert("P".into(), spans.parse().unwrap());
        let batch = config.queues.get_mut("batch").unwrap();
        batch.periods = vec!["P".into()];
        batch.period_end = crate::queue::PeriodEnd::Kill;
    }
    s.set_config(config);
    let mut used = 0usize;
    for &(n, minutes, age) in &sc.running {
        if used + n as usize > sc.nodes {
            continue;
        }
        let id = job(&mut s, 99, n, minutes, "batch", t(-age * 60));
        let nodes: Vec<usize> = (used..used + n as usize).collect();
        s.start(id, &nodes, t(-age * 60)).unwrap();
        used += n as usize;
    }
    let ids = sc
        .queued
        .iter()
        .enumerate()
        .map(|(i, &(uid, n, minutes))| {
            (!skip.contains(&i)).then(|| job(&mut s, uid, n, minutes, "batch", t(0)))
        })
        .collect();
    (s, ids)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn a_pass_keeps_its_promises(sc in scenario()) {
        let (s, ids) = build(&sc, &BTreeSet::new());
        let now = t(0);
        let plan = Scheduler.pass(&s, now);

        // The simulator's starts-only pass starts exactly what the pass does.
        prop_assert_eq!(&Scheduler.starts(&s, now), &plan.starts);

        // No node twice, and only free ones.
        let mut seen = BTreeSet::new();
        for start in &plan.starts {
            for &n in &start.nodes {
                prop_assert!(seen.insert(n), "node {} given twice", n);
                prop_assert!(s.nodes()[n].is_free());
            }
            prop_assert_eq!(start.nodes.len() as u32, s.job(start.job).unwrap().nodes);
        }

        // Never over a limit.
        if let Some(max) = sc.max_user_run {
            let mut per_user: HashMap<&str, u32> = HashMap::new();
            for job in s.active_jobs() {
                *per_user.entry(job.owner.user.as_str()).or_default() += 1;
            }
            for start in &plan.starts {
                let user = s.job(start.job).unwrap().owner.user.as_str();
                let n = per_user.entry(user).or_default();
                *n += 1;
                prop_assert!(user == "u99" || *n <= max, "{} runs {} > {}", user, n, max);
            }
        }

        // The commitments fit: at every second, running jobs, new starts
        // and reservations together use at most the machine.
        let mut use_at = vec![0i64; 400 * 60];
        let mut commit = |from: i64, to: i64, n: u32| {
            for sec in from.max(0)..to.min(use_at.len() as i64) {
                use_at[sec as usize] += i64::from(n);
            }
        };
        for job in s.active_jobs() {
            let end = job.stime.unwrap().timestamp() - now.timestamp() + job.walltime as i64;
            commit(0, end.max(1), job.nodes);
        }
        for start in &plan.starts {
            let job = s.job(start.job).unwrap();
            commit(0, job.walltime as i64, job.nodes);
        }
        for entry in &plan.queue {
            if entry.status == Status::Blocked && let Some(at) = entry.expected_start {
                let job = s.job(entry.job).unwrap();
                let from = at.timestamp() - now.timestamp();
                commit(from, from + job.walltime as i64, job.nodes);
            }
        }
        prop_assert!(use_at.iter().all(|&u| u <= sc.nodes as i64), "over-committed");

        // No job started, and no reservation, reaches into a shutdown window.
        let crosses = |from: i64, to: i64| {
            sc.windows.iter().any(|&(start, minutes)| from < (start + minutes) * 60 && start * 60 < to)
        };
        for start in &plan.starts {
            let wall = s.job(start.job).unwrap().walltime as i64;
            prop_assert!(!crosses(0, wall), "{:?} started across a window", start.job);
        }
        for entry in &plan.queue {
            if entry.status == Status::Blocked && let Some(at) = entry.expected_start {
                let from = at.timestamp() - now.timestamp();
                let wall = s.job(entry.job).unwrap().walltime as i64;
                prop_assert!(!crosses(from, from + wall), "{:?} reserved across a window", entry.job);
            }
        }

        // No job started, and no reservation, outlasts its queue's period.
        if let Some(minute) = sc.period_end {
            let cut = until_minute(minute);
            for start in &plan.starts {
                let wall = s.job(start.job).unwrap().walltime as i64;
                prop_assert!(wall <= cut, "{:?} started past its period", start.job);
            }
            for entry in &plan.queue {
                if let Some(at) = entry.expected_start {
                    let from = at.timestamp() - now.timestamp();
                    let wall = s.job(entry.job).unwrap().walltime as i64;
                    prop_assert!(from + wall <= cut, "{:?} reserved past its period", entry.job);
                }
            }
        }

        // Backfilling never delays a reservation: without the jobs started
        // behind a reserved job, it starts exactly when planned.
        if sc.mode != Backfill::None {
            let reserved = plan.queue.iter().enumerate()
                .filter(|(_, e)| e.status == Status::Blocked && e.expected_start.is_some())
                .take(4);
            for (pos, entry) in reserved {
                let behind: BTreeSet<JobId> = plan.queue[pos + 1..].iter().map(|e| e.job).collect();
                let skip: BTreeSet<usize> = ids
                    .iter()
                    .enumerate()
                    .filter(|(_, id)| id.is_some_and(|id| {
                        behind.contains(&id) && plan.starts.iter().any(|st| st.job == id)
                    }))
                    .map(|(i, _)| i)
                    .collect();
                let (s2, ids2) = build(&sc, &skip);
                let plan2 = Scheduler.pass(&s2, now);
                let i = ids.iter().position(|id| *id == Some(entry.job)).unwrap();
                let e2 = plan2.entry(ids2[i].unwrap()).unwrap();
                prop_assert_eq!(entry.expected_start, e2.expected_start,
                    "job #{} delayed by backfilling", i);
            }
        }
    }
}

#[test]
fn fairshare_moves_light_accounts_forward() {
    let mut s = state(4);
    let mut config = s.config().clone();
    for name in ["heavy", "light"] {
        config
            .accounts
            .insert(name.into(), crate::account::Account::new(name));
    }
    config.server.job_order = JobOrder::Fairshare;
    s.set_config(config);
    let with_account = |s: &mut State, uid: u32, account: &str, at: i64| {
        let sub = Submission {
            script_name: "job.sh".into(),
            workdir: "/tmp".into(),
            account: Some(account.into()),
            resources: vec![
                ("nodes".into(), "4".into()),
                ("walltime".into(), "3600".into()),
            ],
            ..Submission::default()
        };
        s.submit(sub, &caller(uid, Role::User), t(at)).unwrap().id
    };
    // heavy has used the machine for an hour.
    let used = with_account(&mut s, 1, "heavy", 0);
    s.start(used, &[0, 1, 2, 3], t(0)).unwrap();
    let exit = crate::job::JobExit {
        code: Some(0),
        signal: None,
        cause: crate::job::ExitCause::Exited,
        message: String::new(),
        cput: None,
        max_rss: None,
        vmem: None,
    };
    s.finish(used, exit, t(3600)).unwrap();
    // heavy submits first; light's later job still goes first.
    let early = with_account(&mut s, 1, "heavy", 3600);
    let late = with_account(&mut s, 2, "light", 3700);
    let plan = Scheduler.pass(&s, t(3800));
    assert_eq!(started(&plan), vec![late]);
    assert_eq!(plan.queue[1].job, early);
    assert!(plan.queue[0].priority > plan.queue[1].priority);
}
