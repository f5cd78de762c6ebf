//! Closedowns in the pass: shutdown windows (EPCC, DJM) are never crossed
//! by a job started, and the time before one is backfilled.

use super::*;
use crate::node::{NodeDef, NodeSet, Topology};
use crate::queue::Queue;
use crate::scheduler::closedown::Closedown;
use crate::scheduler::plan::{Planner, Stop};
use crate::shutdown::Shutdown;

/// Adds a shutdown window `[start, end)` (seconds from `t(0)`) of `sets`.
fn window(s: &mut State, name: &str, start: i64, end: i64, sets: &[&str]) {
    let mut config = s.config().clone();
    let mut w = Shutdown::new(name, t(start), t(end));
    w.node_sets = sets.iter().map(|s| s.to_string()).collect();
    config.shutdowns.insert(name.into(), w);
    s.set_config(config);
}

fn reason(plan: &Plan, id: JobId) -> Option<Reason> {
    plan.entry(id).unwrap().reason
}

fn expected(plan: &Plan, id: JobId) -> Option<Time> {
    plan.entry(id).unwrap().expected_start
}

#[test]
fn a_short_job_runs_before_the_window_and_a_long_one_waits_for_its_end() {
    let mut s = state(8);
    window(&mut s, "maint", 3600, 7200, &[]);
    let long = job(&mut s, 1, 4, 120, "batch", t(0));
    let short = job(&mut s, 2, 4, 30, "batch", t(0));
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(
        started(&plan),
        vec![short],
        "30 minutes fit before the window"
    );
    assert_eq!(reason(&plan, long), Some(Reason::Shutdown), "not Resources");
    assert_eq!(status(&plan, long), Status::Blocked);
    assert_eq!(expected(&plan, long), Some(t(7200)), "when the window ends");
    apply(&mut s, &plan, t(0));
    let when = Scheduler.when(&s, s.job(long).unwrap(), t(60));
    assert_eq!((when.start, when.reason), (Some(t(7200)), Reason::Shutdown));
    let crossed = Scheduler.closedown_crossed(&s, s.job(long).unwrap(), t(60));
    assert_eq!(crossed.map(|c| c.name), Some("maint".to_string()));
    assert!(
        Scheduler
            .closedown_crossed(&s, s.job(short).unwrap(), t(60))
            .is_none()
    );
    // spfree and spwhat: 4 nodes free until the window, for an hour.
    assert_eq!(
        plan.free_nodes(&s)[0],
        SetFree {
            set: "local".into(),
            free: 4,
            until: Some(t(3600))
        }
    );
    assert_eq!(
        plan.what(&s),
        vec![WhatPair {
            nodes: 4,
            secs: Some(3600)
        }]
    );
}

#[test]
fn anl_queue_with_a_window_an_hour_away() {
    // The ANL queue on an idle 128-node SP, the machine down from 60 to
    // 120 minutes: only B (exactly 60 minutes) and G (30) may start.
    let (s, ids) = anl(10);
    let mut s = s;
    window(&mut s, "maint", 3600, 7200, &[]);
    let [a, b, c, d, e, f, g, h] = ids[..] else {
        unreachable!()
    };
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(started(&plan), vec![b, g]);
    assert_eq!(status(&plan, a), Status::Blocked);
    assert_eq!(expected(&plan, a), Some(t(7200)));
    for id in [a, c, d, e, f, h] {
        assert_eq!(reason(&plan, id), Some(Reason::Shutdown), "{id:?}");
    }
    assert_eq!(status(&plan, c), Status::CannotBackfill);

    set_server(&mut s, |a| a.backfill = Backfill::Conservative);
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(started(&plan), vec![b, g]);
    // After the window: A, C, D, E, F take 114 of 128; H (32) waits for
    // A, D and E to end, two hours later.
    for id in [a, c, d, e, f] {
        assert_eq!(expected(&plan, id), Some(t(7200)), "{id:?}");
    }
    assert_eq!(expected(&plan, h), Some(t(14_400)));
}

/// Two flat sets of 4, "batch" on `left` and "other" on `right`.
fn two_sets() -> State {
    let set = |name: &str| NodeSet {
        name: name.into(),
        topology: Topology::Flat,
        nodes: (0..4)
            .map(|i| NodeDef {
                name: format!("{name}{i}"),
                host: "h".into(),
            })
            .collect(),
        attrs: Default::default(),
    };
    let mut config = crate::server::Config::default();
    for (queue, set) in [("batch", "left"), ("other", "right")] {
        let mut q = Queue::open(queue);
        q.node_sets = vec![set.into()];
        config.queues.insert(queue.into(), q);
    }
    let mut s = State::new("srv", config, vec![set("left"), set("right")]).unwrap();
    s.set_host_up("h", true);
    s
}

#[test]
fn a_window_on_another_set_does_not_hold_back_this_one() {
    let mut s = two_sets();
    window(&mut s, "right-only", 3600, 7200, &["right"]);
    let here = job(&mut s, 1, 4, 120, "batch", t(0));
    let there = job(&mut s, 2, 4, 120, "other", t(0));
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(started(&plan), vec![here]);
    assert_eq!(reason(&plan, there), Some(Reason::Shutdown));
    assert_eq!(expected(&plan, there), Some(t(7200)));
    assert!(
        Scheduler
            .closedown_crossed(&s, s.job(here).unwrap(), t(0))
            .is_none()
    );
}

#[test]
fn a_past_window_is_ignored_and_a_current_one_stops_every_start() {
    let mut s = state(4);
    window(&mut s, "done", -7200, -3600, &[]);
    let first = job(&mut s, 1, 2, 120, "batch", t(0));
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(started(&plan), vec![first]);
    apply(&mut s, &plan, t(0));

    // Under way: even a one-minute job waits, until the window's end.
    window(&mut s, "now", -60, 600, &[]);
    let short = job(&mut s, 2, 1, 1, "batch", t(0));
    let plan = Scheduler.pass(&s, t(0));
    assert!(plan.starts.is_empty(), "{:?}", plan.starts);
    assert_eq!(reason(&plan, short), Some(Reason::Shutdown));
    assert_eq!(expected(&plan, short), Some(t(600)));
}

#[test]
fn a_closedown_without_end_is_never_crossed() {
    let mut s = state(4);
    let long = job(&mut s, 1, 2, 120, "batch", t(0));
    let short = job(&mut s, 2, 2, 30, "batch", t(0));
    let mut planner = Planner::new(&s, t(0), Backfill::Easy);
    planner.close(&[Closedown {
        start: t(3600),
        end: None,
        sets: Vec::new(),
        reason: Reason::PeriodEnd,
        name: "DAY".into(),
    }]);
    let plan = planner.run(Stop::Never);
    assert_eq!(started(&plan), vec![short]);
    assert_eq!(reason(&plan, long), Some(Reason::PeriodEnd));
    assert_eq!(status(&plan, long), Status::Blocked);
    assert_eq!(expected(&plan, long), None, "no start can be promised");
}

#[test]
fn a_job_without_enough_free_nodes_waits_for_resources_not_the_window() {
    let mut s = state(4);
    window(&mut s, "maint", 3600, 7200, &[]);
    let running = job(&mut s, 1, 3, 30, "batch", t(0));
    s.start(running, &[0, 1, 2], t(0)).unwrap();
    let wide = job(&mut s, 2, 4, 120, "batch", t(0));
    let plan = Scheduler.pass(&s, t(0));
    assert_eq!(reason(&plan, wide), Some(Reason::Resources));
    assert_eq!(expected(&plan, wide), Some(t(7200)));
}
