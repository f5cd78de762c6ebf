use super::*;
use crate::calendar::{Holiday, HolidayDate, Period};

/// 2026-11-24 00:00 UTC, a Tuesday.
const TUESDAY: i64 = 1_795_478_400;
const HOUR: i64 = 3600;

fn line(id: &str, user: &str, queue: &str, nodes: u32, qtime: i64, start: i64, end: i64) -> String {
    format!(
        "11/24/2026 10:00:00;E;{id};user={user} group=g queue={queue} qtime={qtime} start={start} \
         exec_host=n1/0 Resource_List.nodect={nodes} end={end} Exit_status=0"
    )
}

fn ended(lines: &[String]) -> Vec<Ended> {
    lines.iter().filter_map(|l| Ended::from_line(l)).collect()
}

fn machine(nodes: u32) -> Context {
    Context {
        nodes: Some(nodes),
        ..Context::default()
    }
}

#[test]
fn jobs_are_grouped_with_the_seeds_measures() {
    let mut lines = vec![
        line("1.s", "alice", "batch", 2, 1000, 1000, 4600),
        line("2.s", "bob", "batch", 1, 1000, 2800, 6400),
        line("3.s", "alice", "long", 4, 1000, 1000, 2800),
    ];
    lines.push("11/24/2026 10:00:00;Q;4.s;user=carol queue=batch".to_string());
    lines.push("11/24/2026 10:00:00;E;5.s;user=dave queue=batch qtime=0 start=0 end=0".to_string());
    let jobs = ended(&lines);
    assert_eq!(
        jobs.len(),
        3,
        "a Q record and a job that never started are not jobs that ran"
    );
    let r = report(&jobs, By::Queue, &machine(4));
    assert_eq!(r.rows.len(), 2);
    let batch = &r.rows[0];
    assert_eq!(
        (batch.key.as_str(), batch.jobs, batch.users),
        ("batch", 2, 2)
    );
    assert_eq!(batch.node_hours, 3.0);
    assert_eq!(batch.share, 3.0 / 5.0);
    assert_eq!(batch.mean_wait, 900.0);
    assert_eq!(batch.median_wait, 900.0);
    assert_eq!(batch.mean_run, 3600.0);
    assert_eq!(batch.expansion, (1.0 + 1.5) / 2.0);
    assert_eq!(r.total.jobs, 3);
    assert_eq!(r.total.node_hours, 5.0);
    // 5 node-hours over 4 nodes for 1.5 hours.
    assert!((r.total.utilization.unwrap() - 5.0 / 6.0).abs() < 1e-9);
    // 9,000 seconds of runs over 5,400 measured.
    assert!((r.mean_running - 9000.0 / 5400.0).abs() < 1e-9);
    let by_user = report(&jobs, By::User, &Context::default());
    let keys: Vec<&str> = by_user.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["alice", "bob"]);
    assert_eq!(by_user.total.utilization, None);
    let by_size = report(&jobs, By::Size, &Context::default());
    let keys: Vec<&str> = by_size.rows.iter().map(|r| r.key.trim()).collect();
    assert_eq!(keys, ["1", "2", "3-4"]);
    let by_runtime = report(&jobs, By::Runtime, &Context::default());
    let keys: Vec<(&str, usize)> = by_runtime
        .rows
        .iter()
        .map(|r| (r.key.trim(), r.jobs))
        .collect();
    assert_eq!(keys, [("1", 3)], "every run is an hour or less");
    let by_day = report(&jobs, By::Day, &Context::default());
    assert_eq!(by_day.rows[0].key, "1970-01-01");
    assert!(
        By::parse("colour")
            .unwrap_err()
            .contains("queue, user, group")
    );
    assert_eq!(By::parse("project"), Ok(By::Account));
}

#[test]
fn node_hours_are_shared_out_between_prime_and_non_prime_time() {
    // Submitted Tuesday 15:00, run 16:00-18:00 on 2 of 4 nodes; prime time
    // is the default's, Mon-Fri 09:00-17:00 UTC.
    let jobs = ended(&[line(
        "1.s",
        "alice",
        "batch",
        2,
        TUESDAY + 15 * HOUR,
        TUESDAY + 16 * HOUR,
        TUESDAY + 18 * HOUR,
    )]);
    let r = report(&jobs, By::Period, &machine(4));
    let rows: Vec<(&str, usize, f64, f64)> = r
        .rows
        .iter()
        .map(|r| (r.key.as_str(), r.jobs, r.node_hours, r.utilization.unwrap()))
        .collect();
    // Measured 15:00-18:00: two hours of prime time, one of non-prime.
    assert_eq!(
        rows,
        [
            ("prime", 1, 2.0, 2.0 / 8.0),
            ("non_prime", 0, 2.0, 2.0 / 4.0)
        ]
    );

    // The same Tuesday a holiday, and a named evening period.
    let mut calendar = Calendar::default();
    calendar.holidays.push(Holiday {
        date: HolidayDate::On(chrono::NaiveDate::from_ymd_opt(2026, 11, 24).unwrap()),
        name: "closed".into(),
    });
    calendar.periods.insert(
        "EVENING".into(),
        Period::new(vec!["Mon-Sun 17:30-22:00".parse().unwrap()]),
    );
    let site = Context {
        nodes: Some(4),
        calendar,
        ..Context::default()
    };
    let r = report(&jobs, By::Period, &site);
    let rows: Vec<(&str, usize, f64)> = r
        .rows
        .iter()
        .map(|r| (r.key.as_str(), r.jobs, r.node_hours))
        .collect();
    assert_eq!(
        rows,
        [
            ("prime", 0, 0.0),
            ("non_prime", 1, 4.0),
            ("holiday", 1, 4.0),
            ("EVENING", 0, 1.0),
        ],
        "a holiday is not prime time; half an hour of the run was evening"
    );
    assert_eq!(r.rows[0].utilization, Some(0.0), "no prime time, none used");
}

#[test]
fn a_run_over_midnight_counts_on_both_days_and_months() {
    // Submitted Nov 30 22:00, run 23:00 to Dec 1 01:00 on one node of two.
    let nov30 = TUESDAY + 6 * 24 * HOUR;
    let jobs = ended(&[line(
        "1.s",
        "alice",
        "batch",
        1,
        nov30 + 22 * HOUR,
        nov30 + 23 * HOUR,
        nov30 + 25 * HOUR,
    )]);
    let by_day = report(&jobs, By::Day, &machine(2));
    let rows: Vec<(&str, usize, f64, f64)> = by_day
        .rows
        .iter()
        .map(|r| (r.key.as_str(), r.jobs, r.node_hours, r.utilization.unwrap()))
        .collect();
    assert_eq!(
        rows,
        [("2026-11-30", 1, 1.0, 0.25), ("2026-12-01", 0, 1.0, 0.5)]
    );
    let by_month = report(&jobs, By::Month, &machine(2));
    let keys: Vec<(&str, f64)> = by_month
        .rows
        .iter()
        .map(|r| (r.key.as_str(), r.node_hours))
        .collect();
    assert_eq!(keys, [("2026-11", 1.0), ("2026-12", 1.0)]);
    // In Los Angeles both hours fall on Nov 30 (15:00 and 16:00).
    let mut la = machine(2);
    la.calendar.time_zone = "America/Los_Angeles".into();
    let by_day = report(&jobs, By::Day, &la);
    assert_eq!(by_day.rows.len(), 1);
    assert_eq!(by_day.rows[0].key, "2026-11-30");
    assert_eq!(by_day.rows[0].node_hours, 2.0);
}

#[test]
fn node_sets_count_the_nodes_a_job_had_in_each() {
    let record = |id: &str, hosts: &str, nodes: u32| {
        format!(
            "11/24/2026 10:00:00;E;{id};user=u queue=q qtime=0 start=3600 \
             exec_host={hosts} Resource_List.nodect={nodes} end=7200 Exit_status=0"
        )
    };
    let jobs = ended(&[
        record("1.s", "a0/0*1+a1/0*1+b0/0*1", 3),
        record("2.s", "b1/0", 1),
        record("3.s", "x9/0", 1),
    ]);
    let site = Context {
        nodes: Some(5),
        sets: vec![
            ("a".into(), vec!["a0".into(), "a1".into()]),
            ("b".into(), vec!["b0".into(), "b1".into()]),
        ],
        ..Context::default()
    };
    let r = report(&jobs, By::NodeSet, &site);
    let rows: Vec<(&str, usize, f64, Option<f64>)> = r
        .rows
        .iter()
        .map(|r| (r.key.as_str(), r.jobs, r.node_hours, r.utilization))
        .collect();
    // Measured two hours: set a had 2 of its 4 node-hours used, b 2 of 4.
    assert_eq!(
        rows,
        [
            ("(other)", 1, 1.0, None),
            ("a", 1, 2.0, Some(0.5)),
            ("b", 2, 2.0, Some(0.5)),
        ]
    );
    let jobs_by_set: Vec<(&str, usize)> = r
        .total
        .jobs_by_set
        .iter()
        .map(|(s, n)| (s.as_str(), *n))
        .collect();
    assert_eq!(jobs_by_set, [("(other)", 1), ("a", 1), ("b", 1)]);
}

#[test]
fn the_days_asked_for_are_the_time_measured() {
    // Run Monday 22:00 to Tuesday 02:00 on 2 of 4 nodes; the report asks
    // for Tuesday alone: 4 of its 96 node-hours.
    let jobs = ended(&[line(
        "1.s",
        "alice",
        "batch",
        2,
        TUESDAY - 3 * HOUR,
        TUESDAY - 2 * HOUR,
        TUESDAY + 2 * HOUR,
    )]);
    let tuesday = Context {
        nodes: Some(4),
        window: Some((TUESDAY, TUESDAY + 24 * HOUR)),
        ..Context::default()
    };
    let r = report(&jobs, By::Queue, &tuesday);
    assert_eq!(r.total.node_hours, 4.0);
    assert!((r.total.utilization.unwrap() - 4.0 / 96.0).abs() < 1e-9);
    assert_eq!(r.from.unwrap().timestamp(), TUESDAY);
    let by_day = report(&jobs, By::Day, &tuesday);
    let days: Vec<(&str, f64)> = by_day
        .rows
        .iter()
        .map(|r| (r.key.as_str(), r.node_hours))
        .collect();
    assert_eq!(days, [("2026-11-24", 4.0)], "Monday is not measured");
}
