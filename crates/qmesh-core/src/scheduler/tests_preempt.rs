//! Preemption in the pass: an express job that cannot start takes the
//! nodes of the fewest, lowest running jobs, suspended (and resumed when
//! the nodes are free again), requeued or deleted as `preempt_order`
//! says; never into a reservation; on a torus, a placement. The property
//! runs queues with express jobs to their end, applying each plan as the
//! daemon does, and checks reservations and the state's invariants.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::tests_placed::machine;
use super::*;
use crate::job::{ExitCause, JobExit};
use crate::node::{Topology, TorusConversion, TorusPartition};
use crate::preempt::Method;
use crate::queue::Queue;
use crate::rsub::{self, ResvRequest};
use crate::state::tests::{caller, t};
use crate::submit::Submission;
use crate::{Role, Time};

/// `n` flat nodes, or the machine given; queues `batch` (0), `low` (-10)
/// and `express` (200).
fn with_queues(mut s: State, order: &str) -> State {
    let mut config = s.config().clone();
    let mut low = Queue::open("low");
    low.priority = -10;
    let mut express = Queue::open("express");
    express.priority = 200;
    config.queues.insert("low".into(), low);
    config.queues.insert("express".into(), express);
    config.server.preempt_order = order.into();
    s.set_config(config);
    s
}

fn flat(n: usize, order: &str) -> State {
    with_queues(crate::state::tests::state(n), order)
}

fn submit(s: &mut State, queue: &str, nodes: u32, secs: u64, rerun: bool, at: Time) -> JobId {
    let sub = Submission {
        script_name: "job.sh".into(),
        workdir: "/tmp".into(),
        queue: Some(queue.into()),
        resources: vec![
            ("nodes".into(), nodes.to_string()),
            ("walltime".into(), secs.to_string()),
        ],
        rerunnable: Some(rerun),
        ..Submission::default()
    };
    s.submit(sub, &caller(1000, Role::User), at).unwrap().id
}

fn exit() -> JobExit {
    crate::state::tests::exited(0)
}

/// Applies a plan as the daemon does: resumes, preemptions, starts. A job
/// requeued or deleted is reported gone at once.
fn apply(s: &mut State, plan: &Plan, now: Time) {
    for &id in &plan.resumes {
        s.take_back(id, now).unwrap();
    }
    for p in &plan.preempted {
        match p.method {
            Method::Suspend => {
                s.suspend_for(p.job, p.by, now).unwrap();
            }
            Method::Requeue | Method::Delete | Method::Checkpoint => {
                s.stop_for(p.job, p.by, p.method != Method::Delete, now)
                    .unwrap();
                s.finish(p.job, exit(), now).unwrap();
            }
        }
    }
    for start in &plan.starts {
        s.start_placed(start.job, &start.nodes, &start.parts, now)
            .unwrap();
    }
    s.check_invariants().unwrap();
}

fn start(s: &mut State, id: JobId, nodes: &[usize]) {
    s.start(id, nodes, t(0)).unwrap();
}

fn victims(plan: &Plan) -> Vec<(JobId, Method)> {
    plan.preempted.iter().map(|p| (p.job, p.method)).collect()
}

#[test]
fn an_express_job_suspends_the_lowest_jobs_and_starts_in_the_same_pass() {
    let mut s = flat(4, "SCR");
    let batch = submit(&mut s, "batch", 2, 1000, true, t(0));
    let low1 = submit(&mut s, "low", 1, 1000, true, t(0));
    let low2 = submit(&mut s, "low", 1, 1000, true, t(0));
    start(&mut s, batch, &[0, 1]);
    start(&mut s, low1, &[2]);
    start(&mut s, low2, &[3]);
    let x = submit(&mut s, "express", 2, 100, true, t(10));
    let plan = Scheduler.pass(&s, t(10));
    assert_eq!(
        victims(&plan),
        [(low2, Method::Suspend), (low1, Method::Suspend)],
        "the low queue's jobs, the latest started first; the batch job runs on"
    );
    assert_eq!(plan.starts.len(), 1);
    assert_eq!(plan.starts[0].job, x);
    assert_eq!(plan.starts[0].nodes, [2, 3]);
    apply(&mut s, &plan, t(10));
    assert_eq!(s.job(low1).unwrap().state, JobState::Suspended);
    assert_eq!(s.job(batch).unwrap().state, JobState::Running);
}

#[test]
fn the_fewest_victims_and_their_spare_nodes_wait_for_them_not_for_others() {
    let mut s = flat(4, "S");
    let small = submit(&mut s, "low", 1, 1000, true, t(0));
    let big = submit(&mut s, "low", 3, 1000, true, t(0));
    start(&mut s, small, &[0]);
    start(&mut s, big, &[1, 2, 3]);
    // The small job started last, but the express job needs 2 nodes: the
    // big one alone frees them, so the small one is dropped again.
    let x = submit(&mut s, "express", 2, 100, true, t(10));
    let plan = Scheduler.pass(&s, t(10));
    assert_eq!(victims(&plan), [(big, Method::Suspend)]);
    apply(&mut s, &plan, t(10));
    // A batch job would fit in the big job's spare node: it is kept.
    let waiting = submit(&mut s, "batch", 1, 10, true, t(20));
    let plan = Scheduler.pass(&s, t(20));
    assert!(plan.starts.is_empty(), "{:?}", plan.starts);
    assert!(plan.resumes.is_empty());
    // The express job ends: the big job resumes before the batch job.
    s.finish(x, exit(), t(110)).unwrap();
    let plan = Scheduler.pass(&s, t(110));
    assert_eq!(plan.resumes, [big]);
    assert!(plan.starts.iter().all(|st| st.job != waiting));
    apply(&mut s, &plan, t(110));
    let job = s.job(big).unwrap();
    assert_eq!(job.state, JobState::Running);
    assert_eq!(
        job.elapsed(t(210)),
        Some(110),
        "100 s suspended not counted"
    );
}

#[test]
fn requeued_and_deleted_victims_end_first_and_the_express_job_starts_next() {
    for (order, requeued) in [("R", true), ("D", false)] {
        let mut s = flat(2, order);
        let low = submit(&mut s, "low", 2, 1000, true, t(0));
        start(&mut s, low, &[0, 1]);
        let x = submit(&mut s, "express", 2, 100, true, t(10));
        let plan = Scheduler.pass(&s, t(10));
        assert!(
            plan.starts.is_empty(),
            "{order}: its victim is not gone yet"
        );
        let method = if requeued {
            Method::Requeue
        } else {
            Method::Delete
        };
        assert_eq!(victims(&plan), [(low, method)]);
        assert_eq!(plan.entry(x).unwrap().reason, Some(Reason::Preempting));
        s.stop_for(low, x, requeued, t(10)).unwrap();
        // While it is being killed, nothing more is preempted.
        let plan = Scheduler.pass(&s, t(11));
        assert!(plan.preempted.is_empty());
        assert_eq!(plan.entry(x).unwrap().reason, Some(Reason::Preempting));
        s.finish(low, exit(), t(12)).unwrap();
        let after = s.job(low).unwrap().state;
        assert_eq!(after.is_pending(), requeued, "{order}: {after:?}");
        let plan = Scheduler.pass(&s, t(12));
        assert_eq!(plan.starts.len(), 1, "{order}");
        assert_eq!(plan.starts[0].job, x);
    }
}

#[test]
fn a_job_that_may_not_be_rerun_is_not_requeued_and_targets_narrow_the_victims() {
    let mut s = flat(2, "R");
    let low = submit(&mut s, "low", 2, 1000, false, t(0));
    start(&mut s, low, &[0, 1]);
    let x = submit(&mut s, "express", 1, 100, true, t(10));
    let plan = Scheduler.pass(&s, t(10));
    assert!(plan.preempted.is_empty(), "R only, and it may not be rerun");
    assert_eq!(plan.entry(x).unwrap().reason, Some(Reason::Resources));

    let mut s = flat(2, "S");
    let mut config = s.config().clone();
    config
        .queues
        .get_mut("express")
        .unwrap()
        .resources_default
        .insert("preempt_targets".into(), "queue=low".into());
    s.set_config(config);
    let batch = submit(&mut s, "batch", 2, 1000, true, t(0));
    start(&mut s, batch, &[0, 1]);
    let x = submit(&mut s, "express", 1, 100, true, t(10));
    let plan = Scheduler.pass(&s, t(10));
    assert!(plan.preempted.is_empty(), "express may preempt only low");
    assert_eq!(plan.entry(x).unwrap().reason, Some(Reason::Resources));
    // preempt_prio without express_queue: no preemption at all.
    let mut config = s.config().clone();
    config
        .queues
        .get_mut("express")
        .unwrap()
        .resources_default
        .clear();
    config.server.preempt_prio = vec!["normal_jobs".into()];
    s.set_config(config);
    assert!(Scheduler.pass(&s, t(10)).preempted.is_empty());
}

#[test]
fn an_express_job_never_preempts_into_a_reservation() {
    let mut s = flat(4, "S");
    let req = ResvRequest {
        nodes: 2,
        start: Some(t(100)),
        end: Some(t(200)),
        ..ResvRequest::default()
    };
    let (config, r) = rsub::submit(&s, &caller(1000, Role::User), "h", &req, t(0)).unwrap();
    s.set_config(config);
    let reserved: Vec<usize> = s
        .nodes()
        .iter()
        .enumerate()
        .filter(|(_, n)| r.occurrences[0].nodes.iter().any(|m| **m == *n.name))
        .map(|(i, _)| i)
        .collect();
    let others: Vec<usize> = (0..4).filter(|i| !reserved.contains(i)).collect();
    let low = submit(&mut s, "low", 2, 50, true, t(0));
    start(&mut s, low, &others);
    // Four nodes for 1000 s would run into the reservation: no victim
    // can make that right.
    let wide = submit(&mut s, "express", 4, 1000, true, t(10));
    let plan = Scheduler.pass(&s, t(10));
    assert!(plan.preempted.is_empty());
    assert!(plan.starts.is_empty());
    s.delete(wide, &caller(0, Role::Manager), t(10)).unwrap();
    // Two nodes for 1000 s: the reserved ones are free but in the way;
    // the low job's are taken instead.
    let narrow = submit(&mut s, "express", 2, 1000, true, t(10));
    let plan = Scheduler.pass(&s, t(10));
    assert_eq!(victims(&plan), [(low, Method::Suspend)]);
    assert_eq!(plan.starts[0].job, narrow);
    assert!(plan.starts[0].nodes.iter().all(|i| !reserved.contains(i)));
}

#[test]
fn on_a_torus_the_victims_free_a_placement() {
    let torus = Topology::Torus {
        dims: vec![2, 2, 2],
        partition: TorusPartition::Nep,
        conversion: TorusConversion::Merge,
    };
    let mut s = with_queues(machine(torus, crate::server::Backfill::Easy), "S");
    let lows: Vec<JobId> = (0..4)
        .map(|_| submit(&mut s, "low", 2, 1000, true, t(0)))
        .collect();
    let plan = Scheduler.pass(&s, t(0));
    apply(&mut s, &plan, t(0));
    assert!(
        lows.iter()
            .all(|&id| s.job(id).unwrap().state == JobState::Running)
    );
    let x = submit(&mut s, "express", 4, 100, true, t(10));
    let plan = Scheduler.pass(&s, t(10));
    assert_eq!(plan.preempted.len(), 2, "two pairs make a 2x2x1 subtorus");
    assert_eq!(plan.starts[0].job, x);
    assert!(!plan.starts[0].parts.is_empty(), "placed as a subtorus");
    apply(&mut s, &plan, t(10));
}

/// One job's time on nodes, as the daemon would see it.
struct Run {
    job: JobId,
    from: Time,
    to: Time,
    nodes: Vec<usize>,
}

/// Runs every job to its end, each running exactly its wall time (less
/// the time it spends suspended), applying each plan; express jobs of
/// `(nodes, secs)` arrive at their times. Returns each span a job held
/// nodes, and how many jobs were preempted.
fn run_all(s: &mut State, mut arrivals: Vec<(Time, u32, u64)>) -> (Vec<Run>, usize) {
    let mut preempted = 0;
    arrivals.sort();
    let mut runs = Vec::new();
    // Per running job: since when, on which nodes, and run time left.
    let mut on: BTreeMap<JobId, (Time, Vec<usize>, i64)> = BTreeMap::new();
    let mut left: BTreeMap<JobId, i64> = BTreeMap::new();
    let mut turns: Vec<Time> = s
        .config()
        .reservations
        .values()
        .flat_map(|r| r.occurrences.iter().flat_map(|o| [o.start, o.end]))
        .collect();
    turns.extend(arrivals.iter().map(|a| a.0));
    turns.sort();
    let mut now = t(0);
    let close = |runs: &mut Vec<Run>, id: JobId, from: Time, nodes: Vec<usize>, to: Time| {
        runs.push(Run {
            job: id,
            from,
            to,
            nodes,
        });
    };
    for _ in 0..3000 {
        while arrivals.first().is_some_and(|a| a.0 <= now) {
            let (_, n, secs) = arrivals.remove(0);
            submit(s, "express", n, secs, true, now);
        }
        let plan = Scheduler.pass(s, now);
        preempted += plan.preempted.len();
        apply(s, &plan, now);
        for &id in &plan.resumes {
            let job = s.job(id).unwrap();
            let nodes = s.lent_nodes(job);
            on.insert(id, (now, nodes, left[&id]));
        }
        for p in &plan.preempted {
            if let Some((from, nodes, was)) = on.remove(&p.job) {
                close(&mut runs, p.job, from, nodes, now);
                left.insert(p.job, was - (now - from).num_seconds());
            }
            if p.method != Method::Suspend {
                left.remove(&p.job);
            }
        }
        for st in &plan.starts {
            let wall = s.job(st.job).unwrap().walltime as i64;
            on.insert(st.job, (now, st.nodes.clone(), wall));
        }
        // Preemptions that end jobs are applied at once: plan again now.
        if plan.preempted.iter().any(|p| p.method != Method::Suspend) {
            continue;
        }
        let next_end = on
            .values()
            .map(|(from, _, secs)| *from + chrono::Duration::seconds(*secs))
            .min();
        let next_turn = turns.iter().copied().find(|&x| x > now);
        let Some(next) = [next_end, next_turn].into_iter().flatten().min() else {
            break;
        };
        now = next;
        let ended: Vec<JobId> = on
            .iter()
            .filter(|(_, (from, _, secs))| *from + chrono::Duration::seconds(*secs) <= now)
            .map(|(&id, _)| id)
            .collect();
        for id in ended {
            let (from, nodes, _) = on.remove(&id).unwrap();
            close(&mut runs, id, from, nodes, now);
            left.remove(&id);
            s.finish(id, exit(), now).unwrap();
        }
    }
    assert!(on.is_empty(), "every job ended: {:?}", on.keys());
    assert!(
        s.jobs().all(|j| j.state == JobState::Finished),
        "every job ended"
    );
    (runs, preempted)
}

#[test]
fn the_property_preempts_on_its_sample() {
    // Low jobs fill the machine; express jobs arrive while they run.
    let mut s = flat(6, "SR");
    for _ in 0..6 {
        submit(&mut s, "low", 1, 3600, true, t(0));
    }
    let (_, preempted) = run_all(&mut s, vec![(t(60), 3, 600), (t(120), 2, 600)]);
    assert!(preempted >= 5, "{preempted}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// With express jobs preempting, no node runs two jobs at once (the
    /// state's invariants, checked after every plan), no job runs on a
    /// reservation's nodes during its occurrence, every job ends, and a
    /// suspended job is charged only its running time.
    #[test]
    fn preempting_never_overlaps_a_reservation_and_every_job_ends(
        order in prop::sample::select(vec!["S", "R", "D", "SR", "SCR 50 D", "CD"]),
        topology in prop_oneof![
            Just(Topology::Flat),
            prop::sample::select(vec![TorusPartition::Ep, TorusPartition::Nep]).prop_map(
                |partition| Topology::Torus {
                    dims: vec![2, 2, 2],
                    partition,
                    conversion: TorusConversion::Merge,
                },
            ),
            Just(Topology::Mesh2d { width: 3, height: 2, contiguous: false }),
        ],
        jobs in prop::collection::vec((1u32..5, 1u64..40, 0usize..2), 1..20),
        express in prop::collection::vec((1u32..5, 1u64..20, 0i64..60), 0..6),
        resvs in prop::collection::vec((1u32..4, 0i64..60, 5i64..40), 0..3),
    ) {
        let mut s = if topology == Topology::Flat {
            flat(6, order)
        } else {
            with_queues(machine(topology, crate::server::Backfill::Easy), order)
        };
        for (n, from, len) in resvs {
            let req = ResvRequest {
                nodes: n,
                start: Some(t(from * 60)),
                duration: Some(len as u64 * 60),
                ..ResvRequest::default()
            };
            if let Ok((config, _)) = rsub::submit(&s, &caller(1000, Role::User), "h", &req, t(0)) {
                s.set_config(config);
            }
        }
        for &(n, minutes, q) in &jobs {
            let queue = ["low", "batch"][q];
            submit(&mut s, queue, n, minutes * 60, true, t(0));
        }
        let arrivals = express
            .iter()
            .map(|&(n, minutes, at)| (t(at * 60), n, minutes * 60))
            .collect();
        let reservations = s.config().reservations.clone();
        let index: BTreeMap<String, usize> = s
            .nodes()
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.to_string(), i))
            .collect();
        let (runs, _) = run_all(&mut s, arrivals);
        for run in &runs {
            for r in reservations.values() {
                for o in &r.occurrences {
                    let held: Vec<usize> = o.nodes.iter().map(|n| index[n]).collect();
                    if o.start < run.to && run.from < o.end {
                        prop_assert!(
                            run.nodes.iter().all(|i| !held.contains(i)),
                            "job {} ran {:?} on {:?}, into R{}'s {:?}..{:?} on {held:?}",
                            run.job, (run.from, run.to), run.nodes, r.id, o.start, o.end
                        );
                    }
                }
            }
        }
        for job in s.jobs().filter(|j| j.state == JobState::Finished) {
            let Some(exit) = &job.exit else { continue };
            if exit.cause == ExitCause::Exited && job.end_time.is_some() {
                let ran = job.elapsed(job.end_time.unwrap()).unwrap();
                prop_assert!(ran <= job.walltime, "job {} charged {ran} s of {}", job.id, job.walltime);
            }
        }
    }
}

#[test]
fn an_express_job_never_preempts_across_a_shutdown_window() {
    let mut s = flat(2, "S");
    let mut config = s.config().clone();
    config.shutdowns.insert(
        "maint".into(),
        crate::shutdown::Shutdown::new("maint", t(100), t(200)),
    );
    s.set_config(config);
    let low = submit(&mut s, "low", 2, 50, true, t(0));
    start(&mut s, low, &[0, 1]);
    // It would run into the window: no victim can help.
    let long = submit(&mut s, "express", 1, 1000, true, t(10));
    let plan = Scheduler.pass(&s, t(10));
    assert!(plan.preempted.is_empty());
    assert_ne!(plan.entry(long).unwrap().reason, Some(Reason::Preempting));
    // One that ends before it may.
    let short = submit(&mut s, "express", 1, 60, true, t(10));
    let plan = Scheduler.pass(&s, t(10));
    assert_eq!(victims(&plan), [(low, Method::Suspend)]);
    assert_eq!(plan.starts[0].job, short);
    apply(&mut s, &plan, t(10));
    // The short job ends at 70; the low job's 40 s left would cross the
    // window from 100: it stays suspended until after it.
    s.finish(short, exit(), t(70)).unwrap();
    assert!(Scheduler.pass(&s, t(70)).resumes.is_empty());
    assert_eq!(Scheduler.pass(&s, t(200)).resumes, [low]);
}

#[test]
fn express_jobs_go_first_whatever_the_job_order() {
    for (order, by_queue) in [
        (crate::server::JobOrder::Fifo, false),
        (crate::server::JobOrder::Hrn, true),
        (crate::server::JobOrder::PriorityAging, true),
    ] {
        let mut s = flat(2, "S");
        let mut config = s.config().clone();
        config.server.job_order = order;
        config.server.by_queue = by_queue;
        s.set_config(config);
        let first = submit(&mut s, "batch", 2, 100, true, t(0));
        let express = submit(&mut s, "express", 2, 1000, true, t(5));
        let plan = Scheduler.pass(&s, t(10));
        assert_eq!(plan.queue[0].job, express, "{order:?}");
        assert_eq!(plan.starts[0].job, express, "{order:?}");
        assert_eq!(plan.queue[1].job, first, "{order:?}");
    }
}

#[test]
fn c_checkpoints_a_rerunnable_job_unless_it_said_c_n() {
    let mut s = flat(3, "CD");
    let plain = submit(&mut s, "low", 1, 1000, true, t(0));
    let fixed = submit(&mut s, "low", 1, 1000, false, t(0));
    let sub = Submission {
        script_name: "job.sh".into(),
        workdir: "/tmp".into(),
        queue: Some("low".into()),
        resources: vec![("nodes".into(), "1".into())],
        checkpoint: Some("n".into()),
        ..Submission::default()
    };
    let never = s.submit(sub, &caller(1000, Role::User), t(0)).unwrap().id;
    start(&mut s, plain, &[0]);
    start(&mut s, fixed, &[1]);
    start(&mut s, never, &[2]);
    submit(&mut s, "express", 3, 100, true, t(10));
    let plan = Scheduler.pass(&s, t(10));
    let mut got = victims(&plan);
    got.sort_by_key(|(id, _)| *id);
    assert_eq!(
        got,
        [
            (plain, Method::Checkpoint),
            (fixed, Method::Delete),
            (never, Method::Delete)
        ]
    );
}
