//! Queues and node groups through a Monday (2026-11-23, UTC): prime time
//! 09:00–17:00 (the default), DAY 10:00–18:00, NIGHT 18:00–10:00.

use chrono::TimeZone;

use super::*;
use crate::Role;
use crate::job::JobId;
use crate::node::{NodeDef, NodeSet, Topology};
use crate::node_group::NodeGroup;
use crate::queue::PeriodEnd;
use crate::scheduler::{Plan, Reason, Scheduler, Status};
use crate::server::Config;
use crate::state::tests::caller;
use crate::submit::Submission;

fn at(h: u32, m: u32) -> Time {
    chrono::Utc.with_ymd_and_hms(2026, 11, 23, h, m, 0).unwrap()
}

/// Three flat sets of two nodes, `s1`, `s2`, `s3`, and the queues given.
fn machine(queues: Vec<Queue>, groups: Vec<NodeGroup>) -> State {
    let set = |name: &str| NodeSet {
        name: name.into(),
        topology: Topology::Flat,
        nodes: (0..2)
            .map(|i| NodeDef {
                name: format!("{name}n{i}"),
                host: "h".into(),
            })
            .collect(),
        attrs: Default::default(),
    };
    let mut config = Config::default();
    for (name, spans) in [
        ("DAY", "Mon-Fri 10:00-18:00"),
        ("NIGHT", "Mon-Fri 18:00-10:00"),
    ] {
        config
            .calendar
            .periods
            .insert(name.into(), spans.parse().unwrap());
    }
    for q in queues {
        config.queues.insert(q.name.clone(), q);
    }
    for g in groups {
        config.node_groups.insert(g.name.clone(), g);
    }
    config.server.scheduling = true;
    let mut state = State::new("srv", config, vec![set("s1"), set("s2"), set("s3")]).unwrap();
    state.set_host_up("h", true);
    state
}

fn submit(s: &mut State, queue: &str, nodes: u32, walltime: &str, now: Time) -> JobId {
    let sub = Submission {
        script_name: "job.sh".into(),
        workdir: "/tmp".into(),
        queue: Some(queue.into()),
        resources: vec![
            ("nodes".into(), nodes.to_string()),
            ("walltime".into(), walltime.into()),
        ],
        ..Submission::default()
    };
    s.submit(sub, &caller(1000, Role::User), now).unwrap().id
}

fn reason(plan: &Plan, id: JobId) -> Option<Reason> {
    plan.entry(id).unwrap().reason
}

fn sets_of(s: &State, plan: &Plan, id: JobId) -> Vec<String> {
    let start = plan.starts.iter().find(|st| st.job == id).unwrap();
    let mut sets: Vec<String> = start
        .nodes
        .iter()
        .map(|&n| s.node_sets()[s.nodes()[n].set].name.clone())
        .collect();
    sets.dedup();
    sets
}

/// `day` runs in DAY only; `night` has priority 1, but 20 at NIGHT.
fn day_and_night(day_end: PeriodEnd) -> State {
    let mut day = Queue::open("day");
    day.periods = vec!["DAY".into()];
    day.priority = 10;
    day.period_end = day_end;
    let mut night = Queue::open("night");
    night.priority = 1;
    night.period_priority.insert("NIGHT".into(), 20);
    machine(vec![day, night], Vec::new())
}

#[test]
fn a_queue_starts_jobs_only_in_its_periods() {
    let mut s = day_and_night(PeriodEnd::Continue);
    let id = submit(&mut s, "day", 1, "1:00:00", at(9, 0));
    let plan = Scheduler.pass(&s, at(9, 59));
    assert_eq!(reason(&plan, id), Some(Reason::OutsidePeriod));
    assert!(plan.starts.is_empty());
    let plan = Scheduler.pass(&s, at(10, 0));
    assert_eq!(reason(&plan, id), None, "DAY began at 10:00");
    assert_eq!(plan.starts.len(), 1);
}

#[test]
fn a_queues_priority_follows_the_period() {
    let mut s = day_and_night(PeriodEnd::Continue);
    // Six nodes: one job of six from each queue; only one can start.
    let night_job = submit(&mut s, "night", 6, "1:00:00", at(9, 0));
    let day_job = submit(&mut s, "day", 6, "1:00:00", at(9, 0));
    let plan = Scheduler.pass(&s, at(12, 0));
    assert_eq!(reason(&plan, day_job), None, "day (10) before night (1)");
    assert!(reason(&plan, night_job).is_some());
    let mut day = s.config().clone();
    day.queues.get_mut("day").unwrap().periods.clear();
    s.set_config(day);
    let plan = Scheduler.pass(&s, at(19, 0));
    assert_eq!(
        reason(&plan, night_job),
        None,
        "at NIGHT the night queue has priority 20"
    );
    assert!(reason(&plan, day_job).is_some());
}

#[test]
fn a_job_that_would_outlast_its_period_waits_and_a_shorter_one_starts() {
    let mut s = day_and_night(PeriodEnd::Kill);
    let long = submit(&mut s, "day", 2, "2:00:00", at(16, 0));
    let short = submit(&mut s, "day", 2, "0:30:00", at(16, 0));
    let plan = Scheduler.pass(&s, at(17, 0));
    assert_eq!(reason(&plan, long), Some(Reason::PeriodEnd));
    assert_eq!(
        plan.entry(long).unwrap().expected_start,
        None,
        "no window of DAY is left for it today"
    );
    assert_eq!(reason(&plan, short), None, "it ends at 17:30, before 18:00");
    let job = s.job(long).unwrap().clone();
    let crossed = Scheduler.closedown_crossed(&s, &job, at(17, 0)).unwrap();
    assert_eq!(crossed.reason, Reason::PeriodEnd);
    assert_eq!(
        (crossed.start, crossed.name.as_str()),
        (at(18, 0), "the end of period \"DAY\"")
    );

    // The same jobs in a queue whose jobs run on past its period.
    let mut s = day_and_night(PeriodEnd::Continue);
    let long = submit(&mut s, "day", 2, "2:00:00", at(16, 0));
    let plan = Scheduler.pass(&s, at(17, 0));
    assert_eq!(reason(&plan, long), None);
}

#[test]
fn the_cut_of_a_queue_is_the_end_of_its_last_period_on() {
    let mut s = day_and_night(PeriodEnd::Requeue);
    let mut config = s.config().clone();
    // DAY then NIGHT, night after day: the queue runs through the week
    // and closes when Friday's NIGHT ends, on Saturday at 10:00.
    config.queues.get_mut("day").unwrap().periods = vec!["DAY".into(), "NIGHT".into()];
    s.set_config(config);
    let day = s.config().queue("day").unwrap().clone();
    let w = window(&s, &day, at(17, 0));
    let cut = w.cuts[0].clone().unwrap();
    assert_eq!(
        cut.at,
        chrono::Utc
            .with_ymd_and_hms(2026, 11, 28, 10, 0, 0)
            .unwrap()
    );
    assert_eq!(cut.what, "the end of period \"NIGHT\"");
}

/// SDSC: `pool` holds s1, s2 and s3 out of prime time and only s1, s2 in
/// it, when s3 serves the `short` queue alone.
fn sdsc(pool_end: PeriodEnd) -> State {
    let mut pool = NodeGroup::new("pool");
    pool.set_sets(None, vec!["s1".into(), "s2".into(), "s3".into()]);
    pool.set_sets(Some("prime"), vec!["s1".into(), "s2".into()]);
    let mut short = NodeGroup::new("short");
    short.set_sets(Some("prime"), vec!["s3".into()]);
    let mut long = Queue::open("long");
    long.node_group = Some("pool".into());
    long.period_end = pool_end;
    let mut q_short = Queue::open("short");
    q_short.node_group = Some("short".into());
    machine(vec![long, q_short], vec![pool, short])
}

#[test]
fn node_set_membership_switches_at_the_prime_time_boundary() {
    let mut s = sdsc(PeriodEnd::Continue);
    let wide = submit(&mut s, "long", 6, "1:00:00", at(15, 0));
    let plan = Scheduler.pass(&s, at(16, 59));
    assert_eq!(
        reason(&plan, wide),
        Some(Reason::NodesDown),
        "in prime time the pool has four nodes"
    );
    let plan = Scheduler.pass(&s, at(17, 0));
    assert_eq!(reason(&plan, wide), None, "at 17:00 s3 is back in the pool");
    assert_eq!(sets_of(&s, &plan, wide), ["s1", "s2", "s3"]);

    let mut s = sdsc(PeriodEnd::Continue);
    let short = submit(&mut s, "short", 2, "0:30:00", at(16, 0));
    assert_eq!(reason(&Scheduler.pass(&s, at(16, 0)), short), None);
    let plan = Scheduler.pass(&s, at(17, 0));
    assert_eq!(
        reason(&plan, short),
        Some(Reason::NodesDown),
        "out of prime time the short queue has no set"
    );
}

#[test]
fn a_long_job_does_not_get_the_set_that_leaves_its_group_before_it_ends() {
    let mut s = sdsc(PeriodEnd::Requeue);
    // 07:00: prime time (and s3's departure from the pool) is two hours off.
    let first = submit(&mut s, "long", 4, "1:00:00", at(6, 0));
    let long = submit(&mut s, "long", 2, "4:00:00", at(6, 0));
    let short = submit(&mut s, "long", 2, "1:00:00", at(6, 0));
    let plan = Scheduler.pass(&s, at(7, 0));
    assert_eq!(sets_of(&s, &plan, first), ["s1", "s2"]);
    assert_eq!(reason(&plan, long), Some(Reason::PeriodEnd));
    let entry = plan.entry(long).unwrap();
    assert_eq!(entry.status, Status::Blocked);
    assert_eq!(
        entry.expected_start,
        Some(at(8, 0)),
        "reserved on s1 or s2, which stay in the pool"
    );
    assert_eq!(
        sets_of(&s, &plan, short),
        ["s3"],
        "ends at 08:00, before prime"
    );

    // A job running on s3 at 07:00 is cut when prime time begins.
    let start = plan.starts.iter().find(|st| st.job == short).unwrap();
    s.start(short, &start.nodes, at(7, 0)).unwrap();
    let cut = job_cut(&s, s.job(short).unwrap(), at(7, 0)).unwrap();
    assert_eq!(cut.at, at(9, 0));
    assert_eq!(
        cut.what,
        "the start of period \"prime\" (node set \"s3\" leaves node group \"pool\")"
    );

    // Where jobs run on, the long job takes s3.
    let mut s = sdsc(PeriodEnd::Continue);
    submit(&mut s, "long", 4, "1:00:00", at(6, 0));
    let long = submit(&mut s, "long", 2, "4:00:00", at(6, 0));
    let plan = Scheduler.pass(&s, at(7, 0));
    assert_eq!(sets_of(&s, &plan, long), ["s3"]);
    assert!(job_cut(&s, s.job(long).unwrap(), at(7, 0)).is_none());
}

#[test]
fn a_job_stopped_at_its_period_end_is_requeued_or_finished() {
    let exit = crate::job::JobExit {
        code: None,
        signal: Some(15),
        cause: crate::job::ExitCause::Deleted,
        message: String::new(),
        cput: None,
        max_rss: None,
        vmem: None,
    };
    for requeue in [true, false] {
        let mut s = day_and_night(PeriodEnd::Requeue);
        let id = submit(&mut s, "day", 2, "1:00:00", at(11, 0));
        let plan = Scheduler.pass(&s, at(11, 0));
        s.start(id, &plan.starts[0].nodes, at(11, 0)).unwrap();
        let what = "the end of period \"DAY\"";
        let (host, job) = s.stop_for_period(id, what, requeue, at(18, 0)).unwrap();
        assert_eq!(host, "h");
        assert_eq!(job.state, crate::job::JobState::Exiting);
        let (how, job) = s.finish(id, exit.clone(), at(18, 1)).unwrap();
        if requeue {
            assert_eq!(how, crate::state::Finished::Requeued);
            assert_eq!(job.state, crate::job::JobState::Queued);
            assert_eq!(
                job.comment,
                "requeued at the end of period \"DAY\"; it runs again when its queue can run it"
            );
            assert!(job.exec_nodes.is_empty() && job.period_stop.is_none());
            let plan = Scheduler.pass(&s, at(18, 1));
            assert_eq!(reason(&plan, id), Some(Reason::OutsidePeriod));
        } else {
            assert_eq!(how, crate::state::Finished::Finished);
            assert_eq!(job.comment, "killed at the end of period \"DAY\"");
        }
        assert!(
            s.nodes().iter().all(|n| n.jobs.is_empty()),
            "its nodes are free"
        );
        s.check_invariants().unwrap();
    }
    let mut s = day_and_night(PeriodEnd::Kill);
    let id = submit(&mut s, "day", 1, "1:00:00", at(11, 0));
    assert!(
        s.stop_for_period(id, "DAY", false, at(12, 0)).is_err(),
        "only a running job"
    );
}

#[test]
fn under_easy_a_job_its_period_leaves_no_window_for_does_not_take_the_reservation() {
    let mut s = day_and_night(PeriodEnd::Kill);
    // Every node is busy: four until 17:20, two until 17:40.
    for (nodes, wall) in [(4, "0:30:00"), (2, "0:50:00")] {
        let id = submit(&mut s, "day", nodes, wall, at(16, 50));
        let plan = Scheduler.pass(&s, at(16, 50));
        s.start(id, &plan.starts[0].nodes, at(16, 50)).unwrap();
    }
    let head = submit(&mut s, "day", 2, "2:00:00", at(17, 0));
    let next = submit(&mut s, "day", 2, "0:30:00", at(17, 0));
    let plan = Scheduler.pass(&s, at(17, 0));
    let e = plan.entry(head).unwrap();
    assert_eq!(
        (e.status, e.reason, e.expected_start),
        (Status::Waiting, Some(Reason::PeriodEnd), None),
        "no two hours are left of DAY"
    );
    let e = plan.entry(next).unwrap();
    assert_eq!(
        (e.status, e.expected_start),
        (Status::Blocked, Some(at(17, 20))),
        "the next job gets the reservation, ending 17:50, before DAY does"
    );
}

#[test]
fn a_job_requeued_at_its_period_end_is_charged_for_the_time_it_ran() {
    let mut s = day_and_night(PeriodEnd::Requeue);
    let mut config = s.config().clone();
    config
        .accounts
        .insert("c1".into(), crate::account::Account::new("c1"));
    s.set_config(config);
    let sub = Submission {
        script_name: "job.sh".into(),
        workdir: "/tmp".into(),
        queue: Some("day".into()),
        account: Some("c1".into()),
        resources: vec![
            ("nodes".into(), "2".into()),
            ("walltime".into(), "8:00:00".into()),
        ],
        ..Submission::default()
    };
    let id = s
        .submit(sub, &caller(1000, Role::User), at(10, 0))
        .unwrap()
        .id;
    s.start(id, &[0, 1], at(10, 0)).unwrap();
    s.stop_for_period(id, "the end of period \"DAY\"", true, at(18, 0))
        .unwrap();
    let exit = crate::job::JobExit {
        code: None,
        signal: Some(15),
        cause: crate::job::ExitCause::Deleted,
        message: String::new(),
        cput: None,
        max_rss: None,
        vmem: None,
    };
    s.finish(id, exit, at(18, 0)).unwrap();
    assert_eq!(s.accounting().usage().used("c1"), 16.0, "2 nodes × 8 hours");
    assert_eq!(s.job(id).unwrap().state, crate::job::JobState::Queued);
}

#[test]
fn spwhen_says_a_job_outside_its_period_starts_when_the_next_begins() {
    let mut s = day_and_night(PeriodEnd::Kill);
    let id = submit(&mut s, "day", 2, "1:00:00", at(7, 0));
    let job = s.job(id).unwrap().clone();
    let when = Scheduler.when(&s, &job, at(7, 0));
    assert_eq!(
        (when.start, when.reason),
        (Some(at(10, 0)), Reason::OutsidePeriod)
    );
}
