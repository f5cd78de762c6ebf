//! Accounts through the daemon: a submit the allocation cannot cover is
//! refused with the figures, a job is charged nodes × wall-clock seconds,
//! the charge survives a restart, and limits name themselves.

use crate::harness::{Daemon, NOBODY, is_root, stderr};

/// `spusage --json` (all accounts) as a JSON value.
fn usage(d: &Daemon) -> serde_json::Value {
    let out = d.ok("spusage", &["--all", "--json"]);
    serde_json::from_str(&out).expect("spusage JSON")
}

#[test]
fn allocations_refuse_charge_and_survive_a_restart() {
    let mut d = Daemon::start();
    d.ok(
        "qmgr",
        &["-c", "create account c1 allocation = 1, shares = 10"],
    );
    d.script("sleep.sh", "#!/bin/sh\nsleep 2\n");

    let out = d.run(
        "qsub",
        &[
            "-A",
            "c1-prod",
            "-l",
            "nodes=2",
            "-l",
            "walltime=1:00:00",
            "sleep.sh",
        ],
    );
    assert!(!out.status.success());
    assert_eq!(
        stderr(&out).trim(),
        "qsub: account c1: job needs 2.0 node-hours (2 nodes × 01:00:00) but only 1.0 of 1 \
         remain (0.0 used, 0.0 committed to queued and running jobs); see spusage"
    );
    assert!(d.all_job_ids().is_empty(), "nothing was queued");

    let out = d.run("qsub", &["-A", "c9", "sleep.sh"]);
    assert!(
        stderr(&out).contains("account \"c9\" does not exist; see qmgr list account"),
        "{}",
        stderr(&out)
    );

    let id = d.qsub(&[
        "-A",
        "c1-prod",
        "-l",
        "nodes=2",
        "-l",
        "walltime=60",
        "sleep.sh",
    ]);
    let job = d.wait_job(&id);
    let wall = job.end_time - job.stime;
    assert!(wall >= 2, "sleep 2 ran {wall} s");
    let c1 = &usage(&d)["Account"]["c1"];
    let used = c1["used"].as_f64().expect("used");
    assert_eq!(used, 2.0 * wall as f64 / 3600.0, "2 nodes × {wall} s");
    assert_eq!(c1["allocation"].as_f64(), Some(1.0));
    assert_eq!(c1["committed"].as_f64(), Some(0.0));
    assert!((c1["remaining"].as_f64().unwrap() - (1.0 - used)).abs() < 1e-9);
    assert_eq!(c1["shares"], 10);
    let table = d.ok("spusage", &["--all"]);
    assert!(
        table.starts_with("ACCOUNT ALLOCATION USED COMMITTED REMAINING SHARES\n"),
        "{table}"
    );
    assert!(
        table.contains("\nc1             1.0  0.0       0.0       1.0     10\n"),
        "{table}"
    );

    d.stop();
    d.spawn();
    let again = &usage(&d)["Account"]["c1"];
    assert_eq!(
        again["used"].as_f64(),
        Some(used),
        "the charge survives a restart"
    );
    let listed = d.ok("qmgr", &["-c", "list account c1"]);
    assert!(listed.contains("    allocation = 1\n"), "{listed}");

    if is_root() {
        let out = d.run_as(NOBODY, "spusage", &["--all"]);
        assert!(!out.status.success());
        assert!(stderr(&out).contains("operator rights"), "{}", stderr(&out));
    }
}

#[test]
fn max_user_queued_refuses_and_names_the_limit() {
    let d = Daemon::start();
    d.ok("qmgr", &["-c", "set server max_user_queued = 1"]);
    d.script("job.sh", "#!/bin/sh\ntrue\n");
    let first = d.qsub(&["-h", "job.sh"]);
    let out = d.run("qsub", &["job.sh"]);
    assert!(!out.status.success());
    let msg = stderr(&out);
    assert!(
        msg.contains("already has 1 queued jobs") && msg.contains("max_user_queued = 1"),
        "{msg}"
    );
    assert_eq!(
        d.all_job_ids(),
        vec![first.clone()],
        "nothing more was queued"
    );
    d.ok("qdel", &[&first]);
    d.qsub(&["job.sh"]);
}
