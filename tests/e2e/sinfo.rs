//! sinfo and `scontrol show node|partition` on a real daemon and agent:
//! nodes go idle → allocated (an exclusive node) or mixed (a shared one
//! with CPUs left) while a job runs, and back when it ends; a stopped or
//! disabled queue's partition is `down`, `drain` or `inact`, and one
//! outside all its calendar periods `down`; a node taken offline is
//! `drain` with its comment as the reason; a node in an advance
//! reservation's occurrence is `resv`.

use std::time::{Duration, Instant};

use crate::harness::Daemon;

const MACHINE: &str = r#"
[agents]
local = true
local_host = "localhost"

[server]
default_queue = "batch"

[[queue]]
name = "batch"
node_sets = ["cpu"]

[[queue]]
name = "shared"
node_sets = ["pool"]

[[node_set]]
name = "cpu"
topology = "flat"
cpus = 2
nodes = [{ name = "n1", host = "localhost" }, { name = "n2", host = "localhost" }]

[[node_set]]
name = "pool"
topology = "flat"
jobs_per_node = 2
cpus = 2
nodes = [{ name = "s1", host = "localhost" }]
"#;

/// Polls `sinfo ARGS` until it prints `want` (what sinfo shows follows the
/// daemon's state, which has no event a test can wait on); the last
/// output when it does not within 60 s.
fn await_sinfo(d: &Daemon, args: &[&str], want: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = d.ok("sinfo", args);
    while seen != want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        seen = d.ok("sinfo", args);
    }
    assert_eq!(seen, want, "sinfo {args:?}\n{}", d.log());
}

/// Submits a job that says it started through FIFO `started` and ends
/// when FIFO `go` is written; its full id once it runs.
fn running_job(d: &Daemon, partition: &str, name: &str) -> (String, std::path::PathBuf) {
    let started = d.fifo(&format!("{name}-started"));
    let go = d.fifo(&format!("{name}-go"));
    d.script(
        &format!("{name}.sh"),
        &format!("#!/bin/sh\necho up > {name}-started\nread x < {name}-go\n"),
    );
    let id = d
        .ok(
            "sbatch",
            &[
                "--parsable",
                "-p",
                partition,
                "-n",
                "1",
                &format!("{name}.sh"),
            ],
        )
        .trim()
        .to_string();
    d.read_fifo(&started);
    (d.full_id(&id), go)
}

#[test]
fn node_and_partition_states_follow_jobs_queues_and_marks() {
    let d = Daemon::start_with(Some(MACHINE));
    for node in ["n1", "n2", "s1"] {
        d.await_node_state(node, "free");
    }
    let table = "%P %a %D %t %N";
    await_sinfo(
        &d,
        &["-h", "-o", table],
        "batch* up 2 idle n[1-2]\nshared up 1 idle s1\n",
    );

    // A job on the exclusive set holds its node whole: alloc.
    let (exclusive, go_exclusive) = running_job(&d, "batch", "ex");
    let node = d.exec_nodes(&exclusive)[0].clone();
    let other = if node == "n1" { "n2" } else { "n1" };
    assert_eq!(
        d.ok("sinfo", &["-h", "-p", "batch", "-o", "%D %t %N %C"]),
        format!("1 alloc {node} 2/0/0/2\n1 idle {other} 0/2/0/2\n")
    );
    let shown = d.ok("scontrol", &["show", "node", &node]);
    assert!(
        shown.contains("\n   CPUAlloc=2 CPUEfctv=2 CPUTot=2 "),
        "{shown}"
    );
    assert!(shown.contains("\n   State=ALLOCATED "), "{shown}");
    assert!(shown.contains("\n   Partitions=batch \n"), "{shown}");

    // One CPU of the shared node's two: mix.
    let (shared, go_shared) = running_job(&d, "shared", "sh");
    assert_eq!(
        d.ok("sinfo", &["-h", "-p", "shared", "-o", "%t %T %C"]),
        "mix mixed 1/1/0/2\n"
    );
    assert_eq!(
        d.ok("sinfo", &["-h", "-s", "-o", "%P %F"]),
        "batch* 1/1/0/2\nshared 1/0/0/1\n"
    );
    assert!(
        d.ok("scontrol", &["-o", "show", "node", "s1"])
            .contains(" State=MIXED ")
    );

    d.write_fifo(&go_exclusive, "go\n");
    d.write_fifo(&go_shared, "go\n");
    assert_eq!(d.wait_job(&exclusive).exit_status, Some(0));
    assert_eq!(d.wait_job(&shared).exit_status, Some(0));
    await_sinfo(
        &d,
        &["-h", "-o", table],
        "batch* up 2 idle n[1-2]\nshared up 1 idle s1\n",
    );

    // The queue switches: stopped is down, disabled too inactive, disabled
    // but started drain.
    let avail = ["-h", "-p", "shared", "-o", "%.5a"];
    d.ok("qstop", &["shared"]);
    assert_eq!(d.ok("sinfo", &avail), " down\n");
    d.ok("qdisable", &["shared"]);
    assert_eq!(d.ok("sinfo", &avail), "inact\n");
    let part = d.ok("scontrol", &["show", "partition", "shared"]);
    assert!(
        part.contains("\n   State=INACTIVE TotalCPUs=2 TotalNodes=1 "),
        "{part}"
    );
    d.ok("qstart", &["shared"]);
    assert_eq!(d.ok("sinfo", &avail), "drain\n");
    d.ok("qenable", &["shared"]);
    assert_eq!(d.ok("sinfo", &avail), "   up\n");

    // A queue outside all its periods starts nothing: down, until one is on.
    let elsewhen = (chrono::Utc::now() + chrono::Duration::days(2)).format("%a");
    d.ok(
        "qmgr",
        &["-c", &format!("set calendar period.P = {elsewhen}")],
    );
    d.ok(
        "qmgr",
        &[
            "-c",
            "create queue pq queue_type = execution, enabled = true, started = true, \
             node_sets = pool, periods = P",
        ],
    );
    let pq = ["-h", "-p", "pq", "-o", "%a %D %N"];
    assert_eq!(d.ok("sinfo", &pq), "down 1 s1\n");
    d.ok("qmgr", &["-c", "set calendar period.P = Mon-Sun"]);
    assert_eq!(d.ok("sinfo", &pq), "up 1 s1\n");

    // An offline node drains, its comment the reason.
    d.ok("pbsnodes", &["-o", "n2", "-C", "fan replaced"]);
    assert_eq!(
        d.ok("sinfo", &["-h", "-N", "-n", "n2", "-o", "%N %t %T %E"]),
        "n2 drain drained fan replaced\n"
    );
    assert_eq!(
        d.ok("sinfo", &["-R", "-h"]),
        format!(
            "{:<20} {:<9} {:<19} n2\n",
            "fan replaced", "Unknown", "Unknown"
        )
    );
    let shown = d.ok("scontrol", &["show", "node", "n2"]);
    assert!(shown.contains("\n   State=IDLE+DRAIN "), "{shown}");
    assert!(shown.ends_with("\n   Reason=fan replaced\n\n"), "{shown}");
    d.ok("pbsnodes", &["-r", "n2"]);
    assert_eq!(
        d.ok("sinfo", &["-h", "-N", "-n", "n2", "-o", "%t"]),
        "idle\n"
    );

    // An advance reservation's node, idle in its occurrence: resv.
    let start = chrono::Utc::now() + chrono::Duration::seconds(3);
    let end = start + chrono::Duration::seconds(600);
    let pbs = |t: chrono::DateTime<chrono::Utc>| t.format("%Y%m%d%H%M.%S").to_string();
    let made = d
        .cmd("pbs_rsub")
        .env("PBS_TZID", "UTC")
        .args(["-R", &pbs(start), "-E", &pbs(end), "-lP", "1"])
        .output()
        .expect("run pbs_rsub");
    assert!(made.status.success(), "{made:?}");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut states = d.ok("sinfo", &["-h", "-N", "-o", "%N %t %T"]);
    while !states.contains(" resv reserved\n") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        states = d.ok("sinfo", &["-h", "-N", "-o", "%N %t %T"]);
    }
    let reserved = states
        .lines()
        .find(|l| l.ends_with(" resv reserved"))
        .unwrap_or_else(|| panic!("no reserved node:\n{states}\n{}", d.log()));
    let name = reserved.split(' ').next().unwrap_or_default();
    assert!(
        d.ok("scontrol", &["show", "node", name])
            .contains("\n   State=IDLE+RESERVED ")
    );

    // Names it does not have, in Slurm's words.
    let missing = d.run("scontrol", &["show", "node", "n9"]);
    assert!(!missing.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&missing.stdout),
        String::from_utf8_lossy(&missing.stderr)
    );
    assert!(said.contains("Node n9 not found"), "{said}");
    let bad = d.run("sinfo", &["-t", "sleepy"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&bad.stderr)
            .starts_with("sinfo: error: Bad state string: \"sleepy\""),
        "{bad:?}"
    );
}
