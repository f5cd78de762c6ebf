//! PBS's small commands against the real daemon: qselect's selection
//! options, qenable/qdisable/qstart/qstop on queues, and qorder.

use chrono::{Duration, Local};

use crate::harness::{Daemon, NOBODY, is_root, stderr};

fn ids(out: &str) -> Vec<&str> {
    out.lines().collect()
}

#[test]
fn qselect_lists_the_jobs_that_meet_every_option() {
    let d = Daemon::start();
    d.ok("qmgr", &["-c", "set server scheduling = false"]);
    d.script("j.sh", "exit 0\n");
    let alpha = d.qsub(&[
        "-N",
        "alpha",
        "-p",
        "10",
        "-P",
        "climate",
        "-l",
        "nodes=2,walltime=02:00:00",
        "j.sh",
    ]);
    let beta = d.qsub(&["-N", "beta", "-h", "-l", "walltime=00:10:00", "j.sh"]);
    let gamma = d.qsub(&["-N", "gamma", "-r", "n", "j.sh"]);
    let gone = d.qsub(&["-N", "gone", "j.sh"]);
    d.ok("qdel", &[&gone]);

    let sel = |args: &[&str]| d.ok("qselect", args);
    assert_eq!(ids(&sel(&[])), [&alpha, &beta, &gamma], "not finished ones");
    assert_eq!(ids(&sel(&["-l", "walltime.gt.01:00:00"])), [&alpha]);
    assert_eq!(
        ids(&sel(&["-l", "nodes.ge.2,walltime.gt.01:00:00"])),
        [&alpha]
    );
    assert_eq!(ids(&sel(&["-l", "walltime.le.1:00:00"])), [&beta, &gamma]);
    assert_eq!(
        ids(&sel(&["-l", "ncpus.ge.2"])),
        [&alpha],
        "PBS's Resource_List"
    );
    assert_eq!(ids(&sel(&["-p.gt.5"])), [&alpha]);
    assert_eq!(ids(&sel(&["-p", ".le.0"])), [&beta, &gamma]);
    assert_eq!(ids(&sel(&["-P", "climate"])), [&alpha]);
    assert_eq!(ids(&sel(&["-P", "_pbs_project_default"])), [&beta, &gamma]);
    assert_eq!(ids(&sel(&["-h", "u"])), [&beta]);
    assert_eq!(ids(&sel(&["-s", "H"])), [&beta]);
    assert_eq!(ids(&sel(&["-s", "QR"])), [&alpha, &gamma]);
    assert_eq!(ids(&sel(&["-r", "n"])), [&gamma]);
    assert_eq!(ids(&sel(&["-N", "beta"])), [&beta]);
    assert_eq!(ids(&sel(&["-H"])), [&gone]);
    assert_eq!(ids(&sel(&["-x", "-s", "F"])), [&gone]);
    assert_eq!(ids(&sel(&["-x"])).len(), 4);
    assert_eq!(ids(&sel(&["-u", "root", "-q", "batch"])).len(), 3);
    assert!(sel(&["-u", "nobody"]).is_empty());
    assert!(sel(&["-J"]).is_empty(), "no job arrays yet");
    assert_eq!(ids(&sel(&["-T"])).len(), 3);
    // Queued in the last hour, not after the next one.
    let stamp = |t: chrono::DateTime<Local>| t.format("%Y%m%d%H%M").to_string();
    let hour_ago = stamp(Local::now() - Duration::hours(1));
    let hour_on = stamp(Local::now() + Duration::hours(1));
    assert_eq!(ids(&sel(&[&format!("-tq.gt.{hour_ago}")])).len(), 3);
    assert!(sel(&[&format!("-tq.gt.{hour_on}")]).is_empty());
    assert_eq!(
        ids(&sel(&[
            &format!("-tq.gt.{hour_ago}"),
            &format!("-tq.lt.{hour_on}"),
            "-p",
            "0"
        ]))
        .len(),
        2
    );
    let json: serde_json::Value = serde_json::from_str(&sel(&["--json", "-N", "alpha"])).unwrap();
    assert_eq!(json, serde_json::json!([alpha]));

    let out = d.run("qselect", &["-l", "walltime>1:00:00"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("qselect: -l walltime>1:00:00: write RESOURCE.OP.VALUE"));
    let out = d.run("qselect", &["-q", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("queue \"nope\" does not exist"),
        "{}",
        stderr(&out)
    );
    let out = d.run("qselect", &["-q", "batch@elsewhere"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("server \"elsewhere\" is not this daemon's"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn qdisable_qenable_qstop_qstart_switch_queues() {
    let d = Daemon::start();
    d.script("j.sh", "exit 0\n");
    let queue = |attr: &str| {
        let out = d.ok("qstat", &["-Q", "-f", "--json", "batch"]);
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        doc["Queue"]["batch"][attr].clone()
    };
    assert_eq!(d.ok("qdisable", &["batch"]), "");
    assert_eq!(queue("enabled"), "False");
    let out = d.run("qsub", &["j.sh"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("queue \"batch\" is not enabled"),
        "{}",
        stderr(&out)
    );
    d.ok("qenable", &["batch@anyserver"]);
    assert_eq!(queue("enabled"), "True");

    d.ok("qstop", &["batch"]);
    assert_eq!(queue("started"), "False");
    let id = d.qsub(&["j.sh"]);
    let job = d.job_json(&id);
    assert_eq!(job["job_state"], "Q", "{job}");
    d.ok("qstart", &["batch"]);
    assert_eq!(d.wait_job(&id).exit_status, Some(0));

    // Each queue on its own; the unknown one is named.
    let out = d.run("qstop", &["nope", "batch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("qstop: "), "{}", stderr(&out));
    assert!(stderr(&out).contains("\"nope\""), "{}", stderr(&out));
    assert_eq!(queue("started"), "False", "batch was still stopped");
    d.ok("qstart", &["batch"]);
    if is_root() {
        let out = d.run_as(NOBODY, "qdisable", &["batch"]);
        assert_eq!(out.status.code(), Some(1));
        assert!(stderr(&out).starts_with("qdisable: "), "{}", stderr(&out));
        assert_eq!(queue("enabled"), "True");
    }
}

#[test]
fn qorder_exchanges_two_queued_jobs() {
    let d = Daemon::start();
    d.ok("qmgr", &["-c", "set server scheduling = false"]);
    // Each takes every node: they run one after the other, in queue order.
    let job = |name: &str| {
        d.script(
            &format!("{name}.sh"),
            &format!("#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho {name} >> order\n"),
        );
        d.qsub(&["-l", "nodes=16", &format!("{name}.sh")])
    };
    let first = job("first");
    let second = job("second");
    let third = job("third");
    assert_eq!(d.ok("qorder", &[&first, &third]), "");
    d.ok("qmgr", &["-c", "set server scheduling = true"]);
    for id in [&first, &second, &third] {
        d.wait_job(id);
    }
    let order = std::fs::read_to_string(d.work.join("order")).unwrap();
    assert_eq!(order, "third\nsecond\nfirst\n");
    let out = d.run("qorder", &[&first, &second]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!("qorder: cannot reorder job {first}: it is finished\n")
    );
    if is_root() {
        d.ok("qmgr", &["-c", "set server scheduling = false"]);
        let a = job("a");
        let b = job("b");
        let out = d.run_as(NOBODY, "qorder", &[&a, &b]);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains(&format!(
                "job {a} belongs to root; only its owner, an operator or a manager may reorder it"
            )),
            "{}",
            stderr(&out)
        );
    }
}
