//! Starting and restarting jobs by hand: qrun starts a queued job now,
//! past a stopped queue and scheduling = false, on nodes the server
//! chooses or -H names; qrerun kills a running job and queues it again,
//! and it runs anew (run_count counts the runs).

use crate::harness::{Daemon, NOBODY, is_root, stderr};
use crate::tracejob::records;

/// Says it started through the FIFO `started`, then sleeps until killed.
const WAITER: &str = "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho run >> runs\necho go > started\nwhile :; do sleep 1; done\n";

/// The nodes of `exec_host` (PBS's `node/0*CPUS+...`), in order.
fn nodes_of(job: &serde_json::Value) -> Vec<String> {
    job["exec_host"]
        .as_str()
        .unwrap_or_default()
        .split('+')
        .filter_map(|part| part.split('/').next())
        .filter(|node| !node.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn qrun_starts_a_job_past_policy_on_chosen_or_named_nodes() {
    let d = Daemon::start();
    d.ok("qmgr", &["-c", "set server scheduling = false"]);
    d.ok("qstop", &["batch"]);
    let started = d.fifo("started");
    d.script("waiter.sh", WAITER);
    let id = d.qsub(&["-l", "nodes=2", "waiter.sh"]);
    assert_eq!(d.ok("qrun", &[&id]), "");
    d.read_fifo(&started);
    let job = d.job_json(&id);
    assert_eq!(job["job_state"], "R", "{job}");
    let busy = nodes_of(&job);
    assert_eq!(busy.len(), 2, "{job}");

    // -H: the nodes named, in that order.
    let named = d.qsub(&["-l", "nodes=2", "waiter.sh"]);
    let free: Vec<String> = (0..16)
        .map(|i| format!("local{i:02}"))
        .filter(|n| !busy.contains(n))
        .take(2)
        .collect();
    let spec = format!("{}+{}", free[1], free[0]);
    d.ok("qrun", &["-H", &spec, &named]);
    d.read_fifo(&started);
    assert_eq!(
        nodes_of(&d.job_json(&named)),
        [free[1].clone(), free[0].clone()]
    );

    // Nodes that are not free are named with the reason.
    let third = d.qsub(&["-l", "nodes=1", "waiter.sh"]);
    let out = d.run("qrun", &["-H", &busy[0], &third]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "qrun: cannot run job {third} on node {}: it runs job {id}; name free nodes (pbsnodes -l shows the others)\n",
            busy[0]
        )
    );
    let held = d.qsub(&["-h", "waiter.sh"]);
    let out = d.run("qrun", &[&held]);
    assert_eq!(
        stderr(&out),
        format!("qrun: cannot run job {held}: it is held\n")
    );
    if is_root() {
        let out = d.run_as(NOBODY, "qrun", &[&third]);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains(&format!(
                "running job {third} at once (qrun) needs operator rights"
            )),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(d.job_json(&third)["job_state"], "Q", "nothing started it");
    for job in [&id, &named] {
        d.ok("qdel", &[job]);
        d.wait_job(job);
    }
}

#[test]
fn qrerun_kills_a_running_job_and_it_runs_again() {
    let d = Daemon::start();
    let started = d.fifo("started");
    d.script("waiter.sh", WAITER);
    let id = d.qsub(&["waiter.sh"]);
    d.read_fifo(&started);
    assert_eq!(d.job_json(&id)["run_count"], 1);
    assert_eq!(d.ok("qrerun", &[&id]), "");
    // Killed, requeued, started again by the next pass.
    d.read_fifo(&started);
    let job = d.job_json(&id);
    assert_eq!(job["job_state"], "R", "{job}");
    assert_eq!(job["run_count"], 2, "{job}");
    let runs = std::fs::read_to_string(d.work.join("runs")).unwrap();
    assert_eq!(runs, "run\nrun\n");
    // The accounting log has the rerun (R) between the two starts.
    let kinds: Vec<String> = records(&d, &id).into_iter().map(|(k, _)| k).collect();
    assert_eq!(kinds, ["Q", "S", "R", "S"]);
    let out = d.ok("tracejob", &["-n", "2", &id]);
    assert!(out.contains("Job Rerun at request of root@"), "{out}");

    // Not rerunnable: refused, unless forced.
    let once = d.qsub(&["-r", "n", "waiter.sh"]);
    d.read_fifo(&started);
    let out = d.run("qrerun", &[&once]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "qrerun: job {once} is not rerunnable (qsub -r n); qrerun -W force requeues it anyway, or qdel ends it\n"
        )
    );
    assert_eq!(d.job_json(&once)["run_count"], 1, "untouched");
    d.ok("qrerun", &["-W", "force", &once]);
    d.read_fifo(&started);
    assert_eq!(d.job_json(&once)["run_count"], 2);
    let queued = d.qsub(&["-h", "waiter.sh"]);
    let out = d.run("qrerun", &[&queued]);
    assert_eq!(
        stderr(&out),
        format!("qrerun: cannot rerun job {queued}: it is held\n")
    );
    if is_root() {
        let out = d.run_as(NOBODY, "qrerun", &[&once]);
        assert!(
            stderr(&out).contains(&format!("rerunning job {once} needs operator rights")),
            "{}",
            stderr(&out)
        );
    }
    for job in [&id, &once, &queued] {
        d.ok("qdel", &[job]);
        d.wait_job(job);
    }
}
