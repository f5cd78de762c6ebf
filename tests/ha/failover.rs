//! The leader lost in the ways a site loses one: killed, stopped past its
//! lease, cut off by etcd's quorum going.

use std::collections::{BTreeSet, HashMap};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::rig::{Queue, bin, etcd, serial};

fn ok(out: std::process::Output, what: &str, q: &Queue) -> String {
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        q.logs()
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Records of `kind` (Q, S, E) per job in the accounting log.
fn records(q: &Queue, kind: &str) -> HashMap<String, usize> {
    let mut count = HashMap::new();
    for line in q.accounting() {
        let fields: Vec<&str> = line.splitn(4, ';').collect();
        if fields.len() >= 3 && fields[1] == kind {
            *count.entry(fields[2].to_string()).or_insert(0) += 1;
        }
    }
    count
}

/// `wait.sh`, a job that says it started (the first file) and runs until
/// the test makes the second.
fn waiting_job(q: &Queue) -> (std::path::PathBuf, std::path::PathBuf) {
    let (started, go) = (q.work.join("started"), q.work.join("go"));
    q.script(
        "wait.sh",
        &format!(
            "#!/bin/sh\ntouch {}\nwhile [ ! -e {} ]; do sleep 0.1; done\n",
            started.display(),
            go.display()
        ),
    );
    (started, go)
}

/// kill -9 of the leader while 16 clients submit through a login node:
/// every submission acknowledged is there once after the takeover, and
/// a submission retried across it is not made twice.
#[test]
fn the_leader_killed_during_a_submission_storm_loses_and_doubles_nothing() {
    let _turn = serial();
    let Some(mut q) = Queue::start("storm") else {
        return;
    };
    q.script("hold.sh", "#!/bin/sh\nexit 0\n");
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    for c in 0..16 {
        let stop = stop.clone();
        let socket = q.login_socket.clone();
        let work = q.work.clone();
        clients.push(std::thread::spawn(move || {
            let mut acked = Vec::new();
            let mut failed = Vec::new();
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) || n < 3 {
                n += 1;
                let out = Command::new(bin("qsub"))
                    .env("QMESH_SOCKET", &socket)
                    .env("QMESH_SUBMIT_RETRY_SECS", "60")
                    .current_dir(&work)
                    .args(["-h", "-N", &format!("c{c}n{n}"), "hold.sh"])
                    .output()
                    .unwrap();
                if out.status.success() {
                    acked.push(String::from_utf8(out.stdout).unwrap().trim().to_string());
                } else {
                    failed.push(String::from_utf8_lossy(&out.stderr).to_string());
                }
            }
            (acked, failed)
        }));
    }
    // Some submissions in, then the leader goes mid-storm.
    q.await_that(Duration::from_secs(60), "100 jobs queued", |q| {
        q.job_ids().len() >= 100
    });
    q.heads[0].kill9();
    let new = q.leader(Duration::from_secs(30));
    assert_eq!(new, 1, "the standby took over");
    // The storm goes on against the new leader, then stops.
    let before = q.job_ids().len();
    q.await_that(
        Duration::from_secs(60),
        "submissions after the takeover",
        |q| q.job_ids().len() >= before + 50,
    );
    stop.store(true, Ordering::SeqCst);
    let mut acked = Vec::new();
    for client in clients {
        let (a, failed) = client.join().unwrap();
        assert!(
            failed.is_empty(),
            "a submission failed: {failed:?}\n{}",
            q.logs()
        );
        acked.extend(a);
    }
    let stored: BTreeSet<String> = q.job_ids().into_iter().collect();
    let acked_set: BTreeSet<String> = acked.iter().cloned().collect();
    assert_eq!(
        acked_set.len(),
        acked.len(),
        "one job id acknowledged twice"
    );
    let lost: Vec<_> = acked_set.difference(&stored).collect();
    assert!(lost.is_empty(), "acknowledged and lost: {lost:?}");
    let extra: Vec<_> = stored.difference(&acked_set).collect();
    assert!(
        extra.is_empty(),
        "jobs nobody was told of (a retried submission made twice): {extra:?}"
    );
    // The accounting log has each job's Q once.
    let queued = records(&q, "Q");
    for id in &acked_set {
        assert_eq!(queued.get(id), Some(&1), "Q records of {id}");
    }
}

/// A leader stopped past its lease is replaced; woken, it writes nothing,
/// starts nothing and steps down; no job ran twice (said by the jobs).
#[test]
fn a_stopped_leader_woken_after_the_takeover_steps_down_and_nothing_runs_twice() {
    let _turn = serial();
    let Some(mut q) = Queue::start("stopped") else {
        return;
    };
    let ran = q.work.join("ran.log");
    q.script(
        "job.sh",
        &format!("#!/bin/sh\necho \"$PBS_JOBID\" >> {}\n", ran.display()),
    );
    // A command on the standby's host is told who leads, not answered
    // from a copy.
    let out = q.on_head(1, "qstat", &[]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success());
    let leader_port = format!(":{}", q.heads[0].port);
    assert!(
        err.contains("stands by") && err.contains(&leader_port),
        "{err}"
    );
    let first = ok(q.on_login("qsub", &["job.sh"]), "qsub", &q);
    ok(q.on_login("spwait", &[&first]), "spwait", &q);
    // Work waiting for nodes when the leader stops: all 4 nodes held.
    let mut queued = Vec::new();
    for _ in 0..8 {
        queued.push(ok(
            q.on_login("qsub", &["-h", "-lP", "4", "job.sh"]),
            "qsub",
            &q,
        ));
    }
    let pid = q.heads[0].pid();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGSTOP,
    )
    .unwrap();
    let new = q.leader(Duration::from_secs(30));
    assert_eq!(new, 1);
    // The new leader starts jobs (the agent followed it).
    for id in &queued {
        ok(q.on_login("qrls", &[id]), "qrls", &q);
    }
    // The old leader wakes: it must step down, not start these.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGCONT,
    )
    .unwrap();
    let status = q.heads[0]
        .exits_within(Duration::from_secs(30))
        .unwrap_or_else(|| panic!("the old leader did not step down:\n{}", q.logs()));
    assert_eq!(status.code(), Some(75), "{}", q.logs());
    assert!(
        q.heads[0].log().contains("steps down"),
        "{}",
        q.heads[0].log()
    );
    for id in &queued {
        ok(q.on_login("spwait", &[id]), "spwait", &q);
    }
    let lines: Vec<String> = std::fs::read_to_string(&ran)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let unique: BTreeSet<&String> = lines.iter().collect();
    assert_eq!(unique.len(), lines.len(), "a job ran twice: {lines:?}");
    assert_eq!(lines.len(), 1 + queued.len(), "{lines:?}");
}

/// A job running across a failover keeps running; its end reaches the new
/// leader; its E record is in the accounting log once.
#[test]
fn a_running_job_outlives_the_leader_and_ends_once() {
    let _turn = serial();
    let Some(mut q) = Queue::start("running") else {
        return;
    };
    let (started, go) = waiting_job(&q);
    let id = ok(q.on_login("qsub", &["wait.sh"]), "qsub", &q);
    q.await_that(Duration::from_secs(30), "the job started", |_| {
        started.exists()
    });
    q.heads[0].kill9();
    assert_eq!(q.leader(Duration::from_secs(30)), 1);
    let status = ok(q.on_login("qstat", &["-f", "-F", "json", &id]), "qstat", &q);
    assert!(
        status.contains("\"job_state\": \"R\"") || status.contains("\"job_state\":\"R\""),
        "{status}"
    );
    std::fs::write(&go, "").unwrap();
    ok(q.on_login("spwait", &[&id]), "spwait", &q);
    // The log is written just after the end is durable.
    q.await_that(Duration::from_secs(10), "the E record", |q| {
        records(q, "E").contains_key(&id)
    });
    assert_eq!(records(&q, "E").get(&id), Some(&1), "{:?}", q.accounting());
    assert_eq!(records(&q, "S").get(&id), Some(&1), "{:?}", q.accounting());
}

/// One etcd member of three down, and that one etcd's leader: nothing
/// changes, when the lease outlasts etcd's election (docs/HA.md: etcd's
/// election timeout at most a sixth of `lease_ttl`; etcd here keeps its
/// default of 1 s, so the lease is 8 s). Two down: submissions are refused
/// with "no quorum", and none is acknowledged. One back: service resumes,
/// no restart.
#[test]
fn losing_etcds_quorum_refuses_changes_until_it_is_back() {
    let _turn = serial();
    let Some(q) = Queue::start_with("quorum", false, 8) else {
        return;
    };
    let etcd = etcd().unwrap();
    q.script("job.sh", "#!/bin/sh\nexit 0\n");
    let leader = q.leader(Duration::from_secs(5));
    // Every member runs again at the end, whatever happens here: the next
    // test needs its quorum.
    struct Revive<'a>(std::sync::MutexGuard<'a, qmesh_etcd::testing::Cluster>);
    impl Drop for Revive<'_> {
        fn drop(&mut self) {
            for i in 0..self.0.members() {
                let _ = self.0.start_member(i);
            }
            let _ = self.0.wait_until_it_commits(Duration::from_secs(60));
        }
    }
    let mut cluster = Revive(etcd.cluster.lock().unwrap_or_else(|p| p.into_inner()));
    // The member the daemon talks to first, and whose loss makes etcd
    // elect again: the hard one to lose.
    let raft_leader = cluster
        .0
        .raft_leader()
        .expect("etcd names its leader before any member is killed");
    cluster.0.kill_member(raft_leader);
    let one = ok(
        q.on_login("qsub", &["job.sh"]),
        "qsub with etcd's leader member down",
        &q,
    );
    ok(q.on_login("spwait", &[&one]), "spwait", &q);
    assert!(
        !q.heads[leader]
            .log()
            .contains("cannot renew the election lease"),
        "etcd's election outlasted the lease\n{}",
        q.logs()
    );

    let second = (0..cluster.0.members())
        .find(|&i| i != raft_leader)
        .unwrap_or(0);
    cluster.0.kill_member(second);
    // What the daemon answers, without qsub's retries across a failover.
    let out = Command::new(bin("qsub"))
        .env("QMESH_SOCKET", &q.login_socket)
        .env("QMESH_SUBMIT_RETRY_SECS", "0")
        .current_dir(&q.work)
        .arg("job.sh")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !out.status.success(),
        "a submission was acknowledged without quorum"
    );
    assert!(err.contains("no quorum"), "{err}\n{}", q.logs());

    drop(cluster);
    let mut back = None;
    q.await_that(
        Duration::from_secs(60),
        "a submission accepted again",
        |q| {
            let out = q.on_login("qsub", &["job.sh"]);
            if out.status.success() {
                back = Some(String::from_utf8(out.stdout).unwrap().trim().to_string());
            }
            back.is_some()
        },
    );
    assert_eq!(
        q.leader(Duration::from_secs(5)),
        leader,
        "the same qmeshd serves, not restarted"
    );
    assert!(q.heads[leader].child.is_some());
    ok(q.on_login("spwait", &[&back.unwrap()]), "spwait", &q);
}

/// A leader stopped with SIGTERM gives up its lease: the standby leads at
/// once, not a lease later; a standby stops on SIGTERM too, even one that
/// gets it while it takes over.
#[test]
fn a_clean_stop_hands_over_at_once_and_every_head_stops_on_sigterm() {
    let _turn = serial();
    let Some(mut q) = Queue::start("handover") else {
        return;
    };
    let term = |q: &mut Queue, i: usize| {
        let pid = q.heads[i].pid();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
    };
    term(&mut q, 0);
    // The standby may be taking over when its own SIGTERM comes.
    term(&mut q, 1);
    for i in [0, 1] {
        let status = q.heads[i]
            .exits_within(Duration::from_secs(20))
            .unwrap_or_else(|| panic!("head {i} did not stop on SIGTERM:\n{}", q.logs()));
        assert!(status.success(), "head {i}: {status}\n{}", q.logs());
    }
    // Started again: one leads at once (no lease left over).
    q.spawn(1);
    assert_eq!(q.leader(Duration::from_secs(10)), 1);
    q.spawn(0);
    term(&mut q, 1);
    assert!(
        q.heads[1]
            .exits_within(Duration::from_secs(20))
            .is_some_and(|s| s.success())
    );
    assert_eq!(q.leader(Duration::from_secs(10)), 0);
    assert!(
        !q.heads[1].log().contains("could not give up the election"),
        "{}",
        q.heads[1].log()
    );
}

/// The leader cut off from etcd while its agents still reach it: within
/// its lease it stops leading (it answers nothing and lets its agents go),
/// the standby takes over and starts jobs on those agents, a job that ran
/// across it ends once, and when the line is mended the old leader, whose
/// lease is gone, steps down.
#[test]
fn a_leader_cut_off_from_etcd_stops_leading_within_its_lease() {
    let _turn = serial();
    let Some(mut q) = Queue::start_with("partition", true, 2) else {
        return;
    };
    let (started, go) = waiting_job(&q);
    q.script("true.sh", "#!/bin/sh\nexit 0\n");
    let long = ok(q.on_login("qsub", &["wait.sh"]), "qsub", &q);
    q.await_that(Duration::from_secs(30), "the job started", |_| {
        started.exists()
    });

    for line in &q.lines {
        line.cut();
    }
    q.await_that(
        Duration::from_secs(10),
        "the cut-off leader refusing",
        |q| {
            let out = q.on_head(0, "qstat", &[]);
            !out.status.success()
                && String::from_utf8_lossy(&out.stderr)
                    .contains("cannot tell whether it still leads")
        },
    );
    assert_eq!(q.leader(Duration::from_secs(30)), 1);
    let short = ok(
        q.on_login("qsub", &["true.sh"]),
        "qsub through the new leader",
        &q,
    );
    ok(q.on_login("spwait", &[&short]), "spwait", &q);

    for line in &q.lines {
        line.mend();
    }
    let status = q.heads[0]
        .exits_within(Duration::from_secs(30))
        .unwrap_or_else(|| panic!("the cut-off leader did not step down:\n{}", q.logs()));
    assert_eq!(status.code(), Some(75), "{}", q.logs());

    std::fs::write(&go, "").unwrap();
    ok(q.on_login("spwait", &[&long]), "spwait", &q);
    q.await_that(Duration::from_secs(10), "the E record", |q| {
        records(q, "E").contains_key(&long)
    });
    assert_eq!(
        records(&q, "E").get(&long),
        Some(&1),
        "{:?}",
        q.accounting()
    );
}
