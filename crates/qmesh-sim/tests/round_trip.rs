//! The accounting round trip: a trace replayed, the replay's accounting
//! log written (the `Q`, `S` and `E` records of the daemon's own
//! formatting, `qmesh_core::joblog`, the records of a day in that day's
//! file), `--to-swf` turning the log back into SWF, and the replay
//! of that SWF giving the same schedule, job for job.

use std::fmt::Write as _;

use qmesh_sim::accounting;
use qmesh_sim::machine::{Alloc, Machine};
use qmesh_sim::replay::{Options, replay};
use qmesh_sim::{swf, to_swf};

/// A busy synthetic day and a half on 128 nodes: 400 jobs, one a minute
/// or so, of 1 to 64 nodes, running 1 minute to 2 hours, asking up to 3
/// times their run (a small LCG: the same trace every run).
fn trace_text() -> String {
    let mut seed: u64 = 0x5eed;
    let mut next = |bound: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % bound
    };
    let mut text = String::from(
        "; Version: 2.2\n; MaxNodes: 128\n; MaxProcs: 128\n; UnixStartTime: 1795000000\n; Queue: 1 batch\n",
    );
    let mut submit = 0;
    for n in 1..=400 {
        submit += 1 + next(120) as i64;
        let nodes = 1 + next(64);
        let run = 60 + next(7140) as i64;
        let asked = run * (1 + next(3) as i64);
        let user = 1 + next(7);
        let _ = writeln!(
            text,
            "{n} {submit} -1 {run} {nodes} -1 -1 {nodes} {asked} -1 1 {user} 1 -1 1 -1 -1 -1"
        );
    }
    text
}

#[test]
fn a_replay_written_as_accounting_and_read_back_replays_the_same() {
    let options = Options {
        machine: Machine::Single {
            topology: Alloc::Flat.topology(&[]).unwrap(),
            nodes: Some(128),
        },
        accounting: true,
        ..Options::default()
    };
    let first = swf::read(trace_text().as_bytes(), "synthetic").unwrap();
    let once = replay(&first, &options).unwrap();
    assert_eq!(once.records.len(), 400, "{:?}", once.skipped);
    assert!(
        once.records.iter().any(|r| r.wait() > 0),
        "the trace must make jobs wait, or the schedule proves nothing"
    );

    // The replay's own accounting log: what the daemon would have
    // written, by its formatting, in files by day.
    assert_eq!(
        once.accounting.len(),
        3 * 400,
        "a Q, an S and an E record for each job"
    );
    let dir = tempfile::tempdir().unwrap();
    let files = accounting::write_log(dir.path(), &once.accounting, once.zone).unwrap();
    assert!(files.len() >= 2, "the log spans days: {files:?}");
    let first_e = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .flat_map(|f| {
            std::fs::read_to_string(f.path())
                .unwrap()
                .lines()
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .find(|l| l.contains(";E;"))
        .unwrap();
    for key in [
        "user=u",
        "queue=batch",
        "start=",
        "exec_host=n",
        "Resource_List.walltime=",
        "end=",
        "Exit_status=0",
    ] {
        assert!(first_e.contains(key), "{key} in {first_e}");
    }

    let back = to_swf::from_accounting(dir.path(), None, None).unwrap();
    let second = swf::read(back.as_bytes(), "accounting").unwrap();
    let twice = replay(&second, &options).unwrap();
    assert_eq!(twice.records.len(), 400, "{:?}", twice.skipped);
    // Job numbers follow submission order on both sides.
    let schedule = |records: &[qmesh_sim::replay::JobRecord]| -> Vec<(i64, i64, i64, u32)> {
        let mut s: Vec<_> = records
            .iter()
            .map(|r| (r.submit, r.wait(), r.run(), r.nodes))
            .collect();
        s.sort();
        s
    };
    let (a, b) = (schedule(&once.records), schedule(&twice.records));
    // The log's times are relative to its first submission.
    let shift = a[0].0 - b[0].0;
    let b: Vec<_> = b
        .into_iter()
        .map(|(s, w, r, n)| (s + shift, w, r, n))
        .collect();
    assert_eq!(a, b, "the same schedule, job for job");
}
