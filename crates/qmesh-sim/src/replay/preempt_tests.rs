//! Preemption in a replay (`--express`, `--preempt-order`): express jobs
//! arrive on a full machine and take its nodes; a job suspended ends later
//! by its suspension, one requeued runs again after the express job, one
//! deleted ends at its preemption; without express jobs nothing changes.

use super::*;
use crate::machine::{EXPRESS_PRIORITY, Preemption};
use crate::swf;

/// An SWF line: number, submit, run, procs, requested time.
fn line(n: u64, submit: i64, run: i64, procs: i64, req: i64) -> String {
    format!("{n} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 1 1 -1 1 -1 -1 -1\n")
}

/// With `--express 0.1`, jobs 10 and 18 are express and 1 to 9 are not
/// (the hash of their numbers).
const SHARE: f64 = 0.1;

fn run(text: &str, order: &str) -> Replay {
    let trace = swf::read(text.as_bytes(), "t.swf").unwrap();
    let options = Options {
        express: Some(SHARE),
        preempt_order: Some(order.into()),
        ..Options::default()
    };
    replay(&trace, &options).unwrap()
}

fn record(r: &Replay, number: u64) -> &JobRecord {
    r.records.iter().find(|j| j.number == number).unwrap()
}

/// (job, start, end) of each job.
fn schedule(r: &Replay) -> Vec<(u64, i64, i64)> {
    r.records
        .iter()
        .map(|j| (j.number, j.start, j.end))
        .collect()
}

#[test]
fn the_share_picks_jobs_by_the_hash_of_their_numbers() {
    let picked: Vec<u64> = (1..=20).filter(|&n| express_job(n, SHARE)).collect();
    assert_eq!(picked, [10, 18]);
    // A larger share keeps them; none and all are none and all.
    assert!(picked.iter().all(|&n| express_job(n, 0.5)));
    assert!((1..1000).all(|n| !express_job(n, 0.0) && express_job(n, 1.0)));
    let share = (1..=10_000).filter(|&n| express_job(n, 0.05)).count();
    assert!((400..600).contains(&share), "{share} of 10000 at 5 %");
}

/// Four nodes, all taken by job 1 (1000 s of run, asking 2000 s) when
/// express job 10 arrives at 100 asking for `x_nodes` for 200 s; job 2
/// (one node, 50 s) arrives at 150.
fn full_machine(x_nodes: i64) -> String {
    let mut t = String::from("; MaxProcs: 4\n");
    t += &line(1, 0, 1000, 4, 2000);
    t += &line(2, 150, 50, 1, 100);
    t += &line(10, 100, 200, x_nodes, 300);
    t
}

#[test]
fn a_suspended_job_ends_later_by_its_suspension() {
    let r = run(&full_machine(2), "S");
    // Job 10 starts at once on job 1's nodes; job 1 resumes when it ends
    // at 300, and ends its 1000 s of running 200 s late. Job 2 may not use
    // the two nodes job 1 lends (kept for express jobs): it waits for job
    // 1's end.
    assert_eq!(
        schedule(&r),
        [(1, 0, 1200), (2, 1200, 1250), (10, 100, 300)]
    );
    let one = record(&r, 1);
    assert_eq!((one.suspensions, one.suspended), (1, 200));
    assert_eq!((one.run(), one.ran(), one.lost()), (1200, 1000, 0));
    assert!(record(&r, 10).express && !one.express);
    assert_eq!(&*record(&r, 10).queue, "express");
    assert_eq!(&*one.queue, "1", "the trace's queue, as without --express");
    let p = crate::metrics::preemption(&r.records, r.nodes);
    assert_eq!((p.suspended, p.requeued, p.deleted), (1, 0, 0));
    assert_eq!((p.express.jobs, p.express.mean_wait), (1, 0.0));
    assert_eq!((p.others.jobs, p.others.mean_wait), (2, 1050.0 / 2.0));
    assert_eq!(p.lost_node_seconds, 0.0);
    // Busy: job 1 4 × 1000, job 2 50, job 10 2 × 200, over 4 × 1250.
    assert_eq!(p.utilization, 4450.0 / 5000.0);
}

#[test]
fn the_default_order_suspends_first() {
    let trace = swf::read(full_machine(2).as_bytes(), "t.swf").unwrap();
    let options = Options {
        express: Some(SHARE),
        ..Options::default()
    };
    let r = replay(&trace, &options).unwrap();
    assert_eq!(record(&r, 1).suspended, 200, "SCR: S");
}

#[test]
fn a_requeued_job_runs_twice_and_ends_after_the_express_job() {
    let r = run(&full_machine(4), "R");
    // At 100 job 1 is requeued (100 s on 4 nodes lost) and job 10 starts
    // in the pass after, at the same instant; job 1 runs again whole from
    // 300, and job 2, behind it in line, backfills nowhere (job 1 takes
    // all four nodes) and runs after it.
    assert_eq!(
        schedule(&r),
        [(1, 300, 1300), (2, 1300, 1350), (10, 100, 300)]
    );
    let one = record(&r, 1);
    assert_eq!(
        (one.requeues, one.requeued_work, one.suspended),
        (1, 400, 0)
    );
    assert_eq!(one.lost(), 400);
    assert!(one.start >= record(&r, 10).end);
    let p = crate::metrics::preemption(&r.records, r.nodes);
    assert_eq!((p.suspended, p.requeued, p.deleted), (0, 1, 0));
    assert_eq!(p.jobs_preempted, 1);
    assert_eq!(p.lost_node_seconds, 400.0);
    // Busy: 4 × 1000 + 400 lost + 50 + 4 × 200, over 4 × 1350.
    assert_eq!(p.utilization, 5250.0 / 5400.0);
    assert_eq!(p.lost_share, 400.0 / 5400.0);
    assert!(r.passes >= 2, "two passes at 100");
}

#[test]
fn a_deleted_job_ends_at_its_preemption_killed() {
    let r = run(&full_machine(4), "D");
    assert_eq!(schedule(&r), [(1, 0, 100), (2, 300, 350), (10, 100, 300)]);
    let one = record(&r, 1);
    assert!(one.killed);
    assert_eq!(one.lost(), 400);
    let p = crate::metrics::preemption(&r.records, r.nodes);
    assert_eq!((p.suspended, p.requeued, p.deleted), (0, 0, 1));
    assert_eq!(p.lost_node_seconds, 400.0);
}

#[test]
fn a_job_not_rerunnable_is_deleted_under_rd() {
    // `R` needs a rerunnable job; the configuration says none is.
    let trace = swf::read(full_machine(4).as_bytes(), "t.swf").unwrap();
    let options = Options {
        express: Some(SHARE),
        preempt_order: Some("RD".into()),
        qmgr: vec!["set server default_rerunnable = false".into()],
        ..Options::default()
    };
    let r = replay(&trace, &options).unwrap();
    assert!(record(&r, 1).killed);
}

#[test]
fn two_express_jobs_and_a_resumed_job_on_a_busier_machine() {
    // Four nodes: jobs 1 and 2 (two nodes each) run; express 10 takes
    // job 2's nodes at 100 (the latest started is preempted first), and
    // express 18 job 1's at 150. Each suspended job resumes when its own
    // nodes are free again.
    let mut t = String::from("; MaxProcs: 4\n");
    t += &line(1, 0, 1000, 2, 2000);
    t += &line(2, 10, 1000, 2, 2000);
    t += &line(10, 100, 200, 2, 300);
    t += &line(18, 150, 100, 2, 300);
    let r = run(&t, "S");
    assert_eq!(
        schedule(&r),
        [(1, 0, 1100), (2, 10, 1210), (10, 100, 300), (18, 150, 250)]
    );
    assert_eq!(record(&r, 1).suspended, 100);
    assert_eq!(record(&r, 2).suspended, 200);
    let p = crate::metrics::preemption(&r.records, r.nodes);
    assert_eq!((p.express.jobs, p.jobs_preempted, p.suspended), (2, 2, 2));
    assert_eq!(p.suspended_seconds, 300);
}

/// A pseudo-random job mix (a fixed LCG: the test is the same each run),
/// a job every `gap` / 2 seconds on average.
fn mix(jobs: u64, nodes: i64, gap: u64) -> String {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |below: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % below
    };
    let mut t = format!("; MaxProcs: {nodes}\n");
    let mut submit = 0;
    for n in 1..=jobs {
        submit += next(gap) as i64;
        let procs = 1 + next(nodes as u64) as i64;
        let req = 60 + next(6 * 3600) as i64;
        let run = 1 + next(req as u64) as i64;
        t += &line(n, submit, run, procs, req);
    }
    t
}

#[test]
fn an_express_queue_without_express_jobs_changes_nothing() {
    let trace = swf::read(mix(400, 16, 900).as_bytes(), "t.swf").unwrap();
    for policy in [Policy::Easy, Policy::Conservative, Policy::Fcfs] {
        let plain = Options {
            policy,
            ..Options::default()
        };
        let before = replay(&trace, &plain).unwrap();
        let after = replay(
            &trace,
            &Options {
                express: Some(0.0),
                ..plain
            },
        )
        .unwrap();
        assert_eq!(before.records, after.records, "{policy:?}");
        assert_eq!(before.passes, after.passes, "{policy:?}");
    }
}

#[test]
fn every_job_of_a_busy_mix_ends_and_work_is_accounted_for() {
    // 16 nodes, 400 jobs offering about 0.8 of the machine, a fifth of
    // them express, under each order and policy.
    let text = mix(400, 16, 7200);
    let trace = swf::read(text.as_bytes(), "t.swf").unwrap();
    for order in ["S", "R", "D", "SCR", "R 50 S"] {
        for policy in [Policy::Easy, Policy::Conservative, Policy::Fcfs] {
            let options = Options {
                policy,
                express: Some(0.2),
                preempt_order: Some(order.into()),
                ..Options::default()
            };
            let r = replay(&trace, &options).unwrap();
            assert_eq!(r.records.len(), 400, "{order} {policy:?}");
            let p = crate::metrics::preemption(&r.records, r.nodes);
            assert!(p.jobs_preempted > 0, "{order} {policy:?}: {p:?}");
            for j in &r.records {
                let (_, _, run) = times(&trace.jobs[j.number as usize - 1], &options);
                assert!(j.start >= j.submit, "{order}: {j:?}");
                assert!(j.suspended >= 0 && j.ran() >= 0, "{order}: {j:?}");
                if j.killed {
                    assert!(j.ran() <= run, "{order}: {j:?}");
                } else {
                    // Every job not killed runs its run time, suspended
                    // or not.
                    assert_eq!(j.ran(), run, "{order}: {j:?}");
                }
                if !order.contains('S') {
                    assert_eq!(j.suspensions, 0);
                }
                if !order.contains('R') {
                    assert_eq!(j.requeues, 0);
                }
                if !order.contains('D') {
                    assert!(!j.killed);
                }
                if j.express {
                    assert!(j.suspensions == 0 && j.requeues == 0 && !j.killed);
                }
            }
            // No node runs two jobs at once: the replay checks the core's
            // invariants after each pass in tests; and without suspensions
            // (whose spans the records do not give) the nodes of the jobs
            // running fit the machine at every instant.
            if !order.contains('S') {
                let mut events: Vec<(i64, i64)> = r
                    .records
                    .iter()
                    .flat_map(|j| [(j.start, i64::from(j.nodes)), (j.end, -i64::from(j.nodes))])
                    .collect();
                events.sort_by_key(|&(t, d)| (t, d));
                let mut busy = 0;
                for (_, d) in events {
                    busy += d;
                    assert!(busy <= 16, "{order} {policy:?}: {busy} nodes busy");
                }
            }
        }
    }
}

#[test]
fn the_express_queue_draws_on_the_default_queues_node_sets() {
    let site = r#"
[server]
default_queue = "thin_q"

[[node_set]]
name = "thin"
count = 4
host = "h1"

[[node_set]]
name = "fat"
count = 4
host = "h2"

[[queue]]
name = "thin_q"
node_sets = ["thin"]

[[queue]]
name = "fat_q"
node_sets = ["fat"]
"#;
    let machine = Machine::site(site, "site.toml").unwrap();
    for policy in [Policy::Config, Policy::Easy] {
        let express = Preemption {
            express: true,
            order: Some("R"),
        };
        let state = build_state(&machine, policy, &express, &[], None).unwrap();
        let config = state.config();
        let q = config.queue(EXPRESS_QUEUE).unwrap();
        assert_eq!(q.node_sets, ["thin"]);
        assert_eq!(q.priority, EXPRESS_PRIORITY);
        assert!(q.enabled && q.started);
        assert_eq!(config.server.preempt_order, "R");
        assert!(
            qmesh_core::preempt::Policy::of(config).is_some(),
            "{policy:?}"
        );
        // The site's job order is kept: express jobs go first in any.
        assert_eq!(config.server.job_order, qmesh_core::JobOrder::Fifo);
    }
    let err = build_state(
        &machine,
        Policy::Easy,
        &Preemption {
            express: false,
            order: Some("SX"),
        },
        &[],
        None,
    )
    .unwrap_err();
    assert!(err.to_string().contains("'X' is not a method"), "{err}");
    // A checkpoint keeps what the site's program saves: no replay says.
    let err = build_state(
        &machine,
        Policy::Easy,
        &Preemption {
            express: true,
            order: Some("CR"),
        },
        &[],
        None,
    )
    .unwrap_err();
    assert!(err.to_string().contains("may checkpoint (C)"), "{err}");
}

#[test]
fn express_jobs_on_a_site_preempt_in_its_default_queues_sets_only() {
    // Thin nodes for the default queue, fat for another, each full; an
    // express job preempts a thin job, never a fat one.
    let site = r#"
[server]
default_queue = "thin_q"

[[node_set]]
name = "thin"
count = 2
host = "h1"

[[node_set]]
name = "fat"
count = 2
host = "h2"

[[queue]]
name = "thin_q"
node_sets = ["thin"]

[[queue]]
name = "fat_q"
node_sets = ["fat"]
"#;
    let mut t = String::from("; MaxProcs: 4\n; Queue: 1 thin_q\n; Queue: 2 fat_q\n");
    let at = |n: u64, submit: i64, run: i64, procs: i64, req: i64, queue: i64| {
        format!("{n} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 1 1 -1 {queue} -1 -1 -1\n")
    };
    t += &at(1, 0, 1000, 2, 2000, 1);
    t += &at(2, 0, 1000, 2, 2000, 2);
    t += &at(10, 100, 200, 2, 300, 1);
    let trace = swf::read(t.as_bytes(), "t.swf").unwrap();
    let options = Options {
        policy: Policy::Easy,
        machine: Machine::site(site, "site.toml").unwrap(),
        express: Some(SHARE),
        preempt_order: Some("S".into()),
        ..Options::default()
    };
    let r = replay(&trace, &options).unwrap();
    assert_eq!(schedule(&r), [(1, 0, 1200), (2, 0, 1000), (10, 100, 300)]);
    assert_eq!(&*record(&r, 10).queue, "express");
    assert_eq!(&*record(&r, 1).queue, "thin_q");
}
