//! scontrol against a real daemon and agent: hold, release, update and
//! requeue change what qstat and squeue then show, `show job` follows the
//! job, and what cannot be done is refused in Slurm's words.

use crate::harness::{Daemon, NOBODY, is_root, stderr};

/// A job that says it started, then runs until it is killed.
const WAITER: &str = "#!/bin/sh\n#SBATCH -J waiter\necho go > started\nwhile :; do sleep 1; done\n";

fn squeue(d: &Daemon, format: &str, id: &str) -> String {
    d.ok("squeue", &["-h", "-t", "all", "-o", format, "-j", id])
        .trim()
        .to_string()
}

#[test]
fn hold_release_and_update_change_what_qstat_and_squeue_show() {
    let d = Daemon::start();
    d.ok("qmgr", &["-c", "set server scheduling = false"]);
    d.ok(
        "qmgr",
        &[
            "-c",
            "create queue other queue_type = e, enabled = t, started = t",
        ],
    );
    d.script("w.sh", WAITER);
    let id = d
        .ok("sbatch", &["--parsable", "-t", "5", "w.sh"])
        .trim()
        .to_string();
    let full = d.full_id(&id);

    // hold and release: qstat's H and Q, squeue's reason.
    assert_eq!(d.ok("scontrol", &["hold", &id]), "");
    assert_eq!(d.job_json(&full)["job_state"], "H");
    assert_eq!(squeue(&d, "%t %r", &id), "PD JobHeldUser");
    let shown = d.ok("scontrol", &["show", "job", &id]);
    assert!(
        shown.starts_with(&format!("JobId={id} JobName=waiter\n")),
        "{shown}"
    );
    assert!(
        shown.contains("\n   JobState=PENDING Reason=JobHeldUser Dependency=(null)\n"),
        "{shown}"
    );
    assert_eq!(d.ok("scontrol", &["rel", &id]), "");
    assert_eq!(d.job_json(&full)["job_state"], "Q");
    assert_eq!(d.ok("scontrol", &["uhold", &id]), "");
    assert_eq!(d.job_json(&full)["job_state"], "H");
    d.ok("scontrol", &["release", &id]);

    // An array: its pending tasks in one record, as Slurm shows them.
    let arr = d
        .ok("sbatch", &["--parsable", "-H", "-a", "0-3%2", "w.sh"])
        .trim()
        .to_string();
    let shown = d.ok("scontrol", &["show", "job", &arr]);
    assert!(
        shown.starts_with(&format!(
            "JobId={arr} ArrayJobId={arr} ArrayTaskId=0-3%2 ArrayTaskThrottle=2 JobName=waiter\n"
        )),
        "{shown}"
    );
    assert_eq!(shown.matches("\n   Power=\n").count(), 1, "{shown}");
    assert!(
        shown.contains(&format!(
            "StdOut={}/slurm-{arr}_4294967294.out",
            d.work.display()
        )),
        "{shown}"
    );
    d.ok("scontrol", &["release", &arr]);
    let arr_full = d.full_id(&arr);
    assert_eq!(d.job_json(&arr_full)["job_state"], "Q");
    let all = d.ok("scontrol", &["-o", "show", "jobs"]);
    assert_eq!(
        all.lines().count(),
        2,
        "the job and the array's pending tasks:\n{all}"
    );
    d.ok("qdel", &[&arr_full]);

    // update: the time limit, absolute then relative; name and nice; the
    // partition.
    assert_eq!(
        d.ok(
            "scontrol",
            &["update", &format!("JobId={id}"), "TimeLimit=10"]
        ),
        ""
    );
    assert_eq!(d.job_json(&full)["Resource_List"]["walltime"], "00:10:00");
    d.ok(
        "scontrol",
        &["update", &format!("jobid={id}"), "timelimit=+5"],
    );
    assert_eq!(d.job_json(&full)["Resource_List"]["walltime"], "00:15:00");
    assert_eq!(squeue(&d, "%l", &id), "15:00");
    let one = d.ok("scontrol", &["-o", "show", "job", &id]);
    assert_eq!(one.lines().count(), 1, "{one}");
    assert!(one.contains(" TimeLimit=00:15:00 "), "{one}");
    d.ok(
        "scontrol",
        &[
            "update",
            &format!("JobId={id}"),
            "JobName=renamed",
            "Nice=5",
        ],
    );
    let job = d.job_json(&full);
    assert_eq!(job["Job_Name"], "renamed", "{job}");
    assert_eq!(squeue(&d, "%j", &id), "renamed");
    assert!(d.ok("scontrol", &["show", "job", &id]).contains(" Nice=5 "));
    d.ok(
        "scontrol",
        &["update", &format!("JobId={id}"), "Partition=other"],
    );
    assert_eq!(d.job_json(&full)["queue"], "other");
    assert_eq!(squeue(&d, "%P", &id), "other");

    // Refusals, as Slurm words them, and nothing changed.
    let out = d.run(
        "scontrol",
        &["update", &format!("JobId={id}"), "Dependency=afterok:1"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .starts_with("Update of this parameter is not supported: Dependency=afterok:1\n"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("--dependency"), "{}", stderr(&out));
    let out = d.run(
        "scontrol",
        &["update", &format!("JobId={id}"), "TimeLimit=soon"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("scontrol: error: Invalid TimeLimit value: soon;"));
    assert_eq!(d.job_json(&full)["Resource_List"]["walltime"], "00:15:00");
    let out = d.run("scontrol", &["update", "JobId=99999", "TimeLimit=5"]);
    assert_eq!(
        (out.status.code(), stderr(&out)),
        (
            Some(1),
            "Invalid job id specified for job 99999\n".to_string()
        )
    );
    let out = d.run("scontrol", &["hold", "99999"]);
    assert_eq!(
        stderr(&out),
        "Invalid job id specified for job 99999\nslurm_suspend error: Invalid job id specified\n"
    );
    let out = d.run("scontrol", &["requeue", &id]);
    assert_eq!(
        (out.status.code(), stderr(&out)),
        (Some(1), format!("Job is pending execution for job {id}\n"))
    );
    let out = d.run("scontrol", &["show", "job", "99999"]);
    assert_eq!(
        (out.status.code(), stderr(&out)),
        (
            Some(1),
            "slurm_load_jobs error: Invalid job id specified\n".to_string()
        )
    );
    if is_root() {
        // Another user's job: the daemon's rights, its words.
        let out = d.run_as(NOBODY, "scontrol", &["hold", &id]);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).starts_with("scontrol: error: "),
            "{}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("\nslurm_suspend error: "),
            "{}",
            stderr(&out)
        );
        assert_eq!(d.job_json(&full)["job_state"], "Q");
    }
    let out = d.run("scontrol", &["show", "bogus"]);
    assert_eq!(stderr(&out), "invalid entity:bogus for keyword:show \n");
    let out = d.run("scontrol", &["hol", &id]);
    assert_eq!(stderr(&out), "invalid keyword: hol\n");
    d.ok("qdel", &[&full]);
}

#[test]
fn requeue_and_requeuehold_send_a_running_job_back_to_the_queue() {
    let d = Daemon::start();
    let started = d.fifo("started");
    d.script("w.sh", WAITER);
    let id = d.ok("sbatch", &["--parsable", "w.sh"]).trim().to_string();
    let full = d.full_id(&id);
    d.read_fifo(&started);
    let shown = d.ok("scontrol", &["show", "job", &id]);
    assert!(
        shown.contains(" JobState=RUNNING ") && shown.contains(" Restarts=0 "),
        "{shown}"
    );
    let out = d.run(
        "scontrol",
        &["update", &format!("JobId={id}"), "NumNodes=2"],
    );
    assert_eq!(
        stderr(&out),
        format!("Job is no longer pending execution for job {id}\n")
    );

    // A running job keeps the limit its agent enforces: the daemon's words.
    let out = d.run(
        "scontrol",
        &["update", &format!("JobId={id}"), "TimeLimit=90"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("scontrol: error: ") && stderr(&out).contains("wall time"),
        "{}",
        stderr(&out)
    );

    // requeue: killed, queued, started again.
    assert_eq!(d.ok("scontrol", &["requeue", &id]), "");
    d.read_fifo(&started);
    let job = d.job_json(&full);
    assert_eq!(
        (job["job_state"].as_str(), job["run_count"].as_i64()),
        (Some("R"), Some(2)),
        "{job}"
    );
    assert!(
        d.ok("scontrol", &["show", "job", &id])
            .contains(" Restarts=1 ")
    );

    // requeuehold: back in the queue, held.
    assert_eq!(d.ok("scontrol", &["requeuehold", &id]), "");
    // Held by the daemon as it queues the job again: no pass starts it.
    d.await_job_state(&full, "H");
    assert_eq!(d.job_json(&full)["Hold_Types"], "u");
    assert_eq!(squeue(&d, "%t %r", &id), "PD JobHeldUser");
    // Released, it runs a third time.
    assert_eq!(d.ok("scontrol", &["release", &id]), "");
    d.read_fifo(&started);
    assert_eq!(d.job_json(&full)["run_count"].as_i64(), Some(3));

    assert_eq!(
        d.ok("scontrol", &["ping"]),
        format!("Slurmctld(primary) at {} is UP\n", qmesh_host())
    );
    d.ok("qdel", &[&full]);
}

/// The host the test daemon runs on (this one).
fn qmesh_host() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default()
}
