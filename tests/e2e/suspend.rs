//! qsig -s suspend|resume: an operator stops a running job where it runs
//! (its cgroup frozen where the host has a freezer, else SIGSTOP), it
//! shows S and keeps its nodes; its wall time does not run while it is
//! suspended, so a job suspended for longer than its wall-time limit still
//! ends normally once resumed. The accounting log has PBS Pro's z and r.

use std::time::{Duration, Instant};

use crate::harness::{Daemon, NOBODY, is_root, stderr};
use crate::tracejob::records;

/// Counts to 20, a tick a tenth of a second, into `ticks`.
const COUNTER: &str = "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho go > started\ni=0\nwhile [ $i -lt 20 ]; do i=$((i+1)); echo $i >> ticks; sleep 0.1; done\n";

fn ticks(d: &Daemon) -> usize {
    std::fs::read_to_string(d.work.join("ticks"))
        .unwrap_or_default()
        .lines()
        .count()
}

/// Waits until the job has written no tick for a second: it is stopped.
fn await_stopped(d: &Daemon) -> usize {
    let began = Instant::now();
    let (mut last, mut since) = (ticks(d), Instant::now());
    while since.elapsed() < Duration::from_secs(1) {
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "the job still writes 30 s after qsig -s suspend:\n{}",
            d.log()
        );
        std::thread::sleep(Duration::from_millis(100));
        let now = ticks(d);
        if now != last {
            (last, since) = (now, Instant::now());
        }
    }
    last
}

#[test]
fn a_suspended_job_stops_keeps_its_nodes_and_its_wall_time_waits_for_it() {
    let d = Daemon::start();
    let started = d.fifo("started");
    d.script("counter.sh", COUNTER);
    // 6 s of wall time; it is held suspended for 7.
    let id = d.qsub(&["-l", "walltime=00:00:06", "counter.sh"]);
    d.read_fifo(&started);
    assert_eq!(d.ok("qsig", &["-s", "suspend", &id]), "");
    let job = d.job_json(&id);
    assert_eq!(job["job_state"], "S", "{job}");
    assert!(!job["exec_host"].as_str().unwrap_or("").is_empty(), "{job}");
    let held = await_stopped(&d);
    assert!(
        held < 20,
        "the job was stopped before it ended ({held} ticks)"
    );
    // Suspended past its wall-time limit: a paused alarm does not fire.
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(ticks(&d), held, "nothing of the job ran while suspended");
    // Suspending it again, or resuming a running job, is refused.
    let out = d.run("qsig", &["-s", "suspend", &id]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!("qsig: cannot suspend job {id}: it is suspended\n")
    );
    let resumed_at = Instant::now();
    assert_eq!(d.ok("qsig", &["-s", "resume", &id]), "");
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "ended normally: {info:?}");
    assert_eq!(ticks(&d), 20, "it went on where it stopped");
    let job = d.job_json(&id);
    let used = job["resources_used"]["walltime"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let secs: u64 = used
        .split(':')
        .fold(0, |acc, part| acc * 60 + part.parse::<u64>().unwrap_or(0));
    let ran = resumed_at.elapsed().as_secs() + 1;
    assert!(
        secs <= ran + 2 && secs < 6,
        "its wall time ({used}) leaves out the 7 s suspended: {job}"
    );
    let kinds: Vec<String> = records(&d, &id).into_iter().map(|(k, _)| k).collect();
    assert_eq!(kinds, ["Q", "S", "z", "r", "E"]);
    let z = records(&d, &id)
        .into_iter()
        .find(|(k, _)| k == "z")
        .map(|(_, text)| text)
        .unwrap();
    assert!(z.starts_with("requestor=root@"), "{z}");
    let out = d.ok("tracejob", &["-n", "2", &id]);
    assert!(out.contains("Job suspended at request of root@"), "{out}");
    assert!(out.contains("Job resumed at request of root@"), "{out}");
}

#[test]
fn a_suspended_job_can_be_deleted_and_users_may_not_suspend() {
    let d = Daemon::start();
    let started = d.fifo("started");
    d.script(
        "sleeper.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\ntrap 'echo term > got-term; exit 3' TERM\necho go > started\nwhile :; do echo x >> ticks; sleep 0.2; done\n",
    );
    let id = d.qsub(&["sleeper.sh"]);
    d.read_fifo(&started);
    if is_root() {
        let out = d.run_as(NOBODY, "qsig", &["-s", "suspend", &id]);
        assert_eq!(out.status.code(), Some(1));
        let msg = stderr(&out);
        assert!(msg.contains("needs operator rights"), "{msg}");
        assert_eq!(d.job_json(&id)["job_state"], "R");
    }
    let out = d.run("qsig", &["-s", "admin-suspend", &id]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("use qsig -s suspend"),
        "{}",
        stderr(&out)
    );
    d.ok("qsig", &["-s", "suspend", &id]);
    assert_eq!(d.job_json(&id)["job_state"], "S");
    await_stopped(&d);
    // qdel of a suspended job: it is thawed to get its SIGTERM, and its
    // trap runs.
    d.ok("qdel", &[&id]);
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(3), "its TERM trap ran: {info:?}");
    assert_eq!(
        std::fs::read_to_string(d.work.join("got-term")).unwrap(),
        "term\n"
    );
}
