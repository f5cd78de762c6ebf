//! qmesh-sim as users run it: a trace file in, a schedule and its measures
//! out; a malformed trace named by file and line.

use std::process::Command;

fn sim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_qmesh-sim"))
}

/// Four nodes: J2 needs all four and waits for J1; J3 backfills.
const TRACE: &str = "; MaxProcs: 4
1 0 -1 100 2 -1 -1 2 100 -1 1 1 1 -1 1 -1 -1 -1
2 1 -1 50 4 -1 -1 4 50 -1 1 1 1 -1 1 -1 -1 -1
3 2 -1 50 2 -1 -1 2 50 -1 1 2 1 -1 2 -1 -1 -1
";

#[test]
fn jobs_out_gives_each_jobs_schedule_and_json_the_measures() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.swf");
    std::fs::write(&trace, TRACE).unwrap();
    let csv = dir.path().join("jobs.csv");
    let out = sim()
        .args([
            "--trace",
            trace.to_str().unwrap(),
            "--policy",
            "easy",
            "--json",
        ])
        .args(["--jobs-out", csv.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "no progress bar when stderr is piped"
    );
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "job,submit,start,end,nodes,queue\n1,0,0,100,2,1\n2,1,100,150,4,1\n3,2,2,52,2,2\n"
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["metrics"]["jobs"], 3);
    assert_eq!(doc["metrics"]["makespan"], 150);
    assert_eq!(doc["nodes"], 4);
}

#[test]
fn a_malformed_trace_is_named_by_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("bad.swf");
    std::fs::write(&trace, format!("{TRACE}4 5 -1 x 2\n")).unwrap();
    let out = sim()
        .args(["--trace", trace.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.swf, line 5: a job line has 18 fields, this one has 5"),
        "{err}"
    );
}

#[test]
fn a_torus_machine_takes_its_size_from_its_dims() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.swf");
    std::fs::write(&trace, TRACE).unwrap();
    let out = sim()
        .args([
            "--trace",
            trace.to_str().unwrap(),
            "--alloc",
            "nep",
            "--dims",
            "2x2x2",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("on 8 nodes (torus 2x2x2)"), "{text}");
    let out = sim()
        .args(["--trace", trace.to_str().unwrap(), "--alloc", "ep"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ep needs a torus: --dims 2x2x2x4x4x8"));
}

#[test]
fn a_sweep_writes_one_row_per_pair_and_load() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.swf");
    std::fs::write(&trace, TRACE).unwrap();
    let csv = dir.path().join("sweep.csv");
    let out = sim()
        .args(["--trace", trace.to_str().unwrap(), "--threads", "2"])
        .args([
            "--sweep",
            "load=0.5:1.5:0.5",
            "--pairs",
            "fcfs/flat,easy/flat",
        ])
        .args(["--sweep-out", csv.to_str().unwrap()])
        .args(["--plot", dir.path().join("fig").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "no progress bar when stderr is not a terminal"
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 7, "{text}");
    assert!(rows[0].starts_with("policy,alloc,load_scale,offered_load,utilization"));
    assert!(rows[1].starts_with("fcfs,flat,0.500,") && rows[6].starts_with("easy,flat,1.500,"));
    for name in ["fig-slowdown", "fig-utilization"] {
        let svg = std::fs::read_to_string(dir.path().join(format!("{name}.svg"))).unwrap();
        assert!(svg.contains("<svg") && svg.contains("easy/flat"), "{name}");
        let png = std::fs::read(dir.path().join(format!("{name}.png"))).unwrap();
        assert_eq!(&png[1..4], b"PNG", "{name}");
    }
    let out = sim()
        .args(["--trace", trace.to_str().unwrap(), "--sweep", "2:1:0.1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("START <= END"));
}

/// The seed's SDSC Paragon, as its qmeshd configuration file.
const PARAGON: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../etc/examples/sdsc-paragon.toml"
);

#[test]
fn a_site_configuration_gives_the_machine_queues_and_policy() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("par.swf");
    // Tuesday 2 January 1996, 10:00 in San Diego (prime time); the queues
    // by the names of the log's header.
    std::fs::write(
        &trace,
        "; UnixStartTime: 820605600\n; Queue: 2 q4s\n; Queue: 12 qf32m\n; Queue: 31 q320m\n\
         1 0 -1 600 4 -1 -1 4 -1 -1 1 1 1 -1 2 2 -1 -1\n\
         2 60 -1 3600 32 -1 -1 32 -1 -1 1 2 1 -1 12 2 -1 -1\n\
         3 120 -1 600 320 -1 -1 320 -1 -1 1 3 1 -1 31 2 -1 -1\n",
    )
    .unwrap();
    let csv = dir.path().join("jobs.csv");
    let out = sim()
        .args(["--trace", trace.to_str().unwrap(), "--config", PARAGON])
        .args(["--jobs-out", csv.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "job,submit,start,end,nodes,queue\n1,0,0,600,4,q4s\n2,60,60,3660,32,qf32m\n"
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["nodes"], 368, "the three node sets of the seed");
    assert_eq!(doc["policy"], "config");
    // 320 nodes: no queue of the seed's takes it, nor does standby.
    assert_eq!(doc["skipped_jobs"][0]["number"], 3);
    assert_eq!(doc["skipped_jobs"][0]["kind"], "refused by the queues");

    // A configuration with a mistake is named by file and key.
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[[queue]]\nname = \"q\"\nmax_nodes = \"many\"\n").unwrap();
    let out = sim()
        .args(["--trace", trace.to_str().unwrap(), "--config"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml") && err.contains("max_nodes"),
        "{err}"
    );
    // The node sets are the file's: no --alloc beside it.
    let out = sim()
        .args(["--trace", trace.to_str().unwrap(), "--config", PARAGON])
        .args(["--alloc", "nep"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "clap refuses the pair");
}

/// Four nodes. User 1 runs program 7 on two nodes three times (jobs 1, 3,
/// 5); user 2's jobs 2 and 4 run another program alone each time.
const RUNS: &str = "; MaxProcs: 4
1 0 -1 100 2 -1 -1 2 100 -1 1 1 1 7 1 -1 -1 -1
2 10 -1 100 2 -1 -1 2 100 -1 1 2 1 8 1 -1 -1 -1
3 20 -1 40 2 -1 -1 2 100 -1 1 1 1 7 1 -1 -1 -1
4 30 -1 100 4 -1 -1 4 100 -1 1 2 1 9 1 -1 -1 -1
5 300 -1 60 2 -1 -1 2 100 -1 1 1 1 7 1 -1 -1 -1
";

#[test]
fn arrays_submit_a_users_like_jobs_at_once_and_say_how_many() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("runs.swf");
    std::fs::write(&trace, RUNS).unwrap();
    let csv = dir.path().join("jobs.csv");
    let out = sim()
        .args(["--trace", trace.to_str().unwrap(), "--policy", "fcfs"])
        .args(["--arrays", "--json", "--jobs-out", csv.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Jobs 1, 3 and 5 are the array 0-2 submitted at 0: job 3 starts
    // beside job 1, job 5 as job 3 ends, each for its own time; job 2,
    // which came before both in the trace, waits for them.
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "job,submit,start,end,nodes,queue\n1,0,0,100,2,1\n2,10,100,200,2,1\n\
         3,0,0,40,2,1\n4,30,200,300,4,1\n5,0,40,100,2,1\n"
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["arrays"],
        serde_json::json!({"arrays": 1, "largest": 3, "jobs": 3})
    );
    assert_eq!(doc["metrics"]["jobs"], 5);

    let out = sim()
        .args(["--trace", trace.to_str().unwrap(), "--arrays"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  arrays           1 formed of 3 jobs, the largest of 3 sub-jobs\n"),
        "{text}"
    );
    // Without --arrays, nothing of the kind.
    let out = sim()
        .args(["--trace", trace.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc.get("arrays").is_none());
    // spwhen predicts for jobs, not sub-jobs.
    let out = sim()
        .args(["--trace", trace.to_str().unwrap(), "--arrays", "--predict"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "clap refuses the pair");
}

#[test]
fn arrays_land_in_their_trace_queue_on_a_site() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("par.swf");
    // As above: prime time, the log's queue names; user 1's three q4s
    // jobs of program 3 are one array.
    std::fs::write(
        &trace,
        "; UnixStartTime: 820605600\n; Queue: 2 q4s\n; Queue: 12 qf32m\n\
         1 0 -1 600 4 -1 -1 4 -1 -1 1 1 1 3 2 2 -1 -1\n\
         2 60 -1 3600 32 -1 -1 32 -1 -1 1 2 1 -1 12 2 -1 -1\n\
         3 120 -1 300 4 -1 -1 4 -1 -1 1 1 1 3 2 2 -1 -1\n\
         4 180 -1 200 4 -1 -1 4 -1 -1 1 1 1 3 2 2 -1 -1\n",
    )
    .unwrap();
    let csv = dir.path().join("jobs.csv");
    let out = sim()
        .args(["--trace", trace.to_str().unwrap(), "--config", PARAGON])
        .args(["--arrays", "--jobs-out", csv.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows[0], "job,submit,start,end,nodes,queue");
    for (row, job, run) in [(1, "1", 600), (3, "3", 300), (4, "4", 200)] {
        let f: Vec<&str> = rows[row].split(',').collect();
        assert_eq!((f[0], f[1], f[4], f[5]), (job, "0", "4", "q4s"), "{csv}");
        let (start, end): (i64, i64) = (f[2].parse().unwrap(), f[3].parse().unwrap());
        assert_eq!(end - start, run, "{csv}");
    }
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["arrays"]["largest"], 3);
}

/// `--write-accounting DIR`: the replay as qmeshd's accounting log, a Q,
/// an S and an E record per job with the schedule's times; a directory
/// that already holds a day's file is refused, the file left as it was.
#[test]
fn write_accounting_leaves_the_log_the_daemon_would_have_written() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.swf");
    std::fs::write(&trace, format!("; UnixStartTime: 1795478400\n{TRACE}")).unwrap();
    let acct = dir.path().join("acct");
    let run = || {
        sim()
            .args(["--trace", trace.to_str().unwrap(), "--policy", "easy"])
            .args(["--write-accounting", acct.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let out = run();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let day = acct.join("20261124");
    let log = std::fs::read_to_string(&day).unwrap();
    let kinds: Vec<&str> = log.lines().map(|l| l.split(';').nth(1).unwrap()).collect();
    assert_eq!(
        kinds,
        ["Q", "S", "Q", "Q", "S", "E", "E", "S", "E"],
        "{log}"
    );
    // J2 waited for J1's end at 100 s and ran 50 s, on all four nodes.
    let j2 = log
        .lines()
        .find(|l| l.contains(";E;2.sim;"))
        .unwrap_or_else(|| panic!("{log}"));
    for key in [
        "qtime=1795478401",
        "start=1795478500",
        "end=1795478550",
        "Resource_List.nodect=4",
        "Exit_status=0",
        "resources_used.walltime=00:00:50",
    ] {
        assert!(j2.contains(key), "{key} in {j2}");
    }
    let again = run();
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("is not written over"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(std::fs::read_to_string(&day).unwrap(), log);
}

#[test]
fn reservations_are_reported_and_a_bad_line_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.swf");
    std::fs::write(&trace, TRACE).unwrap();
    let resv = dir.path().join("r.txt");
    // All four nodes from 100 for 100 s (J2 waits for its end); one made
    // at 1 from 10 is refused (J1, started at 0, holds two nodes until 100).
    std::fs::write(&resv, "# two\n0 100 100 4\n1 10 60 4\n").unwrap();
    let run = |args: &[&str]| {
        sim()
            .args(["--trace", trace.to_str().unwrap()])
            .args(["--reservations", resv.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("reservations     1 confirmed, 1 refused"),
        "{text}"
    );
    assert!(
        text.contains("line 3: refused: reservation request denied"),
        "{text}"
    );
    // 400 node-seconds of 4 nodes × 250 s (J2 runs from 200 to 250).
    assert!(
        text.contains("held by reservations: 40.0% of capacity, 0.0% of that used by their jobs"),
        "{text}"
    );
    let out = run(&["--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["reservations"]["confirmed"], 1);
    assert_eq!(doc["reservations"]["held_node_seconds"], 400.0);
    std::fs::write(&resv, "0 100 100 4\n0 200 1:xx 4\n").unwrap();
    let out = run(&[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("r.txt, line 2: DURATION \"1:xx\""), "{err}");
}

#[test]
fn express_jobs_preempt_and_the_cost_is_reported() {
    // Four nodes, all held by job 1 from 0 to 1000; job 10 (express at
    // --express 0.1: the hash of its number) needs two at 100 for 200 s.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.swf");
    std::fs::write(
        &trace,
        "; MaxProcs: 4
1 0 -1 1000 4 -1 -1 4 2000 -1 1 1 1 -1 1 -1 -1 -1
10 100 -1 200 2 -1 -1 2 300 -1 1 1 1 -1 1 -1 -1 -1
",
    )
    .unwrap();
    let csv = dir.path().join("jobs.csv");
    let run = |args: &[&str]| {
        sim()
            .args(["--trace", trace.to_str().unwrap(), "--express", "0.1"])
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["--jobs-out", csv.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("express jobs     1: wait mean 0 s, median 0 s"),
        "{text}"
    );
    assert!(
        text.contains("preempted        1 jobs: 1 suspensions (200 s suspended in all), 0 requeues, 0 deletions"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "job,submit,start,end,nodes,queue,express,suspended,requeues,killed\n\
         1,0,0,1200,4,1,0,200,0,0\n10,100,100,300,2,express,1,0,0,0\n"
    );
    let out = run(&["--preempt-order", "R", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &doc["preemption"];
    assert_eq!(p["requeued"], 1);
    assert_eq!(p["express"]["jobs"], 1);
    assert_eq!(p["lost_node_seconds"], 400.0);
    for (args, says) in [
        (&["--preempt-order", "SX"][..], "'X' is not a method"),
        (&["--arrays"][..], "cannot be used with"),
    ] {
        let out = run(args);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{err}");
    }
    let out = sim()
        .args(["--trace", trace.to_str().unwrap(), "--express", "1.5"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--express 1.5: the share of jobs must be from 0 to 1"),
        "{err}"
    );
}
