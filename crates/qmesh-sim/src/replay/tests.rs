//! Schedules worked out by hand: EASY, FCFS, the ANL example, jobs cut at
//! their requested time, spwhen's predictions.

use super::*;
use crate::swf;

/// An SWF line: number, submit, run, procs, requested time.
fn line(n: u64, submit: i64, run: i64, procs: i64, req: i64) -> String {
    format!("{n} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 1 1 -1 1 -1 -1 -1\n")
}

fn starts(text: &str, policy: Policy) -> Vec<(u64, i64, i64)> {
    let trace = swf::read(text.as_bytes(), "t.swf").unwrap();
    let options = Options {
        policy,
        ..Options::default()
    };
    replay(&trace, &options)
        .unwrap()
        .records
        .iter()
        .map(|r| (r.number, r.start, r.end))
        .collect()
}

/// Four nodes. J2 needs all four and waits for J1; J3 fits in the two
/// free nodes and ends before J1 does; J4 would not.
fn easy_example() -> String {
    let mut t = String::from("; MaxProcs: 4\n");
    t += &line(1, 0, 100, 2, 100);
    t += &line(2, 1, 50, 4, 50);
    t += &line(3, 2, 50, 2, 50);
    t += &line(4, 3, 200, 2, 200);
    t
}

#[test]
fn fcfs_lets_nothing_overtake() {
    assert_eq!(
        starts(&easy_example(), Policy::Fcfs),
        [(1, 0, 100), (2, 100, 150), (3, 150, 200), (4, 150, 350)]
    );
}

#[test]
fn easy_and_conservative_backfill_what_delays_no_one() {
    for policy in [Policy::Easy, Policy::Conservative] {
        assert_eq!(
            starts(&easy_example(), policy),
            [(1, 0, 100), (2, 100, 150), (3, 2, 52), (4, 150, 350)],
            "{policy:?}"
        );
    }
}

#[test]
fn without_any_history_easy_plus_plus_is_easy() {
    // Every job here is its user's first, or comes before the first ends:
    // all are planned with their wall times.
    assert_eq!(
        starts(&easy_example(), Policy::EasyPredicted),
        starts(&easy_example(), Policy::Easy)
    );
}

/// The ANL paper's queue (Lifka, "The ANL/IBM SP scheduling system"):
/// 128 nodes, users A to H all waiting at once, minutes as given.
fn anl(f_nodes: i64) -> String {
    let mut t = String::from("; MaxNodes: 128\n");
    let jobs = [
        (32, 120),
        (64, 60),
        (24, 180),
        (32, 120),
        (16, 120),
        (f_nodes, 480),
        (4, 30),
        (32, 120),
    ];
    for (i, (nodes, minutes)) in jobs.into_iter().enumerate() {
        t += &line(i as u64 + 1, 0, minutes * 60, nodes, minutes * 60);
    }
    t
}

/// Start minutes of users A to H.
fn start_minutes(text: &str, policy: Policy) -> Vec<i64> {
    starts(text, policy)
        .iter()
        .map(|&(_, s, _)| s / 60)
        .collect()
}

#[test]
fn the_anl_example_by_hand() {
    // Step 4: D is blocked until B ends at 60; G (4 nodes, 30 min) fits
    // the 8 idle nodes and backfills; E and F cannot.
    assert_eq!(
        start_minutes(&anl(10), Policy::Easy),
        [0, 0, 0, 60, 60, 60, 0, 120]
    );
    // With F at 8 nodes, F backfills for its 480 minutes: when B ends,
    // 64 nodes come free, more than D needs. G then waits for B too.
    assert_eq!(
        start_minutes(&anl(8), Policy::Easy),
        [0, 0, 0, 60, 60, 0, 60, 120]
    );
    // First come, first served: G waits behind D.
    assert_eq!(
        start_minutes(&anl(10), Policy::Fcfs),
        [0, 0, 0, 60, 60, 60, 60, 120]
    );
}

#[test]
fn a_job_killed_at_its_requested_time_ends_there() {
    let mut t = String::from("; MaxNodes: 2\n");
    t += &line(1, 0, 300, 2, 100);
    t += &line(2, 0, 10, 2, 10);
    assert_eq!(
        starts(&t, Policy::Easy),
        [(1, 0, 100), (2, 100, 110)],
        "run time cut at the requested 100 s"
    );
}

#[test]
fn jobs_that_cannot_be_replayed_are_counted_with_the_reason() {
    let mut t = String::from("; MaxProcs: 4\n");
    t += &line(1, 0, 10, 2, 10);
    t += &line(2, 0, 10, 0, 10);
    t += &line(3, 0, 10, 8, 10);
    t += &line(4, 0, -1, 2, 10);
    let trace = swf::read(t.as_bytes(), "t.swf").unwrap();
    let r = replay(&trace, &Options::default()).unwrap();
    assert_eq!(r.records.len(), 1);
    let why: Vec<(u64, &str)> = r
        .skipped
        .iter()
        .map(|s| (s.number, s.why.as_str()))
        .collect();
    assert_eq!(
        why,
        [
            (2, "no processor count (fields 5 and 8)"),
            (3, "larger than the machine"),
            (4, "no run time (field 4)")
        ]
    );
    let none = swf::read(line(1, 0, 1, 1, 1).as_bytes(), "t.swf").unwrap();
    assert!(matches!(
        replay(&none, &Options::default()),
        Err(ReplayError::Machine(MachineError::NoSize))
    ));
}

#[test]
fn scaling_sizes_and_times() {
    let mut t = String::from("; MaxProcs: 16\n");
    t += &line(1, 0, 100, 3, 200);
    let trace = swf::read(t.as_bytes(), "t.swf").unwrap();
    let options = Options {
        size_scale: 2.0,
        round_pow2: true,
        load_scale: 1.5,
        ..Options::default()
    };
    let r = replay(&trace, &options).unwrap();
    assert_eq!(r.records[0].nodes, 8, "3 × 2 = 6, rounded up to 8");
    assert_eq!(r.records[0].end, 150, "100 s × 1.5");
}

mod prediction {
    use super::*;
    use crate::swf;

    fn predicted(text: &str) -> Vec<(u64, i64, Option<i64>)> {
        let trace = swf::read(text.as_bytes(), "t.swf").unwrap();
        let options = Options {
            policy: Policy::Conservative,
            predict: true,
            ..Options::default()
        };
        replay(&trace, &options)
            .unwrap()
            .records
            .iter()
            .map(|r| (r.number, r.start, r.predicted))
            .collect()
    }

    #[test]
    fn exact_requests_give_exact_predictions_and_early_ends_early_starts() {
        let line = |n, submit, run, procs, req| {
            format!("{n} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 1 1 -1 1 -1 -1 -1\n")
        };
        let mut t = String::from("; MaxProcs: 4\n");
        t += &line(1, 0, 100, 2, 100);
        t += &line(2, 1, 50, 4, 50);
        t += &line(3, 2, 50, 2, 50);
        assert_eq!(
            predicted(&t),
            [(1, 0, Some(0)), (2, 100, Some(100)), (3, 2, Some(2))]
        );
        // J1 asked for 100 s and ends at 40: J2 was told 100, starts at 40.
        let mut t = String::from("; MaxProcs: 4\n");
        t += &line(1, 0, 40, 2, 100);
        t += &line(2, 1, 50, 4, 50);
        assert_eq!(predicted(&t), [(1, 0, Some(0)), (2, 40, Some(100))]);
    }

    #[test]
    fn predicted_run_times_come_from_the_users_last_two_jobs() {
        let trace = |lines: &[(u64, i64, i64, i64, i64, u32)]| {
            let mut t = String::from("; MaxProcs: 4\n");
            for &(n, submit, run, procs, req, user) in lines {
                t += &format!(
                    "{n} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 {user} 1 -1 1 -1 -1 -1\n"
                );
            }
            swf::read(t.as_bytes(), "t.swf").unwrap()
        };
        // User 1's two jobs ask 100 s and run 40; so does its third, which
        // holds every node from 50 s; user 2's job waits for it.
        let t = trace(&[
            (1, 0, 40, 2, 100, 1),
            (2, 0, 40, 2, 100, 1),
            (3, 50, 40, 4, 100, 1),
            (4, 51, 10, 4, 100, 2),
        ]);
        let options = Options {
            predict: true,
            ..Options::default()
        };
        let r = replay(&t, &options).unwrap();
        let last = &r.records[3];
        assert_eq!(last.start, 90);
        assert_eq!(last.predicted, Some(150), "as job 3's wall time ends");
        assert_eq!(last.predicted_from_runs, Some(90), "as its last two ran");
        let m = crate::metrics::measure(&r.records, r.nodes);
        let (wall, runs) = (m.predictions.unwrap(), m.predictions_from_runs.unwrap());
        assert_eq!(wall.waited_median_abs_error, 60.0);
        assert_eq!(runs.waited_median_abs_error, 0.0);
    }
}

// Found by the swf fuzz target (fuzz/): a submit time or a requested
// time too large for an i64 (read as i64::MAX) overflowed the virtual
// clock and the users' node-second counts (a panic in debug builds).
#[test]
fn fuzz_times_past_a_century_are_skipped_not_overflowed() {
    let text = "\
   49   61244444444444444444444423    720     17    1     -1    -1    1    120    -1  0  23  23  -1 -1 -1 -1  1
   50   612422    720     17    1     -1    -1    1    121111111111111111111111110    -1  0  23  23  -1 -1 -1 -21 -1
   51   612422    720     17    1     -1    -1    1    120    -1  0  23  23  -1 -1 -1 -21 -1
";
    let trace = swf::read(text.as_bytes(), "t.swf").unwrap();
    let options = Options {
        machine: Machine::Single {
            topology: qmesh_core::node::Topology::Flat,
            nodes: Some(64),
        },
        ..Options::default()
    };
    let done = replay(&trace, &options).unwrap();
    let skipped: Vec<u64> = done.skipped.iter().map(|s| s.number).collect();
    assert_eq!(skipped, [49, 50]);
    assert!(
        done.skipped[0].why.contains("past 100 years"),
        "{:?}",
        done.skipped
    );
}
