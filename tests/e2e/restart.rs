//! Nothing acknowledged is lost: not when qmeshd is killed in the middle of
//! a submission storm, not for jobs that run while it is down.

use std::sync::{Arc, Mutex};

use rand::Rng;

use crate::harness::{Daemon, stderr};

#[test]
fn every_acknowledged_job_survives_a_sigkill() {
    let mut d = Daemon::start();
    // Jobs stay queued: this test is about the store, not about running.
    d.ok("qmgr", &["-c", "set server scheduling = false"]);
    d.script("noop.sh", "true\n");
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let kill_after = rand::rng().random_range(20..150usize);
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let acked = Arc::clone(&acked);
            let tx = tx.clone();
            let mut cmd = d.cmd("qsub");
            cmd.arg("noop.sh");
            std::thread::spawn(move || {
                for _ in 0..25 {
                    let out = cmd.output().expect("run qsub");
                    if !out.status.success() {
                        // The daemon is gone: this client stops.
                        return;
                    }
                    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
                    let mut list = acked.lock().unwrap();
                    list.push(id);
                    if list.len() == kill_after {
                        let _ = tx.send(());
                    }
                }
            })
        })
        .collect();
    drop(tx);
    if rx.recv().is_ok() {
        d.kill9();
    }
    for c in clients {
        c.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= kill_after, "{} acknowledged", acked.len());
    d.spawn();
    let known = d.all_job_ids();
    let lost: Vec<&String> = acked.iter().filter(|id| !known.contains(id)).collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged jobs lost after SIGKILL at {kill_after}: {lost:?}",
        lost.len(),
        acked.len()
    );
    // New ids do not reuse old ones.
    d.ok("qmgr", &["-c", "set server scheduling = true"]);
    let next = d.qsub(&["noop.sh"]);
    assert!(!known.contains(&next), "{next} reused");
}

#[test]
fn running_jobs_are_reconciled_when_the_daemon_comes_back() {
    let mut d = Daemon::start();
    let a_started = d.fifo("a_started");
    let a_go = d.fifo("a_go");
    let b_started = d.fifo("b_started");
    // a: finishes while the daemon is down, on our signal.
    d.script(
        "a.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho up > a_started\nread x < a_go\nexit 7\n",
    );
    // b: keeps running across the restart.
    d.script(
        "b.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho up > b_started\nsleep 300\n",
    );
    let a = d.qsub(&["a.sh"]);
    let b = d.qsub(&["b.sh"]);
    d.read_fifo(&a_started);
    d.read_fifo(&b_started);

    d.kill9();
    d.write_fifo(&a_go, "go\n");
    d.spawn();

    // The agent survived, reconnects, and reports a's end and b's run.
    assert_eq!(d.wait_job(&a).exit_status, Some(7));
    let job = d.job_json(&b);
    assert_eq!(job["job_state"], "R", "{job}");
    assert_eq!(job["run_count"], 1, "not restarted: {job}");
    let out = d.run("qdel", &[&b]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(d.wait_job(&b).exit_signal, Some(15));
}

/// Kills the agent, every shepherd and every job, and wipes the agent's
/// spool: what a node reboot leaves behind.
fn wipe_the_node(d: &Daemon) {
    let spool = d.state_dir.join("agent-spool");
    let marker = spool.to_string_lossy().to_string();
    let work = d.work.to_string_lossy().to_string();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cwd = std::fs::read_link(entry.path().join("cwd")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&marker)
            || cwd.to_string_lossy().starts_with(&work)
        {
            crate::harness::signal(pid, nix::sys::signal::Signal::SIGKILL);
        }
    }
    let _ = std::fs::remove_dir_all(spool.join("jobs"));
}

#[test]
fn a_job_its_agent_lost_is_requeued_if_rerunnable_and_failed_if_not() {
    let d = Daemon::start();
    let started = d.fifo("started");
    d.script(
        "again.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho up > started\nsleep 300\n",
    );
    let rerun = d.qsub(&["again.sh"]);
    d.read_fifo(&started);
    wipe_the_node(&d);
    // The daemon restarts its agent; the agent does not know the job: it is
    // lost, queued again, and runs a second time.
    d.read_fifo(&started);
    let job = d.job_json(&rerun);
    assert_eq!(job["run_count"], 2, "{job}");
    assert_eq!(job["job_state"], "R", "{job}");
    d.ok("qdel", &[&rerun]);
    d.wait_job(&rerun);

    let once = d.qsub(&["-r", "n", "again.sh"]);
    d.read_fifo(&started);
    wipe_the_node(&d);
    let info = d.wait_job(&once);
    assert_eq!(info.exit_status, Some(-2), "{info:?}");
    assert!(info.comment.contains("lost"), "{}", info.comment);
}

#[test]
fn restarting_the_daemon_during_100_running_jobs_loses_none_and_runs_none_twice() {
    let config = r#"
[agents]
local = true

[server]
default_queue = "batch"

[[queue]]
name = "batch"

[[node_set]]
name = "many"
count = 100
host = "localhost"
"#;
    let mut d = Daemon::start_with(Some(config));
    let started = d.fifo("started");
    d.script(
        "hold.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho $QMESH_JOBID > started\n\
         while [ ! -e go ]; do sleep 0.5; done\necho $QMESH_JOBID >> runs.log\n",
    );
    let mut ids: Vec<String> = (0..100).map(|_| d.qsub(&["hold.sh"])).collect();
    let mut up = crate::cluster::read_lines(&d, &started, 100);
    up.sort();
    ids.sort();
    assert_eq!(up, ids, "all 100 run at once");

    d.kill9();
    d.spawn();
    std::fs::write(d.work.join("go"), "").unwrap();
    for id in &ids {
        let info = d.wait_job(id);
        assert_eq!(info.exit_status, Some(0), "{id}: {info:?}");
    }
    let runs = std::fs::read_to_string(d.work.join("runs.log")).unwrap();
    let mut runs: Vec<&str> = runs.lines().collect();
    runs.sort();
    assert_eq!(runs, ids, "each job ran to its end exactly once");
    for id in &ids {
        assert_eq!(d.job_json(id)["run_count"], 1, "{id} was started again");
    }
}
