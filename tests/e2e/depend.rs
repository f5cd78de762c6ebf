//! What keeps a job from starting besides nodes: `-W depend=` and `-a`;
//! and the EPCC group cascade that reorders a queue (`qmgr reorder queue`).

use crate::harness::{Daemon, stderr};

/// The job's attribute in `qstat -f --json`, as text.
fn attr(d: &Daemon, id: &str, name: &str) -> String {
    let job = d.job_json(id);
    match &job[name] {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[test]
fn an_afterok_chain_runs_in_order() {
    let d = Daemon::start();
    let started = d.fifo("started");
    let go = d.fifo("go");
    d.script(
        "first.sh",
        "#!/bin/sh\necho first >> order\necho up > started\nread x < go\n",
    );
    d.script("next.sh", "#!/bin/sh\necho $PBS_JOBNAME >> order\n");
    let a = d.qsub(&["first.sh"]);
    d.read_fifo(&started);
    let b = d.qsub(&[
        "-N",
        "second",
        "-W",
        &format!("depend=afterok:{a}"),
        "next.sh",
    ]);
    // The directive form, with the short id.
    d.script(
        "third.sh",
        &format!(
            "#!/bin/sh\n#PBS -N third\n#PBS -W depend=afterok:{}\necho third >> order\n",
            b.split('.').next().unwrap()
        ),
    );
    let c = d.qsub(&["third.sh"]);
    for (id, on) in [(&b, &a), (&c, &b)] {
        assert_eq!(attr(&d, id, "job_state"), "H", "{}", d.job_json(id));
        assert_eq!(attr(&d, id, "reason"), "Dependency");
        assert_eq!(attr(&d, id, "depend"), format!("afterok:{on}"));
    }
    d.write_fifo(&go, "go\n");
    let last = d.wait_job(&c);
    assert_eq!(last.exit_status, Some(0), "{last:?}");
    let order = std::fs::read_to_string(d.work.join("order")).unwrap();
    assert_eq!(order, "first\nsecond\nthird\n");
    let (ia, ib) = (d.wait_job(&a), d.wait_job(&b));
    assert!(ib.stime >= ia.end_time && last.stime >= ib.end_time);
}

#[test]
fn a_dependent_of_a_failing_job_is_deleted_with_a_comment() {
    let d = Daemon::start();
    d.script("fail.sh", "#!/bin/sh\nexit 1\n");
    d.script("never.sh", "#!/bin/sh\necho ran > ran\n");
    d.script("rescue.sh", "#!/bin/sh\necho rescued > rescued\n");
    // Held, so its dependents are queued before it fails.
    let a = d.qsub(&["-h", "fail.sh"]);
    let b = d.qsub(&["-W", &format!("depend=afterok:{a}"), "never.sh"]);
    let c = d.qsub(&["-W", &format!("depend=afterany:{b}"), "never.sh"]);
    let e = d.qsub(&["-W", &format!("depend=afterok:{c}"), "never.sh"]);
    let r = d.qsub(&["-W", &format!("depend=afternotok:{a}"), "rescue.sh"]);
    d.ok("qrls", &[&a]);
    assert_eq!(d.wait_job(&a).exit_status, Some(1));
    let deleted = d.wait_job(&b);
    assert_eq!(deleted.state_letter, "F");
    assert!(deleted.stime == 0, "it never started: {deleted:?}");
    assert_eq!(
        deleted.comment,
        format!(
            "job deleted: its dependency afterok:{a} can never be satisfied (job {a} ended: exit status 1)"
        )
    );
    // afterany is met by a deleted job: c runs; r runs because a failed.
    assert_eq!(d.wait_job(&c).exit_status, Some(0));
    assert_eq!(d.wait_job(&e).exit_status, Some(0));
    assert_eq!(d.wait_job(&r).exit_status, Some(0));
    assert!(d.work.join("rescued").exists());

    // A dependency on a job that does not exist, or that can no longer be
    // met, is refused at submission, naming the job.
    let out = d.run("qsub", &["-W", "depend=afterok:999", "never.sh"]);
    assert!(!out.status.success());
    let server = a.split_once('.').unwrap().1;
    assert_eq!(
        stderr(&out).trim(),
        format!("qsub: job 999.{server} does not exist or has left the history; see qstat -x")
    );
    let out = d.run("qsub", &["-W", &format!("depend=afterok:{a}"), "never.sh"]);
    assert!(
        stderr(&out).contains("can never be satisfied"),
        "{}",
        stderr(&out)
    );
    let out = d.run("qsub", &["-W", "depend=aftr:1", "never.sh"]);
    assert!(
        stderr(&out).contains("bad dependency \"aftr\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_start_time_ahead_shows_w_and_keeps_the_job_waiting() {
    let d = Daemon::start();
    d.script("quick.sh", "#!/bin/sh\necho ran\n");
    let later = d.qsub(&["-a", "209901011200", "quick.sh"]);
    // A job submitted after it runs and ends: passes have come and gone.
    let now = d.qsub(&["quick.sh"]);
    assert_eq!(d.wait_job(&now).exit_status, Some(0));
    let job = d.job_json(&later);
    assert_eq!(job["job_state"], "W", "{job}");
    assert_eq!(job["reason"], "BeginTime", "{job}");
    assert_eq!(job["Execution_Time"], "Thu Jan  1 12:00:00 2099", "{job}");
    let table = d.ok("qstat", &[]);
    let row = table.lines().find(|l| l.starts_with(&later)).unwrap();
    assert_eq!(row.split_whitespace().nth(4), Some("W"), "{table}");
    d.ok("qdel", &[&later]);

    // A malformed time is refused by qsub, naming the format.
    let out = d.run("qsub", &["-a", "12:00", "quick.sh"]);
    assert!(
        stderr(&out).contains("bad -a time \"12:00\""),
        "{}",
        stderr(&out)
    );
}

/// One node: jobs run one after the other, in the queue's order.
const ONE_NODE: &str = r#"
[agents]
local = true
local_host = "localhost"

[server]
default_queue = "batch"

[[queue]]
name = "batch"

[[node_set]]
name = "one"
count = 1
host = "localhost"
"#;

#[test]
fn reorder_queue_makes_groups_take_turns() {
    let d = Daemon::start_with(Some(ONE_NODE));
    d.script("job.sh", "#!/bin/sh\necho $PBS_JOBNAME >> order\n");
    d.ok("qmgr", &["-c", "set server scheduling = false"]);
    let mut ids = Vec::new();
    for (name, account) in [
        ("a2-1", "a2"),
        ("a2-2", "a2-prod"),
        ("c1-1", "c1-prod"),
        ("c1-2", "c1-dev"),
        ("e5-1", "e5"),
    ] {
        ids.push(d.qsub(&["-N", name, "-A", account, "job.sh"]));
    }
    let out = d.ok("qmgr", &["-c", "reorder queue batch"]);
    assert_eq!(out, "queue batch: 5 jobs reordered across 3 groups\n");
    d.ok("qmgr", &["-c", "set server scheduling = true"]);
    for id in &ids {
        assert_eq!(d.wait_job(id).exit_status, Some(0));
    }
    let order = std::fs::read_to_string(d.work.join("order")).unwrap();
    assert_eq!(order, "a2-1\nc1-1\ne5-1\na2-2\nc1-2\n");
}
