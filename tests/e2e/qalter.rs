//! qalter against the real daemon: a queued job's resources, name,
//! priority and holds change (all or none, within its queue's limits), a
//! running job keeps its resources, and the accounting log has PBS's `a`
//! record of what changed.

use crate::harness::{Daemon, NOBODY, is_root, stderr};
use crate::tracejob::records;

#[test]
fn qalter_changes_a_queued_job_all_or_nothing() {
    let d = Daemon::start();
    d.ok("qmgr", &["-c", "set server scheduling = false"]);
    let started = d.fifo("started");
    d.script(
        "stay.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho go > started\nwhile :; do sleep 1; done\n",
    );
    let id = d.qsub(&["-N", "before", "-l", "walltime=1:00:00", "stay.sh"]);
    assert_eq!(
        d.ok(
            "qalter",
            &[
                "-N",
                "after",
                "-p",
                "5",
                "-l",
                "walltime=2:00:00,nodes=2",
                &id
            ]
        ),
        ""
    );
    let job = d.job_json(&id);
    assert_eq!(job["Job_Name"], "after", "{job}");
    assert_eq!(job["Resource_List"]["walltime"], "02:00:00", "{job}");
    assert_eq!(job["Resource_List"]["nodes"], "2", "{job}");
    assert_eq!(job["Priority"], 5, "{job}");
    assert_eq!(d.ok("qselect", &["-p", "5"]).trim(), id, "Priority is 5");
    let altered: Vec<String> = records(&d, &id)
        .into_iter()
        .filter(|(kind, _)| kind == "a")
        .map(|(_, text)| text)
        .collect();
    assert_eq!(
        altered,
        ["Job_Name=after Priority=5 Resource_List.walltime=2:00:00 Resource_List.nodes=2"]
    );

    // Past the queue's 24-hour limit: refused, and the name stays too.
    let out = d.run("qalter", &["-N", "never", "-l", "walltime=48:00:00", &id]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("queue \"batch\" allows at most 24:00:00"),
        "{}",
        stderr(&out)
    );
    assert_eq!(d.job_json(&id)["Job_Name"], "after");
    // Holds, the PBS way.
    d.ok("qalter", &["-h", "u", &id]);
    assert_eq!(d.job_json(&id)["job_state"], "H");
    d.ok("qalter", &["-h", "n", &id]);
    assert_eq!(d.job_json(&id)["job_state"], "Q");

    // Running: the resources stay, the name may change.
    d.ok("qmgr", &["-c", "set server scheduling = true"]);
    d.read_fifo(&started);
    let out = d.run("qalter", &["-l", "walltime=10", &id]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("of job {id} cannot change while it runs")),
        "{}",
        stderr(&out)
    );
    d.ok("qalter", &["-N", "running", &id]);
    let job = d.job_json(&id);
    assert_eq!(
        (job["Job_Name"].as_str(), job["job_state"].as_str()),
        (Some("running"), Some("R"))
    );
    if is_root() {
        let out = d.run_as(NOBODY, "qalter", &["-N", "mine", &id]);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains("only its owner, an operator or a manager may alter it"),
            "{}",
            stderr(&out)
        );
    }
    d.ok("qdel", &[&id]);
    d.wait_job(&id);
}
