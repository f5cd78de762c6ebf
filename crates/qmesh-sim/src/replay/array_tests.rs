//! `--arrays`: a user's runs of like jobs arrive as one array; each
//! sub-job runs its own job's time, exactly once, on nodes nobody else
//! holds; waits count from the array's submission.

use super::*;
use crate::swf;

/// An SWF line: number, submit, run, procs, requested time, user,
/// executable.
fn line(n: u64, submit: i64, run: i64, procs: i64, req: i64, user: i64, exe: i64) -> String {
    format!("{n} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 {user} 1 {exe} 1 -1 -1 -1\n")
}

fn arrays() -> Options {
    Options {
        arrays: true,
        ..Options::default()
    }
}

fn run(text: &str, options: &Options) -> Replay {
    let trace = swf::read(text.as_bytes(), "t.swf").unwrap();
    replay(&trace, options).unwrap()
}

/// (job, submit, start, end) of each record.
fn schedule(r: &Replay) -> Vec<(u64, i64, i64, i64)> {
    r.records
        .iter()
        .map(|r| (r.number, r.submit, r.start, r.end))
        .collect()
}

/// Four nodes; user 1's three whole-machine runs of program 5 are one
/// array submitted at 0, so job 2 starts as job 1 ends (50), not at its
/// own submission (100), and job 4 before user 2's job 3, alone, which
/// arrived before it in the trace.
#[test]
fn a_run_of_like_jobs_arrives_at_once_and_each_runs_its_own_time() {
    let text = format!(
        "; MaxProcs: 4\n{}{}{}{}",
        line(1, 0, 50, 4, 100, 1, 5),
        line(2, 100, 70, 4, 100, 1, 5),
        line(3, 110, 10, 1, 100, 2, 5),
        line(4, 200, 30, 4, 100, 1, 5),
    );
    let r = run(&text, &arrays());
    assert_eq!(
        r.arrays,
        Some(Formed {
            arrays: 1,
            largest: 3,
            jobs: 3
        })
    );
    assert_eq!(
        schedule(&r),
        vec![
            (1, 0, 0, 50),
            (2, 0, 50, 120),
            (3, 110, 150, 160),
            (4, 0, 120, 150),
        ],
        "the array, submitted first, goes before job 3"
    );
    let alone = run(&text, &Options::default());
    assert_eq!(alone.arrays, None);
    assert_eq!(
        schedule(&alone),
        vec![
            (1, 0, 0, 50),
            (2, 100, 100, 170),
            (3, 110, 170, 180),
            (4, 200, 200, 230),
        ]
    );
}

/// A deterministic jumble of users, programs and sizes on eight nodes.
fn jumble() -> String {
    let mut text = String::from("; MaxProcs: 8\n");
    let mut x: u64 = 12345;
    let mut next = |m: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    let mut submit = 0;
    for n in 1..=300 {
        submit += next(40) as i64;
        let user = next(4) as i64;
        let exe = if next(10) == 0 { -1 } else { next(2) as i64 };
        let procs = [1, 2, 4, 8][next(4) as usize];
        let req = 100 * (1 + next(3) as i64);
        // Some run past their request: cut there, as alone.
        let run = next(req as u64 + 50) as i64;
        text.push_str(&line(n, submit, run, procs, req, user, exe));
    }
    text
}

/// Every trace job runs once, its own time (cut at its own request), not
/// before its array's submission, and the machine is never overcommitted:
/// at no instant do running jobs hold more than its eight nodes.
#[test]
fn every_job_runs_once_for_its_own_time_and_no_node_twice() {
    let text = jumble();
    let trace = swf::read(text.as_bytes(), "t.swf").unwrap();
    let r = replay(&trace, &arrays()).unwrap();
    let formed = r.arrays.unwrap();
    assert!(formed.arrays > 10 && formed.largest > 2, "{formed:?}");
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);
    let numbers: Vec<u64> = r.records.iter().map(|r| r.number).collect();
    assert_eq!(numbers, (1..=300).collect::<Vec<_>>(), "each job once");
    for (rec, job) in r.records.iter().zip(&trace.jobs) {
        assert_eq!(
            rec.run(),
            job.run.min(job.requested_time),
            "job {}",
            rec.number
        );
        assert!(
            rec.submit <= job.submit,
            "job {}: an array arrives early",
            rec.number
        );
        assert!(rec.start >= rec.submit, "job {}", rec.number);
        assert_eq!(rec.nodes as i64, job.procs());
    }
    // Ends before starts at one instant: a node freed is taken again.
    let mut events: Vec<(i64, i64)> = r
        .records
        .iter()
        .flat_map(|r| [(r.start, i64::from(r.nodes)), (r.end, -i64::from(r.nodes))])
        .collect();
    events.sort();
    let mut held = 0;
    for (at, change) in events {
        held += change;
        assert!(held <= 8, "{held} nodes held at {at}");
    }
    // The same jobs alone: same runs, each arriving at its own time.
    let alone = replay(&trace, &Options::default()).unwrap();
    let runs = |r: &Replay| r.records.iter().map(JobRecord::run).collect::<Vec<_>>();
    assert_eq!(runs(&alone), runs(&r));
}

/// The server's `max_array_size` cuts a longer run into several arrays.
#[test]
fn max_array_size_cuts_a_run() {
    let text: String = std::iter::once("; MaxProcs: 4\n".to_string())
        .chain((1..=5).map(|n| line(n, n as i64, 10, 4, 100, 1, 5)))
        .collect();
    let options = Options {
        qmgr: vec!["set server max_array_size = 2".into()],
        ..arrays()
    };
    let r = run(&text, &options);
    assert_eq!(
        r.arrays,
        Some(Formed {
            arrays: 2,
            largest: 2,
            jobs: 4
        })
    );
    let submits: Vec<i64> = r.records.iter().map(|r| r.submit).collect();
    assert_eq!(submits, vec![1, 1, 3, 3, 5]);
    let ends: Vec<i64> = r.records.iter().map(|r| r.end).collect();
    assert_eq!(ends, vec![11, 21, 31, 41, 51]);
}
