//! A kept plan against a fresh pass: the same starts and entries at every
//! instant of random workloads, and the changes that make a pass plan
//! afresh.

use std::collections::HashMap;

use super::*;
use crate::Role;
use crate::job::JobId;
use crate::scheduler::Scheduler;
use crate::state::tests::{caller, exited, state, t};
use crate::submit::Submission;
use proptest::prelude::*;

/// One flat set of `nodes` nodes under conservative backfilling, and
/// beside the queue `batch` a queue `high` whose jobs go first.
fn conservative(nodes: usize) -> State {
    conservative_with(state(nodes))
}

/// Flat sets of these sizes (a job may spread over them), as above.
fn conservative_on(sizes: &[usize]) -> State {
    use crate::node::{NodeDef, NodeSet, Topology};
    let sets = sizes
        .iter()
        .enumerate()
        .map(|(s, &n)| NodeSet {
            name: format!("set{s}"),
            topology: Topology::Flat,
            nodes: (0..n)
                .map(|i| NodeDef {
                    name: format!("s{s}n{i}"),
                    host: "h".into(),
                })
                .collect(),
            attrs: Default::default(),
        })
        .collect();
    let mut config = crate::Config::default();
    config
        .queues
        .insert("batch".into(), crate::queue::Queue::open("batch"));
    let mut s = State::new("srv", config, sets).unwrap();
    s.set_host_up("h", true);
    conservative_with(s)
}

fn conservative_with(mut s: State) -> State {
    let mut config = s.config().clone();
    config.server.backfill = Backfill::Conservative;
    let mut high = crate::queue::Queue::open("high");
    high.priority = 10;
    config.queues.insert("high".into(), high);
    s.set_config(config);
    s
}

fn submit(s: &mut State, nodes: u32, wall: u64, at: Time) -> JobId {
    submit_to(s, "batch", nodes, wall, at)
}

fn submit_to(s: &mut State, queue: &str, nodes: u32, wall: u64, at: Time) -> JobId {
    let sub = Submission {
        script_name: "job.sh".into(),
        queue: Some(queue.into()),
        workdir: "/tmp".into(),
        resources: vec![
            ("nodes".into(), nodes.to_string()),
            ("walltime".into(), wall.to_string()),
        ],
        ..Submission::default()
    };
    s.submit(sub, &caller(1000, Role::User), at).unwrap().id
}

/// Both passes at `now`, and the whole pass (which plans every job and
/// reads no order ahead): they must agree. Applies the starts; returns
/// them with their job's run time from `run`.
fn both(s: &mut State, replanner: &mut Replanner, now: Time) -> Result<Vec<JobId>, TestCaseError> {
    let whole = Scheduler.pass(s, now);
    let fresh = Scheduler.changes(s, now);
    let kept = replanner.changes(s, now);
    prop_assert_eq!(&fresh.starts, &whole.starts, "starts at {}", now);
    prop_assert_eq!(&kept.starts, &fresh.starts, "starts at {}", now);
    // Each pass ends once no job left might start (`ahead`), where it
    // finds so: a kept plan keeps the entries of jobs a fresh pass may
    // leave out, or the other way round; none of them starts.
    let common = kept.queue.len().min(fresh.queue.len());
    prop_assert_eq!(
        &kept.queue[..common],
        &fresh.queue[..common],
        "entries at {}",
        now
    );
    prop_assert_eq!(
        &fresh.queue[..],
        &whole.queue[..fresh.queue.len()],
        "entries at {}",
        now
    );
    for e in kept.queue[common..].iter().chain(&fresh.queue[common..]) {
        prop_assert!(e.status != Status::Startable, "{:?} at {}", e, now);
    }
    for start in &fresh.starts {
        s.start_placed(start.job, &start.nodes, &start.parts, now)
            .unwrap();
    }
    Ok(fresh.starts.iter().map(|st| st.job).collect())
}

/// Replays `jobs` (submit, nodes, wall time, run time) on `nodes` nodes
/// as the simulator does, comparing at every instant. Every seventh job
/// goes to `high`, ahead of those waiting.
fn replay(mut s: State, jobs: &[(i64, u32, u64, u64)]) -> Result<Replanner, TestCaseError> {
    let mut replanner = Replanner::default();
    let mut jobs = jobs.to_vec();
    jobs.sort_by_key(|j| j.0);
    let mut next = 0;
    let mut run_of: HashMap<JobId, i64> = HashMap::new();
    let mut ends: Vec<(i64, JobId)> = Vec::new();
    loop {
        let arrival = jobs.get(next).map(|j| j.0);
        let Some(now_s) = arrival.into_iter().chain(ends.iter().map(|e| e.0)).min() else {
            break;
        };
        let now = t(now_s);
        ends.sort();
        while ends.first().is_some_and(|e| e.0 <= now_s) {
            let (_, id) = ends.remove(0);
            s.finish(id, exited(0), now).unwrap();
        }
        while let Some(&(at, n, wall, run)) = jobs.get(next).filter(|j| j.0 <= now_s) {
            let queue = if next % 7 == 6 { "high" } else { "batch" };
            let id = submit_to(&mut s, queue, n, wall, t(at));
            run_of.insert(id, run.min(wall) as i64);
            next += 1;
        }
        for id in both(&mut s, &mut replanner, now)? {
            ends.push((now_s + run_of[&id], id));
        }
    }
    prop_assert_eq!(s.pending_count(), 0, "every job ran");
    Ok(replanner)
}

proptest! {
    #[test]
    fn a_kept_plan_starts_what_a_fresh_pass_starts(
        nodes in 2usize..10,
        jobs in prop::collection::vec((0i64..200, 1u32..10, 1u64..80, 0u64..90), 1..40),
    ) {
        let jobs: Vec<_> = jobs
            .into_iter()
            .map(|(at, n, wall, run)| (at, n.min(nodes as u32), wall, run))
            .collect();
        replay(conservative(nodes), &jobs)?;
    }

    #[test]
    fn a_kept_plan_on_several_sets_starts_what_a_fresh_pass_starts(
        sizes in prop::collection::vec(1usize..5, 2..4),
        jobs in prop::collection::vec((0i64..200, 1u32..10, 1u64..80, 0u64..90), 1..40),
    ) {
        let nodes: usize = sizes.iter().sum();
        let jobs: Vec<_> = jobs
            .into_iter()
            .map(|(at, n, wall, run)| (at, n.min(nodes as u32), wall, run))
            .collect();
        replay(conservative_on(&sizes), &jobs)?;
    }
}

#[test]
fn a_busy_replay_resumes_most_passes() {
    // Jobs arrive every 10 s, run their full wall time or half of it.
    let jobs: Vec<(i64, u32, u64, u64)> = (0..60)
        .map(|i| {
            (
                i * 10,
                1 + (i as u32 * 7) % 8,
                50 + (i as u64 * 13) % 200,
                0,
            )
        })
        .map(|(at, n, wall, _)| (at, n, wall, if at % 20 == 0 { wall } else { wall / 2 }))
        .collect();
    let replanner = replay(conservative(8), &jobs).unwrap();
    assert!(
        replanner.resumed > 0 && replanner.fresh > 0,
        "resumed {} fresh {}",
        replanner.resumed,
        replanner.fresh
    );
}

#[test]
fn what_could_move_a_job_ahead_makes_the_pass_plan_afresh() {
    // a leaves two nodes free, and d, a one-node job too long for them
    // once b is reserved, might start until then: every pass plans b.
    let mut s = conservative(5);
    let mut r = Replanner::default();
    let a = submit(&mut s, 3, 100, t(0));
    let b = submit(&mut s, 5, 100, t(0));
    submit(&mut s, 1, 500, t(0));
    assert_eq!(both(&mut s, &mut r, t(0)).unwrap(), [a]);
    // A job at the tail: the plan stands; it fits before b's reservation.
    let c = submit(&mut s, 1, 50, t(10));
    assert_eq!(both(&mut s, &mut r, t(10)).unwrap(), [c]);
    assert_eq!((r.resumed, r.fresh), (1, 1));
    // Holding b changes what the order says of it.
    s.hold(b, &caller(1000, Role::User), t(20)).unwrap();
    both(&mut s, &mut r, t(20)).unwrap();
    assert_eq!((r.resumed, r.fresh), (1, 2));
    s.release(b, &caller(1000, Role::User), t(30)).unwrap();
    both(&mut s, &mut r, t(30)).unwrap();
    assert_eq!((r.resumed, r.fresh), (1, 3));
    // Nothing happened: it stands.
    submit(&mut s, 5, 10, t(40));
    both(&mut s, &mut r, t(40)).unwrap();
    assert_eq!((r.resumed, r.fresh), (2, 3));
    // c ends early: b may move up.
    s.finish(c, exited(0), t(45)).unwrap();
    both(&mut s, &mut r, t(45)).unwrap();
    assert_eq!((r.resumed, r.fresh), (2, 4));
    // A new configuration.
    let config = s.config().clone();
    s.set_config(config);
    both(&mut s, &mut r, t(46)).unwrap();
    assert_eq!((r.resumed, r.fresh), (2, 5));
    // a's wall time ends at 100, where b's reservation begins: past it,
    // the kept profiles would be stale.
    both(&mut s, &mut r, t(99)).unwrap();
    assert_eq!((r.resumed, r.fresh), (3, 5));
    both(&mut s, &mut r, t(101)).unwrap();
    assert_eq!((r.resumed, r.fresh), (3, 6));
}

#[test]
fn what_each_queue_may_do_is_read_again_under_a_new_configuration() {
    // The queues' view is kept from pass to pass under one configuration:
    // stopping and starting a queue must reach the next pass.
    let mut s = conservative(4);
    let mut r = Replanner::default();
    let a = submit(&mut s, 4, 100, t(0));
    assert_eq!(both(&mut s, &mut r, t(0)).unwrap(), [a]);
    let with_batch = |s: &mut State, started: bool| {
        let mut config = s.config().clone();
        config.queues.get_mut("batch").unwrap().started = started;
        s.set_config(config);
    };
    with_batch(&mut s, false);
    let b = submit(&mut s, 1, 10, t(10));
    s.finish(a, exited(0), t(20)).unwrap();
    assert_eq!(both(&mut s, &mut r, t(20)).unwrap(), [], "batch is stopped");
    with_batch(&mut s, true);
    assert_eq!(both(&mut s, &mut r, t(30)).unwrap(), [b]);
}
